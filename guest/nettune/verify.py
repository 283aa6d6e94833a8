"""Compare the live system with a plan; name the manager (NetworkManager, tuned) behind a drift."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from .host import Host
from .managers import cause, detect
from .kinds import read_current, satisfied, show
from .plan import Plan


def verify(host: Host, plan: Plan, unsupported: Optional[List[str]] = None) -> Tuple[List[Dict[str, Any]], int]:
    """(drift entries, number of settings checked). Settings the driver refused are not checked."""
    drift: List[Dict[str, Any]] = []
    skip = set(unsupported or [])
    checked = 0
    found = detect(host.root, sorted({s.iface for s in plan.settings if s.iface}))
    for s in plan.settings:
        if s.key in skip:
            continue
        checked += 1
        cur = read_current(host, s)
        if not satisfied(s, cur):
            entry = {"key": s.key, "iface": s.iface, "label": s.label, "target": s.target,
                     "want": show(s.kind, s.want), "have": show(s.kind, cur)}
            why = cause(found, s, cur)
            if why:
                entry["cause"] = why
            drift.append(entry)
    return drift, checked
