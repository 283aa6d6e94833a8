/*
 * Intel 82599 10 GbE controller: register writes a hypervisor may
 * coalesce.
 *
 * Under KVM every access to a BAR is a VM exit, unless the range is
 * registered as coalesced MMIO: then KVM queues a write in a ring shared
 * with QEMU and the vCPU goes on.  QEMU applies the queued writes, in
 * order, before it handles the next access to the BAR that does exit
 * (any read, any write outside the ranges), so the driver never sees
 * its own writes out of order.  What the device does on its own (a frame
 * arriving, a timer) may see a queued write later than it was made.
 *
 * Coalesced here are writes that set nothing off that the driver waits
 * for: the receive queue registers, of which the driver writes the tail
 * (RDT) per burst of buffers and polls RXDCTL when it (re)configures a
 * queue, the interrupt throttle intervals (EITR), which adaptive
 * moderation rewrites, and the Flow Director's FDIRHASH and FDIRCMD, with
 * which the Linux driver adds a signature filter for every 20th TCP
 * segment it sends (it polls FDIRCMD when it must know the outcome).
 * The transmit tail, the interrupt cause and mask registers and
 * everything else stay exact.
 *
 * A frame that finds no receive descriptor may then wait for a tail
 * write still in the queue while the vCPU never exits again (a poll-mode
 * driver that only receives).  So a held frame arms a timer that applies
 * the queue; it backs off from 50 us to 5 ms while the frame still waits
 * and stops when one is taken.
 *
 * x-defer-coalesced=on holds the writes in the device itself, up to 64,
 * applied before any other access to the PF's or a VF's BAR or when the
 * timer fires: the same semantics where KVM does not run, for tests.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "system/kvm.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_core.h"
#include "ixgbe_sriov.h"
#include "ixgbe_coalesce.h"
#include "trace.h"

#define IXGBE_STARVE_MIN_NS     (50 * SCALE_US)
#define IXGBE_STARVE_MAX_NS     (5 * SCALE_MS)

typedef struct IxgbeZone {
    hwaddr base;
    hwaddr size;
} IxgbeZone;

static const IxgbeZone ixgbe_pf_zones[] = {
    { IXGBE_EITR_LO, 24 * 4 },
    { IXGBE_RXQ_LO, 64 * IXGBE_RXQ_STRIDE },
    { IXGBE_RXQ_HI, 64 * IXGBE_RXQ_STRIDE },
    { IXGBE_EITR_HI, (IXGBE_MSIX_VECTORS - 24) * 4 },
    { IXGBE_FDIRHASH, 8 },      /* and FDIRCMD */
};

static const IxgbeZone ixgbe_vf_zones[] = {
    { IXGBE_VTEITR0, IXGBE_VF_MSIX_VECTORS * 4 },
    { IXGBE_VFRXQ_BASE, 8 * IXGBE_RXQ_STRIDE },
};

/* The ranges of a PF's or a VF's BAR: the table, its length in *n */
static const IxgbeZone *ixgbe_zones(bool vf, size_t *n)
{
    *n = vf ? ARRAY_SIZE(ixgbe_vf_zones) : ARRAY_SIZE(ixgbe_pf_zones);
    return vf ? ixgbe_vf_zones : ixgbe_pf_zones;
}

static bool ixgbe_in_zone(bool vf, hwaddr addr)
{
    size_t n;
    const IxgbeZone *z = ixgbe_zones(vf, &n);

    for (size_t i = 0; i < n; i++) {
        if (addr - z[i].base < z[i].size) {
            return true;
        }
    }
    return false;
}

void ixgbe_coalesce_add_zones(MemoryRegion *mr, bool vf)
{
    size_t n;
    const IxgbeZone *z = ixgbe_zones(vf, &n);

    for (size_t i = 0; i < n; i++) {
        memory_region_add_coalescing(mr, z[i].base, z[i].size);
        trace_ixgbe_coalesced_zone(memory_region_name(mr), z[i].base,
                                   z[i].size);
    }
}

static void ixgbe_apply(IxgbeCore *core, int vf, hwaddr addr, uint32_t val)
{
    if (vf < 0) {
        ixgbe_core_write(core, addr, val, 4);
    } else {
        ixgbe_vf_write(core, vf, addr, val);
    }
}

static void ixgbe_apply_held(IxgbeCore *core)
{
    IxgbeCoalesce *c = &core->coalesce;
    uint32_t n = c->n_held;

    if (!n) {
        return;
    }
    trace_ixgbe_held_writes(n);
    c->n_held = 0;
    for (uint32_t i = 0; i < n; i++) {
        ixgbe_apply(core, c->held[i].vf, c->held[i].addr, c->held[i].val);
    }
}

/*
 * Everything queued so far applied, from outside the device (a timer, the
 * VM stopping): KVM's ring first, whose writes reach the BARs through the
 * memory core like any access and so must not find the device's guard
 * taken (they would be refused as re-entrant), then the writes the device
 * holds itself, inside its re-entrancy domain.
 */
void ixgbe_coalesce_flush(IxgbeCore *core)
{
    qemu_flush_coalesced_mmio_buffer();
    if (ixgbe_core_enter(core, "held register writes", -1, 0)) {
        ixgbe_apply_held(core);
        ixgbe_core_leave(core);
    }
}

uint32_t ixgbe_bar_read(IxgbeCore *core, int vf, hwaddr addr)
{
    ixgbe_apply_held(core);
    return vf < 0 ? ixgbe_core_read(core, addr, 4)
                  : ixgbe_vf_read(core, vf, addr);
}

/* coalescible: a write through the memory BAR, not the I/O window */
void ixgbe_bar_write(IxgbeCore *core, int vf, hwaddr addr, uint32_t val,
                     bool coalescible)
{
    IxgbeCoalesce *c = &core->coalesce;

    if (c->defer && coalescible && ixgbe_in_zone(vf >= 0, addr)) {
        if (c->n_held == IXGBE_HELD_WRITES_MAX) {
            ixgbe_apply_held(core);
        }
        c->held[c->n_held++] = (IxgbeHeldWrite) {
            .vf = vf, .addr = addr, .val = val,
        };
        return;
    }
    ixgbe_apply_held(core);
    ixgbe_apply(core, vf, addr, val);
}

/*
 * The receive path offered a frame: waiting, it found no descriptor and
 * the backend keeps it until a tail write says there are more.
 */
void ixgbe_coalesce_rx_wait(IxgbeCore *core, bool waiting)
{
    IxgbeCoalesce *c = &core->coalesce;

    if (!waiting) {
        if (c->rx_waiting) {
            c->rx_waiting = false;
            c->starve_ns = IXGBE_STARVE_MIN_NS;
        }
        return;
    }
    c->rx_waiting = true;
    if ((c->defer || kvm_enabled()) && !timer_pending(c->starve_timer)) {
        timer_mod(c->starve_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + c->starve_ns);
    }
}

static void ixgbe_coalesce_starved(void *opaque)
{
    IxgbeCore *core = opaque;
    IxgbeCoalesce *c = &core->coalesce;

    trace_ixgbe_rx_starved(c->starve_ns);
    /* A tail write among them takes the frame or holds it anew */
    ixgbe_coalesce_flush(core);
    if (c->rx_waiting && !timer_pending(c->starve_timer)) {
        c->starve_ns = MIN(c->starve_ns * 2, IXGBE_STARVE_MAX_NS);
        timer_mod(c->starve_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + c->starve_ns);
    }
}

static void ixgbe_coalesce_realize(IxgbeCore *core)
{
    core->coalesce.starve_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                               ixgbe_coalesce_starved, core);
    core->coalesce.starve_ns = IXGBE_STARVE_MIN_NS;
}

static void ixgbe_coalesce_unrealize(IxgbeCore *core)
{
    timer_free(core->coalesce.starve_timer);
    core->coalesce.starve_timer = NULL;
}

/* A reset forgets what was queued and what waited */
static void ixgbe_coalesce_reset(IxgbeCore *core)
{
    IxgbeCoalesce *c = &core->coalesce;

    c->n_held = 0;
    c->rx_waiting = false;
    c->starve_ns = IXGBE_STARVE_MIN_NS;
    timer_del(c->starve_timer);
}

const IxgbePart ixgbe_coalesce_part = {
    .vm_stop = ixgbe_coalesce_flush,
    .realize = ixgbe_coalesce_realize,
    .unrealize = ixgbe_coalesce_unrealize,
    .reset = ixgbe_coalesce_reset,
};
