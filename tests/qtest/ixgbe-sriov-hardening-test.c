/*
 * QTest cases for the Intel 82599 (ixgbe) with its virtual functions
 * against a hostile guest or migration stream: the device's DMA aimed at
 * a VF's registers, with and without register writes held as KVM holds
 * coalesced ones, then the PF's slot powered off; and a stream enabling
 * more VFs than the PF has.  Each case must leave QEMU running and say
 * what it refused.
 *
 * The PF and its VFs share one device core: a DMA of any function that
 * lands on a register of any function must be refused, like QEMU refuses
 * one to the PF's own BARs (see ixgbe_core_enter()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "libqtest.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-sriov-util.h"

#define HPET_ADDR           0xFED00000u
#define NATIVE_HOTPLUG      "-global ICH9-LPC.acpi-pci-hotplug-with-" \
                            "bridge-support=off"
#define REFUSED             "from the device's own DMA refused"

/* A VF's register, as a bus address */
static uint64_t vf_reg_addr(unsigned vf, uint32_t reg)
{
    return VF_BAR0_BASE + vf * 16 * KiB + reg;
}

/* 64 pools of two queues: VF 1's queue 0 is PF queue 2 */
static void cross_boot(SriovTest *s, const char *extra)
{
    g_autofree char *args = g_strdup_printf(NATIVE_HOTPLUG " %s", extra);

    sriov_boot(s, args);
    sriov_enable(s, 2);
    pf_vt_mode(s, IXGBE_GCR_EXT_VT_MODE_64);
}

/* The guest powers its slot off: the device goes, QEMU stays */
static void unplug_and_check(SriovTest *s)
{
    unplug_by_slot_power(&s->t);
    qtest_qmp_assert_success(s->t.qts, "{'execute': 'query-status'}");
}

/*
 * The offload path's packet object while a send is under way: PF queue 4
 * sends a UDP packet with checksum offload whose second buffer is MMIO
 * (mapped through a bounce buffer); MAC loopback receives it into a
 * buffer placed on VF 1's VFTDT, whose first bytes would be a tail for
 * PF queue 2, where an offload packet waits.  Sending that from inside
 * the first send would add to and reset the one packet object, unmapping
 * the first packet's bounce buffer through VF 1's address space (a
 * use-after-free, then an abort when the slot is powered off).  The
 * write is refused: queue 2 stays where it was, and the unplug is clean.
 */
static void test_cross_function_loopback(void)
{
    SriovTest s;
    RxRing r;
    uint8_t frame[60];
    uint64_t ring4, ring2, buf;
    static const uint8_t sip[4] = { 10, 0, 0, 1 }, dip[4] = { 10, 0, 0, 2 };
    size_t len = build_ipv4_frame(frame, 17, sip, dip, 1000, 2000);
    uint32_t udp = IXGBE_TXD_POPTS_TXSM;

    cross_boot(&s, "");
    /* Frames starting 01 00 00 00: VFTDT = 1 */
    memset(frame, 0, 6);
    frame[0] = 1;
    /* IPv4 and UDP lengths cover the MMIO buffer too */
    stw_be_p(frame + 14 + 2, len + 64 - 14);
    stw_be_p(frame + 14 + 10, 0);
    stw_be_p(frame + 14 + 10, ip_checksum(frame + 14, 20));
    stw_be_p(frame + 34 + 4, len + 64 - 34);

    /* Queue 2 (VF 1's queue 0): an offload packet, not yet handed over */
    ring2 = tx_ring_setup(&s.t, 2, 8, 0);
    buf = guest_frame(&s.t, frame, len);
    tx_put_desc(&s.t, ring2, 0, buf, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS,
                udp | len << TXD_PAYLEN_SHIFT);

    /* Receive queue 0's only buffer is VF 1's VFTDT */
    rx_ring_setup(&s.t, &r, 0, 8);
    qtest_writeq(s.t.qts, r.ring, vf_reg_addr(1, IXGBE_VFTXQ_BASE +
                                              IXGBE_TXQ_TDT));
    rx_enable(&s.t);
    wr(&s.t, IXGBE_FCTRL, IXGBE_FCTRL_BAM | IXGBE_FCTRL_UPE |
       IXGBE_FCTRL_MPE);
    wr(&s.t, IXGBE_HLREG0, rd(&s.t, IXGBE_HLREG0) | IXGBE_HLREG0_LPBK);

    /* Queue 4: the same headers, the second buffer in MMIO */
    ring4 = tx_ring_setup(&s.t, 4, 8, 0);
    tx_put_desc(&s.t, ring4, 0, buf, len, 0,
                udp | (len + 64) << TXD_PAYLEN_SHIFT);
    tx_put_desc(&s.t, ring4, 1, HPET_ADDR, 64,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS, 0);
    wr(&s.t, txq(4, IXGBE_TXQ_TDT), 2);

    g_assert_cmpuint(rd(&s.t, txq(4, IXGBE_TXQ_TDH)), ==, 2);
    g_assert_cmpuint(rd(&s.t, txq(2, IXGBE_TXQ_TDT)), ==, 0);
    g_assert_cmpuint(rd(&s.t, txq(2, IXGBE_TXQ_TDH)), ==, 0);
    g_assert_false(tx_dd(&s.t, ring2, 0));
    backend_assert_silent(&s.t);
    g_assert_true(ixgbe_test_logged(&s.t, REFUSED));

    unplug_and_check(&s);
    sriov_stop(&s);
}

/*
 * Held register writes are never applied from inside the device's DMA.
 * With writes held as KVM holds coalesced ones, PF queue 2's head
 * write-back is aimed at VF 0's VFRDT (a coalesced register) and its
 * packet's second buffer at VF 0's VFSTATUS: the read would apply the
 * held tail, take a frame waiting in the backend into a buffer on VF 1's
 * VFTDT and send from queue 2 again inside its own copy loop, whose
 * fragments would then change under it (a heap overflow of the transmit
 * buffer).  Both accesses are refused: nothing is held, the packet is
 * dropped as unreadable, and queue 2 stops where the guest's tail is.
 */
static void test_cross_function_held_writes(void)
{
    SriovTest s;
    RxRing r;
    uint8_t frame[64];
    uint64_t ring2, big;
    size_t len = build_frame(frame, peer_mac, sizeof(frame), 3);

    cross_boot(&s, "-global ixgbe.x-defer-coalesced=on");
    /* Receive queue 0 (VF 0's pool) without buffers, its one on VFTDT */
    rx_ring_setup(&s.t, &r, 0, 8);
    qtest_writeq(s.t.qts, r.ring, vf_reg_addr(1, IXGBE_VFTXQ_BASE +
                                              IXGBE_TXQ_TDT));
    wr(&s.t, rxq(0, IXGBE_RXQ_RDT), 0);
    rx_enable(&s.t);
    wr(&s.t, IXGBE_FCTRL, IXGBE_FCTRL_BAM | IXGBE_FCTRL_UPE);
    /* A frame that waits for a buffer; its first bytes: VFTDT = 6 */
    memset(frame, 0, 6);
    frame[0] = 6;
    backend_send(&s.t, frame, len);

    ring2 = tx_ring_setup(&s.t, 2, 8, 0);
    wr(&s.t, txq(2, IXGBE_TXQ_TDWBAL),
       (uint32_t)vf_reg_addr(0, IXGBE_VFRXQ_BASE + IXGBE_RXQ_RDT) |
       IXGBE_TDWBAL_HEAD_WB_EN);
    wr(&s.t, txq(2, IXGBE_TXQ_TDWBAH), 0);
    big = guest_alloc(&s.t.qs->alloc, 16 * KiB);
    qtest_memset(s.t.qts, big, 0x41, 16 * KiB);
    tx_put_data(&s.t, ring2, 0, big, 16000, 16300, IXGBE_TXD_CMD_RS);
    tx_put_data(&s.t, ring2, 1, vf_reg_addr(0, IXGBE_VFSTATUS), 4, 0, 0);
    tx_put_data(&s.t, ring2, 2, big, 296, 0,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    /* What a second run from inside the first would find */
    for (unsigned i = 3; i < 6; i++) {
        tx_put_data(&s.t, ring2, i, big, 16000, 0, 0);
    }
    wr(&s.t, txq(2, IXGBE_TXQ_TDT), 3);

    g_assert_cmpuint(rd(&s.t, txq(2, IXGBE_TXQ_TDH)), ==, 3);
    g_assert_cmpuint(rd(&s.t, txq(2, IXGBE_TXQ_TDT)), ==, 3);
    /* The write-back was not held: the receive tail is the guest's */
    g_assert_cmpuint(rd(&s.t, rxq(0, IXGBE_RXQ_RDT)), ==, 0);
    g_assert_cmpuint(rd(&s.t, rxq(0, IXGBE_RXQ_RDH)), ==, 0);
    backend_assert_silent(&s.t);
    g_assert_true(ixgbe_test_logged(&s.t, REFUSED));
    g_assert_true(ixgbe_test_logged(&s.t, "not readable"));

    unplug_and_check(&s);
    sriov_stop(&s);
}

/*
 * A migration stream whose PF enables more VFs (65) than it has (64):
 * QEMU's SR-IOV load path must refuse it, not walk past its VFs.
 */
static void test_migration_numvfs_over_total(void)
{
    SriovTest s;
    IxgbeTest dst;
    g_autofree char *path = NULL;
    uint16_t total;
    uint8_t saved[10] = { 0 }, edited[10];

    sriov_boot(&s, "");
    total = cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_TOTAL_VF);
    g_assert_cmpuint(total, ==, 64);
    /* VF Enable off, NumVFs a value to find in the stream */
    cfg_writew(&s, s.pf, SRIOV_CAP + PCI_SRIOV_NUM_VF, 0x5a5a);
    /* Control, Status, InitialVFs, TotalVFs, NumVFs */
    stw_le_p(saved + 4, total);
    stw_le_p(saved + 6, total);
    stw_le_p(saved + 8, 0x5a5a);
    memcpy(edited, saved, sizeof(saved));
    stw_le_p(edited, PCI_SRIOV_CTRL_VFE | PCI_SRIOV_CTRL_MSE);
    stw_le_p(edited + 8, total + 1);
    path = save_to_file(&s.t);
    sriov_stop(&s);

    patch_stream(path, saved, sizeof(saved), edited);
    g_assert_false(load_from_file_boot(&dst, path, true));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'query-status'}");
    ixgbe_test_stop(&dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/sriov-hardening/cross-function-loopback",
                   test_cross_function_loopback);
    qtest_add_func("ixgbe/sriov-hardening/cross-function-held-writes",
                   test_cross_function_held_writes);
    qtest_add_func("ixgbe/sriov-hardening/migration-numvfs-over-total",
                   test_migration_numvfs_over_total);
    return g_test_run();
}
