"""ixgbe SR-IOV: the PF offers its VFs, `sriov_numvfs` creates them, the
stock ixgbevf driver probes them and talks to the PF over the mailbox
(reset, MAC, link), and the VFs pass traffic: each VF, in a network
namespace of its own, pings a peer on the PF's wire, the PF and another
VF (through the 82599's internal switch), and TCP flows VF to VF.

Then what the PF's administrator sets per VF with `ip link set PF vf N`,
each by its effect: an administrative MAC the VF takes at its next
reset, a port VLAN (the VF sends untagged, the wire sees VLAN 100, and
nothing tagged otherwise reaches the VF), MAC anti-spoofing (a VF's
frames from another address are dropped and counted by the PF), trust
(an untrusted VF does not get multicast it did not join, even with
`allmulticast on`), the VF's link state; a 9000 byte MTU VF to PF, VF to
VF and VF to wire; reloading ixgbevf; and `sriov_numvfs` up to 63 and
back to 0 with nothing bad in the kernel log.

The wire is a unix datagram pair from the PF to a virtio-net NIC of the
same guest in namespace "peer"."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest

from ixgbe_testlib.host import delay_loop_problem
from ixgbe_testlib.iperf3 import iperf3_summary
from ixgbe_testlib.netcheck import device_problems, format_records, without
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args
from ixgbe_testlib.vm import VM, VMFactory, load_driver
from scenarios import WIRE_NET, Guest, assert_clean_log, assert_qemu_quiet

pytestmark = [pytest.mark.usefixtures("require_ixgbe"), pytest.mark.kernel_sensitive("sriov")]

NUM_VFS = 4
MAX_VFS = 63
PEER = f"{WIRE_NET}.1"
PF = f"{WIRE_NET}.2"
VFS = [f"{WIRE_NET}.{10 + n}" for n in range(NUM_VFS)]
IPERF_SECONDS = 4
# VF offset 0x80, stride 2: 10.0, 10.2, ... of the PF's bus
VF_PCI = [f"0000:01:{0x10 + (2 * n) // 8:02x}.{(2 * n) % 8}" for n in range(NUM_VFS)]

# What the tests set
ADMIN_MAC = "02:00:5e:10:00:0a"
SPOOF_MAC = "02:00:5e:10:00:5f"
SPOOF_IP = f"{WIRE_NET}.60"
PORT_VLAN = 100
OTHER_VLAN = 200
VLAN_NET = {PORT_VLAN: "203.0.113", OTHER_VLAN: "192.0.2"}
# A group nobody joins, whose MTA hash (bits 47:36, 0xa55) no IPv4/IPv6
# group the guest joins shares
MCAST_GROUP = "239.255.90.165"
JUMBO_MTU = 9000

# Each VF's netdev; filled when they are probed (and again after a reload)
vf_dev: dict[int, str] = {}


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


def netns_carrier(vm: VM, ns: str, dev: str) -> bool:
    return vm.run(f"ip netns exec {ns} cat /sys/class/net/{dev}/carrier").stdout.strip() == "1"


def wait_netns_carrier(vm: VM, ns: str, dev: str, up: bool = True, timeout: float = 60) -> None:
    vm.wait_until(
        f"carrier {'up' if up else 'down'} on {dev} in netns {ns}",
        lambda: netns_carrier(vm, ns, dev) is up,
        timeout,
    )


def no_ipv6(vm: VM, ns: str) -> None:
    """No IPv6 in a namespace: nothing but what a test sends (no neighbour
    discovery, no MLD) crosses the wire from it."""
    for conf in ("all", "default"):
        in_netns(vm, ns, f"sh -c 'echo 1 > /proc/sys/net/ipv6/conf/{conf}/disable_ipv6'")


def netns_stat(vm: VM, ns: str, dev: str, stat: str) -> int:
    return int(in_netns(vm, ns, f"cat /sys/class/net/{dev}/statistics/{stat}").strip())


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    vm = make_module_vm(name="ixgbe-sriov", smp=2, args_factory=wire_args)
    load_driver(vm, "ixgbe")
    load_driver(vm, "virtio_net")
    vm.modprobe("ixgbevf")
    # the peer's VLAN interfaces and the spoofing VF's macvlan
    vm.modprobe("8021q")
    vm.modprobe("macvlan")
    pf = vm.wait_netdevs("ixgbe", 1)[0]
    peer = vm.wait_netdevs("virtio_net", 1)[0]
    g = Guest(vm, "ixgbe", [pf], [mac_address(0)], vm.uptime())
    vm.sh(f"ip netns add peer && ip link set {peer} netns peer")
    # Only what a test sends should reach the VFs from the peer
    no_ipv6(vm, "peer")
    vm.link_up(peer, f"{PEER}/24", netns="peer")
    vm.link_up(pf, f"{PF}/24")
    vm.wait_carrier(pf)
    wait_netns_carrier(vm, "peer", peer)
    vm.sh("ip netns add spoof")
    for n in range(NUM_VFS):
        vm.sh(f"ip netns add vf{n}")
    return g


def _peer(g: Guest) -> str:
    devs = [d for d in in_netns(g.vm, "peer", "ls /sys/class/net").split() if d != "lo"]
    assert len(devs) == 1, devs
    return devs[0]


def sysfs(g: Guest, name: str) -> str:
    return g.vm.sh(f"cat /sys/class/net/{g.dev}/device/{name}").strip()


def pf_vf(g: Guest, vf: int, setting: str) -> None:
    g.vm.sh(f"ip link set {g.dev} vf {vf} {setting}")


def place_vfs(g: Guest) -> None:
    """Each VF's netdev into its namespace, up with its address, link at
    10 Gb/s."""
    devs = g.vm.wait_netdevs("ixgbevf", NUM_VFS, timeout=120)
    for dev in devs:
        n = VF_PCI.index(g.vm.pci_address(dev))
        vf_dev[n] = dev
        g.vm.sh(f"ip link set {dev} netns vf{n}")
        no_ipv6(g.vm, f"vf{n}")
        g.vm.link_up(dev, f"{VFS[n]}/24", netns=f"vf{n}")
    for n in range(NUM_VFS):
        wait_netns_carrier(g.vm, f"vf{n}", vf_dev[n])
        assert "Speed: 10000Mb/s" in in_netns(g.vm, f"vf{n}", f"ethtool {vf_dev[n]}")


# ixgbevf's removal asks the PF to drop its VLAN 0 filter, which the PF no
# longer answers once it has started disabling SR-IOV (num_vfs is 0 first)
VF_REMOVAL_EXPECTED = (
    re.compile(r"Could not remove VLAN 0"),
    re.compile(r"failed to kill vid 0081/0"),
)


def vf_problems(g: Guest, since: float, expected: tuple[re.Pattern[str], ...] = ()) -> list[str]:
    """Warnings or worse from ixgbevf or about the VFs' PCI functions."""
    recs = without(device_problems(g.vm.dmesg(since), "ixgbevf", ["0000:01:1"], []), expected)
    return [format_records([r]) for r in recs]


def test_vcpus_delay_loops_match_the_tsc(g: Guest) -> None:
    """Each vCPU's delay loop runs at the TSC's rate: the drivers' mailbox
    timeouts are counted in udelay()s, and a vCPU whose loop runs fast
    gives up on the PF in milliseconds (the harness's `lpj=`)."""
    assert g.vm.smp >= 2
    dmesg = "\n".join(r.text for r in g.vm.dmesg())
    problem = delay_loop_problem(dmesg, g.vm.sh("cat /proc/cpuinfo"), g.vm.smp)
    assert not problem, problem


def test_total_vfs(g: Guest) -> None:
    # 64 in the capability; the driver keeps a pool for the PF
    assert sysfs(g, "sriov_totalvfs") == str(MAX_VFS)


def test_vfs_probe_and_reach_the_pf(g: Guest) -> None:
    since = g.vm.uptime()
    g.vm.sh(f"echo {NUM_VFS} > /sys/class/net/{g.dev}/device/sriov_numvfs", timeout=180)
    g.vm.wait_netdevs("ixgbevf", NUM_VFS, timeout=120)
    bound = g.vm.sh("ls /sys/bus/pci/drivers/ixgbevf").split()
    assert [b for b in bound if b.startswith("0000:")] == VF_PCI
    log = "\n".join(r.text for r in g.vm.dmesg(since))
    for n in range(NUM_VFS):
        assert f"VF Reset msg received from vf {n}" in log, log
    # each VF in a namespace of its own, up with link at 10 Gb/s
    place_vfs(g)
    assert_clean_log(g, since, " with VFs")
    assert not vf_problems(g, since)


def ping_ok(vm: VM, dst: str, netns: str | None = None, size: int | None = None) -> None:
    r = vm.ping(dst, count=3, netns=netns, size=size, dont_fragment=size is not None)
    assert r.ok and " 0% packet loss" in r.stdout, f"ping {dst} from {netns or 'PF'}:\n{r.stdout}"


@pytest.mark.parametrize("vf", range(NUM_VFS))
def test_vf_pings_wire_pf_and_other_vf(g: Guest, vf: int) -> None:
    ns = f"vf{vf}"
    ping_ok(g.vm, PEER, ns)  # out through the PF's wire
    ping_ok(g.vm, PF, ns)  # VF -> PF through the internal switch
    ping_ok(g.vm, VFS[(vf + 1) % NUM_VFS], ns)  # VF -> VF, never on the wire


def test_pf_and_peer_ping_the_vfs(g: Guest) -> None:
    for addr in VFS:
        ping_ok(g.vm, addr)
        ping_ok(g.vm, addr, "peer")


def test_iperf3_vf_to_vf(g: Guest) -> None:
    # one server per direction: an iperf3 server closes and reopens its
    # listening socket after each test, and a client in between is reset
    ports = (5201, 5202)
    for port in ports:
        in_netns(g.vm, "vf1", f"iperf3 -s -D -p {port} --logfile /tmp/iperf3-vf1-{port}.log")
        g.vm.wait_until(
            f"iperf3 server on port {port} in netns vf1",
            lambda port=port: f":{port}" in g.vm.run("ip netns exec vf1 ss -ltn").stdout,
        )
    for port, reverse in zip(ports, (False, True)):
        report = g.vm.iperf3_client(VFS[1], port, IPERF_SECONDS, reverse=reverse, netns="vf0")
        mbps, retransmits = iperf3_summary(report)
        print(f"iperf3 VF0 {'<-' if reverse else '->'} VF1: {mbps:.1f} Mbit/s, {retransmits} retransmits")
        assert mbps > 1.0, report


def peer_neigh(g: Guest, addr: str) -> str:
    return in_netns(g.vm, "peer", f"ip neigh show {addr}").strip()


def flush_neigh(g: Guest, *netns: str) -> None:
    for ns in netns:
        in_netns(g.vm, ns, "ip neigh flush all")


def test_vf_admin_mac(g: Guest) -> None:
    """`vf 0 mac`: the VF's netdev takes the address at its next reset
    (ip link set down: ixgbevf resets the VF) and its traffic carries it."""
    dev = vf_dev[0]
    pf_vf(g, 0, f"mac {ADMIN_MAC}")
    assert re.search(rf"vf 0\s+link/ether {ADMIN_MAC}", g.vm.sh(f"ip link show {g.dev}"))
    in_netns(g.vm, "vf0", f"ip link set {dev} down")
    in_netns(g.vm, "vf0", f"ip link set {dev} up")
    wait_netns_carrier(g.vm, "vf0", dev)
    assert f"link/ether {ADMIN_MAC} " in in_netns(g.vm, "vf0", f"ip link show {dev}")
    flush_neigh(g, "peer", "vf0")
    ping_ok(g.vm, PEER, "vf0")
    assert f"lladdr {ADMIN_MAC} " in peer_neigh(g, VFS[0])
    # an untrusted VF may not change an administrative MAC
    r = g.vm.run(f"ip netns exec vf0 ip link set {dev} address {SPOOF_MAC}")
    assert not r.ok, r.stdout


# The PF's warnings in the spoofing test, by design
SPOOF_EXPECTED = (
    re.compile(r"Spoofed packets detected"),
    re.compile(r"VF 0 requested MACVLAN filter but is administratively denied"),
)


def test_vf_spoofchk(g: Guest) -> None:
    """A macvlan on VF 0 sends from an address the PF did not give the VF
    (the PF refuses the filter: VF 0 has an administrative MAC): with
    `spoofchk on` (the default) its frames are dropped and the PF reports
    them; with `spoofchk off` they reach the wire."""
    since = g.vm.uptime()
    in_netns(g.vm, "vf0", f"ip link add link {vf_dev[0]} name mv0 address {SPOOF_MAC} type macvlan mode private")
    in_netns(g.vm, "vf0", "ip link set mv0 netns spoof")
    g.vm.link_up("mv0", f"{SPOOF_IP}/24", netns="spoof")
    try:
        flush_neigh(g, "peer")
        assert "spoof checking on" in g.vm.sh(f"ip link show {g.dev}")
        r = g.vm.ping(PEER, count=5, netns="spoof")
        assert not r.ok
        # ARP requests from SPOOF_MAC never reached the peer
        assert SPOOF_MAC not in peer_neigh(g, SPOOF_IP)
        # the PF reads the spoofed packet counter (SSVPC) in its watchdog
        g.vm.wait_until(
            "the PF's spoofed packets warning",
            lambda: any("Spoofed packets detected" in r.text for r in g.vm.dmesg(since)),
            timeout=30,
        )

        pf_vf(g, 0, "spoofchk off")
        assert "spoof checking off" in g.vm.sh(f"ip link show {g.dev}")
        g.vm.run("ip netns exec spoof ping -c 3 -i 0.2 -W 1 " + PEER)
        assert f"lladdr {SPOOF_MAC} " in peer_neigh(g, SPOOF_IP)
    finally:
        pf_vf(g, 0, "spoofchk on")
        g.vm.run("ip netns exec spoof ip link del mv0")
    # VF 0 itself still passes
    flush_neigh(g, "peer", "vf0")
    ping_ok(g.vm, PEER, "vf0")
    assert_clean_log(g, since, " after the spoofing test", SPOOF_EXPECTED)


ARPINGS = 4


def arping_peer(g: Guest, dev: str, target: str) -> None:
    """ARPINGS broadcast ARP requests from the peer's dev, one a second
    (replies do not matter)."""
    g.vm.run(f"ip netns exec peer arping -c {ARPINGS} -w {ARPINGS + 2} -I {dev} {target}", timeout=30)


def test_vf_port_vlan(g: Guest) -> None:
    """`vf 1 vlan 100`: VF 1 sends untagged and the wire sees VLAN 100
    (the peer answers on its VLAN 100 interface only); frames tagged with
    another VLAN, and untagged ones, do not reach VF 1."""
    dev = vf_dev[1]
    peer = _peer(g)
    for vid, net in VLAN_NET.items():
        in_netns(g.vm, "peer", f"ip link add link {peer} name v{vid} type vlan id {vid}")
        g.vm.link_up(f"v{vid}", f"{net}.1/24", netns="peer")
    in_netns(g.vm, "vf1", f"ip addr add {VLAN_NET[PORT_VLAN]}.11/24 dev {dev}")
    in_netns(g.vm, "vf1", f"ip addr add {VLAN_NET[OTHER_VLAN]}.11/24 dev {dev}")
    try:
        pf_vf(g, 1, f"vlan {PORT_VLAN}")
        assert f"vlan {PORT_VLAN}," in g.vm.sh(f"ip link show {g.dev}")
        # the VF has no VLAN device: what it sends is untagged
        ping_ok(g.vm, f"{VLAN_NET[PORT_VLAN]}.1", "vf1")
        # untagged, the peer's own address is not reachable any more
        assert not g.vm.ping(PEER, count=2, netns="vf1").ok

        def rx() -> int:
            return netns_stat(g.vm, "vf1", dev, "rx_packets")

        before = rx()
        arping_peer(g, f"v{OTHER_VLAN}", f"{VLAN_NET[OTHER_VLAN]}.11")
        arping_peer(g, peer, VFS[1])
        other = rx() - before
        before = rx()
        arping_peer(g, f"v{PORT_VLAN}", f"{VLAN_NET[PORT_VLAN]}.11")
        own = rx() - before
        print(
            f"VF 1 received {other} of {2 * ARPINGS} frames of VLAN {OTHER_VLAN} and untagged, "
            f"{own} of {ARPINGS} of VLAN {PORT_VLAN}"
        )
        assert other == 0
        assert own >= ARPINGS
    finally:
        pf_vf(g, 1, "vlan 0")
        for vid in VLAN_NET:
            g.vm.run(f"ip netns exec peer ip link del v{vid}")
        for net in VLAN_NET.values():
            g.vm.run(f"ip netns exec vf1 ip addr del {net}.11/24 dev {dev}")
    flush_neigh(g, "peer", "vf1")
    ping_ok(g.vm, PEER, "vf1")


def mcast_received(g: Guest, vf: int, count: int = 10) -> int:
    """Frames VF `vf` receives while the peer sends `count` ICMP echo
    requests to MCAST_GROUP, which nobody joined."""
    dev = vf_dev[vf]
    before = netns_stat(g.vm, f"vf{vf}", dev, "rx_packets")
    g.vm.run(f"ip netns exec peer ping -c {count} -i 0.1 -W 1 -t 1 {MCAST_GROUP}", timeout=30)
    return netns_stat(g.vm, f"vf{vf}", dev, "rx_packets") - before


def test_vf_trust_allmulticast(g: Guest) -> None:
    """`ip link set VF allmulticast on` in VF 2: the PF grants multicast
    promiscuous mode (VMOLR.MPE) only to a trusted VF; untrusted, VF 2
    does not receive a group it did not join."""
    dev = vf_dev[2]
    in_netns(g.vm, "peer", f"ip route add 224.0.0.0/4 dev {_peer(g)}")
    in_netns(g.vm, "vf2", f"ip link set {dev} allmulticast on")
    try:
        assert mcast_received(g, 2) == 0
        pf_vf(g, 2, "trust on")
        assert "trust on" in g.vm.sh(f"ip link show {g.dev}")
        # the PF resets the VF, which asks for its multicast mode again
        got = g.vm.wait_until(
            "VF 2 receiving the unjoined group once trusted",
            lambda: (n := mcast_received(g, 2)) >= 10 and n,
            timeout=60,
        )
        print(f"trusted VF 2 received {got} of 10 frames to {MCAST_GROUP}")
        # the other VFs (untrusted, not allmulticast) still do not
        assert mcast_received(g, 3) == 0
        pf_vf(g, 2, "trust off")
        g.vm.wait_until(
            "VF 2 no longer receiving the group",
            lambda: mcast_received(g, 2) == 0,
            timeout=60,
        )
    finally:
        pf_vf(g, 2, "trust off")
        in_netns(g.vm, "vf2", f"ip link set {dev} allmulticast off")
        g.vm.run(f"ip netns exec peer ip route del 224.0.0.0/4 dev {_peer(g)}")
    wait_netns_carrier(g.vm, "vf2", dev)
    ping_ok(g.vm, PEER, "vf2")


def test_vf_link_state(g: Guest) -> None:
    """`vf 3 state disable`: VF 3's link goes down (the PF stops its
    receive and transmit); `state auto` brings it back with the PF's."""
    dev = vf_dev[3]
    pf_vf(g, 3, "state disable")
    wait_netns_carrier(g.vm, "vf3", dev, up=False)
    assert not g.vm.ping(PEER, count=2, netns="vf3").ok
    pf_vf(g, 3, "state auto")
    wait_netns_carrier(g.vm, "vf3", dev)
    ping_ok(g.vm, PEER, "vf3")


def set_mtu(g: Guest, netns: str | None, dev: str, mtu: int) -> None:
    ns = f"ip netns exec {netns} " if netns else ""
    g.vm.sh(f"{ns}ip link set {shlex.quote(dev)} mtu {mtu}")


def test_vf_mtu_9000(g: Guest) -> None:
    """A 9000 byte MTU: the PF first (the 82599 keeps one frame size for
    all pools), then the VFs (set-LPE), then 8972 byte pings that may not
    be fragmented, VF to PF, VF to VF and VF to the wire and back."""
    peer = _peer(g)
    set_mtu(g, None, g.dev, JUMBO_MTU)
    g.vm.wait_carrier(g.dev)
    set_mtu(g, "peer", peer, JUMBO_MTU)
    try:
        for n in (0, 2):
            # the PF's MTU change resets its VFs: until a VF has come back
            # from its reset the PF refuses its set-LPE request
            g.vm.wait_until(
                f"VF {n} taking MTU {JUMBO_MTU}",
                lambda: g.vm.run(f"ip netns exec vf{n} ip link set {vf_dev[n]} mtu {JUMBO_MTU}").ok,
            )
            wait_netns_carrier(g.vm, f"vf{n}", vf_dev[n])
        size = JUMBO_MTU - 28
        # the PF's reset of its VFs may take a moment to settle
        g.vm.wait_until(
            "VF 0 reaching the PF with jumbo frames",
            lambda: g.vm.ping(PF, count=1, size=size, dont_fragment=True, netns="vf0").ok,
        )
        ping_ok(g.vm, PF, "vf0", size)
        ping_ok(g.vm, VFS[2], "vf0", size)
        ping_ok(g.vm, PEER, "vf0", size)
        ping_ok(g.vm, VFS[2], "peer", size)
        ping_ok(g.vm, VFS[0], None, size)
    finally:
        for n in (0, 2):
            set_mtu(g, f"vf{n}", vf_dev[n], 1500)
        set_mtu(g, "peer", peer, 1500)
        set_mtu(g, None, g.dev, 1500)
    g.vm.wait_carrier(g.dev)
    for n in range(NUM_VFS):
        wait_netns_carrier(g.vm, f"vf{n}", vf_dev[n])
    g.vm.wait_until("VF 0 reaching the PF again", lambda: g.vm.ping(PF, count=1, netns="vf0").ok)


def test_reload_ixgbevf(g: Guest) -> None:
    """rmmod ixgbevf removes the VFs' netdevs; modprobe brings them back,
    VF 0 with its administrative MAC, and they pass traffic again."""
    since = g.vm.uptime()
    g.vm.rmmod("ixgbevf")
    for n in range(NUM_VFS):
        assert in_netns(g.vm, f"vf{n}", "ls /sys/class/net").split() == ["lo"]
    g.vm.modprobe("ixgbevf")
    place_vfs(g)
    assert f"link/ether {ADMIN_MAC} " in in_netns(g.vm, "vf0", f"ip link show {vf_dev[0]}")
    flush_neigh(g, "peer")
    for n in range(NUM_VFS):
        ping_ok(g.vm, PEER, f"vf{n}")
    assert_clean_log(g, since, " across an ixgbevf reload")
    assert not vf_problems(g, since)


def test_numvfs_cycle(g: Guest, record_summary: Callable[[str], None]) -> None:
    """sriov_numvfs 4 -> 0 -> 63 -> 0: every VF probes and goes, the PF
    keeps its link and traffic, nothing bad in the kernel log."""
    since = g.vm.uptime()
    numvfs = f"/sys/class/net/{g.dev}/device/sriov_numvfs"
    g.vm.sh(f"echo 0 > {numvfs}", timeout=180)
    assert g.vm.netdevs("ixgbevf") == []
    for n in range(NUM_VFS):
        assert in_netns(g.vm, f"vf{n}", "ls /sys/class/net").split() == ["lo"]
    t0 = g.vm.uptime()
    g.vm.sh(f"echo {MAX_VFS} > {numvfs}", timeout=600)
    g.vm.wait_netdevs("ixgbevf", MAX_VFS, timeout=600)
    record_summary(f"sriov: {MAX_VFS} VFs probed in {g.vm.uptime() - t0:.0f} s (guest clock)")
    log = "\n".join(r.text for r in g.vm.dmesg(since))
    assert f"VF Reset msg received from vf {MAX_VFS - 1}" in log
    g.vm.sh(f"echo 0 > {numvfs}", timeout=600)
    assert g.vm.netdevs("ixgbevf") == []
    g.vm.wait_carrier(g.dev)
    flush_neigh(g, "peer")
    ping_ok(g.vm, PEER)
    assert_clean_log(g, since, " across sriov_numvfs 4 -> 0 -> 63 -> 0")
    assert not vf_problems(g, since, VF_REMOVAL_EXPECTED)
    assert_qemu_quiet(g.vm)
