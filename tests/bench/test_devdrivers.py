"""Unit tests of the device-model benchmark's virtio-net driver
(devdrivers.VirtioNet) against a device played here on a bytearray of
guest memory: the notify decisions by avail_event, the used ring
consumption, used_event for interrupt suppression and the NAPI
rescheduling when the device used more during a poll. Nothing here starts
QEMU."""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

import pytest

from benchlib import BenchError
from devbenchlib import VIRTIO_NET
from devdrivers import VirtioNet
from virtqueue import NET_HDR_LEN, RX_QUEUE, TX_QUEUE, SplitQueue, need_event

RING = 16
TX_BASE, RX_BASE, TX_BUFS, RX_BUFS = 0x10000, 0x20000, 0x40000, 0x80000
NOTIFY = {RX_QUEUE: 0x3000, TX_QUEUE: 0x3004}


class FakeDevice:
    """Guest memory, the qtest commands the driver sends (Qt), its register
    accesses (Port), and a device that uses buffers when told (use())."""

    def __init__(self) -> None:
        self.mem = bytearray(0x100000)
        self.slot = 4
        self.notified: list[int] = []
        self.lines: list[str] = []
        self.used = {TX_QUEUE: 0, RX_QUEUE: 0}  # device's used index per queue
        self.consumed = {TX_QUEUE: 0, RX_QUEUE: 0}  # device's last avail index per queue
        self.irqs: list[int] = []
        self.on_batch: Callable[[int], None] | None = None
        self.batches = 0

    # ---- Qt
    @property
    def qt(self) -> FakeDevice:
        return self

    def batch(self, lines: Sequence[str]) -> list[str]:
        self.batches += 1
        out = []
        for ln in lines:
            self.lines.append(ln)
            w = ln.split()
            if w[0] == "write":
                data = bytes.fromhex(w[3][2:])
                a = int(w[1], 16)
                self.mem[a : a + len(data)] = data
                out.append("")
            elif w[0] == "read":
                a, n = int(w[1], 16), int(w[2])
                out.append("0x" + self.mem[a : a + n].hex())
            elif w[0] == "writew":
                self.notified.append(int(w[2], 16))
                out.append("")
            else:
                raise AssertionError(f"unexpected command {ln!r}")
        if self.on_batch:
            self.on_batch(self.batches)
        return out

    def memwrite(self, addr: int, data: bytes) -> None:
        self.mem[addr : addr + len(data)] = data

    def step(self, ns: int) -> None:
        pass

    def cfg_read32(self, dev: int, reg: int) -> int:
        raise AssertionError("no configuration space here")

    # ---- Port
    def rd(self, reg: int, size: int = 4) -> int:
        raise AssertionError("no register read on the fast path")

    def wr(self, reg: int, value: int, size: int = 4) -> None:
        self.batch([self.wr_cmd(reg, value, size)])

    def wr_cmd(self, reg: int, value: int, size: int = 4) -> str:
        assert size == 2 and reg in NOTIFY.values()
        return f"writew 0x{reg:x} 0x{value:x}"

    # ---- the device
    def u16(self, addr: int) -> int:
        return int(struct.unpack_from("<H", self.mem, addr)[0])

    def use(self, q: int, vq: SplitQueue, n: int, length: int) -> None:
        """Use n available buffers (in order), publish avail_event as QEMU
        does after popping, and interrupt if used_event is crossed."""
        lay = vq.lay
        avail = self.u16(lay.avail_idx)
        assert (avail - self.consumed[q]) & 0xFFFF >= n
        old = self.used[q]
        for _ in range(n):
            head = self.u16(lay.avail_entry(self.consumed[q] % lay.size))
            struct.pack_into("<II", self.mem, lay.used_entry(self.used[q] % lay.size), head, length)
            self.consumed[q] = (self.consumed[q] + 1) & 0xFFFF
            self.used[q] = (self.used[q] + 1) & 0xFFFF
        struct.pack_into("<H", self.mem, lay.used_idx, self.used[q])
        struct.pack_into("<H", self.mem, lay.avail_event, self.consumed[q])
        if need_event(self.u16(lay.used_event), self.used[q], old):
            self.irqs.append(q)


def driver(dev: FakeDevice, post_rx: bool = True) -> VirtioNet:
    d = VirtioNet(VIRTIO_NET, TX_BASE, RX_BASE, TX_BUFS, RX_BUFS, RING)
    d.port = dev
    d.notify_off = dict(NOTIFY)
    d.tx_len = NET_HDR_LEN + 60
    if post_rx:
        if d._kick_batch(d.rxq, d.rxq.post([d._rx_desc(s) for s in range(RING)])):  # as setup() does
            dev.wr(NOTIFY[RX_QUEUE], RX_QUEUE, 2)
    return d


def test_tx_kicks_only_when_the_device_waits() -> None:
    dev = FakeDevice()
    d = driver(dev, post_rx=False)
    assert d.tx_post(4) == [f"writew 0x{NOTIFY[TX_QUEUE]:x} 0x1"]  # avail_event 0: the device waits
    dev.use(TX_QUEUE, d.txq, 2, 0)  # it popped 2 of 4: avail_event 2, still busy
    assert d.tx_post(4) == []  # entries 4..8 do not cross 2
    dev.use(TX_QUEUE, d.txq, 6, 0)  # caught up: avail_event 8
    assert d.tx_post(4) != []
    # the descriptor: the slot's buffer, header + frame, no flags
    desc = dev.mem[TX_BASE + 16 * 9 : TX_BASE + 16 * 10]
    assert struct.unpack("<QIHH", desc) == (TX_BUFS + 9 * 2048, NET_HDR_LEN + 60, 0, 0)


def test_rx_poll_consumes_refills_and_rearms() -> None:
    dev = FakeDevice()
    d = driver(dev)
    assert dev.notified == [RX_QUEUE]  # the initial fill is notified
    d.rx_pending = 5
    dev.use(RX_QUEUE, d.rxq, 5, NET_HDR_LEN + 60)
    assert dev.irqs == [RX_QUEUE]  # used_event 0 crossed
    ack = "write 0xf00000 16 0x" + "00" * 16
    assert d.poll({d.RX_VECTOR}, 60, [ack]) == (1, 0, 5)
    assert d.rx_pending == 0 and d.rxq.last_used == 5
    assert dev.u16(d.rxq.lay.used_event) == 5  # enable_cb_prepare
    assert dev.u16(d.rxq.lay.avail_idx) == RING + 5  # refilled
    assert dev.notified == [RX_QUEUE]  # the device had buffers left: no notify
    assert d.resched == set()
    # the poll after an interrupt does not write used_event = 0 first
    assert not any(ln.startswith(f"write 0x{d.rxq.lay.used_event:x} 2 0x0000") for ln in dev.lines)


def test_rx_poll_rejects_a_wrong_length() -> None:
    dev = FakeDevice()
    d = driver(dev)
    d.rx_pending = 1
    dev.use(RX_QUEUE, d.rxq, 1, NET_HDR_LEN + 59)
    with pytest.raises(BenchError, match="used length 71"):
        d.poll({d.RX_VECTOR}, 60, [])


def test_more_used_during_the_poll_reschedules_it() -> None:
    dev = FakeDevice()
    d = driver(dev, post_rx=False)
    d.tx_post(8)
    d.tx_post(8)
    dev.use(TX_QUEUE, d.txq, 8, 0)

    def late(batch: int) -> None:  # the device uses 8 more after the poll's first batch
        if dev.on_batch is not None and batch == first + 1:
            dev.use(TX_QUEUE, d.txq, 8, 0)

    first = dev.batches
    dev.on_batch = late
    assert d.poll({d.TX_VECTOR}, 60, []) == (1, 8, 0)
    assert d.resched == {d.TX_VECTOR}  # virtqueue_poll saw 16 != 8
    dev.on_batch = None
    n = len(dev.lines)
    # the rescheduled poll, without an interrupt: disable_cb first, then the rest
    assert d.poll(set(), 60, []) == (1, 8, 0)
    assert dev.lines[n] == f"write 0x{d.txq.lay.used_event:x} 2 0x0000"
    assert d.resched == set() and d.tx_pending == 0
    assert dev.u16(d.txq.lay.used_event) == 16
