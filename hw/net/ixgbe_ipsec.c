/*
 * Intel 82599 10 GbE controller: the security association tables of the
 * inline IPsec engine (datasheet 7.12, registers 8.2.3.x IPsec).
 *
 * Software reaches the tables through staging registers and an index
 * register per direction, as the datasheet describes:
 *
 *  - transmit: IPSTXKEY0..3 and IPSTXSALT stage one SA; a write of
 *    IPSTXIDX with WRITE (bit 31) stores them into the SA at SA_IDX
 *    (bits 12:3), with READ (bit 30) loads that SA back into them.
 *    IPS_TX_EN (bit 0) turns SA lookup on.
 *  - receive: IPSRXIDX selects a table in bits 2:1 (1: IP addresses,
 *    128 entries of IPSRXIPADDR0..3; 2: SPIs, IPSRXSPI and IPSRXIPIDX;
 *    3: keys, IPSRXKEY0..3, IPSRXSALT, IPSRXMOD) and an entry in bits
 *    12:3, with WRITE and READ as for transmit and IPS_RX_EN in bit 0.
 *
 * WRITE and READ clear themselves.  The registers keep the values as
 * written (the driver stores keys and salts byte-swapped, SPIs and
 * addresses in network order read as little endian words); the
 * datapath, not the tables, decides what they mean.
 *
 * Bad programming is reported (LOG_GUEST_ERROR) and ignored: an IP table
 * entry beyond 127, the reserved table 0, READ and WRITE together.
 *
 * The engine itself is not offered: SECTXSTAT and SECRXSTAT report the
 * IPsec offload fused off (ixgbe_core.c), so a driver never programs an
 * SA for its packets, and the datapath neither encrypts nor decrypts.
 * The tables are kept for the driver, reset with the device, and
 * migrated while any entry is set.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_ipsec.h"
#include "trace.h"

#define IXGBE_IPSTXIDX          0x08900
#define IXGBE_IPSTXSALT         0x08904
#define IXGBE_IPSTXKEY(i)       (0x08908 + (i) * 4)
#define IXGBE_IPSRXIDX          0x08E00
#define IXGBE_IPSRXIPADDR(i)    (0x08E04 + (i) * 4)
#define IXGBE_IPSRXSPI          0x08E14
#define IXGBE_IPSRXIPIDX        0x08E18
#define IXGBE_IPSRXKEY(i)       (0x08E1C + (i) * 4)
#define IXGBE_IPSRXSALT         0x08E2C
#define IXGBE_IPSRXMOD          0x08E30

#define IXGBE_IPSIDX_EN         (1u << 0)
#define IXGBE_IPSRXIDX_TBL_SHIFT 1
#define IXGBE_IPSRXIDX_TBL_MASK (3u << IXGBE_IPSRXIDX_TBL_SHIFT)
#define IXGBE_IPSIDX_IDX_SHIFT  3
#define IXGBE_IPSIDX_IDX_MASK   (0x3FFu << IXGBE_IPSIDX_IDX_SHIFT)
#define IXGBE_IPSIDX_READ       (1u << 30)
#define IXGBE_IPSIDX_WRITE      (1u << 31)

enum {
    IXGBE_IPSRX_TBL_IP = 1,
    IXGBE_IPSRX_TBL_SPI = 2,
    IXGBE_IPSRX_TBL_KEY = 3,
};

/* IPSRXMOD: VALID, PROTO (ESP), DECRYPT, IPV6 */
#define IXGBE_IPSRXMOD_MASK     0x0000001Du
#define IXGBE_IPSRXIPIDX_MASK   0x0000007Fu

static unsigned ixgbe_ipsec_idx(uint32_t val)
{
    return (val & IXGBE_IPSIDX_IDX_MASK) >> IXGBE_IPSIDX_IDX_SHIFT;
}

/* The operation asked for: 1 write, -1 read, 0 none (or both: refused) */
static int ixgbe_ipsec_op(uint32_t val, const char *reg)
{
    bool rd = val & IXGBE_IPSIDX_READ, wr = val & IXGBE_IPSIDX_WRITE;

    if (rd && wr) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: %s 0x%08" PRIx32
                      " asks for READ and WRITE at once; ignored\n",
                      reg, val);
        return 0;
    }
    return wr ? 1 : rd ? -1 : 0;
}

static void ixgbe_ipsec_copy(IxgbeCore *core, uint32_t *entry, hwaddr reg,
                             unsigned n, bool to_table)
{
    for (unsigned i = 0; i < n; i++) {
        if (to_table) {
            entry[i] = ixgbe_get(core, reg + i * 4);
        } else {
            *ixgbe_reg(core, reg + i * 4) = entry[i];
        }
    }
}

static void ixgbe_write_ipstxidx(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    int op = ixgbe_ipsec_op(val, "IPSTXIDX");
    unsigned idx = ixgbe_ipsec_idx(val);
    IxgbeIpsecTxSa *sa = &core->ipsec->tx[idx];

    *ixgbe_reg(core, addr) = val & ~(IXGBE_IPSIDX_READ | IXGBE_IPSIDX_WRITE);
    if (!op) {
        return;
    }
    ixgbe_ipsec_copy(core, sa->key, IXGBE_IPSTXKEY(0), 4, op > 0);
    ixgbe_ipsec_copy(core, &sa->salt, IXGBE_IPSTXSALT, 1, op > 0);
    trace_ixgbe_ipsec_tx_sa(op > 0 ? "write" : "read", idx, sa->salt);
}

static void ixgbe_write_ipsrxidx(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    int op = ixgbe_ipsec_op(val, "IPSRXIDX");
    unsigned idx = ixgbe_ipsec_idx(val);
    unsigned tbl = (val & IXGBE_IPSRXIDX_TBL_MASK) >> IXGBE_IPSRXIDX_TBL_SHIFT;
    IxgbeIpsec *ips = core->ipsec;
    IxgbeIpsecRxSa *sa = &ips->rx[idx];
    bool store = op > 0;

    *ixgbe_reg(core, addr) = val & ~(IXGBE_IPSIDX_READ | IXGBE_IPSIDX_WRITE);
    if (!op) {
        return;
    }
    switch (tbl) {
    case IXGBE_IPSRX_TBL_IP:
        if (idx >= IXGBE_IPSEC_RX_IP_COUNT) {
            qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: IPSRXIDX 0x%08" PRIx32
                          ": IP table entry %u out of range (%u entries);"
                          " ignored\n", val, idx, IXGBE_IPSEC_RX_IP_COUNT);
            return;
        }
        ixgbe_ipsec_copy(core, ips->rx_ip[idx], IXGBE_IPSRXIPADDR(0), 4,
                         store);
        trace_ixgbe_ipsec_rx_ip(store ? "write" : "read", idx,
                                ips->rx_ip[idx][0], ips->rx_ip[idx][1],
                                ips->rx_ip[idx][2], ips->rx_ip[idx][3]);
        break;
    case IXGBE_IPSRX_TBL_SPI:
        ixgbe_ipsec_copy(core, &sa->spi, IXGBE_IPSRXSPI, 1, store);
        ixgbe_ipsec_copy(core, &sa->ip_idx, IXGBE_IPSRXIPIDX, 1, store);
        trace_ixgbe_ipsec_rx_spi(store ? "write" : "read", idx, sa->spi,
                                 sa->ip_idx);
        break;
    case IXGBE_IPSRX_TBL_KEY:
        ixgbe_ipsec_copy(core, sa->key, IXGBE_IPSRXKEY(0), 4, store);
        ixgbe_ipsec_copy(core, &sa->salt, IXGBE_IPSRXSALT, 1, store);
        ixgbe_ipsec_copy(core, &sa->mode, IXGBE_IPSRXMOD, 1, store);
        trace_ixgbe_ipsec_rx_key(store ? "write" : "read", idx, sa->salt,
                                 sa->mode);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: IPSRXIDX 0x%08" PRIx32
                      ": reserved table 0; ignored\n", val);
        break;
    }
}

bool ixgbe_ipsec_migration_needed(IxgbeCore *core)
{
    return !buffer_is_zero(core->ipsec, sizeof(*core->ipsec));
}

static void ixgbe_ipsec_realize(IxgbeCore *core)
{
    core->ipsec = g_new0(IxgbeIpsec, 1);
}

static void ixgbe_ipsec_unrealize(IxgbeCore *core)
{
    g_clear_pointer(&core->ipsec, g_free);
}

static void ixgbe_ipsec_reset(IxgbeCore *core)
{
    memset(core->ipsec, 0, sizeof(*core->ipsec));
}

static const IxgbeRegDesc ixgbe_ipsec_regs[] = {
    REG("IPSTXIDX", IXGBE_IPSTXIDX, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_ipstxidx),
    PLAIN("IPSTXSALT", IXGBE_IPSTXSALT, 1, 4, 0, ALL),
    PLAIN("IPSTXKEY", IXGBE_IPSTXKEY(0), 4, 4, 0, ALL),
    REG("IPSRXIDX", IXGBE_IPSRXIDX, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_ipsrxidx),
    PLAIN("IPSRXIPADDR", IXGBE_IPSRXIPADDR(0), 4, 4, 0, ALL),
    PLAIN("IPSRXSPI", IXGBE_IPSRXSPI, 1, 4, 0, ALL),
    PLAIN("IPSRXIPIDX", IXGBE_IPSRXIPIDX, 1, 4, 0, IXGBE_IPSRXIPIDX_MASK),
    PLAIN("IPSRXKEY", IXGBE_IPSRXKEY(0), 4, 4, 0, ALL),
    PLAIN("IPSRXSALT", IXGBE_IPSRXSALT, 1, 4, 0, ALL),
    PLAIN("IPSRXMOD", IXGBE_IPSRXMOD, 1, 4, 0, IXGBE_IPSRXMOD_MASK),
};

const IxgbePart ixgbe_ipsec_part = {
    .regs = ixgbe_ipsec_regs,
    .nregs = ARRAY_SIZE(ixgbe_ipsec_regs),
    .realize = ixgbe_ipsec_realize,
    .unrealize = ixgbe_ipsec_unrealize,
    .reset = ixgbe_ipsec_reset,
};
