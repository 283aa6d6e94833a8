/*
 * QTest for the Intel 82599 (ixgbe): receive side coalescing (RSC).
 *
 * Queue 0 coalesces (RSCCTL.RSCEN, 1 KiB buffers) and its cause goes to
 * EICR bit 0 with a 200 us throttle interval (EITR0); interrupts stay
 * masked, so only the events under test close an aggregate.  Segments
 * are TCP over IPv4 with right checksums; an aggregate must read in host
 * memory as the one frame the sender's stream makes of them.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/units.h"
#include "qemu/timer.h"
#include "../../hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define RSCCTL              0x2C
#define RSCCTL_RSCEN        1u
#define RSCCTL_MAXDESC_1    0u
#define RSCCTL_MAXDESC_4    (1u << 2)
#define RSCCTL_MAXDESC_16   (3u << 2)
#define RFCTL_RSC_DIS       (1u << 5)
#define ITR_NS              (200 * SCALE_US)
#define RSCCNT(wb)          ((ldl_le_p(wb) >> 17) & 0xF)
#define NEXTP(wb)           ((rx_wb_status(wb) >> 4) & 0xFFFF)

#define TCP_FIN             0x01
#define TCP_SYN             0x02
#define TCP_RST             0x04
#define TCP_PSH             0x08
#define TCP_ACK             0x10
#define TCP_URG             0x20
#define TCP_ECE             0x40
#define TCP_CWR             0x80

#define RSSTYPE_IPV4_TCP    1
#define SRRCTL_DESCTYPE_HDR_SPLIT (2u << IXGBE_SRRCTL_DESCTYPE_SHIFT)

#define SEQ0                1000000u
#define MAX_FRAME           (16 * KiB)

static unsigned rx_seen;

/* One TCP segment of flow (0, 1, ...) */
typedef struct Seg {
    unsigned flow;
    uint32_t seq;
    uint32_t ack;
    uint16_t win;
    uint8_t flags;
    bool ts;                /* NOP, NOP, timestamp option */
    uint32_t tsval;
    bool nops;              /* four NOPs: an option RSC does not take */
    bool bad_csum;          /* the TCP checksum off by one */
    size_t plen;
} Seg;

/* The byte at sequence number seq of a flow's stream */
static uint8_t stream_byte(unsigned flow, uint32_t seq)
{
    return (seq * 7 + flow * 13 + (seq >> 8)) & 0xFF;
}

static uint16_t tcp_checksum(const uint8_t *ip, const uint8_t *tcp,
                             size_t len)
{
    uint32_t sum = IPPROTO_TCP + len;

    for (size_t i = 0; i < 8; i += 2) {
        sum += lduw_be_p(ip + 12 + i);
    }
    for (size_t i = 0; i < len; i += 2) {
        sum += i + 1 < len ? lduw_be_p(tcp + i) : tcp[i] << 8;
    }
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return ~sum;
}

/* The frame of segment s, checksums right; returns its length */
static size_t tcp_frame(uint8_t *buf, const Seg *s)
{
    uint8_t *ip = buf + 14, *tcp = ip + 20;
    size_t olen = s->ts ? 12 : s->nops ? 4 : 0;
    size_t tlen = 20 + olen + s->plen;

    memset(buf, 0, 14 + 20 + tlen);
    memcpy(buf, test_mac, 6);
    memcpy(buf + 6, peer_mac, 6);
    stw_be_p(buf + 12, 0x0800);
    ip[0] = 0x45;
    stw_be_p(ip + 2, 20 + tlen);
    ip[8] = 64;
    ip[9] = IPPROTO_TCP;
    stl_be_p(ip + 12, 0x0A000001 + s->flow);
    stl_be_p(ip + 16, 0x0A000064);
    stw_be_p(ip + 10, ip_checksum(ip, 20));
    stw_be_p(tcp, 40000 + s->flow);
    stw_be_p(tcp + 2, 5201);
    stl_be_p(tcp + 4, s->seq);
    stl_be_p(tcp + 8, s->ack);
    tcp[12] = (5 + olen / 4) << 4;
    tcp[13] = s->flags;
    stw_be_p(tcp + 14, s->win);
    if (s->ts) {
        stl_be_p(tcp + 20, 0x0101080A);
        stl_be_p(tcp + 24, s->tsval);
        stl_be_p(tcp + 28, 77);
    } else if (s->nops) {
        stl_be_p(tcp + 20, 0x01010101);
    }
    for (size_t i = 0; i < s->plen; i++) {
        tcp[20 + olen + i] = stream_byte(s->flow, s->seq + i);
    }
    stw_be_p(tcp + 16, tcp_checksum(ip, tcp, tlen) + s->bad_csum);
    return 14 + 20 + tlen;
}

static void send_seg(IxgbeTest *t, const Seg *s)
{
    g_autofree uint8_t *buf = g_malloc(MAX_FRAME);

    backend_send(t, buf, tcp_frame(buf, s));
}

/* Wait until the MAC has counted n frames since the start */
static void wait_rx(IxgbeTest *t, unsigned n)
{
    gint64 end = g_get_monotonic_time() + WAIT_US;

    while (rx_seen < n) {
        rx_seen += rd(t, IXGBE_GPRC);
        g_assert_cmpint(g_get_monotonic_time(), <, end);
    }
    g_assert_cmpuint(rx_seen, ==, n);
}

/* Segments of flow 0 from SEQ0 on, each plen bytes, ACK set */
static Seg seg(unsigned flow, unsigned i, size_t plen)
{
    return (Seg) {
        .flow = flow, .seq = SEQ0 + i * plen, .ack = 500 + i,
        .win = 1000 + i, .flags = TCP_ACK, .plen = plen,
    };
}

static void start(IxgbeTest *t, RxRing *r, unsigned ndesc, uint32_t rscctl)
{
    rx_seen = 0;
    ixgbe_test_start(t);
    rx_ring_setup(t, r, 0, ndesc);
    wr(t, IXGBE_IVAR(0), IXGBE_IVAR_VALID);
    wr(t, eitr(0), (ITR_NS / (2 * SCALE_US)) << 3);
    wr(t, rxq(0, RSCCTL), rscctl);
    rx_enable(t);
}

static void start_rsc(IxgbeTest *t, RxRing *r)
{
    start(t, r, 32, RSCCTL_RSCEN | RSCCTL_MAXDESC_16);
}

/*
 * start_rsc() with MSI-X vector 0 masking itself as it fires (EIAM), as
 * the Linux driver runs a queue; eiac: its cause auto-cleared too
 */
static void start_rsc_automask(IxgbeTest *t, RxRing *r, bool eiac)
{
    start_rsc(t, r);
    qpci_msix_enable(t->dev);
    wr(t, IXGBE_GPIE, IXGBE_GPIE_MSIX_MODE | IXGBE_GPIE_EIAME |
       GPIE_PBA_SUPPORT);
    wr(t, IXGBE_EIAM_EX0, 1);
    if (eiac) {
        wr(t, IXGBE_EIAC, 1);
    }
    wr(t, IXGBE_EIMS, 1);
}

/*
 * The frame spread over descriptors idx[0..n) of r, as host memory has
 * it, compared with want; the chain's links and counts checked.
 */
static void check_chain(IxgbeTest *t, const RxRing *r, const unsigned *idx,
                        unsigned n, const unsigned *cnt, const uint8_t *want,
                        size_t len)
{
    g_autofree uint8_t *got = g_malloc0(n * RX_BUF_SIZE);
    size_t off = 0;

    for (unsigned i = 0; i < n; i++) {
        uint8_t wb[DESC_SIZE];
        uint32_t st;

        g_assert_true(rx_desc_done(t, r, idx[i], wb));
        st = rx_wb_status(wb);
        g_assert_cmpuint(RSCCNT(wb), ==, cnt[i]);
        if (i == n - 1) {
            g_assert_cmphex(st & IXGBE_RXD_STAT_EOP, ==, IXGBE_RXD_STAT_EOP);
            g_assert_cmphex(st & (IXGBE_RXD_STAT_L4CS | IXGBE_RXD_STAT_IPCS |
                                  IXGBE_RXD_ERR_TCPE | IXGBE_RXD_ERR_IPE),
                            ==, IXGBE_RXD_STAT_L4CS | IXGBE_RXD_STAT_IPCS);
        } else {
            g_assert_cmphex(st & IXGBE_RXD_STAT_EOP, ==, 0);
            g_assert_cmpuint(NEXTP(wb), ==, idx[i + 1]);
        }
        qtest_memread(t->qts, r->bufs + idx[i] * RX_BUF_SIZE, got + off,
                      rx_wb_length(wb));
        off += rx_wb_length(wb);
    }
    g_assert_cmpuint(off, ==, len);
    g_assert_cmpmem(got, len, want, len);
}


/*
 * Descriptor idx holds segment s as it came, not as an RSC descriptor
 * (RSCCNT 0); its write-back goes to wb.  Returns the frame's length.
 */
static size_t check_alone(IxgbeTest *t, const RxRing *r, unsigned idx,
                          const Seg *s, uint8_t *wb)
{
    uint8_t frame[512];
    size_t len = tcp_frame(frame, s);

    g_assert_true(rx_desc_done(t, r, idx, wb));
    g_assert_cmpuint(RSCCNT(wb), ==, 0);
    rx_check_data(t, r, idx, frame, len);
    return len;
}

/*
 * The frame the segments first..first+n-1 of a flow make when coalesced:
 * the first one's header with the last one's acknowledgment, window and
 * timestamp, flags ORed, the payloads in a row.
 */
static size_t aggregate(uint8_t *buf, const Seg *segs, unsigned n)
{
    Seg a = segs[0];

    for (unsigned i = 1; i < n; i++) {
        a.ack = segs[i].ack;
        a.win = segs[i].win;
        a.tsval = segs[i].tsval;
        a.flags |= segs[i].flags;
        a.plen += segs[i].plen;
    }
    return tcp_frame(buf, &a);
}

static void check_aggregate(IxgbeTest *t, const RxRing *r,
                            const unsigned *idx, unsigned ndesc,
                            const unsigned *cnt, const Seg *segs,
                            unsigned nsegs)
{
    g_autofree uint8_t *want = g_malloc(MAX_FRAME);
    size_t len = aggregate(want, segs, nsegs);

    check_chain(t, r, idx, ndesc, cnt, want, len);
}

/* Nothing written back yet at descriptor idx */
static void assert_open(IxgbeTest *t, const RxRing *r, unsigned idx)
{
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(t, r, idx));
}

/*
 * In-order segments of a flow coalesce into one frame over three
 * descriptors, written back when the throttle interval ends and not
 * before: the first segment (354 bytes) alone in the first 1 KiB buffer,
 * the four others' 4 x 300 bytes of payload in the next two, all four
 * starting in the second (RSCCNT 1 + 4); RSCCNT - 1 over the chain adds
 * up to the four segments coalesced into the first.
 */
static void test_coalesce_timer(void)
{
    static const unsigned idx[] = { 0, 1, 2 }, cnt[] = { 1, 5, 1 };
    Seg s[5];
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    for (unsigned i = 0; i < 5; i++) {
        s[i] = seg(0, i, 300);
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 5);
    assert_open(&t, &r, 0);
    qtest_clock_step(t.qts, ITR_NS - 1);
    assert_open(&t, &r, 0);
    qtest_clock_step(t.qts, 1);
    check_aggregate(&t, &r, idx, 3, cnt, s, 5);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 3);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & 1, ==, 1);
    ixgbe_test_stop(&t);
}

/* A segment out of order closes the aggregate and starts the next one */
static void test_out_of_order(void)
{
    static const unsigned i01[] = { 0, 1 }, c12[] = { 1, 2 }, i2[] = { 2 },
                          c1[] = { 1 };
    Seg s[3] = { seg(0, 0, 300), seg(0, 1, 300), seg(0, 3, 300) };
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    for (unsigned i = 0; i < 3; i++) {
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 3);
    check_aggregate(&t, &r, i01, 2, c12, s, 2);
    assert_open(&t, &r, 2);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i2, 1, c1, s + 2, 1);
    ixgbe_test_stop(&t);
}

/*
 * PSH ends an aggregate with the segment that carries it; FIN ends it
 * before, and goes as a frame of its own.
 */
static void test_flags(void)
{
    static const unsigned i01[] = { 0, 1 }, i23[] = { 2, 3 },
                          c12[] = { 1, 2 };
    Seg s[5] = { seg(0, 0, 300), seg(0, 1, 300), seg(0, 2, 300),
                 seg(0, 3, 300), seg(0, 4, 100) };
    uint8_t wb[DESC_SIZE];
    size_t len;
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    s[1].flags |= TCP_PSH;
    s[4].seq = s[3].seq + 300;
    s[4].flags |= TCP_FIN;
    for (unsigned i = 0; i < 2; i++) {
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 2);
    check_aggregate(&t, &r, i01, 2, c12, s, 2);

    send_seg(&t, &s[2]);
    send_seg(&t, &s[3]);
    send_seg(&t, &s[4]);
    wait_rx(&t, 5);
    check_aggregate(&t, &r, i23, 2, c12, s + 2, 2);
    /* The FIN segment as it came, not an RSC descriptor */
    len = check_alone(&t, &r, 4, &s[4], wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    ixgbe_test_stop(&t);
}

/*
 * The timestamp option coalesces (the aggregate has the last segment's
 * timestamp); another option closes the aggregate and is not coalesced.
 */
static void test_options(void)
{
    static const unsigned i01[] = { 0, 1 }, c13[] = { 1, 3 };
    Seg s[4];
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    for (unsigned i = 0; i < 4; i++) {
        s[i] = seg(0, i, 200);
        s[i].ts = i < 3;
        s[i].tsval = 9000 + i;
    }
    s[3].nops = true;
    for (unsigned i = 0; i < 4; i++) {
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 4);
    check_aggregate(&t, &r, i01, 2, c13, s, 3);
    check_alone(&t, &r, 2, &s[3], wb);
    ixgbe_test_stop(&t);
}

/*
 * RSCCTL.MAXDESC bounds an aggregate's descriptors. At 4 (1 KiB buffers,
 * 900-byte payloads): the first segment alone in the first, three more
 * packed into the next three, and the fifth, which would need a fifth
 * descriptor, closes the aggregate and starts the next one. At 1 (the
 * field at zero): the first segment's descriptor holds nothing else, so
 * each segment is an aggregate of its own (RSCCNT 1), and a frame that
 * needs two descriptors is not coalesced at all (RSCCNT 0).
 */
static void test_maxdesc(void)
{
    static const unsigned ia[] = { 0, 1, 2, 3 }, ca[] = { 1, 3, 2, 1 },
                          i4[] = { 4 }, i5[] = { 5 }, i6[] = { 6 },
                          c1[] = { 1 };
    Seg s[5], u[2], big = seg(2, 0, 1400);
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start(&t, &r, 32, RSCCTL_RSCEN | RSCCTL_MAXDESC_4);
    for (unsigned i = 0; i < 5; i++) {
        s[i] = seg(0, i, 900);
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 5);
    check_aggregate(&t, &r, ia, 4, ca, s, 4);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i4, 1, c1, s + 4, 1);

    wr(&t, rxq(0, RSCCTL), RSCCTL_RSCEN | RSCCTL_MAXDESC_1);
    for (unsigned i = 0; i < 2; i++) {
        u[i] = seg(1, i, 300);
        send_seg(&t, &u[i]);
    }
    wait_rx(&t, 7);
    check_aggregate(&t, &r, i5, 1, c1, u, 1);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i6, 1, c1, u + 1, 1);

    send_seg(&t, &big);
    wait_rx(&t, 8);
    g_assert_true(rx_desc_done(&t, &r, 7, wb));
    g_assert_cmpuint(RSCCNT(wb), ==, 0);
    g_assert_true(rx_desc_done(&t, &r, 8, wb));
    g_assert_cmpuint(RSCCNT(wb), ==, 0);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_EOP, ==,
                    IXGBE_RXD_STAT_EOP);
    ixgbe_test_stop(&t);
}

/*
 * Each TCP flag but ACK and PSH (and a segment without ACK) closes the
 * aggregate, and the segment goes as it came, as a frame of its own.
 */
static void test_other_flags(void)
{
    static const uint8_t flags[] = {
        TCP_SYN | TCP_ACK, TCP_RST | TCP_ACK, TCP_URG | TCP_ACK,
        TCP_ECE | TCP_ACK, TCP_CWR | TCP_ACK, 0,
    };
    static const unsigned c12[] = { 1, 2 };
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    for (unsigned i = 0; i < ARRAY_SIZE(flags); i++) {
        const unsigned idx[] = { 3 * i, 3 * i + 1 };
        Seg s[3] = { seg(0, 3 * i, 200), seg(0, 3 * i + 1, 200),
                     seg(0, 3 * i + 2, 200) };

        s[2].flags = flags[i];
        for (unsigned j = 0; j < 3; j++) {
            send_seg(&t, &s[j]);
        }
        wait_rx(&t, 3 * (i + 1));
        check_aggregate(&t, &r, idx, 2, c12, s, 2);
        check_alone(&t, &r, 3 * i + 2, &s[2], wb);
    }
    ixgbe_test_stop(&t);
}

/*
 * A segment whose TCP checksum is wrong is not coalesced: it closes the
 * aggregate and goes as it came, with its error; the aggregate before it
 * has IP and TCP checksums right over the whole (check_aggregate compares
 * it with the frame the stream makes, checksums included).
 */
static void test_checksum(void)
{
    static const unsigned i01[] = { 0, 1 }, c12[] = { 1, 2 };
    Seg s[3] = { seg(0, 0, 333), seg(0, 1, 333), seg(0, 2, 333) };
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    s[2].bad_csum = true;
    for (unsigned i = 0; i < 3; i++) {
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 3);
    check_aggregate(&t, &r, i01, 2, c12, s, 2);
    check_alone(&t, &r, 2, &s[2], wb);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_ERR_TCPE, ==,
                    IXGBE_RXD_ERR_TCPE);
    ixgbe_test_stop(&t);
}

/* The Toeplitz hash, from its definition */
static uint32_t toeplitz(const uint8_t *key, const uint8_t *in, size_t len)
{
    uint32_t hash = 0, window = ldl_be_p(key);
    size_t next = 32;

    for (size_t i = 0; i < len; i++) {
        for (int b = 7; b >= 0; b--) {
            if (in[i] & (1u << b)) {
                hash ^= window;
            }
            window = (window << 1) |
                     !!(key[next / 8] & (0x80u >> (next % 8)));
            next++;
        }
    }
    return hash;
}

/*
 * RSS on: the aggregate's descriptors carry the flow's hash and the
 * TCP/IPv4 hash type, as each of its segments would have.
 */
static void test_rss(void)
{
    static const unsigned i01[] = { 0, 1 }, c13[] = { 1, 3 };
    uint8_t key[IXGBE_RSS_KEY_SIZE], in[12];
    Seg s[3] = { seg(0, 0, 250), seg(0, 1, 250), seg(0, 2, 250) };
    uint8_t wb[DESC_SIZE];
    uint32_t hash;
    IxgbeTest t;
    RxRing r;

    for (unsigned i = 0; i < sizeof(key); i++) {
        key[i] = 0x6D + i * 29;
    }
    stl_be_p(in, 0x0A000001);
    stl_be_p(in + 4, 0x0A000064);
    stw_be_p(in + 8, 40000);
    stw_be_p(in + 10, 5201);
    hash = toeplitz(key, in, sizeof(in));

    start_rsc(&t, &r);
    for (unsigned i = 0; i < IXGBE_RSS_KEY_SIZE / 4; i++) {
        wr(&t, IXGBE_RSSRK0 + i * 4, ldl_le_p(key + i * 4));
    }
    /* The redirection table at zero sends every flow to queue 0 */
    wr(&t, IXGBE_MRQC, IXGBE_MRQC_RSS | IXGBE_MRQC_TCPIPV4);
    for (unsigned i = 0; i < 3; i++) {
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 3);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i01, 2, c13, s, 3);
    for (unsigned i = 0; i < 2; i++) {
        g_assert_true(rx_desc_done(&t, &r, i, wb));
        g_assert_cmphex(rx_wb_hash(wb), ==, hash);
        g_assert_cmpuint(rx_wb_rss_type(wb), ==, RSSTYPE_IPV4_TCP);
    }
    ixgbe_test_stop(&t);
}

/*
 * A queue with header split descriptors does not coalesce (not
 * modelled): each segment is a frame of its own, RSCCNT 0.
 */
static void test_header_split(void)
{
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;
    Seg s[3];

    start_rsc(&t, &r);
    wr(&t, rxq(0, IXGBE_RXQ_SRRCTL),
       SRRCTL_DESCTYPE_HDR_SPLIT | (4 << 8) | (RX_BUF_SIZE / KiB));
    for (unsigned i = 0; i < 3; i++) {
        s[i] = seg(0, i, 300);
        send_seg(&t, &s[i]);
    }
    wait_rx(&t, 3);
    for (unsigned i = 0; i < 3; i++) {
        check_alone(&t, &r, i, &s[i], wb);
    }
    ixgbe_test_stop(&t);
}

/*
 * Two flows interleaved: each has its aggregate, and each one's second
 * segment goes into a descriptor taken after the other flow's first,
 * which NEXTP names; the first flow's third joins its second.
 */
static void test_two_flows(void)
{
    static const unsigned ia[] = { 0, 2 }, ca[] = { 1, 3 },
                          ib[] = { 1, 3 }, cb[] = { 1, 2 };
    Seg a[3], b[2];
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    for (unsigned i = 0; i < 3; i++) {
        a[i] = seg(0, i, 400);
        b[i % 2] = seg(1, i % 2, 250);
    }
    send_seg(&t, &a[0]);
    send_seg(&t, &b[0]);
    send_seg(&t, &a[1]);
    send_seg(&t, &b[1]);
    send_seg(&t, &a[2]);
    wait_rx(&t, 5);
    assert_open(&t, &r, 0);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, ia, 2, ca, a, 3);
    check_aggregate(&t, &r, ib, 2, cb, b, 2);
    ixgbe_test_stop(&t);
}

/*
 * The flow moves to another queue (RSS redirected, as the Flow Director
 * does when the sender moves): the aggregate it left open on the first
 * queue is written back at once, before the segment that opens the next
 * one on the second, so the stream stays in order.
 */
static void test_queue_move(void)
{
    static const unsigned i01[] = { 0, 1 }, c12[] = { 1, 2 }, i0[] = { 0 },
                          c1[] = { 1 };
    Seg s[3] = { seg(0, 0, 300), seg(0, 1, 300), seg(0, 2, 300) };
    IxgbeTest t;
    RxRing r, r1;

    start_rsc(&t, &r);
    rx_ring_setup(&t, &r1, 1, 32);
    wr(&t, IXGBE_IVAR(0), IXGBE_IVAR_VALID | (IXGBE_IVAR_VALID << 16));
    wr(&t, rxq(1, RSCCTL), RSCCTL_RSCEN | RSCCTL_MAXDESC_16);
    wr(&t, IXGBE_MRQC, IXGBE_MRQC_RSS | IXGBE_MRQC_TCPIPV4);
    send_seg(&t, &s[0]);
    send_seg(&t, &s[1]);
    wait_rx(&t, 2);
    assert_open(&t, &r, 0);
    for (unsigned i = 0; i < IXGBE_RETA_ENTRIES / 4; i++) {
        wr(&t, IXGBE_RETA0 + i * 4, 0x01010101);
    }
    send_seg(&t, &s[2]);
    wait_rx(&t, 3);
    check_aggregate(&t, &r, i01, 2, c12, s, 2);
    assert_open(&t, &r1, 0);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r1, i0, 1, c1, s + 2, 1);
    ixgbe_test_stop(&t);
}

/* A queue disabled with an aggregate open writes it back at once */
static void test_queue_disable(void)
{
    static const unsigned i01[] = { 0, 1 }, c12[] = { 1, 2 };
    Seg s[2] = { seg(0, 0, 300), seg(0, 1, 300) };
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    send_seg(&t, &s[0]);
    send_seg(&t, &s[1]);
    wait_rx(&t, 2);
    assert_open(&t, &r, 0);
    wr(&t, rxq(0, IXGBE_RXQ_RXDCTL), 0);
    check_aggregate(&t, &r, i01, 2, c12, s, 2);
    ixgbe_test_stop(&t);
}

/* With RSC off (RFCTL.RSC_DIS or no RSCEN) every segment is its own */
static void test_rsc_off(void)
{
    for (unsigned off = 0; off < 2; off++) {
        uint8_t wb[DESC_SIZE];
        IxgbeTest t;
        RxRing r;
        Seg s[3];

        start(&t, &r, 32, off ? RSCCTL_RSCEN : 0);
        if (off) {
            wr(&t, IXGBE_RFCTL, RFCTL_RSC_DIS);
        }
        for (unsigned i = 0; i < 3; i++) {
            s[i] = seg(0, i, 300);
            send_seg(&t, &s[i]);
        }
        wait_rx(&t, 3);
        for (unsigned i = 0; i < 3; i++) {
            check_alone(&t, &r, i, &s[i], wb);
        }
        ixgbe_test_stop(&t);
    }
}

/*
 * An aggregate that finds the ring empty is closed with what it has; the
 * segment waits for descriptors and then starts the next one.  An
 * 8-entry ring: 7 descriptors for the device, each filled by a segment.
 */
static void test_ring_full(void)
{
    static const unsigned idx[] = { 0, 1, 2, 3, 4, 5, 6 },
                          cnt[] = { 1, 2, 2, 2, 2, 2, 2 },
                          i7[] = { 7 }, c1[] = { 1 };
    Seg s[8];
    IxgbeTest t;
    RxRing r;

    start(&t, &r, 8, RSCCTL_RSCEN | RSCCTL_MAXDESC_16);
    for (unsigned i = 0; i < 8; i++) {
        s[i] = seg(0, i, i == 7 ? 300 : i ? RX_BUF_SIZE : RX_BUF_SIZE - 54);
        s[i].seq = i ? SEQ0 + (RX_BUF_SIZE - 54) + (i - 1) * RX_BUF_SIZE
                     : SEQ0;
        send_seg(&t, &s[i]);
    }
    /* The eighth is held: the MAC has not counted it */
    wait_rx(&t, 7);
    check_aggregate(&t, &r, idx, 7, cnt, s, 7);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 0);
    wait_rx(&t, 8);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i7, 1, c1, s + 7, 1);
    ixgbe_test_stop(&t);
}

/*
 * The VM stops (for a migration) with an aggregate open: it is written
 * back before the state is saved, so the destination has it in memory.
 */
static void test_migration(void)
{
    static const unsigned i01[] = { 0, 1 }, c12[] = { 1, 2 };
    Seg s[2] = { seg(0, 0, 300), seg(0, 1, 300) };
    g_autofree char *path = NULL;
    IxgbeTest t, dst;
    RxRing r;

    start_rsc(&t, &r);
    send_seg(&t, &s[0]);
    send_seg(&t, &s[1]);
    wait_rx(&t, 2);
    assert_open(&t, &r, 0);
    path = save_to_file(&t);
    g_assert_true(load_from_file(&dst, path));
    check_aggregate(&dst, &r, i01, 2, c12, s, 2);
    g_assert_cmpuint(rd(&dst, rxq(0, IXGBE_RXQ_RDH)), ==, 2);
    unlink(path);
    ixgbe_test_stop(&dst);
    ixgbe_test_stop(&t);
}

/*
 * A segment that opens an aggregate late in the vector's running
 * interval is not written back alone when the interval ends (or its
 * interrupt fires): it waits a whole interval for the next segment of
 * its flow, which joins it.
 */
static void test_lone_segment(void)
{
    static const unsigned i0[] = { 0 }, c1[] = { 1 }, i12[] = { 1, 2 },
                          c12[] = { 1, 2 };
    Seg s[3] = { seg(0, 0, 300), seg(0, 1, 300), seg(0, 2, 300) };
    IxgbeTest t;
    RxRing r;

    start_rsc(&t, &r);
    qpci_msix_enable(t.dev);
    wr(&t, IXGBE_GPIE, IXGBE_GPIE_MSIX_MODE | GPIE_PBA_SUPPORT);
    wr(&t, IXGBE_EIMS, 1);

    /* PSH: written back at once; vector 0 fires, its interval starts */
    s[0].flags |= TCP_PSH;
    send_seg(&t, &s[0]);
    wait_rx(&t, 1);
    check_aggregate(&t, &r, i0, 1, c1, s, 1);
    g_assert_true(qpci_msix_pending(t.dev, 0));
    wr(&t, IXGBE_PBACL, 1);

    qtest_clock_step(t.qts, ITR_NS / 2);
    send_seg(&t, &s[1]);
    wait_rx(&t, 2);
    /* The interval ends; the cause left in EICR fires the vector again */
    qtest_clock_step(t.qts, ITR_NS / 2);
    g_assert_true(qpci_msix_pending(t.dev, 0));
    assert_open(&t, &r, 1);
    send_seg(&t, &s[2]);
    wait_rx(&t, 3);
    qtest_clock_step(t.qts, ITR_NS / 2 - 1);
    assert_open(&t, &r, 1);
    qtest_clock_step(t.qts, 1);
    check_aggregate(&t, &r, i12, 2, c12, s + 1, 2);
    ixgbe_test_stop(&t);
}

/*
 * Six segments of flow 0 on start_rsc_automask()'s queue.  Segment 0 has
 * PSH; segment 1 is written back alone (its flow was quiet for an
 * interval) and its interrupt masks the vector: the driver polls, and the
 * flow is held apart.
 */
static void start_held_apart(IxgbeTest *t, RxRing *r, Seg *s)
{
    static const unsigned i1[] = { 1 }, c1[] = { 1 };

    for (unsigned i = 0; i < 6; i++) {
        s[i] = seg(0, i, 300);
    }
    start_rsc_automask(t, r, true);
    s[0].flags |= TCP_PSH;
    send_seg(t, &s[0]);
    wait_rx(t, 1);
    wr(t, IXGBE_EIMS, 1);
    qtest_clock_step(t->qts, ITR_NS);
    send_seg(t, &s[1]);
    wait_rx(t, 2);
    qtest_clock_step(t->qts, ITR_NS);
    check_aggregate(t, r, i1, 1, c1, s + 1, 1);
    g_assert_cmphex(rd(t, IXGBE_EIMS) & 1, ==, 0);
}

/*
 * The held flow's segments 2 and 3 go alone too, which GRO can merge,
 * until the vector has interrupted since and been unmasked again; then
 * segments 4 and 5 coalesce.
 */
static void check_held_then_coalesced(IxgbeTest *t, const RxRing *r,
                                      const Seg *s)
{
    static const unsigned i45[] = { 4, 5 }, c12[] = { 1, 2 };
    uint8_t wb[DESC_SIZE];

    send_seg(t, &s[2]);
    send_seg(t, &s[3]);
    wait_rx(t, 4);
    check_alone(t, r, 2, &s[2], wb);
    check_alone(t, r, 3, &s[3], wb);

    /* Unmasked: the causes they raised interrupt at the interval's end */
    wr(t, IXGBE_EIMS, 1);
    qtest_clock_step(t->qts, ITR_NS);
    g_assert_cmphex(rd(t, IXGBE_EIMS) & 1, ==, 0);
    wr(t, IXGBE_EIMS, 1);
    send_seg(t, &s[4]);
    send_seg(t, &s[5]);
    wait_rx(t, 6);
    assert_open(t, r, 4);
    qtest_clock_step(t->qts, ITR_NS);
    check_aggregate(t, r, i45, 2, c12, s + 4, 2);
}

/*
 * A segment without PSH written back alone is held by Linux's GRO until
 * the driver ends its poll: the flow's next segments go alone too, until
 * the vector has interrupted since and been unmasked again.
 */
static void test_after_lone(void)
{
    Seg s[6];
    IxgbeTest t;
    RxRing r;

    start_held_apart(&t, &r, s);
    check_held_then_coalesced(&t, &r, s);
    ixgbe_test_stop(&t);
}

/* ...and the flow stays held apart across a migration */
static void test_after_lone_migration(void)
{
    g_autofree char *path = NULL;
    Seg s[6];
    IxgbeTest t, dst;
    int64_t now;
    RxRing r;

    start_held_apart(&t, &r, s);
    /*
     * qtest's virtual clock does not migrate: the destination's starts
     * where the source's was, as a real migration's does
     */
    now = qtest_clock_step(t.qts, 1);
    path = save_to_file(&t);
    g_assert_true(load_from_file(&dst, path));
    qtest_clock_set(dst.qts, now);
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    check_held_then_coalesced(&dst, &r, s);
    unlink(path);
    ixgbe_test_stop(&dst);
    ixgbe_test_stop(&t);
}

/*
 * Three segments of one flow on start_rsc_automask()'s queue; the first,
 * with PSH, is written back at once, and vector 0 fires and masks itself:
 * the driver polls
 */
static void start_polling(IxgbeTest *t, RxRing *r, Seg *s)
{
    static const unsigned i0[] = { 0 }, c1[] = { 1 };

    for (unsigned i = 0; i < 3; i++) {
        s[i] = seg(0, i, 300);
    }
    start_rsc_automask(t, r, false);
    s[0].flags |= TCP_PSH;
    send_seg(t, &s[0]);
    wait_rx(t, 1);
    check_aggregate(t, r, i0, 1, c1, s, 1);
    g_assert_true(qpci_msix_pending(t->dev, 0));
    g_assert_cmphex(rd(t, IXGBE_EIMS) & 1, ==, 0);
}

/*
 * While the driver polls a queue, the queue's MSI-X vector is masked
 * (EIAM masked it as it fired): the end of the throttle interval does
 * not close an aggregate then.  So a segment that came late in the
 * interval is not written back alone ahead of the rest of its burst,
 * which the Linux stack would take for a segment and an aggregate to
 * merge (GRO then loses the aggregate's payload: the driver gives RSC
 * frames no segment count).  Once the vector is unmasked, its interrupt
 * closes the aggregate.
 */
static void test_masked_vector(void)
{
    static const unsigned i12[] = { 1, 2 }, c12[] = { 1, 2 };
    Seg s[3];
    IxgbeTest t;
    RxRing r;

    start_polling(&t, &r, s);
    send_seg(&t, &s[1]);
    wait_rx(&t, 2);
    qtest_clock_step(t.qts, 3 * ITR_NS);
    assert_open(&t, &r, 1);
    send_seg(&t, &s[2]);
    wait_rx(&t, 3);
    assert_open(&t, &r, 1);

    wr(&t, IXGBE_EIMS, 1);
    qtest_clock_step(t.qts, ITR_NS);
    check_aggregate(&t, &r, i12, 2, c12, s + 1, 2);
    ixgbe_test_stop(&t);
}

/*
 * A driver that polls and never unmasks the vector still gets its
 * segments: eight intervals after the first segment, the aggregate is
 * written back.
 */
static void test_masked_bound(void)
{
    static const unsigned i12[] = { 1, 2 }, c12[] = { 1, 2 };
    Seg s[3];
    IxgbeTest t;
    RxRing r;

    start_polling(&t, &r, s);
    send_seg(&t, &s[1]);
    send_seg(&t, &s[2]);
    wait_rx(&t, 3);
    qtest_clock_step(t.qts, 8 * ITR_NS - 1);
    assert_open(&t, &r, 1);
    qtest_clock_step(t.qts, 1);
    check_aggregate(&t, &r, i12, 2, c12, s + 1, 2);
    ixgbe_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/rsc/coalesce-timer", test_coalesce_timer);
    qtest_add_func("ixgbe/rsc/out-of-order", test_out_of_order);
    qtest_add_func("ixgbe/rsc/flags", test_flags);
    qtest_add_func("ixgbe/rsc/options", test_options);
    qtest_add_func("ixgbe/rsc/maxdesc", test_maxdesc);
    qtest_add_func("ixgbe/rsc/two-flows", test_two_flows);
    qtest_add_func("ixgbe/rsc/other-flags", test_other_flags);
    qtest_add_func("ixgbe/rsc/checksum", test_checksum);
    qtest_add_func("ixgbe/rsc/rss", test_rss);
    qtest_add_func("ixgbe/rsc/header-split", test_header_split);
    qtest_add_func("ixgbe/rsc/queue-move", test_queue_move);
    qtest_add_func("ixgbe/rsc/queue-disable", test_queue_disable);
    qtest_add_func("ixgbe/rsc/off", test_rsc_off);
    qtest_add_func("ixgbe/rsc/ring-full", test_ring_full);
    qtest_add_func("ixgbe/rsc/migration", test_migration);
    qtest_add_func("ixgbe/rsc/masked-vector", test_masked_vector);
    qtest_add_func("ixgbe/rsc/lone-segment", test_lone_segment);
    qtest_add_func("ixgbe/rsc/after-lone", test_after_lone);
    qtest_add_func("ixgbe/rsc/after-lone-migration",
                   test_after_lone_migration);
    qtest_add_func("ixgbe/rsc/masked-bound", test_masked_bound);
    return g_test_run();
}
