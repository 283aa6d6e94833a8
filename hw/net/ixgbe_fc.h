/*
 * Intel 82599 10 GbE controller: IEEE 802.3 flow control, the MAC control
 * frames it receives and the pause frames it sends (ixgbe_fc.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_FC_H
#define HW_NET_IXGBE_FC_H

#include "qemu/bswap.h"
#include "net/eth.h"
#include "ixgbe_core.h"

#define ETH_P_MAC_CONTROL   0x8808

/*
 * A frame from the wire of len bytes (at least the minimum frame): true
 * if the MAC takes it as a MAC control frame that goes no further
 */
bool ixgbe_fc_rx_control(IxgbeCore *core, const uint8_t *frame, size_t len);

static inline bool ixgbe_fc_rx(IxgbeCore *core, const uint8_t *frame,
                               size_t len)
{
    /* Only MAC control frames; every other frame without a call */
    if (len < ETH_ZLEN || lduw_be_p(frame + 12) != ETH_P_MAC_CONTROL) {
        return false;
    }
    return ixgbe_fc_rx_control(core, frame, len);
}

/*
 * A frame from the wire was held by the backend for want of receive
 * descriptors (held), or taken or dropped (!held): sends XOFF and XON
 */
void ixgbe_fc_rx_held_changed(IxgbeCore *core, bool held);

static inline void ixgbe_fc_rx_held(IxgbeCore *core, bool held)
{
    if (held != core->fc.rx_full) {
        ixgbe_fc_rx_held_changed(core, held);
    }
}

/* Flow control as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_fc_part;

#endif
