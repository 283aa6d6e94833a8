"""The device-model benchmark's drivers, one per ring kind, behind one
interface that devbench.Bed runs its ticks and polls through:

  DescRings   the Intel models (ixgbe, igb, e1000e): descriptor rings with
              head and tail registers, write-back status (DD) in the
              descriptors, interrupt re-enable by register write
  VirtioNet   virtio-net-pci, modern: split virtqueues (virtqueue.py) with
              avail/used rings, notifications through the notify region,
              interrupt suppression by event index, no register on the
              fast path but the notify write

A driver owns its rings and knows its vectors; the Bed owns the QEMU, the
PCI function, MSI-X and the mailbox, and hands a driver a Port: the qtest
connection and the driver's register accesses (counted). Every ring access
a driver makes is a guest-memory read or write, every register access goes
through the Port, so that the replay (devbenchlib.null_command) moves all
of them to scratch RAM through relocations().
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from typing import Any, Protocol

from benchlib import BenchError
from devbenchlib import (
    DESC,
    Expect,
    NicModel,
    Relocation,
    RingLayout,
    SetBits,
    Step,
    VirtioNetModel,
    Write,
    cmd_memread,
    cmd_memwrite,
    parse_memread,
    rx_done,
    setup_ops,
    tx_done,
)
from virtqueue import (
    COMMON_CFG,
    CAP_COMMON,
    CAP_DEVICE,
    CAP_ISR,
    CAP_NOTIFY,
    DESC_F_WRITE,
    DRIVER_FEATURES,
    NET_HDR_LEN,
    PCI_CAP_VENDOR,
    RX_QUEUE,
    STATUS_ACKNOWLEDGE,
    STATUS_DRIVER,
    STATUS_DRIVER_OK,
    STATUS_FEATURES_OK,
    TX_QUEUE,
    SplitLayout,
    SplitQueue,
    VirtioCap,
    le16,
    net_hdr,
    parse_used,
    parse_virtio_cap,
    vq_desc,
)

BUF_SIZE = 2048  # every receive buffer, every model


class Qt(Protocol):
    def batch(self, lines: Sequence[str]) -> list[str]: ...

    def memwrite(self, addr: int, data: bytes) -> None: ...

    def step(self, ns: int) -> None: ...

    def cfg_read32(self, dev: int, reg: int) -> int: ...


class Port(Protocol):
    """What a driver gets from its Bed."""

    @property
    def qt(self) -> Qt: ...

    @property
    def slot(self) -> int: ...

    def rd(self, reg: int, size: int = 4) -> int: ...

    def wr(self, reg: int, value: int, size: int = 4) -> None: ...

    def wr_cmd(self, reg: int, value: int, size: int = 4) -> str: ...


def join_reads(replies: Sequence[str], lines: Sequence[str]) -> bytes:
    return b"".join(parse_memread(r, int(ln.split()[2])) for r, ln in zip(replies, lines))


class Driver:
    """The interface; see the subclasses. tx_pending/rx_pending: frames
    posted (TX) or sent into the backend (RX) and not yet cleaned."""

    model: NicModel | VirtioNetModel
    capacity: int  # frames that may be outstanding at once per direction
    tx_pending: int
    rx_pending: int
    resched: set[int]  # vectors to poll next tick without an interrupt (NAPI rescheduled)

    def register_bar(self, bars: dict[int, int], sizes: dict[int, int]) -> tuple[int, int]:
        """(address, size) of the BAR its registers are in."""
        raise NotImplementedError

    def setup(self, port: Port) -> list[dict[str, Any]]:
        raise NotImplementedError

    def relocations(self, scratch: int) -> list[Relocation]:
        """The rings' relocations for the replay, into scratch RAM from `scratch`."""
        raise NotImplementedError

    def prepare_tx(self, frame: bytes) -> None:
        raise NotImplementedError

    def tx_post(self, burst: int) -> list[str]:
        """Post `burst` frames; return the commands that go with the tick's
        clock step (the doorbell)."""
        raise NotImplementedError

    def poll(self, vecs: set[int], size: int, first: Sequence[str]) -> tuple[int, int, int]:
        """The interrupt handlers and NAPI polls for vectors `vecs` (the
        driver's own among them); `first` goes at the head of the first
        batch (the mailbox acknowledgement). Returns (polls, TX cleaned,
        RX cleaned)."""
        raise NotImplementedError


class DescRings(Driver):
    """One TX and one RX descriptor ring of an Intel model, driven as its
    Linux driver does (the register program: devbenchlib.setup_ops)."""

    def __init__(self, model: NicModel, lay: RingLayout, itr_us: int, ixgbe_rx_wthresh: int = 0) -> None:
        self.model = self.nic = model
        self.lay = lay
        self.ndesc = lay.ndesc
        self.itr_us = itr_us
        self.ixgbe_rx_wthresh = ixgbe_rx_wthresh
        self.capacity = lay.ndesc - 1  # one descriptor stays unused (head == tail is empty)
        self.tx_next = 0  # next TX descriptor to fill
        self.tx_clean = 0  # next TX descriptor to clean
        self.tx_pending = 0
        self.rx_next = 0  # next RX descriptor the device completes
        self.rx_tail = lay.ndesc - 1
        self.rx_pending = 0
        self.tx_size = 0
        self.resched = set()
        self._desc_cache: dict[tuple[str, int, int, int], list[str]] = {}
        self.port: Port | None = None

    def _port(self) -> Port:
        if self.port is None:
            raise BenchError(f"{self.model.name}: driver not set up")
        return self.port

    def register_bar(self, bars: dict[int, int], sizes: dict[int, int]) -> tuple[int, int]:
        if 0 not in bars:
            raise BenchError(f"{self.model.name}: BAR 0 is not a memory BAR")
        return bars[0], sizes[0]

    def setup(self, port: Port) -> list[dict[str, Any]]:
        """RX descriptors (before the ring is enabled), then the model's
        register program; returns the program (for the report)."""
        self.port = port
        descs = b"".join(self.nic.rx_desc(self.lay.rx_buf(i)) for i in range(self.ndesc))
        port.qt.memwrite(self.lay.rx_ring, descs)
        done = []
        for op in setup_ops(self.model.name, self.lay, self.itr_us, self.ixgbe_rx_wthresh):
            if isinstance(op, Write):
                port.wr(op.reg, op.value)
            elif isinstance(op, SetBits):
                port.wr(op.reg, port.rd(op.reg) | op.bits)
            elif isinstance(op, Step):
                port.qt.step(op.ns)
            elif isinstance(op, Expect):
                got = port.rd(op.reg)
                if got & op.mask != op.want:
                    raise BenchError(
                        f"{self.model.name}: {op.note}: register 0x{op.reg:05x} reads 0x{got:08x}, "
                        f"want 0x{op.want:x} under mask 0x{op.mask:x}"
                    )
            done.append({"op": type(op).__name__.lower(), **dataclasses.asdict(op)})
        return done

    def relocations(self, scratch: int) -> list[Relocation]:
        span = self.ndesc * DESC
        return [
            Relocation(self.lay.tx_ring, span, scratch),
            Relocation(self.lay.rx_ring, span, scratch + 0x10000),
        ]

    def prepare_tx(self, frame: bytes) -> None:
        if self.tx_size == len(frame):
            return
        for i in range(self.ndesc):
            self._port().qt.memwrite(self.lay.tx_buf(i), frame)
        self.tx_size = len(frame)

    def _spans(self, start: int, count: int) -> list[tuple[int, int]]:
        first = min(count, self.ndesc - start)
        return [(start, first)] + ([(0, count - first)] if count > first else [])

    def _descs(self, kind: str, start: int, count: int) -> list[str]:
        """The write command(s) that fill count descriptors from start
        (two when the range wraps around the end of the ring)."""
        key = (kind, start, count, self.tx_size if kind == "tx" else 0)
        lines = self._desc_cache.get(key)
        if lines is None:
            lines = []
            for s0, n in self._spans(start, count):
                if kind == "tx":
                    data = b"".join(self.nic.tx_desc(self.lay.tx_buf(s0 + i), self.tx_size) for i in range(n))
                    lines.append(cmd_memwrite(self.lay.tx_ring + s0 * DESC, data))
                else:
                    data = b"".join(self.nic.rx_desc(self.lay.rx_buf(s0 + i)) for i in range(n))
                    lines.append(cmd_memwrite(self.lay.rx_ring + s0 * DESC, data))
            self._desc_cache[key] = lines
        return lines

    def _read_cmds(self, ring: int, start: int, count: int) -> list[str]:
        return [cmd_memread(ring + s0 * DESC, n * DESC) for s0, n in self._spans(start, count)]

    def tx_post(self, burst: int) -> list[str]:
        """The descriptors and the tail write, all in the tick's batch."""
        lines = list(self._descs("tx", self.tx_next, burst))
        self.tx_next = (self.tx_next + burst) % self.ndesc
        self.tx_pending += burst
        return [*lines, self._port().wr_cmd(self.nic.tdt, self.tx_next)]

    def poll(self, vecs: set[int], size: int, first: Sequence[str]) -> tuple[int, int, int]:
        """Clean the queues on each vector (TX, then RX, on a shared vector
        as ixgbe's and igb's TxRx vectors do), give received buffers back
        (tail write), then re-enable the vector. Two batches: the
        acknowledgement and every outstanding descriptor's read, then the
        refill, the tail and the re-enables."""
        m, port = self.nic, self._port()
        vecs = set(sorted(vecs & {m.tx_vector, m.rx_vector}))
        if not vecs:
            return 0, 0, 0
        tx_reads = (
            self._read_cmds(self.lay.tx_ring, self.tx_clean, self.tx_pending)
            if m.tx_vector in vecs and self.tx_pending
            else []
        )
        rx_reads = (
            self._read_cmds(self.lay.rx_ring, self.rx_next, self.rx_pending)
            if m.rx_vector in vecs and self.rx_pending
            else []
        )
        replies = port.qt.batch([*first, *tx_reads, *rx_reads])
        nf = len(first)
        tx_k = rx_k = 0
        if tx_reads:
            wb = join_reads(replies[nf : nf + len(tx_reads)], tx_reads)
            while tx_k < self.tx_pending and tx_done(wb[tx_k * DESC : (tx_k + 1) * DESC]):
                tx_k += 1
            self.tx_clean = (self.tx_clean + tx_k) % self.ndesc
            self.tx_pending -= tx_k
        if rx_reads:
            wb = join_reads(replies[nf + len(tx_reads) :], rx_reads)
            while rx_k < self.rx_pending:
                dd, length = rx_done(wb[rx_k * DESC : (rx_k + 1) * DESC])
                if not dd:
                    break
                if length != size:
                    raise BenchError(f"{m.name}: received a {length}-byte frame, sent {size}")
                rx_k += 1
        lines: list[str] = []
        if rx_k:
            lines += self._descs("rx", self.rx_next, rx_k)
            self.rx_next = (self.rx_next + rx_k) % self.ndesc
            self.rx_tail = (self.rx_tail + rx_k) % self.ndesc
            self.rx_pending -= rx_k
            lines.append(port.wr_cmd(m.rdt, self.rx_tail))
        for v in sorted(vecs):
            lines.append(port.wr_cmd(*(m.tx_irq_enable if v == m.tx_vector else m.rx_irq_enable)))
        port.qt.batch(lines)
        return len(vecs), tx_k, rx_k


class VirtioNet(Driver):
    """virtio-net-pci through its modern interface, as Linux's
    virtio_pci_modern and virtio_net drivers drive it, for one queue pair:

    - setup: the vendor capabilities (common, notify, ISR, device
      configuration), reset, ACKNOWLEDGE | DRIVER, the features
      (virtqueue.DRIVER_FEATURES, refused unless the device offers them
      all), FEATURES_OK, MSI-X vectors as vp_find_vqs_msix() gives them
      (configuration 0, receiveq1 1, transmitq1 2), both queues' sizes and
      addresses, queue_enable, DRIVER_OK, then every receive buffer posted
      and the receive queue notified (virtnet_open's try_fill_recv); used_event stays
      0 as the zeroed rings start
    - TX (start_xmit with xmit_more over a burst): the 12-byte header in the
      buffer's headroom before the frame (can_push: one descriptor per
      frame), descriptors, avail entries, avail->idx, then
      virtqueue_kick_prepare: read avail_event, notify (a 16-bit write of
      the queue index to its notify address) only if the new entries
      cross it
    - interrupts: EVENT_IDX. The vector's handler (skb_recv_done,
      skb_xmit_done) schedules NAPI; with the interrupt just taken
      virtqueue_disable_cb() writes nothing (event_triggered), otherwise
      (a rescheduled poll) it writes used_event = 0. The poll (virtnet_poll,
      virtnet_poll_tx: TX reclaim in NAPI, napi_tx as by default) reads
      used->idx and the outstanding used entries, consumes them, refills RX
      buffers (kick as above), then virtqueue_enable_cb_prepare() writes
      used_event = last_used and virtqueue_poll() reads used->idx again:
      if more arrived meanwhile, the poll is rescheduled (resched)
    - the Linux driver refills when more than half a NAPI budget is free
      and reclaims TX buffers also from start_xmit; here RX is refilled in
      every poll that cleaned something and TX is cleaned only in its poll,
      as for the Intel models in this benchmark
    Not modelled: the control queue, the ISR (not read with MSI-X)."""

    RX_VECTOR, TX_VECTOR, CONFIG_VECTOR = 1, 2, 0

    def __init__(self, model: VirtioNetModel, tx_base: int, rx_base: int, tx_bufs: int, rx_bufs: int,
                 ndesc: int) -> None:  # fmt: skip
        self.model = model
        self.ndesc = ndesc
        self.txq = SplitQueue(SplitLayout(tx_base, ndesc))
        self.rxq = SplitQueue(SplitLayout(rx_base, ndesc))
        self.tx_bufs, self.rx_bufs = tx_bufs, rx_bufs
        self.capacity = ndesc
        self.tx_pending = self.rx_pending = 0
        self.tx_len = 0
        self.resched = set()
        self.triggered: set[int] = set()  # queues whose interrupt was taken (event_triggered)
        self.caps: dict[int, VirtioCap] = {}
        self.reg_bar = 0
        self.notify_off: dict[int, int] = {}  # queue -> offset of its notify address in the BAR
        self.features = 0
        self.mac = b""
        self.port: Port | None = None

    def _port(self) -> Port:
        if self.port is None:
            raise BenchError("virtio-net: driver not set up")
        return self.port

    def tx_buf(self, slot: int) -> int:
        return self.tx_bufs + slot * BUF_SIZE

    def rx_buf(self, slot: int) -> int:
        return self.rx_bufs + slot * BUF_SIZE

    # ---- PCI: the vendor capabilities
    def read_caps(self, port: Port) -> None:
        qt, dev = port.qt, port.slot
        cap = qt.cfg_read32(dev, 0x34) & 0xFC
        seen = 0
        while cap and seen < 48:
            d0 = qt.cfg_read32(dev, cap)
            if d0 & 0xFF == PCI_CAP_VENDOR:
                dwords = [qt.cfg_read32(dev, cap + 4 * i) for i in range(5 if ((d0 >> 24) & 0xFF) == CAP_NOTIFY
                                                                         else 4)]  # fmt: skip
                c = parse_virtio_cap(dwords)
                self.caps.setdefault(c.cfg_type, c)  # the first of each type is the preferred one
            cap = (d0 >> 8) & 0xFC
            seen += 1
        missing = [t for t in (CAP_COMMON, CAP_NOTIFY, CAP_ISR, CAP_DEVICE) if t not in self.caps]
        if missing:
            raise BenchError(f"virtio-net: no virtio-pci capability of type(s) {missing} (not a modern device?)")
        bars = {c.bar for t, c in self.caps.items() if t in (CAP_COMMON, CAP_NOTIFY, CAP_ISR, CAP_DEVICE)}
        if len(bars) != 1:
            raise BenchError(f"virtio-net: the virtio-pci structures are in several BARs {sorted(bars)}")
        self.reg_bar = bars.pop()

    def register_bar(self, bars: dict[int, int], sizes: dict[int, int]) -> tuple[int, int]:
        if self.reg_bar not in bars:
            raise BenchError(f"virtio-net: BAR {self.reg_bar} is not mapped")
        return bars[self.reg_bar], sizes[self.reg_bar]

    def _common(self, field: str) -> tuple[int, int]:
        off, size = COMMON_CFG[field]
        return self.caps[CAP_COMMON].offset + off, size

    def cwr(self, field: str, value: int) -> None:
        off, size = self._common(field)
        self._port().wr(off, value, size)

    def crd(self, field: str) -> int:
        off, size = self._common(field)
        return self._port().rd(off, size)

    def setup(self, port: Port) -> list[dict[str, Any]]:
        self.port = port
        log: list[dict[str, Any]] = []

        def note(what: str, value: int) -> None:
            log.append({"op": "virtio", "note": what, "value": value})

        self.cwr("device_status", 0)
        if self.crd("device_status") != 0:
            raise BenchError("virtio-net: reset did not complete")
        status = STATUS_ACKNOWLEDGE | STATUS_DRIVER
        self.cwr("device_status", status)
        offered = 0
        for sel in (0, 1):
            self.cwr("device_feature_select", sel)
            offered |= self.crd("device_feature") << (32 * sel)
        note("device_feature", offered)
        if offered & DRIVER_FEATURES != DRIVER_FEATURES:
            raise BenchError(f"virtio-net: device offers 0x{offered:x}, lacks 0x{DRIVER_FEATURES & ~offered:x}")
        self.features = DRIVER_FEATURES
        for sel in (0, 1):
            self.cwr("driver_feature_select", sel)
            self.cwr("driver_feature", (self.features >> (32 * sel)) & 0xFFFFFFFF)
        note("driver_feature", self.features)
        status |= STATUS_FEATURES_OK
        self.cwr("device_status", status)
        if not self.crd("device_status") & STATUS_FEATURES_OK:
            raise BenchError("virtio-net: FEATURES_OK not accepted")
        self.cwr("msix_config", self.CONFIG_VECTOR)
        if self.crd("msix_config") != self.CONFIG_VECTOR:
            raise BenchError("virtio-net: no MSI-X vector for configuration changes")
        if self.crd("num_queues") < 2:
            raise BenchError("virtio-net: fewer than two queues")
        notify = self.caps[CAP_NOTIFY]
        for q, vq, vec in ((RX_QUEUE, self.rxq, self.RX_VECTOR), (TX_QUEUE, self.txq, self.TX_VECTOR)):
            self.cwr("queue_select", q)
            qmax = self.crd("queue_size")
            if qmax < self.ndesc:
                raise BenchError(f"virtio-net: queue {q} holds at most {qmax} entries, --ring is {self.ndesc}")
            self.cwr("queue_size", self.ndesc)
            self.cwr("queue_msix_vector", vec)
            if self.crd("queue_msix_vector") != vec:
                raise BenchError(f"virtio-net: queue {q} refused MSI-X vector {vec}")
            lay = vq.lay
            port.qt.memwrite(lay.base, bytes(lay.nbytes))
            for name, addr in (("queue_desc", lay.desc), ("queue_driver", lay.avail), ("queue_device", lay.used)):
                self.cwr(f"{name}_lo", addr & 0xFFFFFFFF)
                self.cwr(f"{name}_hi", addr >> 32)
            self.notify_off[q] = notify.offset + self.crd("queue_notify_off") * notify.notify_mult
            self.cwr("queue_enable", 1)
            note(f"queue {q}: size {self.ndesc} (max {qmax}), vector {vec}, notify at BAR +0x{self.notify_off[q]:x}",
                 qmax)  # fmt: skip
        dev = self.caps[CAP_DEVICE].offset
        self.mac = bytes(port.rd(dev + i, 1) for i in range(6))
        note(f"device configuration: mac {self.mac.hex(':')}", int.from_bytes(self.mac, "big"))
        status |= STATUS_DRIVER_OK
        self.cwr("device_status", status)
        if self.crd("device_status") != status:
            raise BenchError(f"virtio-net: status 0x{self.crd('device_status'):x} after DRIVER_OK")
        # virtnet_open: every receive buffer, and a kick
        if self._kick_batch(self.rxq, self.rxq.post([self._rx_desc(s) for s in range(self.ndesc)])):
            port.wr(self.notify_off[RX_QUEUE], RX_QUEUE, 2)
        note("DRIVER_OK; receive queue filled and notified", status)
        return log

    def relocations(self, scratch: int) -> list[Relocation]:
        return [
            Relocation(self.txq.lay.base, self.txq.lay.nbytes, scratch),
            Relocation(self.rxq.lay.base, self.rxq.lay.nbytes, scratch + 0x10000),
        ]

    @staticmethod
    def _mem_lines(writes: Sequence[tuple[int, bytes]]) -> list[str]:
        return [cmd_memwrite(a, d) for a, d in writes]

    def _rx_desc(self, slot: int) -> bytes:
        return vq_desc(self.rx_buf(slot), BUF_SIZE, DESC_F_WRITE)

    def prepare_tx(self, frame: bytes) -> None:
        """Header and frame into every TX buffer (outside measured windows)."""
        if self.tx_len == NET_HDR_LEN + len(frame):
            return
        data = net_hdr() + frame
        for i in range(self.ndesc):
            self._port().qt.memwrite(self.tx_buf(i), data)
        self.tx_len = len(data)

    def _kick_batch(self, vq: SplitQueue, writes: Sequence[tuple[int, bytes]]) -> bool:
        """Publish (one batch: the writes, then the read of avail_event
        that virtqueue_kick_prepare makes after its barrier); whether to notify."""
        replies = self._port().qt.batch([*self._mem_lines(writes), cmd_memread(vq.lay.avail_event, 2)])
        return vq.kick_prepare(le16(parse_memread(replies[-1], 2)))

    def tx_post(self, burst: int) -> list[str]:
        start = self.txq.avail_idx % self.ndesc
        descs = [vq_desc(self.tx_buf((start + i) % self.ndesc), self.tx_len) for i in range(burst)]
        kick = self._kick_batch(self.txq, self.txq.post(descs))
        self.tx_pending += burst
        return [self._port().wr_cmd(self.notify_off[TX_QUEUE], TX_QUEUE, 2)] if kick else []

    def _vector(self, q: int) -> int:
        return self.TX_VECTOR if q == TX_QUEUE else self.RX_VECTOR

    def poll(self, vecs: set[int], size: int, first: Sequence[str]) -> tuple[int, int, int]:
        port = self._port()
        queues = [(q, vq) for q, vq in ((TX_QUEUE, self.txq), (RX_QUEUE, self.rxq))
                  if self._vector(q) in vecs | self.resched]  # fmt: skip
        if not queues:
            return 0, 0, 0
        # batch 1: the acknowledgement; virtqueue_disable_cb where the poll
        # was rescheduled rather than started by an interrupt; used->idx
        # and the outstanding used entries
        lines = list(first)
        at: dict[int, tuple[int, int]] = {}  # queue -> (first reply, replies) of its reads
        for q, vq in queues:
            if self._vector(q) not in vecs:
                lines.append(cmd_memwrite(vq.lay.used_event, struct.pack("<H", 0)))
            reads = vq.used_reads()
            at[q] = (len(lines), len(reads))
            lines += [cmd_memread(a, n) for a, n in reads]
        replies = port.qt.batch(lines)
        self.resched -= {self._vector(q) for q, _ in queues}
        done = {TX_QUEUE: 0, RX_QUEUE: 0}
        for q, vq in queues:
            i, n = at[q]
            idx = le16(parse_memread(replies[i], 2))
            entries = parse_used(join_reads(replies[i + 1 : i + n], lines[i + 1 : i + n]))
            lens = vq.complete(idx, entries)
            if q == RX_QUEUE and any(ln != NET_HDR_LEN + size for ln in lens):
                bad = next(ln for ln in lens if ln != NET_HDR_LEN + size)
                raise BenchError(f"virtio-net: used length {bad}, expected {NET_HDR_LEN} + {size}")
            done[q] = len(lens)
        self.tx_pending -= done[TX_QUEUE]
        self.rx_pending -= done[RX_QUEUE]
        # batch 2 (RX): the refill, and kick_prepare's avail_event read
        kick = False
        if done[RX_QUEUE]:
            start = self.rxq.avail_idx % self.ndesc
            descs = [self._rx_desc((start + i) % self.ndesc) for i in range(done[RX_QUEUE])]
            kick = self._kick_batch(self.rxq, self.rxq.post(descs))
        # batch 3: the notify, then per queue virtqueue_enable_cb_prepare
        # (used_event = last_used) and virtqueue_poll (used->idx again)
        lines = [port.wr_cmd(self.notify_off[RX_QUEUE], RX_QUEUE, 2)] if kick else []
        base = len(lines)
        for _, vq in queues:
            lines += [cmd_memwrite(vq.lay.used_event, struct.pack("<H", vq.last_used)), cmd_memread(vq.lay.used_idx, 2)]
        replies = port.qt.batch(lines)
        for i, (q, vq) in enumerate(queues):
            if le16(parse_memread(replies[base + 2 * i + 1], 2)) != vq.last_used:
                self.resched.add(self._vector(q))  # more arrived: NAPI polls again
        return len(queues), done[TX_QUEUE], done[RX_QUEUE]
