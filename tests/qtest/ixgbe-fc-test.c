/*
 * QTest of the Intel 82599 (ixgbe) flow control on receive: link pause
 * (XON/XOFF) and priority flow control frames from the wire are counted
 * in LXONRXCNT/LXOFFRXCNT and PXONRXCNT/PXOFFRXCNT, as the Linux driver
 * reads them for its pause statistics, and stop at the MAC unless
 * MFLCN.PMCF passes MAC control frames on (and MFLCN.DPF does not
 * discard pause frames).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
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

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/fc/link-pause", test_link_pause);
    qtest_add_func("ixgbe/fc/other-address", test_pause_other_address);
    qtest_add_func("ixgbe/fc/pfc", test_pfc);
    qtest_add_func("ixgbe/fc/pass-mac-control", test_pass_mac_control);
    return g_test_run();
}
