"""NetworkManager: the connection profile bound to an interface and its ethtool.* properties.

NetworkManager applies a connection's `ethtool.*` properties (ring sizes, coalescing,
pause, offload features) to the device every time it activates the connection: at boot,
when the link comes back, on `nmcli connection up`. A property set there owns the
setting; nettune writes the settings NetworkManager can hold into the connection
(`nmcli connection modify`), so that NetworkManager itself re-applies them, and restores
the connection's file exactly on revert (see managers.py for the policy).

Connections are keyfiles (`*.nmconnection`, root-only) in /etc/NetworkManager/
system-connections (persistent) and /run/NetworkManager/system-connections (gone at
reboot). The one bound to an interface is, when NetworkManager runs and nmcli answers,
the connection active on the device; otherwise the keyfile whose `interface-name`,
`[ethernet] mac-address` or `[match] interface-name`/`driver` names the interface.

NetworkManager 1.42 (Debian 12) knows ethtool.ring-*, ethtool.coalesce-*,
ethtool.pause-* and ethtool.feature-* (the list below); ethtool.channels-* came with
1.46, so a queue count is no NetworkManager property here.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import ini, linkfiles
from .sysfs import Root

NM_DIRS = ("/etc/NetworkManager/system-connections", "/run/NetworkManager/system-connections")
PERSISTENT_DIR = NM_DIRS[0]

# ethtool -k names (what nettune's plans use) -> NetworkManager's feature name
_FEATURE_ALIASES = {
    "generic-receive-offload": "gro", "generic-segmentation-offload": "gso", "large-receive-offload": "lro",
    "ntuple-filters": "ntuple", "rx-checksumming": "rx", "receive-hashing": "rxhash",
    "rx-vlan-offload": "rxvlan", "scatter-gather": "sg", "tcp-segmentation-offload": "tso",
    "tx-checksumming": "tx", "tx-vlan-offload": "txvlan",
}
# the kernel's own names that NetworkManager 1.42 accepts as ethtool.feature-NAME
_FEATURES_142 = frozenset("""
    esp-hw-offload esp-tx-csum-hw-offload fcoe-mtu highdma hw-tc-offload l2-fwd-offload loopback
    macsec-hw-offload rx-all rx-fcs rx-gro-hw rx-gro-list rx-udp-gro-forwarding rx-udp_tunnel-port-offload
    rx-vlan-filter rx-vlan-stag-filter rx-vlan-stag-hw-parse tls-hw-record tls-hw-rx-offload
    tls-hw-tx-offload tx-checksum-fcoe-crc tx-checksum-ip-generic tx-checksum-ipv4 tx-checksum-ipv6
    tx-checksum-sctp tx-esp-segmentation tx-fcoe-segmentation tx-gre-csum-segmentation tx-gre-segmentation
    tx-gso-list tx-gso-partial tx-gso-robust tx-ipxip4-segmentation tx-ipxip6-segmentation tx-nocache-copy
    tx-scatter-gather tx-scatter-gather-fraglist tx-sctp-segmentation tx-tcp-ecn-segmentation
    tx-tcp-mangleid-segmentation tx-tcp-segmentation tx-tcp6-segmentation tx-tunnel-remcsum-segmentation
    tx-udp-segmentation tx-udp_tnl-csum-segmentation tx-udp_tnl-segmentation tx-vlan-stag-hw-insert
""".split()) | frozenset(_FEATURE_ALIASES.values())
_COALESCE = frozenset("""
    adaptive-rx adaptive-tx pkt-rate-high pkt-rate-low rx-frames rx-frames-high rx-frames-irq rx-frames-low
    rx-usecs rx-usecs-high rx-usecs-irq rx-usecs-low sample-interval stats-block-usecs tx-frames
    tx-frames-high tx-frames-irq tx-frames-low tx-usecs tx-usecs-high tx-usecs-irq tx-usecs-low
""".split())


def prop_name(op: str, key: str) -> Optional[str]:
    """The [ethtool] key (nmcli: "ethtool." + it) that holds ethtool `op`'s `key`, or None."""
    if op == "rings" and key in ("rx", "tx", "rx-mini", "rx-jumbo"):
        return f"ring-{key}"
    if op == "coalesce" and key in _COALESCE:
        return f"coalesce-{key}"
    if op == "pause" and key in ("autoneg", "rx", "tx"):
        return f"pause-{key}"
    if op == "features":
        name = _FEATURE_ALIASES.get(key, key)
        return f"feature-{name}" if name in _FEATURES_142 else None
    return None


def is_bool_prop(prop: str) -> bool:
    """feature-* and pause-* are on/off; ring-* and coalesce-* (adaptive-* too) are numbers."""
    return prop.startswith(("feature-", "pause-"))


def to_prop(prop: str, value: Any) -> Any:
    """An ethtool value as the property's typed value (adaptive-rx on -> 1)."""
    if is_bool_prop(prop):
        return bool(value)
    return int(value)


def parse_value(prop: str, text: str) -> Any:
    """A keyfile or nmcli spelling as a typed value (None: not set, or unreadable)."""
    t = text.strip().strip('"').lower()
    if t in ("", "ignore", "--", "default"):
        return None
    if is_bool_prop(prop):
        if t in ("true", "on", "yes", "1"):
            return True
        if t in ("false", "off", "no", "0"):
            return False
        return None
    try:
        return int(t, 0)
    except ValueError:
        return None


def nmcli_value(prop: str, value: Any) -> str:
    if is_bool_prop(prop):
        return "on" if value else "off"
    return str(int(value))


def keyfile_value(prop: str, value: Any) -> str:
    if is_bool_prop(prop):
        return "true" if value else "false"
    return str(int(value))


@dataclass
class Keyfile:
    """One connection file: its sections as read (key order kept)."""

    path: str                                   # system path
    text: str
    sections: Dict[str, Dict[str, str]] = field(default_factory=dict)

    def get(self, section: str, key: str) -> str:
        return self.sections.get(section, {}).get(key, "")

    @property
    def id(self) -> str:
        return self.get("connection", "id") or posixpath.basename(self.path)

    @property
    def uuid(self) -> str:
        return self.get("connection", "uuid")

    @property
    def persistent(self) -> bool:
        return self.path.startswith(PERSISTENT_DIR + "/")

    def ethtool(self) -> Dict[str, Any]:
        """The connection's [ethtool] properties that are set, typed."""
        out: Dict[str, Any] = {}
        for k, v in self.sections.get("ethtool", {}).items():
            val = parse_value(k, v)
            if val is not None:
                out[k] = val
        return out


def parse_keyfile(text: str, path: str) -> Keyfile:
    kf = Keyfile(path, text)
    for section, key, value in ini.entries(text):
        if key is None:
            kf.sections.setdefault(section, {})
        elif section:
            kf.sections[section][key] = value
    return kf


def set_keys(text: str, section: str, values: Dict[str, str]) -> str:
    """The keyfile text with `values` set in `section` (added at its end, or a new section)."""
    lines = text.splitlines()
    start = end = -1
    for i, raw in enumerate(lines):
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            if start >= 0 and end < 0:
                end = i
            if line[1:-1].strip() == section:
                start = i
    todo = dict(values)
    if start >= 0:
        stop = end if end >= 0 else len(lines)
        for i in range(start + 1, stop):
            key = lines[i].partition("=")[0].strip()
            if "=" in lines[i] and key in todo:
                lines[i] = f"{key}={todo.pop(key)}"
        insert_at = stop
        while insert_at > start + 1 and not lines[insert_at - 1].strip():
            insert_at -= 1
        lines[insert_at:insert_at] = [f"{k}={v}" for k, v in todo.items()]
    else:
        while lines and not lines[-1].strip():
            lines.pop()
        lines += ([""] if lines else []) + [f"[{section}]"] + [f"{k}={v}" for k, v in todo.items()]
    return "\n".join(lines) + "\n"


def keyfiles(root: Root) -> List[Keyfile]:
    """Every connection file, /etc before /run, each directory in name order."""
    out: List[Keyfile] = []
    for d in NM_DIRS:
        for name in sorted(root.listdir(d)):
            if not name.endswith(".nmconnection"):
                continue
            path = posixpath.join(d, name)
            try:
                out.append(parse_keyfile(root.read(path), path))
            except OSError:
                continue
    return out


def _device(root: Root, iface: str) -> Tuple[str, str]:
    """(MAC address, driver) of an interface, from sysfs (as udev sees them for .link files)."""
    dev = linkfiles.device(root, iface)
    return dev["MACAddress"], dev["Driver"]


def _spec_match(specs: str, value: str) -> Optional[bool]:
    """[match] list semantics, simplified: any plain pattern matches; "!" excludes."""
    items = [s for s in specs.replace(",", ";").split(";") if s.strip()]
    if not items:
        return None
    hit = False
    for s in (i.strip() for i in items):
        if s.startswith("!") or s.startswith("&!"):
            if fnmatch.fnmatchcase(value, s.lstrip("&!")):
                return False
        elif fnmatch.fnmatchcase(value, s.lstrip("&|")):
            hit = True
    return hit


def binds(kf: Keyfile, iface: str, mac: str, driver: str) -> bool:
    """Whether the connection file names this interface (by name, MAC address or [match])."""
    if kf.get("connection", "type") not in ("ethernet", "802-3-ethernet"):
        return False
    name = kf.get("connection", "interface-name")
    if name:
        return name == iface
    want_mac = kf.get("ethernet", "mac-address").lower()
    if want_mac and want_mac != mac:
        return False
    checks = [_spec_match(kf.get("match", "interface-name"), iface), _spec_match(kf.get("match", "driver"), driver)]
    if any(c is False for c in checks):
        return False
    return bool(want_mac) or any(c is True for c in checks)


def bound_keyfile(root: Root, iface: str, active_uuid: Optional[str] = None,
                  files: Optional[List[Keyfile]] = None) -> Optional[Keyfile]:
    """The connection file bound to `iface`: the active connection's (by UUID) when known,
    else the first file (persistent first) that names the interface."""
    files = keyfiles(root) if files is None else files
    if active_uuid:
        for kf in files:
            if kf.uuid == active_uuid:
                return kf
    mac, drv = _device(root, iface)
    for kf in files:
        if binds(kf, iface, mac, drv):
            return kf
    return None


def nmcli_active(timeout: float = 20.0) -> Optional[Dict[str, str]]:
    """{device: connection UUID} of the active connections, from a running NetworkManager
    (None: nmcli missing or not answering)."""
    nmcli = shutil.which("nmcli")
    if nmcli is None:
        return None
    try:
        proc = subprocess.run([nmcli, "-t", "-f", "UUID,DEVICE", "connection", "show", "--active"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                              check=False, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    out: Dict[str, str] = {}
    for line in proc.stdout.splitlines():
        uuid, _, dev = line.replace("\\:", "\0").partition(":")
        if dev:
            out[dev.replace("\0", ":")] = uuid.replace("\0", ":")
    return out


def write_text(root: Root, path: str, text: str) -> None:
    """Replace a connection file atomically, root-only as NetworkManager requires."""
    host = root.host_path(path)
    fd, tmp = tempfile.mkstemp(prefix=".nettune.", dir=os.path.dirname(host))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, host)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
