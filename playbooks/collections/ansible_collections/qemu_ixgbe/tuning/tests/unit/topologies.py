"""Host topologies as test data: a 2-node fact dictionary and the sys/proc tree it comes from.

Shared by the unit tests (planning) and the integration suite (host_topology on a
copied tree, plans landing in a real libvirtd); import it as
ansible_collections.qemu_ixgbe.tuning.tests.unit.topologies.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict


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
