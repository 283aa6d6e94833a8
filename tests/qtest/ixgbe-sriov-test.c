/*
 * QTest cases for the Intel 82599 (ixgbe) SR-IOV virtual functions: the
 * SR-IOV and ARI capabilities, VF enable, the VFs' config space and BARs,
 * the PF<->VF mailbox with its interrupts on both sides, VF function
 * level reset, PF reset, VF queue registers as the PF sees them, and the
 * virtualization datapath: receive pools (unicast, broadcast replication,
 * VLAN filters, PFVFRE), the internal switch, anti-spoofing, the
 * per-pool counters, port VLANs (VMVIR), jumbo frames between pools,
 * VTEITR moderation, a migration with VFs enabled, and DMA of a VF's
 * queues as the VF.
 *
 * The PF sits behind a root port (function 0 of its bus), where its 64
 * VFs fit. The capabilities live in extended config space, so the test
 * turns on the q35 MCH's ECAM window and reaches config space through it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "libqtest.h"
#include "hw/pci/pci_ids.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-sriov-util.h"

static void test_sriov_capability(void)
{
    SriovTest s;
    uint32_t hdr;
    int vf;

    sriov_boot(&s, "");
    hdr = cfg_readl(&s, s.pf, ARI_CAP);
    g_assert_cmphex(PCI_EXT_CAP_ID(hdr), ==, PCI_EXT_CAP_ID_ARI);
    g_assert_cmphex(PCI_EXT_CAP_NEXT(hdr), ==, SRIOV_CAP);
    hdr = cfg_readl(&s, s.pf, SRIOV_CAP);
    g_assert_cmphex(PCI_EXT_CAP_ID(hdr), ==, PCI_EXT_CAP_ID_SRIOV);
    g_assert_cmpuint(cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_TOTAL_VF),
                     ==, 64);
    g_assert_cmpuint(cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_INITIAL_VF),
                     ==, 64);
    g_assert_cmphex(cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_VF_OFFSET),
                    ==, 0x80);
    g_assert_cmphex(cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_VF_STRIDE),
                    ==, 2);
    g_assert_cmphex(cfg_readw(&s, s.pf, SRIOV_CAP + PCI_SRIOV_VF_DID),
                    ==, IXGBE_DEV_ID_82599_VF);
    /* VF BAR 0 and BAR 3: 64-bit prefetchable, 16 KiB */
    g_assert_cmphex(cfg_readl(&s, s.pf, SRIOV_CAP + PCI_SRIOV_BAR), ==,
                    PCI_BASE_ADDRESS_MEM_TYPE_64 |
                    PCI_BASE_ADDRESS_MEM_PREFETCH);
    cfg_writel(&s, s.pf, SRIOV_CAP + PCI_SRIOV_BAR, 0xffffffff);
    g_assert_cmphex(cfg_readl(&s, s.pf, SRIOV_CAP + PCI_SRIOV_BAR) &
                    PCI_BASE_ADDRESS_MEM_MASK, ==, (uint32_t)~(16 * KiB - 1));
    cfg_writel(&s, s.pf, SRIOV_CAP + PCI_SRIOV_BAR + 12, 0xffffffff);
    g_assert_cmphex(cfg_readl(&s, s.pf, SRIOV_CAP + PCI_SRIOV_BAR + 12) &
                    PCI_BASE_ADDRESS_MEM_MASK, ==, (uint32_t)~(16 * KiB - 1));

    /* No VF answers before VF Enable */
    vf = vf_devfn(&s, 0);
    g_assert_cmphex(cfg_readl(&s, vf, PCI_VENDOR_ID), ==, 0xffffffff);

    sriov_enable(&s, 2);
    for (unsigned n = 0; n < 2; n++) {
        vf = vf_devfn(&s, n);
        /* A VF's vendor and device ID read as all ones (SR-IOV 3.4.1) */
        g_assert_cmphex(cfg_readl(&s, vf, PCI_VENDOR_ID), ==, 0xffffffff);
        g_assert_cmphex(cfg_readl(&s, vf, PCI_CLASS_REVISION) >> 16, ==,
                        PCI_CLASS_NETWORK_ETHERNET);
        g_assert_cmphex(qtest_readb(s.t.qts, ecam(&s, vf, VF_MSIX_CAP)), ==,
                        PCI_CAP_ID_MSIX);
        g_assert_cmpuint((cfg_readw(&s, vf, VF_MSIX_CAP + PCI_MSIX_FLAGS) &
                          PCI_MSIX_FLAGS_QSIZE) + 1, ==,
                         IXGBE_VF_MSIX_VECTORS);
        g_assert_cmphex(PCI_EXT_CAP_ID(cfg_readl(&s, vf, ARI_CAP)), ==,
                        PCI_EXT_CAP_ID_ARI);
        /* BAR 0 decodes the VF's registers: the link is up */
        g_assert_cmphex(vf_rd(&s, n, IXGBE_VFLINKS) & IXGBE_LINKS_UP, ==,
                        IXGBE_LINKS_UP);
    }
    /* The third VF is not enabled */
    g_assert_cmphex(cfg_readl(&s, vf_devfn(&s, 2), PCI_VENDOR_ID), ==,
                    0xffffffff);
    g_assert_cmphex(cfg_readw(&s, vf_devfn(&s, 2), PCI_CLASS_DEVICE), ==,
                    0xffff);

    /* VF Enable off: the VFs are gone */
    cfg_writew(&s, s.pf, SRIOV_CAP + PCI_SRIOV_CTRL, 0);
    g_assert_cmphex(cfg_readw(&s, vf_devfn(&s, 0), PCI_CLASS_DEVICE), ==,
                    0xffff);
    sriov_stop(&s);
}

static void test_sriov_off(void)
{
    SriovTest s;

    sriov_boot(&s, "-global ixgbe.sriov=off");
    g_assert_cmphex(PCI_EXT_CAP_ID(cfg_readl(&s, s.pf, SRIOV_CAP)), !=,
                    PCI_EXT_CAP_ID_SRIOV);
    g_assert_cmphex(PCI_EXT_CAP_ID(cfg_readl(&s, s.pf, ARI_CAP)), !=,
                    PCI_EXT_CAP_ID_ARI);
    sriov_stop(&s);
}

/* The PF sends VF 1 a message; VF 1 reads it and acknowledges */
static void test_sriov_mailbox_pf_to_vf(void)
{
    SriovTest s;
    const uint32_t msg[3] = { 0x01000001, 0x12345678, 0x9abcdef0 };
    uint32_t mbx = IXGBE_PFMAILBOX0 + 4;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    /* Before the PF driver's reset is done, the VFs see RSTI */
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_RSTI);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_RSTD);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==, 0);

    /* VF 1 routes its mailbox cause to vector 2 and enables it */
    vf_wr(&s, 1, IXGBE_VTIVAR_MISC, IXGBE_IVAR_VALID | 2);
    vf_wr(&s, 1, IXGBE_VTEIMS, BIT(2));
    g_assert_cmphex(vf_pba(&s, 1), ==, 0);

    /* The PF takes the buffer, writes, and signals STS */
    wr(&s.t, mbx, IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==, IXGBE_VFMAILBOX_PFU);
    /* VF 1 cannot take the buffer the PF holds */
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_VFU);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX) & IXGBE_VFMAILBOX_VFU, ==,
                    0);
    for (unsigned i = 0; i < 3; i++) {
        wr(&s.t, IXGBE_PFMBMEM0 + IXGBE_MBX_WORDS * 4 + i * 4, msg[i]);
    }
    wr(&s.t, mbx, IXGBE_PFMAILBOX_STS);
    g_assert_cmphex(rd(&s.t, mbx), ==, 0);
    g_assert_cmphex(vf_pba(&s, 1), ==, BIT(2));
    /* PFSTS clears when read */
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_PFSTS);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==, 0);
    for (unsigned i = 0; i < 3; i++) {
        g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMBMEM + i * 4), ==, msg[i]);
    }
    /* VF 0's mailbox memory is its own */
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VFMBMEM), ==, 0);

    /* The acknowledgement reaches the PF: PFMBICR and EICR.MAILBOX */
    rd(&s.t, IXGBE_EICR);
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_ACK);
    g_assert_cmphex(rd(&s.t, IXGBE_PFMBICR0), ==, IXGBE_PFMBICR_VFACK(1));
    g_assert_cmphex(rd(&s.t, IXGBE_EICR) & IXGBE_EICR_MAILBOX, ==,
                    IXGBE_EICR_MAILBOX);
    wr(&s.t, IXGBE_PFMBICR0, IXGBE_PFMBICR_VFACK(1));
    g_assert_cmphex(rd(&s.t, IXGBE_PFMBICR0), ==, 0);
    sriov_stop(&s);
}

/* VF 1 sends the PF a message (the legacy protocol the Linux VF uses) */
static void test_sriov_mailbox_vf_to_pf(void)
{
    SriovTest s;
    uint32_t mbx = IXGBE_PFMAILBOX0 + 4;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    vf_rd(&s, 1, IXGBE_VFMAILBOX);

    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_VFU);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==, IXGBE_VFMAILBOX_VFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_VFU);
    /* The PF cannot take the buffer the VF holds */
    wr(&s.t, mbx, IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_VFU);
    vf_wr(&s, 1, IXGBE_VFMBMEM, 0x00000001);        /* IXGBE_VF_RESET */
    rd(&s.t, IXGBE_EICR);
    /* REQ alone: the request goes out and the VF lets go of the buffer */
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_REQ);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==, 0);
    g_assert_cmphex(rd(&s.t, IXGBE_PFMBICR0), ==, IXGBE_PFMBICR_VFREQ(1));
    g_assert_cmphex(rd(&s.t, IXGBE_EICR) & IXGBE_EICR_MAILBOX, ==,
                    IXGBE_EICR_MAILBOX);
    /* The PF reads the message under its lock and acknowledges */
    wr(&s.t, mbx, IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(rd(&s.t, IXGBE_PFMBMEM0 + IXGBE_MBX_WORDS * 4), ==,
                    0x00000001);
    wr(&s.t, IXGBE_PFMBICR0, IXGBE_PFMBICR_VFREQ(1));
    wr(&s.t, mbx, IXGBE_PFMAILBOX_ACK);
    g_assert_cmphex(rd(&s.t, mbx), ==, 0);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_PFACK);

    /* PFMBIMR masks a VF's mailbox interrupt, not its PFMBICR bits */
    wr(&s.t, IXGBE_PFMBIMR0, ~(uint32_t)BIT(1));
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_REQ);
    g_assert_cmphex(rd(&s.t, IXGBE_PFMBICR0), ==, IXGBE_PFMBICR_VFREQ(1));
    g_assert_cmphex(rd(&s.t, IXGBE_EICR) & IXGBE_EICR_MAILBOX, ==, 0);

    /* RVFU takes the buffer back from a stuck VF */
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_VFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_VFU);
    wr(&s.t, mbx, IXGBE_PFMAILBOX_RVFU | IXGBE_PFMAILBOX_PFU);
    g_assert_cmphex(rd(&s.t, mbx), ==, IXGBE_PFMAILBOX_PFU);
    sriov_stop(&s);
}

/* A VF's function level reset: VFLRE, EICR.MAILBOX, its state cleared */
static void test_sriov_vflr(void)
{
    SriovTest s;
    int vf;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    wr(&s.t, IXGBE_VFRE0, 0x3);
    wr(&s.t, IXGBE_VFTE0, 0x3);
    vf_wr(&s, 1, IXGBE_VTIVAR_MISC, IXGBE_IVAR_VALID | 1);
    vf_wr(&s, 1, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_VFU);
    rd(&s.t, IXGBE_EICR);

    vf = vf_devfn(&s, 1);
    cfg_writew(&s, vf, VF_PCIE_CAP + PCI_EXP_DEVCTL,
               cfg_readw(&s, vf, VF_PCIE_CAP + PCI_EXP_DEVCTL) |
               PCI_EXP_DEVCTL_BCR_FLR);
    g_assert_cmphex(rd(&s.t, IXGBE_VFLRE0), ==, BIT(1));
    g_assert_cmphex(rd(&s.t, IXGBE_VFLREC0), ==, BIT(1));
    g_assert_cmphex(rd(&s.t, IXGBE_VFLRE1), ==, 0);
    g_assert_cmphex(rd(&s.t, IXGBE_EICR) & IXGBE_EICR_MAILBOX, ==,
                    IXGBE_EICR_MAILBOX);
    /* The VF stops until the PF enables it again */
    g_assert_cmphex(rd(&s.t, IXGBE_VFRE0), ==, 0x1);
    g_assert_cmphex(rd(&s.t, IXGBE_VFTE0), ==, 0x1);
    /* The reset cleared the VF's own state, config space included */
    cfg_writew(&s, vf, PCI_COMMAND, PCI_COMMAND_MEMORY);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VTIVAR_MISC), ==, 0);
    g_assert_cmphex(rd(&s.t, IXGBE_PFMAILBOX0 + 4), ==, 0);
    /* VFLREC is write 1 to clear */
    wr(&s.t, IXGBE_VFLREC0, BIT(1));
    g_assert_cmphex(rd(&s.t, IXGBE_VFLRE0), ==, 0);
    sriov_stop(&s);
}

/* A PF reset resets the VFs; they see RSTI until PFRSTD */
static void test_sriov_pf_reset(void)
{
    SriovTest s;

    sriov_boot(&s, "");
    sriov_enable(&s, 1);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    vf_rd(&s, 0, IXGBE_VFMAILBOX);
    vf_wr(&s, 0, IXGBE_VTIVAR_MISC, IXGBE_IVAR_VALID | 1);
    vf_wr(&s, 0, IXGBE_VTEIMS, 0x7);

    wr(&s.t, IXGBE_CTRL, IXGBE_CTRL_RST);
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_RSTI);
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VTIVAR_MISC), ==, 0);
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VTEIMS), ==, 0);
    /* Pools are gone with GCR_EXT: VF queue registers map nowhere */
    vf_wr(&s, 0, IXGBE_VFRXQ_BASE + IXGBE_RXQ_RDLEN, 0x1000);
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VFRXQ_BASE + IXGBE_RXQ_RDLEN), ==, 0);
    g_assert_cmphex(rd(&s.t, rxq(0, IXGBE_RXQ_RDLEN)), ==, 0);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    g_assert_cmphex(vf_rd(&s, 0, IXGBE_VFMAILBOX), ==,
                    IXGBE_VFMAILBOX_RSTD);
    sriov_stop(&s);
}

/* VF queue i is PF queue n * qpp + i, qpp from GCR_EXT.VT_Mode */
static void test_sriov_queue_registers(void)
{
    SriovTest s;
    uint32_t vf_rdbal = IXGBE_VFRXQ_BASE + IXGBE_RXQ_RDBAL;
    uint32_t vf_tdlen = IXGBE_VFTXQ_BASE + 2 * IXGBE_TXQ_STRIDE +
                        IXGBE_TXQ_TDLEN;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);

    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_32);
    vf_wr(&s, 1, vf_rdbal, 0x12345680);
    vf_wr(&s, 1, vf_tdlen, 0x800);
    g_assert_cmphex(rd(&s.t, rxq(4, IXGBE_RXQ_RDBAL)), ==, 0x12345680);
    g_assert_cmphex(rd(&s.t, txq(6, IXGBE_TXQ_TDLEN)), ==, 0x800);
    g_assert_cmphex(vf_rd(&s, 1, vf_tdlen), ==, 0x800);
    /* The PF's write masks apply */
    vf_wr(&s, 1, vf_rdbal, 0xffffffff);
    g_assert_cmphex(rd(&s.t, rxq(4, IXGBE_RXQ_RDBAL)), ==, 0xffffff80);

    /* 64 pools of 2: VF 1's queue 0 is PF queue 2, queue 2 is none */
    wr(&s.t, IXGBE_GCR_EXT, IXGBE_GCR_EXT_VT_MODE_64);
    wr(&s.t, rxq(2, IXGBE_RXQ_RDLEN), 0x1000);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFRXQ_BASE + IXGBE_RXQ_RDLEN), ==,
                    0x1000);
    vf_wr(&s, 1, vf_tdlen, 0x400);
    g_assert_cmphex(vf_rd(&s, 1, vf_tdlen), ==, 0);
    g_assert_cmphex(rd(&s.t, txq(6, IXGBE_TXQ_TDLEN)), ==, 0x800);

    /* PSRTYPE and the mailbox memory of pool 1; counters are read-only */
    vf_wr(&s, 1, IXGBE_VFPSRTYPE, 0x1330);
    g_assert_cmphex(rd(&s.t, IXGBE_PSRTYPE0 + 4), ==, 0x1330);
    vf_wr(&s, 1, IXGBE_VFGPRC, 5);
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFGPRC), ==, 0);
    g_assert_cmphex(vf_rd(&s, 1, 0x3ffc), ==, 0);
    sriov_stop(&s);
}

/* A frame sent from VF 1's queue 0 leaves, and interrupts VF 1 */
static void test_sriov_vf_tx_irq(void)
{
    SriovTest s;
    uint8_t frame[128];
    size_t len = build_frame(frame, peer_mac, sizeof(frame), 7);
    uint64_t ring, buf;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    pf_vt_mode(&s, IXGBE_GCR_EXT_VT_MODE_64);
    /* The ring of PF queue 2 as the PF driver would see it */
    ring = tx_ring_setup(&s.t, 2, 8, 0);
    vf_wr(&s, 1, IXGBE_VTIVAR0, (IXGBE_IVAR_VALID | 0) << 8);
    vf_wr(&s, 1, IXGBE_VTEIAC, BIT(0));
    vf_wr(&s, 1, IXGBE_VTEIMS, BIT(0));

    buf = guest_frame(&s.t, frame, len);
    tx_put_data(&s.t, ring, 0, buf, len, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    vf_wr(&s, 1, IXGBE_VFTXQ_BASE + IXGBE_TXQ_TDT, 1);
    backend_expect(&s.t, frame, len);
    g_assert_true(tx_dd(&s.t, ring, 0));
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VFTXQ_BASE + IXGBE_TXQ_TDH), ==, 1);
    /* VF 1's vector 0, auto-cleared; nothing for the PF or VF 0 */
    g_assert_cmphex(vf_pba(&s, 1), ==, BIT(0));
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VTEICR), ==, 0);
    g_assert_cmphex(vf_pba(&s, 0), ==, 0);
    g_assert_cmphex(rd(&s.t, IXGBE_EICS) & IXGBE_EICR_RTX_QUEUE, ==, 0);
    sriov_stop(&s);
}

/* VTEITR holds a VF's vector for its interval after each message */
static void test_sriov_vf_eitr(void)
{
    /* VF 1's vector 0: its MSI-X vector control word */
    uint64_t ctrl = VF_BAR3_BASE + 16 * KiB + PCI_MSIX_ENTRY_VECTOR_CTRL;
    SriovTest s;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    vf_wr(&s, 1, IXGBE_VTEITR0, 100 << 3);          /* 200 us */
    g_assert_cmphex(vf_rd(&s, 1, IXGBE_VTEITR0), ==, 100 << 3);
    vf_wr(&s, 1, IXGBE_VTEIMS, BIT(0));
    vf_wr(&s, 1, IXGBE_VTEICS, BIT(0));
    /* the first message goes at once (pending in the PBA: masked) */
    g_assert_cmphex(vf_pba(&s, 1), ==, BIT(0));
    /* unmasking delivers it and clears the pending bit */
    qtest_writel(s.t.qts, ctrl, 0);
    qtest_writel(s.t.qts, ctrl, PCI_MSIX_ENTRY_CTRL_MASKBIT);
    g_assert_cmphex(vf_pba(&s, 1), ==, 0);
    /* a cause within the interval waits for its end */
    vf_wr(&s, 1, IXGBE_VTEICS, BIT(0));
    g_assert_cmphex(vf_pba(&s, 1), ==, 0);
    qtest_clock_step(s.t.qts, 199 * 1000);
    g_assert_cmphex(vf_pba(&s, 1), ==, 0);
    qtest_clock_step(s.t.qts, 1000);
    g_assert_cmphex(vf_pba(&s, 1), ==, BIT(0));
    /* VF 0 (VTEITR 0) is not held: two causes, two messages */
    vf_wr(&s, 0, IXGBE_VTEIMS, BIT(0));
    vf_wr(&s, 0, IXGBE_VTEICS, BIT(0));
    g_assert_cmphex(vf_pba(&s, 0), ==, BIT(0));
    qtest_writel(s.t.qts, VF_BAR3_BASE + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    qtest_writel(s.t.qts, VF_BAR3_BASE + PCI_MSIX_ENTRY_VECTOR_CTRL,
                 PCI_MSIX_ENTRY_CTRL_MASKBIT);
    vf_wr(&s, 0, IXGBE_VTEICS, BIT(0));
    g_assert_cmphex(vf_pba(&s, 0), ==, BIT(0));
    sriov_stop(&s);
}

/*
 * Migration with VFs enabled: on the destination the same VFs decode
 * their BARs and master the bus, keep their MSI-X table, their registers
 * in the PF's core and a vector held by its VTEITR interval. (Loading the
 * PF's config space sets VF Enable again, which resets the VFs: their
 * state must come after it.)
 */
static void test_sriov_migration(void)
{
    const uint16_t cmd = PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    uint64_t entry = VF_BAR3_BASE + 16 * KiB + PCI_MSIX_ENTRY_SIZE;
    g_autofree char *path = NULL;
    SriovTest s, d;

    sriov_boot(&s, "");
    sriov_enable(&s, 2);
    vf_wr(&s, 1, IXGBE_VTEIMS, BIT(1));
    qtest_writel(s.t.qts, entry + PCI_MSIX_ENTRY_DATA, 0x4242);
    /* vector 1 sends one message, then its VTEITR interval holds a cause */
    vf_wr(&s, 1, IXGBE_VTEITR0 + 4, 100 << 3);
    vf_wr(&s, 1, IXGBE_VTEICS, BIT(1));
    qtest_writel(s.t.qts, entry + PCI_MSIX_ENTRY_VECTOR_CTRL, 0);
    qtest_writel(s.t.qts, entry + PCI_MSIX_ENTRY_VECTOR_CTRL,
                 PCI_MSIX_ENTRY_CTRL_MASKBIT);
    vf_wr(&s, 1, IXGBE_VTEICS, BIT(1));
    g_assert_cmphex(vf_pba(&s, 1), ==, 0);
    path = save_to_file(&s.t);
    sriov_stop(&s);

    g_assert_true(load_from_file_boot(&d.t, path, true));
    d.pf = d.t.dev->devfn;
    d.mch = NULL;           /* the ECAM window came with the MCH's state */
    for (unsigned n = 0; n < 2; n++) {
        g_assert_cmphex(cfg_readw(&d, vf_devfn(&d, n), PCI_COMMAND) & cmd,
                        ==, cmd);
        g_assert_cmphex(cfg_readw(&d, vf_devfn(&d, n),
                                  VF_MSIX_CAP + PCI_MSIX_FLAGS) &
                        PCI_MSIX_FLAGS_ENABLE, ==, PCI_MSIX_FLAGS_ENABLE);
    }
    g_assert_cmphex(vf_rd(&d, 1, IXGBE_VTEIMS), ==, BIT(1));
    g_assert_cmphex(qtest_readl(d.t.qts, entry + PCI_MSIX_ENTRY_DATA), ==,
                    0x4242);
    /* the held cause goes out when the migrated interval ends */
    g_assert_cmphex(vf_pba(&d, 1), ==, 0);
    qtest_qmp_assert_success(d.t.qts, "{'execute': 'cont'}");
    qtest_clock_step(d.t.qts, 200 * 1000);
    g_assert_cmphex(vf_pba(&d, 1), ==, BIT(1));
    /* and the VFs still work: a mailbox round trip of VF 0 */
    vf_wr(&d, 0, IXGBE_VFMAILBOX, IXGBE_VFMAILBOX_REQ);
    g_assert_cmphex(rd(&d.t, IXGBE_PFMBICR0), ==, IXGBE_PFMBICR_VFREQ(0));
    sriov_stop(&d);
    unlink(path);
}

/*
 * Receive pools: VF 0 owns pool 0 (queues 0-1), VF 1 pool 1 (queues 2-3),
 * the PF pool 2 (queues 4-5), as the Linux PF driver sets them up for two
 * VFs in 64-pool mode; every pool takes untagged and broadcast frames.
 */
static const uint8_t vf_mac[2][6] = {
    { 0x02, 0x00, 0x00, 0x00, 0x00, 0x10 },
    { 0x02, 0x00, 0x00, 0x00, 0x00, 0x11 },
};

#define PF_POOL     2

typedef struct VtTest {
    SriovTest s;
    RxRing rx[3];               /* queue 0 of pools 0, 1, 2 */
} VtTest;

static void set_rar(SriovTest *s, unsigned i, const uint8_t *mac,
                    unsigned pool)
{
    wr(&s->t, IXGBE_RAL0 + i * 8, ldl_le_p(mac));
    wr(&s->t, IXGBE_RAL0 + i * 8 + 4, lduw_le_p(mac + 4) | IXGBE_RAH_AV);
    wr(&s->t, IXGBE_MPSAR0 + i * 8, BIT(pool));
}

static void vt_setup(VtTest *v)
{
    SriovTest *s = &v->s;

    sriov_boot(s, "");
    sriov_enable(s, 2);
    pf_vt_mode(s, IXGBE_GCR_EXT_VT_MODE_64);
    wr(&s->t, IXGBE_MRQC, IXGBE_MRQC_VMDQ_RSS64);
    wr(&s->t, IXGBE_MTQC, IXGBE_MTQC_VT_ENA | IXGBE_MTQC_64VF);
    wr(&s->t, IXGBE_VT_CTL, IXGBE_VT_CTL_VT_ENA | IXGBE_VT_CTL_REPLEN |
       PF_POOL << IXGBE_VT_CTL_POOL_SHIFT);
    wr(&s->t, IXGBE_VFRE0, 0x7);
    wr(&s->t, IXGBE_VFTE0, 0x7);
    for (unsigned p = 0; p <= PF_POOL; p++) {
        wr(&s->t, IXGBE_PFVML2FLT0 + p * 4,
           IXGBE_VMOLR_AUPE | IXGBE_VMOLR_BAM);
        rx_ring_setup(&s->t, &v->rx[p], p * 2, 8);
    }
    set_rar(s, 0, test_mac, PF_POOL);
    set_rar(s, 1, vf_mac[0], 0);
    set_rar(s, 2, vf_mac[1], 1);
    rx_enable(&s->t);
}

/* Frames up to a marker for the PF have been received, none for pool p */
static void assert_pool_idle(VtTest *v, unsigned p)
{
    uint8_t frame[64], wb[DESC_SIZE];

    backend_send(&v->s.t, frame, build_frame(frame, test_mac, 64, 99));
    rx_wait(&v->s.t, &v->rx[PF_POOL], wb);
    g_assert_false(rx_desc_done(&v->s.t, &v->rx[p], v->rx[p].next, wb));
}

/* Unicast goes to the pool of the receive address it matches, only */
static void test_pool_unicast(void)
{
    VtTest v;
    uint8_t frame[100], wb[DESC_SIZE];
    size_t len = build_frame(frame, vf_mac[1], sizeof(frame), 1);

    vt_setup(&v);
    backend_send(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[1], wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    rx_check_data(&v.s.t, &v.rx[1], 0, frame, len);
    assert_pool_idle(&v, 0);
    /* VF 1 counts it; VF 0 does not */
    g_assert_cmpuint(vf_rd(&v.s, 1, IXGBE_VFGPRC), ==, 1);
    g_assert_cmpuint(vf_rd(&v.s, 1, IXGBE_VFGORC_LSB), ==, len);
    g_assert_cmpuint(vf_rd(&v.s, 0, IXGBE_VFGPRC), ==, 0);

    /* Receive disabled for pool 1 (PFVFRE): nothing for it */
    wr(&v.s.t, IXGBE_VFRE0, 0x5);
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 1);
    /* An address no pool has, and the port not promiscuous */
    wr(&v.s.t, IXGBE_VFRE0, 0x7);
    len = build_frame(frame, other_mac, sizeof(frame), 2);
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 0);
    assert_pool_idle(&v, 1);
    sriov_stop(&v.s);
}

/* Broadcast reaches every pool with BAM */
static void test_pool_broadcast(void)
{
    VtTest v;
    uint8_t frame[80], wb[DESC_SIZE];
    size_t len = build_frame(frame, bcast_mac, sizeof(frame), 3);

    vt_setup(&v);
    wr(&v.s.t, IXGBE_PFVML2FLT0 + 4, IXGBE_VMOLR_AUPE);
    backend_send(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[0], wb);
    rx_check_data(&v.s.t, &v.rx[0], 0, frame, len);
    rx_wait(&v.s.t, &v.rx[PF_POOL], wb);
    rx_check_data(&v.s.t, &v.rx[PF_POOL], 0, frame, len);
    assert_pool_idle(&v, 1);

    /* Without replication it goes to the default pool alone */
    wr(&v.s.t, IXGBE_PFVML2FLT0 + 4, IXGBE_VMOLR_AUPE | IXGBE_VMOLR_BAM);
    wr(&v.s.t, IXGBE_VT_CTL, IXGBE_VT_CTL_VT_ENA |
       PF_POOL << IXGBE_VT_CTL_POOL_SHIFT);
    backend_send(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[PF_POOL], wb);
    assert_pool_idle(&v, 0);
    assert_pool_idle(&v, 1);
    sriov_stop(&v.s);
}

/* Tagged frames go to the pools of their VLAN; untagged ones need AUPE */
static void test_pool_vlan(void)
{
    VtTest v;
    uint8_t frame[100], wb[DESC_SIZE];
    size_t len = build_frame(frame, vf_mac[0], sizeof(frame), 4);

    vt_setup(&v);
    wr(&v.s.t, IXGBE_VLNCTRL, rd(&v.s.t, IXGBE_VLNCTRL) | IXGBE_VLNCTRL_VFE);
    stw_be_p(frame + 12, 0x8100);
    stw_be_p(frame + 14, 100);
    /* VLAN 100 is in no PFVLVF entry */
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 0);
    /* Entry 1 holds VLAN 100 for pool 0 */
    wr(&v.s.t, IXGBE_PFVLVF0 + 4, IXGBE_PFVLVF_VIEN | 100);
    wr(&v.s.t, IXGBE_PFVLVFB0 + 8, BIT(0));
    backend_send(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[0], wb);
    rx_check_data(&v.s.t, &v.rx[0], 0, frame, len);
    /* Untagged, to a pool without AUPE */
    wr(&v.s.t, IXGBE_PFVML2FLT0, IXGBE_VMOLR_BAM);
    len = build_frame(frame, vf_mac[0], sizeof(frame), 5);
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 0);
    sriov_stop(&v.s);
}

/*
 * The internal switch: VF 0 to VF 1's address stays inside; VF 0's
 * broadcast reaches the other pools and the wire, not VF 0 itself.
 */
static void test_pool_loopback(void)
{
    VtTest v;
    uint8_t frame[90], wb[DESC_SIZE];
    size_t len = build_frame(frame, vf_mac[1], sizeof(frame), 6);
    uint64_t ring;

    vt_setup(&v);
    wr(&v.s.t, IXGBE_PFDTXGSWC, IXGBE_PFDTXGSWC_VT_LBEN);
    ring = tx_ring_setup(&v.s.t, 0, 8, 0);
    memcpy(frame + 6, vf_mac[0], 6);
    tx_send_frame(&v.s.t, 0, ring, 0, frame, len);
    rx_wait(&v.s.t, &v.rx[1], wb);
    rx_check_data(&v.s.t, &v.rx[1], 0, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_cmpuint(vf_rd(&v.s, 0, IXGBE_VFGPTC), ==, 1);
    g_assert_cmpuint(vf_rd(&v.s, 0, IXGBE_VFGOTC_LSB), ==, len);
    g_assert_cmpuint(vf_rd(&v.s, 1, IXGBE_VFGPRC), ==, 1);

    memcpy(frame, bcast_mac, 6);
    tx_send_frame(&v.s.t, 0, ring, 1, frame, len);
    backend_expect(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[1], wb);
    rx_wait(&v.s.t, &v.rx[PF_POOL], wb);
    assert_pool_idle(&v, 0);

    /* Without LBEN the unicast goes to the wire */
    wr(&v.s.t, IXGBE_PFDTXGSWC, 0);
    memcpy(frame, vf_mac[1], 6);
    tx_send_frame(&v.s.t, 0, ring, 2, frame, len);
    backend_expect(&v.s.t, frame, len);
    sriov_stop(&v.s);
}

/* A VF's frame with another source address is dropped and counted */
static void test_pool_spoof(void)
{
    VtTest v;
    uint8_t frame[70];
    size_t len = build_frame(frame, peer_mac, sizeof(frame), 8);
    uint64_t ring;

    vt_setup(&v);
    wr(&v.s.t, IXGBE_PFVFSPOOF0, BIT(0));
    wr(&v.s.t, IXGBE_VMECM0, BIT(0));
    ring = tx_ring_setup(&v.s.t, 0, 8, 0);
    /* build_frame's source is the peer's address, not VF 0's */
    tx_send_frame(&v.s.t, 0, ring, 0, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_true(tx_dd(&v.s.t, ring, 0));
    g_assert_cmpuint(rd(&v.s.t, IXGBE_SSVPC), ==, 1);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_SSVPC), ==, 0);
    g_assert_cmpuint(vf_rd(&v.s, 0, IXGBE_VFGPTC), ==, 0);
    /* Its own address passes */
    memcpy(frame + 6, vf_mac[0], 6);
    tx_send_frame(&v.s.t, 0, ring, 1, frame, len);
    backend_expect(&v.s.t, frame, len);
    g_assert_cmpuint(vf_rd(&v.s, 0, IXGBE_VFGPTC), ==, 1);
    /* Transmit disabled for pool 0 (PFVFTE): dropped, not counted */
    wr(&v.s.t, IXGBE_VFTE0, 0x6);
    tx_send_frame(&v.s.t, 0, ring, 2, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_SSVPC), ==, 0);
    sriov_stop(&v.s);
}

/* frame with an 802.1Q tag inserted after the source address */
static size_t vlan_insert(uint8_t *out, const uint8_t *frame, size_t len,
                          uint16_t tag)
{
    memcpy(out, frame, 12);
    stw_be_p(out + 12, 0x8100);
    stw_be_p(out + 14, tag);
    memcpy(out + 16, frame + 12, len - 12);
    return len + 4;
}

/*
 * A context descriptor carrying a VLAN tag at idx, then frame as one data
 * descriptor with VLE at idx + 1: the driver asks for the tag itself.
 */
static void tx_send_vle(IxgbeTest *t, unsigned q, uint64_t ring,
                        unsigned idx, const uint8_t *frame, size_t len,
                        uint16_t tag)
{
    uint64_t buf = guest_frame(t, frame, len);
    uint8_t d[DESC_SIZE] = { 0 };

    stl_le_p(d, (uint32_t)tag << IXGBE_TXCTX_VLAN_SHIFT);
    stl_le_p(d + 8, IXGBE_TXD_DTYP_CTXT | IXGBE_TXD_CMD_DEXT);
    qtest_memwrite(t->qts, ring + idx * DESC_SIZE, d, sizeof(d));
    tx_put_data(t, ring, idx + 1, buf, len, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS | IXGBE_TXD_CMD_VLE);
    wr(t, txq(q, IXGBE_TXQ_TDT), idx + 2);
}

#define VMVIR_DEFAULT   (1u << 30)
#define VMVIR_NEVER     (2u << 30)
#define VMVIR_RESERVED  (3u << 30)

/*
 * A port VLAN as `ip link set PF vf 0 vlan 100` programs it: VMVIR
 * inserts tag 100 on everything pool 0 sends (whatever its descriptors
 * ask), the pool takes no untagged frames (no AUPE) and only VLAN 100 of
 * the tagged ones (PFVLVF/PFVLVFB), and with VME its queue strips the
 * tag into the descriptor.
 */
static void test_pool_port_vlan(void)
{
    VtTest v;
    uint8_t frame[100], tagged[104], wb[DESC_SIZE];
    size_t len = build_frame(frame, peer_mac, sizeof(frame), 9);
    size_t tlen;
    uint64_t ring;

    vt_setup(&v);
    wr(&v.s.t, IXGBE_VLNCTRL, rd(&v.s.t, IXGBE_VLNCTRL) | IXGBE_VLNCTRL_VFE);
    wr(&v.s.t, IXGBE_VMVIR0, VMVIR_DEFAULT | 100);
    wr(&v.s.t, IXGBE_PFVML2FLT0, IXGBE_VMOLR_BAM);
    wr(&v.s.t, IXGBE_PFVLVF0 + 4, IXGBE_PFVLVF_VIEN | 100);
    wr(&v.s.t, IXGBE_PFVLVFB0 + 8, BIT(0));
    /* MAC and VLAN anti-spoofing, as the PF driver sets them */
    wr(&v.s.t, IXGBE_PFVFSPOOF0, BIT(0) | BIT(IXGBE_PFVFSPOOF_VLANAS_SHIFT));
    wr(&v.s.t, IXGBE_VMECM0, BIT(0));
    ring = tx_ring_setup(&v.s.t, 0, 16, 0);
    memcpy(frame + 6, vf_mac[0], 6);

    /* Untagged from the VF: the wire sees it tagged 100 */
    tlen = vlan_insert(tagged, frame, len, 100);
    tx_send_frame(&v.s.t, 0, ring, 0, frame, len);
    backend_expect(&v.s.t, tagged, tlen);
    /* The descriptor's own tag is replaced by the port VLAN */
    tx_send_vle(&v.s.t, 0, ring, 1, frame, len, 7);
    backend_expect(&v.s.t, tagged, tlen);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_SSVPC), ==, 0);
    /* A port VLAN the pool is not a member of fails VLAN anti-spoofing */
    wr(&v.s.t, IXGBE_VMVIR0, VMVIR_DEFAULT | 300);
    tx_send_frame(&v.s.t, 0, ring, 3, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_SSVPC), ==, 1);
    /* VLANA "never": no tag even where the descriptor asks for one */
    wr(&v.s.t, IXGBE_VMVIR0, VMVIR_NEVER | 100);
    tx_send_vle(&v.s.t, 0, ring, 4, frame, len, 7);
    backend_expect(&v.s.t, frame, len);
    /* VLANA 0: the descriptor decides, as without a port VLAN */
    wr(&v.s.t, IXGBE_VMVIR0, 100);
    tx_send_vle(&v.s.t, 0, ring, 6, frame, len, 100);
    backend_expect(&v.s.t, tagged, tlen);
    tx_send_frame(&v.s.t, 0, ring, 8, frame, len);
    backend_expect(&v.s.t, frame, len);
    /* VLANA 3 is reserved: taken as 0, logged once when written */
    wr(&v.s.t, IXGBE_VMVIR0, VMVIR_RESERVED | 100);
    tx_send_vle(&v.s.t, 0, ring, 9, frame, len, 100);
    backend_expect(&v.s.t, tagged, tlen);
    tx_send_frame(&v.s.t, 0, ring, 11, frame, len);
    backend_expect(&v.s.t, frame, len);
    g_assert_cmpuint(ixgbe_test_log_count(&v.s.t, "VLANA 3 is reserved"),
                     ==, 1);
    /* Another pool's queue (pool 1, queue 2) is not tagged */
    wr(&v.s.t, IXGBE_VMVIR0, VMVIR_DEFAULT | 100);
    ring = tx_ring_setup(&v.s.t, 2, 8, 0);
    memcpy(frame + 6, vf_mac[1], 6);
    tx_send_frame(&v.s.t, 2, ring, 0, frame, len);
    backend_expect(&v.s.t, frame, len);

    /* Receive: VLAN 100 reaches pool 0, its tag stripped (VME) */
    wr(&v.s.t, rxq(0, IXGBE_RXQ_RXDCTL),
       rd(&v.s.t, rxq(0, IXGBE_RXQ_RXDCTL)) | IXGBE_RXDCTL_VME);
    len = build_frame(frame, vf_mac[0], sizeof(frame), 10);
    tlen = vlan_insert(tagged, frame, len, 100);
    backend_send(&v.s.t, tagged, tlen);
    rx_wait(&v.s.t, &v.rx[0], wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_VP, ==,
                    IXGBE_RXD_STAT_VP);
    g_assert_cmpuint(lduw_le_p(wb + 14), ==, 100);
    rx_check_data(&v.s.t, &v.rx[0], 0, frame, len);
    /* Another VLAN, and no VLAN at all, do not reach it */
    tlen = vlan_insert(tagged, frame, len, 200);
    backend_send(&v.s.t, tagged, tlen);
    assert_pool_idle(&v, 0);
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 0);
    /* Nor does an untagged broadcast, which the other pools take */
    len = build_frame(frame, bcast_mac, sizeof(frame), 11);
    backend_send(&v.s.t, frame, len);
    rx_wait(&v.s.t, &v.rx[1], wb);
    assert_pool_idle(&v, 0);
    backend_assert_silent(&v.s.t);
    sriov_stop(&v.s);
}

/* Wait for the frame whose first descriptor is r->next, up to its EOP */
static size_t rx_wait_frame(IxgbeTest *t, RxRing *r, unsigned *first)
{
    uint8_t wb[DESC_SIZE];
    size_t len = 0;

    *first = r->next;
    do {
        rx_wait(t, r, wb);
        len += rx_wb_length(wb);
    } while (!(rx_wb_status(wb) & IXGBE_RXD_STAT_EOP));
    return len;
}

/*
 * Jumbo frames between pools: the 82599 has one maximum frame size for
 * all of them (MAXFRS with HLREG0.JUMBOEN), which the PF driver raises
 * when a VF asks for a larger one (the set-LPE message).  A 9014 byte
 * frame (MTU 9000) passes VF to VF, VF to wire and wire to VF once it is
 * raised, and is dropped (ROC) before; a switched frame never leaks to
 * the wire.
 */
#define JUMBO_MFS   9018        /* MAXFRS for a 9000 byte MTU, CRC included */
#define JUMBO       9014        /* the largest frame it admits, without CRC */

static void test_pool_jumbo(void)
{
    VtTest v;
    g_autofree uint8_t *frame = g_malloc(JUMBO + 1);
    size_t len = build_frame(frame, vf_mac[1], JUMBO, 12);
    unsigned first;
    uint64_t ring;

    vt_setup(&v);
    wr(&v.s.t, IXGBE_PFDTXGSWC, IXGBE_PFDTXGSWC_VT_LBEN);
    /* Room for a 9018 byte frame in 1 KiB buffers */
    rx_ring_setup(&v.s.t, &v.rx[0], 0, 32);
    rx_ring_setup(&v.s.t, &v.rx[1], 2, 32);
    ring = tx_ring_setup(&v.s.t, 0, 8, 0);
    memcpy(frame + 6, vf_mac[0], 6);

    /* Standard MAXFRS: dropped at the receive side, not sent out */
    tx_send_frame(&v.s.t, 0, ring, 0, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_ROC), ==, 1);
    assert_pool_idle(&v, 1);

    /* What the PF driver writes for a VF's 9000 byte MTU */
    wr(&v.s.t, IXGBE_MAXFRS, JUMBO_MFS << IXGBE_MAXFRS_MFS_SHIFT);
    wr(&v.s.t, IXGBE_HLREG0, rd(&v.s.t, IXGBE_HLREG0) |
       IXGBE_HLREG0_JUMBOEN);
    tx_send_frame(&v.s.t, 0, ring, 1, frame, len);
    g_assert_cmpuint(rx_wait_frame(&v.s.t, &v.rx[1], &first), ==, len);
    rx_check_data(&v.s.t, &v.rx[1], first, frame, len);
    backend_assert_silent(&v.s.t);
    g_assert_cmpuint(vf_rd(&v.s, 1, IXGBE_VFGORC_LSB), ==, len);

    /* VF 0 to the wire, and from the wire to VF 0 */
    memcpy(frame, peer_mac, 6);
    tx_send_frame(&v.s.t, 0, ring, 2, frame, len);
    backend_expect(&v.s.t, frame, len);
    len = build_frame(frame, vf_mac[0], JUMBO, 13);
    backend_send(&v.s.t, frame, len);
    g_assert_cmpuint(rx_wait_frame(&v.s.t, &v.rx[0], &first), ==, len);
    rx_check_data(&v.s.t, &v.rx[0], first, frame, len);
    /* One byte more is too long */
    len = build_frame(frame, vf_mac[0], JUMBO + 1, 14);
    backend_send(&v.s.t, frame, len);
    assert_pool_idle(&v, 0);
    g_assert_cmpuint(rd(&v.s.t, IXGBE_ROC), ==, 1);
    sriov_stop(&v.s);
}

/* No byte of descriptor idx's buffer of ring r has been written */
static bool rx_buf_untouched(SriovTest *s, const RxRing *r, unsigned idx)
{
    uint8_t buf[128];

    qtest_memread(s->t.qts, r->bufs + idx * RX_BUF_SIZE, buf, sizeof(buf));
    for (size_t i = 0; i < sizeof(buf); i++) {
        if (buf[i]) {
            return false;
        }
    }
    return true;
}

/*
 * The queues of a VF's pool do DMA as that VF: with VF 1's Bus Master
 * Enable off, its receive and transmit rings see no access at all, while
 * VF 0's and the PF's queues go on; with it on again, VF 1's queues work.
 */
static void test_sriov_vf_dma_requester(void)
{
    VtTest v;
    SriovTest *s = &v.s;
    uint8_t frame[100], wb[DESC_SIZE];
    size_t len = build_frame(frame, vf_mac[1], sizeof(frame), 9);
    uint64_t ring, pf_ring, buf;
    int vf1;

    vt_setup(&v);
    vf1 = vf_devfn(s, 1);
    cfg_writew(s, vf1, PCI_COMMAND, PCI_COMMAND_MEMORY);

    /* Receive: VF 1's ring is not touched, the PF's and VF 0's are */
    backend_send(&s->t, frame, len);
    assert_pool_idle(&v, 1);
    g_assert_true(rx_buf_untouched(s, &v.rx[1], v.rx[1].next));
    g_assert_cmphex(rd(&s->t, rxq(2, IXGBE_RXQ_RDH)), ==, 0);
    g_assert_true(ixgbe_test_logged(&s->t, "rxq 2: descriptor fetch"));
    len = build_frame(frame, vf_mac[0], sizeof(frame), 10);
    backend_send(&s->t, frame, len);
    rx_wait(&s->t, &v.rx[0], wb);
    rx_check_data(&s->t, &v.rx[0], 0, frame, len);

    /* Transmit: VF 1's queue 0 (PF queue 2) sends nothing */
    ring = tx_ring_setup(&s->t, 2, 8, 0);
    memcpy(frame + 6, vf_mac[1], 6);
    buf = guest_frame(&s->t, frame, len);
    tx_put_data(&s->t, ring, 0, buf, len, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    vf_wr(s, 1, IXGBE_VFTXQ_BASE + IXGBE_TXQ_TDT, 1);
    backend_assert_silent(&s->t);
    g_assert_false(tx_dd(&s->t, ring, 0));
    g_assert_cmphex(vf_rd(s, 1, IXGBE_VFTXQ_BASE + IXGBE_TXQ_TDH), ==, 0);
    /* The PF's queue 4 sends */
    pf_ring = tx_ring_setup(&s->t, 4, 8, 0);
    memcpy(frame + 6, test_mac, 6);
    tx_send_frame(&s->t, 4, pf_ring, 0, frame, len);
    backend_expect(&s->t, frame, len);
    g_assert_true(tx_dd(&s->t, pf_ring, 0));

    /* Bus mastering back on: VF 1's queues pick up where they stopped */
    cfg_writew(s, vf1, PCI_COMMAND, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    memcpy(frame + 6, vf_mac[1], 6);
    vf_wr(s, 1, IXGBE_VFTXQ_BASE + IXGBE_TXQ_TDT, 1);
    backend_expect(&s->t, frame, len);
    g_assert_true(tx_dd(&s->t, ring, 0));
    len = build_frame(frame, vf_mac[1], sizeof(frame), 11);
    backend_send(&s->t, frame, len);
    rx_wait(&s->t, &v.rx[1], wb);
    rx_check_data(&s->t, &v.rx[1], 0, frame, len);
    sriov_stop(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/sriov/capability", test_sriov_capability);
    qtest_add_func("ixgbe/sriov/off", test_sriov_off);
    qtest_add_func("ixgbe/sriov/mailbox-pf-to-vf",
                   test_sriov_mailbox_pf_to_vf);
    qtest_add_func("ixgbe/sriov/mailbox-vf-to-pf",
                   test_sriov_mailbox_vf_to_pf);
    qtest_add_func("ixgbe/sriov/vflr", test_sriov_vflr);
    qtest_add_func("ixgbe/sriov/pf-reset", test_sriov_pf_reset);
    qtest_add_func("ixgbe/sriov/queue-registers",
                   test_sriov_queue_registers);
    qtest_add_func("ixgbe/sriov/vf-tx-irq", test_sriov_vf_tx_irq);
    qtest_add_func("ixgbe/sriov/pool-unicast", test_pool_unicast);
    qtest_add_func("ixgbe/sriov/pool-broadcast", test_pool_broadcast);
    qtest_add_func("ixgbe/sriov/pool-vlan", test_pool_vlan);
    qtest_add_func("ixgbe/sriov/pool-loopback", test_pool_loopback);
    qtest_add_func("ixgbe/sriov/pool-spoof", test_pool_spoof);
    qtest_add_func("ixgbe/sriov/pool-port-vlan", test_pool_port_vlan);
    qtest_add_func("ixgbe/sriov/pool-jumbo", test_pool_jumbo);
    qtest_add_func("ixgbe/sriov/vf-eitr", test_sriov_vf_eitr);
    qtest_add_func("ixgbe/sriov/migration", test_sriov_migration);
    qtest_add_func("ixgbe/sriov/vf-dma-requester",
                   test_sriov_vf_dma_requester);
    return g_test_run();
}
