#!/usr/bin/env bash
# Run the ixgbe qtests against the QEMU built by scripts/build-qemu.sh:
# every $BUILD_DIR/qemu-build/tests/qtest/ixgbe*-test binary (stand-alone
# tests, one per tests/qtest/ixgbe*-test.c), run whole, then QEMU's own
# unit tests of the QEMU code the patch series changes (QEMU_UNIT_TESTS in
# scripts/lib.sh).
#
# Fails when no ixgbe qtest can be found, or when any test fails.
#
# --sanitizer (or SANITIZER=1): run the qtests and QEMU of the ASan + UBSan
# build ($BUILD_DIR/qemu-fuzz, made by scripts/fuzz.sh --build-only)
# instead; any sanitizer report fails the run (it is printed at the end).
# LeakSanitizer checks QEMU and the test programs at exit too
# (SANITIZER_DETECT_LEAKS=0 turns it off).
#
# Usage: scripts/run-qtest.sh [--sanitizer] [extra GLib test options, e.g. --verbose]
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SANITIZER="${SANITIZER:-0}"
if [[ "${1:-}" == --sanitizer ]]; then
    SANITIZER=1
    shift
fi
SAN_LOG_DIR=""
if [[ "$SANITIZER" == 1 ]]; then
    QBUILD_DIR="$SANITIZER_BUILD_DIR"
    QEMU_BIN="$QBUILD_DIR/qemu-system-x86_64"
    wait_for_qemu_build qemu-fuzz
    [[ -x "$QEMU_BIN" ]] || die "$QEMU_BIN not built; run scripts/fuzz.sh --build-only"
    SAN_LOG_DIR="$(mktemp -d)"
    SANITIZER_DETECT_LEAKS="${SANITIZER_DETECT_LEAKS:-1}" sanitizer_env "$SAN_LOG_DIR"
else
    QBUILD_DIR="$BUILD_DIR/qemu-build"
    QEMU_BIN="$QBUILD_DIR/qemu-system-x86_64"
    [[ -x "$QEMU_BIN" ]] || die "$QEMU_BIN not built; run scripts/build-qemu.sh"
fi
export QTEST_QEMU_BINARY="$QEMU_BIN"
# A hung QEMU must not hang the test run forever.
QTEST_TIMEOUT="${QTEST_TIMEOUT:-600}"

ran=0 failed=()
TAP_LOG="$(mktemp)"
trap 'rm -rf "$TAP_LOG" ${SAN_LOG_DIR:+"$SAN_LOG_DIR"}' EXIT

run_tap() { # PROGRAM [GLib test options]: run it whole, its TAP into TAP_LOG
    local t=$1
    shift
    log "running ${t#"$BUILD_DIR"/} --tap -k $*"
    ran=$((ran + 1))
    timeout -k 10 "$QTEST_TIMEOUT" "$t" --tap -k "$@" | tee -a "$TAP_LOG" || failed+=("$(basename "$t")")
}

shopt -s nullglob
standalone=("$QBUILD_DIR"/tests/qtest/ixgbe*-test)
shopt -u nullglob
for t in "${standalone[@]}"; do
    [[ -x "$t" ]] && run_tap "$t" "$@"
done

if ((ran == 0)); then
    die "no ixgbe qtest found: no ${QBUILD_DIR#"$BUILD_DIR"/}/tests/qtest/ixgbe*-test binary (built by scripts/build-qemu.sh?)"
fi
# QEMU's unit tests of code the patch series changes (lib.sh)
for u in "${QEMU_UNIT_TESTS[@]}"; do
    [[ -x "$QBUILD_DIR/$u" ]] || die "$u not built (scripts/build-qemu.sh builds it)"
    run_tap "$QBUILD_DIR/$u"
done
n_skip="$(grep -cE '^ok [0-9]+ .*# *SKIP' "$TAP_LOG" || true)"
n_ok="$(grep -cE '^ok [0-9]+' "$TAP_LOG" || true)"
n_fail="$(grep -cE '^not ok [0-9]+' "$TAP_LOG" || true)"
n_ok=$((n_ok - n_skip))
san_note=""
if [[ "$SANITIZER" == 1 ]]; then
    mapfile -t reports < <(sanitizer_reports "$SAN_LOG_DIR")
    for r in "${reports[@]}"; do
        echo "---- sanitizer report $(basename "$r"):" >&2
        head -n 120 "$r" >&2
    done
    san_note=", ASan+UBSan: ${#reports[@]} sanitizer report(s)"
    ((${#reports[@]} == 0)) || failed+=("sanitizer reports")
fi
log "ixgbe qtests and QEMU unit tests: $n_ok passed, $n_fail failed, $n_skip skipped ($ran program(s)$san_note)"
if ((${#failed[@]})); then
    die "ixgbe qtests failed: ${failed[*]}"
fi
if ((n_ok == 0)); then
    die "the ixgbe qtest programs reported no passing test"
fi
