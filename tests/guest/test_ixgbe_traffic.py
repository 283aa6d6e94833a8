"""ixgbe traffic: TCP both ways between guest and host, and between two
ixgbe ports wired back to back (one in a network namespace), ping at MTU
1500 and 9000, and no error counter rises; the same TCP runs on a port
whose register writes are held (x-defer-coalesced); and to end, the first
port is hot-unplugged and re-plugged under traffic.

One guest carries the scenarios (in file order): four 82599 ports, port 0
on slirp with a host forward, ports 1 and 2 wired back to back, port 3 with
x-defer-coalesced=on on a slirp network of its own with a host forward.

Hot-plug: the 82599 sits on its own pcie-root-port (as `nic_args` puts
every NIC); QMP device_del presses the slot's attention button, the guest's
pciehp unbinds the driver and powers the slot off, QEMU unrealizes the
device and says DEVICE_DELETED. device_add puts a new one on the same port
and netdev; the guest probes it and it must move traffic again. Twice, with
a ping flood and iperf3 running against the device each time it goes away.
Nothing may be logged at warning level or worse about the device, QEMU must
print nothing and, asked to quit at the end, exit 0: run against a
sanitizer build (`--qemu PATH` or `QEMU=PATH`, as guest-asan does), leaks of
the unplugged devices (or of anything else the module's guest did) show up
on QEMU's stderr at exit and fail the test.
"""

from __future__ import annotations

import time

import pytest

from ixgbe_testlib.host import scaled
from ixgbe_testlib.iperf3 import HostIperf3Server, free_tcp_port
from ixgbe_testlib.netcheck import format_records, risen
from ixgbe_testlib.nicargs import mac_address
from ixgbe_testlib.vm import VMFactory
from scenarios import (
    Guest,
    NicsGuest,
    NicSpec,
    PairNics,
    UserNic,
    assert_clean_log,
    assert_qemu_quiet,
    background,
    boot_nics,
    check_back_to_back,
    iperf3_both_ways,
    iperf3_hostfwd,
    slirp_addresses,
)

pytestmark = [pytest.mark.usefixtures("require_ixgbe"), pytest.mark.sanitizer]

PORT0_FWD, HELD_FWD = free_tcp_port(), free_tcp_port()
SPECS: list[NicSpec] = [
    UserNic("ixgbe", "ixgbe", hostfwd=((PORT0_FWD, 5201),)),  # nic0 on rp0, netdev n0: the hot-plugged one
    PairNics("ixgbe", "ixgbe"),
    UserNic("ixgbe", "ixgbe", subnet=3, hostfwd=((HELD_FWD, 5201),), opts="x-defer-coalesced=on"),
]
PORT0, PAIR, HELD = range(len(SPECS))

CYCLES = 2
NIC_ID = "nic0"  # nics_args(...): device nic0 on root port rp0, netdev n0


@pytest.fixture(scope="module")
def nics(require_ixgbe: None, make_module_vm: VMFactory) -> NicsGuest:
    return boot_nics(make_module_vm, SPECS, smp=4, name="ixgbe")


def tcp_both_ways(g: Guest, hostfwd_port: int, name: str) -> None:
    """TCP guest -> host, host -> guest and through a host forward over
    slirp; no error counter rises, nothing in the kernel's or QEMU's log."""
    before = g.vm.ethtool_stats(g.dev)
    rates = iperf3_both_ways(g, g.vm.log_dir)
    rates["host->guest (hostfwd)"] = iperf3_hostfwd(g, hostfwd_port)
    print(f"{name} iperf3 Mbit/s: {rates}")
    up = risen(before, g.vm.ethtool_stats(g.dev))
    assert not up, f"error counters rose: {up}"
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


@pytest.mark.kernel_sensitive("traffic", family="datapath")
def test_tcp_guest_host(nics: NicsGuest) -> None:
    tcp_both_ways(nics.guests[PORT0], PORT0_FWD, "ixgbe")


def test_back_to_back_ports(nics: NicsGuest) -> None:
    g = nics.guests[PAIR]
    rates = check_back_to_back(g, g.vm.log_dir, mtus=(1500, 9000))
    print(f"ixgbe port-to-port iperf3 Mbit/s: {rates}")
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


def test_held_register_writes(nics: NicsGuest) -> None:
    """The driver's receive-queue, EITR and Flow Director command writes
    held as KVM's coalesced MMIO holds them (x-defer-coalesced=on, a device
    property set at start: the guest's fourth port), applied only at its
    next other access or by the starved-frame timer: the driver configures
    its queues and TCP runs both ways as usual."""
    tcp_both_ways(nics.guests[HELD], HELD_FWD, "held")


def test_unplug_replug_under_traffic(nics: NicsGuest) -> None:
    """Last: it ends by quitting the module's QEMU and judging its exit
    status and stderr (a sanitizer build's leak report)."""
    g = nics.guests[PORT0]
    vm = g.vm
    mark = vm.uptime()
    pci = g.pcis[0]
    guest_ip, host_ip = slirp_addresses(2)
    for cycle in range(1, CYCLES + 1):
        dev = g.dev
        # the module's ixgbe interfaces in this namespace (a back-to-back port is in netns peer)
        ports = len(vm.netdevs("ixgbe"))
        # traffic through the device while it goes away
        with HostIperf3Server(vm.log_dir) as srv:
            jobs = [
                background(vm, f"ping -f -q {host_ip}", "/tmp/flood.txt"),
                background(vm, f"iperf3 -c {host_ip} -p {srv.port} -t 600", "/tmp/iperf3.txt"),
            ]
            time.sleep(scaled(3))
            vm.qmp_events()  # drop older events
            vm.qmp("device_del", id=NIC_ID)
            vm.wait_qmp_event("DEVICE_DELETED", timeout=90, match=lambda e: e["data"].get("device") == NIC_ID)
            assert vm.alive(), "QEMU died on device_del"
            vm.wait_until(f"{dev} to go away", lambda: dev not in vm.netdevs("ixgbe"), timeout=30)
            assert not vm.run(f"test -e /sys/bus/pci/devices/{pci}").ok, f"{pci} still present after unplug"
            vm.run("kill " + " ".join(map(str, jobs)))
        removed = vm.dmesg(mark)
        assert any(pci in r.text for r in removed), f"cycle {cycle}: no kernel message about {pci}"
        assert_clean_log(g, since=mark, what=f" on unplug (cycle {cycle})")

        vm.qmp(
            "device_add",
            driver="ixgbe",
            id=NIC_ID,
            bus="rp0",
            netdev="n0",
            mac=mac_address(0),
            romfile="",
        )
        vm.wait_netdevs("ixgbe", ports, timeout=120)
        g.devs = [d for d in vm.netdevs("ixgbe") if vm.pci_address(d) == pci]
        assert g.devs, f"no interface of the re-added device on {pci}: the device is not on the same slot"
        vm.link_up(g.dev, f"{guest_ip}/24")
        vm.wait_carrier(g.dev)
        r = vm.ping(host_ip, count=3)
        assert r.ok, f"cycle {cycle}: no traffic after re-plug:\n{r.stdout}"
        rates = iperf3_both_ways(g, vm.log_dir, seconds=2)
        print(f"cycle {cycle}: iperf3 after re-plug, Mbit/s: {rates}")
        probed = [r for r in vm.dmesg(mark) if r.text.startswith(f"ixgbe {pci}")]
        assert probed, f"cycle {cycle}: no probe messages from the re-added device"
        assert_clean_log(g, since=mark, what=f" after re-plug (cycle {cycle})")
        mark = vm.uptime()
    bad = [r for r in vm.dmesg() if r.level <= 3 and ("pcieport" in r.text or "pciehp" in r.text)]
    assert not bad, "hot-plug errors in the kernel log:\n" + format_records(bad)
    assert_qemu_quiet(vm)
    # QEMU must exit cleanly (a sanitizer build reports leaks here)
    vm.shutdown()
    assert vm.exit_code == 0, f"QEMU exited with {vm.exit_code}"
    assert_qemu_quiet(vm)
