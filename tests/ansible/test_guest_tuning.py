"""guest_net_tuning through site.yml: nettune installed, profile applied once, flags reported.

nettune runs on a copy of a sys/proc tree recorded in a real ixgbe guest (nettune --root),
so the live machine is not retuned; everything else (install, config, verify/apply, the
CPU flag report) is what runs on a guest.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

from conftest import REPO, run_playbook

TREES = REPO / "tests" / "tuner" / "trees"


def inventory(tmp_path: Path, tree: Path, **extra: Any) -> Path:
    import json
    guest = dict({
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "guest_net_tuning_profile": "throughput",
        "guest_net_tuning_prefix": str(tmp_path / "usr-local"),
        "guest_net_tuning_config": str(tmp_path / "etc" / "nettune.conf"),
        "guest_net_tuning_unit_dir": str(tmp_path / "etc" / "systemd" / "system"),
        "guest_net_tuning_udev_dir": str(tmp_path / "etc" / "udev" / "rules.d"),
        "guest_net_tuning_root": str(tree),
    }, **extra)
    inv = {"all": {"children": {"kvm_hosts": {"hosts": {}},
                                "kvm_guests": {"hosts": {"localhost": guest}}}}}
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps(inv))
    return path


def pick_tree() -> Path:
    for name in ("ixgbe-4q-recorded", "ixgbe-4q"):
        if (TREES / name).is_dir():
            return TREES / name
    pytest.fail("no ixgbe tree under %s (the tuner's test trees)" % TREES)


def test_guest_tuning_installs_applies_once_and_reports_flags(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pick_tree(), tree, symlinks=True)
    inv = inventory(tmp_path, tree)
    run = run_playbook("site.yml", inv)
    assert run.rc == 0, run.failures() or run.stdout[-3000:]
    prefix = tmp_path / "usr-local"
    assert (prefix / "sbin" / "nettune").exists()
    assert (prefix / "lib" / "nettune" / "nettune" / "cli.py").exists()
    unit = (tmp_path / "etc/systemd/system/nettune.service").read_text()
    assert str(prefix / "sbin" / "nettune") in unit
    assert (tmp_path / "etc/udev/rules.d/90-nettune.rules").exists()
    assert "profile = throughput" in (tmp_path / "etc/nettune.conf").read_text()
    applied = run.task_results("Apply the profile")
    assert applied and applied[0].get("changed"), applied
    flags = run.task_results("Publish the string-op flags")[0]["ansible_facts"]
    cpuinfo = (tree / "proc" / "cpuinfo").read_text()
    assert flags["guest_net_tuning_cpu_flags"]["rep_good"] == (" rep_good" in cpuinfo)
    assert flags["guest_net_tuning_cpu_flags"]["erms"] == (" erms" in cpuinfo)

    again = run_playbook("site.yml", inv)
    assert again.rc == 0, again.failures()
    assert again.host()["changed"] == 0, again.changed_tasks()

    check = run_playbook("site.yml", inv, check=True, diff=True)
    assert check.rc == 0 and check.host()["changed"] == 0, check.changed_tasks()


def test_guest_tuning_requires_flags(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pick_tree(), tree, symlinks=True)
    cpuinfo = tree / "proc" / "cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace(" erms", ""))
    run = run_playbook("site.yml", inventory(tmp_path, tree, guest_net_tuning_apply=False,
                                             guest_net_tuning_require_cpu_flags=["erms"]))
    assert run.rc != 0
    assert "the guest CPU lacks erms" in " ".join(run.failures())


def test_bad_profile_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(pick_tree(), tree, symlinks=True)
    run = run_playbook("site.yml", inventory(tmp_path, tree, guest_net_tuning_profile="fast"))
    assert run.rc != 0
    assert "guest_net_tuning_profile" in " ".join(run.failures())
    assert not (tmp_path / "usr-local").exists()
