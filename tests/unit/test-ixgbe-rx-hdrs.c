/*
 * Unit tests of the ixgbe model's receive header classifier
 * (hw/net/ixgbe_rx_hdrs.c) against QEMU's own parse: every frame, crafted
 * or random, is classified by ixgbe_rx_hdrs_parse() and by
 * eth_get_protocols() through net_rx_pkt, and the two must agree on the
 * protocols, the offsets, fragments and the IPv4 RSS hashes.  A frame the
 * classifier leaves to the full parse must be one it may leave: IPv6, or
 * headers past the bytes it was given.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "net/eth.h"
#include "../../hw/net/net_rx_pkt.h"
#include "../../hw/net/ixgbe_rx_hdrs.h"

#define FRAME_MAX   256
#define HDR_MAX     128     /* what the receive path hands the classifier */

typedef struct Frame {
    uint8_t buf[FRAME_MAX];
    size_t len;
} Frame;

typedef struct Stats {
    unsigned fast;          /* classified from the first bytes */
    unsigned ip4;
    unsigned l4;            /* with a TCP or UDP header found */
    unsigned frag;
    unsigned fallback;      /* left to the full parse */
} Stats;

static Stats stats;

/* Bytes [off, off + n) of a frame's length-limited view */
static void put16(Frame *f, size_t off, uint16_t v)
{
    stw_be_p(f->buf + off, v);
}

/*
 * An Ethernet frame with tags, an IPv4 header of ihl words with proto and
 * frag_off, and an L4 header of random bytes: len bytes in all
 */
static void make_ip4(Frame *f, const uint16_t *tags, int ntags, uint8_t ihl,
                     uint8_t proto, uint16_t frag_off, size_t len)
{
    size_t off = 12;

    for (size_t i = 0; i < FRAME_MAX; i++) {
        f->buf[i] = g_test_rand_int();
    }
    for (int i = 0; i < ntags; i++) {
        put16(f, off, tags[i]);
        off += 4;
    }
    put16(f, off, ETH_P_IP);
    off += 2;
    f->buf[off] = (4 << 4) | ihl;
    put16(f, off + 2, len - off);
    put16(f, off + 6, frag_off);
    f->buf[off + 9] = proto;
    f->len = len;
}

/* Compare the classifier with net_rx_pkt on the first hdr_len bytes */
static void check_frame(const Frame *f, size_t hdr_len, const uint8_t *key)
{
    struct NetRxPkt *pkt;
    struct iovec iov = {
        .iov_base = (void *)f->buf, .iov_len = f->len,
    };
    bool hasip4, hasip6;
    EthL4HdrProto l4;
    IxgbeRxHdrs h;
    uint16_t l2_proto;

    net_rx_pkt_init(&pkt);
    net_rx_pkt_attach_iovec(pkt, &iov, 1, 0, false);
    net_rx_pkt_get_protocols(pkt, &hasip4, &hasip6, &l4);

    if (!ixgbe_rx_hdrs_parse(&h, f->buf, hdr_len, f->len)) {
        /* Left to the full parse: IPv6, or headers past hdr_len */
        size_t l3off = 14;

        stats.fallback++;
        l2_proto = lduw_be_p(f->buf + 12);
        if (l2_proto == ETH_P_VLAN || l2_proto == ETH_P_DVLAN) {
            l3off += 4;
            if (l2_proto == ETH_P_DVLAN &&
                lduw_be_p(f->buf + 16) == ETH_P_VLAN) {
                l3off += 4;
            }
        }
        if (hdr_len >= ETH_MAX_L2_HDR_LEN &&
            lduw_be_p(f->buf + l3off - 2) != ETH_P_IPV6) {
            /* An IPv4 header or its TCP/UDP header not in the first bytes */
            g_assert_true(hasip4 || l3off + 20 > hdr_len);
            g_assert_true(l3off + 20 > hdr_len ||
                          net_rx_pkt_get_l4_hdr_offset(pkt) +
                          (l4 == ETH_L4_HDR_PROTO_TCP ? 20 : 8) > hdr_len);
        }
        net_rx_pkt_uninit(pkt);
        return;
    }

    stats.fast++;
    g_assert_cmpint(h.ip4, ==, hasip4);
    g_assert_false(h.ip6);
    g_assert_false(hasip6);
    g_assert_cmpint(h.l4, ==, l4);
    if (hasip4) {
        eth_ip4_hdr_info *ip4 = net_rx_pkt_get_ip4_info(pkt);
        size_t l4off = net_rx_pkt_get_l4_hdr_offset(pkt);

        stats.ip4++;
        g_assert_cmpuint(h.l4off, ==, l4off);
        g_assert_cmpuint(h.l3off, ==, l4off - ((h.ip[0] & 0x0F) << 2));
        g_assert_true(h.ip == f->buf + h.l3off);
        g_assert_cmpint(h.frag, ==, ip4->fragment);
        g_assert_cmpmem(h.ip, sizeof(struct ip_header), &ip4->ip4_hdr,
                        sizeof(struct ip_header));
        stats.frag += h.frag;
        g_assert_cmphex(ixgbe_rx_hdrs_rss_ip4(&h, false, (uint8_t *)key), ==,
                        net_rx_pkt_calc_rss_hash(pkt, NetPktRssIpV4,
                                                 (uint8_t *)key));
        if (l4 == ETH_L4_HDR_PROTO_TCP || l4 == ETH_L4_HDR_PROTO_UDP) {
            stats.l4++;
            g_assert_true(h.l4h == f->buf + h.l4off);
            g_assert_cmphex(ixgbe_rx_hdrs_rss_ip4(&h, true, (uint8_t *)key),
                            ==,
                            net_rx_pkt_calc_rss_hash(
                                pkt, l4 == ETH_L4_HDR_PROTO_TCP ?
                                NetPktRssIpV4Tcp : NetPktRssIpV4Udp,
                                (uint8_t *)key));
        }
    } else {
        g_assert_null(h.l4h);
    }
    net_rx_pkt_uninit(pkt);
}

/* The frame as the receive path would hand it over, and shorter views */
static void check_views(const Frame *f, const uint8_t *key)
{
    check_frame(f, MIN(f->len, HDR_MAX), key);
    check_frame(f, MIN(f->len, g_test_rand_int_range(ETH_MAX_L2_HDR_LEN,
                                                     HDR_MAX + 1)), key);
}

static void random_key(uint8_t *key)
{
    for (int i = 0; i < 40; i++) {
        key[i] = g_test_rand_int();
    }
}

static const uint16_t tag_none[1] = { 0 };
static const uint16_t tag_one[1] = { ETH_P_VLAN };
static const uint16_t tag_qinq[2] = { ETH_P_DVLAN, ETH_P_VLAN };
static const uint16_t tag_dvlan[1] = { ETH_P_DVLAN };

static const struct {
    const uint16_t *tags;
    int n;
} tag_sets[] = {
    { tag_none, 0 }, { tag_one, 1 }, { tag_qinq, 2 }, { tag_dvlan, 1 },
};

/* Every tag set, header length, L4 protocol and fragment, cut anywhere */
static void test_crafted(void)
{
    static const uint8_t protos[] = {
        IP_PROTO_TCP, IP_PROTO_UDP, IP_PROTO_SCTP, 1 /* ICMP */, 47 /* GRE */,
    };
    static const uint16_t frags[] = {
        0, IP_DF, IP_MF, 1, 185, IP_DF | IP_MF | 7,
    };
    uint8_t key[40];
    Frame f;

    random_key(key);
    for (unsigned t = 0; t < ARRAY_SIZE(tag_sets); t++) {
        for (uint8_t ihl = 0; ihl < 16; ihl++) {
            for (unsigned p = 0; p < ARRAY_SIZE(protos); p++) {
                for (unsigned fr = 0; fr < ARRAY_SIZE(frags); fr++) {
                    for (size_t len = 60; len <= 200; len += 7) {
                        make_ip4(&f, tag_sets[t].tags, tag_sets[t].n, ihl,
                                 protos[p], frags[fr], len);
                        check_views(&f, key);
                    }
                }
            }
        }
    }
    g_assert_cmpuint(stats.l4, >, 0);
    g_assert_cmpuint(stats.frag, >, 0);
    g_assert_cmpuint(stats.fallback, >, 0);
}

/* Not IPv4: IPv6 falls back, ARP and a wrong IP version are not IP */
static void test_other(void)
{
    static const uint16_t types[] = {
        ETH_P_IPV6, ETH_P_ARP, 0x88cc /* LLDP */, ETH_P_IP, 0x0600,
    };
    uint8_t key[40];
    Frame f;

    random_key(key);
    for (unsigned t = 0; t < ARRAY_SIZE(tag_sets); t++) {
        for (unsigned e = 0; e < ARRAY_SIZE(types); e++) {
            for (int round = 0; round < 50; round++) {
                size_t off = 12 + 4 * tag_sets[t].n;

                make_ip4(&f, tag_sets[t].tags, tag_sets[t].n, 5, IP_PROTO_TCP,
                         0, g_test_rand_int_range(60, FRAME_MAX + 1));
                put16(&f, off, types[e]);
                if (types[e] == ETH_P_IP) {
                    /* a version other than 4 behind the IPv4 EtherType */
                    f.buf[off + 2] = (g_test_rand_int_range(0, 15) << 4) |
                                     g_test_rand_int_range(0, 16);
                    if ((f.buf[off + 2] >> 4) >= 4) {
                        f.buf[off + 2] += 0x10;
                    }
                }
                check_views(&f, key);
            }
        }
    }
}

/* Random bytes, with the fields that decide the parse often meaningful */
static void test_random(void)
{
    static const uint16_t types[] = {
        ETH_P_IP, ETH_P_VLAN, ETH_P_DVLAN, ETH_P_IPV6,
    };
    static const uint8_t protos[] = {
        IP_PROTO_TCP, IP_PROTO_UDP, IP_PROTO_SCTP,
    };
    uint8_t key[40];
    Frame f;

    for (int round = 0; round < 20000; round++) {
        f.len = g_test_rand_int_range(60, FRAME_MAX + 1);
        for (size_t i = 0; i < FRAME_MAX; i++) {
            f.buf[i] = g_test_rand_int();
        }
        random_key(key);
        /* EtherTypes at 12, 16 and 20 */
        for (size_t off = 12; off <= 20; off += 4) {
            if (g_test_rand_bit()) {
                put16(&f, off,
                      types[g_test_rand_int_range(0, ARRAY_SIZE(types))]);
            }
        }
        /* an IPv4 header at any of the three places */
        for (size_t off = 14; off <= 22; off += 4) {
            if (g_test_rand_bit()) {
                f.buf[off] = 0x40 | g_test_rand_int_range(0, 16);
            }
            if (g_test_rand_bit()) {
                f.buf[off + 9] =
                    protos[g_test_rand_int_range(0, ARRAY_SIZE(protos))];
            }
            if (g_test_rand_bit()) {
                put16(&f, off + 6, 0);
            }
        }
        check_views(&f, key);
    }
    g_assert_cmpuint(stats.ip4, >, 0);
    g_assert_cmpuint(stats.l4, >, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ixgbe-rx-hdrs/crafted", test_crafted);
    g_test_add_func("/ixgbe-rx-hdrs/other", test_other);
    g_test_add_func("/ixgbe-rx-hdrs/random", test_random);
    return g_test_run();
}
