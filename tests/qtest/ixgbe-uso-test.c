/*
 * QTest of the Intel 82599 (ixgbe) UDP segmentation offload: a packet
 * sent with TSE and a context whose L4 type is UDP leaves as whole UDP
 * datagrams of MSS bytes of payload each, every one with its own UDP
 * length and checksum, IP length, IPv4 header checksum and IPv4 ID (the
 * first packet's, plus one per segment), as Linux's ixgbe driver expects
 * of NETIF_F_GSO_UDP_L4. Every segment is compared byte for byte with a
 * datagram built here: IPv4, IPv6, with a tag inserted from the context,
 * and from a VF's pool with the pool's port VLAN.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "net/eth.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"
#include "ixgbe-sriov-util.h"

/* Context descriptor fields (82599 datasheet, advanced TX context) */
#define CTX_MACLEN_SHIFT    9
#define CTX_TUCMD_IPV4      (1u << 10)
#define CTX_L4T_UDP         (0u << 11)
#define CTX_L4LEN_SHIFT     8

#define IP4_ID              0xfffe  /* the ID wraps inside the packet */
#define VLAN_TCI            0x6123  /* PCP 3, VID 0x123 */

typedef struct UsoCase {
    bool ip6;
    uint16_t tci;           /* the tag the segments carry, 0 for none */
    size_t payload;
    uint16_t mss;
} UsoCase;

/* RFC 1071 over bytes, big-endian 16-bit words, odd byte padded */
static uint32_t sum_bytes(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += p[i] << 8 | p[i + 1];
    }
    if (len & 1) {
        sum += p[len - 1] << 8;
    }
    return sum;
}

static uint16_t sum_finish(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum & 0xffff;
}

static uint8_t pattern(size_t i)
{
    return i * 7 + (i >> 8);
}

/*
 * One datagram of data bytes from the pattern's offset off: with valid
 * lengths and checksums and a tag (a segment as it must leave), or as
 * the driver hands the packet over (!valid: IP lengths and the IPv4
 * header checksum zero, a UDP length and checksum that mean nothing, no
 * tag). Returns the frame's length.
 */
static size_t build(uint8_t *f, const UsoCase *c, bool valid, uint16_t id,
                    size_t off, size_t data)
{
    size_t l2 = valid && c->tci ? 18 : 14, l3 = c->ip6 ? 40 : 20;
    uint8_t *ip = f + l2, *udp = ip + l3;
    uint32_t sum;

    memcpy(f, peer_mac, ETH_ALEN);
    memcpy(f + 6, test_mac, ETH_ALEN);
    if (l2 == 18) {
        stw_be_p(f + 12, ETH_P_VLAN);
        stw_be_p(f + 14, c->tci);
    }
    stw_be_p(f + l2 - 2, c->ip6 ? ETH_P_IPV6 : ETH_P_IP);
    memset(ip, 0, l3);
    if (c->ip6) {
        ip[0] = 0x60;
        stw_be_p(ip + 4, valid ? 8 + data : 0);
        ip[6] = IP_PROTO_UDP;
        ip[7] = 64;
        for (int i = 0; i < 32; i++) {
            ip[8 + i] = i * 3 + 1;
        }
        sum = sum_bytes(0, ip + 8, 32);
    } else {
        ip[0] = 0x45;
        stw_be_p(ip + 2, valid ? 20 + 8 + data : 0);
        stw_be_p(ip + 4, id);
        stw_be_p(ip + 6, 0x4000);               /* DF */
        ip[8] = 64;
        ip[9] = IP_PROTO_UDP;
        memcpy(ip + 12, "\xc6\x33\x64\x01\xc6\x33\x64\x02", 8);
        if (valid) {
            stw_be_p(ip + 10, sum_finish(sum_bytes(0, ip, 20)));
        }
        sum = sum_bytes(0, ip + 12, 8);
    }
    stw_be_p(udp, 43210);
    stw_be_p(udp + 2, 5555);
    stw_be_p(udp + 4, valid ? 8 + data : 0x5a5a);
    stw_be_p(udp + 6, 0xa5a5);
    for (size_t i = 0; i < data; i++) {
        udp[8 + i] = pattern(off + i);
    }
    if (valid) {
        uint16_t csum;

        stw_be_p(udp + 6, 0);
        csum = sum_finish(sum_bytes(sum + IP_PROTO_UDP + 8 + data,
                                    udp, 8 + data));
        stw_be_p(udp + 6, csum ? csum : 0xffff);
    }
    return l2 + l3 + 8 + data;
}

/*
 * Hand queue q the packet of case c with a UDP segmentation context at
 * descriptor 0 and two data descriptors (the second buffer starts inside
 * the payload); vle asks for the context's tag.
 */
static void uso_send(IxgbeTest *t, unsigned q, uint64_t ring,
                     const UsoCase *c, bool vle)
{
    g_autofree uint8_t *pkt = g_malloc(64 * KiB);
    size_t l3 = c->ip6 ? 40 : 20, hdr = 14 + l3 + 8;
    size_t len = build(pkt, c, false, IP4_ID, 0, c->payload);
    size_t cut = hdr + 777;
    uint64_t buf = guest_frame(t, pkt, len);
    uint32_t cmd = IXGBE_TXD_CMD_TSE | (vle ? IXGBE_TXD_CMD_VLE : 0);
    uint32_t olinfo = c->payload << TXD_PAYLEN_SHIFT | IXGBE_TXD_POPTS_TXSM |
                      (c->ip6 ? 0 : IXGBE_TXD_POPTS_IXSM);
    uint8_t d[DESC_SIZE];

    memset(d, 0, sizeof(d));
    stl_le_p(d, l3 | 14 << CTX_MACLEN_SHIFT |
             (uint32_t)(vle ? c->tci : 0) << IXGBE_TXCTX_VLAN_SHIFT);
    stl_le_p(d + 8, IXGBE_TXD_DTYP_CTXT | IXGBE_TXD_CMD_DEXT |
             (c->ip6 ? 0 : CTX_TUCMD_IPV4) | CTX_L4T_UDP);
    stl_le_p(d + 12, (uint32_t)c->mss << IXGBE_TXCTX_MSS_SHIFT |
             8 << CTX_L4LEN_SHIFT);
    qtest_memwrite(t->qts, ring, d, sizeof(d));
    tx_put_desc(t, ring, 1, buf, cut, cmd, olinfo);
    tx_put_desc(t, ring, 2, buf + cut, len - cut,
                cmd | IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS, olinfo);
    wr(t, txq(q, IXGBE_TXQ_TDT), 3);
}

/* Every segment of case c on the wire, byte for byte, and nothing more */
static void uso_expect(IxgbeTest *t, const UsoCase *c)
{
    g_autofree uint8_t *got = g_malloc(64 * KiB);
    g_autofree uint8_t *want = g_malloc(64 * KiB);
    size_t nseg = DIV_ROUND_UP(c->payload, c->mss);

    for (size_t i = 0; i < nseg; i++) {
        size_t off = i * c->mss;
        size_t wlen = build(want, c, true, IP4_ID + i, off,
                            MIN(c->mss, c->payload - off));
        int len = backend_recv(t, got, 64 * KiB, WAIT_US / 1000);

        g_test_message("segment %zu: %d bytes", i, len);
        g_assert_cmpmem(got, len, want, wlen);
    }
    backend_assert_silent(t);
}

static void test_uso(const void *opaque)
{
    const UsoCase *c = opaque;
    size_t nseg = DIV_ROUND_UP(c->payload, c->mss);
    IxgbeTest t;
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);
    uso_send(&t, 0, ring, c, c->tci != 0);
    uso_expect(&t, c);
    g_assert_true(tx_dd(&t, ring, 2));
    /* The wire sees segments: the counters count them */
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, nseg);
    g_assert_cmpuint(rd(&t, IXGBE_QPTC0), ==, nseg);
    ixgbe_test_stop(&t);
}

/*
 * VF 0's pool (queue 0 in 64-pool mode), whose port VLAN (VMVIR, always
 * inserted) tags every segment
 */
static void test_uso_vf_pool(void)
{
    static const UsoCase c = {
        .tci = VLAN_TCI, .payload = 5000, .mss = 1200
    };
    SriovTest s;
    uint64_t ring;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    wr(&s.t, IXGBE_MTQC, IXGBE_MTQC_VT_ENA | IXGBE_MTQC_64VF);
    wr(&s.t, IXGBE_VT_CTL, IXGBE_VT_CTL_VT_ENA);
    wr(&s.t, IXGBE_VFTE0, BIT(0));
    wr(&s.t, IXGBE_VMVIR(0), VLAN_TCI |
       IXGBE_VMVIR_VLANA_DEFAULT << IXGBE_VMVIR_VLANA_SHIFT);
    ring = tx_ring_setup(&s.t, 0, 8, 0);
    uso_send(&s.t, 0, ring, &c, false);
    uso_expect(&s.t, &c);
    g_assert_cmpuint(vf_rd(&s, 0, IXGBE_VFGPTC), ==,
                     DIV_ROUND_UP(c.payload, c.mss));
    sriov_stop(&s);
}

int main(int argc, char **argv)
{
    static const UsoCase ip4 = { .payload = 14500, .mss = 1400 };
    static const UsoCase ip6 = { .ip6 = true, .payload = 14500, .mss = 1400 };
    static const UsoCase ip4_vlan = {
        .tci = VLAN_TCI, .payload = 4000, .mss = 1000
    };
    static const UsoCase ip6_vlan = {
        .ip6 = true, .tci = VLAN_TCI, .payload = 9001, .mss = 1452
    };

    g_test_init(&argc, &argv, NULL);
    qtest_add_data_func("ixgbe/uso/ipv4", &ip4, test_uso);
    qtest_add_data_func("ixgbe/uso/ipv6", &ip6, test_uso);
    qtest_add_data_func("ixgbe/uso/ipv4-vlan", &ip4_vlan, test_uso);
    qtest_add_data_func("ixgbe/uso/ipv6-vlan", &ip6_vlan, test_uso);
    qtest_add_func("ixgbe/uso/vf-pool", test_uso_vf_pool);
    return g_test_run();
}
