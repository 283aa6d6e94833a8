"""The recorder: trees it writes give the same facts and plans as their source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any, Callable, Dict

import pytest

import gen_trees
from conftest import BUILT_TREES, GUEST, HERE, TREES, Result, tree_hash
from nettune.discover import default_interfaces, discover
from nettune.ethtool import RealEthtool, RecordedEthtool, find_ethtool
from nettune.plan import make_plan, sysctl_names
from nettune.profiles import Config
from nettune.record import main as record_main
from nettune.services import RealServices, RecordedServices
from nettune.sysfs import Root


def tree_facts(path: str) -> Dict[str, Any]:
    root = Root(path)
    ifs = default_interfaces(root)
    return discover(root, RecordedEthtool(os.path.join(path, "ethtool.json")),
                    RecordedServices(os.path.join(path, "services.json")),
                    sysctls=sysctl_names(Config(), ifs)).to_json()


@pytest.mark.parametrize("name", BUILT_TREES)
def test_record_round_trip_from_a_tree(name: str, tmp_path: "os.PathLike[str]") -> None:
    out = os.path.join(str(tmp_path), "rec")
    src = os.path.join(TREES, name)
    assert record_main([out, "--from-root", src]) == 0
    assert tree_facts(out) == tree_facts(src)
    assert "RECORDED by nettune.record" in open(os.path.join(out, "README.md")).read()


def test_record_refuses_non_empty_outdir(tmp_path: "os.PathLike[str]") -> None:
    with open(os.path.join(str(tmp_path), "x"), "w") as f:
        f.write("x")
    assert record_main([str(tmp_path), "--from-root", os.path.join(TREES, "igb-4q")]) == 2


@pytest.mark.skipif(not os.path.isdir("/sys/class/net"), reason="no sysfs on this machine")
def test_record_the_live_system_read_only(tmp_path: "os.PathLike[str]") -> None:
    """Record this machine's /sys and /proc: the copy must give the facts the live system gives."""
    out = os.path.join(str(tmp_path), "live")
    proc = subprocess.run([sys.executable, "-m", "nettune.record", out], cwd=GUEST,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == 0, proc.stderr
    live = Root("/")
    ifs = default_interfaces(live)
    eth = RealEthtool() if find_ethtool() else None
    live_facts = discover(live, eth, RealServices(live), sysctls=sysctl_names(Config(), ifs)).to_json()
    rec = tree_facts(out)
    if eth is None:   # without ethtool the recorder writes no ethtool facts
        for itf in live_facts["interfaces"].values():
            itf["ethtool"], itf["ethtool_error"] = None, None
        for itf in rec["interfaces"].values():
            itf["ethtool"], itf["ethtool_error"] = None, None
    assert rec == live_facts
    assert make_plan_json(out) == make_plan(discover(live, eth, RealServices(live),
                                                     sysctls=sysctl_names(Config(), ifs)), Config()).to_json()


def make_plan_json(path: str) -> Dict[str, Any]:
    root = Root(path)
    ifs = default_interfaces(root)
    facts = discover(root, RecordedEthtool(os.path.join(path, "ethtool.json")),
                     RecordedServices(os.path.join(path, "services.json")), sysctls=sysctl_names(Config(), ifs))
    return make_plan(facts, Config()).to_json()


def test_built_trees_are_what_the_generator_makes(tmp_path: "os.PathLike[str]") -> None:
    """The committed trees match gen_trees.py's output (regenerate them after changing it)."""
    out = os.path.join(str(tmp_path), "gen")
    assert gen_trees.main(["gen_trees.py", out]) == 0
    for name in BUILT_TREES:
        assert tree_hash(os.path.join(out, name)) == tree_hash(os.path.join(TREES, name)), name


def test_every_tree_says_how_it_was_made() -> None:
    for name in sorted(os.listdir(TREES)):
        text = open(os.path.join(TREES, name, "README.md")).read()
        assert ("BUILT by tests/tuner/gen_trees.py" in text) != ("RECORDED by nettune.record" in text), name


@pytest.mark.parametrize("name", sorted(n for n in os.listdir(TREES) if n not in BUILT_TREES))
def test_recorded_trees_apply_and_revert(name: str, tree: Callable[[str], str],
                                         nt: Callable[..., Result]) -> None:
    root = tree(name)
    before = tree_hash(root)
    assert nt("--root", root, "apply").rc == 0
    assert nt("--root", root, "verify").rc == 0
    assert nt("--root", root, "revert").rc == 0
    assert tree_hash(root) == before


@pytest.mark.skipif(not os.path.isdir("/sys/class/net") or shutil.which("sh") is None,
                    reason="no sysfs or no sh on this machine")
def test_shell_snapshot_gives_the_live_facts(tmp_path: "os.PathLike[str]") -> None:
    """guest/record.sh (for guests without Python) + nettune.record --from-root = a direct recording."""
    stage = os.path.join(str(tmp_path), "stage")
    proc = subprocess.run(["sh", os.path.join(GUEST, "record.sh"), stage], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = os.path.join(str(tmp_path), "tree")
    assert record_main([out, "--from-root", stage, "--note", "shell snapshot"]) == 0
    live = Root("/")
    ifs = default_interfaces(live)
    eth = RealEthtool() if find_ethtool() else None
    live_facts = discover(live, eth, RealServices(live), sysctls=sysctl_names(Config(), ifs)).to_json()
    rec = tree_facts(out)
    if eth is None:
        for facts in (live_facts, rec):
            for itf in facts["interfaces"].values():
                itf["ethtool"], itf["ethtool_error"] = None, None
    assert rec == live_facts
    assert "shell snapshot" in open(os.path.join(out, "README.md")).read()
