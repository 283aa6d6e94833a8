#!/usr/bin/env bash
# Write qemu-patches/ anew from the commits of a QEMU tree.
#
# scripts/build-qemu.sh keeps build/qemu-src as a git repository: tag
# 'pristine' (the unpacked Debian source), then one commit per patch of
# qemu-patches/. To change a patch, change its commit there (git commit
# --fixup=<commit> and git rebase -i --autosquash pristine, or git commit
# --amend for the last one; a new patch is a new commit), then run this
# script: it replaces qemu-patches/*.patch with 'git format-patch' of
# pristine..HEAD, numbered from 0001, without per-machine details (no
# commit ids, no git version), so the same commits give the same files.
# The next build-qemu.sh run sees the new series and applies it afresh.
#
# The project's own files (hw/net/ixgbe*, tests/qtest/ixgbe*) are linked
# into the tree, not committed: they never appear in the series.
#
# Usage: scripts/export-patches.sh [--src DIR]   (default $BUILD_DIR/qemu-src)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC_DIR="$BUILD_DIR/qemu-src"
while (($#)); do
    case "$1" in
    --src)
        (($# >= 2)) || die "--src needs a directory"
        SRC_DIR=$2
        shift 2
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/export-patches.sh --help)" ;;
    esac
done

git -C "$SRC_DIR" rev-parse -q --verify refs/tags/pristine >/dev/null ||
    die "$SRC_DIR has no 'pristine' tag (run scripts/build-qemu.sh first)"
n="$(git -C "$SRC_DIR" rev-list --count pristine..HEAD)"
((n > 0)) || die "no commits after 'pristine' in $SRC_DIR"
[[ -z "$(git -C "$SRC_DIR" status --porcelain --untracked-files=no)" ]] ||
    die "$SRC_DIR has uncommitted changes; commit them first"

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
git -C "$SRC_DIR" format-patch -q --no-numbered --zero-commit --no-signature \
    -o "$out" pristine..HEAD

rm -f "$REPO_ROOT"/qemu-patches/*.patch
cp "$out"/*.patch "$REPO_ROOT/qemu-patches/"
log "wrote $n patch(es) to qemu-patches/:"
(cd "$REPO_ROOT/qemu-patches" && ls -1 ./*.patch) >&2
