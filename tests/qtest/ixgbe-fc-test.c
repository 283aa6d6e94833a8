/*
 * QTest of the Intel 82599 (ixgbe) flow control.  On receive: link pause
 * (XON/XOFF) and priority flow control frames from the wire are counted
 * in LXONRXCNT/LXOFFRXCNT and PXONRXCNT/PXOFFRXCNT, as the Linux driver
 * reads them for its pause statistics, and stop at the MAC unless
 * MFLCN.PMCF passes MAC control frames on (and MFLCN.DPF does not
 * discard pause frames).  On transmit: a frame that finds no receive
 * descriptor sends an XOFF (FCCFG.TFCE_802_3X, FCRTH.FCEN) with the pause
 * time of FCTTV, refreshed as FCRTV says, and an XON (FCRTL.XONE) once
 * it is taken, counted in LXOFFTXC/LXONTXC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/timer.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define MFLCN_PMCF          (1u << 0)
#define MFLCN_DPF           (1u << 1)
#define MFLCN_RPFCE         (1u << 2)
#define MFLCN_RFCE          (1u << 3)

#define LXONRXCNT           0x041A4
#define LXOFFRXCNT          0x041A8
#define PXONRXCNT(i)        (0x04140 + (i) * 4)
#define PXOFFRXCNT(i)       (0x04160 + (i) * 4)
#define LXONTXC             0x03F60
#define LXOFFTXC            0x03F68

#define FCTTV(i)            (0x03200 + (i) * 4)
#define FCRTL(i)            (0x03220 + (i) * 4)
#define FCRTH(i)            (0x03260 + (i) * 4)
#define FCRTV               0x032A0
#define FCCFG               0x03D00
#define FCRTL_XONE          (1u << 31)
#define FCRTH_FCEN          (1u << 31)
#define FCCFG_TFCE_802_3X   (1u << 3)

/* Pause time and refresh threshold the transmit tests program */
#define PAUSE_QUANTA        0x0100
#define REFRESH_QUANTA      0x0080
/* The pause timer from PAUSE_QUANTA down to REFRESH_QUANTA at 10 Gb/s */
#define REFRESH_NS          ((PAUSE_QUANTA - REFRESH_QUANTA) * 512 / 10)

static const uint8_t fc_mcast[6] = { 0x01, 0x80, 0xc2, 0x00, 0x00, 0x01 };

/* A MAC control frame: opcode, then 16-bit words (pause quanta etc.) */
static size_t build_mac_control(uint8_t *f, const uint8_t *dst,
                                uint16_t opcode, const uint16_t *words,
                                unsigned n)
{
    memset(f, 0, 60);
    memcpy(f, dst, 6);
    memcpy(f + 6, peer_mac, 6);
    stw_be_p(f + 12, 0x8808);
    stw_be_p(f + 14, opcode);
    for (unsigned i = 0; i < n; i++) {
        stw_be_p(f + 16 + i * 2, words[i]);
    }
    return 60;
}

static size_t build_pause(uint8_t *f, const uint8_t *dst, uint16_t quanta)
{
    return build_mac_control(f, dst, 0x0001, &quanta, 1);
}

/* Receive queue 0 taking every frame, and flow control per mflcn */
static void fc_setup(IxgbeTest *t, RxRing *r, uint32_t mflcn)
{
    ixgbe_test_start(t);
    rx_ring_setup(t, r, 0, 16);
    rx_enable(t);
    wr(t, IXGBE_FCTRL, IXGBE_FCTRL_BAM | IXGBE_FCTRL_MPE | IXGBE_FCTRL_UPE);
    wr(t, IXGBE_MFLCN, mflcn);
}

/* A marker frame arrives at the next descriptor: nothing came before it */
static void assert_nothing_delivered(IxgbeTest *t, RxRing *r)
{
    uint8_t frame[64], wb[DESC_SIZE];
    size_t len = build_frame(frame, test_mac, sizeof(frame), 42);

    backend_send(t, frame, len);
    rx_wait(t, r, wb);
    rx_check_data(t, r, r->next - 1, frame, len);
}

/*
 * XOFF (quanta > 0) and XON (quanta 0) to the flow control address and to
 * the station address are counted, and none reaches the host
 */
static void test_link_pause(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_setup(&t, &r, MFLCN_RFCE | MFLCN_DPF | MFLCN_PMCF);
    backend_send(&t, f, build_pause(f, fc_mcast, 0xffff));
    backend_send(&t, f, build_pause(f, fc_mcast, 0x0100));
    backend_send(&t, f, build_pause(f, test_mac, 1));
    backend_send(&t, f, build_pause(f, fc_mcast, 0));
    backend_send(&t, f, build_pause(f, test_mac, 0));
    assert_nothing_delivered(&t, &r);

    g_assert_cmpuint(rd(&t, LXOFFRXCNT), ==, 3);
    g_assert_cmpuint(rd(&t, LXONRXCNT), ==, 2);
    /* Clear on read, as the driver accumulates them */
    g_assert_cmpuint(rd(&t, LXOFFRXCNT), ==, 0);
    g_assert_cmpuint(rd(&t, LXONRXCNT), ==, 0);
    /* Received pause frames are not good packets; nothing was sent */
    g_assert_cmpuint(rd(&t, IXGBE_GPRC), ==, 1);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 0);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 0);
    ixgbe_test_stop(&t);
}

/* Not a flow control address: a MAC control frame, not acted on */
static void test_pause_other_address(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_setup(&t, &r, MFLCN_RFCE | MFLCN_DPF);
    backend_send(&t, f, build_pause(f, other_mac, 0xffff));
    assert_nothing_delivered(&t, &r);
    g_assert_cmpuint(rd(&t, LXOFFRXCNT), ==, 0);
    ixgbe_test_stop(&t);
}

/*
 * Priority flow control: per enabled priority in PXON/PXOFFRXCNT, once per
 * frame in LXON/LXOFFRXCNT (XOFF if any enabled priority is XOFF)
 */
static void test_pfc(void)
{
    /* class-enable vector, then quanta of priorities 0..7 */
    static const uint16_t mixed[9] = { 0x0085, 10, 0, 0, 0, 0, 0, 0, 0 };
    static const uint16_t xon[9] = { 0x0006, 0, 0, 0, 0, 0, 0, 0, 0 };
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_setup(&t, &r, MFLCN_RPFCE | MFLCN_DPF | MFLCN_PMCF);
    backend_send(&t, f, build_mac_control(f, fc_mcast, 0x0101, mixed, 9));
    backend_send(&t, f, build_mac_control(f, fc_mcast, 0x0101, xon, 9));
    assert_nothing_delivered(&t, &r);

    g_assert_cmpuint(rd(&t, PXOFFRXCNT(0)), ==, 1);
    g_assert_cmpuint(rd(&t, PXONRXCNT(1)), ==, 1);
    g_assert_cmpuint(rd(&t, PXONRXCNT(2)), ==, 2);
    g_assert_cmpuint(rd(&t, PXONRXCNT(7)), ==, 1);
    for (unsigned i = 0; i < 8; i++) {
        if (i != 0) {
            g_assert_cmpuint(rd(&t, PXOFFRXCNT(i)), ==, 0);
        }
        if (i != 1 && i != 2 && i != 7) {
            g_assert_cmpuint(rd(&t, PXONRXCNT(i)), ==, 0);
        }
    }
    g_assert_cmpuint(rd(&t, LXOFFRXCNT), ==, 1);
    g_assert_cmpuint(rd(&t, LXONRXCNT), ==, 1);
    ixgbe_test_stop(&t);
}

/*
 * With receive flow control off the frames are not counted; MFLCN.PMCF
 * passes them to the host, and with flow control on, it passes pause
 * frames only while MFLCN.DPF does not discard them
 */
static void test_pass_mac_control(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60], wb[DESC_SIZE];
    size_t len;

    fc_setup(&t, &r, 0);
    backend_send(&t, f, build_pause(f, fc_mcast, 0xffff));
    assert_nothing_delivered(&t, &r);

    wr(&t, IXGBE_MFLCN, MFLCN_PMCF);
    len = build_pause(f, fc_mcast, 0xffff);
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    rx_check_data(&t, &r, r.next - 1, f, len);
    g_assert_cmpuint(rd(&t, LXOFFRXCNT), ==, 0);

    wr(&t, IXGBE_MFLCN, MFLCN_PMCF | MFLCN_RFCE);
    len = build_pause(f, fc_mcast, 0);
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    rx_check_data(&t, &r, r.next - 1, f, len);
    g_assert_cmpuint(rd(&t, LXONRXCNT), ==, 1);

    /* Another opcode: passed with PMCF alone, whatever DPF says */
    wr(&t, IXGBE_MFLCN, MFLCN_PMCF | MFLCN_RFCE | MFLCN_DPF);
    backend_send(&t, f, build_pause(f, fc_mcast, 0));
    len = build_mac_control(f, fc_mcast, 0x0002, NULL, 0);
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    rx_check_data(&t, &r, r.next - 1, f, len);
    g_assert_cmpuint(rd(&t, LXONRXCNT), ==, 1);
    ixgbe_test_stop(&t);
}

/* The link pause frame the device sends: from its station address */
static size_t expected_pause(uint8_t *f, uint16_t quanta)
{
    size_t len = build_pause(f, fc_mcast, quanta);

    memcpy(f + 6, test_mac, 6);
    return len;
}

/*
 * Queue 0 with no descriptor for the device, and transmit flow control as
 * the Linux driver programs it (ixgbe_fc_enable_generic): thresholds in
 * KiB with XONE and FCEN, the pause time in both halves of FCTTV, the
 * refresh threshold below it
 */
static void fc_tx_setup(IxgbeTest *t, RxRing *r, uint32_t fccfg,
                        uint32_t xone)
{
    fc_setup(t, r, MFLCN_RFCE | MFLCN_DPF);
    wr(t, rxq(0, IXGBE_RXQ_RDT), 0);
    wr(t, FCRTL(0), (0x60 << 10) | xone);
    wr(t, FCRTH(0), (0x70 << 10) | FCRTH_FCEN);
    wr(t, FCTTV(0), PAUSE_QUANTA * 0x00010001u);
    wr(t, FCRTV, REFRESH_QUANTA);
    wr(t, FCCFG, fccfg);
}

/* A frame that finds the ring full: the backend holds it */
static void send_held(IxgbeTest *t, uint8_t seed)
{
    uint8_t frame[128];

    build_frame(frame, test_mac, 100, seed);
    backend_send(t, frame, 100);
}

/* Room for the held frame: it arrives in the first descriptor */
static void refill(IxgbeTest *t, RxRing *r, uint8_t seed)
{
    uint8_t frame[128], wb[DESC_SIZE];

    wr(t, rxq(0, IXGBE_RXQ_RDT), 4);
    rx_wait(t, r, wb);
    build_frame(frame, test_mac, 100, seed);
    rx_check_data(t, r, 0, frame, 100);
}

/*
 * The ring full: one XOFF with the pause time of FCTTV, while the frame
 * waits; descriptors back: the frame is taken and an XON goes out
 */
static void test_tx_xoff_xon(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_tx_setup(&t, &r, FCCFG_TFCE_802_3X, FCRTL_XONE);
    send_held(&t, 1);
    backend_expect(&t, f, expected_pause(f, PAUSE_QUANTA));
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 1);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 0);

    refill(&t, &r, 1);
    backend_expect(&t, f, expected_pause(f, 0));
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 1);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 0);
    /* Pause frames are not good packets */
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, 0);
    ixgbe_test_stop(&t);
}

/*
 * While the frame waits, the XOFF is sent again when the pause timer has
 * counted down to FCRTV; after the XON it is not
 */
static void test_tx_xoff_refresh(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_tx_setup(&t, &r, FCCFG_TFCE_802_3X, FCRTL_XONE);
    send_held(&t, 2);
    backend_expect(&t, f, expected_pause(f, PAUSE_QUANTA));
    qtest_clock_step(t.qts, REFRESH_NS - 1);
    backend_assert_silent(&t);
    qtest_clock_step(t.qts, 1);
    backend_expect(&t, f, expected_pause(f, PAUSE_QUANTA));
    qtest_clock_step(t.qts, REFRESH_NS);
    backend_expect(&t, f, expected_pause(f, PAUSE_QUANTA));
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 3);

    refill(&t, &r, 2);
    backend_expect(&t, f, expected_pause(f, 0));
    qtest_clock_step(t.qts, 4 * REFRESH_NS);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 0);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 1);
    ixgbe_test_stop(&t);
}

/*
 * Without FCCFG.TFCE_802_3X nothing is sent; without FCRTL.XONE the XOFF
 * is, and no XON
 */
static void test_tx_disabled(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t f[60];

    fc_tx_setup(&t, &r, 0, FCRTL_XONE);
    send_held(&t, 3);
    backend_assert_silent(&t);
    refill(&t, &r, 3);
    qtest_clock_step(t.qts, 4 * REFRESH_NS);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 0);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 0);
    ixgbe_test_stop(&t);

    fc_tx_setup(&t, &r, FCCFG_TFCE_802_3X, 0);
    send_held(&t, 4);
    backend_expect(&t, f, expected_pause(f, PAUSE_QUANTA));
    refill(&t, &r, 4);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, LXOFFTXC), ==, 1);
    g_assert_cmpuint(rd(&t, LXONTXC), ==, 0);
    ixgbe_test_stop(&t);
}

/*
 * The next frame on the wire that is not one of the RARP announcements
 * a destination sends once it runs; -1 if none comes within timeout_ms
 */
static int recv_no_announce(IxgbeTest *t, uint8_t *buf, size_t size,
                            int timeout_ms)
{
    int len;

    do {
        len = backend_recv(t, buf, size, timeout_ms);
    } while (len >= 14 && lduw_be_p(buf + 12) == 0x8035);
    return len;
}

/*
 * An XOFF in force migrates: the frame the source held stays behind, so
 * on the destination the refresh finds nothing held and sends the XON
 */
static void test_tx_migration(void)
{
    g_autofree char *path = NULL;
    IxgbeTest src, dst;
    RxRing r;
    uint8_t f[60], got[128];

    fc_tx_setup(&src, &r, FCCFG_TFCE_802_3X, FCRTL_XONE);
    send_held(&src, 5);
    backend_expect(&src, f, expected_pause(f, PAUSE_QUANTA));
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    qtest_clock_step(dst.qts, REFRESH_NS - 1);
    g_assert_cmpint(recv_no_announce(&dst, got, sizeof(got), SILENCE_MS),
                    ==, -1);
    qtest_clock_step(dst.qts, 1);
    g_assert_cmpint(recv_no_announce(&dst, got, sizeof(got),
                                     WAIT_US / 1000), ==, 60);
    g_assert_cmpmem(got, 60, f, expected_pause(f, 0));
    g_assert_cmpuint(rd(&dst, LXONTXC), ==, 1);
    ixgbe_test_stop(&dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/fc/link-pause", test_link_pause);
    qtest_add_func("ixgbe/fc/other-address", test_pause_other_address);
    qtest_add_func("ixgbe/fc/pfc", test_pfc);
    qtest_add_func("ixgbe/fc/pass-mac-control", test_pass_mac_control);
    qtest_add_func("ixgbe/fc/tx-xoff-xon", test_tx_xoff_xon);
    qtest_add_func("ixgbe/fc/tx-xoff-refresh", test_tx_xoff_refresh);
    qtest_add_func("ixgbe/fc/tx-disabled", test_tx_disabled);
    qtest_add_func("ixgbe/fc/tx-migration", test_tx_migration);
    return g_test_run();
}
