"""Virtio 1.x as the device-model benchmark's virtio-net driver needs it:
the modern virtio-pci capabilities, the common configuration layout, the
features it negotiates, the split virtqueue's memory layout and encoding
(descriptor table, avail ring, used ring, the event indexes) and the
12-byte virtio-net header. Pure: nothing here talks to QEMU; the driver
that does is devdrivers.VirtioNet. Tested by tests/bench/test_virtqueue.py.

References: the virtio 1.2 specification (2.7 split virtqueues, 4.1
virtio over PCI, 5.1 network device) and Linux's virtio_pci_modern,
virtio_ring and virtio_net drivers, whose choices are followed where the
specification leaves one.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence

from benchlib import BenchError

# ---- device status (4.1.4.3 common configuration, 2.1)
STATUS_ACKNOWLEDGE = 1
STATUS_DRIVER = 2
STATUS_DRIVER_OK = 4
STATUS_FEATURES_OK = 8
STATUS_NEEDS_RESET = 0x40
STATUS_FAILED = 0x80

# ---- feature bits
F_NET_CSUM = 0
F_NET_GUEST_CSUM = 1
F_NET_MAC = 5
F_NET_MRG_RXBUF = 15
F_RING_INDIRECT_DESC = 28
F_RING_EVENT_IDX = 29
F_VERSION_1 = 32

# The features this driver negotiates, a fixed choice (see
# docs/benchmarks.md): VERSION_1 (modern device, 12-byte header), MAC,
# MRG_RXBUF (Linux's receive buffers: one 2 KiB descriptor per buffer,
# num_buffers in the header) and EVENT_IDX (Linux uses it whenever the
# device offers it, QEMU does by default). No checksum or segmentation
# offload: the Intel models run without them here (plain data descriptors),
# and QEMU offers none of them over a backend without a virtio-net header
# (the datagram socket used here) anyway. No control queue, no multiqueue:
# one queue pair, as for the others.
DRIVER_FEATURES = (1 << F_VERSION_1) | (1 << F_NET_MAC) | (1 << F_NET_MRG_RXBUF) | (1 << F_RING_EVENT_IDX)

NO_VECTOR = 0xFFFF
NET_HDR_LEN = 12  # struct virtio_net_hdr_mrg_rxbuf (VERSION_1: always this size)
RX_QUEUE, TX_QUEUE = 0, 1  # receiveq1, transmitq1

# ---- PCI capabilities (4.1.4): cap_vndr 0x09, cfg_type
PCI_CAP_VENDOR = 0x09
CAP_COMMON, CAP_NOTIFY, CAP_ISR, CAP_DEVICE, CAP_PCI_CFG = 1, 2, 3, 4, 5

# ---- struct virtio_pci_common_cfg: field -> (offset, size)
COMMON_CFG = {
    "device_feature_select": (0x00, 4),
    "device_feature": (0x04, 4),
    "driver_feature_select": (0x08, 4),
    "driver_feature": (0x0C, 4),
    "msix_config": (0x10, 2),
    "num_queues": (0x12, 2),
    "device_status": (0x14, 1),
    "config_generation": (0x15, 1),
    "queue_select": (0x16, 2),
    "queue_size": (0x18, 2),
    "queue_msix_vector": (0x1A, 2),
    "queue_enable": (0x1C, 2),
    "queue_notify_off": (0x1E, 2),
    "queue_desc_lo": (0x20, 4),
    "queue_desc_hi": (0x24, 4),
    "queue_driver_lo": (0x28, 4),
    "queue_driver_hi": (0x2C, 4),
    "queue_device_lo": (0x30, 4),
    "queue_device_hi": (0x34, 4),
}

# ---- split virtqueue descriptor flags (2.7.5)
DESC_F_NEXT = 1
DESC_F_WRITE = 2
DESC = 16  # struct virtq_desc


@dataclasses.dataclass(frozen=True)
class VirtioCap:
    """One virtio_pci_cap (notify_mult only for the notification one)."""

    cfg_type: int
    bar: int
    offset: int
    length: int
    notify_mult: int = 0


def parse_virtio_cap(dwords: Sequence[int]) -> VirtioCap:
    """A vendor capability from its configuration-space dwords (four, five
    for the notification capability): cap_vndr, cap_next, cap_len,
    cfg_type; bar, id, padding; offset; length; notify_off_multiplier."""
    d0 = dwords[0]
    if d0 & 0xFF != PCI_CAP_VENDOR:
        raise BenchError(f"not a vendor capability: 0x{d0:08x}")
    cap_len, cfg_type = (d0 >> 16) & 0xFF, (d0 >> 24) & 0xFF
    mult = 0
    if cfg_type == CAP_NOTIFY:
        if cap_len < 20 or len(dwords) < 5:
            raise BenchError(f"notification capability of {cap_len} bytes")
        mult = dwords[4]
    return VirtioCap(cfg_type, dwords[1] & 0xFF, dwords[2], dwords[3], mult)


def need_event(event: int, new: int, old: int) -> bool:
    """vring_need_event(): whether moving an index from old to new crosses
    the other side's event index (all 16-bit, wrapping)."""
    return (new - event - 1) & 0xFFFF < (new - old) & 0xFFFF


def net_hdr(num_buffers: int = 0) -> bytes:
    """virtio_net_hdr_mrg_rxbuf without offloads: flags 0, gso_type NONE,
    hdr_len, gso_size, csum_start, csum_offset 0, num_buffers."""
    return struct.pack("<BBHHHHH", 0, 0, 0, 0, 0, 0, num_buffers)


def spans(start: int, count: int, size: int) -> list[tuple[int, int]]:
    """[(first slot, slots)] covering count slots from start in a ring of
    size slots: one span, or two when the range wraps."""
    if not 0 <= start < size or not 0 <= count <= size:
        raise BenchError(f"span {start}+{count} outside a ring of {size}")
    first = min(count, size - start)
    return [(start, first)] + ([(0, count - first)] if count > first else [])


@dataclasses.dataclass(frozen=True)
class SplitLayout:
    """Where a split virtqueue of `size` entries lives from `base`: the
    descriptor table, then the avail ring (flags, idx, ring[size],
    used_event), then the used ring (flags, idx, ring[size] of {id, len},
    avail_event) on the next 4 KiB boundary."""

    base: int
    size: int

    def __post_init__(self) -> None:
        if self.size < 2 or self.size & (self.size - 1) or self.size > 32768:
            raise BenchError(f"split virtqueue size {self.size} is not a power of 2 in 2..32768")

    @property
    def desc(self) -> int:
        return self.base

    @property
    def avail(self) -> int:
        return self.base + DESC * self.size

    @property
    def used(self) -> int:
        return (self.avail + 6 + 2 * self.size + 0xFFF) & ~0xFFF

    @property
    def nbytes(self) -> int:
        return self.used + 6 + 8 * self.size - self.base

    def desc_addr(self, slot: int) -> int:
        return self.desc + DESC * slot

    def avail_entry(self, slot: int) -> int:
        return self.avail + 4 + 2 * slot

    @property
    def avail_idx(self) -> int:
        return self.avail + 2

    @property
    def used_event(self) -> int:
        return self.avail + 4 + 2 * self.size

    def used_entry(self, slot: int) -> int:
        return self.used + 4 + 8 * slot

    @property
    def used_idx(self) -> int:
        return self.used + 2

    @property
    def avail_event(self) -> int:
        return self.used + 4 + 8 * self.size


def vq_desc(addr: int, length: int, flags: int = 0, nxt: int = 0) -> bytes:
    """struct virtq_desc: le64 addr, le32 len, le16 flags, le16 next."""
    if not 0 < length < 1 << 32:
        raise BenchError(f"bad descriptor length {length}")
    return struct.pack("<QIHH", addr, length, flags, nxt)


def parse_used(data: bytes) -> list[tuple[int, int]]:
    """struct virtq_used_elem entries (le32 id, le32 len) -> [(id, len)]."""
    if len(data) % 8:
        raise BenchError(f"used ring read of {len(data)} bytes is not whole entries")
    return [struct.unpack_from("<II", data, i) for i in range(0, len(data), 8)]


def le16(data: bytes) -> int:
    if len(data) != 2:
        raise BenchError(f"expected 2 bytes, got {len(data)}")
    return int(struct.unpack("<H", data)[0])


@dataclasses.dataclass
class SplitQueue:
    """The driver's side of one split virtqueue, with one descriptor per
    buffer: descriptor slot i always describes buffer i, and the head made
    available at avail index k is slot k mod size (the device returns them
    in order, which `complete` checks). Indexes run free over 16 bits as in
    the rings. Produces the qtest-free parts: bytes and addresses."""

    lay: SplitLayout
    avail_idx: int = 0  # next avail index to publish (free running, 16 bits)
    last_used: int = 0  # next used index to consume
    kicked: int = 0  # avail index at the last kick decision (Linux: shadow - num_added)

    @property
    def size(self) -> int:
        return self.lay.size

    @property
    def outstanding(self) -> int:
        return (self.avail_idx - self.last_used) & 0xFFFF

    def post(self, descs: Sequence[bytes]) -> list[tuple[int, bytes]]:
        """Make len(descs) buffers available (descs[i] for the next slot):
        the memory writes, in order: descriptors, avail ring entries, then
        avail->idx (what virtqueue_add + the barrier before the index
        update do)."""
        n = len(descs)
        if n == 0 or self.outstanding + n > self.size:
            raise BenchError(f"cannot post {n} buffers with {self.outstanding} of {self.size} outstanding")
        start = self.avail_idx % self.size
        out: list[tuple[int, bytes]] = []
        k = 0
        for s0, cnt in spans(start, n, self.size):
            out.append((self.lay.desc_addr(s0), b"".join(descs[k : k + cnt])))
            k += cnt
        for s0, cnt in spans(start, n, self.size):
            out.append((self.lay.avail_entry(s0), b"".join(struct.pack("<H", s) for s in range(s0, s0 + cnt))))
        self.avail_idx = (self.avail_idx + n) & 0xFFFF
        out.append((self.lay.avail_idx, struct.pack("<H", self.avail_idx)))
        return out

    def kick_prepare(self, avail_event: int) -> bool:
        """virtqueue_kick_prepare() with EVENT_IDX: notify when the indexes
        published since the last decision cross the device's avail_event."""
        old, self.kicked = self.kicked, self.avail_idx
        return need_event(avail_event, self.avail_idx, old)

    def used_reads(self) -> list[tuple[int, int]]:
        """(address, bytes) to read: used->idx, then the used entries of
        every outstanding buffer (those that are done among them)."""
        reads = [(self.lay.used_idx, 2)]
        if self.outstanding:
            reads += [(self.lay.used_entry(s0), 8 * n) for s0, n in spans(self.last_used % self.size,
                                                                           self.outstanding, self.size)]
        return reads

    def complete(self, used_idx: int, entries: Sequence[tuple[int, int]]) -> list[int]:
        """Consume what the device used up to used_idx (entries: the used
        elements read from last_used on); returns their lengths."""
        n = (used_idx - self.last_used) & 0xFFFF
        if n > self.outstanding:
            raise BenchError(f"device used {n} buffers, {self.outstanding} outstanding")
        lens = []
        for i, (head, length) in enumerate(entries[:n]):
            want = (self.last_used + i) % self.size
            if head != want:
                raise BenchError(f"used ring returned head {head}, expected {want} (in order)")
            lens.append(length)
        self.last_used = (self.last_used + n) & 0xFFFF
        return lens
