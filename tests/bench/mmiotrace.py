"""Register accesses in a QEMU debug log (-D) with the memory_region_ops_*
trace events on, and which of them would exit to userspace under KVM.

Under KVM every read of a device's BAR exits to QEMU; so does every write,
unless it lies in a range the device registered as coalesced MMIO (KVM then
queues it and the vCPU goes on). The emulated 82599 registers its ranges
at realize and says so with the ixgbe_coalesced_zone trace event (enable it
on the command line: `-trace ixgbe_coalesced_zone`); QEMU's igb and e1000e
register none. Under TCG nothing is coalesced, every access reaches the
device model and is traced, so the same stream of accesses, classified by
the device's ranges, gives the count KVM would exit on.

Used by the DPDK benchmark (tests/bench/dpdkbench.py) and the guest
benchmark (tests/bench/nicbench.py). The one piece with I/O is
mmio_traced(), which turns the trace on and off around a stretch of a
running VM and reads what it left in the log; the rest is pure and tested
by tests/bench/test_mmiotrace.py.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

ZONE_EVENT = "ixgbe_coalesced_zone"
MMIO_EVENTS = ("memory_region_ops_read", "memory_region_ops_write")

# region name -> [(offset in the region, size)], sorted
Zones = dict[str, list[tuple[int, int]]]

_ACCESS = re.compile(
    r"memory_region_ops_(read|write) cpu -?\d+ mr \S+ addr (0x[0-9a-fA-F]+) value \S+ size \d+ name '([^']*)'"
)
_ZONE = re.compile(rf"{ZONE_EVENT} (\S+): writes to (0x[0-9a-fA-F]+)\+(0x[0-9a-fA-F]+) may be coalesced")


@dataclasses.dataclass
class MmioCounts:
    """MMIO accesses seen in a QEMU log with the memory_region_ops_* traces."""

    by_region: dict[str, dict[str, int]]  # region name -> {"read": n, "write": n}
    by_register: dict[tuple[str, str, int], int]  # (region, "read"/"write", offset) -> n

    def total(self, region: str, op: str) -> int:
        return self.by_region.get(region, {}).get(op, 0)

    def at(self, region: str, op: str, offsets: Sequence[int]) -> int:
        return sum(self.by_register.get((region, op, off), 0) for off in offsets)


def count_mmio(text: str, bar_sizes: Mapping[str, int] | None = None) -> MmioCounts:
    """Count the accesses per region and register. Under TCG the trace gives
    guest-physical addresses; for the regions in `bar_sizes` (name -> size of
    the BAR, whose base is aligned to its size) registers are counted by
    their offset in the BAR, so those of several ports add up."""
    sizes = bar_sizes or {}
    by_region: dict[str, dict[str, int]] = {}
    by_register: dict[tuple[str, str, int], int] = {}
    for op, addr, name in _ACCESS.findall(text):
        r = by_region.setdefault(name, {"read": 0, "write": 0})
        r[op] += 1
        off = int(addr, 16)
        if name in sizes:
            off %= sizes[name]
        key = (name, op, off)
        by_register[key] = by_register.get(key, 0) + 1
    return MmioCounts(by_region, by_register)


class TracedVM(Protocol):
    """What mmio_traced() needs of a VM: its -D log and QMP."""

    debug_log: Path

    def qmp(self, command: str, **args: Any) -> Any: ...


@dataclasses.dataclass(frozen=True)
class TraceLog:
    """Where a traced stretch starts in a VM's -D log."""

    path: Path
    start: int

    def read(self) -> tuple[str, str]:
        """The log before the stretch (what QEMU logged at start-up, the
        coalesced ranges among it) and from its start on (the trace)."""
        with self.path.open("rb") as fh:
            head = fh.read(self.start).decode(errors="replace")
            text = fh.read().decode(errors="replace")
        return head, text


@contextlib.contextmanager
def mmio_traced(vm: TracedVM) -> Iterator[TraceLog]:
    """The memory_region_ops_* trace on for the body of the `with`, off
    again however it ends; read the log with the TraceLog afterwards."""
    log = TraceLog(vm.debug_log, vm.debug_log.stat().st_size if vm.debug_log.exists() else 0)
    for ev in MMIO_EVENTS:
        vm.qmp("trace-event-set-state", name=ev, enable=True)
    try:
        yield log
    finally:
        for ev in MMIO_EVENTS:
            vm.qmp("trace-event-set-state", name=ev, enable=False)


# ------------------------------------------------------------ coalescing
def parse_zones(text: str) -> Zones:
    """The coalesced ranges the device announced (ixgbe_coalesced_zone
    lines, with or without the log backend's "pid@time:" prefix), per region
    name; each range once, however many ports or VFs announced it."""
    found: dict[str, set[tuple[int, int]]] = {}
    for region, base, size in _ZONE.findall(text):
        found.setdefault(region, set()).add((int(base, 16), int(size, 16)))
    return {region: sorted(ranges) for region, ranges in found.items()}


def in_zone(zones: Mapping[str, Sequence[tuple[int, int]]], region: str, offset: int) -> bool:
    """Whether a write at `offset` of `region` lies in one of its coalesced ranges."""
    return any(base <= offset < base + size for base, size in zones.get(region, ()))


def would_exit(zones: Mapping[str, Sequence[tuple[int, int]]], region: str, op: str, offset: int) -> bool:
    """Under KVM: every read exits, a write exits unless it may be coalesced."""
    return op != "write" or not in_zone(zones, region, offset)


def kvm_exits(counts: MmioCounts, zones: Mapping[str, Sequence[tuple[int, int]]], region: str) -> int:
    """The accesses to `region` that would exit to userspace under KVM.
    Offsets must be those in the region (count_mmio with its BAR size)."""
    return sum(
        n for (name, op, off), n in counts.by_register.items() if name == region and would_exit(zones, name, op, off)
    )


def nic_figures(
    counts: MmioCounts, zones: Mapping[str, Sequence[tuple[int, int]]], region: str, packets: int
) -> dict[str, float]:
    """Per packet: the NIC's register reads, writes, and the accesses that
    would exit under KVM (reads plus the writes outside the coalesced
    ranges). `packets` must be positive."""
    return {
        "nic_reads_per_pkt": counts.total(region, "read") / packets,
        "nic_writes_per_pkt": counts.total(region, "write") / packets,
        "nic_exits_per_pkt": kvm_exits(counts, zones, region) / packets,
    }


def top_registers(
    counts: MmioCounts,
    zones: Mapping[str, Sequence[tuple[int, int]]],
    packets: int,
    regions: Collection[str] | None = None,
    n: int = 8,
) -> list[dict[str, Any]]:
    """The `n` registers accessed most (of `regions`, default all), per
    packet, and whether each access would exit under KVM."""
    chosen = [kv for kv in counts.by_register.items() if regions is None or kv[0][0] in regions]
    top = sorted(chosen, key=lambda kv: (-kv[1], kv[0]))[:n]
    return [
        {
            "region": name,
            "op": op,
            "offset": f"0x{off:05x}",
            "per_pkt": c / packets,
            "exits": would_exit(zones, name, op, off),
        }
        for (name, op, off), c in top
    ]


def format_top(entries: Sequence[Mapping[str, Any]], region: str = "") -> str:
    """top_registers() on one line: "write 0x06018 0.52, write 0x01018 0.25
    (coalesced), hpet read 0x000f0 0.01, ...", naming the region of the
    registers that are not in `region`."""
    return ", ".join(
        ("" if e["region"] == region else f"{e['region']} ")
        + f"{e['op']} {e['offset']} {e['per_pkt']:.3g}"
        + ("" if e["exits"] else " (coalesced)")
        for e in entries
    )
