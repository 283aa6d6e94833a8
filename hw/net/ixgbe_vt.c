/*
 * Intel 82599 10 GbE controller: the virtualization datapath (datasheet
 * section 7.10).
 *
 * With VT_CTL.VT_Ena the queues are grouped in pools (VF n owns pool n, the
 * PF the pool after the VFs').  ixgbe_vt_classify() is the one place that
 * decides where a frame goes: the pools that accept it, and the queue of
 * each.
 *
 *  - Unicast: the pools of the receive address it matches (MPSAR), else
 *    the pools with PFVML2FLT.ROPE whose hash it hits in PFUTA.
 *  - Broadcast: the pools with PFVML2FLT.BAM.  Multicast: the pools of an
 *    exact match, those with MPE, and those with ROMPE when it hits the
 *    MTA.  Without VT_CTL.REPLEN it goes to the default pool alone.
 *  - A frame from the wire that no pool takes goes to the default pool
 *    (VT_CTL.DEF_PL) if the port is promiscuous for it (FCTRL.UPE/MPE) and
 *    the default pool is not disabled.
 *  - VLAN: a tagged frame goes only to pools of its VLAN (PFVLVF and its
 *    PFVLVFB pool bits); an untagged one only to pools with AUPE.
 *  - Pools without their PFVFRE bit, and the pool a switched frame came
 *    from, take nothing.
 *  - In each pool, RSS spreads frames over 2^PSRTYPE.RQPL queues (at most
 *    the pool's queues) with the low bits of the shared RETA's entry.
 *
 * Transmit: a pool's port VLAN (VMVIR) replaces or suppresses the
 * descriptor's tag (ixgbe_vt_tx_vlan()).  ixgbe_vt_tx(): PFVFTE gates a
 * pool; anti-spoofing
 * (PFVFSPOOF) drops frames whose source MAC or VLAN is not the pool's and
 * counts them in SSVPC; with PFDTXGSWC.LBEN the internal switch delivers a
 * frame to the other pools that accept it, and sends it to the wire too
 * unless it was unicast to a local pool.  The per-pool counters (PVFGPRC,
 * PVFGORC, PVFMPRC, PVFGPTC, PVFGOTC) count what each pool sent and
 * received.
 *
 * Work per frame is bounded by the tables: 128 receive addresses, 64
 * pools, 64 VLAN filters.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/iov.h"
#include "qemu/bitops.h"
#include "qemu/host-utils.h"
#include "net/net.h"
#include "net/eth.h"
#include "ixgbe_core.h"
#include "ixgbe_vt.h"
#include "trace.h"

/* Queues per receive pool, from MRQC's virtualization mode */
static unsigned ixgbe_vt_rx_qpp(IxgbeCore *core)
{
    switch (ixgbe_get(core, IXGBE_MRQC) & IXGBE_MRQC_MRQE_MASK) {
    case IXGBE_MRQC_VMDQ_DCB8:
        return 8;
    case IXGBE_MRQC_VMDQ_RSS32:
    case IXGBE_MRQC_VMDQ_DCB4:
        return 4;
    default:
        return 2;
    }
}

/* Queues per transmit pool, from MTQC */
static unsigned ixgbe_vt_tx_qpp(IxgbeCore *core)
{
    uint32_t mtqc = ixgbe_get(core, IXGBE_MTQC);

    switch (mtqc & IXGBE_MTQC_NUM_MASK) {
    case IXGBE_MTQC_64VF:
        return 2;
    case IXGBE_MTQC_32VF:
        return 4;
    default:
        return 8;
    }
}

static uint64_t ixgbe_vt_bits64(IxgbeCore *core, hwaddr lo, hwaddr hi)
{
    return ixgbe_get(core, lo) | ((uint64_t)ixgbe_get(core, hi) << 32);
}

/* The 12-bit MTA/PFUTA hash of an address, per MCSTCTRL.MO */
static bool ixgbe_vt_hash_hit(IxgbeCore *core, hwaddr table,
                              const uint8_t *addr)
{
    static const int shift[] = { 4, 3, 2, 0 };
    unsigned mo = ixgbe_get(core, IXGBE_MCSTCTRL) & IXGBE_MCSTCTRL_MO_MASK;
    unsigned hash = ((addr[4] >> shift[mo]) |
                     (addr[5] << (8 - shift[mo]))) & 0xFFF;

    return ixgbe_get(core, table + (hash >> 5) * 4) & BIT(hash & 0x1F);
}

/* The receive address entry an address matches, or -1 */
static int ixgbe_vt_rar_match(IxgbeCore *core, const uint8_t *addr)
{
    for (unsigned i = 0; i < IXGBE_RAR_ENTRIES; i++) {
        uint32_t ral = ixgbe_get(core, IXGBE_RAL(i));
        uint32_t rah = ixgbe_get(core, IXGBE_RAH(i));

        if ((rah & IXGBE_RAH_AV) && ldl_le_p(addr) == ral &&
            lduw_le_p(addr + 4) == (rah & 0xFFFF)) {
            return i;
        }
    }
    return -1;
}

static uint64_t ixgbe_vt_rar_pools(IxgbeCore *core, int rar)
{
    return ixgbe_vt_bits64(core, IXGBE_MPSAR_LO(rar),
                           IXGBE_MPSAR_HI(rar));
}

/* The pools of a VLAN; false when no PFVLVF entry holds it */
static bool ixgbe_vt_vlan_pools(IxgbeCore *core, uint16_t vid,
                                uint64_t *pools)
{
    for (unsigned i = 0; i < IXGBE_MAX_POOLS; i++) {
        uint32_t vlvf = ixgbe_get(core, IXGBE_VLVF(i));

        if ((vlvf & IXGBE_PFVLVF_VIEN) &&
            (vlvf & IXGBE_PFVLVF_VLANID_MASK) == vid) {
            *pools = ixgbe_vt_bits64(core, IXGBE_VLVFB(i * 2),
                                     IXGBE_VLVFB(i * 2 + 1));
            return true;
        }
    }
    return false;
}

/* The pools whose PFVML2FLT has any of bits */
static uint64_t ixgbe_vt_pools_with(IxgbeCore *core, uint32_t bits)
{
    uint64_t pools = 0;

    for (unsigned p = 0; p < IXGBE_MAX_POOLS; p++) {
        if (ixgbe_get(core, IXGBE_VMOLR(p)) & bits) {
            pools |= BIT_ULL(p);
        }
    }
    return pools;
}

/* The VLAN ID of a tagged frame (VLNCTRL's TPID), 0 when untagged */
static uint16_t ixgbe_vt_vid(IxgbeCore *core, const uint8_t *buf,
                             size_t len)
{
    if (len < 18 ||
        lduw_be_p(buf + 12) != (ixgbe_get(core, IXGBE_VLNCTRL) & 0xFFFF)) {
        return 0;
    }
    return lduw_be_p(buf + 14) & 0xFFF;
}

static uint64_t ixgbe_vt_pools(IxgbeCore *core, const uint8_t *buf,
                               size_t len, int src_pool, bool *local_uc)
{
    uint32_t vt_ctl = ixgbe_get(core, IXGBE_VT_CTL);
    uint32_t fctrl = ixgbe_get(core, IXGBE_FCTRL);
    unsigned def_pl = (vt_ctl >> IXGBE_VT_CTL_POOL_SHIFT) &
                      IXGBE_VT_CTL_POOL_MASK;
    uint16_t vid = ixgbe_vt_vid(core, buf, len);
    bool mcast = is_multicast_ether_addr(buf);
    int rar = ixgbe_vt_rar_match(core, buf);
    uint64_t pools = rar >= 0 ? ixgbe_vt_rar_pools(core, rar) : 0;
    uint64_t vlan_pools;

    *local_uc = false;
    if (is_broadcast_ether_addr(buf)) {
        pools = ixgbe_vt_pools_with(core, IXGBE_VMOLR_BAM);
    } else if (mcast) {
        pools |= ixgbe_vt_pools_with(core, IXGBE_VMOLR_MPE);
        if (ixgbe_vt_hash_hit(core, IXGBE_MTA0, buf)) {
            pools |= ixgbe_vt_pools_with(core, IXGBE_VMOLR_ROMPE);
        }
    } else if (rar >= 0) {
        *local_uc = pools != 0;
    } else if (ixgbe_vt_hash_hit(core, IXGBE_PFUTA0, buf)) {
        pools = ixgbe_vt_pools_with(core, IXGBE_VMOLR_ROPE);
    }
    if (!pools && src_pool < 0 && !(vt_ctl & IXGBE_VT_CTL_DIS_DEF_PL) &&
        (fctrl & (mcast ? IXGBE_FCTRL_MPE : IXGBE_FCTRL_UPE))) {
        pools = BIT_ULL(def_pl);
    }
    if (mcast && !(vt_ctl & IXGBE_VT_CTL_REPLEN) && ctpop64(pools) > 1) {
        pools = BIT_ULL(def_pl);
    }

    if (vid) {
        if (ixgbe_vt_vlan_pools(core, vid, &vlan_pools)) {
            pools &= vlan_pools;
        } else if (ixgbe_get(core, IXGBE_VLNCTRL) & IXGBE_VLNCTRL_VFE) {
            pools = 0;
        }
    } else {
        pools &= ixgbe_vt_pools_with(core, IXGBE_VMOLR_AUPE);
    }
    pools &= ixgbe_vt_bits64(core, IXGBE_VFRE(0), IXGBE_VFRE(1));
    if (src_pool >= 0) {
        pools &= ~BIT_ULL(src_pool);
    }
    return pools;
}

/*
 * Where a frame goes: the pools that accept it (from the wire when
 * src_pool < 0, else switched from that pool) and, in each, the queue
 * that RSS output rss_index selects under the pool's PSRTYPE.RQPL.
 */
void ixgbe_vt_classify(IxgbeCore *core, const uint8_t *buf, size_t len,
                       int src_pool, unsigned rss_index, IxgbeVtDest *dest)
{
    unsigned qpp = ixgbe_vt_rx_qpp(core);
    unsigned npools = MIN(IXGBE_NUM_QUEUES / qpp, IXGBE_MAX_POOLS);
    uint64_t pools;

    pools = ixgbe_vt_pools(core, buf, len, src_pool, &dest->local_unicast);
    if (npools < IXGBE_MAX_POOLS) {
        pools &= BIT_ULL(npools) - 1;
    }
    dest->pools = pools;
    dest->n = 0;
    while (pools) {
        unsigned p = ctz64(pools);
        unsigned rqpl = (ixgbe_get(core, IXGBE_PSRTYPE(p)) >>
                         IXGBE_PSRTYPE_RQPL_SHIFT) & 3;
        unsigned nq = MIN(rqpl == 3 ? 1 : 1u << rqpl, qpp);

        pools &= pools - 1;
        if (!ixgbe_vt_mrqc_rss(ixgbe_get(core, IXGBE_MRQC))) {
            nq = 1;
        }
        dest->pool[dest->n] = p;
        dest->queue[dest->n] = p * qpp + (rss_index & (nq - 1));
        dest->n++;
    }
    trace_ixgbe_vt_classify(src_pool, dest->pools, dest->local_unicast);
}

/* 32-bit counters wrap, as the VF driver expects */
static void ixgbe_vt_count(IxgbeCore *core, hwaddr addr, uint32_t n)
{
    *ixgbe_reg(core, addr) += n;
}

/* A 36-bit octet counter: 32 bits in lo, 4 in hi */
static void ixgbe_vt_count36(IxgbeCore *core, hwaddr lo, hwaddr hi,
                             size_t n)
{
    uint64_t v = ixgbe_get(core, lo) |
                 ((uint64_t)(ixgbe_get(core, hi) & 0xF) << 32);

    v += n;
    *ixgbe_reg(core, lo) = (uint32_t)v;
    *ixgbe_reg(core, hi) = (v >> 32) & 0xF;
}

void ixgbe_vt_rx_count(IxgbeCore *core, unsigned pool, size_t len,
                       bool multicast)
{
    ixgbe_vt_count(core, IXGBE_PVFGPRC(pool), 1);
    ixgbe_vt_count36(core, IXGBE_PVFGORC_LSB(pool),
                     IXGBE_PVFGORC_MSB(pool), len);
    if (multicast) {
        ixgbe_vt_count(core, IXGBE_PVFMPRC(pool), 1);
    }
}

/*
 * The VLAN tag a frame from transmit queue q leaves with: the pool's
 * VMVIR.VLANA decides between the descriptor's request (VLE and its tag),
 * the pool's port VLAN (always inserted, whatever the descriptor asks) and
 * no tag at all.  Returns true with *tag set when a tag is to be inserted.
 */
bool ixgbe_vt_tx_vlan(IxgbeCore *core, unsigned q, bool vle, uint16_t *tag)
{
    unsigned pool = q / ixgbe_vt_tx_qpp(core);
    uint32_t vmvir;

    if (pool >= IXGBE_MAX_POOLS) {
        return vle;
    }
    vmvir = ixgbe_get(core, IXGBE_VMVIR(pool));
    switch (vmvir >> IXGBE_VMVIR_VLANA_SHIFT) {
    case IXGBE_VMVIR_VLANA_DEFAULT:
        *tag = vmvir & IXGBE_VMVIR_TAG_MASK;
        trace_ixgbe_vt_tx_port_vlan(q, pool, *tag);
        return true;
    case IXGBE_VMVIR_VLANA_NEVER:
        return false;
    case IXGBE_VMVIR_VLANA_DESC:
        return vle;
    default:
        /* Reserved (logged when written): as VLANA_DESC */
        return vle;
    }
}

/* A pool's port VLAN: the reserved action is logged once, when written */
static void ixgbe_vt_write_vmvir(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    if ((val >> IXGBE_VMVIR_VLANA_SHIFT) == IXGBE_VMVIR_VLANA_RESERVED &&
        val != old) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: pool %u: VMVIR.VLANA 3 is reserved, "
                      "the descriptor's VLAN will be used\n",
                      (unsigned)(addr - IXGBE_VMVIR0) / 4);
    }
}

/* Anti-spoofing: the source MAC and VLAN must be the pool's own */
static bool ixgbe_vt_spoofed(IxgbeCore *core, unsigned pool,
                             const uint8_t *hdr, size_t len)
{
    uint32_t spoof = ixgbe_get(core, IXGBE_PFVFSPOOF(pool / 8));
    uint16_t vid;
    uint64_t pools;

    if (spoof & BIT(pool % 8)) {
        int rar = ixgbe_vt_rar_match(core, hdr + ETH_ALEN);

        if (rar < 0 || !(ixgbe_vt_rar_pools(core, rar) & BIT_ULL(pool))) {
            return true;
        }
    }
    if (spoof & BIT(IXGBE_PFVFSPOOF_VLANAS_SHIFT + pool % 8)) {
        vid = ixgbe_vt_vid(core, hdr, len);
        if (vid && (!ixgbe_vt_vlan_pools(core, vid, &pools) ||
                    !(pools & BIT_ULL(pool)))) {
            return true;
        }
    }
    return false;
}

/*
 * One frame sent from transmit queue q: gate, anti-spoofing, counters,
 * and the internal switch: *switch_pool is the pool whose frame the
 * switch offers to the local pools (ixgbe_rx_switched), or -1.
 */
IxgbeVtTx ixgbe_vt_tx(IxgbeCore *core, unsigned q, const struct iovec *iov,
                      int iovcnt, int *switch_pool)
{
    unsigned pool = q / ixgbe_vt_tx_qpp(core);
    size_t len = iov_size(iov, iovcnt);
    uint8_t hdr[18] = { 0 };
    bool local;
    int rar;

    *switch_pool = -1;
    iov_to_buf(iov, iovcnt, 0, hdr, sizeof(hdr));
    if (pool >= IXGBE_MAX_POOLS ||
        !(ixgbe_vt_bits64(core, IXGBE_VFTE(0), IXGBE_VFTE(1)) &
          BIT_ULL(pool))) {
        trace_ixgbe_vt_tx_drop(q, pool, "transmit disabled (PFVFTE)");
        return IXGBE_VT_TX_DROP;
    }
    if (len < sizeof(hdr) - 4) {
        trace_ixgbe_vt_tx_drop(q, pool, "runt frame");
        return IXGBE_VT_TX_DROP;
    }
    if (ixgbe_vt_spoofed(core, pool, hdr, MIN(len, sizeof(hdr)))) {
        uint32_t vmecm = ixgbe_get(core, IXGBE_VMECM(pool / 32));

        if ((vmecm & BIT(pool % 32)) &&
            ixgbe_get(core, IXGBE_SSVPC) != UINT32_MAX) {
            (*ixgbe_reg(core, IXGBE_SSVPC))++;
        }
        trace_ixgbe_vt_tx_drop(q, pool, "spoofed source (PFVFSPOOF)");
        return IXGBE_VT_TX_DROP;
    }
    ixgbe_vt_count(core, IXGBE_PVFGPTC(pool), 1);
    ixgbe_vt_count36(core, IXGBE_PVFGOTC_LSB(pool),
                     IXGBE_PVFGOTC_MSB(pool), len);
    if (!(ixgbe_get(core, IXGBE_PFDTXGSWC) & IXGBE_PFDTXGSWC_VT_LBEN)) {
        return IXGBE_VT_TX_WIRE;
    }
    /*
     * Whether a unicast frame stays inside depends on its destination
     * address alone, not on whether the receive side then takes it (a
     * frame beyond MAXFRS is dropped there, not sent to the wire).
     */
    rar = is_multicast_ether_addr(hdr) ? -1 : ixgbe_vt_rar_match(core, hdr);
    local = rar >= 0 && ixgbe_vt_rar_pools(core, rar);
    *switch_pool = pool;
    return local ? IXGBE_VT_TX_LOCAL : IXGBE_VT_TX_WIRE;
}

/* Per queue drop enable (QDE), or'd with SRRCTL.DROP_EN */
bool ixgbe_vt_queue_drop(IxgbeCore *core, unsigned q)
{
    return core->qde[q / 64] & BIT_ULL(q % 64);
}

/* QDE: WRITE sets a queue's drop enable, READ loads it into the register */
static void ixgbe_vt_write_qde(IxgbeCore *core, hwaddr addr, uint32_t val,
                               uint32_t old)
{
    unsigned q = (val >> IXGBE_QDE_IDX_SHIFT) & IXGBE_QDE_IDX_MASK;
    uint32_t keep = val & ~(IXGBE_QDE_WRITE | IXGBE_QDE_READ);

    if (val & IXGBE_QDE_WRITE) {
        if (val & IXGBE_QDE_ENABLE) {
            core->qde[q / 64] |= BIT_ULL(q % 64);
        } else {
            core->qde[q / 64] &= ~BIT_ULL(q % 64);
        }
        trace_ixgbe_vt_qde(q, val & IXGBE_QDE_ENABLE);
    } else if (val & IXGBE_QDE_READ) {
        keep = (keep & ~IXGBE_QDE_ENABLE) |
               (ixgbe_vt_queue_drop(core, q) ? IXGBE_QDE_ENABLE : 0);
    }
    *ixgbe_reg(core, addr) = keep;
}

/* The pools' registers with side effects */
static const IxgbeRegDesc ixgbe_vt_regs[] = {
    REG("QDE", IXGBE_QDE, 1, 4, 0, 0, IXGBE_RF_RAW, NULL, ixgbe_vt_write_qde),
    REG("VMVIR", IXGBE_VMVIR0, 64, 4, 0, IXGBE_VMVIR_WMASK, 0, NULL,
        ixgbe_vt_write_vmvir),
};

const IxgbePart ixgbe_vt_part = {
    .regs = ixgbe_vt_regs,
    .nregs = ARRAY_SIZE(ixgbe_vt_regs),
};
