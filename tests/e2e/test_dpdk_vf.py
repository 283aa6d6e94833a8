"""DPDK's ixgbevf poll-mode driver on two VFs of the emulated 82599, behind
an emulated Intel IOMMU, end to end.

On test_dpdk_pmd.py's vfio-viommu guest (the Debian systemd guest with
DPDK 22.11, four emulated 82599 ports each behind a PCIe root port and on a
tap in the lab network namespace, an emulated IOMMU: intel-iommu with
interrupt remapping, guest intel_iommu=on), booted once for both files
(conftest.py: dpdk_viommu_guest), after that file's steps gave the ports
back to the kernel's ixgbe. Its port 0 is the PF:

    host tap tixgbe0 <-> PF (kernel ixgbe) <-> VF 0 and VF 1 (vfio-pci, testpmd)

In order, on that VM:

1. `sriov_numvfs` gives two VFs; the PF's driver assigns their MACs
   (`ip link set PF vf N mac`); each VF is an IOMMU group of its own;
2. both VFs are bound to vfio-pci and dpdk-testpmd probes them with
   net_ixgbe_vf (IOVA as VA: every DMA of a VF's queues goes through that
   VF's IOMMU domain, which holds DPDK's memory; the PF's domain does not),
   with the MACs the PF gave them and the link up;
3. frames the host writes into the tap for VF 0 are forwarded by testpmd out
   of VF 1 and those for VF 1 out of VF 0 (mac forwarding: a VF may send only
   from its own address, and io forwarding would send a frame for VF 0 back
   to VF 0 through the internal switch); the host captures every one, byte
   for byte what it sent but for the MAC addresses testpmd puts in; the VFs'
   counters agree;
4. testpmd quits, the VFs go back to the kernel's ixgbevf driver (DMA API
   mappings in the VFs' own IOMMU domains) and each pings the host from a
   network namespace of its own;
5. no kernel warning about the PF or the VFs, QEMU alive, nothing in its
   guest-error log.

With the VFs' DMA issued as the PF, steps 3 to 5 fail (the IOMMU finds
no mapping in the PF's domain: descriptor fetches fail, DMAR faults); the
probe in step 2 passes, as it needs no DMA.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
import time

import pytest

from conftest import TIMINGS
from ixgbe_testlib.netcheck import device_problems, format_records
from ixgbe_testlib.parsers import KmsgRecord
from ixgbe_testlib.sysguest import Lab, SystemdVM
from ixgbe_testlib.testpmd import Testpmd, parse_port_stats
from test_dpdk_pmd import MBUFS, VCPUS, Guest, HostCapture, frame_octets, host_send, parse_port_info

HUGEPAGES = 256  # 2 MiB pages
FRAMES = 300  # frames the host sends to each VF
NUM_VFS = 2
VF_MACS = ["52:54:00:12:35:00", "52:54:00:12:35:01"]
# where testpmd's mac forwarding sends out of each port: no pool has them,
# so the frames leave by the PF's wire
PEER_MACS = ["02:00:00:00:01:00", "02:00:00:00:01:01"]
VF_IPS = ["198.51.100.10", "198.51.100.11"]
VF_ID = "8086:10ed"


@dataclasses.dataclass
class VfSetup:
    vm: SystemdVM
    lab: Lab
    pf: str  # the PF's interface
    pf_pci: str
    vfs: list[str] = dataclasses.field(default_factory=list)  # VF PCI addresses, VF 0 first
    testpmd: Testpmd | None = None


def iommu_group(vm: SystemdVM, pci: str) -> str:
    return str(vm.sh(f"basename $(readlink /sys/bus/pci/devices/{pci}/iommu_group)")).strip()


def driver_of(vm: SystemdVM, pci: str) -> str:
    return str(vm.sh(f"basename $(readlink /sys/bus/pci/devices/{pci}/driver)")).strip()


@pytest.fixture(scope="module")
def setup(dpdk_viommu_guest: Guest) -> VfSetup:
    """The vfio-viommu guest of test_dpdk_pmd.py (conftest.py:
    dpdk_viommu_guest), after that file's steps: its port 0, on the wire
    tixgbe0, is the PF."""
    guest = dpdk_viommu_guest
    vm = guest.vm
    guest.vfs_made = True
    t0 = time.monotonic()
    (port,) = [p for p in guest.ports if p.wire is guest.lab.wires[0]]
    if driver_of(vm, port.pci) != "ixgbe":
        # a step of test_dpdk_pmd.py failed before it gave the ports back
        vm.run("kill $(pidof dpdk-testpmd); while pidof dpdk-testpmd; do sleep 0.5; done", timeout=60)
        vm.sh(shlex.join(["dpdk-devbind.py", "-b", "ixgbe", port.pci]), timeout=180)
    pf = vm.wait_until(
        f"the kernel's interface of {port.pci}",
        lambda: vm.run(f"ls /sys/bus/pci/devices/{port.pci}/net 2>/dev/null").stdout.strip() or None,
        180,
    )
    # the PF sends nothing of its own that would reach the VFs
    vm.sh(f"sysctl -qw net.ipv6.conf.{pf}.disable_ipv6=1")
    vm.wait_carrier(pf)
    TIMINGS["vf: PF ready"] = time.monotonic() - t0
    return VfSetup(vm, guest.lab, pf, port.pci)


def test_vfs_created(setup: VfSetup, timed: None) -> None:
    vm, pf = setup.vm, setup.pf
    # No driver takes the VFs until they have their administrative MACs: an
    # ixgbevf already running with a random MAC may still ask the PF for that
    # one after `vf N mac` (a race the PF warns about)
    vm.sh(f"echo 0 > /sys/class/net/{pf}/device/sriov_drivers_autoprobe")
    vm.sh(f"echo {NUM_VFS} > /sys/class/net/{pf}/device/sriov_numvfs", timeout=180)
    for n, mac in enumerate(VF_MACS):
        vm.sh(f"ip link set {pf} vf {n} mac {mac}")
    # (the VFs stay unbound; explicit binds are allowed again)
    vm.sh(f"echo 1 > /sys/class/net/{pf}/device/sriov_drivers_autoprobe")
    setup.vfs = [vm.sh(f"basename $(readlink /sys/class/net/{pf}/device/virtfn{n})").strip() for n in range(NUM_VFS)]
    ids = [vm.sh(f"cat /sys/bus/pci/devices/{v}/vendor /sys/bus/pci/devices/{v}/device").split() for v in setup.vfs]
    assert ids == [["0x8086", "0x10ed"]] * NUM_VFS, ids
    out = vm.sh(f"ip link show {pf}")
    for n, mac in enumerate(VF_MACS):
        assert re.search(rf"vf {n} .*link/ether {mac}", out), out
    # each VF is isolated by the IOMMU: vfio-pci can take it without the PF
    groups = [iommu_group(vm, p) for p in (setup.pf_pci, *setup.vfs)]
    assert len(set(groups)) == len(groups), f"IOMMU groups of the PF and the VFs: {groups}"


def test_bind_vfs_to_vfio(setup: VfSetup, timed: None) -> None:
    vm = setup.vm
    assert setup.vfs, "no VFs"
    vm.modprobe("vfio-pci")
    vm.sh(shlex.join(["dpdk-devbind.py", "-b", "vfio-pci", *setup.vfs]), timeout=120)
    for pci in setup.vfs:
        assert driver_of(vm, pci) == "vfio-pci", pci
    assert driver_of(vm, setup.pf_pci) == "ixgbe"
    vm.sh(f"echo {HUGEPAGES} > /proc/sys/vm/nr_hugepages")
    total = int(vm.sh("awk '/^HugePages_Total/ { print $2 }' /proc/meminfo"))
    assert total >= HUGEPAGES, f"only {total} hugepages"


def test_testpmd_probes_the_vfs(setup: VfSetup, timed: None) -> None:
    t0 = time.monotonic()
    assert setup.vfs, "no VFs"
    eal = ["-l", f"0-{VCPUS - 1}", "-n", "1", "--iova-mode=va"]
    for pci in setup.vfs:
        eal += ["-a", pci]
    app = ["--forward-mode=mac", "--rxq=1", "--txq=1", f"--total-num-mbufs={MBUFS}"]
    for port, mac in enumerate(PEER_MACS):
        app.append(f"--eth-peer={port},{mac}")
    setup.testpmd = Testpmd(setup.vm)
    out = setup.testpmd.start(eal, app)
    assert Testpmd.PROMPT in out, f"testpmd did not reach its prompt:\n{out[-4000:]}"
    probed = re.findall(rf"EAL: Probe PCI driver: net_ixgbe_vf \({VF_ID}\) device: (\S+)", out)
    assert probed == setup.vfs, out
    assert "Selected IOVA mode 'VA'" in out, out
    info = parse_port_info(setup.testpmd.cmd("show port info all"))
    for port, (pci, mac) in enumerate(zip(setup.vfs, VF_MACS)):
        i = info.get(port, {})
        assert i.get("Driver name") == "net_ixgbe_vf", i
        assert i.get("Device name") == pci, i
        assert i.get("MAC address", "").lower() == mac, i
        assert i.get("Link status") == "up", i
    TIMINGS["vf: testpmd start"] = time.monotonic() - t0


def test_forwarding_between_vfs(setup: VfSetup, timed: None) -> None:
    tp, lab = setup.testpmd, setup.lab
    assert tp is not None, "testpmd did not start"
    tap = lab.wires[0].tap
    t0 = time.monotonic()
    tp.cmd("clear port stats all")
    tp.cmd("start")
    # tag 1: host -> VF 0 -> testpmd -> VF 1 -> host; then tag 2 the other
    # way (one direction at a time: both come back on the one tap)
    for tag, rx, tx in ((1, 0, 1), (2, 1, 0)):
        cap = HostCapture(lab, tap, tag, FRAMES, timeout=120, rewritten=(VF_MACS[tx], PEER_MACS[tx]))
        host_send(lab, tap, tag, FRAMES, VF_MACS[rx])
        got = cap.result(timeout=180)
        assert got == {"received": FRAMES, "bad": 0, "other": 0, "octets": frame_octets(FRAMES)}, (
            f"frames for VF {rx} forwarded out of VF {tx}: {got}\n{tp.cmd('show port stats all')}"
        )
    stats = parse_port_stats(tp.cmd("show port stats all"))
    tp.cmd("stop")
    TIMINGS[f"vf: {2 * FRAMES} frames forwarded"] = time.monotonic() - t0
    for port in range(NUM_VFS):
        s = stats[port]
        # each VF received what the host sent it and sent what the other
        # received (the VF counts VFGPRC/VFGPTC of its pool)
        assert s.rx_packets == FRAMES and s.tx_packets == FRAMES, stats
        assert (s.rx_errors, s.rx_nombuf, s.tx_errors) == (0, 0, 0), stats


def test_vfs_back_to_ixgbevf(setup: VfSetup, timed: None) -> None:
    vm, tp = setup.vm, setup.testpmd
    assert tp is not None, "testpmd did not start"
    rc, out = tp.quit()
    assert rc == 0 and "Bye..." in out, out[-4000:]
    vm.modprobe("ixgbevf")
    vm.sh(shlex.join(["dpdk-devbind.py", "-b", "ixgbevf", *setup.vfs]), timeout=180)
    vm.wait_netdevs("ixgbevf", NUM_VFS, timeout=180)
    host = setup.lab.wires[0].host_ip
    for n, pci in enumerate(setup.vfs):
        dev = vm.sh(f"ls /sys/bus/pci/devices/{pci}/net").strip()
        assert vm.sh(f"cat /sys/class/net/{dev}/address").strip() == VF_MACS[n]
        vm.sh(f"ip netns add vf{n} && ip link set {dev} netns vf{n}")
        vm.link_up(dev, f"{VF_IPS[n]}/24", netns=f"vf{n}")
        vm.wait_until(
            f"carrier on {dev} in netns vf{n}",
            lambda: vm.run(f"ip netns exec vf{n} cat /sys/class/net/{dev}/carrier").stdout.strip() == "1",
        )
        r = vm.ping(host, count=3, netns=f"vf{n}")
        assert r.ok and " 0% packet loss" in r.stdout, f"ping {host} from VF {n}:\n{r.stdout}"


def test_no_device_warnings(setup: VfSetup, timed: None) -> None:
    vm = setup.vm
    assert vm.alive(), "QEMU is gone"
    records = vm.dmesg()
    problems: list[KmsgRecord] = []
    for drv in ("ixgbe", "ixgbevf", "vfio-pci"):
        problems += device_problems(records, drv, [setup.pf_pci, *setup.vfs], [setup.pf])
    problems += [r for r in records if "DMAR" in r.text and "fault" in r.text.lower()]
    assert not problems, "kernel warnings about the PF or the VFs:\n" + format_records(problems)
    assert not vm.qemu_problems(), f"QEMU reported problems:\n{vm.qemu_problems()}"
