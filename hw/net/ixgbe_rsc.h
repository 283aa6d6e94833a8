/*
 * Intel 82599 10 GbE controller: receive side coalescing (ixgbe_rsc.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_RSC_H
#define HW_NET_IXGBE_RSC_H

#include "qemu/timer.h"

typedef struct IxgbeCore IxgbeCore;
typedef struct IxgbePart IxgbePart;

#define IXGBE_RSCCTL            0x2C    /* in a receive queue's block */
#define IXGBE_RSCCTL_RSCEN      (1u << 0)
#define IXGBE_RSCCTL_MAXDESC_SHIFT 2
#define IXGBE_RSCCTL_MAXDESC_MASK 3u
#define IXGBE_RSCDBU            0x03028
#define IXGBE_RFCTL_RSC_DIS     (1u << 5)
#define IXGBE_RXD_RSCCNT_SHIFT  17      /* write-back dword 0 */
#define IXGBE_RXD_RSCCNT_MAX    15u
#define IXGBE_RXD_NEXTP_SHIFT   4       /* status of a non-EOP descriptor */

/* Aggregates open at once (the 82599's RSC contexts) */
#define IXGBE_RSC_CONTEXTS      32
/* Descriptors of one aggregate at most (RSCCTL.MAXDESC = 16) */
#define IXGBE_RSC_MAX_DESC      16
/* IPv6 and TCP headers with the timestamp option */
#define IXGBE_RSC_HDR_MAX       (40 + 32)

/* A frame offered for coalescing, as the datapath sees it */
typedef struct IxgbeRscFrame {
    const struct iovec *iov;
    int iovcnt;
    size_t len;                 /* frame bytes, tag included, no CRC */
    const uint8_t *hdr;         /* its first hdr_len bytes */
    size_t hdr_len;
    bool has_vlan;              /* a tag at byte 12 */
    bool strip;                 /* ...which is left out in host memory */
    uint16_t vlan;              /* the descriptor's VLAN field */
    uint32_t info;              /* write-back dword 0: RSS and packet type */
    uint32_t hash;
    uint32_t status;            /* EOP status and error bits */
} IxgbeRscFrame;

typedef enum IxgbeRscResult {
    IXGBE_RSC_PASS,             /* not coalesced: deliver it as usual */
    IXGBE_RSC_TAKEN,            /* in host memory, in an open aggregate */
    IXGBE_RSC_HELD,             /* no descriptors: the frame must wait */
    IXGBE_RSC_DROPPED,          /* gone, counted as a drop */
} IxgbeRscResult;

/* One open aggregate: a flow's in-order TCP segments */
typedef struct IxgbeRscCtx {
    bool open;
    bool ip6;
    bool ts;                    /* segments carry the timestamp option */
    uint8_t queue;
    uint8_t ndesc;
    uint8_t l3len;
    uint8_t l4len;
    uint8_t flags;              /* TCP flags ORed over the segments */
    uint16_t vlan;
    uint16_t l3off;             /* of the IP header in the first buffer */
    uint32_t next_seq;
    uint32_t segs;
    uint32_t payload;           /* TCP payload bytes so far */
    uint32_t psum;              /* their ones' complement sum, folded */
    uint32_t info;
    uint32_t hash;
    uint32_t status;
    int64_t deadline;           /* closed at the latest then */
    int64_t opened;             /* when its first segment came */
    uint8_t key[36];            /* addresses and ports */
    uint8_t hdr[IXGBE_RSC_HDR_MAX];     /* IP and TCP header, first seg */
    uint8_t last[14];           /* ack, window, timestamps: the last seg */
    uint8_t cnt[IXGBE_RSC_MAX_DESC];    /* RSCCNT: 1 + appended starts */
    uint16_t blen[IXGBE_RSC_MAX_DESC];  /* bytes in each buffer */
    uint32_t idx[IXGBE_RSC_MAX_DESC];   /* ring entries */
    uint64_t desc[IXGBE_RSC_MAX_DESC];  /* their guest addresses */
    uint64_t buf[IXGBE_RSC_MAX_DESC];   /* buffer addresses */
} IxgbeRscCtx;

/* A flow whose last frame went to its MSI-X vector's queue alone */
typedef struct IxgbeRscLone {
    bool valid;
    bool ip6;
    uint8_t vector;
    uint16_t vlan;
    uint32_t fired;             /* the vector's interrupts by then */
    uint8_t key[36];
} IxgbeRscLone;

typedef struct IxgbeRsc {
    IxgbeRscCtx ctx[IXGBE_RSC_CONTEXTS];
    IxgbeRscLone lone[IXGBE_RSC_CONTEXTS];
    uint32_t nlone;
    uint32_t fired[IXGBE_MSIX_VECTORS];
    QEMUTimer *timer;           /* the earliest open deadline */
    uint32_t nopen;
} IxgbeRsc;

IxgbeRscResult ixgbe_rsc_rx(IxgbeCore *core, unsigned q,
                            const IxgbeRscFrame *f);
/* The queue stops or its ring changes: its aggregates are closed */
void ixgbe_rsc_close_queue(IxgbeCore *core, unsigned q);

/* Receive side coalescing as a part of the device (IxgbePart) */
extern const IxgbePart ixgbe_rsc_part;

/* The flows held apart after a lone segment: migrated while there are any */
bool ixgbe_rsc_migration_needed(IxgbeCore *core);
extern const VMStateDescription ixgbe_vmstate_rsc_lone_table;

#endif
