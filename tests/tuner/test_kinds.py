"""Setting kinds: one handler each, in a registry that apply, verify, revert and rollback loop over.

- every kind a plan can emit has a handler, and every handler is planned somewhere;
- each handler round-trips read, write and restore on copies of the recorded trees;
- a new kind is one class plus `@register`: the generic loops apply, verify, roll back
  and revert it with no other change.
"""

from __future__ import annotations

import errno
import json
import os
from typing import Any, Callable, Dict, Iterator, List

import pytest

from conftest import TREES, Result, tree_hash
from nettune import apply as apply_mod
from nettune import cli, kinds
from nettune.discover import Facts
from nettune.host import IrqNumbers
from nettune.kinds import KINDS, MISSING, SysfsKind, Unsupported, kind_of, register, same_value, satisfied
from nettune.plan import Plan, Setting, make_plan
from nettune.profiles import PROFILES, Config
from nettune.sysfs import Root
from test_discover import facts_of
from test_managers import managed

NT = Callable[..., Result]
TREE = Callable[[str], str]
ALL_TREES = sorted(os.listdir(TREES))
RECORDED_TREES = [t for t in ALL_TREES if t.endswith("-recorded")]
IRQBALANCE = ("stop", "ban")


def plans(name: str) -> Iterator[Plan]:
    facts = facts_of(name)
    for profile in sorted(PROFILES):
        for irqbalance in IRQBALANCE:
            yield make_plan(facts, Config(profile=profile, irqbalance=irqbalance))


def test_every_planned_kind_has_a_handler_and_every_handler_is_planned(tree: TREE) -> None:
    planned = {s.kind for name in ALL_TREES for plan in plans(name) for s in plan.settings}
    # a NetworkManager connection ("nm"): the recorded ixgbe tree with NetworkManager (test_managers.py)
    host = cli.build_host(managed(tree))
    planned |= {s.kind for s in make_plan(cli._discover_fn(host, Config())(), Config()).settings}
    assert planned == set(KINDS)
    assert all(kind_of(k).name == k for k in KINDS)
    with pytest.raises(ValueError, match="unknown setting kind nope"):
        kind_of("nope")


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", RECORDED_TREES)
def test_handler_round_trips_read_write_restore(kind: str, name: str, tree: TREE) -> None:
    """Write each planned value of this kind, read it back, restore the recorded previous
    value through the handler's state entry: the tree is as it was, byte for byte."""
    root = tree(name)
    before = tree_hash(root)
    host = cli.build_host(root)
    handler = kind_of(kind)
    settings: Dict[str, Setting] = {}
    for plan in plans(name):
        for s in plan.settings:
            if s.kind == kind:
                settings.setdefault(s.key, s)
    if not settings:
        pytest.skip(f"no {kind} setting planned on {name}")
    written = 0
    for s in settings.values():
        previous = handler.read(host, s)
        assert previous is not MISSING, s.key
        assert same_value(kind, previous, previous)
        entry = json.loads(json.dumps(handler.entry(s, previous, s.want, handler.creates(host, s.target))))
        try:
            handler.write(host, s.target, s.iface, s.want)
        except Unsupported:
            continue   # refused by the recorded driver (the tree says so)
        written += 1
        assert satisfied(s, handler.read(host, s)), s.key
        where = handler.locate(host, entry["target"], entry.get("irq_action"), IrqNumbers(host))
        assert where.target is not None, where.why
        handler.restore(host, entry, where.target)
        assert same_value(kind, handler.read(host, s), previous), s.key
    assert written or kind == "ethtool"
    assert tree_hash(root) == before


# --- a new kind: one class and its registration ---------------------------------------------
class TxQueueLenKind(SysfsKind):
    """An interface's transmit queue length (/sys/class/net/IF/tx_queue_len), compared as a number."""

    name = "txqueuelen"

    def norm(self, value: Any) -> Any:
        return int(str(value).strip())


TXQLEN = "/sys/class/net/eth0/tx_queue_len"


@pytest.fixture
def with_txqueuelen(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the new kind (in a copy of the registry) and have every plan set eth0's
    tx_queue_len to 5000 before its other system settings."""
    monkeypatch.setattr(kinds, "KINDS", dict(KINDS))
    register(TxQueueLenKind)

    def plan_with_txqueuelen(facts: Facts, config: Config) -> Plan:
        plan = make_plan(facts, config)
        plan.settings.insert(0, Setting(key="txqueuelen:eth0", kind="txqueuelen", target=TXQLEN, want="5000",
                                        reason="a longer transmit queue", iface="eth0", label="txqueuelen"))
        return plan
    monkeypatch.setattr(apply_mod, "make_plan", plan_with_txqueuelen)
    monkeypatch.setattr(cli, "make_plan", plan_with_txqueuelen)


def read(root: str, path: str) -> str:
    with open(root + path) as f:
        return f.read()


def recorded_changes(root: str) -> List[Dict[str, Any]]:
    with open(os.path.join(root, "var/lib/nettune/state.json")) as f:
        changes: List[Dict[str, Any]] = json.load(f)["changes"]
    return changes


@pytest.mark.usefixtures("with_txqueuelen")
def test_a_new_kind_is_applied_verified_and_reverted_by_the_generic_loops(tree: TREE, nt: NT) -> None:
    root = tree("ixgbe-4q-recorded")
    before = tree_hash(root)
    assert read(root, TXQLEN) == "1000\n"
    assert "txqueuelen: 1000 -> 5000" in nt("--root", root, "apply", "-n").out
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err
    assert "changed eth0 txqueuelen: 1000 -> 5000" in r.out
    assert read(root, TXQLEN) == "5000\n"
    [entry] = [e for e in recorded_changes(root) if e["kind"] == "txqueuelen"]
    assert entry["id"] == f"txqueuelen:{TXQLEN}" and entry["previous"] == "1000\n"
    assert nt("--root", root, "verify").rc == 0
    with open(root + TXQLEN, "w") as f:
        f.write("05000\n")                     # the same number: no drift
    assert nt("--root", root, "verify").rc == 0
    with open(root + TXQLEN, "w") as f:
        f.write("1000\n")
    v = nt("--root", root, "verify")
    assert v.rc == 1 and "DRIFT eth0 txqueuelen: want 5000, have 1000" in v.out
    r = nt("--root", root, "revert")
    assert r.rc == 0 and "restored eth0 txqueuelen: 1000" in r.out
    assert tree_hash(root) == before


@pytest.mark.usefixtures("with_txqueuelen")
def test_a_new_kind_is_rolled_back_when_a_later_change_fails(tree: TREE, nt: NT,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree("ixgbe-4q-recorded")
    before = tree_hash(root)
    real_write = Root.write
    failing = "/proc/sys/net/core/netdev_budget"

    def write(self: Root, path: str, data: str) -> None:
        if path == failing:
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), path)
        real_write(self, path, data)
    monkeypatch.setattr(Root, "write", write)
    r = nt("--root", root, "apply")
    assert r.rc == 1 and "apply failed" in r.err
    assert "restored eth0 txqueuelen: 1000" in r.out
    assert tree_hash(root) == before
