/*
 * Intel 82599 10 GbE controller: SR-IOV virtualization.
 *
 * The PF<->VF mailbox (PFMAILBOX/VFMAILBOX, PFMBMEM, PFMBICR/PFMBIMR), VF
 * reset events (VFLRE/VFLREC), the VF register file and the VF interrupts.
 * The device moves mailbox words and raises interrupts; the protocol over
 * it is the drivers'.
 *
 * A VF's BAR 0 is described once, in ixgbe_vf_reg_table: each register is
 * the VF's own state (IxgbeVf), a PF register of the VF's (its mailbox
 * memory, its pool's PSRTYPE, its counters) or a register of one of the
 * queues of its pool.  VF n owns pool n; GCR_EXT.VT_Mode says how many
 * queues a pool has (8, 4 or 2), so VF queue i is PF queue n * qpp + i.
 * Accesses that reach a PF register go through the PF's register file, so
 * a VF's tail write runs the same datapath as the PF's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/pci/msix.h"
#include "ixgbe_core.h"
#include "ixgbe_sriov.h"
#include "trace.h"

#define IXGBE_VF_IVAR_VECTOR_MASK   0x3u
#define IXGBE_VF_IVAR_WMASK         0x83838383u

/* ------------------------------------------------------------------ */
/* Pools                                                               */
/* ------------------------------------------------------------------ */

unsigned ixgbe_sriov_num_vfs(IxgbeCore *core)
{
    return MIN(pcie_sriov_num_vfs(core->owner), IXGBE_MAX_VFS);
}

/* Queues per pool, from GCR_EXT.VT_Mode; 0 outside virtualization mode */
unsigned ixgbe_sriov_queues_per_pool(IxgbeCore *core)
{
    switch (ixgbe_get(core, IXGBE_GCR_EXT) & IXGBE_GCR_EXT_VT_MODE_MASK) {
    case IXGBE_GCR_EXT_VT_MODE_16:
        return 8;
    case IXGBE_GCR_EXT_VT_MODE_32:
        return 4;
    case IXGBE_GCR_EXT_VT_MODE_64:
        return 2;
    default:
        return 0;
    }
}

/* The PF queue that is queue idx of VF vfn's pool, or -1 */
static int ixgbe_vf_queue(IxgbeCore *core, unsigned vfn, unsigned idx)
{
    unsigned qpp = ixgbe_sriov_queues_per_pool(core);

    if (idx >= qpp || (vfn + 1) * qpp > IXGBE_NUM_QUEUES) {
        trace_ixgbe_vf_queue_unmapped(vfn, idx, qpp);
        return -1;
    }
    return vfn * qpp + idx;
}

/* ------------------------------------------------------------------ */
/* Interrupts                                                          */
/* ------------------------------------------------------------------ */

static PCIDevice *ixgbe_vf_dev(IxgbeCore *core, unsigned vfn)
{
    return pcie_sriov_get_vf_at_index(core->owner, vfn);
}

/* Hold vector v of VF vfn for its VTEITR interval, if it has one */
static void ixgbe_vf_arm(IxgbeCore *core, unsigned vfn, unsigned v)
{
    uint64_t ns = ixgbe_itr_interval_ns(core->vf[vfn].eitr[v]);
    IxgbeVector *vec = &core->vf_vec[vfn][v];

    if (ns) {
        vec->armed = true;
        timer_mod(vec->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + ns);
    }
}

static void ixgbe_vf_disarm(IxgbeCore *core, unsigned vfn)
{
    for (unsigned v = 0; v < IXGBE_VF_MSIX_VECTORS; v++) {
        timer_del(core->vf_vec[vfn][v].timer);
        core->vf_vec[vfn][v].armed = false;
    }
}

/*
 * Send the VF's MSI-X messages for the causes in bits that are pending and
 * enabled.  A vector first writes back the completed descriptors of the
 * transmit queues it serves, auto-clears its cause (VTEIAC) and auto-masks
 * itself (VTEIAM); then its VTEITR interval holds it, the cause staying
 * pending until the interval is over.
 */
static void ixgbe_vf_fire(IxgbeCore *core, unsigned vfn, uint32_t bits)
{
    IxgbeVf *vf = &core->vf[vfn];
    PCIDevice *d = ixgbe_vf_dev(core, vfn);
    unsigned qpp = ixgbe_sriov_queues_per_pool(core);

    bits &= vf->eicr & vf->eims & IXGBE_VTEICR_MASK;
    if (!d || !msix_enabled(d)) {
        return;
    }
    while (bits) {
        unsigned v = ctz32(bits);

        bits &= bits - 1;
        if (core->vf_vec[vfn][v].armed) {
            continue;           /* held until the VTEITR interval is over */
        }
        for (unsigned i = 0; i < qpp; i++) {
            uint32_t ent = ixgbe_ivar_byte(vf->ivar[i / 2], i, true);
            int q = ixgbe_vf_queue(core, vfn, i);

            if (q >= 0 && (ent & IXGBE_IVAR_VALID) &&
                (ent & IXGBE_VF_IVAR_VECTOR_MASK) == v) {
                ixgbe_before_queue_irq(core, q);
            }
        }
        vf->eicr &= ~(vf->eiac & BIT(v));
        vf->eims &= ~(vf->eiam & BIT(v));
        trace_ixgbe_vf_irq(vfn, v);
        msix_notify(d, v);
        ixgbe_vf_arm(core, vfn, v);
    }
}

/* A VTEITR interval is over: what the vector held goes out now */
static void ixgbe_vf_vector_timer(void *opaque)
{
    IxgbeVector *vec = opaque;
    IxgbeCore *core = vec->core;
    unsigned idx = vec - &core->vf_vec[0][0];

    if (!ixgbe_core_enter(core, "VF interrupt timer", -1, 0)) {
        return;
    }
    vec->armed = false;
    ixgbe_vf_fire(core, idx / IXGBE_VF_MSIX_VECTORS,
                  BIT(idx % IXGBE_VF_MSIX_VECTORS));
    ixgbe_core_leave(core);
}

/* Raise the cause an IVAR entry (queue or mailbox) routes to */
static void ixgbe_vf_raise(IxgbeCore *core, unsigned vfn, uint32_t ent)
{
    unsigned v = ent & IXGBE_VF_IVAR_VECTOR_MASK;

    if (!(ent & IXGBE_IVAR_VALID)) {
        return;
    }
    if (v >= IXGBE_VF_MSIX_VECTORS) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: VF %u: interrupt routed to vector %u, "
                      "the VF has %u\n", vfn, v, IXGBE_VF_MSIX_VECTORS);
        return;
    }
    core->vf[vfn].eicr |= BIT(v);
    ixgbe_vf_fire(core, vfn, BIT(v));
}

static void ixgbe_vf_mailbox_irq(IxgbeCore *core, unsigned vfn)
{
    ixgbe_vf_raise(core, vfn, core->vf[vfn].ivar_misc);
}

/* A queue cause: true if the queue belongs to an enabled VF's pool */
bool ixgbe_sriov_queue_cause(IxgbeCore *core, bool is_tx, unsigned queue)
{
    unsigned qpp = ixgbe_sriov_queues_per_pool(core);
    unsigned vfn, idx;

    if (!qpp || queue / qpp >= ixgbe_sriov_num_vfs(core)) {
        return false;
    }
    vfn = queue / qpp;
    idx = queue % qpp;
    ixgbe_vf_raise(core, vfn,
                   ixgbe_ivar_byte(core->vf[vfn].ivar[idx / 2], idx, is_tx));
    return true;
}

/*
 * The function whose requester ID a queue's DMA carries (descriptor
 * fetches and write-backs, buffers, head write-back): the VF whose pool
 * the queue is in while VF Enable is on, as for its interrupt causes;
 * the PF otherwise.  The VF's bus master address space is its IOMMU
 * domain, and it is empty while the VF's Bus Master Enable is off.
 */
PCIDevice *ixgbe_queue_dma_dev(IxgbeCore *core, unsigned queue)
{
    unsigned qpp = ixgbe_sriov_queues_per_pool(core);
    PCIDevice *vf;

    if (!qpp || queue / qpp >= ixgbe_sriov_num_vfs(core)) {
        return core->owner;
    }
    vf = ixgbe_vf_dev(core, queue / qpp);
    return vf ? vf : core->owner;
}

/* A VF's message, acknowledgement or reset for the PF: EICR.MAILBOX */
static void ixgbe_sriov_pf_notify(IxgbeCore *core, unsigned vfn)
{
    if (ixgbe_get(core, IXGBE_PFMBIMR(vfn / 32)) & BIT(vfn % 32)) {
        ixgbe_raise_other_cause(core, IXGBE_EICR_MAILBOX);
    }
}

/* ------------------------------------------------------------------ */
/* PF registers                                                        */
/* ------------------------------------------------------------------ */

/* PFMAILBOX: PFU is stored; VFU is the VF's; STS, ACK and RVFU act */
static uint32_t ixgbe_sriov_read_pfmailbox(IxgbeCore *core, hwaddr addr)
{
    unsigned vfn = (addr - IXGBE_PFMAILBOX0) / 4;
    uint32_t v = ixgbe_get(core, addr);

    if (core->vf[vfn].mailbox & IXGBE_VFMAILBOX_VFU) {
        v |= IXGBE_PFMAILBOX_VFU;
    }
    return v;
}

static void ixgbe_sriov_write_pfmailbox(IxgbeCore *core, hwaddr addr,
                                        uint32_t val, uint32_t old)
{
    unsigned vfn = (addr - IXGBE_PFMAILBOX0) / 4;
    IxgbeVf *vf = &core->vf[vfn];
    uint32_t *reg = ixgbe_reg(core, addr);

    if (val & IXGBE_PFMAILBOX_RVFU) {
        vf->mailbox &= ~IXGBE_VFMAILBOX_VFU;
    }
    /* The PF takes the buffer only while the VF does not hold it */
    if (!(val & IXGBE_PFMAILBOX_PFU)) {
        *reg &= ~IXGBE_PFMAILBOX_PFU;
    } else if (!(vf->mailbox & IXGBE_VFMAILBOX_VFU)) {
        *reg |= IXGBE_PFMAILBOX_PFU;
    }
    trace_ixgbe_pf_mailbox(vfn, val, *reg);
    if (val & (IXGBE_PFMAILBOX_STS | IXGBE_PFMAILBOX_ACK)) {
        if (val & IXGBE_PFMAILBOX_STS) {
            vf->mailbox |= IXGBE_VFMAILBOX_PFSTS;
        }
        if (val & IXGBE_PFMAILBOX_ACK) {
            vf->mailbox |= IXGBE_VFMAILBOX_PFACK;
        }
        ixgbe_vf_mailbox_irq(core, vfn);
    }
}

/* PFMBICR, VFLREC: write 1 to clear */
static void ixgbe_sriov_write_w1c(IxgbeCore *core, hwaddr addr, uint32_t val,
                                  uint32_t old)
{
    *ixgbe_reg(core, addr) = old & ~val;
}

/* VFLRE: the pending VF resets VFLREC clears */
static uint32_t ixgbe_sriov_read_vflre(IxgbeCore *core, hwaddr addr)
{
    return ixgbe_get(core, IXGBE_VFLREC(addr == IXGBE_VFLRE0 ? 0 : 1));
}

/*
 * CTRL_EXT.PFRSTD: the PF driver has finished its reset; the VFs see RSTI
 * go and RSTD come.
 */
static void ixgbe_sriov_write_ctrl_ext(IxgbeCore *core, hwaddr addr,
                                       uint32_t val, uint32_t old)
{
    if (!(val & IXGBE_CTRL_EXT_PFRSTD) || !core->pf_rst_pending) {
        return;
    }
    core->pf_rst_pending = false;
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        core->vf[n].mailbox |= IXGBE_VFMAILBOX_RSTD;
    }
    trace_ixgbe_pf_reset_done();
}

/* A PF reset resets its VFs; they see RSTI until the PF sets PFRSTD */
static void ixgbe_sriov_reset(IxgbeCore *core)
{
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        ixgbe_vf_disarm(core, n);
    }
    memset(core->vf, 0, sizeof(core->vf));
    memset(core->qde, 0, sizeof(core->qde));
    core->pf_rst_pending = true;
}

/* ------------------------------------------------------------------ */
/* VF resets                                                           */
/* ------------------------------------------------------------------ */

static void ixgbe_vf_stop_queues(IxgbeCore *core, unsigned vfn)
{
    for (unsigned i = 0; i < ixgbe_sriov_queues_per_pool(core); i++) {
        int q = ixgbe_vf_queue(core, vfn, i);
        hwaddr rx, tx;

        if (q < 0) {
            break;
        }
        rx = ixgbe_rxq_reg(q, IXGBE_RXQ_RXDCTL);
        tx = ixgbe_txq_reg(q, IXGBE_TXQ_TXDCTL);
        ixgbe_core_write(core, rx, ixgbe_get(core, rx) & ~IXGBE_RXDCTL_ENABLE,
                         4);
        ixgbe_core_write(core, tx, ixgbe_get(core, tx) & ~IXGBE_TXDCTL_ENABLE,
                         4);
    }
}

/* VFCTRL.RST: the VF's interrupt registers and queues; not the mailbox */
static void ixgbe_vf_soft_reset(IxgbeCore *core, unsigned vfn)
{
    IxgbeVf *vf = &core->vf[vfn];
    uint32_t mailbox = vf->mailbox;

    trace_ixgbe_vf_reset(vfn, false);
    ixgbe_vf_disarm(core, vfn);
    memset(vf, 0, sizeof(*vf));
    vf->mailbox = mailbox;
    ixgbe_vf_stop_queues(core, vfn);
}

/* Any reset of the VF function (FLR, VF Enable, bus reset) */
void ixgbe_vf_reset(IxgbeCore *core, unsigned vfn)
{
    trace_ixgbe_vf_reset(vfn, true);
    ixgbe_vf_disarm(core, vfn);
    memset(&core->vf[vfn], 0, sizeof(core->vf[vfn]));
    ixgbe_vf_stop_queues(core, vfn);
}

/*
 * A function level reset of the VF: the PF learns of it through VFLRE and
 * EICR.MAILBOX, and the VF stops receiving and sending until the PF
 * enables it again in VFRE/VFTE.
 */
void ixgbe_vf_flr(IxgbeCore *core, unsigned vfn)
{
    unsigned word = vfn / 32;
    uint32_t bit = BIT(vfn % 32);

    trace_ixgbe_vf_flr(vfn);
    *ixgbe_reg(core, IXGBE_VFLREC(word)) |= bit;
    *ixgbe_reg(core, IXGBE_VFRE(word)) &= ~bit;
    *ixgbe_reg(core, IXGBE_VFTE(word)) &= ~bit;
    ixgbe_raise_other_cause(core, IXGBE_EICR_MAILBOX);
}

/* ------------------------------------------------------------------ */
/* The VF's own registers                                              */
/* ------------------------------------------------------------------ */

typedef uint32_t (*IxgbeVfReadFn)(IxgbeCore *core, unsigned vfn,
                                  unsigned idx);
typedef void (*IxgbeVfWriteFn)(IxgbeCore *core, unsigned vfn, unsigned idx,
                               uint32_t val);

static void ixgbe_vf_write_ctrl(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    if (val & IXGBE_VFCTRL_RST) {
        ixgbe_vf_soft_reset(core, vfn);
    }
}

static uint32_t ixgbe_vf_read_status(IxgbeCore *core, unsigned vfn,
                                     unsigned idx)
{
    return ixgbe_core_read(core, IXGBE_STATUS, 4);
}

static uint32_t ixgbe_vf_read_links(IxgbeCore *core, unsigned vfn,
                                    unsigned idx)
{
    return ixgbe_core_read(core, IXGBE_LINKS, 4);
}

static uint32_t ixgbe_vf_read_zero(IxgbeCore *core, unsigned vfn,
                                   unsigned idx)
{
    return 0;
}

static uint32_t ixgbe_vf_read_eicr(IxgbeCore *core, unsigned vfn,
                                   unsigned idx)
{
    return core->vf[vfn].eicr;
}

static void ixgbe_vf_write_eicr(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eicr &= ~val;
}

static void ixgbe_vf_write_eics(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eicr |= val & IXGBE_VTEICR_MASK;
    ixgbe_vf_fire(core, vfn, val);
}

static uint32_t ixgbe_vf_read_eims(IxgbeCore *core, unsigned vfn,
                                   unsigned idx)
{
    return core->vf[vfn].eims;
}

/* Enabling a vector whose cause is pending sends it */
static void ixgbe_vf_write_eims(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eims |= val & IXGBE_VTEICR_MASK;
    ixgbe_vf_fire(core, vfn, val);
}

static void ixgbe_vf_write_eimc(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eims &= ~val;
}

#define IXGBE_VF_FIELD(f) \
    static uint32_t ixgbe_vf_read_##f(IxgbeCore *core, unsigned vfn, \
                                      unsigned idx) \
    { \
        return core->vf[vfn].f; \
    }
#define IXGBE_VF_FIELD_ARRAY(f) \
    static uint32_t ixgbe_vf_read_##f(IxgbeCore *core, unsigned vfn, \
                                      unsigned idx) \
    { \
        return core->vf[vfn].f[idx]; \
    }

IXGBE_VF_FIELD(eiac)
IXGBE_VF_FIELD(eiam)
IXGBE_VF_FIELD(ivar_misc)
IXGBE_VF_FIELD_ARRAY(ivar)
IXGBE_VF_FIELD_ARRAY(eitr)

static void ixgbe_vf_write_eiac(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eiac = val & IXGBE_VTEICR_MASK;
}

static void ixgbe_vf_write_eiam(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eiam = val & IXGBE_VTEICR_MASK;
}

static void ixgbe_vf_write_ivar(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].ivar[idx] = val & IXGBE_VF_IVAR_WMASK;
}

static void ixgbe_vf_write_ivar_misc(IxgbeCore *core, unsigned vfn,
                                     unsigned idx, uint32_t val)
{
    core->vf[vfn].ivar_misc = val & (IXGBE_VF_IVAR_WMASK & 0xFF);
}

/* The interval holds the vector from its next message on */
static void ixgbe_vf_write_eitr(IxgbeCore *core, unsigned vfn, unsigned idx,
                                uint32_t val)
{
    core->vf[vfn].eitr[idx] = val & (IXGBE_EITR_INTERVAL_MASK |
                                     IXGBE_EITR_LLI_MOD |
                                     IXGBE_EITR_CNT_WDIS);
}

/*
 * VFMAILBOX: REQ and ACK signal the PF (PFMBICR) and read as 0; VFU takes
 * the buffer unless the PF holds it; PFU mirrors the PF's; PFSTS, PFACK
 * and RSTD clear when read; RSTI is set from a PF reset until PFRSTD.
 */
static uint32_t ixgbe_vf_read_mailbox(IxgbeCore *core, unsigned vfn,
                                      unsigned idx)
{
    IxgbeVf *vf = &core->vf[vfn];
    uint32_t v = vf->mailbox;

    if (ixgbe_get(core, IXGBE_PFMAILBOX(vfn)) & IXGBE_PFMAILBOX_PFU) {
        v |= IXGBE_VFMAILBOX_PFU;
    }
    if (core->pf_rst_pending) {
        v |= IXGBE_VFMAILBOX_RSTI;
    }
    vf->mailbox &= ~IXGBE_VFMAILBOX_R2C_BITS;
    return v;
}

static void ixgbe_vf_write_mailbox(IxgbeCore *core, unsigned vfn,
                                   unsigned idx, uint32_t val)
{
    IxgbeVf *vf = &core->vf[vfn];
    bool pfu = ixgbe_get(core, IXGBE_PFMAILBOX(vfn)) &
               IXGBE_PFMAILBOX_PFU;

    if (!(val & IXGBE_VFMAILBOX_VFU)) {
        vf->mailbox &= ~IXGBE_VFMAILBOX_VFU;
    } else if (!pfu) {
        vf->mailbox |= IXGBE_VFMAILBOX_VFU;
    }
    trace_ixgbe_vf_mailbox(vfn, val, vf->mailbox);
    if (val & (IXGBE_VFMAILBOX_REQ | IXGBE_VFMAILBOX_ACK)) {
        uint32_t *icr = ixgbe_reg(core, IXGBE_PFMBICR(vfn / 16));

        if (val & IXGBE_VFMAILBOX_REQ) {
            *icr |= IXGBE_PFMBICR_VFREQ(vfn);
        }
        if (val & IXGBE_VFMAILBOX_ACK) {
            *icr |= IXGBE_PFMBICR_VFACK(vfn);
        }
        ixgbe_sriov_pf_notify(core, vfn);
    }
}

/* ------------------------------------------------------------------ */
/* The VF register table                                               */
/* ------------------------------------------------------------------ */

typedef enum IxgbeVfMap {
    IXGBE_VF_OWN,       /* the VF's own state: read and write handlers */
    IXGBE_VF_PF,        /* the PF register pf + vfn * pf_stride + 4 * idx */
    IXGBE_VF_RXQ,       /* register pf of receive queue idx of the pool */
    IXGBE_VF_TXQ,       /* register pf of transmit queue idx of the pool */
} IxgbeVfMap;

typedef struct IxgbeVfRegDesc {
    const char *name;
    hwaddr base;
    uint16_t count;
    uint16_t stride;
    IxgbeVfMap map;
    hwaddr pf;
    uint16_t pf_stride;
    bool read_only;
    IxgbeVfReadFn read;
    IxgbeVfWriteFn write;
} IxgbeVfRegDesc;

#define OWN(nm, b, cnt, rd, wr) \
    { .name = nm, .base = b, .count = cnt, .stride = 4, .map = IXGBE_VF_OWN, \
      .read = rd, .write = wr }
#define TO_PF(nm, b, cnt, to, to_vf, ro) \
    { .name = nm, .base = b, .count = cnt, .stride = 4, .map = IXGBE_VF_PF, \
      .pf = to, .pf_stride = to_vf, .read_only = ro }
#define RXQ(nm, off) \
    { .name = nm, .base = IXGBE_VFRXQ_BASE + (off), .count = 8, \
      .stride = IXGBE_RXQ_STRIDE, .map = IXGBE_VF_RXQ, .pf = off }
#define TXQ(nm, off) \
    { .name = nm, .base = IXGBE_VFTXQ_BASE + (off), .count = 8, \
      .stride = IXGBE_TXQ_STRIDE, .map = IXGBE_VF_TXQ, .pf = off }

static const IxgbeVfRegDesc ixgbe_vf_reg_table[] = {
    OWN("VFCTRL", IXGBE_VFCTRL, 1, ixgbe_vf_read_zero, ixgbe_vf_write_ctrl),
    OWN("VFSTATUS", IXGBE_VFSTATUS, 1, ixgbe_vf_read_status, NULL),
    OWN("VFLINKS", IXGBE_VFLINKS, 1, ixgbe_vf_read_links, NULL),
    OWN("VFFRTIMER", IXGBE_VFFRTIMER, 1, ixgbe_vf_read_zero, NULL),
    OWN("VTEICR", IXGBE_VTEICR, 1, ixgbe_vf_read_eicr, ixgbe_vf_write_eicr),
    OWN("VTEICS", IXGBE_VTEICS, 1, ixgbe_vf_read_eicr, ixgbe_vf_write_eics),
    OWN("VTEIMS", IXGBE_VTEIMS, 1, ixgbe_vf_read_eims, ixgbe_vf_write_eims),
    OWN("VTEIMC", IXGBE_VTEIMC, 1, ixgbe_vf_read_zero, ixgbe_vf_write_eimc),
    OWN("VTEIAC", IXGBE_VTEIAC, 1, ixgbe_vf_read_eiac, ixgbe_vf_write_eiac),
    OWN("VTEIAM", IXGBE_VTEIAM, 1, ixgbe_vf_read_eiam, ixgbe_vf_write_eiam),
    OWN("VTIVAR", IXGBE_VTIVAR0, IXGBE_VF_IVARS, ixgbe_vf_read_ivar,
        ixgbe_vf_write_ivar),
    OWN("VTIVAR_MISC", IXGBE_VTIVAR_MISC, 1, ixgbe_vf_read_ivar_misc,
        ixgbe_vf_write_ivar_misc),
    OWN("VTEITR", IXGBE_VTEITR0, IXGBE_VF_MSIX_VECTORS, ixgbe_vf_read_eitr,
        ixgbe_vf_write_eitr),
    OWN("VFMAILBOX", IXGBE_VFMAILBOX, 1, ixgbe_vf_read_mailbox,
        ixgbe_vf_write_mailbox),
    OWN("VFRXMEMWRAP", IXGBE_VFRXMEMWRAP, 1, ixgbe_vf_read_zero, NULL),

    TO_PF("VFMBMEM", IXGBE_VFMBMEM, IXGBE_MBX_WORDS, IXGBE_PFMBMEM0,
          IXGBE_MBX_WORDS * 4, false),
    TO_PF("VFPSRTYPE", IXGBE_VFPSRTYPE, 1, IXGBE_PSRTYPE0, 4, false),
    TO_PF("VFGPRC", IXGBE_VFGPRC, 1, IXGBE_PVFGPRC0, 0x40, true),
    TO_PF("VFGORC_LSB", IXGBE_VFGORC_LSB, 1, IXGBE_PVFGORC_LSB0, 0x40, true),
    TO_PF("VFGORC_MSB", IXGBE_VFGORC_MSB, 1, IXGBE_PVFGORC_MSB0, 0x40, true),
    TO_PF("VFMPRC", IXGBE_VFMPRC, 1, IXGBE_PVFMPRC0, 0x40, true),
    TO_PF("VFGPTC", IXGBE_VFGPTC, 1, IXGBE_PVFGPTC0, 4, true),
    TO_PF("VFGOTC_LSB", IXGBE_VFGOTC_LSB, 1, IXGBE_PVFGOTC_LSB0, 8, true),
    TO_PF("VFGOTC_MSB", IXGBE_VFGOTC_MSB, 1, IXGBE_PVFGOTC_MSB(0), 8, true),

    RXQ("VFRDBAL", IXGBE_RXQ_RDBAL),
    RXQ("VFRDBAH", IXGBE_RXQ_RDBAH),
    RXQ("VFRDLEN", IXGBE_RXQ_RDLEN),
    RXQ("VFDCA_RXCTRL", IXGBE_RXQ_DCA),
    RXQ("VFRDH", IXGBE_RXQ_RDH),
    RXQ("VFSRRCTL", IXGBE_RXQ_SRRCTL),
    RXQ("VFRDT", IXGBE_RXQ_RDT),
    RXQ("VFRXDCTL", IXGBE_RXQ_RXDCTL),
    RXQ("VFRSCCTL", 0x2C),

    TXQ("VFTDBAL", IXGBE_TXQ_TDBAL),
    TXQ("VFTDBAH", IXGBE_TXQ_TDBAH),
    TXQ("VFTDLEN", IXGBE_TXQ_TDLEN),
    TXQ("VFDCA_TXCTRL", 0x0C),
    TXQ("VFTDH", IXGBE_TXQ_TDH),
    TXQ("VFTDT", IXGBE_TXQ_TDT),
    TXQ("VFTXDCTL", IXGBE_TXQ_TXDCTL),
    TXQ("VFTDWBAL", IXGBE_TXQ_TDWBAL),
    TXQ("VFTDWBAH", IXGBE_TXQ_TDWBAH),
};

static const IxgbeVfRegDesc *ixgbe_vf_reg_desc(hwaddr addr, unsigned *idx)
{
    for (size_t i = 0; i < ARRAY_SIZE(ixgbe_vf_reg_table); i++) {
        const IxgbeVfRegDesc *d = &ixgbe_vf_reg_table[i];

        if (addr >= d->base && addr < d->base + d->count * d->stride &&
            !((addr - d->base) % d->stride)) {
            *idx = (addr - d->base) / d->stride;
            return d;
        }
    }
    return NULL;
}

/* The PF register a VF register stands for; false if none */
static bool ixgbe_vf_pf_addr(IxgbeCore *core, unsigned vfn,
                             const IxgbeVfRegDesc *d, unsigned idx,
                             hwaddr *pf)
{
    int q;

    switch (d->map) {
    case IXGBE_VF_PF:
        *pf = d->pf + vfn * d->pf_stride + idx * 4;
        return true;
    case IXGBE_VF_RXQ:
    case IXGBE_VF_TXQ:
        q = ixgbe_vf_queue(core, vfn, idx);
        if (q < 0) {
            return false;
        }
        *pf = d->map == IXGBE_VF_RXQ ? ixgbe_rxq_reg(q, d->pf)
                                     : ixgbe_txq_reg(q, d->pf);
        return true;
    default:
        return false;
    }
}

uint32_t ixgbe_vf_read(IxgbeCore *core, unsigned vfn, hwaddr addr)
{
    const IxgbeVfRegDesc *d;
    unsigned idx;
    uint32_t val = 0;
    hwaddr pf;

    addr &= ~3ULL;
    d = ixgbe_vf_reg_desc(addr, &idx);
    if (!d) {
        trace_ixgbe_vf_reg_unmodelled(vfn, addr, 0, false);
        ixgbe_log_unimp(core, vfn, addr, false);
        return 0;
    }
    if (d->map == IXGBE_VF_OWN) {
        val = d->read ? d->read(core, vfn, idx) : 0;
    } else if (ixgbe_vf_pf_addr(core, vfn, d, idx, &pf)) {
        val = ixgbe_core_read(core, pf, 4);
    }
    trace_ixgbe_vf_reg_read(vfn, addr, d->name, val);
    return val;
}

void ixgbe_vf_write(IxgbeCore *core, unsigned vfn, hwaddr addr, uint32_t val)
{
    const IxgbeVfRegDesc *d;
    unsigned idx;
    hwaddr pf;

    addr &= ~3ULL;
    d = ixgbe_vf_reg_desc(addr, &idx);
    if (!d) {
        trace_ixgbe_vf_reg_unmodelled(vfn, addr, val, true);
        ixgbe_log_unimp(core, vfn, addr, true);
        return;
    }
    trace_ixgbe_vf_reg_write(vfn, addr, d->name, val);
    if (d->map == IXGBE_VF_OWN) {
        if (d->write) {
            d->write(core, vfn, idx, val);
        }
    } else if (!d->read_only && ixgbe_vf_pf_addr(core, vfn, d, idx, &pf)) {
        ixgbe_core_write(core, pf, val, 4);
    }
}

static void ixgbe_sriov_realize(IxgbeCore *core)
{
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        for (unsigned v = 0; v < IXGBE_VF_MSIX_VECTORS; v++) {
            IxgbeVector *vec = &core->vf_vec[n][v];

            vec->core = core;
            vec->timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                      ixgbe_vf_vector_timer, vec);
        }
    }
}

static void ixgbe_sriov_unrealize(IxgbeCore *core)
{
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        for (unsigned v = 0; v < IXGBE_VF_MSIX_VECTORS; v++) {
            timer_free(core->vf_vec[n][v].timer);
            core->vf_vec[n][v].timer = NULL;
        }
    }
}

/* The incoming side of a migration: state a VF could not have made */
static bool ixgbe_sriov_post_load(IxgbeCore *core)
{
    const uint32_t mbx = IXGBE_VFMAILBOX_VFU | IXGBE_VFMAILBOX_R2C_BITS;

    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        const IxgbeVf *vf = &core->vf[n];

        for (unsigned v = 0; v < IXGBE_VF_MSIX_VECTORS; v++) {
            /* a vector held by a timer that is not running stays silent */
            if (core->vf_vec[n][v].armed &&
                !timer_pending(core->vf_vec[n][v].timer)) {
                error_report("ixgbe: migrated VF %u vector %u is held by "
                             "no timer", n, v);
                return false;
            }
        }

        if (((vf->eicr | vf->eims | vf->eiac | vf->eiam) &
             ~IXGBE_VTEICR_MASK) || (vf->mailbox & ~mbx)) {
            error_report("ixgbe: migrated state of VF %u is invalid", n);
            return false;
        }
    }
    return true;
}

/* The PF's registers for pools, the mailbox and VF resets */
static const IxgbeRegDesc ixgbe_sriov_regs[] = {
    REG("CTRL_EXT", IXGBE_CTRL_EXT, 1, 4, 0, ALL, 0, NULL,
        ixgbe_sriov_write_ctrl_ext),
    PLAIN("GCR_EXT", IXGBE_GCR_EXT, 1, 4, 0, ALL),
    PLAIN("VT_CTL", IXGBE_VT_CTL, 1, 4, 0, ALL),
    PLAIN("VFRE", IXGBE_VFRE0, 2, 4, 0, ALL),
    PLAIN("VFTE", IXGBE_VFTE0, 2, 4, 0, ALL),
    PLAIN("PFVFSPOOF", IXGBE_PFVFSPOOF0, 8, 4, 0, ALL),
    PLAIN("PFDTXGSWC", IXGBE_PFDTXGSWC, 1, 4, 0, ALL),
    PLAIN("VMECM", IXGBE_VMECM0, 2, 4, 0, ALL),
    PLAIN("PFVML2FLT", IXGBE_PFVML2FLT0, 64, 4, 0, ALL),
    PLAIN("PFVLVF", IXGBE_PFVLVF0, 64, 4, 0, ALL),
    PLAIN("PFVLVFB", IXGBE_PFVLVFB0, 128, 4, 0, ALL),
    PLAIN("PFUTA", IXGBE_PFUTA0, 128, 4, 0, ALL),
    REG("VFLRE", IXGBE_VFLRE0, 1, 4, 0, 0, IXGBE_RF_HW,
        ixgbe_sriov_read_vflre, NULL),
    REG("VFLRE", IXGBE_VFLRE1, 1, 4, 0, 0, IXGBE_RF_HW,
        ixgbe_sriov_read_vflre, NULL),
    REG("VFLREC", IXGBE_VFLREC0, 2, 4, 0, 0, IXGBE_RF_RAW | IXGBE_RF_HW,
        NULL, ixgbe_sriov_write_w1c),
    REG("PFMBICR", IXGBE_PFMBICR0, 4, 4, 0, 0, IXGBE_RF_RAW | IXGBE_RF_HW,
        NULL, ixgbe_sriov_write_w1c),
    /* Mailbox interrupts are enabled per VF; Linux relies on the default */
    PLAIN("PFMBIMR", IXGBE_PFMBIMR0, 2, 4, ALL, ALL),
    REG("PFMAILBOX", IXGBE_PFMAILBOX0, IXGBE_MAX_VFS, 4, 0, 0,
        IXGBE_RF_RAW | IXGBE_RF_HW, ixgbe_sriov_read_pfmailbox,
        ixgbe_sriov_write_pfmailbox),
    PLAIN("PFMBMEM", IXGBE_PFMBMEM0, IXGBE_MAX_VFS * IXGBE_MBX_WORDS, 4, 0,
          ALL),
    /* Per pool counters the VFs read; they never clear */
    REG("PVFGPRC", IXGBE_PVFGPRC0, IXGBE_MAX_VFS, 0x40, 0, 0, IXGBE_RF_HW,
        NULL, NULL),
    REG("PVFGORC_LSB", IXGBE_PVFGORC_LSB0, IXGBE_MAX_VFS, 0x40, 0, 0,
        IXGBE_RF_HW, NULL, NULL),
    REG("PVFGORC_MSB", IXGBE_PVFGORC_MSB0, IXGBE_MAX_VFS, 0x40, 0, 0,
        IXGBE_RF_HW, NULL, NULL),
    REG("PVFMPRC", IXGBE_PVFMPRC0, IXGBE_MAX_VFS, 0x40, 0, 0, IXGBE_RF_HW,
        NULL, NULL),
    REG("PVFGPTC", IXGBE_PVFGPTC0, IXGBE_MAX_VFS, 4, 0, 0, IXGBE_RF_HW,
        NULL, NULL),
    REG("PVFGOTC_LSB", IXGBE_PVFGOTC_LSB0, IXGBE_MAX_VFS, 8, 0, 0,
        IXGBE_RF_HW, NULL, NULL),
    REG("PVFGOTC_MSB", IXGBE_PVFGOTC_MSB(0), IXGBE_MAX_VFS, 8, 0, 0,
        IXGBE_RF_HW, NULL, NULL),
};

const IxgbePart ixgbe_sriov_part = {
    .regs = ixgbe_sriov_regs,
    .nregs = ARRAY_SIZE(ixgbe_sriov_regs),
    .realize = ixgbe_sriov_realize,
    .unrealize = ixgbe_sriov_unrealize,
    .reset = ixgbe_sriov_reset,
    .post_load = ixgbe_sriov_post_load,
};
