"""The option checks the benchmarks' front-ends share (nicbench.py,
devbench.py and its memory mode devmem.py, dpdkbench.py): numbers in a
range, and comma-separated lists of names such as --models, where ixgbe is
always in. A bad value ends the program through the parser's error(): its
usage, the message and exit status 2, as for any other bad usage.

Tested by tests/bench/test_benchargs.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def check_ranges(p: argparse.ArgumentParser, args: argparse.Namespace, *ranges: tuple[str, int, int]) -> None:
    """Each (name, lo, hi): args.<name>, the value of --<name> (with dashes
    for its underscores), must be in lo..hi."""
    for name, lo, hi in ranges:
        v = getattr(args, name)
        if not lo <= v <= hi:
            p.error(f"--{name.replace('_', '-')} must be between {lo} and {hi}, got {v}")


def choose(p: argparse.ArgumentParser, value: str, known: Sequence[str], what: str) -> list[str]:
    """The names in a comma-separated option value, each once, in their
    order; one that is not `known` is an error (`what`: the kind of name,
    for the message)."""
    chosen = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in known]
    if unknown:
        p.error(f"unknown {what}(s) {unknown}; choose from {list(known)}")
    return list(dict.fromkeys(chosen))


def choose_models(p: argparse.ArgumentParser, value: str, known: Sequence[str], subject: str) -> list[str]:
    """--models: the models it names (choose()), with `subject`, the model
    every other one is compared with, first unless they include it."""
    chosen = choose(p, value, known, "model")
    return chosen if subject in chosen else [subject, *chosen]
