/*
 * Intel 82599 10 GbE controller: Flow Director (ixgbe_fdir.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_FDIR_H
#define HW_NET_IXGBE_FDIR_H

#include "ixgbe_core.h"

/* The largest table: 32K signature filters in 256 KB (FDIRCTRL.PBALLOC 3) */
#define IXGBE_FDIR_MAX_FILTERS      (32 * 1024)
#define IXGBE_FDIR_MAX_BUCKETS      (32 * 1024)

/*
 * One filter as FDIRCMD added it.  A signature filter is its FDIRHASH
 * (bucket hash and signature) and its action; a perfect-match filter adds
 * the fields it compares, as the FDIR registers held them.
 */
typedef struct IxgbeFdirFilter {
    uint32_t hash;          /* FDIRHASH: bucket 14:0, signature/SW index */
    uint32_t cmd;           /* FDIRCMD: flow type, action; COLLISION flag */
    uint32_t sip[4];        /* FDIRSIPv6[0..2], FDIRIPSA */
    uint32_t dip;           /* FDIRIPDA */
    uint32_t port;          /* FDIRPORT */
    uint32_t vlan;          /* FDIRVLAN: VLAN 15:0, flex bytes 31:16 */
} IxgbeFdirFilter;

/*
 * The table is allocated as filters are added (a device whose driver adds
 * none costs nothing) and freed when it is cleared.
 */
struct IxgbeFdir {
    /* Filters are kept packed: filters[0..count-1] */
    uint32_t count;
    uint32_t size;          /* filters[] and next[] have room for this many */
    bool full_signalled;    /* the table-full cause was raised */
    IxgbeFdirFilter *filters;
    /*
     * Bucket chains (not migrated: rebuilt), as index + 1, 0 ends;
     * head[IXGBE_FDIR_MAX_BUCKETS], NULL while size is 0
     */
    uint16_t *head;
    uint16_t *next;
};

/* What the receive path learns from the Flow Director for one frame */
typedef struct IxgbeFdirResult {
    bool match;
    bool steer;             /* queue below replaces the RSS queue */
    unsigned queue;
    uint32_t id;            /* bucket hash 15:0, signature/SW index 31:16 */
    uint32_t status;        /* FLM and FDIRErr bits for the descriptor */
    bool report;            /* FDIRCTRL.Report_Status */
} IxgbeFdirResult;

bool ixgbe_fdir_migration_needed(IxgbeCore *core);
extern const VMStateDescription ixgbe_vmstate_fdir_table;

/* The filter input of a frame, and the 82599's hash over it */
#define IXGBE_FDIR_INPUT_DWORDS     11
uint16_t ixgbe_fdir_hash(const uint32_t *input, uint32_t key);

/* Receive: look the frame up; false when Flow Director is off */
bool ixgbe_fdir_lookup(IxgbeCore *core, const uint8_t *frame, size_t len,
                       IxgbeFdirResult *res);

/* The same, without a call for every frame while it is off (no PBALLOC) */
static inline bool ixgbe_fdir_classify(IxgbeCore *core, const uint8_t *frame,
                                       size_t len, IxgbeFdirResult *res)
{
    if (!(ixgbe_get(core, IXGBE_FDIRCTRL) & IXGBE_FDIRCTRL_PBALLOC_MASK)) {
        return false;
    }
    return ixgbe_fdir_lookup(core, frame, len, res);
}

/* The Flow Director as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_fdir_part;

#endif
