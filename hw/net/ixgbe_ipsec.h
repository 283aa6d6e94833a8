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
    IxgbeIpsecTxSa tx[IXGBE_IPSEC_SA_COUNT];
    IxgbeIpsecRxSa rx[IXGBE_IPSEC_SA_COUNT];
    uint32_t rx_ip[IXGBE_IPSEC_RX_IP_COUNT][4];     /* IPSRXIPADDR0..3 */
} IxgbeIpsec;

/* True when a table holds anything: the tables then migrate */
bool ixgbe_ipsec_migration_needed(IxgbeCore *core);

/* The SA tables as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_ipsec_part;

#endif
