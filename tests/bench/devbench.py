"""Guest-free benchmark of the NIC device models: ixgbe against QEMU's igb,
e1000e and virtio-net-pci, driven through their rings over the qtest
protocol.

No guest runs. Each model gets its own QEMU (`-accel qtest`, q35, the same
binary), and this program plays the Linux driver through the qtest socket:
it enumerates the PCI function, sets up MSI-X (messages land in a mailbox
in guest RAM, one word per vector), one TX and one RX ring the way the
model's driver does (devdrivers: descriptor rings with head and tail
registers for the Intel models, programmed by devbenchlib.setup_ops;
split virtqueues for virtio-net), and moves frames through a
`-netdev dgram` backend whose other end is a datagram socket held here. It
works in ticks of one burst and burst / rate of virtual time (only qtest
moves QEMU's virtual clock, so the moderation timers see that rate):

  TX tick  post a burst of descriptors and write the tail (virtio: the
           avail ring, and notify if avail_event asks for it) when the
           ring has room, advance the clock, read the mailbox
  RX tick  send a burst of frames into the socket and wait until QEMU has
           read them (when the ring has room), advance the clock, read the
           mailbox
  poll     when a queue's vector signalled: read the outstanding
           descriptors (virtio: the used ring), clean those done, give RX
           buffers back (tail write; virtio: the avail ring), re-enable the
           vector (virtio: used_event), as an interrupt handler and its
           NAPI poll would

Each tick's commands go to QEMU in one write, so it runs them back to back.

Figures per window, each window's commands replayed right after it with
every device address moved to scratch RAM (devbenchlib.null_command): the
device then does nothing while QEMU's protocol work stays the same, and the
difference is the device's.
  - QEMU's CPU time (the process CPU clock, all threads), window - replay;
    QEMU's main thread gets 10 ms of timer slack (set_timerslack: under
    qtest a pending virtual-clock timer would otherwise make it re-poll
    while it waits for this client)
  - the register accesses this client made
  - MSI-X messages, in a third window with the model's trace events on
  - host instructions: QEMU under callgrind in a separate pass, window and
    replay between dumps marked by QMP query-name; "device work" is the
    inclusive cost of the calls into MMIO dispatch, the backend's fd
    handlers, timers and bottom halves (devbenchlib.DEVICE_ENTRIES); and
    `perf stat` where the host has a PMU

Run through scripts/bench.sh --device-model (docs/benchmarks.md); `python3
tests/bench/devbench.py --help`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import fcntl
import json
import logging
import os
import platform
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchargs import check_ranges, choose_models
from benchlib import BenchError, Summary, host_facts, sha256_file
from devdrivers import DescRings, Driver, VirtioNet
from devbenchlib import (
    DESC,
    DEVICE_MAC,
    MAILBOX_VECTORS,
    METRICS,
    MODEL_NAMES,
    ALL_MODELS,
    SUBJECT,
    Cell,
    Expect,
    MsixCap,
    NicModel,
    Profile,
    Relocation,
    RingLayout,
    VirtioNetModel,
    SetBits,
    Step,
    Window,
    Write,
    add_windows,
    all_ratios,
    bar_info,
    cf8,
    cmd_clock_step,
    cmd_memread,
    cmd_memwrite,
    cmd_readl,
    cmd_writel,
    count_figures,
    entry_cost,
    EXTRA_METRICS,
    msix_cap,
    null_command,
    parse_callgrind,
    parse_memread,
    parse_perf_instructions,
    parse_reply,
    parse_trace,
    perf_supported,
    profile_delta,
    render_table,
    rx_done,
    setup_ops,
    summarize_samples,
    tx_done,
    udp_frame,
    window_figures,
)

log = logging.getLogger("devbench")

REPO = Path(__file__).resolve().parent.parent.parent
SIOCOUTQ = 0x5411
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
PCI_SLOT = 4
MEMORY = "256M"
# guest-physical layout (all below 256 MiB)
TX_RING, RX_RING = 0x0100000, 0x0110000
SCRATCH_TX_RING, SCRATCH_RX_RING = 0x0120000, 0x0130000
TX_BUFS, RX_BUFS = 0x0200000, 0x0600000
SCRATCH_MMIO = 0x0A00000  # BAR 0 replayed into RAM (up to 4 MiB)
MAILBOX, SCRATCH_MAILBOX = 0x0F00000, 0x0F01000  # MSI-X messages land here
STALL_TICKS = 2000  # ticks without progress before a window gives up
MMIO_BASE = 0xE0000000  # BARs are placed from here, as libqos does on q35
WAIT_S = 10.0  # for the device to act, wall time
VIRTIO_MAX_RING = 256  # QEMU's virtio-net transmit queue size limit (tx_queue_size) without vhost-user


def build_dir() -> Path:
    return Path(os.environ.get("BUILD_DIR") or REPO / "build").resolve()


# ------------------------------------------------------------ protocol
class Qtest:
    """The qtest protocol over a unix stream socket: one command, one reply.

    Counts the commands by kind, and records them (for the replay) while
    `recording` is a list."""

    def __init__(self, conn: socket.socket) -> None:
        self.conn = conn
        self.rfile = conn.makefile("rb")
        self.counts: Counter[str] = Counter()
        self.recording: list[list[str]] | None = None

    def cmd(self, line: str) -> str:
        return self.batch([line])[0]

    def batch(self, lines: Sequence[str]) -> list[str]:
        """Send the commands in one write (QEMU runs them back to back, with
        no idle gap between them) and collect their replies."""
        self.conn.sendall("".join(ln + "\n" for ln in lines).encode())
        if self.recording is not None:
            self.recording.append(list(lines))
        for ln in lines:
            self.counts[ln.split(" ", 1)[0]] += 1
        out: list[str] = []
        while len(out) < len(lines):
            reply = self.rfile.readline()
            if not reply:
                raise BenchError(f"qtest: QEMU closed the connection (after {lines[-1][:60]!r})")
            text = reply.decode()
            if text.startswith("IRQ "):  # asynchronous, only with irq_intercept
                continue
            out.append(parse_reply(text))
        return out

    def readl(self, addr: int) -> int:
        return int(self.cmd(cmd_readl(addr)), 16)

    def writel(self, addr: int, value: int) -> None:
        self.cmd(cmd_writel(addr, value))

    def memread(self, addr: int, size: int) -> bytes:
        return parse_memread(self.cmd(cmd_memread(addr, size)), size)

    def memwrite(self, addr: int, data: bytes) -> None:
        self.cmd(cmd_memwrite(addr, data))

    def step(self, ns: int) -> None:
        self.cmd(cmd_clock_step(ns))

    # port I/O and PCI configuration space (CONFIG_ADDRESS / CONFIG_DATA)
    def cfg_read32(self, dev: int, reg: int) -> int:
        self.cmd(f"outl 0xcf8 0x{cf8(0, dev, 0, reg):x}")
        return int(self.cmd("inl 0xcfc"), 16)

    def cfg_write32(self, dev: int, reg: int, value: int) -> None:
        self.cmd(f"outl 0xcf8 0x{cf8(0, dev, 0, reg):x}")
        self.cmd(f"outl 0xcfc 0x{value:x}")

    def cfg_write16(self, dev: int, reg: int, value: int) -> None:
        self.cmd(f"outl 0xcf8 0x{cf8(0, dev, 0, reg):x}")
        self.cmd(f"outw 0x{0xCFC + (reg & 2):x} 0x{value:x}")


class Qmp:
    """Just enough QMP: capabilities, then execute and wait for the answer."""

    def __init__(self, path: Path, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(str(path))
                break
            except OSError:
                s.close()
                if time.monotonic() > end:
                    raise BenchError(f"QMP socket {path} did not appear") from None
                time.sleep(0.05)
        self.sock = s
        self.rfile = s.makefile("rb")
        json.loads(self.rfile.readline())  # greeting
        self.execute("qmp_capabilities")

    def execute(self, cmd: str, **args: Any) -> Any:
        msg: dict[str, Any] = {"execute": cmd}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            line = self.rfile.readline()
            if not line:
                raise BenchError(f"QMP: connection closed during {cmd}")
            reply = json.loads(line)
            if "return" in reply:
                return reply["return"]
            if "error" in reply:
                raise BenchError(f"QMP {cmd}: {reply['error']}")

    def close(self) -> None:
        self.sock.close()


TIMERSLACK_NS = 10_000_000


def set_timerslack(pid: int) -> bool:
    """Give QEMU's main thread (where its main loop runs) 10 ms of timer
    slack. Under -accel qtest the virtual clock stands still between
    commands, but the main loop still sleeps only until the next
    virtual-clock timer (an interrupt moderation timer, say 26 us away),
    finds nothing expired, and sleeps 26 us again: it spins for as long as
    the client takes to send its next command, which a guest's QEMU never
    does (its clock moves). With the slack such a timeout wakes it about
    once per scheduler tick; commands and frames still wake it at once."""
    try:
        Path(f"/proc/{pid}/timerslack_ns").write_text(str(TIMERSLACK_NS))
        return int(Path(f"/proc/{pid}/timerslack_ns").read_text()) == TIMERSLACK_NS
    except (OSError, ValueError):
        return False


def cpu_clock_ns(pid: int) -> int:
    """CPU time of a whole process (every thread, also ended ones), in ns:
    the process CPU-time clock of clock_gettime(2) (CPUCLOCK_SCHED)."""
    return time.clock_gettime_ns(((~pid) << 3) | 2)


# ------------------------------------------------------------- a QEMU
@dataclasses.dataclass
class PciDev:
    dev: int
    regs: int  # the BAR of the driver's registers (Intel: BAR 0; virtio: the modern BAR)
    regs_size: int
    bars: dict[int, int]  # index -> address
    msix: MsixCap


class QemuProc:
    """One QEMU (-accel qtest, q35) with `devices` (each a -device argument
    without netdev and address; device i sits in PCI slot PCI_SLOT + 2 i and
    gets backend "wire<i>", a connected datagram socket pair of which this
    side keeps `hosts[i]`), its qtest and QMP connections."""

    def __init__(
        self,
        devices: Sequence[str],
        qemu: Path,
        log_dir: Path,
        name: str,
        valgrind: list[str] | None = None,
        machine: Sequence[str] = (),
    ) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir = log_dir
        self.trace_log = log_dir / "qemu.log"
        listen = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # sockets in a short private directory (a unix socket path has at
        # most 107 bytes; the log directory may be deep)
        self.sock_dir = Path(tempfile.mkdtemp(prefix="devbench-"))
        qtest_path = self.sock_dir / "qtest"
        self.qmp_path = self.sock_dir / "qmp"
        listen.bind(str(qtest_path))
        listen.listen(1)
        listen.settimeout(120 if valgrind else 30)
        # the wire: a connected datagram pair per device, QEMU gets one end.
        # Big buffers, so neither side ever waits for the other (a connected
        # pair is not subject to net.unix.max_dgram_qlen).
        self.hosts: list[socket.socket] = []
        qsides: list[socket.socket] = []
        nic_args: list[str] = []
        for i, dev in enumerate(devices):
            host, qside = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            for s in (host, qside):
                for opt in (SO_SNDBUFFORCE, SO_RCVBUFFORCE):
                    try:
                        s.setsockopt(socket.SOL_SOCKET, opt, 16 << 20)
                    except PermissionError:  # not root: as much as net.core.[rw]mem_max allows
                        plain = socket.SO_SNDBUF if opt == SO_SNDBUFFORCE else socket.SO_RCVBUF
                        s.setsockopt(socket.SOL_SOCKET, plain, 16 << 20)
            self.hosts.append(host)
            qsides.append(qside)
            nic_args += [
                "-netdev", f"dgram,id=wire{i},local.type=fd,local.str={qside.fileno()}",
                "-device", f"{dev},netdev=wire{i},mac={DEVICE_MAC.hex(':')},romfile=,addr={PCI_SLOT + SLOT_STRIDE * i:02x}",  # hex
            ]  # fmt: skip
        argv = [
            *(valgrind or []),
            str(qemu),
            "-machine", "q35", *machine, "-accel", "qtest", "-nodefaults", "-display", "none",
            "-m", MEMORY, "-name", f"devbench-{name},debug-threads=on",
            "-qtest", f"unix:{qtest_path}", "-qtest-log", "/dev/null",
            "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
            "-D", str(self.trace_log),
            *nic_args,
        ]  # fmt: skip
        (log_dir / "cmdline").write_text(" ".join(argv) + "\n")
        self.stderr = (log_dir / "qemu.stderr").open("wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.stderr, stderr=self.stderr,
                                     pass_fds=[q.fileno() for q in qsides])  # fmt: skip
        for q in qsides:
            q.close()
        try:
            conn, _ = listen.accept()
        except socket.timeout:
            self._abort()
            err = (log_dir / "qemu.stderr").read_text(errors="replace").strip()[-500:]
            raise BenchError(f"{name}: QEMU did not connect to the qtest socket: {err or 'no message'}") from None
        finally:
            listen.close()
        self.qt = Qtest(conn)
        try:
            self.qmp = Qmp(self.qmp_path)
        except (BenchError, OSError):
            conn.close()
            self._abort()
            raise
        self.pid = self.proc.pid
        self.timerslack = set_timerslack(self.pid)
        for h in self.hosts:
            h.setblocking(False)

    def _abort(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.stderr.close()
        for h in self.hosts:
            h.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)

    def close(self) -> None:
        try:
            self.qmp.close()
            self.qt.conn.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for h in self.hosts:
            h.close()
        self.stderr.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)


DEVICE_STRIDE = 0x1000000  # guest RAM per device: device i's rings, buffers and mailbox are i * 16 MiB up
MMIO_STRIDE = 0x400000  # device i's BARs are placed from MMIO_BASE + i * 4 MiB
# device i is in slot PCI_SLOT + 2 i: igb creates its 7 VFs with the PF, at
# devfn PF + 0x80 + 2 k (slots PF + 16 and + 17), so PFs one slot apart
# collide; with 5 devices the VFs fill slots 20..29, below the ICH9's 31
SLOT_STRIDE = 2
MAX_DEVICES = 5


class Bed:
    """One NIC model in a QEMU (-accel qtest) with its backend socket: the
    PCI function, MSI-X and the mailbox, the tick loop and its replay; the
    rings are the driver's (devdrivers: DescRings for the Intel models,
    VirtioNet for virtio-net-pci). Without `shared` it starts its own QEMU
    with just that NIC; with shared=(proc, i) it drives device i of that
    QEMU, whose rings, buffers, mailbox and BARs are moved up by i strides
    so that devices do not overlap."""

    def __init__(
        self,
        model: NicModel | VirtioNetModel,
        qemu: Path,
        log_dir: Path,
        ndesc: int,
        itr_us: int,
        valgrind: list[str] | None = None,
        ixgbe_rx_wthresh: int = 0,
        shared: tuple[QemuProc, int] | None = None,
    ) -> None:
        self.model = model
        self.log_dir = log_dir
        self.ndesc = ndesc
        index = shared[1] if shared else 0
        if not 0 <= index < MAX_DEVICES:
            raise BenchError(f"device index {index} outside 0..{MAX_DEVICES - 1}")
        off = index * DEVICE_STRIDE
        self.slot = PCI_SLOT + SLOT_STRIDE * index
        self.mmio_base = MMIO_BASE + index * MMIO_STRIDE
        self.mailbox = MAILBOX + off
        self.scratch_regs, self.scratch_rings, self.scratch_mailbox = (
            SCRATCH_MMIO + off, SCRATCH_TX_RING + off, SCRATCH_MAILBOX + off)  # fmt: skip
        self.drv: Driver
        if isinstance(model, VirtioNetModel):
            self.drv = VirtioNet(model, TX_RING + off, RX_RING + off, TX_BUFS + off, RX_BUFS + off, ndesc)
        else:
            lay = RingLayout(TX_RING + off, RX_RING + off, TX_BUFS + off, RX_BUFS + off, ndesc)
            self.drv = DescRings(model, lay, itr_us, ixgbe_rx_wthresh)
        self.regs = self.regs_size = 0  # the BAR of the driver's registers
        self.mmio_reads = self.mmio_writes = 0
        self.host_frames = 0  # transmitted frames the backend delivered
        self.posted = 0  # frames posted (TX) or sent into the backend (RX) in this window
        self.tx_size = 0
        self.frames: dict[int, bytes] = {}
        self.owns_proc = shared is None
        self.qproc = shared[0] if shared else QemuProc([model.device], qemu, log_dir, model.name, valgrind)
        self.trace_log = self.qproc.trace_log
        self.qt = self.qproc.qt
        self.qmp = self.qproc.qmp
        self.proc = self.qproc.proc
        self.pid = self.qproc.pid
        self.timerslack = self.qproc.timerslack
        self.host = self.qproc.hosts[index]

    # ---- registers: the driver's accesses, counted (the Port of devdrivers)
    def rd(self, reg: int, size: int = 4) -> int:
        self.mmio_reads += 1
        return int(self.qt.cmd(cmd_readl(self.regs + reg, size)), 16)

    def wr(self, reg: int, value: int, size: int = 4) -> None:
        self.qt.cmd(self.wr_cmd(reg, value, size))

    def wr_cmd(self, reg: int, value: int, size: int = 4) -> str:
        """A register write that goes into a batch (counted as the driver's)."""
        self.mmio_writes += 1
        return cmd_writel(self.regs + reg, value, size)

    # ---- PCI: BARs, bus master, MSI-X
    def pci_setup(self) -> None:
        qt, dev = self.qt, self.slot
        ids = qt.cfg_read32(dev, 0)
        if ids == 0xFFFFFFFF:
            raise BenchError(f"{self.model.name}: no PCI function at 00:{dev:02x}.0")
        bars: dict[int, int] = {}
        sizes: dict[int, int] = {}
        addr = self.mmio_base
        i = 0
        while i < 6:
            reg = 0x10 + 4 * i
            orig = qt.cfg_read32(dev, reg)
            qt.cfg_write32(dev, reg, 0xFFFFFFFF)
            lo = qt.cfg_read32(dev, reg)
            hi = None
            if not orig & 1 and ((orig >> 1) & 3) == 2:
                qt.cfg_write32(dev, reg + 4, 0xFFFFFFFF)
                hi = qt.cfg_read32(dev, reg + 4)
            info = bar_info(i, orig, lo, hi)
            if info is None or info.is_io:
                qt.cfg_write32(dev, reg, orig)
                i += 1
                continue
            addr = (addr + info.size - 1) // info.size * info.size
            qt.cfg_write32(dev, reg, addr & 0xFFFFFFFF)
            if info.is_64:
                qt.cfg_write32(dev, reg + 4, addr >> 32)
            bars[i] = addr
            sizes[i] = info.size
            addr += info.size
            i += 2 if info.is_64 else 1
        if isinstance(self.drv, VirtioNet):
            self.drv.read_caps(self)
        self.regs, self.regs_size = self.drv.register_bar(bars, sizes)
        qt.cfg_write16(dev, 0x04, 0x0006 | 0x0400)  # memory, bus master, INTx off
        # MSI-X capability
        cap = qt.cfg_read32(dev, 0x34) & 0xFC
        msix: MsixCap | None = None
        while cap:
            d0 = qt.cfg_read32(dev, cap)
            if d0 & 0xFF == 0x11:
                msix = msix_cap(cap, d0, qt.cfg_read32(dev, cap + 4), qt.cfg_read32(dev, cap + 8))
                break
            cap = (d0 >> 8) & 0xFC
        if msix is None or msix.table_bar not in bars:
            raise BenchError(f"{self.model.name}: no usable MSI-X capability")
        self.pci = PciDev(dev, self.regs, self.regs_size, bars, msix)
        # enable with the function masked, program the vectors, unmask
        ctrl = (qt.cfg_read32(dev, msix.offset) >> 16) | 0x8000 | 0x4000
        qt.cfg_write16(dev, msix.offset + 2, ctrl)
        table = bars[msix.table_bar] + msix.table_offset
        qt.memwrite(self.mailbox, bytes(4 * MAILBOX_VECTORS))
        for v in range(min(MAILBOX_VECTORS, msix.table_size)):
            e = table + 16 * v
            qt.writel(e, self.mailbox + 4 * v)
            qt.writel(e + 4, 0)
            qt.writel(e + 8, v + 1)
            qt.writel(e + 12, 0)
        qt.cfg_write16(dev, msix.offset + 2, ctrl & ~0x4000)

    def setup(self) -> list[dict[str, Any]]:
        """PCI and MSI-X, then the driver's device setup; returns what the
        driver did (for the report)."""
        self.pci_setup()
        return self.drv.setup(self)

    def relocations(self) -> list[Relocation]:
        return [
            Relocation(self.regs, self.regs_size, self.scratch_regs),
            *self.drv.relocations(self.scratch_rings),
            Relocation(self.mailbox, 4 * MAILBOX_VECTORS, self.scratch_mailbox),
        ]

    # ---- frames
    def frame(self, size: int) -> bytes:
        if size not in self.frames:
            self.frames[size] = udp_frame(size)
        return self.frames[size]

    def prepare_tx(self, size: int) -> None:
        """Put the frame into every TX buffer (outside measured windows)."""
        self.drv.prepare_tx(self.frame(size))
        self.tx_size = size

    def _mailbox_cmds(self) -> list[str]:
        return [cmd_memread(self.mailbox, 4 * MAILBOX_VECTORS)]

    @staticmethod
    def _fired(reply: str) -> set[int]:
        mb = parse_memread(reply, 4 * MAILBOX_VECTORS)
        return {v for v in range(MAILBOX_VECTORS) if mb[4 * v : 4 * v + 4] != bytes(4)}

    def _drain_backend(self, wait_for: int = 0) -> None:
        """Count the frames the device transmitted (checking their size);
        with wait_for, block until that many arrived in total."""
        end = time.monotonic() + WAIT_S
        while True:
            try:
                got = self.host.recv(4096)
            except BlockingIOError:
                if self.host_frames >= wait_for:
                    return
                if not select.select([self.host], [], [], max(0.0, end - time.monotonic()))[0]:
                    raise BenchError(
                        f"{self.model.name}: {self.host_frames} of {wait_for} transmitted frames reached the backend"
                    ) from None
                continue
            if len(got) != self.tx_size:
                raise BenchError(f"{self.model.name}: backend got a {len(got)}-byte frame, sent {self.tx_size}")
            self.host_frames += 1

    # ---- RX: frames arrive from the wire
    def rx_inject(self, burst: int, size: int) -> None:
        frame = self.frame(size)
        for _ in range(burst):
            while True:
                try:
                    self.host.send(frame)
                    break
                except BlockingIOError:
                    if not select.select([], [self.host], [], WAIT_S)[1]:
                        raise BenchError(f"{self.model.name}: the backend socket stays full") from None
        self.drv.rx_pending += burst
        self.posted += burst
        end = time.monotonic() + WAIT_S
        outq = bytearray(4)
        while True:  # until QEMU has read them all (costs QEMU nothing)
            fcntl.ioctl(self.host.fileno(), SIOCOUTQ, outq)
            if struct.unpack("i", outq)[0] == 0:
                return
            if time.monotonic() > end:
                raise BenchError(f"{self.model.name}: QEMU stopped reading the backend socket")
            time.sleep(0.00002)

    def run(self, cell: Cell, packets: int, burst: int, rate_pps: int,
            record: bool = False) -> tuple[Window, list[list[str]]]:  # fmt: skip
        """One window of `packets` frames, in ticks of `burst` frames and
        burst / rate of virtual time: post (TX) or receive (RX) a burst when
        the ring has room, advance the clock, and run the driver's poll
        when a vector has signalled (or its poll was rescheduled). Ends
        when every frame is cleaned. The commands of a tick go in one batch
        (a virtio TX tick: two, the kick decision reads avail_event)."""
        tx = cell.direction == "tx"
        drv = self.drv
        if tx:
            self.prepare_tx(cell.size)
            self.host_frames = 0
        step_ns = round(burst * 1e9 / rate_pps)
        self.qt.counts.clear()
        self.qt.recording = [] if record else None
        r0, w0 = self.mmio_reads, self.mmio_writes
        self.posted = done = polls = idle = stall = 0
        t0, c0 = time.monotonic_ns(), cpu_clock_ns(self.pid)
        while done < packets:
            pending = drv.tx_pending if tx else drv.rx_pending
            lines: list[str] = []
            if self.posted < packets and drv.capacity - pending >= burst:
                if tx:
                    lines = drv.tx_post(burst)
                    self.posted += burst
                else:
                    self.rx_inject(burst, cell.size)
                stall = 0
            else:
                idle += 1
                stall += 1
                if stall > STALL_TICKS:
                    raise BenchError(
                        f"{self.model.name} {cell.key}: no progress in {STALL_TICKS} ticks "
                        f"({pending} frames outstanding, {done} of {packets} done)"
                    )
            lines += [cmd_clock_step(step_ns), *self._mailbox_cmds()]
            fired = self._fired(self.qt.batch(lines)[-1])
            if fired or drv.resched:
                ack = cmd_memwrite(self.mailbox, bytes(4 * MAILBOX_VECTORS))
                p, tx_k, rx_k = drv.poll(fired, cell.size, [ack])
                polls += p
                done += tx_k if tx else rx_k
            if tx and self.posted - self.host_frames >= 1024:
                self._drain_backend()  # now and then: the socket buffer is finite
        if tx:
            self._drain_backend(wait_for=packets)
        c1, t1 = cpu_clock_ns(self.pid), time.monotonic_ns()
        rec = self.qt.recording or []
        self.qt.recording = None
        w = Window(packets, c1 - c0, t1 - t0, dict(self.qt.counts), self.mmio_reads - r0, self.mmio_writes - w0,
                   polls, idle)  # fmt: skip
        return w, rec

    def replay(self, batches: Sequence[Sequence[str]]) -> Window:
        """The protocol-overhead twin of a window: its command batches,
        relocated to scratch RAM."""
        rel = self.relocations()
        todo = [[null_command(c, rel) for c in b] for b in batches]
        self.qt.counts.clear()
        t0, c0 = time.monotonic_ns(), cpu_clock_ns(self.pid)
        for b in todo:
            self.qt.batch(b)
        c1, t1 = cpu_clock_ns(self.pid), time.monotonic_ns()
        return Window(0, c1 - c0, t1 - t0, dict(self.qt.counts), 0, 0)

    @contextmanager
    def traced(self) -> Iterator[dict[str, str]]:
        """Trace memory_region_ops_* into QEMU's log during the block; the
        log text of the block is put into the yielded dict's "text"."""
        events = ("memory_region_ops_*", *self.model.irq_events)
        for ev in events:
            self.qmp.execute("trace-event-set-state", name=ev, enable=True)
        start = self.trace_log.stat().st_size if self.trace_log.exists() else 0
        out: dict[str, str] = {}
        try:
            yield out
        finally:
            for ev in events:
                self.qmp.execute("trace-event-set-state", name=ev, enable=False)
            with self.trace_log.open("rb") as fh:
                fh.seek(start)
                out["text"] = fh.read().decode(errors="replace")

    def mark(self) -> None:
        """A callgrind dump boundary (--dump-before=qmp_query_name)."""
        self.qmp.execute("query-name")

    def close(self) -> None:
        """Stop the QEMU when this bed started it (a shared one is closed by its owner)."""
        if self.owns_proc:
            self.qproc.close()


# ------------------------------------------------------------ perf
class PerfStat:
    """perf stat -e instructions attached to QEMU for one window."""

    def __init__(self, pid: int) -> None:
        self.proc = subprocess.Popen(
            ["perf", "stat", "-x,", "-e", "instructions", "-p", str(pid)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(0.3)  # attached before the window starts

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=30)
        return parse_perf_instructions(err)


def perf_works() -> bool:
    if shutil.which("perf") is None:
        return False
    r = subprocess.run(["perf", "stat", "-x,", "-e", "instructions", "true"], capture_output=True, text=True,
                       timeout=30, check=False)  # fmt: skip
    return r.returncode == 0 and perf_supported(r.stderr)


# ------------------------------------------------------------ the run
@dataclasses.dataclass
class Settings:
    models: list[str]
    cells: list[Cell]
    reps: int
    packets: int
    chunk: int
    count_packets: int
    cg_packets: int
    cg_reps: int
    burst: int
    ndesc: int
    rate_pps: int
    itr_us: int
    callgrind: bool  # device-work instructions, QEMU under callgrind (a separate pass)
    perf: bool  # whole-process instructions from the PMU (in the timed windows)
    ixgbe_rx_wthresh: int = 0  # ixgbe's RXDCTL.WTHRESH (0: as Linux and DPDK)


def sample(model: str, cell: Cell, rep: int, figures: dict[str, float], raw: dict[str, Any]) -> dict[str, Any]:
    return {"model": model, "cell": cell.key, "rep": rep, "figures": figures, "raw": raw}


def measure_timed(beds: dict[str, Bed], st: Settings, samples: list[dict[str, Any]]) -> None:
    """Round robin: each repetition visits every cell, and in every cell
    every model (the starting model rotates)."""
    names = list(beds)
    for cell in st.cells:  # warm-up, unmeasured
        for name in names:
            beds[name].run(cell, max(st.ndesc, st.packets // 8) // st.burst * st.burst, st.burst, st.rate_pps)
    for rep in range(st.reps):
        for cell in st.cells:
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                bed = beds[name]
                if st.perf:
                    perf = PerfStat(bed.pid)
                    real, cmds = bed.run(cell, st.packets, st.burst, st.rate_pps, record=True)
                    ir_real: int | None = perf.stop()
                    perf = PerfStat(bed.pid)
                    null = bed.replay(cmds)
                    ir_null: int | None = perf.stop()
                else:
                    # chunks of the window, each followed by its replay: the
                    # pairs see the same host conditions
                    ir_real = ir_null = None
                    real, cmds = bed.run(cell, st.chunk, st.burst, st.rate_pps, record=True)
                    null = bed.replay(cmds)
                    for _ in range(st.packets // st.chunk - 1):
                        r, cmds = bed.run(cell, st.chunk, st.burst, st.rate_pps, record=True)
                        real, null = add_windows(real, r), add_windows(null, bed.replay(cmds))
                fig = window_figures(real, null)
                if ir_real is not None and ir_null is not None:
                    fig["instr_perf_per_pkt"] = (ir_real - ir_null) / real.packets
                with bed.traced() as tr:
                    cnt, _ = bed.run(cell, st.count_packets, st.burst, st.rate_pps)
                counts = parse_trace(tr["text"], bed.model.irq_events)
                fig.update(count_figures(cnt.packets, counts, bed.model.mmio_region))
                raw = {
                    "window": dataclasses.asdict(real),
                    "replay": dataclasses.asdict(null),
                    "count_window": dataclasses.asdict(cnt),
                    "msix_by_vector": {str(v): c for v, c in sorted(counts.irqs.items())},
                    "trace_accesses": {f"{r}/{o}": c for (r, o), c in sorted(counts.accesses.items())},
                    "instructions": {"real": ir_real, "null": ir_null} if ir_real is not None else None,
                }
                samples.append(sample(name, cell, rep, fig, raw))
                log.info(
                    "rep %d %-7s %-6s %6.0f ns/pkt (raw %6.0f, protocol %2.0f%%), %.3f reg/pkt, %.3f IRQ/pkt",
                    rep, cell.key, name, fig["cpu_ns_per_pkt"], fig["cpu_ns_per_pkt_raw"],
                    100 * fig["protocol_share"], fig["reg_accesses_per_pkt"], fig["irq_per_pkt"],
                )  # fmt: skip


def measure_callgrind(
    qemu: Path, st: Settings, log_dir: Path, samples: list[dict[str, Any]], keep: bool
) -> dict[str, Any]:
    """Instructions per packet with QEMU under callgrind, one model at a
    time: window and replay each between two dump boundaries."""
    out: dict[str, Any] = {}
    for name in st.models:
        cg_dir = log_dir / f"callgrind-{name}"
        cg_dir.mkdir(parents=True, exist_ok=True)
        base = cg_dir / "callgrind.out"
        vg = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={base}", "--dump-before=qmp_query_name",
            "--compress-strings=no", "--compress-pos=no", "--dump-instr=no",
            f"--log-file={cg_dir / 'valgrind.log'}",
        ]  # fmt: skip
        t0 = time.monotonic()
        bed = Bed(ALL_MODELS[name], qemu, log_dir / f"{name}-callgrind", st.ndesc, st.itr_us, valgrind=vg,
                  ixgbe_rx_wthresh=st.ixgbe_rx_wthresh)  # fmt: skip
        marks = 0
        windows: list[tuple[Cell, int, int, int, int]] = []  # cell, rep, real dump, null dump, packets
        try:
            bed.setup()
            for cell in st.cells:
                bed.run(cell, max(st.ndesc, st.cg_packets // 4) // st.burst * st.burst, st.burst, st.rate_pps)
                for rep in range(st.cg_reps):
                    bed.mark()
                    marks += 1
                    real, cmds = bed.run(cell, st.cg_packets, st.burst, st.rate_pps, record=True)
                    bed.mark()
                    marks += 1
                    real_dump = marks  # counts up to this mark
                    bed.replay(cmds)
                    bed.mark()
                    marks += 1
                    windows.append((cell, rep, real_dump, marks, real.packets))
        finally:
            bed.close()
        dumps = len(list(cg_dir.glob("callgrind.out.*")))
        if dumps != marks:
            raise BenchError(f"{name}: {dumps} callgrind dumps for {marks} window marks (see {cg_dir})")
        log.info("%s: callgrind pass %.0f s", name, time.monotonic() - t0)
        per_cell: dict[str, Any] = {}
        for cell, rep, rd, nd, n in windows:
            real_p = load_profile(base, rd)
            null_p = load_profile(base, nd)
            total, fns, classes = profile_delta(real_p, null_p)
            dev_real, dev_null = entry_cost(real_p), entry_cost(null_p)
            top = sorted(fns.items(), key=lambda kv: -kv[1])[:15]
            fig = {"instr_per_pkt": (dev_real - dev_null) / n, "instr_all_per_pkt": total / n}
            raw = {"callgrind": {"all_real": real_p.total, "all_null": null_p.total, "device_real": dev_real,
                                 "device_null": dev_null, "packets": n}}  # fmt: skip
            samples.append(sample(name, cell, rep, fig, raw))
            per_cell.setdefault(cell.key, []).append({
                "rep": rep, "packets": n, "instr_real": real_p.total, "instr_null": null_p.total,
                "device_instr_per_pkt": (dev_real - dev_null) / n, "instr_per_pkt": total / n,
                "by_class_per_pkt": {k: v / n for k, v in sorted(classes.items(), key=lambda kv: -kv[1])},
                "top_functions_per_pkt": {k: v / n for k, v in top},
            })  # fmt: skip
            log.info("callgrind %-7s %-6s %6.0f instructions/pkt device work, %6.0f all of QEMU", cell.key, name,
                     fig["instr_per_pkt"], fig["instr_all_per_pkt"])  # fmt: skip
        out[name] = per_cell
        if not keep:
            shutil.rmtree(cg_dir, ignore_errors=True)
    return out


def load_profile(base: Path, index: int) -> Profile:
    path = Path(f"{base}.{index}")
    if not path.exists():
        raise BenchError(f"callgrind dump {path} missing")
    return parse_callgrind(path.read_text(errors="replace"))


# ------------------------------------------------------------ output
def plot(path: Path, summ: dict[str, dict[str, dict[str, Summary]]], models: Sequence[str],
         cells: Sequence[Cell], title: str) -> bool:  # fmt: skip
    """Four panels (one per metric), grouped bars per cell, min-max error bars."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log.warning("matplotlib not in the venv (scripts/deps.sh installs it): no plot")
        return False
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    width = 0.8 / max(1, len(models))
    for ax, met in zip(axes.flat, METRICS):
        per_cell = summ.get(met.key, {})
        for i, m in enumerate(models):
            xs, ys, lo, hi = [], [], [], []
            for j, c in enumerate(cells):
                s = per_cell.get(c.key, {}).get(m)
                if s is None:
                    continue
                xs.append(j + (i - (len(models) - 1) / 2) * width)
                ys.append(s.median)
                lo.append(s.median - s.low)
                hi.append(s.high - s.median)
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], capsize=3, label=m)
        ax.set_xticks(range(len(cells)), [c.label for c in cells])
        ax.set_title(met.label)
        ax.set_ylabel(met.unit)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes.flat:  # the legend on the first panel that has bars
        if ax.get_legend_handles_labels()[0]:
            ax.legend()
            break
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True


def snapshot_qemu(src: Path, out_dir: Path) -> Path:
    """Copy the QEMU binary (a rebuild during the run cannot mix builds);
    wait for it while it is being relinked."""
    end = time.monotonic() + 600
    while True:
        try:
            dst = out_dir / "qemu-system-x86_64"
            tmp = out_dir / "qemu-system-x86_64.tmp"
            shutil.copy2(src, tmp)
            tmp.replace(dst)
            r = subprocess.run([str(dst), "-device", "help"], capture_output=True, text=True, timeout=60, check=False)
            if r.returncode == 0:
                return dst
            why = r.stderr.strip()
        except OSError as exc:
            why = str(exc)
        if time.monotonic() > end:
            raise BenchError(f"{src} is not usable: {why}")
        log.info("%s not usable yet (%s); waiting", src, why[:100])
        time.sleep(10)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="devbench",
        description="Guest-free benchmark of the NIC device models (ixgbe vs igb, e1000e, virtio-net) over qtest.",
    )
    p.add_argument("--quick", action="store_true", help="fewer and shorter windows (about a minute)")
    p.add_argument("--reps", type=int, help="timed windows per model and cell (default 7, quick 3)")
    p.add_argument("--packets", type=int, help="frames per timed window (default 16384, quick 4096)")
    p.add_argument(
        "--chunk",
        type=int,
        default=2048,
        help="frames per window chunk; each chunk is followed by its replay (default 2048)",
    )
    p.add_argument("--burst", type=int, default=32, help="descriptors per tail write (default 32)")
    p.add_argument("--ring", type=int, default=256, help="descriptors per ring (default 256)")
    p.add_argument("--rate", type=int, default=1_000_000, help="packet rate in virtual time, pps (default 1000000)")
    p.add_argument("--itr-us", type=int, default=50, help="interrupt moderation, as `ethtool -C rx-usecs` (default 50)")
    p.add_argument(
        "--ixgbe-rx-wthresh",
        type=int,
        default=0,
        help="ixgbe's RXDCTL.WTHRESH: receive write-backs held until this many (default 0, as Linux and DPDK)",
    )
    p.add_argument("--sizes", default="60,1514", help="frame sizes without FCS (default 60,1514: 64 B and 1514 B)")
    p.add_argument("--directions", default="tx,rx", help="tx, rx or both (default)")
    p.add_argument("--models", default=",".join(MODEL_NAMES),
                   help="subset of ixgbe,igb,e1000e,virtio-net (ixgbe always in)")  # fmt: skip
    p.add_argument(
        "--instructions",
        default="auto",
        choices=("auto", "perf", "callgrind", "none"),
        help="host instruction counts: callgrind (the device's work; a separate pass under valgrind), perf "
        "(the whole QEMU process; needs a PMU); auto (default): callgrind if installed, and perf if it counts",
    )
    p.add_argument("--cg-packets", type=int, help="frames per callgrind window (default 2048, quick 512)")
    p.add_argument("--cg-reps", type=int, help="callgrind windows per model and cell (default 2, quick 1)")
    p.add_argument("--out-dir", type=Path, help="results directory (default $BUILD_DIR/bench/device-model)")
    p.add_argument("--keep-logs", action="store_true", help="keep trace logs and callgrind dumps")
    p.add_argument("--no-plot", action="store_true", help="no PNG")
    p.add_argument(
        "--memory",
        action="store_true",
        help="instead, host memory per device (tests/bench/devmem.py; --memory --help: its options)",
    )
    p.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.reps = a.reps if a.reps is not None else (3 if a.quick else 7)
    a.packets = a.packets if a.packets is not None else (4096 if a.quick else 16384)
    a.cg_packets = a.cg_packets if a.cg_packets is not None else (512 if a.quick else 2048)
    a.cg_reps = a.cg_reps if a.cg_reps is not None else (1 if a.quick else 2)
    check_ranges(p, a, ("reps", 1, 50))
    if a.ring < 16 or a.ring % 8 or a.ring > 4096:
        p.error(f"--ring must be a multiple of 8 in 16..4096, got {a.ring}")
    if a.burst < 1 or a.ring % a.burst or a.burst >= a.ring:
        p.error(f"--burst must divide --ring and be smaller, got {a.burst}")
    a.chunk = min(a.chunk, a.packets)
    for name in ("packets", "cg_packets", "chunk"):
        v = getattr(a, name)
        if v < a.burst or v % a.burst:
            p.error(f"--{name.replace('_', '-')} must be a multiple of --burst, got {v}")
    if a.packets % a.chunk:
        p.error(f"--packets must be a multiple of --chunk, got {a.packets} and {a.chunk}")
    check_ranges(p, a, ("rate", 1000, 100_000_000), ("itr_us", 0, 1000), ("ixgbe_rx_wthresh", 0, 127))
    try:
        sizes = [int(s) for s in a.sizes.split(",") if s.strip()]
    except ValueError:
        p.error(f"bad --sizes {a.sizes!r}")
    if not sizes or any(not 60 <= s <= 1514 for s in sizes):
        p.error(f"--sizes must be in 60..1514, got {a.sizes!r}")
    dirs = [d.strip() for d in a.directions.split(",") if d.strip()]
    if not dirs or any(d not in ("tx", "rx") for d in dirs):
        p.error(f"--directions must be tx and/or rx, got {a.directions!r}")
    a.cells = [Cell(d, s) for d in dict.fromkeys(dirs) for s in dict.fromkeys(sizes)]
    a.models = choose_models(p, a.models, MODEL_NAMES, SUBJECT)
    if "virtio-net" in a.models and (a.ring & (a.ring - 1) or a.ring > VIRTIO_MAX_RING):
        p.error(f"--ring must be a power of 2 up to {VIRTIO_MAX_RING} with virtio-net (a split virtqueue; "
                f"QEMU's transmit queue holds at most {VIRTIO_MAX_RING}), got {a.ring}")
    return a


def choose_instructions(want: str) -> tuple[bool, bool]:
    """(callgrind, perf): callgrind wherever valgrind is installed (it
    separates the device's work from the rest of QEMU); perf in addition
    where the host's PMU counts instructions (not in most VMs)."""
    have_vg = shutil.which("valgrind") is not None
    if want == "callgrind" and not have_vg:
        raise BenchError("valgrind not found (Debian package valgrind; scripts/deps.sh installs it)")
    pmu = want in ("auto", "perf") and perf_works()
    if want == "perf" and not pmu:
        raise BenchError("perf stat -e instructions counts nothing on this host (no PMU?)")
    cg = want in ("auto", "callgrind") and have_vg
    if want == "auto" and not cg:
        log.warning("valgrind not installed: no device-work instruction counts")
    return cg, pmu


def main(argv: Sequence[str]) -> int:
    if "--memory" in argv:  # host memory per device: devmem.py
        import devmem

        return devmem.main(argv)
    a = parse_args(argv)
    if a.check_args:
        return 0
    logging.basicConfig(level=logging.INFO, format="[devbench %(asctime)s] %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)  # fmt: skip
    t_start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    out_dir = (a.out_dir or build_dir() / "bench" / "device-model").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    log_dir = out_dir / "logs" / stamp
    log_dir.mkdir(parents=True, exist_ok=True)
    src = Path(os.environ.get("QEMU") or build_dir() / "qemu-build" / "qemu-system-x86_64")
    qemu = snapshot_qemu(src, out_dir)
    version = subprocess.run([str(qemu), "-version"], capture_output=True, text=True, check=True).stdout
    cg, pmu = choose_instructions(a.instructions)
    instr = "+".join(n for n, on in (("callgrind", cg), ("perf", pmu)) if on) or "none"
    count_packets = min(a.packets, 4096 // a.burst * a.burst)  # interrupts: deterministic, 4096 frames do
    st = Settings(a.models, a.cells, a.reps, a.packets, a.chunk, count_packets, a.cg_packets, a.cg_reps,
                  a.burst, a.ring, a.rate, a.itr_us, cg, pmu, a.ixgbe_rx_wthresh)  # fmt: skip
    mode = "quick" if a.quick else "full"
    log.info(
        "%s: %s x %s, %d reps x %d frames, burst %d, ring %d, %d pps virtual, rx-usecs %d; instructions: %s",
        mode, ",".join(st.models), ",".join(c.key for c in st.cells), st.reps, st.packets, st.burst, st.ndesc,
        st.rate_pps, st.itr_us, instr,
    )  # fmt: skip
    samples: list[dict[str, Any]] = []
    setups: dict[str, Any] = {}
    callgrind: dict[str, Any] = {}
    beds: dict[str, Bed] = {}
    failure = ""
    try:
        for name in st.models:
            bed = Bed(ALL_MODELS[name], qemu, log_dir / name, st.ndesc, st.itr_us,
                      ixgbe_rx_wthresh=st.ixgbe_rx_wthresh)  # fmt: skip
            beds[name] = bed
            if not bed.timerslack:
                log.warning("%s: cannot set QEMU's timer slack (needs root): idle main-loop wake-ups "
                            "will inflate its CPU time", name)  # fmt: skip
            setups[name] = {"registers": bed.setup(), "register_bar": f"0x{bed.pci.regs:x}",
                            "msix": dataclasses.asdict(bed.pci.msix), "timerslack": bed.timerslack}  # fmt: skip
        measure_timed(beds, st, samples)
    except (BenchError, OSError) as exc:
        failure = f"timed pass: {exc}"
        log.error("%s (logs in %s)", failure, log_dir)
    finally:
        for bed in beds.values():
            bed.close()
            if not a.keep_logs:
                bed.trace_log.unlink(missing_ok=True)
    if st.callgrind and not failure:
        try:
            callgrind = measure_callgrind(qemu, st, log_dir, samples, a.keep_logs)
        except (BenchError, OSError) as exc:
            failure = f"callgrind pass: {exc}"
            log.error("%s (logs in %s)", failure, log_dir)

    summ = summarize_samples(samples)
    table = render_table(samples, summ, st.models, st.cells, (*METRICS, *EXTRA_METRICS))
    elapsed = time.monotonic() - t_start
    hf = {**host_facts(), "loadavg": os.getloadavg()}
    header = (
        f"NIC device-model benchmark {started.isoformat(timespec='seconds')} ({mode}): "
        f"{version.splitlines()[0]}, -accel qtest, no guest; host {hf['cpus']} CPUs ({hf['cpu_model']}), "
        f"{elapsed / 60:.1f} min\n"
        f"one queue pair, MSI-X, ring {st.ndesc}, burst {st.burst}, {st.rate_pps} pps of virtual time, "
        f"rx-usecs {st.itr_us}"
        + (f", ixgbe RXDCTL.WTHRESH {st.ixgbe_rx_wthresh}" if st.ixgbe_rx_wthresh else "")
        + f"; {st.reps} windows x {st.packets} frames per cell"
        + (f"; callgrind {st.cg_reps} x {st.cg_packets} frames" if st.callgrind else "")
        + f"; instructions: {instr}\n"
        "64B = 60-byte frame + FCS, 1514B = 1514-byte frame without FCS; IPv4/UDP with checksums.\n"
        "CPU and instructions: QEMU's, minus a replay of the same qtest commands with the device idle.\n"
        "cells: median ±half the min-max range; ratios: of medians (range of same-repetition ratios)."
    )
    text = header + "\n\n" + table
    if failure:
        text += "\n\nPROBLEM: " + failure
    print(text)
    result = {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "mode": mode,
        "elapsed_s": elapsed,
        "settings": {**dataclasses.asdict(st), "cells": [c.key for c in st.cells]},
        "qemu": {"version": version.splitlines()[0], "sha256": sha256_file(qemu)},
        "host": hf,
        "models": {n: {**dataclasses.asdict(ALL_MODELS[n]), "setup": setups.get(n)} for n in st.models},
        "samples": samples,
        "callgrind": callgrind,
        "summary": {k: {c: {m: s.as_dict() for m, s in per.items()} for c, per in cells.items()}
                    for k, cells in summ.items()},  # fmt: skip
        "ratios": all_ratios(samples, summ, st.models, st.cells),
        "table": table,
        "failure": failure,
    }
    name = f"devbench-{stamp}-{mode}"
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{name}.txt").write_text(text + "\n")
    shutil.copyfile(out_dir / f"{name}.json", out_dir / "latest.json")
    shutil.copyfile(out_dir / f"{name}.txt", out_dir / "latest.txt")
    if not a.no_plot and samples:
        title = f"{' vs '.join(st.models)} device models, {started:%Y-%m-%d %H:%M} UTC, {mode}, {hf['cpus']} host CPUs"
        if plot(out_dir / f"{name}.png", summ, st.models, st.cells, title):
            shutil.copyfile(out_dir / f"{name}.png", out_dir / "latest.png")
    log.info("results: %s.{json,txt,png} (also latest.*)", os.path.relpath(out_dir / name))
    return 1 if failure else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BenchError as exc:
        log.error("%s", exc)
        sys.exit(2)
