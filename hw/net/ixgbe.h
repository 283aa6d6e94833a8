/*
 * Intel 82599 10 GbE controller: the PF's PCI device (ixgbe.c), as its
 * virtual functions (ixgbevf.c) reach it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_H
#define HW_NET_IXGBE_H

#include "ixgbe_core.h"

/* The PF's device core, which runs its VFs too */
IxgbeCore *ixgbe_pf_core(PCIDevice *pf);

#endif
