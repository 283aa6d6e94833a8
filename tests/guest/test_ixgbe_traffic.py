"""ixgbe traffic: TCP both ways between guest and host, and between two
ixgbe ports wired back to back (one in a network namespace), ping at MTU
1500 and 9000, and no error counter rises."""

from __future__ import annotations

import pytest

from ixgbe_testlib.iperf3 import free_tcp_port
from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.vm import VMFactory
from scenarios import (
    assert_clean_log,
    assert_qemu_quiet,
    boot_back_to_back,
    boot_user_nic,
    check_back_to_back,
    iperf3_both_ways,
    iperf3_hostfwd,
)

pytestmark = [pytest.mark.usefixtures("require_ixgbe"), pytest.mark.sanitizer]


def tcp_both_ways(make_vm: VMFactory, name: str, device_opts: str = "") -> None:
    """TCP guest -> host, host -> guest and through a host forward over
    slirp; no error counter rises, nothing in the kernel's or QEMU's log."""
    port = free_tcp_port()
    g = boot_user_nic(make_vm, "ixgbe", "ixgbe", smp=4, hostfwd=[(port, 5201)], name=name, device_opts=device_opts)
    before = g.vm.ethtool_stats(g.dev)
    rates = iperf3_both_ways(g, g.vm.log_dir)
    rates["host->guest (hostfwd)"] = iperf3_hostfwd(g, port)
    print(f"{name} iperf3 Mbit/s: {rates}")
    up = risen(before, g.vm.ethtool_stats(g.dev))
    assert not up, f"error counters rose: {up}"
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


@pytest.mark.kernel_sensitive("traffic", family="datapath")
def test_tcp_guest_host(require_ixgbe: None, make_vm: VMFactory) -> None:
    """Own VM: a slirp host forward to the guest's iperf3, chosen at boot."""
    tcp_both_ways(make_vm, "ixgbe")


def test_back_to_back_ports(require_ixgbe: None, make_vm: VMFactory) -> None:
    """Own VM: two ports wired to each other."""
    g = boot_back_to_back(make_vm, "ixgbe", "ixgbe", smp=4)
    rates = check_back_to_back(g, g.vm.log_dir, mtus=(1500, 9000))
    print(f"ixgbe port-to-port iperf3 Mbit/s: {rates}")
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


def test_held_register_writes(require_ixgbe: None, make_vm: VMFactory) -> None:
    """The driver's receive-queue, EITR and Flow Director command writes
    held as KVM's coalesced MMIO holds them (x-defer-coalesced=on), applied
    only at its next other access or by the starved-frame timer: the driver
    configures its queues and TCP runs both ways as usual.

    Own VM: x-defer-coalesced is a device property, set at start."""
    tcp_both_ways(make_vm, "held", device_opts="x-defer-coalesced=on")
