"""vhost worker discovery (pure, both kernel behaviours) and real pinning of real threads."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import vhost

QEMU_PID = 4242


def qemu_threads() -> list:
    return [
        {"tid": QEMU_PID, "tgid": QEMU_PID, "ppid": 1, "comm": "qemu-system-x86"},
        {"tid": 4243, "tgid": QEMU_PID, "ppid": 1, "comm": "call_rcu"},
        {"tid": 4250, "tgid": QEMU_PID, "ppid": 1, "comm": "CPU 0/KVM"},
        {"tid": 4251, "tgid": QEMU_PID, "ppid": 1, "comm": "CPU 1/KVM"},
    ]


def test_linux_6_4_and_later_workers_are_qemu_threads() -> None:
    threads = qemu_threads() + [
        {"tid": 4260, "tgid": QEMU_PID, "ppid": 1, "comm": "vhost-4242"},
        {"tid": 4261, "tgid": QEMU_PID, "ppid": 1, "comm": "vhost-4242"},
        # another VM's worker
        {"tid": 5001, "tgid": 5000, "ppid": 1, "comm": "vhost-5000"},
    ]
    found = vhost.find_workers(threads, QEMU_PID)
    assert [(w["tid"], w["kind"]) for w in found] == [(4260, "vhost-task"), (4261, "vhost-task")]


def test_before_linux_6_4_workers_are_kernel_threads() -> None:
    threads = qemu_threads() + [
        {"tid": 900, "tgid": 900, "ppid": 2, "comm": "vhost-4242"},
        {"tid": 901, "tgid": 901, "ppid": 2, "comm": "vhost-4242"},
        {"tid": 902, "tgid": 902, "ppid": 2, "comm": "vhost-777"},
        {"tid": 903, "tgid": 903, "ppid": 2, "comm": "kworker/0:1"},
    ]
    found = vhost.find_workers(threads, QEMU_PID)
    assert [(w["tid"], w["kind"]) for w in found] == [(900, "vhost-kthread"), (901, "vhost-kthread")]


def test_worker_named_after_a_non_main_qemu_thread() -> None:
    # VHOST_SET_OWNER issued from a QEMU thread other than the main one (hotplug)
    threads = qemu_threads() + [{"tid": 4270, "tgid": QEMU_PID, "ppid": 1, "comm": "vhost-4243"}]
    assert [w["tid"] for w in vhost.find_workers(threads, QEMU_PID)] == [4270]


def test_vhost_user_backend_and_pattern() -> None:
    threads = qemu_threads() + [
        {"tid": 7000, "tgid": 7000, "ppid": 1, "comm": "dpdk-testpmd"},
        {"tid": 7001, "tgid": 7000, "ppid": 1, "comm": "rte-worker-1"},
    ]
    found = vhost.find_workers(threads, QEMU_PID, backend_pids=[7000], name_pattern="^call_rcu$")
    assert [(w["tid"], w["kind"]) for w in found] == [
        (4243, "pattern"), (7000, "backend"), (7001, "backend")]


def test_unknown_pid_fails() -> None:
    with pytest.raises(ValueError, match="no threads of process 1"):
        vhost.find_workers(qemu_threads(), 1)


THREAD_PROG = r"""
import threading, time, ctypes, sys
libc = ctypes.CDLL(None)
named = threading.Event()
def work():
    import os
    libc.prctl(15, b"vhost-%d" % os.getpid(), 0, 0, 0)   # PR_SET_NAME
    named.set()
    time.sleep(60)
t = threading.Thread(target=work, daemon=True)
t.start()
named.wait(10)
print("ready", flush=True)
time.sleep(60)
"""


def test_real_threads_are_found_pinned_and_verified() -> None:
    """A real process with a thread named like a 6.4+ vhost worker, pinned through /proc."""
    cpus = sorted(os.sched_getaffinity(0))
    proc = subprocess.Popen([sys.executable, "-c", THREAD_PROG], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
        threads = vhost.list_threads("/proc", [proc.pid], kthreads=False)
        assert len(threads) >= 2
        found = vhost.find_workers(threads, proc.pid)
        assert len(found) == 1 and found[0]["comm"] == "vhost-%d" % proc.pid
        assert found[0]["tid"] != proc.pid
        worker = found[0]
        target = [cpus[-1]]
        before = sorted(os.sched_getaffinity(worker["tid"]))
        res = vhost.pin(found, target)
        assert res[0]["changed"] is (before != target)
        status = Path("/proc/%d/task/%d/status" % (proc.pid, worker["tid"])).read_text()
        allowed = [l.split(":", 1)[1].strip() for l in status.splitlines()
                   if l.startswith("Cpus_allowed_list")][0]
        assert vhost.parse_cpus(allowed) == target
        assert vhost.verify("/proc", found, target) == []
        # pinning again changes nothing
        assert not any(r["changed"] for r in vhost.pin(found, target))
        # the main thread was not touched
        assert sorted(os.sched_getaffinity(proc.pid)) == cpus
    finally:
        proc.kill()
        proc.wait()
