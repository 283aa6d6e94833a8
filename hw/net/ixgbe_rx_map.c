/*
 * Intel 82599 10 GbE controller: guest RAM mapped for the receive path.
 *
 * A received frame is written twice: its bytes into the guest's buffers,
 * then the write-back of its descriptors into the ring.  Through
 * pci_dma_write() each write translates its address in the bus master
 * address space anew.  For a queue whose DMA is the PF's own, both go
 * through mappings of guest RAM instead (MemoryRegionCache, as virtio
 * maps its rings), with the same barrier before the write-back and the
 * same dirty marking after each write:
 *
 *  - each ring is mapped as a whole, following its base and size;
 *  - buffers, which may be anywhere, through a mapping of the whole RAM
 *    section the last buffers fell in (IXGBE_RX_BUF_MAPS of them: the
 *    RAM below and above the PCI hole).  An address outside RAM (MMIO, a
 *    ROM, nothing), or behind an IOMMU, is remembered as such with its
 *    section, and written by DMA as before; so is a buffer that runs past
 *    the end of its section.
 *
 * The mappings are derived from the rings' registers and the address
 * space; they are not device state.  A memory listener on the PF's bus
 * master address space drops every one of them whenever that space
 * changes (bus mastering turned off, memory plugged or unplugged, IOMMU
 * set up), and they are made again on the next frame.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/int128.h"
#include "exec/memory.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_rx_map.h"
#include "trace.h"

#define IXGBE_RX_BUF_MAPS   2

typedef enum IxgbeRxMapState {
    IXGBE_RX_MAP_NONE,
    IXGBE_RX_MAP_MAPPED,
    IXGBE_RX_MAP_DMA,           /* tried: written by DMA */
} IxgbeRxMapState;

typedef struct IxgbeRxRingMap {
    IxgbeRxMapState state;
    uint64_t base;
    uint32_t n;
    MemoryRegionCache cache;
} IxgbeRxRingMap;

/* Guest addresses [start, end): mapped, or written by DMA */
typedef struct IxgbeRxBufMap {
    IxgbeRxMapState state;
    uint64_t start;
    uint64_t end;
    MemoryRegionCache cache;
} IxgbeRxBufMap;

typedef struct IxgbeRxMap {
    MemoryListener listener;
    IxgbeRxRingMap ring[IXGBE_NUM_QUEUES];
    IxgbeRxBufMap buf[IXGBE_RX_BUF_MAPS];
    unsigned buf_next;          /* the entry the next section replaces */
} IxgbeRxMap;

/* Forget a ring's or a buffer range's mapping */
static void ixgbe_rx_unmap(IxgbeRxMapState *state, MemoryRegionCache *cache)
{
    if (*state == IXGBE_RX_MAP_MAPPED) {
        address_space_cache_destroy(cache);
    }
    *state = IXGBE_RX_MAP_NONE;
}

static void ixgbe_rx_unmap_all(IxgbeRxMap *m)
{
    for (unsigned q = 0; q < IXGBE_NUM_QUEUES; q++) {
        ixgbe_rx_unmap(&m->ring[q].state, &m->ring[q].cache);
    }
    for (unsigned i = 0; i < IXGBE_RX_BUF_MAPS; i++) {
        ixgbe_rx_unmap(&m->buf[i].state, &m->buf[i].cache);
    }
}

static void ixgbe_rx_map_listener_commit(MemoryListener *listener)
{
    IxgbeRxMap *m = container_of(listener, IxgbeRxMap, listener);

    ixgbe_rx_unmap_all(m);
}

MemoryRegionCache *ixgbe_rx_map_ring(IxgbeCore *core, unsigned q,
                                     uint64_t base, uint32_t n)
{
    IxgbeRxRingMap *m = &core->rx_map->ring[q];
    hwaddr len = (hwaddr)n * IXGBE_DESC_SIZE;

    if (m->state != IXGBE_RX_MAP_NONE && (m->base != base || m->n != n)) {
        ixgbe_rx_unmap(&m->state, &m->cache);
    }
    if (m->state == IXGBE_RX_MAP_NONE) {
        m->base = base;
        m->n = n;
        m->state = IXGBE_RX_MAP_DMA;
        if (!len) {
            return NULL;
        }
        if (address_space_cache_init(&m->cache,
                                     pci_get_address_space(core->owner),
                                     base, len, true) == len &&
            m->cache.ptr) {
            m->state = IXGBE_RX_MAP_MAPPED;
        } else {
            address_space_cache_destroy(&m->cache);
        }
        trace_ixgbe_rx_map_ring(q, base, len,
                                m->state == IXGBE_RX_MAP_MAPPED);
    }
    return m->state == IXGBE_RX_MAP_MAPPED ? &m->cache : NULL;
}

/* The entry whose range holds addr, or NULL */
static IxgbeRxBufMap *ixgbe_rx_buf_find(IxgbeRxMap *m, uint64_t addr)
{
    for (unsigned i = 0; i < IXGBE_RX_BUF_MAPS; i++) {
        IxgbeRxBufMap *b = &m->buf[i];

        if (b->state != IXGBE_RX_MAP_NONE &&
            addr >= b->start && addr < b->end) {
            return b;
        }
    }
    return NULL;
}

/*
 * A new entry for the section addr falls in: mapped as a whole when it is
 * RAM the PF writes directly, else remembered as written by DMA.
 */
static IxgbeRxBufMap *ixgbe_rx_buf_add(IxgbeCore *core, uint64_t addr)
{
    IxgbeRxMap *m = core->rx_map;
    IxgbeRxBufMap *b = &m->buf[m->buf_next];
    AddressSpace *as = pci_get_address_space(core->owner);
    MemoryRegionCache probe;
    uint64_t start, size;
    bool ram;
    int64_t l;

    ixgbe_rx_unmap(&b->state, &b->cache);
    m->buf_next = (m->buf_next + 1) % IXGBE_RX_BUF_MAPS;

    /* One byte tells the section's bounds and whether it is RAM */
    address_space_cache_init(&probe, as, addr, 1, true);
    start = probe.mrs.offset_within_address_space;
    size = int128_gethi(probe.mrs.size) ? UINT64_MAX :
           int128_getlo(probe.mrs.size);
    ram = probe.ptr != NULL;
    address_space_cache_destroy(&probe);

    b->start = start;
    b->end = start + MIN(size, UINT64_MAX - start);
    b->state = IXGBE_RX_MAP_DMA;
    if (ram && addr >= start && size) {
        l = address_space_cache_init(&b->cache, as, start, size, true);
        if (l > 0 && b->cache.ptr) {
            b->end = start + l;
            b->state = IXGBE_RX_MAP_MAPPED;
        } else {
            address_space_cache_destroy(&b->cache);
        }
    }
    if (addr < b->start || addr >= b->end) {
        /* Not what the probe said: this address goes by DMA this time */
        ixgbe_rx_unmap(&b->state, &b->cache);
        return NULL;
    }
    trace_ixgbe_rx_map_buf(addr, b->start, b->end,
                           b->state == IXGBE_RX_MAP_MAPPED);
    return b;
}

bool ixgbe_rx_map_write(IxgbeCore *core, uint64_t addr, const void *buf,
                        size_t len)
{
    IxgbeRxBufMap *b = ixgbe_rx_buf_find(core->rx_map, addr);
    uintptr_t dst, src = (uintptr_t)buf;
    hwaddr off;

    if (!b) {
        b = ixgbe_rx_buf_add(core, addr);
    }
    if (!b || b->state != IXGBE_RX_MAP_MAPPED || len > b->end - addr) {
        return false;
    }
    off = addr - b->start;
    /*
     * Bytes that are guest RAM themselves (a frame looped back from
     * transmit buffers) and overlap their destination are moved by DMA
     */
    dst = (uintptr_t)b->cache.ptr + off;
    if (src < dst + len && dst < src + len) {
        return false;
    }
    address_space_write_cached(&b->cache, off, buf, len);
    address_space_cache_invalidate(&b->cache, off, len);
    return true;
}

void ixgbe_rx_map_init(IxgbeCore *core)
{
    IxgbeRxMap *m = g_new0(IxgbeRxMap, 1);

    m->listener = (MemoryListener) {
        .name = "ixgbe-rx-map",
        .commit = ixgbe_rx_map_listener_commit,
    };
    core->rx_map = m;
    memory_listener_register(&m->listener,
                             pci_get_address_space(core->owner));
}

void ixgbe_rx_map_uninit(IxgbeCore *core)
{
    IxgbeRxMap *m = core->rx_map;

    memory_listener_unregister(&m->listener);
    ixgbe_rx_unmap_all(m);
    g_free(m);
    core->rx_map = NULL;
}
