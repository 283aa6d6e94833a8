#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Find and pin the vhost worker threads of a QEMU process.
#
# This file is both an Ansible module_utils (imported by the vhost_pin
# module) and, copied verbatim, the stand-alone helper that the libvirt qemu
# hook runs on every domain start, with the collection's cpulist.py beside it
# as qemu_ixgbe_cpulist.py. Standard library only.
#
# Where the workers live:
#   * Linux >= 6.4: vhost workers are threads of the QEMU process itself
#     (user workers created by vhost_task), named "vhost-<tid>" after the
#     QEMU thread that issued VHOST_SET_OWNER.
#   * Linux < 6.4: they are kernel threads (children of kthreadd, pid 2)
#     with the same "vhost-<tid>" name, outside QEMU's thread group.
#   * vhost-user: the datapath runs in a separate backend process; all of
#     its threads (or those whose name matches a pattern) are workers. The
#     backend of a domain is found through its vhost-user sockets: the
#     process at the other end of QEMU's connection on that socket path
#     (sock_diag peers, match_backends()).
# find_workers() and match_backends() are pure functions of thread and socket
# lists, so both kernel behaviours and both socket modes are testable anywhere.
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import struct
import time
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, List, Mapping, Optional, Pattern, Sequence, Set, TextIO, Tuple

try:
    from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import (
        format_cpulist, parse_cpulist)
except ImportError:  # the stand-alone hook helper: cpulist.py is installed beside it
    from qemu_ixgbe_cpulist import format_cpulist, parse_cpulist  # type: ignore


# ------------------------------------------------------------------- pure --

def find_workers(threads: Sequence[Mapping[str, Any]], qemu_pid: int,
                 backend_pids: Sequence[int] = (), name_pattern: Optional[str] = None
                 ) -> List[Dict[str, Any]]:
    """Select the vhost worker threads from a thread list.

    threads: dicts with tid, tgid (process id), ppid and comm.
    Returns the selected threads, each with a "kind" key:
      "vhost-task"    a vhost-<tid> thread inside QEMU (Linux >= 6.4)
      "vhost-kthread" a vhost-<tid> kernel thread (Linux < 6.4)
      "backend"       a thread of a vhost-user backend process
      "pattern"       a QEMU thread whose name matches name_pattern
    """
    qemu_tids = {int(t["tid"]) for t in threads if int(t["tgid"]) == int(qemu_pid)}
    if not qemu_tids:
        raise ValueError("no threads of process %d in the thread list" % qemu_pid)
    names = {"vhost-%d" % tid for tid in qemu_tids}
    regex = re.compile(name_pattern) if name_pattern else None
    backends = {int(p) for p in backend_pids}
    picked: List[Dict[str, Any]] = []
    for t in sorted(threads, key=lambda t: int(t["tid"])):
        kind = _worker_kind(t, int(qemu_pid), names, backends, regex)
        if kind:
            item = dict(t)
            item["kind"] = kind
            picked.append(item)
    return picked


def _worker_kind(t: Mapping[str, Any], qemu_pid: int, names: Set[str], backends: Set[int],
                 regex: Optional[Pattern[str]]) -> Optional[str]:
    """What kind of worker a thread is (see find_workers), or None."""
    tid, tgid = int(t["tid"]), int(t["tgid"])
    comm = str(t.get("comm", ""))
    if tgid == qemu_pid and comm in names:
        return "vhost-task"
    if comm in names and int(t.get("ppid", -1)) == 2 and tgid == tid:
        return "vhost-kthread"
    if tgid in backends:
        return "backend"
    if regex is not None and tgid == qemu_pid and regex.search(comm):
        return "pattern"
    return None


def match_backends(paths: Sequence[str], qemu_pid: int, qemu_inodes: Iterable[int],
                   sockets: Mapping[int, Tuple[str, int]],
                   owners: Mapping[int, Sequence[int]]) -> List[Dict[str, Any]]:
    """The backend processes at the other end of QEMU's vhost-user sockets.

    sockets: unix socket inode -> (bound path or "", peer inode or 0).
    owners: socket inode -> pids holding it. A QEMU socket belongs to `path`
    when it or its peer is bound to it: QEMU as client connects to the
    backend's listener (the backend's accepted socket carries the path), QEMU
    as server accepts the backend (QEMU's accepted socket carries it).
    Returns one {"socket", "pids"} per path, pids sorted (empty: not connected).
    """
    out = []
    for path in paths:
        pids: Set[int] = set()
        for ino in qemu_inodes:
            name, peer = sockets.get(int(ino), ("", 0))
            if peer and path in (name, sockets.get(peer, ("", 0))[0]):
                pids.update(p for p in owners.get(peer, ()) if int(p) != int(qemu_pid))
        out.append({"socket": path, "pids": sorted(pids)})
    return out


def vhostuser_sockets(xml_text: str) -> List[str]:
    """Socket paths of the vhost-user interfaces of a domain (or libvirt status) XML."""
    root = ET.fromstring(xml_text)
    dom = root if root.tag == "domain" else root.find("domain")
    out: List[str] = []
    for iface in (dom.findall("devices/interface") if dom is not None else []):
        src = iface.find("source")
        if iface.get("type") == "vhostuser" and src is not None and src.get("path"):
            out.append(str(src.get("path")))
    return out


# ------------------------------------------------------------ /proc access --

def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _status_fields(text: str) -> Dict[str, str]:
    out = {}
    for line in text.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def read_thread(proc: str, pid: int, tid: int) -> Optional[Dict[str, Any]]:
    base = os.path.join(proc, str(pid), "task", str(tid))
    try:
        status = _status_fields(_read(os.path.join(base, "status")))
        comm = _read(os.path.join(base, "comm")).strip()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return {"tid": tid, "tgid": int(status.get("Tgid", pid)), "ppid": int(status.get("PPid", 0)),
            "comm": comm, "cpus_allowed": status.get("Cpus_allowed_list", "")}


def list_threads(proc: str, pids: Iterable[int], kthreads: bool = True) -> List[Dict[str, Any]]:
    """Threads of the given processes, plus (optionally) every kernel thread named vhost-*."""
    out: Dict[int, Dict[str, Any]] = {}
    for pid in pids:
        task_dir = os.path.join(proc, str(pid), "task")
        try:
            tids = sorted(int(t) for t in os.listdir(task_dir) if t.isdigit())
        except FileNotFoundError:
            raise ValueError("process %d does not exist" % pid)
        for tid in tids:
            t = read_thread(proc, pid, tid)
            if t:
                out[tid] = t
    if kthreads:
        for name in os.listdir(proc):
            if not name.isdigit() or int(name) in out:
                continue
            try:
                comm = _read(os.path.join(proc, name, "comm")).strip()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            if comm.startswith("vhost-"):
                t = read_thread(proc, int(name), int(name))
                if t:
                    out[int(name)] = t
    return [out[k] for k in sorted(out)]


SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
UDIAG_SHOW_NAME, UDIAG_SHOW_PEER = 0x1, 0x4
UNIX_DIAG_NAME, UNIX_DIAG_PEER = 0, 2


def unix_sockets() -> Dict[int, Tuple[str, int]]:
    """All unix sockets of this network namespace: inode -> (path, peer inode), via sock_diag."""
    req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, 0,
                      UDIAG_SHOW_NAME | UDIAG_SHOW_PEER, 0xFFFFFFFF, 0xFFFFFFFF)
    out: Dict[int, Tuple[str, int]] = {}
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as nl:
        nl.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 0x301, 1, 0) + req,
                  (0, 0))  # NLM_F_REQUEST | NLM_F_DUMP
        while True:
            data = nl.recv(1 << 16)
            off = 0
            while off + 16 <= len(data):
                length, mtype = struct.unpack_from("=IH", data, off)
                if mtype == 3:  # NLMSG_DONE
                    return out
                if mtype == 2:  # NLMSG_ERROR
                    err = -struct.unpack_from("=i", data, off + 16)[0]
                    raise OSError(err, "sock_diag for unix sockets failed (is the unix_diag "
                                       "kernel module available?): %s" % os.strerror(err))
                ino = struct.unpack_from("=I", data, off + 20)[0]
                name, peer, a = "", 0, off + 32
                while a + 4 <= off + length:
                    alen, atype = struct.unpack_from("=HH", data, a)
                    if alen < 4:
                        break
                    if atype == UNIX_DIAG_NAME:
                        name = data[a + 4:a + alen].split(b"\0", 1)[0].decode(errors="replace")
                    elif atype == UNIX_DIAG_PEER:
                        peer = struct.unpack_from("=I", data, a + 4)[0]
                    a += (alen + 3) & ~3
                out[ino] = (name, peer)
                off += (length + 3) & ~3


def socket_inodes(proc: str, pid: int) -> List[int]:
    """Inodes of the sockets a process has open (/proc/<pid>/fd)."""
    fd_dir = os.path.join(proc, str(pid), "fd")
    out = []
    try:
        fds = os.listdir(fd_dir)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return []
    for fd in fds:
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            out.append(int(target[8:-1]))
    return out


def socket_owners(proc: str, inodes: Iterable[int]) -> Dict[int, List[int]]:
    """socket inode -> pids that hold it, for the given inodes only."""
    wanted = {int(i) for i in inodes}
    out: Dict[int, List[int]] = {}
    if not wanted:
        return out
    for name in os.listdir(proc):
        if name.isdigit():
            for ino in wanted.intersection(socket_inodes(proc, int(name))):
                out.setdefault(ino, []).append(int(name))
    return out


def find_backends(paths: Sequence[str], qemu_pid: int, proc: str = "/proc"
                  ) -> List[Dict[str, Any]]:
    """The processes serving QEMU's vhost-user sockets `paths` (see match_backends)."""
    if not paths:
        return []
    sockets = unix_sockets()
    qemu_inodes = socket_inodes(proc, qemu_pid)
    peers = [sockets[i][1] for i in qemu_inodes if i in sockets and sockets[i][1]]
    return match_backends(paths, qemu_pid, qemu_inodes, sockets, socket_owners(proc, peers))


def domain_sockets(domain: str, run_dir: str = "/run/libvirt/qemu") -> List[str]:
    """vhost-user socket paths of a running domain, from libvirt's status XML (no libvirt call)."""
    path = os.path.join(run_dir, "%s.xml" % domain)
    try:
        return vhostuser_sockets(_read(path))
    except FileNotFoundError:
        raise ValueError("domain %r is not running (no %s)" % (domain, path))


def current_cpus(tid: int) -> List[int]:
    return sorted(os.sched_getaffinity(tid))


# ---------------------------------------------------------------- cgroups --
#
# libvirt confines QEMU's threads with cpuset cgroups: vCPU threads in
# vcpuN/, all other threads in emulator/ (cpus = the emulator pin). vhost
# workers share them: since Linux 6.4 they are QEMU threads, before that the
# kernel attaches the vhost kthread to the owner's cgroups. sched_setaffinity
# cannot leave the cgroup's cpuset (EINVAL), so a worker that must run on
# other CPUs is first moved into a sibling cgroup "vhost" of the domain,
# whose cpuset is the worker CPUs. libvirt removes it with the domain's
# cgroup when the domain stops.

VHOST_CGROUP = "vhost"


def _mounts(proc: str) -> List[List[str]]:
    try:
        return [line.split() for line in _read(os.path.join(proc, "mounts")).splitlines()]
    except OSError:
        return []


def cpuset_cgroup(proc: str, pid: int, tid: int) -> Optional[Dict[str, str]]:
    """The cpuset cgroup of a thread: {"version", "dir"} or None without one."""
    try:
        lines = _read(os.path.join(proc, str(pid), "task", str(tid), "cgroup")).splitlines()
    except OSError:
        return None
    entries = [parts for parts in (line.split(":", 2) for line in lines) if len(parts) == 3]
    mounts = _mounts(proc)
    return _cpuset_v1(entries, mounts) or _cpuset_v2(entries, mounts)


def _cpuset_v1(entries: List[List[str]], mounts: List[List[str]]) -> Optional[Dict[str, str]]:
    """The cgroup v1 cpuset hierarchy's directory of /proc/.../cgroup's entries."""
    for entry in entries:
        if "cpuset" in entry[1].split(","):
            for m in mounts:
                if len(m) >= 4 and m[2] == "cgroup" and "cpuset" in m[3].split(","):
                    return {"version": "1", "dir": os.path.join(m[1], entry[2].lstrip("/"))}
    return None


def _cpuset_v2(entries: List[List[str]], mounts: List[List[str]]) -> Optional[Dict[str, str]]:
    """The unified hierarchy's directory, where the cpuset controller is enabled."""
    for hierarchy, controllers, path in entries:
        if hierarchy == "0" and controllers == "":
            for m in mounts:
                if len(m) >= 3 and m[2] == "cgroup2":
                    d = os.path.join(m[1], path.lstrip("/"))
                    if os.path.exists(os.path.join(d, "cpuset.cpus.effective")):
                        return {"version": "2", "dir": d}
    return None


def cgroup_cpus(cg: Mapping[str, str]) -> List[int]:
    name = "cpuset.effective_cpus" if cg["version"] == "1" else "cpuset.cpus.effective"
    return parse_cpulist(_read(os.path.join(cg["dir"], name)))


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(value)


def move_to_vhost_cgroup(cg: Mapping[str, str], tid: int, cpus: Sequence[int]) -> str:
    """Move a thread into the domain's vhost cpuset cgroup (created as needed)."""
    parent = os.path.dirname(cg["dir"].rstrip("/"))
    target = os.path.join(parent, VHOST_CGROUP)
    if not os.path.isdir(target):
        os.mkdir(target)
    if cg["version"] == "1":
        mems = _read(os.path.join(parent, "cpuset.mems")).strip() or \
            _read(os.path.join(parent, "cpuset.effective_mems")).strip()
        if _read(os.path.join(target, "cpuset.mems")).strip() != mems:
            _write(os.path.join(target, "cpuset.mems"), mems)
        if parse_cpulist(_read(os.path.join(target, "cpuset.cpus"))) != sorted(set(cpus)):
            _write(os.path.join(target, "cpuset.cpus"), format_cpulist(cpus))
        _write(os.path.join(target, "tasks"), str(tid))
    else:
        if _read(os.path.join(target, "cgroup.type")).strip() != "threaded":
            _write(os.path.join(target, "cgroup.type"), "threaded")
        if parse_cpulist(_read(os.path.join(target, "cpuset.cpus"))) != sorted(set(cpus)):
            _write(os.path.join(target, "cpuset.cpus"), format_cpulist(cpus))
        _write(os.path.join(target, "cgroup.threads"), str(tid))
    return target


def pin(workers: Sequence[Mapping[str, Any]], cpus: Sequence[int], dry_run: bool = False,
        proc: str = "/proc") -> List[Dict[str, Any]]:
    """Pin each worker to cpus (moving a QEMU-side one out of a too narrow cpuset cgroup first).

    A vhost-user backend's threads are never moved between cgroups (the
    backend's cgroup belongs to its own service); a thread that cannot reach
    the CPUs gets an "error" in its result instead of being pinned.
    """
    want = sorted(set(cpus))
    results = []
    for w in workers:
        tid = int(w["tid"])
        try:
            before = current_cpus(tid)
        except ProcessLookupError:
            continue
        changed = before != want
        moved = error = None
        if changed:
            cg = cpuset_cgroup(proc, int(w.get("tgid", tid)), tid)
            if cg is not None and not set(want) <= set(cgroup_cpus(cg)):
                if w.get("kind") == "backend":
                    error = ("its cpuset cgroup %s allows only CPUs %s; widen the backend "
                             "service's CPUs" % (cg["dir"], format_cpulist(cgroup_cpus(cg))))
                else:
                    moved = os.path.join(os.path.dirname(cg["dir"].rstrip("/")), VHOST_CGROUP)
                    if not dry_run:
                        move_to_vhost_cgroup(cg, tid, want)
            if not dry_run and error is None:
                try:
                    os.sched_setaffinity(tid, want)
                except ProcessLookupError:
                    continue
                except OSError as e:
                    error = "sched_setaffinity: %s" % e.strerror
        item = {"tid": tid, "tgid": int(w.get("tgid", tid)), "comm": w.get("comm"),
                "kind": w.get("kind"), "before": format_cpulist(before),
                "after": format_cpulist(before if error else want),
                "changed": changed and error is None, "cgroup": moved}
        if error:
            item["error"] = error
        results.append(item)
    return results


def verify(proc: str, workers: Sequence[Mapping[str, Any]], cpus: Sequence[int]
           ) -> List[Dict[str, Any]]:
    """Threads whose Cpus_allowed_list (read back from /proc) differs from cpus."""
    want = sorted(set(cpus))
    bad = []
    for w in workers:
        t = read_thread(proc, int(w["tgid"]), int(w["tid"]))
        if t is None:
            continue
        if parse_cpulist(t["cpus_allowed"]) != want:
            bad.append({"tid": t["tid"], "comm": t["comm"], "cpus_allowed": t["cpus_allowed"]})
    return bad


def domain_backends(pid: int, domain: Optional[str], backend_sockets: Sequence[str] = (),
                    find_sockets: bool = True, proc: str = "/proc",
                    run_dir: str = "/run/libvirt/qemu") -> List[Dict[str, Any]]:
    """The vhost-user backends of QEMU `pid` on the given sockets, plus on the
    domain's own sockets when `find_sockets` (see find_backends)."""
    paths = list(backend_sockets)
    if find_sockets and domain:
        paths += [s for s in domain_sockets(domain, run_dir) if s not in paths]
    return find_backends(paths, pid, proc)


def backend_workers(pid: int, backends: Sequence[Mapping[str, Any]], backend_pids: Iterable[int] = (),
                    name_pattern: Optional[str] = None, proc: str = "/proc"
                    ) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """The threads of QEMU and of the backends (found and given), and the workers among them."""
    pids = sorted({int(p) for p in backend_pids} | {p for b in backends for p in b["pids"]})
    threads = list_threads(proc, [pid] + pids)
    return threads, find_workers(threads, pid, pids, name_pattern)


def qemu_pid_of_domain(domain: str, run_dir: str = "/run/libvirt/qemu") -> int:
    path = os.path.join(run_dir, "%s.pid" % domain)
    try:
        return int(_read(path).strip())
    except FileNotFoundError:
        raise ValueError("domain %r is not running (no %s)" % (domain, path))


# ------------------------------------------------------------------- hook --

def run_from_config(config_path: str, domain: str, proc: str = "/proc",
                    run_dir: str = "/run/libvirt/qemu", wait: float = 20.0,
                    log: Optional[TextIO] = None) -> int:
    """Pin the workers of a started domain as its saved config says.

    Waits up to `wait` seconds for the QEMU pid file, for at least the
    configured number of workers (vhost threads appear as devices start) and
    for a backend on every vhost-user socket (a backend may connect late).
    """
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    cpus = parse_cpulist(str(cfg["cpus"]))
    expect = int(cfg.get("min_workers", 1))
    deadline = time.monotonic() + wait
    workers: List[Dict[str, Any]] = []
    backends: List[Dict[str, Any]] = []
    pid = None
    while True:
        found = False
        try:
            pid = qemu_pid_of_domain(domain, run_dir)
            backends = domain_backends(pid, domain, cfg.get("backend_sockets", []),
                                       cfg.get("find_backends", True), proc, run_dir)
            workers = backend_workers(pid, backends, cfg.get("backend_pids", []),
                                      cfg.get("name_pattern"), proc)[1]
            found = all(b["pids"] for b in backends)
        except (ValueError, OSError):
            workers = []
        if (found and len(workers) >= expect) or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    results = pin(workers, cpus)
    if log:
        log.write(json.dumps({"domain": domain, "pid": pid, "cpus": format_cpulist(cpus),
                              "backends": backends, "threads": results}) + "\n")
    ok = (workers or expect == 0) and all(b["pids"] for b in backends)
    return 0 if ok and not any("error" in r for r in results) else 1


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description="pin the vhost workers of a libvirt domain")
    ap.add_argument("domain")
    ap.add_argument("--config-dir", default="/etc/qemu-ixgbe/vhost-pinning")
    ap.add_argument("--run-dir", default="/run/libvirt/qemu")
    ap.add_argument("--wait", type=float, default=20.0)
    ap.add_argument("--log", default=None)
    args = ap.parse_args(argv)
    cfg = os.path.join(args.config_dir, "%s.json" % args.domain)
    if not os.path.exists(cfg):
        return 0  # domain not managed
    log = open(args.log, "a", encoding="utf-8") if args.log else None
    try:
        return run_from_config(cfg, args.domain, run_dir=args.run_dir, wait=args.wait, log=log)
    finally:
        if log:
            log.close()


if __name__ == "__main__":
    raise SystemExit(main())
