"""Shared fixtures for the Ansible tests: paths, playbook runner, libvirtd, topologies."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[2]
PLAYBOOKS = REPO / "playbooks"
COLLECTIONS = PLAYBOOKS / "collections"
COLLECTION = COLLECTIONS / "ansible_collections" / "qemu_ixgbe" / "tuning"
BUILD_DIR = Path(os.environ.get("BUILD_DIR", str(REPO / "build"))).resolve()
QEMU = Path(os.environ.get("QEMU", str(BUILD_DIR / "qemu-build" / "qemu-system-x86_64")))
GUEST_DIR = BUILD_DIR / "guest" / "6.1"
URI = "qemu:///system"

# The collection's pure Python (module_utils) is imported directly by unit tests.
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
        "ANSIBLE_CALLBACK_PLUGINS": str(Path(__file__).resolve().parent / "callback_plugins"),
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


def run_playbook(playbook: str, inventory: Optional[Path] = None,
                 extra_vars: Optional[Dict[str, Any]] = None, check: bool = False,
                 diff: bool = False, timeout: int = 900,
                 env: Optional[Dict[str, str]] = None) -> PlaybookRun:
    """ansible-playbook with the json callback; returns rc, stats and results."""
    cmd = [tool("ansible-playbook"), str(PLAYBOOKS / playbook)]
    if inventory is not None:
        cmd += ["-i", str(inventory)]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    if check:
        cmd.append("--check")
    if diff:
        cmd.append("--diff")
    proc = subprocess.run(cmd, cwd=str(PLAYBOOKS), capture_output=True, text=True,
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
    proc = subprocess.run(["virsh", "-q", "-c", URI] + list(args), capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError("virsh %s failed: %s" % (" ".join(args), proc.stderr))
    return proc


# ------------------------------------------------------------- topologies --

def two_node_topology() -> Dict[str, Any]:
    """2 sockets, 4 cores each, 2 threads per core; NIC ens1f0 on node 1.

    node0: CPUs 0-3 and their siblings 8-11; node1: CPUs 4-7 and 12-15.
    """
    cpus = {}
    for cpu in range(16):
        first = cpu % 8
        node = 0 if first < 4 else 1
        cpus[str(cpu)] = {"node": node, "core": "%d:%d" % (node, first % 4),
                          "siblings": [first, first + 8]}
    return {
        "nodes": {"0": {"cpus": [0, 1, 2, 3, 8, 9, 10, 11], "hugepages": {}},
                  "1": {"cpus": [4, 5, 6, 7, 12, 13, 14, 15], "hugepages": {}}},
        "cpus": cpus,
        "online": list(range(16)),
        "isolated": [],
        "nics": {"ens1f0": {"numa_node": 1, "driver": "ixgbe", "physical": True},
                 "eno1": {"numa_node": 0, "driver": "igb", "physical": True},
                 "lo": {"numa_node": None, "driver": None, "physical": False}},
        "cpu": {"vendor": "GenuineIntel", "family": 6, "model": 85, "stepping": 4,
                "flags": ["erms", "fsrm", "rep_good"]},
        "hugepages": {},
        "hugetlbfs_mounts": [],
        "cmdline": "",
        "vhost_net": {"device": True, "module_loaded": True},
        "irqbalance_running": False,
    }


def write_sysfs_tree(root: Path, topo: Dict[str, Any]) -> Path:
    """A sys/proc tree with the given topology, as the host_topology module reads it."""
    sysd = root / "sys"
    cpu_dir = sysd / "devices/system/cpu"
    node_dir = sysd / "devices/system/node"
    online = sorted(int(c) for c in topo["cpus"])
    cpu_dir.mkdir(parents=True)
    (cpu_dir / "online").write_text("%d-%d\n" % (online[0], online[-1]))
    for n, v in topo["nodes"].items():
        d = node_dir / ("node%s" % n)
        (d / "hugepages/hugepages-2048kB").mkdir(parents=True)
        (d / "cpulist").write_text(",".join(str(c) for c in v["cpus"]) + "\n")
        (d / "hugepages/hugepages-2048kB/nr_hugepages").write_text("0\n")
        (d / "hugepages/hugepages-2048kB/free_hugepages").write_text("0\n")
    for c, v in topo["cpus"].items():
        t = cpu_dir / ("cpu%s" % c) / "topology"
        t.mkdir(parents=True)
        pkg, core = v["core"].split(":")
        (t / "physical_package_id").write_text(pkg + "\n")
        (t / "core_id").write_text(core + "\n")
        (t / "thread_siblings_list").write_text(",".join(str(s) for s in v["siblings"]) + "\n")
    for i, (nic, v) in enumerate(sorted(topo["nics"].items())):
        ndir = sysd / "class/net" / nic
        ndir.mkdir(parents=True)
        if v["physical"]:
            pci = sysd / "devices/pci0000:00" / ("0000:00:%02x.0" % (i + 1))
            (pci / "driver").parent.mkdir(parents=True, exist_ok=True)
            (pci / "numa_node").write_text("%d\n" % v["numa_node"])
            drv = sysd / "bus/pci/drivers" / v["driver"]
            drv.mkdir(parents=True, exist_ok=True)
            (pci / "driver").symlink_to(os.path.relpath(drv, pci))
            (ndir / "device").symlink_to(os.path.relpath(pci, ndir))
    hp = sysd / "kernel/mm/hugepages/hugepages-2048kB"
    hp.mkdir(parents=True)
    (hp / "nr_hugepages").write_text("0\n")
    (hp / "free_hugepages").write_text("0\n")
    proc = root / "proc"
    proc.mkdir()
    cpu = topo["cpu"]
    (proc / "cpuinfo").write_text(
        "processor\t: 0\nvendor_id\t: %s\ncpu family\t: %d\nmodel\t\t: %d\nstepping\t: %d\n"
        "flags\t\t: %s\n\n" % (cpu["vendor"], cpu["family"], cpu["model"], cpu["stepping"],
                              " ".join(cpu["flags"])))
    (proc / "cmdline").write_text("BOOT_IMAGE=/vmlinuz quiet\n")
    (proc / "mounts").write_text("proc /proc proc rw 0 0\n")
    return root


@pytest.fixture
def topo2() -> Dict[str, Any]:
    return two_node_topology()


# ---------------------------------------------------------------- libvirtd --

@pytest.fixture(scope="session")
def libvirtd() -> Iterator[str]:
    """A running libvirtd on qemu:///system (started by hand when there is no systemd)."""
    if os.geteuid() != 0:
        pytest.fail("the libvirt tests need root (qemu:///system)")
    script = str(REPO / "scripts" / "libvirtd.sh")
    was_running = subprocess.run([script, "status"], capture_output=True, timeout=60,
                                 stdin=subprocess.DEVNULL).returncode == 0
    proc = subprocess.run([script, "start"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail("scripts/libvirtd.sh start failed: %s" % proc.stderr)
    yield URI
    if not was_running:
        subprocess.run([script, "stop"], capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def qemu_binary() -> Path:
    if not QEMU.exists():
        pytest.fail("%s is missing: build it with scripts/build-qemu.sh" % QEMU)
    return QEMU


@pytest.fixture(scope="session")
def guest_image() -> Dict[str, Path]:
    kernel, initrd = GUEST_DIR / "vmlinuz", GUEST_DIR / "initrd.img"
    if not (kernel.exists() and initrd.exists()):
        pytest.fail("guest image missing in %s: run scripts/build-guest.sh 6.1" % GUEST_DIR)
    return {"kernel": kernel, "initrd": initrd}


def require_numa_binding(qemu: Path) -> None:
    """libvirt's <numatune> binds guest memory with QEMU's host-nodes/policy=bind."""
    try:
        out = subprocess.run([str(qemu), "-machine", "none", "-display", "none", "-monitor",
                              "none", "-serial", "none", "-object",
                              "memory-backend-ram,id=m0,size=1M,host-nodes=0,policy=bind"],
                             capture_output=True, text=True, timeout=3,
                             stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return  # QEMU accepted the binding and kept running
    if "NUMA node binding are not supported" in out.stderr:
        pytest.fail("%s was built without NUMA support, so libvirt cannot start a domain with "
                    "<numatune>: build QEMU with libnuma-dev installed (configure --enable-numa)"
                    % qemu)


def qemu_devices(qemu: Path) -> str:
    return subprocess.run([str(qemu), "-machine", "none", "-device", "help"],
                          capture_output=True, text=True, timeout=60).stdout


def has_ixgbe(qemu: Path) -> bool:
    return 'name "ixgbe"' in qemu_devices(qemu)
