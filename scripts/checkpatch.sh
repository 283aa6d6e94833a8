#!/usr/bin/env bash
# Run QEMU's scripts/checkpatch.pl (from $BUILD_DIR/qemu-src) over the
# patches that would be sent, as the device's files are now: the QEMU
# fixes (qemu-patches/fixes/) and the device series, made afresh from the
# device's files by scripts/export-patches.sh --out (what
# qemu-patches/ixgbe/ holds once exported; its cover letter has no diff and
# is left out). The device series carries every file of hw/net/,
# tests/qtest/ and tests/unit/, the device doc, the trace events and the
# build glue, with the commit messages, so all of them are checked, the
# way a maintainer's checkpatch run sees them. Before the first QEMU build
# (no 'pristine' tree to make the series on) the device's files
# (checkpatch -f) and the committed patches are checked instead.
# Both errors and warnings fail (--strict). Exit status: 0 clean, 1 problems
# found, 77 nothing to check (meson's "skipped").
#
# Usage: scripts/checkpatch.sh [FILE...]   (FILE: a source file or a patch;
#                                           default: all of the above)
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
    if git -C "$BUILD_DIR/qemu-src" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
        series="$(mktemp -d)"
        trap 'rm -rf "$series"' EXIT
        bash "$REPO_ROOT/scripts/export-patches.sh" --out "$series" 2>/dev/null ||
            die "scripts/export-patches.sh could not make the series (run it for the reason)"
        files=("$series"/fixes/*.patch "$series"/ixgbe/0*.patch)
    else
        files=(hw/net/ixgbe*.c hw/net/ixgbe*.h tests/qtest/ixgbe*.c tests/qtest/ixgbe*.h tests/unit/test-ixgbe*.c
            qemu-patches/fixes/*.patch qemu-patches/ixgbe/0*.patch)
    fi
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
    name="${f#"${series:-/nonexistent}"/}"
    [[ "$name" == "$f" ]] || name="qemu-patches/$name"
    mode=(-f)
    [[ "$f" == *.patch || "$f" == *.diff ]] && mode=(--patch)
    out="$(perl "$CHECKPATCH" --no-tree --strict --color=never --summary-file "${mode[@]}" "$f" 2>&1)" && rc=0 || rc=$?
    summary="$(grep -E 'total: [0-9]+ errors, [0-9]+ warnings' <<<"$out" | tail -n1 || true)"
    e="$(sed -nE 's/.*total: ([0-9]+) errors.*/\1/p' <<<"$summary")"
    w="$(sed -nE 's/.*errors, ([0-9]+) warnings.*/\1/p' <<<"$summary")"
    if [[ -z "$summary" ]]; then
        printf '%s\n' "${out//"$f"/$name}"
        bad+=("$name")
        echo "checkpatch: $name: FAIL (checkpatch.pl exited $rc without a summary)"
        continue
    fi
    n_err=$((n_err + e)) n_warn=$((n_warn + w))
    if ((rc != 0 || e > 0 || w > 0)); then
        printf '%s\n' "${out//"$f"/$name}"
        bad+=("$name")
        echo "checkpatch: $name: FAIL ($e errors, $w warnings)"
    else
        echo "checkpatch: $name: ok"
    fi
done

echo "checkpatch: ${#files[@]} file(s) checked, ${#bad[@]} with problems ($n_err errors, $n_warn warnings)"
if ((${#bad[@]})); then
    echo "checkpatch: FAILED: ${bad[*]}"
    exit 1
fi
