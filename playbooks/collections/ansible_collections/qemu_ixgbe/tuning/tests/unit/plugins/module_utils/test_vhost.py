"""vhost worker discovery (pure, both kernel behaviours) and real pinning of real threads."""
from __future__ import annotations

import os
import subprocess
import sys
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
        assert vhost.parse_cpulist(allowed) == target
        assert vhost.verify("/proc", found, target) == []
        # pinning again changes nothing
        assert not any(r["changed"] for r in vhost.pin(found, target))
        # the main thread was not touched
        assert sorted(os.sched_getaffinity(proc.pid)) == cpus
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------- vhost-user backends by socket --

SOCK = "/run/vhu/vm1-net0.sock"
BACKEND = 7000


def test_backend_found_when_it_listens_and_qemu_connects() -> None:
    # QEMU (client) socket 10 <-> 11, the backend's accepted socket, named after the path;
    # 12 is the backend's listener, 13/14 a bystander connected to the same listener.
    sockets = {10: ("", 11), 11: (SOCK, 10), 12: (SOCK, 0), 13: ("", 14), 14: (SOCK, 13),
               20: ("/run/other.sock", 21), 21: ("", 20)}
    owners = {11: [BACKEND], 12: [BACKEND], 13: [8000], 14: [BACKEND], 21: [9000]}
    found = vhost.match_backends([SOCK], QEMU_PID, [10, 20], sockets, owners)
    assert found == [{"socket": SOCK, "pids": [BACKEND]}]


def test_backend_found_when_qemu_listens_and_it_connects() -> None:
    # QEMU listens (30) and accepted 31 (named after the path); the backend holds the peer 32
    sockets = {30: (SOCK, 0), 31: (SOCK, 32), 32: ("", 31)}
    found = vhost.match_backends([SOCK], QEMU_PID, [30, 31], sockets, {32: [BACKEND]})
    assert found == [{"socket": SOCK, "pids": [BACKEND]}]


def test_socket_without_a_connected_backend() -> None:
    sockets = {30: (SOCK, 0)}
    assert vhost.match_backends([SOCK], QEMU_PID, [30], sockets, {}) == [
        {"socket": SOCK, "pids": []}]


def test_vhostuser_sockets_from_libvirt_status_xml() -> None:
    xml = """<domstatus state='running' pid='4242'><domain type='kvm'><devices>
      <interface type='vhostuser'><source type='unix' path='%s' mode='client'/></interface>
      <interface type='network'><source network='default'/></interface>
    </devices></domain></domstatus>""" % SOCK
    assert vhost.vhostuser_sockets(xml) == [SOCK]
    inner = xml[xml.index("<domain"):xml.index("</domstatus>")]
    assert vhost.vhostuser_sockets(inner) == [SOCK]      # a plain domain XML too
    assert vhost.vhostuser_sockets("<domain><devices/></domain>") == []


SOCK_PROG = r"""
import socket, sys, time
mode, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
if mode == "listen":
    s.bind(path)
    s.listen(4)
    print("listening", flush=True)
    conns = [s.accept()[0] for _ in range(n)]
else:
    s.connect(path)
print("connected", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("qemu_listens", [False, True])
def test_real_backend_found_through_its_socket(tmp_path: Path, qemu_listens: bool) -> None:
    """Real processes on a real socket: the peer of the stand-in QEMU is the backend."""
    path = str(tmp_path / "vhu.sock")
    procs: list = []

    def spawn(mode: str, n: int = 1) -> subprocess.Popen:
        p = subprocess.Popen([sys.executable, "-c", SOCK_PROG, mode, path, str(n)],
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        assert p.stdout is not None
        if mode == "listen":
            assert p.stdout.readline().strip() == "listening"
        return p

    try:
        if qemu_listens:
            qemu = spawn("listen")
            backend = spawn("connect")
        else:
            backend = spawn("listen", 2)
            qemu = spawn("connect")
            spawn("connect")                      # a bystander on the backend's socket
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "connected"
        found = vhost.find_backends([path, str(tmp_path / "none.sock")], qemu.pid)
        assert found == [{"socket": path, "pids": [backend.pid]},
                         {"socket": str(tmp_path / "none.sock"), "pids": []}]
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to move a thread")
def test_backend_is_not_moved_out_of_its_own_cpuset_cgroup(tmp_path: Path) -> None:
    """A backend confined by its service's cpuset: an error, no cgroup made, nothing moved."""
    cpus = sorted(os.sched_getaffinity(0))
    proc = subprocess.Popen(["sleep", "60"])
    try:
        os.sched_setaffinity(proc.pid, cpus)
        fake = tmp_path / "proc"
        (fake / str(proc.pid) / "task" / str(proc.pid)).mkdir(parents=True)
        (fake / str(proc.pid) / "task" / str(proc.pid) / "cgroup").write_text("0::/svc\n")
        (fake / "mounts").write_text("cgroup2 %s cgroup2 rw 0 0\n" % (tmp_path / "cg"))
        (tmp_path / "cg" / "svc").mkdir(parents=True)
        (tmp_path / "cg" / "svc" / "cpuset.cpus.effective").write_text("%d\n" % cpus[0])
        worker = {"tid": proc.pid, "tgid": proc.pid, "comm": "sleep", "kind": "backend"}
        (res,) = vhost.pin([worker], cpus[-1:], proc=str(fake))
        assert "error" in res and not res["changed"] and res["cgroup"] is None, res
        assert sorted(os.sched_getaffinity(proc.pid)) == cpus
        assert sorted(p.name for p in (tmp_path / "cg").iterdir()) == ["svc"]
    finally:
        proc.kill()
        proc.wait()
