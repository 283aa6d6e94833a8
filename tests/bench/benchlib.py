"""Pure parts of the NIC benchmark: statistics, /proc parsing, the guest
snapshot format, per-sample figures and the ratio tables.

Nothing here starts a process or touches a VM, so all of it is unit-tested
(tests/bench/test_benchlib.py). The runner that boots guests is nicbench.py.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import platform
import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


class BenchError(Exception):
    """Bad input, or a measurement that cannot be interpreted."""


# ------------------------------------------------------------- statistics
@dataclasses.dataclass(frozen=True)
class Summary:
    """Median and spread of the samples of one figure."""

    n: int
    median: float
    low: float  # smallest sample
    high: float  # largest sample

    @property
    def spread_pct(self) -> float:
        """(high - low) relative to the median, in percent (0 for one sample)."""
        if self.n < 2 or self.median == 0:
            return 0.0
        return 100.0 * (self.high - self.low) / abs(self.median)

    def as_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n,
            "median": self.median,
            "min": self.low,
            "max": self.high,
            "spread_pct": self.spread_pct,
        }


def summarize(values: Iterable[float]) -> Summary:
    vals = [float(v) for v in values]
    if not vals:
        raise BenchError("no samples to summarize")
    bad = [v for v in vals if not math.isfinite(v)]
    if bad:
        raise BenchError(f"non-finite sample values: {bad}")
    return Summary(len(vals), statistics.median(vals), min(vals), max(vals))


def ratio(numerator: float, denominator: float) -> float | None:
    """numerator / denominator, or None when it is undefined."""
    if denominator == 0 or not math.isfinite(numerator) or not math.isfinite(denominator):
        return None
    return numerator / denominator


# ---------------------------------------------------------- /proc parsing
def parse_proc_interrupts(text: str) -> dict[int, int]:
    """/proc/interrupts -> {IRQ number: count summed over all CPUs}.

    Only the numbered lines (device interrupts) are returned; the per-CPU
    columns are as many as the header names CPUs. Lines with fewer count
    columns (a line cut short) are an error.
    """
    lines = text.splitlines()
    if not lines or not lines[0].split() or not all(c.startswith("CPU") for c in lines[0].split()):
        raise BenchError(f"not /proc/interrupts output (no CPU header): {text[:200]!r}")
    ncpu = len(lines[0].split())
    out: dict[int, int] = {}
    for line in lines[1:]:
        m = re.match(r"^\s*(\d+):(.*)$", line)
        if not m:
            continue
        cols = m.group(2).split()
        counts = cols[:ncpu]
        if len(counts) < ncpu or not all(c.isdigit() for c in counts):
            raise BenchError(f"IRQ line with fewer than {ncpu} counts: {line!r}")
        out[int(m.group(1))] = sum(int(c) for c in counts)
    return out


@dataclasses.dataclass(frozen=True)
class TaskStat:
    tid: int
    comm: str
    utime: int  # clock ticks
    stime: int  # clock ticks

    @property
    def ticks(self) -> int:
        return self.utime + self.stime


def parse_task_stat(text: str) -> TaskStat:
    """One /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat line.

    The command name is in parentheses and may itself contain spaces and
    parentheses ("CPU 0/TCG", "a) b"), so it ends at the LAST ')'.
    utime and stime are fields 14 and 15 (1-based).
    """
    text = text.strip()
    open_, close = text.find("("), text.rfind(")")
    if open_ < 1 or close < open_:
        raise BenchError(f"not a /proc stat line: {text[:120]!r}")
    try:
        tid = int(text[:open_].strip())
    except ValueError:
        raise BenchError(f"not a /proc stat line (pid): {text[:120]!r}") from None
    rest = text[close + 1 :].split()
    # rest[0] is field 3 (state): field N is rest[N - 3]
    if len(rest) < 13:
        raise BenchError(f"/proc stat line too short: {text[:120]!r}")
    try:
        utime, stime = int(rest[11]), int(rest[12])
    except ValueError:
        raise BenchError(f"/proc stat line with non-numeric utime/stime: {text[:120]!r}") from None
    return TaskStat(tid, text[open_ + 1 : close], utime, stime)


THREAD_CLASSES = ("main", "vcpu", "other")


def thread_class(pid: int, task: TaskStat) -> str:
    """Which part of QEMU a thread is (with -name ...,debug-threads=on):
    "main" (the main loop: backends such as slirp and sockets, timers, device
    work that runs there), "vcpu" ("CPU n/TCG", "CPU n/KVM", or "ALL CPUs/TCG"
    when one thread runs every vCPU), or "other"
    (RCU, thread pool workers, ...)."""
    if task.tid == pid:
        return "main"
    if re.match(r"^(CPU \d+|ALL CPUs)/", task.comm):  # "ALL CPUs/TCG": single-threaded TCG
        return "vcpu"
    return "other"


@dataclasses.dataclass(frozen=True)
class CpuSnapshot:
    """CPU time of a QEMU process at one moment, in clock ticks."""

    pid: int
    total: int  # /proc/<pid>/stat: every thread, including ones that ended
    tasks: dict[int, TaskStat]
    wall: float  # time.monotonic() when taken
    host_busy: int = 0  # busy ticks of all host CPUs (/proc/stat), for context


def cpu_delta(before: CpuSnapshot, after: CpuSnapshot, clk_tck: int) -> dict[str, float]:
    """Seconds of CPU used between two snapshots: total and per thread class.

    Threads that appeared count from zero. The total comes from the process
    line, which also keeps the time of threads that ended, so "other" is what
    the total has beyond main and vcpu (never below zero: the per-thread and
    per-process lines are read a moment apart).
    """
    if before.pid != after.pid:
        raise BenchError(f"CPU snapshots of different processes ({before.pid}, {after.pid})")
    if clk_tck <= 0:
        raise BenchError(f"bad clock tick rate {clk_tck}")
    if after.total < before.total:
        raise BenchError(f"process CPU time went backwards ({before.total} -> {after.total})")
    by_class = {c: 0 for c in THREAD_CLASSES}
    for tid, task in after.tasks.items():
        prev = before.tasks.get(tid)
        used = task.ticks - (prev.ticks if prev is not None and prev.comm == task.comm else 0)
        by_class[thread_class(after.pid, task)] += max(0, used)
    total = after.total - before.total
    named = by_class["main"] + by_class["vcpu"]
    by_class["other"] = max(by_class["other"], total - named, 0)
    out = {c: by_class[c] / clk_tck for c in THREAD_CLASSES}
    out["total"] = total / clk_tck
    out["wall"] = after.wall - before.wall
    out["host_busy"] = max(0, after.host_busy - before.host_busy) / clk_tck
    return out


# ----------------------------------------------------- guest snapshot format
# At each end of a sample the guest prints (nicbench.py's SNAPSHOT_SH):
#
#   @@interrupts
#   <the guest's /proc/interrupts>
#   @@netdev <netns>
#   </proc/net/dev as seen from that network namespace>
#   ... (one @@netdev section per namespace)
#   @@stat
#   <the first line of the guest's /proc/stat: its CPU time per kind of work>
#
# Every section is a plain `cat` of a /proc file (the @@stat line: the
# shell's own `read`), so taking a snapshot costs the guest three short
# processes and no more. A snapshot without @@stat (recorded before it was
# added) has no guest CPU figures.


@dataclasses.dataclass(frozen=True)
class LinkStats:
    """The counters of one interface from /proc/net/dev."""

    rx_bytes: int
    rx_packets: int
    rx_errors: int
    rx_dropped: int  # the kernel prints rx_dropped + rx_missed_errors here
    rx_fifo: int
    tx_bytes: int
    tx_packets: int
    tx_errors: int
    tx_dropped: int

    def minus(self, other: LinkStats) -> LinkStats:
        vals = {f.name: getattr(self, f.name) - getattr(other, f.name) for f in dataclasses.fields(self)}
        neg = {k: v for k, v in vals.items() if v < 0}
        if neg:
            raise BenchError(f"interface counters went backwards: {neg}")
        return LinkStats(**vals)


def parse_proc_net_dev(text: str) -> dict[str, LinkStats]:
    """/proc/net/dev -> {interface: counters}. Each interface line has 8
    receive columns (bytes packets errs drop fifo frame compressed multicast)
    and 8 transmit columns (bytes packets errs drop fifo colls carrier
    compressed)."""
    lines = text.splitlines()
    if len(lines) < 2 or "Receive" not in lines[0] or "Transmit" not in lines[0]:
        raise BenchError(f"not /proc/net/dev output: {text[:200]!r}")
    out: dict[str, LinkStats] = {}
    for line in lines[2:]:
        if not line.strip():
            continue
        name, sep, rest = line.partition(":")
        cols = rest.split()
        if not sep or len(cols) != 16 or not all(c.isdigit() for c in cols):
            raise BenchError(f"bad /proc/net/dev line: {line!r}")
        v = [int(c) for c in cols]
        out[name.strip()] = LinkStats(
            rx_bytes=v[0],
            rx_packets=v[1],
            rx_errors=v[2],
            rx_dropped=v[3],
            rx_fifo=v[4],
            tx_bytes=v[8],
            tx_packets=v[9],
            tx_errors=v[10],
            tx_dropped=v[11],
        )
    return out


@dataclasses.dataclass(frozen=True)
class GuestSnapshot:
    interrupts: dict[int, int]  # IRQ -> count over all CPUs
    links: dict[str, LinkStats]  # interface -> counters (all namespaces; names are unique here)
    cpu: CpuTimes | None = None  # the guest's own CPU accounting (its /proc/stat), when taken

    def irq_total(self, irqs: Sequence[int]) -> int:
        """Interrupts counted so far on those of the given IRQs (one device's)
        that have a handler; an IRQ without one is not listed and cannot fire."""
        if not irqs:
            raise BenchError("no IRQs given")
        return sum(self.interrupts.get(i, 0) for i in irqs)

    def listed(self, irqs: Sequence[int]) -> set[int]:
        return {i for i in irqs if i in self.interrupts}


def parse_snapshot(text: str) -> GuestSnapshot:
    interrupts: dict[int, int] | None = None
    links: dict[str, LinkStats] = {}
    cpu: CpuTimes | None = None
    sections = re.split(r"^@@", text, flags=re.MULTILINE)
    if sections[0].strip():
        raise BenchError(f"guest snapshot does not start with a section: {text[:200]!r}")
    for section in sections[1:]:
        head, _, content = section.partition("\n")
        words = head.split()
        if words == ["interrupts"]:
            interrupts = parse_proc_interrupts(content)
        elif words == ["stat"]:
            cpu = parse_proc_stat_times(content)
        elif len(words) == 2 and words[0] == "netdev":
            for name, st in parse_proc_net_dev(content).items():
                if name == "lo":
                    continue
                if name in links:
                    raise BenchError(f"interface {name} in two network namespaces")
                links[name] = st
        else:
            raise BenchError(f"unknown guest snapshot section {head!r}")
    if interrupts is None:
        raise BenchError(f"guest snapshot without /proc/interrupts: {text[:200]!r}")
    return GuestSnapshot(interrupts, links, cpu)


def parse_irq_list(text: str) -> list[int]:
    """A device's IRQ numbers: the names in its sysfs msi_irqs directory
    (or its one INTx irq), whitespace separated."""
    words = text.split()
    if not words or not all(w.isdigit() for w in words):
        raise BenchError(f"bad IRQ list: {text!r}")
    return sorted({int(w) for w in words})


@dataclasses.dataclass(frozen=True)
class CpuTimes:
    """The "cpu" line of /proc/stat: clock ticks (USER_HZ) of all CPUs
    together, per kind of work."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in dataclasses.fields(self))

    @property
    def busy(self) -> int:
        """Everything but idle and iowait (guest time is already inside user/nice)."""
        return self.total - self.idle - self.iowait

    def minus(self, other: CpuTimes) -> CpuTimes:
        vals = {f.name: getattr(self, f.name) - getattr(other, f.name) for f in dataclasses.fields(self)}
        neg = {k: v for k, v in vals.items() if v < 0}
        if neg:
            raise BenchError(f"CPU time went backwards: {neg}")
        return CpuTimes(**vals)


def parse_proc_stat_times(text: str) -> CpuTimes:
    """The "cpu" line of /proc/stat (the first line; other lines may be
    absent, as in the guest snapshot's one-line @@stat section)."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            if len(parts) < 9 or not all(x.isdigit() for x in parts[1:9]):
                raise BenchError(f"short or bad cpu line in /proc/stat: {line!r}")
            return CpuTimes(*(int(x) for x in parts[1:9]))  # user nice system idle iowait irq softirq steal
    raise BenchError("no cpu line in /proc/stat")


def parse_proc_stat_cpu(text: str) -> tuple[int, int]:
    """(busy, total) clock ticks of all host CPUs from /proc/stat's "cpu" line.
    Idle and iowait are not busy; guest time is already inside user/nice."""
    t = parse_proc_stat_times(text)
    return t.busy, t.total


def parse_ethtool_kv(text: str) -> dict[str, str]:
    """ "name: value" lines of ethtool output (-i, -c, -k, -l), first one wins."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() and key.strip() not in out:
            out[key.strip()] = value.strip()
    return out


OFFLOADS = (
    "rx-checksumming",
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
    "large-receive-offload",
)


def driver_facts(text: str) -> dict[str, Any]:
    """What shapes a port's figures, from `ethtool -i; -c; -k; -l` of it
    separated by "@@" lines: driver version, interrupt coalescing settings,
    main offloads, queue count."""
    parts = text.split("@@\n")
    if len(parts) != 4:
        raise BenchError(f"expected 4 ethtool outputs, got {len(parts)}:\n{text[:500]}")
    info, coalesce, features, channels = (parse_ethtool_kv(p) for p in parts)
    current = parts[3].split("Current hardware settings:")[-1]
    return {
        "driver": info.get("driver", ""),
        "version": info.get("version", ""),
        "coalesce": {
            k: v
            for k, v in coalesce.items()
            if set(v.replace("TX:", "").split()) - {"n/a"} and not k.startswith("Coalesce parameters")
        },
        "offloads": {k: features[k] for k in OFFLOADS if k in features},
        "combined_queues": parse_ethtool_kv(current).get("Combined", ""),
    }


# --------------------------------------------------------- sample figures
# Paths between two interfaces of the guest whose frames both ends count:
# "b2b" two ports wired back to back; "vf-vf" two VFs of one PF, through the
# PF's internal switch; "vf-wire" a VF and the port at the other end of its
# PF's wire.
PAIR_KINDS = ("b2b", "vf-vf", "vf-wire")


@dataclasses.dataclass(frozen=True)
class TrafficPath:
    """Where a workload's traffic goes, as seen by the guest."""

    kind: str  # "slirp": one port to the host; else one of PAIR_KINDS
    ports: tuple[str, ...]  # interface names; for PAIR_KINDS (sender, receiver)
    irqs: tuple[int, ...]  # the IRQs of the PCI functions whose drivers handle the traffic


def wire_frames(delta: Mapping[str, LinkStats], sender: str, receiver: str) -> int:
    """Frames on the wire between two ports wired to each other, both ways.

    Per direction the larger of the sender's and the receiver's count: each
    can only undercount (a driver may count a TSO burst as one frame sent,
    e.g. e1000e's hardware counter; a receiver does not count what it
    dropped), neither counts a frame twice.
    """
    a, b = delta[sender], delta[receiver]
    return max(a.tx_packets, b.rx_packets) + max(b.tx_packets, a.rx_packets)


def iperf3_figures(report: Mapping[str, Any]) -> dict[str, float]:
    """Figures from an iperf3 -J client report (TCP or UDP)."""
    if "error" in report:
        raise BenchError(f"iperf3 failed: {report['error']}")
    try:
        end = report["end"]
        proto = report["start"]["test_start"]["protocol"]
    except (KeyError, TypeError):
        raise BenchError("iperf3 report without start/end sections") from None
    if proto == "TCP":
        recv, sent = end["sum_received"], end["sum_sent"]
        return {
            "seconds": float(recv["seconds"]),
            "mbps": float(recv["bits_per_second"]) / 1e6,
            "payload_bytes": float(recv["bytes"]),
            "retransmits": float(sent.get("retransmits", 0) or 0),
        }
    if proto == "UDP":
        # sum_sent: what the client sent; sum_received: the server's view,
        # where "packets" is the count it expected and "lost_packets" the gaps.
        sent, recv = end["sum_sent"], end["sum_received"]
        seconds = float(sent["seconds"])
        if seconds <= 0:
            raise BenchError(f"iperf3 UDP test of {seconds} s")
        n_sent = float(sent["packets"])
        n_delivered = float(recv["packets"]) - float(recv["lost_packets"])
        return {
            "seconds": seconds,
            "sent_pps": n_sent / seconds,
            "delivered_pps": n_delivered / seconds,
            "lost_pct": 100.0 * (n_sent - n_delivered) / n_sent if n_sent else 0.0,
            "payload_bytes": float(sent["bytes"]),
            "mbps": float(sent["bits_per_second"]) / 1e6,
        }
    raise BenchError(f"unexpected iperf3 protocol {proto!r}")


GUEST_USER_HZ = 100  # the unit of the guest's /proc/stat (USER_HZ, 100 on x86)


def sample_figures(
    path: TrafficPath,
    before: GuestSnapshot,
    after: GuestSnapshot,
    cpu: Mapping[str, float],
    iperf: Mapping[str, float],
) -> dict[str, float]:
    """The per-sample figures every table is built from."""
    seconds = iperf["seconds"]
    if seconds <= 0:
        raise BenchError(f"workload ran {seconds} s")
    if before.listed(path.irqs) != after.listed(path.irqs):
        raise BenchError(
            f"the device's IRQs in /proc/interrupts changed during the sample: "
            f"{sorted(before.listed(path.irqs))} -> {sorted(after.listed(path.irqs))}"
        )
    if not after.listed(path.irqs):
        raise BenchError(f"none of the device's IRQs {list(path.irqs)} is in /proc/interrupts")
    irqs = after.irq_total(path.irqs) - before.irq_total(path.irqs)
    if irqs < 0:
        raise BenchError(f"interrupt counts went backwards ({irqs})")
    delta = {p: after.links[p].minus(before.links[p]) for p in path.ports}
    out: dict[str, float] = dict(iperf)
    out["irqs"] = irqs
    out["irq_per_s"] = irqs / seconds
    out["cpu_s"] = cpu["total"]
    out["cpu_main_s"] = cpu["main"]
    out["cpu_vcpu_s"] = cpu["vcpu"]
    out["cpu_pct"] = 100.0 * cpu["total"] / cpu["wall"] if cpu["wall"] > 0 else math.nan
    if "host_busy" in cpu and cpu["wall"] > 0:
        # what everything else on the host used meanwhile: noise, not a figure of the NIC
        out["host_other_cpu_pct"] = max(0.0, 100.0 * (cpu["host_busy"] - cpu["total"]) / cpu["wall"])
    mb = iperf["payload_bytes"] / 1e6
    if mb > 0:
        out["cpu_ms_per_mb"] = 1e3 * cpu["total"] / mb
        out["cpu_vcpu_ms_per_mb"] = 1e3 * cpu["vcpu"] / mb
        out["irq_per_mb"] = irqs / mb
    if before.cpu is not None and after.cpu is not None:
        g = after.cpu.minus(before.cpu)
        out["guest_busy_s"] = g.busy / GUEST_USER_HZ
        out["guest_softirq_s"] = g.softirq / GUEST_USER_HZ
        if mb > 0:
            out["guest_busy_ms_per_mb"] = 1e3 * out["guest_busy_s"] / mb
            out["guest_softirq_ms_per_mb"] = 1e3 * out["guest_softirq_s"] / mb
    out["rx_dropped"] = sum(d.rx_dropped + d.rx_fifo for d in delta.values())
    if path.kind in PAIR_KINDS:
        frames = wire_frames(delta, path.ports[0], path.ports[1])
        out["frames"] = frames
        out["frames_per_s"] = frames / seconds
        if frames > 0:
            out["irq_per_frame"] = irqs / frames
            out["cpu_us_per_frame"] = 1e6 * cpu["total"] / frames
            out["cpu_main_us_per_frame"] = 1e6 * cpu["main"] / frames
    return out


# ------------------------------------------------------------------ tables
@dataclasses.dataclass(frozen=True)
class Row:
    label: str
    values: dict[str, Summary | None]  # model -> summary (None: no samples)
    # model -> why it has no value by design (e.g. "no VFs"): printed instead
    # of "-", which means "not measured" (a failure)
    absent: dict[str, str] = dataclasses.field(default_factory=dict)


def fmt_value(v: float) -> str:
    """Three significant digits, no exponent for everyday magnitudes."""
    if not math.isfinite(v):
        return "n/a"
    a = abs(v)
    if a == 0:
        return "0"
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_summary(s: Summary | None) -> str:
    if s is None:
        return "-"
    if s.n == 1:
        return fmt_value(s.median)
    return f"{fmt_value(s.median)} ±{s.spread_pct / 2:.0f}%"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def ratio_table(
    title: str,
    rows: Sequence[Row],
    models: Sequence[str],
    subject: str,
    note: str = "",
) -> str:
    """A plain-text table: one column per model (median ±half the min-max
    spread, relative), then the ratio subject/other for every other model."""
    return _compare_table(title, rows, models, subject, note, pivot_on_top=True)


def reference_table(title: str, rows: Sequence[Row], models: Sequence[str], reference: str, note: str = "") -> str:
    """Like ratio_table, but every model against one reference model: one
    column per model, then <model>/<reference> for every other model."""
    return _compare_table(title, rows, models, reference, note, pivot_on_top=False)


def _compare_table(
    title: str, rows: Sequence[Row], models: Sequence[str], pivot: str, note: str, *, pivot_on_top: bool
) -> str:
    """One column per model, then pivot/other (pivot_on_top) or other/pivot
    for every other model."""
    if pivot not in models:
        raise BenchError(f"{pivot} is not one of the models {list(models)}")
    others = [m for m in models if m != pivot]
    header = ["", *models, *[f"{pivot}/{m}" if pivot_on_top else f"{m}/{pivot}" for m in others]]
    body: list[list[str]] = []
    for row in rows:
        cells = [row.label]
        cells += [row.absent[m] if m in row.absent else fmt_summary(row.values.get(m)) for m in models]
        mine = row.values.get(pivot)
        for m in others:
            theirs = row.values.get(m)
            num, den = (mine, theirs) if pivot_on_top else (theirs, mine)
            r = ratio(num.median, den.median) if num is not None and den is not None else None
            cells.append(row.absent[m] if m in row.absent else fmt_ratio(r))
        body.append(cells)
    return _layout(title, header, body, note)


def _layout(title: str, header: Sequence[str], body: Sequence[Sequence[str]], note: str) -> str:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cells)
        ).rstrip()

    out = [title, line(header), line(["-" * w for w in widths])]
    out += [line(r) for r in body]
    if note:
        out.append(note)
    return "\n".join(out)


RSC_COUNTERS = ("hw_rsc_aggregated", "hw_rsc_flushed")


def rsc_figures(before: str, after: str) -> dict[str, float]:
    """The ixgbe driver's RSC counters (`ethtool -S` of the receiving port,
    before and after a sample): hw_rsc_flushed counts the aggregates of two
    or more segments the driver received, hw_rsc_aggregated the segments
    beyond the first in them (the descriptors' RSCCNT - 1, summed). Their
    deltas, and the segments per aggregate when there were aggregates."""
    b, a = parse_ethtool_kv(before), parse_ethtool_kv(after)
    missing = [c for c in RSC_COUNTERS if c not in b or c not in a]
    if missing:
        raise BenchError(f"ethtool -S shows no {missing}")
    try:
        agg, flushed = (int(a[c]) - int(b[c]) for c in RSC_COUNTERS)
    except ValueError:
        raise BenchError(f"non-numeric RSC counters: {before!r} -> {after!r}") from None
    if agg < 0 or flushed < 0:
        raise BenchError(f"RSC counters went backwards ({agg}, {flushed})")
    out = {"rsc_aggregates": float(flushed), "rsc_segments_added": float(agg)}
    if flushed:
        out["rsc_segments_per_aggregate"] = 1.0 + agg / flushed
    return out


def host_facts() -> dict[str, Any]:
    """The host a benchmark ran on: kernel, CPU count and model, Python."""
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model,
        "python": platform.python_version(),
    }


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file (a QEMU binary), read in 1 MiB chunks."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
