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
 * the time a frame asks.  Nor does the device send pause frames: it has
 * no receive packet buffer that fills towards FCRTH (a frame is written
 * to the guest's ring when it arrives, or dropped), so the thresholds,
 * FCTTV and FCRTV are kept for the driver and LXONTXC/LXOFFTXC stay 0.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "net/eth.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_fc.h"
#include "trace.h"

#define ETH_P_MAC_CONTROL   0x8808
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

#define IXGBE_FCTTV0        0x03200     /* 4 registers */
#define IXGBE_FCRTL0        0x03220     /* 8 registers */
#define IXGBE_FCRTH0        0x03260     /* 8 registers */
#define IXGBE_FCRTV         0x032A0
#define IXGBE_FCCFG         0x03D00

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

bool ixgbe_fc_rx(IxgbeCore *core, const uint8_t *frame, size_t len)
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

/* Transmit thresholds and pause times: kept for the driver (see above) */
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
};
