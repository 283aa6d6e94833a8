"""Queue masks and queue IRQ affinities as found before apply changed anything.

Changing the channel count (and on some drivers the ring sizes) makes the driver
re-create its queues and IRQs and reset every XPS mask and IRQ affinity, including
those of queues apply never writes. Apply therefore reads them all first; what a
driver reset is recorded with its earlier value (so revert brings it back) or,
after a failed apply, written back at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, TextIO

from .discover import Facts
from .errors import ApplyError
from .host import Host, IrqNumbers
from .kinds import MISSING, kind_of, same_value, show


@dataclass
class Reading:
    """A queue mask or queue IRQ affinity as found before apply changed anything."""

    kind: str                 # "irq" or "mask"
    target: str
    iface: str
    label: str
    value: str
    irq_action: Optional[str] = None

    @property
    def id(self) -> str:
        """The id a change of the same file has in the state file."""
        return kind_of(self.kind).change_id(self)


def queue_readings(host: Host, facts: Facts, ifnames: List[str]) -> Dict[str, Reading]:
    """Every queue's XPS/RPS mask and every queue IRQ's affinity of the given interfaces."""
    found: List[Reading] = []
    for name in ifnames:
        itf = facts.interfaces.get(name)
        if itf is None:
            continue
        for irq, action in [(q.irq, q.name) for q in itf.queue_irqs] + [(o.irq, o.name) for o in itf.other_irqs]:
            found.append(Reading("irq", f"/proc/irq/{irq}/smp_affinity_list", name, f"IRQ {irq} {action}", "",
                                 action))
        base = f"/sys/class/net/{name}/queues"
        for q in sorted(host.root.listdir(base)):
            leaf = "xps_cpus" if q.startswith("tx-") else "rps_cpus"
            found.append(Reading("mask", f"{base}/{q}/{leaf}", name, f"{q} {leaf[:3].upper()}", ""))
    out: Dict[str, Reading] = {}
    for r in found:
        try:
            r.value = host.root.read(r.target)
        except OSError:
            continue   # e.g. xps_cpus of a single-queue device without XPS support
        out[r.id] = r
    return out


def _now(host: Host, r: Reading, irqs: IrqNumbers) -> Optional[str]:
    """Where a reading lives now (an IRQ is found by its name); None when it is gone."""
    return kind_of(r.kind).locate(host, r.target, r.irq_action, irqs).target


def record_driver_resets(host: Host, state: Dict[str, Any], baseline: Dict[str, Reading], out: TextIO) -> None:
    """Record the pre-apply reading of queue files apply did not write but a driver reset."""
    recorded = {entry["id"] for entry in state["changes"]}
    irqs = IrqNumbers(host)
    for rid, r in sorted(baseline.items()):
        if rid in recorded:
            continue
        target = _now(host, r, irqs)
        try:
            now: Any = host.root.read(target) if target else MISSING
        except OSError:
            now = MISSING
        if same_value(r.kind, now, r.value):
            continue
        entry = kind_of(r.kind).entry(r, r.value, None, [])
        entry["label"] = f"{r.label} (reset by the driver)"
        state["changes"].append(entry)
        out.write(f"recorded {r.iface} {r.label}: {show(r.kind, r.value)} before the driver reset it to "
                  f"{show(r.kind, now)}; revert restores it\n")


def restore_readings(host: Host, baseline: Dict[str, Reading], out: TextIO) -> List[str]:
    """After a rollback: put back queue masks and IRQ affinities a driver reset."""
    failed: List[str] = []
    irqs = IrqNumbers(host)
    for r in baseline.values():
        target = _now(host, r, irqs)
        if target is None:
            continue
        try:
            if same_value(r.kind, host.root.read(target), r.value):
                continue
            kind_of(r.kind).write(host, target, r.iface, r.value)
            out.write(f"restored {r.iface} {r.label}: {show(r.kind, r.value)}\n")
        except (ApplyError, OSError) as e:
            failed.append(f"{r.label} ({e})")
    return failed
