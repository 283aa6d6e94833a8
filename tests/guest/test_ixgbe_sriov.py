"""ixgbe SR-IOV: the PF offers its VFs, `sriov_numvfs` creates them, the
stock ixgbevf driver probes them and talks to the PF over the mailbox
(reset, MAC, link), and the VFs pass traffic: each VF, in a network
namespace of its own, pings a peer on the PF's wire, the PF and the other
VF (through the 82599's internal switch), and TCP flows VF to VF.
Disabling the VFs removes them cleanly.

The wire is a unix datagram pair from the PF to a virtio-net NIC of the
same guest in namespace "peer"."""

from __future__ import annotations

from pathlib import Path

import pytest

from ixgbe_testlib.iperf3 import iperf3_summary
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args
from ixgbe_testlib.vm import VM, VMFactory, load_driver
from scenarios import WIRE_NET, Guest, assert_clean_log, assert_qemu_quiet

pytestmark = pytest.mark.usefixtures("require_ixgbe")

NUM_VFS = 2
PEER = f"{WIRE_NET}.1"
PF = f"{WIRE_NET}.2"
VFS = [f"{WIRE_NET}.{10 + n}" for n in range(NUM_VFS)]
IPERF_SECONDS = 4


def wire_args(d: Path) -> list[str]:
    """The PF behind a root port and a virtio-net peer, wired together."""
    return (
        nic_args("ixgbe", "w0", 0, mac_address(0))
        + nic_args("virtio-net-pci", "w1", 1, mac_address(1))
        + dgram_netdev("w0", d / "a", d / "b")
        + dgram_netdev("w1", d / "b", d / "a")
    )


def in_netns(vm: VM, ns: str, cmd: str) -> str:
    return vm.sh(f"ip netns exec {ns} {cmd}")


def wait_netns_carrier(vm: VM, ns: str, dev: str) -> None:
    vm.wait_until(
        f"carrier on {dev} in netns {ns}",
        lambda: vm.run(f"ip netns exec {ns} cat /sys/class/net/{dev}/carrier").stdout.strip() == "1",
    )


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    vm = make_module_vm(name="ixgbe-sriov", smp=2, args_factory=wire_args)
    load_driver(vm, "ixgbe")
    load_driver(vm, "virtio_net")
    vm.modprobe("ixgbevf")
    pf = vm.wait_netdevs("ixgbe", 1)[0]
    peer = vm.wait_netdevs("virtio_net", 1)[0]
    g = Guest(vm, "ixgbe", [pf], [mac_address(0)], vm.uptime())
    vm.sh(f"ip netns add peer && ip link set {peer} netns peer")
    vm.link_up(peer, f"{PEER}/24", netns="peer")
    vm.link_up(pf, f"{PF}/24")
    vm.wait_carrier(pf)
    wait_netns_carrier(vm, "peer", peer)
    return g


def sysfs(g: Guest, name: str) -> str:
    return g.vm.sh(f"cat /sys/class/net/{g.dev}/device/{name}").strip()


def test_total_vfs(g: Guest) -> None:
    # 64 in the capability; the driver keeps a pool for the PF
    assert sysfs(g, "sriov_totalvfs") == "63"


def test_vfs_probe_and_reach_the_pf(g: Guest) -> None:
    since = g.vm.uptime()
    g.vm.sh(f"echo {NUM_VFS} > /sys/class/net/{g.dev}/device/sriov_numvfs", timeout=180)
    vfs = g.vm.wait_netdevs("ixgbevf", NUM_VFS, timeout=120)
    bound = g.vm.sh("ls /sys/bus/pci/drivers/ixgbevf").split()
    # VF offset 0x80, stride 2: 10.0, 10.2 of the PF's bus
    assert [b for b in bound if b.startswith("0000:")] == ["0000:01:10.0", "0000:01:10.2"]
    log = "\n".join(r.text for r in g.vm.dmesg(since))
    for n in range(NUM_VFS):
        assert f"VF Reset msg received from vf {n}" in log, log
    # each VF in a namespace of its own, up with link at 10 Gb/s
    for n, dev in enumerate(sorted(vfs, key=g.vm.pci_address)):
        g.vm.sh(f"ip netns add vf{n} && ip link set {dev} netns vf{n}")
        g.vm.link_up(dev, f"{VFS[n]}/24", netns=f"vf{n}")
        wait_netns_carrier(g.vm, f"vf{n}", dev)
        assert "Speed: 10000Mb/s" in in_netns(g.vm, f"vf{n}", f"ethtool {dev}")
    assert_clean_log(g, since, " with VFs")


def ping_ok(vm: VM, dst: str, netns: str | None = None) -> None:
    r = vm.ping(dst, count=3, netns=netns)
    assert r.ok and " 0% packet loss" in r.stdout, f"ping {dst} from {netns or 'PF'}:\n{r.stdout}"


@pytest.mark.parametrize("vf", range(NUM_VFS))
def test_vf_pings_wire_pf_and_other_vf(g: Guest, vf: int) -> None:
    ns = f"vf{vf}"
    ping_ok(g.vm, PEER, ns)  # out through the PF's wire
    ping_ok(g.vm, PF, ns)  # VF -> PF through the internal switch
    for other in range(NUM_VFS):
        if other != vf:
            ping_ok(g.vm, VFS[other], ns)  # VF -> VF, never on the wire


def test_pf_and_peer_ping_the_vfs(g: Guest) -> None:
    for addr in VFS:
        ping_ok(g.vm, addr)
        ping_ok(g.vm, addr, "peer")


def test_iperf3_vf_to_vf(g: Guest) -> None:
    in_netns(g.vm, "vf1", "iperf3 -s -D -p 5201 --logfile /tmp/iperf3-vf1.log")
    g.vm.wait_until(
        "iperf3 server in netns vf1",
        lambda: "5201" in g.vm.run("ip netns exec vf1 ss -ltn").stdout,
    )
    for reverse in (False, True):
        report = g.vm.iperf3_client(VFS[1], 5201, IPERF_SECONDS, reverse=reverse, netns="vf0")
        mbps, retransmits = iperf3_summary(report)
        print(f"iperf3 VF0 {'<-' if reverse else '->'} VF1: {mbps:.1f} Mbit/s, {retransmits} retransmits")
        assert mbps > 1.0, report


def test_vfs_disable(g: Guest) -> None:
    g.vm.sh(f"echo 0 > /sys/class/net/{g.dev}/device/sriov_numvfs", timeout=180)
    assert g.vm.netdevs("ixgbevf") == []
    g.vm.wait_carrier(g.dev)
    ping_ok(g.vm, PEER)
    assert_qemu_quiet(g.vm)
