"""The plan: a pure function of discovered facts and a configuration.

`make_plan(facts, config)` reads nothing and changes nothing. It returns the list
of settings the system should have (each with the reason for it) and the queue
layout behind them. The same facts and configuration always give the same plan,
and `Plan.to_json()` is stable (sorted, no timestamps, no paths of the tree).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

from .cpus import format_cpulist, format_mask, parse_cpulist
from .discover import Facts, Interface, iface_sysctl, sysctl_path
from .errors import UsageError
from .kinds import DROPIN_RELOAD, kind_of
from .managers import plan_settings
from .profiles import PROFILES, REASONS, Config, Profile

STAGE_ETHTOOL = 0   # may re-create queues and IRQs: discovery runs again after it
STAGE_SYSTEM = 1

# Drivers that refuse tx-usecs when a queue pair shares one MSI-X vector (ixgbe, igb family).
PAIRED_VECTOR_DRIVERS = ("ixgbe", "ixgbevf", "igb", "igc")

IRQBALANCE_DROPIN = "/etc/systemd/system/irqbalance.service.d/90-nettune.conf"


@dataclass
class Setting:
    key: str              # stable identity of the setting
    kind: str             # irq | mask | sysctl | ethtool | service | file | nm
    target: str           # file path; ethtool operation; service name
    want: Any             # str (files), dict (ethtool), bool (service active), str|None (file), dict (nm)
    reason: str
    iface: Optional[str] = None
    label: str = ""       # what a person calls it: "IRQ 24 eth0-TxRx-0"
    stage: int = STAGE_SYSTEM
    irq_action: Optional[str] = None   # kind irq: the action name, stable where the number is not

    def to_json(self) -> Dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "target": self.target, "want": self.want,
                "reason": self.reason, "iface": self.iface, "label": self.label, "stage": self.stage}


@dataclass
class Layout:
    iface: str
    driver: Optional[str]
    numa_node: Optional[int]
    cpus: List[int]                 # CPUs this NIC's queues may use
    queues: int                     # queue pairs after the plan
    queue_cpu: Dict[int, int]       # queue index -> CPU
    rps_cpus: List[int]

    def to_json(self) -> Dict[str, Any]:
        return {"driver": self.driver, "numa_node": self.numa_node, "cpus": format_cpulist(self.cpus),
                "queues": self.queues, "queue_cpu": {str(k): v for k, v in sorted(self.queue_cpu.items())},
                "rps_cpus": format_cpulist(self.rps_cpus)}


@dataclass
class Plan:
    profile: str
    housekeeping: List[int]
    layouts: Dict[str, Layout]
    settings: List[Setting]
    notes: List[str] = field(default_factory=list)
    post_commands: Dict[str, List[List[str]]] = field(default_factory=dict)  # after a file setting changes

    def to_json(self) -> Dict[str, Any]:
        return {
            "profile": self.profile, "housekeeping": format_cpulist(self.housekeeping),
            "interfaces": {k: v.to_json() for k, v in sorted(self.layouts.items())},
            "settings": [s.to_json() for s in self.settings], "notes": list(self.notes),
        }

    def stage(self, stage: int) -> List[Setting]:
        return [s for s in self.settings if s.stage == stage]


def sysctl_names(config: Config, interfaces: List[str]) -> List[str]:
    """Every sysctl a plan for this configuration may touch (discovery reads these)."""
    names: Set[str] = set()
    for prof in PROFILES.values():
        names.update(prof.sysctls)
        for tmpl in prof.iface_sysctls:
            for itf in interfaces:
                names.add(_iface_key(tmpl, itf))
    names.update(config.sysctls)
    return sorted(names)


def _iface_key(template: str, ifname: str) -> str:
    prefix, _, leaf = template.partition(".{if}.")
    return iface_sysctl(prefix, ifname, leaf)


def _check_cpus(text: str, what: str, facts: Facts) -> List[int]:
    cpus = parse_cpulist(text, what)
    outside = [c for c in cpus if c not in facts.online_cpus]
    if outside:
        raise UsageError(f"{what} {text!r} names CPU {format_cpulist(outside)}, which this machine does not "
                         f"have online (online CPUs: {format_cpulist(facts.online_cpus)})")
    if not cpus:
        raise UsageError(f"{what} {text!r} is empty")
    return cpus


def select_interfaces(facts: Facts, config: Config) -> List[str]:
    if config.interfaces:
        unknown = [n for n in config.interfaces if n not in facts.interfaces]
        if unknown:
            raise UsageError(f"unknown interface {', '.join(unknown)} (this machine has: "
                             f"{', '.join(sorted(facts.interfaces)) or 'none'})")
        return sorted(set(config.interfaces))
    return sorted(n for n, i in facts.interfaces.items() if i.has_device)


def _housekeeping(facts: Facts, config: Config) -> List[int]:
    if config.housekeeping is None:
        online = facts.online_cpus
        return [0] if len(online) > 2 and 0 in online else []
    if config.housekeeping.strip().lower() == "none":
        return []
    return _check_cpus(config.housekeeping, "housekeeping CPU list", facts)


def _pool(facts: Facts, config: Config, itf: Interface, hk: List[int], notes: List[str]) -> List[int]:
    if config.cpus:
        cpus = _check_cpus(config.cpus, "CPU list", facts)
        if itf.numa_node is not None and any(facts.cpu_node(c) != itf.numa_node for c in cpus):
            notes.append(f"{itf.name}: CPU list {format_cpulist(cpus)} reaches beyond the NIC's NUMA node "
                         f"{itf.numa_node} (as configured)")
        return cpus
    usable = [c for c in facts.online_cpus if c not in hk and c not in facts.isolated]
    if itf.numa_node is not None and itf.numa_node in facts.nodes:
        local = [c for c in facts.nodes[itf.numa_node] if c in usable]
        if local:
            return local
        notes.append(f"{itf.name}: NUMA node {itf.numa_node} has no usable CPU; using all nodes")
    if usable:
        return usable
    notes.append(f"{itf.name}: every online CPU is housekeeping or isolated; queues share them")
    return list(facts.online_cpus)


def _profile_rings(prof: Profile, config: Config, driver: Optional[str]) -> Dict[str, int]:
    rings = dict(prof.rings)
    rings.update(prof.rings_by_driver.get(driver or "", {}))
    rings.update(config.rings)
    return rings


@dataclass
class _Inputs:
    """What every section of a plan reads, and the notes the sections add."""

    facts: Facts
    config: Config
    prof: Profile
    hk: List[int]
    notes: List[str]

    def wants(self, category: str) -> bool:
        return category not in self.config.skip


def make_plan(facts: Facts, config: Config) -> Plan:
    if config.profile not in PROFILES:
        raise UsageError(f"unknown profile {config.profile!r} (choose from {', '.join(PROFILES)})")
    prof = PROFILES[config.profile]
    ifnames = select_interfaces(facts, config)
    hk = _housekeeping(facts, config)
    if config.cpus:
        both = sorted(set(_check_cpus(config.cpus, "CPU list", facts)) & set(hk))
        if both and config.housekeeping is not None:
            raise UsageError(f"CPU {format_cpulist(both)} is both a housekeeping CPU and a queue CPU")
        if both:
            hk = [c for c in hk if c not in both]
    inp = _Inputs(facts, config, prof, hk, notes=[])
    if not ifnames:
        inp.notes.append("no interface to tune (none has a device behind it; name one with -i)")
    settings: List[Setting] = []
    layouts: Dict[str, Layout] = {}
    for name in ifnames:
        nic_settings, layouts[name] = _interface(inp, facts.interfaces[name])
        settings += nic_settings
    settings += _sysctls(inp, ifnames)
    settings += plan_settings(facts.managers, settings, inp.notes)
    irqbalance, post = _irqbalance(inp, settings, layouts)
    return Plan(profile=prof.name, housekeeping=hk, layouts=layouts, settings=settings + irqbalance,
                notes=inp.notes, post_commands=post)


def _interface(inp: _Inputs, itf: Interface) -> Tuple[List[Setting], Layout]:
    """One NIC: queue count, ethtool settings, IRQ affinity, XPS and RPS."""
    pool = _pool(inp.facts, inp.config, itf, inp.hk, inp.notes)
    if itf.ethtool is None and itf.has_device:
        inp.notes.append(f"{itf.name}: ethtool settings left out ({itf.ethtool_error or 'no ethtool facts'})")
    settings, nq = _channels(inp, itf, pool)
    queue_cpu = {q: pool[q % len(pool)] for q in range(nq)}
    if nq > len(pool):
        inp.notes.append(f"{itf.name}: {nq} queues on {len(pool)} CPUs; some CPUs serve more than one queue")
    if itf.ethtool is not None:
        settings += _rings(inp, itf)
        settings += _coalesce(inp, itf)
        settings += _pause(inp, itf)
        settings += _features(inp, itf)
    if inp.wants("irq"):
        settings += _irq_affinity(inp, itf, nq, queue_cpu, pool)
    settings += _xps(inp, itf, nq, queue_cpu)
    config = inp.config
    rps_on = config.rps == "on" or (config.rps == "auto" and nq < len(pool))
    rps_cpus = list(pool) if rps_on else []
    settings += _rps(inp, itf, nq, rps_cpus)
    return settings, Layout(iface=itf.name, driver=itf.driver, numa_node=itf.numa_node, cpus=pool,
                            queues=nq, queue_cpu=queue_cpu, rps_cpus=rps_cpus)


def _ethtool(itf: Interface, op: str, want: Dict[str, Any], reason: str, label: str,
             key: str = "") -> List[Setting]:
    """One ethtool operation's setting; none when there is nothing to set."""
    if not want:
        return []
    return [Setting(key=f"ethtool:{itf.name}:{key or op}", kind="ethtool", target=op, want=want, reason=reason,
                    iface=itf.name, label=label, stage=STAGE_ETHTOOL)]


def _reason(overridden: object, profile_reason: str) -> str:
    """Why a value: the operator's override, or the profile's reason."""
    return REASONS["override"] if overridden else REASONS[profile_reason]


def _channels(inp: _Inputs, itf: Interface, pool: List[int]) -> Tuple[List[Setting], int]:
    """The queue count after the plan, and the channels setting that makes it so."""
    nq = len(itf.queue_indices()) or max(itf.rx_queues, itf.tx_queues, 1)
    ch = itf.ethtool.channels if itf.ethtool is not None else None
    if ch is None:
        return [], nq
    cur = ch["current"]
    nq = (cur.get("combined") or 0) + min(cur.get("rx") or 0, cur.get("tx") or 0) or nq
    if not inp.wants("channels") or inp.config.channels == "keep":
        return [], nq
    limit, keys = _channel_limit(ch["max"])
    if not keys:
        return [], nq
    if inp.config.channels == "auto":
        want = min(len(pool), limit)
    else:
        want = int(inp.config.channels)
        if want > limit:
            raise UsageError(f"{itf.name}: channels {want} is above the driver's maximum {limit}")
    return _ethtool(itf, "channels", {k: want for k in keys}, REASONS["channels"], "channels"), want


def _channel_limit(top: Dict[str, Optional[int]]) -> Tuple[int, Tuple[str, ...]]:
    """The most queues the driver allows and the channel keys that set them
    (combined, else rx and tx together; none: the count cannot be set)."""
    top_combined, top_rx, top_tx = top.get("combined") or 0, top.get("rx") or 0, top.get("tx") or 0
    if top_combined:
        return top_combined, ("combined",)
    if top_rx and top_tx:
        return min(top_rx, top_tx), ("rx", "tx")
    return 0, ()


def _rings(inp: _Inputs, itf: Interface) -> List[Setting]:
    eth, config, prof = itf.ethtool, inp.config, inp.prof
    if eth is None or eth.rings is None or not inp.wants("rings"):
        return []
    want: Dict[str, int] = {}
    for rkey, rval in _profile_rings(prof, config, itf.driver).items():
        top = eth.rings["max"].get(rkey)
        if top:
            want[rkey] = min(rval, top)
        elif rkey in config.rings:
            raise UsageError(f"{itf.name}: the driver does not let {rkey} ring size be set")
    return _ethtool(itf, "rings", want, _reason(config.rings, prof.rings_reason), "ring sizes")


def _coalesce(inp: _Inputs, itf: Interface) -> List[Setting]:
    eth, config, prof = itf.ethtool, inp.config, inp.prof
    if eth is None or eth.coalesce is None or not inp.wants("coalesce"):
        return []
    coalesce = dict(prof.coalesce)
    coalesce.update(config.coalesce)
    want = {k: v for k, v in coalesce.items() if eth.coalesce.get(k) is not None}
    if (itf.driver in PAIRED_VECTOR_DRIVERS and "tx-usecs" in want
            and (not itf.queue_irqs or any(qi.kind == "txrx" for qi in itf.queue_irqs))):
        # These drivers reject a non-zero tx-usecs while RX and TX share a vector;
        # rx-usecs then sets the rate of the shared vector.
        del want["tx-usecs"]
        inp.notes.append(f"{itf.name}: {itf.driver} shares one vector per queue pair; rx-usecs "
                         f"sets its rate, tx-usecs is left alone")
    missing = sorted(k for k in config.coalesce if eth.coalesce.get(k) is None)
    if missing:
        raise UsageError(f"{itf.name}: the driver does not support coalescing parameter {', '.join(missing)}")
    return _ethtool(itf, "coalesce", want, _reason(config.coalesce, prof.coalesce_reason), "interrupt coalescing")


def _pause(inp: _Inputs, itf: Interface) -> List[Setting]:
    config = inp.config
    flow_off = inp.prof.flow_control_off if config.flow_control_off is None else config.flow_control_off
    if itf.ethtool is None or itf.ethtool.pause is None or not flow_off or not inp.wants("pause"):
        return []
    return _ethtool(itf, "pause", {"autoneg": False, "rx": False, "tx": False}, REASONS["pause"], "flow control")


def _features(inp: _Inputs, itf: Interface) -> List[Setting]:
    eth, config = itf.ethtool, inp.config
    if eth is None or eth.features is None or not inp.wants("features"):
        return []
    features: Dict[str, Optional[bool]] = dict(inp.prof.features)
    features.update(config.features)
    settings: List[Setting] = []
    for feat, fval in sorted(features.items()):
        if fval is None:
            continue
        have = eth.features.get(feat)
        if have is None:
            if feat in config.features:
                raise UsageError(f"{itf.name}: no such feature {feat!r} (see ethtool -k {itf.name})")
            continue
        if have["fixed"]:
            if have["on"] != fval:
                inp.notes.append(f"{itf.name}: {feat} is fixed {'on' if have['on'] else 'off'} by the driver")
            continue
        settings += _ethtool(itf, "features", {feat: fval}, REASONS.get(feat, REASONS["override"]),
                             f"feature {feat}", key=f"feature:{feat}")
    return settings


def _irq(itf: Interface, irq: int, action: str, cpus: List[int], reason: str) -> Setting:
    return Setting(key=f"irq:{itf.name}:{action}", kind="irq", target=f"/proc/irq/{irq}/smp_affinity_list",
                   want=format_cpulist(cpus), reason=reason, iface=itf.name, label=f"IRQ {irq} {action}",
                   irq_action=action)


def _irq_affinity(inp: _Inputs, itf: Interface, nq: int, queue_cpu: Dict[int, int],
                  pool: List[int]) -> List[Setting]:
    """Queue N's vectors to queue CPU N; the NIC's other vectors to housekeeping CPUs on its node."""
    hk = inp.hk
    settings = [_irq(itf, qi.irq, qi.name, [queue_cpu[qi.queue]], REASONS["irq"])
                for qi in itf.queue_irqs if qi.queue < nq]
    _note_queues_without_irqs(inp, itf, nq)
    other_cpus = list(hk)
    if hk and itf.numa_node is not None:
        # Keep the NIC's other vectors on its own node too: local housekeeping CPUs,
        # else the NIC's queue CPUs (these vectors fire rarely).
        other_cpus = [c for c in hk if inp.facts.cpu_node(c) == itf.numa_node] or list(pool)
    if other_cpus:
        settings += [_irq(itf, o.irq, o.name, other_cpus, REASONS["other_irq"]) for o in itf.other_irqs]
    return settings


def _note_queues_without_irqs(inp: _Inputs, itf: Interface, nq: int) -> None:
    present = itf.queue_indices()
    missing_q = [q for q in range(nq) if q not in present]
    if present and missing_q and (itf.ethtool is None or itf.ethtool.channels is None):
        inp.notes.append(f"{itf.name}: queue {format_cpulist(missing_q)} has no IRQ of its own")
    if not itf.queue_irqs and itf.has_device:
        inp.notes.append(f"{itf.name}: no per-queue IRQ found (legacy or shared interrupt); "
                         "IRQ affinity left alone")


def _mask(itf: Interface, key: str, queue: str, leaf: str, cpus: List[int], nr: int, reason: str) -> Setting:
    return Setting(key=f"{key}:{itf.name}:{queue}", kind="mask",
                   target=f"/sys/class/net/{itf.name}/queues/{queue}/{leaf}", want=format_mask(cpus, nr),
                   reason=reason, iface=itf.name, label=f"{queue} {key.upper()}")


def _xps(inp: _Inputs, itf: Interface, nq: int, queue_cpu: Dict[int, int]) -> List[Setting]:
    """tx-N/xps_cpus = the CPU of queue pair N (multiqueue NICs only)."""
    if not inp.wants("xps") or not inp.config.xps or itf.tx_queues <= 1:
        return []
    return [_mask(itf, "xps", f"tx-{q}", "xps_cpus", [queue_cpu[q]], inp.facts.nr_cpu_ids, REASONS["xps"])
            for q in range(min(nq, itf.tx_queues))]


def _rps(inp: _Inputs, itf: Interface, nq: int, rps_cpus: List[int]) -> List[Setting]:
    """Every RX queue spreads receive work over `rps_cpus`; none: RPS set explicitly off."""
    if not inp.wants("rps"):
        return []
    reason = REASONS["rps_on" if rps_cpus else "rps_off"]
    return [_mask(itf, "rps", f"rx-{q}", "rps_cpus", rps_cpus, inp.facts.nr_cpu_ids, reason)
            for q in range(min(nq, itf.rx_queues))]


def _sysctls(inp: _Inputs, ifnames: List[str]) -> List[Setting]:
    """The profile's sysctls, per tuned interface where the profile says so, and the overrides."""
    if not inp.wants("sysctl"):
        return []
    prof, config = inp.prof, inp.config
    wanted: Dict[str, Optional[str]] = dict(prof.sysctls)
    reasons = {k: REASONS.get(k, REASONS["override"]) for k in wanted}
    for tmpl, tval in prof.iface_sysctls.items():
        for name in ifnames:
            key = _iface_key(tmpl, name)
            wanted[key] = tval
            reasons[key] = REASONS["rp_filter_iface"] if tmpl.endswith("rp_filter") else REASONS["override"]
    for key, oval in config.sysctls.items():
        wanted[key] = oval
        reasons[key] = REASONS["override"]
    settings: List[Setting] = []
    for key in sorted(wanted):
        val = wanted[key]
        if val is None:
            continue
        if inp.facts.sysctls.get(key) is None:
            if key in config.sysctls:
                raise UsageError(f"sysctl {key} does not exist on this machine ({sysctl_path(key)})")
            inp.notes.append(f"sysctl {key} not present on this kernel; left out")
            continue
        settings.append(Setting(key=f"sysctl:{key}", kind="sysctl", target=sysctl_path(key), want=val,
                                reason=reasons[key], label=f"sysctl {key}"))
    return settings


def _irqbalance(inp: _Inputs, settings: List[Setting],
                layouts: Dict[str, Layout]) -> Tuple[List[Setting], Dict[str, List[List[str]]]]:
    """Stop irqbalance, or keep it off the tuned IRQs and queue CPUs with a drop-in (and the
    commands that make systemd and irqbalance read it)."""
    if not inp.wants("irqbalance") or inp.config.irqbalance not in ("stop", "ban"):
        return [], {}
    if inp.config.irqbalance == "stop":
        return [Setting(key="service:irqbalance", kind="service", target="irqbalance", want=False,
                        reason=REASONS["irqbalance_stop"], label="irqbalance running", stage=STAGE_ETHTOOL)], {}
    irqs = sorted({int(s.target.split("/")[3]) for s in settings if s.kind == "irq"})
    cpus = sorted({c for lay in layouts.values() for c in lay.queue_cpu.values()})
    key = f"file:{IRQBALANCE_DROPIN}"
    return ([Setting(key=key, kind="file", target=IRQBALANCE_DROPIN, want=_irqbalance_dropin(irqs, cpus),
                     reason=REASONS["irqbalance_ban"], label="irqbalance drop-in")],
            {key: [list(argv) for argv in DROPIN_RELOAD]})


def _irqbalance_dropin(irqs: List[int], cpus: List[int]) -> str:
    bans = " ".join(f"--banirq={i}" for i in irqs)
    return ("# Written by nettune: keep irqbalance away from the tuned NIC queues.\n"
            "[Service]\n"
            f"Environment=IRQBALANCE_BANNED_CPULIST={format_cpulist(cpus)}\n"
            "ExecStart=\n"
            f"ExecStart=/usr/sbin/irqbalance --foreground $IRQBALANCE_ARGS {bans}\n")


def format_want(s: Setting) -> str:
    return kind_of(s.kind).show_planned(s.want)


def format_plan(plan: Plan) -> str:
    out: List[str] = [f"profile {plan.profile}; housekeeping CPUs: {format_cpulist(plan.housekeeping) or 'none'}"]
    for name, lay in sorted(plan.layouts.items()):
        node = lay.numa_node if lay.numa_node is not None else "unknown"
        out.append(f"\n{name} ({lay.driver or '?'}, NUMA node {node}): {lay.queues} queue(s) on CPUs "
                   f"{format_cpulist(lay.cpus)}")
        pairs = ", ".join(f"q{q}->cpu{c}" for q, c in sorted(lay.queue_cpu.items()))
        out.append(f"  queue -> CPU   {pairs}")
        out.append(f"  RPS           {('CPUs ' + format_cpulist(lay.rps_cpus)) if lay.rps_cpus else 'off'}")
    last_reason = None
    out.append("\nsettings:")
    for s in plan.settings:
        who = f"{s.iface} " if s.iface else ""
        out.append(f"  {who}{s.label:<34} = {format_want(s)}")
        if s.reason != last_reason:
            out.append(f"      why: {s.reason}")
            last_reason = s.reason
    if plan.notes:
        out.append("\nnotes:")
        out.extend(f"  - {n}" for n in plan.notes)
    return "\n".join(out) + "\n"
