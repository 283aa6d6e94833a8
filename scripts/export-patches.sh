#!/usr/bin/env bash
# Write qemu-patches/ anew, or check that it is what it should be.
#
# qemu-patches/*.patch is a 'git format-patch' series against the pristine
# QEMU tree (tag 'pristine' of $BUILD_DIR/qemu-src, which
# scripts/build-qemu.sh makes): it applies with 'git am' and reads as a
# series sent upstream would. Two files the series carries are kept in
# this repository as the files they are, and the series is derived from
# them:
#
#   docs/system/devices/ixgbe.rst  the device documentation; the patch that
#                                  adds it to QEMU's tree carries this file
#   hw/net/trace-events-ixgbe      the device's trace events; the patch that
#                                  touches QEMU's hw/net/trace-events inserts
#                                  these lines, then a blank line, before its
#                                  "# igb.c" section, and adds nothing else
#
# Each of them is carried by exactly one patch; edit the repository's file,
# not its copy in a patch. They are not linked into the tree at build time
# like hw/net/ixgbe*.c: QEMU reads one trace-events file per directory, so
# the trace events can only reach its own file through a patch (or through
# an edit of a tracked file at every build, which the series would no
# longer describe), and the documentation belongs in the series next to
# the toctree and MAINTAINERS lines that name it. So the series stays the
# only way the tree's own files change, and a user can still apply it.
#
# Three ways to run it:
#
#   (default)      the series is taken from the commits pristine..HEAD of the
#                  QEMU tree. To change a patch, change its commit there (git
#                  commit --fixup=<commit> and git rebase -i --autosquash
#                  pristine, or git commit --amend for the last one; a new
#                  patch is a new commit), then run this script. The next
#                  build-qemu.sh run sees the new series and applies it.
#                  The doc and trace events of those commits are replaced
#                  by the repository's files (a line says so where they
#                  differed).
#   --from-series  the series is taken from qemu-patches/ itself: after an
#                  edit of docs/system/devices/ixgbe.rst or
#                  hw/net/trace-events-ixgbe alone.
#   --check        as --from-series, but nothing is written: fails (exit 1,
#                  with a diff) unless every patch applies to pristine with
#                  'git am' and the series comes out byte for byte as
#                  committed: the two files above in their patches, subjects
#                  without numbering, format-patch's canonical form. Exit 77
#                  (skipped) while there is no QEMU tree with a 'pristine'
#                  tag yet. The 'series' test of meson runs this.
#
# The series is replayed onto pristine in a scratch worktree of the QEMU
# tree's repository (under $BUILD_DIR, removed afterwards; only the files
# the series touches are checked out; the tree itself is not touched), with
# the two files put into the patches that carry them, and written by 'git
# format-patch' without per-machine details (no commit ids, no git version,
# fixed abbreviations, no user or system git configuration), so the same
# commits give the same files anywhere.
#
# The project's own sources (hw/net/ixgbe*, tests/qtest/ixgbe*,
# tests/unit/test-ixgbe*) are linked into the tree by build-qemu.sh, not
# committed: they never appear in the series.
#
# Usage: scripts/export-patches.sh [--src DIR] [--from-series | --check]
#   --src DIR   the QEMU tree (default $BUILD_DIR/qemu-src)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC_DIR="$BUILD_DIR/qemu-src"
MODE=commits
while (($#)); do
    case "$1" in
    --src)
        (($# >= 2)) || die "--src needs a directory"
        SRC_DIR=$2
        shift 2
        ;;
    --from-series)
        MODE=series
        shift
        ;;
    --check)
        MODE=check
        shift
        ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/export-patches.sh --help)" ;;
    esac
done

PATCH_DIR="$REPO_ROOT/qemu-patches"
DOC=docs/system/devices/ixgbe.rst
TRACE=hw/net/trace-events
TRACE_FRAGMENT=hw/net/trace-events-ixgbe
TRACE_ANCHOR='# igb.c'
# The repository's file each derived file of QEMU's tree comes from.
declare -A SOURCE_OF=(["$DOC"]="$DOC" ["$TRACE"]="$TRACE_FRAGMENT")

need_cmd git flock
for f in "${SOURCE_OF[@]}"; do
    [[ -f "$REPO_ROOT/$f" ]] || die "$f is missing"
done

# Git as the series is made with: the build's identity, no user or system
# configuration (diff prefixes, whitespace fixes, signatures...), fixed
# abbreviations, no automatic gc in the shared repository.
GIT_ID=(-c user.name="qemu-ixgbe build" -c user.email="build@qemu-ixgbe.invalid"
    -c commit.gpgsign=false -c core.autocrlf=false -c advice.detachedHead=false
    -c core.abbrev=8 -c gc.auto=0)
cgit() {
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git "${GIT_ID[@]}" "$@"
}
# The same in the scratch worktree ($WT, below), of which only the files the
# series touches are checked out (sparse checkout, set for these commands
# alone, not in the repository's configuration).
wgit() {
    cgit -c core.sparseCheckout=true -C "$WT" "$@"
}

if ! git -C "$SRC_DIR" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
    if [[ "$MODE" == check ]]; then
        log "no QEMU tree with a 'pristine' tag in $SRC_DIR (run scripts/build-qemu.sh first): skipped"
        exit 77
    fi
    die "$SRC_DIR has no 'pristine' tag (run scripts/build-qemu.sh first)"
fi

# build-qemu.sh holds this lock exclusively while it changes the tree.
exec 9>"$BUILD_DIR/.build-qemu.lock"
if ! flock -n -s 9; then
    log "waiting for build-qemu.sh to finish patching $SRC_DIR"
    flock -s 9
fi

work="$(mktemp -d)"
WT="$(mktemp -d "$BUILD_DIR/.export-patches.XXXXXX")"
cleanup() {
    if [[ -d "$WT" ]]; then
        cgit -C "$SRC_DIR" worktree remove --force "$WT" >/dev/null 2>&1 || {
            rm -rf "$WT"
            cgit -C "$SRC_DIR" worktree prune
        }
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ----------------------------------------------------------- the input ---
mkdir "$work/in" "$work/out"
if [[ "$MODE" == commits ]]; then
    n="$(git -C "$SRC_DIR" rev-list --count pristine..HEAD)"
    ((n > 0)) || die "no commits after 'pristine' in $SRC_DIR"
    [[ -z "$(git -C "$SRC_DIR" status --porcelain --untracked-files=no)" ]] ||
        die "$SRC_DIR has uncommitted changes; commit them first"
    cgit -C "$SRC_DIR" format-patch -q --zero-commit -o "$work/in" pristine..HEAD
else
    shopt -s nullglob
    committed=("$PATCH_DIR"/*.patch)
    shopt -u nullglob
    ((${#committed[@]})) || die "no patches in qemu-patches/"
    cp "${committed[@]}" "$work/in/"
fi

# ----------------------------------------------------------- the replay ---
# The content of FILE as the patch at HEAD of the scratch tree should leave
# it, on stdout.
derived_content() {
    case "$1" in
    "$DOC") cat "$REPO_ROOT/$DOC" ;;
    "$TRACE")
        wgit show "HEAD~1:$TRACE" |
            awk -v frag="$REPO_ROOT/$TRACE_FRAGMENT" -v anchor="$TRACE_ANCHOR" '
                $0 == anchor && !done {
                    while ((getline line < frag) > 0) print line
                    print ""
                    done = 1
                }
                { print }
                END { exit done ? 0 : 3 }' ||
            die "QEMU's $TRACE has no line '$TRACE_ANCHOR' to put the device's trace events before"
        ;;
    esac
}

# The patch just applied may change QEMU's trace-events only by adding the
# device's lines (anything else would be lost when they are replaced).
check_trace_patch() {
    local name=$1 bad
    bad="$(wgit diff -U0 HEAD~1 HEAD -- "$TRACE" |
        awk '/^(\+\+\+|---) / { next } /^-/ || (/^\+/ && !/^\+(ixgbe_|# *ixgbe|$)/)')"
    [[ -z "$bad" ]] ||
        die "$name changes $TRACE beyond adding the device's trace events (put other changes in another patch):"$'\n'"$bad"
}

cgit -C "$SRC_DIR" worktree add -q --no-checkout --detach "$WT" pristine
sparse="$(wgit rev-parse --git-path info/sparse-checkout)"
mkdir -p "$(dirname "$sparse")"
{
    printf '/%s\n' "$DOC" "$TRACE"
    sed -n 's|^diff --git a/\(.*\) b/\(.*\)$|/\1\n/\2|p' "$work/in"/*.patch
} | sort -u >"$sparse"
wgit read-tree -mu HEAD
declare -A carried_by=()
for p in "$work/in"/*.patch; do
    name="$(basename "$p")"
    if ! out="$(wgit am -q --keep-cr --committer-date-is-author-date "$p" 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "$name does not apply to pristine with git am"
    fi
    mapfile -t touched < <(wgit diff --name-only HEAD~1 HEAD -- "$DOC" "$TRACE")
    for f in "${touched[@]}"; do
        [[ -z "${carried_by[$f]:-}" ]] ||
            die "both ${carried_by[$f]} and $name change $f; keep it in one patch"
        carried_by[$f]=$name
        [[ -f "$WT/$f" ]] || die "$name deletes $f"
        if [[ "$f" == "$TRACE" ]]; then
            check_trace_patch "$name"
        fi
        derived_content "$f" >"$work/derived"
        if ! cmp -s "$work/derived" "$WT/$f"; then
            cp "$work/derived" "$WT/$f"
            wgit add "$f"
            log "$name: $f updated from ${SOURCE_OF[$f]}"
        fi
    done
    if ! wgit diff --cached --quiet; then
        wgit commit -q --amend --no-edit --no-verify
    fi
done
[[ -n "${carried_by[$DOC]:-}" ]] || die "no patch adds $DOC to QEMU's tree"
[[ -n "${carried_by[$TRACE]:-}" ]] || die "no patch adds the device's trace events to $TRACE"

wgit format-patch -q --no-numbered --zero-commit --no-signature \
    -o "$work/out" pristine..HEAD
n="$(find "$work/out" -name '*.patch' | wc -l)"

# ------------------------------------------------------------ the result ---
if [[ "$MODE" == check ]]; then
    # Compare the committed series, as files, with the one made here.
    mkdir "$work/committed"
    cp "$PATCH_DIR"/*.patch "$work/committed/"
    if diff -ru "$work/committed" "$work/out" >"$work/diff"; then
        log "qemu-patches/: $n patch(es), apply to pristine, derived from $DOC and $TRACE_FRAGMENT: ok"
        exit 0
    fi
    sed -e "s|$work/committed|qemu-patches|g" -e "s|$work/out|regenerated|g" "$work/diff"
    grep -H '^Subject: \[PATCH [0-9]' "$PATCH_DIR"/*.patch >&2 || true
    die "qemu-patches/ is not what scripts/export-patches.sh --from-series makes of it (diff above); run that and commit the result"
fi

rm -f "$PATCH_DIR"/*.patch
cp "$work/out"/*.patch "$PATCH_DIR/"
log "wrote $n patch(es) to qemu-patches/:"
(cd "$PATCH_DIR" && ls -1 ./*.patch) >&2
