"""Test scenarios shared by the baseline NICs (QEMU's igb, e1000e,
virtio-net) and the emulated 82599: the same code proves the method on a
device known to work and then judges ixgbe."""

from __future__ import annotations

import dataclasses
import re
import shlex
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ixgbe_testlib.frames import FramePort
from ixgbe_testlib.iperf3 import HostIperf3Server, host_iperf3_client, iperf3_summary
from ixgbe_testlib.netcheck import (
    device_problems,
    format_records,
    hashes_ports,
    make_flows,
    place_flows,
    placement_report,
    predict,
    risen,
    rx_queue_packets,
    without,
)
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args, user_netdev
from ixgbe_testlib.parsers import KmsgRecord, RssConfig
from ixgbe_testlib.vm import VM, VMFactory, load_driver

GUEST_IP = "10.0.2.15"  # slirp's guest address (hostfwd targets it)
HOST_IP = "10.0.2.2"  # slirp's gateway: the host's loopback
# Addresses on emulated wires only (they never leave QEMU): TEST-NET-2.
WIRE_NET = "198.51.100"


@dataclasses.dataclass
class Guest:
    vm: VM
    driver: str
    devs: list[str]
    macs: list[str]
    boot_mark: float = 0.0  # guest uptime once the driver had probed (a dmesg mark)
    # PCI addresses of the NICs, read at boot (an interface moved into another
    # network namespace is no longer visible in /sys/class/net)
    pcis: list[str] = dataclasses.field(default_factory=list)
    # the host's loopback as seen over this guest's slirp network
    host: str = HOST_IP

    def __post_init__(self) -> None:
        if not self.pcis:
            self.pcis = [self.vm.pci_address(d) for d in self.devs]

    @property
    def dev(self) -> str:
        return self.devs[0]

    def problems(self, since: float | None = None) -> list[KmsgRecord]:
        """Warning-or-worse kernel log records about this NIC."""
        return device_problems(self.vm.dmesg(since), self.driver, self.pcis, self.devs)


def boot_user_nic(
    make_vm: VMFactory,
    model: str,
    driver: str,
    *,
    smp: int = 2,
    hostfwd: Sequence[tuple[int, int]] = (),
    append: str = "",
    name: str = "vm",
    device_opts: str = "",
) -> Guest:
    """A VM with one NIC on slirp (guest 10.0.2.15, host = 10.0.2.2), up."""
    mac = mac_address(0)
    vm = make_vm(
        name=name,
        smp=smp,
        append=append,
        args=nic_args(model, "n0", 0, mac, extra=device_opts) + user_netdev("n0", hostfwd),
    )
    load_driver(vm, driver)
    devs = vm.wait_netdevs(driver, 1)
    g = Guest(vm, driver, devs, [mac], vm.uptime())
    vm.link_up(g.dev, f"{GUEST_IP}/24")
    vm.wait_carrier(g.dev)
    return g


def slirp_addresses(subnet: int) -> tuple[str, str]:
    """The guest's and the host's address on slirp network 10.0.<subnet>.0/24."""
    return f"10.0.{subnet}.15", f"10.0.{subnet}.2"


# ------------------------------------------------- several NICs, one guest
@dataclasses.dataclass(frozen=True)
class UserNic:
    """A NIC on a slirp network of its own (10.0.<subnet>.0/24), brought up
    at .15 with the host at .2 (unless not `up`: then left down, with no
    address); `hostfwd` (host port, guest port) pairs."""

    model: str
    driver: str
    subnet: int = 2
    hostfwd: tuple[tuple[int, int], ...] = ()
    opts: str = ""
    up: bool = True


@dataclasses.dataclass(frozen=True)
class SocketNic:
    """A NIC whose wire is a unix datagram socket of the test (a FramePort),
    brought up at WIRE_NET.1."""

    model: str
    driver: str


@dataclasses.dataclass(frozen=True)
class PairNics:
    """Two NICs whose wires are connected to each other, left down."""

    model: str
    driver: str


NicSpec = UserNic | SocketNic | PairNics


def _macs(specs: Sequence[NicSpec]) -> list[list[str]]:
    """The MAC addresses of each spec's NICs (index = PCIe root port)."""
    out, i = [], 0
    for spec in specs:
        n = 2 if isinstance(spec, PairNics) else 1
        out.append([mac_address(i + k) for k in range(n)])
        i += n
    return out


def nics_args(specs: Sequence[NicSpec], *, hostfwd: bool = True) -> Callable[[Path], list[str]]:
    """QEMU arguments for `specs`, each NIC behind root port rp<index> with
    device id nic<index> and netdev n<index> (slirp) or w<index> (wires).
    Without `hostfwd`, the slirp networks forward nothing (a migration
    destination: the source still holds the host ports)."""

    def args_for(d: Path) -> list[str]:
        args: list[str] = []
        i = 0
        for spec, macs in zip(specs, _macs(specs), strict=True):
            if isinstance(spec, UserNic):
                args += nic_args(spec.model, f"n{i}", i, macs[0], extra=spec.opts)
                args += user_netdev(f"n{i}", spec.hostfwd if hostfwd else (), subnet=spec.subnet)
            elif isinstance(spec, SocketNic):
                args += nic_args(spec.model, f"w{i}", i, macs[0])
                args += dgram_netdev(f"w{i}", d / f"nic{i}", d / f"host{i}")
            else:
                a, b = d / f"a{i}", d / f"b{i}"
                args += nic_args(spec.model, f"w{i}", i, macs[0]) + dgram_netdev(f"w{i}", a, b)
                args += nic_args(spec.model, f"w{i + 1}", i + 1, macs[1]) + dgram_netdev(f"w{i + 1}", b, a)
            i += len(macs)
        return args

    return args_for


@dataclasses.dataclass
class NicsGuest:
    """A guest booted with several NICs (`boot_nics`): one Guest per spec,
    in the order of the specs, and the FramePort of each SocketNic by spec
    index; `make_vm` made it (a migration's destinations come from it too)."""

    make_vm: VMFactory
    vm: VM
    specs: list[NicSpec]
    guests: list[Guest]
    ports: dict[int, FramePort]


def boot_nics(make_vm: VMFactory, specs: Sequence[NicSpec], *, smp: int = 2, name: str = "vm") -> NicsGuest:
    """A VM with the NICs of `specs`, their drivers loaded, the slirp NICs up."""
    macs = _macs(specs)
    vm = make_vm(name=name, smp=smp, args_factory=nics_args(specs))
    ports: dict[int, FramePort] = {}
    index = 0
    for k, (spec, m) in enumerate(zip(specs, macs, strict=True)):
        if isinstance(spec, SocketNic):
            ports[k] = FramePort(vm.sock_path(f"host{index}"), vm.sock_path(f"nic{index}"))
        index += len(m)
    for driver in dict.fromkeys(spec.driver for spec in specs):
        load_driver(vm, driver)
    # one command per look (each costs seconds on a loaded host): every
    # port's interface by MAC address, with its PCI address, once two looks agree
    listing = (
        "for d in /sys/class/net/*; do "
        'echo ${d##*/} $(cat $d/address) $(basename "$(readlink $d/device)" 2>/dev/null); done'
    )
    want = {mac for m in macs for mac in m}
    last: dict[str, tuple[str, str]] = {}

    def settled() -> dict[str, tuple[str, str]] | None:
        nonlocal last
        rows = {f[1]: (f[0], f[2]) for f in (ln.split() for ln in vm.sh(listing).splitlines()) if len(f) == 3}
        ready = rows if want <= rows.keys() and rows == last else None
        last = rows
        return ready

    by_mac = vm.wait_until(f"{len(want)} interfaces", settled, 60)
    mark = vm.uptime()
    guests, up, carrier = [], [], []
    for spec, m in zip(specs, macs, strict=True):
        g = Guest(vm, spec.driver, [by_mac[mac][0] for mac in m], m, mark, pcis=[by_mac[mac][1] for mac in m])
        if isinstance(spec, UserNic):
            guest_ip, g.host = slirp_addresses(spec.subnet)
            if spec.up:
                up.append((g.dev, f"{guest_ip}/24"))
        elif isinstance(spec, SocketNic):
            up.append((g.dev, f"{WIRE_NET}.1/24"))
        guests.append(g)
    if up:
        vm.sh(" && ".join(f"ip addr add {addr} dev {dev} && ip link set {dev} up" for dev, addr in up))
        carrier = [dev for dev, _ in up]
        look = " ".join(f"/sys/class/net/{dev}/carrier" for dev in carrier)
        vm.wait_until(
            f"carrier on {', '.join(carrier)}", lambda: vm.run(f"cat {look}").stdout.split() == ["1"] * len(carrier)
        )
    return NicsGuest(make_vm, vm, list(specs), guests, ports)


def background(vm: VM, cmd: str, out: str) -> int:
    """Start `cmd` (one command) in the guest in its own session, detached
    from the agent, output to `out`; returns its process id. (/bin/sh by path: busybox's
    setsid would run its own sh, which prefers its reduced ping applet.)"""
    pid = vm.sh(f"setsid /bin/sh -c {shlex.quote('exec ' + cmd)} </dev/null >{out} 2>&1 & echo $!").strip()
    return int(pid)


def back_to_back_args(model: str, macs: Sequence[str], *, hub: bool = False) -> Callable[[Path], list[str]]:
    """Arguments for two NICs of `model` whose wires are connected to each
    other: through unix datagram sockets in the VM's private directory, or
    with `hub` through a QEMU hub, which hands a frame from one NIC to the
    other within the transmit call (no trip through the host's sockets and
    main loop)."""

    def args_for(d: Path) -> list[str]:
        nics = nic_args(model, "w0", 0, macs[0]) + nic_args(model, "w1", 1, macs[1])
        if hub:
            return nics + ["-netdev", "hubport,id=w0,hubid=0", "-netdev", "hubport,id=w1,hubid=0"]
        return nics + dgram_netdev("w0", d / "a", d / "b") + dgram_netdev("w1", d / "b", d / "a")

    return args_for


def boot_back_to_back(
    make_vm: VMFactory, model: str, driver: str, *, smp: int = 2, hub: bool = False
) -> Guest:
    """A VM with two NICs whose wires are connected to each other."""
    macs = [mac_address(0), mac_address(1)]
    vm = make_vm(smp=smp, args_factory=back_to_back_args(model, macs, hub=hub))
    load_driver(vm, driver)
    devs = vm.wait_netdevs(driver, 2)[:2]
    return Guest(vm, driver, devs, macs, vm.uptime())


# ---------------------------------------------------------------- checks


def assert_clean_log(
    g: Guest, since: float | None = None, what: str = "", expected: Sequence[re.Pattern[str]] = ()
) -> None:
    """No kernel warnings/errors about the device, except `expected` ones."""
    bad = without(g.problems(since), expected)
    assert not bad, f"kernel warnings/errors about the {g.driver} device{what}:\n" + format_records(bad)


def assert_selftest_pass(g: Guest, dev: str | None = None) -> None:
    st = g.vm.selftest(dev or g.dev)
    assert st.passed, f"ethtool -t offline failed:\n{st.output}"
    assert len(st.results) == 5, f"expected five self-test results:\n{st.output}"
    failed = {k: v for k, v in st.results.items() if v != 0}
    assert not failed, f"self-test results not 0: {failed}\n{st.output}"


def iperf3_both_ways(g: Guest, log_dir: Path, seconds: int = 3, min_mbps: float = 5.0) -> dict[str, float]:
    """guest->host and host->guest TCP through slirp to an iperf3 on the
    host's loopback. Returns Mbit/s per direction."""
    out = {}
    # one server per direction (see check_back_to_back)
    with HostIperf3Server(log_dir) as there, HostIperf3Server(log_dir) as back:
        for srv, name, reverse in ((there, "guest->host", False), (back, "host->guest", True)):
            mbps, _ = iperf3_summary(g.vm.iperf3_client(g.host, srv.port, seconds, reverse=reverse))
            out[name] = mbps
    for name, mbps in out.items():
        assert mbps >= min_mbps, f"iperf3 {name}: {mbps:.1f} Mbit/s < {min_mbps}"
    return out


def iperf3_hostfwd(g: Guest, host_port: int, seconds: int = 3, min_mbps: float = 5.0) -> float:
    """host->guest TCP through a slirp hostfwd to an iperf3 server in the guest."""
    g.vm.sh("iperf3 -s -D -1 -p 5201 --logfile /tmp/iperf3-server.log")
    deadline = time.monotonic() + 30
    while "LISTEN" not in g.vm.run("ss -ltn 'sport = :5201'").stdout:
        assert time.monotonic() < deadline, "iperf3 server in the guest did not start"
        time.sleep(0.3)
    mbps, _ = iperf3_summary(host_iperf3_client(host_port, seconds))
    assert mbps >= min_mbps, f"iperf3 host->guest via hostfwd: {mbps:.1f} Mbit/s < {min_mbps}"
    return mbps


def check_set_link(g: Guest, netdev_id: str = "n0") -> None:
    """QMP set_link off/on: the guest sees its carrier go down and up."""
    vm, dev = g.vm, g.dev
    vm.qmp("set_link", name=netdev_id, up=False)
    vm.wait_carrier(dev, up=False, timeout=60)
    # ip link follows the carrier once the kernel's linkwatch has run
    vm.wait_until(
        f"ip link to show {dev} NO-CARRIER", lambda: "NO-CARRIER" in vm.sh(f"ip link show {dev}"), 30
    )
    vm.qmp("set_link", name=netdev_id, up=True)
    vm.wait_carrier(dev, up=True, timeout=60)
    vm.wait_until(
        f"ip link to show {dev} LOWER_UP",
        lambda: (
            "LOWER_UP" in vm.sh(f"ip link show {dev}") and "NO-CARRIER" not in vm.sh(f"ip link show {dev}")
        ),
        30,
    )


def check_rss(
    g: Guest,
    port: FramePort,
    key: bytes,
    rss: RssConfig,
    nqueues: int,
    flow_count: int = 64,
) -> str:
    """Every flow lands on exactly one RX queue, the one the reference
    Toeplitz hash and the guest's RETA predict; all `nqueues` queues get flows."""
    vm, dev = g.vm, g.dev
    ports = {
        "udp": hashes_ports(vm.rx_flow_hash(dev, "udp4")),
        "tcp": hashes_ports(vm.rx_flow_hash(dev, "tcp4")),
    }
    assert ports["tcp"], "TCP/IPv4 RSS does not hash the ports"
    flows = make_flows(f"{WIRE_NET}.1", flow_count)
    placed = predict(place_flows(vm, dev, port, flows, g.macs[0]), key, rss.reta, ports)
    report = placement_report(placed)
    lost = [p for p in placed if p.queue is None]
    assert not lost, f"flows not received on exactly one queue:\n{report}"
    wrong = [p for p in placed if p.queue != p.predicted]
    assert not wrong, f"{len(wrong)} of {len(placed)} flows on another queue than predicted:\n{report}"
    used = {p.queue for p in placed if p.queue is not None}
    assert used == set(range(nqueues)), f"flows reached queues {sorted(used)}, not all {nqueues}:\n{report}"
    return report


def wire_back_to_back(vm: VM, a: str, b: str) -> None:
    """Port a in the root namespace at WIRE_NET.1, port b in namespace
    "peer" at WIRE_NET.2; returns once both see carrier."""
    vm.sh(f"ip netns add peer && ip link set {b} netns peer")
    vm.link_up(a, f"{WIRE_NET}.1/24")
    vm.link_up(b, f"{WIRE_NET}.2/24", netns="peer")
    vm.wait_carrier(a)
    vm.wait_until(
        f"carrier on {b} in netns peer",
        lambda: vm.run(f"ip netns exec peer cat /sys/class/net/{b}/carrier").stdout.strip() == "1",
    )


def check_back_to_back(
    g: Guest,
    log_dir: Path,
    mtus: Sequence[int] = (1500, 9000),
    seconds: int = 3,
    tolerated: frozenset[str] = frozenset(),
) -> dict[str, float]:
    """Port 0 in the root namespace, port 1 in namespace "peer": ping at each
    MTU with DF set and a full-size payload, then iperf3 both ways; no error
    counter rises (except those named in `tolerated`). Returns Mbit/s per
    direction."""
    vm = g.vm
    a, b = g.devs
    wire_back_to_back(vm, a, b)
    before = (vm.ethtool_stats(a), vm.ethtool_stats(b, netns="peer"))
    out: dict[str, float] = {}
    for mtu in mtus:
        vm.sh(f"ip link set {a} mtu {mtu} && ip netns exec peer ip link set {b} mtu {mtu}")
        payload = mtu - 28  # IPv4 + ICMP headers
        r = vm.ping(f"{WIRE_NET}.2", count=5, size=payload, dont_fragment=True)
        assert r.ok and " 0% packet loss" in r.stdout, f"ping at MTU {mtu} failed:\n{r.stdout}"
        r = vm.ping(f"{WIRE_NET}.1", count=3, size=payload, dont_fragment=True, netns="peer")
        assert r.ok and " 0% packet loss" in r.stdout, f"ping back at MTU {mtu} failed:\n{r.stdout}"
    # One server per direction: an iperf3 server closes and reopens its
    # listening socket after each test, and a client that comes in between
    # is reset.
    ports = (5201, 5202)
    for port in ports:
        vm.sh(f"ip netns exec peer iperf3 -s -D -p {port} --logfile /tmp/iperf3-peer-{port}.log")
        vm.wait_until(
            f"iperf3 server on port {port} in netns peer",
            lambda port=port: "LISTEN" in vm.run(f"ip netns exec peer ss -ltn 'sport = :{port}'").stdout,
        )
    for port, (name, reverse) in zip(ports, ((f"{a}->{b}", False), (f"{b}->{a}", True))):
        mbps, _ = iperf3_summary(vm.iperf3_client(f"{WIRE_NET}.2", port, seconds, reverse=reverse))
        assert mbps > 1.0, f"iperf3 {name}: {mbps:.2f} Mbit/s"
        out[name] = mbps
    after = (vm.ethtool_stats(a), vm.ethtool_stats(b, netns="peer"))
    for dev, b4, af in ((a, before[0], after[0]), (b, before[1], after[1])):
        up = {k: v for k, v in risen(b4, af).items() if k not in tolerated}
        assert not up, f"error counters rose on {dev}: {up}"
    return out


# QEMU's igb sends frames shorter than 60 bytes (ARP, TCP ACKs) without
# padding them, and its receiver counts such frames as undersize (RUC, see
# igb_receive_internal() in hw/net/igb_core.c). Over slirp nobody notices;
# port to port the counters below rise. A real 82576 pads them (TCTL.PSP).
IGB_UNPADDED_TX_COUNTERS = frozenset({"rx_short_length_errors", "rx_length_errors", "rx_errors"})


def rx_total(g: Guest, dev: str | None = None) -> int:
    return sum(rx_queue_packets(g.vm.ethtool_stats(dev or g.dev)).values())


def assert_qemu_quiet(vm: VM) -> None:
    """Nothing on QEMU's stderr and nothing in its -d guest_errors log."""
    problems = vm.qemu_problems()
    assert not problems, f"QEMU reported problems:\n{problems}"
