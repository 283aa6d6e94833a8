/*
 * Intel 82599 10 GbE controller: the virtualization datapath (ixgbe_vt.c):
 * receive pools, the internal switch, anti-spoofing, per-pool counters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_VT_H
#define HW_NET_IXGBE_VT_H

#include "ixgbe_core.h"

#define IXGBE_MAX_POOLS     64

/* Where one received or switched frame goes */
typedef struct IxgbeVtDest {
    uint64_t pools;                 /* one bit per pool */
    bool local_unicast;             /* unicast to an address of a pool */
    unsigned n;                     /* targets below, in pool order */
    uint8_t pool[IXGBE_MAX_POOLS];
    uint8_t queue[IXGBE_MAX_POOLS];
} IxgbeVtDest;

typedef enum IxgbeVtTx {
    IXGBE_VT_TX_DROP,               /* pool disabled or spoofed */
    IXGBE_VT_TX_LOCAL,              /* delivered to local pools only */
    IXGBE_VT_TX_WIRE,               /* to the wire (and maybe local pools) */
} IxgbeVtTx;

/* VT_CTL.VT_Ena: receive and transmit go through pools */
static inline bool ixgbe_vt_active(IxgbeCore *core)
{
    return ixgbe_get(core, IXGBE_VT_CTL) & IXGBE_VT_CTL_VT_ENA;
}

/* MRQC modes that hash frames (RSS alone, or RSS within pools) */
static inline bool ixgbe_vt_mrqc_rss(uint32_t mrqc)
{
    uint32_t mrqe = mrqc & IXGBE_MRQC_MRQE_MASK;

    return mrqe == IXGBE_MRQC_RSS || mrqe == IXGBE_MRQC_VMDQ_RSS32 ||
           mrqe == IXGBE_MRQC_VMDQ_RSS64;
}

void ixgbe_vt_classify(IxgbeCore *core, const uint8_t *buf, size_t len,
                       int src_pool, unsigned rss_index, IxgbeVtDest *dest);
void ixgbe_vt_rx_count(IxgbeCore *core, unsigned pool, size_t len,
                       bool multicast);
bool ixgbe_vt_tx_vlan(IxgbeCore *core, unsigned queue, bool vle,
                      uint16_t *tag);
IxgbeVtTx ixgbe_vt_tx(IxgbeCore *core, unsigned queue,
                      const struct iovec *iov, int iovcnt, int *switch_pool);
bool ixgbe_vt_queue_drop(IxgbeCore *core, unsigned queue);

/* The pools as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_vt_part;

#endif
