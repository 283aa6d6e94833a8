/*
 * Intel 82599 10 GbE controller: the IEEE 1588 clock and time stamps
 * (ixgbe_ptp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_PTP_H
#define HW_NET_IXGBE_PTP_H

#include "ixgbe_core.h"

/*
 * Datapath: a frame sent with IXGBE_ADVTXD_MAC_TSTAMP; a frame received,
 * stamped with the clock read when it arrived (ixgbe_ptp_rx_arrival)
 */
void ixgbe_ptp_tx_stamp(IxgbeCore *core);
uint64_t ixgbe_ptp_rx_arrival(IxgbeCore *core);
bool ixgbe_ptp_rx_stamp_frame(IxgbeCore *core, const uint8_t *frame,
                              size_t len, uint64_t arrival);

/*
 * Whether the frame is stamped: only while receive time stamps are on
 * and the last one was read (without a call for every frame otherwise)
 */
static inline bool ixgbe_ptp_rx_stamp(IxgbeCore *core, const uint8_t *frame,
                                      size_t len, uint64_t arrival)
{
    uint32_t ctl = ixgbe_get(core, IXGBE_TSYNCRXCTL);

    if (!(ctl & IXGBE_TSYNCRXCTL_ENABLED) || (ctl & IXGBE_TSYNCRXCTL_VALID)) {
        return false;
    }
    return ixgbe_ptp_rx_stamp_frame(core, frame, len, arrival);
}

/* The IEEE 1588 clock as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_ptp_part;

#endif
