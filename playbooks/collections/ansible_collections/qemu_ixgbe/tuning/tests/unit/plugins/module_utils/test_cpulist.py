"""CPU lists: module_utils/cpulist.py is the collection's one parser and formatter.

topology.py wraps it (errors become PlanError), vhost.py imports it. vhost.py
is also the stand-alone libvirt hook helper, which runs without the
collection: the role vhost_pinning installs cpulist.py beside it as
qemu_ixgbe_cpulist.py, and the helper imports it from there.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, List

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import cpulist, topology, vhost

MODULE_UTILS = Path(cpulist.__file__).resolve().parent

PARSERS = {
    "cpulist": cpulist.parse_cpulist,
    "topology": topology.parse_cpulist,
}
FORMATTERS = {"cpulist": cpulist.format_cpulist, "topology": topology.format_cpulist}

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


def test_vhost_uses_the_one_parser() -> None:
    assert vhost.parse_cpulist is cpulist.parse_cpulist
    assert vhost.format_cpulist is cpulist.format_cpulist


def _helper_run(tmp_path: Path, with_parser: bool) -> subprocess.CompletedProcess:
    """Install the helper as the role does (vhost.py as a script, cpulist.py
    beside it as qemu_ixgbe_cpulist.py) and run it for a domain whose config
    wants no workers: it parses and formats the config's CPU list."""
    libexec, conf, run = tmp_path / "libexec", tmp_path / "conf", tmp_path / "run"
    for d in (libexec, conf, run):
        d.mkdir()
    helper = libexec / "qemu-ixgbe-vhost-pin"
    shutil.copy(MODULE_UTILS / "vhost.py", helper)
    if with_parser:
        shutil.copy(MODULE_UTILS / "cpulist.py", libexec / "qemu_ixgbe_cpulist.py")
    (conf / "dom.json").write_text(json.dumps({"cpus": "3,1-2", "min_workers": 0}))
    return subprocess.run(
        [sys.executable, "-E", "-s", str(helper), "dom", "--config-dir", str(conf), "--run-dir", str(run),
         "--wait", "0", "--log", str(tmp_path / "log")],
        cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)


def test_hook_helper_runs_standalone_with_the_parser_beside_it(tmp_path: Path) -> None:
    proc = _helper_run(tmp_path, with_parser=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "log").read_text())["cpus"] == "1-3"


def test_hook_helper_needs_the_parser_beside_it(tmp_path: Path) -> None:
    proc = _helper_run(tmp_path, with_parser=False)
    assert proc.returncode != 0
    assert "qemu_ixgbe_cpulist" in proc.stderr
