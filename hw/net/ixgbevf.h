/*
 * Intel 82599 10 GbE controller: the virtual function's PCI device
 * (ixgbevf.c), as the PF (ixgbe.c) creates and migrates it.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBEVF_H
#define HW_NET_IXGBEVF_H

#include "migration/vmstate.h"

#define TYPE_IXGBEVF "ixgbevf"

/* A VF's PCI state, migrated by the PF */
extern const VMStateDescription vmstate_ixgbevf_pci;

#endif
