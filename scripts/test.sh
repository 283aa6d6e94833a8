#!/usr/bin/env bash
# The project's one test command (also what CI runs, via .ci/run):
#
#   scripts/deps.sh                      install/verify dependencies
#   meson setup build                    (or --reconfigure when already set up)
#   meson compile -C build               patched QEMU + guest images
#   meson test -C build --print-errorlogs --num-processes CORES+1 [ARGS...]
#                                        (the sanitizer QEMU is built by its
#                                        first test, qemu-fuzz)
#
# Extra arguments go to 'meson test', e.g.  scripts/test.sh --suite guest
# At the end: the time report (each build step's and each test's wall time
# against its budget in docs/ci-time.md, the ones over budget named, and each
# test's CPU time, recorded by scripts/cputime.py; also in
# $BUILD_DIR/meson-logs/times.json), every test's closing line (pytest's
# "N passed ...", etc.), then one summary line "tests: N passed, N failed,
# N skipped". The steps' log lines carry UTC times.
#
# Environment: BUILD_DIR (default <repo>/build).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# log lines with the time of day, for reading a run's timeline back
tlog() {
    log "$(date -u +%H:%M:%S) $*"
}

# The host's CPU ticks so far, busy and idle (/proc/stat's first line:
# user nice system idle iowait irq softirq steal), to say how busy the
# cores were in each phase: work left on the table when low.
cpu_ticks() {
    awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6; exit}' /proc/stat
}
# busy_pct "BUSY0 IDLE0" "BUSY1 IDLE1": the busy share between two readings
busy_pct() {
    local b0 i0 b1 i1
    read -r b0 i0 <<<"$1"
    read -r b1 i1 <<<"$2"
    echo $((100 * (b1 - b0) / (b1 - b0 + i1 - i0 > 0 ? b1 - b0 + i1 - i0 : 1)))
}

t0=$(now_s)
cpu0=$(cpu_ticks)
tlog "scripts/deps.sh"
bash "$REPO_ROOT/scripts/deps.sh"
t_deps=$(now_s)

MESON="$VENV_DIR/bin/meson"
[[ -x "$MESON" ]] || die "$MESON not found after scripts/deps.sh"

if [[ -f "$BUILD_DIR/meson-private/coredata.dat" ]]; then
    # Always reconfigure: test directories and qtest sources are discovered
    # at configure time.
    "$MESON" setup --reconfigure "$BUILD_DIR" "$REPO_ROOT" >"$BUILD_DIR/meson-setup.log" 2>&1 || {
        cat "$BUILD_DIR/meson-setup.log" >&2
        die "meson setup --reconfigure $BUILD_DIR failed"
    }
else
    "$MESON" setup "$BUILD_DIR" "$REPO_ROOT" >"$BUILD_DIR/meson-setup.log" 2>&1 || {
        cat "$BUILD_DIR/meson-setup.log" >&2
        die "meson setup $BUILD_DIR failed"
    }
fi
sed -n '/qemu-ixgbe$/,/^$/p' "$BUILD_DIR/meson-setup.log" >&2 || true
t_setup=$(now_s)

# Listing the tests needs no build.
for a in "$@"; do
    if [[ "$a" == --list ]]; then
        exec "$MESON" test -C "$BUILD_DIR" --no-rebuild "$@"
    fi
done

tlog "meson compile -C $BUILD_DIR"
"$MESON" compile -C "$BUILD_DIR" || die "meson compile -C $BUILD_DIR failed (see above)"
t_built=$(now_s)
cpu_built=$(cpu_ticks)

# The guests' vCPUs on one host thread (TCG's round-robin) unless told
# otherwise: with every core busy (three tests at a time, below), a guest
# with a thread per vCPU spends about a quarter more CPU on the same work
# (tests/guest/README.md), CPU the tests beside it need.
export GUEST_TCG_THREAD="${GUEST_TCG_THREAD:-single}"

# One test more at once than there are cores: a TCG guest suite keeps under
# a core busy (meson.build, "Scheduling"). MESON_TESTTHREADS overrides it,
# and so does a --num-processes among the arguments.
jobs="${MESON_TESTTHREADS:-$(($(nproc) + 1))}"
tlog "meson test -C $BUILD_DIR --print-errorlogs --num-processes $jobs $*"
# With a wrapper, meson names its log after it: testlog-<wrapper's name>.json
testlog="$BUILD_DIR/meson-logs/testlog-$(basename "$VENV_PYTHON").json"
rm -f "$testlog"
rc=0
# Everything the tests need was just built (the sanitizer QEMU is built by
# the test qemu-fuzz): no second (always-stale) build step.
# Each test runs under scripts/cputime.py, which records the CPU time it and
# the processes it waited for used (the time report's "cpu" column).
cpu_dir="$BUILD_DIR/meson-logs/cpu"
rm -rf "$cpu_dir"
"$MESON" test -C "$BUILD_DIR" --no-rebuild --print-errorlogs --num-processes "$jobs" \
    --wrapper "$VENV_PYTHON $REPO_ROOT/scripts/cputime.py --out $cpu_dir --" "$@" || rc=$?
t_tested=$(now_s)
cpu_tested=$(cpu_ticks)
tlog "build $(fmt_duration $((t_built - t0))), tests $(fmt_duration $((t_tested - t_built))), meson test exit $rc"
tlog "CPU busy ($(nproc) cores): build $(busy_pct "$cpu0" "$cpu_built")%," \
    "tests $(busy_pct "$cpu_built" "$cpu_tested")%, all $(busy_pct "$cpu0" "$cpu_tested")%"

# The time report; it only reports (load moves the figures), the review reads it.
"${PROJECT_PYTHON[@]}" -m ixgbe_testlib.timereport --budgets "$REPO_ROOT/docs/ci-time.md" \
    --ninja-log "$BUILD_DIR/.ninja_log" --since "$t0" --testlog "$testlog" \
    --step "deps=$((t_deps - t0))" --step "meson setup=$((t_setup - t_deps))" \
    --step "meson compile=$((t_built - t_setup))" --step "meson test=$((t_tested - t_built))" \
    --step "total=$((t_tested - t0))" --cpu-dir "$cpu_dir" --json "$BUILD_DIR/meson-logs/times.json" ||
    warn "the time report failed (above)"

# Per-test closing lines and one overall summary, read from meson's log.
"$VENV_PYTHON" - "$testlog" <<'PY' || rc=$((rc ? rc : 1))
import json
import re
import sys

CLOSING = re.compile(
    r"(=+ .*\b(passed|failed|error|errors|skipped|deselected|no tests ran)\b.* in [0-9.]+s.* =+"
    r"|^checkpatch: \d+ file\(s\) checked.*"
    r"|^# (pass|fail|skip)\s+\d+"
    r"|^\[(run-qtest|export-patches)\] .*)$"
)

counts = {"passed": 0, "failed": 0, "skipped": 0}
try:
    with open(sys.argv[1], encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
except FileNotFoundError:
    print("test.sh: no meson test log found", file=sys.stderr)
    sys.exit(1)

print()
print("=" * 30 + " per-test results " + "=" * 30)
for r in records:
    result = r.get("result", "?")
    if result in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif result == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
    out = (r.get("stdout") or "") + "\n" + (r.get("stderr") or "")
    closing = [ln.strip() for ln in out.splitlines() if CLOSING.search(ln.strip())]
    detail = closing[-1] if closing else ""
    print(f"{r.get('name', '?')}: {result} ({r.get('duration', 0):.1f}s) {detail}".rstrip())
print()
if not records:
    print("test.sh: meson ran no test", file=sys.stderr)
    sys.exit(1)
print(f"tests: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
sys.exit(1 if counts["failed"] else 0)
PY
exit "$rc"
