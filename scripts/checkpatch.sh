#!/usr/bin/env bash
# Run QEMU's scripts/checkpatch.pl (from $BUILD_DIR/qemu-src) over the
# project's device sources and its patch series:
#   * source files (checkpatch --no-tree -f): hw/net/ixgbe*.[ch],
#     tests/qtest/ixgbe*.[ch], tests/unit/test-ixgbe*.c
#   * patches (checkpatch --no-tree): the QEMU fixes
#     (qemu-patches/fixes/*.patch) and the device series
#     (qemu-patches/ixgbe/*.patch but its cover letter), which carries the
#     files above, the device doc and trace events
#     (docs/system/devices/ixgbe.rst, hw/net/trace-events-ixgbe) and the
#     build glue as QEMU's tree receives them, with their commit messages
# Both errors and warnings fail (--strict). Exit status: 0 clean, 1 problems
# found, 77 nothing to check (meson's "skipped").
#
# Usage: scripts/checkpatch.sh [FILE...]   (default: all of the above)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHECKPATCH="$BUILD_DIR/qemu-src/scripts/checkpatch.pl"
if [[ ! -f "$CHECKPATCH" ]]; then
    log "no QEMU tree yet; fetching it (scripts/fetch-qemu.sh)"
    bash "$REPO_ROOT/scripts/fetch-qemu.sh" >/dev/null
fi
[[ -f "$CHECKPATCH" ]] || die "$CHECKPATCH not found after scripts/fetch-qemu.sh"
need_cmd perl

cd "$REPO_ROOT"
files=()
if (($#)); then
    for f in "$@"; do
        [[ -f "$f" ]] || die "no such file: $f"
        files+=("$f")
    done
else
    shopt -s nullglob
    files=(hw/net/ixgbe*.c hw/net/ixgbe*.h tests/qtest/ixgbe*.c tests/qtest/ixgbe*.h tests/unit/test-ixgbe*.c
        qemu-patches/fixes/*.patch qemu-patches/ixgbe/0*.patch)
    shopt -u nullglob
    for i in "${!files[@]}"; do
        [[ "${files[i]}" != */0000-cover-letter.patch ]] || unset 'files[i]'
    done
fi
if ((${#files[@]} == 0)); then
    log "nothing to check (no ixgbe sources or patches yet)"
    exit 77
fi

bad=()
n_err=0 n_warn=0
for f in "${files[@]}"; do
    mode=(-f)
    [[ "$f" == *.patch || "$f" == *.diff ]] && mode=(--patch)
    out="$(perl "$CHECKPATCH" --no-tree --strict --color=never --summary-file "${mode[@]}" "$f" 2>&1)" && rc=0 || rc=$?
    summary="$(grep -E 'total: [0-9]+ errors, [0-9]+ warnings' <<<"$out" | tail -n1 || true)"
    e="$(sed -nE 's/.*total: ([0-9]+) errors.*/\1/p' <<<"$summary")"
    w="$(sed -nE 's/.*errors, ([0-9]+) warnings.*/\1/p' <<<"$summary")"
    if [[ -z "$summary" ]]; then
        printf '%s\n' "$out"
        bad+=("$f")
        echo "checkpatch: $f: FAIL (checkpatch.pl exited $rc without a summary)"
        continue
    fi
    n_err=$((n_err + e)) n_warn=$((n_warn + w))
    if ((rc != 0 || e > 0 || w > 0)); then
        printf '%s\n' "$out"
        bad+=("$f")
        echo "checkpatch: $f: FAIL ($e errors, $w warnings)"
    else
        echo "checkpatch: $f: ok"
    fi
done

echo "checkpatch: ${#files[@]} file(s) checked, ${#bad[@]} with problems ($n_err errors, $n_warn warnings)"
if ((${#bad[@]})); then
    echo "checkpatch: FAILED: ${bad[*]}"
    exit 1
fi
