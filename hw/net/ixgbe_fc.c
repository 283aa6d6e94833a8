/*
 * Intel 82599 10 GbE controller: IEEE 802.3 flow control.
 *
 * Received MAC control frames (EtherType 0x8808) stop at the MAC.  A
 * link pause frame (opcode 0x0001) is counted when receive flow control
 * is enabled (MFLCN.RFCE), a priority flow control frame (opcode 0x0101,
 * IEEE 802.1Qbb) when priority flow control is (MFLCN.RPFCE), each in
 * LXONRXCNT or LXOFFRXCNT once (a frame with both an XON and an XOFF
 * priority counts as XOFF) and per enabled priority in PXONRXCNT or
 * PXOFFRXCNT.  Such a frame reaches the host only when MFLCN.PMCF asks
 * for MAC control frames and MFLCN.DPF does not discard pause frames;
 * other MAC control frames only with MFLCN.PMCF.
 *
 * The pause itself is not modelled: the transmitter does not stop for
 * the time a frame asks.
 *
 * The device sends link pause frames (FCCFG.TFCE_802_3X with
 * FCRTH0.FCEN).  It has no receive packet buffer that fills towards
 * FCRTH: a frame is written to the guest's ring as it arrives, and one
 * that finds no free descriptor (and no DROP_EN) is held by the backend
 * until a tail write makes room.  Such a held frame stands for a buffer
 * above its high threshold: an XOFF goes out with the pause time of
 * FCTTV (traffic class 0), counted in LXOFFTXC, and again each time the
 * pause timer, counting down from that time, reaches FCRTV (refresh; 0
 * disables it) while a frame is still held.  When the held frame goes
 * (the buffer is below its low threshold), an XON (pause time 0) goes
 * out if FCRTL0.XONE enables it, counted in LXONTXC.  Pause frames are
 * sent from the station address (RAR0) to 01:80:C2:00:00:01 and are not
 * counted as good packets.  Priority flow control frames are not sent.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/timer.h"
#include "net/eth.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_fc.h"
#include "trace.h"

#define FC_OPCODE_PAUSE     0x0001
#define FC_OPCODE_PFC       0x0101

#define IXGBE_MFLCN_PMCF    (1u << 0)   /* pass MAC control frames */
#define IXGBE_MFLCN_DPF     (1u << 1)   /* discard pause frames */
#define IXGBE_MFLCN_RPFCE   (1u << 2)   /* receive priority flow control */
#define IXGBE_MFLCN_RFCE    (1u << 3)   /* receive link flow control */

#define IXGBE_LXONRXCNT     0x041A4
#define IXGBE_LXOFFRXCNT    0x041A8
#define IXGBE_PXONRXCNT(i)  (0x04140 + (i) * 4)
#define IXGBE_PXOFFRXCNT(i) (0x04160 + (i) * 4)

#define IXGBE_LXONTXC       0x03F60
#define IXGBE_LXOFFTXC      0x03F68

#define IXGBE_FCTTV0        0x03200     /* 4 registers */
#define IXGBE_FCRTL0        0x03220     /* 8 registers */
#define IXGBE_FCRTH0        0x03260     /* 8 registers */
#define IXGBE_FCRTV         0x032A0
#define IXGBE_FCCFG         0x03D00

#define IXGBE_FCRTL_XONE    (1u << 31)  /* send XON below the threshold */
#define IXGBE_FCRTH_FCEN    (1u << 31)  /* send XOFF above the threshold */
#define IXGBE_FCCFG_TFCE_802_3X (1u << 3)   /* transmit link pause */

/* A pause quantum is 512 bit times: 51.2 ns at the port's 10 Gb/s */
#define IXGBE_FC_QUANTUM_BITS   512
#define IXGBE_FC_LINK_GBPS      10

static void ixgbe_fc_count(IxgbeCore *core, hwaddr addr)
{
    if (ixgbe_get(core, addr) != UINT32_MAX) {
        (*ixgbe_reg(core, addr))++;
    }
}

/* The flow control multicast address, or the station address (RAR0) */
static bool ixgbe_fc_address(IxgbeCore *core, const uint8_t *dst)
{
    static const uint8_t fc_mcast[ETH_ALEN] = {
        0x01, 0x80, 0xC2, 0x00, 0x00, 0x01
    };
    uint32_t rah = ixgbe_get(core, IXGBE_RAH(0));

    return !memcmp(dst, fc_mcast, ETH_ALEN) ||
           ((rah & IXGBE_RAH_AV) &&
            ldl_le_p(dst) == ixgbe_get(core, IXGBE_RAL0) &&
            lduw_le_p(dst + 4) == (rah & 0xFFFF));
}

bool ixgbe_fc_rx_control(IxgbeCore *core, const uint8_t *frame, size_t len)
{
    uint32_t mflcn = ixgbe_get(core, IXGBE_MFLCN);
    uint16_t opcode;
    bool xoff = false;

    if (len < ETH_ZLEN || lduw_be_p(frame + 12) != ETH_P_MAC_CONTROL) {
        return false;
    }
    opcode = lduw_be_p(frame + 14);
    if (!ixgbe_fc_address(core, frame) ||
        (opcode != FC_OPCODE_PAUSE && opcode != FC_OPCODE_PFC)) {
        trace_ixgbe_fc_rx_other(opcode, !!(mflcn & IXGBE_MFLCN_PMCF));
        return !(mflcn & IXGBE_MFLCN_PMCF);
    }
    if (opcode == FC_OPCODE_PAUSE) {
        if (!(mflcn & IXGBE_MFLCN_RFCE)) {
            trace_ixgbe_fc_rx_other(opcode, !!(mflcn & IXGBE_MFLCN_PMCF));
            return !(mflcn & IXGBE_MFLCN_PMCF);
        }
        xoff = lduw_be_p(frame + 16) != 0;
        trace_ixgbe_fc_rx_pause(lduw_be_p(frame + 16));
    } else {
        uint8_t enabled = lduw_be_p(frame + 16) & 0xFF;

        if (!(mflcn & IXGBE_MFLCN_RPFCE)) {
            trace_ixgbe_fc_rx_other(opcode, !!(mflcn & IXGBE_MFLCN_PMCF));
            return !(mflcn & IXGBE_MFLCN_PMCF);
        }
        for (unsigned i = 0; i < 8; i++) {
            if (enabled & BIT(i)) {
                bool off = lduw_be_p(frame + 18 + i * 2) != 0;

                ixgbe_fc_count(core, off ? IXGBE_PXOFFRXCNT(i) :
                                           IXGBE_PXONRXCNT(i));
                xoff |= off;
            }
        }
        trace_ixgbe_fc_rx_pfc(enabled, xoff);
    }
    ixgbe_fc_count(core, xoff ? IXGBE_LXOFFRXCNT : IXGBE_LXONRXCNT);
    return !(mflcn & IXGBE_MFLCN_PMCF) || (mflcn & IXGBE_MFLCN_DPF);
}

/* ------------------------------------------------------------------ */
/* Pause frames sent                                                   */
/* ------------------------------------------------------------------ */

/* One link pause frame out of the port: false if the link is down */
static bool ixgbe_fc_send(IxgbeCore *core, bool xoff, uint16_t quanta)
{
    NetClientState *nc = qemu_get_queue(core->nic);
    uint8_t f[ETH_ZLEN] = { 0x01, 0x80, 0xC2, 0x00, 0x00, 0x01 };

    if (nc->link_down) {
        return false;
    }
    stl_le_p(f + 6, ixgbe_get(core, IXGBE_RAL0));
    stw_le_p(f + 10, ixgbe_get(core, IXGBE_RAH(0)) & 0xFFFF);
    stw_be_p(f + 12, ETH_P_MAC_CONTROL);
    stw_be_p(f + 14, FC_OPCODE_PAUSE);
    stw_be_p(f + 16, quanta);
    trace_ixgbe_fc_tx_pause(xoff, quanta);
    ixgbe_fc_count(core, xoff ? IXGBE_LXOFFTXC : IXGBE_LXONTXC);
    qemu_send_packet(nc, f, sizeof(f));
    return true;
}

static bool ixgbe_fc_xoff_enabled(IxgbeCore *core)
{
    return (ixgbe_get(core, IXGBE_FCCFG) & IXGBE_FCCFG_TFCE_802_3X) &&
           (ixgbe_get(core, IXGBE_FCRTH0) & IXGBE_FCRTH_FCEN);
}

/*
 * An XOFF with the pause time of FCTTV; the pause timer counts that time
 * down, and when it reaches FCRTV the XOFF is refreshed
 */
static void ixgbe_fc_send_xoff(IxgbeCore *core)
{
    uint16_t ttv = ixgbe_get(core, IXGBE_FCTTV0) & 0xFFFF;
    uint16_t rtv = ixgbe_get(core, IXGBE_FCRTV) & 0xFFFF;
    uint64_t quanta = ttv > rtv ? ttv - rtv : 1;

    if (!ixgbe_fc_send(core, true, ttv)) {
        return;
    }
    core->fc.xoff = true;
    if (rtv) {
        timer_mod(core->fc.refresh, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  quanta * IXGBE_FC_QUANTUM_BITS / IXGBE_FC_LINK_GBPS);
    }
}

/* Nothing held any more: lift the XOFF */
static void ixgbe_fc_drained(IxgbeCore *core)
{
    if (!core->fc.xoff) {
        return;
    }
    core->fc.xoff = false;
    timer_del(core->fc.refresh);
    if ((ixgbe_get(core, IXGBE_FCCFG) & IXGBE_FCCFG_TFCE_802_3X) &&
        (ixgbe_get(core, IXGBE_FCRTL0) & IXGBE_FCRTL_XONE)) {
        ixgbe_fc_send(core, false, 0);
    }
}

void ixgbe_fc_rx_held_changed(IxgbeCore *core, bool held)
{
    IxgbeFc *fc = &core->fc;

    if (held == fc->rx_full) {
        return;
    }
    fc->rx_full = held;
    trace_ixgbe_fc_rx_full(held);
    if (!held) {
        ixgbe_fc_drained(core);
    } else if (!fc->xoff && ixgbe_fc_xoff_enabled(core)) {
        ixgbe_fc_send_xoff(core);
    }
}

static void ixgbe_fc_refresh(void *opaque)
{
    IxgbeCore *core = opaque;

    if (!ixgbe_core_enter(core, "flow control timer", -1, 0)) {
        return;
    }
    if (!core->fc.rx_full) {
        ixgbe_fc_drained(core);
    } else if (ixgbe_fc_xoff_enabled(core)) {
        ixgbe_fc_send_xoff(core);
    }
    ixgbe_core_leave(core);
}

static void ixgbe_fc_realize(IxgbeCore *core)
{
    core->fc.refresh = timer_new_ns(QEMU_CLOCK_VIRTUAL, ixgbe_fc_refresh,
                                    core);
}

static void ixgbe_fc_unrealize(IxgbeCore *core)
{
    timer_free(core->fc.refresh);
    core->fc.refresh = NULL;
}

static void ixgbe_fc_reset(IxgbeCore *core)
{
    core->fc.rx_full = false;
    core->fc.xoff = false;
    timer_del(core->fc.refresh);
}

/*
 * The frame the source's backend held did not come along: nothing is
 * held here, and an XOFF still in force is lifted by the refresh timer
 * or by the next frame taken
 */
static bool ixgbe_fc_post_load(IxgbeCore *core)
{
    core->fc.rx_full = false;
    return true;
}

/* Transmit thresholds and pause times (see above) */
static const IxgbeRegDesc ixgbe_fc_regs[] = {
    PLAIN("FCTTV", IXGBE_FCTTV0, 4, 4, 0, ALL),
    PLAIN("FCRTL", IXGBE_FCRTL0, 8, 4, 0, 0x8007FFF0),
    PLAIN("FCRTH", IXGBE_FCRTH0, 8, 4, 0, 0x8007FFF0),
    PLAIN("FCRTV", IXGBE_FCRTV, 1, 4, 0, 0xFFFF),
    PLAIN("FCCFG", IXGBE_FCCFG, 1, 4, 0, 0x18),
};

const IxgbePart ixgbe_fc_part = {
    .regs = ixgbe_fc_regs,
    .nregs = ARRAY_SIZE(ixgbe_fc_regs),
    .realize = ixgbe_fc_realize,
    .unrealize = ixgbe_fc_unrealize,
    .reset = ixgbe_fc_reset,
    .post_load = ixgbe_fc_post_load,
};
