"""DPDK's ixgbe poll-mode driver on the emulated 82599, end to end.

The Debian systemd guest (scripts/build-rootfs.sh; its image has Debian's
DPDK 22.11: dpdk-testpmd with the ixgbe PMD, dpdk-devbind.py) boots with four
emulated 82599 ports, each on a tap in the lab network namespace: two
10GBASE-KR ports (-device ixgbe, 8086:1517) and two of the other parts,
the X520's SFP+ port (-device ixgbe-sfp, 8086:10FB; a direct-attach cable
in the uio VM, an Intel SR optic in the vfio one) and the KX4/KX/KR combined
backplane port (-device ixgbe-combo, 8086:10F8):

    host tap tixgbe0 <-> port 0 (nic0, KR)   testpmd io forwarding   port 1 (nic1, KR) <-> host tap tixgbe1
    host tap tixgbe2 <-> port 2 (nic2, SFP+) testpmd io forwarding   port 3 (nic3, combo) <-> host tap tixgbe3

Per binding, on one VM, in order:

1. the kernel ixgbe driver let go of the ports; they are bound to the
   user-space I/O driver with dpdk-devbind.py;
2. dpdk-testpmd (interactive, driven through a FIFO) probes every port with
   net_ixgbe under its part's device ID, its shared code takes each for
   the part it is (on the SFP+ port: the module type it read over I2C),
   and it reports the MACs QEMU was given and the link up at 10 Gbps;
3. a link flap (QMP set_link on nic1, then on the SFP+ port) reaches
   testpmd as a link state change interrupt, down and back up;
4. frames the host writes into each tap are forwarded by testpmd out of the
   other port of its pair, byte for byte, spread over two RX queues by RSS;
   the host captures every one; testpmd's NIC counters (read from the
   device's statistics registers) agree with what was sent, without errors
   or misses;
5. an rte_flow rule on a UDP/IPv4 5-tuple with a queue action (testpmd's
   `flow create`) becomes one of port 0's 5-tuple filters (read from its
   registers through QEMU's monitor); the flow's frames, on one queue by
   RSS before, all arrive on the rule's queue, other flows still spread,
   and `flow flush` puts the flow back on its RSS queue;
6. testpmd quits cleanly, the ports go back to the kernel ixgbe driver, a
   ping over port 0 works and every port has its link at 10 Gb/s;
7. no kernel warning about any port, QEMU alive, nothing in its
   guest-error log.

Bindings:
- uio_pci_generic: legacy INTx interrupts, DMA to guest-physical addresses
  (IOVA as PA, 2 MiB hugepages);
- vfio-pci behind an emulated Intel IOMMU (intel-iommu, guest intel_iommu=on;
  Debian's kernel has no vfio no-IOMMU mode): MSI-X, DMA through the IOMMU
  (IOVA as VA). This guest is booted once for the session (conftest.py:
  dpdk_viommu_guest): test_dpdk_vf.py's VF steps run on it after this
  file's, with port 0 as their PF.

The host side (sending and capturing raw frames) runs in the lab namespace
as a small Python program (FRAME_TOOL), one process per direction.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import TIMINGS
from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.host import has_device, scaled
from ixgbe_testlib.netcheck import device_problems, format_records
from ixgbe_testlib.nicargs import mac_address
from ixgbe_testlib.parsers import KmsgRecord
from ixgbe_testlib.sysguest import Lab, RootfsImage, SystemdVM, Wire, ixgbe_wire, pick_accel
from ixgbe_testlib.testpmd import Testpmd, parse_port_stats
from ixgbe_testlib.vmreport import remember_vm

VCPUS = 2  # testpmd: a main lcore and one forwarding lcore
MEMORY_MB = 2048
HUGEPAGES = 256  # 2 MiB pages: 512 MiB for DPDK's memory
FRAMES = 1000  # frames the host sends into each port
RXQ = 2  # RX/TX queues per port (RSS over two RX queues)
# testpmd's mbuf pool: by default sized for DPDK's 32 ports with the largest
# rings (155,456 mbufs of 2,176 bytes, 338 MB of hugepages testpmd fills at
# start, seconds of TCG); this is about twice what the rings of four ports
# with two queues each way and the lcores' caches hold (the forwarding
# tests assert RX-nombuf 0)
MBUFS = 16384


@dataclasses.dataclass(frozen=True)
class Part:
    """An emulated 82599 part as QEMU presents it to the guest."""

    model: str  # QEMU device
    device_id: str  # its PCI device ID, as DPDK prints it
    opts: str = ""  # further -device options (the SFP+ module)
    # what the PMD's shared code makes of the port at probe time (its init
    # log: "MAC: 2, PHY: <phy>[, SFP+: <sfp>]", enum ixgbe_phy_type and enum
    # ixgbe_sfp_type of DPDK's base/ixgbe_type.h); the SFP+ part's module is
    # identified from its ID memory, read over I2C
    phy: int = 1  # ixgbe_phy_none: a backplane port has no PHY
    sfp: int | None = None  # no SFP+ cage


MAC_82599 = 2  # ixgbe_mac_82599EB
KR = Part("ixgbe", "1517")  # 10GBASE-KR backplane
COMBO = Part("ixgbe-combo", "10f8")  # KX4/KX/KR combined backplane
# ... whose receive-queue, EITR and Flow Director command writes the
# device holds as KVM's coalesced MMIO would (test_rx_only_held_tail_writes)
COMBO_HELD = dataclasses.replace(COMBO, opts="x-defer-coalesced=on")
# X520 SFP+ port with a passive direct-attach cable of no known cable
# vendor (ixgbe_phy_sfp_passive_unknown, ixgbe_sfp_type_da_cu_core0) ...
SFP_DA = Part("ixgbe-sfp", "10fb", "sfp=da", phy=14, sfp=3)
# ... and with an Intel 10GBASE-SR optic (ixgbe_phy_sfp_intel, ixgbe_sfp_type_srlr_core0)
SFP_SR = Part("ixgbe-sfp", "10fb", "sfp=sr", phy=20, sfp=5)


@dataclasses.dataclass(frozen=True)
class Binding:
    name: str  # test id
    driver: str  # the guest driver that gives the port to DPDK
    iova: str  # EAL --iova-mode
    parts: tuple[Part, ...]  # the guest's ports, in PCI address (DPDK port id) order
    qemu_args: tuple[str, ...] = ()
    append: str = ""
    modprobe: str = ""


# Two KR ports (0 <-> 1) and two other parts (2 <-> 3) per VM: testpmd's
# paired topology forwards between the ports of each pair.
UIO = Binding("uio", "uio_pci_generic", "pa", (KR, KR, SFP_DA, COMBO_HELD), modprobe="uio_pci_generic")
# (test_dpdk_vf.py's VF steps run on this binding's guest after this file's,
# on port 0: the conftest's dpdk_viommu_guest)
VFIO_VIOMMU = Binding(
    "vfio-viommu", "vfio-pci", "va", (KR, KR, SFP_SR, COMBO_HELD),
    qemu_args=("-machine", "q35,kernel-irqchip=split", "-device", "intel-iommu,intremap=on"),
    append="intel_iommu=on", modprobe="vfio-pci",
)  # fmt: skip
BINDINGS = (UIO, VFIO_VIOMMU)

# host and guest addresses of each port's wire after port 0's (the image's
# systemd-networkd gives every ixgbe port 198.51.100.2, used by port 0)
WIRE_NETS = ("192.0.2", "198.18.0", "198.18.1")


def lab_wires(parts: tuple[Part, ...]) -> list[Wire]:
    """One wire per port, behind its own PCIe root port in this order."""
    wires = []
    for i, part in enumerate(parts):
        if i == 0:
            w = ixgbe_wire(0)
        else:
            net = WIRE_NETS[i - 1]
            w = Wire(f"n{i}", f"tixgbe{i}", "ixgbe", "ixgbe", mac_address(i), f"{net}.1", f"{net}.2")
        wires.append(dataclasses.replace(w, model=part.model, device_opts=part.opts))
    return wires


# ------------------------------------------------------------ host frames
# Runs in the lab namespace: `send IFACE TAG COUNT DST_MAC` writes COUNT
# UDP/IPv4 frames (sizes 64..1514, source ports varied so RSS spreads them)
# into the tap (`send IFACE TAG COUNT DST_MAC SEQ`: COUNT copies of frame SEQ,
# one flow); `capture IFACE TAG COUNT TIMEOUT [SRC DST]` prints "ready",
# then one JSON line once it has seen COUNT distinct frames of TAG (or timed
# out), with the number of frames that differ from what was sent (or, with
# SRC and DST, from what was sent with its MAC addresses replaced by them:
# what testpmd's mac forwarding sends).
FRAME_TOOL = r"""
import json, socket, struct, sys, time

MAGIC = b"ixgbe-dpdk-e2e"

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF

def frame(tag, seq, dst, src=None):
    size = 64 + (seq * 97) % 1451
    src_ip, dst_ip = bytes([10, tag, seq >> 8 & 0xFF, seq & 0xFF]), bytes([10, 255, 0, 1])
    head = MAGIC + struct.pack("!BI", tag, seq)
    payload = head + bytes((seq + i) & 0xFF for i in range(size - 42 - len(head)))
    udp = struct.pack("!HHHH", 1024 + seq % 4096, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), seq & 0xFFFF, 0, 64, 17, 0, src_ip, dst_ip)
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    c = csum(src_ip + dst_ip + struct.pack("!BBH", 0, 17, len(udp)) + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    return dst + (src or bytes([2, 0, 0, 0, 0, tag])) + b"\x08\x00" + ip + udp

mode, iface, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((iface, 0))
if mode == "send":
    dst = bytes.fromhex(sys.argv[5].replace(":", ""))
    seqs = [int(sys.argv[6])] * count if len(sys.argv) > 6 else range(count)
    for i, seq in enumerate(seqs):
        s.send(frame(tag, seq, dst))
        if i % 32 == 31:
            time.sleep(0.01)  # the tap queue holds 1000 frames
    print(json.dumps({"sent": count}))
    sys.exit(0)
# Room for every frame of a run while this loop checks them one by one
# (the default buffer holds about 90 of them: a stall of the host, not the
# device, would otherwise drop frames). SO_RCVBUFFORCE: root may exceed
# net.core.rmem_max.
s.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_RCVBUFFORCE", 33), 32 << 20)
deadline = time.monotonic() + float(sys.argv[5])
src, dst = (bytes.fromhex(a.replace(":", "")) for a in sys.argv[6:8]) if len(sys.argv) > 7 else (None, None)
seen, bad, other, octets = set(), 0, 0, 0
s.settimeout(0.2)
print("ready", flush=True)
off = 14 + 20 + 8
while len(seen) < count and time.monotonic() < deadline:
    try:
        data, addr = s.recvfrom(65536)
    except TimeoutError:
        continue
    if addr[2] == socket.PACKET_OUTGOING:
        continue
    if data[off:off + len(MAGIC)] != MAGIC or data[off + len(MAGIC)] != tag:
        other += 1
        continue
    seq = struct.unpack("!I", data[off + len(MAGIC) + 1:off + len(MAGIC) + 5])[0]
    if data != frame(tag, seq, dst or data[:6], src):
        bad += 1
    elif seq not in seen:
        seen.add(seq)
        octets += len(data)
print(json.dumps({"received": len(seen), "bad": bad, "other": other, "octets": octets}))
"""


def frame_octets(count: int) -> int:
    """Bytes (without CRC) of the first `count` frames FRAME_TOOL sends."""
    return sum(64 + (seq * 97) % 1451 for seq in range(count))


class HostCapture:
    """FRAME_TOOL capture on a tap in the lab namespace."""

    def __init__(
        self, lab: Lab, iface: str, tag: int, count: int, timeout: float, rewritten: tuple[str, str] | None = None
    ) -> None:
        """`rewritten`: the (source, destination) MACs the frames arrive with."""
        argv = [*lab.prefix(), sys.executable, "-c", FRAME_TOOL, "capture", iface, str(tag), str(count)]
        argv.append(str(scaled(timeout)))
        if rewritten is not None:
            argv += list(rewritten)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.proc.kill()
            raise GuestError(f"host capture on {iface} did not start: {line}{self.proc.communicate()[1]}")

    def result(self, timeout: float) -> dict[str, int]:
        out, err = self.proc.communicate(timeout=scaled(timeout))
        if self.proc.returncode != 0:
            raise GuestError(f"host capture failed ({self.proc.returncode}): {err}")
        result: dict[str, int] = json.loads(out.strip().splitlines()[-1])
        return result


def host_send(lab: Lab, iface: str, tag: int, count: int, dst: str, seq: int | None = None) -> None:
    """`count` frames of `tag` into the tap: frames 0..count-1, or `count`
    copies of frame `seq` (one flow)."""
    argv = [sys.executable, "-c", FRAME_TOOL, "send", iface, str(tag), str(count), dst]
    if seq is not None:
        argv.append(str(seq))
    r = lab.run(argv, timeout=120)
    if r.returncode != 0:
        raise GuestError(f"host send into {iface} failed: {r.stderr}")


# --------------------------------------------------------- testpmd output
def _port_blocks(text: str, title: str) -> dict[int, str]:
    """Blocks of testpmd output that start with a "<title> port N" header."""
    parts = re.split(rf"^.*{re.escape(title)} port (\d+)(?:\s.*)?$", text, flags=re.MULTILINE)
    return {int(parts[i]): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def parse_xstats(text: str) -> dict[int, dict[str, int]]:
    """`show port xstats all` -> {port: {"rx_good_packets": 600, ...}}."""
    out: dict[int, dict[str, int]] = {}
    for port, block in _port_blocks(text, "NIC extended statistics for").items():
        out[port] = {k: int(v) for k, v in re.findall(r"^(\w+): (\d+)$", block, re.MULTILINE)}
    return out


def parse_port_info(text: str) -> dict[int, dict[str, str]]:
    """`show port info all` -> {port: {"Link status": "up", ...}}."""
    out: dict[int, dict[str, str]] = {}
    for port, block in _port_blocks(text, "Infos for").items():
        out[port] = {
            k.strip(): v.strip() for k, v in re.findall(r"^([A-Za-z][^:\n]*):[ \t]*(.*)$", block, re.M)
        }
    return out


def parse_probe(text: str) -> tuple[dict[str, str], dict[int, str]]:
    """testpmd's start-up: {PCI address: device ID} of the ports net_ixgbe
    probed, {port: MAC}."""
    pat = r"EAL: Probe PCI driver: net_ixgbe \(8086:([0-9A-Fa-f]{4})\) device: (\S+)"
    probed = {pci: dev_id.lower() for dev_id, pci in re.findall(pat, text)}
    macs = {int(p): m.lower() for p, m in re.findall(r"^Port (\d+): ([0-9A-Fa-f:]{17})\s*$", text, re.M)}
    return probed, macs


def parse_identified(text: str) -> dict[str, tuple[int, int, int | None]]:
    """testpmd's start-up with the PMD's init log at debug level: {PCI
    address: (MAC type, PHY type, SFP+ type or None)}, from the line its
    eth_ixgbe_dev_init() prints after the probe line of the port."""
    out: dict[str, tuple[int, int, int | None]] = {}
    parts = re.split(r"^EAL: Probe PCI driver: net_ixgbe \(8086:[0-9A-Fa-f]{4}\) device: (\S+).*$", text, flags=re.M)
    for pci, block in zip(parts[1::2], parts[2::2]):
        m = re.search(r"eth_ixgbe_dev_init\(\): MAC: (\d+), PHY: (\d+)(?:, SFP\+: (\d+))?$", block, re.M)
        if m is not None:
            out[pci] = (int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None)
    return out


def parse_stream_stats(text: str) -> dict[tuple[int, int], int]:
    """Per-stream forward statistics printed at `stop` when a port has
    several queues: {(rx port, rx queue): RX-packets}."""
    out: dict[tuple[int, int], int] = {}
    for port, queue, rx in re.findall(
        r"Forward Stats for RX Port=\s*(\d+)/Queue=\s*(\d+) -> .*?\n\s*RX-packets:\s+(\d+)", text
    ):
        out[(int(port), int(queue))] = int(rx)
    return out


# ---------------------------------------------------------------- fixture
@dataclasses.dataclass
class Port:
    wire: Wire
    part: Part
    pci: str  # guest PCI address
    netdev: str  # the kernel's interface name (before DPDK took the port)
    port_id: int = -1  # DPDK port id


@dataclasses.dataclass
class Setup:
    vm: SystemdVM
    lab: Lab
    binding: Binding
    ports: list[Port]  # in DPDK port id order
    testpmd: Testpmd
    startup: str = ""
    exit_code: int | None = None


def kernel_ports(vm: SystemdVM, wires: list[Wire], parts: tuple[Part, ...]) -> list[Port]:
    """The ixgbe interfaces, matched to the lab's wires (and the parts on
    them) by MAC, in PCI address order (the order DPDK numbers its ports in)."""
    devs = vm.wait_netdevs("ixgbe", len(wires), timeout=180)
    by_mac = {w.mac.lower(): (w, part) for w, part in zip(wires, parts, strict=True)}
    ports = []
    # one guest command for all: name, MAC, PCI address
    each = "; ".join(
        f"echo {d} $(cat /sys/class/net/{d}/address) $(basename $(readlink /sys/class/net/{d}/device))" for d in devs
    )
    for line in vm.sh(each).splitlines():
        dev, mac, pci = line.split()
        wire, part = by_mac[mac.lower()]
        ports.append(Port(wire, part, pci, dev))
    assert sorted(p.netdev for p in ports) == sorted(devs), f"{devs}: {ports}"
    ports.sort(key=lambda p: p.pci)
    for i, p in enumerate(ports):
        p.port_id = i
    return ports


@dataclasses.dataclass
class Guest:
    """A booted guest of one binding, its ports still with the kernel's ixgbe."""

    vm: SystemdVM
    lab: Lab
    binding: Binding
    ports: list[Port]  # in DPDK port id order
    vfs_made: bool = False  # test_dpdk_vf.py has used it (it made VFs of port 0)


@contextlib.contextmanager
def dpdk_guest(
    binding: Binding, rootfs: RootfsImage, qemu: Path, log_root: Path, node: pytest.Item | pytest.Collector
) -> Iterator[Guest]:
    """Boot the binding's guest in a lab of its own; shut it down at the end.
    The VM's logs go into the report of a failing test under `node`."""
    manifest = (rootfs.disk.parent / "manifest.txt").read_text()
    if not re.search(r"^package dpdk-dev ", manifest, re.MULTILINE):
        pytest.fail("the guest image has no dpdk-dev (scripts/rootfs/packages.txt)", pytrace=False)
    for model in sorted({part.model for part in binding.parts}):
        if not has_device(model, qemu):
            pytest.fail(f"QEMU binary {qemu} has no '-device {model}'", pytrace=False)
    t0 = time.monotonic()
    with Lab(lab_wires(binding.parts)) as lab:
        vm = SystemdVM(
            rootfs, lab=lab, name=f"dpdk-{binding.name}", log_dir=log_root / "dpdk", smp=VCPUS,
            memory_mb=MEMORY_MB, accel=pick_accel(log_root), qemu=qemu, append=binding.append,
            # DPDK 22.11 as Debian builds it needs SSE4.2 (TCG's default qemu64 has none)
            args=["-cpu", "max", *binding.qemu_args],
        )  # fmt: skip
        remember_vm(node, vm)
        try:
            vm.start()
            # no IPv6 chatter from the host ends: the taps carry only test frames
            lab.sh("sysctl -qw " + " ".join(f"net.ipv6.conf.{w.tap}.disable_ipv6=1" for w in lab.wires))
            ports = kernel_ports(vm, lab.wires, binding.parts)
            TIMINGS[f"{binding.name}: boot to agent + ports"] = time.monotonic() - t0
            yield Guest(vm, lab, binding, ports)
        finally:
            vm.shutdown()


@pytest.fixture(scope="module", params=BINDINGS, ids=[b.name for b in BINDINGS])
def setup(request: pytest.FixtureRequest, rootfs: RootfsImage, qemu: Path, log_root: Path) -> Iterator[Setup]:
    binding: Binding = request.param
    with contextlib.ExitStack() as stack:
        if binding is VFIO_VIOMMU:
            # booted for the session: test_dpdk_vf.py runs on it after this file
            guest: Guest = request.getfixturevalue("dpdk_viommu_guest")
            if guest.vfs_made:
                pytest.fail("test_dpdk_vf.py ran first on the vfio-viommu guest: run this file before it")
        else:
            guest = stack.enter_context(dpdk_guest(binding, rootfs, qemu, log_root, request.node))
        yield Setup(guest.vm, guest.lab, binding, guest.ports, Testpmd(guest.vm))


# ------------------------------------------------------------------ steps
def test_bind_ports_to_dpdk(setup: Setup, timed: None) -> None:
    vm, b = setup.vm, setup.binding
    vm.modprobe(b.modprobe)
    vm.sh(" && ".join(f"ip addr flush dev {p.netdev} && ip link set {p.netdev} down" for p in setup.ports))
    pcis = [p.pci for p in setup.ports]
    vm.sh(shlex.join(["dpdk-devbind.py", "-b", b.driver, *pcis]), timeout=120)
    drivers = vm.sh("; ".join(f"basename $(readlink /sys/bus/pci/devices/{pci}/driver)" for pci in pcis)).split()
    for pci, drv in zip(pcis, drivers, strict=True):
        assert drv == b.driver, f"{pci} is bound to {drv}, not {b.driver}"
    status = vm.sh("dpdk-devbind.py --status-dev net")
    assert "Network devices using DPDK-compatible driver" in status, status
    for pci in pcis:
        assert re.search(rf"^{re.escape(pci)} .* drv={re.escape(b.driver)} ", status, re.M), status
    vm.sh(f"echo {HUGEPAGES} > /proc/sys/vm/nr_hugepages")
    total = int(vm.sh("awk '/^HugePages_Total/ { print $2 }' /proc/meminfo"))
    assert total >= HUGEPAGES, f"only {total} hugepages"


def test_testpmd_probes_every_port(setup: Setup, timed: None) -> None:
    t0 = time.monotonic()
    eal = ["-l", f"0-{VCPUS - 1}", "-n", "1", f"--iova-mode={setup.binding.iova}"]
    eal.append("--log-level=pmd.net.ixgbe.init:debug")  # what the PMD made of each port (parse_identified)
    for p in setup.ports:
        eal += ["-a", p.pci]
    app = ["--forward-mode=io", f"--rxq={RXQ}", f"--txq={RXQ}", f"--total-num-mbufs={MBUFS}"]
    setup.startup = out = setup.testpmd.start(eal, app)
    assert Testpmd.PROMPT in out, f"testpmd did not reach its prompt:\n{out[-4000:]}"
    probed, macs = parse_probe(out)
    assert probed == {p.pci: p.part.device_id for p in setup.ports}, out
    # the PMD's shared code took each port for the part it is: an 82599 with
    # no PHY (backplane), or, on the SFP+ part, with the module it read
    # over I2C (a module it cannot read counts as no module, and probes too)
    want = {p.pci: (MAC_82599, p.part.phy, p.part.sfp) for p in setup.ports}
    assert parse_identified(out) == want, out
    for p in setup.ports:
        assert macs.get(p.port_id) == p.wire.mac.lower(), f"port {p.port_id}: {macs}\n{out}"
    assert f"Selected IOVA mode '{setup.binding.iova.upper()}'" in out, out
    info = parse_port_info(setup.testpmd.cmd("show port info all"))
    for p in setup.ports:
        i = info.get(p.port_id, {})
        assert i.get("Driver name") == "net_ixgbe", i
        assert i.get("MAC address", "").lower() == p.wire.mac.lower(), i
        assert i.get("Device name") == p.pci, i
        assert i.get("Link status") == "up" and i.get("Link speed") == "10 Gbps", i
        assert i.get("Current number of RX queues") == str(RXQ), i
    TIMINGS[f"{setup.binding.name}: testpmd start"] = time.monotonic() - t0


def test_link_change_interrupt(setup: Setup, timed: None) -> None:
    """testpmd prints the event from its link-change interrupt callback
    (the PMD's handler reads EICR.LSC): no interrupt, no event. On a KR port
    and, at the same time, on the SFP+ port (a fiber port to the PMD, which
    then also checks the module's transmitter, ESDP.SDP3, and sets the link
    up again)."""
    tp = setup.testpmd
    flapped = [setup.ports[1]] + [p for p in setup.ports if p.part.sfp is not None]
    nics = [f"nic{setup.lab.wires.index(p.wire)}" for p in flapped]
    events = [f"Port {p.port_id}: link state change event" for p in flapped]
    try:
        for up in (False, True):
            log = tp.log()
            seen = [log.count(e) for e in events]
            for nic in nics:
                setup.vm.qmp("set_link", name=nic, up=up)
            setup.vm.wait_until(
                f"testpmd to see {', '.join(nics)} go {'up' if up else 'down'}",
                lambda: all(n > s for n, s in zip([tp.log().count(e) for e in events], seen)),
                60,
            )
            info = parse_port_info(tp.cmd("show port info all"))
            for p in flapped:
                i = info.get(p.port_id, {})
                assert i.get("Link status") == ("up" if up else "down"), f"{p.part}: {i}"
                if up:
                    assert i.get("Link speed") == "10 Gbps", f"{p.part}: {i}"
    finally:
        for nic in nics:
            setup.vm.qmp("set_link", name=nic, up=True)  # the next steps need the wires


def test_io_forwarding(setup: Setup, timed: None) -> None:
    tp, lab = setup.testpmd, setup.lab
    t0 = time.monotonic()
    tp.cmd("clear port stats all")
    tp.cmd("start")
    # host -> tap of port A -> testpmd -> port B -> host, both directions
    # in each pair of ports (testpmd's paired topology: 0 <-> 1, 2 <-> 3)
    ports = setup.ports
    directions = [d for i in range(0, len(ports), 2) for d in ((ports[i], ports[i + 1]), (ports[i + 1], ports[i]))]
    caps = []
    for tag, (src, dst) in enumerate(directions, start=1):
        caps.append((tag, src, dst, HostCapture(lab, dst.wire.tap, tag, FRAMES, timeout=120)))
    for tag, src, _dst, _cap in caps:
        host_send(lab, src.wire.tap, tag, FRAMES, src.wire.mac)
    for tag, src, dst, cap in caps:
        got = cap.result(timeout=180)
        assert got == {"received": FRAMES, "bad": 0, "other": 0, "octets": frame_octets(FRAMES)}, (
            f"frames into {src.wire.tap} (port {src.port_id}) out of {dst.wire.tap} (port {dst.port_id}): "
            f"{got}\n{tp.cmd('show port stats all')}"
        )
    stats = parse_port_stats(tp.cmd("show port stats all"))
    xstats = parse_xstats(tp.cmd("show port xstats all"))
    stop = tp.cmd("stop")
    TIMINGS[f"{setup.binding.name}: {len(directions) * FRAMES} frames forwarded"] = time.monotonic() - t0
    octets = frame_octets(FRAMES)
    for a, b in directions:
        sa, sb = stats[a.port_id], stats[b.port_id]
        # everything port A received went out of port B (io forwarding), and
        # the host sent nothing else into the taps
        assert sa.rx_packets == FRAMES and sb.tx_packets == FRAMES, f"port {a.port_id} -> {b.port_id}: {stats}"
        assert sa.rx_bytes == octets and sb.tx_bytes == octets, stats
        assert (sa.rx_errors, sa.rx_missed, sa.rx_nombuf, sa.tx_errors) == (0, 0, 0, 0), stats
        # the device's other counters agree: total octets received (TOR,
        # which counts the CRC; DPDK takes it off), bytes per queue, and the
        # size buckets, which see the same frames on both ports
        xa, xb = xstats[a.port_id], xstats[b.port_id]
        assert xa.get("rx_total_bytes") == octets and xa.get("rx_total_packets") == FRAMES, xa
        assert sum(v for k, v in xb.items() if re.fullmatch(r"tx_q\d+_bytes", k)) == octets, xb
        buckets = ["64", "65_to_127", "128_to_255", "256_to_511", "512_to_1023", "1024_to_max"]
        rx_sizes = [xa.get(f"rx_size_{n}_packets", -1) for n in buckets]
        tx_sizes = [xb.get(f"tx_size_{n}_packets", -1) for n in buckets]
        assert rx_sizes == tx_sizes and sum(rx_sizes) == FRAMES, f"RX {rx_sizes}, TX {tx_sizes}"
    # RSS spread each port's frames over its RX queues
    streams = parse_stream_stats(stop)
    for p in setup.ports:
        per_queue = [streams.get((p.port_id, q), 0) for q in range(RXQ)]
        assert sum(per_queue) == FRAMES and all(per_queue), f"port {p.port_id}: {per_queue}\n{stop}"


RX_ONLY_FRAMES = 3000  # about three times the port's receive descriptors


def test_rx_only_held_tail_writes(setup: Setup, timed: None) -> None:
    """A poll-mode driver that only receives touches no register but the
    receive tails, and on the port whose tail writes are held
    (x-defer-coalesced=on, as KVM's coalesced MMIO holds them) none of them
    reaches the device by itself: once the descriptors the device knows
    of are used, the next frame waits, and only the starved-frame timer
    applies the held writes. Without it the port stops after about one
    ring's worth of frames until a register read; with it, every frame the
    host sends arrives while nothing reads a register."""
    tp, lab = setup.testpmd, setup.lab
    (port,) = [p for p in setup.ports if "x-defer-coalesced=on" in p.part.opts]
    tp.cmd("set fwd rxonly")
    tp.cmd("clear port stats all")
    tp.cmd("start")
    try:
        host_send(lab, port.wire.tap, 9, RX_ONLY_FRAMES, port.wire.mac)
        time.sleep(scaled(3))
    finally:
        stats = parse_port_stats(tp.cmd("show port stats all"))
        tp.cmd("stop")
        tp.cmd("set fwd io")
    s = stats[port.port_id]
    assert s.rx_packets == RX_ONLY_FRAMES, f"port {port.port_id}: {stats}"
    assert s.rx_bytes == frame_octets(RX_ONLY_FRAMES), stats
    assert (s.rx_errors, s.rx_missed, s.rx_nombuf) == (0, 0, 0), stats


NTUPLE_FRAMES = 200  # frames per run of test_ntuple_flow_to_queue
NTUPLE_TAG, NTUPLE_SEQ = 11, 5  # its flow: FRAME_TOOL's frame 5 of tag 11


def parse_hmp_words(text: str) -> list[int]:
    """HMP `xp /Nwx ADDR` -> the N words, in address order."""
    words: list[int] = []
    for line in text.splitlines():
        if ":" in line:
            words += [int(w, 16) for w in line.split(":", 1)[1].split()]
    return words


def ntuple_filters(setup: Setup, port: Port) -> dict[int, tuple[int, int, int, int, int]]:
    """The port's 5-tuple filters with Queue Enable, read from its BAR 0
    through QEMU's monitor: {index: (FTQF, SAQF, DAQF, SDPQF, L34TIMIR)}."""
    bar0 = int(setup.vm.sh(f"head -1 /sys/bus/pci/devices/{port.pci}/resource").split()[0], 16)
    regs = []
    for base in (0xE600, 0xE000, 0xE200, 0xE400, 0xE800):  # FTQF SAQF DAQF SDPQF L34TIMIR
        out = setup.vm.qmp("human-monitor-command", **{"command-line": f"xp /128wx {bar0 + base:#x}"})
        regs.append(parse_hmp_words(str(out)))
        assert len(regs[-1]) == 128, out
    return {i: tuple(r[i] for r in regs) for i in range(128) if regs[0][i] & 1 << 31}  # type: ignore[misc]


def test_ntuple_flow_to_queue(setup: Setup, timed: None) -> None:
    """An rte_flow rule on a UDP/IPv4 5-tuple with a queue action takes
    DPDK's ntuple path (the ixgbe PMD tries it first; testpmd runs without
    a Flow Director mode, so no other path takes this pattern) and lands
    in one of the port's 5-tuple filters (read from the device's
    registers). The flow's frames, which RSS put on one queue, then all
    arrive on the rule's queue; other flows still spread over both.
    Run under uio_pci_generic only: the PMD programs the same registers
    under every binding, and the filters act before any DMA."""
    if setup.binding.name != "uio":
        pytest.skip("the 5-tuple rule runs once, under uio_pci_generic (same registers under every binding)")
    tp, lab = setup.testpmd, setup.lab
    port = setup.ports[0]
    t0 = time.monotonic()

    def run(seq: int | None) -> list[int]:
        """Frames into the port's tap; testpmd's RX packets per queue."""
        tp.cmd("clear port stats all")
        tp.cmd("start")
        try:
            host_send(lab, port.wire.tap, NTUPLE_TAG, NTUPLE_FRAMES, port.wire.mac, seq)
            setup.vm.wait_until(
                f"port {port.port_id} to receive {NTUPLE_FRAMES} frames",
                lambda: parse_port_stats(tp.cmd("show port stats all"))[port.port_id].rx_packets >= NTUPLE_FRAMES,
                60,
            )
        finally:
            stop = tp.cmd("stop")
        streams = parse_stream_stats(stop)
        return [streams.get((port.port_id, q), 0) for q in range(RXQ)]

    tp.cmd("set fwd rxonly")
    try:
        before = run(NTUPLE_SEQ)
        assert sorted(before) == [0, NTUPLE_FRAMES], f"one flow, one RSS queue: {before}"
        target = before.index(0)
        rule = (
            f"0 ingress pattern eth / ipv4 src is 10.{NTUPLE_TAG}.0.{NTUPLE_SEQ} dst is 10.255.0.1"
            f" / udp src is {1024 + NTUPLE_SEQ} dst is 9 / end actions queue index {target} / end"
        )
        out = tp.cmd(f"flow validate {rule}")
        assert "Flow rule validated" in out, out
        assert ntuple_filters(setup, port) == {}
        out = tp.cmd(f"flow create {rule}")
        assert re.search(r"Flow rule #\d+ created", out), out
        filters = ntuple_filters(setup, port)
        shown = {i: [hex(v) for v in f] for i, f in filters.items()}
        assert len(filters) == 1, shown
        ((ftqf, *addr_ports, l34timir),) = filters.values()
        # both addresses and ports compared (FTQF mask bits 28:25 clear; the
        # pattern leaves the IP protocol out), each register in wire order:
        # 10.11.0.5 -> 10.255.0.1, UDP 1029 -> 9; the rule's queue
        assert (ftqf >> 25) & 0xF == 0, shown
        assert addr_ports == [0x05000B0A, 0x0100FF0A, 0x09000504], shown
        assert (l34timir >> 21) & 0x7F == target, shown
        after = run(NTUPLE_SEQ)
        assert after[target] == NTUPLE_FRAMES and sum(after) == NTUPLE_FRAMES, f"rule to queue {target}: {after}"
        spread = run(None)
        assert sum(spread) == NTUPLE_FRAMES and all(spread), f"other flows: {spread}"
        tp.cmd("flow flush 0")
        assert ntuple_filters(setup, port) == {}
        assert run(NTUPLE_SEQ) == before, "the flow is back on its RSS queue"
    finally:
        tp.cmd("flow flush 0")
        tp.cmd("set fwd io")
    TIMINGS[f"{setup.binding.name}: 5-tuple rule"] = time.monotonic() - t0


def test_quit_and_kernel_driver_back(setup: Setup, timed: None) -> None:
    vm = setup.vm
    rc, out = setup.testpmd.quit()
    assert rc == 0 and "Bye..." in out, out[-4000:]
    pcis = [p.pci for p in setup.ports]
    vm.sh(shlex.join(["dpdk-devbind.py", "-b", "ixgbe", *pcis]), timeout=180)
    devs = vm.wait_netdevs("ixgbe", len(setup.ports), timeout=180)
    addrs = vm.sh("; ".join(f"basename $(readlink /sys/class/net/{d}/device)" for d in devs)).split()
    by_pci = dict(zip(addrs, devs, strict=True))
    p0 = setup.ports[0]
    dev = by_pci[p0.pci]
    vm.wait_ipv4(dev, p0.wire.guest_ip)
    vm.wait_carrier(dev)
    assert vm.ethtool(dev).get("Speed") == "10000Mb/s"
    r = vm.run(f"ping -c 3 -i 0.2 -W 5 -I {dev} {p0.wire.host_ip}", timeout=60)
    assert r.ok and " 0% packet loss" in r.stdout, r.stdout
    # every part has its link back under the kernel driver (systemd-networkd
    # sets each ixgbe port up), the SFP+ port's module transmitter included
    for p in setup.ports[1:]:
        dev = by_pci[p.pci]
        vm.wait_carrier(dev)
        assert vm.ethtool(dev).get("Speed") == "10000Mb/s", f"{p.part}: {vm.ethtool(dev)}"


def test_no_device_warnings(setup: Setup, timed: None) -> None:
    vm = setup.vm
    assert vm.alive(), "QEMU is gone"
    records = vm.dmesg()
    devs = vm.netdevs("ixgbe")
    problems: list[KmsgRecord] = []
    for drv in ("ixgbe", setup.binding.driver):
        problems += device_problems(records, drv, [p.pci for p in setup.ports], devs)
    assert not problems, "kernel warnings about the ports:\n" + format_records(problems)
    assert not vm.qemu_problems(), f"QEMU reported problems:\n{vm.qemu_problems()}"


# ------------------------------------------------- parsers (no VM needed)
RECORDED_STARTUP = """EAL: Detected CPU lcores: 2
EAL: Selected IOVA mode 'PA'
EAL: Probe PCI driver: net_ixgbe (8086:1517) device: 0000:01:00.0 (socket -1)
eth_ixgbe_dev_init():  >>
eth_ixgbe_dev_init(): MAC: 2, PHY: 1
eth_ixgbe_dev_init(): port 0 vendorID=0x8086 deviceID=0x1517
EAL: Probe PCI driver: net_ixgbe (8086:1517) device: 0000:02:00.0 (socket -1)
eth_ixgbe_dev_init(): MAC: 2, PHY: 1
EAL: Probe PCI driver: net_ixgbe (8086:10fb) device: 0000:03:00.0 (socket -1)
eth_ixgbe_dev_init(): MAC: 2, PHY: 14, SFP+: 3
Configuring Port 0 (socket 0)
Port 0: 52:54:00:12:34:56
Configuring Port 1 (socket 0)
Port 1: 52:54:00:12:34:57
Checking link statuses...
Done
testpmd> """
RECORDED_INFO = """show port info all

********************* Infos for port 0  *********************
MAC address: 52:54:00:12:34:56
Device name: 0000:01:00.0
Driver name: net_ixgbe
Link status: up
Link speed: 10 Gbps
Link duplex: full-duplex

********************* Infos for port 1  *********************
MAC address: 52:54:00:12:34:57
Device name: 0000:02:00.0
Driver name: net_ixgbe
Link status: down
Link speed: None
"""
# (testpmd ends the xstats headers with a blank)
RECORDED_XSTATS = (
    "###### NIC extended statistics for port 0 \n"
    "rx_good_packets: 400\nrx_size_64_packets: 27\nrx_total_bytes: 293175\n"
    "###### NIC extended statistics for port 1 \n"
    "tx_good_packets: 400\ntx_q0_bytes: 293175\n"
)
RECORDED_STOP = """Telling cores to stop...
  ------- Forward Stats for RX Port= 0/Queue= 0 -> TX Port= 1/Queue= 0 -------
  RX-packets: 200            TX-packets: 200            TX-dropped: 0

  ------- Forward Stats for RX Port= 0/Queue= 1 -> TX Port= 1/Queue= 1 -------
  RX-packets: 198            TX-packets: 198            TX-dropped: 0

  ---------------------- Forward statistics for port 0  ----------------------
  RX-packets: 398            RX-dropped: 0             RX-total: 398
"""


def test_parsers_on_recorded_output() -> None:
    probed, macs = parse_probe(RECORDED_STARTUP)
    assert probed == {"0000:01:00.0": "1517", "0000:02:00.0": "1517", "0000:03:00.0": "10fb"}
    assert macs == {0: "52:54:00:12:34:56", 1: "52:54:00:12:34:57"}
    info = parse_port_info(RECORDED_INFO)
    assert info[0]["Link status"] == "up" and info[0]["Link speed"] == "10 Gbps"
    assert info[1]["Link status"] == "down" and info[1]["Device name"] == "0000:02:00.0"
    x = parse_xstats(RECORDED_XSTATS)
    assert x == {
        0: {"rx_good_packets": 400, "rx_size_64_packets": 27, "rx_total_bytes": 293175},
        1: {"tx_good_packets": 400, "tx_q0_bytes": 293175},
    }
    assert parse_stream_stats(RECORDED_STOP) == {(0, 0): 200, (0, 1): 198}
    assert parse_identified(RECORDED_STARTUP) == {
        "0000:01:00.0": (2, 1, None),
        "0000:02:00.0": (2, 1, None),
        "0000:03:00.0": (2, 14, 3),
    }
    assert frame_octets(2) == 64 + 64 + 97
