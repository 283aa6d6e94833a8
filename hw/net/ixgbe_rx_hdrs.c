/*
 * Intel 82599 10 GbE controller: the protocol headers of a received
 * frame, found in its first bytes.
 *
 * The receive path classifies every frame (packet type, checksums, RSS)
 * and most frames have their headers in the first bytes it already
 * holds: this finds them there, as eth_get_protocols() would, without
 * net_rx_pkt's copies.  IPv6, with its extension headers, keeps the full
 * parse.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "ixgbe_rx_hdrs.h"

/* Where n bytes at off lie: in the first bytes, past the frame, or between */
typedef enum IxgbeRxSpan {
    IXGBE_RX_SPAN_HDR,
    IXGBE_RX_SPAN_NONE,
    IXGBE_RX_SPAN_BEYOND,
} IxgbeRxSpan;

static IxgbeRxSpan ixgbe_rx_span(size_t off, size_t n, size_t hdr_len,
                                 size_t len)
{
    if (off + n <= hdr_len) {
        return IXGBE_RX_SPAN_HDR;
    }
    return off + n > len ? IXGBE_RX_SPAN_NONE : IXGBE_RX_SPAN_BEYOND;
}

bool ixgbe_rx_hdrs_parse(IxgbeRxHdrs *h, const uint8_t *hdr, size_t hdr_len,
                         size_t len)
{
    size_t l4len;
    IxgbeRxSpan span;
    uint16_t proto;

    if (hdr_len < ETH_MAX_L2_HDR_LEN) {
        return false;
    }
    memset(h, 0, sizeof(*h));
    h->l4 = ETH_L4_HDR_PROTO_INVALID;
    /* eth_get_l2_hdr_length(): one tag, or an 802.1ad tag and an 802.1Q one */
    switch (lduw_be_p(hdr + 12)) {
    case ETH_P_VLAN:
        h->l3off = sizeof(struct eth_header) + sizeof(struct vlan_header);
        break;
    case ETH_P_DVLAN:
        h->l3off = sizeof(struct eth_header) + sizeof(struct vlan_header);
        if (lduw_be_p(hdr + 16) == ETH_P_VLAN) {
            h->l3off += sizeof(struct vlan_header);
        }
        break;
    default:
        h->l3off = sizeof(struct eth_header);
        break;
    }
    proto = lduw_be_p(hdr + h->l3off - 2);
    if (proto == ETH_P_IPV6) {
        return false;
    }
    if (proto != ETH_P_IP) {
        return true;
    }
    span = ixgbe_rx_span(h->l3off, sizeof(struct ip_header), hdr_len, len);
    if (span != IXGBE_RX_SPAN_HDR) {
        return span == IXGBE_RX_SPAN_NONE;
    }
    h->ip = hdr + h->l3off;
    if ((h->ip[0] >> 4) != IP_HEADER_VERSION_4) {
        h->ip = NULL;
        return true;
    }
    h->ip4 = true;
    h->l4off = h->l3off + ((h->ip[0] & 0x0F) << 2);
    h->frag = (lduw_be_p(h->ip + 6) & (IP_OFFMASK | IP_MF)) != 0;
    if (h->frag) {
        return true;
    }
    switch (h->ip[9]) {
    case IP_PROTO_TCP:
        l4len = sizeof(struct tcp_header);
        break;
    case IP_PROTO_UDP:
        l4len = sizeof(struct udp_header);
        break;
    case IP_PROTO_SCTP:
        h->l4 = ETH_L4_HDR_PROTO_SCTP;
        return true;
    default:
        return true;
    }
    span = ixgbe_rx_span(h->l4off, l4len, hdr_len, len);
    if (span == IXGBE_RX_SPAN_BEYOND) {
        return false;
    }
    if (span == IXGBE_RX_SPAN_HDR) {
        h->l4 = h->ip[9] == IP_PROTO_TCP ? ETH_L4_HDR_PROTO_TCP
                                         : ETH_L4_HDR_PROTO_UDP;
        h->l4h = hdr + h->l4off;
    }
    return true;
}

uint32_t ixgbe_rx_hdrs_rss_ip4(const IxgbeRxHdrs *h, bool ports,
                               uint8_t *key)
{
    uint8_t input[12];
    net_toeplitz_key k;
    uint32_t hash = 0;

    /* source and destination address, then source and destination port */
    memcpy(input, h->ip + 12, 8);
    if (ports) {
        memcpy(input + 8, h->l4h, 4);
    }
    net_toeplitz_key_init(&k, key);
    net_toeplitz_add(&hash, input, ports ? 12 : 8, &k);
    return hash;
}
