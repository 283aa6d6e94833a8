/*
 * Intel 82599 10 GbE controller: transmit and receive datapath.
 *
 * Transmit: a tail write fetches descriptors in bursts of IXGBE_TX_BURST,
 * assembles frames (advanced context/data descriptors and legacy ones),
 * applies checksum/TSO offloads and sends them.  Descriptor write-back
 * follows TXDCTL.WTHRESH: with 0, each descriptor with RS is written back
 * at once; otherwise write-backs accumulate until WTHRESH are pending or
 * the queue's interrupt vector fires (EITR expiry), as on the real part.
 *
 * Receive: L2 filtering (RAR, MTA, promiscuous and broadcast modes, VLAN
 * filter), queue selection by the EtherType, SYN and 5-tuple filters
 * (ixgbe_ntuple.c) and the Flow Director (ixgbe_fdir.c) ahead of RSS
 * (Toeplitz hash over RSSRK, 128-entry RETA, MRQC hash types),
 * advanced one-buffer and legacy descriptors, frames spanning several
 * buffers, checksum and RSS-hash write-back, and
 * per-queue drop (SRRCTL.DROP_EN) when a ring has no free descriptors.
 * A received frame is not copied: classification reads its first bytes
 * and the guest's buffers are written from the backend's pieces.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "net/net.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "hw/pci/pci_device.h"
#include "system/dma.h"
#include "net_tx_pkt.h"
#include "net_rx_pkt.h"
#include "ixgbe_core.h"
#include "ixgbe_datapath.h"
#include "ixgbe_fc.h"
#include "ixgbe_ptp.h"
#include "ixgbe_fdir.h"
#include "ixgbe_ntuple.h"
#include "ixgbe_vt.h"
#include "ixgbe_sriov.h"
#include "ixgbe_iov.h"
#include "ixgbe_rsc.h"
#include "ixgbe_ipsec.h"
#include "ixgbe_rx_hdrs.h"
#include "ixgbe_rx_map.h"
#include "trace.h"

#define IXGBE_MIN_FRAME         60
#define IXGBE_STD_FRAME         1518
#define IXGBE_RX_BUF_DEFAULT    2048
/* The largest TSO packet: an 18-bit PAYLEN plus at most 512 header bytes */
#define IXGBE_TX_MAX_PACKET     (0x3FFFF + 512)
/*
 * A packet without offloads up to this size is read into core->tx_buf
 * (the largest frame the MAC sends is 15.5 KB)
 */
#define IXGBE_TX_PLAIN_MAX      16384

/* Add to a 64-bit counter kept as low/high register pair */
/*
 * The PCI function whose DMA a queue does: the PF's own, or a VF's when
 * the queue belongs to a VF's pool.  A PF without VFs goes no further.
 */
static PCIDevice *ixgbe_dma_dev(IxgbeCore *core, unsigned q)
{
    return ixgbe_vfs_enabled(core) ? ixgbe_queue_dma_dev(core, q)
                                   : core->owner;
}

/* Whether a queue belongs to a VF's pool */
static bool ixgbe_vf_queue(IxgbeCore *core, unsigned q)
{
    unsigned qpp;

    if (!ixgbe_vfs_enabled(core)) {
        return false;
    }
    qpp = ixgbe_sriov_queues_per_pool(core);
    return qpp && q / qpp < ixgbe_sriov_num_vfs(core);
}

static void ixgbe_stat64_add(IxgbeCore *core, hwaddr lo, uint64_t n)
{
    uint64_t v = ixgbe_get(core, lo) |
                 ((uint64_t)ixgbe_get(core, lo + 4) << 32);

    v += n;
    *ixgbe_reg(core, lo) = (uint32_t)v;
    *ixgbe_reg(core, lo + 4) = v >> 32;
}

static void ixgbe_stat_inc(IxgbeCore *core, hwaddr addr)
{
    if (ixgbe_get(core, addr) != UINT32_MAX) {
        (*ixgbe_reg(core, addr))++;
    }
}

static void ixgbe_size_stat(IxgbeCore *core, hwaddr base, size_t len)
{
    static const size_t limits[] = { 64, 127, 255, 511, 1023 };
    unsigned i = 0;

    while (i < ARRAY_SIZE(limits) && len > limits[i]) {
        i++;
    }
    ixgbe_stat_inc(core, base + i * 4);
}

/* Statistics counter index (0..15) a queue maps to via RQSMR/TQSM */
static unsigned ixgbe_queue_stat_index(IxgbeCore *core, hwaddr map0,
                                       unsigned q)
{
    return (ixgbe_get(core, map0 + (q / 4) * 4) >> ((q % 4) * 8)) & 0xF;
}

/* ------------------------------------------------------------------ */
/* Descriptor rings                                                    */
/* ------------------------------------------------------------------ */

/* One queue's ring as its registers describe it */
typedef struct IxgbeRing {
    const char *kind;           /* "txq" or "rxq", for messages */
    unsigned queue;
    uint64_t base;
    uint32_t n;                 /* descriptors */
    uint32_t *head;             /* TDH/RDH: advanced by the device */
    uint32_t tail;              /* TDT/RDT: written by the driver */
} IxgbeRing;

static void ixgbe_ring_init(IxgbeCore *core, IxgbeRing *r, bool tx,
                            unsigned q)
{
    hwaddr bal = tx ? ixgbe_txq_reg(q, IXGBE_TXQ_TDBAL)
                    : ixgbe_rxq_reg(q, IXGBE_RXQ_RDBAL);

    r->kind = tx ? "txq" : "rxq";
    r->queue = q;
    r->base = ((uint64_t)ixgbe_get(core, bal + 4) << 32) | ixgbe_get(core, bal);
    r->n = ixgbe_get(core, tx ? ixgbe_txq_reg(q, IXGBE_TXQ_TDLEN)
                         : ixgbe_rxq_reg(q, IXGBE_RXQ_RDLEN)) /
           IXGBE_DESC_SIZE;
    r->head = ixgbe_reg(core, tx ? ixgbe_txq_reg(q, IXGBE_TXQ_TDH)
                           : ixgbe_rxq_reg(q, IXGBE_RXQ_RDH));
    r->tail = ixgbe_get(core, tx ? ixgbe_txq_reg(q, IXGBE_TXQ_TDT)
                            : ixgbe_rxq_reg(q, IXGBE_RXQ_RDT));
}

/* Head and tail inside a non-empty ring; anything else is not processed */
static bool ixgbe_ring_check(const IxgbeRing *r)
{
    if (r->n && *r->head < r->n && r->tail < r->n) {
        return true;
    }
    qemu_log_mask(LOG_GUEST_ERROR,
                  "ixgbe: %s %u: head %u / tail %u outside a ring of %u "
                  "descriptors, queue not processed\n",
                  r->kind, r->queue, *r->head, r->tail, r->n);
    return false;
}

/* Descriptors the driver has handed to the device (head up to tail) */
static uint32_t ixgbe_ring_avail(const IxgbeRing *r)
{
    return (r->tail + r->n - *r->head) % r->n;
}

static uint64_t ixgbe_ring_desc_addr(const IxgbeRing *r, uint32_t idx)
{
    return r->base + (uint64_t)idx * IXGBE_DESC_SIZE;
}

/*
 * Fetch cnt descriptors from the head on (cnt <= ring size), in at most
 * two reads when the run wraps.  A failed read stops the queue where it
 * is: nothing is processed and the head does not move.
 */
static bool ixgbe_ring_fetch(IxgbeCore *core, const IxgbeRing *r, void *descs,
                             uint32_t cnt)
{
    uint32_t first = MIN(cnt, r->n - *r->head);
    uint8_t *buf = descs;

    if (pci_dma_read(ixgbe_dma_dev(core, r->queue),
                     ixgbe_ring_desc_addr(r, *r->head), buf,
                     (size_t)first * IXGBE_DESC_SIZE) != MEMTX_OK ||
        (cnt > first &&
         pci_dma_read(ixgbe_dma_dev(core, r->queue), r->base,
                      buf + first * IXGBE_DESC_SIZE,
                      (size_t)(cnt - first) * IXGBE_DESC_SIZE) != MEMTX_OK)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: %s %u: descriptor fetch at 0x%" PRIx64
                      " failed, queue stopped\n", r->kind, r->queue,
                      ixgbe_ring_desc_addr(r, *r->head));
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */
/* ------------------------------------------------------------------ */

/*
 * Count one frame as it leaves the MAC: a TSO packet is counted once per
 * segment, as the wire sees it.  The MAC counters (GOTC, PTCxx) include
 * padding to the minimum frame and the CRC; the queue byte counter (QBTC)
 * counts the frame without them, as DPDK's per-queue statistics expect.
 */
static void ixgbe_tx_stats(IxgbeCore *core, unsigned q,
                           const struct iovec *iov, int iovcnt, size_t len)
{
    size_t wire = MAX(len, IXGBE_MIN_FRAME) + 4;
    unsigned si = ixgbe_queue_stat_index(core, IXGBE_TQSM0, q);
    uint8_t dst[ETH_ALEN] = { 0 };

    iov_to_buf(iov, iovcnt, 0, dst, sizeof(dst));
    ixgbe_stat_inc(core, IXGBE_GPTC);
    ixgbe_stat_inc(core, IXGBE_TPT);
    ixgbe_stat64_add(core, IXGBE_GOTCL, wire);
    ixgbe_size_stat(core, IXGBE_PTC64, wire);
    if (is_broadcast_ether_addr(dst)) {
        ixgbe_stat_inc(core, IXGBE_BPTC);
    } else if (is_multicast_ether_addr(dst)) {
        ixgbe_stat_inc(core, IXGBE_MPTC);
    }
    ixgbe_stat_inc(core, IXGBE_QPTC(si));
    ixgbe_stat64_add(core, IXGBE_QBTC_L(si), len);
}

typedef struct IxgbeTxOut {
    IxgbeCore *core;
    unsigned queue;
    bool loopback;
    bool stamp;                 /* IEEE 1588: stamp the next frame out */
} IxgbeTxOut;

/* A queue's cause: a queue of a VF's pool interrupts the VF */
static void ixgbe_queue_cause(IxgbeCore *core, bool is_tx, unsigned q)
{
    if (!ixgbe_vfs_enabled(core) ||
        !ixgbe_sriov_queue_cause(core, is_tx, q)) {
        ixgbe_raise_queue_cause(core, is_tx, q);
    }
}

static bool ixgbe_rx_switched(IxgbeCore *core, const struct iovec *iov,
                              int iovcnt, unsigned src_pool);

/* One frame on the wire (one segment of a TSO packet) */
static void ixgbe_tx_out(void *opaque, const struct iovec *iov, int iovcnt,
                         const struct iovec *virt_iov, int virt_iovcnt)
{
    IxgbeTxOut *out = opaque;
    IxgbeCore *core = out->core;
    IxgbeVtTx to = IXGBE_VT_TX_WIRE;
    size_t len = iov_size(iov, iovcnt);
    int switch_pool;

    trace_ixgbe_tx_frame(out->queue, len);
    /* Pools: gating, anti-spoofing and the internal switch */
    if (!out->loopback && ixgbe_vt_active(core)) {
        to = ixgbe_vt_tx(core, out->queue, iov, iovcnt, &switch_pool);
        if (to == IXGBE_VT_TX_DROP) {
            return;
        }
        if (switch_pool >= 0) {
            ixgbe_rx_switched(core, iov, iovcnt, switch_pool);
        }
    }
    ixgbe_tx_stats(core, out->queue, iov, iovcnt, len);
    if (out->stamp) {
        /* As the frame leaves: the closest point to the peer's arrival */
        ixgbe_ptp_tx_stamp(core);
        out->stamp = false;
    }
    if (out->loopback) {
        ixgbe_rx_receive(core, iov, iovcnt, true);
    } else if (to == IXGBE_VT_TX_WIRE) {
        qemu_sendv_packet(qemu_get_queue(core->nic), iov, iovcnt);
    }
}

/*
 * Whether the packet's first descriptor asks for a VLAN tag to insert
 * (and which), with the pool's port VLAN (VMVIR) overriding the request
 */
static bool ixgbe_tx_vlan(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                          uint16_t *vlan)
{
    uint32_t cmd = txq->first_cmd, olinfo = txq->first_olinfo;
    IxgbeTxContext *ctx = &txq->ctx[(olinfo >> IXGBE_TXD_IDX_SHIFT) & 1];
    bool vle = cmd & IXGBE_TXD_CMD_VLE;

    /* The tag: a legacy descriptor's special field, or the context's */
    *vlan = !(cmd & IXGBE_TXD_CMD_DEXT) ? olinfo >> 16 :
            ctx->vlan_macip_lens >> IXGBE_TXCTX_VLAN_SHIFT;
    if (ixgbe_vt_active(core)) {
        vle = ixgbe_vt_tx_vlan(core, q, vle, vlan);
    }
    return vle;
}

/* Whether the packet goes out as its buffers hold it: no tag, no offload */
static bool ixgbe_tx_plain(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq)
{
    uint32_t cmd = txq->first_cmd, olinfo = txq->first_olinfo;
    uint16_t vlan;

    if (cmd & IXGBE_TXD_CMD_DEXT) {
        if ((cmd & IXGBE_TXD_CMD_TSE) ||
            (olinfo & (IXGBE_TXD_POPTS_TXSM | IXGBE_TXD_POPTS_IXSM))) {
            return false;
        }
    } else if (cmd & IXGBE_LTXD_CMD_IC) {
        return false;
    }
    return !ixgbe_tx_vlan(core, q, txq, &vlan);
}

static bool ixgbe_tx_offloads(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                              struct NetTxPkt *pkt)
{
    uint32_t cmd = txq->first_cmd, olinfo = txq->first_olinfo;
    IxgbeTxContext *ctx = &txq->ctx[(olinfo >> IXGBE_TXD_IDX_SHIFT) & 1];
    uint16_t tpid = ixgbe_get(core, IXGBE_VLNCTRL) & 0xFFFF;
    uint16_t vlan;

    if (ixgbe_tx_vlan(core, q, txq, &vlan)) {
        net_tx_pkt_setup_vlan_header_ex(pkt, vlan, tpid);
    }
    if (!(cmd & IXGBE_TXD_CMD_DEXT)) {
        /*
         * IC asks for the checksum from CSS stored at CSO: the TCP/UDP
         * checksum in practice, which the packet's own parse locates.
         */
        if (cmd & IXGBE_LTXD_CMD_IC) {
            return net_tx_pkt_build_vheader(pkt, false, true, 0);
        }
        return true;
    }
    if (cmd & IXGBE_TXD_CMD_TSE) {
        uint32_t mss = ctx->mss_l4len_idx >> IXGBE_TXCTX_MSS_SHIFT;

        /*
         * A tiny MSS turns one packet into tens of thousands of frames,
         * each costing the backend a full send: refuse it (see the device
         * documentation) rather than stall the main loop.
         */
        if (mss < IXGBE_TSO_MIN_MSS) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: TSO with MSS %u (minimum %u)\n",
                          mss, IXGBE_TSO_MIN_MSS);
            return false;
        }
        if (!net_tx_pkt_build_vheader(pkt, true, true, mss)) {
            return false;
        }
        net_tx_pkt_update_ip_checksums(pkt);
        return true;
    }
    if (olinfo & IXGBE_TXD_POPTS_TXSM) {
        bool ok;

        if ((ctx->type_tucmd_mlhl & IXGBE_TXCTX_L4T_MASK) ==
            IXGBE_TXCTX_L4T_SCTP) {
            ok = net_tx_pkt_update_sctp_checksum(pkt);
        } else {
            ok = net_tx_pkt_build_vheader(pkt, false, true, 0);
        }
        if (!ok) {
            return false;
        }
    }
    if (olinfo & IXGBE_TXD_POPTS_IXSM) {
        net_tx_pkt_update_ip_hdr_checksum(pkt);
    }
    return true;
}

/* Map the buffers of a complete packet of total bytes into core->tx_pkt */
static bool ixgbe_tx_map(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                         uint64_t total)
{
    AddressSpace *as = pci_get_address_space(ixgbe_dma_dev(core, q));

    if (total > IXGBE_TX_MAX_PACKET) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: txq %u: %" PRIu64 " byte packet exceeds %u "
                      "bytes, frame dropped\n", q, total, IXGBE_TX_MAX_PACKET);
        return false;
    }
    for (uint32_t i = 0; i < txq->nfrags; i++) {
        uint64_t addr = txq->frag_addr[i];
        uint32_t len = txq->frag_len[i];

        /*
         * Mapping an address with nothing behind it would succeed through
         * a bounce buffer reading zeros: check that the buffer is backed.
         */
        if (!dma_memory_valid(as, addr, len, DMA_DIRECTION_TO_DEVICE,
                              MEMTXATTRS_UNSPECIFIED) ||
            !net_tx_pkt_add_raw_fragment_pci(core->tx_pkt,
                                             ixgbe_dma_dev(core, q),
                                             addr, len)) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: txq %u: buffer 0x%" PRIx64 "+%u not mapped, "
                          "frame dropped\n", q, addr, len);
            return false;
        }
    }
    return true;
}

/* Inline IPsec: ESP done in the frame's bytes (ixgbe_ipsec.c) */
static bool ixgbe_tx_esp(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                         struct iovec *iov)
{
    IxgbeTxContext *ctx = &txq->ctx[(txq->first_olinfo >>
                                     IXGBE_TXD_IDX_SHIFT) & 1];
    uint16_t vlan;

    return ixgbe_ipsec_tx(core, q, ctx, txq->first_cmd, txq->first_olinfo,
                          core->tx_buf, iov->iov_len,
                          ixgbe_tx_vlan(core, q, txq, &vlan) ? &vlan : NULL,
                          IXGBE_TX_PLAIN_MAX, &iov->iov_len);
}

/*
 * A packet that goes out as its buffers hold it, read into one piece:
 * one DMA read per buffer, and nothing for net_tx_pkt to parse or the
 * backend to gather.
 */
static void ixgbe_tx_send_plain(IxgbeCore *core, unsigned q,
                                IxgbeTxQueue *txq, IxgbeTxOut *out)
{
    PCIDevice *dev = ixgbe_dma_dev(core, q);
    struct iovec iov = { .iov_base = core->tx_buf, .iov_len = 0 };
    uint32_t n = MIN(txq->nfrags, IXGBE_MAX_TX_FRAGS);

    /* Each copy bounded by the room left, whatever the fragments say */
    for (uint32_t i = 0; i < n; i++) {
        uint64_t addr = txq->frag_addr[i];
        uint32_t len = txq->frag_len[i];

        if (len > IXGBE_TX_PLAIN_MAX - iov.iov_len ||
            pci_dma_read(dev, addr, core->tx_buf + iov.iov_len, len) !=
            MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: txq %u: buffer 0x%" PRIx64 "+%u not "
                          "readable, frame dropped\n", q, addr, len);
            return;
        }
        iov.iov_len += len;
    }
    if (unlikely(ixgbe_ipsec_tx_wanted(txq->first_cmd, txq->first_olinfo)) &&
        !ixgbe_tx_esp(core, q, txq, &iov)) {
        return;
    }
    ixgbe_tx_out(out, &iov, 1, NULL, 0);
}

/* A complete packet of total bytes: plain, or through core->tx_pkt */
static void ixgbe_tx_send_pkt(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                              IxgbeTxOut *out, uint64_t total)
{
    struct NetTxPkt *pkt = core->tx_pkt;

    /* Less than an Ethernet header goes the long way, to be refused */
    if ((total >= ETH_HLEN && total <= IXGBE_TX_PLAIN_MAX &&
         ixgbe_tx_plain(core, q, txq)) ||
        ixgbe_ipsec_tx_wanted(txq->first_cmd, txq->first_olinfo)) {
        ixgbe_tx_send_plain(core, q, txq, out);
        return;
    }
    if (ixgbe_tx_map(core, q, txq, total)) {
        if (net_tx_pkt_parse(pkt) && ixgbe_tx_offloads(core, q, txq, pkt)) {
            /*
             * The peer never gets a virtio-net header from this device:
             * offloads (checksums, TCP and UDP segmentation) are done here.
             */
            if (!net_tx_pkt_send_custom(pkt, false, ixgbe_tx_out, out)) {
                qemu_log_mask(LOG_GUEST_ERROR,
                              "ixgbe: txq %u: segmentation of more than "
                              "64 KiB or without payload, frame dropped\n",
                              q);
            }
        } else {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: txq %u: malformed frame or offload request, "
                          "frame dropped\n", q);
        }
    }
    net_tx_pkt_reset(pkt, net_tx_pkt_unmap_frag_pci,
                     ixgbe_dma_dev(core, q));
}

static void ixgbe_tx_send(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq)
{
    uint32_t stamp = IXGBE_TXD_CMD_DEXT | IXGBE_TXD_CMD_TSTAMP;
    IxgbeTxOut out = {
        .core = core,
        .queue = q,
        .loopback = ixgbe_get(core, IXGBE_HLREG0) & IXGBE_HLREG0_LPBK,
        .stamp = (txq->first_cmd & stamp) == stamp,
    };
    uint64_t total = 0;

    /*
     * One packet at a time: core->tx_pkt and core->tx_buf are shared by
     * the queues.  Nothing reached from sending (loopback, the internal
     * switch, the backend) transmits, and the device's own DMA cannot
     * reach its registers (ixgbe_core_enter); should a way in appear,
     * it drops the inner packet instead of corrupting the outer one.
     */
    if (core->tx_busy) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: txq %u: packet sent while "
                      "another is being sent, frame dropped\n", q);
        return;
    }
    for (uint32_t i = 0; i < txq->nfrags; i++) {
        total += txq->frag_len[i];
    }
    core->tx_busy = true;
    ixgbe_tx_send_pkt(core, q, txq, &out, total);
    core->tx_busy = false;
}

/* Process one descriptor; returns true when it asks for status (RS) */
static bool ixgbe_tx_desc(IxgbeCore *core, unsigned q, IxgbeTxQueue *txq,
                          const IxgbeTxDesc *desc)
{
    uint64_t addr = le64_to_cpu(desc->addr);
    uint32_t cmd = le32_to_cpu(desc->cmd_type_len);
    uint32_t olinfo = le32_to_cpu(desc->olinfo_status);
    uint32_t len = cmd & IXGBE_TXD_DTALEN_MASK;

    if (cmd & IXGBE_TXD_CMD_DEXT) {
        uint32_t dtyp = cmd & IXGBE_TXD_DTYP_MASK;

        if (dtyp == IXGBE_TXD_DTYP_CTXT) {
            IxgbeTxContext *ctx = &txq->ctx[(olinfo >> IXGBE_TXD_IDX_SHIFT)
                                            & 1];

            ctx->vlan_macip_lens = (uint32_t)addr;
            ctx->seqnum_seed = addr >> 32;
            ctx->type_tucmd_mlhl = cmd;
            ctx->mss_l4len_idx = olinfo;
            return cmd & IXGBE_TXD_CMD_RS;
        }
        if (dtyp != IXGBE_TXD_DTYP_DATA) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: txq %u: descriptor type 0x%x ignored\n",
                          q, dtyp >> 20);
            return cmd & IXGBE_TXD_CMD_RS;
        }
    }

    if (!txq->in_packet) {
        txq->in_packet = true;
        txq->drop = false;
        txq->nfrags = 0;
        txq->first_cmd = cmd;
        txq->first_olinfo = olinfo;
    }
    if (len && !txq->drop) {
        if (txq->nfrags < IXGBE_MAX_TX_FRAGS) {
            txq->frag_addr[txq->nfrags] = addr;
            txq->frag_len[txq->nfrags] = len;
            txq->nfrags++;
        } else {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: txq %u: packet spans more than %u buffers, "
                          "frame dropped\n", q, IXGBE_MAX_TX_FRAGS);
            txq->drop = true;
        }
    }
    if (cmd & IXGBE_TXD_CMD_EOP) {
        if (!txq->drop) {
            ixgbe_tx_send(core, q, txq);
        }
        txq->in_packet = false;
        txq->drop = false;
        txq->nfrags = 0;
    }
    return cmd & IXGBE_TXD_CMD_RS;
}

/* Mark one descriptor done (STA.DD sits in byte 12 in both formats) */
static void ixgbe_tx_set_dd(IxgbeCore *core, const IxgbeRing *r, uint32_t idx)
{
    uint8_t sta = IXGBE_TXD_STA_DD;

    pci_dma_write(ixgbe_dma_dev(core, r->queue),
                  ixgbe_ring_desc_addr(r, idx) +
                  offsetof(IxgbeTxDesc, olinfo_status), &sta, 1);
}

/*
 * Mark cnt descriptors from idx on done, for a write-back held by
 * WTHRESH: each contiguous run is read and written back whole with DD
 * set (the driver does not touch descriptors it has not had back), two
 * DMAs instead of one per descriptor.  A run that cannot be read is
 * marked descriptor by descriptor.
 */
static void ixgbe_tx_set_dd_run(IxgbeCore *core, const IxgbeRing *r,
                                uint32_t idx, uint32_t cnt)
{
    PCIDevice *dev = ixgbe_dma_dev(core, r->queue);
    IxgbeTxDesc descs[IXGBE_TX_BURST];

    while (cnt) {
        uint32_t run = MIN(MIN(cnt, IXGBE_TX_BURST), r->n - idx);
        uint64_t addr = ixgbe_ring_desc_addr(r, idx);

        if (pci_dma_read(dev, addr, descs, run * sizeof(descs[0])) ==
            MEMTX_OK) {
            for (uint32_t i = 0; i < run; i++) {
                descs[i].olinfo_status |= cpu_to_le32(IXGBE_TXD_STA_DD);
            }
            pci_dma_write(dev, addr, descs, run * sizeof(descs[0]));
        } else {
            for (uint32_t i = 0; i < run; i++) {
                ixgbe_tx_set_dd(core, r, idx + i);
            }
        }
        idx = (idx + run) % r->n;
        cnt -= run;
    }
}

/* Head write-back replaces descriptor write-back when TDWBAL bit 0 is set */
static bool ixgbe_tx_head_wb(IxgbeCore *core, unsigned q)
{
    uint32_t lo = ixgbe_get(core, ixgbe_txq_reg(q, IXGBE_TXQ_TDWBAL));
    uint32_t head;
    uint64_t addr;

    if (!(lo & IXGBE_TDWBAL_HEAD_WB_EN)) {
        return false;
    }
    addr = ((uint64_t)ixgbe_get(core, ixgbe_txq_reg(q, IXGBE_TXQ_TDWBAH))
            << 32) |
           (lo & ~3u);
    head = cpu_to_le32(ixgbe_get(core, ixgbe_txq_reg(q, IXGBE_TXQ_TDH)));
    pci_dma_write(ixgbe_dma_dev(core, q), addr, &head, sizeof(head));
    return true;
}

void ixgbe_tx_flush_writeback(IxgbeCore *core, unsigned q)
{
    IxgbeTxQueue *txq = &core->txq[q];
    IxgbeRing r;

    if (!txq->wb_pending) {
        return;
    }
    trace_ixgbe_tx_writeback(q, txq->wb_pending);
    ixgbe_ring_init(core, &r, true, q);
    if (!ixgbe_tx_head_wb(core, q) && r.n) {
        /* wb_pending never exceeds the ring (checked on migration too) */
        ixgbe_tx_set_dd_run(core, &r, txq->wb_next % r.n,
                            MIN(txq->wb_pending, r.n));
    }
    txq->wb_next = (txq->wb_next + txq->wb_pending) % MAX(r.n, 1);
    txq->wb_pending = 0;
}

void ixgbe_tx_kick(IxgbeCore *core, unsigned q)
{
    IxgbeTxQueue *txq = &core->txq[q];
    IxgbeTxDesc burst[IXGBE_TX_BURST];
    uint32_t txdctl = ixgbe_get(core, ixgbe_txq_reg(q, IXGBE_TXQ_TXDCTL));
    uint32_t wthresh = (txdctl >> IXGBE_TXDCTL_WTHRESH_SHIFT) &
                       IXGBE_TXDCTL_WTHRESH_MASK;
    bool done_any = false;
    IxgbeRing r;

    if (!(ixgbe_get(core, IXGBE_DMATXCTL) & IXGBE_DMATXCTL_TE) ||
        !(txdctl & IXGBE_TXDCTL_ENABLE)) {
        return;
    }
    ixgbe_ring_init(core, &r, true, q);
    if (*r.head == r.tail || !ixgbe_ring_check(&r)) {
        return;
    }
    if (txq->wb_pending == 0) {
        txq->wb_next = *r.head;
    }

    while (*r.head != r.tail) {
        unsigned cnt = MIN(IXGBE_TX_BURST, ixgbe_ring_avail(&r));

        if (!ixgbe_ring_fetch(core, &r, burst, cnt)) {
            break;
        }
        trace_ixgbe_tx_fetch(q, *r.head, cnt);
        for (unsigned i = 0; i < cnt; i++) {
            uint32_t idx = *r.head;
            bool rs = ixgbe_tx_desc(core, q, txq, &burst[i]);

            *r.head = (idx + 1) % r.n;
            done_any = true;
            if (wthresh == 0) {
                if (rs && !ixgbe_tx_head_wb(core, q)) {
                    ixgbe_tx_set_dd(core, &r, idx);
                }
                txq->wb_next = *r.head;
            } else if (++txq->wb_pending >= MIN(wthresh, r.n)) {
                /* WTHRESH reached, or every descriptor of the ring done */
                ixgbe_tx_flush_writeback(core, q);
            }
        }
    }
    if (done_any) {
        /* The interrupt also flushes write-backs below WTHRESH */
        ixgbe_queue_cause(core, true, q);
    }
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static bool ixgbe_rx_accept(IxgbeCore *core, const uint8_t *buf)
{
    uint32_t fctrl = ixgbe_get(core, IXGBE_FCTRL);
    uint32_t vlnctrl = ixgbe_get(core, IXGBE_VLNCTRL);
    const struct eth_header *eh = (const struct eth_header *)buf;

    if ((vlnctrl & IXGBE_VLNCTRL_VFE) &&
        be16_to_cpu(eh->h_proto) == (vlnctrl & 0xFFFF)) {
        uint16_t vid = lduw_be_p(buf + 14) & 0xFFF;

        uint32_t vfta = ixgbe_get(core, IXGBE_VFTA(vid >> 5));

        if (!(vfta & BIT(vid & 0x1F))) {
            return false;
        }
    }
    if (is_broadcast_ether_addr(buf)) {
        return fctrl & IXGBE_FCTRL_BAM;
    }
    if (is_multicast_ether_addr(buf)) {
        uint32_t mc = ixgbe_get(core, IXGBE_MCSTCTRL);
        static const int shift[] = { 4, 3, 2, 0 };
        uint32_t hash;

        if (fctrl & IXGBE_FCTRL_MPE) {
            return true;
        }
        if (!(mc & IXGBE_MCSTCTRL_MFE)) {
            return false;
        }
        hash = ((buf[4] >> shift[mc & IXGBE_MCSTCTRL_MO_MASK]) |
                (buf[5] << (8 - shift[mc & IXGBE_MCSTCTRL_MO_MASK]))) & 0xFFF;
        return ixgbe_get(core, IXGBE_MTA(hash >> 5)) & BIT(hash & 0x1F);
    }
    if (fctrl & IXGBE_FCTRL_UPE) {
        return true;
    }
    for (unsigned i = 0; i < IXGBE_RAR_ENTRIES; i++) {
        uint32_t ral = ixgbe_get(core, IXGBE_RAL(i));
        uint32_t rah = ixgbe_get(core, IXGBE_RAH(i));

        if ((rah & IXGBE_RAH_AV) && ldl_le_p(buf) == ral &&
            lduw_le_p(buf + 4) == (rah & 0xFFFF)) {
            return true;
        }
    }
    return false;
}

/*
 * Bytes of a frame's start that classification reads at most: Ethernet
 * header and one VLAN tag (18), an IPv4 header with options (60), L4 ports
 * (4) or the Flow Director's flexible bytes (at most at offset 62), a PTP
 * header after UDP (8 + 34): 120 bytes.
 */
#define IXGBE_RX_HDR_MAX        128

/*
 * A received frame where the backend left it (iov), at least
 * IXGBE_MIN_FRAME bytes (a shorter one is first padded into a small
 * buffer), and its first bytes, which the filters, RSS, the Flow Director,
 * the pools and PTP look at.
 */
typedef struct IxgbeRxFrame {
    const struct iovec *iov;
    int iovcnt;
    size_t len;                 /* with padding, without the CRC */
    const uint8_t *hdr;         /* the first hdr_len bytes */
    size_t hdr_len;             /* MIN(len, IXGBE_RX_HDR_MAX) */
    bool has_vlan;              /* tagged with VLNCTRL's TPID */
    uint16_t vlan_tag;
} IxgbeRxFrame;

typedef struct IxgbeRxInfo {
    unsigned queue;
    uint32_t hash;
    uint32_t rss_type;
    uint32_t pkt_type;
    uint32_t status;        /* checksum status and error bits */
} IxgbeRxInfo;

/* Pick the RSS hash type the MRQC fields allow for this packet */
static int ixgbe_rss_type(IxgbeCore *core, bool ip4, bool ip6,
                          EthL4HdrProto l4, NetRxPktRssType *type)
{
    uint32_t mrqc = ixgbe_get(core, IXGBE_MRQC);

    if (ip4) {
        if (l4 == ETH_L4_HDR_PROTO_TCP && (mrqc & IXGBE_MRQC_TCPIPV4)) {
            *type = NetPktRssIpV4Tcp;
            return IXGBE_RSSTYPE_IPV4_TCP;
        }
        if (l4 == ETH_L4_HDR_PROTO_UDP && (mrqc & IXGBE_MRQC_UDPIPV4)) {
            *type = NetPktRssIpV4Udp;
            return IXGBE_RSSTYPE_IPV4_UDP;
        }
        if (mrqc & IXGBE_MRQC_IPV4) {
            *type = NetPktRssIpV4;
            return IXGBE_RSSTYPE_IPV4;
        }
    } else if (ip6) {
        if (l4 == ETH_L4_HDR_PROTO_TCP && (mrqc & IXGBE_MRQC_TCPIPV6)) {
            *type = NetPktRssIpV6Tcp;
            return IXGBE_RSSTYPE_IPV6_TCP;
        }
        if (l4 == ETH_L4_HDR_PROTO_UDP && (mrqc & IXGBE_MRQC_UDPIPV6)) {
            *type = NetPktRssIpV6Udp;
            return IXGBE_RSSTYPE_IPV6_UDP;
        }
        if (mrqc & IXGBE_MRQC_IPV6) {
            *type = NetPktRssIpV6;
            return IXGBE_RSSTYPE_IPV6;
        }
    }
    return IXGBE_RSSTYPE_NONE;
}

static void ixgbe_rx_rss(IxgbeCore *core, IxgbeRxInfo *info,
                         const IxgbeRxHdrs *h, struct NetRxPkt *pkt)
{
    NetRxPktRssType type;
    uint8_t key[IXGBE_RSS_KEY_SIZE];

    if (!ixgbe_vt_mrqc_rss(ixgbe_get(core, IXGBE_MRQC))) {
        return;
    }
    info->rss_type = ixgbe_rss_type(core, h->ip4, h->ip6, h->l4, &type);
    if (info->rss_type == IXGBE_RSSTYPE_NONE) {
        return;
    }
    for (unsigned i = 0; i < IXGBE_RSS_KEY_SIZE; i++) {
        key[i] = ixgbe_get(core, IXGBE_RSSRK(i / 4)) >> ((i & 3) * 8);
    }
    if (pkt) {
        info->hash = net_rx_pkt_calc_rss_hash(pkt, type, key);
    } else {
        info->hash = ixgbe_rx_hdrs_rss_ip4(h, type != NetPktRssIpV4, key);
    }
    {
        unsigned idx = info->hash & (IXGBE_RETA_ENTRIES - 1);

        info->queue = (ixgbe_get(core, IXGBE_RETA(idx / 4)) >>
                       ((idx & 3) * 8)) & 0xF;
    }
}

/* A Flow Director filter the frame matches takes precedence over RSS */
static void ixgbe_rx_fdir(IxgbeCore *core, const IxgbeRxFrame *f,
                          IxgbeRxInfo *info)
{
    IxgbeFdirResult res;

    if (!ixgbe_fdir_classify(core, f->hdr, f->hdr_len, &res)) {
        return;
    }
    if (res.steer) {
        info->queue = res.queue;
    }
    if (res.match && res.report) {
        info->status |= res.status;
        info->rss_type = IXGBE_RSSTYPE_FDIR;
        info->hash = res.id;
    }
}

/*
 * The sum of a TCP/UDP pseudo header: source and destination addresses of
 * alen bytes each, adjacent in the IP header as in both versions, the
 * protocol and the length (what eth_calc_ip4_pseudo_hdr_csum() and
 * eth_calc_ip6_pseudo_hdr_csum() give, without building the header)
 */
static uint32_t ixgbe_pseudo_sum(const uint8_t *addrs, size_t alen,
                                 uint8_t proto, uint16_t len)
{
    uint32_t sum = proto + len;

    for (size_t i = 0; i < 2 * alen; i += 2) {
        sum += lduw_be_p(addrs + i);
    }
    return sum;
}

/* The sum of bytes [off, off + n) of a frame, from its first bytes if there */
static uint32_t ixgbe_rx_sum(const IxgbeRxFrame *f, size_t off, size_t n)
{
    if (off + n <= f->hdr_len) {
        return net_checksum_add(n, (uint8_t *)f->hdr + off);
    }
    return net_checksum_add_iov(f->iov, f->iovcnt, off, n, 0);
}

/* Whether the IPv4 header checksum of a parsed frame is right */
static bool ixgbe_rx_ip4_csum_ok(const IxgbeRxFrame *f, const IxgbeRxHdrs *h)
{
    size_t hlen = (h->ip[0] & 0x0F) << 2;

    return net_checksum_finish(ixgbe_rx_sum(f, h->l3off, hlen)) == 0;
}

/*
 * The TCP or UDP checksum of a parsed frame, over the frame where it lies
 * in the backend's pieces: false when there is none to check (an IPv4 fragment,
 * a UDP datagram sent without one), else *ok says whether it is right.
 * The length checked is the one the headers give, cut at the frame's end.
 * An IPv6 frame's pseudo header comes from net_rx_pkt's parse (pkt).
 */
static bool ixgbe_rx_l4_csum(struct NetRxPkt *pkt, const IxgbeRxFrame *f,
                             const IxgbeRxHdrs *h, bool *ok)
{
    bool udp = h->l4 == ETH_L4_HDR_PROTO_UDP;
    const uint8_t *l4h = h->l4h;
    uint8_t l4hdr[8];
    uint32_t sum;
    uint16_t csl = 0;

    if (h->frag) {
        return false;
    }
    if (udp) {
        if (!l4h) {
            if (iov_to_buf(f->iov, f->iovcnt, h->l4off, l4hdr,
                           sizeof(l4hdr)) != sizeof(l4hdr)) {
                return false;
            }
            l4h = l4hdr;
        }
        if (lduw_be_p(l4h + 6) == 0) {
            return false;
        }
        csl = lduw_be_p(l4h + 4);
    }
    if (h->ip4) {
        if (!udp) {
            csl = lduw_be_p(h->ip + 2) - ((h->ip[0] & 0x0F) << 2);
        }
        sum = ixgbe_pseudo_sum(h->ip + 12, 4, h->ip[9], csl);
    } else {
        eth_ip6_hdr_info *info = net_rx_pkt_get_ip6_info(pkt);
        struct ip6_header *iph = &info->ip6_hdr;

        if (!udp) {
            csl = be16_to_cpu(iph->ip6_ctlun.ip6_un1.ip6_un1_plen) -
                  (info->full_hdr_len - sizeof(*iph));
        }
        sum = ixgbe_pseudo_sum((const uint8_t *)&iph->ip6_src, 16,
                               info->l4proto, csl);
    }
    sum += ixgbe_rx_sum(f, h->l4off, csl);
    sum = net_checksum_finish_nozero(sum);
    *ok = sum == 0 || sum == 0xFFFF;
    return true;
}

/*
 * The frame's headers: from its first bytes where they are enough (IPv4,
 * non-IP), else from net_rx_pkt's parse, which is then returned
 */
static struct NetRxPkt *ixgbe_rx_parse(IxgbeCore *core, const IxgbeRxFrame *f,
                                       IxgbeRxHdrs *h)
{
    struct NetRxPkt *pkt = core->rx_pkt;
    eth_ip4_hdr_info *ip4;

    if (ixgbe_rx_hdrs_parse(h, f->hdr, f->hdr_len, f->len)) {
        return NULL;
    }
    net_rx_pkt_set_packet_type(pkt, get_eth_packet_type(
                                   (const struct eth_header *)f->hdr));
    net_rx_pkt_attach_iovec(pkt, f->iov, f->iovcnt, 0, false);
    memset(h, 0, sizeof(*h));
    net_rx_pkt_get_protocols(pkt, &h->ip4, &h->ip6, &h->l4);
    if (h->ip4) {
        ip4 = net_rx_pkt_get_ip4_info(pkt);
        h->ip = (const uint8_t *)&ip4->ip4_hdr;
        h->frag = ip4->fragment;
    }
    if (h->ip4 || h->ip6) {
        h->l4off = net_rx_pkt_get_l4_hdr_offset(pkt);
    }
    if (h->ip4) {
        h->l3off = h->l4off - ((h->ip[0] & 0x0F) << 2);
    }
    return pkt;
}

static void ixgbe_rx_classify(IxgbeCore *core, const IxgbeRxFrame *f,
                              IxgbeRxInfo *info)
{
    IxgbeRxHdrs h;
    struct NetRxPkt *pkt = ixgbe_rx_parse(core, f, &h);
    bool csum_ok;

    memset(info, 0, sizeof(*info));
    if (h.ip4) {
        info->pkt_type |= IXGBE_RXD_PKTTYPE_IPV4;
    }
    if (h.ip6) {
        info->pkt_type |= IXGBE_RXD_PKTTYPE_IPV6;
    }
    if (h.l4 == ETH_L4_HDR_PROTO_TCP) {
        info->pkt_type |= IXGBE_RXD_PKTTYPE_TCP;
    } else if (h.l4 == ETH_L4_HDR_PROTO_UDP) {
        info->pkt_type |= IXGBE_RXD_PKTTYPE_UDP;
    } else if (h.l4 == ETH_L4_HDR_PROTO_SCTP) {
        info->pkt_type |= IXGBE_RXD_PKTTYPE_SCTP;
    }

    /* Checksums: the 82599 checks IPv4 headers and TCP/UDP always */
    if (h.ip4) {
        csum_ok = ixgbe_rx_ip4_csum_ok(f, &h);
        info->status |= IXGBE_RXD_STAT_IPCS;
        if (!csum_ok) {
            info->status |= IXGBE_RXD_ERR_IPE;
        }
    }
    if ((h.l4 == ETH_L4_HDR_PROTO_TCP || h.l4 == ETH_L4_HDR_PROTO_UDP) &&
        ixgbe_rx_l4_csum(pkt, f, &h, &csum_ok)) {
        info->status |= IXGBE_RXD_STAT_L4CS;
        if (h.l4 == ETH_L4_HDR_PROTO_UDP) {
            info->status |= IXGBE_RXD_STAT_UDPCS;
        }
        if (!csum_ok) {
            info->status |= IXGBE_RXD_ERR_TCPE;
        }
    }

    ixgbe_rx_rss(core, info, &h, pkt);
    /*
     * The EtherType, SYN and 5-tuple filters, then the Flow Director: their
     * queues are not relative to pools, so not with VT
     */
    if (!ixgbe_vt_active(core) &&
        !ixgbe_ntuple_classify(core, f->hdr, f->hdr_len, &info->queue)) {
        ixgbe_rx_fdir(core, f, info);
    }
}

static unsigned ixgbe_rx_buf_size(uint32_t srrctl)
{
    unsigned kb = srrctl & IXGBE_SRRCTL_BSIZEPKT_MASK;

    return kb ? kb * KiB : IXGBE_RX_BUF_DEFAULT;
}

/*
 * The MAC counts every frame that passed its filters, whether or not a
 * queue could take it: len is the bytes meant for host memory (without
 * the CRC when it is stripped, without a stripped VLAN tag); wire is the
 * frame as received, with its CRC, which the total-octets and size-bucket
 * counters count.
 */
static void ixgbe_rx_mac_stats(IxgbeCore *core, const uint8_t *buf,
                               size_t len, size_t wire)
{
    ixgbe_stat_inc(core, IXGBE_GPRC);
    ixgbe_stat_inc(core, IXGBE_TPR);
    ixgbe_stat64_add(core, IXGBE_GORCL, len);
    ixgbe_stat64_add(core, IXGBE_TORL, wire);
    ixgbe_size_stat(core, IXGBE_PRC64, wire);
    if (is_broadcast_ether_addr(buf)) {
        ixgbe_stat_inc(core, IXGBE_BPRC);
    } else if (is_multicast_ether_addr(buf)) {
        ixgbe_stat_inc(core, IXGBE_MPRC);
    }
}

/* The queue counters count what reached host memory */
static void ixgbe_rx_queue_stats(IxgbeCore *core, unsigned q, size_t len)
{
    unsigned si = ixgbe_queue_stat_index(core, IXGBE_RQSMR0, q);

    ixgbe_stat_inc(core, IXGBE_QPRC(si));
    ixgbe_stat64_add(core, IXGBE_QBRC_L(si), len);
}

static void ixgbe_rx_drop(IxgbeCore *core, unsigned q)
{
    unsigned si = ixgbe_queue_stat_index(core, IXGBE_RQSMR0, q);

    ixgbe_stat_inc(core, IXGBE_RNBC0);
    ixgbe_stat_inc(core, IXGBE_QPRDC(si));
    trace_ixgbe_rx_drop(q);
}

bool ixgbe_rx_can_receive(IxgbeCore *core)
{
    return (ixgbe_get(core, IXGBE_RXCTRL) & IXGBE_RXCTRL_RXEN) &&
           (core->owner->config[PCI_COMMAND] & PCI_COMMAND_MASTER);
}

/* Fill in the write-back of one receive descriptor */
static void ixgbe_rx_writeback(IxgbeRxDesc *d, bool legacy, size_t chunk,
                               uint32_t status, const IxgbeRxInfo *info,
                               uint16_t vlan_tag)
{
    memset(d, 0, sizeof(*d));
    if (legacy) {
        d->legacy.length = cpu_to_le16(chunk);
        d->legacy.status = status & 0xFF;
        d->legacy.errors = status >> 24;
        d->legacy.special = cpu_to_le16(vlan_tag);
    } else {
        d->wb.info = cpu_to_le32(info->rss_type |
                                 (info->pkt_type << IXGBE_RXD_PKTTYPE_SHIFT));
        d->wb.rss_hash = cpu_to_le32(info->hash);
        d->wb.status_error = cpu_to_le32(status);
        d->wb.length = cpu_to_le16(chunk);
        d->wb.vlan = cpu_to_le16(vlan_tag);
    }
}

typedef enum IxgbeRxResult {
    IXGBE_RX_DELIVERED,         /* in host memory, descriptors written back */
    IXGBE_RX_DROPPED,           /* gone (counted or logged as such) */
    IXGBE_RX_HELD,              /* no descriptors: the frame must wait */
    IXGBE_RX_DISABLED,          /* the queue is not enabled */
    IXGBE_RX_COALESCED,         /* in host memory, in an open aggregate */
    IXGBE_RX_NOT_COALESCED,     /* for the ring as a frame of its own */
} IxgbeRxResult;

/*
 * DMA for the receive path, one place per direction: a queue of a VF's
 * pool does its DMA as that VF.
 */
static MemTxResult ixgbe_rx_dma_write(IxgbeCore *core, unsigned q,
                                      uint64_t addr, const void *buf,
                                      size_t len)
{
    return pci_dma_write(ixgbe_dma_dev(core, q), addr, buf, len);
}

/*
 * A frame's bytes into a receive buffer: through a mapping of guest RAM
 * where there is one (ixgbe_rx_map.c), else by DMA.
 */
static MemTxResult ixgbe_rx_buf_write(IxgbeCore *core, unsigned q,
                                      uint64_t addr, const void *buf,
                                      size_t len)
{
    if (ixgbe_dma_dev(core, q) == core->owner &&
        ixgbe_rx_map_write(core, addr, buf, len)) {
        return MEMTX_OK;
    }
    return ixgbe_rx_dma_write(core, q, addr, buf, len);
}

typedef struct IxgbeRxDmaIov {
    IxgbeCore *core;
    unsigned queue;
    uint64_t addr;
    MemTxResult res;
} IxgbeRxDmaIov;

static void ixgbe_rx_dma_write_piece(void *opaque, const uint8_t *buf,
                                     size_t len, size_t pos)
{
    IxgbeRxDmaIov *d = opaque;

    d->res |= ixgbe_rx_buf_write(d->core, d->queue, d->addr + pos, buf, len);
}

/* Bytes [off, off + n) of an iovec to guest address addr */
static MemTxResult ixgbe_rx_dma_write_iov(IxgbeCore *core, unsigned q,
                                          uint64_t addr,
                                          const struct iovec *iov,
                                          int iovcnt, size_t off, size_t n)
{
    IxgbeRxDmaIov d;

    /* Most frames are in one piece: no walk */
    if (iovcnt >= 1 && n <= iov[0].iov_len && off <= iov[0].iov_len - n) {
        return ixgbe_rx_buf_write(core, q, addr,
                                  (const uint8_t *)iov[0].iov_base + off, n);
    }
    d = (IxgbeRxDmaIov) { .core = core, .queue = q, .addr = addr };
    ixgbe_iov_walk(iov, iovcnt, off, n, ixgbe_rx_dma_write_piece, &d);
    return d.res;
}

/*
 * What of a frame reaches host memory, without copying it: the frame's
 * bytes, less a VLAN tag the queue strips (bytes 12-15), plus the CRC the
 * port keeps.
 */
typedef struct IxgbeRxData {
    const IxgbeRxFrame *frame;
    size_t len;                 /* bytes for host memory, CRC included */
    bool strip;                 /* the tag is left out */
    bool crc;                   /* the last four bytes are fcs */
    uint8_t fcs[4];
} IxgbeRxData;

static void ixgbe_rx_data_init(IxgbeRxData *d, const IxgbeRxFrame *f,
                               bool strip, bool keep_crc)
{
    const struct iovec *iov = f->iov;
    int iovcnt = f->iovcnt;

    d->frame = f;
    d->strip = strip;
    d->crc = keep_crc;
    d->len = f->len - (strip ? 4 : 0);
    if (keep_crc) {
        uint32_t crc;

        if (strip) {
            crc = ixgbe_iov_crc(0, iov, iovcnt, 0, 12);
            crc = ixgbe_iov_crc(crc, iov, iovcnt, 16, f->len - 16);
        } else {
            crc = ixgbe_iov_crc(0, iov, iovcnt, 0, f->len);
        }
        stl_le_p(d->fcs, crc);
        d->len += 4;
    }
}

/* Bytes [off, off + n) of what reaches host memory to guest address addr */
static MemTxResult ixgbe_rx_data_write(IxgbeCore *core, unsigned q,
                                       const IxgbeRxData *d, size_t off,
                                       uint64_t addr, size_t n)
{
    size_t body = d->len - (d->crc ? 4 : 0);
    MemTxResult res = MEMTX_OK;

    while (n) {
        size_t run, src = off;

        if (off >= body) {
            run = MIN(n, d->len - off);
            res |= ixgbe_rx_buf_write(core, q, addr, d->fcs + (off - body),
                                      run);
        } else {
            run = MIN(n, body - off);
            if (d->strip) {
                if (off < 12) {
                    run = MIN(run, 12 - off);
                } else {
                    src += 4;
                }
            }
            res |= ixgbe_rx_dma_write_iov(core, q, addr, d->frame->iov,
                                          d->frame->iovcnt, src, run);
        }
        off += run;
        addr += run;
        n -= run;
    }
    return res;
}

/* ------------------------------------------------------------------ */
/* Receive descriptor cache and write-back                             */
/* ------------------------------------------------------------------ */

/*
 * Each receive queue reads descriptors ahead into a cache of its own and
 * holds completed descriptors back until RXDCTL.WTHRESH of them are
 * pending, as the hardware does:
 *
 *  - A frame that needs more descriptors than the cache holds fetches
 *    every descriptor the driver has made available, up to the cache's
 *    size, in one or two reads.  A tail write with RXDCTL.PTHRESH set
 *    fetches ahead when fewer than PTHRESH descriptors are cached and at
 *    least HTHRESH more are available.  Should the burst not be readable,
 *    only the descriptors the frame needs are read; if those cannot be,
 *    the frame is dropped without a write and the head stays.
 *  - With WTHRESH 0 a frame's descriptors are written back as soon as its
 *    data is in memory.  Otherwise they are held until WTHRESH are
 *    pending, or the queue's interrupt vector fires (so a driver waiting
 *    for its interrupt always finds them), or the queue is disabled or
 *    flushed (RXDCTL.SWFLSH), or its ring registers are written, or the
 *    VM stops (so a migration's last pass of RAM carries them).  Queues
 *    whose cause no PF vector takes (no valid IVAR entry, or a VF's pool)
 *    write back at once.
 *
 * The cache and the held write-backs belong to the ring they were read
 * from (base and size); a ring reprogrammed behind the device's back
 * writes back what it held to the old ring and reads the new one afresh.
 */

static MemTxResult ixgbe_rx_dma_read(IxgbeCore *core, unsigned q,
                                     uint64_t addr, void *buf, size_t len)
{
    return pci_dma_read(ixgbe_dma_dev(core, q), addr, buf, len);
}

/* Write cnt descriptors to ring entries idx... of queue q's cached ring */
static void ixgbe_rx_desc_write(IxgbeCore *core, unsigned q, uint32_t idx,
                                const IxgbeRxDesc *descs, uint32_t cnt)
{
    IxgbeRxQueue *rxq = &core->rxq[q];
    uint32_t first = MIN(cnt, rxq->n - idx);
    MemoryRegionCache *map = ixgbe_dma_dev(core, q) == core->owner ?
                             ixgbe_rx_map_ring(core, q, rxq->base, rxq->n) :
                             NULL;

    if (map && idx < rxq->n && cnt <= rxq->n) {
        hwaddr off = (hwaddr)idx * IXGBE_DESC_SIZE;

        /* ordered after the frame's data, as dma_memory_rw() orders it */
        smp_mb();
        address_space_write_cached(map, off, descs,
                                   (hwaddr)first * IXGBE_DESC_SIZE);
        address_space_cache_invalidate(map, off,
                                       (hwaddr)first * IXGBE_DESC_SIZE);
        if (cnt > first) {
            address_space_write_cached(map, 0, descs + first,
                                       (hwaddr)(cnt - first) *
                                       IXGBE_DESC_SIZE);
            address_space_cache_invalidate(map, 0, (hwaddr)(cnt - first) *
                                           IXGBE_DESC_SIZE);
        }
        return;
    }
    ixgbe_rx_dma_write(core, q, rxq->base + (uint64_t)idx * IXGBE_DESC_SIZE,
                       descs, (size_t)first * IXGBE_DESC_SIZE);
    if (cnt > first) {
        ixgbe_rx_dma_write(core, q, rxq->base, descs + first,
                           (size_t)(cnt - first) * IXGBE_DESC_SIZE);
    }
}

void ixgbe_rx_flush_writeback(IxgbeCore *core, unsigned q)
{
    IxgbeRxQueue *rxq = &core->rxq[q];

    if (!rxq->wb_cnt) {
        return;
    }
    trace_ixgbe_rx_writeback(q, rxq->wb_cnt);
    ixgbe_rx_desc_write(core, q, rxq->wb_idx, rxq->wb, rxq->wb_cnt);
    rxq->wb_cnt = 0;
    core->rx_wb_map[q / 64] &= ~BIT_ULL(q % 64);
}

/*
 * The driver stopped the queue, flushed it or reprogrammed its ring:
 * write back what is held, forget what was read ahead.
 */
void ixgbe_rx_queue_sync(IxgbeCore *core, unsigned q)
{
    ixgbe_rsc_close_queue(core, q);
    ixgbe_rx_flush_writeback(core, q);
    core->rxq[q].cache_cnt = 0;
    core->rxq[q].cache_pos = 0;
}

/* Every queue: the VM stops, or its state is saved */
void ixgbe_rx_flush_all(IxgbeCore *core, bool drop_cache)
{
    for (unsigned q = 0; q < IXGBE_NUM_QUEUES; q++) {
        if (drop_cache) {
            ixgbe_rx_queue_sync(core, q);
        } else {
            ixgbe_rx_flush_writeback(core, q);
        }
    }
}

/*
 * Make the queue's cache describe ring r as it is: a new ring writes back
 * what the old one held; a head the driver moved, or a tail it moved
 * back, leaves out what no longer follows the head.
 */
static void ixgbe_rx_cache_check(IxgbeCore *core, unsigned q,
                                 const IxgbeRing *r)
{
    IxgbeRxQueue *rxq = &core->rxq[q];

    if (rxq->base != r->base || rxq->n != r->n) {
        ixgbe_rx_flush_writeback(core, q);
        rxq->base = r->base;
        rxq->n = r->n;
        rxq->cache_cnt = 0;
    } else if (rxq->cache_idx != *r->head) {
        rxq->cache_cnt = 0;
    }
    if (!rxq->cache_cnt) {
        rxq->cache_idx = *r->head;
        rxq->cache_pos = 0;
    }
    rxq->cache_cnt = MIN(rxq->cache_cnt, ixgbe_ring_avail(r));
}

/* Read cnt more descriptors, those after the cached ones */
static bool ixgbe_rx_cache_fill(IxgbeCore *core, unsigned q, uint32_t cnt,
                                bool log)
{
    IxgbeRxQueue *rxq = &core->rxq[q];
    uint32_t start = (rxq->cache_idx + rxq->cache_cnt) % rxq->n;
    uint32_t first = MIN(cnt, rxq->n - start);
    IxgbeRxDesc *dst;

    if (rxq->cache_pos) {
        memmove(rxq->cache, rxq->cache + rxq->cache_pos,
                rxq->cache_cnt * sizeof(rxq->cache[0]));
        rxq->cache_pos = 0;
    }
    dst = rxq->cache + rxq->cache_cnt;
    if (ixgbe_rx_dma_read(core, q,
                          rxq->base + (uint64_t)start * IXGBE_DESC_SIZE, dst,
                          (size_t)first * IXGBE_DESC_SIZE) != MEMTX_OK ||
        (cnt > first &&
         ixgbe_rx_dma_read(core, q, rxq->base, dst + first,
                           (size_t)(cnt - first) * IXGBE_DESC_SIZE) !=
         MEMTX_OK)) {
        if (log) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: rxq %u: descriptor fetch at 0x%" PRIx64
                          " failed, queue stopped\n", q,
                          rxq->base + (uint64_t)start * IXGBE_DESC_SIZE);
        }
        return false;
    }
    trace_ixgbe_rx_fetch(q, cnt, start);
    rxq->cache_cnt += cnt;
    return true;
}

/*
 * The next need descriptors of ring r (need <= available), read ahead or
 * read now; NULL when they cannot be read.  They are taken: the caller
 * fills them in as write-backs.
 */
static IxgbeRxDesc *ixgbe_rx_cache_take(IxgbeCore *core, unsigned q,
                                        const IxgbeRing *r, uint32_t need)
{
    IxgbeRxQueue *rxq = &core->rxq[q];
    IxgbeRxDesc *descs;

    ixgbe_rx_cache_check(core, q, r);
    if (rxq->cache_cnt < need) {
        uint32_t min = need - rxq->cache_cnt;
        uint32_t burst = MIN(IXGBE_RX_CACHE, ixgbe_ring_avail(r)) -
                         rxq->cache_cnt;

        if (!ixgbe_rx_cache_fill(core, q, burst, burst == min) &&
            (burst == min || !ixgbe_rx_cache_fill(core, q, min, true))) {
            return NULL;
        }
    }
    descs = rxq->cache + rxq->cache_pos;
    rxq->cache_pos += need;
    rxq->cache_cnt -= need;
    rxq->cache_idx = (rxq->cache_idx + need) % r->n;
    return descs;
}

/* RDT written: read ahead as RXDCTL.PTHRESH and HTHRESH ask */
void ixgbe_rx_prefetch(IxgbeCore *core, unsigned q)
{
    uint32_t rxdctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_RXDCTL));
    uint32_t pthresh = rxdctl & IXGBE_RXDCTL_THRESH_MASK;
    uint32_t hthresh = (rxdctl >> IXGBE_RXDCTL_HTHRESH_SHIFT) &
                       IXGBE_RXDCTL_THRESH_MASK;
    IxgbeRxQueue *rxq = &core->rxq[q];
    uint32_t avail;
    IxgbeRing r;

    if (!pthresh || !(rxdctl & IXGBE_RXDCTL_ENABLE) ||
        !ixgbe_rx_can_receive(core)) {
        return;
    }
    ixgbe_ring_init(core, &r, false, q);
    if (!r.n || *r.head >= r.n || r.tail >= r.n) {
        return;
    }
    ixgbe_rx_cache_check(core, q, &r);
    avail = MIN(IXGBE_RX_CACHE, ixgbe_ring_avail(&r));
    if (rxq->cache_cnt < pthresh &&
        avail - rxq->cache_cnt >= MAX(hthresh, 1)) {
        /* A failure is reported when a frame needs the descriptors */
        ixgbe_rx_cache_fill(core, q, avail - rxq->cache_cnt, false);
    }
}

/*
 * Write back the descriptors of one frame, cnt of them from ring entry
 * idx on: now, or held until WTHRESH are pending or the interrupt fires.
 */
static void ixgbe_rx_complete(IxgbeCore *core, unsigned q, uint32_t idx,
                              const IxgbeRxDesc *descs, uint32_t cnt)
{
    uint32_t rxdctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_RXDCTL));
    uint32_t wthresh = (rxdctl >> IXGBE_RXDCTL_WTHRESH_SHIFT) &
                       IXGBE_RXDCTL_THRESH_MASK;
    IxgbeRxQueue *rxq = &core->rxq[q];
    uint8_t ivar = ixgbe_ivar_byte(ixgbe_get(core, IXGBE_IVAR(q / 2)), q,
                                   false);

    if (!wthresh || !(ivar & IXGBE_IVAR_VALID) || ixgbe_vf_queue(core, q)) {
        /* Write back at once, after what was held */
        if (rxq->wb_cnt) {
            ixgbe_rx_flush_writeback(core, q);
        }
        ixgbe_rx_desc_write(core, q, idx, descs, cnt);
        return;
    }
    /*
     * Held write-backs are one run of the ring, at most a ring's worth:
     * a driver that hands descriptors back before it saw them written
     * back gets the older ones first.
     */
    if (rxq->wb_cnt &&
        ((rxq->wb_idx + rxq->wb_cnt) % rxq->n != idx ||
         rxq->wb_cnt + cnt > MIN(IXGBE_RX_WB_MAX, rxq->n))) {
        ixgbe_rx_flush_writeback(core, q);
    }
    if (!rxq->wb_cnt) {
        rxq->wb_idx = idx;
        core->rx_wb_map[q / 64] |= BIT_ULL(q % 64);
    }
    memcpy(rxq->wb + rxq->wb_cnt, descs, cnt * sizeof(descs[0]));
    rxq->wb_cnt += cnt;
    if (rxq->wb_cnt >= wthresh) {
        ixgbe_rx_flush_writeback(core, q);
    }
}

/* Write one frame into queue q's ring, straight from where it is */
static IxgbeRxResult ixgbe_rx_to_ring(IxgbeCore *core, unsigned q,
                                      const IxgbeRxData *data,
                                      const IxgbeRxInfo *info,
                                      uint16_t vlan_tag)
{
    uint32_t srrctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_SRRCTL));
    unsigned bufsz = ixgbe_rx_buf_size(srrctl);
    bool legacy = ((srrctl >> IXGBE_SRRCTL_DESCTYPE_SHIFT) &
                   IXGBE_SRRCTL_DESCTYPE_MASK) == IXGBE_SRRCTL_DESCTYPE_LEGACY;
    size_t len = data->len;
    unsigned need = DIV_ROUND_UP(len, bufsz);
    IxgbeRxDesc *descs;
    size_t off = 0;
    uint32_t first;
    IxgbeRing r;

    ixgbe_ring_init(core, &r, false, q);
    if (!ixgbe_ring_check(&r)) {
        ixgbe_rx_drop(core, q);
        return IXGBE_RX_DROPPED;
    }
    if (need >= r.n || need > IXGBE_RX_MAX_BUFS) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: rxq %u: a %zu byte frame needs %u buffers, the "
                      "ring has %u, frame dropped\n", q, len, need, r.n);
        ixgbe_rx_drop(core, q);
        return IXGBE_RX_DROPPED;
    }
    if (ixgbe_ring_avail(&r) < need) {
        if ((srrctl & IXGBE_SRRCTL_DROP_EN) || ixgbe_vt_queue_drop(core, q)) {
            ixgbe_rx_drop(core, q);
            return IXGBE_RX_DROPPED;
        }
        /* Held, not lost: nothing to count until it is dropped */
        return IXGBE_RX_HELD;
    }
    /* Buffers are written only once every descriptor has been read */
    descs = ixgbe_rx_cache_take(core, q, &r, need);
    if (!descs) {
        trace_ixgbe_rx_drop(q);
        return IXGBE_RX_DROPPED;
    }

    first = *r.head;
    for (unsigned i = 0; i < need; i++) {
        uint64_t addr = le64_to_cpu(descs[i].read.pkt_addr);
        size_t chunk = MIN(bufsz, len - off);
        bool eop = i == need - 1;
        uint32_t status = IXGBE_RXD_STAT_DD | (eop ? IXGBE_RXD_STAT_EOP : 0);

        if (ixgbe_rx_data_write(core, q, data, off, addr, chunk) !=
            MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: rxq %u: buffer 0x%" PRIx64 "+%zu not "
                          "writable\n", q, addr, chunk);
        }
        if (eop) {
            status |= info->status | (data->strip ? IXGBE_RXD_STAT_VP : 0);
        }
        ixgbe_rx_writeback(&descs[i], legacy, chunk, status, info, vlan_tag);
        off += chunk;
    }
    /* The descriptors are written back after their buffers */
    ixgbe_rx_complete(core, q, first, descs, need);
    *r.head = (first + need) % r.n;
    return IXGBE_RX_DELIVERED;
}

/*
 * The next need descriptors of queue q for an aggregate (ixgbe_rsc.c):
 * their ring entries, guest addresses and buffers.  The head moves past
 * them; they are written back when the aggregate closes.
 */
IxgbeRscResult ixgbe_rx_take(IxgbeCore *core, unsigned q, unsigned need,
                             uint32_t *idx, uint64_t *desc, uint64_t *buf)
{
    uint32_t srrctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_SRRCTL));
    IxgbeRxDesc *descs;
    IxgbeRing r;

    ixgbe_ring_init(core, &r, false, q);
    if (!ixgbe_ring_check(&r) || need >= r.n) {
        ixgbe_rx_drop(core, q);
        return IXGBE_RSC_DROPPED;
    }
    if (ixgbe_ring_avail(&r) < need) {
        if ((srrctl & IXGBE_SRRCTL_DROP_EN) || ixgbe_vt_queue_drop(core, q)) {
            ixgbe_rx_drop(core, q);
            return IXGBE_RSC_DROPPED;
        }
        return IXGBE_RSC_HELD;
    }
    descs = ixgbe_rx_cache_take(core, q, &r, need);
    if (!descs) {
        trace_ixgbe_rx_drop(q);
        return IXGBE_RSC_DROPPED;
    }
    for (unsigned i = 0; i < need; i++) {
        idx[i] = (*r.head + i) % r.n;
        desc[i] = ixgbe_ring_desc_addr(&r, idx[i]);
        buf[i] = le64_to_cpu(descs[i].read.pkt_addr);
    }
    *r.head = (*r.head + need) % r.n;
    return IXGBE_RSC_TAKEN;
}

void ixgbe_rx_queue_cause(IxgbeCore *core, unsigned q)
{
    ixgbe_queue_cause(core, false, q);
}

/* A TCP segment may join an aggregate of its flow (ixgbe_rsc.c) */
static IxgbeRxResult ixgbe_rx_coalesce(IxgbeCore *core, unsigned q,
                                       const IxgbeRxFrame *f,
                                       const IxgbeRxInfo *info,
                                       const IxgbeRxData *data)
{
    IxgbeRscFrame rf;

    if (data->crc || !(info->pkt_type & IXGBE_RXD_PKTTYPE_TCP)) {
        return IXGBE_RX_NOT_COALESCED;
    }
    rf = (IxgbeRscFrame) {
        .iov = f->iov, .iovcnt = f->iovcnt, .len = f->len,
        .hdr = f->hdr, .hdr_len = f->hdr_len,
        .has_vlan = f->has_vlan, .strip = data->strip,
        .vlan = data->strip ? f->vlan_tag : 0,
        .info = info->rss_type | (info->pkt_type << IXGBE_RXD_PKTTYPE_SHIFT),
        .hash = info->hash,
        .status = info->status | (data->strip ? IXGBE_RXD_STAT_VP : 0),
    };
    switch (ixgbe_rsc_rx(core, q, &rf)) {
    case IXGBE_RSC_TAKEN:
        return IXGBE_RX_COALESCED;
    case IXGBE_RSC_HELD:
        return IXGBE_RX_HELD;
    case IXGBE_RSC_DROPPED:
        return IXGBE_RX_DROPPED;
    default:
        return IXGBE_RX_NOT_COALESCED;
    }
}

/*
 * Deliver a frame to queue q: VLAN stripping per queue, the CRC per port,
 * the ring, the queue's counters and interrupt.  *len is set to the bytes
 * meant for host memory once the queue is known to be enabled.
 */
static IxgbeRxResult ixgbe_rx_deliver(IxgbeCore *core, unsigned q,
                                      const IxgbeRxFrame *f,
                                      const IxgbeRxInfo *info, size_t *len)
{
    uint32_t rxdctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_RXDCTL));
    bool strip = f->has_vlan && (rxdctl & IXGBE_RXDCTL_VME);
    IxgbeRxResult res;
    IxgbeRxData data;

    if (!(rxdctl & IXGBE_RXDCTL_ENABLE)) {
        ixgbe_rx_drop(core, q);
        return IXGBE_RX_DISABLED;
    }
    /* VLAN stripping per queue: the tag moves into the descriptor */
    ixgbe_rx_data_init(&data, f, strip,
                       !(ixgbe_get(core, IXGBE_HLREG0) &
                         IXGBE_HLREG0_RXCRCSTRP));
    *len = data.len;
    res = ixgbe_rx_coalesce(core, q, f, info, &data);
    if (res == IXGBE_RX_NOT_COALESCED) {
        res = ixgbe_rx_to_ring(core, q, &data, info,
                               strip ? f->vlan_tag : 0);
    }
    if (res == IXGBE_RX_DELIVERED || res == IXGBE_RX_COALESCED) {
        trace_ixgbe_rx_frame(q, data.len, info->hash);
        ixgbe_rx_queue_stats(core, q, data.len);
    }
    if (res == IXGBE_RX_DELIVERED) {
        ixgbe_queue_cause(core, false, q);
    }
    return res;
}

/*
 * Virtualization: the frame to the chosen queue of every pool that takes
 * it.  A frame for one pool from the wire waits for descriptors like any
 * other; one that is replicated, or switched from a pool, is dropped
 * where a queue has none.  Returns false to hold it.
 */
static bool ixgbe_rx_pools(IxgbeCore *core, const IxgbeRxFrame *f,
                           const IxgbeRxInfo *info, int src_pool,
                           IxgbeVtDest *dest)
{
    ixgbe_vt_classify(core, f->hdr, f->hdr_len, src_pool, info->queue, dest);
    for (unsigned i = 0; i < dest->n; i++) {
        size_t n = f->len;

        switch (ixgbe_rx_deliver(core, dest->queue[i], f, info, &n)) {
        case IXGBE_RX_HELD:
            if (dest->n == 1 && src_pool < 0) {
                return false;
            }
            ixgbe_rx_drop(core, dest->queue[i]);
            break;
        case IXGBE_RX_DELIVERED:
            ixgbe_vt_rx_count(core, dest->pool[i], n,
                              is_multicast_ether_addr(f->hdr));
            break;
        default:
            break;
        }
    }
    if (src_pool < 0 && dest->n) {
        ixgbe_rx_mac_stats(core, f->hdr, f->len, f->len + 4);
    }
    return true;
}

/* ixgbe_rx_frame(), with the frame's first bytes (size: before padding) */
static ssize_t ixgbe_rx_frame_at(IxgbeCore *core, const struct iovec *iov,
                                 int iovcnt, size_t size, const uint8_t *hdr,
                                 bool loopback, int src_pool, bool *local)
{
    uint32_t hlreg0 = ixgbe_get(core, IXGBE_HLREG0);
    bool vt = ixgbe_vt_active(core);
    IxgbeRxFrame f;
    size_t max_frame, len;
    IxgbeRxInfo info;
    uint64_t arrival;
    IxgbeRxResult res;

    *local = false;
    if (!(ixgbe_get(core, IXGBE_RXCTRL) & IXGBE_RXCTRL_RXEN)) {
        return size;
    }
    /* The clock as the frame's start reaches the MAC, for a time stamp */
    arrival = ixgbe_ptp_rx_arrival(core);
    if (!loopback && src_pool < 0 && (hlreg0 & IXGBE_HLREG0_LPBK)) {
        /* In MAC loopback the wire side is not received */
        return size;
    }

    f.iov = iov;
    f.iovcnt = iovcnt;
    f.len = MAX(size, IXGBE_MIN_FRAME);
    f.hdr_len = MIN(f.len, IXGBE_RX_HDR_MAX);
    f.hdr = hdr;

    /* MAC control frames from the wire stop at the MAC (ixgbe_fc.c) */
    if (src_pool < 0 && ixgbe_fc_rx(core, f.hdr, f.hdr_len)) {
        return size;
    }
    f.has_vlan = lduw_be_p(f.hdr + 12) ==
                 (ixgbe_get(core, IXGBE_VLNCTRL) & 0xFFFF);
    f.vlan_tag = f.has_vlan ? lduw_be_p(f.hdr + 14) : 0;
    max_frame = (hlreg0 & IXGBE_HLREG0_JUMBOEN) ?
                ixgbe_get(core, IXGBE_MAXFRS) >> IXGBE_MAXFRS_MFS_SHIFT :
                IXGBE_STD_FRAME;
    if (f.len + 4 > max_frame + (f.has_vlan ? 4 : 0)) {
        ixgbe_stat_inc(core, IXGBE_ROC);
        trace_ixgbe_rx_oversize(f.len);
        return size;
    }
    /* With pools, their filters decide (ixgbe_vt_classify) */
    if (!vt && !ixgbe_rx_accept(core, f.hdr)) {
        return size;
    }

    /* The checksums are read from the pieces */
    ixgbe_rx_classify(core, &f, &info);
    /* Inline IPsec: an ESP frame of a known SA decrypted (ixgbe_ipsec.c) */
    info.status |= ixgbe_ipsec_rx(core, f.hdr, f.hdr_len, &f.iov, &f.iovcnt,
                                  f.len, &info.pkt_type);
    if (src_pool < 0 &&
        ixgbe_ptp_rx_stamp(core, f.hdr, f.hdr_len, arrival)) {
        info.status |= IXGBE_RXD_STAT_TS;
    }
    if (vt) {
        IxgbeVtDest dest;

        if (!ixgbe_rx_pools(core, &f, &info, src_pool, &dest)) {
            return 0;
        }
        *local = dest.local_unicast;
        return size;
    }

    len = f.len;
    res = ixgbe_rx_deliver(core, info.queue, &f, &info, &len);
    if (res == IXGBE_RX_HELD) {
        /* No descriptors and no DROP_EN: hold the frame (flow control) */
        return 0;
    }
    if (res != IXGBE_RX_DISABLED) {
        ixgbe_rx_mac_stats(core, f.hdr, len, f.len + 4);
    }
    return size;
}

/*
 * A frame shorter than the minimum, padded with zeros, or one whose first
 * IXGBE_RX_HDR_MAX bytes are not in its first piece, with a copy of them
 * (the buffers on the stack only on this path)
 */
static ssize_t ixgbe_rx_frame_copied(IxgbeCore *core,
                                     const struct iovec *iov, int iovcnt,
                                     size_t size, bool loopback,
                                     int src_pool, bool *local)
{
    uint8_t hdr[IXGBE_RX_HDR_MAX];
    uint8_t pad[IXGBE_MIN_FRAME];
    struct iovec pad_iov;

    if (size < IXGBE_MIN_FRAME) {
        memset(pad, 0, sizeof(pad));
        iov_to_buf(iov, iovcnt, 0, pad, size);
        pad_iov.iov_base = pad;
        pad_iov.iov_len = sizeof(pad);
        return ixgbe_rx_frame_at(core, &pad_iov, 1, size, pad, loopback,
                                 src_pool, local);
    }
    iov_to_buf(iov, iovcnt, 0, hdr, MIN(size, IXGBE_RX_HDR_MAX));
    return ixgbe_rx_frame_at(core, iov, iovcnt, size, hdr, loopback,
                             src_pool, local);
}

/*
 * One frame from the wire (src_pool < 0), from MAC loopback, or switched
 * from a pool.  Returns the bytes taken, 0 to hold the frame; *local is
 * set when a switched unicast frame reached a local pool.
 *
 * The frame stays where the backend put it: classification reads its
 * first IXGBE_RX_HDR_MAX bytes (in place when the first piece holds them,
 * else from a copy on the stack), and the receive buffers are written
 * from the pieces themselves.  Only a frame shorter than the minimum is
 * copied, to pad it.
 */
static ssize_t ixgbe_rx_frame(IxgbeCore *core, const struct iovec *iov,
                              int iovcnt, bool loopback, int src_pool,
                              bool *local)
{
    size_t size = iov_size(iov, iovcnt);

    if (size >= IXGBE_MIN_FRAME && iovcnt >= 1 &&
        iov[0].iov_len >= MIN(size, IXGBE_RX_HDR_MAX)) {
        return ixgbe_rx_frame_at(core, iov, iovcnt, size, iov[0].iov_base,
                                 loopback, src_pool, local);
    }
    return ixgbe_rx_frame_copied(core, iov, iovcnt, size, loopback,
                                 src_pool, local);
}

ssize_t ixgbe_rx_receive(IxgbeCore *core, const struct iovec *iov,
                         int iovcnt, bool loopback)
{
    bool local;

    return ixgbe_rx_frame(core, iov, iovcnt, loopback, -1, &local);
}

/* The internal switch: true if a unicast frame stayed local */
static bool ixgbe_rx_switched(IxgbeCore *core, const struct iovec *iov,
                              int iovcnt, unsigned src_pool)
{
    bool local;

    ixgbe_rx_frame(core, iov, iovcnt, false, src_pool, &local);
    return local;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                          */
/* ------------------------------------------------------------------ */

static void ixgbe_datapath_init(IxgbeCore *core)
{
    net_tx_pkt_init(&core->tx_pkt, IXGBE_MAX_TX_FRAGS);
    core->tx_buf = g_malloc(IXGBE_TX_PLAIN_MAX);
    net_rx_pkt_init(&core->rx_pkt);
    ixgbe_rx_map_init(core);
}

static void ixgbe_datapath_uninit(IxgbeCore *core)
{
    /* Nothing stays mapped between transmit runs: tx_pkt is empty */
    net_tx_pkt_uninit(core->tx_pkt);
    core->tx_pkt = NULL;
    g_free(core->tx_buf);
    core->tx_buf = NULL;
    net_rx_pkt_uninit(core->rx_pkt);
    core->rx_pkt = NULL;
    ixgbe_rx_map_uninit(core);
}

static void ixgbe_datapath_reset(IxgbeCore *core)
{
    memset(core->txq, 0, sizeof(core->txq));
    memset(core->rxq, 0, sizeof(core->rxq));
    memset(core->rx_wb_map, 0, sizeof(core->rx_wb_map));
}

/*
 * Check the transmit state a migration stream restored: it is not guest
 * visible, so values the device itself never produces mean a corrupt
 * stream.
 */
static bool ixgbe_datapath_post_load(IxgbeCore *core)
{
    for (unsigned q = 0; q < IXGBE_NUM_QUEUES; q++) {
        IxgbeTxQueue *txq = &core->txq[q];

        /* Ring indices are 16 bits wide (TDH, TDT) */
        if (txq->nfrags > IXGBE_MAX_TX_FRAGS ||
            (!txq->in_packet && txq->nfrags) ||
            txq->wb_pending > 0xFFFF || txq->wb_next > 0xFFFF) {
            error_report("ixgbe: txq %u: invalid migrated state "
                         "(%u buffers, %u write-backs from %u)",
                         q, txq->nfrags, txq->wb_pending, txq->wb_next);
            return false;
        }
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* The queue registers                                                 */
/* ------------------------------------------------------------------ */

static unsigned ixgbe_rxq_of(hwaddr addr)
{
    return addr >= IXGBE_RXQ_HI ? 64 + (addr - IXGBE_RXQ_HI) / IXGBE_RXQ_STRIDE
                                : (addr - IXGBE_RXQ_LO) / IXGBE_RXQ_STRIDE;
}

static unsigned ixgbe_txq_of(hwaddr addr)
{
    return (addr - IXGBE_TXQ_BASE) / IXGBE_TXQ_STRIDE;
}

void ixgbe_rx_kick(IxgbeCore *core)
{
    if (ixgbe_rx_can_receive(core)) {
        qemu_flush_queued_packets(qemu_get_queue(core->nic));
    }
}

static void ixgbe_write_rdt(IxgbeCore *core, hwaddr addr, uint32_t val,
                            uint32_t old)
{
    unsigned q = ixgbe_rxq_of(addr);

    trace_ixgbe_rx_tail(q, val & 0xFFFF);
    ixgbe_rx_prefetch(core, q);
    ixgbe_rx_kick(core);
}

/* RDBAL, RDBAH, RDLEN, RDH: the ring is being set up anew */
static void ixgbe_write_rx_ring(IxgbeCore *core, hwaddr addr, uint32_t val,
                                uint32_t old)
{
    ixgbe_rx_queue_sync(core, ixgbe_rxq_of(addr));
}

static void ixgbe_write_rx_enable(IxgbeCore *core, hwaddr addr, uint32_t val,
                                  uint32_t old)
{
    ixgbe_rx_kick(core);
}

static void ixgbe_write_rxdctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                               uint32_t old)
{
    if (!(val & IXGBE_RXDCTL_ENABLE) || (val & IXGBE_RXDCTL_SWFLSH)) {
        /* A disabled or flushed queue writes back what it completed */
        ixgbe_rx_queue_sync(core, ixgbe_rxq_of(addr));
    }
    ixgbe_rx_kick(core);
}

static void ixgbe_write_tdt(IxgbeCore *core, hwaddr addr, uint32_t val,
                            uint32_t old)
{
    ixgbe_tx_kick(core, ixgbe_txq_of(addr));
}

static void ixgbe_write_txdctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                               uint32_t old)
{
    unsigned q = ixgbe_txq_of(addr);

    if (!(val & IXGBE_TXDCTL_ENABLE)) {
        /* A disabled queue writes back what it completed */
        ixgbe_tx_flush_writeback(core, q);
        return;
    }
    ixgbe_tx_kick(core, q);
}

static void ixgbe_write_dmatxctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    if ((val & IXGBE_DMATXCTL_TE) && !(old & IXGBE_DMATXCTL_TE)) {
        for (unsigned q = 0; q < IXGBE_NUM_QUEUES; q++) {
            ixgbe_tx_kick(core, q);
        }
    }
}

/* Receive queues 0..63 and 64..127, transmit queues, their enables */
static const IxgbeRegDesc ixgbe_datapath_regs[] = {
    REG("RDBAL", RQ(IXGBE_RXQ_RDBAL), 64, 0x40, 0, 0xFFFFFF80, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDBAL", RQH(IXGBE_RXQ_RDBAL), 64, 0x40, 0, 0xFFFFFF80, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDBAH", RQ(IXGBE_RXQ_RDBAH), 64, 0x40, 0, ALL, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDBAH", RQH(IXGBE_RXQ_RDBAH), 64, 0x40, 0, ALL, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDLEN", RQ(IXGBE_RXQ_RDLEN), 64, 0x40, 0, 0x000FFF80, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDLEN", RQH(IXGBE_RXQ_RDLEN), 64, 0x40, 0, 0x000FFF80, 0, NULL,
        ixgbe_write_rx_ring),
    PLAIN("DCA_RXCTRL", RQ(IXGBE_RXQ_DCA), 64, 0x40, 0x2200, ALL),
    PLAIN("DCA_RXCTRL", RQH(IXGBE_RXQ_DCA), 64, 0x40, 0x2200, ALL),
    REG("RDH", RQ(IXGBE_RXQ_RDH), 64, 0x40, 0, 0xFFFF, 0, NULL,
        ixgbe_write_rx_ring),
    REG("RDH", RQH(IXGBE_RXQ_RDH), 64, 0x40, 0, 0xFFFF, 0, NULL,
        ixgbe_write_rx_ring),
    PLAIN("SRRCTL", RQ(IXGBE_RXQ_SRRCTL), 64, 0x40, 0x0402, 0x1E403F7F),
    PLAIN("SRRCTL", RQH(IXGBE_RXQ_SRRCTL), 64, 0x40, 0x0402, 0x1E403F7F),
    REG("RDT", RQ(IXGBE_RXQ_RDT), 64, 0x40, 0, 0xFFFF, 0, NULL,
        ixgbe_write_rdt),
    REG("RDT", RQH(IXGBE_RXQ_RDT), 64, 0x40, 0, 0xFFFF, 0, NULL,
        ixgbe_write_rdt),
    REG("RXDCTL", RQ(IXGBE_RXQ_RXDCTL), 64, 0x40, 0, 0x467F7F7F, 0, NULL,
        ixgbe_write_rxdctl),
    REG("RXDCTL", RQH(IXGBE_RXQ_RXDCTL), 64, 0x40, 0, 0x467F7F7F, 0, NULL,
        ixgbe_write_rxdctl),
    REG("RXCTRL", IXGBE_RXCTRL, 1, 4, 0, IXGBE_RXCTRL_RXEN, 0, NULL,
        ixgbe_write_rx_enable),
    PLAIN("TDBAL", TQ(IXGBE_TXQ_TDBAL), 128, 0x40, 0, 0xFFFFFF80),
    PLAIN("TDBAH", TQ(IXGBE_TXQ_TDBAH), 128, 0x40, 0, ALL),
    PLAIN("TDLEN", TQ(IXGBE_TXQ_TDLEN), 128, 0x40, 0, 0x000FFF80),
    PLAIN("TDH", TQ(IXGBE_TXQ_TDH), 128, 0x40, 0, 0xFFFF),
    REG("TDT", TQ(IXGBE_TXQ_TDT), 128, 0x40, 0, 0xFFFF, 0, NULL,
        ixgbe_write_tdt),
    REG("TXDCTL", TQ(IXGBE_TXQ_TXDCTL), 128, 0x40, 0, 0x027F7F7F, 0, NULL,
        ixgbe_write_txdctl),
    PLAIN("TDWBAL", TQ(IXGBE_TXQ_TDWBAL), 128, 0x40, 0, 0xFFFFFFFD),
    PLAIN("TDWBAH", TQ(IXGBE_TXQ_TDWBAH), 128, 0x40, 0, ALL),
    REG("DMATXCTL", IXGBE_DMATXCTL, 1, 4, 0x00000004, 0xFFFF000D, 0, NULL,
        ixgbe_write_dmatxctl),
};

/* ------------------------------------------------------------------ */
/* The datapath's part in the device's life                           */
/* ------------------------------------------------------------------ */

static bool ixgbe_ivar_routes(uint32_t ent, int vector)
{
    return vector < 0 || ((ent & IXGBE_IVAR_VALID) &&
                          (ent & IXGBE_IVAR_VECTOR_MASK) == vector);
}

/*
 * An interrupt is about to be signalled on vector (-1: the one MSI/INTx
 * vector): the queues it serves write back the descriptors they hold.
 */
static void ixgbe_datapath_before_irq(IxgbeCore *core, int vector)
{
    for (unsigned q = 0; q < IXGBE_NUM_QUEUES; q++) {
        if (core->txq[q].wb_pending &&
            ixgbe_ivar_routes(ixgbe_ivar_entry(core, q, true), vector)) {
            ixgbe_tx_flush_writeback(core, q);
        }
    }
    for (unsigned w = 0; w < ARRAY_SIZE(core->rx_wb_map); w++) {
        uint64_t map = core->rx_wb_map[w];

        while (map) {
            unsigned q = w * 64 + ctz64(map);

            map &= map - 1;
            if (ixgbe_ivar_routes(ixgbe_ivar_entry(core, q, false), vector)) {
                ixgbe_rx_flush_writeback(core, q);
            }
        }
    }
}

static void ixgbe_datapath_link_change(IxgbeCore *core, bool up)
{
    if (up) {
        ixgbe_rx_kick(core);
    }
}

/* Descriptors whose write-back WTHRESH holds are written before a stop */
static void ixgbe_datapath_vm_stop(IxgbeCore *core)
{
    if (ixgbe_core_enter(core, "VM stop", -1, 0)) {
        ixgbe_rx_flush_all(core, false);
        ixgbe_core_leave(core);
    }
}

/* ...and what was read ahead is dropped: the destination reads it again */
static void ixgbe_datapath_pre_save(IxgbeCore *core)
{
    ixgbe_rx_flush_all(core, true);
}

const IxgbePart ixgbe_datapath_part = {
    .regs = ixgbe_datapath_regs,
    .nregs = ARRAY_SIZE(ixgbe_datapath_regs),
    .realize = ixgbe_datapath_init,
    .unrealize = ixgbe_datapath_uninit,
    .reset = ixgbe_datapath_reset,
    .post_load = ixgbe_datapath_post_load,
    .link_change = ixgbe_datapath_link_change,
    .before_irq = ixgbe_datapath_before_irq,
    .before_queue_irq = ixgbe_tx_flush_writeback,
    .vm_stop = ixgbe_datapath_vm_stop,
    .pre_save = ixgbe_datapath_pre_save,
};
