#!/usr/bin/env bash
# The guest scenarios marked `sanitizer` (tests/guest: probe, offline self
# tests, link, traffic, hot-plug; `pytest -m sanitizer`) against the ASan +
# UBSan QEMU that scripts/fuzz.sh builds
# ($SANITIZER_BUILD_DIR/qemu-system-x86_64). On the full-matrix kernel
# (6.12) this is where those scenarios run: meson's guest-6.12 runs the
# others (`-m "not sanitizer"`) on the plain QEMU. Every QEMU the tests
# start writes sanitizer reports into one directory; any report fails the
# run, whatever the tests themselves said. LeakSanitizer is on: each QEMU
# is quit through QMP at the end of its test, so memory that a
# hot-unplugged device (or anything else) lost shows up as a leak report
# when it exits.
#
# Usage: scripts/run-guest-sanitizer.sh [--kernel 6.1|6.12] [pytest args...]
#   (default kernel 6.12; SANITIZER_DETECT_LEAKS=0 turns LeakSanitizer off)
# VM logs go to $BUILD_DIR/test-logs/guest-asan-<kernel>, not to the plain
# run's guest-<kernel>: meson may run the two side by side.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KERNEL=6.12
if [[ "${1:-}" == --kernel ]]; then
    (($# >= 2)) || die "--kernel needs a version"
    KERNEL=$2
    shift 2
fi

QEMU_BIN="$SANITIZER_BUILD_DIR/qemu-system-x86_64"
wait_for_qemu_build qemu-fuzz
[[ -x "$QEMU_BIN" ]] || die "$QEMU_BIN not built (scripts/fuzz.sh --build-only)"
[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing; run scripts/deps.sh first"

reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
SANITIZER_DETECT_LEAKS=${SANITIZER_DETECT_LEAKS:-1} sanitizer_env "$reports"

rc=0
(cd "$REPO_ROOT" && "$VENV_PYTHON" -m pytest -p no:cacheprovider -ra -v \
    --kernel "$KERNEL" --qemu "$QEMU_BIN" --vm-log-dir "$BUILD_DIR/test-logs/guest-asan-$KERNEL" \
    -m sanitizer tests/guest "$@") || rc=$?

mapfile -t found < <(sanitizer_reports "$reports")
if ((${#found[@]})); then
    for f in "${found[@]}"; do
        printf '==== %s\n' "$(basename "$f")" >&2
        cat "$f" >&2
    done
    die "${#found[@]} sanitizer report(s) from QEMU (above)"
fi
log "no sanitizer report from any QEMU the guest tests started"
exit "$rc"
