/*
 * Intel 82599 10 GbE controller: EtherType, SYN and 5-tuple queue filters
 * (ixgbe_ntuple.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_NTUPLE_H
#define HW_NET_IXGBE_NTUPLE_H

#include "ixgbe_core.h"

/*
 * Receive, outside virtualization: the queue an EtherType, SYN or 5-tuple
 * filter gives the frame (its first len bytes), in the 82599's order;
 * false when none of them steers it (the Flow Director and RSS decide).
 */
bool ixgbe_ntuple_lookup(IxgbeCore *core, const uint8_t *frame,
                         size_t len, unsigned *queue);

/* The same, without a call for every frame while every filter is off */
static inline bool ixgbe_ntuple_classify(IxgbeCore *core,
                                         const uint8_t *frame, size_t len,
                                         unsigned *queue)
{
    if (!core->qfilters.etqs_on && !core->qfilters.ftqf_on[0] &&
        !core->qfilters.ftqf_on[1] &&
        !(ixgbe_get(core, IXGBE_SYNQF) & IXGBE_SYNQF_EN)) {
        return false;
    }
    return ixgbe_ntuple_lookup(core, frame, len, queue);
}

/* The filters as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_ntuple_part;

#endif
