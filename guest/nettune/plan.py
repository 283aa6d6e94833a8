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
from .profiles import PROFILES, REASONS, Config, Profile

STAGE_ETHTOOL = 0   # may re-create queues and IRQs: discovery runs again after it
STAGE_SYSTEM = 1

# Drivers that refuse tx-usecs when a queue pair shares one MSI-X vector (ixgbe, igb family).
PAIRED_VECTOR_DRIVERS = ("ixgbe", "ixgbevf", "igb", "igc")

IRQBALANCE_DROPIN = "/etc/systemd/system/irqbalance.service.d/90-nettune.conf"


@dataclass
class Setting:
    key: str              # stable identity of the setting
    kind: str             # irq | mask | sysctl | ethtool | service | file
    target: str           # file path; ethtool operation; service name
    want: Any             # str (files), dict (ethtool), bool (service active), str|None (file)
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
    skip = set(config.skip)
    notes: List[str] = []
    settings: List[Setting] = []
    layouts: Dict[str, Layout] = {}
    nr = facts.nr_cpu_ids
    flow_off = prof.flow_control_off if config.flow_control_off is None else config.flow_control_off
    features: Dict[str, Optional[bool]] = dict(prof.features)
    features.update(config.features)
    coalesce = dict(prof.coalesce)
    coalesce.update(config.coalesce)
    coalesce_reason = REASONS["override"] if config.coalesce else REASONS[prof.coalesce_reason]
    if not ifnames:
        notes.append("no interface to tune (none has a device behind it; name one with -i)")

    for name in ifnames:
        itf = facts.interfaces[name]
        eth = itf.ethtool
        pool = _pool(facts, config, itf, hk, notes)
        if eth is None and itf.has_device:
            notes.append(f"{name}: ethtool settings left out ({itf.ethtool_error or 'no ethtool facts'})")

        # --- queue count ----------------------------------------------------------------
        present = itf.queue_indices()
        nq = len(present) or max(itf.rx_queues, itf.tx_queues, 1)
        ch = eth.channels if eth is not None else None
        if ch is not None:
            cur = ch["current"]
            nq = (cur.get("combined") or 0) + min(cur.get("rx") or 0, cur.get("tx") or 0) or nq
        if ch is not None and "channels" not in skip and config.channels != "keep":
            top = ch["max"]
            limit = 0
            keys: Tuple[str, ...] = ()
            top_combined, top_rx, top_tx = top.get("combined") or 0, top.get("rx") or 0, top.get("tx") or 0
            if top_combined:
                limit, keys = top_combined, ("combined",)
            elif top_rx and top_tx:
                limit, keys = min(top_rx, top_tx), ("rx", "tx")
            if keys:
                if config.channels == "auto":
                    want = min(len(pool), limit)
                else:
                    want = int(config.channels)
                    if want > limit:
                        raise UsageError(f"{name}: channels {want} is above the driver's maximum {limit}")
                settings.append(Setting(
                    key=f"ethtool:{name}:channels", kind="ethtool", target="channels",
                    want={k: want for k in keys}, reason=REASONS["channels"], iface=name,
                    label="channels", stage=STAGE_ETHTOOL))
                nq = want
        queue_cpu = {q: pool[q % len(pool)] for q in range(nq)}
        if nq > len(pool):
            notes.append(f"{name}: {nq} queues on {len(pool)} CPUs; some CPUs serve more than one queue")

        # --- ethtool ------------------------------------------------------------------------
        if eth is not None:
            if eth.rings is not None and "rings" not in skip:
                want_r: Dict[str, int] = {}
                for rkey, rval in _profile_rings(prof, config, itf.driver).items():
                    top_r = eth.rings["max"].get(rkey)
                    if top_r:
                        want_r[rkey] = min(rval, top_r)
                    elif rkey in config.rings:
                        raise UsageError(f"{name}: the driver does not let {rkey} ring size be set")
                if want_r:
                    reason = REASONS["override"] if config.rings else REASONS[prof.rings_reason]
                    settings.append(Setting(key=f"ethtool:{name}:rings", kind="ethtool", target="rings",
                                            want=want_r, reason=reason, iface=name, label="ring sizes",
                                            stage=STAGE_ETHTOOL))
            if eth.coalesce is not None and "coalesce" not in skip:
                want_c = {k: v for k, v in coalesce.items() if eth.coalesce.get(k) is not None}
                if (itf.driver in PAIRED_VECTOR_DRIVERS and "tx-usecs" in want_c
                        and (not itf.queue_irqs or any(qi.kind == "txrx" for qi in itf.queue_irqs))):
                    # These drivers reject a non-zero tx-usecs while RX and TX share a vector;
                    # rx-usecs then sets the rate of the shared vector.
                    del want_c["tx-usecs"]
                    notes.append(f"{name}: {itf.driver} shares one vector per queue pair; rx-usecs "
                                 f"sets its rate, tx-usecs is left alone")
                missing = sorted(k for k in config.coalesce if eth.coalesce.get(k) is None)
                if missing:
                    raise UsageError(f"{name}: the driver does not support coalescing parameter "
                                     f"{', '.join(missing)}")
                if want_c:
                    settings.append(Setting(key=f"ethtool:{name}:coalesce", kind="ethtool", target="coalesce",
                                            want=want_c, reason=coalesce_reason, iface=name,
                                            label="interrupt coalescing", stage=STAGE_ETHTOOL))
            if eth.pause is not None and flow_off and "pause" not in skip:
                settings.append(Setting(key=f"ethtool:{name}:pause", kind="ethtool", target="pause",
                                        want={"autoneg": False, "rx": False, "tx": False},
                                        reason=REASONS["pause"], iface=name, label="flow control",
                                        stage=STAGE_ETHTOOL))
            if eth.features is not None and "features" not in skip:
                for feat, fval in sorted(features.items()):
                    if fval is None:
                        continue
                    have = eth.features.get(feat)
                    if have is None:
                        if feat in config.features:
                            raise UsageError(f"{name}: no such feature {feat!r} (see ethtool -k {name})")
                        continue
                    if have["fixed"]:
                        if have["on"] != fval:
                            notes.append(f"{name}: {feat} is fixed {'on' if have['on'] else 'off'} by the driver")
                        continue
                    settings.append(Setting(
                        key=f"ethtool:{name}:feature:{feat}", kind="ethtool", target="features",
                        want={feat: fval}, reason=REASONS.get(feat, REASONS["override"]), iface=name,
                        label=f"feature {feat}", stage=STAGE_ETHTOOL))

        # --- IRQ affinity ---------------------------------------------------------------------
        if "irq" not in skip:
            for qi in itf.queue_irqs:
                if qi.queue >= nq:
                    continue
                settings.append(Setting(
                    key=f"irq:{name}:{qi.name}", kind="irq", target=f"/proc/irq/{qi.irq}/smp_affinity_list",
                    want=format_cpulist([queue_cpu[qi.queue]]), reason=REASONS["irq"], iface=name,
                    label=f"IRQ {qi.irq} {qi.name}", irq_action=qi.name))
            missing_q = [q for q in range(nq) if q not in present]
            if present and missing_q and ch is None:
                notes.append(f"{name}: queue {format_cpulist(missing_q)} has no IRQ of its own")
            if not itf.queue_irqs and itf.has_device:
                notes.append(f"{name}: no per-queue IRQ found (legacy or shared interrupt); "
                             f"IRQ affinity left alone")
            other_cpus = list(hk)
            if hk and itf.numa_node is not None:
                # Keep the NIC's other vectors on its own node too: local housekeeping CPUs,
                # else the NIC's queue CPUs (these vectors fire rarely).
                other_cpus = [c for c in hk if facts.cpu_node(c) == itf.numa_node] or list(pool)
            if other_cpus:
                for o in itf.other_irqs:
                    settings.append(Setting(
                        key=f"irq:{name}:{o.name}", kind="irq", target=f"/proc/irq/{o.irq}/smp_affinity_list",
                        want=format_cpulist(other_cpus), reason=REASONS["other_irq"], iface=name,
                        label=f"IRQ {o.irq} {o.name}", irq_action=o.name))

        # --- XPS / RPS ------------------------------------------------------------------------
        if "xps" not in skip and config.xps and itf.tx_queues > 1:
            for q in range(min(nq, itf.tx_queues)):
                settings.append(Setting(
                    key=f"xps:{name}:tx-{q}", kind="mask", target=f"/sys/class/net/{name}/queues/tx-{q}/xps_cpus",
                    want=format_mask([queue_cpu[q]], nr), reason=REASONS["xps"], iface=name,
                    label=f"tx-{q} XPS"))
        rps_on = config.rps == "on" or (config.rps == "auto" and nq < len(pool))
        rps_cpus = list(pool) if rps_on else []
        if "rps" not in skip:
            for q in range(min(nq, itf.rx_queues)):
                settings.append(Setting(
                    key=f"rps:{name}:rx-{q}", kind="mask", target=f"/sys/class/net/{name}/queues/rx-{q}/rps_cpus",
                    want=format_mask(rps_cpus, nr), reason=REASONS["rps_on" if rps_on else "rps_off"],
                    iface=name, label=f"rx-{q} RPS"))
        layouts[name] = Layout(iface=name, driver=itf.driver, numa_node=itf.numa_node, cpus=pool,
                               queues=nq, queue_cpu=queue_cpu, rps_cpus=rps_cpus)

    # --- sysctls ------------------------------------------------------------------------------
    if "sysctl" not in skip:
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
        for key in sorted(wanted):
            val = wanted[key]
            if val is None:
                continue
            if facts.sysctls.get(key) is None:
                if key in config.sysctls:
                    raise UsageError(f"sysctl {key} does not exist on this machine ({sysctl_path(key)})")
                notes.append(f"sysctl {key} not present on this kernel; left out")
                continue
            settings.append(Setting(key=f"sysctl:{key}", kind="sysctl", target=sysctl_path(key), want=val,
                                    reason=reasons[key], label=f"sysctl {key}"))

    # --- irqbalance -------------------------------------------------------------------------------
    post: Dict[str, List[List[str]]] = {}
    if "irqbalance" not in skip and config.irqbalance == "stop":
        settings.append(Setting(key="service:irqbalance", kind="service", target="irqbalance", want=False,
                                reason=REASONS["irqbalance_stop"], label="irqbalance running", stage=STAGE_ETHTOOL))
    elif "irqbalance" not in skip and config.irqbalance == "ban":
        irqs = sorted({int(s.target.split("/")[3]) for s in settings if s.kind == "irq"})
        cpus = sorted({c for lay in layouts.values() for c in lay.queue_cpu.values()})
        content = _irqbalance_dropin(irqs, cpus)
        settings.append(Setting(key=f"file:{IRQBALANCE_DROPIN}", kind="file", target=IRQBALANCE_DROPIN,
                                want=content, reason=REASONS["irqbalance_ban"], label="irqbalance drop-in"))
        post[f"file:{IRQBALANCE_DROPIN}"] = [["systemctl", "daemon-reload"],
                                             ["systemctl", "try-restart", "irqbalance.service"]]
    return Plan(profile=prof.name, housekeeping=hk, layouts=layouts, settings=settings, notes=notes,
                post_commands=post)


def _irqbalance_dropin(irqs: List[int], cpus: List[int]) -> str:
    bans = " ".join(f"--banirq={i}" for i in irqs)
    return ("# Written by nettune: keep irqbalance away from the tuned NIC queues.\n"
            "[Service]\n"
            f"Environment=IRQBALANCE_BANNED_CPULIST={format_cpulist(cpus)}\n"
            "ExecStart=\n"
            f"ExecStart=/usr/sbin/irqbalance --foreground $IRQBALANCE_ARGS {bans}\n")


def format_want(s: Setting) -> str:
    if s.kind == "ethtool":
        return " ".join(f"{k} {_v(v)}" for k, v in sorted(s.want.items()))
    if s.kind == "service":
        return "running" if s.want else "stopped"
    if s.kind == "file":
        return "absent" if s.want is None else f"{len(s.want.splitlines())} lines"
    return str(s.want)


def _v(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return "n/a" if v is None else str(v)


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
