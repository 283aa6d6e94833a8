"""ixgbe SR-IOV (work in progress): the PF offers its VFs, `sriov_numvfs`
creates them, the stock ixgbevf driver probes them and talks to the PF over
the mailbox (reset, MAC, link), and disabling them removes them cleanly.
No traffic through the VFs yet: receive pools and the internal switch are
not modelled."""

from __future__ import annotations

import pytest

from ixgbe_testlib.vm import VMFactory
from scenarios import Guest, assert_clean_log, assert_qemu_quiet, boot_user_nic

pytestmark = pytest.mark.usefixtures("require_ixgbe")

NUM_VFS = 2


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    g = boot_user_nic(make_module_vm, "ixgbe", "ixgbe", smp=2, name="ixgbe-sriov")
    g.vm.modprobe("ixgbevf")
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
    for dev in vfs:
        g.vm.sh(f"ip link set {dev} up")
    for dev in vfs:
        g.vm.wait_carrier(dev)
        assert g.vm.ethtool(dev).get("Speed") == "10000Mb/s"
    assert_clean_log(g, since, " with VFs")


def test_vfs_disable(g: Guest) -> None:
    g.vm.sh(f"echo 0 > /sys/class/net/{g.dev}/device/sriov_numvfs", timeout=180)
    assert g.vm.netdevs("ixgbevf") == []
    g.vm.wait_carrier(g.dev)
    assert_qemu_quiet(g.vm)
