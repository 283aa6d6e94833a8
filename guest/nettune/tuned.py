"""tuned: the active profile and what its plugins set.

tuned applies its active profile (/etc/tuned/active_profile: one name, or several
separated by spaces, merged in that order) when it starts and whenever the profile
changes (`tuned-adm profile`). A profile is NAME/tuned.conf in /etc/tuned (first) or
/usr/lib/tuned; `[main] include=` names parent profiles (comma-separated), loaded
first, whose sections the child's override key by key (a section with `replace=1`
replaces the parent's whole section). A section is one plugin instance: its plugin is
`type=` or else the section's name. `${name}` expands from `[variables]`; other `${...}`
(tuned's functions) are kept as written. A section with `uname_regex`/`cpuinfo_regex`
applies only when they match the machine.

The plugins that touch what nettune sets: `sysctl` (keys are sysctl names; a value
">N" raises only), `net` (`devices=` picks interfaces; `ring`, `coalesce`, `pause`,
`features`, `channels` are ethtool -G/-C/-A/-K/-L argument lists), `scheduler`
(`isolated_cores` moves IRQs off those CPUs) and `irqbalance` (`banned_cpus`).
"""

from __future__ import annotations

import fnmatch
import platform
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import ini
from .sysfs import Root

PROFILE_DIRS = ("/etc/tuned", "/usr/lib/tuned")
ACTIVE_PROFILE = "/etc/tuned/active_profile"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

# [net] option -> ethtool operation; and the ethtool argument names of each that differ
NET_OPS = {"ring": "rings", "coalesce": "coalesce", "pause": "pause", "features": "features",
           "channels": "channels"}


@dataclass
class Unit:
    name: str
    type: str
    options: Dict[str, str]
    sources: Dict[str, str]     # option -> the profile that set it


@dataclass
class Profile:
    name: str                                             # as active_profile says
    chain: List[str] = field(default_factory=list)        # every profile merged, parents first
    units: Dict[str, Unit] = field(default_factory=dict)
    missing: List[str] = field(default_factory=list)      # included profiles not found

    def of_type(self, kind: str) -> List[Unit]:
        return [u for u in self.units.values() if u.type == kind]


def _parse(text: str) -> Dict[str, Dict[str, str]]:
    sections: Dict[str, Dict[str, str]] = {}
    cur: Optional[Dict[str, str]] = None
    for section, key, value in ini.entries(text):
        if key is None:
            cur = sections.setdefault(section, {})
        elif cur is not None:
            cur[key] = value
    return sections


def profile_path(root: Root, name: str) -> Optional[str]:
    for d in PROFILE_DIRS:
        p = posixpath.join(d, name, "tuned.conf")
        if root.exists(p):
            return p
    return None


def active_names(root: Root) -> List[str]:
    try:
        return root.read(ACTIVE_PROFILE).split()
    except OSError:
        return []


def load(root: Root, names: List[str]) -> Profile:
    """The merged profile of `names` (active_profile's list)."""
    prof = Profile(" ".join(names))
    variables: Dict[str, str] = {}
    seen: List[str] = []

    def merge(name: str, depth: int) -> None:
        if name in seen or depth > 20:
            return
        seen.append(name)
        path = profile_path(root, name)
        if path is None:
            prof.missing.append(name)
            return
        try:
            sections = _parse(root.read(path))
        except OSError:
            prof.missing.append(name)
            return
        for parent in (sections.get("main", {}).get("include", "")).split(","):
            if parent.strip():
                merge(parent.strip(), depth + 1)
        prof.chain.append(name)
        variables.update(sections.get("variables", {}))
        for sec, opts in sections.items():
            if sec in ("main", "variables"):
                continue
            old = prof.units.get(sec)
            merged: Dict[str, str] = {}
            sources: Dict[str, str] = {}
            if old is not None and opts.get("replace", "").lower() not in ("1", "true", "yes"):
                merged, sources = dict(old.options), dict(old.sources)
            merged.update(opts)
            sources.update({k: name for k in opts})
            prof.units[sec] = Unit(sec, merged.get("type", sec), merged, sources)

    for n in names:
        merge(n, 0)
    for unit in prof.units.values():
        unit.options = {k: _expand(v, variables) for k, v in unit.options.items()}
    prof.units = {k: u for k, u in prof.units.items() if _applies(root, u)}
    return prof


def _expand(value: str, variables: Dict[str, str]) -> str:
    for _ in range(10):
        new = _VAR.sub(lambda m: variables.get(m.group(1), m.group(0)), value)
        if new == value:
            break
        value = new
    return value


def _applies(root: Root, unit: Unit) -> bool:
    if unit.options.get("enabled", "true").lower() in ("0", "false", "no"):
        return False
    try:
        urx = unit.options.get("uname_regex")
        if urx and not re.search(urx, " ".join(platform.uname())):
            return False
        crx = unit.options.get("cpuinfo_regex")
        if crx:
            try:
                cpuinfo = root.read("/proc/cpuinfo")
            except OSError:
                cpuinfo = ""
            if not re.search(crx, cpuinfo, re.MULTILINE):
                return False
    except re.error:
        return True      # cannot tell: it may apply
    return True


def sysctls(prof: Profile) -> Dict[str, Tuple[str, str]]:
    """{sysctl name: (value as written, unit's profile)} of the sysctl plugin."""
    out: Dict[str, Tuple[str, str]] = {}
    for u in prof.of_type("sysctl"):
        for k, v in u.options.items():
            if k in ("type", "replace", "enabled", "devices", "uname_regex", "cpuinfo_regex", "priority"):
                continue
            out[k.replace("/", ".")] = (v.strip().strip('"'), u.sources[k])
    return out


def sysctl_agrees(tuned_value: str, want: str) -> bool:
    """Whether tuned's value leaves nettune's `want` in place (">N": raised to N at least)."""
    v = tuned_value.strip()
    if v.startswith(">"):
        try:
            return int(want.split()[0]) >= int(v[1:].split()[0])
        except (ValueError, IndexError):
            return False
    return " ".join(v.split()) == " ".join(str(want).split())


def net_sets(prof: Profile, iface: str, op: str) -> List[Tuple[Unit, str, Dict[str, str]]]:
    """The [net] units that apply to `iface` and set ethtool operation `op`: (unit, the
    profile that set the option, its arguments)."""
    out: List[Tuple[Unit, str, Dict[str, str]]] = []
    for u in prof.of_type("net"):
        devices = u.options.get("devices", "")
        if devices and not _devices_match(devices, iface):
            continue
        for opt, eop in NET_OPS.items():
            if eop == op and u.options.get(opt, "").strip():
                out.append((u, u.sources[opt], parse_ethtool_args(u.options[opt])))
    return out


def _devices_match(spec: str, iface: str) -> bool:
    """tuned's devices= list: names or globs, comma-separated; "!" excludes."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    hit = any(fnmatch.fnmatchcase(iface, s) for s in items if not s.startswith("!"))
    excluded = any(fnmatch.fnmatchcase(iface, s[1:].strip()) for s in items if s.startswith("!"))
    return (hit or all(s.startswith("!") for s in items)) and not excluded


def parse_ethtool_args(text: str) -> Dict[str, str]:
    """"rx 1024 tx 512" or "rx=1024 tx=512" -> {"rx": "1024", "tx": "512"}."""
    try:
        words = shlex.split(text.replace("=", " "))
    except ValueError:
        words = text.replace("=", " ").split()
    return {words[i]: words[i + 1] for i in range(0, len(words) - 1, 2)}


def _plugin_option(prof: Profile, kind: str, key: str) -> Tuple[str, str]:
    """(the first non-empty `key` of a `kind` plugin as written, its profile) or ("", "")."""
    for u in prof.of_type(kind):
        v = u.options.get(key, "").strip()
        if v:
            return v, u.sources[key]
    return "", ""


def isolated_cores(prof: Profile) -> Tuple[str, str]:
    """The scheduler plugin's isolated_cores and its profile, or ("", "")."""
    return _plugin_option(prof, "scheduler", "isolated_cores")


def banned_cpus(prof: Profile) -> Tuple[str, str]:
    """The irqbalance plugin's banned_cpus and its profile, or ("", "")."""
    return _plugin_option(prof, "irqbalance", "banned_cpus")
