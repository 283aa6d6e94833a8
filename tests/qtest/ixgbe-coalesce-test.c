/*
 * QTest for the Intel 82599 (ixgbe): register writes held as KVM's
 * coalesced MMIO holds them (x-defer-coalesced=on), and that nothing
 * stalls on them.
 *
 * A BAR read applies what is held, so these tests watch the device
 * through guest memory (descriptor write-backs) and the wire only, once
 * a write is held.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/units.h"
#include "qemu/timer.h"
#include "../../hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define DEFER_MODEL         "ixgbe,x-defer-coalesced=on"
#define STARVE_MIN_NS       (50 * SCALE_US)     /* ixgbe_coalesce.c */
#define HELD_MAX            64

/* Queue 0 with a 16-entry ring and no descriptor for the device yet */
static void start_empty_ring(IxgbeTest *t, RxRing *r)
{
    ixgbe_test_boot_model(t, DEFER_MODEL, false, "");
    rx_ring_setup(t, r, 0, 16);
    wr(t, rxq(0, IXGBE_RXQ_RDT), 0);
    rx_enable(t);
    g_assert_cmpuint(rd(t, rxq(0, IXGBE_RXQ_RDT)), ==, 0);
}

/* A frame from the wire, given time to reach the device and be held */
static void send_held(IxgbeTest *t, const RxRing *r, uint8_t seed)
{
    uint8_t frame[128];

    build_frame(frame, test_mac, 100, seed);
    backend_send(t, frame, 100);
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(t, r, 0));
}

static void check_frame(IxgbeTest *t, const RxRing *r, unsigned idx,
                        uint8_t seed)
{
    uint8_t frame[128];

    build_frame(frame, test_mac, 100, seed);
    rx_check_data(t, r, idx, frame, 100);
}

/*
 * A tail write is held: the frame waiting for it stays where it is until
 * a read of the BAR applies it.
 */
static void test_held_until_read(void)
{
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_empty_ring(&t, &r);
    send_held(&t, &r, 1);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 4);
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(&t, &r, 0));
    rd(&t, IXGBE_STATUS);
    rx_wait(&t, &r, wb);
    check_frame(&t, &r, 0, 1);
    ixgbe_test_stop(&t);
}

/*
 * A driver that only receives may never touch the BAR again after its
 * tail write: the held frame's timer applies the write.  The timer backs
 * off while nothing is held: 50 us, then 100 us.
 */
static void test_starved_frame_timer(void)
{
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_empty_ring(&t, &r);
    send_held(&t, &r, 2);
    qtest_clock_step(t.qts, STARVE_MIN_NS);
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(&t, &r, 0));

    wr(&t, rxq(0, IXGBE_RXQ_RDT), 4);
    qtest_clock_step(t.qts, 2 * STARVE_MIN_NS - 1);
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(&t, &r, 0));
    qtest_clock_step(t.qts, 1);
    rx_wait(&t, &r, wb);
    check_frame(&t, &r, 0, 2);
    ixgbe_test_stop(&t);
}

/*
 * The transmit tail is exact: the frame goes out at the write, and the
 * receive tail written before it applies first.
 */
static void test_exact_tdt(void)
{
    uint8_t frame[128], wb[DESC_SIZE];
    uint64_t txr;
    IxgbeTest t;
    RxRing r;

    start_empty_ring(&t, &r);
    txr = tx_ring_setup(&t, 0, 8, 0);
    send_held(&t, &r, 3);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 4);

    build_frame(frame, peer_mac, 80, 9);
    tx_send_frame(&t, 0, txr, 0, frame, 80);
    backend_expect(&t, frame, 80);
    rx_wait(&t, &r, wb);
    check_frame(&t, &r, 0, 3);
    ixgbe_test_stop(&t);
}

/* Held writes past the limit are applied, in order, as KVM's full ring */
static void test_held_limit(void)
{
    uint8_t wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    start_empty_ring(&t, &r);
    send_held(&t, &r, 4);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 4);
    for (unsigned i = 1; i < HELD_MAX; i++) {
        wr(&t, eitr(0), 8 * (i % 16));
    }
    g_usleep(SILENCE_MS * 1000);
    g_assert_false(rx_dd(&t, &r, 0));
    wr(&t, eitr(0), 0);
    rx_wait(&t, &r, wb);
    check_frame(&t, &r, 0, 4);
    g_assert_cmphex(rd(&t, eitr(0)) & IXGBE_EITR_INTERVAL_MASK, ==, 0);
    ixgbe_test_stop(&t);
}

/* Stopping the VM applies held writes, so the saved state has them */
static void test_migration(void)
{
    g_autofree char *path = NULL;
    IxgbeTest src, dst;
    RxRing r;

    start_empty_ring(&src, &r);
    wr(&src, rxq(0, IXGBE_RXQ_RDT), 7);
    wr(&src, eitr(3), 0x1F8);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    g_assert_cmpuint(rd(&dst, rxq(0, IXGBE_RXQ_RDT)), ==, 7);
    g_assert_cmphex(rd(&dst, eitr(3)) & IXGBE_EITR_INTERVAL_MASK, ==, 0x1F8);
    ixgbe_test_stop(&dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/coalesce/held-until-read", test_held_until_read);
    qtest_add_func("ixgbe/coalesce/starved-frame-timer",
                   test_starved_frame_timer);
    qtest_add_func("ixgbe/coalesce/exact-tdt", test_exact_tdt);
    qtest_add_func("ixgbe/coalesce/held-limit", test_held_limit);
    qtest_add_func("ixgbe/coalesce/migration", test_migration);
    return g_test_run();
}
