/*
 * Intel 82599 10 GbE controller: device core (register file, interrupts,
 * datapath), independent of the PCI/QOM glue in ixgbe.c.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_CORE_H
#define HW_NET_IXGBE_CORE_H

#include "qemu/units.h"
#include "qemu/timer.h"
#include "qemu/bitmap.h"
#include "hw/qdev-core.h"
#include "hw/pci/pcie_sriov.h"
#include "ixgbe_regs.h"
#include "ixgbe_sfp.h"
#include "ixgbe_coalesce.h"

#define IXGBE_NUM_REGS      (IXGBE_MMIO_SIZE / 4)
/* Descriptors fetched from a TX ring with one DMA read */
#define IXGBE_TX_BURST      32
/* Buffers one transmitted packet may span */
#define IXGBE_MAX_TX_FRAGS  64

typedef struct IxgbeTxContext {
    uint32_t vlan_macip_lens;
    uint32_t seqnum_seed;
    uint32_t type_tucmd_mlhl;
    uint32_t mss_l4len_idx;
} IxgbeTxContext;

/*
 * Per TX queue state that is not visible in registers.  The buffers of a
 * packet whose EOP descriptor has not been fetched yet are remembered by
 * address and mapped only when the packet is complete, so no guest memory
 * stays mapped between two tail writes.
 */
typedef struct IxgbeTxQueue {
    IxgbeTxContext ctx[2];
    uint32_t first_cmd;         /* cmd_type_len of the packet's first desc */
    uint32_t first_olinfo;      /* olinfo_status of the packet's first desc */
    bool in_packet;             /* descriptors of a packet are pending */
    bool drop;                  /* current packet is being discarded */
    uint32_t wb_pending;        /* descriptors done, not yet written back */
    uint32_t wb_next;           /* first descriptor not yet written back */
    uint32_t nfrags;            /* buffers of the current packet so far */
    uint64_t frag_addr[IXGBE_MAX_TX_FRAGS];
    uint32_t frag_len[IXGBE_MAX_TX_FRAGS];
} IxgbeTxQueue;

/* Buffers the largest frame (MAXFRS, VLAN tag and CRC kept) can need */
#define IXGBE_RX_MAX_BUFS   DIV_ROUND_UP(0xFFFF + 8, KiB)
/* Receive descriptors a queue reads ahead: at least a frame's worth */
#define IXGBE_RX_CACHE      IXGBE_RX_MAX_BUFS
/* Receive write-backs a queue holds (WTHRESH is at most 127) */
#define IXGBE_RX_WB_MAX     128

/*
 * Per RX queue state that is not visible in registers (ixgbe_datapath.c):
 * descriptors read ahead, and completed descriptors whose write-back
 * RXDCTL.WTHRESH holds back.  Neither migrates: write-backs are flushed
 * when the VM stops, and the read-ahead is dropped when the state is
 * saved (the destination reads the same descriptors again).
 */
typedef struct IxgbeRxQueue {
    uint64_t base;              /* the ring both belong to */
    uint32_t n;
    uint32_t cache_idx;         /* ring entry of cache[cache_pos] */
    uint32_t cache_pos;
    uint32_t cache_cnt;
    uint32_t wb_idx;            /* ring entry of wb[0] */
    uint32_t wb_cnt;
    IxgbeRxDesc cache[IXGBE_RX_CACHE];
    IxgbeRxDesc wb[IXGBE_RX_WB_MAX];
} IxgbeRxQueue;

/* Per MSI-X vector (or the single MSI/INTx vector) moderation state */
typedef struct IxgbeCore IxgbeCore;

/*
 * The register file: each register the model knows is described once, by
 * one row of a table (the core's in ixgbe_core.c, or a part's: see
 * IxgbePart), with its reset value, writable bits, flags and handlers.
 */
typedef uint32_t (*IxgbeReadFn)(IxgbeCore *core, hwaddr addr);
typedef void (*IxgbeWriteFn)(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old);

enum {
    IXGBE_RF_RC = 1 << 0,       /* read clears the register */
    IXGBE_RF_RAW = 1 << 1,      /* write handler stores the value itself */
    IXGBE_RF_HW = 1 << 2,       /* the device changes its read-only bits */
    IXGBE_RF_ALIAS = 1 << 3,    /* another name for registers elsewhere */
};

typedef struct IxgbeRegDesc {
    const char *name;
    hwaddr base;
    uint16_t count;
    uint16_t stride;
    uint32_t reset;
    uint32_t wmask;
    uint32_t flags;
    IxgbeReadFn read;
    IxgbeWriteFn write;
    hwaddr alias;               /* IXGBE_RF_ALIAS: the first register... */
    uint16_t alias_stride;      /* ...and the distance to the next */
} IxgbeRegDesc;

/* Rows of a register table; RQ, RQH, TQ: a queue register's block */
#define RQ(n) (IXGBE_RXQ_LO + (n))
#define RQH(n) (IXGBE_RXQ_HI + (n))
#define TQ(n) (IXGBE_TXQ_BASE + (n))

#define REG(nm, b, cnt, str, rst, wm, fl, rd, wr) \
    { .name = nm, .base = b, .count = cnt, .stride = str, .reset = rst, \
      .wmask = wm, .flags = fl, .read = rd, .write = wr }
#define PLAIN(nm, b, cnt, str, rst, wm) \
    REG(nm, b, cnt, str, rst, wm, 0, NULL, NULL)
#define STAT(nm, b, cnt, str) \
    REG(nm, b, cnt, str, 0, 0, IXGBE_RF_RC, NULL, NULL)
#define ALIAS(nm, b, cnt, str, to, to_str) \
    { .name = nm, .base = b, .count = cnt, .stride = str, \
      .flags = IXGBE_RF_ALIAS, .alias = to, .alias_stride = to_str }
#define ALL 0xFFFFFFFFu

/*
 * A part of the device beside its register file: the SFP+ cage, the
 * datapath, the PTP clock, the Flow Director, SR-IOV, the held register
 * writes.  The core calls each part at every step of the device's life,
 * in the order the PCI function (ixgbe.c) lists them (unrealize in the
 * reverse order); a part leaves out the steps it has nothing to do in.
 */
typedef struct IxgbePart {
    const IxgbeRegDesc *regs;           /* the registers it handles */
    unsigned nregs;
    void (*realize)(IxgbeCore *core);
    void (*unrealize)(IxgbeCore *core);
    void (*reset)(IxgbeCore *core);     /* power-on, FLR, CTRL.RST */
    bool (*post_load)(IxgbeCore *core); /* false: refuse the stream */
    /* Its words of the EEPROM image, before the checksum is made */
    void (*eeprom)(IxgbeCore *core);
    /* false while it keeps the link down (STATUS.LU, LINKS) */
    bool (*link_ok)(IxgbeCore *core);
    /* The backend's link changed (up: nc->link_down clear) */
    void (*link_change)(IxgbeCore *core, bool up);
    /* An interrupt is about to be signalled on vector (-1: MSI/INTx) */
    void (*before_irq)(IxgbeCore *core, int vector);
    /* ...or one of a VF, for queue among others */
    void (*before_queue_irq)(IxgbeCore *core, unsigned queue);
    /* The VM stops; called outside the re-entrancy domain */
    void (*vm_stop)(IxgbeCore *core);
    /* The state is about to be saved; inside the domain */
    void (*pre_save)(IxgbeCore *core);
} IxgbePart;
typedef struct IxgbeFdir IxgbeFdir;     /* ixgbe_fdir.h */
typedef struct IxgbeIpsec IxgbeIpsec;   /* ixgbe_ipsec.h */
typedef struct IxgbeRsc IxgbeRsc;       /* ixgbe_rsc.h */

/* An EITR or VTEITR interval (bits 11:3, 2 us units) in nanoseconds */
static inline uint64_t ixgbe_itr_interval_ns(uint32_t itr)
{
    return ((itr & IXGBE_EITR_INTERVAL_MASK) >> 3) * 2 * SCALE_US;
}

typedef struct IxgbeVector {
    IxgbeCore *core;
    QEMUTimer *timer;           /* EITR interval timer */
    bool armed;                 /* timer running: interrupts are held */
} IxgbeVector;

/* The IEEE 1588 clock (ixgbe_ptp.c): SYSTIM was base at virtual time base_ns */
typedef struct IxgbePtp {
    uint64_t base;
    int64_t base_ns;
    uint32_t systimh_latch;     /* SYSTIMH as latched by a SYSTIML read */
} IxgbePtp;

/*
 * Transmitted flow control (ixgbe_fc.c): whether the backend holds a
 * frame the receive ring had no room for (the model's packet buffer is
 * above its high threshold), and whether an XOFF went out that an XON
 * has not yet lifted; the timer refreshes the XOFF.
 */
typedef struct IxgbeFc {
    bool rx_full;
    bool xoff;
    QEMUTimer *refresh;
} IxgbeFc;

/*
 * Which receive queue filters ahead of the Flow Director can steer
 * (ixgbe_ntuple.c): kept from their registers, rebuilt after a migration
 */
typedef struct IxgbeQueueFilters {
    uint64_t ftqf_on[2];        /* 5-tuple filters with FTQF.Queue Enable */
    uint8_t etqs_on;            /* EtherType filters with ETQS.Queue Enable */
} IxgbeQueueFilters;

/*
 * One virtual function's state that has no PF register (ixgbe_sriov.c).
 * Its queues, mailbox memory and counters live in the PF's register file.
 */
typedef struct IxgbeVf {
    uint32_t mailbox;           /* VFMAILBOX: VFU, PFSTS, PFACK, RSTI, RSTD */
    uint32_t eicr;              /* VTEICR: causes, one per MSI-X vector */
    uint32_t eims;              /* VTEIMS */
    uint32_t eiac;              /* VTEIAC */
    uint32_t eiam;              /* VTEIAM */
    uint32_t eitr[IXGBE_VF_MSIX_VECTORS];
    uint32_t ivar[IXGBE_VF_IVARS];
    uint32_t ivar_misc;         /* VTIVAR_MISC: the mailbox cause */
} IxgbeVf;

struct IxgbeCore {
    uint32_t mac[IXGBE_NUM_REGS];
    uint16_t eeprom[IXGBE_EEPROM_WORDS];

    /*
     * Interrupt causes.  Queue causes are tracked per vector (64 bits),
     * the other causes in bits 30:16 of EICR.  EICR bits 15:0 read the low
     * 16 vector bits.
     */
    uint64_t vec_cause;         /* EICR / EICS_EX: pending per vector */
    uint64_t vec_mask;          /* EIMS_EX: enabled per vector */
    uint64_t vec_automask;      /* EIAM_EX */
    uint32_t oth_cause;         /* EICR[31:16] */
    uint32_t oth_mask;          /* EIMS[31:16] */
    bool intx_level;
    IxgbeVector vec[IXGBE_MSIX_VECTORS];

    IxgbePtp ptp;
    IxgbeSfp sfp;               /* media, SFP+ module, I2C (ixgbe_sfp.c) */
    IxgbeFdir *fdir;            /* Flow Director filter table */
    IxgbeIpsec *ipsec;          /* IPsec SA tables (ixgbe_ipsec.c) */
    IxgbeQueueFilters qfilters; /* EtherType, SYN, 5-tuple (ixgbe_ntuple.c) */
    IxgbeRsc *rsc;              /* open RSC aggregates (ixgbe_rsc.c) */
    IxgbeFc fc;                 /* pause frames sent (ixgbe_fc.c) */
    IxgbeCoalesce coalesce;     /* writes KVM may queue (ixgbe_coalesce.c) */

    IxgbeVf vf[IXGBE_MAX_VFS];
    /* VTEITR interval timers; not cleared with the VF's registers */
    IxgbeVector vf_vec[IXGBE_MAX_VFS][IXGBE_VF_MSIX_VECTORS];
    bool pf_rst_pending;        /* VFMAILBOX.RSTI: PF reset, no PFRSTD yet */
    uint64_t qde[2];            /* QDE: per receive queue drop enable */

    IxgbeTxQueue txq[IXGBE_NUM_QUEUES];
    IxgbeRxQueue rxq[IXGBE_NUM_QUEUES];
    uint64_t rx_wb_map[2];      /* queues holding write-backs */
    /* guest RAM mapped for the receive path (ixgbe_rx_map.c), not state */
    struct IxgbeRxMap *rx_map;
    VMChangeStateEntry *vm_state;
    struct NetTxPkt *tx_pkt;    /* the packet being sent (any queue) */
    uint8_t *tx_buf;            /* or its bytes, when sent without offloads */
    struct NetRxPkt *rx_pkt;

    uint8_t permanent_mac[6];
    PCIDevice *owner;
    NICState *nic;
    const IxgbePart *const *parts;
    unsigned nparts;
    MemReentrancyGuard *guard;  /* the PF's, for every function: see below */
    bool tx_busy;               /* a packet is being sent */
    bool backend_link_down;     /* for migration: the backend's link */
    /* Unknown registers already reported (per offset, not migrated) */
    DECLARE_BITMAP(unimp_logged, IXGBE_NUM_REGS);
    DECLARE_BITMAP(vf_unimp_logged, IXGBE_VF_MMIO_SIZE / 4);
};

void ixgbe_core_realize(IxgbeCore *core, PCIDevice *owner, NICState *nic,
                        const uint8_t *macaddr,
                        const IxgbePart *const *parts, unsigned nparts);
void ixgbe_core_unrealize(IxgbeCore *core);
void ixgbe_core_reset(IxgbeCore *core);
uint64_t ixgbe_core_read(IxgbeCore *core, hwaddr addr, unsigned size);
void ixgbe_core_write(IxgbeCore *core, hwaddr addr, uint64_t val,
                      unsigned size);
void ixgbe_core_set_link_status(IxgbeCore *core);
bool ixgbe_core_enter(IxgbeCore *core, const char *what, int vf,
                      hwaddr addr);
void ixgbe_log_unimp(IxgbeCore *core, int vf, hwaddr addr, bool write);
void ixgbe_core_leave(IxgbeCore *core);
int ixgbe_core_pre_save(IxgbeCore *core);
int ixgbe_core_post_load(IxgbeCore *core);

/* Interrupt causes raised by the datapath */
uint32_t ixgbe_ivar_entry(IxgbeCore *core, unsigned queue, bool is_tx);
void ixgbe_before_queue_irq(IxgbeCore *core, unsigned queue);
void ixgbe_raise_queue_cause(IxgbeCore *core, bool is_tx, unsigned queue);
void ixgbe_raise_other_cause(IxgbeCore *core, uint32_t cause);

/* Queue register helpers shared by the register file and the datapath */
static inline hwaddr ixgbe_rxq_reg(unsigned queue, hwaddr reg)
{
    return (queue < 64 ? IXGBE_RXQ_LO + queue * IXGBE_RXQ_STRIDE
                       : IXGBE_RXQ_HI + (queue - 64) * IXGBE_RXQ_STRIDE) + reg;
}

static inline hwaddr ixgbe_txq_reg(unsigned queue, hwaddr reg)
{
    return IXGBE_TXQ_BASE + queue * IXGBE_TXQ_STRIDE + reg;
}

/* Whether the PF has VFs enabled (SR-IOV capability, VF Enable) */
static inline bool ixgbe_vfs_enabled(IxgbeCore *core)
{
    return pcie_sriov_num_vfs(core->owner) != 0;
}

/* The register at addr: ixgbe_reg() to update it, ixgbe_get() to read it */
static inline uint32_t *ixgbe_reg(IxgbeCore *core, hwaddr addr)
{
    return &core->mac[addr >> 2];
}

static inline uint32_t ixgbe_get(IxgbeCore *core, hwaddr addr)
{
    return core->mac[addr >> 2];
}

#endif
