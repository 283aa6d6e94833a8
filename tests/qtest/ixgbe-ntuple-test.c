/*
 * QTest testcase for the receive queue filters of the Intel 82599 (ixgbe)
 * model that come before the Flow Director: the 128 L3/L4 5-tuple filters
 * (FTQF, SAQF, DAQF, SDPQF, L34TIMIR), the EtherType filters' queues
 * (ETQF with ETQS) and the TCP SYN filter (SYNQF).
 *
 * Queues 0-3 take RSS; the filters steer to queues 4-7, where RSS never
 * puts a frame.  Frames injected on the socket backend must land on the
 * queue the filters' order gives them: each field and mask of a 5-tuple
 * filter, priorities and indexes among 5-tuple filters, EtherType and
 * SYN filters around them, the Flow Director and RSS after them; disabled
 * filters, garbage in every register and a migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define RSS_QUEUES          4
#define NQUEUES             8

#define P_TCP               6
#define P_UDP               17
#define P_SCTP              132
#define P_ICMP              1

/* FTQF protocol field */
#define FT_TCP              0u
#define FT_UDP              1u
#define FT_SCTP             2u
#define FT_OTHER            3u

#define MASK_ALL            (IXGBE_FTQF_MASK_SRC_ADDR | \
                             IXGBE_FTQF_MASK_DST_ADDR | \
                             IXGBE_FTQF_MASK_SRC_PORT | \
                             IXGBE_FTQF_MASK_DST_PORT | \
                             IXGBE_FTQF_MASK_PROTO)

typedef struct Flow {
    uint8_t proto;
    uint8_t sip[4], dip[4];
    uint16_t sport, dport;
    bool syn;
} Flow;

static const Flow flow_a = {
    P_UDP, { 192, 0, 2, 10 }, { 198, 51, 100, 20 }, 40000, 5201, false
};

/* Queues 0-7, RSS over 0-3 (RETA entry i -> queue i % 4) */
static void configure(IxgbeTest *t, RxRing *rings)
{
    for (unsigned q = 0; q < NQUEUES; q++) {
        rx_ring_setup(t, &rings[q], q, 32);
    }
    rss_program(t, rss_entry_mod4, IXGBE_MRQC_RSS | IXGBE_MRQC_IPV4 |
                IXGBE_MRQC_TCPIPV4 | IXGBE_MRQC_UDPIPV4);
    rx_enable(t);
}

static void setup(IxgbeTest *t, RxRing *rings)
{
    ixgbe_test_start(t);
    configure(t, rings);
}

/*
 * Program 5-tuple filter idx with the flow's fields as DPDK's ixgbe driver
 * writes them (wire order, first byte in bits 7:0); ftqf_bits: protocol,
 * priority and mask bits; Queue Enable and the pool mask are added
 */
static void ntuple_set(IxgbeTest *t, unsigned idx, const Flow *f,
                       uint32_t ftqf_bits, unsigned queue)
{
    uint8_t ports[4];

    stw_be_p(ports, f->sport);
    stw_be_p(ports + 2, f->dport);
    wr(t, IXGBE_DAQF(idx), ldl_le_p(f->dip));
    wr(t, IXGBE_SAQF(idx), ldl_le_p(f->sip));
    wr(t, IXGBE_SDPQF(idx), ldl_le_p(ports));
    wr(t, IXGBE_FTQF(idx), ftqf_bits | IXGBE_FTQF_POOL_MASK_EN |
       IXGBE_FTQF_QUEUE_EN);
    wr(t, IXGBE_L34TIMIR(idx), IXGBE_L34TIMIR_CTRL_BP |
       queue << IXGBE_L34TIMIR_QUEUE_SHIFT);
}

static uint32_t prio(unsigned p)
{
    return p << IXGBE_FTQF_PRIO_SHIFT;
}

/* Send one frame of the flow; return the queue it lands on */
static int flow_send(IxgbeTest *t, RxRing *rings, const Flow *f)
{
    uint8_t frame[64], wb[DESC_SIZE];
    size_t len = build_ipv4_frame(frame, f->proto, f->sip, f->dip,
                                  f->sport, f->dport);
    int q;

    if (f->syn) {
        frame[14 + 20 + 13] = 0x02;
    }
    backend_send(t, frame, len);
    q = rx_wait_any(t, rings, NQUEUES, wb);
    g_assert_cmpint(q, >=, 0);
    rx_check_data(t, &rings[q], rings[q].next - 1, frame, len);
    return q;
}

static void assert_rss(IxgbeTest *t, RxRing *rings, const Flow *f)
{
    g_assert_cmpint(flow_send(t, rings, f), <, RSS_QUEUES);
}

/* ------------------------------------------------------------------ */
/* Fields and masks                                                    */
/* ------------------------------------------------------------------ */

/* The flow with field k (0 protocol, 1-2 addresses, 3-4 ports) changed */
static Flow flow_other(const Flow *f, unsigned k)
{
    Flow o = *f;

    switch (k) {
    case 0:
        o.proto = o.proto == P_UDP ? P_TCP : P_UDP;
        break;
    case 1:
        o.sip[3] ^= 1;
        break;
    case 2:
        o.dip[0] ^= 0x80;
        break;
    case 3:
        o.sport ^= 0x100;
        break;
    default:
        o.dport ^= 1;
        break;
    }
    return o;
}

static const uint32_t field_mask[] = {
    IXGBE_FTQF_MASK_PROTO, IXGBE_FTQF_MASK_SRC_ADDR,
    IXGBE_FTQF_MASK_DST_ADDR, IXGBE_FTQF_MASK_SRC_PORT,
    IXGBE_FTQF_MASK_DST_PORT,
};

static void test_fields(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];

    setup(&t, rings);
    assert_rss(&t, rings, &flow_a);

    /* A filter that compares one field alone: that field decides */
    for (unsigned k = 0; k < ARRAY_SIZE(field_mask); k++) {
        Flow changed = flow_other(&flow_a, k);
        Flow other = flow_other(&flow_a, (k + 1) % ARRAY_SIZE(field_mask));

        ntuple_set(&t, 17, &flow_a, FT_UDP | prio(1) |
                   (MASK_ALL & ~field_mask[k]), 5);
        g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 5);
        g_assert_cmpint(flow_send(&t, rings, &other), ==, 5);
        assert_rss(&t, rings, &changed);
    }

    /* All five compared: only the flow itself */
    ntuple_set(&t, 17, &flow_a, FT_UDP | prio(1), 6);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 6);
    for (unsigned k = 0; k < ARRAY_SIZE(field_mask); k++) {
        Flow changed = flow_other(&flow_a, k);

        assert_rss(&t, rings, &changed);
    }
    /* The same with TCP, and the UDP frame no longer matches */
    {
        Flow tcp = flow_a;

        tcp.proto = P_TCP;
        ntuple_set(&t, 17, &tcp, FT_TCP | prio(1), 7);
        g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 7);
        assert_rss(&t, rings, &flow_a);
    }
    ixgbe_test_stop(&t);
}

/* The protocol classes: SCTP, and "other" (no ports to compare) */
static void test_protocols(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    Flow sctp = flow_a, icmp = flow_a;

    sctp.proto = P_SCTP;
    icmp.proto = P_ICMP;
    setup(&t, rings);

    ntuple_set(&t, 0, &sctp, FT_SCTP | prio(1), 4);
    g_assert_cmpint(flow_send(&t, rings, &sctp), ==, 4);
    assert_rss(&t, rings, &flow_a);
    assert_rss(&t, rings, &icmp);

    /* "Other" with the ports masked takes ICMP, not UDP or SCTP */
    ntuple_set(&t, 1, &icmp, FT_OTHER | prio(1) | IXGBE_FTQF_MASK_SRC_PORT |
               IXGBE_FTQF_MASK_DST_PORT, 5);
    g_assert_cmpint(flow_send(&t, rings, &icmp), ==, 5);
    assert_rss(&t, rings, &flow_a);
    g_assert_cmpint(flow_send(&t, rings, &sctp), ==, 4);

    /* A filter that compares a port never takes a frame without ports */
    ntuple_set(&t, 1, &icmp, FT_OTHER | prio(1) | IXGBE_FTQF_MASK_SRC_PORT,
               5);
    assert_rss(&t, rings, &icmp);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Order                                                               */
/* ------------------------------------------------------------------ */

static void test_priority(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    const uint32_t dport_only = MASK_ALL & ~IXGBE_FTQF_MASK_DST_PORT;

    setup(&t, rings);
    ntuple_set(&t, 3, &flow_a, prio(2) | dport_only, 4);
    ntuple_set(&t, 100, &flow_a, prio(5) | dport_only, 6);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 6);
    /* Equal priorities: the lower index */
    ntuple_set(&t, 100, &flow_a, prio(2) | dport_only, 6);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 4);
    ntuple_set(&t, 3, &flow_a, prio(1) | dport_only, 4);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 6);
    /* Priority 7 at the last index beats both */
    ntuple_set(&t, 127, &flow_a, prio(7) | dport_only, 7);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 7);
    ixgbe_test_stop(&t);
}

/* EtherType filter > SYN filter (SYNQFP set) > 5-tuple > SYN filter */
static void test_ethertype_and_syn(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    Flow tcp = flow_a, syn, syn_b;

    tcp.proto = P_TCP;
    syn = tcp;
    syn.syn = true;
    syn_b = syn;
    syn_b.dport = 22;
    setup(&t, rings);
    ntuple_set(&t, 9, &tcp, FT_TCP | prio(1), 5);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 5);

    /* An IPv4 EtherType filter with a queue takes every IPv4 frame */
    wr(&t, IXGBE_ETQF(2), IXGBE_ETQF_FILTER_EN | 0x0800);
    wr(&t, IXGBE_ETQS(2), IXGBE_ETQS_QUEUE_EN |
       7u << IXGBE_ETQS_QUEUE_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 7);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 7);
    /* ...only tagged with its user priority when it asks for one */
    wr(&t, IXGBE_ETQF(2), IXGBE_ETQF_FILTER_EN | IXGBE_ETQF_UP_EN |
       3u << IXGBE_ETQF_UP_SHIFT | 0x0800);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 5);
    /* Without Queue Enable, or disabled, it steers nothing */
    wr(&t, IXGBE_ETQF(2), IXGBE_ETQF_FILTER_EN | 0x0800);
    wr(&t, IXGBE_ETQS(2), 7u << IXGBE_ETQS_QUEUE_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 5);
    wr(&t, IXGBE_ETQS(2), IXGBE_ETQS_QUEUE_EN |
       7u << IXGBE_ETQS_QUEUE_SHIFT);
    wr(&t, IXGBE_ETQF(2), 0x0800);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 5);

    /* The SYN filter after the 5-tuple filters */
    wr(&t, IXGBE_SYNQF, IXGBE_SYNQF_EN | 4u << IXGBE_SYNQF_QUEUE_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &syn), ==, 5);
    g_assert_cmpint(flow_send(&t, rings, &syn_b), ==, 4);
    syn_b.syn = false;
    assert_rss(&t, rings, &syn_b);
    /* ...and before them with SYNQFP */
    wr(&t, IXGBE_SYNQF, IXGBE_SYNQF_SYNQFP | IXGBE_SYNQF_EN |
       4u << IXGBE_SYNQF_QUEUE_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &syn), ==, 4);
    g_assert_cmpint(flow_send(&t, rings, &tcp), ==, 5);
    /* ...but still after the EtherType filter */
    wr(&t, IXGBE_ETQF(2), IXGBE_ETQF_FILTER_EN | 0x0800);
    g_assert_cmpint(flow_send(&t, rings, &syn), ==, 7);
    ixgbe_test_stop(&t);
}

/* The 5-tuple filters come before the Flow Director, which comes before RSS */
static void test_flow_director(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    Flow b = flow_a;

    b.dport = 53;
    setup(&t, rings);
    /* Perfect-match mode, 64 KB, every frame that misses to queue 6 */
    wr(&t, IXGBE_RXPBSIZE0, (512 - 64) << 10);
    wr(&t, IXGBE_FDIRCTRL, 1u | IXGBE_FDIRCTRL_PERFECT |
       IXGBE_FDIRCTRL_DROP_NO_MATCH | 6u << IXGBE_FDIRCTRL_DROP_Q_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 6);
    g_assert_cmpuint(rd(&t, IXGBE_FDIRMISS), ==, 1);

    ntuple_set(&t, 40, &flow_a, FT_UDP | prio(1), 5);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 5);
    g_assert_cmpint(flow_send(&t, rings, &b), ==, 6);
    /* The steered frame was not looked up in the Flow Director */
    g_assert_cmpuint(rd(&t, IXGBE_FDIRMISS), ==, 1);

    wr(&t, IXGBE_FDIRCTRL, 0);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 5);
    assert_rss(&t, rings, &b);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Disabled filters, garbage, reset, migration                         */
/* ------------------------------------------------------------------ */

static void test_disabled(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    int rss;

    setup(&t, rings);
    rss = flow_send(&t, rings, &flow_a);
    g_assert_cmpint(rss, <, RSS_QUEUES);

    ntuple_set(&t, 64, &flow_a, FT_UDP | prio(1), 5);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 5);
    /* Queue Enable clear: the filter steers nothing */
    wr(&t, IXGBE_FTQF(64), rd(&t, IXGBE_FTQF(64)) & ~IXGBE_FTQF_QUEUE_EN);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, rss);
    wr(&t, IXGBE_FTQF(64), rd(&t, IXGBE_FTQF(64)) | IXGBE_FTQF_QUEUE_EN);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 5);

    /* A device reset clears the filters */
    wr(&t, IXGBE_CTRL, IXGBE_CTRL_RST);
    g_assert_cmphex(rd(&t, IXGBE_FTQF(64)), ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_L34TIMIR(64)), ==, 0);
    configure(&t, rings);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, rss);
    ixgbe_test_stop(&t);
}

/*
 * Every bit of every filter register set: reserved bits read 0, every
 * filter matches every IPv4 frame and steers it to queue 127, which is
 * not enabled: the frame is dropped, the device goes on
 */
static void test_garbage(void)
{
    IxgbeTest t;
    RxRing rings[NQUEUES];
    Flow syn = flow_a;

    syn.proto = P_TCP;
    syn.syn = true;
    setup(&t, rings);
    for (unsigned i = 0; i < IXGBE_NTUPLE_COUNT; i++) {
        wr(&t, IXGBE_SAQF(i), 0xFFFFFFFF);
        wr(&t, IXGBE_DAQF(i), 0xFFFFFFFF);
        wr(&t, IXGBE_SDPQF(i), 0xFFFFFFFF);
        wr(&t, IXGBE_FTQF(i), 0xFFFFFFFF);
        wr(&t, IXGBE_L34TIMIR(i), 0xFFFFFFFF);
    }
    for (unsigned i = 0; i < 8; i++) {
        wr(&t, IXGBE_ETQS(i), 0xFFFFFFFF);
    }
    wr(&t, IXGBE_SYNQF, 0xFFFFFFFF);
    g_assert_cmphex(rd(&t, IXGBE_FTQF(5)), ==, IXGBE_FTQF_WMASK);
    g_assert_cmphex(rd(&t, IXGBE_L34TIMIR(127)), ==, IXGBE_L34TIMIR_WMASK);
    g_assert_cmphex(rd(&t, IXGBE_ETQS(7)), ==, IXGBE_ETQS_WMASK);
    g_assert_cmphex(rd(&t, IXGBE_SYNQF), ==, IXGBE_SYNQF_WMASK);
    g_assert_cmphex(rd(&t, IXGBE_SAQF(127)), ==, 0xFFFFFFFF);

    /*
     * Three UDP frames go to queue 127 and are dropped; a SYN after them
     * (the SYN filter, first with SYNQFP, now to queue 5) shows they were
     * taken, and nothing came on any ring but the SYN
     */
    wr(&t, IXGBE_SYNQF, IXGBE_SYNQF_SYNQFP | IXGBE_SYNQF_EN |
       5u << IXGBE_SYNQF_QUEUE_SHIFT);
    for (unsigned n = 0; n < 3; n++) {
        uint8_t frame[64];
        size_t len = build_ipv4_frame(frame, P_UDP, flow_a.sip, flow_a.dip,
                                      flow_a.sport + n, flow_a.dport);

        backend_send(&t, frame, len);
    }
    g_assert_cmpint(flow_send(&t, rings, &syn), ==, 5);
    for (unsigned q = 0; q < NQUEUES; q++) {
        uint8_t wb[DESC_SIZE];

        g_assert_false(rx_desc_done(&t, &rings[q], rings[q].next, wb));
    }
    /* Filter 0 (the lowest index of 128 at priority 7) to queue 4 */
    wr(&t, IXGBE_L34TIMIR(0), 4u << IXGBE_L34TIMIR_QUEUE_SHIFT);
    g_assert_cmpint(flow_send(&t, rings, &flow_a), ==, 4);
    g_assert_cmphex(rd(&t, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==,
                    IXGBE_STATUS_LINK_UP);
    ixgbe_test_stop(&t);
}

static void test_migration(void)
{
    IxgbeTest src, dst;
    RxRing rings[NQUEUES];
    g_autofree char *path = NULL;
    Flow b = flow_a;

    b.sport = 7;
    setup(&src, rings);
    ntuple_set(&src, 126, &flow_a, FT_UDP | prio(3), 6);
    ntuple_set(&src, 2, &b, FT_UDP | prio(1) | IXGBE_FTQF_MASK_DST_ADDR, 7);
    g_assert_cmpint(flow_send(&src, rings, &flow_a), ==, 6);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    g_assert_cmpint(flow_send(&dst, rings, &flow_a), ==, 6);
    g_assert_cmpint(flow_send(&dst, rings, &b), ==, 7);
    wr(&dst, IXGBE_FTQF(126), 0);
    assert_rss(&dst, rings, &flow_a);
    ixgbe_test_stop(&dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/ntuple/fields", test_fields);
    qtest_add_func("ixgbe/ntuple/protocols", test_protocols);
    qtest_add_func("ixgbe/ntuple/priority", test_priority);
    qtest_add_func("ixgbe/ntuple/ethertype-and-syn", test_ethertype_and_syn);
    qtest_add_func("ixgbe/ntuple/flow-director", test_flow_director);
    qtest_add_func("ixgbe/ntuple/disabled", test_disabled);
    qtest_add_func("ixgbe/ntuple/garbage", test_garbage);
    qtest_add_func("ixgbe/ntuple/migration", test_migration);
    return g_test_run();
}
