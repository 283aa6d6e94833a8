"""Record the subset of /sys and /proc that nettune reads into a tree for tests.

    python3 -m nettune.record OUTDIR [--from-root DIR] [-i IF ...] [--name NAME]

Copies, keeping sysfs's relative symbolic links as they are:
  /sys/class/net/<if> and its device chain (driver and subsystem links, numa_node,
  msi_irqs), queues/rx-*/rps_cpus, queues/tx-*/xps_cpus, operstate;
  /sys/devices/system/cpu/{online,possible,present,isolated,nohz_full},
  /sys/devices/system/node/node*/cpulist; /proc/interrupts, /proc/irq/<n>/ affinity
  files; /proc/cpuinfo; /proc/sys/kernel/osrelease; the net sysctls nettune can
  touch; /proc/<pid>/comm of irqbalance.
Writes ethtool.json (from the real ethtool, read-only queries) and services.json.
Reads only; run it as root inside the guest to record. Standard library only.
"""

from __future__ import annotations

import argparse
import datetime
import os
import posixpath
import re
import sys
from typing import Any, Dict, List, Optional

from .discover import list_interfaces, parse_interrupts, sysctl_path
from .ethtool import CapturedEthtool, Ethtool, EthtoolError, RealEthtool, RecordedEthtool, dump_json
from .plan import sysctl_names
from .profiles import Config
from .services import RealServices, RecordedServices, Services, find_pids
from .sysfs import Root

CPU_FILES = ("online", "possible", "present", "isolated", "nohz_full")
DEVICE_FILES = ("numa_node", "local_cpulist", "vendor", "device", "class", "subsystem_vendor", "subsystem_device")
IFACE_FILES = ("operstate", "ifindex", "mtu", "type", "tx_queue_len")
IRQ_FILES = ("smp_affinity", "smp_affinity_list", "effective_affinity_list", "node")


class Recorder:
    def __init__(self, src: Root, out: str) -> None:
        self.src = src
        self.out = os.path.abspath(out)
        self.files = 0

    def _dst(self, system_path: str) -> str:
        return self.out + posixpath.normpath(system_path)

    def copy_file(self, path: str) -> bool:
        """Copy one file's content to its link-resolved location in the tree."""
        real = self.src.resolve(path)
        try:
            data = self.src.read(real)
        except OSError:
            return False   # e.g. xps_cpus of a single-queue device answers ENOENT
        dst = self._dst(real)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "w", encoding="utf-8") as f:
            f.write(data)
        self.files += 1
        return True

    def copy_link(self, path: str) -> Optional[str]:
        """Recreate the symbolic link `path` (last component) verbatim; return its resolved target."""
        parent = self.src.resolve(posixpath.dirname(path))
        link = posixpath.join(parent, posixpath.basename(path))
        host = self.src.host_path(link)
        if not os.path.islink(host):
            return None
        target = os.readlink(host)
        dst = self._dst(link)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.lexists(dst):
            os.unlink(dst)
        os.symlink(target, dst)
        resolved = self.src.resolve(link)
        os.makedirs(self._dst(resolved), exist_ok=True) if self.src.isdir(resolved) else None
        return resolved

    def record_interface(self, name: str) -> None:
        base = f"/sys/class/net/{name}"
        self.copy_link(base)
        for f in IFACE_FILES:
            self.copy_file(f"{base}/{f}")
        for q in self.src.listdir(f"{base}/queues"):
            if re.fullmatch(r"rx-\d+", q):
                self.copy_file(f"{base}/queues/{q}/rps_cpus")
                self.copy_file(f"{base}/queues/{q}/rps_flow_cnt")
            elif re.fullmatch(r"tx-\d+", q):
                os.makedirs(self._dst(self.src.resolve(f"{base}/queues/{q}")), exist_ok=True)
                self.copy_file(f"{base}/queues/{q}/xps_cpus")
        dev = self.copy_link(f"{base}/device")
        p = dev
        while p and p not in ("/", "/sys", "/sys/devices"):
            for f in DEVICE_FILES:
                self.copy_file(f"{p}/{f}")
            for link in ("driver", "subsystem"):
                self.copy_link(f"{p}/{link}")
            for irq in self.src.listdir(f"{p}/msi_irqs"):
                if irq.isdigit():
                    self.copy_file(f"{p}/msi_irqs/{irq}")
            p = posixpath.dirname(p)

    def record(self, interfaces: Optional[List[str]], ethtool: Optional[Ethtool], services: Services,
               name: str, note: str = "") -> None:
        os.makedirs(self.out, exist_ok=True)
        all_ifs = list_interfaces(self.src)
        ifs = interfaces or all_ifs
        unknown = [i for i in ifs if i not in all_ifs]
        if unknown:
            raise SystemExit(f"nettune.record: unknown interface {', '.join(unknown)}")
        self.record_system()
        for s in sysctl_names(Config(), ifs):
            self.copy_file(sysctl_path(s))
        for pid in find_pids(self.src, "irqbalance"):
            self.copy_file(f"/proc/{pid}/comm")
        for i in ifs:
            self.record_interface(i)
        devices = self.ethtool_facts(ifs, ethtool, every=interfaces is not None)
        with open(os.path.join(self.out, "ethtool.json"), "w", encoding="utf-8") as f:
            f.write(dump_json({"version": 1, "devices": devices}))
        with open(os.path.join(self.out, "services.json"), "w", encoding="utf-8") as f:
            f.write(dump_json({"irqbalance": {"active": services.is_active("irqbalance")}}))
        kernel = self.src.read_value("/proc/sys/kernel/osrelease") or "unknown kernel"
        today = datetime.date.today().isoformat()
        with open(os.path.join(self.out, "README.md"), "w", encoding="utf-8") as f:
            f.write(f"# {name}\n\nRECORDED by nettune.record from a running system (kernel {kernel}) "
                    f"on {today}.\nInterfaces: {', '.join(ifs)}. {self.files} files copied; "
                    "ethtool.json from read-only ethtool queries.\n" + (f"\n{note}\n" if note else ""))

    def record_system(self) -> None:
        """CPUs, NUMA nodes, interrupts and their affinity, CPU flags, the kernel release."""
        for leaf in CPU_FILES:
            self.copy_file(f"/sys/devices/system/cpu/{leaf}")
        for leaf in ("online", "possible"):
            self.copy_file(f"/sys/devices/system/node/{leaf}")
        for node in self.src.listdir("/sys/devices/system/node"):
            if re.fullmatch(r"node\d+", node):
                self.copy_file(f"/sys/devices/system/node/{node}/cpulist")
        for path in ("/proc/interrupts", "/proc/cpuinfo", "/proc/sys/kernel/osrelease"):
            self.copy_file(path)
        try:
            rows = parse_interrupts(self.src.read("/proc/interrupts"))
        except OSError:
            rows = []
        for irq, _ in rows:
            for leaf in IRQ_FILES:
                self.copy_file(f"/proc/irq/{irq}/{leaf}")

    def ethtool_facts(self, ifs: List[str], ethtool: Optional[Ethtool], every: bool) -> Dict[str, Any]:
        """ethtool facts of the interfaces: those with a device, or `every` one."""
        devices: Dict[str, Any] = {}
        if ethtool is None:
            return devices
        for i in ifs:
            if not self.src.exists(f"/sys/class/net/{i}/device") and not every:
                continue
            try:
                devices[i] = ethtool.info(i).to_json()
            except EthtoolError as e:
                print(f"nettune.record: {i}: no ethtool facts: {e}", file=sys.stderr)
        return devices


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m nettune.record", description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--from-root", metavar="DIR", help="record from a tree instead of the live system")
    ap.add_argument("-i", "--interface", action="append", help="interfaces to record (default: all)")
    ap.add_argument("--name", default=None, help="title for the tree's README")
    ap.add_argument("--note", default="", help="a line for the tree's README (what was recorded where)")
    args = ap.parse_args(argv)
    src = Root(args.from_root or "/")
    if os.path.exists(args.outdir) and os.listdir(args.outdir):
        print(f"nettune.record: {args.outdir} exists and is not empty", file=sys.stderr)
        return 2
    if src.live:
        ethtool: Optional[Ethtool] = RealEthtool()
        services: Services = RealServices(src)
    else:
        path = src.host_path("/ethtool.json")
        captured = src.host_path("/ethtool-captured")
        if os.path.isdir(captured):          # a snapshot made by guest/record.sh
            ethtool = CapturedEthtool(captured)
        else:
            ethtool = RecordedEthtool(path) if os.path.exists(path) else None
        svc = src.host_path("/services.json")
        services = RecordedServices(svc) if os.path.exists(svc) else RealServices(src)
    rec = Recorder(src, args.outdir)
    rec.record(args.interface, ethtool, services, args.name or os.path.basename(os.path.abspath(args.outdir)),
               args.note)
    print(f"recorded {rec.files} files into {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
