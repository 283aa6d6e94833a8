"""Unit tests of the MMIO trace counting and the KVM exit classification
(mmiotrace), on log lines as QEMU's log trace backend writes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mmiotrace import (
    count_mmio,
    format_top,
    in_zone,
    kvm_exits,
    mmio_traced,
    nic_figures,
    parse_zones,
    top_registers,
    would_exit,
)

# the -D log of `-M q35 -device ixgbe -trace ixgbe_coalesced_zone` (this
# QEMU's log backend, no timestamps): one line per range at realize; a
# second port and a VF announce theirs too
ZONES_LOG = """\
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x00820+0x60 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x01000+0x1000 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x0d000+0x1000 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x12300+0xa0 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x00820+0x60 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x01000+0x1000 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x0d000+0x1000 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x12300+0xa0 may be coalesced
guest_errors: something unrelated
4242@1700000000.000001:ixgbe_coalesced_zone ixgbevf-mmio: writes to 0x00820+0xc may be coalesced
4242@1700000000.000002:ixgbe_coalesced_zone ixgbevf-mmio: writes to 0x01000+0x200 may be coalesced
"""

PF_ZONES = [(0x820, 0x60), (0x1000, 0x1000), (0xD000, 0x1000), (0x12300, 0xA0)]

# two ports' BARs (0xfe000000, 0xfe020000): TX tail (0x06018) writes exit,
# RX tail (0x01018) and EITR (0x00820) writes do not, reads always do;
# igb's accesses are in another region and all exit
ACCESSES = """\
memory_region_ops_write cpu 1 mr 0x55d0 addr 0xfe006018 value 0x1f size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 1 mr 0x55d0 addr 0xfe001018 value 0x1f size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 0 mr 0x55f0 addr 0xfe026018 value 0x3f size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 0 mr 0x55f0 addr 0xfe021018 value 0x3f size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 0 mr 0x55f0 addr 0xfe020820 value 0x3f size 4 name 'ixgbe-mmio'
memory_region_ops_read cpu 1 mr 0x55d0 addr 0xfe001028 value 0x1 size 4 name 'ixgbe-mmio'
memory_region_ops_read cpu 1 mr 0x55d0 addr 0xfe000808 value 0x0 size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 1 mr 0x55d0 addr 0xfe000880 value 0x0 size 4 name 'ixgbe-mmio'
memory_region_ops_read cpu 0 mr 0x55e0 addr 0xfed000f0 value 0x0 size 4 name 'hpet'
memory_region_ops_write cpu 1 mr 0x5600 addr 0xfe103818 value 0x9 size 4 name 'igb-mmio'
memory_region_ops_write cpu 1 mr 0x5600 addr 0xfe102818 value 0x9 size 4 name 'igb-mmio'
"""
BARS = {"ixgbe-mmio": 0x20000, "igb-mmio": 0x20000}


def test_parse_zones_of_a_recorded_log() -> None:
    zones = parse_zones(ZONES_LOG)
    # each range once, sorted, whichever port announced it; prefixed lines too
    assert zones == {"ixgbe-mmio": PF_ZONES, "ixgbevf-mmio": [(0x820, 0xC), (0x1000, 0x200)]}
    assert parse_zones("memory_region_ops_read cpu 0 ...\n") == {}


def test_in_zone_bounds() -> None:
    zones = {"ixgbe-mmio": PF_ZONES}
    assert in_zone(zones, "ixgbe-mmio", 0x1000)
    assert in_zone(zones, "ixgbe-mmio", 0x1FFC)
    assert not in_zone(zones, "ixgbe-mmio", 0x2000)
    assert not in_zone(zones, "ixgbe-mmio", 0x81C)
    assert in_zone(zones, "ixgbe-mmio", 0x87C)
    assert not in_zone(zones, "ixgbe-mmio", 0x880)
    assert not in_zone(zones, "igb-mmio", 0x1000)


def test_would_exit_reads_always_writes_outside_zones() -> None:
    zones = {"ixgbe-mmio": PF_ZONES}
    assert would_exit(zones, "ixgbe-mmio", "read", 0x1018)
    assert not would_exit(zones, "ixgbe-mmio", "write", 0x1018)
    assert would_exit(zones, "ixgbe-mmio", "write", 0x6018)
    assert would_exit(zones, "igb-mmio", "write", 0x1018)


def test_kvm_exits_of_a_recorded_trace() -> None:
    counts = count_mmio(ACCESSES, BARS)
    zones = parse_zones(ZONES_LOG)
    # ixgbe: 2 TDT writes + 2 reads + 1 EIMS-range write (0x880) exit; 2 RDT and 1 EITR writes do not
    assert counts.total("ixgbe-mmio", "write") == 6
    assert counts.total("ixgbe-mmio", "read") == 2
    assert kvm_exits(counts, zones, "ixgbe-mmio") == 5
    # without the zones (a model that registers none) every access exits
    assert kvm_exits(counts, {}, "ixgbe-mmio") == 8
    assert kvm_exits(counts, zones, "igb-mmio") == 2
    assert kvm_exits(counts, zones, "e1000e-mmio") == 0
    # registers are counted at their offset in the BAR: both ports' TDT add up
    assert counts.at("ixgbe-mmio", "write", (0x6018,)) == 2


def test_nic_figures_per_packet() -> None:
    counts = count_mmio(ACCESSES, BARS)
    f = nic_figures(counts, parse_zones(ZONES_LOG), "ixgbe-mmio", 10)
    assert f == {"nic_reads_per_pkt": 0.2, "nic_writes_per_pkt": 0.6, "nic_exits_per_pkt": 0.5}
    g = nic_figures(counts, parse_zones(ZONES_LOG), "igb-mmio", 4)
    assert g == {"nic_reads_per_pkt": 0.0, "nic_writes_per_pkt": 0.5, "nic_exits_per_pkt": 0.5}


def test_top_registers_and_their_line() -> None:
    counts = count_mmio(ACCESSES, BARS)
    zones = parse_zones(ZONES_LOG)
    top = top_registers(counts, zones, 4, ["ixgbe-mmio"], n=3)
    assert top == [
        {"region": "ixgbe-mmio", "op": "write", "offset": "0x01018", "per_pkt": 0.5, "exits": False},
        {"region": "ixgbe-mmio", "op": "write", "offset": "0x06018", "per_pkt": 0.5, "exits": True},
        {"region": "ixgbe-mmio", "op": "read", "offset": "0x00808", "per_pkt": 0.25, "exits": True},
    ]
    # most accessed first (2 TDT, 2 RDT writes), then by region, op, offset; every region without a filter
    everything = top_registers(counts, zones, 2)
    assert [(e["region"], e["op"], e["offset"]) for e in everything[:3]] == [
        ("ixgbe-mmio", "write", "0x01018"),
        ("ixgbe-mmio", "write", "0x06018"),
        ("hpet", "read", "0xfed000f0"),
    ]
    assert [e["exits"] for e in everything[:2]] == [False, True]
    assert len(everything) == 8
    assert format_top(everything[:3], "ixgbe-mmio") == (
        "write 0x01018 1 (coalesced), write 0x06018 1, hpet read 0xfed000f0 0.5"
    )


class LoggingVM:
    """A stand-in for a running VM: its -D log is a file the test writes,
    as QEMU would while the trace is on, and its QMP calls are recorded."""

    def __init__(self, log: Path) -> None:
        self.debug_log = log
        self.calls: list[tuple[str, str, bool]] = []

    def qmp(self, command: str, **args: Any) -> Any:
        self.calls.append((command, args["name"], args["enable"]))
        if args["enable"] and args["name"] == "memory_region_ops_write":
            with self.debug_log.open("a") as fh:
                fh.write("traced\n")
        return {}


def test_mmio_traced_splits_the_log_and_turns_the_trace_off(tmp_path: Path) -> None:
    vm = LoggingVM(tmp_path / "qemu-debug.log")
    vm.debug_log.write_text(ZONES_LOG)
    with pytest.raises(RuntimeError):
        with mmio_traced(vm) as trace:
            raise RuntimeError("the workload failed")
    on = [("trace-event-set-state", ev, True) for ev in ("memory_region_ops_read", "memory_region_ops_write")]
    off = [(c, ev, False) for c, ev, _ in on]
    assert vm.calls == on + off
    head, text = trace.read()
    assert head == ZONES_LOG
    assert text == "traced\n"
    assert parse_zones(head)["ixgbe-mmio"][0] == (0x00820, 0x60)


def test_mmio_traced_on_a_vm_without_a_log_yet(tmp_path: Path) -> None:
    vm = LoggingVM(tmp_path / "qemu-debug.log")
    with mmio_traced(vm) as trace:
        pass
    assert trace.read() == ("", "traced\n")
