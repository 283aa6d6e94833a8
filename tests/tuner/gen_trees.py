#!/usr/bin/env python3
"""Build the sysfs/procfs fixture trees from the drivers' documented layout.

    scripts/python.sh tests/tuner/gen_trees.py [OUTDIR]      (default: tests/tuner/trees)

(or any python3 with guest/ on PYTHONPATH, for nettune).

Each tree holds exactly the subset nettune.record copies from a live system
(sys/, proc/, ethtool.json, services.json, README.md). IRQ names follow each
driver's naming: ixgbe/igb "<if>-TxRx-<n>" plus "<if>" for the other vector,
e1000e "<if>-rx-0"/"<if>-tx-0", i40e "i40e-<if>-TxRx-<n>" plus
"i40e-<bdf>:misc", virtio-net "virtio<N>-input.<n>"/"virtio<N>-output.<n>" plus
"virtio<N>-config", mlx5 "mlx5_comp<n>@pci:<bdf>" plus "mlx5_async0@pci:<bdf>".
Trees recorded from real guests (by nettune.record) live beside these and are
never overwritten: only the names listed in TREES are (re)generated.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from nettune.cpus import format_cpulist, format_mask
from nettune.ethtool import dump_json

HERE = os.path.dirname(os.path.abspath(__file__))

QEMU_CPU = ("AuthenticAMD", "QEMU Virtual CPU version 2.5+",
            "fpu de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse "
            "sse2 ht syscall nx lm nopl cpuid pni cx16 x2apic hypervisor lahf_lm svm 3dnowprefetch vmmcall")
HASWELL_CPU = ("GenuineIntel", "Intel Core Processor (Haswell, no TSX)",
               "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
               "sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid "
               "tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt "
               "aes xsave avx f16c rdrand hypervisor lahf_lm abm fsgsbase bmi1 avx2 smep bmi2 erms "
               "invpcid xsaveopt arat")
ICELAKE_CPU = ("GenuineIntel", "Intel Xeon Processor (Icelake)",
               "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
               "sse sse2 ss syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni "
               "pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c "
               "rdrand hypervisor lahf_lm abm 3dnowprefetch fsgsbase bmi1 avx2 smep bmi2 erms invpcid "
               "avx512f avx512dq rdseed adx smap clflushopt clwb avx512cd sha_ni avx512bw avx512vl "
               "xsaveopt xsavec xgetbv1 xsaves arat avx512vbmi umip pku ospke avx512_vbmi2 gfni vaes "
               "vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq la57 rdpid fsrm md_clear arch_capabilities")


@dataclass
class Nic:
    name: str
    driver: str
    bdf: str                       # PCI function
    numa: int                      # -1: unknown (single-node guests)
    queues: int                    # rx == tx queue count in sysfs
    irq_style: str                 # txrx | rxtx_split | virtio | i40e | mlx5
    first_irq: int
    ethtool: Dict[str, object]
    virtio: Optional[str] = None
    pci_driver: Optional[str] = None      # driver bound to the PCI function (virtio: virtio-pci)
    xps_default: bool = True               # drivers that set XPS 1:1 at probe (ixgbe, virtio_net)


@dataclass
class Tree:
    name: str
    cpus: int
    nodes: List[List[int]]
    cpu: Tuple[str, str, str]
    nics: List[Nic]
    irqbalance: bool = False
    kernel: str = "6.1.0-27-amd64"
    busy_poll: bool = True
    note: str = ""
    extra_irqs: List[Tuple[str, str]] = field(default_factory=lambda: [
        ("IO-APIC   2-edge", "timer"), ("IO-APIC   1-edge", "i8042"), ("IO-APIC   4-edge", "ttyS0"),
        ("IO-APIC   9-fasteoi", "acpi"), ("IO-APIC  12-edge", "i8042"),
    ])


def _features(nocache: bool, ntuple: Optional[bool], ntuple_fixed: bool) -> Dict[str, Dict[str, bool]]:
    feats = {
        "rx-checksumming": {"on": True, "fixed": False},
        "tx-checksumming": {"on": True, "fixed": False},
        "scatter-gather": {"on": True, "fixed": False},
        "tcp-segmentation-offload": {"on": True, "fixed": False},
        "generic-segmentation-offload": {"on": True, "fixed": False},
        "generic-receive-offload": {"on": True, "fixed": False},
        "large-receive-offload": {"on": False, "fixed": True},
        "receive-hashing": {"on": True, "fixed": False},
        "tx-nocache-copy": {"on": nocache, "fixed": False},
        "ntuple-filters": {"on": bool(ntuple), "fixed": ntuple_fixed},
        "highdma": {"on": True, "fixed": True},
    }
    return feats


def _coalesce(**known: object) -> Dict[str, object]:
    keys = ["adaptive-rx", "adaptive-tx", "stats-block-usecs", "sample-interval", "pkt-rate-low",
            "pkt-rate-high", "rx-usecs", "rx-frames", "rx-usecs-irq", "rx-frames-irq", "tx-usecs",
            "tx-frames", "tx-usecs-irq", "tx-frames-irq", "rx-usecs-low", "rx-frame-low", "tx-usecs-low",
            "tx-frame-low", "rx-usecs-high", "rx-frame-high", "tx-usecs-high", "tx-frame-high"]
    out: Dict[str, object] = {k: None for k in keys}
    for k, v in known.items():
        out[k.replace("_", "-")] = v
    return out


def _rings(max_rx: int, max_tx: int, rx: int, tx: int) -> Dict[str, Dict[str, Optional[int]]]:
    return {"max": {"rx": max_rx, "rx-mini": None, "rx-jumbo": None, "tx": max_tx},
            "current": {"rx": rx, "rx-mini": None, "rx-jumbo": None, "tx": tx}}


def _channels(combined_max: int, combined: int, other: Optional[int]) -> Dict[str, Dict[str, Optional[int]]]:
    return {"max": {"rx": None, "tx": None, "other": other, "combined": combined_max},
            "current": {"rx": None, "tx": None, "other": other, "combined": combined}}


def _eth(driver: str, bdf: str, pause: Optional[Dict[str, bool]], rings: object, coalesce: object,
         features: object, channels: object, rx_rings: Optional[int], rules: Optional[int],
         errors: Dict[str, str], refuse: Optional[Dict[str, str]] = None) -> Dict[str, object]:
    d: Dict[str, object] = {"driver": driver, "bus_info": bdf, "pause": pause, "rings": rings,
                            "coalesce": coalesce, "features": features, "channels": channels,
                            "rx_rings": rx_rings, "ntuple_rules": rules, "errors": errors}
    if refuse:
        d["refuse"] = refuse
    return d


PAUSE_ON = {"autoneg": True, "rx": True, "tx": True}
NOT_SUPP = "Operation not supported"


def ixgbe(name: str, bdf: str, numa: int, queues: int, first_irq: int, max_ch: int) -> Nic:
    return Nic(name, "ixgbe", bdf, numa, queues, "txrx", first_irq, _eth(
        "ixgbe", bdf, dict(PAUSE_ON), _rings(4096, 4096, 512, 512),
        _coalesce(rx_usecs=1, tx_usecs=0, tx_frames_irq=256), _features(False, False, False),
        _channels(max_ch, queues, 1), queues, 0, {}))


def igb(name: str, bdf: str, numa: int, queues: int, first_irq: int) -> Nic:
    return Nic(name, "igb", bdf, numa, queues, "txrx", first_irq, _eth(
        "igb", bdf, dict(PAUSE_ON), _rings(4096, 4096, 256, 256),
        _coalesce(rx_usecs=3, tx_usecs=0, tx_frames_irq=128), _features(False, False, True),
        _channels(8, queues, 1), queues, None, {"ntuple": NOT_SUPP}), xps_default=False)


TREES: List[Tree] = [
    Tree("ixgbe-4q", 4, [[0, 1, 2, 3]], QEMU_CPU, [ixgbe("eth0", "0000:00:02.0", -1, 4, 24, 4)],
         note="82599 (ixgbe) in a 4-vCPU single-node guest, 4 TxRx vectors plus the link vector."),
    Tree("virtio-4q", 4, [[0, 1, 2, 3]], QEMU_CPU, [Nic(
        "eth0", "virtio_net", "0000:00:03.0", -1, 4, "virtio", 24, _eth(
            "virtio_net", "0000:00:03.0", None, _rings(256, 256, 256, 256),
            _coalesce(adaptive_rx=False, rx_usecs=0, rx_frames=1, tx_usecs=0, tx_frames=1),
            _features(False, False, True), _channels(4, 4, None), 4, None,
            {"pause": NOT_SUPP, "ntuple": NOT_SUPP},
            # virtio-net reports coalescing but refuses changes without VIRTIO_NET_F_NOTF_COAL,
            # which QEMU does not offer.
            refuse={"coalesce": NOT_SUPP}),
        virtio="virtio0", pci_driver="virtio-pci")],
        irqbalance=True, kernel="6.12.57+deb13-amd64",
        note="virtio-net with 4 queue pairs (QEMU -netdev ...,queues=4 with mq=on), irqbalance running."),
    Tree("igb-4q", 4, [[0, 1, 2, 3]], HASWELL_CPU, [igb("eth0", "0000:00:02.0", -1, 4, 24)],
         irqbalance=True, note="igb with paired queue vectors (TxRx) plus the other vector, as igb sets "
         "up when it pairs queues (IGB_FLAG_QUEUE_PAIRS); QEMU's 82576 with 4 vCPUs gets separate rx/tx "
         "vectors instead (see igb-4q-recorded)."),
    Tree("e1000e-1q", 4, [[0, 1, 2, 3]], QEMU_CPU, [Nic(
        "eth0", "e1000e", "0000:00:02.0", -1, 1, "rxtx_split", 24, _eth(
            "e1000e", "0000:00:02.0", dict(PAUSE_ON), _rings(4096, 4096, 256, 256), _coalesce(rx_usecs=3),
            _features(False, False, True), None, None, None,
            {"channels": NOT_SUPP, "ntuple": NOT_SUPP}), xps_default=False)],
        busy_poll=False,
        note="82574 (e1000e): one queue, MSI-X vectors rx-0, tx-0 and the other vector; no channels; "
             "a kernel without busy polling (no busy_read/busy_poll sysctls)."),
    Tree("i40e-8q", 8, [[0, 1, 2, 3, 4, 5, 6, 7]], ICELAKE_CPU, [Nic(
        "ens2f0", "i40e", "0000:01:00.0", 0, 8, "i40e", 40, _eth(
            "i40e", "0000:01:00.0", {"autoneg": False, "rx": True, "tx": True}, _rings(4096, 4096, 512, 512),
            _coalesce(adaptive_rx=True, adaptive_tx=True, rx_usecs=50, tx_usecs=50, rx_usecs_high=0),
            _features(True, True, False), _channels(64, 8, 1), 8, 0, {}))],
        irqbalance=True, kernel="6.1.0-27-amd64",
        note="X710 (i40e) port with 8 queue pairs; tx-nocache-copy left on (as older distributions had)."),
    Tree("mlx5-8q", 8, [[0, 1, 2, 3, 4, 5, 6, 7]], HASWELL_CPU, [Nic(
        "enp59s0f0", "mlx5_core", "0000:3b:00.0", 0, 8, "mlx5", 40, _eth(
            "mlx5_core", "0000:3b:00.0", {"autoneg": False, "rx": True, "tx": True},
            _rings(8192, 8192, 1024, 1024),
            _coalesce(adaptive_rx=True, adaptive_tx=True, rx_usecs=8, rx_frames=128, tx_usecs=16,
                      tx_frames=32), _features(False, False, False), _channels(8, 8, None), 8, 0, {}))],
        note="ConnectX (mlx5_core): completion vectors mlx5_comp<n>@pci:<bdf> plus mlx5_async0."),
    Tree("numa2-ixgbe", 8, [[0, 1, 2, 3], [4, 5, 6, 7]], HASWELL_CPU, [
        ixgbe("eth0", "0000:81:00.0", 1, 4, 40, 8),
        igb("eth1", "0000:02:00.0", 0, 3, 60)],
        note="Two NUMA nodes (CPUs 0-3, 4-7). eth0 (ixgbe, 4 queues) sits on node 1, eth1 (igb, "
             "3 queues) on node 0."),
]


class Writer:
    def __init__(self, root: str) -> None:
        self.root = root

    def file(self, path: str, content: str) -> None:
        dst = self.root + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(content if content.endswith("\n") else content + "\n")

    def link(self, path: str, target: str) -> None:
        dst = self.root + path
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        os.symlink(target, dst)

    def dir(self, path: str) -> None:
        os.makedirs(self.root + path, exist_ok=True)


def _nic_irqs(nic: Nic) -> List[Tuple[str, str]]:
    """(hwirq chip text, action name) for every vector of the NIC, in vector order."""
    chip = f"PCI-MSIX-{nic.bdf}"
    names: List[str] = []
    q = nic.queues
    if nic.irq_style == "txrx":
        names = [f"{nic.name}-TxRx-{i}" for i in range(q)] + [nic.name]
    elif nic.irq_style == "rxtx_split":
        names = [f"{nic.name}-rx-{i}" for i in range(q)] + [f"{nic.name}-tx-{i}" for i in range(q)] + [nic.name]
    elif nic.irq_style == "virtio":
        names = [f"{nic.virtio}-config"]
        for i in range(q):
            names += [f"{nic.virtio}-input.{i}", f"{nic.virtio}-output.{i}"]
    elif nic.irq_style == "i40e":
        names = [f"i40e-{nic.bdf}:misc"] + [f"i40e-{nic.name}-TxRx-{i}" for i in range(q)]
    elif nic.irq_style == "mlx5":
        names = [f"mlx5_async0@pci:{nic.bdf}"] + [f"mlx5_comp{i}@pci:{nic.bdf}" for i in range(q)]
    return [(f"{chip} {v:>3}-edge", n) for v, n in enumerate(names)]


def build(tree: Tree, out: str) -> None:
    if os.path.exists(out):
        shutil.rmtree(out)
    w = Writer(out)
    cpus = list(range(tree.cpus))
    allcpus = format_cpulist(cpus)
    nr = tree.cpus
    for f, v in (("online", allcpus), ("possible", allcpus), ("present", allcpus), ("isolated", ""),
                 ("nohz_full", "(null)")):
        w.file(f"/sys/devices/system/cpu/{f}", v)
    w.file("/sys/devices/system/node/online", format_cpulist(range(len(tree.nodes))))
    w.file("/sys/devices/system/node/possible", format_cpulist(range(len(tree.nodes))))
    for n, ncpus in enumerate(tree.nodes):
        w.file(f"/sys/devices/system/node/node{n}/cpulist", format_cpulist(ncpus))
    w.file("/proc/sys/kernel/osrelease", tree.kernel)
    vendor, model, flags = tree.cpu
    info = []
    for c in cpus:
        info.append(f"processor\t: {c}\nvendor_id\t: {vendor}\nmodel name\t: {model}\n"
                    f"physical id\t: {0 if len(tree.nodes) == 1 else next(i for i, n in enumerate(tree.nodes) if c in n)}\n"
                    f"flags\t\t: {flags}\n")
    w.file("/proc/cpuinfo", "\n".join(info))

    # interrupts: a few platform IRQs, then every NIC vector
    rows: List[Tuple[int, str, str]] = []
    for i, (chip, name) in enumerate(tree.extra_irqs):
        rows.append(({0: 0, 1: 1, 2: 4, 3: 9, 4: 12}.get(i, 16 + i), chip, name))
    for nic in tree.nics:
        for k, (chip, name) in enumerate(_nic_irqs(nic)):
            rows.append((nic.first_irq + k, chip, name))
    rows.sort()
    lines = ["     " + "".join(f"{'CPU' + str(c):>11}" for c in cpus)]
    for irq, chip, name in rows:
        counts = "".join(f"{(irq * 7 + c * 13) % 997 if c == irq % nr else 0:>11}" for c in cpus)
        lines.append(f"{irq:>4}:{counts}  {chip}      {name}")
    lines.append(" NMI:" + "".join(f"{0:>11}" for _ in cpus) + "   Non-maskable interrupts")
    lines.append(" LOC:" + "".join(f"{1000 + c:>11}" for c in cpus) + "   Local timer interrupts")
    lines.append(" ERR:          0")
    lines.append(" MIS:          0")
    w.file("/proc/interrupts", "\n".join(lines))
    for irq, _, _ in rows:
        w.file(f"/proc/irq/{irq}/smp_affinity", format_mask(cpus, nr))
        w.file(f"/proc/irq/{irq}/smp_affinity_list", allcpus)
        w.file(f"/proc/irq/{irq}/effective_affinity_list", str(irq % nr))
        w.file(f"/proc/irq/{irq}/node", "0")

    sysctls = {
        "net/core/netdev_max_backlog": "1000", "net/core/netdev_budget": "300",
        "net/core/rmem_max": "212992", "net/core/wmem_max": "212992",
        "net/ipv4/tcp_rmem": "4096\t131072\t6291456", "net/ipv4/tcp_wmem": "4096\t16384\t4194304",
        "net/ipv4/ip_forward": "0", "net/ipv4/ip_early_demux": "1",
        "net/ipv4/conf/all/rp_filter": "2", "net/ipv4/conf/default/rp_filter": "2",
        "net/ipv4/conf/lo/rp_filter": "0",
    }
    if tree.busy_poll:
        sysctls.update({"net/core/busy_read": "0", "net/core/busy_poll": "0"})
    for nic in tree.nics:
        sysctls[f"net/ipv4/conf/{nic.name}/rp_filter"] = "2"
    for key, text in sysctls.items():
        w.file(f"/proc/sys/{key}", text)
    if tree.irqbalance:
        w.file("/proc/612/comm", "irqbalance")
    w.file("/proc/1/comm", "init")

    # loopback: a virtual interface
    w.link("/sys/class/net/lo", "../../devices/virtual/net/lo")
    for f, v in (("operstate", "unknown"), ("ifindex", "1"), ("mtu", "65536"), ("type", "772"),
                 ("tx_queue_len", "1000")):
        w.file(f"/sys/devices/virtual/net/lo/{f}", v)
    w.file("/sys/devices/virtual/net/lo/queues/rx-0/rps_cpus", format_mask([], nr))
    w.file("/sys/devices/virtual/net/lo/queues/rx-0/rps_flow_cnt", "0")
    w.file("/sys/devices/virtual/net/lo/queues/tx-0/xps_cpus", format_mask([], nr))

    devices: Dict[str, object] = {}
    for idx, nic in enumerate(tree.nics):
        bus = int(nic.bdf.split(":")[1], 16)
        hb = "00" if bus < 0x80 else "80"
        host_bridge = f"pci0000:{hb}"
        if bus in (0, 0x80):
            pci = f"/sys/devices/{host_bridge}/{nic.bdf}"
        else:   # behind a root port, as PCIe cards are
            port = f"/sys/devices/{host_bridge}/0000:{hb}:{2 + idx:02x}.0"
            w.file(f"{port}/numa_node", str(nic.numa))
            pci = f"{port}/{nic.bdf}"
        pci_driver = nic.pci_driver or nic.driver
        w.link(pci + "/driver", "../" * (pci.count("/") - 1) + f"bus/pci/drivers/{pci_driver}")
        w.link(pci + "/subsystem", "../" * (pci.count("/") - 1) + "bus/pci")
        w.dir(f"/sys/bus/pci/drivers/{pci_driver}")
        w.file(pci + "/numa_node", str(nic.numa))
        local = tree.nodes[nic.numa] if nic.numa >= 0 else cpus
        w.file(pci + "/local_cpulist", format_cpulist(local))
        w.file(pci + "/vendor", {"ixgbe": "0x8086", "igb": "0x8086", "e1000e": "0x8086", "i40e": "0x8086",
                                 "mlx5_core": "0x15b3", "virtio_net": "0x1af4"}[nic.driver])
        w.file(pci + "/class", "0x020000")
        for k in range(len(_nic_irqs(nic))):
            w.file(f"{pci}/msi_irqs/{nic.first_irq + k}", "msix")
        if nic.virtio:
            dev = f"{pci}/{nic.virtio}"
            w.link(dev + "/driver", "../" * (dev.count("/") - 1) + "bus/virtio/drivers/virtio_net")
            w.link(dev + "/subsystem", "../" * (dev.count("/") - 1) + "bus/virtio")
            w.dir("/sys/bus/virtio/drivers/virtio_net")
        else:
            dev = pci
        netdir = f"{dev}/net/{nic.name}"
        w.link(f"/sys/class/net/{nic.name}", "../.." + netdir[len("/sys"):])
        w.link(f"{netdir}/device", "../../../" + os.path.basename(dev))
        for f, v in (("operstate", "up"), ("ifindex", str(2 + idx)), ("mtu", "1500"), ("type", "1"),
                     ("tx_queue_len", "1000")):
            w.file(f"{netdir}/{f}", v)
        for q in range(nic.queues):
            w.file(f"{netdir}/queues/rx-{q}/rps_cpus", format_mask([], nr))
            w.file(f"{netdir}/queues/rx-{q}/rps_flow_cnt", "0")
            xps = format_mask([q % nr], nr) if (nic.xps_default and nic.queues > 1) else format_mask([], nr)
            w.file(f"{netdir}/queues/tx-{q}/xps_cpus", xps)
        devices[nic.name] = nic.ethtool
    w.file("/ethtool.json", dump_json({"version": 1, "devices": devices}).rstrip("\n"))
    w.file("/services.json", dump_json({"irqbalance": {"active": tree.irqbalance}}).rstrip("\n"))
    nics = ", ".join(f"{n.name} ({n.driver}, {n.queues} queue{'s' if n.queues > 1 else ''}, NUMA "
                     f"{n.numa if n.numa >= 0 else 'unknown'})" for n in tree.nics)
    w.file("/README.md", f"# {tree.name}\n\nBUILT by tests/tuner/gen_trees.py from the drivers' documented "
                         f"IRQ naming and sysfs layout (not recorded from a live system).\n\n{tree.note}\n\n"
                         f"CPUs {allcpus} on {len(tree.nodes)} NUMA node(s); kernel {tree.kernel}; NICs: {nics}.\n"
                         f"irqbalance {'running' if tree.irqbalance else 'not running'}.\n")


def main(argv: List[str]) -> int:
    out = argv[1] if len(argv) > 1 else os.path.join(HERE, "trees")
    os.makedirs(out, exist_ok=True)
    for tree in TREES:
        build(tree, os.path.join(out, tree.name))
        print(f"built {tree.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
