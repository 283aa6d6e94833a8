#!/usr/bin/env bash
# Run the ixgbe qtests against the QEMU built by scripts/build-qemu.sh.
#
#   * stand-alone tests: every $BUILD_DIR/qemu-build/tests/qtest/ixgbe*-test
#     binary, run whole;
#   * qgraph tests (a libqos ixgbe driver): the paths of qos-test that
#     contain "ixgbe", selected with -p.
#
# Fails when no ixgbe qtest can be found, or when any test fails.
# Usage: scripts/run-qtest.sh [extra GLib test options, e.g. --verbose]
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QBUILD_DIR="$BUILD_DIR/qemu-build"
QEMU_BIN="$QBUILD_DIR/qemu-system-x86_64"
[[ -x "$QEMU_BIN" ]] || die "$QEMU_BIN not built; run scripts/build-qemu.sh"
export QTEST_QEMU_BINARY="$QEMU_BIN"
# A hung QEMU must not hang the test run forever.
QTEST_TIMEOUT="${QTEST_TIMEOUT:-600}"

ran=0 failed=()
TAP_LOG="$(mktemp)"
trap 'rm -f "$TAP_LOG"' EXIT

shopt -s nullglob
standalone=("$QBUILD_DIR"/tests/qtest/ixgbe*-test)
shopt -u nullglob
for t in "${standalone[@]}"; do
    [[ -x "$t" ]] || continue
    log "running ${t#"$BUILD_DIR"/} --tap -k $*"
    ran=$((ran + 1))
    timeout -k 10 "$QTEST_TIMEOUT" "$t" --tap -k "$@" | tee -a "$TAP_LOG" || failed+=("$(basename "$t")")
done

QOS_TEST="$QBUILD_DIR/tests/qtest/qos-test"
if [[ -x "$QOS_TEST" ]]; then
    mapfile -t paths < <(timeout -k 10 120 "$QOS_TEST" -l | grep -E '/ixgbe' || true)
    if ((${#paths[@]})); then
        log "running ${#paths[@]} ixgbe path(s) of qos-test"
        args=()
        for p in "${paths[@]}"; do
            args+=(-p "$p")
        done
        ran=$((ran + 1))
        timeout -k 10 "$QTEST_TIMEOUT" "$QOS_TEST" --tap -k "${args[@]}" "$@" | tee -a "$TAP_LOG" || failed+=(qos-test)
    fi
fi

if ((ran == 0)); then
    die "no ixgbe qtest found: neither tests/qtest/ixgbe*-test binaries nor ixgbe paths in qos-test (built by scripts/build-qemu.sh?)"
fi
n_skip="$(grep -cE '^ok [0-9]+ .*# *SKIP' "$TAP_LOG" || true)"
n_ok="$(grep -cE '^ok [0-9]+' "$TAP_LOG" || true)"
n_fail="$(grep -cE '^not ok [0-9]+' "$TAP_LOG" || true)"
n_ok=$((n_ok - n_skip))
log "ixgbe qtests: $n_ok passed, $n_fail failed, $n_skip skipped ($ran program(s))"
if ((${#failed[@]})); then
    die "ixgbe qtests failed: ${failed[*]}"
fi
if ((n_ok == 0)); then
    die "the ixgbe qtest programs reported no passing test"
fi
