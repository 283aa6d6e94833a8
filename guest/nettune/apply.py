"""Carry a plan out: change only what differs, record first, roll back on failure.

`apply` records the previous value of every setting before changing it (state
file written atomically first), restores everything it changed in this run when
a change fails, and changes nothing that already has the planned value. What is
particular to a kind of setting is asked of its handler (`kinds.py`).
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, TextIO, Union

from . import managers
from .discover import Facts
from .errors import ApplyError, NettuneError, PrivilegeError
from .host import Host
from .kinds import (MISSING, Unsupported, existing_ancestor, kind_of, read_current, remove_dirs, restore_order,
                    satisfied, show)
from .plan import STAGE_ETHTOOL, STAGE_SYSTEM, Plan, Setting, make_plan
from .profiles import Config
from .readings import Reading, queue_readings, record_driver_resets, restore_readings
from .services import ServiceError
from .state import StateStore


# --- checks before any change -------------------------------------------------------------
def preflight(host: Host, settings: List[Setting], store: StateStore) -> None:
    """Refuse before changing anything when a target is missing or not writable."""
    problems: List[str] = []
    denied: List[str] = []
    for s in settings:
        blocker = kind_of(s.kind).preflight(host, s)
        if blocker is not None:
            (denied if blocker.denied else problems).append(blocker.text)
    problems += managers.refusals(host.root, settings)     # NetworkManager's and tuned's own values
    state_dir = existing_ancestor(os.path.dirname(store.path))
    if not os.access(state_dir, os.W_OK):
        denied.append(f"state directory {os.path.dirname(store.path)}")
    if denied:
        raise PrivilegeError("no permission to change: " + ", ".join(denied) + ". Nothing was changed.")
    if problems:
        raise ApplyError("cannot apply: " + "; ".join(problems) + ". Nothing was changed.")


def _line(s: Setting, current: Any) -> str:
    who = f"{s.iface} " if s.iface else ""
    return f"{who}{s.label}: {show(s.kind, current)} -> {show(s.kind, s.want)}"


def _dry_run(host: Host, plan: Plan, out: TextIO) -> int:
    pending = 0
    for stage in (STAGE_ETHTOOL, STAGE_SYSTEM):
        for s in plan.stage(stage):
            cur = read_current(host, s)
            if satisfied(s, cur):
                continue
            pending += 1
            argv = kind_of(s.kind).command(s)
            cmd = "   [" + " ".join(argv) + "]" if argv else ""
            out.write(f"would change {_line(s, cur)}{cmd}\n")
    out.write(f"dry run: {pending} change(s) pending, nothing changed\n" if pending
              else f"nothing to change: all {len(plan.settings)} settings already as planned\n")
    return 0


# --- apply ------------------------------------------------------------------------------------
@dataclass
class _Done:
    setting: Setting
    previous: Any
    cmds: List[List[str]]
    created_dirs: List[str]


@dataclass
class _Run:
    """One apply: the state file contents and what this run changed."""

    host: Host
    store: StateStore
    state: Dict[str, Any]
    baseline: Dict[str, Reading]
    out: TextIO
    plan: Plan
    refused: Set[str] = field(default_factory=set)
    done: List[_Done] = field(default_factory=list)

    def stages(self, config: Config, discover_fn: Callable[[], Facts]) -> None:
        """Change the NIC (ethtool) settings, then the system ones, planned again when
        the first stage changed anything."""
        for stage in (STAGE_ETHTOOL, STAGE_SYSTEM):
            if stage == STAGE_SYSTEM and self.done:
                # Channel and ring changes can re-create queues and IRQs: look again.
                self.plan = make_plan(discover_fn(), config)
                preflight(self.host, self.plan.stage(STAGE_SYSTEM), self.store)
            elif stage == STAGE_SYSTEM:
                self.baseline = {}      # nothing re-created the queues: readings are current
            for s in self.plan.stage(stage):
                self.change(self.plan, s)

    def undo(self, before: Optional[Dict[str, Any]], e: Union[NettuneError, OSError]) -> ApplyError:
        """Put back what this run changed and the state file as it was; the error to raise."""
        msg = str(e) if isinstance(e, NettuneError) else f"{e.filename or ''}: {e.strerror or e}"
        failed = _rollback(self.host, self.plan, self.done, self.out)
        restored = len(self.done) - len(failed)
        failed += restore_readings(self.host, self.baseline, self.out)
        if before is None:
            self.store.remove(self.state)
        else:
            self.store.save(before)
        extra = f"; {len(failed)} could not be restored: {', '.join(failed)}" if failed else ""
        return ApplyError(f"apply failed: {msg}. Restored the {restored} setting(s) "
                          f"changed before the failure{extra}.")

    def change(self, plan: Plan, s: Setting) -> None:
        """Bring one setting to its planned value, recording its previous value first."""
        if s.key in self.refused:
            return
        host, handler = self.host, kind_of(s.kind)
        cur = handler.read(host, s)
        if satisfied(s, cur):
            return
        if cur is MISSING:
            raise ApplyError(f"cannot read the current value of {s.iface or ''} {s.label} ({s.target})")
        created = handler.creates(host, s.target)
        snapshot = copy.deepcopy(self.state)
        was = self.baseline.get(handler.change_id(s))
        previous = was.value if was else cur
        self._record(s, previous, created)
        self.store.save(self.state)
        try:
            cmds = handler.write(host, s.target, s.iface, s.want)
        except Unsupported as e:
            self.state.clear()
            self.state.update(snapshot)
            self.refused.add(s.key)
            self.state["unsupported"] = sorted(self.refused)
            self.store.save(self.state)
            self.out.write(f"skipped {s.iface + ' ' if s.iface else ''}{s.label}: the driver does not "
                           f"support changing it ({e}); not retried until revert\n")
            return
        cmds += _post(host, plan, s)
        self.done.append(_Done(s, previous, cmds, created))
        self.out.write(f"changed {_line(s, cur)}{host.annotate(cmds)}\n")
        after = handler.read(host, s)
        if not satisfied(s, after):
            self.out.write(f"warning: {s.iface or ''} {s.label} reads back as {show(s.kind, after)}\n")

    def _record(self, s: Setting, previous: Any, created: List[str]) -> None:
        handler = kind_of(s.kind)
        cid = handler.change_id(s)
        for entry in self.state["changes"]:
            if entry["id"] == cid:
                handler.merge(entry, s, previous)
                return
        self.state["changes"].append(handler.entry(s, previous, s.want, created))


def apply(host: Host, config: Config, store: StateStore, discover_fn: Callable[[], Facts],
          out: TextIO, dry_run: bool = False) -> int:
    if not dry_run:
        host.check_privilege("apply")
    facts = discover_fn()
    plan = make_plan(facts, config)
    for note in plan.notes:
        out.write(f"note: {note}\n")
    if dry_run:
        return _dry_run(host, plan, out)
    preflight(host, plan.settings, store)
    # Channel and ring changes make drivers re-create queues and IRQs and reset their XPS
    # and affinity; the readings from before them are the ones revert must bring back.
    baseline = queue_readings(host, facts, sorted({s.iface for s in plan.settings if s.iface}))
    with store.lock():
        before = store.load()
        state: Dict[str, Any] = copy.deepcopy(before) if before else {"version": 1, "changes": []}
        state["profile"] = plan.profile
        run = _Run(host, store, state, baseline, out, plan, refused=set(state.get("unsupported", [])))
        try:
            run.stages(config, discover_fn)
            record_driver_resets(host, run.state, run.baseline, out)
            store.save(run.state)
        except (NettuneError, OSError) as e:
            raise run.undo(before, e) from None
    if run.done:
        out.write(f"applied profile {run.plan.profile}: {len(run.done)} change(s); previous values in {store.path}\n")
    else:
        out.write(f"nothing to change: all {len(run.plan.settings)} settings already as planned\n")
    return 0


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
    for d in restore_order(done, lambda d: d.setting.kind):
        s = d.setting
        try:
            cmds = kind_of(s.kind).write(host, s.target, s.iface, d.previous)
            remove_dirs(host, d.created_dirs)
            cmds += _post(host, plan, s)
            out.write(f"restored {s.iface + ' ' if s.iface else ''}{s.label}: {show(s.kind, d.previous)}"
                      f"{host.annotate(cmds)}\n")
        except (ApplyError, OSError) as e:
            failed.append(f"{s.label} ({e})")
    return failed
