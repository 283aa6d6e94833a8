"""Coexistence with the host's network managers: NetworkManager, tuned, systemd-networkd.

Detection: a manager counts when its daemon runs (/proc) or its unit is enabled
(it will run at the next boot). NetworkManager's connection bound to each interface
is found as nm.py describes; tuned's active profile with its include chain as
tuned.py describes; systemd-networkd's .link files are linkfiles.py's business.

Policy, setting by setting, checked before apply changes anything:

* NetworkManager owns the ethtool settings its connection can hold (ring sizes,
  coalescing, pause, offload features: ethtool.ring-*, ethtool.coalesce-*,
  ethtool.pause-*, ethtool.feature-*). When NetworkManager is active and a connection
  file in /etc/NetworkManager/system-connections is bound to the interface, nettune
  writes its values for those settings into the connection (`nmcli connection
  modify UUID ethtool.ring-rx 4096 ...`, or the keyfile itself while NetworkManager
  does not run) besides setting them live, so NetworkManager re-applies them on every
  activation instead of undoing them. A property the connection already sets to
  another value is the operator's: apply refuses, naming the connection, its file
  and the keys. A connection only in /run (gone at reboot) is not written; nettune's
  own boot unit keeps the settings, and a conflicting value there is refused too.
  Settings NetworkManager 1.42 has no property for (the queue count: ethtool.channels-*
  came with 1.46) stay with nettune's own persistence, with a note.
* tuned is not written to: a value of tuned's active profile (and its parents) that
  differs from nettune's is refused, naming the profile, the section and the keys:
  [sysctl] keys nettune sets to another value (a ">N" value only when nettune's is
  smaller), [net] ring/coalesce/pause/features/channels of the interface,
  [scheduler] isolated_cores that holds a CPU nettune pins a queue IRQ to, and
  [irqbalance] banned_cpus when nettune manages irqbalance with its drop-in. tuned
  re-applies its profile on every start and profile switch and rolls its own changes
  back on the next, so two owners of one value cannot be reconciled; the operator
  removes the key from the profile (a child profile with `include=`) or keeps the
  setting out of nettune's configuration. Values tuned sets to what nettune wants,
  and tuned's other plugins ([cpu], [disk], [vm], ...), are no conflict.
* systemd-networkd: its .link files set ethtool values and are refused as
  linkfiles.py says; its .network files set none of nettune's settings.

`verify` names the manager behind a drifted value: the bound NetworkManager
connection or tuned's profile that sets the value the setting has now. `revert`
puts a NetworkManager connection file back exactly as it was before nettune first
wrote it (NetworkManager reloads it: `nmcli connection load FILE`).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from . import nm, tuned
from .cpus import format_cpulist, parse_cpulist
from .errors import NettuneError
from .services import find_pids
from .sysfs import Root

if TYPE_CHECKING:
    from .plan import Setting

WANTS_DIRS = ("/etc/systemd/system/multi-user.target.wants", "/etc/systemd/system/network-online.target.wants")
REASON_NM = ("written into the NetworkManager connection bound to the interface as well, so that "
             "NetworkManager re-applies the values on every activation instead of undoing them")


@dataclass
class NmBinding:
    iface: str
    conn_id: str
    uuid: str
    path: str
    persistent: bool
    ethtool: Dict[str, Any]

    def to_json(self) -> Dict[str, Any]:
        return {"connection": self.conn_id, "uuid": self.uuid, "file": self.path, "persistent": self.persistent,
                "ethtool": dict(sorted(self.ethtool.items()))}


@dataclass
class Managers:
    nm_active: bool = False
    nm_running: bool = False
    nm: Dict[str, NmBinding] = field(default_factory=dict)
    tuned_active: bool = False
    tuned: Optional[tuned.Profile] = None
    networkd_active: bool = False

    def to_json(self) -> Dict[str, Any]:
        prof = self.tuned
        return {
            "networkmanager": {"active": self.nm_active, "running": self.nm_running,
                               "connections": {k: v.to_json() for k, v in sorted(self.nm.items())}},
            "tuned": {"active": self.tuned_active, "profile": prof.name if prof else None,
                      "chain": prof.chain if prof else [], "missing": prof.missing if prof else []},
            "systemd_networkd": {"active": self.networkd_active},
        }


def _active(root: Root, comm: str, unit: str) -> Tuple[bool, bool]:
    """(running, active: running or enabled for the next boot)."""
    running = bool(find_pids(root, comm))
    enabled = any(root.exists(posixpath.join(d, unit)) for d in WANTS_DIRS)
    return running, running or enabled


def detect(root: Root, interfaces: List[str]) -> Managers:
    m = Managers()
    m.nm_running, m.nm_active = _active(root, "NetworkManager", "NetworkManager.service")
    if m.nm_active:
        files = nm.keyfiles(root)
        live = nm.nmcli_active() if (root.live and m.nm_running) else None
        for iface in interfaces:
            kf = nm.bound_keyfile(root, iface, (live or {}).get(iface), files)
            if kf is not None:
                m.nm[iface] = NmBinding(iface, kf.id, kf.uuid, kf.path, kf.persistent, kf.ethtool())
    _, m.tuned_active = _active(root, "tuned", "tuned.service")
    if m.tuned_active:
        names = tuned.active_names(root)
        if names:
            m.tuned = tuned.load(root, names)
    _, m.networkd_active = _active(root, "systemd-network", "systemd-networkd.service")
    return m


def format_managers(m: Managers) -> List[str]:
    out: List[str] = []
    if m.nm_active:
        state = "running" if m.nm_running else "enabled, not running"
        conns = ", ".join(f"{b.iface}: '{b.conn_id}' ({b.path})" for b in m.nm.values()) or "no connection bound"
        out.append(f"NetworkManager:   {state}; {conns}")
    if m.tuned_active:
        prof = m.tuned
        chain = " <- ".join(reversed(prof.chain)) if prof else ""
        out.append(f"tuned:            profile {prof.name if prof else '(none)'}" + (f" ({chain})" if chain else ""))
    if m.networkd_active:
        out.append("systemd-networkd: active (.link files checked for ethtool keys)")
    return out


# --- the plan's NetworkManager settings ----------------------------------------------------------
def nm_props(settings: List[Setting], iface: str) -> Tuple[Dict[str, Any], List[str]]:
    """The [ethtool] properties holding `iface`'s planned ethtool settings, and the
    ethtool operations NetworkManager has no property for."""
    props: Dict[str, Any] = {}
    left: List[str] = []
    for s in settings:
        if s.kind != "ethtool" or s.iface != iface or not isinstance(s.want, dict):
            continue
        for k, v in s.want.items():
            prop = nm.prop_name(s.target, k)
            if prop is None:
                left.append(f"{s.target} {k}")
            else:
                props[prop] = nm.to_prop(prop, v)
    return props, sorted(set(left))


def plan_settings(m: Optional[Managers], settings: List[Setting], notes: List[str]) -> List[Setting]:
    """One "nm" setting per interface whose NetworkManager connection takes its ethtool values."""
    from .plan import STAGE_ETHTOOL, Setting

    out: List[Setting] = []
    if m is None or not m.nm_active:
        return out
    for iface, b in sorted(m.nm.items()):
        props, left = nm_props(settings, iface)
        if not props:
            continue
        if not b.persistent:
            notes.append(f"{iface}: NetworkManager connection '{b.conn_id}' lives in {posixpath.dirname(b.path)} "
                         f"(gone at reboot); nettune's own boot unit keeps the ethtool settings")
            continue
        if left:
            notes.append(f"{iface}: NetworkManager 1.42 has no ethtool property for {', '.join(left)}; "
                         f"nettune's own boot unit keeps {'it' if len(left) == 1 else 'them'}")
        out.append(Setting(key=f"nm:{iface}", kind="nm", target=b.path, want={"ethtool": props}, reason=REASON_NM,
                           iface=iface, label=f"NetworkManager connection '{b.conn_id}'", stage=STAGE_ETHTOOL))
    return out


# --- refusals ------------------------------------------------------------------------------------
def _nm_conflicts(b: NmBinding, settings: List[Setting]) -> Optional[str]:
    props, _ = nm_props(settings, b.iface)
    bad = sorted(p for p, v in props.items() if p in b.ethtool and b.ethtool[p] != v)
    if not bad:
        return None
    sets = ", ".join(f"ethtool.{p}={_show(b.ethtool[p])} (nettune: {_show(props[p])})" for p in bad)
    clear = " ".join(f'ethtool.{p} ""' for p in bad)
    return (f"{b.iface}: NetworkManager connection '{b.conn_id}' ({b.path}) sets {sets} (NetworkManager "
            f"applies them on every activation); remove them (nmcli connection modify {b.uuid or b.conn_id} "
            f"{clear}), or keep these settings out of nettune's configuration")


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def _tuned_conflicts(prof: tuned.Profile, settings: List[Setting]) -> List[str]:
    where = f"tuned profile {prof.name}"
    out: List[str] = []
    ts = tuned.sysctls(prof)
    bad: Dict[str, List[str]] = {}
    for s in settings:
        if s.kind == "sysctl":
            name = s.label.replace("sysctl ", "", 1)
            if name in ts and not tuned.sysctl_agrees(ts[name][0], s.want):
                bad.setdefault(ts[name][1], []).append(f"{name}={ts[name][0]} (nettune: {s.want})")
        elif s.kind == "ethtool" and s.iface and isinstance(s.want, dict):
            for unit, src, args in tuned.net_sets(prof, s.iface, s.target):
                keys = [f"{k} {args[k]}" for k in s.want if k in args and str(args[k]) != _ethtool_word(s.want[k])]
                if keys:
                    bad.setdefault(src, []).append(
                        f"[{unit.name}] {s.target} {', '.join(keys)} for {s.iface}")
    for src, items in bad.items():
        sec = "" if all(i.startswith("[") for i in items) else "[sysctl] "
        out.append(f"{where} ({src}) {sec}sets {'; '.join(items)}; tuned re-applies it on every "
                   f"start: remove the keys there (or in a child profile), or keep them out of nettune's configuration")
    iso, src = tuned.isolated_cores(prof)
    if iso:
        try:
            iso_cpus = set(parse_cpulist(iso))
        except (NettuneError, ValueError):
            iso_cpus = set()
        pinned = sorted({c for s in settings if s.kind == "irq" for c in parse_cpulist(s.want)} & iso_cpus)
        if pinned:
            out.append(f"{where} ({src}) [scheduler] isolated_cores={iso} moves IRQs off CPU "
                       f"{format_cpulist(pinned)}, where nettune pins queue IRQs: choose other queue CPUs "
                       f"(--cpus) or drop isolated_cores")
    banned, src = tuned.banned_cpus(prof)
    if banned and any(s.kind == "file" and "irqbalance" in s.target for s in settings):
        out.append(f"{where} ({src}) [irqbalance] banned_cpus={banned} sets irqbalance's banned "
                   f"CPUs, as nettune's irqbalance drop-in does: use irqbalance = stop or ignore, or drop it there")
    return out


def _ethtool_word(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return str(v)


def refusals(root: Root, settings: List[Setting]) -> List[str]:
    """Why apply must not change anything, per the policy above (empty: no conflict)."""
    ifaces = sorted({s.iface for s in settings if s.iface})
    m = detect(root, ifaces)
    out: List[str] = []
    if m.nm_active:
        for b in m.nm.values():
            text = _nm_conflicts(b, settings)
            if text:
                out.append(text)
    if m.tuned_active and m.tuned is not None:
        out += _tuned_conflicts(m.tuned, settings)
    return out


# --- drift -----------------------------------------------------------------------------------------
def cause(m: Managers, s: Setting, have: Any) -> Optional[str]:
    """The manager whose configuration says the value `s` has now, or None."""
    if s.kind == "ethtool" and s.iface in m.nm and isinstance(have, dict):
        b = m.nm[s.iface]
        said = []
        for k, v in have.items():
            prop = nm.prop_name(s.target, k)
            if prop and prop in b.ethtool and v is not None and b.ethtool[prop] == nm.to_prop(prop, v) \
                    and nm.to_prop(prop, v) != nm.to_prop(prop, s.want.get(k)):
                said.append(f"ethtool.{prop}={_show(b.ethtool[prop])}")
        if said:
            return f"NetworkManager connection '{b.conn_id}' ({b.path}) sets {', '.join(said)}"
    if s.kind == "nm" and s.iface in m.nm:
        b = m.nm[s.iface]
        return f"the connection '{b.conn_id}' was changed after apply ({b.path})"
    if s.kind == "sysctl" and m.tuned_active and m.tuned is not None:
        name = s.label.replace("sysctl ", "", 1)
        ts = tuned.sysctls(m.tuned)
        if name in ts and tuned.sysctl_agrees(ts[name][0], str(have)) and not tuned.sysctl_agrees(ts[name][0], s.want):
            return f"tuned profile {m.tuned.name} ({ts[name][1]}) [sysctl] sets {name}={ts[name][0]}"
    if s.kind == "ethtool" and m.tuned_active and m.tuned is not None and s.iface and isinstance(have, dict):
        for unit, src, args in tuned.net_sets(m.tuned, s.iface, s.target):
            said = [f"{k} {args[k]}" for k, v in have.items() if k in args and args[k] == _ethtool_word(v)]
            if said:
                return f"tuned profile {m.tuned.name} ({src}) [{unit.name}] sets {s.target} {', '.join(said)}"
    return None
