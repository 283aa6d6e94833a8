"""Coexistence with systemd's .link files: NIC settings another tool owns.

udev applies the first .link file whose [Match] section matches a network device
(`systemd.link(5)`: files in /etc/systemd/network, /run/systemd/network and
/usr/lib/systemd/network, /etc overriding a file of the same name elsewhere, taken in
the lexical order of their names) every time the device appears: at boot, on a driver
reload, exactly when nettune re-applies. A .link file that sets rings, channels,
coalescing, pause or offloads of an interface would fight nettune for them.

Policy (the first piece of coexistence): nettune refuses to apply an ethtool setting
that the interface's .link file also sets, before changing anything, naming the file
and its keys. Remove the keys from the .link file (or the setting from nettune's
configuration with `keep`) to resolve it.

Matching: the [Match] keys Driver, MACAddress, PermanentMACAddress, Type and Path are
evaluated (globs, space-separated lists, a leading "!" negates the list); a section with
any other key (OriginalName: the kernel's name before udev renamed the device, which is
gone by then) is taken to match: a conflict is reported rather than missed.
"""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import ini
from .sysfs import Root

LINK_DIRS = ("/etc/systemd/network", "/run/systemd/network", "/usr/lib/systemd/network", "/lib/systemd/network")

# [Link] key -> (ethtool target, ethtool key or "" for the whole target)
LINK_KEYS: Dict[str, Tuple[str, str]] = {
    "RxBufferSize": ("rings", "rx"),
    "RxMiniBufferSize": ("rings", "rx-mini"),
    "RxJumboBufferSize": ("rings", "rx-jumbo"),
    "TxBufferSize": ("rings", "tx"),
    "RxChannels": ("channels", "rx"),
    "TxChannels": ("channels", "tx"),
    "OtherChannels": ("channels", "other"),
    "CombinedChannels": ("channels", "combined"),
    "RxFlowControl": ("pause", "rx"),
    "TxFlowControl": ("pause", "tx"),
    "AutoNegotiationFlowControl": ("pause", "autoneg"),
    "UseAdaptiveRxCoalesce": ("coalesce", "adaptive-rx"),
    "UseAdaptiveTxCoalesce": ("coalesce", "adaptive-tx"),
    "RxCoalesceSec": ("coalesce", "rx-usecs"),
    "RxCoalesceIrqSec": ("coalesce", "rx-usecs-irq"),
    "RxCoalesceLowSec": ("coalesce", "rx-usecs-low"),
    "RxCoalesceHighSec": ("coalesce", "rx-usecs-high"),
    "TxCoalesceSec": ("coalesce", "tx-usecs"),
    "TxCoalesceIrqSec": ("coalesce", "tx-usecs-irq"),
    "TxCoalesceLowSec": ("coalesce", "tx-usecs-low"),
    "TxCoalesceHighSec": ("coalesce", "tx-usecs-high"),
    "RxMaxCoalescedFrames": ("coalesce", "rx-frames"),
    "RxMaxCoalescedIrqFrames": ("coalesce", "rx-frames-irq"),
    "RxMaxCoalescedLowFrames": ("coalesce", "rx-frames-low"),
    "RxMaxCoalescedHighFrames": ("coalesce", "rx-frames-high"),
    "TxMaxCoalescedFrames": ("coalesce", "tx-frames"),
    "TxMaxCoalescedIrqFrames": ("coalesce", "tx-frames-irq"),
    "TxMaxCoalescedLowFrames": ("coalesce", "tx-frames-low"),
    "TxMaxCoalescedHighFrames": ("coalesce", "tx-frames-high"),
    "CoalescePacketRateLow": ("coalesce", "pkt-rate-low"),
    "CoalescePacketRateHigh": ("coalesce", "pkt-rate-high"),
    "CoalescePacketRateSampleIntervalSec": ("coalesce", "sample-interval"),
    "StatisticsBlockCoalesceSec": ("coalesce", "stats-block-usecs"),
    "ReceiveChecksumOffload": ("features", "rx-checksumming"),
    "TransmitChecksumOffload": ("features", "tx-checksumming"),
    "TCPSegmentationOffload": ("features", "tcp-segmentation-offload"),
    "TCP6SegmentationOffload": ("features", "tx-tcp6-segmentation"),
    "GenericSegmentationOffload": ("features", "generic-segmentation-offload"),
    "GenericReceiveOffload": ("features", "generic-receive-offload"),
    "GenericReceiveOffloadHardware": ("features", "rx-gro-hw"),
    "LargeReceiveOffload": ("features", "large-receive-offload"),
    "ReceiveVLANCTAGHardwareAcceleration": ("features", "rx-vlan-offload"),
    "TransmitVLANCTAGHardwareAcceleration": ("features", "tx-vlan-offload"),
    "ReceiveVLANCTAGFilter": ("features", "rx-vlan-filter"),
    "TransmitVLANSTAGHardwareAcceleration": ("features", "tx-vlan-stag-hw-insert"),
    "NTupleFilter": ("features", "ntuple-filters"),
}
MATCH_KEYS = ("Driver", "MACAddress", "PermanentMACAddress", "Type", "Path")


@dataclass
class LinkFile:
    path: str                                              # system path
    match: Dict[str, List[str]] = field(default_factory=dict)
    link: Dict[str, str] = field(default_factory=dict)     # [Link] keys that map to ethtool

    def owns(self, target: str, keys: List[str]) -> List[str]:
        """The [Link] keys of this file that set `target` (any of `keys`)."""
        return [k for k, v in sorted(self.link.items())
                if LINK_KEYS[k][0] == target and (LINK_KEYS[k][1] in keys or not keys)]


def parse(text: str, path: str) -> LinkFile:
    lf = LinkFile(path)
    for section, key, value in ini.entries(text):
        if key is None:
            continue
        if section == "Match":
            if value:
                lf.match.setdefault(key, []).extend(value.split())
            else:
                lf.match.pop(key, None)        # an empty assignment resets the list
        elif section == "Link" and key in LINK_KEYS:
            lf.link[key] = value
    return lf


def link_files(root: Root) -> List[LinkFile]:
    """Every .link file in udev's order: by file name, the first directory holding a name wins."""
    chosen: Dict[str, str] = {}
    for d in LINK_DIRS:
        for name in root.listdir(d):
            if name.endswith(".link") and name not in chosen:
                chosen[name] = posixpath.join(d, name)
    out: List[LinkFile] = []
    for name in sorted(chosen):
        try:
            text = root.read(chosen[name])
        except OSError:
            continue
        if not text.strip():                # an empty file (or a link to /dev/null) masks the name
            continue
        out.append(parse(text, chosen[name]))
    return out


def device(root: Root, iface: str) -> Dict[str, str]:
    """What udev matches a .link file's [Match] keys against, from sysfs."""
    base = f"/sys/class/net/{iface}"
    drv = path = ""
    if root.exists(f"{base}/device"):
        dev = root.resolve(f"{base}/device")

        def link_name(name: str) -> str:
            p = posixpath.join(dev, name)
            return posixpath.basename(root.resolve(p)) if root.islink(p) or root.exists(p) else ""

        drv = link_name("driver")
        if link_name("subsystem") == "pci":
            path = "pci-" + posixpath.basename(dev)                  # udev's ID_PATH of a PCI NIC
    mac = (root.read_value(f"{base}/address") or "").lower()
    ntype = root.read_value(f"{base}/type")
    return {"Driver": drv, "MACAddress": mac, "PermanentMACAddress": mac,
            "Type": "ether" if ntype == "1" else "", "Path": path}


def _matches(lf: LinkFile, dev: Dict[str, str]) -> Optional[bool]:
    """True, False, or None when a key not evaluated here decides (it may match)."""
    unknown = False
    for key, patterns in lf.match.items():
        if key not in MATCH_KEYS:
            unknown = True
            continue
        value = dev.get(key, "")
        neg = bool(patterns) and patterns[0].startswith("!")
        pats = [p.lstrip("!") for p in patterns]
        if key in ("MACAddress", "PermanentMACAddress"):
            hit = value in [p.lower() for p in pats]
        else:
            hit = any(fnmatch.fnmatchcase(value, p) for p in pats)
        if hit == neg:
            return False
    return None if unknown else True


def owners(root: Root, iface: str, files: Optional[List[LinkFile]] = None) -> List[LinkFile]:
    """The .link files udev may apply to `iface`: those that may match, up to the first that
    surely does (udev applies the first match only)."""
    dev = device(root, iface)
    out: List[LinkFile] = []
    for lf in (files if files is not None else link_files(root)):
        m = _matches(lf, dev)
        if m is not False:
            out.append(lf)
        if m:
            break
    return out


def conflict(root: Root, iface: str, target: str, keys: List[str],
             files: Optional[List[LinkFile]] = None) -> Optional[str]:
    """A sentence naming the .link files and their keys that also set `target` of `iface`, or None."""
    found = [(lf, lf.owns(target, keys)) for lf in owners(root, iface, files)]
    found = [(lf, mine) for lf, mine in found if mine]
    if not found:
        return None
    sets = "; ".join(f"{lf.path} sets {', '.join(f'{k}={lf.link[k]}' for k in mine)}" for lf, mine in found)
    return (f"{iface} {target}: {sets} (udev applies it whenever the device appears); remove those keys "
            f"there, or keep this setting out of nettune's configuration")
