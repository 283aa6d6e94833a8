# -*- coding: utf-8 -*-
# Linux CPU lists ("0-3,8,10-11"), as in cpu/online, node*/cpulist,
# cpuset.cpus and Cpus_allowed_list: the one parser and formatter of the
# collection's Python, its tests and the project's host-side tests. Standard
# library only: the role vhost_pinning installs this file beside the
# stand-alone hook helper (vhost.py) as qemu_ixgbe_cpulist.py.
from __future__ import annotations

import re
from typing import Iterable, List, Set


class CpuListError(ValueError):
    """Text that is not a Linux CPU list."""


_CPU_RANGE = re.compile(r"([0-9]+)(?:\s*-\s*([0-9]+))?\Z")


def parse_cpulist(text: str) -> List[int]:
    """Parse a Linux CPU list ("0-3,8,10-11") into a sorted list of ints."""
    cpus: Set[int] = set()
    text = (text or "").strip()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = _CPU_RANGE.match(part)
        if not m:
            raise CpuListError("bad CPU list element %r in %r" % (part, text))
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if lo > hi:
            raise CpuListError("bad CPU range %r in %r" % (part, text))
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """Format CPUs as a compact Linux CPU list ("0-3,8")."""
    ordered = sorted(set(int(c) for c in cpus))
    out: List[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append("%d-%d" % (ordered[i], ordered[j]) if j > i else str(ordered[i]))
        i = j + 1
    return ",".join(out)
