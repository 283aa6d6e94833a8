/*
 * Intel 82599 10 GbE controller: the security association tables of the
 * inline IPsec engine (ixgbe_ipsec.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_IPSEC_H
#define HW_NET_IXGBE_IPSEC_H

#include "ixgbe_core.h"

#define IXGBE_IPSEC_SA_COUNT    1024    /* TX SAs, and RX SPI/key entries */
#define IXGBE_IPSEC_RX_IP_COUNT 128     /* RX destination addresses */

typedef struct IxgbeIpsecTxSa {
    uint32_t key[4];            /* IPSTXKEY0..3 as written */
    uint32_t salt;              /* IPSTXSALT */
} IxgbeIpsecTxSa;

typedef struct IxgbeIpsecRxSa {
    uint32_t spi;               /* IPSRXSPI: the SPI table */
    uint32_t ip_idx;            /* IPSRXIPIDX */
    uint32_t key[4];            /* IPSRXKEY0..3: the key table */
    uint32_t salt;              /* IPSRXSALT */
    uint32_t mode;              /* IPSRXMOD */
} IxgbeIpsecRxSa;

typedef struct IxgbeIpsec {
    /* The tables: device state, migrated (ixgbe.c), cleared by reset */
    IxgbeIpsecTxSa tx[IXGBE_IPSEC_SA_COUNT];
    IxgbeIpsecRxSa rx[IXGBE_IPSEC_SA_COUNT];
    uint32_t rx_ip[IXGBE_IPSEC_RX_IP_COUNT][4];     /* IPSRXIPADDR0..3 */
    /* Past this point: working memory of the receive datapath, no state */
    uint8_t *rx_buf;            /* a received frame, decrypted */
    struct iovec rx_iov;        /* rx_buf as the datapath reads it */
} IxgbeIpsec;

/* Advanced transmit data descriptor, POPTS: IPsec offload requested */
#define IXGBE_TXD_POPTS_IPSEC   (1u << 10)

/* Whether a packet's first descriptor asks for inline IPsec */
static inline bool ixgbe_ipsec_tx_wanted(uint32_t cmd, uint32_t olinfo)
{
    return (cmd & IXGBE_TXD_CMD_DEXT) && (olinfo & IXGBE_TXD_POPTS_IPSEC);
}

/*
 * Transmit: the packet of len bytes in buf (room for size), sent with
 * context ctx and first descriptor cmd/olinfo, made an ESP packet as
 * the SA the context names says: the inner checksum, encryption and ICV,
 * then the VLAN tag (*vlan, if not NULL) inserted.  Returns false when
 * the packet must be dropped (logged); *out_len is the length to send.
 */
bool ixgbe_ipsec_tx(IxgbeCore *core, unsigned q, const IxgbeTxContext *ctx,
                    uint32_t cmd, uint32_t olinfo, uint8_t *buf, size_t len,
                    const uint16_t *vlan, size_t size, size_t *out_len);

/*
 * Receive: a frame (its first hdr_len bytes at hdr, all len bytes in
 * *iov) looked up in the receive SA tables; an ESP frame of a known SA
 * is decrypted and authenticated into a buffer of the engine, which
 * *iov and *iovcnt then describe.  Returns the status and error bits of
 * the write-back descriptor, and adds the IPsec bits to *pkt_type.
 */
uint32_t ixgbe_ipsec_rx_frame(IxgbeCore *core, const uint8_t *hdr,
                              size_t hdr_len, const struct iovec **iov,
                              int *iovcnt, size_t len, uint32_t *pkt_type);

/* IPSRXIDX.IPS_RX_EN: receive SA lookup on */
#define IXGBE_IPSRXIDX          0x08E00
#define IXGBE_IPSIDX_EN         (1u << 0)

/* ixgbe_ipsec_rx_frame() when receive SA lookup is on, else nothing */
static inline uint32_t ixgbe_ipsec_rx(IxgbeCore *core, const uint8_t *hdr,
                                      size_t hdr_len,
                                      const struct iovec **iov, int *iovcnt,
                                      size_t len, uint32_t *pkt_type)
{
    if (likely(!(ixgbe_get(core, IXGBE_IPSRXIDX) & IXGBE_IPSIDX_EN))) {
        return 0;
    }
    return ixgbe_ipsec_rx_frame(core, hdr, hdr_len, iov, iovcnt, len,
                                pkt_type);
}

/* True when a table holds anything: the tables then migrate */
bool ixgbe_ipsec_migration_needed(IxgbeCore *core);

/* The SA tables as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_ipsec_part;

#endif
