"""The system's own counters around a measurement run: per-CPU NET_RX/NET_TX softirq
counts (/proc/softirqs) and softirq time (/proc/stat), per-CPU interrupts of each of the
NIC's IRQs (/proc/interrupts, by IRQ name, so phases with re-created IRQs line up), the
interface's packet, error and drop counters (/proc/net/dev) and the driver's drop-like
statistics (ethtool -S). A snapshot is taken before and after each run; the report keeps
the differences."""

from __future__ import annotations

import os
import re
from typing import Any, Callable, Dict, List, Optional

from .sysfs import Root

NET_DEV_FIELDS = ("rx_bytes", "rx_packets", "rx_errors", "rx_dropped", "rx_fifo", "rx_frame", "rx_compressed",
                  "rx_multicast", "tx_bytes", "tx_packets", "tx_errors", "tx_dropped", "tx_fifo", "tx_colls",
                  "tx_carrier", "tx_compressed")
# ethtool -S keys kept: the ones that count lost or refused packets (not Flow Director's
# fdir_miss, which counts every packet no filter matched)
DROP_KEY = re.compile(r"^(?!fdir_).*(drop|miss|no_buf|nobuf|no_dma|alloc.*fail|fifo|overrun|error|busy|restart)",
                      re.I)
Snapshot = Dict[str, Any]


def _read(root: Root, path: str) -> str:
    try:
        with open(root.host_path(path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def parse_softirqs(text: str) -> Dict[str, List[int]]:
    """NET_RX and NET_TX counts per CPU from /proc/softirqs."""
    out: Dict[str, List[int]] = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        if name.strip() in ("NET_RX", "NET_TX"):
            out[name.strip()] = [int(x) for x in rest.split()]
    return out


def parse_stat_softirq(text: str) -> List[int]:
    """Softirq time per CPU (the 7th value of each cpuN line of /proc/stat, in clock ticks)."""
    per: Dict[int, int] = {}
    for line in text.splitlines():
        f = line.split()
        if f and f[0].startswith("cpu") and f[0][3:].isdigit() and len(f) > 7:
            per[int(f[0][3:])] = int(f[7])
    return [per[c] for c in sorted(per)]


def parse_interrupts(text: str, irqs: Dict[int, str]) -> Dict[str, List[int]]:
    """Per-CPU counts of the given IRQs, keyed by the names in `irqs`."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    out: Dict[str, List[int]] = {}
    for line in lines[1:]:
        num, _, rest = line.partition(":")
        if not num.strip().isdigit() or int(num) not in irqs:
            continue
        f = rest.split()
        out[irqs[int(num)]] = [int(x) for x in f[:ncpu] if x.isdigit()]
    return out


def parse_net_dev(text: str, iface: str) -> Dict[str, int]:
    for line in text.splitlines()[2:]:
        name, _, rest = line.partition(":")
        if name.strip() == iface:
            return dict(zip(NET_DEV_FIELDS, (int(x) for x in rest.split())))
    return {}


def parse_ethtool_stats(text: str) -> Dict[str, int]:
    """The drop-like counters of `ethtool -S` output."""
    out: Dict[str, int] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition(":")
        value = value.strip()
        if sep and DROP_KEY.search(key) and value.lstrip("-").isdigit():
            out[key.strip()] = int(value)
    return out


def snapshot(root: Root, iface: str, irqs: Dict[int, str],
             ethtool_stats: Optional[Callable[[str], Optional[str]]] = None) -> Snapshot:
    """Everything this module reads, now. `ethtool_stats(iface)` returns `ethtool -S`
    output or None (no ethtool, or the driver has no statistics)."""
    eth = ethtool_stats(iface) if ethtool_stats is not None else None
    return {
        "softirq": parse_softirqs(_read(root, "/proc/softirqs")),
        "softirq_ticks": parse_stat_softirq(_read(root, "/proc/stat")),
        "irq": parse_interrupts(_read(root, "/proc/interrupts"), irqs),
        "dev": parse_net_dev(_read(root, "/proc/net/dev"), iface),
        "ethtool": parse_ethtool_stats(eth) if eth else {},
    }


def _sub(a: List[int], b: List[int]) -> List[int]:
    return [y - x for x, y in zip(a, b)]


def delta(before: Snapshot, after: Snapshot) -> Dict[str, Any]:
    """after - before. Softirq time goes from clock ticks to milliseconds. IRQs that
    exist in only one snapshot are left out (the driver re-created them in between)."""
    tick_ms = 1000.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
    eth = {k: after["ethtool"][k] - v for k, v in before["ethtool"].items() if k in after["ethtool"]}
    return {
        "softirq": {k: _sub(v, after["softirq"].get(k, v)) for k, v in before["softirq"].items()},
        "softirq_ms": [round(d * tick_ms, 3) for d in _sub(before["softirq_ticks"], after["softirq_ticks"])],
        "irq": {k: _sub(v, after["irq"][k]) for k, v in before["irq"].items() if k in after["irq"]},
        "dev": {k: after["dev"][k] - v for k, v in before["dev"].items() if k in after["dev"]},
        "ethtool": {k: v for k, v in sorted(eth.items()) if v},
    }


def add(total: Dict[str, Any], d: Dict[str, Any]) -> None:
    """Sum delta `d` into `total` (the same layout; lists element-wise)."""
    for key, value in d.items():
        if isinstance(value, list):
            cur = total.setdefault(key, [0] * len(value))
            total[key] = [a + b for a, b in zip(cur + [0] * (len(value) - len(cur)), value)]
        elif isinstance(value, dict):
            add(total.setdefault(key, {}), value)
        else:
            total[key] = total.get(key, 0) + value
