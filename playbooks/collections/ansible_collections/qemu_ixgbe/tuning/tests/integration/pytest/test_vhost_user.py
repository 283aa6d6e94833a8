"""A real vhost-user backend (DPDK testpmd) of a real libvirt TCG domain, pinned by site.yml.

There is no /dev/vhost-net here, so kernel vhost workers cannot exist; a vhost-user
backend is a separate process whose threads carry the domain's packets. The role finds
it through the socket in the domain's XML (no pid given) and pins all its threads to the
planned vhost CPUs (the node's CPUs without vCPUs). testpmd starts with its lcores
allowed on every CPU, so each thread must be moved. Affinities are read back from
/proc/<pid>/task/*/status.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

from harness import require_numa_binding, run_playbook, virsh, write_inventory
from domains import (define, domain_xml, remove_domain, site_hostvars, start, thread_cpus,
                     wait_for_log)
from dpdk import Testpmd, find_testpmd

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import parse_cpulist

NAME = "qemu-ixgbe-test-vhu"
MAC = "52:54:00:51:00:21"
HOOK = Path("/etc/libvirt/hooks/qemu.d/50-qemu-ixgbe-vhost-pin")
PIN_TASK = "Pin the workers of the running domain"


def backend_cpus(pid: int) -> Dict[str, List[List[int]]]:
    """Thread name -> CPU lists of a backend's threads, from /proc/<pid>/task/*/status."""
    return {n: [parse_cpulist(c) for c in v] for n, v in thread_cpus(pid).items()}


def vcpu_cpus(qemu_pid: int) -> List[List[int]]:
    return [parse_cpulist(c) for n, v in thread_cpus(qemu_pid).items() if n.startswith("CPU ")
            for c in v]


def attr(el: ET.Element, path: str, name: str) -> Optional[str]:
    found = el.find(path)
    return found.get(name) if found is not None else None


def qemu_pid() -> int:
    return int(Path("/run/libvirt/qemu/%s.pid" % NAME).read_text())


@pytest.fixture(scope="module")
def env(libvirtd: str, qemu_binary: Path, guest_image: Dict[str, Path]) -> Iterator[Dict[str, Any]]:
    find_testpmd()
    require_numa_binding(qemu_binary)
    work = Path(tempfile.mkdtemp(prefix="qi-vhu-", dir="/tmp"))
    sock = work / "vhu0.sock"
    all_cpus = sorted(os.sched_getaffinity(0))
    saved_hook = HOOK.read_bytes() if HOOK.exists() else None
    state: Dict[str, Any] = {"backend": Testpmd(sock, "qi-vhu-%d-a" % os.getpid(), all_cpus, 2)}
    try:
        state["backend"].start()
        define(domain_xml(NAME, qemu_binary, guest_image, work / "console.sock"), work, NAME)
        start(NAME)  # running, not yet with its vhost-user interface: the role restarts it
        domain = {
            "name": NAME, "vcpus": 1, "numa_node": 0, "cpu_mode": "custom",
            "cpu_model": "Haswell-noTSX", "emulator": str(qemu_binary), "restart": True,
            "memory_backing": "memfd",   # shared guest memory for the backend, no hugepages
            "interfaces": [{"mac": MAC, "model": "virtio", "type": "vhostuser", "queues": 2,
                            "source": {"path": str(sock), "mode": "client"}}],
        }
        hostvars = site_hostvars(work, domain)
        state.update(work=work, sock=sock, all_cpus=all_cpus,
                     inventory=write_inventory(work / "inventory.json", hostvars))
        yield state
    finally:
        remove_domain(NAME)
        state["backend"].stop()
        if saved_hook is None:
            HOOK.unlink(missing_ok=True)
        else:
            HOOK.write_bytes(saved_hook)
        shutil.rmtree(work, ignore_errors=True)


def test_first_run_attaches_the_backend_and_pins_its_threads(env: Dict[str, Any]) -> None:
    backend = env["backend"]
    before = backend_cpus(backend.pid)
    assert all(c == env["all_cpus"] for v in before.values() for c in v), before
    run = run_playbook("site.yml", env["inventory"])
    assert run.rc == 0, run.failures() or run.stdout[-3000:] + run.stderr[-3000:]
    assert run.task_results("Apply the plan to the domain")[0]["restarted"]

    live = ET.fromstring(virsh("dumpxml", NAME).stdout)
    (iface,) = live.findall("devices/interface")
    assert iface.get("type") == "vhostuser"
    assert attr(iface, "source", "path") == str(env["sock"])
    assert attr(iface, "driver", "queues") == "2"
    assert attr(live, "memoryBacking/source", "type") == "memfd"
    assert attr(live, "memoryBacking/access", "mode") == "shared"

    (pinned,) = run.task_results(PIN_TASK)
    plan = parse_cpulist(pinned["cpus"])
    env["plan"] = plan
    assert plan and plan != env["all_cpus"], pinned["cpus"]
    # found through the socket in the domain XML, not through a pid in the inventory
    assert pinned["backends"] == [{"socket": str(env["sock"]), "pids": [backend.pid]}]
    assert pinned["changed"] and {t["kind"] for t in pinned["threads"]} == {"backend"}
    assert {t["tgid"] for t in pinned["threads"]} == {backend.pid}
    assert sorted(t["comm"] for t in pinned["threads"]) == sorted(
        n for n, v in before.items() for _thread in v)
    assert all(parse_cpulist(t["before"]) == env["all_cpus"] for t in pinned["threads"])

    after = backend_cpus(backend.pid)
    assert "vhost-events" in after, after          # the vhost library's own thread
    assert all(c == plan for v in after.values() for c in v), (plan, after)
    vcpus = vcpu_cpus(qemu_pid())
    assert vcpus and all(not set(c) & set(plan) for c in vcpus), (plan, vcpus)
    config = json.loads((env["work"] / "vhost-pinning" / ("%s.json" % NAME)).read_text())
    assert config["find_backends"] is True and config["backend_pids"] == []
    assert HOOK.exists() and os.access(HOOK, os.X_OK)


def test_second_run_changes_nothing(env: Dict[str, Any]) -> None:
    run = run_playbook("site.yml", env["inventory"])
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()
    assert not run.task_results(PIN_TASK)[0]["changed"]
    assert all(c == env["plan"] for v in backend_cpus(env["backend"].pid).values() for c in v)


def test_check_mode_reports_but_moves_nothing(env: Dict[str, Any]) -> None:
    pid = env["backend"].pid
    run = run_playbook("site.yml", env["inventory"], check=True, diff=True)
    assert run.rc == 0, run.failures()
    assert run.host()["changed"] == 0, run.changed_tasks()
    os.sched_setaffinity(pid, env["all_cpus"])     # the main thread drifts off the plan
    try:
        run = run_playbook("site.yml", env["inventory"], check=True)
        assert run.rc == 0, run.failures()
        (pinned,) = run.task_results(PIN_TASK)
        moved = [t for t in pinned["threads"] if t["changed"]]
        assert [t["tid"] for t in moved] == [pid], pinned["threads"]
        assert sorted(os.sched_getaffinity(pid)) == env["all_cpus"]   # still there
    finally:
        os.sched_setaffinity(pid, env["plan"])


def test_hook_pins_a_new_backend_after_a_restart(env: Dict[str, Any]) -> None:
    """Domain and backend both restarted: the hook finds the new backend by its socket."""
    virsh("destroy", NAME)
    old = env["backend"]
    old.stop()
    env["backend"] = Testpmd(env["sock"], "qi-vhu-%d-b" % os.getpid(), env["all_cpus"], 2)
    new = env["backend"].start()
    assert new.pid != old.pid
    log = env["work"] / "vhost-pin.log"
    log.unlink(missing_ok=True)
    pid = start(NAME)
    entry = wait_for_log(log, NAME)
    assert entry["pid"] == pid and parse_cpulist(entry["cpus"]) == env["plan"], entry
    assert entry["backends"] == [{"socket": str(env["sock"]), "pids": [new.pid]}], entry
    assert {t["tgid"] for t in entry["threads"]} == {new.pid}
    assert not [t for t in entry["threads"] if "error" in t], entry
    after = backend_cpus(new.pid)
    assert all(c == env["plan"] for v in after.values() for c in v), (env["plan"], after)
    assert all(not set(c) & set(env["plan"]) for c in vcpu_cpus(pid))
    virsh("destroy", NAME)
