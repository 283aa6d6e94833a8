"""The plan: placement on the NIC's node, one queue per CPU, XPS/RPS, profiles, bad input."""

from __future__ import annotations

import json
import os
from typing import Callable, Dict, List

import pytest

from conftest import HERE, TREES, Result
from nettune.cpus import parse_cpulist, parse_mask
from nettune.discover import Facts
from nettune.plan import Plan, make_plan
from nettune.profiles import Config
from test_discover import facts_of

GOLDEN = os.path.join(HERE, "golden")


def plan_of(name: str, **cfg: object) -> Plan:
    return make_plan(facts_of(name), Config(**cfg))  # type: ignore[arg-type]


def irq_targets(plan: Plan, iface: str) -> Dict[str, List[int]]:
    return {s.label: parse_cpulist(s.want) for s in plan.settings if s.kind == "irq" and s.iface == iface}


def test_numa2_every_irq_on_node1_one_queue_per_cpu() -> None:
    facts = facts_of("numa2-ixgbe")
    plan = make_plan(facts, Config(interfaces=["eth0"]))
    irqs = irq_targets(plan, "eth0")
    # every IRQ of the NIC (the 4 queue vectors and the link vector) lands on node 1
    assert len(irqs) == 5
    for label, cpus in irqs.items():
        assert cpus and all(facts.cpu_node(c) == 1 for c in cpus), label
    queue_cpus = [cpus[0] for label, cpus in irqs.items() if "TxRx" in label]
    assert len(queue_cpus) == 4 and sorted(queue_cpus) == [4, 5, 6, 7]   # one queue per CPU, all distinct
    assert plan.layouts["eth0"].queue_cpu == {0: 4, 1: 5, 2: 6, 3: 7}


def test_numa2_xps_masks_match_queue_cpus() -> None:
    plan = plan_of("numa2-ixgbe")
    layout = plan.layouts["eth0"]
    xps = {s.target: s.want for s in plan.settings if s.kind == "mask" and s.label.endswith("XPS")
           and s.iface == "eth0"}
    assert len(xps) == 4
    for q, cpu in layout.queue_cpu.items():
        want = xps[f"/sys/class/net/eth0/queues/tx-{q}/xps_cpus"]
        assert parse_mask(want) == [cpu]
        assert want == format(1 << cpu, "x").rjust(2, "0")   # kernel spelling for 8 CPUs
    # and the IRQ of queue q is on that same CPU
    irqs = irq_targets(plan, "eth0")
    for q, cpu in layout.queue_cpu.items():
        assert irqs[f"IRQ {40 + q} eth0-TxRx-{q}"] == [cpu]


def test_numa2_second_nic_stays_on_node0_without_housekeeping() -> None:
    plan = plan_of("numa2-ixgbe")
    eth1 = plan.layouts["eth1"]
    assert eth1.cpus == [1, 2, 3] and eth1.queue_cpu == {0: 1, 1: 2, 2: 3}
    assert irq_targets(plan, "eth1")["IRQ 63 eth1"] == [0]   # other vector on local housekeeping CPU


def test_housekeeping_cpu0_excluded_and_channels_reduced() -> None:
    plan = plan_of("ixgbe-4q")
    assert plan.housekeeping == [0]
    assert plan.layouts["eth0"].queue_cpu == {0: 1, 1: 2, 2: 3}
    ch = [s for s in plan.settings if s.key == "ethtool:eth0:channels"][0]
    assert ch.want == {"combined": 3} and ch.stage == 0
    assert all(0 not in parse_cpulist(s.want) for s in plan.settings if s.kind == "irq" and "TxRx" in s.label)
    assert "IRQ 27 eth0-TxRx-3" not in irq_targets(plan, "eth0")   # queue 3 goes away with the channels


def test_two_cpu_machine_has_no_housekeeping() -> None:
    facts = facts_of("ixgbe-4q")
    facts.online_cpus = [0, 1]
    facts.nodes = {0: [0, 1]}
    plan = make_plan(facts, Config())
    assert plan.housekeeping == [] and plan.layouts["eth0"].queue_cpu == {0: 0, 1: 1}


def test_single_queue_nic_gets_rps_not_xps() -> None:
    plan = plan_of("e1000e-1q")
    rps = [s for s in plan.settings if s.label == "rx-0 RPS"]
    assert len(rps) == 1 and parse_mask(rps[0].want) == [1, 2, 3]
    assert not [s for s in plan.settings if s.label.endswith("XPS")]
    irqs = irq_targets(plan, "eth0")
    assert irqs["IRQ 24 eth0-rx-0"] == [1] and irqs["IRQ 25 eth0-tx-0"] == [1] and irqs["IRQ 26 eth0"] == [0]
    assert not [s for s in plan.settings if s.key == "ethtool:eth0:channels"]


def test_virtio_rx_and_tx_vectors_follow_their_queue_pair() -> None:
    plan = plan_of("virtio-4q")
    irqs = irq_targets(plan, "eth0")
    for q, cpu in plan.layouts["eth0"].queue_cpu.items():
        assert irqs[f"IRQ {25 + 2 * q} virtio0-input.{q}"] == [cpu]
        assert irqs[f"IRQ {26 + 2 * q} virtio0-output.{q}"] == [cpu]
    assert not [s for s in plan.settings if s.key == "ethtool:eth0:pause"]   # virtio has no -A


def test_rps_on_when_fewer_queues_than_cpus() -> None:
    plan = plan_of("mlx5-8q", channels="2")
    lay = plan.layouts["enp59s0f0"]
    assert lay.queues == 2 and lay.rps_cpus == [1, 2, 3, 4, 5, 6, 7]
    rps = [s for s in plan.settings if s.label.endswith("RPS")]
    assert len(rps) == 2 and all(parse_mask(s.want) == list(range(1, 8)) for s in rps)


def test_paired_vector_drivers_leave_tx_usecs_alone() -> None:
    ix = [s for s in plan_of("ixgbe-4q").settings if s.key == "ethtool:eth0:coalesce"][0]
    assert ix.want == {"rx-usecs": 25}
    i40e = [s for s in plan_of("i40e-8q").settings if s.key == "ethtool:ens2f0:coalesce"][0]
    assert i40e.want == {"adaptive-rx": False, "adaptive-tx": False, "rx-usecs": 25, "tx-usecs": 75}


def test_profiles_differ_where_documented() -> None:
    thr = {s.key: s.want for s in plan_of("ixgbe-4q", profile="throughput").settings}
    lat = {s.key: s.want for s in plan_of("ixgbe-4q", profile="latency").settings}
    fwd = {s.key: s.want for s in plan_of("ixgbe-4q", profile="forwarding").settings}
    assert thr["ethtool:eth0:rings"] == {"rx": 4096, "tx": 4096}
    assert lat["ethtool:eth0:rings"] == {"rx": 512, "tx": 512}
    assert fwd["ethtool:eth0:rings"] == {"rx": 512, "tx": 80}          # the ixgbe xmit_more trick
    assert "sysctl:net.core.rmem_max" in thr and "sysctl:net.core.rmem_max" not in lat
    assert lat["sysctl:net.core.busy_poll"] == "50" and "sysctl:net.core.busy_poll" not in thr
    assert fwd["sysctl:net.ipv4.ip_forward"] == "1" and fwd["sysctl:net.ipv4.ip_early_demux"] == "0"
    assert fwd["sysctl:net.ipv4.conf.eth0.rp_filter"] == "0"
    assert fwd["sysctl:net.ipv4.conf.all.rp_filter"] == "0"
    for p in (thr, lat, fwd):
        assert p["ethtool:eth0:pause"] == {"autoneg": False, "rx": False, "tx": False}
        assert p["service:irqbalance"] is False
    i40e = {s.key: s.want for s in plan_of("i40e-8q").settings}
    assert i40e["ethtool:ens2f0:feature:tx-nocache-copy"] == {"tx-nocache-copy": False}
    assert i40e["ethtool:ens2f0:feature:ntuple-filters"] == {"ntuple-filters": True}


def test_missing_sysctl_is_left_out_with_a_note() -> None:
    plan = plan_of("e1000e-1q", profile="latency")
    assert not [s for s in plan.settings if s.key == "sysctl:net.core.busy_poll"]
    assert any("busy_poll not present" in n for n in plan.notes)


def test_every_setting_has_a_reason() -> None:
    for name in ("ixgbe-4q", "virtio-4q", "igb-4q", "e1000e-1q", "i40e-8q", "mlx5-8q", "numa2-ixgbe"):
        for prof in ("throughput", "latency", "forwarding"):
            for s in plan_of(name, profile=prof).settings:
                assert len(s.reason) > 20, (name, prof, s.key)


def test_irqbalance_ban_writes_dropin_with_tuned_irqs() -> None:
    plan = plan_of("igb-4q", irqbalance="ban")
    f = [s for s in plan.settings if s.kind == "file"][0]
    assert "--banirq=24" in f.want and "--banirq=28" in f.want and "IRQBALANCE_BANNED_CPULIST=1-3" in f.want
    assert not [s for s in plan.settings if s.kind == "service"]


def test_user_cpu_list_and_housekeeping() -> None:
    plan = plan_of("i40e-8q", cpus="4-5", housekeeping="none")
    lay = plan.layouts["ens2f0"]
    assert plan.housekeeping == [] and lay.queues == 2 and lay.queue_cpu == {0: 4, 1: 5}


@pytest.mark.parametrize("cfg,msg", [
    ({"interfaces": ["eth9"]}, "unknown interface eth9"),
    ({"cpus": "2-11"}, "names CPU 8-11"),
    ({"cpus": "x"}, "not a CPU number"),
    ({"housekeeping": "0", "cpus": "0-3"}, "both a housekeeping CPU and a queue CPU"),
    ({"channels": "65"}, "above the driver's maximum 64"),
    ({"sysctls": {"net.core.nonexistent": "1"}}, "does not exist"),
    ({"features": {"made-up-feature": True}}, "no such feature"),
])
def test_bad_input_is_refused(cfg: Dict[str, object], msg: str) -> None:
    from nettune.errors import UsageError
    with pytest.raises(UsageError, match=msg):
        plan_of("i40e-8q", **cfg)


# --- stable JSON -------------------------------------------------------------------------------
GOLDEN_CASES = [(t, p) for t in ("ixgbe-4q", "virtio-4q", "numa2-ixgbe", "e1000e-1q") for p in
                ("throughput", "latency", "forwarding")]


@pytest.mark.parametrize("name,profile", GOLDEN_CASES)
def test_plan_json_is_stable(name: str, profile: str, tree: Callable[[str], str],
                             nt: Callable[..., Result]) -> None:
    """Same facts, same plan: identical across runs and tree locations, and equal to the reviewed copy.

    Regenerate the reviewed copies with NETTUNE_UPDATE_GOLDEN=1 after an intended change.
    """
    a = nt("--root", os.path.join(TREES, name), "plan", "--json", "-p", profile)
    b = nt("--root", tree(name), "plan", "--json", "-p", profile)
    assert a.rc == 0 and b.rc == 0
    assert a.out == b.out
    json.loads(a.out)
    golden = os.path.join(GOLDEN, f"{name}.{profile}.json")
    if os.environ.get("NETTUNE_UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(golden, "w") as f:
            f.write(a.out)
    with open(golden) as f:
        assert a.out == f.read()


def test_plan_is_pure(monkeypatch: pytest.MonkeyPatch) -> None:
    """make_plan reads no file: it works with every file access disabled."""
    facts: Facts = facts_of("numa2-ixgbe")
    first = make_plan(facts, Config()).to_json()
    import builtins

    def no_open(*a: object, **k: object) -> None:
        raise AssertionError("make_plan opened a file")
    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(os, "listdir", no_open)
    assert make_plan(facts, Config()).to_json() == first
