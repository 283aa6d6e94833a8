"""The files `nettune measure` writes: report.json, report.md and the PNG plots
(bars with min-max spread per unit, per-CPU heat maps of the NIC's interrupts, of
NET_RX/NET_TX softirqs and of softirq time)."""

from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Tuple

from . import png

BAR_FILES = {"Gbit/s": "bars-throughput.png", "us": "bars-latency.png", "kpps": "bars-udp64.png"}


def fmt(v: float) -> str:
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _per_second(values: List[int], seconds: float) -> List[float]:
    return [v / seconds if seconds > 0 else 0.0 for v in values]


def bar_plots(report: Dict[str, Any]) -> Dict[str, bytes]:
    phases: List[str] = report["phases"]
    by_unit: Dict[str, List[Dict[str, Any]]] = {}
    for row in report["metrics"]:
        by_unit.setdefault(row["unit"], []).append(row)
    files: Dict[str, bytes] = {}
    for unit, rows in by_unit.items():
        name = BAR_FILES.get(unit, f"bars-{unit.replace('/', '-')}.png")
        better = "HIGHER" if rows[0]["higher_is_better"] else "LOWER"
        groups = [f"{r['workload']} {r['metric']}" if len(rows) > 1 and r["unit"] == "us" else r["workload"]
                  for r in rows]
        values: List[List[Optional[Tuple[float, float, float]]]] = [
            [(r["phases"][p]["median"], r["phases"][p]["min"], r["phases"][p]["max"]) if p in r["phases"] else None
             for p in phases] for r in rows]
        title = f"{report['interface']} TO {report['peer']}: MEDIAN OF {report['runs']}, MIN-MAX ({better} IS BETTER)"
        files[name] = png.bar_chart(title, unit, groups, phases, values)
    return files


def heat_plots(report: Dict[str, Any]) -> Dict[str, bytes]:
    phases: List[str] = report["phases"]
    c = report["counters"]
    ncpu = max([len(c[p]["totals"].get("softirq_ms", [])) for p in phases] + [0])
    cols = [f"CPU{i}" for i in range(ncpu)]
    files: Dict[str, bytes] = {}
    irq_rows: List[str] = []
    irq_vals: List[List[float]] = []
    soft_rows: List[str] = []
    soft_vals: List[List[float]] = []
    time_rows: List[str] = []
    time_vals: List[List[float]] = []
    for p in phases:
        t, secs = c[p]["totals"], c[p]["seconds"]
        for name, per_cpu in sorted(t.get("irq", {}).items()):
            irq_rows.append(f"{p} {name}")
            irq_vals.append(_per_second(per_cpu, secs))
        for kind in ("NET_RX", "NET_TX"):
            if kind in t.get("softirq", {}):
                soft_rows.append(f"{p} {kind}")
                soft_vals.append([v / 1000 for v in _per_second(t["softirq"][kind], secs)])
        if t.get("softirq_ms"):
            time_rows.append(p)
            time_vals.append(_per_second(t["softirq_ms"], secs))
    if ncpu and irq_rows:
        files["heat-interrupts.png"] = png.heat_map(
            f"{report['interface']} INTERRUPTS PER SECOND, PER QUEUE IRQ AND CPU", irq_rows, cols, irq_vals)
    if ncpu and soft_rows:
        files["heat-softirq.png"] = png.heat_map("NET_RX/NET_TX SOFTIRQS, THOUSANDS PER SECOND, PER CPU",
                                                 soft_rows, cols, soft_vals)
    if ncpu and time_rows:
        files["heat-softirq-time.png"] = png.heat_map("SOFTIRQ TIME, MS PER SECOND, PER CPU",
                                                      time_rows, cols, time_vals)
    return files


def markdown(report: Dict[str, Any]) -> str:
    phases: List[str] = report["phases"]
    out = [f"# nettune measure: {report['interface']} to {report['peer']}", "",
           f"{report['started']} on {report['host']} (Linux {report['kernel']}, {report['cpus']} CPUs); "
           f"phases {', '.join(phases)}; {report['runs']} run(s) of {report['seconds']} s per workload "
           "(workloads interleaved within a phase).", ""]
    head = ["workload", "metric"] + [f"{p} median [min-max]" for p in phases]
    compared = [p for p in phases if p != "before"] if "before" in phases else []
    head += [f"{p} vs before" for p in compared]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in report["metrics"]:
        cells = [f"{row['workload']} ({row['tool']})", f"{row['metric_title']}, {row['unit']} "
                 f"({'higher' if row['higher_is_better'] else 'lower'} is better)"]
        for p in phases:
            s = row["phases"][p]
            cells.append(f"{fmt(s['median'])} [{fmt(s['min'])}-{fmt(s['max'])}]")
        for p in compared:
            v = row["verdicts"][p]
            cells.append(f"**{v['verdict']}** ({v['change']:+.1%}, noise band ±{v['band']:.1%})")
        out.append("| " + " | ".join(cells) + " |")
    out += ["", "Verdict rule: the change is (median − median before) / median before; the noise band is the "
            f"larger of {report['noise']['min_band']:.0%} and the relative spread (max − min) / median of either "
            "phase. A change inside the band is *no change within noise*; outside it, *better* or *worse* by the "
            "metric's direction. `reverted vs before` checks that revert brought the untuned figures back.", ""]
    out += ["## Counters around the runs", "",
            "Per second of each phase, summed over its runs: the interface's interrupts per CPU (all of its "
            "queue and other IRQs), NET_RX and NET_TX softirqs and softirq time per CPU; drops over the phase.", ""]
    for p in phases:
        t, secs = report["counters"][p]["totals"], report["counters"][p]["seconds"]
        ms = _per_second(t.get("softirq_ms", []), secs)
        rx = _per_second(t.get("softirq", {}).get("NET_RX", []), secs)
        tx = _per_second(t.get("softirq", {}).get("NET_TX", []), secs)
        irq = [0] * len(ms)
        for per_cpu in t.get("irq", {}).values():
            irq = [a + b for a, b in zip(irq + [0] * (len(per_cpu) - len(irq)), per_cpu)]
        irq_s = _per_second(irq, secs)
        out += [f"**{p}** ({secs:.0f} s):", "", "| CPU | NIC interrupts/s | NET_RX/s | NET_TX/s | softirq ms/s |",
                "|---|---|---|---|---|"]
        for cpu in range(len(ms)):
            def at(xs: List[float]) -> str:
                return fmt(xs[cpu]) if cpu < len(xs) else "-"
            out.append(f"| {cpu} | {at(irq_s)} | {at(rx)} | {at(tx)} | {at(ms)} |")
        dev = t.get("dev", {})
        drops = {k: v for k, v in dev.items() if k.endswith(("_dropped", "_errors", "_fifo")) and v}
        drops.update({f"ethtool {k}": v for k, v in t.get("ethtool", {}).items() if v})
        out += ["", "drops and errors: " + (", ".join(f"{k} {v}" for k, v in sorted(drops.items())) or "none")
                + f"; packets rx {dev.get('rx_packets', 0)}, tx {dev.get('tx_packets', 0)}", ""]
    if report["plots"]:
        out += ["## Plots", ""] + [f"![{name}]({name})" for name in report["plots"]] + [""]
    out += ["## Runs", "", "| phase | run | workload | result | raw output |", "|---|---|---|---|---|"]
    for r in report["runs_detail"]:
        vals = ", ".join(f"{k} {fmt(v)}" for k, v in r["values"].items())
        out.append(f"| {r['phase']} | {r['run']} | {r['workload']} | {vals} | [{r['raw']}]({r['raw']}) |")
    out += ["", "Commands: " + "; ".join(f"`{' '.join(w['argv'])}`" for w in report["workloads"]), ""]
    return "\n".join(out)


def write_report(report: Dict[str, Any], out_dir: str) -> None:
    plots = dict(bar_plots(report))
    plots.update(heat_plots(report))
    report["plots"] = sorted(plots)
    for name, data in plots.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
    with open(os.path.join(out_dir, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(markdown(report))
