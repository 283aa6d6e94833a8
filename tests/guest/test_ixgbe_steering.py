"""ixgbe receive steering, driven by the guest's own driver: RSS and the
Flow Director.

RSS: 64 flows sent from the host each land on the RX queue that the
reference Toeplitz hash, with the key and RETA read from the guest,
predicts; all 4 queues receive flows.

ntuple on (perfect-match filters): an ``ethtool -N`` rule for one TCP flow
moves it to each queue in turn while other flows stay on their RSS queues;
a drop rule drops it; deleting the rule gives it back to RSS.

ntuple off (the default, signature filters): the driver's ATR samples the
TCP flows it sends and adds a filter for the reply direction on the queue it
sent from, so a connection's incoming packets follow the CPU the sender is
pinned to (with each queue's interrupt on the CPU of the same number, as
Intel's set_irq_affinity script sets them up for ATR).

One guest with two 82599 ports carries the three (in file order): port 0's
wire is a datagram socket of the tests, which send the flows (RSS, then
ntuple, which leaves it in ntuple mode); port 1, on slirp, stays in the
boot default (ntuple off) for ATR, whose interrupt affinities are its own.
"""

from __future__ import annotations

import contextlib

import re
import time

import pytest

from ixgbe_testlib.frames import Flow, FramePort
from ixgbe_testlib.iperf3 import HostIperf3Server, iperf3_report, iperf3_summary
from ixgbe_testlib.netcheck import make_flows, place_flows, rx_queue_packets
from ixgbe_testlib.vm import VMFactory
from scenarios import WIRE_NET, Guest, NicsGuest, SocketNic, UserNic, assert_qemu_quiet, boot_nics, check_rss

pytestmark = pytest.mark.usefixtures("require_ixgbe")

NQUEUES = 4
RULE_LOC = 1
WIRED, ATR = 0, 1


@pytest.fixture(scope="module")
def nics(require_ixgbe: None, make_module_vm: VMFactory) -> NicsGuest:
    return boot_nics(
        make_module_vm, [SocketNic("ixgbe", "ixgbe"), UserNic("ixgbe", "ixgbe")], smp=NQUEUES, name="ixgbe"
    )


def queues_of(g: Guest, port: FramePort, flows: list[Flow]) -> dict[Flow, int | None]:
    return {p.flow: p.queue for p in place_flows(g.vm, g.dev, port, flows, g.macs[0])}


def ntuple_rule(f: Flow, action: int) -> str:
    return (
        f"flow-type {f.proto}4 src-ip {f.src} dst-ip {f.dst} src-port {f.sport} "
        f"dst-port {f.dport} action {action} loc {RULE_LOC}"
    )


def stat(g: Guest, name: str) -> int:
    return g.vm.ethtool_stats(g.dev).get(name, 0)


@pytest.mark.kernel_sensitive("traffic", family="rss")
def test_rss_flows_match_toeplitz(nics: NicsGuest) -> None:
    g, port = nics.guests[WIRED], nics.ports[WIRED]
    nq = g.vm.channels(g.dev)["current"].get("Combined")
    assert nq == NQUEUES, f"expected {NQUEUES} combined queues, got {nq}"
    rss = g.vm.rss(g.dev)
    assert rss.key is not None and len(rss.key) == 40, f"RSS key not readable: {rss}"
    assert len(rss.reta) == 128, f"82599 RETA has 128 entries, ethtool shows {len(rss.reta)}"
    assert rss.hash_function in ("", "toeplitz"), rss.hash_function
    report = check_rss(g, port, rss.key, rss, nq)
    print(report)
    assert_qemu_quiet(g.vm)


@pytest.mark.kernel_sensitive("traffic", family="flow-director")
def test_ntuple_rules_steer_drop_and_restore(nics: NicsGuest) -> None:
    g, port = nics.guests[WIRED], nics.ports[WIRED]
    vm, dev = g.vm, g.dev
    with port:
        vm.sh(f"ethtool -K {dev} ntuple on")
        vm.wait_carrier(dev)
        assert "ntuple-filters: on" in vm.sh(f"ethtool -k {dev}")
        assert vm.channels(dev)["current"].get("Combined") == NQUEUES

        flows = make_flows(f"{WIRE_NET}.1", 16)
        target = next(f for f in flows if f.proto == "tcp")
        others = [f for f in flows if f != target]
        base = queues_of(g, port, flows)
        assert None not in base.values(), f"a flow did not land on one queue: {base}"
        assert len(set(base.values())) > 1, f"RSS spreads nothing: {base}"

        matched = stat(g, "fdir_match")
        for q in range(NQUEUES):
            vm.sh(f"ethtool -N {dev} {ntuple_rule(target, q)}")
            assert f"Action: Direct to queue {q}" in vm.sh(f"ethtool -n {dev} rule {RULE_LOC}")
            placed = queues_of(g, port, flows)
            assert placed[target] == q, f"rule to queue {q}: the flow landed on {placed[target]}"
            moved = {f: (base[f], placed[f]) for f in others if placed[f] != base[f]}
            assert not moved, f"rule to queue {q} moved other flows (RSS queue, now): {moved}"
        assert stat(g, "fdir_match") - matched >= 3 * NQUEUES

        # Drop: the flow's frames reach no queue; a frame of another flow
        # sent after them arrives, so they were looked at and dropped.
        vm.sh(f"ethtool -N {dev} {ntuple_rule(target, -1)}")
        witness = others[0]
        before = rx_queue_packets(vm.ethtool_stats(dev))
        for i in range(3):
            port.send(target.frame(g.macs[0], "02:00:00:00:00:01", seq=100 + i))
        port.send(witness.frame(g.macs[0], "02:00:00:00:00:01", seq=200))
        deadline = time.monotonic() + 20
        while True:
            now = rx_queue_packets(vm.ethtool_stats(dev))
            delta = {q: now.get(q, 0) - before.get(q, 0) for q in now}
            if sum(delta.values()) >= 1 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        time.sleep(1)
        now = rx_queue_packets(vm.ethtool_stats(dev))
        delta = {q: d for q in now if (d := now.get(q, 0) - before.get(q, 0))}
        assert delta == {base[witness]: 1}, f"drop rule: RX per queue {delta}, want only the witness"
        port.drain()

        # Deleted, the rule no longer applies: RSS places the flow again
        vm.sh(f"ethtool -N {dev} delete {RULE_LOC}")
        placed = queues_of(g, port, flows)
        assert placed == base, f"after delete: {placed} != RSS placement {base}"
    assert_qemu_quiet(vm)


def test_atr_rx_follows_sending_cpu(nics: NicsGuest) -> None:
    """ATR is the driver's mode with ntuple off (the boot default): on the
    port the other tests leave alone."""
    g = nics.guests[ATR]
    vm, dev = g.vm, g.dev
    assert "ntuple-filters: off" in vm.sh(f"ethtool -k {dev}")
    assert vm.channels(dev)["current"].get("Combined") == NQUEUES
    # As Intel's set_irq_affinity does for ATR: queue k's interrupt on CPU
    # k, so replies that land on queue k are handled (and answered) there
    pinned = 0
    for line in vm.sh("cat /proc/interrupts").splitlines():
        m = re.match(rf"\s*(\d+):.*\s{re.escape(dev)}-TxRx-(\d+)\s*$", line)
        if m:
            vm.sh(f"echo {m.group(2)} > /proc/irq/{m.group(1)}/smp_affinity_list")
            pinned += 1
    assert pinned == NQUEUES, f"{pinned} queue interrupts found in /proc/interrupts"
    report = []
    with contextlib.ExitStack() as stack:
        # one server per run: an iperf3 server closes and reopens its
        # listening socket after each test, and a client in between is reset
        servers = [stack.enter_context(HostIperf3Server(vm.log_dir)) for _ in range(NQUEUES)]
        matched = stat(g, "fdir_match")
        for cpu, srv in enumerate(servers):
            before = rx_queue_packets(vm.ethtool_stats(dev))
            r = vm.run(f"taskset -c {cpu} iperf3 -c {g.host} -p {srv.port} -t 3 -J", timeout=90)
            assert r.ok, f"iperf3 from CPU {cpu} failed:\n{r.stdout}"
            mbps, _ = iperf3_summary(iperf3_report(f"iperf3 on CPU {cpu}", r.ok, r.rc, r.stdout))
            now = rx_queue_packets(vm.ethtool_stats(dev))
            delta = {q: d for q in now if (d := now.get(q, 0) - before.get(q, 0))}
            total = sum(delta.values())
            report.append(f"CPU {cpu}: {mbps:.1f} Mbit/s, RX per queue {delta}")
            assert total > 100, f"too little RX to judge from CPU {cpu}: {delta}"
            assert delta.get(cpu, 0) >= 0.9 * total, (
                f"sender on CPU {cpu}: its ACKs did not follow it to queue {cpu}:\n" + "\n".join(report)
            )
        assert stat(g, "fdir_match") > matched
    print("\n".join(report))
    assert_qemu_quiet(vm)
