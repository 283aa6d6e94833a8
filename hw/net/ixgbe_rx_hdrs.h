/*
 * Intel 82599 10 GbE controller: the protocol headers of a received
 * frame, found in its first bytes (ixgbe_rx_hdrs.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_RX_HDRS_H
#define HW_NET_IXGBE_RX_HDRS_H

#include "net/eth.h"

/* What eth_get_protocols() finds in a frame, without copying its headers */
typedef struct IxgbeRxHdrs {
    bool ip4;
    bool ip6;
    bool frag;                  /* an IPv4 fragment: no L4 header parsed */
    EthL4HdrProto l4;
    size_t l3off;
    size_t l4off;               /* valid with ip4 or ip6 */
    const uint8_t *ip;          /* ip4: its header (20 bytes) in the frame */
    const uint8_t *l4h;         /* TCP or UDP: its header in the frame */
} IxgbeRxHdrs;

/*
 * The headers of a frame of len bytes whose first hdr_len bytes are at
 * hdr, as eth_get_protocols() would find them.  False when the frame
 * needs the full parse of net_rx_pkt: IPv6 (its extension headers), or
 * headers past hdr_len; h is then not filled in.
 */
bool ixgbe_rx_hdrs_parse(IxgbeRxHdrs *h, const uint8_t *hdr, size_t hdr_len,
                         size_t len);

/*
 * The RSS hash (Toeplitz, with the 40-byte key) of an IPv4 frame's
 * addresses, and with ports its TCP or UDP ports, as
 * net_rx_pkt_calc_rss_hash() computes it
 */
uint32_t ixgbe_rx_hdrs_rss_ip4(const IxgbeRxHdrs *h, bool ports,
                               uint8_t *key);

#endif
