"""nettune beside NetworkManager and tuned, end to end, on the managers variant of the
Debian guest (scripts/build-rootfs.sh --variant managers: Debian 12's network-manager
1.42 and tuned 2.20, both enabled; NetworkManager owns the ixgbe port through the
lab-ixgbe connection, a keyfile in /etc/NetworkManager/system-connections; tuned runs
its recommended profile, virtual-guest), with 2 vCPUs and the emulated 82599.

One VM, the steps in order (guest/nettune/managers.py has the policy):

1. the guest boots with both managers running, NetworkManager has the port up;
2. with tuned's network-throughput profile active (its [sysctl] TCP buffers differ from
   nettune's), `nettune apply` refuses before changing anything, naming the profile and
   the keys; back on virtual-guest, apply writes the ring, coalescing, pause and feature
   values into the NetworkManager connection (nmcli) and verify passes; NetworkManager
   itself re-applies them when it activates the connection;
3. after a reboot verify passes (NetworkManager and nettune's boot unit agree);
4. a manager changing a setting is drift that names it: the connection's ring size
   changed through nmcli, tuned switched to network-throughput;
5. `nettune revert` leaves the connection file byte for byte and nmcli's view of the
   connection as they were, tuned on its profile with /etc/tuned unchanged, and the
   port's ethtool readings as before apply.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import TIMINGS
from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.sysguest import Lab, RootfsImage, SystemdVM, build_rootfs, ixgbe_wire, pick_accel, readings
from ixgbe_testlib.vmreport import remember_vm

VCPUS = 2
REPO_ROOT = Path(__file__).resolve().parents[2]
NETTUNE_SRC = Path(os.environ.get("NETTUNE_SRC") or REPO_ROOT / "guest").resolve()
CONN = "/etc/NetworkManager/system-connections/lab-ixgbe.nmconnection"
NM_VIEW = "nmcli -t -f connection,ethtool connection show lab-ixgbe | grep -v -e '^connection.timestamp:'"
TUNED_FILES = "find /etc/tuned -type f | sort | xargs sha256sum"


@dataclasses.dataclass
class Managed:
    vm: SystemdVM
    lab: Lab
    ixgbe: str = ""
    before: dict[str, str] = dataclasses.field(default_factory=dict)
    readings: dict[str, object] = dataclasses.field(default_factory=dict)


def manager_view(vm: SystemdVM) -> dict[str, str]:
    """What revert must leave as it found: the connection file, NetworkManager's view of
    the connection, tuned's profile and its files."""
    return {
        "keyfile": vm.sh(f"cat {CONN}"),
        "nmcli": vm.sh(NM_VIEW),
        "tuned": vm.sh("tuned-adm active"),
        "tuned files": vm.sh(TUNED_FILES),
    }


def wait_port(m: Managed, timeout: float = 300) -> None:
    """NetworkManager has the lab connection active on the ixgbe port, with its address."""
    wire = m.lab.wire("ixgbe")
    m.ixgbe = m.vm.wait_netdevs("ixgbe", 1, timeout=timeout)[0]
    m.vm.wait_until(
        "NetworkManager's lab-ixgbe connection active",
        lambda: f"lab-ixgbe:{m.ixgbe}" in m.vm.run("nmcli -t -f NAME,DEVICE connection show --active").stdout,
        timeout,
        interval=2,
    )
    m.vm.wait_ipv4(m.ixgbe, wire.guest_ip, timeout)


def settle(vm: SystemdVM, timeout: float = 300) -> None:
    vm.wait_until(
        "systemd to finish its jobs",
        lambda: vm.run("systemctl list-jobs --no-legend", timeout=60).stdout.strip() == "",
        timeout,
        interval=2,
    )


def tuned_profile(vm: SystemdVM, name: str) -> None:
    vm.sh(f"tuned-adm profile {shlex.quote(name)}", timeout=180)
    vm.wait_until(
        f"tuned on {name}", lambda: vm.run("tuned-adm active").stdout.strip().endswith(f": {name}"), 120
    )


def ring_rx(vm: SystemdVM, dev: str) -> str:
    out = vm.sh(f"ethtool -g {shlex.quote(dev)}")
    current = out.split("Current hardware settings:")[1]
    return current.split("RX:")[1].split()[0]


@pytest.fixture(scope="module")
def managers_rootfs(log_root: Path, privileged: None) -> RootfsImage:
    try:
        image, seconds = build_rootfs("bookworm", log_root / "build-rootfs-managers.log", variant="managers")
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    TIMINGS["managers image (build-rootfs.sh --variant managers)"] = seconds
    return image


@pytest.fixture(scope="module")
def managed(request: pytest.FixtureRequest, managers_rootfs: RootfsImage, qemu: Path,
            log_root: Path) -> Iterator[Managed]:
    t0 = time.monotonic()
    with Lab([ixgbe_wire(0)]) as lab:
        vm = SystemdVM(
            managers_rootfs, lab=lab, name="managers", log_dir=log_root / "managers", smp=VCPUS,
            memory_mb=1024, accel=pick_accel(log_root), qemu=qemu,
        )  # fmt: skip
        remember_vm(request.node, vm)
        try:
            vm.start()
            m = Managed(vm, lab)
            wait_port(m)
            settle(vm)
            TIMINGS["managers guest: boot to agent + port up"] = time.monotonic() - t0
            yield m
        finally:
            vm.shutdown()


def test_managers_run_and_own_the_port(managed: Managed, timed: None) -> None:
    vm = managed.vm
    for unit in ("NetworkManager", "tuned"):
        assert vm.run(f"systemctl is-active {unit}").stdout.strip() == "active", unit
    assert vm.run("tuned-adm active").stdout.strip() == "Current active profile: virtual-guest"
    # the operator picks the profile (tuned's profile_mode: manual), as the steps below do
    tuned_profile(vm, "virtual-guest")
    vm.put_tree(NETTUNE_SRC, "/root/nettune-src")
    assert "enabled nettune.service" in vm.sh("bash /root/nettune-src/install.sh", timeout=180)
    out = vm.sh("nettune discover")
    assert f"NetworkManager:   running; {managed.ixgbe}: 'lab-ixgbe' ({CONN})" in out, out
    assert "tuned:            profile virtual-guest (virtual-guest <- throughput-performance)" in out, out
    managed.before = manager_view(vm)
    assert "ethtool." not in managed.before["nmcli"], managed.before["nmcli"]
    managed.readings = readings(vm, [managed.ixgbe])


def test_tuned_conflict_refused_then_apply_writes_the_connection(managed: Managed, timed: None) -> None:
    vm, dev = managed.vm, managed.ixgbe
    tuned_profile(vm, "network-throughput")
    keyfile = vm.sh(f"cat {CONN}")
    r = vm.run("nettune apply", timeout=300)
    assert r.rc == 1, r.stdout
    assert ("tuned profile network-throughput (network-throughput) [sysctl] sets "
            "net.ipv4.tcp_rmem=4096 87380 16777216 (nettune: 4096 87380 67108864)") in r.stdout, r.stdout
    assert "Nothing was changed" in r.stdout
    assert vm.run("test -e /var/lib/nettune/state.json").rc != 0
    assert vm.sh(f"cat {CONN}") == keyfile
    tuned_profile(vm, "virtual-guest")
    r = vm.run("nettune apply", timeout=300)
    assert r.ok, r.stdout
    assert "nmcli connection modify 6f1c0a52-8d7e-4c1b-9a55-0c6a3f0e1b01 " in r.stdout, r.stdout
    props = vm.sh("nmcli -g ethtool.ring-rx,ethtool.ring-tx,ethtool.pause-rx,ethtool.feature-ntuple "
                  "connection show lab-ixgbe").split()
    assert props == ["4096", "4096", "off", "on"], props
    r = vm.run("nettune verify", timeout=300)
    assert r.ok and "settings as planned" in r.stdout, r.stdout
    # NetworkManager itself puts its values back when it activates the connection
    vm.sh(f"ethtool -G {dev} rx 512")
    vm.sh("nmcli connection up lab-ixgbe", timeout=180)
    wait_port(managed)
    vm.wait_until("NetworkManager's ring size", lambda: ring_rx(vm, dev) == "4096", 60)


def test_reboot_then_verify(managed: Managed, timed: None) -> None:
    vm = managed.vm
    TIMINGS["managers guest: reboot (agent back)"] = vm.reboot(timeout=600)
    wait_port(managed)
    settle(vm)
    assert vm.run("systemctl is-active nettune.service").stdout.strip() == "active"
    r = vm.run("nettune verify", timeout=300)
    assert r.ok and "settings as planned" in r.stdout, r.stdout


def test_manager_changes_are_drift_naming_the_manager(managed: Managed, timed: None) -> None:
    vm, dev = managed.vm, managed.ixgbe
    vm.sh("nmcli connection modify lab-ixgbe ethtool.ring-rx 512 && nmcli connection up lab-ixgbe", timeout=180)
    wait_port(managed)
    vm.wait_until("NetworkManager's new ring size", lambda: ring_rx(vm, dev) == "512", 60)
    tuned_profile(vm, "network-throughput")
    r = vm.run("nettune verify", timeout=300)
    assert r.rc == 1, r.stdout
    assert f"DRIFT {dev} ring sizes: want rx 4096 tx 4096, have rx 512 tx 4096" in r.stdout, r.stdout
    assert f"by NetworkManager connection 'lab-ixgbe' ({CONN}) sets ethtool.ring-rx=512" in r.stdout, r.stdout
    assert ("by tuned profile network-throughput (network-throughput) [sysctl] sets "
            "net.ipv4.tcp_rmem=4096 87380 16777216") in r.stdout, r.stdout
    tuned_profile(vm, "virtual-guest")


def test_revert_leaves_the_managers_as_they_were(managed: Managed, timed: None) -> None:
    vm, dev = managed.vm, managed.ixgbe
    r = vm.run("nettune revert", timeout=300)
    assert r.ok, r.stdout
    assert f"nmcli connection load {CONN}" in r.stdout, r.stdout
    after = manager_view(vm)
    for what, text in managed.before.items():
        assert after[what] == text, f"{what} differs after revert:\n--- before ---\n{text}\n--- after ---\n{after[what]}"
    wait_port(managed)
    now = readings(vm, [dev])
    assert now["ethtool"] == managed.readings["ethtool"], (now["ethtool"], managed.readings["ethtool"])
