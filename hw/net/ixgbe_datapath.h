/*
 * Intel 82599 10 GbE controller: the datapath (ixgbe_datapath.c):
 * transmit and receive rings, descriptor write-back, the receive
 * classification (filters, RSS, Flow Director, pools).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_DATAPATH_H
#define HW_NET_IXGBE_DATAPATH_H

#include "ixgbe_core.h"
#include "ixgbe_rsc.h"

void ixgbe_tx_kick(IxgbeCore *core, unsigned queue);
void ixgbe_tx_flush_writeback(IxgbeCore *core, unsigned queue);
void ixgbe_rx_flush_writeback(IxgbeCore *core, unsigned queue);
void ixgbe_rx_queue_sync(IxgbeCore *core, unsigned queue);
void ixgbe_rx_flush_all(IxgbeCore *core, bool drop_cache);
void ixgbe_rx_prefetch(IxgbeCore *core, unsigned queue);
bool ixgbe_rx_can_receive(IxgbeCore *core);
/* Frames the backend holds are offered again, if there is room */
void ixgbe_rx_kick(IxgbeCore *core);
/* For receive side coalescing (ixgbe_rsc.c) */
IxgbeRscResult ixgbe_rx_take(IxgbeCore *core, unsigned queue, unsigned need,
                             uint32_t *idx, uint64_t *desc, uint64_t *buf);
void ixgbe_rx_queue_cause(IxgbeCore *core, unsigned queue);
ssize_t ixgbe_rx_receive(IxgbeCore *core, const struct iovec *iov,
                         int iovcnt, bool loopback);

/* The datapath as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_datapath_part;

#endif
