"""Live migration of a test guest between two QEMU processes, and a look
into the migration stream.

`MigratingGuest` keeps one guest (a NIC model with two ports wired back to
back, port 1 in network namespace "peer") and moves it to a fresh QEMU
started with `-incoming` each time `migrate()` is called; the old QEMU is
shut down once the guest runs on the new one. `migrate_vm` is the QMP part
(migrate, poll query-migrate), usable on its own.

`StreamTap` sits between the two QEMUs on loopback TCP and keeps the tail of
the stream: `device_section` finds a device's state in it with the stream's
own JSON description (the "vmdesc" QEMU appends), and `ixgbe_migrated_state`
decodes the parts of the 82599's state the tests want to see migrated
(EITR timers armed, TX write-backs pending).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.host import scaled
from ixgbe_testlib.iperf3 import free_tcp_port
from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.nicargs import mac_address
from ixgbe_testlib.vm import VM, VMFactory, load_driver
from scenarios import (
    WIRE_NET,
    Guest,
    assert_clean_log,
    assert_qemu_quiet,
    back_to_back_args,
    background,
    wire_back_to_back,
)

# Migration parameters used for every migration here: no bandwidth cap (the
# default 128 MiB/s may never converge under bulk traffic in a TCG guest),
# QEMU's default downtime limit.
MAX_BANDWIDTH = 8 << 30


@dataclasses.dataclass(frozen=True)
class MigrationResult:
    status: str
    total_ms: int
    downtime_ms: int
    setup_ms: int
    expected_downtime_ms: int | None
    ram: dict[str, Any]
    wall_s: float  # from the migrate command to the destination running
    raw: dict[str, Any]


def migrate_vm(
    src: VM, dst: VM, uri: str, timeout: float = 180, downtime_limit_ms: int | None = None
) -> MigrationResult:
    """Migrate `src` to `dst` (started with -incoming) over `uri`; wait until
    the source says completed and the destination runs. `downtime_limit_ms`
    replaces QEMU's default (300 ms) when given."""
    params: dict[str, Any] = {"max-bandwidth": MAX_BANDWIDTH}
    if downtime_limit_ms is not None:
        params["downtime-limit"] = downtime_limit_ms
    src.qmp("migrate-set-parameters", **params)
    t0 = time.monotonic()
    src.qmp("migrate", uri=uri)
    deadline = t0 + scaled(timeout)
    info: dict[str, Any] = {}
    while True:
        info = src.qmp("query-migrate")
        status = info.get("status", "")
        if status == "completed":
            break
        if status in ("failed", "cancelled"):
            raise GuestError(f"migration {status}: {info.get('error-desc', info)}{_qemu_note(src, dst)}")
        if not src.alive() or not dst.alive():
            raise GuestError(f"a QEMU died during migration ({status}){_qemu_note(src, dst)}")
        if time.monotonic() > deadline:
            # no migrate_cancel: a cancel followed by a late connection
            # callback has aborted QEMU ("invalid runstate transition", see
            # docs/hardening.md); the fixtures kill both QEMUs. What each
            # QEMU was doing goes into the report.
            stacks = "\n".join(vm.thread_stacks() for vm in (src, dst))
            raise GuestError(
                f"migration not completed after {scaled(timeout):.0f}s: {json.dumps(info)}{_qemu_note(src, dst)}"
                f"\n{stacks}"
            )
        time.sleep(0.1)
    while True:
        st = dst.qmp("query-status")
        if st.get("status") == "running":
            break
        if st.get("status") not in ("inmigrate", "paused", "postmigrate", "prelaunch"):
            raise GuestError(f"destination is {st.get('status')} after migration{_qemu_note(src, dst)}")
        if time.monotonic() > deadline:
            raise GuestError(f"destination not running after migration: {st}{_qemu_note(src, dst)}")
        time.sleep(0.05)
    wall = time.monotonic() - t0
    return MigrationResult(
        status=str(info["status"]),
        total_ms=int(info.get("total-time", 0)),
        downtime_ms=int(info.get("downtime", 0)),
        setup_ms=int(info.get("setup-time", 0)),
        expected_downtime_ms=info.get("expected-downtime"),
        ram=dict(info.get("ram", {})),
        wall_s=wall,
        raw=info,
    )


def _qemu_note(*vms: VM) -> str:
    notes = []
    for vm in vms:
        problems = vm.qemu_problems()
        if problems or not vm.alive():
            notes.append(f"\n--- {vm.name} (exit {vm.exit_code}) ---\n{problems}")
    return "".join(notes)


# ------------------------------------------------------------ stream tap
class StreamTap:
    """A loopback TCP relay from the migration source to the destination
    that keeps the last `keep` bytes of the stream (device state and the
    JSON description are at its end)."""

    def __init__(self, dst_port: int, keep: int = 32 << 20) -> None:
        self.dst_port = dst_port
        self.keep = keep
        self.total = 0
        self.error: BaseException | None = None
        self._chunks: list[bytes] = []
        self._held = 0
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(1)
        self.port = int(self._listener.getsockname()[1])
        self._thread = threading.Thread(target=self._relay, name="migration-tap", daemon=True)
        self._thread.start()

    @property
    def uri(self) -> str:
        return f"tcp:127.0.0.1:{self.port}"

    def _relay(self) -> None:
        try:
            self._listener.settimeout(scaled(120))
            src, _ = self._listener.accept()
            with src, socket.create_connection(("127.0.0.1", self.dst_port), timeout=scaled(30)) as dst:
                src.settimeout(None)
                dst.settimeout(None)
                while True:
                    data = src.recv(1 << 20)
                    if not data:
                        break
                    dst.sendall(data)
                    self.total += len(data)
                    self._chunks.append(data)
                    self._held += len(data)
                    while self._held - len(self._chunks[0]) >= self.keep:
                        self._held -= len(self._chunks.pop(0))
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
        except BaseException as exc:  # noqa: BLE001 - reported by tail()
            self.error = exc
        finally:
            self._listener.close()

    def tail(self, timeout: float = 30) -> bytes:
        """The kept end of the stream, once the source has closed it."""
        self._thread.join(scaled(timeout))
        if self._thread.is_alive():
            raise GuestError("migration stream still open")
        if self.error is not None:
            raise GuestError(f"migration stream relay failed: {self.error!r}")
        return b"".join(self._chunks)


# ---------------------------------------------------------- stream parse
QEMU_VM_SECTION_FULL = 0x04
QEMU_VM_VMDESCRIPTION = 0x06


@dataclasses.dataclass(frozen=True)
class FieldSpan:
    name: str
    offset: int  # from the start of the section's data
    size: int  # bytes of one element
    count: int  # elements
    desc: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class DeviceSection:
    idstr: str
    vmsd_name: str
    data: bytes  # the section's state (after the section header)
    fields: dict[str, FieldSpan]
    size: int  # bytes of state described by the vmdesc


def stream_description(tail: bytes) -> dict[str, Any]:
    """The JSON description at the end of a migration stream: QEMU writes
    QEMU_VM_VMDESCRIPTION, a be32 length and the JSON as its last bytes."""
    for m in re.finditer(rb"\x06(....)\{", tail, re.DOTALL):
        (length,) = struct.unpack(">I", m.group(1))
        if m.start() + 5 + length != len(tail):
            continue
        try:
            desc: dict[str, Any] = json.loads(tail[m.start() + 5 :])
        except ValueError:
            continue
        return desc
    raise GuestError("no device description (vmdesc) at the end of the migration stream")


def _field_spans(fields: Sequence[dict[str, Any]]) -> dict[str, FieldSpan]:
    spans: dict[str, FieldSpan] = {}
    offset = 0
    for f in fields:
        size, count = int(f["size"]), int(f.get("array_len", 1))
        name = str(f["name"]) + (f"[{f['index']}]" if "index" in f else "")
        spans[name] = FieldSpan(name, offset, size, count, f)
        offset += size * count
    return spans


def device_sections(tail: bytes, vmsd_name: str) -> list[DeviceSection]:
    """The sections of every device of type `vmsd_name` in the stream's tail."""
    desc = stream_description(tail)
    out = []
    for dev in desc.get("devices", []):
        if dev.get("vmsd_name") != vmsd_name:
            continue
        idstr = str(dev["name"]).encode()
        header = (
            bytes([len(idstr)])
            + idstr
            + struct.pack(">II", int(dev.get("instance_id", 0)), int(dev.get("version", 0)))
        )
        at = tail.rfind(header)
        # section type and be32 section id come before the id string
        if at < 5 or tail[at - 5] != QEMU_VM_SECTION_FULL:
            raise GuestError(f"section of {dev['name']} not found in the migration stream")
        spans = _field_spans(dev.get("fields", []))
        size = sum(s.size * s.count for s in spans.values())
        start = at + len(header)
        out.append(DeviceSection(str(dev["name"]), vmsd_name, tail[start : start + size], spans, size))
    return out


@dataclasses.dataclass(frozen=True)
class IxgbeMigratedState:
    armed_vectors: list[int]  # vectors whose EITR interval was running
    timer_vectors: list[int]  # vectors with a timer pending (expire time set)
    wb_pending: dict[int, int]  # TX queue -> descriptors done, not yet written back
    section_size: int
    rx_free: dict[int, int]  # enabled RX queue (0..63) -> descriptors the device may fill

    @property
    def rx_full(self) -> list[int]:
        """RX queues with no descriptor left: arriving frames wait for the guest."""
        return [q for q, n in self.rx_free.items() if n == 0]


def ixgbe_migrated_state(section: DeviceSection) -> IxgbeMigratedState:
    """Decode the EITR vectors and TX queue state of an ixgbe section."""
    vec, txq = section.fields.get("core.vec"), section.fields.get("core.txq")
    if vec is None or txq is None:
        raise GuestError(f"ixgbe section without core.vec/core.txq: {sorted(section.fields)}")
    armed, timers = [], []
    for v in range(vec.count):
        base = vec.offset + v * vec.size
        sub = _field_spans(vec.desc["struct"]["fields"])
        timer = sub["timer"]
        (expire,) = struct.unpack(">q", section.data[base + timer.offset : base + timer.offset + 8])
        if section.data[base + sub["armed"].offset]:
            armed.append(v)
        if expire != -1:
            timers.append(v)
    wb: dict[int, int] = {}
    sub = _field_spans(txq.desc["struct"]["fields"])
    for q in range(txq.count):
        base = txq.offset + q * txq.size + sub["wb_pending"].offset
        (pending,) = struct.unpack(">I", section.data[base : base + 4])
        if pending:
            wb[q] = pending
    mac = section.fields.get("core.mac")
    rx_free: dict[int, int] = {}
    if mac is not None:

        def reg(addr: int) -> int:
            at = mac.offset + addr
            return int(struct.unpack(">I", section.data[at : at + 4])[0])

        for q in range(64):
            base = _RXQ_LO + q * _RXQ_STRIDE
            ndesc = reg(base + _RDLEN) // 16
            if not reg(base + _RXDCTL) & _RXDCTL_ENABLE or ndesc == 0:
                continue
            rx_free[q] = (reg(base + _RDT) - reg(base + _RDH)) % ndesc
    return IxgbeMigratedState(armed, timers, wb, section.size, rx_free)


# 82599 RX queue registers (queues 0..63), for reading them out of core.mac
_RXQ_LO, _RXQ_STRIDE = 0x01000, 0x40
_RDLEN, _RDH, _RDT, _RXDCTL = 0x08, 0x10, 0x18, 0x28
_RXDCTL_ENABLE = 1 << 25


# ------------------------------------------------------ migrating guest
class MigratingGuest:
    """A guest with two ports of `model` back to back (port 0 198.51.100.1 in
    the root namespace, port 1 198.51.100.2 in netns "peer") that can be
    migrated to a new QEMU again and again."""

    def __init__(self, make_vm: VMFactory, model: str, driver: str, name: str, smp: int = 4) -> None:
        macs = [mac_address(0), mac_address(1)]
        args_for = back_to_back_args(model, macs)
        vm = make_vm(name=f"{name}-0", smp=smp, args_factory=args_for)
        load_driver(vm, driver)
        devs = vm.wait_netdevs(driver, 2)[:2]
        g = Guest(vm, driver, devs, macs, vm.uptime())
        wire_back_to_back(vm, *devs)
        self._take(make_vm, g, args_for, name, smp)

    @classmethod
    def adopt(
        cls, make_vm: VMFactory, g: Guest, args_for: Callable[[Path], Sequence[str]], name: str, smp: int
    ) -> MigratingGuest:
        """A guest already running (booted `smp` vCPUs with `args_for`, by a
        VM of `make_vm`'s) whose two ports g.devs are wired back to back
        (wire_back_to_back). Its moves start QEMUs with `args_for`."""
        self = cls.__new__(cls)
        self._take(make_vm, g, args_for, name, smp)
        return self

    def _take(
        self, make_vm: VMFactory, g: Guest, args_for: Callable[[Path], Sequence[str]], name: str, smp: int
    ) -> None:
        self.make_vm = make_vm
        self.driver = g.driver
        self.name = name
        self.smp = smp
        self.macs = g.macs
        self.args_for = args_for
        self.migrations: list[MigrationResult] = []
        self.vms: list[VM] = [g.vm]  # every QEMU the guest ran in, the current one last
        self.g = g
        r = g.vm.ping(f"{WIRE_NET}.2", count=3)
        if not r.ok:
            raise GuestError(f"no traffic between the two ports:\n{r.stdout}")

    @property
    def vm(self) -> VM:
        return self.g.vm

    @property
    def ports(self) -> tuple[str, str]:
        return self.g.devs[0], self.g.devs[1]

    def stats(self) -> tuple[dict[str, int], dict[str, int]]:
        """ethtool -S of both ports."""
        a, b = self.ports
        return self.vm.ethtool_stats(a), self.vm.ethtool_stats(b, netns="peer")

    def migrate(
        self, tap: bool = False, downtime_limit_ms: int | None = None
    ) -> tuple[MigrationResult, bytes | None]:
        """Move the guest to a new QEMU; returns the result and, with `tap`,
        the tail of the stream."""
        src = self.vm
        port = free_tcp_port()
        dst = self.make_vm(
            name=f"{self.name}-{len(self.migrations) + 1}",
            smp=self.smp,
            args_factory=self.args_for,
            incoming=f"tcp:127.0.0.1:{port}",
        )
        self.vms.append(dst)
        relay = StreamTap(port) if tap else None
        uri = relay.uri if relay else f"tcp:127.0.0.1:{port}"
        result = migrate_vm(src, dst, uri, downtime_limit_ms=downtime_limit_ms)
        tail = relay.tail() if relay else None
        dst.adopt_guest(src.release)
        # keep what the source logged; then let it go
        src.shutdown(save_dmesg=False)
        self.g.vm = dst
        self.migrations.append(result)
        return result, tail


# -------------------------------------------------------- savevm / loadvm
def wait_job(vm: VM, job_id: str, timeout: float = 300) -> None:
    """Wait for a QMP job to conclude; dismiss it; raise if it failed."""
    deadline = time.monotonic() + scaled(timeout)
    while True:
        jobs = {j["id"]: j for j in vm.qmp("query-jobs")}
        job = jobs.get(job_id)
        if job is None:
            raise GuestError(f"{vm.name}: job {job_id} vanished")
        if job["status"] == "concluded":
            vm.qmp("job-dismiss", id=job_id)
            if job.get("error"):
                raise GuestError(f"{vm.name}: job {job_id} failed: {job['error']}")
            return
        if time.monotonic() > deadline or not vm.alive():
            raise GuestError(f"{vm.name}: job {job_id} not done after {scaled(timeout):.0f}s: {job}")
        time.sleep(0.2)


def add_snapshot_disk(vm: VM, node: str = "snap0", size: int = 256 << 20) -> str:
    """Create a qcow2 image in the VM's private directory through QMP
    (blockdev-create, no qemu-img needed) and add it as block node `node`,
    where snapshot-save can put the VM state. Returns the node name."""
    path = vm.sock_path(f"{node}.qcow2")
    vm.qmp(
        "blockdev-create",
        **{"job-id": f"{node}-file", "options": {"driver": "file", "filename": str(path), "size": 0}},
    )
    wait_job(vm, f"{node}-file")
    vm.qmp("blockdev-add", driver="file", filename=str(path), **{"node-name": f"{node}-file"})
    vm.qmp(
        "blockdev-create",
        **{"job-id": f"{node}-fmt", "options": {"driver": "qcow2", "file": f"{node}-file", "size": size}},
    )
    wait_job(vm, f"{node}-fmt")
    vm.qmp("blockdev-add", driver="qcow2", file=f"{node}-file", **{"node-name": node})
    return node


def snapshot_save(vm: VM, node: str, tag: str) -> float:
    """savevm (QMP snapshot-save) of the whole VM into `node`; seconds taken."""
    t0 = time.monotonic()
    vm.qmp("snapshot-save", **{"job-id": f"save-{tag}", "tag": tag, "vmstate": node, "devices": [node]})
    wait_job(vm, f"save-{tag}")
    return time.monotonic() - t0


def snapshot_load(vm: VM, node: str, tag: str) -> float:
    """loadvm (QMP snapshot-load) of snapshot `tag`; seconds taken. The VM
    runs afterwards if it ran before."""
    t0 = time.monotonic()
    vm.qmp("snapshot-load", **{"job-id": f"load-{tag}", "tag": tag, "vmstate": node, "devices": [node]})
    wait_job(vm, f"load-{tag}")
    return time.monotonic() - t0


# ---------------------------------------------------- traffic across moves
PEER = f"{WIRE_NET}.2"
# a model's downtime must stay below this (QEMU's default limit is 300 ms)
DOWNTIME_BOUND_MS = 1000
# ping -f sends at least every 10 ms while replies are missing
FLOOD_INTERVAL_MS = 10

_COUNTER = re.compile(r"(packets|bytes)$")


def running(vm: VM, pid: int) -> bool:
    return vm.run(f"kill -0 {pid}").ok


def assert_running(vm: VM, jobs: dict[str, tuple[int, str]], when: str) -> None:
    """Each background job {name: (pid, output file)} still runs."""
    for name, (pid, out) in jobs.items():
        if not running(vm, pid):
            raise AssertionError(f"{name} ended {when}:\n{vm.run(f'tail -c 3000 {out}').stdout}")


def wait_finished(vm: VM, pid: int, what: str, timeout: float) -> None:
    vm.wait_until(f"{what} in the guest to finish", lambda: not running(vm, pid), timeout, interval=1.0)


def stop(vm: VM, pid: int, what: str) -> None:
    """SIGINT a background job (iperf3 and ping then print their results)."""
    vm.run(f"kill -INT {pid}")
    wait_finished(vm, pid, what, 60)


def assert_counters_consistent(
    before: tuple[dict[str, int], dict[str, int]],
    after: tuple[dict[str, int], dict[str, int]],
    what: str,
    tolerated: frozenset[str] = frozenset(),
) -> None:
    """Packet/byte counters never go backwards, both ports moved frames,
    no error counter rose (except `tolerated` ones)."""
    for port, b4, af in zip(("port 0", "port 1"), before, after, strict=True):
        back = {k: (b4[k], af.get(k)) for k in b4 if _COUNTER.search(k) and af.get(k, -1) < b4[k]}
        assert not back, f"{port}: counters went backwards {what}: {back}"
        for k in ("rx_packets", "tx_packets"):
            assert af[k] > b4[k], f"{port}: {k} did not rise {what} ({b4[k]} -> {af[k]})"
        up = {k: v for k, v in risen(b4, af).items() if k not in tolerated}
        assert not up, f"{port}: error counters rose {what}: {up}"


def assert_quiet(mg: MigratingGuest, since: float, what: str) -> None:
    assert_clean_log(mg.g, since=since, what=what)
    for vm in mg.vms:
        assert_qemu_quiet(vm)


def flood_loss(text: str) -> tuple[int, int]:
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    if not m:
        raise GuestError(f"no ping summary:\n{text}")
    return int(m.group(1)), int(m.group(2))


def print_migration(model: str, what: str, r: MigrationResult) -> str:
    line = (
        f"{model} migration ({what}): downtime {r.downtime_ms} ms, total {r.total_ms} ms, "
        f"setup {r.setup_ms} ms, RAM transferred {r.ram.get('transferred', 0) >> 20} MiB, "
        f"dirty syncs {r.ram.get('dirty-sync-count')}"
    )
    print(line)
    return line


def ping_flood_across_migration(mg: MigratingGuest, tolerated: frozenset[str] = frozenset()) -> MigrationResult:
    """A ping flood from port 0 to port 1 across a move: no more echoes
    lost than the downtime explains, the counters consistent, nothing logged."""
    vm = mg.vm
    mark = vm.uptime()
    before = mg.stats()
    flood = background(vm, f"ping -f -q {PEER}", "/tmp/flood.txt")
    time.sleep(scaled(3))
    result, _ = mg.migrate()
    vm = mg.vm
    assert_running(vm, {"ping -f": (flood, "/tmp/flood.txt")}, "across the migration")
    time.sleep(scaled(3))
    stop(vm, flood, "ping -f")
    sent, received = flood_loss(vm.sh("cat /tmp/flood.txt"))
    lost = sent - received
    allowed = math.ceil(result.downtime_ms / FLOOD_INTERVAL_MS) + 3
    assert received > 100, f"ping flood: only {received} of {sent} answered"
    assert (
        lost <= allowed
    ), f"ping flood: {lost} of {sent} lost, more than a downtime of {result.downtime_ms} ms explains ({allowed})"
    assert result.downtime_ms < DOWNTIME_BOUND_MS
    assert_counters_consistent(before, mg.stats(), "across migration under a ping flood", tolerated)
    assert_quiet(mg, mark, " across migration under a ping flood")
    return result
