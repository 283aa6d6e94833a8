#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Find and pin the vhost worker threads of a QEMU process.
#
# This file is both an Ansible module_utils (imported by the vhost_pin
# module) and, copied verbatim, the stand-alone helper that the libvirt qemu
# hook runs on every domain start. Standard library only.
#
# Where the workers live:
#   * Linux >= 6.4: vhost workers are threads of the QEMU process itself
#     (user workers created by vhost_task), named "vhost-<tid>" after the
#     QEMU thread that issued VHOST_SET_OWNER.
#   * Linux < 6.4: they are kernel threads (children of kthreadd, pid 2)
#     with the same "vhost-<tid>" name, outside QEMU's thread group.
#   * vhost-user: the datapath runs in a separate backend process; all of
#     its threads (or those whose name matches a pattern) are workers.
# find_workers() is a pure function of a thread list, so both kernel
# behaviours are testable on any machine.
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence


def parse_cpus(text: str) -> List[int]:
    out = set()
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            out.update(range(int(lo), int(hi) + 1))
        else:
            out.add(int(part))
    return sorted(out)


def format_cpus(cpus: Iterable[int]) -> str:
    ordered = sorted(set(cpus))
    out: List[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append("%d-%d" % (ordered[i], ordered[j]) if j > i else str(ordered[i]))
        i = j + 1
    return ",".join(out)


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
        tid, tgid = int(t["tid"]), int(t["tgid"])
        comm = str(t.get("comm", ""))
        kind = None
        if tgid == int(qemu_pid) and comm in names:
            kind = "vhost-task"
        elif comm in names and int(t.get("ppid", -1)) == 2 and tgid == tid:
            kind = "vhost-kthread"
        elif tgid in backends:
            kind = "backend"
        elif regex is not None and tgid == int(qemu_pid) and regex.search(comm):
            kind = "pattern"
        if kind:
            item = dict(t)
            item["kind"] = kind
            picked.append(item)
    return picked


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
    mounts = _mounts(proc)
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and "cpuset" in parts[1].split(","):
            for m in mounts:
                if len(m) >= 4 and m[2] == "cgroup" and "cpuset" in m[3].split(","):
                    return {"version": "1", "dir": os.path.join(m[1], parts[2].lstrip("/"))}
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[0] == "0" and parts[1] == "":
            for m in mounts:
                if len(m) >= 3 and m[2] == "cgroup2":
                    d = os.path.join(m[1], parts[2].lstrip("/"))
                    if os.path.exists(os.path.join(d, "cpuset.cpus.effective")):
                        return {"version": "2", "dir": d}
    return None


def cgroup_cpus(cg: Mapping[str, str]) -> List[int]:
    name = "cpuset.effective_cpus" if cg["version"] == "1" else "cpuset.cpus.effective"
    return parse_cpus(_read(os.path.join(cg["dir"], name)))


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
        if parse_cpus(_read(os.path.join(target, "cpuset.cpus"))) != sorted(set(cpus)):
            _write(os.path.join(target, "cpuset.cpus"), format_cpus(cpus))
        _write(os.path.join(target, "tasks"), str(tid))
    else:
        if _read(os.path.join(target, "cgroup.type")).strip() != "threaded":
            _write(os.path.join(target, "cgroup.type"), "threaded")
        if parse_cpus(_read(os.path.join(target, "cpuset.cpus"))) != sorted(set(cpus)):
            _write(os.path.join(target, "cpuset.cpus"), format_cpus(cpus))
        _write(os.path.join(target, "cgroup.threads"), str(tid))
    return target


def pin(workers: Sequence[Mapping[str, Any]], cpus: Sequence[int], dry_run: bool = False,
        proc: str = "/proc") -> List[Dict[str, Any]]:
    """Pin each worker to cpus (moving it out of a too narrow cpuset cgroup first)."""
    want = sorted(set(cpus))
    results = []
    for w in workers:
        tid = int(w["tid"])
        try:
            before = current_cpus(tid)
        except ProcessLookupError:
            continue
        changed = before != want
        moved = None
        if changed:
            cg = cpuset_cgroup(proc, int(w.get("tgid", tid)), tid)
            if cg is not None and not set(want) <= set(cgroup_cpus(cg)):
                moved = os.path.join(os.path.dirname(cg["dir"].rstrip("/")), VHOST_CGROUP)
                if not dry_run:
                    move_to_vhost_cgroup(cg, tid, want)
            if not dry_run:
                os.sched_setaffinity(tid, want)
        results.append({"tid": tid, "comm": w.get("comm"), "kind": w.get("kind"),
                        "before": format_cpus(before), "after": format_cpus(want),
                        "changed": changed, "cgroup": moved})
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
        if parse_cpus(t["cpus_allowed"]) != want:
            bad.append({"tid": t["tid"], "comm": t["comm"], "cpus_allowed": t["cpus_allowed"]})
    return bad


def qemu_pid_of_domain(domain: str, run_dir: str = "/run/libvirt/qemu") -> int:
    path = os.path.join(run_dir, "%s.pid" % domain)
    try:
        return int(_read(path).strip())
    except FileNotFoundError:
        raise ValueError("domain %r is not running (no %s)" % (domain, path))


# ------------------------------------------------------------------- hook --

def run_from_config(config_path: str, domain: str, proc: str = "/proc",
                    run_dir: str = "/run/libvirt/qemu", wait: float = 20.0,
                    log=None) -> int:
    """Pin the workers of a started domain as its saved config says.

    Waits up to `wait` seconds for the QEMU pid file and for at least the
    configured number of workers (vhost threads appear as devices start).
    """
    with open(config_path, encoding="utf-8") as f:
        cfg = json.load(f)
    cpus = parse_cpus(str(cfg["cpus"]))
    expect = int(cfg.get("min_workers", 1))
    deadline = time.monotonic() + wait
    workers: List[Dict[str, Any]] = []
    pid = None
    while True:
        found = False
        try:
            pid = qemu_pid_of_domain(domain, run_dir)
            backends = [int(p) for p in cfg.get("backend_pids", [])]
            threads = list_threads(proc, [pid] + backends)
            workers = find_workers(threads, pid, backends, cfg.get("name_pattern"))
            found = True
        except (ValueError, OSError):
            workers = []
        if (found and len(workers) >= expect) or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    results = pin(workers, cpus)
    if log:
        log.write(json.dumps({"domain": domain, "pid": pid, "cpus": format_cpus(cpus),
                              "threads": results}) + "\n")
    return 0 if workers or expect == 0 else 1


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
    sys.exit(main())
