"""nettune beside NetworkManager and tuned, end to end, on the Debian guest the nettune
modules share (conftest's nettune_guest: 4 vCPUs, the emulated 82599 and a virtio-net
port), after test_nettune_e2e.py. The image carries Debian 12's network-manager 1.42
and tuned 2.20, masked (scripts/build-rootfs.sh); this module starts them on the
running guest as an administrator would: NetworkManager gets the ixgbe port through
the lab-ixgbe connection (a keyfile in /etc/NetworkManager/system-connections, from
tests/e2e/managers/etc), systemd-networkd lets it go (its .network file for the port
masked) and keeps the virtio-net port; tuned runs its recommended profile,
virtual-guest. Both are enabled, so they start again at the reboot below.

The steps, in order (guest/nettune/managers.py has the policy):

1. both managers run, NetworkManager has the port up;
2. with tuned's network-throughput profile active (its [sysctl] TCP buffers differ from
   nettune's), `nettune apply` refuses before changing anything, naming the profile and
   the keys; back on virtual-guest, apply writes the ring, coalescing, pause and feature
   values into the NetworkManager connection (nmcli) and verify passes; NetworkManager
   itself re-applies them when it activates the connection;
3. after a reboot verify passes: at boot NetworkManager activates the connection with
   the values apply wrote into it while nettune.service applies its own, and only a
   boot shows that the two agree (the one reboot of this module; nothing else here
   needs a fresh boot);
4. a manager changing a setting is drift that names it: the connection's ring size
   changed through nmcli, tuned switched to network-throughput;
5. `nettune revert` leaves the connection file byte for byte and nmcli's view of the
   connection as they were, tuned on its profile with /etc/tuned unchanged, and the
   port's ethtool readings as before apply.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import time
from pathlib import Path

import pytest

from conftest import TIMINGS, NettuneGuest
from ixgbe_testlib.sysguest import Lab, SystemdVM, readings

REPO_ROOT = Path(__file__).resolve().parents[2]
# /etc files that make NetworkManager own the ixgbe port (the lab-ixgbe connection) and
# systemd-networkd leave it alone
MANAGERS_ETC = Path(__file__).resolve().parent / "managers" / "etc"
# masked in the image (scripts/build-rootfs.sh); unmasked and enabled here
UNITS = "NetworkManager.service NetworkManager-wait-online.service NetworkManager-dispatcher.service tuned.service"
NETTUNE_SRC = Path(os.environ.get("NETTUNE_SRC") or REPO_ROOT / "guest").resolve()
CONN = "/etc/NetworkManager/system-connections/lab-ixgbe.nmconnection"
NM_VIEW = "nmcli -t -f connection,ethtool connection show lab-ixgbe | grep -v -e '^connection.timestamp:'"
TUNED_FILES = "find /etc/tuned -type f | sort | xargs sha256sum"


@dataclasses.dataclass
class Managed:
    vm: SystemdVM
    lab: Lab
    nettune_installed: bool
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
    """`tuned-adm profile NAME`, then wait for tuned to record it as the profile it runs
    (read from its file: each tuned-adm call is a Python start, seconds under TCG)."""
    vm.sh(f"tuned-adm profile {shlex.quote(name)}", timeout=180)
    vm.wait_until(f"tuned on {name}", lambda: vm.run("cat /etc/tuned/active_profile").stdout.strip() == name, 120)


def ring_rx(vm: SystemdVM, dev: str) -> str:
    out = vm.sh(f"ethtool -g {shlex.quote(dev)}")
    current = out.split("Current hardware settings:")[1]
    return current.split("RX:")[1].split()[0]


@pytest.fixture(scope="module")
def managed(nettune_guest: NettuneGuest) -> Managed:
    """The shared guest, the ixgbe port handed from systemd-networkd to NetworkManager
    and tuned started."""
    g, vm = nettune_guest, nettune_guest.vm
    t0 = time.monotonic()
    if vm.run("test -e /var/lib/nettune/state.json").rc == 0:
        pytest.fail("the shared guest still has nettune's tuning applied (test_nettune_e2e.py did not revert it)",
                    pytrace=False)  # fmt: skip
    g.managers = True
    vm.put_tree(MANAGERS_ETC, "/root/lab-managers")
    # the keyfile: NetworkManager reads only those that root alone may read (git keeps no 0600)
    vm.sh("cp -a --remove-destination /root/lab-managers/. /etc/ && "
          f"chmod 0600 {CONN} && networkctl reload")  # fmt: skip
    vm.sh(f"systemctl unmask {UNITS} && systemctl enable {UNITS} && systemctl start NetworkManager tuned",
          timeout=300)  # fmt: skip
    m = Managed(vm, g.lab, g.nettune_installed)
    wait_port(m)
    settle(vm)
    TIMINGS["managers: NetworkManager and tuned started, port up"] = time.monotonic() - t0
    return m


def test_managers_run_and_own_the_port(managed: Managed, timed: None) -> None:
    vm = managed.vm
    for unit in ("NetworkManager", "tuned"):
        assert vm.run(f"systemctl is-active {unit}").stdout.strip() == "active", unit
    assert vm.run("tuned-adm active").stdout.strip() == "Current active profile: virtual-guest"
    # systemd-networkd let the ixgbe port go (its .network file masked) and keeps the virtio-net one
    links = vm.sh("networkctl list --no-legend")
    assert re.search(rf"^\s*\d+ {re.escape(managed.ixgbe)} .* unmanaged\b", links, re.M), links
    assert re.search(r" configured\b", links), links
    # the operator picks the profile (tuned's profile_mode: manual), as the steps below do
    tuned_profile(vm, "virtual-guest")
    if not managed.nettune_installed:  # test_nettune_e2e.py, which installs it, did not run
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
