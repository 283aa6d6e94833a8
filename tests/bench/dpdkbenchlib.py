"""The pure parts of the DPDK forwarding benchmark (tests/bench/dpdkbench.py):
its options, testpmd's port statistics (read by ixgbe_testlib.testpmd's
parser, shared with the e2e tests), the figures of one measured window,
the MMIO figures of a traced window (counted by tests/bench/mmiotrace.py),
the tables and the verdict.

No VM, no I/O: everything here is tested by tests/bench/test_dpdkbenchlib.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchargs import check_ranges, choose_models
from benchlib import BenchError, Row, Summary, ratio, ratio_table, summarize
from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.testpmd import PortStats, parse_port_stats
from mmiotrace import MmioCounts, nic_figures, top_registers

SUBJECT = "ixgbe"
TARGET_RATIO = 2.0  # the performance goal: ixgbe forwards at least twice igb's packets per second
SKEW = 0.01  # the share of a window's packets its two ports' counters may disagree by beyond those in flight
BURST = 32  # testpmd's default burst: packets per rx/tx burst and per tx_first burst


@dataclasses.dataclass(frozen=True)
class Model:
    name: str  # label in tables
    device: str  # QEMU -device
    kernel_driver: str  # the guest driver that has the ports before DPDK takes them
    pmd: str  # DPDK's poll-mode driver, as testpmd's probe line names it
    # offsets in BAR 0 of queue 0's RX and TX tail registers (the doorbells
    # the PMD writes); the 82576 and 82574 also answer at their legacy offsets
    rx_tail: tuple[int, ...]
    tx_tail: tuple[int, ...]
    mmio_region: str  # the name of BAR 0's MemoryRegion (memory_region_ops_* traces)
    bar_size: int = 128 * 1024  # BAR 0's size (its base is aligned to it)


MODELS = (
    Model("ixgbe", "ixgbe", "ixgbe", "net_ixgbe", (0x01018,), (0x06018,), "ixgbe-mmio"),
    Model("igb", "igb", "igb", "net_e1000_igb", (0x0C018, 0x02818), (0x0E018, 0x03818), "igb-mmio"),
    Model("e1000e", "e1000e", "e1000e", "net_e1000_em", (0x02818,), (0x03818,), "e1000e-mmio"),
)
DEFAULT_MODELS = ("ixgbe", "igb")


# ----------------------------------------------------------------- options
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="dpdkbench",
        description="DPDK testpmd io forwarding between two ports of one NIC model wired back to back, "
        "ixgbe against igb (and e1000e) in one run: packets per second and QEMU CPU per packet.",
    )
    p.add_argument("--quick", action="store_true", help="3 windows of 3 s per model instead of 5 of 10 s")
    p.add_argument("--reps", type=int, help="measured windows per model (default 5, quick 3)")
    p.add_argument("--seconds", type=int, help="length of each window in s (default 10, quick 3)")
    p.add_argument(
        "--warmup", type=int, help="s of forwarding after each resume, before the window (default 3, quick 2)"
    )
    p.add_argument(
        "--tx-bursts",
        type=int,
        default=4,
        help=f"bursts of {BURST} packets each port sends at `start tx_first` (the packets that then circulate; "
        "default 4: 256 in flight)",
    )
    p.add_argument(
        "--trace-seconds",
        type=int,
        help="length of the extra window per model with QEMU's MMIO trace on (register accesses per packet); "
        "0 for none (default 3, quick 2)",
    )
    p.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated subset of: " + ", ".join(m.name for m in MODELS) + " (ixgbe always included)",
    )
    p.add_argument("--out-dir", help="where results go (default $BUILD_DIR/bench/dpdk)")
    p.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)  # validate, then exit
    args = p.parse_args(argv)
    args.reps = args.reps if args.reps is not None else (3 if args.quick else 5)
    args.seconds = args.seconds if args.seconds is not None else (3 if args.quick else 10)
    args.warmup = args.warmup if args.warmup is not None else (2 if args.quick else 3)
    args.trace_seconds = args.trace_seconds if args.trace_seconds is not None else (2 if args.quick else 3)
    check_ranges(
        p,
        args,
        ("reps", 1, 50),
        ("seconds", 1, 300),
        ("warmup", 0, 120),
        ("tx_bursts", 1, 16),
        ("trace_seconds", 0, 60),
    )
    known = {m.name: m for m in MODELS}
    chosen = choose_models(p, args.models, list(known), SUBJECT)
    if len(chosen) < 2:
        p.error("--models needs a model to compare ixgbe with")
    args.models = [known[n] for n in chosen]
    return args


def in_flight(tx_bursts: int, ports: int = 2) -> int:
    """Packets that circulate after `start tx_first N`: N bursts from each port."""
    return ports * tx_bursts * BURST


# ----------------------------------------------------------- testpmd output
def port_stats(text: str) -> dict[int, PortStats]:
    """`show port stats all` with testpmd's rates, which window_figures()
    reports. Statistics that cannot be read spoil the window (BenchError),
    not the guest."""
    try:
        return parse_port_stats(text, rates=True)
    except GuestError as exc:
        raise BenchError(str(exc)) from exc


def parse_probed(text: str, pmd: str) -> list[str]:
    """The PCI addresses testpmd's start-up probed with the given PMD."""
    return re.findall(rf"EAL: Probe PCI driver: {re.escape(pmd)} \([0-9a-fA-F:]+\) device: (\S+)", text)


# ---------------------------------------------------------- one window
def window_figures(
    before: Mapping[int, PortStats],
    after: Mapping[int, PortStats],
    seconds: float,
    cpu: Mapping[str, float] | None = None,
    flight: int = 0,
) -> dict[str, float]:
    """Figures of one window between two `show port stats all` of ports 0
    and 1 (wired to each other, testpmd forwarding 0 -> 1 and 1 -> 0):

    - fwd_pps: packets the two ports received (each one testpmd forwards)
      per second of the window;
    - tx_pps: packets they sent, per second;
    - testpmd_pps: testpmd's own Rx-pps of both ports at the window's end
      (its own clock, over the same interval);
    - crosscheck: the largest difference, relative to fwd packets, between
      what one port sent and what the other received over the window (the
      wire loses nothing; up to `flight` packets may be on their way, and
      testpmd reads the two ports' counters one after the other while the
      forwarding goes on, a few ms apart under TCG: a difference of up to
      `flight` + SKEW of the window's packets passes);
    - lost: missed, error and no-buffer packets of both ports;
    - with `cpu` (seconds of QEMU CPU, total/main/vcpu): us_per_pkt and
      main_us_per_pkt.

    Raises BenchError for a window that measured nothing usable."""
    if seconds <= 0:
        raise BenchError(f"window of {seconds} s")
    for p in (0, 1):
        if p not in before or p not in after:
            raise BenchError(f"port {p} missing from testpmd's statistics")
    d = {}
    for p in (0, 1):
        b, a = before[p], after[p]
        fields = ("rx_packets", "tx_packets", "rx_missed", "rx_errors", "rx_nombuf", "tx_errors")
        delta = {f: getattr(a, f) - getattr(b, f) for f in fields}
        if any(v < 0 for v in delta.values()):
            raise BenchError(f"port {p}: counters went backwards: {b} -> {a}")
        d[p] = delta
    rx = d[0]["rx_packets"] + d[1]["rx_packets"]
    tx = d[0]["tx_packets"] + d[1]["tx_packets"]
    if rx == 0:
        raise BenchError("no packets forwarded in the window")
    pps0, pps1 = after[0].rx_pps, after[1].rx_pps
    if pps0 is None or pps1 is None:
        raise BenchError("no Rx-pps in testpmd's statistics at the window's end")
    worst = max(abs(d[0]["tx_packets"] - d[1]["rx_packets"]), abs(d[1]["tx_packets"] - d[0]["rx_packets"]))
    if worst > flight + SKEW * rx:
        raise BenchError(
            f"the ports' counters disagree by {worst} packets (more than the {flight} in flight "
            f"+ {100 * SKEW:.0f}% of {rx}): "
            f"port 0 sent {d[0]['tx_packets']}, port 1 received {d[1]['rx_packets']}; "
            f"port 1 sent {d[1]['tx_packets']}, port 0 received {d[0]['rx_packets']}"
        )
    lost = sum(d[p][f] for p in (0, 1) for f in ("rx_missed", "rx_errors", "rx_nombuf", "tx_errors"))
    out = {
        "packets": float(rx),
        "seconds": float(seconds),
        "fwd_pps": rx / seconds,
        "tx_pps": tx / seconds,
        "testpmd_pps": float(pps0 + pps1),
        "crosscheck": worst / rx,
        "lost": float(lost),
    }
    if cpu is not None:
        out["cpu_pct"] = 100.0 * cpu["total"] / seconds
        out["us_per_pkt"] = 1e6 * cpu["total"] / rx
        out["main_us_per_pkt"] = 1e6 * cpu.get("main", 0.0) / rx
        out["vcpu_us_per_pkt"] = 1e6 * cpu.get("vcpu", 0.0) / rx
    return out


# ----------------------------------------------------------- MMIO traces
def mmio_figures(
    counts: MmioCounts, model: Model, packets: int, zones: Mapping[str, Sequence[tuple[int, int]]] | None = None
) -> dict[str, Any]:
    """Per forwarded packet: accesses to the NIC's BAR 0 (reads, writes,
    those that would exit under KVM given the device's coalesced `zones`,
    tail writes), and to every region (the guest's timers, APIC, ... which
    under TCG are as slow a path as the NIC's registers)."""
    if packets <= 0:
        raise BenchError("no packets forwarded in the trace window")
    reg = model.mmio_region
    z = zones or {}
    out: dict[str, Any] = {
        "packets": packets,
        **nic_figures(counts, z, reg, packets),
        "rx_tail_writes_per_pkt": counts.at(reg, "write", model.rx_tail) / packets,
        "tx_tail_writes_per_pkt": counts.at(reg, "write", model.tx_tail) / packets,
        "all_mmio_per_pkt": sum(r["read"] + r["write"] for r in counts.by_region.values()) / packets,
    }
    out["top_registers"] = top_registers(counts, z, packets)
    out["by_region"] = counts.by_region
    out["coalesced_zones"] = {reg: [[base, size] for base, size in z.get(reg, ())]}
    return out


# ---------------------------------------------------------------- tables
@dataclasses.dataclass(frozen=True)
class Metric:
    figure: str
    label: str
    scale: float = 1.0


METRICS = (
    Metric("fwd_pps", "io forwarding, kpps (both directions)", 1e-3),
    Metric("testpmd_pps", "  testpmd's own Rx-pps, kpps", 1e-3),
    Metric("us_per_pkt", "QEMU CPU, us/packet"),
    Metric("main_us_per_pkt", "  main loop, us/packet"),
    Metric("vcpu_us_per_pkt", "  vCPU threads, us/packet"),
    Metric("cpu_pct", "QEMU CPU, % of one host CPU"),
)
TRACE_METRICS = (
    Metric("nic_writes_per_pkt", "NIC register writes/packet"),
    Metric("nic_reads_per_pkt", "NIC register reads/packet"),
    Metric("nic_exits_per_pkt", "NIC accesses that would exit under KVM/packet"),
    Metric("tx_tail_writes_per_pkt", "  TX tail writes/packet"),
    Metric("rx_tail_writes_per_pkt", "  RX tail writes/packet"),
    Metric("all_mmio_per_pkt", "all MMIO accesses/packet"),
    Metric("trace_fwd_pps", "kpps with the trace on", 1e-3),
)


def summaries(windows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Summary]]:
    """figure -> model -> Summary over the good windows ({"model", "ok",
    "figures"} each)."""
    vals: dict[str, dict[str, list[float]]] = {}
    for w in windows:
        if not w["ok"]:
            continue
        for fig, v in w["figures"].items():
            vals.setdefault(fig, {}).setdefault(w["model"], []).append(float(v))
    return {f: {m: summarize(v) for m, v in per.items()} for f, per in vals.items()}


def _rows(metrics: Sequence[Metric], summ: Mapping[str, Mapping[str, Summary]], models: Sequence[str]) -> list[Row]:
    rows = []
    for m in metrics:
        per = summ.get(m.figure, {})
        values: dict[str, Summary | None] = {}
        for model in models:
            s = per.get(model)
            values[model] = None if s is None else Summary(s.n, s.median * m.scale, s.low * m.scale, s.high * m.scale)
        rows.append(Row(m.label, values))
    return rows


def render(
    summ: Mapping[str, Mapping[str, Summary]],
    traces: Mapping[str, Mapping[str, Any]],
    models: Sequence[str],
) -> str:
    """The measured windows' table, then (if any) the trace window's."""
    out = [
        ratio_table(
            "== DPDK testpmd io forwarding, two ports back to back", _rows(METRICS, summ, models), models, SUBJECT
        )
    ]
    if traces:
        tsumm = {
            m.figure: {model: summarize([t[m.figure]]) for model, t in traces.items() if m.figure in t}
            for m in TRACE_METRICS
        }
        out.append(
            ratio_table(
                "== per packet, one window with QEMU's memory_region_ops_* trace on (slower: only the counts matter)",
                _rows(TRACE_METRICS, tsumm, models),
                models,
                SUBJECT,
            )
        )
    return "\n\n".join(out)


def verdict(summ: Mapping[str, Mapping[str, Summary]], other: str = "igb") -> tuple[float | None, str]:
    """The goal's ratio ixgbe/other of the forwarding rate (medians), its
    range (ixgbe's min / other's max .. ixgbe's max / other's min), and a
    line saying whether it reaches TARGET_RATIO."""
    per = summ.get("fwd_pps", {})
    mine, theirs = per.get(SUBJECT), per.get(other)
    if mine is None or theirs is None:
        return None, f"goal ixgbe/{other} >= {TARGET_RATIO:.1f}x: not measured"
    r = ratio(mine.median, theirs.median)
    lo, hi = ratio(mine.low, theirs.high), ratio(mine.high, theirs.low)
    if r is None:
        return None, f"goal ixgbe/{other} >= {TARGET_RATIO:.1f}x: undefined ({other} forwarded nothing)"
    span = f" (range {lo:.2f}-{hi:.2f})" if lo is not None and hi is not None else ""
    if r >= TARGET_RATIO:
        return r, f"goal ixgbe/{other} >= {TARGET_RATIO:.1f}x: reached, {r:.2f}x{span}"
    return r, (
        f"goal ixgbe/{other} >= {TARGET_RATIO:.1f}x: NOT reached, {r:.2f}x{span}; "
        f"ixgbe needs {100 * (TARGET_RATIO / r - 1):.0f}% more"
    )


def ratios(summ: Mapping[str, Mapping[str, Summary]], models: Sequence[str]) -> dict[str, dict[str, float | None]]:
    out: dict[str, dict[str, float | None]] = {}
    for fig, per in summ.items():
        mine = per.get(SUBJECT)
        out[fig] = {
            f"{SUBJECT}/{o}": (ratio(mine.median, per[o].median) if mine is not None and o in per else None)
            for o in models
            if o != SUBJECT
        }
    return out
