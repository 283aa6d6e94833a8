"""site.yml against a real libvirtd: pins, numatune, CPU model, NICs, vhost workers, guest flags.

Host here: 1 NUMA node, CPUs 0-1, TCG guests. The plan for a 1-vCPU domain on node 0:
vCPU 0 -> CPU 0, emulator -> CPU 1, vhost workers -> CPU 1 (the node CPUs without vCPUs).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterator

import pytest

from harness import has_ixgbe, require_numa_binding, run_playbook, virsh, write_inventory
from domains import (cpu_flags, define, domain_xml, remove_domain, site_hostvars, start,
                     thread_cpus, wait_for_log)

NAME = "qemu-ixgbe-test-tune"
HOOK = Path("/etc/libvirt/hooks/qemu.d/50-qemu-ixgbe-vhost-pin")
WORKER = "IO mon_iothread"


@pytest.fixture(scope="module")
def env(libvirtd: str, qemu_binary: Path, guest_image: Dict[str, Path]) -> Iterator[Dict[str, Any]]:
    require_numa_binding(qemu_binary)
    work = Path(tempfile.mkdtemp(prefix="qi-tune-", dir="/tmp"))
    console = work / "console.sock"
    define(domain_xml(NAME, qemu_binary, guest_image, console), work, NAME)
    nic_model = "ixgbe" if has_ixgbe(qemu_binary) else "igb"
    domain = {
        "name": NAME,
        "vcpus": 1,
        "numa_node": 0,
        "cpu_mode": "custom",
        "cpu_model": "Haswell-noTSX",
        "emulator": str(qemu_binary),
        "interfaces": [
            {"mac": "52:54:00:51:00:01", "model": nic_model, "type": "user"},
            {"mac": "52:54:00:51:00:02", "model": "virtio", "type": "user"},
        ],
        # no /dev/vhost-net here: QEMU's monitor I/O thread stands in for a worker
        "vhost_name_pattern": "^%s$" % WORKER,
    }
    hostvars = site_hostvars(work, domain)
    inventory = write_inventory(work / "inventory.json", hostvars)
    yield {"work": work, "console": console, "inventory": inventory, "domain": domain,
           "hostvars": hostvars, "nic_model": nic_model, "qemu": qemu_binary}
    remove_domain(NAME)
    HOOK.unlink(missing_ok=True)
    shutil.rmtree(work, ignore_errors=True)


def hook_inventory(env: Dict[str, Any]) -> Path:
    """The same domain with its workers given both node CPUs (libvirt's emulator pin is CPU 1)."""
    inv = env["work"] / "inventory-both-cpus.json"
    domain = dict(env["domain"], vhost_cpus="0-1")
    return write_inventory(inv, dict(env["hostvars"], kvm_domains=[domain]))


def inactive_xml() -> ET.Element:
    return ET.fromstring(virsh("dumpxml", "--inactive", NAME).stdout)


def test_first_run_applies_the_plan(env: Dict[str, Any]) -> None:
    run = run_playbook("site.yml", env["inventory"])
    assert run.rc == 0, run.failures() or run.stdout[-3000:] + run.stderr[-3000:]
    assert run.host()["changed"] > 0

    vcpupin = virsh("vcpupin", NAME, "--config").stdout.split()
    assert vcpupin[-2:] == ["0", "0"], vcpupin           # vCPU 0 on CPU 0
    emulatorpin = virsh("emulatorpin", NAME, "--config").stdout.split()
    assert emulatorpin[-1] == "1", emulatorpin           # emulator on CPU 1

    root = inactive_xml()
    assert root.find("numatune/memory").attrib == {"mode": "strict", "nodeset": "0"}
    cpu = root.find("cpu")
    assert cpu.get("mode") == "custom" and cpu.findtext("model") == "Haswell-noTSX"
    features = {f.get("name"): f.get("policy") for f in cpu.findall("feature")}
    assert features.get("erms") == "require" and features.get("fsrm") == "require"
    assert root.findtext("devices/emulator") == str(env["qemu"])
    ifaces = {i.find("mac").get("address"): i for i in root.findall("devices/interface")}
    assert ifaces["52:54:00:51:00:01"].find("model").get("type") == env["nic_model"]
    assert ifaces["52:54:00:51:00:01"].find("rom").get("enabled") == "no"
    assert ifaces["52:54:00:51:00:02"].find("model").get("type") == "virtio"
    assert (env["work"] / "irqbalance").read_text().strip() == "IRQBALANCE_BANNED_CPULIST=0"
    assert HOOK.exists() and os.access(HOOK, os.X_OK)


def test_second_run_reports_no_change(env: Dict[str, Any]) -> None:
    run = run_playbook("site.yml", env["inventory"])
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()


def test_check_diff_changes_nothing(env: Dict[str, Any]) -> None:
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_playbook("site.yml", env["inventory"], check=True, diff=True)
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()
    assert virsh("dumpxml", "--inactive", NAME).stdout == before


def test_check_mode_reports_a_pending_change_without_making_it(env: Dict[str, Any]) -> None:
    virsh("emulatorpin", NAME, "0", "--config")
    before = virsh("dumpxml", "--inactive", NAME).stdout
    run = run_playbook("site.yml", env["inventory"], check=True, diff=True)
    assert run.rc == 0, run.failures()
    tuned = run.task_results("Apply the plan to the domain")
    assert tuned and tuned[0]["changed"] and "emulatorpin: 0 -> 1" in tuned[0]["changes"]["config"]
    assert "diff" in tuned[0] or "diff" in str(tuned[0])
    assert virsh("dumpxml", "--inactive", NAME).stdout == before
    virsh("emulatorpin", NAME, "1", "--config")


def test_running_guest_has_planned_pins_and_string_ops(env: Dict[str, Any]) -> None:
    pid = start(NAME)
    threads = thread_cpus(pid)
    vcpu_threads = [n for n in threads if n.startswith("CPU ")]
    assert vcpu_threads, threads
    for n in vcpu_threads:
        assert threads[n] == ["0"], (n, threads[n])
    assert threads[WORKER] == ["1"], threads
    flags = cpu_flags(env["console"])
    assert "rep_good" in flags and "erms" in flags and "fsrm" in flags, flags


def test_vhost_workers_are_pinned_to_the_planned_cpus(env: Dict[str, Any]) -> None:
    """Workers given both node CPUs: out of libvirt's emulator cpuset (CPU 1) into their own."""
    pid = int(Path("/run/libvirt/qemu/%s.pid" % NAME).read_text())
    assert thread_cpus(pid)[WORKER] == ["1"]              # where the emulator pin put it
    run = run_playbook("site.yml", hook_inventory(env))
    assert run.rc == 0, run.failures()
    pinned = run.task_results("Pin the workers of the running domain")
    assert pinned and pinned[0]["changed"], pinned
    (thread,) = pinned[0]["threads"]
    assert thread["comm"] == WORKER and thread["before"] == "1" and thread["after"] == "0-1"
    assert thread["cgroup"] and thread["cgroup"].endswith("/vhost")
    assert thread_cpus(pid)[WORKER] == ["0-1"]
    # the vCPU threads were not touched
    assert all(v == ["0"] for n, v in thread_cpus(pid).items() if n.startswith("CPU "))
    again = run_playbook("site.yml", hook_inventory(env))
    assert again.rc == 0 and again.host()["changed"] == 0, again.changed_tasks()


def test_default_cpu_models_hide_the_string_ops(env: Dict[str, Any], qemu_binary: Path,
                                                guest_image: Dict[str, Path]) -> None:
    """Without a chosen model the guest lacks erms; kvm64 (Intel family 15) lacks rep_good too.

    QEMU's default qemu64 under TCG is AMD family 15 model 107, whose CPUID signature
    passes the kernel's K8 rule, so rep_good is set there; on an Intel KVM host qemu64
    takes the Intel vendor and family 15, which is what kvm64 reproduces here.
    """
    seen = {}
    for model in (None, "kvm64"):
        name = "qemu-ixgbe-test-default-%s" % (model or "qemu64")
        console = env["work"] / ("%s.sock" % (model or "default"))
        define(domain_xml(name, qemu_binary, guest_image, console, cpu_model=model),
               env["work"], name)
        try:
            start(name)
            seen[model or "qemu64"] = cpu_flags(console)
        finally:
            remove_domain(name)
    assert "erms" not in seen["qemu64"] and "fsrm" not in seen["qemu64"]
    assert "rep_good" in seen["qemu64"]
    assert "erms" not in seen["kvm64"] and "rep_good" not in seen["kvm64"]


def test_hook_pins_again_on_every_start(env: Dict[str, Any]) -> None:
    """After a restart the hook installed by the role puts the workers back on CPUs 0-1."""
    virsh("destroy", NAME)
    log = env["work"] / "vhost-pin.log"
    log.unlink(missing_ok=True)
    pid = start(NAME)
    entry = wait_for_log(log, NAME)
    assert entry["pid"] == pid and entry["cpus"] == "0-1"
    assert [t["comm"] for t in entry["threads"]] == [WORKER]
    assert thread_cpus(pid)[WORKER] == ["0-1"]
    virsh("destroy", NAME)
