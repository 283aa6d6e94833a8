"""Tuning profiles, the reason behind every value, and the override file format.

The reasons cite the published tuning write-ups the values come from; the
figures quoted are theirs. guest/README.md explains each setting at length.
"""

from __future__ import annotations

import configparser
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from .errors import UsageError

Value = Union[int, bool, None]

# --- why each setting exists (one place; plan output and README quote these) ----------
REASONS: Dict[str, str] = {
    "irq": ("one queue per CPU, on the NIC's NUMA node: a 10G port needs several CPUs (67 ns per "
            "packet at 14.88 Mpps), and work spread over the remote socket pays for cross-node "
            "traffic; with 1:1 IRQ pinning 82599 routing scaled almost linearly to 11.7 Mpps on 9 CPUs"),
    "housekeeping": ("keep housekeeping CPUs free of queue interrupts: a 6-CPU router with all "
                     "queues on all CPUs had sluggish userland until CPU 0 was left out"),
    "other_irq": ("the NIC's non-queue vector (link/mailbox/config) goes to the housekeeping CPUs, "
                  "as the 82599/X710 cookbook does with the management interrupt on CPU 0"),
    "xps": ("XPS: a CPU transmits on the queue whose IRQ it serves, so transmit and completion "
            "clean-up stay on one CPU (lower TX latency, no cache line bouncing)"),
    "rps_on": ("RPS: the NIC has fewer queues than usable CPUs, so receive processing is spread "
               "over the node's CPUs in software"),
    "rps_off": ("RPS off: every usable CPU already has a hardware queue; software steering would "
                "only add an extra hop"),
    "channels": ("as many queues (channels) as usable CPUs on the NIC's node, so each queue gets a "
                 "CPU of its own and none lands on a housekeeping CPU"),
    "pause": ("flow control off: with pause frames one slow queue stalls the whole port (8 queues "
              "with one slowed to 100 Mb/s gave ~800 Mb/s instead of 7.1 Gb/s); without it the "
              "driver drops per queue (82599 SRRCTL.DROP_EN)"),
    "rings_throughput": ("large rings absorb bursts for bulk transfer (the X710 cookbook ran 4096 "
                         "RX/TX descriptors)"),
    "rings_latency": ("small rings stay in the CPU cache (DDIO) and bound queueing delay; large "
                      "rings with a low interrupt rate raise latency"),
    "rings_forwarding": ("small rings keep descriptors in cache; on ixgbe a TX ring of 80 makes TX "
                         "push back below the NAPI budget of 64, which turns on xmit_more batching "
                         "(1.6 Mpps on one CPU, 14.0 Mpps on nine, up from 12.4)"),
    "coalesce_bulk": ("explicit interrupt moderation: adaptive off, rx-usecs 25, tx-usecs 75 (the "
                      "X710 cookbook values), so the interrupt rate no longer follows the driver's "
                      "guess of the workload"),
    "coalesce_latency": ("explicit, short interrupt moderation: adaptive off, 10 us each way, for a "
                         "high interrupt rate and low latency at a CPU cost"),
    "tx-nocache-copy": ("tx-nocache-copy off: copying user data with non-temporal stores bypasses "
                        "the cache, which costs when the stack must checksum it again (tunnels "
                        "without offload) and defeats DDIO"),
    "ntuple-filters": ("ntuple filters on, so flows can be pinned to queues (the 82599 routing "
                       "measurements used them to keep each flow on its queue)"),
    "irqbalance_stop": ("irqbalance stopped: it moves IRQs by load and undoes 1:1 queue pinning "
                        "(every published measurement above disabled it)"),
    "irqbalance_ban": ("irqbalance keeps running but is told to leave the tuned IRQs and the queue "
                       "CPUs alone (--banirq, IRQBALANCE_BANNED_CPULIST)"),
    "net.core.netdev_max_backlog": "per-CPU input backlog raised from 1000 to 300000 packets (X710 cookbook)",
    "net.core.netdev_budget": "packets per NAPI softirq cycle raised from 300 to 4096 (X710 cookbook)",
    "net.core.rmem_max": "socket receive buffer ceiling 128 MiB (X710 cookbook)",
    "net.core.wmem_max": "socket send buffer ceiling 128 MiB (X710 cookbook)",
    "net.ipv4.tcp_rmem": "TCP receive autotuning up to 64 MiB: min 4096, default 87380, max 67108864 (X710 cookbook)",
    "net.ipv4.tcp_wmem": "TCP send autotuning up to 64 MiB: min 4096, default 87380, max 67108864 (X710 cookbook)",
    "net.core.busy_read": ("busy polling of the device queue for 50 us on socket reads: trades CPU for "
                           "latency (the kernel documentation's suggested starting value)"),
    "net.core.busy_poll": "busy polling for 50 us in poll/select (same trade as busy_read)",
    "net.ipv4.ip_forward": "forward IPv4 packets between interfaces (router)",
    "net.ipv4.conf.all.rp_filter": ("reverse-path filter off: a per-packet route lookup the forwarding "
                                    "benchmarks (2.04 to 2.12 Mpps on one CPU) ran without"),
    "net.ipv4.conf.default.rp_filter": "reverse-path filter off for interfaces created later",
    "rp_filter_iface": "reverse-path filter off on the tuned interface (the kernel uses the larger of all/<if>)",
    "net.ipv4.ip_early_demux": ("early demux off: it helps local sockets but measurably slows "
                                "forwarding, where no packet is for a local socket"),
    "override": "set in the override file",
}


@dataclass
class Profile:
    name: str
    summary: str
    rings: Dict[str, int]
    rings_by_driver: Dict[str, Dict[str, int]]
    rings_reason: str
    coalesce: Dict[str, Value]
    coalesce_reason: str
    flow_control_off: bool
    features: Dict[str, bool]
    sysctls: Dict[str, str]
    iface_sysctls: Dict[str, str]    # leaf sysctls per tuned interface, "{if}" is the name


_COMMON_FEATURES = {"tx-nocache-copy": False, "ntuple-filters": True}
_COMMON_SYSCTLS = {"net.core.netdev_max_backlog": "300000"}

PROFILES: Dict[str, Profile] = {
    "throughput": Profile(
        name="throughput",
        summary="bulk transfer at an end point: big rings, moderate interrupt rate, big socket buffers",
        rings={"rx": 4096, "tx": 4096}, rings_by_driver={}, rings_reason="rings_throughput",
        coalesce={"adaptive-rx": False, "adaptive-tx": False, "rx-usecs": 25, "tx-usecs": 75},
        coalesce_reason="coalesce_bulk", flow_control_off=True, features=dict(_COMMON_FEATURES),
        sysctls=dict(_COMMON_SYSCTLS, **{
            "net.core.netdev_budget": "4096",
            "net.core.rmem_max": "134217728", "net.core.wmem_max": "134217728",
            "net.ipv4.tcp_rmem": "4096 87380 67108864", "net.ipv4.tcp_wmem": "4096 87380 67108864",
        }),
        iface_sysctls={},
    ),
    "latency": Profile(
        name="latency",
        summary="request/response at an end point: small rings, high interrupt rate, busy polling",
        rings={"rx": 512, "tx": 512}, rings_by_driver={}, rings_reason="rings_latency",
        coalesce={"adaptive-rx": False, "adaptive-tx": False, "rx-usecs": 10, "tx-usecs": 10},
        coalesce_reason="coalesce_latency", flow_control_off=True, features=dict(_COMMON_FEATURES),
        sysctls=dict(_COMMON_SYSCTLS, **{"net.core.busy_read": "50", "net.core.busy_poll": "50"}),
        iface_sysctls={},
    ),
    "forwarding": Profile(
        name="forwarding",
        summary="routing between interfaces: small rings, forwarding on, rp_filter and early demux off",
        rings={"rx": 512, "tx": 512}, rings_by_driver={"ixgbe": {"tx": 80}}, rings_reason="rings_forwarding",
        coalesce={"adaptive-rx": False, "adaptive-tx": False, "rx-usecs": 25, "tx-usecs": 75},
        coalesce_reason="coalesce_bulk", flow_control_off=True, features=dict(_COMMON_FEATURES),
        sysctls=dict(_COMMON_SYSCTLS, **{
            "net.core.netdev_budget": "4096",
            "net.ipv4.ip_forward": "1",
            "net.ipv4.conf.all.rp_filter": "0", "net.ipv4.conf.default.rp_filter": "0",
            "net.ipv4.ip_early_demux": "0",
        }),
        iface_sysctls={"net.ipv4.conf.{if}.rp_filter": "0"},
    ),
}

CATEGORIES = ("channels", "rings", "coalesce", "pause", "features", "irq", "xps", "rps", "sysctl", "irqbalance")
IRQBALANCE_POLICIES = ("stop", "ban", "ignore")


@dataclass
class Config:
    """A profile name plus the operator's overrides (from a file and/or the command line)."""

    profile: str = "throughput"
    interfaces: Optional[List[str]] = None
    cpus: Optional[str] = None
    housekeeping: Optional[str] = None
    irqbalance: str = "stop"
    channels: str = "auto"
    rps: str = "auto"
    xps: bool = True
    skip: List[str] = field(default_factory=list)
    rings: Dict[str, int] = field(default_factory=dict)
    coalesce: Dict[str, Value] = field(default_factory=dict)
    flow_control_off: Optional[bool] = None   # None: as the profile says; False: leave it alone
    features: Dict[str, Optional[bool]] = field(default_factory=dict)   # None: leave alone
    sysctls: Dict[str, Optional[str]] = field(default_factory=dict)     # None: leave alone
    source: str = "defaults"

    def to_json(self) -> Dict[str, Any]:
        return {
            "profile": self.profile, "interfaces": self.interfaces, "cpus": self.cpus,
            "housekeeping": self.housekeeping, "irqbalance": self.irqbalance, "channels": self.channels,
            "rps": self.rps, "xps": self.xps, "skip": sorted(self.skip), "rings": self.rings,
            "coalesce": self.coalesce, "flow_control_off": self.flow_control_off, "features": self.features,
            "sysctls": self.sysctls,
        }


_BOOL = {"on": True, "yes": True, "true": True, "1": True, "off": False, "no": False, "false": False, "0": False}
_KEEP = ("keep", "leave", "-")
_ETHTOOL_KEYS = {
    "rx_ring": ("rings", "rx"), "tx_ring": ("rings", "tx"),
    "rx_usecs": ("coalesce", "rx-usecs"), "tx_usecs": ("coalesce", "tx-usecs"),
    "rx_frames": ("coalesce", "rx-frames"), "tx_frames": ("coalesce", "tx-frames"),
    "adaptive_rx": ("coalesce", "adaptive-rx"), "adaptive_tx": ("coalesce", "adaptive-tx"),
    "flow_control": ("pause", ""),
}


def _as_bool(val: Any, where: str) -> bool:
    if isinstance(val, bool):
        return val
    text = str(val).strip().lower()
    if text not in _BOOL:
        raise UsageError(f"{where}: expected on/off, got {val!r}")
    return _BOOL[text]


def _as_int(val: Any, where: str, minimum: int = 0) -> int:
    if isinstance(val, bool):
        raise UsageError(f"{where}: expected a number, got {val!r}")
    try:
        num = int(str(val).strip())
    except ValueError:
        raise UsageError(f"{where}: expected a number, got {val!r}") from None
    if num < minimum:
        raise UsageError(f"{where}: {num} is below {minimum}")
    return num


def _words(val: Any) -> List[str]:
    if isinstance(val, list):
        return [str(v).strip() for v in val if str(v).strip()]
    return [w for w in str(val).replace(",", " ").split() if w]


def _profile(cfg: Config, val: Any, where: str) -> str:
    name = str(val).strip()
    if name not in PROFILES:
        raise UsageError(f"{where}: unknown profile {name!r} (choose from {', '.join(PROFILES)})")
    return name


def _irqbalance(cfg: Config, val: Any, where: str) -> str:
    pol = str(val).strip().lower()
    if pol not in IRQBALANCE_POLICIES:
        raise UsageError(f"{where}: irqbalance must be one of {', '.join(IRQBALANCE_POLICIES)}, got {val!r}")
    return pol


def _channels(cfg: Config, val: Any, where: str) -> str:
    text = str(val).strip().lower()
    return text if text in ("auto", "keep") else str(_as_int(text, where, 1))


def _rps(cfg: Config, val: Any, where: str) -> str:
    text = str(val).strip().lower()
    if text == "auto":
        return text
    return "on" if _as_bool(text, where) else "off"


def _skip(cfg: Config, val: Any, where: str) -> List[str]:
    cats = _words(val)
    bad = [c for c in cats if c not in CATEGORIES]
    if bad:
        raise UsageError(f"{where}: unknown categories {', '.join(bad)} (choose from {', '.join(CATEGORIES)})")
    return sorted(set(cfg.skip) | set(cats))


# The [nettune] section: each key is the Config attribute its parser's value goes to.
_GENERAL: Dict[str, Callable[[Config, Any, str], Any]] = {
    "profile": _profile,
    "interfaces": lambda cfg, val, where: _words(val) or None,
    "cpus": lambda cfg, val, where: str(val).strip() or None,
    "housekeeping": lambda cfg, val, where: str(val).strip() or None,
    "irqbalance": _irqbalance,
    "channels": _channels,
    "rps": _rps,
    "xps": lambda cfg, val, where: _as_bool(val, where),
    "skip": _skip,
}


def _apply_general(cfg: Config, key: str, val: Any, where: str) -> None:
    parse = _GENERAL.get(key)
    if parse is None:
        raise UsageError(f"{where}: unknown setting {key!r}")
    setattr(cfg, key, parse(cfg, val, where))


def _apply_ethtool(cfg: Config, key: str, val: Any, where: str) -> None:
    if key not in _ETHTOOL_KEYS:
        raise UsageError(f"{where}: unknown ethtool setting {key!r} (known: {', '.join(sorted(_ETHTOOL_KEYS))})")
    group, name = _ETHTOOL_KEYS[key]
    if group == "pause":
        # flow_control = off  -> turn it off (profile default); on/keep -> leave it alone
        text = str(val).strip().lower()
        cfg.flow_control_off = False if text in _KEEP else not _as_bool(val, where)
    elif group == "rings":
        cfg.rings[name] = _as_int(val, where, 1)
    elif name.startswith("adaptive"):
        cfg.coalesce[name] = _as_bool(val, where)
    else:
        cfg.coalesce[name] = _as_int(val, where, 0)


def _apply_feature(cfg: Config, key: str, val: Any, where: str) -> None:
    text = str(val).strip().lower()
    cfg.features[key] = None if text in _KEEP else _as_bool(val, where)


def _apply_sysctl(cfg: Config, key: str, val: Any, where: str) -> None:
    if not key.startswith("net.") or ".." in key or key.endswith("."):
        raise UsageError(f"{where}: {key!r} is not a net.* sysctl name")
    text = " ".join(str(val).split())
    cfg.sysctls[key] = None if text.lower() in _KEEP else text


_SECTIONS: Dict[str, Callable[[Config, str, Any, str], None]] = {
    "nettune": _apply_general, "ethtool": _apply_ethtool, "features": _apply_feature, "sysctl": _apply_sysctl,
}


def load_config(path: str, base: Optional[Config] = None) -> Config:
    """Read an override file: INI (sections [nettune] [ethtool] [features] [sysctl]) or JSON."""
    cfg = base or Config()
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise UsageError(f"cannot read config file {path}: {e.strerror}") from None
    name = os.path.basename(path)
    if path.endswith(".json") or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as e:
            raise UsageError(f"{name}: not valid JSON: {e}") from None
        if not isinstance(data, dict):
            raise UsageError(f"{name}: the top level must be an object")
        for key, val in data.items():
            where = f"{name}: {key}"
            if key in ("ethtool", "features", "sysctl"):
                if not isinstance(val, dict):
                    raise UsageError(f"{where}: must be an object")
                for k, v in val.items():
                    _SECTIONS[key](cfg, k, v, f"{where}.{k}")
            else:
                _apply_general(cfg, key, val, where)
    else:
        parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"),
                                           delimiters=("=",))
        parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep case of feature names
        try:
            parser.read_string(text, source=name)
        except configparser.Error as e:
            raise UsageError(f"{name}: {e}") from None
        for section in parser.sections():
            handler = _SECTIONS.get(section)
            if handler is None:
                raise UsageError(f"{name}: unknown section [{section}] (known: nettune, ethtool, features, sysctl)")
            for key, val in parser.items(section):
                handler(cfg, key, val, f"{name} [{section}] {key}")
    cfg.source = path
    return cfg
