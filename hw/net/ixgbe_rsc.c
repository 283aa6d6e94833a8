/*
 * Intel 82599 10 GbE controller: receive side coalescing (RSC).
 *
 * A receive queue with RSCCTL.RSCEN set (and RFCTL.RSC_DIS clear)
 * coalesces the in-order TCP segments of a flow into one frame that spans
 * a chain of descriptors.  The first segment is written whole into the
 * first buffer (or buffers), which hold nothing else; the following
 * segments' payloads are packed into the next buffers, each appended where
 * the previous one ended, taking a new descriptor from the ring when a
 * buffer is full.  Descriptors of several open aggregates and of other
 * frames interleave in the ring: a descriptor that is not the last of its
 * aggregate names the next one in NEXTP.  RSCCNT is one more than the
 * number of coalesced segments (all but the first) whose payload starts in
 * the descriptor's buffer, never 0 in an aggregate's descriptor: RSCCNT - 1
 * summed over the chain is the number of segments coalesced into the
 * first, which is what the Linux driver counts (append_cnt: its
 * hw_rsc_aggregated) and divides the bytes after the first buffer by for
 * the aggregate's gso_size, the segments' MSS.  Nothing of an aggregate is
 * written back until it is closed; then the first segment's header is
 * brought up to date (IP length, the last segment's acknowledgment number,
 * window and timestamps, PSH if any segment had it, IP and TCP checksums
 * over the whole) and the descriptors are written back, EOP on the last.
 *
 * A segment is coalesced when it is TCP over IPv4 without options or
 * fragmentation, or over IPv6 without extension headers, carries data,
 * has no flag but ACK and PSH, no option but the timestamp (as NOP, NOP,
 * timestamp), and its checksums are right.  It joins the open aggregate
 * of its flow (addresses, ports, VLAN, queue) when its sequence number is
 * the next one expected, its option layout is the same, and it fits: the
 * aggregate stays within RSCCTL.MAXDESC descriptors (so at MAXDESC 1,
 * where the first segment's descriptor is the only one, nothing is
 * coalesced), 64 KB of IP packet and RSCCNT 15.  Otherwise the open
 * aggregate is closed first and the segment starts a new one.  A segment
 * of the flow that cannot be coalesced closes the aggregate and is
 * delivered after it as a frame of its own, as is every frame when all
 * 32 contexts are open.
 *
 * An aggregate is closed by a segment with PSH, by a segment of its flow
 * on another queue (before that segment), by the interrupt throttle
 * interval of its queue's vector (the end of the running interval, or
 * one interval after the aggregate opened when none runs; an interrupt
 * signalled on the vector closes it too), by the queue being disabled,
 * flushed or its ring reprogrammed, by RSCCTL being rewritten, and when
 * the VM stops.  A queue with no valid IVAR entry or a zero interval does
 * not coalesce.  Closing raises the queue's interrupt cause, as a frame
 * written back does.
 *
 * The interval does not close an aggregate while the queue's MSI-X vector
 * is masked (as it is while the driver polls the queue; for eight
 * intervals from its first segment at most), nor one that
 * holds a single segment which came less than an interval ago.  Linux's
 * GRO holds a lone full-sized segment for the rest of the driver's poll
 * and appends the next frame of its flow to it; the stock driver gives
 * an RSC frame a gso_size but no segment count, so when that next frame
 * is an aggregate GRO neither counts its segments nor rewrites the IP
 * length, and IP trims the merged frame back to the lone segment: the
 * aggregate's payload is lost and the sender retransmits it.  Aggregates
 * are thus written back when the driver is about to be interrupted, not
 * in the middle of its poll, and a lone segment only when its flow has
 * been quiet for an interval.  After a lone segment without PSH, the
 * flow's segments are not coalesced (each goes as a frame of its own,
 * which GRO merges rightly) until the vector has interrupted since and
 * been unmasked again: the driver has ended the poll that took it.  These
 * flows migrate, with the vectors' interrupt counts they wait on.
 *
 * Aggregates do not migrate: they are closed when the VM stops, before
 * the last pass of RAM, so the destination finds them written back like
 * any aggregate whose interval ended, and the stream has no new state.
 *
 * Not modelled: coalescing with header split or legacy descriptors, with
 * virtualization (pools) on, or with the CRC kept; RSCDBU and the RSC bits
 * of RDRXCTL are plain storage.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/iov.h"
#include "qemu/bswap.h"
#include "net/net.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/msix.h"
#include "system/dma.h"
#include "migration/vmstate.h"
#include "ixgbe_core.h"
#include "ixgbe_datapath.h"
#include "ixgbe_iov.h"
#include "ixgbe_vt.h"
#include "ixgbe_rsc.h"
#include "trace.h"

#define TCP_FLAG_FIN    0x01
#define TCP_FLAG_PSH    0x08
#define TCP_FLAG_ACK    0x10

/* Why an aggregate was closed, for the trace */
enum {
    RSC_CLOSE_TIMER,
    RSC_CLOSE_IRQ,
    RSC_CLOSE_PSH,
    RSC_CLOSE_ORDER,
    RSC_CLOSE_FULL,
    RSC_CLOSE_FLOW,
    RSC_CLOSE_QUEUE,
    RSC_CLOSE_STOP,
};

/* A TCP segment as parsed from a frame's first bytes */
typedef struct IxgbeRscSeg {
    bool ip6;
    bool ok;                    /* it may be coalesced */
    bool ts;
    uint8_t l3len;
    uint8_t l4len;
    uint8_t flags;
    size_t l3off;               /* in the frame */
    size_t poff;                /* the payload's offset in the frame */
    uint32_t plen;
    uint32_t seq;
    uint8_t key[36];
} IxgbeRscSeg;

static uint32_t rsc_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return sum;
}

/* False when the frame is not TCP over IP at all */
static bool rsc_parse(const IxgbeRscFrame *f, IxgbeRscSeg *s)
{
    const uint8_t *h = f->hdr;
    size_t l3 = f->has_vlan ? 18 : 14;
    size_t l4, avail = f->hdr_len;
    uint16_t type;
    size_t end;

    memset(s, 0, sizeof(*s));
    if (avail < l3 + 20) {
        return false;
    }
    type = lduw_be_p(h + l3 - 2);
    s->l3off = l3;
    if (type == ETH_P_IP) {
        uint16_t frag = lduw_be_p(h + l3 + 6);

        if ((h[l3] >> 4) != 4 || h[l3 + 9] != IP_PROTO_TCP) {
            return false;
        }
        s->l3len = (h[l3] & 0xF) * 4;
        l4 = l3 + s->l3len;
        end = l3 + lduw_be_p(h + l3 + 2);
        s->ok = s->l3len == 20 && !(frag & 0x3FFF);
        memcpy(s->key, h + l3 + 12, 8);
    } else if (type == ETH_P_IPV6) {
        if (avail < l3 + 40 || (h[l3] >> 4) != 6 || h[l3 + 6] != IP_PROTO_TCP) {
            return false;
        }
        s->ip6 = true;
        s->l3len = 40;
        l4 = l3 + 40;
        end = l4 + lduw_be_p(h + l3 + 4);
        s->ok = true;
        memcpy(s->key, h + l3 + 8, 32);
    } else {
        return false;
    }
    if (avail < l4 + 20) {
        return false;
    }
    memcpy(s->key + 32, h + l4, 4);
    s->seq = ldl_be_p(h + l4 + 4);
    s->l4len = (h[l4 + 12] >> 4) * 4;
    s->flags = h[l4 + 13];
    s->poff = l4 + s->l4len;
    if (s->l4len == 32 && avail >= l4 + 32 &&
        ldl_be_p(h + l4 + 20) == 0x0101080A) {
        s->ts = true;
    } else if (s->l4len != 20) {
        s->ok = false;
    }
    if (s->poff > end || end > f->len || s->l4len < 20) {
        s->ok = false;
        return true;
    }
    s->plen = end - s->poff;
    if (!s->plen || (s->flags & ~(TCP_FLAG_PSH | TCP_FLAG_ACK)) ||
        !(s->flags & TCP_FLAG_ACK) ||
        (f->status & (IXGBE_RXD_ERR_IPE | IXGBE_RXD_ERR_TCPE)) ||
        !(f->status & IXGBE_RXD_STAT_L4CS)) {
        s->ok = false;
    }
    return true;
}

static uint64_t rsc_vector_itr(IxgbeCore *core, unsigned v)
{
    return ixgbe_itr_interval_ns(ixgbe_get(core,
                                           v < 24 ? IXGBE_EITR_LO + v * 4 :
                                           IXGBE_EITR_HI + (v - 24) * 4));
}

/* The queue's vector: its IVAR entry in MSI-X mode, else vector 0 */
static int rsc_vector(IxgbeCore *core, unsigned q)
{
    uint32_t ent = ixgbe_ivar_entry(core, q, false);

    if (!(ent & IXGBE_IVAR_VALID)) {
        return -1;
    }
    if (msix_enabled(core->owner) &&
        (ixgbe_get(core, IXGBE_GPIE) & IXGBE_GPIE_MSIX_MODE)) {
        return ent & IXGBE_IVAR_VECTOR_MASK;
    }
    return 0;
}

/* The queue's MSI-X vector, -1 outside MSI-X mode */
static int rsc_msix_vector(IxgbeCore *core, unsigned q)
{
    if (!msix_enabled(core->owner) ||
        !(ixgbe_get(core, IXGBE_GPIE) & IXGBE_GPIE_MSIX_MODE)) {
        return -1;
    }
    return rsc_vector(core, q);
}

/* When an aggregate opened now must close; -1: the queue cannot coalesce */
static int64_t rsc_deadline(IxgbeCore *core, unsigned q)
{
    int v = rsc_vector(core, q);
    uint64_t ns;

    if (v < 0) {
        return -1;
    }
    ns = rsc_vector_itr(core, v);
    if (!ns) {
        return -1;
    }
    if (core->vec[v].armed && timer_pending(core->vec[v].timer)) {
        return timer_expire_time_ns(core->vec[v].timer);
    }
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + ns;
}

/* How many intervals a masked vector keeps an aggregate open at most */
#define RSC_MASKED_INTERVALS 8

/*
 * An aggregate whose interval ended is kept open (until the time
 * returned; -1: it closes now) while it holds a single segment that came
 * less than an interval ago, and while its MSI-X vector is masked, for
 * RSC_MASKED_INTERVALS intervals from its first segment at most (a
 * driver that polls without ever unmasking still gets its segments).
 */
static int64_t rsc_hold(IxgbeCore *core, const IxgbeRscCtx *c, int64_t now)
{
    int v = rsc_vector(core, c->queue);
    uint64_t ns = v < 0 ? 0 : rsc_vector_itr(core, v);

    if (!ns) {
        return -1;
    }
    if (c->segs == 1 && now < c->opened + (int64_t)ns) {
        return c->opened + ns;
    }
    if (rsc_msix_vector(core, c->queue) >= 0 &&
        !(core->vec_mask & BIT_ULL(v)) &&
        now < c->opened + RSC_MASKED_INTERVALS * (int64_t)ns) {
        return MIN(now + ns, c->opened + RSC_MASKED_INTERVALS * ns);
    }
    return -1;
}

/* RSCCTL.MAXDESC: 1, 4, 8 or 16 descriptors */
static unsigned rsc_maxdesc(uint32_t rscctl)
{
    static const uint8_t n[] = { 1, 4, 8, 16 };

    return n[(rscctl >> IXGBE_RSCCTL_MAXDESC_SHIFT) &
             IXGBE_RSCCTL_MAXDESC_MASK];
}

/* The queue's packet buffer size, SRRCTL.BSIZEPACKET (0: 2 KB) */
static unsigned rsc_bufsz(IxgbeCore *core, unsigned q)
{
    uint32_t srrctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_SRRCTL));

    return (srrctl & IXGBE_SRRCTL_BSIZEPKT_MASK) ?
           (srrctl & IXGBE_SRRCTL_BSIZEPKT_MASK) * KiB : 2 * KiB;
}

static void rsc_arm(IxgbeCore *core)
{
    IxgbeRsc *rsc = core->rsc;
    int64_t min = INT64_MAX;

    for (unsigned i = 0; rsc->nopen && i < IXGBE_RSC_CONTEXTS; i++) {
        if (rsc->ctx[i].open) {
            min = MIN(min, rsc->ctx[i].deadline);
        }
    }
    if (min == INT64_MAX) {
        timer_del(rsc->timer);
    } else {
        timer_mod(rsc->timer, min);
    }
}

typedef struct RscDma {
    IxgbeCore *core;
    uint64_t addr;
    MemTxResult res;
} RscDma;

static void rsc_dma_piece(void *opaque, const uint8_t *buf, size_t len,
                          size_t pos)
{
    RscDma *d = opaque;

    d->res |= pci_dma_write(d->core->owner, d->addr + pos, buf, len);
}

/*
 * Bytes [off, off + n) of the frame into the aggregate's buffers, from
 * the end of descriptor d's data on (the descriptors are taken).
 */
static void rsc_write(IxgbeCore *core, IxgbeRscCtx *c, unsigned d,
                      unsigned bufsz, const IxgbeRscFrame *f, size_t off,
                      size_t n)
{
    while (n) {
        size_t run = MIN(bufsz - c->blen[d], n);
        RscDma dma = { .core = core, .addr = c->buf[d] + c->blen[d] };

        if (!run) {
            d++;
            assert(d < c->ndesc);
            continue;
        }
        ixgbe_iov_walk(f->iov, f->iovcnt, off, run, rsc_dma_piece, &dma);
        if (dma.res != MEMTX_OK) {
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: rxq %u: buffer 0x%" PRIx64 "+%zu not "
                          "writable\n", c->queue, dma.addr, run);
        }
        c->blen[d] += run;
        off += run;
        n -= run;
    }
}

/* The header of an aggregate of several segments, as it closes */
static void rsc_fix_header(IxgbeCore *core, IxgbeRscCtx *c)
{
    uint8_t *ip = c->hdr;
    uint8_t *th = c->hdr + c->l3len;
    uint32_t tcplen = c->l4len + c->payload;
    uint32_t sum;

    if (c->ip6) {
        stw_be_p(ip + 4, tcplen);
        sum = net_checksum_add(32, ip + 8);
    } else {
        stw_be_p(ip + 2, c->l3len + tcplen);
        stw_be_p(ip + 10, 0);
        stw_be_p(ip + 10, net_checksum_finish(net_checksum_add(20, ip)));
        sum = net_checksum_add(8, ip + 12);
    }
    memcpy(th + 8, c->last, 4);                 /* acknowledgment */
    th[13] = c->flags;
    memcpy(th + 14, c->last + 4, 2);            /* window */
    if (c->ts) {
        memcpy(th + 24, c->last + 6, 8);        /* TSval, TSecr */
    }
    stw_be_p(th + 16, 0);
    sum += IP_PROTO_TCP + tcplen + net_checksum_add(c->l4len, th) + c->psum;
    stw_be_p(th + 16, net_checksum_finish(sum));
    if (pci_dma_write(core->owner, c->buf[0] + c->l3off, c->hdr,
                      c->l3len + c->l4len) != MEMTX_OK) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: rxq %u: buffer 0x%" PRIx64
                      " not writable\n", c->queue, c->buf[0]);
    }
}

static IxgbeRscLone *rsc_lone_find(IxgbeRsc *rsc, bool ip6, uint16_t vlan,
                                    const uint8_t *key)
{
    for (unsigned i = 0; rsc->nlone && i < IXGBE_RSC_CONTEXTS; i++) {
        IxgbeRscLone *l = &rsc->lone[i];

        if (l->valid && l->ip6 == ip6 && l->vlan == vlan &&
            !memcmp(l->key, key, sizeof(l->key))) {
            return l;
        }
    }
    return NULL;
}

/*
 * A segment of a flow goes to queue q as a frame of its own, without PSH:
 * the flow is not coalesced until the queue's vector has interrupted
 * since and been unmasked again (the driver has ended the poll that took
 * the segment).
 */
static void rsc_lone(IxgbeCore *core, unsigned q, bool ip6, uint16_t vlan,
                     const uint8_t *key)
{
    IxgbeRsc *rsc = core->rsc;
    int v = rsc_msix_vector(core, q);
    IxgbeRscLone *l = rsc_lone_find(rsc, ip6, vlan, key);

    if (v < 0) {
        return;
    }
    for (unsigned i = 0; !l && i < IXGBE_RSC_CONTEXTS; i++) {
        if (!rsc->lone[i].valid) {
            l = &rsc->lone[i];
            rsc->nlone++;
        }
    }
    if (!l) {
        /* Too many: the oldest stays, this flow is coalesced again */
        return;
    }
    l->valid = true;
    l->ip6 = ip6;
    l->vlan = vlan;
    l->vector = v;
    l->fired = rsc->fired[v];
    memcpy(l->key, key, sizeof(l->key));
}

/* Whether a flow that went alone must still wait to be coalesced */
static bool rsc_lone_waits(IxgbeCore *core, unsigned q, bool ip6,
                           uint16_t vlan, const uint8_t *key)
{
    IxgbeRsc *rsc = core->rsc;
    IxgbeRscLone *l = rsc->nlone ? rsc_lone_find(rsc, ip6, vlan, key) : NULL;

    if (!l) {
        return false;
    }
    if (rsc->fired[l->vector] != l->fired &&
        (core->vec_mask & BIT_ULL(l->vector))) {
        l->valid = false;
        rsc->nlone--;
        return false;
    }
    rsc_lone(core, q, ip6, vlan, key);
    return true;
}

/*
 * Close an aggregate: header, then descriptors from the last to the
 * first, so a driver that sees the first finds the chain complete.
 * raise: the queue's cause is raised (not while its vector fires).
 */
static void rsc_close(IxgbeCore *core, IxgbeRscCtx *c, int why, bool raise)
{
    IxgbeRsc *rsc = core->rsc;

    if (c->segs > 1) {
        rsc_fix_header(core, c);
    }
    for (int i = c->ndesc - 1; i >= 0; i--) {
        bool eop = i == c->ndesc - 1;
        IxgbeRxDesc d = { };
        uint32_t status = IXGBE_RXD_STAT_DD;

        if (eop) {
            status |= IXGBE_RXD_STAT_EOP | c->status;
        } else {
            status |= c->idx[i + 1] << IXGBE_RXD_NEXTP_SHIFT;
        }
        d.wb.info = cpu_to_le32(c->info | ((uint32_t)c->cnt[i] <<
                                           IXGBE_RXD_RSCCNT_SHIFT));
        d.wb.rss_hash = cpu_to_le32(c->hash);
        d.wb.status_error = cpu_to_le32(status);
        d.wb.length = cpu_to_le16(c->blen[i]);
        d.wb.vlan = cpu_to_le16(c->vlan);
        pci_dma_write(core->owner, c->desc[i], &d, sizeof(d));
    }
    trace_ixgbe_rsc_close(c->queue, c->idx[0], c->segs, c->payload,
                          c->ndesc, why);
    if (c->segs == 1 && !(c->flags & TCP_FLAG_PSH)) {
        rsc_lone(core, c->queue, c->ip6, c->vlan, c->key);
    }
    c->open = false;
    rsc->nopen--;
    if (raise) {
        ixgbe_rx_queue_cause(core, c->queue);
    }
}

static bool rsc_same_flow(const IxgbeRscCtx *c, const IxgbeRscFrame *f,
                          const IxgbeRscSeg *s)
{
    return c->open && c->ip6 == s->ip6 &&
           c->vlan == (f->has_vlan ? lduw_be_p(f->hdr + 14) : 0) &&
           !memcmp(c->key, s->key, sizeof(s->key));
}

/* The last segment's header fields the aggregate's header takes */
static void rsc_take_fields(IxgbeRscCtx *c, const IxgbeRscFrame *f,
                            const IxgbeRscSeg *s)
{
    const uint8_t *th = f->hdr + s->l3off + s->l3len;
    uint32_t sum;

    memcpy(c->last, th + 8, 4);
    memcpy(c->last + 4, th + 14, 2);
    if (s->ts) {
        memcpy(c->last + 6, th + 24, 8);
    }
    c->flags |= s->flags;
    /* The payload's sum at its place in the aggregate's (odd: swapped) */
    sum = net_checksum_add_iov(f->iov, f->iovcnt, s->poff, s->plen,
                               c->payload);
    c->psum = rsc_fold(c->psum + rsc_fold(sum));
    c->payload += s->plen;
    c->next_seq = s->seq + s->plen;
    c->segs++;
}

/* A new aggregate from segment s, or PASS when it cannot start one */
static IxgbeRscResult rsc_open(IxgbeCore *core, unsigned q,
                               const IxgbeRscFrame *f, const IxgbeRscSeg *s,
                               unsigned bufsz, unsigned maxdesc,
                               int64_t deadline)
{
    IxgbeRsc *rsc = core->rsc;
    size_t strip = f->strip ? 4 : 0;
    size_t len = s->poff + s->plen - strip;
    unsigned need = DIV_ROUND_UP(len, bufsz);
    IxgbeRscResult res;
    IxgbeRscCtx *c = NULL;

    if (need > maxdesc || s->l3off + s->l3len + s->l4len > f->hdr_len) {
        return IXGBE_RSC_PASS;
    }
    for (unsigned i = 0; i < IXGBE_RSC_CONTEXTS; i++) {
        if (!rsc->ctx[i].open) {
            c = &rsc->ctx[i];
            break;
        }
    }
    if (!c) {
        return IXGBE_RSC_PASS;
    }
    res = ixgbe_rx_take(core, q, need, c->idx, c->desc, c->buf);
    if (res != IXGBE_RSC_TAKEN) {
        return res;
    }
    c->open = true;
    rsc->nopen++;
    c->queue = q;
    c->ip6 = s->ip6;
    c->ts = s->ts;
    c->ndesc = need;
    c->l3len = s->l3len;
    c->l4len = s->l4len;
    c->l3off = s->l3off - strip;
    c->flags = 0;
    c->vlan = f->has_vlan ? lduw_be_p(f->hdr + 14) : 0;
    c->segs = 0;
    c->payload = 0;
    c->psum = 0;
    c->info = f->info;
    c->hash = f->hash;
    c->status = f->status;
    c->deadline = deadline;
    c->opened = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    memcpy(c->key, s->key, sizeof(c->key));
    memcpy(c->hdr, f->hdr + s->l3off, s->l3len + s->l4len);
    memset(c->cnt, 1, sizeof(c->cnt));
    memset(c->blen, 0, sizeof(c->blen));
    if (strip) {
        rsc_write(core, c, 0, bufsz, f, 0, 12);
        rsc_write(core, c, 0, bufsz, f, 16, s->poff + s->plen - 16);
    } else {
        rsc_write(core, c, 0, bufsz, f, 0, s->poff + s->plen);
    }
    rsc_take_fields(c, f, s);
    trace_ixgbe_rsc_open(q, c->idx[0], s->seq, s->plen);
    if (s->flags & TCP_FLAG_PSH) {
        rsc_close(core, c, RSC_CLOSE_PSH, true);
    } else {
        rsc_arm(core);
    }
    return IXGBE_RSC_TAKEN;
}

/*
 * Append segment s to aggregate c: false when it does not fit (the caller
 * closes c and starts anew), else *res says what became of the segment.
 */
static bool rsc_append(IxgbeCore *core, IxgbeRscCtx *c,
                       const IxgbeRscFrame *f, const IxgbeRscSeg *s,
                       unsigned bufsz, unsigned maxdesc, IxgbeRscResult *res)
{
    unsigned last = c->ndesc - 1;
    /* The first segment's buffers hold nothing else */
    size_t room = c->segs > 1 ? bufsz - c->blen[last] : 0;
    unsigned extra = s->plen > room ? DIV_ROUND_UP(s->plen - room, bufsz)
                                    : 0;
    unsigned start = room ? last : last + 1;

    if (s->ts != c->ts || s->l4len != c->l4len ||
        c->ndesc + extra > maxdesc ||
        c->l3len + c->l4len + c->payload + s->plen > 0xFFFF ||
        (start == last && c->cnt[last] >= IXGBE_RXD_RSCCNT_MAX)) {
        return false;
    }
    if (extra) {
        *res = ixgbe_rx_take(core, c->queue, extra, c->idx + c->ndesc,
                             c->desc + c->ndesc, c->buf + c->ndesc);
        if (*res != IXGBE_RSC_TAKEN) {
            /* The driver gets what there is; the segment waits or goes */
            rsc_close(core, c, RSC_CLOSE_FULL, true);
            return true;
        }
        memset(c->blen + c->ndesc, 0, extra * sizeof(c->blen[0]));
        c->ndesc += extra;
    }
    c->cnt[start]++;
    rsc_write(core, c, start, bufsz, f, s->poff, s->plen);
    rsc_take_fields(c, f, s);
    trace_ixgbe_rsc_append(c->queue, c->idx[0], s->seq, s->plen, c->segs);
    *res = IXGBE_RSC_TAKEN;
    if (s->flags & TCP_FLAG_PSH) {
        rsc_close(core, c, RSC_CLOSE_PSH, true);
    }
    return true;
}

IxgbeRscResult ixgbe_rsc_rx(IxgbeCore *core, unsigned q,
                            const IxgbeRscFrame *f)
{
    IxgbeRsc *rsc = core->rsc;
    uint32_t rscctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RSCCTL));
    uint32_t srrctl = ixgbe_get(core, ixgbe_rxq_reg(q, IXGBE_RXQ_SRRCTL));
    unsigned bufsz = rsc_bufsz(core, q);
    unsigned maxdesc = rsc_maxdesc(rscctl);
    IxgbeRscCtx *c = NULL;
    IxgbeRscResult res;
    int64_t deadline;
    IxgbeRscSeg s;

    if (!(rscctl & IXGBE_RSCCTL_RSCEN) ||
        (ixgbe_get(core, IXGBE_RFCTL) & IXGBE_RFCTL_RSC_DIS) ||
        ((srrctl >> IXGBE_SRRCTL_DESCTYPE_SHIFT) &
         IXGBE_SRRCTL_DESCTYPE_MASK) != 1 ||
        !(ixgbe_get(core, IXGBE_HLREG0) & IXGBE_HLREG0_RXCRCSTRP) ||
        ixgbe_vt_active(core) || !rsc_parse(f, &s)) {
        return IXGBE_RSC_PASS;
    }
    for (unsigned i = 0; rsc->nopen && i < IXGBE_RSC_CONTEXTS; i++) {
        if (rsc_same_flow(&rsc->ctx[i], f, &s)) {
            c = &rsc->ctx[i];
            break;
        }
    }
    /*
     * The flow moved to another queue (the Flow Director follows the
     * sender): what it left open there goes first, so the stream stays in
     * order.
     */
    if (c && c->queue != q) {
        rsc_close(core, c, RSC_CLOSE_FLOW, true);
        rsc_arm(core);
        c = NULL;
    }
    deadline = rsc_deadline(core, q);
    if (!s.ok || deadline < 0) {
        if (c) {
            rsc_close(core, c, RSC_CLOSE_FLOW, true);
        }
        return IXGBE_RSC_PASS;
    }
    if (c) {
        if (s.seq == c->next_seq &&
            rsc_append(core, c, f, &s, bufsz, maxdesc, &res)) {
            return res;
        }
        rsc_close(core, c, s.seq == c->next_seq ? RSC_CLOSE_FULL
                                                 : RSC_CLOSE_ORDER, true);
    }
    if (!(s.flags & TCP_FLAG_PSH) &&
        rsc_lone_waits(core, q, s.ip6,
                       f->has_vlan ? lduw_be_p(f->hdr + 14) : 0, s.key)) {
        return IXGBE_RSC_PASS;
    }
    return rsc_open(core, q, f, &s, bufsz, maxdesc, deadline);
}

static void rsc_close_where(IxgbeCore *core, int queue, int vector, int why,
                            bool raise)
{
    IxgbeRsc *rsc = core->rsc;
    bool closed = false;

    for (unsigned i = 0; rsc->nopen && i < IXGBE_RSC_CONTEXTS; i++) {
        IxgbeRscCtx *c = &rsc->ctx[i];

        if (!c->open || (queue >= 0 && c->queue != queue)) {
            continue;
        }
        if (vector >= 0 && rsc_vector(core, c->queue) >= 0 &&
            rsc_vector(core, c->queue) != vector) {
            continue;
        }
        if (why == RSC_CLOSE_IRQ && c->segs == 1) {
            int64_t hold = rsc_hold(core, c,
                                    qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));

            if (hold >= 0) {
                c->deadline = hold;
                closed = true;          /* re-arm */
                continue;
            }
        }
        rsc_close(core, c, why, raise);
        closed = true;
    }
    if (closed) {
        rsc_arm(core);
    }
}

void ixgbe_rsc_close_queue(IxgbeCore *core, unsigned q)
{
    if (core->rsc->nopen) {
        rsc_close_where(core, q, -1, RSC_CLOSE_QUEUE, true);
    }
}

static void ixgbe_rsc_timer(void *opaque)
{
    IxgbeCore *core = opaque;
    IxgbeRsc *rsc = core->rsc;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    if (!ixgbe_core_enter(core, "RSC timer", -1, 0)) {
        timer_mod(rsc->timer, now + SCALE_US);
        return;
    }
    for (unsigned i = 0; rsc->nopen && i < IXGBE_RSC_CONTEXTS; i++) {
        IxgbeRscCtx *c = &rsc->ctx[i];
        int64_t hold;

        if (!c->open || c->deadline > now) {
            continue;
        }
        hold = rsc_hold(core, c, now);
        if (hold < 0) {
            rsc_close(core, c, RSC_CLOSE_TIMER, true);
        } else {
            c->deadline = hold;
        }
    }
    rsc_arm(core);
    ixgbe_core_leave(core);
}

/* ------------------------------------------------------------------ */
/* Registers and life cycle                                            */
/* ------------------------------------------------------------------ */

static void ixgbe_write_rscctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                               uint32_t old)
{
    unsigned q = addr >= IXGBE_RXQ_HI ?
                 64 + (addr - IXGBE_RXQ_HI) / IXGBE_RXQ_STRIDE :
                 (addr - IXGBE_RXQ_LO) / IXGBE_RXQ_STRIDE;

    if (val != old) {
        ixgbe_rsc_close_queue(core, q);
    }
    /*
     * Software must keep MAXDESC buffers within 64 KB; an aggregate here
     * stops at 64 KB of IP packet whatever the buffers.
     */
    if ((val & IXGBE_RSCCTL_RSCEN) && val != old &&
        rsc_bufsz(core, q) * rsc_maxdesc(val) > 64 * KiB) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: rxq %u: RSCCTL.MAXDESC %u x "
                      "%u-byte buffers exceeds 64 KB\n", q,
                      rsc_maxdesc(val), rsc_bufsz(core, q));
    }
}

static const IxgbeRegDesc ixgbe_rsc_regs[] = {
    REG("RSCCTL", RQ(IXGBE_RSCCTL), 64, 0x40, 0, 0xD, 0, NULL,
        ixgbe_write_rscctl),
    REG("RSCCTL", RQH(IXGBE_RSCCTL), 64, 0x40, 0, 0xD, 0, NULL,
        ixgbe_write_rscctl),
    PLAIN("RSCDBU", IXGBE_RSCDBU, 1, 4, 0, 0xFF),
};

static void ixgbe_rsc_realize(IxgbeCore *core)
{
    core->rsc = g_new0(IxgbeRsc, 1);
    core->rsc->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, ixgbe_rsc_timer,
                                    core);
}

static void ixgbe_rsc_unrealize(IxgbeCore *core)
{
    timer_free(core->rsc->timer);
    g_free(core->rsc);
    core->rsc = NULL;
}

/* A reset forgets the aggregates: the rings they were in are gone too */
static void ixgbe_rsc_reset(IxgbeCore *core)
{
    timer_del(core->rsc->timer);
    memset(core->rsc->ctx, 0, sizeof(core->rsc->ctx));
    memset(core->rsc->lone, 0, sizeof(core->rsc->lone));
    core->rsc->nopen = 0;
    core->rsc->nlone = 0;
}

/* An interrupt on vector (-1: the only one) ends its queues' intervals */
static void ixgbe_rsc_before_irq(IxgbeCore *core, int vector)
{
    if (core->rsc->nopen) {
        rsc_close_where(core, -1, vector, RSC_CLOSE_IRQ, false);
    }
    if (vector >= 0) {
        core->rsc->fired[vector]++;
    }
}

/* Aggregates are written back before the VM stops: nothing migrates */
static void ixgbe_rsc_vm_stop(IxgbeCore *core)
{
    if (core->rsc->nopen && ixgbe_core_enter(core, "VM stop", -1, 0)) {
        rsc_close_where(core, -1, -1, RSC_CLOSE_STOP, true);
        ixgbe_core_leave(core);
    }
}

static void ixgbe_rsc_pre_save(IxgbeCore *core)
{
    if (core->rsc->nopen) {
        rsc_close_where(core, -1, -1, RSC_CLOSE_STOP, true);
    }
}

/* The flows held apart after a lone segment, and what they wait for */
static const VMStateDescription ixgbe_vmstate_rsc_lone = {
    .name = "ixgbe-rsc-lone",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(valid, IxgbeRscLone),
        VMSTATE_BOOL(ip6, IxgbeRscLone),
        VMSTATE_UINT8(vector, IxgbeRscLone),
        VMSTATE_UINT16(vlan, IxgbeRscLone),
        VMSTATE_UINT32(fired, IxgbeRscLone),
        VMSTATE_UINT8_ARRAY(key, IxgbeRscLone, 36),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription ixgbe_vmstate_rsc_lone_table = {
    .name = "ixgbe-rsc-lone-table",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(lone, IxgbeRsc, IXGBE_RSC_CONTEXTS, 1,
                             ixgbe_vmstate_rsc_lone, IxgbeRscLone),
        VMSTATE_UINT32_ARRAY(fired, IxgbeRsc, IXGBE_MSIX_VECTORS),
        VMSTATE_END_OF_LIST()
    }
};

bool ixgbe_rsc_migration_needed(IxgbeCore *core)
{
    return core->rsc->nlone;
}

/* A held flow names a vector the device has; nlone is counted again */
static bool ixgbe_rsc_post_load(IxgbeCore *core)
{
    IxgbeRsc *rsc = core->rsc;

    rsc->nlone = 0;
    for (unsigned i = 0; i < IXGBE_RSC_CONTEXTS; i++) {
        if (!rsc->lone[i].valid) {
            continue;
        }
        if (rsc->lone[i].vector >= IXGBE_MSIX_VECTORS) {
            error_report("ixgbe: migration stream: RSC flow %u waits on "
                         "vector %u", i, rsc->lone[i].vector);
            return false;
        }
        rsc->nlone++;
    }
    return true;
}

const IxgbePart ixgbe_rsc_part = {
    .regs = ixgbe_rsc_regs,
    .nregs = ARRAY_SIZE(ixgbe_rsc_regs),
    .realize = ixgbe_rsc_realize,
    .unrealize = ixgbe_rsc_unrealize,
    .reset = ixgbe_rsc_reset,
    .post_load = ixgbe_rsc_post_load,
    .before_irq = ixgbe_rsc_before_irq,
    .vm_stop = ixgbe_rsc_vm_stop,
    .pre_save = ixgbe_rsc_pre_save,
};
