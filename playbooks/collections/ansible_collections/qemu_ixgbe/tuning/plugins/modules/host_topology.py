#!/usr/bin/python
# -*- coding: utf-8 -*-
# Read-only host facts for NUMA-aware VM placement.
from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_topology
short_description: Read NUMA nodes, CPU threads, NICs and CPU flags of a host
description:
  - Reads C(/sys) and C(/proc) (below O(root)) and returns the host topology
    that the planning filters of this collection take as input.
  - Never changes anything; runs the same in check mode.
options:
  root:
    description:
      - Directory that holds the C(sys) and C(proc) trees to read; C(/) for the live host.
        A copied or hand-written tree (a fixture) works the same.
    type: path
    default: /
  nics:
    description:
      - Host NICs that must exist; the module fails naming any that does not.
    type: list
    elements: str
    default: []
author: qemu-ixgbe project (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Read the host topology
  qemu_ixgbe.tuning.host_topology:
    nics: [enp59s0f0]
  register: topo
"""

RETURN = r"""
topology:
  description: Nodes with their CPUs, per-CPU core and siblings, NICs with their node and driver, CPU identity and flags.
  returned: always
  type: dict
"""

import os
import re

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.topology import (
    PlanError, parse_cpulist)


def _read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except (FileNotFoundError, NotADirectoryError, PermissionError, OSError):
        return default


def _hugepages(hp_dir):
    """{"2048kB": {"total": N, "free": N}, ...} of a hugepages directory (none when absent)."""
    hp = {}
    if os.path.isdir(hp_dir):
        for size in sorted(os.listdir(hp_dir)):
            hp[size.replace("hugepages-", "")] = {
                "total": int(_read(os.path.join(hp_dir, size, "nr_hugepages"), "0")),
                "free": int(_read(os.path.join(hp_dir, size, "free_hugepages"), "0")),
            }
    return hp


def _read_nodes(node_dir, online):
    nodes = {}
    if os.path.isdir(node_dir):
        for name in sorted(os.listdir(node_dir)):
            m = re.match(r"^node(\d+)$", name)
            if not m:
                continue
            cpus = [c for c in parse_cpulist(_read(os.path.join(node_dir, name, "cpulist"), ""))
                    if c in online]
            nodes[m.group(1)] = {"cpus": cpus, "hugepages": _hugepages(os.path.join(node_dir, name, "hugepages"))}
    if not nodes:  # kernel without NUMA: one node with every CPU
        nodes["0"] = {"cpus": online, "hugepages": {}}
    return nodes


def _read_cpus(cpu_dir, online, nodes):
    cpu_node = {c: int(n) for n, v in nodes.items() for c in v["cpus"]}
    cpus = {}
    for cpu in online:
        topo = os.path.join(cpu_dir, "cpu%d" % cpu, "topology")
        siblings = parse_cpulist(_read(os.path.join(topo, "thread_siblings_list"), str(cpu)))
        package = _read(os.path.join(topo, "physical_package_id"), "0")
        core = _read(os.path.join(topo, "core_id"), str(cpu))
        cpus[str(cpu)] = {"node": cpu_node.get(cpu, 0), "core": "%s:%s" % (package, core),
                          "siblings": [s for s in siblings if s in online]}
    return cpus


def _nic_numa_node(sysdir, dev):
    # The node file sits on the PCI function; a virtio netdev's
    # "device" is the virtio bus device below it, so walk up.
    cur = os.path.realpath(dev) if os.path.exists(dev) else None
    while cur and cur.startswith(os.path.realpath(sysdir) + os.sep):
        numa = _read(os.path.join(cur, "numa_node"))
        if numa is not None:
            return int(numa) if numa != "" else None
        cur = os.path.dirname(cur)
    return None


def _read_nics(sysdir):
    nics = {}
    net_dir = os.path.join(sysdir, "class/net")
    if os.path.isdir(net_dir):
        for nic in sorted(os.listdir(net_dir)):
            dev = os.path.join(net_dir, nic, "device")
            driver = None
            if os.path.islink(os.path.join(dev, "driver")):
                driver = os.path.basename(os.readlink(os.path.join(dev, "driver")))
            nics[nic] = {"numa_node": _nic_numa_node(sysdir, dev),
                         "driver": driver, "physical": os.path.exists(dev)}
    return nics


def _read_cpu_ident(procdir):
    """Vendor, family, model, stepping and flags of the first CPU in /proc/cpuinfo."""
    ident = {}
    for line in _read(os.path.join(procdir, "cpuinfo"), "").splitlines():
        if not line.strip():
            if ident:
                break
            continue
        if ":" in line:
            k, v = line.split(":", 1)
            ident[k.strip()] = v.strip()
    return {"vendor": ident.get("vendor_id"),
            "family": int(ident["cpu family"]) if "cpu family" in ident else None,
            "model": int(ident["model"]) if ident.get("model", "").isdigit() else None,
            "stepping": int(ident["stepping"]) if ident.get("stepping", "").isdigit() else None,
            "flags": sorted(ident.get("flags", "").split())}


def _hugetlbfs_mounts(procdir):
    mounts = []
    for line in (_read(os.path.join(procdir, "mounts"), "") or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "hugetlbfs":
            mounts.append(fields[1])
    return mounts


def _irqbalance_running(procdir):
    if os.path.isdir(procdir):
        for pid in os.listdir(procdir):
            if pid.isdigit() and _read(os.path.join(procdir, pid, "comm")) == "irqbalance":
                return True
    return False


def read_topology(root):
    sysdir = os.path.join(root, "sys")
    procdir = os.path.join(root, "proc")
    cpu_dir = os.path.join(sysdir, "devices/system/cpu")
    online_text = _read(os.path.join(cpu_dir, "online"))
    if online_text is None:
        raise PlanError("cannot read %s/online: not a Linux sysfs tree" % cpu_dir)
    online = parse_cpulist(online_text)
    nodes = _read_nodes(os.path.join(sysdir, "devices/system/node"), online)
    return {
        "nodes": nodes,
        "cpus": _read_cpus(cpu_dir, online, nodes),
        "online": online,
        "isolated": parse_cpulist(_read(os.path.join(cpu_dir, "isolated"), "")),
        "nics": _read_nics(sysdir),
        "cpu": _read_cpu_ident(procdir),
        "hugepages": _hugepages(os.path.join(sysdir, "kernel/mm/hugepages")),
        "hugetlbfs_mounts": _hugetlbfs_mounts(procdir),
        "cmdline": _read(os.path.join(procdir, "cmdline"), ""),
        "vhost_net": {
            "device": os.path.exists(os.path.join(root, "dev/vhost-net")),
            "module_loaded": os.path.isdir(os.path.join(sysdir, "module/vhost_net")),
        },
        "irqbalance_running": _irqbalance_running(procdir),
    }


def main():
    module = AnsibleModule(
        argument_spec={"root": {"type": "path", "default": "/"},
                       "nics": {"type": "list", "elements": "str", "default": []}},
        supports_check_mode=True,
    )
    try:
        topo = read_topology(module.params["root"])
    except PlanError as e:
        module.fail_json(msg=str(e))
    missing = [n for n in module.params["nics"] if n not in topo["nics"]]
    if missing:
        module.fail_json(msg="unknown host NIC(s): %s (host has: %s)"
                         % (", ".join(missing), ", ".join(sorted(topo["nics"])) or "none"),
                         topology=topo)
    module.exit_json(changed=False, topology=topo)


if __name__ == "__main__":
    main()
