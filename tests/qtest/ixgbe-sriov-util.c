/*
 * Test harness for the ixgbe SR-IOV qtests (ixgbe-sriov-util.h)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "libqtest.h"
#include "hw/pci/pci_ids.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-sriov-util.h"

uint64_t ecam(SriovTest *s, int devfn, unsigned off)
{
    return ECAM_BASE + ((uint64_t)devfn << 12) + off;
}

uint32_t cfg_readl(SriovTest *s, int devfn, unsigned off)
{
    return qtest_readl(s->t.qts, ecam(s, devfn, off));
}

uint16_t cfg_readw(SriovTest *s, int devfn, unsigned off)
{
    return qtest_readw(s->t.qts, ecam(s, devfn, off));
}

void cfg_writel(SriovTest *s, int devfn, unsigned off, uint32_t v)
{
    qtest_writel(s->t.qts, ecam(s, devfn, off), v);
}

void cfg_writew(SriovTest *s, int devfn, unsigned off, uint16_t v)
{
    qtest_writew(s->t.qts, ecam(s, devfn, off), v);
}

int vf_devfn(SriovTest *s, unsigned n)
{
    return s->pf + 0x80 + 2 * n;
}

uint32_t vf_rd(SriovTest *s, unsigned n, uint32_t reg)
{
    return qtest_readl(s->t.qts, VF_BAR0_BASE + n * 16 * KiB + reg);
}

void vf_wr(SriovTest *s, unsigned n, uint32_t reg, uint32_t val)
{
    qtest_writel(s->t.qts, VF_BAR0_BASE + n * 16 * KiB + reg, val);
}

/* The VF's MSI-X pending bits (all vectors stay masked) */
uint32_t vf_pba(SriovTest *s, unsigned n)
{
    return qtest_readl(s->t.qts, VF_BAR3_BASE + n * 16 * KiB +
                       IXGBE_VF_MSIX_PBA_OFFSET);
}

void sriov_boot(SriovTest *s, const char *extra)
{
    ixgbe_test_boot(&s->t, true, extra);
    s->pf = s->t.dev->devfn;
    s->mch = qpci_device_find(s->t.qs->pcibus, 0);
    g_assert(s->mch);
    qpci_config_writel(s->mch, MCH_PCIEXBAR + 4, 0);
    qpci_config_writel(s->mch, MCH_PCIEXBAR, ECAM_BASE | MCH_PCIEXBAR_EN);
    g_assert_cmphex(cfg_readw(s, s->pf, PCI_VENDOR_ID), ==,
                    PCI_VENDOR_ID_INTEL);
}

void sriov_stop(SriovTest *s)
{
    g_free(s->mch);
    ixgbe_test_stop(&s->t);
}

/* Enable num VFs with their BARs, memory decoding and MSI-X */
void sriov_enable(SriovTest *s, unsigned num)
{
    cfg_writel(s, s->pf, SRIOV_CAP + PCI_SRIOV_BAR, VF_BAR0_BASE);
    cfg_writel(s, s->pf, SRIOV_CAP + PCI_SRIOV_BAR + 4, 0);
    cfg_writel(s, s->pf, SRIOV_CAP + PCI_SRIOV_BAR + 12, VF_BAR3_BASE);
    cfg_writel(s, s->pf, SRIOV_CAP + PCI_SRIOV_BAR + 16, 0);
    cfg_writew(s, s->pf, SRIOV_CAP + PCI_SRIOV_NUM_VF, num);
    cfg_writew(s, s->pf, SRIOV_CAP + PCI_SRIOV_CTRL,
               PCI_SRIOV_CTRL_VFE | PCI_SRIOV_CTRL_MSE);
    for (unsigned n = 0; n < num; n++) {
        int vf = vf_devfn(s, n);

        cfg_writew(s, vf, PCI_COMMAND,
                   PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
        cfg_writew(s, vf, VF_MSIX_CAP + PCI_MSIX_FLAGS,
                   PCI_MSIX_FLAGS_ENABLE);
    }
}

/* The PF in virtualization mode with pools of qpp queues, reset done */
void pf_vt_mode(SriovTest *s, uint32_t mode)
{
    wr(&s->t, IXGBE_GCR_EXT, mode);
    wr(&s->t, IXGBE_CTRL_EXT, rd(&s->t, IXGBE_CTRL_EXT) |
       IXGBE_CTRL_EXT_PFRSTD);
}
