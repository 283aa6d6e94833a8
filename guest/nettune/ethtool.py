"""ethtool settings behind one interface, with two implementations.

* `RealEthtool` runs the `ethtool` binary and parses `-i/-a/-g/-c/-k/-l/-n`.
* `RecordedEthtool` keeps the same facts in a JSON "ethtool state" file inside a
  `--root` tree. Setting a value there edits the file (and checks the value the
  way a driver would: unsupported operation, fixed feature, above the maximum),
  so apply and revert of ethtool settings can be tested byte for byte.

Both report what they did as the `ethtool` command line that makes the change.

Operations and their value dictionaries:
  pause     {"autoneg": bool, "rx": bool, "tx": bool}                (ethtool -A)
  rings     {"rx": int, "tx": int, "rx-mini": int, "rx-jumbo": int}  (ethtool -G)
  coalesce  {"adaptive-rx": bool, "adaptive-tx": bool, "rx-usecs": int, ...} (-C)
  features  {"tx-nocache-copy": bool, "ntuple-filters": bool, ...}    (ethtool -K)
  channels  {"rx": int, "tx": int, "other": int, "combined": int}     (ethtool -L)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

Value = Union[int, bool, None]
OPS = ("channels", "rings", "coalesce", "pause", "features")
_FLAGS = {"pause": "-A", "rings": "-G", "coalesce": "-C", "features": "-K", "channels": "-L"}
_BOOL_COALESCE = ("adaptive-rx", "adaptive-tx")


class EthtoolError(Exception):
    """ethtool refused or failed. `unsupported` is set when the driver lacks the operation."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported or bool(_UNSUPPORTED.search(message))


_UNSUPPORTED = re.compile(r"Operation not supported|not supported", re.IGNORECASE)


@dataclass
class EthtoolInfo:
    """What ethtool reports for one device; a section is None when the driver lacks it."""

    driver: Optional[str] = None
    bus_info: Optional[str] = None
    pause: Optional[Dict[str, bool]] = None
    rings: Optional[Dict[str, Dict[str, Optional[int]]]] = None      # {"max": {...}, "current": {...}}
    coalesce: Optional[Dict[str, Value]] = None
    features: Optional[Dict[str, Dict[str, bool]]] = None            # name -> {"on", "fixed"}
    channels: Optional[Dict[str, Dict[str, Optional[int]]]] = None   # {"max": {...}, "current": {...}}
    rx_rings: Optional[int] = None
    ntuple_rules: Optional[int] = None
    errors: Dict[str, str] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {
            "driver": self.driver, "bus_info": self.bus_info, "pause": self.pause,
            "rings": self.rings, "coalesce": self.coalesce, "features": self.features,
            "channels": self.channels, "rx_rings": self.rx_rings,
            "ntuple_rules": self.ntuple_rules, "errors": dict(sorted(self.errors.items())),
        }

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "EthtoolInfo":
        return cls(
            driver=d.get("driver"), bus_info=d.get("bus_info"), pause=d.get("pause"),
            rings=d.get("rings"), coalesce=d.get("coalesce"), features=d.get("features"),
            channels=d.get("channels"), rx_rings=d.get("rx_rings"),
            ntuple_rules=d.get("ntuple_rules"), errors=dict(d.get("errors") or {}),
        )

    def current(self, op: str) -> Optional[Dict[str, Value]]:
        """The current values of one operation, in the form `set` takes."""
        if op == "pause":
            return dict(self.pause) if self.pause is not None else None
        if op == "coalesce":
            return dict(self.coalesce) if self.coalesce is not None else None
        if op == "features":
            if self.features is None:
                return None
            return {k: v["on"] for k, v in self.features.items()}
        section = self.rings if op == "rings" else self.channels if op == "channels" else None
        if section is None:
            return None
        return dict(section["current"])


def command(dev: str, op: str, values: Dict[str, Value]) -> List[str]:
    """The ethtool command line that sets `values` for `op` on `dev`."""
    if op not in _FLAGS:
        raise ValueError(f"unknown ethtool operation {op!r}")
    argv = ["ethtool", _FLAGS[op], dev]
    for key in sorted(values, key=_arg_order):
        val = values[key]
        argv += [key, ("on" if val else "off") if isinstance(val, bool) else str(val)]
    return argv


def _arg_order(key: str) -> Tuple[int, str]:
    # autoneg first for -A, adaptive-* before usecs for -C: some drivers need that order.
    first = ("autoneg", "adaptive-rx", "adaptive-tx")
    return (0 if key in first else 1, key)


# --- parsing of ethtool's text output ------------------------------------------------
def _num(text: str) -> Optional[int]:
    text = text.strip()
    if text.lower() in ("n/a", ""):
        return None
    try:
        return int(text)
    except ValueError:
        return None


def _onoff(text: str) -> Optional[bool]:
    word = text.strip().split(" ")[0].lower()
    if word == "on":
        return True
    if word == "off":
        return False
    return None


def parse_driver(out: str) -> Dict[str, Optional[str]]:
    res: Dict[str, Optional[str]] = {"driver": None, "bus_info": None}
    for line in out.splitlines():
        key, sep, val = line.partition(":")
        if not sep:
            continue
        if key.strip() == "driver":
            res["driver"] = val.strip() or None
        elif key.strip() == "bus-info":
            res["bus_info"] = val.strip() or None
    return res


def parse_pause(out: str) -> Dict[str, bool]:
    names = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx"}
    res: Dict[str, bool] = {}
    for line in out.splitlines():
        key, sep, val = line.partition(":")
        key = key.strip().lower()
        if sep and key in names:
            flag = _onoff(val)
            if flag is not None:
                res[names[key]] = flag
    if set(res) != {"autoneg", "rx", "tx"}:
        raise EthtoolError(f"unexpected pause output: {out!r}")
    return res


def _parse_max_current(out: str, names: Dict[str, str]) -> Dict[str, Dict[str, Optional[int]]]:
    res: Dict[str, Dict[str, Optional[int]]] = {"max": {}, "current": {}}
    section: Optional[str] = None
    for line in out.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            section = "max"
            continue
        if low.startswith("current hardware settings"):
            section = "current"
            continue
        key, sep, val = line.partition(":")
        key = key.strip().lower()
        if section and sep and key in names:
            res[section][names[key]] = _num(val)
    if not res["max"] or not res["current"]:
        raise EthtoolError(f"unexpected output: {out!r}")
    return res


def parse_rings(out: str) -> Dict[str, Dict[str, Optional[int]]]:
    return _parse_max_current(out, {"rx": "rx", "rx mini": "rx-mini", "rx jumbo": "rx-jumbo", "tx": "tx"})


def parse_channels(out: str) -> Dict[str, Dict[str, Optional[int]]]:
    return _parse_max_current(out, {"rx": "rx", "tx": "tx", "other": "other", "combined": "combined"})


_ADAPTIVE = re.compile(r"^Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", re.IGNORECASE)


def parse_coalesce(out: str) -> Dict[str, Value]:
    res: Dict[str, Value] = {}
    seen_adaptive = False
    for line in out.splitlines():
        m = _ADAPTIVE.match(line.strip())
        if m:
            seen_adaptive = True
            res["adaptive-rx"] = _onoff(m.group(1))
            res["adaptive-tx"] = _onoff(m.group(2))
            continue
        key, sep, val = line.partition(":")
        key = key.strip()
        if not sep or not re.fullmatch(r"[a-z][a-z0-9-]*", key):
            continue
        res[key] = _num(val)
    if not seen_adaptive:
        raise EthtoolError(f"unexpected coalesce output: {out!r}")
    return res


def parse_features(out: str) -> Dict[str, Dict[str, bool]]:
    res: Dict[str, Dict[str, bool]] = {}
    for line in out.splitlines():
        if line.startswith("Features for") or not line.strip():
            continue
        key, sep, val = line.strip().partition(":")
        flag = _onoff(val)
        if not sep or flag is None:
            continue
        res[key.strip()] = {"on": flag, "fixed": "[fixed]" in val}
    if not res:
        raise EthtoolError(f"unexpected features output: {out!r}")
    return res


def parse_ntuple(out: str) -> Dict[str, Optional[int]]:
    res: Dict[str, Optional[int]] = {"rx_rings": None, "ntuple_rules": None}
    for line in out.splitlines():
        m = re.match(r"\s*(\d+) RX rings available", line)
        if m:
            res["rx_rings"] = int(m.group(1))
        m = re.match(r"\s*Total (\d+) rules", line)
        if m:
            res["ntuple_rules"] = int(m.group(1))
    return res


# --- the two implementations --------------------------------------------------------
class Ethtool:
    """Reads and changes ethtool settings of a network device."""

    live = False
    description = ""

    def info(self, dev: str) -> EthtoolInfo:
        raise NotImplementedError

    def set(self, dev: str, op: str, values: Dict[str, Value]) -> List[str]:
        """Apply `values`; return the command line. Raises EthtoolError on refusal."""
        raise NotImplementedError


def find_ethtool() -> Optional[str]:
    found = shutil.which("ethtool")
    if found:
        return found
    for cand in ("/usr/sbin/ethtool", "/sbin/ethtool"):
        if os.access(cand, os.X_OK):
            return cand
    return None


class RealEthtool(Ethtool):
    live = True
    description = "the ethtool binary"

    def __init__(self, binary: Optional[str] = None, timeout: float = 30.0) -> None:
        self.binary = binary or find_ethtool()
        self.timeout = timeout

    def _run(self, args: List[str]) -> str:
        if not self.binary:
            raise EthtoolError("the ethtool binary was not found (install the ethtool package)")
        try:
            proc = subprocess.run([self.binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=self.timeout, check=False,
                                  env=dict(os.environ, LC_ALL="C"))
        except subprocess.TimeoutExpired:
            raise EthtoolError(f"ethtool {' '.join(args)}: timed out after {self.timeout:.0f} s") from None
        if proc.returncode != 0:
            msg = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}")
            raise EthtoolError(f"ethtool {' '.join(args)}: {msg.splitlines()[-1] if msg else ''}".rstrip())
        return proc.stdout

    def _query(self, dev: str, flag: str) -> Tuple[int, str, str]:
        if not self.binary:
            raise EthtoolError("the ethtool binary was not found (install the ethtool package)")
        try:
            proc = subprocess.run([self.binary, flag, dev], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  universal_newlines=True, timeout=self.timeout, check=False,
                                  env=dict(os.environ, LC_ALL="C"))
        except subprocess.TimeoutExpired:
            return 124, "", f"timed out after {self.timeout:.0f} s"
        return proc.returncode, proc.stdout, proc.stderr

    def info(self, dev: str) -> EthtoolInfo:
        if not self.binary:
            raise EthtoolError("the ethtool binary was not found (install the ethtool package)")
        return info_from_outputs(dev, lambda flag: self._query(dev, flag))

    def set(self, dev: str, op: str, values: Dict[str, Value]) -> List[str]:
        argv = command(dev, op, values)
        self._run(argv[1:])
        return argv


def info_from_outputs(dev: str, query: Callable[[str], Tuple[int, str, str]]) -> EthtoolInfo:
    """Build EthtoolInfo from the outputs of `ethtool -i/-a/-g/-c/-k/-l/-n DEV`.

    `query(flag)` returns (exit status, stdout, stderr) of one ethtool run.
    """
    info = EthtoolInfo()
    steps: List[Tuple[str, str, Callable[[str], Any]]] = [
        ("driver", "-i", parse_driver), ("pause", "-a", parse_pause), ("rings", "-g", parse_rings),
        ("coalesce", "-c", parse_coalesce), ("features", "-k", parse_features),
        ("channels", "-l", parse_channels),
    ]
    for name, flag, parser in steps:
        rc, out, err = query(flag)
        if rc != 0:
            msg = (err.strip() or out.strip() or f"exit status {rc}").splitlines()[-1]
            info.errors[name] = f"ethtool {flag} {dev}: {msg}"
            continue
        try:
            parsed = parser(out)
        except EthtoolError as e:
            info.errors[name] = str(e)
            continue
        if name == "driver":
            info.driver, info.bus_info = parsed["driver"], parsed["bus_info"]
        else:
            setattr(info, name, parsed)
    # -n exits non-zero when the rule count is unsupported but may still print the ring count.
    rc, out, err = query("-n")
    nt = parse_ntuple(out)
    info.rx_rings, info.ntuple_rules = nt["rx_rings"], nt["ntuple_rules"]
    if rc != 0:
        info.errors["ntuple"] = (err.strip().splitlines() or ["failed"])[-1]
    return info


class CapturedEthtool(Ethtool):
    """Read-only: ethtool output saved by guest/record.sh (<dir>/<dev>/<flag>.{out,err,rc})."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.description = "captured ethtool output"

    def _query(self, dev: str, flag: str) -> Tuple[int, str, str]:
        base = os.path.join(self.directory, dev, flag.lstrip("-"))
        try:
            with open(base + ".rc", encoding="utf-8") as f:
                rc = int(f.read().strip() or "1")
            with open(base + ".out", encoding="utf-8") as f:
                out = f.read()
            with open(base + ".err", encoding="utf-8") as f:
                err = f.read()
        except (OSError, ValueError) as e:
            return 1, "", f"no captured output: {e}"
        return rc, out, err

    def info(self, dev: str) -> EthtoolInfo:
        if not os.path.isdir(os.path.join(self.directory, dev)):
            raise EthtoolError(f"no captured ethtool output for {dev}")
        return info_from_outputs(dev, lambda flag: self._query(dev, flag))

    def set(self, dev: str, op: str, values: Dict[str, Value]) -> List[str]:
        raise EthtoolError("captured ethtool output is read-only")


class RecordedEthtool(Ethtool):
    """ethtool facts kept in a JSON file: {"version": 1, "devices": {dev: EthtoolInfo}}."""

    live = False

    def __init__(self, path: str) -> None:
        self.path = path
        self.description = f"recorded ethtool state {os.path.basename(path)}"

    def _load(self) -> Dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            raise EthtoolError(f"no ethtool state file {self.path}") from None
        except ValueError as e:
            raise EthtoolError(f"ethtool state file {self.path} is not valid JSON: {e}") from None
        if not isinstance(data, dict) or not isinstance(data.get("devices"), dict):
            raise EthtoolError(f"ethtool state file {self.path} has no 'devices' object")
        return data

    def info(self, dev: str) -> EthtoolInfo:
        devices = self._load()["devices"]
        if dev not in devices:
            raise EthtoolError(f"no such device in {os.path.basename(self.path)}: {dev}")
        return EthtoolInfo.from_json(devices[dev])

    def set(self, dev: str, op: str, values: Dict[str, Value]) -> List[str]:
        argv = command(dev, op, values)
        what = " ".join(argv)
        data = self._load()
        entry = data["devices"].get(dev)
        if entry is None:
            raise EthtoolError(f"{what}: No such device")
        section = entry.get(op)
        refuse = (entry.get("refuse") or {}).get(op)
        if section is None or refuse:
            # "refuse" marks operations a driver reports but will not change, e.g. virtio-net
            # coalescing without the VIRTIO_NET_F_NOTF_COAL feature.
            raise EthtoolError(f"{what}: {refuse or 'Operation not supported'}", unsupported=section is None)
        if op in ("rings", "channels"):
            _set_counts(what, op, section, values)
        elif op == "features":
            _set_features(what, section, values)
        else:
            for key, val in values.items():
                if key not in section or section[key] is None:
                    raise EthtoolError(f"{what}: Operation not supported ({key})")
                section[key] = val
        _write_json_atomic(self.path, data)
        return argv


def _set_counts(what: str, op: str, section: Dict[str, Any], values: Dict[str, Value]) -> None:
    """Ring sizes or channel counts, each within its maximum, as the kernel checks them."""
    for key, val in values.items():
        top = section["max"].get(key)
        if top is None:
            raise EthtoolError(f"{what}: {key} is not supported (n/a)")
        if not isinstance(val, int) or isinstance(val, bool) or val < 0 or val > top:
            raise EthtoolError(f"{what}: Invalid argument ({key} {val} above maximum {top})")
        section["current"][key] = val
    if op == "channels" and (section["current"].get("combined") or 0) + min(
            section["current"].get("rx") or 0, section["current"].get("tx") or 0) == 0:
        raise EthtoolError(f"{what}: Invalid argument (no queues left)")


def _set_features(what: str, section: Dict[str, Any], values: Dict[str, Value]) -> None:
    """Features by name; a fixed one cannot change."""
    for key, val in values.items():
        feat = section.get(key)
        if feat is None:
            raise EthtoolError(f"{what}: unknown feature {key}")
        if feat["fixed"] and feat["on"] != val:
            raise EthtoolError(f"{what}: Could not change any device features")
        feat["on"] = bool(val)


def dump_json(data: Any) -> str:
    """The one canonical spelling of nettune's JSON files."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _write_json_atomic(path: str, data: Any) -> None:
    text = dump_json(data)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".ethtool.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except FileNotFoundError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
