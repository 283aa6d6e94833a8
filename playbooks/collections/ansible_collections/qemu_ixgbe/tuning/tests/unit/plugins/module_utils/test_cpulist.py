"""CPU lists: module_utils/cpulist.py is the collection's one parser and formatter.

vhost.py is also the stand-alone libvirt hook helper, which runs without the
collection, so it carries a copy of cpulist.py's marked block. The copy must be
identical (CPULIST_UPDATE_COPY=1 rewrites it from cpulist.py), and every copy
and wrapper answers the same cases the same way.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, List

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import cpulist, topology, vhost

MODULE_UTILS = Path(cpulist.__file__).resolve().parent
BLOCK = re.compile(r"^# --- cpulist: begin -+\n.*?^# --- cpulist: end -+\n", re.M | re.S)

PARSERS = {
    "cpulist": cpulist.parse_cpulist,
    "vhost (hook copy)": vhost.parse_cpulist,
    "topology": topology.parse_cpulist,
}
FORMATTERS = {"cpulist": cpulist.format_cpulist, "vhost (hook copy)": vhost.format_cpulist,
              "topology": topology.format_cpulist}

GOOD = [
    ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
    ("0-3,8,10-11\n", [0, 1, 2, 3, 8, 10, 11]),      # as read from sysfs
    ("", []),
    ("\n", []),
    ("5", [5]),
    ("3,1-2,2", [1, 2, 3]),
    (" 1 - 2 , 4 ", [1, 2, 4]),
    ("0,,2", [0, 2]),
    ("7-7", [7]),
]
BAD = ["3-1", "a", "-1", "1-", "1-x", "0-7:2", "1.5", "\u00b2", "0x3"]


@pytest.mark.parametrize("text,cpus", GOOD)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_parses(name: str, text: str, cpus: List[int]) -> None:
    assert PARSERS[name](text) == cpus


@pytest.mark.parametrize("text", BAD)
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_rejects(name: str, text: str) -> None:
    with pytest.raises(ValueError):
        PARSERS[name](text)


def test_topology_reports_bad_lists_as_plan_errors() -> None:
    with pytest.raises(topology.PlanError, match="bad CPU range '3-1'"):
        topology.parse_cpulist("3-1")


@pytest.mark.parametrize("name", sorted(FORMATTERS))
def test_formats_and_round_trips(name: str) -> None:
    fmt: Callable[[List[int]], str] = FORMATTERS[name]
    assert fmt([11, 10, 8, 3, 2, 1, 0]) == "0-3,8,10-11"
    assert fmt([]) == ""
    assert fmt([4, 4, 6]) == "4,6"
    for text, cpus in GOOD:
        assert PARSERS[name](fmt(cpus)) == cpus


def test_hook_copy_is_the_cpulist_block() -> None:
    original = BLOCK.search((MODULE_UTILS / "cpulist.py").read_text())
    assert original, "cpulist.py has no '# --- cpulist: begin/end' block"
    path = MODULE_UTILS / "vhost.py"
    text = path.read_text()
    copies = BLOCK.findall(text)
    assert len(copies) == 1, "vhost.py must hold exactly one copy of cpulist.py's block"
    if copies[0] != original.group(0) and os.environ.get("CPULIST_UPDATE_COPY") == "1":
        path.write_text(BLOCK.sub(lambda _: original.group(0), text))
        copies = BLOCK.findall(path.read_text())
    assert copies[0] == original.group(0), (
        "vhost.py's copy of the CPU list block differs from cpulist.py; "
        "rewrite it with CPULIST_UPDATE_COPY=1 pytest "
        "tests/unit/plugins/module_utils/test_cpulist.py")


def test_hook_helper_needs_nothing_from_the_collection() -> None:
    text = (MODULE_UTILS / "vhost.py").read_text()
    assert "ansible_collections" not in text and "module_utils" not in re.sub(r"#.*", "", text)
