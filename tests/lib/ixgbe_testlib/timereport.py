"""The time report scripts/test.sh ends with: the wall time of each build
step and of each test `meson test` ran, next to its budget in
docs/ci-time.md, and the ones over budget (or without one) named at the end.

Sources:
- the steps scripts/test.sh times itself (`--step NAME=SECONDS`: deps,
  meson setup, meson compile, meson test, total);
- the build's custom targets from ninja's log (`$BUILD_DIR/.ninja_log`):
  every `<name>.stamp` output is the step `build:<name>` (the targets are
  always stale, so the log's last entry per output is this run's; with
  `--since EPOCH`, only outputs written from then on: a target this run did
  not build, such as the sanitizer QEMU that scripts/test.sh builds in a
  test, has no row rather than an old one);
- each test's duration from meson's `meson-logs/testlog.json`;
- each test's CPU time (user + system, the test and every descendant it
  waited for), when scripts/test.sh ran the tests through
  scripts/cputime.py (`--cpu-dir`): with the cores busy, a test's wall time
  depends on its neighbours, its CPU time is what it costs them.

Budgets: the rows of the tables in docs/ci-time.md whose first cell is a
step's name in backquotes and whose second cell is a duration (`12m`,
`45s`, `1m30s`).

    python -m ixgbe_testlib.timereport --budgets docs/ci-time.md \\
        --ninja-log build/.ninja_log --testlog build/meson-logs/testlog.json \\
        --step deps=64 --step total=2400 [--cpu-dir DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

_DURATION = re.compile(r"^(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?$")
_BUDGET_ROW = re.compile(r"^\|\s*`(?P<name>[^`]+)`\s*\|\s*(?P<budget>[0-9ms]+)\s*\|")


def parse_duration(text: str) -> int:
    """'12m', '45s', '1m30s' -> seconds."""
    m = _DURATION.match(text.strip())
    if not m or not (m.group("m") or m.group("s")):
        raise ValueError(f"not a duration: {text!r} (expected e.g. 12m, 45s, 1m30s)")
    return int(m.group("m") or 0) * 60 + int(m.group("s") or 0)


def fmt_duration(seconds: float) -> str:
    s = round(seconds)
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def read_budgets(text: str) -> dict[str, int]:
    """Budget rows of the doc's tables: name -> seconds."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _BUDGET_ROW.match(line.strip())
        if m:
            if m.group("name") in out:
                raise ValueError(f"two budgets for {m.group('name')!r}")
            out[m.group("name")] = parse_duration(m.group("budget"))
    return out


def ninja_steps(text: str, since: float | None = None) -> dict[str, float]:
    """build:<name> -> seconds for every <name>.stamp output in a ninja log
    (v5 and later: start ms, end ms, the output's mtime in ns since the
    epoch, output, hash; tab separated); the last entry of an output wins.
    With `since` (seconds since the epoch), outputs whose last entry is
    older are left out."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 4 or not fields[3].endswith(".stamp"):
            continue
        name = f"build:{Path(fields[3]).name.removesuffix('.stamp')}"
        out.pop(name, None)
        if since is None or int(fields[2]) >= since * 1e9:
            out[name] = (int(fields[1]) - int(fields[0])) / 1000
    return out


@dataclasses.dataclass(frozen=True)
class SuiteTime:
    name: str
    seconds: float
    result: str
    cpu: float | None = None


def registered_name(logged: str) -> str:
    """The name a test was registered with, from the one meson logs: a run
    of several suites logs "SUITE[+SUITE] - PROJECT:NAME"."""
    if " - " in logged:
        logged = logged.split(" - ", 1)[1]
        logged = logged.split(":", 1)[-1]
    return logged


def wrapped_command(command: Sequence[str]) -> tuple[str, ...]:
    """A test's own command from the one meson logs, which starts with the
    wrapper scripts/test.sh gives it: "... cputime.py --out DIR -- CMD"."""
    for i, arg in enumerate(command):
        if Path(arg).name == "cputime.py" and "--" in command[i:]:
            return tuple(command[command.index("--", i) + 1 :])
    return tuple(command)


def read_cpu_times(records: Iterable[str]) -> dict[tuple[str, ...], float]:
    """scripts/cputime.py's records (JSON texts) -> command: CPU seconds."""
    out: dict[tuple[str, ...], float] = {}
    for text in records:
        r = json.loads(text)
        out[tuple(r["argv"])] = float(r["user"]) + float(r["system"])
    return out


def read_test_times(lines: Iterable[str], cpu: dict[tuple[str, ...], float] | None = None) -> list[SuiteTime]:
    """meson's testlog.json (one JSON object a line) -> each test's time,
    and its CPU time where `cpu` (read_cpu_times) has its command."""
    out = []
    for line in lines:
        if line.strip():
            r = json.loads(line)
            name = registered_name(str(r.get("name", "?")))
            used = (cpu or {}).get(wrapped_command([str(a) for a in r.get("command") or []]))
            out.append(SuiteTime(name, float(r.get("duration", 0)), str(r.get("result", "?")), used))
    return out


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    seconds: float
    budget: int | None
    note: str = ""
    cpu: float | None = None

    @property
    def over(self) -> bool:
        return self.budget is not None and self.seconds > self.budget


def rows(steps: dict[str, float], tests: Sequence[SuiteTime], budgets: dict[str, int]) -> list[Row]:
    """Build steps, then tests, then the totals test.sh timed ('total' last)."""
    own = {k: v for k, v in steps.items() if not k.startswith("build:")}
    out = [Row(k, v, budgets.get(k)) for k, v in own.items() if k != "total"]
    out += [Row(k, v, budgets.get(k)) for k, v in sorted(steps.items()) if k.startswith("build:")]
    out += [Row(f"test:{t.name}", t.seconds, budgets.get(f"test:{t.name}"), t.result, t.cpu) for t in tests]
    if "total" in own:
        out.append(Row("total", own["total"], budgets.get("total")))
    return out


def report(table: Sequence[Row]) -> list[str]:
    width = max([len(r.name) for r in table] + [10])
    with_cpu = any(r.cpu is not None for r in table)
    head = f"{'step':<{width}}  {'wall':>8}  {'budget':>8}" + (f"  {'cpu':>8}" if with_cpu else "")
    lines = ["=" * 30 + " time report " + "=" * 30, head]
    for r in table:
        budget = fmt_duration(r.budget) if r.budget is not None else "-"
        cpu = (f"  {fmt_duration(r.cpu):>8}" if r.cpu is not None else f"  {'-':>8}") if with_cpu else ""
        flag = "  OVER BUDGET" if r.over else ""
        note = f"  ({r.note})" if r.note and r.note != "OK" else ""
        lines.append(f"{r.name:<{width}}  {fmt_duration(r.seconds):>8}  {budget:>8}{cpu}{flag}{note}")
    if with_cpu:
        used = [r.cpu for r in table if r.cpu is not None]
        lines.append(f"time: the tests used {fmt_duration(sum(used))} of CPU ({len(used)} tests measured)")
    over = [r for r in table if r.over]
    missing = [r.name for r in table if r.budget is None]
    if over:
        lines.append(
            "time: over budget (docs/ci-time.md): "
            + ", ".join(f"{r.name} {fmt_duration(r.seconds)} > {fmt_duration(r.budget or 0)}" for r in over)
        )
    if missing:
        lines.append("time: no budget in docs/ci-time.md for: " + ", ".join(missing))
    if not over and not missing:
        lines.append("time: every step within its budget (docs/ci-time.md)")
    return lines


def _step(arg: str) -> tuple[str, float]:
    name, sep, value = arg.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"--step wants NAME=SECONDS, got {arg!r}")
    return name, float(value)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", type=Path, required=True)
    ap.add_argument("--ninja-log", type=Path)
    ap.add_argument("--since", type=float, help="only build steps whose output is this new (seconds since the epoch)")
    ap.add_argument("--testlog", type=Path)
    ap.add_argument("--step", type=_step, action="append", default=[])
    ap.add_argument("--cpu-dir", type=Path, help="scripts/cputime.py's records of this run")
    ap.add_argument("--json", type=Path, help="also write the rows here")
    a = ap.parse_args(argv)
    budgets = read_budgets(a.budgets.read_text(encoding="utf-8"))
    steps = dict(a.step)
    if a.ninja_log and a.ninja_log.is_file():
        steps.update(ninja_steps(a.ninja_log.read_text(encoding="utf-8"), a.since))
    tests: list[SuiteTime] = []
    if a.testlog and a.testlog.is_file():
        cpu = None
        if a.cpu_dir and a.cpu_dir.is_dir():
            cpu = read_cpu_times(p.read_text(encoding="utf-8") for p in sorted(a.cpu_dir.glob("*.json")))
        tests = read_test_times(a.testlog.read_text(encoding="utf-8").splitlines(), cpu)
    table = rows(steps, tests, budgets)
    print("\n".join(report(table)))
    if a.json:
        a.json.write_text(json.dumps([dataclasses.asdict(r) | {"over": r.over} for r in table], indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
