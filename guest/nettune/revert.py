"""Write back exactly the recorded previous values, then remove the state file.

NIC (ethtool) settings go first, so that queues and IRQs exist again before their
masks and affinities are written back; each group newest first. A value whose
target vanished (an IRQ gone after a driver reload) is reported as skipped.
"""

from __future__ import annotations

from typing import Any, Dict, List, TextIO, Tuple

from .errors import ApplyError
from .host import Host, IrqNumbers
from .kinds import kind_of, restore_order, show
from .services import ServiceError
from .state import StateStore


def revert(host: Host, store: StateStore, out: TextIO, dry_run: bool = False) -> int:
    if not dry_run:
        host.check_privilege("revert")
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
        remaining, restored, skipped = _restore_all(host, order, out)
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


def _restore_all(host: Host, order: List[Dict[str, Any]], out: TextIO) -> Tuple[List[Dict[str, Any]], int, int]:
    """Restore the entries in this order: (those that failed, how many restored, how many skipped)."""
    failed: List[Dict[str, Any]] = []
    restored = skipped = 0
    irqs = IrqNumbers(host)
    for entry in order:
        outcome = _restore(host, entry, irqs, out)
        if outcome == "failed":
            failed.append(entry)
        elif outcome == "skipped":
            skipped += 1
        else:
            restored += 1
    return failed, restored, skipped


def _restore(host: Host, entry: Dict[str, Any], irqs: IrqNumbers, out: TextIO) -> str:
    """Write one recorded previous value back: "restored", "skipped" (its target is
    gone) or "failed"."""
    handler = kind_of(entry["kind"])
    where = handler.locate(host, entry["target"], entry.get("irq_action"), irqs)
    name = _entry_name(entry) + where.note
    if where.target is None:
        out.write(f"skipped {name}: {where.why}\n")
        return "skipped"
    try:
        cmds = handler.restore(host, entry, where.target)
    except (ApplyError, OSError, ServiceError) as e:
        out.write(f"FAILED to restore {name}: {e}\n")
        return "failed"
    out.write(f"restored {name}: {show(entry['kind'], entry['previous'])}{host.annotate(cmds)}\n")
    return "restored"


def revert_order(changes: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return restore_order(changes, lambda e: str(e["kind"]))


def _entry_name(entry: Dict[str, Any]) -> str:
    who = f"{entry['iface']} " if entry.get("iface") else ""
    return f"{who}{entry.get('label') or entry['target']}"
