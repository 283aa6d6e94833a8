"""The collection as it ships: built into a tarball, installed into an empty directory, run.

ansible-galaxy builds the tarball from the repository's collection; it is installed
with ansible-galaxy into a fresh directory, and guest_net_tuning runs from there
(Ansible's configuration and ANSIBLE_COLLECTIONS_PATH name only that directory)
against the same recorded guest tree as test_guest_tuning.py. The tarball must carry
nettune itself: in the repository, roles/guest_net_tuning/files/ holds links to
guest/ (scripts/sync-collection.sh), which the build turns into regular files.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

from harness import (COLLECTION, REPO, ansible_env, assert_guest_tuned, guest_inventory,
                     recorded_guest_tree, run_playbook, tool)

SHIPPED = COLLECTION / "roles" / "guest_net_tuning" / "files"
PLAYBOOK = """---
- name: Tune the guest with the installed collection
  hosts: kvm_guests
  gather_facts: false
  roles:
    - role: qemu_ixgbe.tuning.guest_net_tuning
"""


def run(argv: List[str], env: Dict[str, str], cwd: Path,
        timeout: int = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, cwd=str(cwd), env=env, check=False, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, "%s: %s%s" % (" ".join(argv), proc.stdout[-3000:],
                                               proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, object]]:
    """The built tarball, and the collection installed from it into an empty directory."""
    work = tmp_path_factory.mktemp("shipped")
    root = work / "collections"
    config = work / "ansible.cfg"
    config.write_text("[defaults]\ncollections_path = %s\ncollections_scan_sys_path = false\n"
                      % root)
    env = ansible_env({"ANSIBLE_CONFIG": str(config), "ANSIBLE_COLLECTIONS_PATH": str(root),
                       "ANSIBLE_GALAXY_CACHE_DIR": str(work / "galaxy-cache")})
    run([tool("ansible-galaxy"), "collection", "build", "--output-path", str(work / "dist"),
         str(COLLECTION)], env, work)
    tarballs = sorted((work / "dist").glob("qemu_ixgbe-tuning-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    root.mkdir()
    run([tool("ansible-galaxy"), "collection", "install", "--offline", "-p", str(root),
         str(tarballs[0])], env, work)
    yield {"work": work, "tarball": tarballs[0], "env": env,
           "collection": root / "ansible_collections" / "qemu_ixgbe" / "tuning"}


def test_shipped_nettune_links_match_guest() -> None:
    """files/ of the role is exactly one link per file the role installs from guest/."""
    proc = subprocess.run([str(REPO / "scripts" / "sync-collection.sh"), "--check"],
                          check=False, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr


def test_tarball_carries_nettune_and_the_unit_tests(installed: Dict[str, object]) -> None:
    tarball = installed["tarball"]
    assert isinstance(tarball, Path)
    with tarfile.open(str(tarball)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        links = [n for n, m in members.items() if not (m.isfile() or m.isdir())]
        assert links == [], "the tarball must hold files, not links: %s" % links
        shipped = sorted(p for p in SHIPPED.rglob("*") if p.is_symlink())
        assert shipped, "no links under %s: run scripts/sync-collection.sh" % SHIPPED
        for link in shipped:
            name = str(link.relative_to(COLLECTION))
            assert name in members, "%s is not in the tarball" % name
            data = tar.extractfile(members[name])
            assert data is not None and data.read() == link.resolve().read_bytes(), name
    assert "roles/guest_net_tuning/files/nettune/cli.py" in members
    assert "tests/unit/plugins/module_utils/test_cpulist.py" in members
    assert "tests/sanity/ignore-2.19.txt" in members
    assert not [n for n in members if n.startswith("tests/integration")], \
        "tests/integration needs the project's repository and must not ship (galaxy.yml)"


def test_installed_unit_tests_pass(installed: Dict[str, object]) -> None:
    """The unit tests run from the installed copy, importing that copy."""
    collection = installed["collection"]
    assert isinstance(collection, Path)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    proc = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                "--rootdir", str(collection), str(collection / "tests" / "unit")],
               env, collection)
    assert " passed" in proc.stdout, proc.stdout[-2000:]


def test_installed_role_tunes_the_guest(installed: Dict[str, object], tmp_path: Path) -> None:
    env, collection = installed["env"], installed["collection"]
    assert isinstance(env, dict) and isinstance(collection, Path)
    listed = json.loads(run([tool("ansible-galaxy"), "collection", "list", "qemu_ixgbe.tuning",
                             "--format", "json"], env, tmp_path).stdout)
    assert list(listed) == [str(collection.parents[1])], listed

    tree = recorded_guest_tree(tmp_path / "tree")
    inv = guest_inventory(tmp_path, tree)
    playbook = tmp_path / "play" / "tune.yml"   # no collections/ next to it
    playbook.parent.mkdir()
    playbook.write_text(PLAYBOOK)
    first = run_playbook(playbook, inv, env=env)
    assert_guest_tuned(first, tmp_path, tree)
    deployed = tmp_path / "usr-local" / "lib" / "nettune" / "nettune"
    originals = sorted((REPO / "guest" / "nettune").glob("*.py"))
    assert sorted(p.name for p in deployed.glob("*.py")) == [p.name for p in originals]
    for original in originals:
        assert (deployed / original.name).read_bytes() == original.read_bytes(), original.name

    again = run_playbook(playbook, inv, env=env)
    assert again.rc == 0, again.failures()
    assert again.host()["changed"] == 0, again.changed_tasks()
