"""One handler per kind of setting, in a registry.

Every setting of a plan names its kind: a CPU list in /proc/irq ("irq"), a CPU
mask in sysfs ("mask"), a sysctl, an ethtool operation, a service that runs or
not, a whole file, the ethtool properties of a NetworkManager connection ("nm"). Apply, verify, revert and rollback are generic loops; all
they know of a kind they ask its handler in `KINDS`: how to read the live value,
compare and show it, write it, check beforehand that it can be written, record
the previous value and find the target again when restoring it.

A new kind is one subclass of `Kind` (or of `SysfsKind` for a file under /proc
or /sys) decorated with `@register`.
"""

from __future__ import annotations

import copy
import os
import posixpath
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, List, NamedTuple, Optional, Type, TypeVar

from . import linkfiles, nm
from .cpus import parse_cpulist, parse_mask
from .errors import ApplyError, NettuneError
from .ethtool import EthtoolError, command as ethtool_command
from .host import Host, IrqNumbers
from .services import ServiceError, find_pids

if TYPE_CHECKING:
    from typing import Protocol

    from .plan import Setting

    class Item(Protocol):
        """A planned setting, or a queue reading taken before apply changed anything."""

        @property
        def kind(self) -> str: ...
        @property
        def target(self) -> str: ...
        @property
        def iface(self) -> Optional[str]: ...
        @property
        def label(self) -> str: ...
        @property
        def irq_action(self) -> Optional[str]: ...

MISSING = object()   # a value that cannot be read (no such file, no ethtool, the driver lacks the operation)

# After a drop-in changes: systemd reads it again and irqbalance, the unit it belongs to, restarts.
DROPIN_RELOAD = (("systemctl", "daemon-reload"), ("systemctl", "try-restart", "irqbalance.service"))


class Unsupported(ApplyError):
    """The driver reports a setting but refuses to change it (e.g. virtio-net coalescing)."""


class Blocker(NamedTuple):
    """Why a setting cannot be changed: its target is missing, or writing it is denied."""

    denied: bool
    text: str


class Location(NamedTuple):
    """Where a recorded value goes back to now (target None: gone, for the reason `why`)."""

    target: Optional[str]
    why: str = ""
    note: str = ""      # how the target changed since, e.g. " (now IRQ 45)"


class Kind:
    """The handler of one kind of setting. `name` is the kind as plans and state files spell it."""

    name: ClassVar[str] = ""
    nic: ClassVar[bool] = False   # NIC settings re-create queues and IRQs: restored before the others

    # --- reading and comparing ---------------------------------------------------------------
    def read(self, host: Host, s: Setting) -> Any:
        """The live value in the form `s.want` takes (MISSING when absent)."""
        raise NotImplementedError

    def norm(self, value: Any) -> Any:
        """The value in comparable form (a CPU list and the same list spelled otherwise are equal)."""
        return value

    def show(self, value: Any) -> str:
        return " ".join(str(value).split()) or "(empty)"

    def show_planned(self, want: Any) -> str:
        """A wanted value as the printed plan shows it."""
        return self.show(want)

    # --- writing -------------------------------------------------------------------------------
    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        """Set one value; return the commands this took (listed, not run, for recorded backends)."""
        raise NotImplementedError

    def command(self, s: Setting) -> Optional[List[str]]:
        """The command that would set `s`, for a dry run (None: a plain write)."""
        return None

    def preflight(self, host: Host, s: Setting) -> Optional[Blocker]:
        """Checked for every setting before apply changes anything (None: nothing in the way)."""
        return None

    def creates(self, host: Host, target: str) -> List[str]:
        """Directories (system paths) writing `target` would create."""
        return []

    # --- recording and restoring ----------------------------------------------------------------
    def change_id(self, item: Item) -> str:
        """The identity of a change in the state file, stable across re-applies."""
        return f"{self.name}:{item.target}"

    def entry(self, item: Item, previous: Any, applied: Any, created: List[str]) -> Dict[str, Any]:
        """A state file record of a change."""
        return {"id": self.change_id(item), "kind": self.name, "target": item.target, "iface": item.iface,
                "label": item.label, "previous": copy.deepcopy(previous), "applied": copy.deepcopy(applied)}

    def merge(self, entry: Dict[str, Any], s: Setting, previous: Any) -> None:
        """Change an existing record when `s` is applied again: the first previous value stays."""
        entry["applied"] = s.want
        entry["target"] = s.target

    def locate(self, host: Host, target: str, irq_action: Optional[str], irqs: IrqNumbers) -> Location:
        """Where a value recorded for `target` goes back to now, or why it cannot."""
        return Location(target)

    def restore(self, host: Host, entry: Dict[str, Any], target: str) -> List[List[str]]:
        """Write a recorded previous value back (revert)."""
        return self.write(host, target, entry.get("iface"), entry["previous"])


KINDS: Dict[str, Kind] = {}
K = TypeVar("K", bound=Kind)
T = TypeVar("T")


def register(cls: Type[K]) -> Type[K]:
    """Class decorator: put one handler of this kind into `KINDS`."""
    handler = cls()
    KINDS[handler.name] = handler
    return cls


def kind_of(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(f"unknown setting kind {name}") from None


def same_value(kind: str, current: Any, want: Any) -> bool:
    """Whether a live value equals a wanted one, in the kind's own terms (CPU lists, masks)."""
    if current is MISSING:
        return False
    handler = kind_of(kind)
    try:
        return bool(handler.norm(current) == handler.norm(want))
    except NettuneError:
        return False


def show(kind: str, value: Any) -> str:
    return "missing" if value is MISSING else kind_of(kind).show(value)


def read_current(host: Host, s: Setting) -> Any:
    """The live value of a setting in the form its `want` takes (MISSING when absent)."""
    return kind_of(s.kind).read(host, s)


def satisfied(s: Setting, current: Any) -> bool:
    return same_value(s.kind, current, s.want)


def restore_order(items: List[T], kind: Callable[[T], str]) -> List[T]:
    """Newest first, NIC settings before the others: a NIC change re-creates queues and IRQs
    and resets their masks and affinities, so those go back after it."""
    newest_first = list(reversed(items))
    return ([i for i in newest_first if kind_of(kind(i)).nic]
            + [i for i in newest_first if not kind_of(kind(i)).nic])


def remove_dirs(host: Host, dirs: List[str]) -> None:
    for d in sorted(dirs, key=len, reverse=True):
        try:
            os.rmdir(host.root.host_path(d))
        except OSError:
            pass


def _onoff(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return "n/a" if v is None else str(v)


def existing_file_blocker(host: Host, s: Setting) -> Optional[Blocker]:
    """A setting whose target must already exist, and on a recorded tree be writable."""
    if not host.root.exists(s.target):
        return Blocker(False, f"{s.target} does not exist ({s.iface + ' ' if s.iface else ''}{s.label})")
    if not host.live and not host.root.can_write(s.target):
        return Blocker(True, s.target)
    return None


# --- files under /proc and /sys ----------------------------------------------------------------
class SysfsKind(Kind):
    """A value in a /proc or /sys file, written in one write(2) with a final newline."""

    def read(self, host: Host, s: Setting) -> Any:
        try:
            return host.root.read(s.target)
        except OSError:
            return MISSING

    def show_planned(self, want: Any) -> str:
        return str(want)

    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        text = value if value.endswith("\n") else value + "\n"
        try:
            host.root.write(target, text)
        except OSError as e:
            raise ApplyError(f"cannot write {value.strip()!r} to {target}: {e.strerror or e}") from None
        return []

    def preflight(self, host: Host, s: Setting) -> Optional[Blocker]:
        return existing_file_blocker(host, s)

    def locate(self, host: Host, target: str, irq_action: Optional[str], irqs: IrqNumbers) -> Location:
        if not host.root.exists(target):
            return Location(None, f"{target} no longer exists")
        return Location(target)


@register
class IrqKind(SysfsKind):
    """An IRQ's smp_affinity_list, found again by its action name when the number changed."""

    name = "irq"

    def norm(self, value: Any) -> Any:
        return tuple(parse_cpulist(value))

    def change_id(self, item: Item) -> str:
        if item.irq_action:
            return f"irq:{item.iface}:{item.irq_action}"
        return super().change_id(item)

    def entry(self, item: Item, previous: Any, applied: Any, created: List[str]) -> Dict[str, Any]:
        entry = super().entry(item, previous, applied, created)
        if item.irq_action is not None:
            entry["irq_action"] = item.irq_action
        return entry

    def locate(self, host: Host, target: str, irq_action: Optional[str], irqs: IrqNumbers) -> Location:
        note = ""
        if irq_action:
            irq = irqs.get(irq_action)
            if irq is None:
                return Location(None, f"no IRQ named {irq_action} any more")
            now = f"/proc/irq/{irq}/smp_affinity_list"
            note = f" (now IRQ {irq})" if now != target else ""
            target = now
        return super().locate(host, target, irq_action, irqs)._replace(note=note)


@register
class MaskKind(SysfsKind):
    """A hexadecimal CPU mask (rps_cpus, xps_cpus)."""

    name = "mask"

    def norm(self, value: Any) -> Any:
        return tuple(parse_mask(value))


@register
class SysctlKind(SysfsKind):
    """A file under /proc/sys; values compare with white space folded ("4096\\t87380" = "4096 87380")."""

    name = "sysctl"

    def norm(self, value: Any) -> Any:
        return " ".join(str(value).split())


# --- ethtool -------------------------------------------------------------------------------------
@register
class EthtoolKind(Kind):
    """One ethtool operation (channels, rings, coalesce, pause, features) with a dict of values."""

    name = "ethtool"
    nic = True

    def read(self, host: Host, s: Setting) -> Any:
        if host.ethtool is None or s.iface is None:
            return MISSING
        try:
            cur = host.ethtool.info(s.iface).current(s.target)
        except EthtoolError:
            return MISSING
        if cur is None:
            return MISSING
        return {k: cur.get(k) for k in s.want}

    def show(self, value: Any) -> str:
        if isinstance(value, dict):
            return " ".join(f"{k} {_onoff(v)}" for k, v in sorted(value.items()))
        return super().show(value)

    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        if host.ethtool is None or iface is None:
            raise ApplyError(f"{iface}: no ethtool available for {target}")
        try:
            return [host.ethtool.set(iface, target, value)]
        except EthtoolError as e:
            if e.unsupported:
                raise Unsupported(str(e)) from None
            raise ApplyError(str(e)) from None

    def command(self, s: Setting) -> Optional[List[str]]:
        return ethtool_command(s.iface, s.target, s.want) if s.iface else None

    def preflight(self, host: Host, s: Setting) -> Optional[Blocker]:
        if host.ethtool is None:
            return Blocker(False, f"{s.iface}: {s.label} needs ethtool, which is not available")
        if s.iface is not None:      # a .link file that udev applies to the NIC sets it too
            keys = sorted(s.want) if isinstance(s.want, dict) else []
            text = linkfiles.conflict(host.root, s.iface, s.target, keys)
            if text is not None:
                return Blocker(False, text)
        return None

    def change_id(self, item: Item) -> str:
        return f"ethtool:{item.iface}:{item.target}"

    def merge(self, entry: Dict[str, Any], s: Setting, previous: Any) -> None:
        for k, v in previous.items():   # keep the first previous value of each key
            entry["previous"].setdefault(k, v)
        entry["applied"].update(s.want)


# --- services ------------------------------------------------------------------------------------
@register
class ServiceKind(Kind):
    """Whether a daemon runs (want: bool)."""

    name = "service"

    def read(self, host: Host, s: Setting) -> Any:
        return host.services.is_active(s.target)

    def show(self, value: Any) -> str:
        return "running" if value else "stopped"

    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        try:
            if value and not host.services.is_active(target):
                return [host.services.start(target)]
            if not value and host.services.is_active(target):
                return [host.services.stop(target)]
        except ServiceError as e:
            raise ApplyError(str(e)) from None
        return []


# --- systemd drop-ins ---------------------------------------------------------------------------
@register
class FileKind(Kind):
    """A systemd drop-in's whole content (want: str, or None for no file), written atomically;
    restoring it runs DROPIN_RELOAD."""

    name = "file"

    def read(self, host: Host, s: Setting) -> Any:
        try:
            with open(host.root.host_path(s.target), encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def show(self, value: Any) -> str:
        return "absent" if value is None else f"{len(value.splitlines())} lines"

    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        path = host.root.host_path(target)
        if value is None:
            if os.path.exists(path):
                os.unlink(path)
            return []
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".nettune-tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(value)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return []

    def preflight(self, host: Host, s: Setting) -> Optional[Blocker]:
        if not host.live and not os.access(existing_ancestor(host.root.host_path(s.target)), os.W_OK):
            return Blocker(True, s.target)
        return None

    def creates(self, host: Host, target: str) -> List[str]:
        missing: List[str] = []
        d = os.path.dirname(host.root.host_path(target))
        while not os.path.isdir(d):
            missing.append(d)
            d = os.path.dirname(d)
        if host.live:
            return missing
        return [posixpath.normpath("/" + os.path.relpath(d, host.root.root)) for d in missing]

    def entry(self, item: Item, previous: Any, applied: Any, created: List[str]) -> Dict[str, Any]:
        entry = super().entry(item, previous, applied, created)
        entry["created_dirs"] = list(created)
        return entry

    def restore(self, host: Host, entry: Dict[str, Any], target: str) -> List[List[str]]:
        cmds = super().restore(host, entry, target)
        remove_dirs(host, entry.get("created_dirs", []))
        for argv in DROPIN_RELOAD:
            cmds.append(host.services.run(list(argv)))
        return cmds


def existing_ancestor(path: str) -> str:
    d = path
    while not os.path.isdir(d):
        d = os.path.dirname(d)
    return d


# --- NetworkManager connections -----------------------------------------------------------------
@register
class NmKind(Kind):
    """ethtool.* properties of a NetworkManager connection file (want: {"ethtool": {prop: value}}).

    The value read holds the properties and the file's whole text, so that what a
    state file records as previous restores the file exactly."""

    name = "nm"

    def read(self, host: Host, s: Setting) -> Any:
        try:
            text = host.root.read(s.target)
        except OSError:
            return MISSING
        props = nm.parse_keyfile(text, s.target).ethtool()
        return {"ethtool": {k: props.get(k) for k in s.want["ethtool"]}, "keyfile": text}

    def norm(self, value: Any) -> Any:
        return value.get("ethtool") if isinstance(value, dict) else value

    def show(self, value: Any) -> str:
        if isinstance(value, dict):
            props = value.get("ethtool") or {}
            return " ".join(f"ethtool.{k} {'unset' if v is None else _onoff(v)}"
                            for k, v in sorted(props.items())) or "(none)"
        return super().show(value)

    def _nm_runs(self, host: Host) -> bool:
        return host.live and bool(find_pids(host.root, "NetworkManager"))

    def write(self, host: Host, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
        if "keyfile" in value:            # back to a recorded file, exactly
            try:
                nm.write_text(host.root, target, value["keyfile"])
            except OSError as e:
                raise ApplyError(f"cannot restore {target}: {e.strerror or e}") from None
            argv = ["nmcli", "connection", "load", target]
            return [self._run(host, argv)] if self._nm_runs(host) else [argv]
        try:
            kf = nm.parse_keyfile(host.root.read(target), target)
        except OSError as e:
            raise ApplyError(f"cannot read {target}: {e.strerror or e}") from None
        props = value["ethtool"]
        argv = ["nmcli", "connection", "modify", kf.uuid or kf.id]
        for k, v in sorted(props.items()):
            argv += [f"ethtool.{k}", nm.nmcli_value(k, v)]
        if self._nm_runs(host):
            return [self._run(host, argv)]
        text = nm.set_keys(kf.text, "ethtool", {k: nm.keyfile_value(k, v) for k, v in sorted(props.items())})
        try:
            nm.write_text(host.root, target, text)
        except OSError as e:
            raise ApplyError(f"cannot write {target}: {e.strerror or e}") from None
        return [argv]

    def _run(self, host: Host, argv: List[str]) -> List[str]:
        try:
            return host.services.run(argv)
        except ServiceError as e:
            raise ApplyError(str(e)) from None

    def preflight(self, host: Host, s: Setting) -> Optional[Blocker]:
        return existing_file_blocker(host, s)

    def locate(self, host: Host, target: str, irq_action: Optional[str], irqs: IrqNumbers) -> Location:
        if not host.root.exists(target):
            return Location(None, f"{target} no longer exists")
        return Location(target)
