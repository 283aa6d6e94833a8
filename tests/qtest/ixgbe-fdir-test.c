/*
 * QTest testcase for the Flow Director of the Intel 82599 (ixgbe) model
 *
 * The test programs filters through the FDIR registers as a driver does
 * and checks where frames injected on the socket backend land: perfect
 * filters (add, update, remove, query, bucket collisions, masks, drop),
 * signature filters with hashes the test computes itself, the table's
 * capacity per FDIRCTRL.PBALLOC, its counters and the table-full
 * interrupt cause, and the FLM bit and filter ID of the descriptor.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "net/eth.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

/* The hash keys the Linux driver programs (FDIRHKEY, FDIRSKEY) */
#define BUCKET_KEY          0x3DAD14E2u
#define SIG_KEY             0x174D3614u

#define FT_UDP4             1u
#define FT_TCP4             2u
#define DROP_QUEUE          127u
#define RSS_QUEUES          4

/* ------------------------------------------------------------------ */
/* The Flow Director hash, written from the datasheet                  */
/* ------------------------------------------------------------------ */

/*
 * The filter input: 11 dwords, most significant byte first. Dword 0 holds
 * the VM pool, the flow type and the VLAN; 1-4 the destination address,
 * 5-8 the source (IPv4 in the first of each); 9 the source and destination
 * ports; 10 the flexible bytes and 16 zero bits.
 */
typedef struct FdirFlow {
    uint8_t ft;
    uint16_t vlan;
    uint8_t sip[4], dip[4];
    uint16_t sport, dport;
    uint16_t flex;          /* the two bytes at the flex offset, as a BE16 */
} FdirFlow;

static void flow_input(const FdirFlow *f, uint32_t *in)
{
    memset(in, 0, 11 * sizeof(*in));
    in[0] = (uint32_t)f->ft << 16 | f->vlan;
    in[1] = ldl_be_p(f->dip);
    in[5] = ldl_be_p(f->sip);
    in[9] = (uint32_t)f->sport << 16 | f->dport;
    in[10] = (uint32_t)f->flex << 16;
}

/*
 * Hash[15:0]: every set key bit XORs in one 16-bit window of the input.
 * Taken dword by dword, a key bit b of 31:16 reads each of dwords 1-10
 * from bit b - 16 and a key bit b of 15:0 from bit b + 16 (the dword read
 * cyclically). The first dword enters at its own offsets: key bits 31:16
 * read dword 0 XOR its upper half shifted down, key bits 15:1 read dword 0
 * XOR its lower half shifted up, and key bit 0 does not read it.
 */
static uint16_t ref_hash(const uint32_t *in, uint32_t key)
{
    uint16_t hash = 0;

    for (unsigned b = 0; b < 32; b++) {
        unsigned from = b >= 16 ? b - 16 : b + 16;

        if (!(key & BIT(b))) {
            continue;
        }
        for (unsigned k = 1; k < 11; k++) {
            uint64_t twice = (uint64_t)in[k] << 32 | in[k];

            hash ^= twice >> from;
        }
        if (b >= 16) {
            hash ^= (in[0] ^ (in[0] >> 16)) >> (b - 16);
        } else if (b) {
            hash ^= (in[0] ^ (in[0] << 16)) >> b;
        }
    }
    return hash;
}

static uint16_t flow_hash(const FdirFlow *f, uint32_t key)
{
    uint32_t in[11];

    flow_input(f, in);
    return ref_hash(in, key) & 0x7FFF;
}

/*
 * Values the Linux driver's ixgbe_atr_compute_sig_hash_82599() and
 * ixgbe_atr_compute_perfect_hash_82599() give for these flows (15 bits).
 */
static void test_hash_reference(void)
{
    static const struct {
        FdirFlow f;
        uint16_t bucket, sig;
    } v[] = {
        { { FT_TCP4, 0, { 192, 0, 2, 10 }, { 198, 51, 100, 20 },
            40000, 5201, 0x0800 }, 0x4107, 0x097d },
        { { FT_TCP4, 100, { 10, 0, 0, 1 }, { 10, 0, 0, 2 },
            1234, 80, 0x8100 }, 0x106d, 0x7d5f },
        { { FT_UDP4, 0, { 192, 168, 1, 1 }, { 192, 168, 1, 2 },
            53, 33333, 0x0800 }, 0x22ee, 0x565f },
    };

    for (unsigned i = 0; i < ARRAY_SIZE(v); i++) {
        g_assert_cmphex(flow_hash(&v[i].f, BUCKET_KEY), ==, v[i].bucket);
        g_assert_cmphex(flow_hash(&v[i].f, SIG_KEY), ==, v[i].sig);
    }
}

/* ------------------------------------------------------------------ */
/* Set-up                                                              */
/* ------------------------------------------------------------------ */

/*
 * Queues 0-3 with RSS over them (RETA entry i -> queue i % 4), the hash
 * keys, and Flow Director on in the given mode with 64 KB (PBALLOC 1).
 */
static void fdir_setup(IxgbeTest *t, RxRing *rings, uint32_t fdirctrl)
{
    ixgbe_test_start(t);
    for (unsigned q = 0; q < RSS_QUEUES; q++) {
        rx_ring_setup(t, &rings[q], q, 32);
    }
    rss_program(t, rss_entry_mod4, IXGBE_MRQC_RSS | IXGBE_MRQC_IPV4 |
                IXGBE_MRQC_TCPIPV4 | IXGBE_MRQC_UDPIPV4);
    /* The driver gives the Flow Director its 64 KB of packet buffer */
    wr(t, IXGBE_RXPBSIZE0, (512 - 64) << 10);
    wr(t, IXGBE_FDIRHKEY, BUCKET_KEY);
    wr(t, IXGBE_FDIRSKEY, SIG_KEY);
    wr(t, IXGBE_FDIRCTRL, fdirctrl);
    g_assert_cmphex(rd(t, IXGBE_FDIRCTRL) & IXGBE_FDIRCTRL_INIT_DONE, ==,
                    IXGBE_FDIRCTRL_INIT_DONE);
    rx_enable(t);
}

#define PERFECT_CTRL (1u | IXGBE_FDIRCTRL_PERFECT | IXGBE_FDIRCTRL_REPORT | \
                      DROP_QUEUE << IXGBE_FDIRCTRL_DROP_Q_SHIFT | \
                      6u << IXGBE_FDIRCTRL_FLEX_SHIFT | \
                      0xAu << IXGBE_FDIRCTRL_MAX_LEN_SHIFT | \
                      4u << IXGBE_FDIRCTRL_FULL_THRESH_SHIFT)
#define SIG_CTRL (1u | IXGBE_FDIRCTRL_REPORT | \
                  6u << IXGBE_FDIRCTRL_FLEX_SHIFT | \
                  0xAu << IXGBE_FDIRCTRL_MAX_LEN_SHIFT | \
                  4u << IXGBE_FDIRCTRL_FULL_THRESH_SHIFT)

/* What the Linux driver masks for a rule on the 4-tuple of a flow */
static void masks_4tuple(IxgbeTest *t)
{
    wr(t, IXGBE_FDIRM, IXGBE_FDIRM_VLANID | IXGBE_FDIRM_VLANP |
       IXGBE_FDIRM_POOL | IXGBE_FDIRM_FLEX | IXGBE_FDIRM_DIPV6);
    wr(t, IXGBE_FDIRSIP4M, 0);
    wr(t, IXGBE_FDIRDIP4M, 0);
    wr(t, IXGBE_FDIRTCPM, 0);
    wr(t, IXGBE_FDIRUDPM, 0);
}

static size_t flow_frame(uint8_t *buf, const FdirFlow *f)
{
    return build_ipv4_frame(buf, (f->ft & 3) == FT_TCP4 ? 6 : 17,
                            f->sip, f->dip, f->sport, f->dport);
}

/* Send one frame of the flow; return the queue it lands on, wb its desc */
static int flow_send(IxgbeTest *t, RxRing *rings, const FdirFlow *f,
                     uint8_t *wb)
{
    uint8_t frame[64];
    size_t len = flow_frame(frame, f);
    int q;

    backend_send(t, frame, len);
    q = rx_wait_any(t, rings, RSS_QUEUES, wb);
    g_assert_cmpint(q, >=, 0);
    rx_check_data(t, &rings[q], rings[q].next - 1, frame, len);
    return q;
}

/* The queue RSS gives the flow with the set-up above */
static int rss_queue_of(IxgbeTest *t, RxRing *rings, const FdirFlow *f)
{
    uint8_t wb[DESC_SIZE];
    int q = flow_send(t, rings, f, wb);

    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_FLM, ==, 0);
    g_assert_cmpuint(rx_wb_rss_type(wb), ==, (f->ft & 3) == FT_TCP4 ?
                     IXGBE_RSSTYPE_IPV4_TCP : IXGBE_RSSTYPE_IPV4_UDP);
    return q;
}

static uint32_t fdircmd_add(uint8_t ft, unsigned queue)
{
    return IXGBE_FDIRCMD_CMD_ADD | IXGBE_FDIRCMD_FILTER_UPDATE |
           IXGBE_FDIRCMD_LAST | IXGBE_FDIRCMD_QUEUE_EN |
           (uint32_t)ft << IXGBE_FDIRCMD_FLOW_TYPE_SHIFT |
           queue << IXGBE_FDIRCMD_RX_QUEUE_SHIFT;
}

/* Program a perfect filter as ixgbe_fdir_write_perfect_filter_82599 does */
static void perfect_add(IxgbeTest *t, const FdirFlow *f, uint16_t bucket,
                        uint16_t sw_index, uint32_t cmd)
{
    wr(t, IXGBE_FDIRIPSA, ldl_le_p(f->sip));
    wr(t, IXGBE_FDIRIPDA, ldl_le_p(f->dip));
    wr(t, IXGBE_FDIRPORT, (uint32_t)f->dport << 16 | f->sport);
    wr(t, IXGBE_FDIRVLAN, 0);
    wr(t, IXGBE_FDIRHASH, (uint32_t)sw_index << 16 | bucket);
    wr(t, IXGBE_FDIRCMD, cmd);
    g_assert_cmphex(rd(t, IXGBE_FDIRCMD) & IXGBE_FDIRCMD_CMD_MASK, ==, 0);
}

static uint32_t fdir_cmd_on(IxgbeTest *t, uint32_t hash, uint32_t cmd)
{
    wr(t, IXGBE_FDIRHASH, hash);
    wr(t, IXGBE_FDIRCMD, cmd);
    return rd(t, IXGBE_FDIRCMD);
}

/* Perfect filters hash with the driver's masks: pool, VLAN, flex zero */
static uint16_t perfect_hash(const FdirFlow *f)
{
    FdirFlow m = *f;

    m.vlan = 0;
    m.flex = 0;
    return flow_hash(&m, BUCKET_KEY);
}

/* The bucket hash the Linux driver programs: 13 bits */
static uint16_t perfect_bucket(const FdirFlow *f)
{
    return perfect_hash(f) & 0x1FFF;
}

/* No frame came on any ring (a frame sent after it is the witness) */
static void assert_dropped_before(IxgbeTest *t, RxRing *rings,
                                  const FdirFlow *witness, int want)
{
    uint8_t wb[DESC_SIZE];

    g_assert_cmpint(flow_send(t, rings, witness, wb), ==, want);
    for (unsigned q = 0; q < RSS_QUEUES; q++) {
        g_assert_false(rx_desc_done(t, &rings[q], rings[q].next, wb));
    }
}

/* ------------------------------------------------------------------ */
/* Perfect-match filters                                               */
/* ------------------------------------------------------------------ */

static void test_perfect(void)
{
    FdirFlow a = { FT_TCP4, 0, { 192, 0, 2, 10 }, { 198, 51, 100, 20 },
                   40000, 5201, 0 };
    FdirFlow b = a, other = a;
    IxgbeTest t;
    RxRing rings[RSS_QUEUES];
    uint8_t wb[DESC_SIZE];
    uint16_t bucket_a, bucket_b;
    int rss_a, rss_b;
    uint32_t v;

    fdir_setup(&t, rings, PERFECT_CTRL);
    masks_4tuple(&t);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE) & 0xFFFF, ==, 2048);

    /* A second flow whose bucket (11 bits with 64 KB) is a's */
    bucket_a = perfect_bucket(&a);
    do {
        b.sport++;
        bucket_b = perfect_bucket(&b);
    } while ((bucket_b & 0x7FF) != (bucket_a & 0x7FF));
    other.dport = 5202;

    rss_a = rss_queue_of(&t, rings, &a);
    rss_b = rss_queue_of(&t, rings, &b);
    rd(&t, IXGBE_FDIRMISS);

    /* Each filter steers its own flow, though both share one bucket */
    perfect_add(&t, &a, bucket_a, 5, fdircmd_add(FT_TCP4, (rss_a + 1) % 4));
    perfect_add(&t, &b, bucket_b, 6, fdircmd_add(FT_TCP4, (rss_b + 2) % 4));
    g_assert_cmphex(rd(&t, IXGBE_FDIRUSTAT), ==, 2);
    g_assert_cmphex(rd(&t, IXGBE_FDIRUSTAT), ==, 0);
    v = rd(&t, IXGBE_FDIRLEN);
    g_assert_cmpuint(v & 0x3F, ==, 2);
    g_assert_cmphex(v >> 16, ==, bucket_a & 0x7FF);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE) & 0xFFFF, ==, 2046);

    g_assert_cmpint(flow_send(&t, rings, &a, wb), ==, (rss_a + 1) % 4);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_FLM, ==,
                    IXGBE_RXD_STAT_FLM);
    g_assert_cmpuint(rx_wb_rss_type(wb), ==, 0xF);
    g_assert_cmphex(rx_wb_hash(wb), ==, 5u << 16 | perfect_hash(&a));
    g_assert_cmpint(flow_send(&t, rings, &b, wb), ==, (rss_b + 2) % 4);
    g_assert_cmphex(rx_wb_hash(wb) >> 16, ==, 6);
    /* A flow that differs in one port matches nothing */
    rss_queue_of(&t, rings, &other);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRMATCH), ==, 2);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRMISS), ==, 1);

    /* Query: the filter's fields and action come back */
    wr(&t, IXGBE_FDIRPORT, 0);
    v = fdir_cmd_on(&t, 5u << 16 | bucket_a, IXGBE_FDIRCMD_CMD_QUERY);
    g_assert_cmphex(v & IXGBE_FDIRCMD_FILTER_VALID, ==,
                    IXGBE_FDIRCMD_FILTER_VALID);
    g_assert_cmpuint((v >> IXGBE_FDIRCMD_RX_QUEUE_SHIFT) & 0x7F, ==,
                     (rss_a + 1) % 4);
    g_assert_cmphex(rd(&t, IXGBE_FDIRPORT), ==, 5201u << 16 | 40000);
    v = fdir_cmd_on(&t, 7u << 16 | bucket_a, IXGBE_FDIRCMD_CMD_QUERY);
    g_assert_cmphex(v & IXGBE_FDIRCMD_FILTER_VALID, ==, 0);

    /* Adding the same bucket and SW index without FILTER_UPDATE collides */
    perfect_add(&t, &a, bucket_a, 5, fdircmd_add(FT_TCP4, 0) &
                ~IXGBE_FDIRCMD_FILTER_UPDATE);
    g_assert_cmphex(rd(&t, IXGBE_FDIRCMD) & IXGBE_FDIRCMD_COLLISION, ==,
                    IXGBE_FDIRCMD_COLLISION);
    g_assert_cmphex(rd(&t, IXGBE_FDIRFSTAT), ==, 1);
    g_assert_cmphex(rd(&t, IXGBE_FDIRFREE), ==, 1u << 16 | 2046);
    g_assert_cmpint(flow_send(&t, rings, &a, wb), ==, (rss_a + 1) % 4);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_ERR_FDIR_COLL, ==,
                    IXGBE_RXD_ERR_FDIR_COLL);

    /* With FILTER_UPDATE the action changes */
    perfect_add(&t, &a, bucket_a, 5, fdircmd_add(FT_TCP4, (rss_a + 3) % 4));
    g_assert_cmpint(flow_send(&t, rings, &a, wb), ==, (rss_a + 3) % 4);

    /* Removed, a flow is back on its RSS queue; b keeps its filter */
    v = fdir_cmd_on(&t, 5u << 16 | bucket_a, IXGBE_FDIRCMD_CMD_REMOVE);
    g_assert_cmphex(v & IXGBE_FDIRCMD_CMD_MASK, ==, 0);
    g_assert_cmpint(rss_queue_of(&t, rings, &a), ==, rss_a);
    g_assert_cmpint(flow_send(&t, rings, &b, wb), ==, (rss_b + 2) % 4);
    rd(&t, IXGBE_FDIRUSTAT);
    fdir_cmd_on(&t, 5u << 16 | bucket_a, IXGBE_FDIRCMD_CMD_REMOVE);
    g_assert_cmphex(rd(&t, IXGBE_FDIRFSTAT), ==, 1u << 8);
    fdir_cmd_on(&t, 6u << 16 | bucket_b, IXGBE_FDIRCMD_CMD_REMOVE);
    g_assert_cmphex(rd(&t, IXGBE_FDIRUSTAT), ==, 1u << 16);
    g_assert_cmpint(rss_queue_of(&t, rings, &b), ==, rss_b);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE), ==, 2048);

    /* A drop filter sends the flow to DROP_Q, which is not enabled */
    perfect_add(&t, &a, bucket_a, 9, fdircmd_add(FT_TCP4, DROP_QUEUE) |
                IXGBE_FDIRCMD_DROP);
    {
        uint8_t frame[64];
        size_t len = flow_frame(frame, &a);

        backend_send(&t, frame, len);
        assert_dropped_before(&t, rings, &b, rss_b);
    }
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Masks                                                               */
/* ------------------------------------------------------------------ */

static void test_masks(void)
{
    /* A rule: TCP to 198.51.100.20 port 5201 from 192.0.2.0/24, any port */
    FdirFlow rule = { FT_TCP4, 0, { 192, 0, 2, 0 }, { 198, 51, 100, 20 },
                      0, 5201, 0 };
    FdirFlow in_net = { FT_TCP4, 0, { 192, 0, 2, 77 }, { 198, 51, 100, 20 },
                        31337, 5201, 0 };
    FdirFlow out_net = in_net, udp = in_net;
    FdirFlow any = { FT_UDP4, 0, { 203, 0, 113, 5 }, { 198, 51, 100, 20 },
                     7, 9, 0 };
    IxgbeTest t;
    RxRing rings[RSS_QUEUES];
    uint8_t wb[DESC_SIZE];
    int rss_out, rss_udp, target;

    out_net.sip[2] = 3;
    udp.ft = FT_UDP4;
    fdir_setup(&t, rings, PERFECT_CTRL);
    rss_out = rss_queue_of(&t, rings, &out_net);
    rss_udp = rss_queue_of(&t, rings, &udp);
    target = (rss_out + 1) % 4;

    masks_4tuple(&t);
    /* The last address byte (bits 31:24, network order) is not compared */
    wr(&t, IXGBE_FDIRSIP4M, 0xFF000000);
    /* TCP source port not compared: its 16 bits, bit reversed, set */
    wr(&t, IXGBE_FDIRTCPM, 0x0000FFFF);
    perfect_add(&t, &rule, perfect_bucket(&rule), 1,
                fdircmd_add(FT_TCP4, target));
    in_net.sport = 1;
    g_assert_cmpint(flow_send(&t, rings, &in_net, wb), ==, target);
    in_net.sport = 65000;
    g_assert_cmpint(flow_send(&t, rings, &in_net, wb), ==, target);
    /* Outside the /24, or UDP: the rule does not apply */
    g_assert_cmpint(rss_queue_of(&t, rings, &out_net), ==, rss_out);
    g_assert_cmpint(rss_queue_of(&t, rings, &udp), ==, rss_udp);

    /*
     * FDIRM.L4P: the flow type's L4 part and the ports are not compared,
     * a rule on addresses alone ("ip4" in ethtool) takes UDP and TCP.
     */
    wr(&t, IXGBE_FDIRCTRL, PERFECT_CTRL);
    wr(&t, IXGBE_FDIRM, IXGBE_FDIRM_VLANID | IXGBE_FDIRM_VLANP |
       IXGBE_FDIRM_POOL | IXGBE_FDIRM_FLEX | IXGBE_FDIRM_DIPV6 |
       IXGBE_FDIRM_L4P);
    wr(&t, IXGBE_FDIRSIP4M, 0xFFFFFFFF);
    wr(&t, IXGBE_FDIRTCPM, 0xFFFFFFFF);
    wr(&t, IXGBE_FDIRUDPM, 0xFFFFFFFF);
    {
        FdirFlow ip4 = { 0, 0, { 0 }, { 198, 51, 100, 20 }, 0, 0, 0 };

        perfect_add(&t, &ip4, perfect_bucket(&ip4), 2, fdircmd_add(0, 3));
    }
    g_assert_cmpint(flow_send(&t, rings, &any, wb), ==, 3);
    g_assert_cmpint(flow_send(&t, rings, &in_net, wb), ==, 3);
    ixgbe_test_stop(&t);
}

/*
 * Flexible bytes: FDIRCTRL.FLEX_OFFSET words from the start of the frame
 * (27: the first two bytes of the TCP payload); with FDIRM.FLEX clear a
 * rule compares them.
 */
static void test_flex_bytes(void)
{
    FdirFlow f = { FT_TCP4, 0, { 192, 0, 2, 10 }, { 198, 51, 100, 20 },
                   40000, 5201, 0xBEEF };
    uint32_t ctrl = (PERFECT_CTRL & ~(IXGBE_FDIRCTRL_FLEX_MASK <<
                                      IXGBE_FDIRCTRL_FLEX_SHIFT)) |
                    27u << IXGBE_FDIRCTRL_FLEX_SHIFT;
    IxgbeTest t;
    RxRing rings[RSS_QUEUES];
    uint8_t frame[64], wb[DESC_SIZE];
    size_t len;
    int rss, target;

    fdir_setup(&t, rings, ctrl);
    rss = rss_queue_of(&t, rings, &f);
    target = (rss + 1) % 4;
    masks_4tuple(&t);
    wr(&t, IXGBE_FDIRM, rd(&t, IXGBE_FDIRM) & ~IXGBE_FDIRM_FLEX);
    wr(&t, IXGBE_FDIRIPSA, ldl_le_p(f.sip));
    wr(&t, IXGBE_FDIRIPDA, ldl_le_p(f.dip));
    wr(&t, IXGBE_FDIRPORT, (uint32_t)f.dport << 16 | f.sport);
    /* Flex bytes in 31:16 as they sit in the frame (first byte low) */
    wr(&t, IXGBE_FDIRVLAN, 0xEFBEu << 16);
    wr(&t, IXGBE_FDIRHASH, 1u << 16 | (flow_hash(&f, BUCKET_KEY) & 0x1FFF));
    wr(&t, IXGBE_FDIRCMD, fdircmd_add(FT_TCP4, target));

    for (unsigned i = 0; i < 2; i++) {
        len = flow_frame(frame, &f);
        stw_be_p(frame + 54, i ? 0xBEEE : 0xBEEF);
        backend_send(&t, frame, len);
        g_assert_cmpint(rx_wait_any(&t, rings, RSS_QUEUES, wb), ==,
                        i ? rss : target);
        g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_FLM, ==,
                        i ? 0 : IXGBE_RXD_STAT_FLM);
    }
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Signature filters (ATR)                                             */
/* ------------------------------------------------------------------ */

static void test_signature(void)
{
    /* What the driver sees sending on queue 2: the reply's flow */
    FdirFlow a = { FT_TCP4, 0, { 192, 0, 2, 10 }, { 198, 51, 100, 20 },
                   40000, 5201, 0x0800 };
    FdirFlow b = a;
    IxgbeTest t;
    RxRing rings[RSS_QUEUES];
    uint8_t wb[DESC_SIZE];
    uint16_t bucket, sig;
    int rss_a, rss_b, qa;

    b.sport = 40001;
    fdir_setup(&t, rings, SIG_CTRL);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE), ==, 8192);
    rss_a = rss_queue_of(&t, rings, &a);
    rss_b = rss_queue_of(&t, rings, &b);
    qa = (rss_a + 2) % 4;

    /* As ixgbe_fdir_add_signature_filter_82599: one 64-bit write */
    bucket = flow_hash(&a, BUCKET_KEY);
    sig = flow_hash(&a, SIG_KEY);
    qtest_writeq(t.qts, t.bar0.addr + IXGBE_FDIRHASH,
                 (uint64_t)fdircmd_add(FT_TCP4, qa) << 32 |
                 (uint32_t)sig << 16 | bucket);
    g_assert_cmphex(rd(&t, IXGBE_FDIRUSTAT), ==, 1);

    g_assert_cmpint(flow_send(&t, rings, &a, wb), ==, qa);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_FLM, ==,
                    IXGBE_RXD_STAT_FLM);
    g_assert_cmpuint(rx_wb_rss_type(wb), ==, 0xF);
    g_assert_cmphex(rx_wb_hash(wb), ==, (uint32_t)sig << 16 | bucket);
    g_assert_cmpint(rss_queue_of(&t, rings, &b), ==, rss_b);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRMATCH), ==, 1);

    /* The same filter with a wrong signature does not match */
    fdir_cmd_on(&t, (uint32_t)sig << 16 | bucket, IXGBE_FDIRCMD_CMD_REMOVE);
    fdir_cmd_on(&t, (uint32_t)(sig ^ 1) << 16 | bucket,
                fdircmd_add(FT_TCP4, qa));
    g_assert_cmpint(rss_queue_of(&t, rings, &a), ==, rss_a);

    /* A VLAN-tagged flow: the VLAN and the flex bytes (0x8100) hash */
    {
        FdirFlow v = a;
        uint8_t frame[68], plain[64];
        size_t len = flow_frame(plain, &a);

        v.vlan = 100;
        v.flex = 0x8100;
        bucket = flow_hash(&v, BUCKET_KEY);
        sig = flow_hash(&v, SIG_KEY);
        fdir_cmd_on(&t, (uint32_t)sig << 16 | bucket,
                    fdircmd_add(FT_TCP4, 1));
        memcpy(frame, plain, 12);
        stw_be_p(frame + 12, 0x8100);
        stw_be_p(frame + 14, 100);
        memcpy(frame + 16, plain + 12, len - 12);
        backend_send(&t, frame, len + 4);
        g_assert_cmpint(rx_wait_any(&t, rings, RSS_QUEUES, wb), ==, 1);
        g_assert_cmphex(rx_wb_hash(wb), ==, (uint32_t)sig << 16 | bucket);
    }

    /* TCP over IPv6: both addresses, all four dwords, enter the hash */
    {
        static const uint8_t sip6[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 };
        static const uint8_t dip6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0,
                                          0, 0xca, 0xfe, [15] = 2 };
        uint8_t frame[74] = { 0 };
        uint32_t in[11] = { 0 };
        uint16_t b6, s6;

        memcpy(frame, test_mac, 6);
        memcpy(frame + 6, peer_mac, 6);
        stw_be_p(frame + 12, 0x86DD);
        frame[14] = 0x60;
        stw_be_p(frame + 18, 20);
        frame[20] = 6;
        frame[21] = 64;
        memcpy(frame + 22, sip6, 16);
        memcpy(frame + 38, dip6, 16);
        stw_be_p(frame + 54, 443);
        stw_be_p(frame + 56, 51000);
        frame[66] = 5 << 4;

        in[0] = 6u << 16;                   /* TCP, IPv6 */
        for (unsigned i = 0; i < 4; i++) {
            in[1 + i] = ldl_be_p(dip6 + i * 4);
            in[5 + i] = ldl_be_p(sip6 + i * 4);
        }
        in[9] = 443u << 16 | 51000;
        in[10] = 0x86DDu << 16;
        b6 = ref_hash(in, BUCKET_KEY) & 0x7FFF;
        s6 = ref_hash(in, SIG_KEY) & 0x7FFF;
        fdir_cmd_on(&t, (uint32_t)s6 << 16 | b6, fdircmd_add(6, 2));
        backend_send(&t, frame, sizeof(frame));
        g_assert_cmpint(rx_wait_any(&t, rings, RSS_QUEUES, wb), ==, 2);
        g_assert_cmphex(rx_wb_hash(wb), ==, (uint32_t)s6 << 16 | b6);
    }

    /* Without Report_Status the descriptor keeps the RSS hash */
    wr(&t, IXGBE_FDIRCTRL, SIG_CTRL & ~IXGBE_FDIRCTRL_REPORT);
    bucket = flow_hash(&a, BUCKET_KEY);
    sig = flow_hash(&a, SIG_KEY);
    fdir_cmd_on(&t, (uint32_t)sig << 16 | bucket, fdircmd_add(FT_TCP4, qa));
    g_assert_cmpint(flow_send(&t, rings, &a, wb), ==, qa);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_FLM, ==, 0);
    g_assert_cmpuint(rx_wb_rss_type(wb), ==, IXGBE_RSSTYPE_IPV4_TCP);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Capacity, table full, bad input                                     */
/* ------------------------------------------------------------------ */

static void test_capacity(void)
{
    static const struct {
        uint32_t ctrl;
        unsigned filters;
    } c[] = {
        { 1 | IXGBE_FDIRCTRL_PERFECT, 2048 },
        { 2 | IXGBE_FDIRCTRL_PERFECT, 4096 },
        { 3 | IXGBE_FDIRCTRL_PERFECT, 8192 },
        { 1, 8192 },
        { 2, 16384 },
        { 3, 32768 },
    };
    IxgbeTest t;

    ixgbe_test_start(&t);
    for (unsigned i = 0; i < ARRAY_SIZE(c); i++) {
        wr(&t, IXGBE_FDIRCTRL, c[i].ctrl);
        g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE) & 0xFFFF, ==,
                         MIN(c[i].filters, 0xFFFF));
    }
    ixgbe_test_stop(&t);
}

static void test_table_full(void)
{
    IxgbeTest t;
    unsigned n;

    ixgbe_test_start(&t);
    wr(&t, IXGBE_FDIRCTRL, SIG_CTRL);
    wr(&t, IXGBE_EIMS, IXGBE_EICR_FLOW_DIR);

    /* 8192 signature filters; the cause comes when 64 are left */
    for (n = 0; n < 8192 - 65; n++) {
        wr(&t, IXGBE_FDIRHASH, n << 16 | (n & 0x1FFF));
        wr(&t, IXGBE_FDIRCMD, fdircmd_add(FT_TCP4, 0));
    }
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_FLOW_DIR, ==, 0);
    fdir_cmd_on(&t, n << 16 | (n & 0x1FFF), fdircmd_add(FT_TCP4, 0));
    n++;
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE), ==, 64);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_FLOW_DIR, ==,
                    IXGBE_EICR_FLOW_DIR);
    for (; n < 8192; n++) {
        wr(&t, IXGBE_FDIRHASH, n << 16 | (n & 0x1FFF));
        wr(&t, IXGBE_FDIRCMD, fdircmd_add(FT_TCP4, 0));
    }
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE), ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_FDIRFSTAT), ==, 0);
    /* Full: one more fails */
    fdir_cmd_on(&t, 0x7FFFu << 16 | 1, fdircmd_add(FT_TCP4, 0));
    g_assert_cmphex(rd(&t, IXGBE_FDIRFSTAT), ==, 1);
    g_assert_cmphex(rd(&t, IXGBE_FDIRUSTAT), ==, 8192);
    /* The driver's recovery: CLEARHT, then FDIRCTRL again */
    wr(&t, IXGBE_FDIRCMD, IXGBE_FDIRCMD_CLEARHT);
    wr(&t, IXGBE_FDIRCMD, 0);
    wr(&t, IXGBE_FDIRCTRL, SIG_CTRL);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRFREE), ==, 8192);

    /* Bad input: commands with Flow Director off, PBALLOC 0 */
    wr(&t, IXGBE_FDIRCTRL, IXGBE_FDIRCTRL_PERFECT);
    g_assert_true(ixgbe_test_logged(&t, "PBALLOC 0"));
    fdir_cmd_on(&t, 1, fdircmd_add(FT_TCP4, 0));
    g_assert_true(ixgbe_test_logged(&t, "while Flow Director is off"));
    g_assert_cmphex(rd(&t, IXGBE_FDIRFSTAT), ==, 1);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

/* The filters travel with the device and keep steering on the destination */
static void test_migration(void)
{
    FdirFlow a = { FT_TCP4, 0, { 192, 0, 2, 10 }, { 198, 51, 100, 20 },
                   40000, 5201, 0 };
    FdirFlow b = a;
    IxgbeTest src, dst;
    RxRing rings[RSS_QUEUES];
    uint8_t wb[DESC_SIZE];
    g_autofree char *path = NULL;
    int rss_a, rss_b;

    b.dport = 80;
    fdir_setup(&src, rings, PERFECT_CTRL);
    masks_4tuple(&src);
    rss_a = rss_queue_of(&src, rings, &a);
    rss_b = rss_queue_of(&src, rings, &b);
    perfect_add(&src, &a, perfect_bucket(&a), 3,
                fdircmd_add(FT_TCP4, (rss_a + 1) % 4));
    perfect_add(&src, &b, perfect_bucket(&b), 4,
                fdircmd_add(FT_TCP4, (rss_b + 2) % 4));
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    g_assert_cmpuint(rd(&dst, IXGBE_FDIRFREE), ==, 2046);
    g_assert_cmpint(flow_send(&dst, rings, &a, wb), ==, (rss_a + 1) % 4);
    g_assert_cmphex(rx_wb_hash(wb) >> 16, ==, 3);
    g_assert_cmpint(flow_send(&dst, rings, &b, wb), ==, (rss_b + 2) % 4);
    /* The bucket chains were rebuilt: removal works */
    fdir_cmd_on(&dst, 3u << 16 | perfect_bucket(&a),
                IXGBE_FDIRCMD_CMD_REMOVE);
    g_assert_cmpint(rss_queue_of(&dst, rings, &a), ==, rss_a);
    /* The loaded table, cut to its one filter, grows again */
    perfect_add(&dst, &a, perfect_bucket(&a), 5,
                fdircmd_add(FT_TCP4, (rss_a + 3) % 4));
    g_assert_cmpint(flow_send(&dst, rings, &a, wb), ==, (rss_a + 3) % 4);
    g_assert_cmpint(flow_send(&dst, rings, &b, wb), ==, (rss_b + 2) % 4);
    g_assert_cmpuint(rd(&dst, IXGBE_FDIRFREE), ==, 2046);
    ixgbe_test_stop(&dst);
    unlink(path);
}

/* A filter count beyond any table fails the load; the destination lives */
static void test_migration_bad_count(void)
{
    /* subsection name, version 1, full_signalled false, count 0xabc */
    static const uint8_t sentinel[] = {
        'i', 'x', 'g', 'b', 'e', '/', 'f', 'd', 'i', 'r',
        0, 0, 0, 1, 0, 0, 0, 0x0a, 0xbc,
    };
    uint8_t bad[sizeof(sentinel)];
    g_autofree char *path = NULL;
    IxgbeTest src, dst;

    memcpy(bad, sentinel, sizeof(bad));
    bad[sizeof(bad) - 4] = 0x00;
    bad[sizeof(bad) - 3] = 0x01;
    bad[sizeof(bad) - 2] = 0x00;
    bad[sizeof(bad) - 1] = 0x00;
    ixgbe_test_start(&src);
    wr(&src, IXGBE_FDIRCTRL, SIG_CTRL);
    for (uint32_t n = 0; n < 0xabc; n++) {
        wr(&src, IXGBE_FDIRHASH, n << 16 | n);
        wr(&src, IXGBE_FDIRCMD, fdircmd_add(FT_TCP4, 0));
    }
    path = save_to_file(&src);
    ixgbe_test_stop(&src);
    patch_stream(path, sentinel, sizeof(sentinel), bad);
    g_assert_false(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'query-status'}");
    ixgbe_test_stop(&dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/fdir/hash-reference", test_hash_reference);
    qtest_add_func("ixgbe/fdir/perfect", test_perfect);
    qtest_add_func("ixgbe/fdir/masks", test_masks);
    qtest_add_func("ixgbe/fdir/flex-bytes", test_flex_bytes);
    qtest_add_func("ixgbe/fdir/signature", test_signature);
    qtest_add_func("ixgbe/fdir/capacity", test_capacity);
    qtest_add_func("ixgbe/fdir/table-full", test_table_full);
    qtest_add_func("ixgbe/fdir/migration", test_migration);
    qtest_add_func("ixgbe/fdir/migration-bad-count",
                   test_migration_bad_count);
    return g_test_run();
}
