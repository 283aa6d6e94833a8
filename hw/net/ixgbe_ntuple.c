/*
 * Intel 82599 10 GbE controller: the receive queue filters that come
 * before the Flow Director -- the L2 EtherType filters (ETQF with ETQS),
 * the TCP SYN filter (SYNQF) and the 128 L3/L4 5-tuple filters (FTQF,
 * SAQF, DAQF, SDPQF, L34TIMIR).
 *
 * Outside virtualization the 82599 picks a frame's receive queue in this
 * order: an EtherType filter with a queue; the SYN filter when
 * SYNQF.SYNQFP puts it first; the 5-tuple filters (the highest FTQF
 * priority among those that match, the lowest index among equals); the
 * SYN filter otherwise; then the Flow Director, then RSS.  A frame one of
 * these filters steers is not looked up in the Flow Director.
 *
 * A 5-tuple filter compares the fields its FTQF mask bits leave in (L4
 * protocol, IPv4 source and destination address, source and destination
 * port) and steers with Queue Enable set, to the queue in its L34TIMIR.
 * Addresses and ports are held as they come on the wire: the first byte
 * in bits 7:0, as DPDK's ixgbe driver writes them.
 *
 * The filters are registers, which migrate with the register file; the
 * bitmaps of the enabled ones are rebuilt from them after a migration.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "qemu/bitops.h"
#include "net/net.h"
#include "net/eth.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_core.h"
#include "ixgbe_ntuple.h"
#include "trace.h"

/* What the filters look at in a frame */
typedef struct IxgbeL34 {
    uint16_t type;              /* EtherType after an optional VLAN tag */
    int pcp;                    /* the tag's priority; -1: untagged */
    bool ip4;
    bool frag;                  /* an IPv4 fragment: no L4 header */
    uint8_t proto;              /* FTQF protocol: TCP 0, UDP 1, SCTP 2, 3 */
    const uint8_t *addrs;       /* IPv4 source then destination address */
    const uint8_t *ports;       /* source then destination port, or NULL */
    bool syn;                   /* a TCP segment with SYN set */
} IxgbeL34;

static uint8_t ixgbe_ntuple_proto(uint8_t ip_proto)
{
    switch (ip_proto) {
    case IP_PROTO_TCP:
        return 0;
    case IP_PROTO_UDP:
        return 1;
    case IP_PROTO_SCTP:
        return 2;
    default:
        return IXGBE_FTQF_PROTO_OTHER;
    }
}

static void ixgbe_l34_parse(IxgbeCore *core, const uint8_t *frame,
                            size_t len, IxgbeL34 *p)
{
    size_t off = ETH_HLEN, l4;
    uint8_t ip_proto;

    memset(p, 0, sizeof(*p));
    p->pcp = -1;
    if (len < ETH_HLEN) {
        return;
    }
    p->type = lduw_be_p(frame + 12);
    if (p->type == (ixgbe_get(core, IXGBE_VLNCTRL) & 0xFFFF) &&
        len >= ETH_HLEN + 4) {
        p->pcp = frame[14] >> 5;
        p->type = lduw_be_p(frame + 16);
        off += 4;
    }
    if (p->type == ETH_P_IP && len >= off + 20 &&
        (frame[off] >> 4) == 4 && (frame[off] & 0xF) >= 5) {
        const uint8_t *ip = frame + off;

        p->ip4 = true;
        p->frag = lduw_be_p(ip + 6) & 0x3FFF;
        p->addrs = ip + 12;
        ip_proto = ip[9];
        l4 = off + (ip[0] & 0xF) * 4;
    } else if (p->type == ETH_P_IPV6 && len >= off + 40) {
        ip_proto = frame[off + 6];
        l4 = off + 40;
    } else {
        return;
    }
    p->proto = ixgbe_ntuple_proto(ip_proto);
    if (p->frag || p->proto == IXGBE_FTQF_PROTO_OTHER || len < l4 + 4) {
        return;
    }
    p->ports = frame + l4;
    p->syn = ip_proto == IP_PROTO_TCP && len >= l4 + 14 &&
             (frame[l4 + 13] & 0x02);
}

/* ------------------------------------------------------------------ */
/* The three kinds of filter                                           */
/* ------------------------------------------------------------------ */

/* The first EtherType filter with a queue that takes the frame */
static int ixgbe_etqf_queue(IxgbeCore *core, const IxgbeL34 *p)
{
    for (unsigned on = core->qfilters.etqs_on; on; on &= on - 1) {
        unsigned i = ctz32(on);
        uint32_t etqf = ixgbe_get(core, IXGBE_ETQF(i));

        if (!(etqf & IXGBE_ETQF_FILTER_EN) || (etqf & 0xFFFF) != p->type) {
            continue;
        }
        if ((etqf & IXGBE_ETQF_UP_EN) &&
            p->pcp != (int)((etqf >> IXGBE_ETQF_UP_SHIFT) &
                            IXGBE_ETQF_UP_MASK)) {
            continue;
        }
        trace_ixgbe_qfilter_match("ethertype", i);
        return (ixgbe_get(core, IXGBE_ETQS(i)) >> IXGBE_ETQS_QUEUE_SHIFT) &
               IXGBE_ETQS_QUEUE_MASK;
    }
    return -1;
}

static int ixgbe_synqf_queue(IxgbeCore *core, const IxgbeL34 *p,
                             uint32_t synqf)
{
    if (!(synqf & IXGBE_SYNQF_EN) || !p->syn) {
        return -1;
    }
    trace_ixgbe_qfilter_match("syn", 0);
    return (synqf >> IXGBE_SYNQF_QUEUE_SHIFT) & IXGBE_SYNQF_QUEUE_MASK;
}

static bool ixgbe_ftqf_match(IxgbeCore *core, unsigned i, const IxgbeL34 *p)
{
    uint32_t ftqf = ixgbe_get(core, IXGBE_FTQF(i));
    uint32_t sdpqf = ixgbe_get(core, IXGBE_SDPQF(i));

    if (!(ftqf & IXGBE_FTQF_MASK_PROTO) &&
        (ftqf & IXGBE_FTQF_PROTO_MASK) != p->proto) {
        return false;
    }
    if (!(ftqf & IXGBE_FTQF_MASK_SRC_ADDR) &&
        ldl_le_p(p->addrs) != ixgbe_get(core, IXGBE_SAQF(i))) {
        return false;
    }
    if (!(ftqf & IXGBE_FTQF_MASK_DST_ADDR) &&
        ldl_le_p(p->addrs + 4) != ixgbe_get(core, IXGBE_DAQF(i))) {
        return false;
    }
    if (!(ftqf & IXGBE_FTQF_MASK_SRC_PORT) &&
        (!p->ports || lduw_le_p(p->ports) != (sdpqf & 0xFFFF))) {
        return false;
    }
    if (!(ftqf & IXGBE_FTQF_MASK_DST_PORT) &&
        (!p->ports || lduw_le_p(p->ports + 2) != sdpqf >> 16)) {
        return false;
    }
    return true;
}

/* The 5-tuple filter that takes an IPv4 frame, or -1 */
static int ixgbe_ftqf_queue(IxgbeCore *core, const IxgbeL34 *p)
{
    int best = -1;
    unsigned best_prio = 0;

    if (!p->ip4) {
        return -1;
    }
    for (unsigned w = 0; w < 2; w++) {
        for (uint64_t on = core->qfilters.ftqf_on[w]; on; on &= on - 1) {
            unsigned i = w * 64 + ctz64(on);
            unsigned prio = (ixgbe_get(core, IXGBE_FTQF(i)) >>
                             IXGBE_FTQF_PRIO_SHIFT) & IXGBE_FTQF_PRIO_MASK;

            /* Lower indexes come first: only a higher priority displaces */
            if ((best < 0 || prio > best_prio) &&
                ixgbe_ftqf_match(core, i, p)) {
                best = i;
                best_prio = prio;
            }
        }
    }
    if (best < 0) {
        return -1;
    }
    trace_ixgbe_qfilter_match("5-tuple", best);
    return (ixgbe_get(core, IXGBE_L34TIMIR(best)) >>
            IXGBE_L34TIMIR_QUEUE_SHIFT) & IXGBE_L34TIMIR_QUEUE_MASK;
}

bool ixgbe_ntuple_lookup(IxgbeCore *core, const uint8_t *frame,
                         size_t len, unsigned *queue)
{
    uint32_t synqf = ixgbe_get(core, IXGBE_SYNQF);
    IxgbeL34 p;
    int q = -1;

    if (!core->qfilters.etqs_on && !core->qfilters.ftqf_on[0] &&
        !core->qfilters.ftqf_on[1] && !(synqf & IXGBE_SYNQF_EN)) {
        return false;
    }
    ixgbe_l34_parse(core, frame, len, &p);
    q = ixgbe_etqf_queue(core, &p);
    if (q < 0 && (synqf & IXGBE_SYNQF_SYNQFP)) {
        q = ixgbe_synqf_queue(core, &p, synqf);
    }
    if (q < 0) {
        q = ixgbe_ftqf_queue(core, &p);
    }
    if (q < 0 && !(synqf & IXGBE_SYNQF_SYNQFP)) {
        q = ixgbe_synqf_queue(core, &p, synqf);
    }
    if (q < 0) {
        return false;
    }
    *queue = q;
    return true;
}

/* ------------------------------------------------------------------ */
/* Registers, reset, migration                                         */
/* ------------------------------------------------------------------ */

static void ixgbe_ntuple_trace(IxgbeCore *core, unsigned i)
{
    trace_ixgbe_ntuple_filter(i, ixgbe_get(core, IXGBE_FTQF(i)),
                              ixgbe_get(core, IXGBE_SAQF(i)),
                              ixgbe_get(core, IXGBE_DAQF(i)),
                              ixgbe_get(core, IXGBE_SDPQF(i)),
                              ixgbe_get(core, IXGBE_L34TIMIR(i)));
}

static void ixgbe_ntuple_sync(IxgbeCore *core, unsigned i)
{
    uint64_t bit = BIT_ULL(i % 64);

    if (ixgbe_get(core, IXGBE_FTQF(i)) & IXGBE_FTQF_QUEUE_EN) {
        core->qfilters.ftqf_on[i / 64] |= bit;
    } else {
        core->qfilters.ftqf_on[i / 64] &= ~bit;
    }
}

static void ixgbe_ntuple_write_ftqf(IxgbeCore *core, hwaddr addr,
                                    uint32_t val, uint32_t old)
{
    unsigned i = (addr - IXGBE_FTQF0) / 4;

    ixgbe_ntuple_sync(core, i);
    ixgbe_ntuple_trace(core, i);
}

static void ixgbe_ntuple_write_l34timir(IxgbeCore *core, hwaddr addr,
                                        uint32_t val, uint32_t old)
{
    ixgbe_ntuple_trace(core, (addr - IXGBE_L34TIMIR0) / 4);
}

static void ixgbe_ntuple_sync_etqs(IxgbeCore *core, unsigned i)
{
    if (ixgbe_get(core, IXGBE_ETQS(i)) & IXGBE_ETQS_QUEUE_EN) {
        core->qfilters.etqs_on |= BIT(i);
    } else {
        core->qfilters.etqs_on &= ~BIT(i);
    }
}

static void ixgbe_ntuple_write_etqs(IxgbeCore *core, hwaddr addr,
                                    uint32_t val, uint32_t old)
{
    ixgbe_ntuple_sync_etqs(core, (addr - IXGBE_ETQS0) / 4);
}

static void ixgbe_ntuple_rebuild(IxgbeCore *core)
{
    memset(&core->qfilters, 0, sizeof(core->qfilters));
    for (unsigned i = 0; i < IXGBE_NTUPLE_COUNT; i++) {
        ixgbe_ntuple_sync(core, i);
    }
    for (unsigned i = 0; i < IXGBE_ETQF_COUNT; i++) {
        ixgbe_ntuple_sync_etqs(core, i);
    }
}

static bool ixgbe_ntuple_post_load(IxgbeCore *core)
{
    ixgbe_ntuple_rebuild(core);
    return true;
}

static const IxgbeRegDesc ixgbe_ntuple_regs[] = {
    PLAIN("SAQF", IXGBE_SAQF0, IXGBE_NTUPLE_COUNT, 4, 0, ALL),
    PLAIN("DAQF", IXGBE_DAQF0, IXGBE_NTUPLE_COUNT, 4, 0, ALL),
    PLAIN("SDPQF", IXGBE_SDPQF0, IXGBE_NTUPLE_COUNT, 4, 0, ALL),
    REG("FTQF", IXGBE_FTQF0, IXGBE_NTUPLE_COUNT, 4, 0, IXGBE_FTQF_WMASK, 0,
        NULL, ixgbe_ntuple_write_ftqf),
    REG("L34TIMIR", IXGBE_L34TIMIR0, IXGBE_NTUPLE_COUNT, 4, 0,
        IXGBE_L34TIMIR_WMASK, 0, NULL, ixgbe_ntuple_write_l34timir),
    REG("ETQS", IXGBE_ETQS0, IXGBE_ETQF_COUNT, 4, 0, IXGBE_ETQS_WMASK, 0,
        NULL, ixgbe_ntuple_write_etqs),
    PLAIN("SYNQF", IXGBE_SYNQF, 1, 4, 0, IXGBE_SYNQF_WMASK),
};

const IxgbePart ixgbe_ntuple_part = {
    .regs = ixgbe_ntuple_regs,
    .nregs = ARRAY_SIZE(ixgbe_ntuple_regs),
    .reset = ixgbe_ntuple_rebuild,
    .post_load = ixgbe_ntuple_post_load,
};
