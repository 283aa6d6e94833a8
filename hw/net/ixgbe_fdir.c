/*
 * Intel 82599 10 GbE controller: Flow Director.
 *
 * The Flow Director steers received IPv4/IPv6 frames to a queue chosen per
 * flow, ahead of RSS. FDIRCTRL.PBALLOC sets aside 64, 128 or 256 KB of the
 * receive packet buffer for the filter table, which then holds 2K, 4K or
 * 8K perfect-match filters or 8K, 16K or 32K signature filters, spread over
 * buckets by a hash of the frame's fields.
 *
 * The filter input of a frame is an 11-dword stream (most significant byte
 * first): VM pool, flow type (L4 type, IPv6) and VLAN; destination and
 * source address; source and destination port; the two flexible bytes at
 * FDIRCTRL.FLEX_OFFSET words from the start of the frame. Fields the mask
 * registers (FDIRM, FDIRSIP4M/DIP4M, FDIRIP6M, FDIRTCPM/UDPM/SCTPM) exclude
 * read as zero. The datasheet's hash over that stream with the 32-bit key
 * FDIRHKEY gives the bucket, with FDIRSKEY a signature.
 *
 * Signature mode: a filter is a bucket hash and a 15-bit signature
 * (FDIRHASH) and an action; a frame matches when both hashes of its input
 * equal the filter's. The Linux driver adds one per sampled transmitted TCP
 * flow (ATR), so the replies come in on the sending CPU's queue.
 *
 * Perfect-match mode: a filter holds the fields themselves (FDIRSIPv6,
 * FDIRIPSA, FDIRIPDA, FDIRPORT, FDIRVLAN), the bucket hash the driver
 * computed and a software index (FDIRHASH); a frame matches a filter of its
 * bucket whose unmasked fields equal its own. FDIRCMD.DROP sends matching
 * frames to FDIRCTRL.DROP_Q, a queue the driver leaves disabled.
 *
 * FDIRCMD adds, updates, removes and queries a filter named by FDIRHASH; a
 * command completes at once. Adding a filter that exists without
 * FDIRCMD.FILTER_UPDATE marks it collided (FDIRFREE.COLL, FDIRErr in the
 * descriptor). When the free count falls to FULL_THRESH x 16 the Flow
 * Director interrupt cause is raised (the driver then rebuilds the table).
 *
 * With FDIRCTRL.Report_Status, a matched frame's descriptor has FLM set,
 * RSS type 0xF and the filter ID (bucket hash, signature or software index)
 * in place of the RSS hash.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/bswap.h"
#include "qemu/bitops.h"
#include "net/net.h"
#include "net/eth.h"
#include "hw/pci/pci_device.h"
#include "migration/vmstate.h"
#include "ixgbe_core.h"
#include "ixgbe_fdir.h"
#include "trace.h"

#define IXGBE_FDIR_SIG_MASK         0x7FFFu
#define IXGBE_FDIR_FT_IPV6          4u
#define IXGBE_FDIR_L4_UDP           1u
#define IXGBE_FDIR_L4_TCP           2u
#define IXGBE_FDIR_L4_SCTP          3u

/* ------------------------------------------------------------------ */
/* Table geometry                                                      */
/* ------------------------------------------------------------------ */

static unsigned ixgbe_fdir_pballoc(IxgbeCore *core)
{
    return ixgbe_get(core, IXGBE_FDIRCTRL) & IXGBE_FDIRCTRL_PBALLOC_MASK;
}

static bool ixgbe_fdir_perfect(IxgbeCore *core)
{
    return ixgbe_get(core, IXGBE_FDIRCTRL) & IXGBE_FDIRCTRL_PERFECT;
}

/* 64 KB per PBALLOC step: 32 bytes a perfect filter, 8 a signature one */
static unsigned ixgbe_fdir_capacity(IxgbeCore *core)
{
    unsigned pb = ixgbe_fdir_pballoc(core);

    if (!pb) {
        return 0;
    }
    return ixgbe_fdir_perfect(core) ? 1024u << pb : 4096u << pb;
}

/* Buckets: 2K/4K/8K for perfect filters, 8K/16K/32K for signatures */
static uint32_t ixgbe_fdir_bucket_mask(IxgbeCore *core)
{
    unsigned pb = MAX(ixgbe_fdir_pballoc(core), 1);

    return ixgbe_fdir_perfect(core) ? (1u << (10 + pb)) - 1
                                    : (1u << (12 + pb)) - 1;
}

static uint32_t ixgbe_fdir_id(IxgbeCore *core, uint32_t hash)
{
    uint32_t id = hash >> IXGBE_FDIRHASH_SIG_SHIFT;

    return ixgbe_fdir_perfect(core) ? id : id & IXGBE_FDIR_SIG_MASK;
}

/* ------------------------------------------------------------------ */
/* The hash                                                            */
/* ------------------------------------------------------------------ */

/*
 * The 82599's Flow Director hash of an 11-dword input with a 32-bit key,
 * in the datasheet's dword form: each key bit selects a 16-bit window of
 * the input folded to one dword (key bits 31:16 of the fold, key bits 15:0
 * of its halves swapped), and the first dword (pool, flow type, VLAN) is
 * folded in at the offsets the bit-serial definition gives it, which leave
 * it out of the window key bit 0 selects.
 */
uint16_t ixgbe_fdir_hash(const uint32_t *input, uint32_t key)
{
    uint32_t first = input[0], fold = 0, hi, lo;
    uint32_t hash = 0;

    for (unsigned i = 1; i < IXGBE_FDIR_INPUT_DWORDS; i++) {
        fold ^= input[i];
    }
    hi = fold ^ first ^ (first >> 16);
    lo = ror32(fold, 16);
    for (unsigned n = 0; n < 16; n++) {
        if (n == 1) {
            lo ^= first ^ (first << 16);
        }
        if (key & BIT(n)) {
            hash ^= lo >> n;
        }
        if (key & BIT(n + 16)) {
            hash ^= hi >> n;
        }
    }
    return hash;
}

/* ------------------------------------------------------------------ */
/* A received frame's filter fields                                    */
/* ------------------------------------------------------------------ */

typedef struct IxgbeFdirFields {
    uint8_t ft;             /* flow type: L4 type, IPv6 */
    uint8_t pool;
    uint16_t vlan;          /* TCI without CFI */
    uint16_t flex;          /* as in FDIRVLAN 31:16 */
    uint16_t sport, dport;
    uint8_t sip[16], dip[16];   /* network order; IPv4 in the first 4 */
} IxgbeFdirFields;

/*
 * Parse an IPv4 or IPv6 frame (optionally VLAN tagged); false for anything
 * else, which the Flow Director does not look at.
 */
static bool ixgbe_fdir_parse(IxgbeCore *core, const uint8_t *frame,
                             size_t len, IxgbeFdirFields *f)
{
    uint32_t ctrl = ixgbe_get(core, IXGBE_FDIRCTRL);
    size_t flex = ((ctrl >> IXGBE_FDIRCTRL_FLEX_SHIFT) &
                   IXGBE_FDIRCTRL_FLEX_MASK) * 2;
    size_t off = ETH_HLEN, l4;
    uint16_t type;
    uint8_t proto;

    memset(f, 0, sizeof(*f));
    if (len < ETH_HLEN) {
        return false;
    }
    type = lduw_be_p(frame + 12);
    if (type == (ixgbe_get(core, IXGBE_VLNCTRL) & 0xFFFF) &&
        len >= ETH_HLEN + 4) {
        f->vlan = lduw_be_p(frame + 14) & 0xEFFF;
        type = lduw_be_p(frame + 16);
        off += 4;
    }
    if (flex + 2 <= len) {
        f->flex = lduw_le_p(frame + flex);
    }
    if (type == ETH_P_IP && len >= off + 20) {
        const uint8_t *ip = frame + off;
        bool frag = lduw_be_p(ip + 6) & 0x3FFF;

        memcpy(f->sip, ip + 12, 4);
        memcpy(f->dip, ip + 16, 4);
        proto = frag ? 0 : ip[9];
        l4 = off + (ip[0] & 0xF) * 4;
    } else if (type == ETH_P_IPV6 && len >= off + 40) {
        const uint8_t *ip = frame + off;

        f->ft = IXGBE_FDIR_FT_IPV6;
        memcpy(f->sip, ip + 8, 16);
        memcpy(f->dip, ip + 24, 16);
        proto = ip[6];
        l4 = off + 40;
    } else {
        return false;
    }
    switch (proto) {
    case IP_PROTO_TCP:
        f->ft |= IXGBE_FDIR_L4_TCP;
        break;
    case IP_PROTO_UDP:
        f->ft |= IXGBE_FDIR_L4_UDP;
        break;
    case IP_PROTO_SCTP:
        f->ft |= IXGBE_FDIR_L4_SCTP;
        break;
    default:
        return true;
    }
    if (len >= l4 + 4) {
        f->sport = lduw_be_p(frame + l4);
        f->dport = lduw_be_p(frame + l4 + 2);
    }
    return true;
}

/*
 * A port mask register: bits 15:0 source, 31:16 destination, each bit
 * reversed (bit 0 masks port bit 15), 1 = not compared
 */
static uint16_t ixgbe_fdir_port_mask(uint32_t reg, bool dst)
{
    uint16_t m = dst ? reg >> 16 : reg;
    uint16_t keep = 0;

    for (unsigned i = 0; i < 16; i++) {
        if (!(m & BIT(i))) {
            keep |= 1u << (15 - i);
        }
    }
    return keep;
}

static void ixgbe_fdir_mask_ip6(uint8_t *ip, uint16_t bytes_masked)
{
    for (unsigned i = 0; i < 16; i++) {
        if (bytes_masked & BIT(i)) {
            ip[i] = 0;
        }
    }
}

/* Clear what the mask registers exclude */
static void ixgbe_fdir_apply_masks(IxgbeCore *core, IxgbeFdirFields *f)
{
    uint32_t m = ixgbe_get(core, IXGBE_FDIRM);
    uint32_t ip6m = ixgbe_get(core, IXGBE_FDIRIP6M);
    uint32_t pm;

    if (m & IXGBE_FDIRM_VLANID) {
        f->vlan &= ~0x0FFF;
    }
    if (m & IXGBE_FDIRM_VLANP) {
        f->vlan &= ~0xE000;
    }
    if (m & IXGBE_FDIRM_POOL) {
        f->pool = 0;
    }
    if (m & IXGBE_FDIRM_FLEX) {
        f->flex = 0;
    }
    if (f->ft & IXGBE_FDIR_FT_IPV6) {
        ixgbe_fdir_mask_ip6(f->sip, ip6m & 0xFFFF);
        ixgbe_fdir_mask_ip6(f->dip, (m & IXGBE_FDIRM_DIPV6) ? 0xFFFF
                                                            : ip6m >> 16);
    } else {
        stl_le_p(f->sip, ldl_le_p(f->sip) &
                 ~ixgbe_get(core, IXGBE_FDIRSIP4M));
        stl_le_p(f->dip, ldl_le_p(f->dip) &
                 ~ixgbe_get(core, IXGBE_FDIRDIP4M));
    }
    switch (f->ft & 3) {
    case IXGBE_FDIR_L4_TCP:
        pm = ixgbe_get(core, IXGBE_FDIRTCPM);
        break;
    case IXGBE_FDIR_L4_UDP:
        pm = ixgbe_get(core, IXGBE_FDIRUDPM);
        break;
    case IXGBE_FDIR_L4_SCTP:
        pm = ixgbe_get(core, IXGBE_FDIRSCTPM);
        break;
    default:
        pm = UINT32_MAX;
        break;
    }
    if (m & IXGBE_FDIRM_L4P) {
        f->ft &= IXGBE_FDIR_FT_IPV6;
        pm = UINT32_MAX;
    }
    f->sport &= ixgbe_fdir_port_mask(pm, false);
    f->dport &= ixgbe_fdir_port_mask(pm, true);
}

/* The hash input stream of (masked) fields */
static void ixgbe_fdir_input(const IxgbeFdirFields *f, uint32_t *in)
{
    in[0] = (uint32_t)f->pool << 24 | (uint32_t)f->ft << 16 | f->vlan;
    for (unsigned i = 0; i < 4; i++) {
        in[1 + i] = ldl_be_p(f->dip + i * 4);
        in[5 + i] = ldl_be_p(f->sip + i * 4);
    }
    in[9] = (uint32_t)f->sport << 16 | f->dport;
    in[10] = (uint32_t)bswap16(f->flex) << 16;
}

/* ------------------------------------------------------------------ */
/* The table                                                           */
/* ------------------------------------------------------------------ */

static uint32_t ixgbe_fdir_bucket_of(IxgbeCore *core,
                                     const IxgbeFdirFilter *flt)
{
    return flt->hash & ixgbe_fdir_bucket_mask(core);
}

/* The table grows by doubling from this many filters */
#define IXGBE_FDIR_MIN_SIZE         256

/*
 * Give the table room for size filters (at least count): 0 frees it.  The
 * chains are kept: head[] does not depend on the size, next[] is copied.
 */
static void ixgbe_fdir_resize(IxgbeFdir *fd, uint32_t size)
{
    assert(size >= fd->count && size <= IXGBE_FDIR_MAX_FILTERS);
    if (!size) {
        g_free(fd->filters);
        g_free(fd->next);
        g_free(fd->head);
        fd->filters = NULL;
        fd->next = NULL;
        fd->head = NULL;
    } else {
        fd->filters = g_renew(IxgbeFdirFilter, fd->filters, size);
        fd->next = g_renew(uint16_t, fd->next, size);
        if (!fd->head) {
            fd->head = g_new0(uint16_t, IXGBE_FDIR_MAX_BUCKETS);
        }
    }
    fd->size = size;
}

/* The first filter of bucket b's chain, as index + 1 (0: none) */
static unsigned ixgbe_fdir_first(IxgbeFdir *fd, uint32_t b)
{
    return fd->head ? fd->head[b] : 0;
}

/* The filter of bucket b with identifier id, or -1 */
static int ixgbe_fdir_find(IxgbeCore *core, uint32_t b, uint32_t id)
{
    IxgbeFdir *fd = core->fdir;

    for (unsigned i = ixgbe_fdir_first(fd, b); i; i = fd->next[i - 1]) {
        if (ixgbe_fdir_id(core, fd->filters[i - 1].hash) == id) {
            return i - 1;
        }
    }
    return -1;
}

static unsigned ixgbe_fdir_chain_len(IxgbeFdir *fd, uint32_t b)
{
    unsigned n = 0;

    for (unsigned i = ixgbe_fdir_first(fd, b); i; i = fd->next[i - 1]) {
        n++;
    }
    return n;
}

static void ixgbe_fdir_clear(IxgbeCore *core)
{
    IxgbeFdir *fd = core->fdir;

    fd->count = 0;
    fd->full_signalled = false;
    ixgbe_fdir_resize(fd, 0);
}

static void ixgbe_fdir_rebuild(IxgbeCore *core)
{
    IxgbeFdir *fd = core->fdir;

    if (!fd->size) {
        return;
    }
    memset(fd->head, 0, IXGBE_FDIR_MAX_BUCKETS * sizeof(fd->head[0]));
    for (uint32_t i = 0; i < fd->count; i++) {
        uint32_t b = ixgbe_fdir_bucket_of(core, &fd->filters[i]);

        fd->next[i] = fd->head[b];
        fd->head[b] = i + 1;
    }
}

/* Make the chain link that points at from + 1 point at to + 1 */
static void ixgbe_fdir_relink(IxgbeFdir *fd, uint32_t b, unsigned from,
                              unsigned to)
{
    uint16_t *link = &fd->head[b];

    while (*link && *link != from + 1) {
        link = &fd->next[*link - 1];
    }
    if (*link) {
        *link = to + 1;
    }
}

static void ixgbe_fdir_remove(IxgbeCore *core, unsigned idx)
{
    IxgbeFdir *fd = core->fdir;
    unsigned last = fd->count - 1;
    uint32_t b = ixgbe_fdir_bucket_of(core, &fd->filters[idx]);
    uint16_t *link = &fd->head[b];

    while (*link != idx + 1) {
        link = &fd->next[*link - 1];
    }
    *link = fd->next[idx];
    if (idx != last) {
        /* Keep the table packed: the last filter takes the free slot */
        fd->filters[idx] = fd->filters[last];
        fd->next[idx] = fd->next[last];
        ixgbe_fdir_relink(fd, ixgbe_fdir_bucket_of(core, &fd->filters[idx]),
                          last, idx);
    }
    fd->count--;
}

static void ixgbe_fdir_count(IxgbeCore *core, hwaddr reg, unsigned shift,
                             uint32_t max)
{
    uint32_t *r = ixgbe_reg(core, reg);
    uint32_t v = (*r >> shift) & max;

    if (v < max) {
        *r += 1u << shift;
    }
}

static void ixgbe_fdir_check_full(IxgbeCore *core)
{
    IxgbeFdir *fd = core->fdir;
    uint32_t ctrl = ixgbe_get(core, IXGBE_FDIRCTRL);
    unsigned thresh = (ctrl >> IXGBE_FDIRCTRL_FULL_THRESH_SHIFT) * 16;
    unsigned free = ixgbe_fdir_capacity(core) - fd->count;

    if (free > thresh) {
        fd->full_signalled = false;
    } else if (!fd->full_signalled) {
        fd->full_signalled = true;
        trace_ixgbe_fdir_full(free);
        ixgbe_raise_other_cause(core, IXGBE_EICR_FLOW_DIR);
    }
}

static void ixgbe_fdir_fill(IxgbeCore *core, IxgbeFdirFilter *flt,
                            uint32_t cmd)
{
    flt->hash = ixgbe_get(core, IXGBE_FDIRHASH);
    flt->cmd = cmd & ~(IXGBE_FDIRCMD_CMD_MASK | IXGBE_FDIRCMD_FILTER_VALID |
                       IXGBE_FDIRCMD_CLEARHT | IXGBE_FDIRCMD_COLLISION);
    for (unsigned i = 0; i < 3; i++) {
        flt->sip[i] = ixgbe_get(core, IXGBE_FDIRSIPV6(i));
    }
    flt->sip[3] = ixgbe_get(core, IXGBE_FDIRIPSA);
    flt->dip = ixgbe_get(core, IXGBE_FDIRIPDA);
    flt->port = ixgbe_get(core, IXGBE_FDIRPORT);
    flt->vlan = ixgbe_get(core, IXGBE_FDIRVLAN);
}

/* Returns the FDIRCMD status bits the command leaves */
static uint32_t ixgbe_fdir_add(IxgbeCore *core, uint32_t cmd)
{
    IxgbeFdir *fd = core->fdir;
    uint32_t hash = ixgbe_get(core, IXGBE_FDIRHASH);
    uint32_t b = hash & ixgbe_fdir_bucket_mask(core);
    int idx = ixgbe_fdir_find(core, b, ixgbe_fdir_id(core, hash));
    uint32_t *len = ixgbe_reg(core, IXGBE_FDIRLEN);
    unsigned chain;

    if (cmd & IXGBE_FDIRCMD_TUNNEL) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: FDIRCMD 0x%08x: tunnel "
                      "filters need FDIRCTRL.FILTERMODE cloud, not added\n",
                      cmd);
        ixgbe_fdir_count(core, IXGBE_FDIRFSTAT, 0, 0xFF);
        return 0;
    }
    if ((cmd & IXGBE_FDIRCMD_DROP) && !ixgbe_fdir_perfect(core)) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: FDIRCMD 0x%08x: drop action "
                      "in signature mode\n", cmd);
    }
    if (idx >= 0) {
        IxgbeFdirFilter *flt = &fd->filters[idx];

        if (!(cmd & IXGBE_FDIRCMD_FILTER_UPDATE)) {
            /* The same bucket and signature (or SW index): a collision */
            flt->cmd |= IXGBE_FDIRCMD_COLLISION;
            ixgbe_fdir_count(core, IXGBE_FDIRFSTAT, 0, 0xFF);
            return IXGBE_FDIRCMD_COLLISION;
        }
        ixgbe_fdir_fill(core, flt, cmd | (flt->cmd &
                                          IXGBE_FDIRCMD_COLLISION));
        ixgbe_fdir_count(core, IXGBE_FDIRUSTAT, 0, 0xFFFF);
        return 0;
    }
    if (fd->count >= ixgbe_fdir_capacity(core)) {
        ixgbe_fdir_count(core, IXGBE_FDIRFSTAT, 0, 0xFF);
        ixgbe_fdir_check_full(core);
        return 0;
    }
    if (fd->count == fd->size) {
        ixgbe_fdir_resize(fd, MIN(MAX(fd->size * 2, IXGBE_FDIR_MIN_SIZE),
                                  IXGBE_FDIR_MAX_FILTERS));
    }
    idx = fd->count++;
    ixgbe_fdir_fill(core, &fd->filters[idx], cmd);
    fd->next[idx] = fd->head[b];
    fd->head[b] = idx + 1;
    ixgbe_fdir_count(core, IXGBE_FDIRUSTAT, 0, 0xFFFF);

    /* FDIRLEN: the longest chain since it was last read, and its bucket */
    chain = ixgbe_fdir_chain_len(fd, b);
    if (chain > (*len & 0x3F)) {
        *len = MIN(chain, 0x3F) | b << 16;
    }
    ixgbe_fdir_check_full(core);
    return 0;
}

static void ixgbe_fdir_query(IxgbeCore *core, const IxgbeFdirFilter *flt)
{
    for (unsigned i = 0; i < 3; i++) {
        *ixgbe_reg(core, IXGBE_FDIRSIPV6(i)) = flt->sip[i];
    }
    *ixgbe_reg(core, IXGBE_FDIRIPSA) = flt->sip[3];
    *ixgbe_reg(core, IXGBE_FDIRIPDA) = flt->dip;
    *ixgbe_reg(core, IXGBE_FDIRPORT) = flt->port;
    *ixgbe_reg(core, IXGBE_FDIRVLAN) = flt->vlan;
}

/* ------------------------------------------------------------------ */
/* Registers                                                           */
/* ------------------------------------------------------------------ */

static void ixgbe_fdir_write_ctrl(IxgbeCore *core, hwaddr addr, uint32_t val,
                                  uint32_t old)
{
    uint32_t pb = val & IXGBE_FDIRCTRL_PBALLOC_MASK;
    unsigned rxpb = (ixgbe_get(core, IXGBE_RXPBSIZE0) >> 10) & 0x3FF;

    /* Writing FDIRCTRL (re)initialises the table; it is done at once */
    *ixgbe_reg(core, addr) = val | IXGBE_FDIRCTRL_INIT_DONE;
    ixgbe_fdir_clear(core);
    if (!pb) {
        if (val & ~(IXGBE_FDIRCTRL_INIT_DONE)) {
            qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: FDIRCTRL 0x%08x sets up "
                          "Flow Director with PBALLOC 0 (no memory): it "
                          "stays off\n", val);
        }
        trace_ixgbe_fdir_init(val, 0);
        return;
    }
    /* The table lives at the end of the 512 KB packet buffer */
    if (rxpb + (32u << pb) > 512) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: FDIRCTRL.PBALLOC %u needs "
                      "%u KB that packet buffer 0 (RXPBSIZE0: %u KB) still "
                      "holds\n", pb, 32u << pb, rxpb);
    }
    trace_ixgbe_fdir_init(val, ixgbe_fdir_capacity(core));
}

static void ixgbe_fdir_write_cmd(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    IxgbeFdir *fd = core->fdir;
    uint32_t op = val & IXGBE_FDIRCMD_CMD_MASK;
    uint32_t hash = ixgbe_get(core, IXGBE_FDIRHASH);
    uint32_t result = val & ~(IXGBE_FDIRCMD_CMD_MASK |
                              IXGBE_FDIRCMD_FILTER_VALID |
                              IXGBE_FDIRCMD_COLLISION);
    int idx;

    if ((val & IXGBE_FDIRCMD_CLEARHT) && !(old & IXGBE_FDIRCMD_CLEARHT)) {
        ixgbe_fdir_clear(core);
    }
    /* Commands complete at once: the command field reads back clear */
    *ixgbe_reg(core, addr) = result;
    if (!op) {
        return;
    }
    if (!ixgbe_fdir_pballoc(core) ||
        !(ixgbe_get(core, IXGBE_FDIRCTRL) & IXGBE_FDIRCTRL_INIT_DONE)) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: FDIRCMD 0x%08x while Flow "
                      "Director is off (FDIRCTRL.PBALLOC 0), ignored\n", val);
        if (op != IXGBE_FDIRCMD_CMD_QUERY) {
            /* FDIRFSTAT: failed adds 7:0, failed removes 15:8 */
            ixgbe_fdir_count(core, IXGBE_FDIRFSTAT,
                             op == IXGBE_FDIRCMD_CMD_ADD ? 0 : 8, 0xFF);
        }
        return;
    }
    idx = ixgbe_fdir_find(core, hash & ixgbe_fdir_bucket_mask(core),
                          ixgbe_fdir_id(core, hash));
    switch (op) {
    case IXGBE_FDIRCMD_CMD_ADD:
        result |= ixgbe_fdir_add(core, val);
        break;
    case IXGBE_FDIRCMD_CMD_REMOVE:
        if (idx < 0) {
            ixgbe_fdir_count(core, IXGBE_FDIRFSTAT, 8, 0xFF);
            break;
        }
        ixgbe_fdir_remove(core, idx);
        ixgbe_fdir_count(core, IXGBE_FDIRUSTAT, 16, 0xFFFF);
        ixgbe_fdir_check_full(core);
        break;
    case IXGBE_FDIRCMD_CMD_QUERY:
        if (idx >= 0) {
            const IxgbeFdirFilter *flt = &fd->filters[idx];

            ixgbe_fdir_query(core, flt);
            result = (result & IXGBE_FDIRCMD_CLEARHT) | flt->cmd |
                     IXGBE_FDIRCMD_FILTER_VALID;
        }
        break;
    }
    *ixgbe_reg(core, addr) = result;
    trace_ixgbe_fdir_cmd(val, hash, fd->count);
}

/* FDIRFREE: free filters 15:0, collided filters 30:16 */
static uint32_t ixgbe_fdir_read_free(IxgbeCore *core, hwaddr addr)
{
    IxgbeFdir *fd = core->fdir;
    unsigned coll = 0;

    for (uint32_t i = 0; i < fd->count; i++) {
        if (fd->filters[i].cmd & IXGBE_FDIRCMD_COLLISION) {
            coll++;
        }
    }
    return MIN(ixgbe_fdir_capacity(core) - fd->count, 0xFFFF) |
           MIN(coll, 0x7FFF) << 16;
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static bool ixgbe_fdir_perfect_match(IxgbeCore *core,
                                     const IxgbeFdirFilter *flt,
                                     const IxgbeFdirFields *f)
{
    uint32_t m = ixgbe_get(core, IXGBE_FDIRM);
    uint8_t ftmask = (m & IXGBE_FDIRM_L4P) ? IXGBE_FDIR_FT_IPV6 : 7;
    uint8_t ft = (flt->cmd >> IXGBE_FDIRCMD_FLOW_TYPE_SHIFT) &
                 IXGBE_FDIRCMD_FLOW_TYPE_MASK;
    uint16_t vmask = 0xEFFF;
    uint32_t pm;

    if ((ft & ftmask) != f->ft) {
        return false;
    }
    if (!(m & IXGBE_FDIRM_POOL) &&
        ((flt->cmd >> IXGBE_FDIRCMD_VT_POOL_SHIFT) &
         IXGBE_FDIRCMD_VT_POOL_MASK) != f->pool) {
        return false;
    }
    if (m & IXGBE_FDIRM_VLANID) {
        vmask &= ~0x0FFF;
    }
    if (m & IXGBE_FDIRM_VLANP) {
        vmask &= ~0xE000;
    }
    if ((flt->vlan & vmask) != f->vlan) {
        return false;
    }
    if (!(m & IXGBE_FDIRM_FLEX) && (flt->vlan >> 16) != f->flex) {
        return false;
    }
    if (f->ft & IXGBE_FDIR_FT_IPV6) {
        /* The source address (FDIRIP6M.SIPM); the destination is hashed */
        uint8_t sip[16];

        for (unsigned i = 0; i < 4; i++) {
            stl_le_p(sip + i * 4, flt->sip[i]);
        }
        ixgbe_fdir_mask_ip6(sip, ixgbe_get(core, IXGBE_FDIRIP6M) & 0xFFFF);
        if (memcmp(sip, f->sip, 16)) {
            return false;
        }
    } else if ((flt->sip[3] & ~ixgbe_get(core, IXGBE_FDIRSIP4M)) !=
               ldl_le_p(f->sip) ||
               (flt->dip & ~ixgbe_get(core, IXGBE_FDIRDIP4M)) !=
               ldl_le_p(f->dip)) {
        return false;
    }
    switch (f->ft & 3) {
    case IXGBE_FDIR_L4_TCP:
        pm = ixgbe_get(core, IXGBE_FDIRTCPM);
        break;
    case IXGBE_FDIR_L4_UDP:
        pm = ixgbe_get(core, IXGBE_FDIRUDPM);
        break;
    case IXGBE_FDIR_L4_SCTP:
        pm = ixgbe_get(core, IXGBE_FDIRSCTPM);
        break;
    default:
        return true;
    }
    return ((flt->port & 0xFFFF) & ixgbe_fdir_port_mask(pm, false)) ==
           f->sport &&
           ((flt->port >> 16) & ixgbe_fdir_port_mask(pm, true)) == f->dport;
}

bool ixgbe_fdir_lookup(IxgbeCore *core, const uint8_t *frame, size_t len,
                       IxgbeFdirResult *res)
{
    IxgbeFdir *fd = core->fdir;
    uint32_t ctrl = ixgbe_get(core, IXGBE_FDIRCTRL);
    bool perfect = ctrl & IXGBE_FDIRCTRL_PERFECT;
    uint32_t in[IXGBE_FDIR_INPUT_DWORDS];
    IxgbeFdirFields f;
    uint32_t full, bucket, sig = 0;
    unsigned chain = 0;
    int hit = -1;

    memset(res, 0, sizeof(*res));
    if (!(ctrl & IXGBE_FDIRCTRL_PBALLOC_MASK) ||
        !ixgbe_fdir_parse(core, frame, len, &f)) {
        return false;
    }
    ixgbe_fdir_apply_masks(core, &f);
    ixgbe_fdir_input(&f, in);
    full = ixgbe_fdir_hash(in, ixgbe_get(core, IXGBE_FDIRHKEY)) &
           IXGBE_FDIR_SIG_MASK;
    bucket = full & ixgbe_fdir_bucket_mask(core);
    if (!perfect) {
        sig = ixgbe_fdir_hash(in, ixgbe_get(core, IXGBE_FDIRSKEY)) &
              IXGBE_FDIR_SIG_MASK;
    }
    for (unsigned i = ixgbe_fdir_first(fd, bucket); i; i = fd->next[i - 1]) {
        const IxgbeFdirFilter *flt = &fd->filters[i - 1];

        chain++;
        if (hit >= 0) {
            continue;
        }
        if (perfect ? ixgbe_fdir_perfect_match(core, flt, &f)
                    : ixgbe_fdir_id(core, flt->hash) == sig) {
            hit = i - 1;
        }
    }
    res->report = ctrl & IXGBE_FDIRCTRL_REPORT;
    if (hit < 0) {
        ixgbe_fdir_count(core, IXGBE_FDIRMISS, 0, UINT32_MAX);
        if (perfect && (ctrl & IXGBE_FDIRCTRL_DROP_NO_MATCH)) {
            res->steer = true;
            res->queue = (ctrl >> IXGBE_FDIRCTRL_DROP_Q_SHIFT) &
                         IXGBE_FDIRCTRL_DROP_Q_MASK;
        }
        return true;
    }

    {
        const IxgbeFdirFilter *flt = &fd->filters[hit];

        ixgbe_fdir_count(core, IXGBE_FDIRMATCH, 0, UINT32_MAX);
        res->match = true;
        res->id = full | (perfect ? flt->hash & 0xFFFF0000u
                                    : sig << IXGBE_FDIRHASH_SIG_SHIFT);
        res->status = IXGBE_RXD_STAT_FLM;
        if (flt->cmd & IXGBE_FDIRCMD_COLLISION) {
            res->status |= IXGBE_RXD_ERR_FDIR_COLL;
        }
        if (chain > ((ctrl >> IXGBE_FDIRCTRL_MAX_LEN_SHIFT) &
                     IXGBE_FDIRCTRL_MAX_LEN_MASK)) {
            res->status |= IXGBE_RXD_ERR_FDIR_LEN;
        }
        if (flt->cmd & IXGBE_FDIRCMD_DROP) {
            res->steer = true;
            res->queue = (ctrl >> IXGBE_FDIRCTRL_DROP_Q_SHIFT) &
                         IXGBE_FDIRCTRL_DROP_Q_MASK;
            res->status |= IXGBE_RXD_ERR_FDIR_DROP;
        } else if (flt->cmd & IXGBE_FDIRCMD_QUEUE_EN) {
            res->steer = true;
            res->queue = (flt->cmd >> IXGBE_FDIRCMD_RX_QUEUE_SHIFT) &
                         IXGBE_FDIRCMD_RX_QUEUE_MASK;
        }
        trace_ixgbe_fdir_match(res->id, res->steer ? (int)res->queue : -1);
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Life cycle and migration                                            */
/* ------------------------------------------------------------------ */

static void ixgbe_fdir_init(IxgbeCore *core)
{
    core->fdir = g_new0(IxgbeFdir, 1);
}

static void ixgbe_fdir_uninit(IxgbeCore *core)
{
    core->fdir->count = 0;
    ixgbe_fdir_resize(core->fdir, 0);
    g_free(core->fdir);
    core->fdir = NULL;
}

static void ixgbe_fdir_reset(IxgbeCore *core)
{
    ixgbe_fdir_clear(core);
}

bool ixgbe_fdir_migration_needed(IxgbeCore *core)
{
    return core->fdir->count || core->fdir->full_signalled;
}

/* Runs on the incoming side once registers and table are loaded */
static bool ixgbe_fdir_post_load(IxgbeCore *core)
{
    IxgbeFdir *fd = core->fdir;

    if (fd->count > ixgbe_fdir_capacity(core)) {
        error_report("ixgbe: %u migrated Flow Director filters exceed the "
                     "%u FDIRCTRL 0x%08x allows", fd->count,
                     ixgbe_fdir_capacity(core),
                     ixgbe_get(core, IXGBE_FDIRCTRL));
        return false;
    }
    /* Loaded into a table of the largest size: keep what the filters need */
    ixgbe_fdir_resize(fd, fd->count);
    ixgbe_fdir_rebuild(core);
    return true;
}

/* Room for any count of filters a valid stream can carry */
static int ixgbe_fdir_pre_load(void *opaque)
{
    IxgbeFdir *fd = opaque;

    ixgbe_fdir_resize(fd, IXGBE_FDIR_MAX_FILTERS);
    return 0;
}

static bool ixgbe_fdir_count_valid(void *opaque, int version_id)
{
    IxgbeFdir *fd = opaque;

    return fd->count <= IXGBE_FDIR_MAX_FILTERS;
}

static const VMStateDescription ixgbe_vmstate_fdir_filter = {
    .name = "ixgbe-fdir-filter",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(hash, IxgbeFdirFilter),
        VMSTATE_UINT32(cmd, IxgbeFdirFilter),
        VMSTATE_UINT32_ARRAY(sip, IxgbeFdirFilter, 4),
        VMSTATE_UINT32(dip, IxgbeFdirFilter),
        VMSTATE_UINT32(port, IxgbeFdirFilter),
        VMSTATE_UINT32(vlan, IxgbeFdirFilter),
        VMSTATE_END_OF_LIST()
    }
};

const VMStateDescription ixgbe_vmstate_fdir_table = {
    .name = "ixgbe-fdir-table",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_load = ixgbe_fdir_pre_load,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(full_signalled, IxgbeFdir),
        VMSTATE_UINT32(count, IxgbeFdir),
        VMSTATE_VALIDATE("filter count", ixgbe_fdir_count_valid),
        VMSTATE_STRUCT_VARRAY_POINTER_UINT32(filters, IxgbeFdir, count,
                                             ixgbe_vmstate_fdir_filter,
                                             IxgbeFdirFilter),
        VMSTATE_END_OF_LIST()
    }
};

/* The Flow Director's registers */
static const IxgbeRegDesc ixgbe_fdir_regs[] = {
    REG("FDIRCTRL", IXGBE_FDIRCTRL, 1, 4, 0, ALL, IXGBE_RF_RAW, NULL,
        ixgbe_fdir_write_ctrl),
    PLAIN("FDIRSIPv6", IXGBE_FDIRSIPV6_0, 3, 4, 0, ALL),
    PLAIN("FDIRIPSA", IXGBE_FDIRIPSA, 1, 4, 0, ALL),
    PLAIN("FDIRIPDA", IXGBE_FDIRIPDA, 1, 4, 0, ALL),
    PLAIN("FDIRPORT", IXGBE_FDIRPORT, 1, 4, 0, ALL),
    PLAIN("FDIRVLAN", IXGBE_FDIRVLAN, 1, 4, 0, ALL),
    PLAIN("FDIRHASH", IXGBE_FDIRHASH, 1, 4, 0, ALL),
    REG("FDIRCMD", IXGBE_FDIRCMD, 1, 4, 0, ALL, IXGBE_RF_RAW, NULL,
        ixgbe_fdir_write_cmd),
    REG("FDIRFREE", IXGBE_FDIRFREE, 1, 4, 0, ALL, 0, ixgbe_fdir_read_free,
        NULL),
    PLAIN("FDIRDIP4M", IXGBE_FDIRDIP4M, 1, 4, 0, ALL),
    PLAIN("FDIRSIP4M", IXGBE_FDIRSIP4M, 1, 4, 0, ALL),
    PLAIN("FDIRTCPM", IXGBE_FDIRTCPM, 1, 4, 0, ALL),
    PLAIN("FDIRUDPM", IXGBE_FDIRUDPM, 1, 4, 0, ALL),
    STAT("FDIRLEN", IXGBE_FDIRLEN, 1, 4),
    STAT("FDIRUSTAT", IXGBE_FDIRUSTAT, 1, 4),
    STAT("FDIRFSTAT", IXGBE_FDIRFSTAT, 1, 4),
    STAT("FDIRMATCH", IXGBE_FDIRMATCH, 1, 4),
    STAT("FDIRMISS", IXGBE_FDIRMISS, 1, 4),
    PLAIN("FDIRHKEY", IXGBE_FDIRHKEY, 1, 4, 0, ALL),
    PLAIN("FDIRSKEY", IXGBE_FDIRSKEY, 1, 4, 0, ALL),
    PLAIN("FDIRM", IXGBE_FDIRM, 1, 4, 0, 0x3F),
    PLAIN("FDIRIP6M", IXGBE_FDIRIP6M, 1, 4, 0, ALL),
    /* An X550 register; reset: SCTP ports not compared */
    PLAIN("FDIRSCTPM", IXGBE_FDIRSCTPM, 1, 4, ALL, ALL),
};

const IxgbePart ixgbe_fdir_part = {
    .regs = ixgbe_fdir_regs,
    .nregs = ARRAY_SIZE(ixgbe_fdir_regs),
    .realize = ixgbe_fdir_init,
    .unrealize = ixgbe_fdir_uninit,
    .reset = ixgbe_fdir_reset,
    .post_load = ixgbe_fdir_post_load,
};
