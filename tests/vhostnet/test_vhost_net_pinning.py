"""Real vhost-net workers pinned by the collection's vhost_pinning role.

The CI machines have no /dev/vhost-net; the guests the project boots do (Debian's
kernels build vhost_net as a module). So the host here is a guest: the systemd
guest's libvirt variant (scripts/build-rootfs-libvirt.sh: libvirtd, Debian's QEMU,
sshd), booted under the project's QEMU with two NUMA nodes and the emulated 82599
on node 1 (behind a pxb-pcie expander bridge). Inside it, libvirt starts a nested
TCG domain, paused, with a 2-queue virtio-net NIC on a `vhost=on` tap netdev
(through <qemu:commandline>: libvirt uses vhost-net for KVM domains only): QEMU
opens /dev/vhost-net once per queue pair and the kernel makes one `vhost-<pid>`
worker each, at VHOST_SET_OWNER, before any vCPU runs. The nested guest never
boots; the workers exist all the same.

Ansible (the checkout's ansible-playbook and collection) reaches the guest over
SSH across the lab wire and runs the role: it must find both workers, plan the
CPUs of the NIC's node that no vCPU of the domain is pinned to, pin the workers
there and read them back. The test reads Cpus_allowed_list from /proc in the
guest itself, before and after, and reruns the role (changed=0) and in check mode
after a drift. The guest's kernel decides the worker model: Linux 6.1 (bookworm)
makes kernel threads (children of kthreadd), Linux >= 6.4 threads of QEMU.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import parse_cpulist
from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import REPO_ROOT, build_dir
from ixgbe_testlib.pytest_plugin import remember_vm
from ixgbe_testlib.sysguest import Lab, RootfsImage, SystemdVM, Wire, ixgbe_wire, pick_accel, rootfs_image

DOMAIN = "vhn"
NESTED_TAP = "vhn0"
GUEST_CPUS = 4  # node 0: CPUs 0-1, node 1: CPUs 2-3
NIC_NODE = 1
VCPU_PIN = 2  # the nested domain's one vCPU, on the NIC's node
PLAN = [3]  # the NIC's node without the vCPU's CPU
PIN_TASK = "Pin the workers of the running domain"
CALLBACKS = (REPO_ROOT / "playbooks" / "collections" / "ansible_collections" / "qemu_ixgbe" / "tuning"
             / "tests" / "integration" / "pytest" / "callback_plugins")

# libvirt opens /dev/vhost-net only for KVM domains (a TCG domain's
# <driver name='vhost'/> is ignored), so the vhost=on tap netdev comes through
# <qemu:commandline>: QEMU opens the tap (made by the test, multi-queue) and
# /dev/vhost-net itself (the image's libvirt-qemu.conf allows it).
NESTED_XML = f"""<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>
  <name>{DOMAIN}</name>
  <memory unit='MiB'>64</memory>
  <vcpu placement='static'>1</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='{VCPU_PIN}'/></cputune>
  <os><type arch='x86_64' machine='q35'>hvm</type></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <memballoon model='none'/>
  </devices>
  <qemu:commandline>
    <qemu:arg value='-netdev'/>
    <qemu:arg value='tap,id=vh0,ifname={NESTED_TAP},script=no,downscript=no,vhost=on,queues=2'/>
    <qemu:arg value='-device'/>
    <qemu:arg value='virtio-net-pci,netdev=vh0,mq=on,vectors=6,mac=52:54:00:7a:00:01,bus=pcie.0,addr=0x10'/>
  </qemu:commandline>
</domain>
"""

PLAYBOOK = """---
- name: Pin the nested domain's vhost-net workers
  hosts: libvirt_hosts
  gather_facts: false
  roles:
    - role: qemu_ixgbe.tuning.vhost_pinning
"""


@dataclasses.dataclass(frozen=True)
class NodeWire(Wire):
    """A lab wire whose NIC sits behind a PCIe expander bridge on a NUMA node."""

    node: int = 0

    def qemu_args(self, index: int) -> list[str]:
        tap = f"tap,id={self.netdev},ifname={self.tap},script=no,downscript=no,vhost=off"
        return [
            "-device", f"pxb-pcie,id=pxb{index},bus_nr={0x40 + 0x10 * index},numa_node={self.node}",
            "-device", f"pcie-root-port,id=rp{index},bus=pxb{index},chassis={index + 10},slot=0",
            "-device", f"{self.model},netdev={self.netdev},mac={self.mac},romfile=,id=nic{index},bus=rp{index}",
            "-netdev", tap,
        ]  # fmt: skip


def numa_args() -> list[str]:
    half = GUEST_CPUS // 2
    return [
        "-object", "memory-backend-ram,id=m0,size=1G", "-object", "memory-backend-ram,id=m1,size=1G",
        "-numa", f"node,nodeid=0,cpus=0-{half - 1},memdev=m0",
        "-numa", f"node,nodeid=1,cpus={half}-{GUEST_CPUS - 1},memdev=m1",
    ]  # fmt: skip


def build_image(log_root: Path, kernel: str) -> RootfsImage:
    log = log_root / "build-rootfs-libvirt.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        rc = subprocess.run(["bash", str(REPO_ROOT / "scripts" / "build-rootfs-libvirt.sh")],
                            stdout=fh, stderr=fh, check=False).returncode
    if rc != 0:
        pytest.fail(f"scripts/build-rootfs-libvirt.sh failed (exit {rc})\n{log.read_text()[-4000:]}",
                    pytrace=False)
    image = rootfs_image("bookworm", variant="libvirt")
    if kernel == "6.1":
        return image
    d = image.disk.parent  # the same disk with Debian 13's kernel
    return dataclasses.replace(image, vmlinuz=d / "vmlinuz-6.12", initrd=d / "initrd-6.12.img",
                               release=image.manifest["kernel-release-6.12"])


# Run by the guest's python3: every thread named vhost-* with what the test checks.
THREADS_PY = """
import glob, json
out = []
for path in glob.glob("/proc/[0-9]*/task/[0-9]*/status"):
    try:
        f = dict(l.split(":\\t", 1) for l in open(path).read().splitlines() if ":\\t" in l)
    except OSError:
        continue
    if f.get("Name", "").startswith("vhost-"):
        out.append([int(path.split("/")[4]), int(f["Tgid"]), int(f["PPid"]), f["Name"], f["Cpus_allowed_list"]])
print(json.dumps(sorted(out)))
"""


def guest_threads(vm: SystemdVM) -> list[dict[str, Any]]:
    """Every thread of the guest named vhost-*, read from the guest's /proc
    (independently of the collection): tid, tgid, ppid, comm, Cpus_allowed_list."""
    rows = json.loads(vm.sh(f"python3 -c {shlex.quote(THREADS_PY)}"))
    return [{"tid": tid, "tgid": tgid, "ppid": ppid, "comm": comm, "cpus": parse_cpulist(cpus)}
            for tid, tgid, ppid, comm, cpus in rows]


def vcpu_cpus(vm: SystemdVM, qemu_pid: int) -> list[list[int]]:
    out = vm.sh(f"grep -H '' /proc/{qemu_pid}/task/*/comm | grep ':CPU ' | cut -d/ -f5 | "
                f"while read t; do sed -n 's/^Cpus_allowed_list:\\t//p' /proc/{qemu_pid}/task/$t/status; done")
    return [parse_cpulist(c) for c in out.split()]


def kernel_below_6_4(s: Setup) -> bool:
    """Whether the guest's kernel makes vhost workers kernel threads (< 6.4)."""
    major, minor = (int(x) for x in s.kernel.split("-")[0].split(".")[:2])
    return (major, minor) < (6, 4)


def diagnose(s: Setup) -> str:
    """What the guest says about its vhost workers and the nested QEMU."""
    return s.vm.run(
        f"ps -eLo pid,lwp,ppid,comm | grep -i -e vhost -e qemu; lsmod | grep -e vhost -e tun; "
        f"ls -l /dev/vhost-net; tail -n 20 /var/log/libvirt/qemu/{DOMAIN}.log", timeout=120,
    ).stdout


@dataclasses.dataclass
class Setup:
    vm: SystemdVM
    lab: Lab
    work: Path
    inventory: Path
    playbook: Path
    qemu_pid: int
    kernel: str
    nic: str
    timings: dict[str, float]


def ansible(s: Setup, *extra: str) -> dict[str, Any]:
    """ansible-playbook (the checkout's, with its collection) in the lab
    namespace, against the guest over SSH; the json callback's result."""
    venv_bin = build_dir() / "venv" / "bin"
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(REPO_ROOT / "playbooks" / "collections"),
        # the collection's test-only stdout callback: one JSON document
        "ANSIBLE_STDOUT_CALLBACK": "test_json",
        "ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS),
        "ANSIBLE_HOST_KEY_CHECKING": "False",
        "ANSIBLE_PIPELINING": "True",  # one SSH round trip per task: the guest runs under TCG
        # SSH connection sharing of this VM only (not a master left by an earlier guest at the same address)
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(s.work / f"cp-{os.getpid()}"),
        "ANSIBLE_LOCAL_TEMP": str(s.work / "ansible-local"),
        "ANSIBLE_NOCOLOR": "1",
        "PATH": f"{venv_bin}{os.pathsep}{env.get('PATH', '')}",
    })  # fmt: skip
    argv = s.lab.prefix() + [str(venv_bin / "ansible-playbook"), "-i", str(s.inventory), str(s.playbook), *extra]
    t0 = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=900, check=False)
    s.timings[f"ansible-playbook {' '.join(extra)}".strip()] = time.monotonic() - t0
    try:
        data: dict[str, Any] = json.loads(proc.stdout[proc.stdout.index("{"):])
    except ValueError:
        pytest.fail(f"ansible-playbook gave no JSON (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n"
                    f"{proc.stderr[-3000:]}", pytrace=False)
    data["rc"] = proc.returncode
    return data


def task_result(run: dict[str, Any], name: str) -> dict[str, Any]:
    for play in run.get("plays", []):
        for task in play.get("tasks", []):
            full = task["task"]["name"]  # a role's task: "<role> : <name>"
            if full == name or full.endswith(" : " + name):
                return dict(task["hosts"]["guest"])
    raise AssertionError(f"no task {name!r} in the run")


def failures(run: dict[str, Any]) -> list[str]:
    return [f"{t['task']['name']}: {r.get('msg')}" for p in run.get("plays", []) for t in p.get("tasks", [])
            for r in t.get("hosts", {}).values() if r.get("failed")]


@pytest.fixture(scope="module", params=["6.1", "6.12"])
def setup(request: pytest.FixtureRequest, qemu: Path, log_root: Path, privileged: None) -> Iterator[Setup]:
    """The libvirt host guest booted with one kernel (6.1: kthread workers,
    6.12: user workers), its paused nested domain, an inventory and a playbook."""
    kernel = str(request.param)
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    image = build_image(log_root, kernel)
    timings["image"] = time.monotonic() - t0
    base = ixgbe_wire(0)
    wire = NodeWire(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)}, node=NIC_NODE)
    work = log_root / f"work-{kernel}"
    work.mkdir(parents=True, exist_ok=True)
    with Lab([wire], name=f"vhn-{os.getpid()}") as lab:
        vm = SystemdVM(image, lab=lab, name=f"libvirt-host-{kernel}", log_dir=log_root / "host", smp=GUEST_CPUS,
                       memory_mb=2048, args=numa_args(), accel=pick_accel(log_root), qemu=qemu)
        remember_vm(request.node, vm)
        try:
            t = time.monotonic()
            vm.start()
            dev = vm.wait_netdevs("ixgbe", 1, timeout=240)[0]
            vm.wait_ipv4(dev, wire.guest_ip, 240)
            vm.wait_until("libvirtd", lambda: vm.run("virsh -c qemu:///system version").ok, 300, interval=2)
            timings["boot"] = time.monotonic() - t
            key = work / "id_ed25519"
            key.unlink(missing_ok=True)
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
            vm.sh("install -d -m 700 /root/.ssh && cat > /root/.ssh/authorized_keys <<'EOF'\n"
                  f"{key.with_suffix('.pub').read_text()}EOF")
            t = time.monotonic()
            vm.sh(f"ip tuntap add dev {NESTED_TAP} mode tap multi_queue && ip link set {NESTED_TAP} up")
            vm.sh(f"cat > /root/{DOMAIN}.xml <<'EOF'\n{NESTED_XML}EOF\n"
                  f"virsh define /root/{DOMAIN}.xml && virsh start --paused {DOMAIN}", timeout=300)
            qemu_pid = int(vm.sh(f"cat /run/libvirt/qemu/{DOMAIN}.pid").strip())
            timings["nested domain"] = time.monotonic() - t
            inventory = work / "inventory.json"
            inventory.write_text(json.dumps({"all": {"children": {"libvirt_hosts": {"hosts": {"guest": {
                "ansible_host": wire.guest_ip, "ansible_user": "root",
                "ansible_ssh_private_key_file": str(key),
                "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
                "ansible_python_interpreter": "/usr/bin/python3",
                "vhost_pinning_domain": DOMAIN, "vhost_pinning_host_nic": dev,
                "vhost_pinning_min_workers": 2,
            }}}}}}))  # fmt: skip
            playbook = work / "vhost-pinning.yml"
            playbook.write_text(PLAYBOOK)
            release = vm.sh("uname -r").strip()
            assert release == image.release, (release, image.release)
            yield Setup(vm, lab, work, inventory, playbook, qemu_pid, release, dev, timings)
        finally:
            print(f"\nvhostnet timings ({kernel}): " + ", ".join(f"{k} {v:.0f}s" for k, v in timings.items()))
            vm.shutdown()


def test_guest_has_vhost_net_and_the_nested_domain_has_workers(setup: Setup) -> None:
    vm = setup.vm
    assert vm.run("test -c /dev/vhost-net").ok, "no /dev/vhost-net in the guest"
    assert vm.sh(f"virsh domstate {DOMAIN}").strip() == "paused"
    workers = [t for t in guest_threads(vm) if t["comm"] == f"vhost-{setup.qemu_pid}"]
    assert len(workers) == 2, diagnose(setup)  # one per queue pair
    if kernel_below_6_4(setup):  # kernel threads, children of kthreadd, outside QEMU
        assert all(t["ppid"] == 2 and t["tgid"] == t["tid"] for t in workers), workers
    else:  # user workers: threads of QEMU itself
        assert all(t["tgid"] == setup.qemu_pid for t in workers), workers
    # not yet pinned: the workers may run on every CPU of the guest
    assert all(t["cpus"] == list(range(GUEST_CPUS)) for t in workers), workers
    # the plan's premise: two nodes, the 82599 on node 1 (its expander bridge's node)
    assert vm.sh("cat /sys/devices/system/node/online").strip() == "0-1"
    assert vm.sh(f"cat /sys/class/net/{setup.nic}/device/numa_node").strip() == str(NIC_NODE)


def test_role_pins_the_workers_to_the_nic_node_without_the_vcpus(setup: Setup) -> None:
    run = ansible(setup)
    assert run["rc"] == 0, failures(run)
    pinned = task_result(run, PIN_TASK)
    assert parse_cpulist(pinned["cpus"]) == PLAN, pinned["cpus"]
    assert pinned["changed"] and pinned["pid"] == setup.qemu_pid
    kind = "vhost-kthread" if kernel_below_6_4(setup) else "vhost-task"
    assert [t["kind"] for t in pinned["threads"]] == [kind, kind], pinned["threads"]
    assert all(parse_cpulist(t["before"]) == list(range(GUEST_CPUS)) for t in pinned["threads"])
    # read back in the guest, not through the role
    workers = [t for t in guest_threads(setup.vm) if t["comm"] == f"vhost-{setup.qemu_pid}"]
    assert sorted(t["tid"] for t in workers) == sorted(t["tid"] for t in pinned["threads"])
    assert all(t["cpus"] == PLAN for t in workers), workers
    vcpus = vcpu_cpus(setup.vm, setup.qemu_pid)
    assert vcpus == [[VCPU_PIN]], vcpus
    assert setup.vm.run("test -x /etc/libvirt/hooks/qemu.d/50-qemu-ixgbe-vhost-pin").ok


def test_second_run_changes_nothing(setup: Setup) -> None:
    run = ansible(setup)
    assert run["rc"] == 0, failures(run)
    assert run["stats"]["guest"]["changed"] == 0, run["stats"]
    assert not task_result(run, PIN_TASK)["changed"]


def test_check_mode_reports_a_drifted_worker_without_moving_it(setup: Setup) -> None:
    workers = [t for t in guest_threads(setup.vm) if t["comm"] == f"vhost-{setup.qemu_pid}"]
    drifted = workers[0]["tid"]
    setup.vm.sh(f"taskset -pc 0-{GUEST_CPUS - 1} {drifted}")
    run = ansible(setup, "--check")
    assert run["rc"] == 0, failures(run)
    moved = [t["tid"] for t in task_result(run, PIN_TASK)["threads"] if t["changed"]]
    assert moved == [drifted]
    after = {t["tid"]: t["cpus"] for t in guest_threads(setup.vm)}
    assert after[drifted] == list(range(GUEST_CPUS)), after
    setup.vm.sh(f"taskset -pc {','.join(map(str, PLAN))} {drifted}")
