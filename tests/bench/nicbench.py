"""Compare the emulated 82599 (ixgbe) with QEMU's igb, e1000e and virtio-net.

One guest per NIC model, all on the same QEMU binary (copied once at the
start, so a rebuild during the run cannot mix builds), the same guest image,
vCPU count, memory and accelerator. Each guest has three ports of its model:

  port 0  -netdev user (slirp)       iperf3 to/from an iperf3 server on the host
  port 1  -netdev dgram  <-- wire --> port 2 (in network namespace "peer")
          (two unix datagram sockets: every frame one datagram, nothing else)

and, for the models with SR-IOV (ixgbe, igb) when a VF workload is chosen,
two more on a wire of their own, so the ports above stay as they are:

  port 3  PF with two VFs, VF 0 in netns "vf0", VF 1 in netns "vf1"
  port 3  -netdev dgram  <-- wire --> port 4 (in network namespace "vwire")

Workloads (each run `--reps` times, guests visited round-robin, the others
paused, so a change in the machine's background load hits every model alike):

  slirp-tcp-tx   TCP guest -> host over slirp
  slirp-tcp-rx   TCP host -> guest over slirp
  b2b-tcp        TCP port 1 -> port 2
  b2b-udp        UDP port 1 -> port 2, 18-byte payload (60-byte frames),
                 as fast as the sender can
  vf-vf-tcp      TCP VF 0 -> VF 1 of port 3, through its internal switch
  vf-wire-tcp    TCP VF 0 of port 3 -> port 4, over port 3's wire

Per sample: iperf3's figures, the device's interrupts (guest /proc/interrupts,
the IRQs of the PCI functions (ports, VFs) that carry the traffic), the
interface counters, the guest's own CPU time (its /proc/stat), the CPU time
of the QEMU process (host /proc/<pid>/stat and per thread), and on ixgbe
guests the receiving port's RSC counters (ethtool -S, read outside the
measured window).

Models: ixgbe, igb, e1000e, virtio-net (the default), and ixgbe-lro, the
same device with `ethtool -K <port> lro on` on every port (the driver leaves
LRO off at probe). A table of bulk TCP receive (slirp-tcp-rx, b2b-tcp) puts
every model against igb: Mbit/s, and the guest's CPU per MB received.

After a model's samples of b2b-tcp, one more run of it (--trace-seconds)
with QEMU's memory_region_ops_read/write trace on (QMP
trace-event-set-state, into the VM's -D log): the model's register reads and
writes per frame on the wire, and the accesses that would exit to QEMU under
KVM: reads, and writes outside the ranges the device registered as
coalesced MMIO (announced by its ixgbe_coalesced_zone trace, on from the
command line; igb and e1000e register none; tests/bench/mmiotrace.py).
virtio-net is not counted: its registers are spread over several regions
and its queue notifications go to an ioeventfd under KVM.

Run through scripts/bench.sh; `python3 tests/bench/nicbench.py --help`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import gzip
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchargs import check_ranges, choose, choose_models
from benchlib import (
    BenchError,
    CpuSnapshot,
    GuestSnapshot,
    Row,
    Summary,
    TaskStat,
    TrafficPath,
    cpu_delta,
    iperf3_figures,
    driver_facts,
    host_facts,
    parse_ethtool_kv,
    parse_irq_list,
    parse_proc_stat_cpu,
    parse_snapshot,
    parse_task_stat,
    ratio,
    ratio_table,
    reference_table,
    rsc_figures,
    sample_figures,
    sha256_file,
    summarize,
)
from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import GuestImage, build_dir, guest_image, has_device, qemu_binary
from ixgbe_testlib.iperf3 import HostIperf3Server
from ixgbe_testlib.netcheck import device_problems, format_records
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args, user_netdev
from ixgbe_testlib.vm import VM, choose_accel, load_driver
from mmiotrace import (
    ZONE_EVENT,
    MmioCounts,
    Zones,
    count_mmio,
    format_top,
    mmio_traced,
    nic_figures,
    parse_zones,
    top_registers,
)

log = logging.getLogger("bench")

SUBJECT = "ixgbe"


@dataclasses.dataclass(frozen=True)
class Model:
    name: str  # label in tables
    device: str  # -device
    driver: str  # Linux driver
    vf_driver: str = ""  # Linux driver of its SR-IOV VFs ("": the model has none)
    mmio_region: str = ""  # BAR 0's MemoryRegion in the memory_region_ops_* traces ("": not counted)
    bar_size: int = 128 * 1024  # BAR 0's size (its base is aligned to it)
    # `ethtool -K <port> ...` on every port of the guest at setup ("": the
    # driver's defaults): a variant of a device with another driver setting
    features: str = ""


MODELS = (
    Model("ixgbe", "ixgbe", "ixgbe", "ixgbevf", mmio_region="ixgbe-mmio"),
    Model("igb", "igb", "igb", "igbvf", mmio_region="igb-mmio"),
    Model("e1000e", "e1000e", "e1000e", mmio_region="e1000e-mmio"),
    Model("virtio-net", "virtio-net-pci", "virtio_net"),
    # the same device with the driver's LRO on: RSC (the driver leaves it
    # off at probe on the 6.1 and 6.12 kernels; GRO stays on)
    Model("ixgbe-lro", "ixgbe", "ixgbe", "ixgbevf", mmio_region="ixgbe-mmio", features="lro on"),
)
# what runs without --models: the four devices, not the variants
DEFAULT_MODELS = ("ixgbe", "igb", "e1000e", "virtio-net")
RECEIVE_REFERENCE = "igb"  # the model the receive table compares every other one with
TRACED_WORKLOAD = "b2b-tcp"  # the workload of the trace run: bulk TCP, both NICs send and receive
NOT_COUNTED = "not counted"  # the cell of a model whose register accesses are not counted


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    path: str  # "slirp", "b2b", "vf-vf" or "vf-wire"
    describe: str

    @property
    def needs_vfs(self) -> bool:
        return self.path in ("vf-vf", "vf-wire")


WORKLOADS = (
    Workload("slirp-tcp-tx", "slirp", "TCP guest->host through -netdev user (slirp)"),
    Workload("slirp-tcp-rx", "slirp", "TCP host->guest through -netdev user (slirp)"),
    Workload("b2b-tcp", "b2b", "TCP between two ports of the model wired back to back (-netdev dgram)"),
    Workload(
        "b2b-udp",
        "b2b",
        "UDP, 18-byte payload (60-byte frames), unthrottled, between the two wired ports",
    ),
    Workload(
        "vf-vf-tcp",
        "vf-vf",
        "TCP between two VFs of one PF (each in a netns of its own), through the PF's internal switch",
    ),
    Workload("vf-wire-tcp", "vf-wire", "TCP from a VF across its PF's wire (-netdev dgram) to another port"),
)


def model_workloads(model: Model, chosen: Sequence[Workload]) -> list[Workload]:
    """The chosen workloads a model can run: VF workloads only where it has VFs."""
    return [w for w in chosen if model.vf_driver or not w.needs_vfs]


GUEST_SLIRP_IP = "10.0.2.15"
HOST_VIA_SLIRP = "10.0.2.2"
WIRE = "198.51.100"  # TEST-NET-2: only ever on the emulated wire
VF_NET = "203.0.113"  # TEST-NET-3: the VFs' wire (port 3 <-> port 4); .1 port 4, .10 + n VF n
NUM_VFS = 2
PEER_PORT = 5201
SMP = 2
MEMORY_MB = 1024
UDP_PAYLOAD = 18  # + 8 UDP + 20 IPv4 + 14 Ethernet = 60-byte frames

# What the guest prints at both ends of a sample (benchlib.parse_snapshot):
# /proc/interrupts, the first line of /proc/stat (the guest's CPU time), and
# /proc/net/dev of the root namespace and of each namespace in $BENCH_NS
# ("name:pid ...", the pid of a process living there, an iperf3 server).
# Plain cat of /proc files: cheap, and the same for every model; the loop,
# read and echo are shell builtins.
SNAPSHOT_SH = (
    "snap() { echo @@interrupts; cat /proc/interrupts; "
    'echo @@stat; read -r bench_cpu < /proc/stat; echo "$bench_cpu"; '
    "echo '@@netdev root'; cat /proc/net/dev; "
    'for p in $BENCH_NS; do echo "@@netdev ${p%%:*}"; cat /proc/${p#*:}/net/dev; done; }'
)

# The namespaces a workload's snapshot reads /proc/net/dev of, besides the
# root namespace (the slirp rows keep reading "peer", as they always did).
SNAPSHOT_NAMESPACES = {
    "slirp": ("peer",),
    "b2b": ("peer",),
    "vf-vf": ("vf0", "vf1"),
    "vf-wire": ("vf0", "vwire"),
}


# `ethtool -K` short names -> the names `ethtool -k` prints
FEATURE_NAMES = {
    "lro": "large-receive-offload",
    "gro": "generic-receive-offload",
    "gso": "generic-segmentation-offload",
    "tso": "tcp-segmentation-offload",
    "rx": "rx-checksumming",
    "tx": "tx-checksumming",
}


def feature_settings(spec: str) -> dict[str, str]:
    """A Model's `features` ("lro on gro off") -> {ethtool -k name: "on"/"off"}."""
    words = spec.split()
    if len(words) % 2:
        raise BenchError(f"features {spec!r}: not name/value pairs")
    out: dict[str, str] = {}
    for name, value in zip(words[::2], words[1::2]):
        if name not in FEATURE_NAMES or value not in ("on", "off"):
            raise BenchError(f"features {spec!r}: unknown {name} {value}; names: {list(FEATURE_NAMES)}, on/off")
        out[FEATURE_NAMES[name]] = value
    return out


def features_missed(wanted: Mapping[str, str], ethtool_k: str) -> dict[str, str]:
    """The wanted features that `ethtool -k` output does not show as set
    ("on [fixed]" counts as on): name -> what it shows ("" when absent)."""
    shown = {k: v.split()[0] if v.split() else "" for k, v in parse_ethtool_kv(ethtool_k).items()}
    return {k: shown.get(k, "") for k, v in wanted.items() if shown.get(k) != v}


# ------------------------------------------------------------- host side
def find_qemu_pid(vm: VM) -> int:
    """The QEMU process of a VM: the one whose command line names the VM's
    private serial socket (unique per VM)."""
    needle = str(vm.sock_path("serial")).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(needle in a for a in argv):
            return int(entry.name)
    raise GuestError(f"cannot find the QEMU process of VM {vm.name}")


def cpu_snapshot(pid: int) -> CpuSnapshot:
    wall = time.monotonic()
    try:
        host_busy, _ = parse_proc_stat_cpu(Path("/proc/stat").read_text())
        total = parse_task_stat(Path(f"/proc/{pid}/stat").read_text()).ticks
        tasks: dict[int, TaskStat] = {}
        for t in Path(f"/proc/{pid}/task").iterdir():
            try:
                st = parse_task_stat((t / "stat").read_text())
            except OSError:
                continue  # the thread ended meanwhile
            tasks[st.tid] = st
    except OSError as exc:
        raise GuestError(f"QEMU process {pid} is gone: {exc}") from None
    return CpuSnapshot(pid, total, tasks, wall, host_busy)


def snapshot_qemu(src: Path, out_dir: Path) -> Path:
    """Copy the QEMU binary, so the whole run uses one build even if it is
    rebuilt meanwhile; check the copy runs."""
    dst = out_dir / "qemu-system-x86_64"
    tmp = out_dir / "qemu-system-x86_64.tmp"
    shutil.copy2(src, tmp)
    tmp.replace(dst)
    r = subprocess.run([str(dst), "-version"], capture_output=True, text=True, timeout=60, check=False)
    if r.returncode != 0:
        raise HarnessError(f"the copy of {src} does not run (was it being rebuilt?): {r.stderr.strip()}")
    return dst


# ------------------------------------------------------------ the guests
class NicGuest:
    """One guest of one NIC model, set up for every workload."""

    def __init__(
        self,
        model: Model,
        image: GuestImage,
        qemu: Path,
        accel: str,
        log_dir: Path,
        vm_name: str = "",
        with_vfs: bool = False,
    ) -> None:
        if with_vfs and not model.vf_driver:
            raise BenchError(f"{model.name} has no VFs")
        self.model = model
        self.with_vfs = with_vfs  # ports 3 and 4, and VFs on port 3
        self.vm_name = vm_name or model.name
        self.image = image
        self.qemu = qemu
        self.accel = accel
        self.log_dir = log_dir
        self.vm: VM | None = None
        self.pid = 0
        # roles: "slirp", "a", "b"; with VFs also "v" (their PF), "w" (the
        # far end of v's wire) and "vf0", "vf1"
        self.ports: dict[str, str] = {}  # role -> interface
        self.pci: dict[str, str] = {}  # role -> PCI address
        self.irqs: dict[str, list[int]] = {}  # role -> IRQs of its PCI function
        self.ns_pids: dict[str, int] = {}  # netns -> a process in it (its iperf3 server)
        self.boot_seconds = 0.0
        self.setup_seconds = 0.0
        self.facts: dict[str, Any] = {}  # driver settings that shape the figures (VFs': under "vf")
        self.vf_facts: dict[str, Any] = {}

    def _args(self, d: Path) -> list[str]:
        dev = self.model.device
        # the device's coalesced ranges are announced at realize: only the
        # command line can turn their trace event on in time
        args = (
            ["-trace", ZONE_EVENT]
            + nic_args(dev, "n0", 0, mac_address(0))
            + user_netdev("n0")
            + nic_args(dev, "w0", 1, mac_address(1))
            + nic_args(dev, "w1", 2, mac_address(2))
            + dgram_netdev("w0", d / "wa", d / "wb")
            + dgram_netdev("w1", d / "wb", d / "wa")
        )
        if self.with_vfs:
            # after the others: ports 0-2 keep their PCI addresses
            args += (
                nic_args(dev, "v0", 3, mac_address(3))
                + nic_args(dev, "v1", 4, mac_address(4))
                + dgram_netdev("v0", d / "va", d / "vb")
                + dgram_netdev("v1", d / "vb", d / "va")
            )
        return args

    @property
    def guest(self) -> VM:
        if self.vm is None:
            raise HarnessError(f"{self.model.name}: guest not started")
        return self.vm

    def start(self, host_port: int) -> None:
        t0 = time.monotonic()
        self.vm = VM(
            self.image,
            name=self.vm_name,
            log_dir=self.log_dir,
            smp=SMP,
            memory_mb=MEMORY_MB,
            args_factory=self._args,
            accel=self.accel,
            qemu=self.qemu,
        )
        vm = self.vm.start()
        self.boot_seconds = time.monotonic() - t0
        self.pid = find_qemu_pid(vm)
        load_driver(vm, self.model.driver)
        vm.wait_netdevs(self.model.driver, 5 if self.with_vfs else 3, timeout=120)
        self._map_ports()
        if self.model.features:
            self._set_features()
        p0, p1, p2 = self.ports["slirp"], self.ports["a"], self.ports["b"]
        vm.sh(
            " && ".join(
                [
                    f"ip addr add {GUEST_SLIRP_IP}/24 dev {p0}",
                    f"ip link set {p0} up",
                    "ip netns add peer",
                    f"ip link set {p2} netns peer",
                    "ip netns exec peer ip link set lo up",
                    f"ip addr add {WIRE}.1/24 dev {p1}",
                    f"ip link set {p1} up",
                    f"ip netns exec peer ip addr add {WIRE}.2/24 dev {p2}",
                    f"ip netns exec peer ip link set {p2} up",
                    "mkdir -p /tmp/bench",
                ]
            )
        )
        carriers = f"cat /sys/class/net/{p0}/carrier /sys/class/net/{p1}/carrier; " + (
            f"ip netns exec peer cat /sys/class/net/{p2}/carrier"
        )
        vm.wait_until(
            f"carrier on {p0}, {p1}, {p2}",
            lambda: vm.run(carriers).stdout.split() == ["1", "1", "1"],
            timeout=60,
        )
        vm.sh(f"ip netns exec peer iperf3 -s -D -p {PEER_PORT} --logfile /tmp/bench/iperf3-peer.log")
        vm.wait_until(
            "iperf3 server in netns peer",
            lambda: "LISTEN" in vm.run(f"ip netns exec peer ss -ltn 'sport = :{PEER_PORT}'").stdout,
            timeout=60,
        )
        self.ns_pids["peer"] = int(vm.sh("ip netns pids peer").split()[0])
        if self.with_vfs:
            self._setup_vfs()
        # not every driver answers every query (e1000e has no ethtool -l)
        self.facts = driver_facts(
            vm.sh(
                f"ethtool -i {p1}; echo @@; ethtool -c {p1} 2>&1; echo @@; ethtool -k {p1} 2>&1; echo @@; "
                f"ethtool -l {p1} 2>&1; true"
            )
        )
        if self.with_vfs:
            self.facts["vf"] = self.vf_facts
        self.irqs = self.read_irqs()
        vm.wait_until(
            f"ping {WIRE}.2 over the wire",
            lambda: vm.run(f"ping -c 1 -W 2 {WIRE}.2").ok,
            timeout=60,
            interval=1,
        )
        vm.wait_until(
            "ping of the host through slirp",
            lambda: vm.run(f"ping -c 1 -W 2 {HOST_VIA_SLIRP}").ok,
            timeout=60,
            interval=1,
        )
        # Warm-up, not measured: TCG translates each guest code path the
        # first time it runs; the samples should not pay for that. One short
        # TCP run covers the driver's transmit and receive paths and the
        # guest's TCP/UDP stack below the socket layer.
        # The VF workloads run the VF driver and the switch: one each.
        for w in WORKLOADS:
            if w.name == "b2b-tcp" or (self.with_vfs and w.needs_vfs):
                vm.sh(self.workload_cmd(w, 1, host_port) + " >/dev/null", timeout=120)
        self.setup_seconds = time.monotonic() - t0 - self.boot_seconds

    def _map_ports(self) -> None:
        """Interfaces and PCI functions by MAC address (port 0, 1, 2)."""
        out = self.guest.sh(
            "for d in /sys/class/net/*; do "
            'echo "${d##*/} $(cat $d/address) $(readlink -f $d/device 2>/dev/null)"; done'
        )
        roles = {mac_address(0): "slirp", mac_address(1): "a", mac_address(2): "b"}
        if self.with_vfs:
            roles |= {mac_address(3): "v", mac_address(4): "w"}
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 3 or parts[1] not in roles:
                continue
            bdfs = re.findall(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", parts[2])
            if not bdfs:
                raise GuestError(f"{self.model.name}: no PCI address for {parts[0]}: {line}")
            role = roles[parts[1]]
            self.ports[role] = parts[0]
            self.pci[role] = bdfs[-1]  # the NIC's own function (virtio: the parent of virtioN)
        missing = set(roles.values()) - set(self.ports)
        if missing:
            raise GuestError(f"{self.model.name}: ports {sorted(missing)} not found:\n{out}")

    def _set_features(self) -> None:
        """`ethtool -K <port> <features>` on every port of the model (all
        still in the root namespace, before any is up), checked with
        `ethtool -k`: a driver that refuses a setting fails the setup."""
        vm = self.guest
        wanted = feature_settings(self.model.features)
        for role, dev in sorted(self.ports.items()):
            vm.sh(f"ethtool -K {dev} {self.model.features}")
            missed = features_missed(wanted, vm.sh(f"ethtool -k {dev}"))
            if missed:
                raise GuestError(
                    f"{self.model.name}: `ethtool -K {dev} {self.model.features}` left port {role} with {missed}"
                )

    def _setup_vfs(self) -> None:
        """Port 4 into netns "vwire"; VFs on port 3, VF n into netns "vf<n>";
        an iperf3 server in each of those namespaces (VF 0's only gives the
        snapshots a process there)."""
        vm = self.guest
        pf, wire = self.ports["v"], self.ports["w"]
        r = vm.run(f"modprobe {self.model.vf_driver}")
        if not r.ok:
            raise GuestError(
                f"{self.model.name}: cannot load {self.model.vf_driver} (a guest image built before it was "
                f"added? run scripts/build-guest.sh): {r.stdout.strip()}"
            )
        vm.sh(
            " && ".join(
                [
                    "ip netns add vwire",
                    f"ip link set {wire} netns vwire",
                    "ip netns exec vwire ip link set lo up",
                    f"ip netns exec vwire ip addr add {VF_NET}.1/24 dev {wire}",
                    f"ip netns exec vwire ip link set {wire} up",
                    f"ip link set {pf} up",  # the VFs have link only while their PF is up
                ]
            )
        )
        vm.sh(f"echo {NUM_VFS} > /sys/class/net/{pf}/device/sriov_numvfs", timeout=180)

        def vf_netdevs() -> list[tuple[str, str]] | None:
            out = vm.run(
                f"for n in $(seq 0 {NUM_VFS - 1}); do b=$(basename $(readlink /sys/class/net/{pf}/device/virtfn$n)); "
                'echo "$b $(ls /sys/bus/pci/devices/$b/net 2>/dev/null)"; done'
            ).stdout
            found = [tuple(ln.split()) for ln in out.splitlines() if len(ln.split()) == 2]
            return [(b, n) for b, n in found] if len(found) == NUM_VFS else None

        vfs = vm.wait_until(f"{NUM_VFS} {self.model.vf_driver} interfaces", vf_netdevs, timeout=120)
        for n, (bdf, dev) in enumerate(vfs):
            ns = f"vf{n}"
            self.ports[ns], self.pci[ns] = dev, bdf
            vm.sh(
                " && ".join(
                    [
                        f"ip netns add {ns}",
                        f"ip link set {dev} netns {ns}",
                        f"ip netns exec {ns} ip link set lo up",
                        f"ip netns exec {ns} ip addr add {VF_NET}.{10 + n}/24 dev {dev}",
                        f"ip netns exec {ns} ip link set {dev} up",
                    ]
                )
            )
        where = [("vwire", wire)] + [(f"vf{n}", dev) for n, (_, dev) in enumerate(vfs)]
        carriers = "; ".join(f"ip netns exec {ns} cat /sys/class/net/{dev}/carrier" for ns, dev in where)
        vm.wait_until(
            "carrier on " + ", ".join(f"{dev} (netns {ns})" for ns, dev in where),
            lambda: vm.run(carriers).stdout.split() == ["1"] * len(where),
            timeout=90,
        )
        for ns, _ in where:
            vm.sh(f"ip netns exec {ns} iperf3 -s -D -p {PEER_PORT} --logfile /tmp/bench/iperf3-{ns}.log")
            listening = f"ip netns exec {ns} ss -ltn 'sport = :{PEER_PORT}'"
            vm.wait_until(
                f"iperf3 server in netns {ns}",
                lambda: "LISTEN" in vm.run(listening).stdout,
                timeout=60,
            )
            self.ns_pids[ns] = int(vm.sh(f"ip netns pids {ns}").split()[0])
        r = vm.run(
            "ip netns exec vf0 ethtool -i {d}; echo @@; ip netns exec vf0 ethtool -c {d} 2>&1; echo @@; "
            "ip netns exec vf0 ethtool -k {d} 2>&1; echo @@; ip netns exec vf0 ethtool -l {d} 2>&1; true".format(
                d=self.ports["vf0"]
            )
        )
        self.vf_facts = driver_facts(r.stdout)
        for dst, what in ((f"{VF_NET}.11", "VF 1 through the internal switch"), (f"{VF_NET}.1", "the wire")):
            ping = f"ip netns exec vf0 ping -c 1 -W 2 {dst}"
            vm.wait_until(
                f"ping from VF 0 to {what}",
                lambda: vm.run(ping).ok,
                timeout=60,
                interval=1,
            )

    IRQS_SH = (
        'for b in {pci}; do d=/sys/bus/pci/devices/$b; echo "@@irqs $b"; '
        'if [ -n "$(ls $d/msi_irqs 2>/dev/null)" ]; then ls $d/msi_irqs; else cat $d/irq; fi; done'
    )

    def _irqs_cmd(self) -> str:
        return self.IRQS_SH.format(pci=" ".join(self.pci.values()))

    def _parse_irqs(self, text: str) -> dict[str, list[int]]:
        by_pci: dict[str, list[int]] = {}
        for chunk in text.split("@@irqs ")[1:]:
            bdf, _, rest = chunk.partition("\n")
            by_pci[bdf.strip()] = parse_irq_list(rest)
        try:
            return {role: by_pci[bdf] for role, bdf in self.pci.items()}
        except KeyError as exc:
            raise GuestError(f"{self.model.name}: no IRQ list for {exc}:\n{text}") from None

    def read_irqs(self) -> dict[str, list[int]]:
        """The IRQs of each port's PCI function (MSI-X vectors, else INTx)."""
        return self._parse_irqs(self.guest.sh(self._irqs_cmd()))

    # the (sender, receiver) roles of each path: their ports' counters give
    # the frames, their PCI functions' IRQs the interrupts (the VFs' PF "v"
    # passes the frames but its driver sees none of them)
    PATH_ROLES = {"slirp": ("slirp",), "b2b": ("a", "b"), "vf-vf": ("vf0", "vf1"), "vf-wire": ("vf0", "w")}

    def traffic_path(self, w: Workload) -> TrafficPath:
        roles = self.PATH_ROLES[w.path]
        return TrafficPath(
            w.path, tuple(self.ports[r] for r in roles), tuple(i for r in roles for i in self.irqs[r])
        )

    # the port that receives a workload's data, where the driver's RSC
    # counters are read (VF to VF: a VF, which has no RSC)
    RECEIVER = {"slirp": "slirp", "b2b": "b", "vf-wire": "w"}
    NETNS_OF = {"b": "peer", "w": "vwire"}  # roles whose port lives in a namespace

    @property
    def counts_rsc(self) -> bool:
        """Whether each sample reads the driver's RSC counters (ixgbe)."""
        return self.model.driver == "ixgbe"

    def rsc_cmd(self, w: Workload, dest: str) -> str:
        """The guest command that saves the receiving port's RSC counters
        (`ethtool -S`) to `dest`, or an empty `dest` where the path has no
        such port."""
        role = self.RECEIVER.get(w.path)
        if role is None:
            return f": > {dest}"
        ns = self.NETNS_OF.get(role)
        prefix = f"ip netns exec {ns} " if ns else ""
        return f"{prefix}ethtool -S {self.ports[role]} | grep hw_rsc_ > {dest}"

    def snapshot_ns(self, w: Workload) -> str:
        """$BENCH_NS of a workload's snapshots: "name:pid" per namespace."""
        return " ".join(f"{ns}:{self.ns_pids[ns]}" for ns in SNAPSHOT_NAMESPACES[w.path])

    def workload_cmd(self, w: Workload, seconds: int, host_port: int) -> str:
        base = f"iperf3 -i 0 -J -t {int(seconds)}"
        if w.name == "slirp-tcp-tx":
            return f"{base} -c {HOST_VIA_SLIRP} -p {host_port}"
        if w.name == "slirp-tcp-rx":
            return f"{base} -c {HOST_VIA_SLIRP} -p {host_port} -R"
        if w.name == "b2b-tcp":
            return f"{base} -c {WIRE}.2 -p {PEER_PORT}"
        if w.name == "b2b-udp":
            return f"{base} -c {WIRE}.2 -p {PEER_PORT} -u -b 0 -l {UDP_PAYLOAD}"
        if w.name == "vf-vf-tcp":
            return f"ip netns exec vf0 {base} -c {VF_NET}.11 -p {PEER_PORT}"
        if w.name == "vf-wire-tcp":
            return f"ip netns exec vf0 {base} -c {VF_NET}.1 -p {PEER_PORT}"
        raise BenchError(f"unknown workload {w.name}")

    def pause(self) -> None:
        self.guest.qmp("stop")

    def resume(self) -> None:
        self.guest.qmp("cont")

    def measure(self, w: Workload, seconds: int, host_port: int, tag: str) -> tuple[CpuSnapshot, CpuSnapshot]:
        """Run one workload between two guest snapshots; the host reads the
        QEMU process's CPU time just before and after. The outputs stay in
        the guest (fetched later, outside every measured window)."""
        vm = self.guest
        f = f"/tmp/bench/{tag}"
        cmd = (
            f"BENCH_NS='{self.snapshot_ns(w)}'; {SNAPSHOT_SH}; "
            + f"snap > {f}.before; {self.workload_cmd(w, seconds, host_port)} > {f}.out 2>&1; "
            + f"echo $? > {f}.rc; snap > {f}.after; echo measured"
        )
        if self.counts_rsc:  # outside the measured window, on every ixgbe guest alike
            vm.run(self.rsc_cmd(w, f"{f}.rsc0"))
        c0 = cpu_snapshot(self.pid)
        r = vm.run(cmd, timeout=seconds + 120)
        c1 = cpu_snapshot(self.pid)
        if not r.ok or "measured" not in r.stdout:
            raise GuestError(f"{self.model.name} {w.name}: guest command failed (rc={r.rc}):\n{r.stdout}")
        if self.counts_rsc:
            vm.run(self.rsc_cmd(w, f"{f}.rsc1"))
        return c0, c1

    def trace_run(self, w: Workload, seconds: int, host_port: int) -> tuple[Sample, dict[str, Any]]:
        """One more run of a workload with the MMIO trace on: its sample
        (rep -1) and its register accesses per frame (trace_figures)."""
        with mmio_traced(self.guest) as trace:
            cpus = self.measure(w, seconds, host_port, "trace")
        s = evaluate(self, w, -1, cpus, self.fetch(["trace"])["trace"])
        if not s.ok:
            raise BenchError(s.error)
        head, text = trace.read()
        counts = count_mmio(text, {self.model.mmio_region: self.model.bar_size})
        return s, trace_figures(counts, parse_zones(head), self.model, s.figures)

    @property
    def file_kinds(self) -> tuple[str, ...]:
        """The files one measurement leaves in the guest, by suffix."""
        return ("before", "out", "rc", "after") + (("rsc0", "rsc1") if self.counts_rsc else ())

    def fetch(self, tags: Sequence[str]) -> dict[str, dict[str, str]]:
        """The files the measurements left in the guest (then deleted); also
        checks that no port's IRQs changed since setup (a driver reset could
        move them, and the counts would then be of other IRQs)."""
        files = [f"/tmp/bench/{t}.{s}" for t in tags for s in self.file_kinds]
        # gzip: the console is slow, and the text compresses about tenfold
        r = self.guest.run(
            "{ for f in "
            + " ".join(files)
            + '; do echo "@@@file $f"; cat "$f"; done; echo @@@irqs; '
            + self._irqs_cmd()
            + "; } | gzip -c && rm -f "
            + " ".join(files),
            timeout=120,
            check=True,
        )
        try:
            out = gzip.decompress(r.raw).decode()
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise GuestError(f"{self.model.name}: the guest's results do not decompress: {exc}") from None
        out, _, irq_text = out.partition("@@@irqs\n")
        now = self._parse_irqs(irq_text)
        if now != self.irqs:
            raise GuestError(f"{self.model.name}: port IRQs changed from {self.irqs} to {now}")
        got: dict[str, dict[str, str]] = {t: {} for t in tags}
        for chunk in out.split("@@@file ")[1:]:
            name, _, content = chunk.partition("\n")
            m = re.fullmatch(r"/tmp/bench/(.+)\.(" + "|".join(self.file_kinds) + ")", name.strip())
            if not m or m.group(1) not in got:
                raise GuestError(f"unexpected file in the guest's answer: {name!r}")
            got[m.group(1)][m.group(2)] = content
        return got

    def kernel_log_problems(self) -> list[str]:
        """Warning-or-worse kernel log records about this guest's NICs (a Tx
        hang or a reset would make its figures meaningless)."""
        records = self.guest.dmesg()
        pci, ports = list(self.pci.values()), list(self.ports.values())
        bad = device_problems(records, self.model.driver, pci, ports)
        if self.with_vfs:
            bad += [r for r in device_problems(records, self.model.vf_driver, pci, ports) if r not in bad]
            bad.sort(key=lambda r: r.timestamp)
        return format_records(bad).splitlines() if bad else []

    def shutdown(self) -> None:
        if self.vm is not None:
            self.vm.shutdown()


# ------------------------------------------------------------------ run
@dataclasses.dataclass
class Sample:
    model: str
    workload: str
    rep: int
    ok: bool
    error: str = ""
    figures: dict[str, float] = dataclasses.field(default_factory=dict)
    raw: dict[str, Any] = dataclasses.field(default_factory=dict)


def snapshot_raw(s: GuestSnapshot, tb: NicGuest) -> dict[str, Any]:
    return {
        "port_interrupts": {role: s.irq_total(irqs) for role, irqs in tb.irqs.items()},
        "links": {k: dataclasses.asdict(v) for k, v in s.links.items() if k in tb.ports.values()},
        "guest_cpu_ticks": dataclasses.asdict(s.cpu) if s.cpu is not None else None,
    }


def evaluate(
    tb: NicGuest, w: Workload, rep: int, cpus: tuple[CpuSnapshot, CpuSnapshot], files: dict[str, str]
) -> Sample:
    s = Sample(tb.model.name, w.name, rep, ok=False)
    try:
        rc = files.get("rc", "").strip()
        try:
            report = json.loads(files.get("out", ""))
        except ValueError:
            raise BenchError(f"iperf3 (rc={rc}) gave no JSON:\n{files.get('out', '')[:2000]}") from None
        if rc != "0":
            raise BenchError(f"iperf3 exited with {rc}: {report.get('error', '')}")
        before, after = parse_snapshot(files["before"]), parse_snapshot(files["after"])
        cpu = cpu_delta(cpus[0], cpus[1], os.sysconf("SC_CLK_TCK"))
        iperf = iperf3_figures(report)
        s.figures = sample_figures(tb.traffic_path(w), before, after, cpu, iperf)
        s.raw = {
            "cpu_seconds": cpu,
            "before": snapshot_raw(before, tb),
            "after": snapshot_raw(after, tb),
            "iperf3_end": report.get("end", {}),
        }
        rsc0, rsc1 = files.get("rsc0", "").strip(), files.get("rsc1", "").strip()
        if rsc0 or rsc1:
            s.figures.update(rsc_figures(rsc0, rsc1))
            s.raw["rsc_counters"] = {"before": parse_ethtool_kv(rsc0), "after": parse_ethtool_kv(rsc1)}
        s.ok = True
    except (BenchError, KeyError) as exc:
        s.error = f"{type(exc).__name__}: {exc}"
    return s


# ---------------------------------------------------------------- tables
@dataclasses.dataclass(frozen=True)
class Metric:
    workload: str
    figure: str
    label: str
    scale: float = 1.0


TABLES: tuple[tuple[str, str, tuple[Metric, ...]], ...] = (
    (
        "Throughput",
        "higher is better",
        (
            Metric("slirp-tcp-tx", "mbps", "slirp TCP guest->host, Mbit/s"),
            Metric("slirp-tcp-rx", "mbps", "slirp TCP host->guest, Mbit/s"),
            Metric("b2b-tcp", "mbps", "b2b TCP port->port, Mbit/s"),
            Metric("b2b-tcp", "frames_per_s", "b2b TCP, kframes/s on the wire", 1e-3),
            Metric("b2b-udp", "sent_pps", "b2b UDP 60B, kpps sent", 1e-3),
            Metric("b2b-udp", "delivered_pps", "b2b UDP 60B, kpps delivered", 1e-3),
            Metric("vf-vf-tcp", "mbps", "VF->VF TCP (internal switch), Mbit/s"),
            Metric("vf-vf-tcp", "frames_per_s", "VF->VF TCP, kframes/s through the switch", 1e-3),
            Metric("vf-wire-tcp", "mbps", "VF->wire TCP, Mbit/s"),
            Metric("vf-wire-tcp", "frames_per_s", "VF->wire TCP, kframes/s on the wire", 1e-3),
        ),
    ),
    (
        "Interrupts per second (device IRQs in the guest)",
        "moderation at work: fewer per second at equal load",
        tuple(Metric(w.name, "irq_per_s", f"{w.name}, IRQ/s") for w in WORKLOADS),
    ),
    (
        "Interrupts per unit of work",
        "lower is better",
        (
            Metric("b2b-tcp", "irq_per_frame", "b2b TCP, IRQ/frame"),
            Metric("b2b-udp", "irq_per_frame", "b2b UDP 60B, IRQ/frame"),
            Metric("vf-vf-tcp", "irq_per_frame", "VF->VF TCP, IRQ/frame"),
            Metric("vf-wire-tcp", "irq_per_frame", "VF->wire TCP, IRQ/frame"),
            Metric("slirp-tcp-tx", "irq_per_mb", "slirp TCP guest->host, IRQ/MB"),
            Metric("slirp-tcp-rx", "irq_per_mb", "slirp TCP host->guest, IRQ/MB"),
        ),
    ),
    (
        "QEMU host CPU time per unit of work (utime+stime of the QEMU process)",
        "lower is better; 'main loop' = QEMU's main thread only",
        (
            Metric("b2b-tcp", "cpu_us_per_frame", "b2b TCP, us/frame"),
            Metric("b2b-tcp", "cpu_main_us_per_frame", "b2b TCP, main loop us/frame"),
            Metric("b2b-udp", "cpu_us_per_frame", "b2b UDP 60B, us/frame"),
            Metric("b2b-udp", "cpu_main_us_per_frame", "b2b UDP 60B, main loop us/frame"),
            Metric("vf-vf-tcp", "cpu_us_per_frame", "VF->VF TCP, us/frame"),
            Metric("vf-vf-tcp", "cpu_main_us_per_frame", "VF->VF TCP, main loop us/frame"),
            Metric("vf-wire-tcp", "cpu_us_per_frame", "VF->wire TCP, us/frame"),
            Metric("vf-wire-tcp", "cpu_main_us_per_frame", "VF->wire TCP, main loop us/frame"),
            Metric("b2b-tcp", "cpu_ms_per_mb", "b2b TCP, ms/MB"),
            Metric("slirp-tcp-tx", "cpu_ms_per_mb", "slirp TCP guest->host, ms/MB"),
            Metric("slirp-tcp-rx", "cpu_ms_per_mb", "slirp TCP host->guest, ms/MB"),
        ),
    ),
    (
        "QEMU process CPU utilisation during the sample, % of one host CPU",
        "context: near 200% means both host CPUs were busy with this guest",
        tuple(Metric(w.name, "cpu_pct", f"{w.name}, %") for w in WORKLOADS),
    ),
)


# Bulk TCP into the guest, every model against RECEIVE_REFERENCE: how fast,
# and what the guest's CPUs spent per MB received, seen from the host (the
# vCPU threads' CPU time: what running the guest cost, whatever else the
# host ran) and from the guest (its /proc/stat; time the host took a vCPU
# away counts as busy when the vCPU was busy).
RECEIVE_TABLE = (
    "Bulk TCP receive, every model against " + RECEIVE_REFERENCE,
    "Mbit/s: higher is better; ms/MB of payload received: lower is better",
    (
        Metric("slirp-tcp-rx", "mbps", "slirp TCP host->guest, Mbit/s"),
        Metric("slirp-tcp-rx", "cpu_vcpu_ms_per_mb", "slirp host->guest, vCPU threads ms/MB"),
        Metric("slirp-tcp-rx", "guest_busy_ms_per_mb", "slirp host->guest, guest busy ms/MB"),
        Metric("slirp-tcp-rx", "guest_softirq_ms_per_mb", "slirp host->guest, guest softirq ms/MB"),
        Metric("slirp-tcp-rx", "cpu_ms_per_mb", "slirp host->guest, QEMU ms/MB"),
        Metric("slirp-tcp-rx", "retransmits", "slirp host->guest, retransmits/sample"),
        Metric("b2b-tcp", "mbps", "b2b TCP port->port, Mbit/s"),
        Metric("b2b-tcp", "cpu_vcpu_ms_per_mb", "b2b TCP, vCPU threads ms/MB"),
        Metric("b2b-tcp", "guest_busy_ms_per_mb", "b2b TCP, guest busy ms/MB"),
        Metric("b2b-tcp", "guest_softirq_ms_per_mb", "b2b TCP, guest softirq ms/MB"),
        Metric("b2b-tcp", "cpu_ms_per_mb", "b2b TCP, QEMU ms/MB"),
        Metric("b2b-tcp", "retransmits", "b2b TCP, retransmits/sample"),
    ),
)


def render_receive_table(
    summ: dict[str, dict[str, dict[str, Summary]]],
    models: Sequence[str],
    workloads: Sequence[str] | None = None,
) -> str:
    """RECEIVE_TABLE with the rows of the chosen workloads; "" when the
    reference model or every one of its workloads is left out."""
    title, note, metrics = RECEIVE_TABLE
    if RECEIVE_REFERENCE not in models:
        return ""
    rows = []
    for m in metrics:
        if workloads is not None and m.workload not in workloads:
            continue
        per_model = summ.get(m.workload, {}).get(m.figure, {})
        rows.append(Row(m.label, {model: per_model.get(model) for model in models}))
    if not rows:
        return ""
    return reference_table(f"== {title} ({note})", rows, models, RECEIVE_REFERENCE)


def receive_ratios(summ: dict[str, dict[str, dict[str, Summary]]], models: Sequence[str]) -> dict[str, Any]:
    """workload.figure -> {"<model>/<reference>": ratio or None} of RECEIVE_TABLE."""
    out: dict[str, Any] = {}
    if RECEIVE_REFERENCE not in models:
        return out
    for m in RECEIVE_TABLE[2]:
        per_model = summ.get(m.workload, {}).get(m.figure, {})
        ref = per_model.get(RECEIVE_REFERENCE)
        out[f"{m.workload}.{m.figure}"] = {
            f"{o}/{RECEIVE_REFERENCE}": (
                ratio(per_model[o].median, ref.median) if ref is not None and o in per_model else None
            )
            for o in models
            if o != RECEIVE_REFERENCE
        }
    return out


def rsc_notes(samples: Sequence[Sample], models: Sequence[str]) -> list[str]:
    """One line per model whose driver reports RSC counters: per workload,
    the aggregates per sample and the segments per aggregate (medians)."""
    out = []
    for model in models:
        cells = []
        for w in WORKLOADS:
            mine = [s for s in samples if s.ok and s.model == model and s.workload == w.name]
            aggs = [s.figures["rsc_aggregates"] for s in mine if "rsc_aggregates" in s.figures]
            if not aggs:
                continue
            per = [s.figures["rsc_segments_per_aggregate"] for s in mine if "rsc_segments_per_aggregate" in s.figures]
            cells.append(
                f"{w.name} {summarize(aggs).median:.0f}"
                + (f" x {summarize(per).median:.2f}" if per else "")
            )
        if cells:
            out.append(
                f"{model}: RSC aggregates of the receiving port per sample x segments per aggregate (median): "
                + ", ".join(cells)
            )
    return out


def summaries(samples: Sequence[Sample]) -> dict[str, dict[str, dict[str, Summary]]]:
    """workload -> figure -> model -> Summary over the good samples."""
    vals: dict[str, dict[str, dict[str, list[float]]]] = {}
    for s in samples:
        if not s.ok:
            continue
        for fig, v in s.figures.items():
            vals.setdefault(s.workload, {}).setdefault(fig, {}).setdefault(s.model, []).append(v)
    return {
        w: {f: {m: summarize(v) for m, v in per_model.items()} for f, per_model in figs.items()}
        for w, figs in vals.items()
    }


NO_VFS = "no VFs"  # the cell of a model without SR-IOV in a VF row


def lacks_vfs(model: str, workload: str) -> bool:
    """The model cannot run the workload: it needs VFs and the model has none."""
    w = next((x for x in WORKLOADS if x.name == workload), None)
    m = next((x for x in MODELS if x.name == model), None)
    return w is not None and m is not None and w.needs_vfs and not m.vf_driver


def render_tables(
    summ: dict[str, dict[str, dict[str, Summary]]],
    models: Sequence[str],
    workloads: Sequence[str] | None = None,
) -> str:
    """The tables, with rows of the given workloads only (default: all); a
    model without VFs shows NO_VFS in the VF rows (and in their ratios)."""
    blocks = []
    for title, note, metrics in TABLES:
        rows = []
        for m in metrics:
            if workloads is not None and m.workload not in workloads:
                continue
            per_model = summ.get(m.workload, {}).get(m.figure, {})
            values: dict[str, Summary | None] = {}
            for model in models:
                sm = per_model.get(model)
                values[model] = (
                    None
                    if sm is None
                    else Summary(sm.n, sm.median * m.scale, sm.low * m.scale, sm.high * m.scale)
                )
            absent = {model: NO_VFS for model in models if lacks_vfs(model, m.workload)}
            rows.append(Row(m.label, values, absent))
        if rows:
            blocks.append(ratio_table(f"== {title} ({note})", rows, models, SUBJECT))
    return "\n\n".join(blocks)


def ratios(summ: dict[str, dict[str, dict[str, Summary]]], models: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, _, metrics in TABLES:
        for m in metrics:
            per_model = summ.get(m.workload, {}).get(m.figure, {})
            mine = per_model.get(SUBJECT)
            key = f"{m.workload}.{m.figure}"
            # a model without VFs has no ratio in a VF row (not even None)
            out[key] = {
                f"{SUBJECT}/{o}": (
                    ratio(mine.median, per_model[o].median) if mine is not None and o in per_model else None
                )
                for o in models
                if o != SUBJECT and not lacks_vfs(o, m.workload)
            }
    return out


# ------------------------------------------------------- the trace run
def trace_figures(counts: MmioCounts, zones: Zones, model: Model, figures: Mapping[str, float]) -> dict[str, Any]:
    """Per frame on the wire (`figures`: the trace run's sample_figures;
    each frame is sent by one of the two ports and received by the other):
    the model's register reads, writes and accesses that would exit under
    KVM (mmiotrace.nic_figures), its interrupts, and its busiest registers."""
    frames = int(figures.get("frames", 0))
    if frames <= 0:
        raise BenchError("no frames on the wire in the trace run")
    reg = model.mmio_region
    out: dict[str, Any] = {"frames": frames, **nic_figures(counts, zones, reg, frames)}
    for fig in ("irq_per_frame", "frames_per_s", "mbps"):
        if fig in figures:
            out[fig] = figures[fig]
    out["top_registers"] = top_registers(counts, zones, frames, [reg])
    out["accesses"] = counts.by_region.get(reg, {"read": 0, "write": 0})
    out["coalesced_zones"] = [[base, size] for base, size in zones.get(reg, ())]
    return out


TRACE_METRICS = (
    Metric(TRACED_WORKLOAD, "nic_reads_per_pkt", "NIC register reads/frame"),
    Metric(TRACED_WORKLOAD, "nic_writes_per_pkt", "NIC register writes/frame"),
    Metric(TRACED_WORKLOAD, "nic_exits_per_pkt", "accesses that would exit under KVM/frame"),
    Metric(TRACED_WORKLOAD, "irq_per_frame", "IRQ/frame"),
    Metric(TRACED_WORKLOAD, "frames_per_s", "kframes/s with the trace on", 1e-3),
)


def render_trace_table(traces: Mapping[str, Mapping[str, Any]], models: Sequence[str]) -> str:
    """The trace run's table (one run per model): NOT_COUNTED for the
    models without a counted register region."""
    counted = {m.name for m in MODELS if m.mmio_region}
    rows = []
    for m in TRACE_METRICS:
        values: dict[str, Summary | None] = {}
        for model in models:
            v = traces.get(model, {}).get(m.figure)
            values[model] = None if v is None else summarize([float(v) * m.scale])
        rows.append(Row(m.label, values, {model: NOT_COUNTED for model in models if model not in counted}))
    title = (
        f"== Register accesses per frame, {TRACED_WORKLOAD}, one run with QEMU's memory_region_ops_* trace on "
        "(lower is better; slower: only the counts matter)"
    )
    return ratio_table(title, rows, models, SUBJECT)


def trace_ratios(traces: Mapping[str, Mapping[str, Any]], models: Sequence[str]) -> dict[str, Any]:
    """figure -> {"ixgbe/<other>": ratio or None} of the trace run."""
    mine = traces.get(SUBJECT, {})
    out: dict[str, Any] = {}
    for m in TRACE_METRICS:
        out[m.figure] = {}
        for o in models:
            if o == SUBJECT:
                continue
            a, b = mine.get(m.figure), traces.get(o, {}).get(m.figure)
            out[m.figure][f"{SUBJECT}/{o}"] = ratio(float(a), float(b)) if a is not None and b is not None else None
    return out


def trace_notes(traces: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per traced model: its busiest registers per frame."""
    regions = {m.name: m.mmio_region for m in MODELS}
    return [
        f"{model}: busiest registers in the trace run, per frame: "
        + format_top(t["top_registers"], regions.get(model, ""))
        for model, t in traces.items()
    ]


def context_notes(samples: Sequence[Sample], models: Sequence[str]) -> list[str]:
    """Lines that help judge the tables: the host's load from other
    processes during the samples, and frames the receiving ports dropped."""
    out = []
    for fig, what, fmt in (
        ("host_other_cpu_pct", "CPU used by other host processes during the samples, % of one CPU", "{:.0f}"),
        ("rx_dropped", "frames dropped by the guest's receiving ports, per sample", "{:.0f}"),
    ):
        cells = []
        for m in models:
            vals = [s.figures[fig] for s in samples if s.ok and s.model == m and fig in s.figures]
            if vals:
                sm = summarize(vals)
                cells.append(f"{m} {fmt.format(sm.median)} (max {fmt.format(sm.high)})")
        if cells:
            out.append(f"{what} (median): " + ", ".join(cells))
    return out


def facts_lines(facts: dict[str, dict[str, Any]]) -> list[str]:
    """One line per model: the driver settings that shape its figures."""
    out = []
    for model, f in facts.items():
        if not f:
            continue
        out.append(_facts_line(model, f))
        if f.get("vf"):
            out.append(_facts_line(f"{model} VF", f["vf"]))
    return out


def _facts_line(model: str, f: dict[str, Any]) -> str:
    co = ", ".join(f"{k} {v}" for k, v in f.get("coalesce", {}).items()) or "none reported"
    off = f.get("offloads", {})
    tso = off.get("tcp-segmentation-offload", "?").split(" ")[0]
    csum = off.get("tx-checksumming", "?").split(" ")[0]
    lro = off.get("large-receive-offload", "?").split(" ")[0]
    gro = off.get("generic-receive-offload", "?").split(" ")[0]
    q = f.get("combined_queues", "")
    queues = f"{q} queue pair(s)" if q else "queue count not reported"
    return (
        f"{model}: driver {f.get('driver', '?')} {f.get('version', '')}, "
        f"{queues}, coalescing: {co}; TSO {tso}, tx checksum {csum}, LRO {lro}, GRO {gro}"
    )


# ------------------------------------------------------------------ main
def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="nicbench",
        description="Benchmark the emulated ixgbe against QEMU's igb, e1000e and virtio-net "
        "(same QEMU build, same guest, same run).",
    )
    p.add_argument("--kernel", default="6.1", choices=("6.1", "6.12"), help="guest kernel (default 6.1)")
    p.add_argument("--quick", action="store_true", help="fewer repetitions, shorter runs (< 5 min)")
    p.add_argument("--reps", type=int, help="samples per workload and model (default 5, quick 3)")
    p.add_argument("--seconds", type=int, help="length of each sample in s (default 5, quick 2)")
    p.add_argument(
        "--models",
        default=",".join(DEFAULT_MODELS),
        help="comma-separated subset of: "
        + ", ".join(m.name for m in MODELS)
        + " (ixgbe always included; default: "
        + ", ".join(DEFAULT_MODELS)
        + "); ixgbe-lro is ixgbe with `ethtool -K <port> lro on` on every port",
    )
    p.add_argument(
        "--workloads",
        default=",".join(w.name for w in WORKLOADS),
        help="comma-separated subset of: "
        + ", ".join(w.name for w in WORKLOADS)
        + " (the vf-* ones run on the models with VFs: ixgbe, igb)",
    )
    p.add_argument(
        "--trace-seconds",
        type=int,
        help=f"length of the extra {TRACED_WORKLOAD} run per model with QEMU's MMIO trace on (register "
        "accesses per frame, and those that would exit under KVM); 0 for none (default 3, quick 2)",
    )
    p.add_argument("--out-dir", type=Path, help="where results go (default $BUILD_DIR/bench)")
    p.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)  # validate, then exit
    args = p.parse_args(argv)
    args.reps = args.reps if args.reps is not None else (3 if args.quick else 5)
    args.seconds = args.seconds if args.seconds is not None else (2 if args.quick else 5)
    args.trace_seconds = args.trace_seconds if args.trace_seconds is not None else (2 if args.quick else 3)
    check_ranges(p, args, ("reps", 1, 50), ("seconds", 1, 120), ("trace_seconds", 0, 60))
    known = {m.name: m for m in MODELS}
    args.models = [known[n] for n in choose_models(p, args.models, list(known), SUBJECT)]
    chosen_w = choose(p, args.workloads, [w.name for w in WORKLOADS], "workload")
    if not chosen_w:
        p.error("--workloads names no workload")
    # in the table's order, whatever the order given
    args.workloads = [w for w in WORKLOADS if w.name in chosen_w]
    return args


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def trace_runs(
    beds: Sequence[NicGuest],
    per_model: Mapping[str, Sequence[Workload]],
    failures: dict[str, str],
    seconds: int,
    host_port: int,
) -> tuple[dict[str, dict[str, Any]], list[Sample]]:
    """The trace run of every model that ran TRACED_WORKLOAD and has a
    counted register region: figures per model, and the runs' samples. A
    failed trace run is a failure of its model (`failures`)."""
    traces: dict[str, dict[str, Any]] = {}
    samples: list[Sample] = []
    for tb in beds:
        m = tb.model
        w = next((x for x in per_model[m.name] if x.name == TRACED_WORKLOAD), None)
        if w is None or not m.mmio_region or m.name in failures:
            continue
        try:
            tb.resume()
            s, traces[m.name] = tb.trace_run(w, seconds, host_port)
            samples.append(s)
            tb.pause()
        except (GuestError, HarnessError, BenchError, OSError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            failures[m.name] = f"trace run: {first}"
            log.error("%s: trace run failed: %s", m.name, exc)
            continue
        t = traces[m.name]
        log.info(
            "trace %-10s %s: %.3f reads, %.3f writes, %.3f KVM exits, %.4f IRQ per frame (%d frames)",
            m.name,
            w.name,
            t["nic_reads_per_pkt"],
            t["nic_writes_per_pkt"],
            t["nic_exits_per_pkt"],
            t.get("irq_per_frame", float("nan")),
            t["frames"],
        )
    return traces, samples


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    if args.check_args:
        return 0
    logging.basicConfig(
        level=logging.INFO, format="[bench %(asctime)s] %(message)s", datefmt="%H:%M:%S", stream=sys.stderr
    )
    logging.getLogger("qemu").setLevel(logging.WARNING)
    logging.getLogger("guest").setLevel(logging.WARNING)  # the VM harness; its logs are in each VM's log dir
    t_start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    out_dir = (args.out_dir or build_dir() / "bench").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    log_dir = out_dir / "logs" / stamp
    log_dir.mkdir(parents=True, exist_ok=True)

    try:
        image = guest_image(args.kernel)
        src_qemu = qemu_binary()
    except HarnessError as exc:
        log.error("%s", exc)
        return 2
    if shutil.which("iperf3") is None:
        log.error("iperf3 not found on the host (Debian package iperf3; scripts/deps.sh installs it)")
        return 2
    qemu = snapshot_qemu(src_qemu, out_dir)
    missing = [m.device for m in args.models if not has_device(m.device, qemu)]
    if missing:
        log.error("QEMU binary %s has no -device %s", src_qemu, ", ".join(missing))
        return 2
    accel = choose_accel(image, qemu, log_dir)
    version = subprocess.run([str(qemu), "-version"], capture_output=True, text=True, check=True).stdout
    per_model = {m.name: model_workloads(m, args.workloads) for m in args.models}
    log.info(
        "%s mode: %d model(s) x %d workloads (%s) x %d reps x %d s, trace run %d s; guest kernel %s; accel %s",
        "quick" if args.quick else "full",
        len(args.models),
        len(args.workloads),
        ", ".join(f"{m} {len(ws)}" for m, ws in per_model.items()),
        args.reps,
        args.seconds,
        args.trace_seconds,
        image.release,
        accel,
    )

    meta: dict[str, Any] = {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "mode": "quick" if args.quick else "full",
        "reps": args.reps,
        "seconds": args.seconds,
        "accel": accel,
        "tcg_thread": os.environ.get("GUEST_TCG_THREAD", "") or "QEMU's default (multi)",
        "vm": {"smp": SMP, "memory_mb": MEMORY_MB, "machine": "q35"},
        "guest": {"kernel": args.kernel, "release": image.release},
        "qemu": {"version": version.splitlines()[0], "sha256": sha256_file(qemu)},
        "host": host_facts(),
        "models": [dataclasses.asdict(m) for m in args.models],
        "workloads": [dataclasses.asdict(w) for w in args.workloads],
        "workloads_by_model": {m: [w.name for w in ws] for m, ws in per_model.items()},
        "num_vfs": NUM_VFS,
        "udp_payload_bytes": UDP_PAYLOAD,
        "trace_seconds": args.trace_seconds,
    }
    samples: list[Sample] = []
    traces: dict[str, dict[str, Any]] = {}
    trace_samples: list[Sample] = []
    failures: dict[str, str] = {}
    log_problems: dict[str, list[str]] = {}
    setup_errors: dict[str, list[str]] = {}  # model -> first line of each failed setup
    beds: list[NicGuest] = []
    try:
        with HostIperf3Server(log_dir) as srv:
            for m in args.models:
                # A second try when setting up fails: a guest that never came
                # up measured nothing, and one bad boot (seen: QEMU aborting
                # under TCG during PCI enumeration) should not void the run.
                # Every failed attempt is reported.
                for attempt in (1, 2):
                    tb = NicGuest(
                        m,
                        image,
                        qemu,
                        accel,
                        log_dir,
                        m.name if attempt == 1 else f"{m.name}-retry",
                        with_vfs=any(w.needs_vfs for w in per_model[m.name]),
                    )
                    log.info("%s: booting and setting up%s", m.name, "" if attempt == 1 else " (second try)")
                    try:
                        tb.start(srv.port)
                        tb.pause()
                    except (GuestError, HarnessError, BenchError, OSError) as exc:
                        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                        setup_errors.setdefault(m.name, []).append(first)
                        log.error("%s: setup failed: %s (logs in %s)", m.name, first, tb.log_dir / tb.vm_name)
                        tb.shutdown()
                        continue
                    beds.append(tb)
                    log.info(
                        "%s: ready (boot %.0f s, setup and warm-up %.0f s); ports %s",
                        m.name,
                        tb.boot_seconds,
                        tb.setup_seconds,
                        tb.pci,
                    )
                    break
                else:
                    failures[m.name] = "setup failed twice: " + " | ".join(setup_errors[m.name])
            for rep in range(args.reps):
                order = beds[rep % len(beds) :] + beds[: rep % len(beds)] if beds else []
                for tb in order:
                    if tb.model.name in failures:
                        continue
                    try:
                        tb.resume()
                        windows = {}
                        for w in per_model[tb.model.name]:
                            tag = f"r{rep}-{w.name}"
                            windows[w.name] = (tag, tb.measure(w, args.seconds, srv.port, tag))
                        files = tb.fetch([t for t, _ in windows.values()])
                        tb.pause()
                    except (GuestError, HarnessError, OSError) as exc:
                        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                        failures[tb.model.name] = f"rep {rep}: {first}"
                        log.error(
                            "%s: rep %d failed: %s (logs in %s)",
                            tb.model.name,
                            rep,
                            exc,
                            tb.log_dir / tb.vm_name,
                        )
                        tb.shutdown()
                        continue
                    la = loadavg()
                    for w in per_model[tb.model.name]:
                        tag, cpus = windows[w.name]
                        s = evaluate(tb, w, rep, cpus, files[tag])
                        s.raw["host_loadavg"] = la
                        samples.append(s)
                        if s.ok:
                            f = s.figures
                            extra = (
                                f"{f['sent_pps']:.0f} pps sent, {f['delivered_pps']:.0f} delivered"
                                if "sent_pps" in f
                                else f"{f['mbps']:.0f} Mbit/s"
                            )
                            log.info(
                                "rep %d %-10s %-13s %s, %.0f IRQ/s, QEMU CPU %.0f%%",
                                rep,
                                tb.model.name,
                                w.name,
                                extra,
                                f["irq_per_s"],
                                f["cpu_pct"],
                            )
                        else:
                            log.error("rep %d %s %s: %s", rep, tb.model.name, w.name, s.error)
            if args.trace_seconds:
                traces, trace_samples = trace_runs(beds, per_model, failures, args.trace_seconds, srv.port)
    finally:
        for tb in beds:
            if tb.model.name not in failures:
                try:
                    tb.resume()  # a paused guest cannot hand over its kernel log
                    log_problems[tb.model.name] = tb.kernel_log_problems()
                except (GuestError, HarnessError, OSError) as exc:
                    log_problems[tb.model.name] = [f"kernel log not read: {exc}"]
            tb.shutdown()

    models = [m.name for m in args.models]
    summ = summaries(samples)
    tables = render_tables(summ, models, [w.name for w in args.workloads])
    receive = render_receive_table(summ, models, [w.name for w in args.workloads])
    if receive:
        tables += "\n\n" + receive
    if traces:
        tables += "\n\n" + render_trace_table(traces, models)
    elapsed = time.monotonic() - t_start
    header = (
        f"NIC benchmark {meta['started']} ({meta['mode']}): {meta['qemu']['version']}, accel {accel}"
        + (f" (thread={os.environ['GUEST_TCG_THREAD']})" if os.environ.get("GUEST_TCG_THREAD") else "")
        + ", "
        f"guest {image.release}, {SMP} vCPUs, {MEMORY_MB} MiB, "
        f"{args.reps} samples x {args.seconds} s per cell, {elapsed / 60:.1f} min\n"
        "cells: median ±half the min-max range (relative); ratios are of medians.\n"
        "slirp rows: slirp (user-mode TCP/IP in QEMU's main loop) and TCG dominate them.\n"
        "b2b rows: two ports of the model wired back to back (-netdev dgram), one in a netns."
        + (
            f"\nVF rows: {NUM_VFS} VFs of a PF of their own, each in a netns; VF->VF through the PF's "
            "internal switch, VF->wire to a port on the PF's wire; only models with SR-IOV."
            if any(w.needs_vfs for w in args.workloads)
            else ""
        )
    )
    notes = context_notes(samples, models) + rsc_notes(samples, models)
    notes += facts_lines({tb.model.name: tb.facts for tb in beds})
    notes += trace_notes(traces)
    notes += [
        f"{m}: setup failed {len(errs)} time(s): " + " | ".join(errs) for m, errs in setup_errors.items()
    ]
    text = header + "\n\n" + tables + "\n\n" + "\n".join(notes)
    for m, lines in log_problems.items():
        if lines:
            text += f"\n\n{m}: kernel warnings about its NICs during the run:\n  " + "\n  ".join(lines[:20])
    bad = [s for s in samples if not s.ok]
    if failures or bad:
        text += "\n\nPROBLEMS:\n" + "\n".join(
            [f"  {m}: {e}" for m, e in failures.items()]
            + [f"  {s.model} {s.workload} rep {s.rep}: {s.error}" for s in bad]
        )
    print(text)

    result = {
        **meta,
        "elapsed_s": elapsed,
        "boot_s": {tb.model.name: tb.boot_seconds for tb in beds},
        "driver_facts": {tb.model.name: tb.facts for tb in beds},
        "failures": failures,
        "setup_errors": setup_errors,
        "kernel_log_problems": log_problems,
        "samples": [dataclasses.asdict(s) for s in samples],
        "summary": {
            w: {f: {m: sm.as_dict() for m, sm in per.items()} for f, per in figs.items()}
            for w, figs in summ.items()
        },
        "ratios": ratios(summ, models),
        "receive_ratios": receive_ratios(summ, models),
        "traces": traces,
        "trace_samples": [dataclasses.asdict(s) for s in trace_samples],
        "trace_ratios": trace_ratios(traces, models),
        "tables": tables,
    }
    name = f"nicbench-{stamp}-{args.kernel}-{meta['mode']}"
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1, sort_keys=False) + "\n")
    (out_dir / f"{name}.txt").write_text(text + "\n")
    shutil.copyfile(out_dir / f"{name}.json", out_dir / "latest.json")
    shutil.copyfile(out_dir / f"{name}.txt", out_dir / "latest.txt")
    rel = os.path.relpath(out_dir / f"{name}.json")
    log.info("raw samples: %s (also latest.json); VM logs: %s", rel, os.path.relpath(log_dir))
    expected = sum(len(ws) for ws in per_model.values()) * args.reps
    good = len(samples) - len(bad)
    if failures or good != expected:
        log.error("%d of %d samples measured", good, expected)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except (HarnessError, BenchError) as exc:
        log.error("%s", exc)
        sys.exit(2)
