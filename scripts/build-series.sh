#!/usr/bin/env bash
# Build QEMU from the committed patch series alone, as someone who receives
# it would: the pristine QEMU tree in a scratch directory, the QEMU fixes
# (qemu-patches/fixes/) and the device series (qemu-patches/ixgbe/)
# applied with 'git am', configured as scripts/build-qemu.sh configures,
# and built (qemu-system-x86_64, the ixgbe qtests and QEMU's unit tests of
# what the fixes change, those of them the tree has). Not part of the test
# command: the first run is a full QEMU build.
#
#   DIR/qemu-src     the tree: a git repository with the tag 'pristine' (a
#                    copy of $BUILD_DIR/qemu-src's), then one commit per
#                    patch; kept between runs, so a later run rebuilds only
#                    what the series changed since
#   DIR/qemu-build   the build directory
#
# --each builds the tree after the fixes and then after every patch of the
# device series (bisectability: every step must build), one incremental
# build per patch. The qtests run against the result with
#   BUILD_DIR=DIR scripts/run-qtest.sh
#
# Usage: scripts/build-series.sh [--dir DIR] [--each]
#   --dir DIR   scratch directory (default $BUILD_DIR/series-build)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DIR="$BUILD_DIR/series-build"
EACH=0
while (($#)); do
    case "$1" in
    --dir)
        (($# >= 2)) || die "--dir needs a directory"
        DIR=$2
        shift 2
        ;;
    --each)
        EACH=1
        shift
        ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/build-series.sh --help)" ;;
    esac
done
need_cmd git ninja
[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing; run scripts/deps.sh first"
git -C "$BUILD_DIR/qemu-src" rev-parse -q --verify refs/tags/pristine >/dev/null ||
    die "$BUILD_DIR/qemu-src has no 'pristine' tag (run scripts/build-qemu.sh first)"
mkdir -p "$DIR"
DIR="$(cd "$DIR" && pwd -P)"
SRC="$DIR/qemu-src"
QBUILD="$DIR/qemu-build"
t_start=$(now_s)

sgit() {
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git -C "$SRC" \
        -c user.name="qemu-ixgbe build" -c user.email="build@qemu-ixgbe.invalid" \
        -c commit.gpgsign=false -c core.autocrlf=false -c advice.detachedHead=false \
        -c gc.auto=0 "$@"
}

# ------------------------------------------------------------- the tree ---
if ! sgit rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
    log "copying the pristine tree into $SRC"
    rm -rf "$SRC"
    mkdir -p "$SRC"
    git clone -q --no-checkout "$BUILD_DIR/qemu-src" "$SRC"
    sgit fetch -q --no-tags origin "refs/tags/pristine:refs/tags/pristine"
    sgit checkout -q --detach pristine
fi

# The series onto pristine in a side worktree; the tree then checks out
# each commit it builds, so only the files that change get new timestamps.
APPLY="$DIR/.apply"
sgit worktree remove --force "$APPLY" >/dev/null 2>&1 || rm -rf "$APPLY"
sgit worktree prune
sgit worktree add -q --no-checkout --detach "$APPLY" pristine
trap 'sgit worktree remove --force "$APPLY" >/dev/null 2>&1 || true' EXIT
shopt -s nullglob
patches=()
for p in "$REPO_ROOT"/qemu-patches/fixes/*.patch "$REPO_ROOT"/qemu-patches/ixgbe/*.patch; do
    [[ "$(basename "$p")" == 0000-cover-letter.patch ]] || patches+=("$p")
done
shopt -u nullglob
((${#patches[@]})) || die "no patches in qemu-patches/"
# Only the files the series touches are checked out there.
sparse="$(git -C "$APPLY" rev-parse --git-path info/sparse-checkout)"
mkdir -p "$(dirname "$sparse")"
sed -n 's|^diff --git a/\(.*\) b/\(.*\)$|/\1\n/\2|p' "${patches[@]}" | sort -u >"$sparse"
git -C "$APPLY" -c core.sparseCheckout=true read-tree -mu HEAD
steps=()
for p in "${patches[@]}"; do
    if ! out="$(git -C "$APPLY" -c core.sparseCheckout=true -c user.name=b -c user.email=b@b.invalid \
        am -q --keep-cr "$p" 2>&1)"; then
        printf '%s\n' "$out" >&2
        die "${p#"$REPO_ROOT"/} does not apply with git am"
    fi
    if [[ "$p" == */ixgbe/* ]]; then
        steps+=("$(git -C "$APPLY" rev-parse HEAD) ${p#"$REPO_ROOT"/}")
    else
        fixes_head="$(git -C "$APPLY" rev-parse HEAD)"
    fi
done
((${#steps[@]})) || die "no device patches in qemu-patches/ixgbe/"
if ((EACH)); then
    steps=("${fixes_head:-pristine} (the fixes)" "${steps[@]}")
else
    steps=("${steps[-1]}")
fi

# ------------------------------------------------------------ the builds ---
build_at() {
    local commit=$1 what=$2 targets t
    sgit checkout -q --detach "$commit"
    if [[ ! -f "$QBUILD/build.ninja" ]]; then
        mkdir -p "$QBUILD"
        log "configure"
        (cd "$QBUILD" && "$SRC/configure" "${QEMU_CONFIGURE_ARGS[@]}") >"$DIR/configure.log" 2>&1 ||
            die "configure failed (see $DIR/configure.log)"
        for d in "${QEMU_FIRMWARE_DIRS[@]}"; do
            mkdir -p "$QBUILD/qemu-bundle$(dirname "$d")"
            ln -sfn "$d" "$QBUILD/qemu-bundle$d"
        done
    fi
    ninja -C "$QBUILD" build.ninja >>"$DIR/ninja.log" 2>&1 || die "meson failed (see $DIR/ninja.log)"
    targets=(qemu-system-x86_64)
    for t in $(cd "$SRC" && find tests/qtest -maxdepth 1 -name 'ixgbe*-test.c' | sed 's/\.c$//' | sort) "${QEMU_UNIT_TESTS[@]}"; do
        ninja -C "$QBUILD" -t query "$t" >/dev/null 2>&1 && targets+=("$t")
    done
    log "$what: ninja ${#targets[@]} target(s)"
    if ! nice -n 10 ninja -C "$QBUILD" "${targets[@]}" >>"$DIR/ninja.log" 2>&1; then
        grep -vE '^\[[0-9]+/[0-9]+\] ' "$DIR/ninja.log" | tail -n 40 >&2
        die "$what does not build (see $DIR/ninja.log)"
    fi
}
: >"$DIR/ninja.log"
for s in "${steps[@]}"; do
    build_at "${s%% *}" "${s#* }"
done
if grep -E '(^|/)(hw/net/ixgbe|tests/qtest/ixgbe)[^:/]*:[0-9]+(:[0-9]+)?: warning:' "$DIR/ninja.log" >&2; then
    die "compiler warnings in the device's files (above)"
fi
state=absent
"$QBUILD/qemu-system-x86_64" -nodefaults -machine none -device help 2>/dev/null | grep -q '"ixgbe"' && state=present
printf 'build-series: OK: %d step(s) built from qemu-patches/ onto pristine in %s, ixgbe device: %s, in %s\n' \
    "${#steps[@]}" "$DIR" "$state" "$(fmt_duration $(($(now_s) - t_start)))"
