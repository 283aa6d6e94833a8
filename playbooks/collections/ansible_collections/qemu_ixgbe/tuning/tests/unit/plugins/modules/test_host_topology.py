"""host_topology reads back the facts of a recorded sys/proc tree."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.topology import PlanError
from ansible_collections.qemu_ixgbe.tuning.plugins.modules.host_topology import read_topology
from ansible_collections.qemu_ixgbe.tuning.tests.unit.topologies import two_node_topology, write_sysfs_tree

SIZES = {"2048kB": {"total": 0, "free": 0}}


def test_reads_the_two_node_tree(tmp_path: Path) -> None:
    want = two_node_topology()
    root = write_sysfs_tree(tmp_path, want)
    (root / "proc/mounts").write_text("proc /proc proc rw 0 0\nhugetlbfs /dev/hugepages hugetlbfs rw 0 0\n")
    (root / "proc/42").mkdir()
    (root / "proc/42/comm").write_text("irqbalance\n")
    got = read_topology(str(root))
    assert {n: v["cpus"] for n, v in got["nodes"].items()} == {n: v["cpus"] for n, v in want["nodes"].items()}
    assert all(v["hugepages"] == SIZES for v in got["nodes"].values())
    assert got["cpus"] == want["cpus"]
    assert got["online"] == want["online"] and got["isolated"] == []
    assert got["nics"] == want["nics"]
    assert got["cpu"] == want["cpu"]
    assert got["hugepages"] == SIZES and got["hugetlbfs_mounts"] == ["/dev/hugepages"]
    assert got["cmdline"] == "BOOT_IMAGE=/vmlinuz quiet"
    assert got["vhost_net"] == {"device": False, "module_loaded": False}
    assert got["irqbalance_running"] is True


def test_a_kernel_without_numa_has_one_node_and_a_virtual_nic_no_node(tmp_path: Path) -> None:
    root = write_sysfs_tree(tmp_path, two_node_topology())
    shutil.rmtree(root / "sys/devices/system/node")
    got = read_topology(str(root))
    assert got["nodes"] == {"0": {"cpus": list(range(16)), "hugepages": {}}}
    assert {c["node"] for c in got["cpus"].values()} == {0}
    assert got["nics"]["lo"] == {"numa_node": None, "driver": None, "physical": False}
    assert got["irqbalance_running"] is False


def test_refuses_what_is_not_a_sysfs_tree(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="not a Linux sysfs tree"):
        read_topology(str(tmp_path))


def test_refuses_a_bad_cpu_list(tmp_path: Path) -> None:
    root = write_sysfs_tree(tmp_path, two_node_topology())
    (root / "sys/devices/system/cpu/online").write_text("0-x\n")
    with pytest.raises(PlanError, match="bad CPU list element"):
        read_topology(str(root))
