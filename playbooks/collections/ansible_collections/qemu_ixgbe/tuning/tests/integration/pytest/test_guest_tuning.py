"""guest_net_tuning through site.yml: nettune installed, profile applied once, flags reported.

nettune runs on a copy of a sys/proc tree recorded in a real ixgbe guest (nettune --root),
so the live machine is not retuned; everything else (install, config, verify/apply, the
CPU flag report) is what runs on a guest. The same role from the collection's built and
installed tarball: test_collection_tarball.py.
"""
from __future__ import annotations

from pathlib import Path

from harness import assert_guest_tuned, guest_inventory, recorded_guest_tree, run_playbook


def test_guest_tuning_installs_applies_once_and_reports_flags(tmp_path: Path) -> None:
    tree = recorded_guest_tree(tmp_path / "tree")
    inv = guest_inventory(tmp_path, tree)
    run = run_playbook("site.yml", inv)
    assert_guest_tuned(run, tmp_path, tree)

    again = run_playbook("site.yml", inv)
    assert again.rc == 0, again.failures()
    assert again.host()["changed"] == 0, again.changed_tasks()

    check = run_playbook("site.yml", inv, check=True, diff=True)
    assert check.rc == 0 and check.host()["changed"] == 0, check.changed_tasks()


def test_guest_tuning_requires_flags(tmp_path: Path) -> None:
    tree = recorded_guest_tree(tmp_path / "tree")
    cpuinfo = tree / "proc" / "cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace(" erms", ""))
    run = run_playbook("site.yml", guest_inventory(tmp_path, tree, guest_net_tuning_apply=False,
                                                   guest_net_tuning_require_cpu_flags=["erms"]))
    assert run.rc != 0
    assert "the guest CPU lacks erms" in " ".join(run.failures())


def test_bad_profile_is_refused(tmp_path: Path) -> None:
    tree = recorded_guest_tree(tmp_path / "tree")
    run = run_playbook("site.yml", guest_inventory(tmp_path, tree,
                                                   guest_net_tuning_profile="fast"))
    assert run.rc != 0
    assert "guest_net_tuning_profile" in " ".join(run.failures())
    assert not (tmp_path / "usr-local").exists()
