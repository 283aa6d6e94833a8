"""ixgbe link handling: QMP set_link, repeated ifdown/ifup and driver
reloads with traffic in between, and nothing new in the kernel log (warning
or worse) or from QEMU.

Both scenarios share one guest, in file order: set_link leaves the link up
and the driver bound, where the down/up and reload cycles start; their log
checks then also cover the set_link scenario."""

from __future__ import annotations

import pytest

from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.vm import VMFactory
from scenarios import (
    GUEST_IP,
    HOST_IP,
    Guest,
    assert_clean_log,
    assert_qemu_quiet,
    boot_user_nic,
    check_set_link,
)

pytestmark = [pytest.mark.usefixtures("require_ixgbe"), pytest.mark.kernel_sensitive("link"), pytest.mark.sanitizer]

LINK_CYCLES = 20
RELOADS = 5


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    return boot_user_nic(make_module_vm, "ixgbe", "ixgbe", smp=4, name="ixgbe")


def test_set_link_carrier(g: Guest) -> None:
    for _ in range(2):
        check_set_link(g)
        assert g.vm.ping(HOST_IP).ok, "no traffic after the link came back"
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


def test_updown_and_reload_cycles(g: Guest) -> None:
    vm = g.vm
    mark = g.boot_mark
    assert_clean_log(g, what=" after probe")
    before = vm.ethtool_stats(g.dev)
    for i in range(LINK_CYCLES):
        vm.sh(f"ip link set {g.dev} down")
        vm.sh(f"ip link set {g.dev} up")
        vm.wait_carrier(g.dev)
        r = vm.ping(HOST_IP, count=2)
        assert r.ok, f"cycle {i + 1}: no traffic after ifup:\n{r.stdout}"
    up = risen(before, vm.ethtool_stats(g.dev))
    assert not up, f"error counters rose over {LINK_CYCLES} down/up cycles: {up}"
    assert_clean_log(g, since=mark, what=f" over {LINK_CYCLES} down/up cycles")
    for i in range(RELOADS):
        vm.rmmod("ixgbe")
        assert not vm.netdevs("ixgbe"), "interfaces left after rmmod"
        vm.modprobe("ixgbe")
        g.devs = vm.wait_netdevs("ixgbe", 1)
        vm.link_up(g.dev, f"{GUEST_IP}/24")
        vm.wait_carrier(g.dev)
        r = vm.ping(HOST_IP, count=2)
        assert r.ok, f"reload {i + 1}: no traffic:\n{r.stdout}"
    assert_clean_log(g, since=mark, what=f" over {RELOADS} driver reloads")
    assert_qemu_quiet(vm)
