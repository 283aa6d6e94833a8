/*
 * Test harness for the ixgbe SR-IOV qtests (ixgbe-sriov-util.c): the PF
 * behind a root port (function 0 of its bus, where its 64 VFs fit),
 * config space through the q35 MCH's ECAM window, VF enable, the VFs'
 * registers and MSI-X pending bits.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_QTEST_IXGBE_SRIOV_UTIL_H
#define TESTS_QTEST_IXGBE_SRIOV_UTIL_H

#include "ixgbe-util.h"

#define ECAM_BASE           0xb0000000ull
#define MCH_PCIEXBAR        0x60
#define MCH_PCIEXBAR_EN     1u

#define SRIOV_CAP           0x160
#define ARI_CAP             0x150
#define VF_BAR0_BASE        0xe0800000u     /* 64 VFs x 16 KiB */
#define VF_BAR3_BASE        0xe0900000u
#define VF_MSIX_CAP         0x70
#define VF_PCIE_CAP         0xa0

typedef struct SriovTest {
    IxgbeTest t;
    QPCIDevice *mch;
    int pf;                 /* the PF's bus << 8 | devfn */
} SriovTest;

uint64_t ecam(SriovTest *s, int devfn, unsigned off);
uint32_t cfg_readl(SriovTest *s, int devfn, unsigned off);
uint16_t cfg_readw(SriovTest *s, int devfn, unsigned off);
void cfg_writel(SriovTest *s, int devfn, unsigned off, uint32_t v);
void cfg_writew(SriovTest *s, int devfn, unsigned off, uint16_t v);
int vf_devfn(SriovTest *s, unsigned n);
uint32_t vf_rd(SriovTest *s, unsigned n, uint32_t reg);
void vf_wr(SriovTest *s, unsigned n, uint32_t reg, uint32_t val);
uint32_t vf_pba(SriovTest *s, unsigned n);
void sriov_boot(SriovTest *s, const char *extra);
void sriov_stop(SriovTest *s);
void sriov_enable(SriovTest *s, unsigned num);
void pf_vt_mode(SriovTest *s, uint32_t mode);

#endif
