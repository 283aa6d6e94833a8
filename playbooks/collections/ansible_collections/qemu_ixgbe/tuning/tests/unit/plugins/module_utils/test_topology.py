"""Pure planning logic: pins from topology facts, rep_good rules, CPU choice."""
from __future__ import annotations

from typing import Any, Dict

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import topology as t
from ansible_collections.qemu_ixgbe.tuning.tests.unit.topologies import two_node_topology


def one_node(cpus: int = 2, smt: bool = False) -> Dict[str, Any]:
    topo = two_node_topology()
    topo["nodes"] = {"0": {"cpus": list(range(cpus))}}
    topo["cpus"] = {str(c): {"node": 0, "core": "0:%d" % (c // 2 if smt else c),
                             "siblings": [c - c % 2, c - c % 2 + 1] if smt else [c]}
                    for c in range(cpus)}
    topo["nics"] = {"eth0": {"numa_node": None, "driver": "virtio_net", "physical": True}}
    return topo


def test_cpulist_round_trip() -> None:
    assert t.parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert t.format_cpulist([11, 10, 8, 3, 2, 1, 0]) == "0-3,8,10-11"
    assert t.format_cpulist([]) == ""
    with pytest.raises(t.PlanError):
        t.parse_cpulist("3-1")
    with pytest.raises(t.PlanError):
        t.parse_cpulist("a")


def test_nic_on_node1_gets_node1_cores() -> None:
    topo = two_node_topology()
    plan = t.plan_pinning(topo, 3, nic="ens1f0", iothreads=1)
    assert plan["node"] == 1
    assert plan["vcpupin"] == {"0": "4", "1": "5", "2": "6"}
    # the emulator takes the next whole free core, the iothread that core's sibling
    assert plan["emulatorpin"] == "7"
    assert plan["iothreadpin"] == {"1": "15"}
    assert plan["numatune"] == {"mode": "strict", "nodeset": "1"}
    assert plan["vhost_cpus"] == "7,12-15"
    node1 = set(topo["nodes"]["1"]["cpus"])
    used = [int(c) for c in plan["vcpupin"].values()]
    assert set(used) <= node1
    cores = {topo["cpus"][str(c)]["core"] for c in used}
    assert len(cores) == len(used), "two vCPUs share a physical core"
    assert int(plan["emulatorpin"]) not in used


def test_emulator_falls_back_to_a_sibling_thread() -> None:
    plan = t.plan_pinning(two_node_topology(), 4, nic="ens1f0")
    assert plan["vcpupin"] == {"0": "4", "1": "5", "2": "6", "3": "7"}
    assert plan["emulatorpin"] == "12"


def test_too_many_vcpus_for_the_node() -> None:
    with pytest.raises(t.PlanError, match="5 vCPUs requested but NUMA node 1 has only 4"):
        t.plan_pinning(two_node_topology(), 5, nic="ens1f0")


def test_node_and_nic_must_agree() -> None:
    with pytest.raises(t.PlanError, match="is on node 1, not on the requested node 0"):
        t.plan_pinning(two_node_topology(), 1, nic="ens1f0", node=0)
    assert t.plan_pinning(two_node_topology(), 1, node=0)["vcpupin"] == {"0": "0"}


def test_unknown_nic_and_node() -> None:
    with pytest.raises(t.PlanError, match="unknown host NIC 'nope0'"):
        t.plan_pinning(two_node_topology(), 1, nic="nope0")
    with pytest.raises(t.PlanError, match="NUMA node 7 does not exist"):
        t.plan_pinning(two_node_topology(), 1, node=7)
    with pytest.raises(t.PlanError, match="no NUMA node on a 2-node host"):
        t.plan_pinning(two_node_topology(), 1, nic="lo")


def test_reserved_cpus_are_skipped() -> None:
    plan = t.plan_pinning(two_node_topology(), 2, nic="ens1f0", reserved_cpus="4,12")
    assert plan["vcpupin"] == {"0": "5", "1": "6"}
    assert plan["emulatorpin"] == "7"
    assert "4" not in plan["vhost_cpus"].split(",")


def test_small_one_node_host() -> None:
    topo = one_node(2)
    plan = t.plan_pinning(topo, 1, nic="eth0")
    assert plan["node"] == 0 and plan["vcpupin"] == {"0": "0"} and plan["emulatorpin"] == "1"
    with pytest.raises(t.PlanError, match="only 2 physical cores|no CPU left for the emulator"):
        t.plan_pinning(topo, 2, nic="eth0")
    with pytest.raises(t.PlanError, match="vCPU count must be a positive integer"):
        t.plan_pinning(topo, 0, nic="eth0")


def test_vhost_cpus() -> None:
    topo = two_node_topology()
    assert t.vhost_cpus(topo, 1, {"0": "4", "1": "5-6"}) == "7,12-15"
    with pytest.raises(t.PlanError):
        t.vhost_cpus(one_node(1), 0, {"0": "0"})


@pytest.mark.parametrize("vendor,family,model,stepping,expected", [
    ("GenuineIntel", 6, 0x3c, 4, True),      # Haswell
    ("GenuineIntel", 6, 0x0f, 3, True),      # Conroe
    ("GenuineIntel", 15, 6, 1, False),       # kvm64 / Pentium 4
    ("GenuineIntel", 19, 1, 0, False),       # a family the 6.1 kernel does not mark
    ("AuthenticAMD", 0x17, 0x31, 0, True),   # EPYC Rome
    ("AuthenticAMD", 0x10, 2, 3, True),
    ("AuthenticAMD", 15, 107, 1, True),      # qemu64: signature 0x60fb1 >= 0x0f58
    ("AuthenticAMD", 15, 4, 0, False),       # K8 signature 0x0f40: before C stepping
    ("AuthenticAMD", 15, 4, 8, True),        # 0x0f48 .. 0x0f4f
    ("HygonGenuine", 0x18, 0, 1, True),
    ("CentaurHauls", 6, 0x0f, 0, True),
    ("CentaurHauls", 6, 0x0e, 0, False),
    ("  Shanghai  ", 7, 0x1b, 0, True),
])
def test_rep_good_rules(vendor: str, family: int, model: int, stepping: int,
                        expected: bool) -> None:
    ok, why = t.rep_good_expected(vendor, family, model, stepping)
    assert ok is expected, why


def test_rep_good_needs_fast_strings_on_intel() -> None:
    assert t.rep_good_expected("intel", 6, 0x3c, fast_strings=False)[0] is False
    assert t.rep_good_expected("intel", 6, 0x0c, fast_strings=False)[0] is True


def test_cpuid_signature() -> None:
    assert t.cpuid_signature(15, 107, 1) == 0x60fb1
    assert t.cpuid_signature(0x17, 0x31, 0) == 0x830f10
    assert t.cpuid_signature(6, 0x3c, 4) == 0x306c4


def test_plan_cpu_named_model_adds_string_ops() -> None:
    host = {"vendor": "AuthenticAMD", "family": 26, "model": 2, "flags": ["erms", "fsrm"]}
    cpu = t.plan_cpu("custom", "Haswell-noTSX", host)
    assert cpu["features"] == ["erms", "fsrm"]
    assert cpu["expect"] == {"rep_good": True, "erms": True, "fsrm": True}
    cpu = t.plan_cpu("custom", "Haswell-noTSX", {"flags": ["erms"]})
    assert cpu["features"] == ["erms"]
    cpu = t.plan_cpu("custom", "EPYC-Rome-v2", host, features=[])
    assert cpu["features"] == [] and cpu["expect"]["rep_good"] is True


def test_plan_cpu_refuses_models_without_rep_good() -> None:
    with pytest.raises(t.PlanError, match="will not set rep_good"):
        t.plan_cpu("custom", "kvm64", {})
    cpu = t.plan_cpu("custom", "kvm64", {}, require_rep_good=False)
    assert cpu["expect"]["rep_good"] is False
    with pytest.raises(t.PlanError, match="not in the known model table"):
        t.plan_cpu("custom", "MyModel", {})
    cpu = t.plan_cpu("custom", "MyModel", {},
                     signature={"vendor": "intel", "family": 6, "model": 0x55})
    assert cpu["expect"]["rep_good"] is True
    with pytest.raises(t.PlanError, match="CPU mode must be one of"):
        t.plan_cpu("passthrough")


def test_plan_cpu_host_passthrough_follows_the_host() -> None:
    intel_p4 = {"vendor": "GenuineIntel", "family": 15, "model": 4, "flags": []}
    with pytest.raises(t.PlanError):
        t.plan_cpu("host-passthrough", host_cpu=intel_p4)
    amd = {"vendor": "AuthenticAMD", "family": 26, "model": 2, "flags": ["erms"]}
    cpu = t.plan_cpu("host-passthrough", host_cpu=amd)
    assert cpu["expect"] == {"rep_good": True, "erms": True, "fsrm": False}
