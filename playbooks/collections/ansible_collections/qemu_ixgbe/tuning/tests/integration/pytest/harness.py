"""Helpers of the integration suite: paths, playbook runner, virsh, QEMU probes.

The suite drives the project's playbooks (playbooks/site.yml, ci-vm.yml) with
the project's build (QEMU, guest image) and scripts (scripts/libvirtd.sh), so
it runs from the project's repository, where the collection lives at
playbooks/collections/ansible_collections/qemu_ixgbe/tuning.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import pytest

HERE = Path(__file__).resolve().parent
COLLECTION = HERE.parents[2]                    # .../ansible_collections/qemu_ixgbe/tuning
COLLECTIONS = COLLECTION.parents[2]             # the directory holding ansible_collections/
PLAYBOOKS = COLLECTIONS.parent
REPO = PLAYBOOKS.parent
BUILD_DIR = Path(os.environ.get("BUILD_DIR", str(REPO / "build"))).resolve()
QEMU = Path(os.environ.get("QEMU", str(BUILD_DIR / "qemu-build" / "qemu-system-x86_64")))
GUEST_DIR = BUILD_DIR / "guest" / "6.1"
URI = "qemu:///system"

if not (PLAYBOOKS / "site.yml").is_file():
    raise RuntimeError("%s: this suite drives the project's playbooks; run it from the project's "
                       "repository (playbooks/collections/ansible_collections/qemu_ixgbe/tuning)"
                       % HERE)

# The collection's pure Python (module_utils, tests/unit/topologies.py) is imported directly.
if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


def tool(name: str) -> str:
    """An executable from the venv running pytest, else from PATH."""
    local = Path(sys.executable).parent / name
    if local.exists():
        return str(local)
    found = shutil.which(name)
    if not found:
        pytest.fail("%s not found: run scripts/deps.sh (it installs scripts/deps/pip-ansible.txt)"
                    % name)
    return found


def ansible_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({
        "ANSIBLE_CONFIG": str(PLAYBOOKS / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_LOCAL_TEMP": str(BUILD_DIR / "ansible-tmp" / "local"),
        "ANSIBLE_REMOTE_TEMP": str(BUILD_DIR / "ansible-tmp" / "remote"),
        "BUILD_DIR": str(BUILD_DIR),
        "ANSIBLE_CALLBACK_PLUGINS": str(HERE / "callback_plugins"),
        "PATH": str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", ""),
    })
    env.update(extra or {})
    return env


@dataclass
class PlaybookRun:
    rc: int
    stdout: str
    stderr: str
    stats: Dict[str, Dict[str, int]] = field(default_factory=dict)
    data: Dict[str, Any] = field(default_factory=dict)

    def host(self, name: str = "localhost") -> Dict[str, int]:
        return self.stats.get(name, {})

    def failures(self) -> List[str]:
        """Messages of the failed task results."""
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                for host, res in task.get("hosts", {}).items():
                    if res.get("failed") or res.get("unreachable"):
                        msgs = [str(res.get("msg", res))]
                        msgs += [str(r.get("msg")) for r in res.get("results", [])
                                 if isinstance(r, dict) and r.get("failed")]
                        out.append("%s [%s]: %s" % (task["task"]["name"], host,
                                                    " | ".join(msgs)))
        return out

    def task_results(self, name: str) -> List[Dict[str, Any]]:
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                full = task["task"]["name"]
                if full == name or full.endswith(" : " + name):
                    out.extend(task.get("hosts", {}).values())
        return out

    def changed_tasks(self) -> List[str]:
        """Names of the tasks that reported a change, with what they said changed."""
        out = []
        for play in self.data.get("plays", []):
            for task in play.get("tasks", []):
                for res in task.get("hosts", {}).values():
                    if res.get("changed"):
                        detail = res.get("changes") or res.get("diff") or res.get("msg") or ""
                        out.append("%s: %s" % (task["task"]["name"], str(detail)[:1500]))
        return out


def run_playbook(playbook: Union[str, Path], inventory: Optional[Path] = None,
                 extra_vars: Optional[Dict[str, Any]] = None, check: bool = False,
                 diff: bool = False, timeout: int = 900,
                 env: Optional[Dict[str, str]] = None,
                 prefix: Optional[List[str]] = None) -> PlaybookRun:
    """ansible-playbook with the json callback; returns rc, stats and results.

    playbook: a name in playbooks/ (run there with playbooks/ansible.cfg), or a path
    (run from its directory; env then says which configuration and collections apply).
    prefix: a command ansible-playbook runs under (e.g. ip netns exec NS).
    """
    path = PLAYBOOKS / playbook
    cmd = list(prefix or []) + [tool("ansible-playbook"), str(path)]
    if inventory is not None:
        cmd += ["-i", str(inventory)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(cmd, cwd=str(path.parent), check=False, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL,
                          env=ansible_env(dict({"ANSIBLE_STDOUT_CALLBACK": "test_json"},
                                               **(env or {}))))
    run = PlaybookRun(proc.returncode, proc.stdout, proc.stderr)
    try:
        start = proc.stdout.index("{")
        run.data = json.loads(proc.stdout[start:])
        run.stats = run.data.get("stats", {})
    except ValueError:
        pass
    return run


def write_inventory(path: Path, hostvars: Dict[str, Any]) -> Path:
    """An inventory with localhost as the one KVM host."""
    inv = {"all": {"children": {
        "kvm_hosts": {"hosts": {"localhost": dict(
            {"ansible_connection": "local",
             "ansible_python_interpreter": sys.executable}, **hostvars)}},
        "kvm_guests": {"hosts": {}},
    }}}
    path.write_text(json.dumps(inv, indent=1))
    return path


def virsh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["virsh", "-q", "-c", URI] + list(args), check=False, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError("virsh %s failed: %s" % (" ".join(args), proc.stderr))
    return proc


# ------------------------------------------------------------------ QEMU --

def require_numa_binding(qemu: Path) -> None:
    """libvirt's <numatune> binds guest memory with QEMU's host-nodes/policy=bind."""
    try:
        out = subprocess.run([str(qemu), "-machine", "none", "-display", "none", "-monitor",
                              "none", "-serial", "none", "-object",
                              "memory-backend-ram,id=m0,size=1M,host-nodes=0,policy=bind"],
                             check=False, capture_output=True, text=True, timeout=3,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return  # QEMU accepted the binding and kept running
    if "NUMA node binding are not supported" in out.stderr:
        pytest.fail("%s was built without NUMA support, so libvirt cannot start a domain with "
                    "<numatune>: build QEMU with libnuma-dev installed (configure --enable-numa)"
                    % qemu)


def qemu_devices(qemu: Path) -> str:
    return subprocess.run([str(qemu), "-machine", "none", "-device", "help"],
                          check=False, capture_output=True, text=True, timeout=60).stdout


def has_ixgbe(qemu: Path) -> bool:
    return 'name "ixgbe"' in qemu_devices(qemu)


# ---------------------------------------------------------- guest tuning --
# guest_net_tuning runs on localhost against a copy of a sys/proc tree recorded in a
# real ixgbe guest (nettune --root), installing into a temporary prefix.

TREES = REPO / "tests" / "tuner" / "trees"


def recorded_guest_tree(dest: Path) -> Path:
    """A copy of the tuner's recorded ixgbe guest tree at dest."""
    for name in ("ixgbe-4q-recorded", "ixgbe-4q"):
        if (TREES / name).is_dir():
            shutil.copytree(TREES / name, dest, symlinks=True)
            return dest
    pytest.fail("no ixgbe tree under %s (the tuner's test trees)" % TREES)


def guest_inventory(tmp_path: Path, tree: Path, **extra: Any) -> Path:
    """localhost as the one kvm_guests host, everything the role writes under tmp_path."""
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


def assert_guest_tuned(run: PlaybookRun, tmp_path: Path, tree: Path) -> None:
    """nettune installed under tmp_path, the profile applied and verified, flags reported."""
    assert run.rc == 0, run.failures() or run.stdout[-3000:]
    prefix = tmp_path / "usr-local"
    assert (prefix / "sbin" / "nettune").stat().st_mode & 0o7777 == 0o755
    package = prefix / "lib" / "nettune" / "nettune"
    assert (package / "cli.py").exists()
    modes = {p.name: oct(p.stat().st_mode & 0o7777) for p in package.glob("*.py")}
    assert set(modes.values()) == {"0o644"}, modes
    unit = (tmp_path / "etc/systemd/system/nettune.service").read_text()
    assert str(prefix / "sbin" / "nettune") in unit
    assert (tmp_path / "etc/udev/rules.d/90-nettune.rules").exists()
    assert "profile = throughput" in (tmp_path / "etc/nettune.conf").read_text()
    applied = run.task_results("Apply the profile")
    assert applied and applied[0].get("changed"), applied
    verified = run.task_results("Verify the profile is in place")
    assert verified and verified[0].get("rc") == 0, verified
    flags = run.task_results("Publish the string-op flags")[0]["ansible_facts"]
    cpuinfo = (tree / "proc" / "cpuinfo").read_text()
    assert flags["guest_net_tuning_cpu_flags"]["rep_good"] == (" rep_good" in cpuinfo)
    assert flags["guest_net_tuning_cpu_flags"]["erms"] == (" erms" in cpuinfo)
