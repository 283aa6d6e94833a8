"""Read-only discovery of the facts a tuning plan depends on.

Nothing here writes anything. Sources:
  /sys/class/net/<if>/{device,queues}   driver, bus address, NUMA node, queue counts
  /proc/interrupts, /proc/irq/<n>/       the IRQ of each queue and its affinity
  /sys/devices/system/{cpu,node}         online, possible and isolated CPUs, NUMA nodes
  /proc/cpuinfo                          CPU flags rep_good / erms / fsrm
  /proc/sys/...                          current sysctl values
  ethtool (real or recorded)             pause, rings, coalescing, features, channels
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Pattern, Sequence, Tuple

from .cpus import format_cpulist, parse_cpulist
from .ethtool import Ethtool, EthtoolError, EthtoolInfo
from .managers import Managers, detect as detect_managers, format_managers
from .services import Services
from .sysfs import Root

PCI_ADDR = re.compile(r"^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
STRING_FLAGS = ("rep_good", "erms", "fsrm")


@dataclass
class QueueIrq:
    irq: int
    name: str
    kind: str      # "txrx" (one vector per queue pair), "rx" or "tx"
    queue: int


@dataclass
class OtherIrq:
    irq: int
    name: str


@dataclass
class Interface:
    name: str
    has_device: bool
    driver: Optional[str]
    bus_info: Optional[str]
    device_path: Optional[str]
    virtio: Optional[str]
    numa_node: Optional[int]
    rx_queues: int
    tx_queues: int
    operstate: Optional[str]
    queue_irqs: List[QueueIrq] = field(default_factory=list)
    other_irqs: List[OtherIrq] = field(default_factory=list)
    affinity: Dict[int, str] = field(default_factory=dict)
    ethtool: Optional[EthtoolInfo] = None
    ethtool_error: Optional[str] = None

    def queue_indices(self) -> List[int]:
        return sorted({q.queue for q in self.queue_irqs})

    def to_json(self) -> Dict[str, Any]:
        return {
            "name": self.name, "has_device": self.has_device, "driver": self.driver,
            "bus_info": self.bus_info, "device_path": self.device_path, "virtio": self.virtio,
            "numa_node": self.numa_node, "rx_queues": self.rx_queues, "tx_queues": self.tx_queues,
            "operstate": self.operstate,
            "queue_irqs": [{"irq": q.irq, "name": q.name, "kind": q.kind, "queue": q.queue}
                           for q in self.queue_irqs],
            "other_irqs": [{"irq": o.irq, "name": o.name} for o in self.other_irqs],
            "affinity": {str(k): v for k, v in sorted(self.affinity.items())},
            "ethtool": self.ethtool.to_json() if self.ethtool else None,
            "ethtool_error": self.ethtool_error,
        }


@dataclass
class CpuFlags:
    vendor: Optional[str]
    model_name: Optional[str]
    hypervisor: bool
    present: Dict[str, bool]
    advice: Dict[str, str]

    def to_json(self) -> Dict[str, Any]:
        return {"vendor": self.vendor, "model_name": self.model_name, "hypervisor": self.hypervisor,
                "present": self.present, "advice": self.advice}


@dataclass
class Facts:
    kernel: Optional[str]
    online_cpus: List[int]
    nr_cpu_ids: int
    nodes: Dict[int, List[int]]
    isolated: List[int]
    nohz_full: List[int]
    cpu_flags: CpuFlags
    irqbalance_running: bool
    interfaces: Dict[str, Interface]
    sysctls: Dict[str, Optional[str]]
    managers: Managers = field(default_factory=Managers)

    def cpu_node(self, cpu: int) -> Optional[int]:
        for node, cpus in self.nodes.items():
            if cpu in cpus:
                return node
        return None

    def to_json(self) -> Dict[str, Any]:
        return {
            "kernel": self.kernel, "online_cpus": self.online_cpus, "nr_cpu_ids": self.nr_cpu_ids,
            "nodes": {str(k): v for k, v in sorted(self.nodes.items())},
            "isolated": self.isolated, "nohz_full": self.nohz_full,
            "cpu_flags": self.cpu_flags.to_json(), "irqbalance_running": self.irqbalance_running,
            "interfaces": {k: v.to_json() for k, v in sorted(self.interfaces.items())},
            "sysctls": dict(sorted(self.sysctls.items())),
            "managers": self.managers.to_json(),
        }


# --- helpers --------------------------------------------------------------------------
def sysctl_path(name: str) -> str:
    """/proc/sys path of a sysctl name; "/" in a name stands for "." in an interface name."""
    return "/proc/sys/" + name.replace(".", "\0").replace("/", ".").replace("\0", "/")


def iface_sysctl(prefix: str, ifname: str, leaf: str) -> str:
    return f"{prefix}.{ifname.replace('.', '/')}.{leaf}"


def parse_interrupts(text: str) -> List[Tuple[int, List[str]]]:
    """(irq, [action names]) for every numbered row of /proc/interrupts."""
    lines = text.splitlines()
    if not lines:
        return []
    ncpu = len(lines[0].split())
    rows: List[Tuple[int, List[str]]] = []
    for line in lines[1:]:
        head, sep, rest = line.partition(":")
        if not sep or not head.strip().isdigit():
            continue
        tokens = rest.split()
        tail = tokens[ncpu:] if len(tokens) > ncpu else []
        # Tail: chip name, hwirq-type, then the action list "a, b, c" (names end with ",").
        names: List[str] = []
        i = len(tail) - 1
        while i >= 0:
            tok = tail[i]
            if names and not tok.endswith(","):
                break
            names.insert(0, tok.rstrip(","))
            i -= 1
        if len(tail) < 2:
            names = []
        rows.append((int(head.strip()), [n for n in names if n]))
    return rows


def _queue_patterns(ifname: str, virtio: Optional[str], bus: Optional[str]) -> List[Tuple[Pattern[str], str]]:
    name = re.escape(ifname)
    pats: List[Tuple[Pattern[str], str]] = [
        # ixgbe, igb, e1000e: "eth0-TxRx-3"; i40e/ice prefix the driver: "i40e-eth0-TxRx-3"
        (re.compile(rf"^(?:[A-Za-z0-9_]+-)?{name}-TxRx-(\d+)$"), "txrx"),
        (re.compile(rf"^(?:[A-Za-z0-9_]+-)?{name}-rx-(\d+)$"), "rx"),
        (re.compile(rf"^(?:[A-Za-z0-9_]+-)?{name}-tx-(\d+)$"), "tx"),
    ]
    if virtio:
        v = re.escape(virtio)
        pats += [(re.compile(rf"^{v}-input\.(\d+)$"), "rx"), (re.compile(rf"^{v}-output\.(\d+)$"), "tx")]
    if bus:
        # mlx5: one completion vector per channel, named after the PCI function
        pats.append((re.compile(rf"^mlx5_comp(\d+)@pci:{re.escape(bus)}$"), "txrx"))
    return pats


def _is_other_irq(action: str, ifname: str, virtio: Optional[str], bus: Optional[str]) -> bool:
    if action == ifname:                       # ixgbe/igb/e1000e link/"other" vector
        return True
    if virtio and action.startswith(virtio + "-"):   # virtio0-config, virtio0-control
        return True
    if bus and bus in action:                  # i40e-0000:01:00.0:misc, mlx5_async0@pci:...
        return True
    return False


def _read_int(root: Root, path: str) -> Optional[int]:
    val = root.read_value(path)
    if val is None:
        return None
    try:
        return int(val)
    except ValueError:
        return None


def discover_cpu_flags(root: Root) -> CpuFlags:
    text = ""
    try:
        text = root.read("/proc/cpuinfo")
    except OSError:
        pass
    first: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break
            continue
        key, sep, val = line.partition(":")
        if sep:
            first.setdefault(key.strip(), val.strip())
    flags = set(first.get("flags", "").split())
    vendor = first.get("vendor_id")
    model = first.get("model name")
    guest = "hypervisor" in flags
    present = {f: f in flags for f in STRING_FLAGS}
    advice: Dict[str, str] = {}
    generic = bool(model and re.search(r"QEMU Virtual CPU|Common KVM processor|Common 32-bit KVM", model))
    named = f"the guest CPU model ({model or 'unknown'})"
    why_family = (f"{named} is a generic one that reports an old CPU family" if generic
                  else f"{named} does not qualify")
    why = f"{named} does not expose it"
    if not guest:
        why = why_family = "this CPU (no hypervisor flag: not a guest) does not have it"
    if not present["rep_good"]:
        advice["rep_good"] = (
            f"missing: {why_family}. The kernel sets rep_good from the CPU vendor/family/model, so memcpy/memset "
            "fall back to slower loops. Host fix: host-passthrough (-cpu host, <cpu mode='host-passthrough'/>) "
            "or a named model of a recent family (e.g. Haswell-noTSX or newer).")
    if not present["erms"]:
        advice["erms"] = (
            f"missing: {why}. Enhanced REP MOVSB/STOSB (CPUID 7 EBX bit 9) makes string copies fast. "
            "Host fix: host-passthrough, or a named model with +erms "
            "(-cpu Haswell-noTSX,+erms; libvirt <feature policy='require' name='erms'/>).")
    if not present["fsrm"]:
        advice["fsrm"] = (
            f"missing: {why}. Fast Short REP MOVSB (CPUID 7 EDX bit 4) exists on Ice Lake and newer "
            "hosts only. Host fix where the host has it: host-passthrough or a named model with +fsrm.")
    return CpuFlags(vendor=vendor, model_name=model, hypervisor=guest, present=present, advice=advice)


class _Device(NamedTuple):
    """What the device behind a net device tells: driver, PCI address, virtio device,
    NUMA node, MSI vectors."""
    path: Optional[str] = None
    driver: Optional[str] = None
    bus: Optional[str] = None
    virtio: Optional[str] = None
    numa: Optional[int] = None
    msi: Tuple[int, ...] = ()


def _device_facts(root: Root, dev_path: str) -> _Device:
    driver = bus = virtio = None
    numa: Optional[int] = None
    msi: Tuple[int, ...] = ()
    if root.exists(dev_path + "/driver"):
        driver = posixpath.basename(root.resolve(dev_path + "/driver"))
    if re.fullmatch(r"virtio\d+", posixpath.basename(dev_path)):
        virtio = posixpath.basename(dev_path)
    # Walk up to the PCI function (virtio-net's device is a child of it).
    for p in _ancestors(dev_path):
        if PCI_ADDR.match(posixpath.basename(p)):
            bus = posixpath.basename(p)
            msi = tuple(sorted(int(x) for x in root.listdir(p + "/msi_irqs") if x.isdigit()))
            break
    for p in _ancestors(dev_path):
        node = _read_int(root, p + "/numa_node")
        if node is not None:
            numa = node if node >= 0 else None
            break
    return _Device(dev_path, driver, bus, virtio, numa, msi)


def _ancestors(path: str) -> Iterator[str]:
    """`path` and its parents, up to (not including) /sys/devices."""
    while path not in ("/", "/sys", "/sys/devices"):
        yield path
        path = posixpath.dirname(path)


def _queue_irq(irq: int, actions: List[str], pats: List[Tuple[Pattern[str], str]]) -> Optional[QueueIrq]:
    """The first action of an IRQ that names one of the interface's queues."""
    for action in actions:
        for pat, kind in pats:
            m = pat.match(action)
            if m:
                return QueueIrq(irq=irq, name=action, kind=kind, queue=int(m.group(1)))
    return None


def _assign_irqs(iface: Interface, interrupts: List[Tuple[int, List[str]]], msi: Sequence[int]) -> None:
    """Sort the interrupts that belong to the interface into queue IRQs and other IRQs."""
    pats = _queue_patterns(iface.name, iface.virtio, iface.bus_info)
    for irq, actions in interrupts:
        queue = _queue_irq(irq, actions, pats)
        if queue is not None:
            iface.queue_irqs.append(queue)
            continue
        for action in actions:
            if (_is_other_irq(action, iface.name, iface.virtio, iface.bus_info)
                    or (irq in msi and not _belongs_elsewhere(action, iface.name))):
                iface.other_irqs.append(OtherIrq(irq=irq, name=action))
                break
    iface.queue_irqs.sort(key=lambda q: (q.queue, q.kind, q.irq))


def _read_ethtool(iface: Interface, ethtool: Ethtool) -> None:
    try:
        iface.ethtool = ethtool.info(iface.name)
    except EthtoolError as e:
        iface.ethtool_error = str(e)
    if iface.driver is None and iface.ethtool is not None:
        iface.driver = iface.ethtool.driver


def discover_interface(root: Root, name: str, interrupts: List[Tuple[int, List[str]]],
                       ethtool: Optional[Ethtool]) -> Interface:
    base = f"/sys/class/net/{name}"
    has_device = root.exists(base + "/device")
    dev = _device_facts(root, root.resolve(base + "/device")) if has_device else _Device()
    queues = root.listdir(base + "/queues")
    iface = Interface(
        name=name, has_device=has_device, driver=dev.driver, bus_info=dev.bus, device_path=dev.path,
        virtio=dev.virtio, numa_node=dev.numa,
        rx_queues=sum(1 for q in queues if re.fullmatch(r"rx-\d+", q)),
        tx_queues=sum(1 for q in queues if re.fullmatch(r"tx-\d+", q)),
        operstate=root.read_value(base + "/operstate"),
    )
    _assign_irqs(iface, interrupts, dev.msi)
    for irq in [q.irq for q in iface.queue_irqs] + [o.irq for o in iface.other_irqs]:
        val = root.read_value(f"/proc/irq/{irq}/smp_affinity_list")
        if val is not None:
            iface.affinity[irq] = val
    if ethtool is not None:
        _read_ethtool(iface, ethtool)
    return iface


def _belongs_elsewhere(action: str, ifname: str) -> bool:
    # A PCI function's MSI vector named after another netdev's queue (multi-port functions).
    return bool(re.search(r"-(TxRx|rx|tx)-\d+$", action)) and not action.startswith(ifname)


def _cpus_file(root: Root, path: str) -> List[int]:
    """A CPU list file; kernels print "(null)" in nohz_full when it is unset."""
    text = root.read_value(path) or ""
    if not text or text == "(null)":
        return []
    return parse_cpulist(text, path)


def list_interfaces(root: Root) -> List[str]:
    return [n for n in root.listdir("/sys/class/net") if root.isdir(f"/sys/class/net/{n}")]


def default_interfaces(root: Root) -> List[str]:
    """Interfaces with a device behind them (PCI, virtio): the ones worth tuning by default."""
    return [n for n in list_interfaces(root) if root.exists(f"/sys/class/net/{n}/device")]


def discover(root: Root, ethtool: Optional[Ethtool], services: Optional[Services],
             interfaces: Optional[Iterable[str]] = None, sysctls: Iterable[str] = ()) -> Facts:
    """Collect facts. `interfaces` selects which ones get ethtool facts (default: all with a device)."""
    online = parse_cpulist(root.read_value("/sys/devices/system/cpu/online") or "", "online CPU list")
    possible = parse_cpulist(root.read_value("/sys/devices/system/cpu/possible") or "", "possible CPU list")
    if not online:
        online = [0]
    nr_cpu_ids = (max(possible) + 1) if possible else max(online) + 1
    nodes: Dict[int, List[int]] = {}
    for entry in root.listdir("/sys/devices/system/node"):
        m = re.fullmatch(r"node(\d+)", entry)
        if m:
            cpus = parse_cpulist(root.read_value(f"/sys/devices/system/node/{entry}/cpulist") or "",
                                 f"{entry} cpulist")
            nodes[int(m.group(1))] = cpus
    if not nodes:
        nodes = {0: list(online)}
    isolated = _cpus_file(root, "/sys/devices/system/cpu/isolated")
    nohz = _cpus_file(root, "/sys/devices/system/cpu/nohz_full")
    try:
        interrupts = parse_interrupts(root.read("/proc/interrupts"))
    except OSError:
        interrupts = []
    selected = set(interfaces) if interfaces is not None else set(default_interfaces(root))
    ifaces: Dict[str, Interface] = {}
    for name in list_interfaces(root):
        ifaces[name] = discover_interface(root, name, interrupts, ethtool if name in selected else None)
    values: Dict[str, Optional[str]] = {}
    for s in sorted(set(sysctls)):
        values[s] = root.read_value(sysctl_path(s))
    running = services.is_active("irqbalance") if services is not None else False
    return Facts(
        kernel=root.read_value("/proc/sys/kernel/osrelease"), online_cpus=online, nr_cpu_ids=nr_cpu_ids,
        nodes=nodes, isolated=isolated, nohz_full=nohz, cpu_flags=discover_cpu_flags(root),
        irqbalance_running=running, interfaces=ifaces, sysctls=values,
        managers=detect_managers(root, sorted(selected & set(ifaces))),
    )


def format_facts(facts: Facts, selected: Optional[Iterable[str]] = None) -> str:
    """A person-readable report of the facts."""
    out = _format_host(facts)
    wanted = set(selected) if selected is not None else None
    for name, itf in sorted(facts.interfaces.items()):
        if wanted is not None and name not in wanted:
            continue
        if not itf.has_device and (wanted is None):
            out.append(f"\n{name}: virtual ({itf.rx_queues} rx / {itf.tx_queues} tx queues)")
            continue
        out += _format_interface(itf)
    return "\n".join(out) + "\n"


def _format_host(facts: Facts) -> List[str]:
    out: List[str] = []
    out.append(f"kernel        {facts.kernel or 'unknown'}")
    out.append(f"online CPUs   {format_cpulist(facts.online_cpus)} (nr_cpu_ids {facts.nr_cpu_ids})")
    for node, cpus in sorted(facts.nodes.items()):
        out.append(f"node {node:<8} CPUs {format_cpulist(cpus) or '-'}")
    out.append(f"isolated      {format_cpulist(facts.isolated) or 'none'}"
               + (f"   nohz_full {format_cpulist(facts.nohz_full)}" if facts.nohz_full else ""))
    out.append(f"irqbalance    {'running' if facts.irqbalance_running else 'not running'}")
    out += format_managers(facts.managers)
    fl = facts.cpu_flags
    out.append(f"CPU           {fl.model_name or 'unknown'} ({fl.vendor or '?'}"
               f"{', guest' if fl.hypervisor else ''})")
    out.append("string ops    " + "  ".join(f"{k}:{'yes' if v else 'NO'}" for k, v in fl.present.items()))
    for flag, text in fl.advice.items():
        out.append(f"  {flag}: {text}")
    return out


def _format_interface(itf: Interface) -> List[str]:
    out: List[str] = []
    out.append(f"\n{itf.name}: driver {itf.driver or '?'}  bus {itf.bus_info or '-'}"
               f"  NUMA node {itf.numa_node if itf.numa_node is not None else 'unknown'}"
               f"  state {itf.operstate or '?'}")
    out.append(f"  queues        {itf.rx_queues} rx / {itf.tx_queues} tx")
    for q in itf.queue_irqs:
        out.append(f"  IRQ {q.irq:<5} {q.name:<28} queue {q.queue} ({q.kind})"
                   f"  affinity {itf.affinity.get(q.irq, '?')}")
    for o in itf.other_irqs:
        out.append(f"  IRQ {o.irq:<5} {o.name:<28} (not a queue)  affinity {itf.affinity.get(o.irq, '?')}")
    if itf.ethtool_error:
        out.append(f"  ethtool       unavailable: {itf.ethtool_error}")
    elif itf.ethtool:
        out += _format_ethtool(itf.ethtool)
    return out


def _format_ethtool(e: EthtoolInfo) -> List[str]:
    out: List[str] = []
    if e.channels:
        out.append("  channels      " + _fmt_mc(e.channels))
    if e.rings:
        out.append("  rings         " + _fmt_mc(e.rings))
    if e.pause is not None:
        out.append("  pause         " + " ".join(f"{k} {'on' if v else 'off'}" for k, v in e.pause.items()))
    if e.coalesce is not None:
        keys = ("adaptive-rx", "adaptive-tx", "rx-usecs", "tx-usecs")
        out.append("  coalesce      " + " ".join(f"{k} {_fmt_val(e.coalesce.get(k))}" for k in keys))
    if e.features is not None:
        for feat in ("tx-nocache-copy", "ntuple-filters"):
            f = e.features.get(feat)
            if f is not None:
                out.append(f"  {feat:<13} {'on' if f['on'] else 'off'}{' (fixed)' if f['fixed'] else ''}")
    for op, err in sorted(e.errors.items()):
        out.append(f"  ethtool {op}: {err}")
    return out


def _fmt_val(v: Any) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _fmt_mc(section: Dict[str, Dict[str, Optional[int]]]) -> str:
    cur = ", ".join(f"{k} {v}" for k, v in section["current"].items() if v is not None)
    top = ", ".join(f"{k} {v}" for k, v in section["max"].items() if v is not None)
    return f"{cur} (max {top})"
