/*
 * Intel 82599 10 GbE controller: SR-IOV virtualization (ixgbe_sriov.c):
 * the PF<->VF mailbox, VF reset events, the VF register file and its
 * interrupts.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_SRIOV_H
#define HW_NET_IXGBE_SRIOV_H

#include "ixgbe_core.h"

/* PF side */
unsigned ixgbe_sriov_num_vfs(IxgbeCore *core);
unsigned ixgbe_sriov_queues_per_pool(IxgbeCore *core);
bool ixgbe_sriov_queue_cause(IxgbeCore *core, bool is_tx, unsigned queue);
PCIDevice *ixgbe_queue_dma_dev(IxgbeCore *core, unsigned queue);

/* VF side (ixgbevf.c): BAR 0 accesses, resets */
uint32_t ixgbe_vf_read(IxgbeCore *core, unsigned vfn, hwaddr addr);
void ixgbe_vf_write(IxgbeCore *core, unsigned vfn, hwaddr addr, uint32_t val);
void ixgbe_vf_reset(IxgbeCore *core, unsigned vfn);
void ixgbe_vf_flr(IxgbeCore *core, unsigned vfn);

/* SR-IOV as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_sriov_part;

#endif
