"""Carry a plan out, check it against the live system, and undo it.

* `apply` records the previous value of every setting before changing it (state
  file written atomically first), restores everything it changed in this run when
  a change fails, and changes nothing that already has the planned value.
* `verify` compares the live system with the plan.
* `revert` writes back exactly the recorded previous values: NIC settings first (a
  channel change re-creates queues and IRQs and resets their masks), then the rest,
  each group newest first.
"""

from __future__ import annotations

import copy
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, TextIO, Tuple

from .cpus import parse_cpulist, parse_mask
from .discover import Facts, parse_interrupts
from .errors import ApplyError, NettuneError, PrivilegeError
from .ethtool import Ethtool, EthtoolError, command as ethtool_command
from .plan import STAGE_ETHTOOL, STAGE_SYSTEM, Plan, Setting, make_plan
from .profiles import Config
from .services import ServiceError, Services
from .state import StateStore
from .sysfs import Root

MISSING = object()


class Unsupported(ApplyError):
    """The driver reports a setting but refuses to change it (e.g. virtio-net coalescing)."""


@dataclass
class Host:
    """The system being tuned: files under a root, an ethtool and a service manager."""

    root: Root
    ethtool: Optional[Ethtool]
    services: Services

    @property
    def live(self) -> bool:
        return self.root.live


# --- reading and comparing ---------------------------------------------------------------
def _norm(kind: str, value: Any) -> Any:
    if value is MISSING:
        return MISSING
    if kind == "irq":
        return tuple(parse_cpulist(value))
    if kind == "mask":
        return tuple(parse_mask(value))
    if kind == "sysctl":
        return " ".join(str(value).split())
    return value


def read_current(host: Host, s: Setting) -> Any:
    """The live value of a setting in the form its `want` takes (MISSING when absent)."""
    if s.kind in ("irq", "mask", "sysctl"):
        try:
            return host.root.read(s.target)
        except OSError:
            return MISSING
    if s.kind == "ethtool":
        if host.ethtool is None or s.iface is None:
            return MISSING
        try:
            cur = host.ethtool.info(s.iface).current(s.target)
        except EthtoolError:
            return MISSING
        if cur is None:
            return MISSING
        return {k: cur.get(k) for k in s.want}
    if s.kind == "service":
        return host.services.is_active(s.target)
    if s.kind == "file":
        try:
            with open(host.root.host_path(s.target), encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            return None
    raise ValueError(f"unknown setting kind {s.kind}")


def satisfied(s: Setting, current: Any) -> bool:
    return same_value(s.kind, current, s.want)


def same_value(kind: str, current: Any, want: Any) -> bool:
    """Whether a live value equals a wanted one, in the kind's own terms (CPU lists, masks)."""
    if current is MISSING:
        return False
    try:
        return bool(_norm(kind, current) == _norm(kind, want))
    except NettuneError:
        return False


def show(kind: str, value: Any) -> str:
    if value is MISSING:
        return "missing"
    if kind == "ethtool" and isinstance(value, dict):
        return " ".join(f"{k} {_v(v)}" for k, v in sorted(value.items()))
    if kind == "service":
        return "running" if value else "stopped"
    if kind == "file":
        return "absent" if value is None else f"{len(value.splitlines())} lines"
    return " ".join(str(value).split()) or "(empty)"


def _v(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    return "n/a" if v is None else str(v)


# --- writing ---------------------------------------------------------------------------------
def write_value(host: Host, kind: str, target: str, iface: Optional[str], value: Any) -> List[List[str]]:
    """Set one value; return the commands this took (listed, not run, for recorded backends)."""
    if kind in ("irq", "mask", "sysctl"):
        text = value if value.endswith("\n") else value + "\n"
        try:
            host.root.write(target, text)
        except OSError as e:
            raise ApplyError(f"cannot write {value.strip()!r} to {target}: {e.strerror or e}") from None
        return []
    if kind == "ethtool":
        if host.ethtool is None or iface is None:
            raise ApplyError(f"{iface}: no ethtool available for {target}")
        try:
            return [host.ethtool.set(iface, target, value)]
        except EthtoolError as e:
            if e.unsupported:
                raise Unsupported(str(e)) from None
            raise ApplyError(str(e)) from None
    if kind == "service":
        try:
            if value and not host.services.is_active(target):
                return [host.services.start(target)]
            if not value and host.services.is_active(target):
                return [host.services.stop(target)]
        except ServiceError as e:
            raise ApplyError(str(e)) from None
        return []
    if kind == "file":
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
    raise ValueError(f"unknown setting kind {kind}")


def _missing_dirs(host_path: str) -> List[str]:
    out: List[str] = []
    d = os.path.dirname(host_path)
    while not os.path.isdir(d):
        out.append(d)
        d = os.path.dirname(d)
    return out


def _existing_ancestor(path: str) -> str:
    d = path
    while not os.path.isdir(d):
        d = os.path.dirname(d)
    return d


# --- checks before any change -------------------------------------------------------------
def check_privilege(host: Host, what: str) -> None:
    if host.live and os.geteuid() != 0:
        raise PrivilegeError(f"nettune {what} changes /proc, /sys and NIC settings and must run as root "
                             f"(euid 0); this process runs as uid {os.geteuid()}. Nothing was changed.")


def preflight(host: Host, settings: List[Setting], store: StateStore) -> None:
    """Refuse before changing anything when a target is missing or not writable."""
    problems: List[str] = []
    denied: List[str] = []
    for s in settings:
        if s.kind in ("irq", "mask", "sysctl"):
            if not host.root.exists(s.target):
                problems.append(f"{s.target} does not exist ({s.iface + ' ' if s.iface else ''}{s.label})")
            elif not host.live and not host.root.can_write(s.target):
                denied.append(s.target)
        elif s.kind == "ethtool" and host.ethtool is None:
            problems.append(f"{s.iface}: {s.label} needs ethtool, which is not available")
        elif s.kind == "file" and not host.live:
            if not os.access(_existing_ancestor(host.root.host_path(s.target)), os.W_OK):
                denied.append(s.target)
    state_dir = _existing_ancestor(os.path.dirname(store.path))
    if not os.access(state_dir, os.W_OK):
        denied.append(f"state directory {os.path.dirname(store.path)}")
    if denied:
        raise PrivilegeError("no permission to change: " + ", ".join(denied) + ". Nothing was changed.")
    if problems:
        raise ApplyError("cannot apply: " + "; ".join(problems) + ". Nothing was changed.")


# --- apply ------------------------------------------------------------------------------------
def _change_id(s: Setting) -> str:
    if s.kind == "ethtool":
        return f"ethtool:{s.iface}:{s.target}"
    if s.kind == "irq" and s.irq_action:
        # IRQ numbers change across reboots and driver reloads (modules load in
        # parallel); the action name ("eth0-TxRx-0", "virtio1-input.0") does not.
        return _irq_id(s.iface, s.irq_action)
    return f"{s.kind}:{s.target}"


def _irq_id(iface: Optional[str], action: str) -> str:
    return f"irq:{iface}:{action}"


def irq_numbers(host: Host) -> Dict[str, int]:
    """The IRQ number of each action name in /proc/interrupts now."""
    try:
        rows = parse_interrupts(host.root.read("/proc/interrupts"))
    except OSError:
        return {}
    return {name: irq for irq, names in rows for name in names}


def _line(s: Setting, current: Any) -> str:
    who = f"{s.iface} " if s.iface else ""
    return f"{who}{s.label}: {show(s.kind, current)} -> {show(s.kind, s.want)}"


def _annotate(host: Host, cmds: List[List[str]]) -> str:
    if not cmds:
        return ""
    text = "; ".join(" ".join(c) for c in cmds)
    return f"   [{text}]" if host.live else f"   [{text}: recorded in the tree, not run (--root)]"


@dataclass
class _Done:
    setting: Setting
    previous: Any
    cmds: List[List[str]]
    created_dirs: List[str]


def apply(host: Host, config: Config, store: StateStore, discover_fn: Callable[[], Facts],
          out: TextIO, dry_run: bool = False) -> int:
    if not dry_run:
        check_privilege(host, "apply")
    facts = discover_fn()
    plan = make_plan(facts, config)
    for note in plan.notes:
        out.write(f"note: {note}\n")
    if dry_run:
        pending = 0
        for stage in (STAGE_ETHTOOL, STAGE_SYSTEM):
            for s in plan.stage(stage):
                cur = read_current(host, s)
                if satisfied(s, cur):
                    continue
                pending += 1
                cmd = ""
                if s.kind == "ethtool" and s.iface:
                    cmd = "   [" + " ".join(ethtool_command(s.iface, s.target, s.want)) + "]"
                out.write(f"would change {_line(s, cur)}{cmd}\n")
        out.write(f"dry run: {pending} change(s) pending, nothing changed\n" if pending
                  else f"nothing to change: all {len(plan.settings)} settings already as planned\n")
        return 0
    preflight(host, plan.settings, store)
    # Channel and ring changes make drivers re-create queues and IRQs and reset their XPS
    # and affinity; the readings from before them are the ones revert must bring back.
    baseline = queue_readings(host, facts, sorted({s.iface for s in plan.settings if s.iface}))
    with store.lock():
        before = store.load()
        state: Dict[str, Any] = copy.deepcopy(before) if before else {"version": 1, "changes": []}
        state["profile"] = plan.profile
        refused = set(state.get("unsupported", []))
        done: List[_Done] = []
        try:
            for stage in (STAGE_ETHTOOL, STAGE_SYSTEM):
                if stage == STAGE_SYSTEM and done:
                    # Channel and ring changes can re-create queues and IRQs: look again.
                    facts = discover_fn()
                    plan = make_plan(facts, config)
                    preflight(host, plan.stage(STAGE_SYSTEM), store)
                elif stage == STAGE_SYSTEM:
                    baseline = {}      # nothing re-created the queues: readings are current
                for s in plan.stage(stage):
                    if s.key in refused:
                        continue
                    cur = read_current(host, s)
                    if satisfied(s, cur):
                        continue
                    if cur is MISSING:
                        raise ApplyError(f"cannot read the current value of {s.iface or ''} {s.label} "
                                         f"({s.target})")
                    created = _system_dirs(host, s.target) if s.kind == "file" else []
                    snapshot = copy.deepcopy(state)
                    was = baseline.get(_change_id(s))
                    _record(state, s, was.value if was else cur, created)
                    store.save(state)
                    try:
                        cmds = write_value(host, s.kind, s.target, s.iface, s.want)
                    except Unsupported as e:
                        state = snapshot
                        refused.add(s.key)
                        state["unsupported"] = sorted(refused)
                        store.save(state)
                        out.write(f"skipped {s.iface + ' ' if s.iface else ''}{s.label}: the driver does not "
                                  f"support changing it ({e}); not retried until revert\n")
                        continue
                    cmds += _post(host, plan, s)
                    done.append(_Done(s, was.value if was else cur, cmds, created))
                    out.write(f"changed {_line(s, cur)}{_annotate(host, cmds)}\n")
                    after = read_current(host, s)
                    if not satisfied(s, after):
                        out.write(f"warning: {s.iface or ''} {s.label} reads back as {show(s.kind, after)}\n")
            _record_driver_resets(host, state, baseline, out)
            store.save(state)
        except (NettuneError, OSError) as e:
            msg = str(e) if isinstance(e, NettuneError) else f"{e.filename or ''}: {e.strerror or e}"
            failed = _rollback(host, plan, done, out)
            restored = len(done) - len(failed)
            failed += _restore_readings(host, baseline, out)
            if before is None:
                store.remove(state)
            else:
                store.save(before)
            extra = f"; {len(failed)} could not be restored: {', '.join(failed)}" if failed else ""
            raise ApplyError(f"apply failed: {msg}. Restored the {restored} setting(s) "
                             f"changed before the failure{extra}.") from None
    if done:
        out.write(f"applied profile {plan.profile}: {len(done)} change(s); previous values in {store.path}\n")
    else:
        out.write(f"nothing to change: all {len(plan.settings)} settings already as planned\n")
    return 0


@dataclass
class Reading:
    """A queue mask or queue IRQ affinity as found before apply changed anything."""

    id: str
    kind: str                 # "irq" or "mask"
    target: str
    iface: str
    label: str
    value: str
    irq_action: Optional[str] = None


def queue_readings(host: Host, facts: Facts, ifnames: List[str]) -> Dict[str, Reading]:
    """Every queue's XPS/RPS mask and every queue IRQ's affinity of the given interfaces."""
    found: List[Reading] = []
    for name in ifnames:
        itf = facts.interfaces.get(name)
        if itf is None:
            continue
        for irq, action in [(q.irq, q.name) for q in itf.queue_irqs] + [(o.irq, o.name) for o in itf.other_irqs]:
            found.append(Reading(_irq_id(name, action), "irq", f"/proc/irq/{irq}/smp_affinity_list", name,
                                 f"IRQ {irq} {action}", "", action))
        base = f"/sys/class/net/{name}/queues"
        for q in sorted(host.root.listdir(base)):
            leaf = "xps_cpus" if q.startswith("tx-") else "rps_cpus"
            target = f"{base}/{q}/{leaf}"
            found.append(Reading(f"mask:{target}", "mask", target, name, f"{q} {leaf[:3].upper()}", ""))
    out: Dict[str, Reading] = {}
    for r in found:
        try:
            r.value = host.root.read(r.target)
        except OSError:
            continue   # e.g. xps_cpus of a single-queue device without XPS support
        out[r.id] = r
    return out


def _record_driver_resets(host: Host, state: Dict[str, Any], baseline: Dict[str, Reading], out: TextIO) -> None:
    """Record the pre-apply reading of queue files apply did not write but a driver reset."""
    recorded = {entry["id"] for entry in state["changes"]}
    irqs = irq_numbers(host) if baseline else {}
    for rid, r in sorted(baseline.items()):
        if rid in recorded:
            continue
        target = _reading_target(r, irqs)
        try:
            now: Any = host.root.read(target) if target else MISSING
        except OSError:
            now = MISSING
        if same_value(r.kind, now, r.value):
            continue
        entry = {"id": rid, "kind": r.kind, "target": r.target, "iface": r.iface,
                 "label": f"{r.label} (reset by the driver)", "previous": r.value, "applied": None}
        if r.irq_action is not None:
            entry["irq_action"] = r.irq_action
        state["changes"].append(entry)
        out.write(f"recorded {r.iface} {r.label}: {show(r.kind, r.value)} before the driver reset it to "
                  f"{show(r.kind, now)}; revert restores it\n")


def _reading_target(r: Reading, irqs: Dict[str, int]) -> str:
    """Where a reading lives now: an IRQ is found by its name ("" when it is gone)."""
    if r.irq_action is None:
        return r.target
    irq = irqs.get(r.irq_action)
    return f"/proc/irq/{irq}/smp_affinity_list" if irq is not None else ""


def _restore_readings(host: Host, baseline: Dict[str, Reading], out: TextIO) -> List[str]:
    """After a rollback: put back queue masks and IRQ affinities a driver reset."""
    failed: List[str] = []
    irqs = irq_numbers(host) if baseline else {}
    for r in baseline.values():
        target = _reading_target(r, irqs)
        if not target or not host.root.exists(target):
            continue
        try:
            if same_value(r.kind, host.root.read(target), r.value):
                continue
            write_value(host, r.kind, target, r.iface, r.value)
            out.write(f"restored {r.iface} {r.label}: {show(r.kind, r.value)}\n")
        except (ApplyError, OSError) as e:
            failed.append(f"{r.label} ({e})")
    return failed


def _record(state: Dict[str, Any], s: Setting, current: Any, created_dirs: List[str]) -> None:
    cid = _change_id(s)
    for entry in state["changes"]:
        if entry["id"] == cid:
            if s.kind == "ethtool":   # keep the first previous value of each key
                for k, v in current.items():
                    entry["previous"].setdefault(k, v)
                entry["applied"].update(s.want)
            else:
                entry["applied"] = s.want
                entry["target"] = s.target   # an IRQ may have a new number since
            return
    entry = {"id": cid, "kind": s.kind, "target": s.target, "iface": s.iface, "label": s.label,
             "previous": copy.deepcopy(current), "applied": copy.deepcopy(s.want)}
    if s.irq_action is not None:
        entry["irq_action"] = s.irq_action
    if s.kind == "file":
        entry["created_dirs"] = list(created_dirs)
    state["changes"].append(entry)


def _system_dirs(host: Host, target: str) -> List[str]:
    """Directories (system paths) that writing `target` would create."""
    host_dirs = _missing_dirs(host.root.host_path(target))
    if host.live:
        return host_dirs
    return [posixpath.normpath("/" + os.path.relpath(d, host.root.root)) for d in host_dirs]


def _remove_dirs(host: Host, dirs: List[str]) -> None:
    for d in sorted(dirs, key=len, reverse=True):
        try:
            os.rmdir(host.root.host_path(d))
        except OSError:
            pass


def _post(host: Host, plan: Plan, s: Setting) -> List[List[str]]:
    cmds: List[List[str]] = []
    for argv in plan.post_commands.get(s.key, []):
        try:
            cmds.append(host.services.run(argv))
        except ServiceError as e:
            raise ApplyError(str(e)) from None
    return cmds


def _rollback(host: Host, plan: Plan, done: List[_Done], out: TextIO) -> List[str]:
    failed: List[str] = []
    newest_first = list(reversed(done))
    for d in ([d for d in newest_first if d.setting.kind == "ethtool"]      # as revert_order
              + [d for d in newest_first if d.setting.kind != "ethtool"]):
        s = d.setting
        try:
            cmds = write_value(host, s.kind, s.target, s.iface, d.previous)
            _remove_dirs(host, d.created_dirs)
            cmds += _post(host, plan, s)
            out.write(f"restored {s.iface + ' ' if s.iface else ''}{s.label}: {show(s.kind, d.previous)}"
                      f"{_annotate(host, cmds)}\n")
        except (ApplyError, OSError) as e:
            failed.append(f"{s.label} ({e})")
    return failed


# --- verify ---------------------------------------------------------------------------------------
def verify(host: Host, plan: Plan, unsupported: Optional[List[str]] = None) -> Tuple[List[Dict[str, Any]], int]:
    """(drift entries, number of settings checked). Settings the driver refused are not checked."""
    drift: List[Dict[str, Any]] = []
    skip = set(unsupported or [])
    checked = 0
    for s in plan.settings:
        if s.key in skip:
            continue
        checked += 1
        cur = read_current(host, s)
        if not satisfied(s, cur):
            drift.append({"key": s.key, "iface": s.iface, "label": s.label, "target": s.target,
                          "want": show(s.kind, s.want), "have": show(s.kind, cur)})
    return drift, checked


# --- revert ----------------------------------------------------------------------------------------
_FILE_POST = [["systemctl", "daemon-reload"], ["systemctl", "try-restart", "irqbalance.service"]]


def revert(host: Host, store: StateStore, out: TextIO, dry_run: bool = False) -> int:
    if not dry_run:
        check_privilege(host, "revert")
    state = store.load()
    if state is None or not state["changes"]:
        out.write("nothing to revert: no recorded changes\n")
        if state is not None and not dry_run:
            store.remove(state)
        return 0
    order = revert_order(state["changes"])
    if dry_run:
        for entry in order:
            out.write(f"would restore {_entry_name(entry)}: {show(entry['kind'], entry['previous'])}\n")
        out.write(f"dry run: {len(state['changes'])} setting(s) would be restored, nothing changed\n")
        return 0
    with store.lock():
        remaining: List[Dict[str, Any]] = []
        restored = skipped = 0
        irqs: Optional[Dict[str, int]] = None
        for entry in order:
            kind, target = entry["kind"], entry["target"]
            name = _entry_name(entry)
            action = entry.get("irq_action")
            if kind == "irq" and action:
                if irqs is None:
                    irqs = irq_numbers(host)
                if action not in irqs:
                    out.write(f"skipped {name}: no IRQ named {action} any more\n")
                    skipped += 1
                    continue
                target = f"/proc/irq/{irqs[action]}/smp_affinity_list"
                if target != entry["target"]:
                    name += f" (now IRQ {irqs[action]})"
            if kind in ("irq", "mask", "sysctl") and not host.root.exists(target):
                out.write(f"skipped {name}: {target} no longer exists\n")
                skipped += 1
                continue
            try:
                cmds = write_value(host, kind, target, entry.get("iface"), entry["previous"])
                if kind == "file":
                    _remove_dirs(host, entry.get("created_dirs", []))
                    for argv in _FILE_POST:
                        cmds.append(host.services.run(argv))
                restored += 1
                out.write(f"restored {name}: {show(kind, entry['previous'])}{_annotate(host, cmds)}\n")
            except (ApplyError, OSError, ServiceError) as e:
                out.write(f"FAILED to restore {name}: {e}\n")
                remaining.append(entry)
        if remaining:
            state["changes"] = [e for e in state["changes"] if any(e is r for r in remaining)]
            store.save(state)
            out.write(f"revert incomplete: {len(remaining)} setting(s) could not be restored; "
                      f"they stay recorded in {store.path}\n")
            return 1
        store.remove(state)
    out.write(f"reverted {restored} setting(s)" + (f", skipped {skipped} that no longer exist" if skipped else "")
              + "\n")
    return 0


def revert_order(changes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """NIC (ethtool) settings first, so that queues and IRQs exist again before their
    masks and affinities are written back; each group newest first."""
    newest_first = list(reversed(changes))
    return ([e for e in newest_first if e["kind"] == "ethtool"]
            + [e for e in newest_first if e["kind"] != "ethtool"])


def _entry_name(entry: Dict[str, Any]) -> str:
    who = f"{entry['iface']} " if entry.get("iface") else ""
    return f"{who}{entry.get('label') or entry['target']}"
