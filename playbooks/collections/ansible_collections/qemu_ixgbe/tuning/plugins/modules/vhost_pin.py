#!/usr/bin/python
# -*- coding: utf-8 -*-
# Pin the vhost worker threads of a running QEMU to given CPUs.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: vhost_pin
short_description: Find the vhost workers of a running domain and pin them
description:
  - Finds the vhost worker threads that serve a QEMU process. On Linux 6.4
    and later they are C(vhost-<tid>) threads inside QEMU; before 6.4 they are
    C(vhost-<tid>) kernel threads. Threads of vhost-user backend processes
    and QEMU threads matching O(name_pattern) are included too.
  - A vhost-user backend is found through its socket (O(find_backends),
    O(backend_sockets)), as the process at the other end of QEMU's connection
    on that path, whichever side listens. O(backend_pids) names backends directly.
  - Backend threads are never moved between cgroups; a backend whose cpuset
    cgroup excludes O(cpus) makes the module fail.
  - Pins each to O(cpus) with sched_setaffinity and reads the result back
    from C(/proc/<pid>/task/<tid>/status) (Cpus_allowed_list).
  - Supports check mode; reports changed only when a thread was moved.
options:
  domain:
    description: Running libvirt domain whose QEMU pid is read from O(run_dir).
    type: str
  pid:
    description: QEMU pid, instead of O(domain).
    type: int
  cpus:
    description: CPU list the workers may run on, e.g. C(6-7).
    type: str
    required: true
  backend_pids:
    description: Pids of vhost-user backend processes serving this domain.
    type: list
    elements: int
    default: []
  backend_sockets:
    description: vhost-user socket paths whose backend processes (connected to QEMU) are workers.
    type: list
    elements: path
    default: []
  find_backends:
    description:
      - Also take the sockets of the domain's vhost-user interfaces from libvirt's
        status XML C(<run_dir>/<domain>.xml). Only with O(domain).
      - A socket without a connected backend is reported in RV(backends) with no pids
        and a warning.
    type: bool
    default: true
  name_pattern:
    description: Regular expression; QEMU threads whose name matches count as workers too.
    type: str
  min_workers:
    description: Fail when fewer workers are found (0 allows none).
    type: int
    default: 1
  run_dir:
    description: Where libvirt keeps C(<domain>.pid).
    type: path
    default: /run/libvirt/qemu
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Pin vhost workers of vm1 to the NIC node's spare CPUs
  qemu_ixgbe.tuning.vhost_pin:
    domain: vm1
    cpus: "6-7"

- name: Pin the vhost-user backend of vm2 (e.g. DPDK), found through its socket
  qemu_ixgbe.tuning.vhost_pin:
    domain: vm2
    cpus: "2-3"
    min_workers: 1
"""

RETURN = r"""
pid:
  description: QEMU pid.
  returned: always
  type: int
backends:
  description: Each vhost-user socket looked at, with the pids of the processes serving it.
  returned: always
  type: list
  elements: dict
threads:
  description: Each worker thread with kind, before and after CPU lists.
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import vhost
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import format_cpulist, parse_cpulist


def main():
    module = AnsibleModule(
        argument_spec={
            "domain": {"type": "str"},
            "pid": {"type": "int"},
            "cpus": {"type": "str", "required": True},
            "backend_pids": {"type": "list", "elements": "int", "default": []},
            "backend_sockets": {"type": "list", "elements": "path", "default": []},
            "find_backends": {"type": "bool", "default": True},
            "name_pattern": {"type": "str"},
            "min_workers": {"type": "int", "default": 1},
            "run_dir": {"type": "path", "default": "/run/libvirt/qemu"},
        },
        required_one_of=[("domain", "pid")],
        mutually_exclusive=[("domain", "pid")],
        supports_check_mode=True,
    )
    p = module.params
    cpus = _checked_cpus(module, p["cpus"])
    try:
        pid = p["pid"] or vhost.qemu_pid_of_domain(p["domain"], p["run_dir"])
        backends = vhost.domain_backends(pid, p["domain"], p["backend_sockets"], p["find_backends"],
                                         run_dir=p["run_dir"])
        threads, workers = vhost.backend_workers(pid, backends, p["backend_pids"], p["name_pattern"])
    except (ValueError, OSError) as e:
        module.fail_json(msg=str(e))
    for b in backends:
        if not b["pids"]:
            module.warn("no backend process is connected to QEMU on vhost-user socket %s"
                        % b["socket"])
    if len(workers) < p["min_workers"]:
        module.fail_json(msg="found %d vhost worker thread(s) for pid %d, expected at least %d "
                             "(threads: %s)" % (len(workers), pid, p["min_workers"],
                                                ", ".join(sorted({t["comm"] for t in threads}))),
                         pid=pid, backends=backends)
    results = _pin(module, workers, cpus, pid=pid, backends=backends)
    module.exit_json(changed=any(r["changed"] for r in results), pid=pid, cpus=format_cpulist(cpus),
                     backends=backends, threads=results)


def _checked_cpus(module, text):
    """The CPUs of the cpus option: a CPU list of online CPUs, not empty."""
    try:
        cpus = parse_cpulist(text)
    except ValueError:
        module.fail_json(msg="bad CPU list %r" % text)
    if not cpus:
        module.fail_json(msg="empty CPU list")
    online = parse_cpulist(open("/sys/devices/system/cpu/online").read())
    outside = [c for c in cpus if c not in online]
    if outside:
        module.fail_json(msg="CPUs %s are not online on this host (online: %s)"
                         % (format_cpulist(outside), format_cpulist(online)))
    return cpus


def _pin(module, workers, cpus, pid, backends):
    """Pin the workers (check mode: say what would move) and read them back."""
    results = vhost.pin(workers, cpus, dry_run=module.check_mode)
    changed = any(r["changed"] for r in results)
    errors = ["%s %d (%s): %s" % (r["kind"], r["tid"], r["comm"], r["error"])
              for r in results if "error" in r]
    if errors:
        module.fail_json(msg="cannot pin to %s: %s" % (format_cpulist(cpus), "; ".join(errors)),
                         changed=changed, pid=pid, backends=backends, threads=results)
    if not module.check_mode:
        bad = vhost.verify("/proc", workers, cpus)
        if bad:
            module.fail_json(msg="threads not on %s after pinning: %s"
                             % (format_cpulist(cpus), bad), threads=results)
    return results


if __name__ == "__main__":
    main()
