/*
 * Intel 82599 10 GbE controller: register writes a hypervisor may
 * coalesce (ixgbe_coalesce.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_COALESCE_H
#define HW_NET_IXGBE_COALESCE_H

#include "exec/memory.h"
#include "qemu/timer.h"

typedef struct IxgbeCore IxgbeCore;
typedef struct IxgbePart IxgbePart;

/* A write to a coalesced register, held as KVM holds it */
typedef struct IxgbeHeldWrite {
    int32_t vf;                 /* the VF whose BAR it went to, -1: PF */
    uint32_t addr;
    uint32_t val;
} IxgbeHeldWrite;

/* Writes held before they are applied anyway (KVM's ring is larger) */
#define IXGBE_HELD_WRITES_MAX   64

typedef struct IxgbeCoalesce {
    bool defer;                 /* x-defer-coalesced: hold them here */
    uint32_t n_held;
    IxgbeHeldWrite held[IXGBE_HELD_WRITES_MAX];
    QEMUTimer *starve_timer;    /* a frame waits for receive descriptors */
    int64_t starve_ns;          /* the timer's next interval */
    bool rx_waiting;            /* the last frame offered was held */
} IxgbeCoalesce;

void ixgbe_coalesce_add_zones(MemoryRegion *mr, bool vf);
uint32_t ixgbe_bar_read(IxgbeCore *core, int vf, hwaddr addr);
void ixgbe_bar_write(IxgbeCore *core, int vf, hwaddr addr, uint32_t val,
                     bool coalescible);
void ixgbe_coalesce_flush(IxgbeCore *core);
void ixgbe_coalesce_rx_wait(IxgbeCore *core, bool waiting);

/* Held register writes as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_coalesce_part;

#endif
