"""ixgbe hot-unplug and re-plug behind a PCIe root port while traffic runs.

The 82599 sits on its own pcie-root-port (as `nic_args` puts every NIC);
QMP device_del presses the slot's attention button, the guest's pciehp
unbinds the driver and powers the slot off, QEMU unrealizes the device and
says DEVICE_DELETED. device_add puts a new one on the same port and netdev;
the guest probes it and it must move traffic again. Twice, with a ping
flood and iperf3 running against the device each time it goes away.

Nothing may be logged at warning level or worse about the device, QEMU
must print nothing and, asked to quit at the end, exit 0: run against a
sanitizer build (`--qemu PATH` or `QEMU=PATH`), leaks of the unplugged
devices show up on QEMU's stderr at exit and fail the test.
"""

from __future__ import annotations

import shlex
import time

import pytest

from ixgbe_testlib.host import scaled
from ixgbe_testlib.iperf3 import HostIperf3Server
from ixgbe_testlib.netcheck import format_records
from ixgbe_testlib.nicargs import mac_address
from ixgbe_testlib.vm import VM, VMFactory
from scenarios import GUEST_IP, HOST_IP, assert_clean_log, assert_qemu_quiet, boot_user_nic, iperf3_both_ways

pytestmark = [pytest.mark.usefixtures("require_ixgbe"), pytest.mark.sanitizer]

CYCLES = 2
NIC_ID = "nic0"  # nic_args(..., index=0): device nic0 on root port rp0, netdev n0


def background(vm: VM, cmd: str, out: str) -> int:
    """Start `cmd` (one command) detached from the agent, in its own session; its pid."""
    return int(
        vm.sh(f"setsid /bin/sh -c {shlex.quote('exec ' + cmd)} </dev/null >{out} 2>&1 & echo $!").strip()
    )


def test_unplug_replug_under_traffic(require_ixgbe: None, make_vm: VMFactory) -> None:
    """Own VM: it ends by quitting QEMU and judging its exit status and
    stderr (a sanitizer build's leak report of the unplugged devices)."""
    g = boot_user_nic(make_vm, "ixgbe", "ixgbe", smp=4, name="ixgbe")
    vm = g.vm
    mark = g.boot_mark
    pci = g.pcis[0]
    for cycle in range(1, CYCLES + 1):
        # traffic through the device while it goes away
        with HostIperf3Server(vm.log_dir) as srv:
            jobs = [
                background(vm, f"ping -f -q {HOST_IP}", "/tmp/flood.txt"),
                background(vm, f"iperf3 -c {HOST_IP} -p {srv.port} -t 600", "/tmp/iperf3.txt"),
            ]
            time.sleep(scaled(3))
            vm.qmp_events()  # drop older events
            vm.qmp("device_del", id=NIC_ID)
            vm.wait_qmp_event("DEVICE_DELETED", timeout=90, match=lambda e: e["data"].get("device") == NIC_ID)
            assert vm.alive(), "QEMU died on device_del"
            vm.wait_until("the interface to go away", lambda: not vm.netdevs("ixgbe"), timeout=30)
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
        g.devs = vm.wait_netdevs("ixgbe", 1, timeout=120)
        assert vm.pci_address(g.dev) == pci, "the re-added device is not on the same slot"
        vm.link_up(g.dev, f"{GUEST_IP}/24")
        vm.wait_carrier(g.dev)
        r = vm.ping(HOST_IP, count=3)
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
