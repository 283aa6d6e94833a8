/*
 * Intel 82599 10 GbE controller: the IEEE 1588 clock (SYSTIM) and its
 * transmit and receive time stamps.
 *
 * SYSTIM is a 64-bit counter that the hardware advances by TIMINCA.IV
 * every TIMINCA.IP periods of its 6.4 ns reference (at 10 Gb/s, the only
 * speed this device links at). It is kept here as the value it had at a
 * point of QEMU_CLOCK_VIRTUAL and computed on each read, so it runs while
 * the guest runs, stops with the VM and continues after a migration (the
 * virtual clock migrates). A change of TIMINCA or a write of SYSTIM starts
 * a new segment at the current value.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/timer.h"
#include "qemu/host-utils.h"
#include "net/net.h"
#include "net/eth.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_core.h"
#include "ixgbe_ptp.h"
#include "trace.h"

/* 6.4 ns reference periods in ns of virtual time: 5 periods per 32 ns */
#define IXGBE_PTP_PERIODS_NUM   5
#define IXGBE_PTP_PERIODS_DEN   32

static uint64_t ixgbe_ptp_now(IxgbeCore *core)
{
    uint32_t timinca = ixgbe_get(core, IXGBE_TIMINCA);
    uint32_t ip = timinca >> IXGBE_TIMINCA_IP_SHIFT;
    uint64_t iv = timinca & IXGBE_TIMINCA_IV_MASK;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    uint64_t elapsed, periods;

    /* base_ns may come from a migration stream: no signed overflow */
    if (!ip || !iv || now <= core->ptp.base_ns) {
        return core->ptp.base;
    }
    elapsed = (uint64_t)now - (uint64_t)core->ptp.base_ns;
    periods = muldiv64(elapsed, IXGBE_PTP_PERIODS_NUM,
                       IXGBE_PTP_PERIODS_DEN) / ip;
    return core->ptp.base + periods * iv;
}

/* Start a new segment at value */
static void ixgbe_ptp_set(IxgbeCore *core, uint64_t value)
{
    core->ptp.base = value;
    core->ptp.base_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    trace_ixgbe_ptp_set(value, ixgbe_get(core, IXGBE_TIMINCA));
}

static void ixgbe_ptp_reset(IxgbeCore *core)
{
    ixgbe_ptp_set(core, 0);
    core->ptp.systimh_latch = 0;
}

/* Reading SYSTIML latches SYSTIMH for the read that follows */
static uint32_t ixgbe_ptp_read_systiml(IxgbeCore *core, hwaddr addr)
{
    uint64_t now = ixgbe_ptp_now(core);

    core->ptp.systimh_latch = now >> 32;
    return (uint32_t)now;
}

static uint32_t ixgbe_ptp_read_systimh(IxgbeCore *core, hwaddr addr)
{
    return core->ptp.systimh_latch;
}

static void ixgbe_ptp_write_systim(IxgbeCore *core, hwaddr addr, uint32_t val,
                                   uint32_t old)
{
    uint64_t now = ixgbe_ptp_now(core);

    if (addr == IXGBE_SYSTIML) {
        now = deposit64(now, 0, 32, val);
    } else {
        now = deposit64(now, 32, 32, val);
    }
    ixgbe_ptp_set(core, now);
}

/* A new increment applies from now on: SYSTIM keeps its current value */
static void ixgbe_ptp_write_timinca(IxgbeCore *core, hwaddr addr, uint32_t val,
                                    uint32_t old)
{
    uint64_t now = ixgbe_ptp_now(core);    /* at the old increment */

    *ixgbe_reg(core, addr) = val;
    ixgbe_ptp_set(core, now);
}

/* Writing TIMADJH adds (or, with its sign bit, subtracts) TIMADJH:TIMADJL */
static void ixgbe_ptp_write_timadjh(IxgbeCore *core, hwaddr addr, uint32_t val,
                                    uint32_t old)
{
    uint64_t adj = ((uint64_t)(val & ~IXGBE_TIMADJH_SIGN) << 32) |
                   ixgbe_get(core, IXGBE_TIMADJL);
    uint64_t now = ixgbe_ptp_now(core);

    ixgbe_ptp_set(core, val & IXGBE_TIMADJH_SIGN ? now - adj : now + adj);
}

/* Reading TXSTMPH releases the transmit time stamp registers */
static uint32_t ixgbe_ptp_read_txstmph(IxgbeCore *core, hwaddr addr)
{
    *ixgbe_reg(core, IXGBE_TSYNCTXCTL) &= ~IXGBE_TSYNCTXCTL_VALID;
    return ixgbe_get(core, addr);
}

/* Reading RXSTMPH releases the receive time stamp registers */
static uint32_t ixgbe_ptp_read_rxstmph(IxgbeCore *core, hwaddr addr)
{
    *ixgbe_reg(core, IXGBE_TSYNCRXCTL) &= ~IXGBE_TSYNCRXCTL_VALID;
    return ixgbe_get(core, addr);
}

void ixgbe_ptp_tx_stamp(IxgbeCore *core)
{
    uint32_t *ctl = ixgbe_reg(core, IXGBE_TSYNCTXCTL);
    uint64_t now;

    if (!(*ctl & IXGBE_TSYNCTXCTL_ENABLED) || (*ctl & IXGBE_TSYNCTXCTL_VALID)) {
        return;
    }
    now = ixgbe_ptp_now(core);
    *ixgbe_reg(core, IXGBE_TXSTMPL) = (uint32_t)now;
    *ixgbe_reg(core, IXGBE_TXSTMPH) = now >> 32;
    *ctl |= IXGBE_TSYNCTXCTL_VALID;
    trace_ixgbe_ptp_tx_stamp(now);
}

/*
 * The PTP message of a frame, if it carries one the receive filter takes:
 * L2 (the EtherType of an ETQF filter with its 1588 bit) or UDP to the
 * event port 319 over IPv4. Returns the offset of the PTP header, or -1.
 */
static int ixgbe_ptp_message(IxgbeCore *core, const uint8_t *frame,
                             size_t len, bool *is_l2)
{
    uint16_t type;
    size_t off = ETH_HLEN;
    unsigned ihl;

    if (len < ETH_HLEN + 2) {
        return -1;
    }
    type = lduw_be_p(frame + 12);
    if (type == ETH_P_VLAN && len >= ETH_HLEN + 4 + 2) {
        type = lduw_be_p(frame + 16);
        off += 4;
    }
    for (unsigned i = 0; i < IXGBE_ETQF_COUNT; i++) {
        uint32_t etqf = ixgbe_get(core, IXGBE_ETQF(i));

        if ((etqf & IXGBE_ETQF_FILTER_EN) && (etqf & IXGBE_ETQF_1588) &&
            (etqf & 0xFFFF) == type) {
            *is_l2 = true;
            return off + 34 <= len ? off : -1;
        }
    }
    if (type != ETH_P_IP || len < off + 20) {
        return -1;
    }
    ihl = (frame[off] & 0xF) * 4;
    if (frame[off + 9] != IP_PROTO_UDP || ihl < 20 ||
        len < off + ihl + 8 + 34 ||
        lduw_be_p(frame + off + ihl + 2) != IXGBE_PTP_EVENT_PORT) {
        return -1;
    }
    *is_l2 = false;
    return off + ihl + 8;
}

/*
 * SYSTIM as a frame arrives, read before the model parses and classifies
 * it, so that the stamp is as close as it can be to the transmit stamp of
 * a peer that handed the frame over directly; 0 while no receive time
 * stamp can be taken.
 */
uint64_t ixgbe_ptp_rx_arrival(IxgbeCore *core)
{
    uint32_t ctl = ixgbe_get(core, IXGBE_TSYNCRXCTL);

    if (!(ctl & IXGBE_TSYNCRXCTL_ENABLED) || (ctl & IXGBE_TSYNCRXCTL_VALID)) {
        return 0;
    }
    return ixgbe_ptp_now(core);
}

bool ixgbe_ptp_rx_stamp_frame(IxgbeCore *core, const uint8_t *frame,
                              size_t len, uint64_t arrival)
{
    uint32_t *ctl = ixgbe_reg(core, IXGBE_TSYNCRXCTL);
    uint32_t type = *ctl & IXGBE_TSYNCRXCTL_TYPE_MASK;
    uint8_t want = ixgbe_get(core, IXGBE_RXMTRL) & 0xFF;
    bool is_l2 = false;
    const uint8_t *msg;
    uint8_t msgtype;
    int off;

    if (!(*ctl & IXGBE_TSYNCRXCTL_ENABLED) || (*ctl & IXGBE_TSYNCRXCTL_VALID)) {
        return false;
    }
    off = ixgbe_ptp_message(core, frame, len, &is_l2);
    if (off < 0) {
        return false;
    }
    msg = frame + off;
    msgtype = msg[0] & 0xF;
    switch (type) {
    case IXGBE_TSYNCRXCTL_TYPE_L2_V2:
        if (!is_l2 || msgtype != want) {
            return false;
        }
        break;
    case IXGBE_TSYNCRXCTL_TYPE_L4_V1:
        /* PTP v1: the control field at offset 32 is the message type */
        if (is_l2 || (msg[1] & 0xF) != 1 || msg[32] != want) {
            return false;
        }
        break;
    case IXGBE_TSYNCRXCTL_TYPE_L2_L4_V2:
        if ((msg[1] & 0xF) != 2 || msgtype != want) {
            return false;
        }
        break;
    case IXGBE_TSYNCRXCTL_TYPE_EVENT_V2:
        /* Sync, Delay_Req, Pdelay_Req, Pdelay_Resp */
        if ((msg[1] & 0xF) != 2 || msgtype > 3) {
            return false;
        }
        break;
    case IXGBE_TSYNCRXCTL_TYPE_ALL:
        break;
    default:
        return false;
    }
    *ixgbe_reg(core, IXGBE_RXSTMPL) = (uint32_t)arrival;
    *ixgbe_reg(core, IXGBE_RXSTMPH) = arrival >> 32;
    /*
     * Bytes 22-27 of the message (PTP v1's source UUID, the end of v2's
     * clock identity) and its sequence ID (bytes 30-31)
     */
    *ixgbe_reg(core, IXGBE_RXSATRL) = ldl_be_p(msg + 22);
    *ixgbe_reg(core, IXGBE_RXSATRH) = lduw_be_p(msg + 26) |
                                      (uint32_t)lduw_be_p(msg + 30) << 16;
    *ctl |= IXGBE_TSYNCRXCTL_VALID;
    trace_ixgbe_ptp_rx_stamp(arrival, is_l2);
    return true;
}

/* The registers of the IEEE 1588 clock */
static const IxgbeRegDesc ixgbe_ptp_regs[] = {
    PLAIN("RXMTRL", IXGBE_RXMTRL, 1, 4, 0, ALL),
    PLAIN("ETQF", IXGBE_ETQF0, IXGBE_ETQF_COUNT, 4, 0, ALL),
    REG("TSYNCRXCTL", IXGBE_TSYNCRXCTL, 1, 4, 0,
        IXGBE_TSYNCRXCTL_TYPE_MASK | IXGBE_TSYNCRXCTL_ENABLED, IXGBE_RF_HW,
        NULL, NULL),
    REG("RXSTMPL", IXGBE_RXSTMPL, 1, 4, 0, 0, IXGBE_RF_HW, NULL, NULL),
    REG("RXSTMPH", IXGBE_RXSTMPH, 1, 4, 0, 0, IXGBE_RF_HW,
        ixgbe_ptp_read_rxstmph, NULL),
    REG("RXSATRL", IXGBE_RXSATRL, 1, 4, 0, 0, IXGBE_RF_HW, NULL, NULL),
    REG("RXSATRH", IXGBE_RXSATRH, 1, 4, 0, 0, IXGBE_RF_HW, NULL, NULL),
    REG("TSYNCTXCTL", IXGBE_TSYNCTXCTL, 1, 4, 0, IXGBE_TSYNCTXCTL_ENABLED,
        IXGBE_RF_HW, NULL, NULL),
    REG("TXSTMPL", IXGBE_TXSTMPL, 1, 4, 0, 0, IXGBE_RF_HW, NULL, NULL),
    REG("TXSTMPH", IXGBE_TXSTMPH, 1, 4, 0, 0, IXGBE_RF_HW,
        ixgbe_ptp_read_txstmph, NULL),
    REG("SYSTIML", IXGBE_SYSTIML, 1, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_ptp_read_systiml, ixgbe_ptp_write_systim),
    REG("SYSTIMH", IXGBE_SYSTIMH, 1, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_ptp_read_systimh, ixgbe_ptp_write_systim),
    REG("TIMINCA", IXGBE_TIMINCA, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_ptp_write_timinca),
    PLAIN("TIMADJL", IXGBE_TIMADJL, 1, 4, 0, ALL),
    REG("TIMADJH", IXGBE_TIMADJH, 1, 4, 0, ALL, 0, NULL,
        ixgbe_ptp_write_timadjh),
};

const IxgbePart ixgbe_ptp_part = {
    .regs = ixgbe_ptp_regs,
    .nregs = ARRAY_SIZE(ixgbe_ptp_regs),
    .reset = ixgbe_ptp_reset,
};
