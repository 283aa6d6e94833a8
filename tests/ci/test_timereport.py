"""The time report scripts/test.sh ends with (ixgbe_testlib.timereport):
budgets read from docs/ci-time.md, build steps from ninja's log, tests from
meson's log, and the rows over budget or without one named."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ixgbe_testlib.host import REPO_ROOT, build_dir
from ixgbe_testlib.timereport import (
    Row,
    SuiteTime,
    ninja_steps,
    parse_duration,
    read_budgets,
    read_cpu_times,
    read_test_times,
    report,
    rows,
)

DOC = REPO_ROOT / "docs" / "ci-time.md"
CPUTIME = REPO_ROOT / "scripts" / "cputime.py"


def test_durations() -> None:
    assert parse_duration("12m") == 720
    assert parse_duration("45s") == 45
    assert parse_duration("1m30s") == 90
    for bad in ("", "m", "12", "1h", "s30"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_budgets_from_table_rows_only() -> None:
    text = """# budgets
| step | budget | measured |
| --- | --- | --- |
| `test:guest-6.12` | 15m | 14m10s |
| `build:qemu-build` | 6m30s | |
| `test:odd` | soon | |
Some text with `test:guest-6.1` | 5m | in it.
"""
    assert read_budgets(text) == {"test:guest-6.12": 900, "build:qemu-build": 390}


def test_two_budgets_for_one_step_are_refused() -> None:
    with pytest.raises(ValueError, match="two budgets"):
        read_budgets("| `total` | 40m |\n| `total` | 60m |\n")


def test_ninja_log_stamps_last_entry_wins() -> None:
    log = "\n".join(
        [
            "# ninja log v5",
            "0\t1000\t0\tqemu-build.stamp\tabc",
            "5\t20\t0\tsubdir/foo.o\tdef",
            "1000\t61000\t0\tguest-6.12.stamp\t123",
            "0\t250500\t0\tqemu-build.stamp\tabc",
        ]
    )
    assert ninja_steps(log) == {"build:qemu-build": 250.5, "build:guest-6.12": 60.0}


def test_ninja_log_since_leaves_out_what_this_run_did_not_build() -> None:
    """An output whose last entry was written before the run started (by an
    earlier run) gets no row, even when an older entry of another output is
    newer; mtimes are ns since the epoch."""
    log = "\n".join(
        [
            "# ninja log v5",
            "0\t1000\t2000000000000000000\tqemu-fuzz.stamp\tabc",
            "0\t250500\t1000000000000000000\tqemu-fuzz.stamp\tabc",
            "0\t60000\t1500000000000000000\tguest-6.12.stamp\t123",
            "0\t90000\t1500000000000000000\tqemu-build.stamp\t456",
        ]
    )
    assert ninja_steps(log, since=1_200_000_000) == {"build:guest-6.12": 60.0, "build:qemu-build": 90.0}
    assert ninja_steps(log, since=1_600_000_000) == {}
    assert ninja_steps(log) == {"build:qemu-fuzz": 250.5, "build:guest-6.12": 60.0, "build:qemu-build": 90.0}


def test_meson_testlog() -> None:
    lines = [
        json.dumps({"name": "guest-6.1", "duration": 301.5, "result": "OK"}),
        "",
        json.dumps({"name": "ansible", "duration": 12, "result": "FAIL"}),
    ]
    assert read_test_times(lines) == [SuiteTime("guest-6.1", 301.5, "OK"), SuiteTime("ansible", 12.0, "FAIL")]


def test_meson_testlog_names_of_a_run_of_several_suites() -> None:
    """A full `meson test` logs "SUITE - PROJECT:NAME"; the budgets use NAME."""
    lines = [
        json.dumps({"name": "guest - qemu-ixgbe:guest-6.1", "duration": 620.7, "result": "OK"}),
        json.dumps({"name": "qtest+fuzz - qemu-ixgbe:qtest-asan", "duration": 34.8, "result": "OK"}),
    ]
    assert [t.name for t in read_test_times(lines)] == ["guest-6.1", "qtest-asan"]


def test_report_flags_over_budget_and_missing_budgets() -> None:
    table = rows(
        {"deps": 50, "total": 2500, "build:qemu-build": 400},
        [SuiteTime("guest-6.1", 301, "OK"), SuiteTime("newsuite", 10, "OK")],
        {"deps": 60, "build:qemu-build": 390, "test:guest-6.1": 360, "total": 2400},
    )
    assert [r.name for r in table] == ["deps", "build:qemu-build", "test:guest-6.1", "test:newsuite", "total"]
    assert [r.name for r in table if r.over] == ["build:qemu-build", "total"]
    text = "\n".join(report(table))
    assert re.search(r"^build:qemu-build +6m40s +6m30s  OVER BUDGET$", text, re.M), text
    assert "time: over budget (docs/ci-time.md): build:qemu-build 6m40s > 6m30s, total 41m40s > 40m00s" in text
    assert "time: no budget in docs/ci-time.md for: test:newsuite" in text
    assert Row("x", 10, 10).over is False


def test_report_all_within_budget() -> None:
    text = "\n".join(report(rows({"total": 100}, [], {"total": 120})))
    assert text.endswith("time: every step within its budget (docs/ci-time.md)")


def registered_tests(meson: str) -> set[str]:
    """The tests meson registers: from the build directory's introspection
    when there is one (names made in loops included), else the literal
    names in meson.build and the guest suites it makes per kernel."""
    intro = build_dir() / "meson-info" / "intro-tests.json"
    if intro.is_file():
        return {t["name"] for t in json.loads(intro.read_text(encoding="utf-8"))}
    tests = set(re.findall(r"^\s*test\('([^']+)'", meson, re.M))
    tests |= {f"guest-{k}" for k in ("6.1", "6.12")}
    return {t for t in tests if not t.endswith("-")}


def test_the_doc_budgets_every_suite_meson_registers() -> None:
    """Every test meson registers and every build target has a row in
    docs/ci-time.md, and the steps add up to no more than the total."""
    budgets = read_budgets(DOC.read_text(encoding="utf-8"))
    meson = (REPO_ROOT / "meson.build").read_text(encoding="utf-8")
    tests = registered_tests(meson)
    missing = sorted(t for t in tests if f"test:{t}" not in budgets)
    assert not missing, f"no budget in {DOC.name} for tests {missing}"
    stamps = set(re.findall(r"output: '([^']+)\.stamp'", meson)) | {f"guest-{k}" for k in ("6.1", "6.12")}
    missing = sorted(s for s in stamps if f"build:{s}" not in budgets)
    assert not missing, f"no budget in {DOC.name} for build steps {missing}"
    for step in ("deps", "meson setup", "meson compile", "meson test", "total"):
        assert step in budgets, step
    assert budgets["meson compile"] + budgets["meson test"] + budgets["deps"] <= budgets["total"]


def test_command_line(tmp_path: Path) -> None:
    ninja = tmp_path / "ninja_log"
    ninja.write_text("# ninja log v5\n0\t30000\t0\tguest-6.1.stamp\tx\n")
    testlog = tmp_path / "testlog.json"
    testlog.write_text(json.dumps({"name": "tuner", "duration": 3.2, "result": "OK"}) + "\n")
    out = tmp_path / "times.json"
    r = subprocess.run(
        [sys.executable, "-m", "ixgbe_testlib.timereport", "--budgets", str(DOC), "--ninja-log", str(ninja),
         "--testlog", str(testlog), "--step", "deps=12", "--json", str(out)],
        capture_output=True, text=True, check=False, env={"PYTHONPATH": str(REPO_ROOT / "tests" / "lib")},
    )
    assert r.returncode == 0, r.stderr
    assert "build:guest-6.1" in r.stdout and "test:tuner" in r.stdout, r.stdout
    assert {row["name"] for row in json.loads(out.read_text())} == {"deps", "build:guest-6.1", "test:tuner"}


def test_cputime_records_the_cpu_of_the_command_and_its_children(tmp_path: Path) -> None:
    """The wrapper scripts/test.sh runs tests through: a grandchild's CPU
    counts, the exit status passes through, and the report matches the
    record to the test by its command."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass\n"
    cmd = [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}]); sys.exit(3)"]
    r = subprocess.run([sys.executable, str(CPUTIME), "--out", str(tmp_path / "cpu"), "--", *cmd], check=False)
    assert r.returncode == 3
    records = [p.read_text() for p in (tmp_path / "cpu").glob("*.json")]
    assert len(records) == 1
    cpu = read_cpu_times(records)
    assert list(cpu) == [tuple(cmd)]
    assert 0.4 <= cpu[tuple(cmd)] < 5, cpu
    logged = [sys.executable, str(CPUTIME), "--out", str(tmp_path / "cpu"), "--", *cmd]
    lines = [json.dumps({"name": "t", "duration": 2.0, "result": "FAIL", "command": logged}),
             json.dumps({"name": "u", "duration": 1.0, "result": "OK", "command": ["other"]})]
    tests = read_test_times(lines, cpu)
    assert tests[0].cpu == cpu[tuple(cmd)] and tests[1].cpu is None
    text = "\n".join(report(rows({}, tests, {})))
    assert re.search(r"^test:t +2s +- +\ds +\(FAIL\)$", text, re.M), text
    assert re.search(r"^test:u +1s +- +-$", text, re.M), text
    assert "time: the tests used" in text and "(1 tests measured)" in text


def test_cputime_passes_a_signal_on(tmp_path: Path) -> None:
    """A test killed by a signal (meson's timeout) ends the wrapper the same way."""
    cmd = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"]
    r = subprocess.run([sys.executable, str(CPUTIME), "--out", str(tmp_path), "--", *cmd], check=False)
    assert r.returncode == -15


def test_cputime_usage_error() -> None:
    r = subprocess.run([sys.executable, str(CPUTIME), "true"], capture_output=True, text=True, check=False)
    assert r.returncode != 0 and "usage: cputime.py --out DIR -- COMMAND" in r.stderr
