"""guest_net_tuning through site.yml: nettune installed, profile applied once, flags reported.

nettune runs on a copy of a sys/proc tree recorded in a real ixgbe guest (nettune --root),
so the live machine is not retuned; everything else (install, config, verify/apply, the
CPU flag report) is what runs on a guest. The same role from the collection's built and
installed tarball: test_collection_tarball.py.
"""
from __future__ import annotations

from pathlib import Path

from harness import REPO, assert_guest_tuned, guest_inventory, recorded_guest_tree, run_playbook


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
    """Also: a package that drifted (a module edited, one chmod-ed) is put back as shipped."""
    tree = recorded_guest_tree(tmp_path / "tree")
    cpuinfo = tree / "proc" / "cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace(" erms", ""))
    package = tmp_path / "usr-local" / "lib" / "nettune" / "nettune"
    package.mkdir(parents=True)
    originals = {p.name: p.read_bytes() for p in (REPO / "guest" / "nettune").glob("*.py")}
    for name, data in originals.items():
        (package / name).write_bytes(data)
        (package / name).chmod(0o644)
    (package / "cli.py").write_bytes(originals["cli.py"].replace(b"def ", b"def  ", 1))
    (package / "plan.py").chmod(0o600)
    run = run_playbook("site.yml", guest_inventory(tmp_path, tree, guest_net_tuning_apply=False,
                                                   guest_net_tuning_require_cpu_flags=["erms"]))
    assert run.rc != 0
    assert "the guest CPU lacks erms" in " ".join(run.failures())
    installed = run.task_results("Unpack the nettune package")
    assert installed and installed[0].get("changed"), installed
    for name, data in originals.items():
        assert (package / name).read_bytes() == data, name
        assert (package / name).stat().st_mode & 0o7777 == 0o644, name


def test_bad_profile_is_refused(tmp_path: Path) -> None:
    tree = recorded_guest_tree(tmp_path / "tree")
    run = run_playbook("site.yml", guest_inventory(tmp_path, tree,
                                                   guest_net_tuning_profile="fast"))
    assert run.rc != 0
    assert "guest_net_tuning_profile" in " ".join(run.failures())
    assert not (tmp_path / "usr-local").exists()
