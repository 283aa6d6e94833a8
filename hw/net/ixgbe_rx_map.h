/*
 * Intel 82599 10 GbE controller: guest RAM mapped for the receive path
 * (ixgbe_rx_map.c): the rings' write-backs and the frames' buffers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_RX_MAP_H
#define HW_NET_IXGBE_RX_MAP_H

#include "ixgbe_core.h"

void ixgbe_rx_map_init(IxgbeCore *core);
void ixgbe_rx_map_uninit(IxgbeCore *core);

/*
 * Queue q's ring of n descriptors at base, mapped for its write-backs;
 * NULL when the ring must be written by DMA.  Only for a queue whose DMA
 * is the PF's own.
 */
MemoryRegionCache *ixgbe_rx_map_ring(IxgbeCore *core, unsigned q,
                                     uint64_t base, uint32_t n);

/*
 * len bytes of a frame to guest address addr through a mapping of the
 * RAM they fall in.  False when there is no such mapping (the bytes are
 * not all in RAM the PF reaches directly): nothing was written, the
 * caller writes them by DMA.  Only for a queue whose DMA is the PF's own.
 */
bool ixgbe_rx_map_write(IxgbeCore *core, uint64_t addr, const void *buf,
                        size_t len);

#endif
