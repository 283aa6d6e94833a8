#!/usr/bin/env bash
# Build the patched QEMU with the project's ixgbe device:
#
#   1. scripts/fetch-qemu.sh puts the QEMU source in $BUILD_DIR/qemu-src;
#   2. the pristine tree becomes a git repository (commit "pristine", tag
#      "pristine") once, so the patch state is tracked;
#   3. the patch series: scripts/export-patches.sh --out makes it on
#      pristine, the QEMU fixes (qemu-patches/fixes/) applied with 'git am'
#      and the device series generated from the device's files (hw/net/,
#      tests/qtest/, tests/unit/, the device doc, as
#      qemu-patches/ixgbe-src/MANIFEST places them) as one commit per
#      patch: the series qemu-patches/ixgbe/ holds, made from the files as
#      they are now, so an edit is built without exporting qemu-patches/
#      first (the series test tells when that is due). The tree checks out
#      its last commit; only the files that changed get new timestamps.
#      This runs only when one of these inputs changed;
#   4. the sanitizer build's device list (scripts/qemu-devices/) is
#      symlinked into the tree under configs/devices/;
#   5. configure runs once into $BUILD_DIR/qemu-build (again only when the
#      option list or the source changes);
#   6. ninja builds qemu-system-x86_64 and the qtest binaries for the ixgbe
#      test. Rebuilds recompile only what changed.
#
# Other build directories can be made from the same source tree with other
# configure options (--build-name, --configure-arg, --target; used by
# scripts/fuzz.sh for the clang/libFuzzer/ASan+UBSan build). Builds of
# different directories may compile side by side; the source tree is only
# patched (steps 1-3) while no other build is compiling from it.
#
# Environment:
#   BUILD_DIR             build directory (default: <repo>/build)
#   QEMU_SRC, QEMU_DEB_*  see scripts/fetch-qemu.sh
#   NINJA_JOBS            ninja -j value (default: ninja's own)
#   EXTRA_NINJA_TARGETS   more ninja targets to build (space separated)
#   EXTRA_CONFIGURE_ARGS  more configure arguments (space separated)
#   QEMU_DEBUG_INFO       lines (default: file and line numbers) or full (-g)
#   IXGBE_ALLOW_WARNINGS  1 = do not fail on compiler warnings in the
#                         project's own files (default: fail)
#
# Usage: scripts/build-qemu.sh [--stamp FILE] [--build-name NAME]
#                              [--configure-arg ARG]... [--target TARGET]...
#   --stamp FILE          on success, write the summary line to FILE (used by
#                         meson)
#   --build-name NAME     build directory $BUILD_DIR/NAME (default qemu-build)
#   --configure-arg ARG   one more configure argument (repeatable; unlike
#                         EXTRA_CONFIGURE_ARGS, ARG may contain spaces)
#   --target TARGET       one more ninja target (repeatable)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STAMP_FILE=""
BUILD_NAME=qemu-build
OPT_CONFIGURE_ARGS=()
OPT_TARGETS=()
while (($#)); do
    case "$1" in
    --stamp | --build-name | --configure-arg | --target)
        (($# >= 2)) || die "$1 needs a value"
        case "$1" in
        --stamp) STAMP_FILE=$2 ;;
        --build-name) BUILD_NAME=$2 ;;
        --configure-arg) OPT_CONFIGURE_ARGS+=("$2") ;;
        --target) OPT_TARGETS+=("$2") ;;
        esac
        shift 2
        ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/build-qemu.sh --help)" ;;
    esac
done
[[ "$BUILD_NAME" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ && "$BUILD_NAME" != qemu-src ]] ||
    die "--build-name: '$BUILD_NAME' is not a plain directory name"

SRC_DIR="$BUILD_DIR/qemu-src"
QBUILD_DIR="$BUILD_DIR/$BUILD_NAME"
PATCH_DIR="$REPO_ROOT/qemu-patches"
GIT_ID=(-c user.name="qemu-ixgbe build" -c user.email="build@qemu-ixgbe.invalid"
    -c commit.gpgsign=false -c core.autocrlf=false -c advice.detachedHead=false)

# Project files linked into the QEMU tree under another path (repo:tree).
LINK_MAP=(
    'scripts/qemu-devices/x86_64-sanitizer.mak:configs/devices/x86_64-softmmu/ixgbe-sanitizer.mak'
)

# The firmware path and the configure options: QEMU_FIRMWARE_DIRS and
# QEMU_CONFIGURE_ARGS in scripts/lib.sh (scripts/build-series.sh builds
# with the same).
FIRMWARE_DIRS=("${QEMU_FIRMWARE_DIRS[@]}")
CONFIGURE_ARGS=("${QEMU_CONFIGURE_ARGS[@]}")
# shellcheck disable=SC2206  # word splitting intended
CONFIGURE_ARGS+=(${EXTRA_CONFIGURE_ARGS:-})
CONFIGURE_ARGS+=("${OPT_CONFIGURE_ARGS[@]}")

t_start=$(now_s)

[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing; run scripts/deps.sh first"
need_cmd git ninja flock

# Locks. One build at a time per build directory (meson, the demo and a
# user may all call this script): fd 8, held to the end. The source tree is
# shared by all build directories: fd 9, held exclusively while steps 1-3
# may change the tree, shared while configure and ninja read it.
if [[ "$BUILD_NAME" == qemu-build ]]; then
    exec 8>"$BUILD_DIR/.build-qemu-dir.lock"
else
    exec 8>"$BUILD_DIR/.build-qemu-dir-$BUILD_NAME.lock"
fi
if ! flock -n 8; then
    log "another build-qemu is running in $QBUILD_DIR; waiting for it"
    flock 8
fi
exec 9>"$BUILD_DIR/.build-qemu.lock"

sgit() {
    git -C "$SRC_DIR" "${GIT_ID[@]}" "$@"
}

# What the series is made from: the fixes, the device series' manifest,
# messages and glue, the device's files, the generator.
SERIES_DIR="$BUILD_DIR/qemu-series"
series_inputs=()
while IFS= read -r -d '' f; do
    series_inputs+=("$f")
done < <(find "$PATCH_DIR/fixes" "$PATCH_DIR/ixgbe-src" "$REPO_ROOT/hw/net" \
    "$REPO_ROOT/tests/qtest" "$REPO_ROOT/tests/unit" "$REPO_ROOT/docs/system/devices/ixgbe.rst" \
    "$REPO_ROOT/scripts/export-patches.sh" \( -type f -o -type l \) ! -name '.*' ! -name '*~' \
    -print0 2>/dev/null | sort -z)
PATCH_STAMP="$SRC_DIR/.git/qemu-ixgbe-patches.sha256"
want_patches="$(hash_files "${series_inputs[@]}")"

# True when the tree holds exactly the current patch series (read only).
series_applied() {
    [[ -f "$PATCH_STAMP" && -f "$BUILD_DIR/.fetch-qemu.out" ]] || return 1
    [[ "$(sed -n 1p "$PATCH_STAMP")" == "$want_patches" ]] || return 1
    [[ "$(sed -n 2p "$PATCH_STAMP")" == "$(sgit rev-parse -q --verify HEAD 2>/dev/null)" ]]
}

prepare_tree=1
if ! flock -n 9; then
    # Another build holds the tree: wait only for one that is patching it,
    # then compile alongside the others if the series is already in place.
    # (The source itself is re-checked by the next build that runs alone.)
    flock -s 9
    if series_applied; then
        prepare_tree=0
    else
        log "the patch series changed: waiting for the other builds of $SRC_DIR to finish"
        flock -x 9
    fi
fi

# ------------------------------------------------------------ 1. source ---
if ((prepare_tree)); then
    bash "$REPO_ROOT/scripts/fetch-qemu.sh" >"$BUILD_DIR/.fetch-qemu.out" ||
        die "scripts/fetch-qemu.sh failed"
fi
src_ident="$(sed -n 's/^qemu-src: //p' "$BUILD_DIR/.fetch-qemu.out" | tail -n1)"
[[ -n "$src_ident" ]] || die "scripts/fetch-qemu.sh did not report the source it used"
qemu_version="$(tr -d '\n' <"$SRC_DIR/VERSION")"

# ---------------------------------------------------------- 2. pristine ---
if ((prepare_tree)) && ! sgit rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
    log "recording the pristine tree as a git commit (once)"
    rm -rf "$SRC_DIR/.git"
    sgit init -q -b ixgbe-build
    # Everything, including files a .gitignore would hide: the reset to
    # pristine must restore the exact tree.
    sgit add -A -f .
    sgit commit -q --no-verify -m "pristine: $src_ident" ||
        die "git commit of the pristine tree failed"
    sgit tag pristine
fi

# ----------------------------------------------------------- 3. patches ---
have_patches=""
[[ -f "$PATCH_STAMP" ]] && have_patches="$(sed -n 1p "$PATCH_STAMP")"
applied_head=""
[[ -f "$PATCH_STAMP" ]] && applied_head="$(sed -n 2p "$PATCH_STAMP")"
cur_head="$(sgit rev-parse HEAD)"

# scripts/export-patches.sh makes the series in a scratch worktree of the
# same repository: the fixes applied to pristine with 'git am', then one
# commit per device patch, which it writes out with 'git format-patch' (the
# series test checks that 'git am' of those files gives the same tree).
# The tree then checks out the last commit: files the old and the new
# series leave alike keep their timestamps, so ninja rebuilds only what
# changed (a reset to pristine and 'git am' in place would touch every
# file a patch touches, e.g. a header included everywhere).
n_fixes=0 n_device=0
if ((prepare_tree)) && [[ "$want_patches" != "$have_patches" || "$cur_head" != "$applied_head" ]]; then
    if [[ -n "$have_patches" || "$cur_head" != "$(sgit rev-parse pristine)" ]]; then
        log "patch series changed: making it afresh on pristine"
    fi
    rm -f "$PATCH_STAMP"
    IXGBE_SERIES_LOCK_HELD=1 bash "$REPO_ROOT/scripts/export-patches.sh" --src "$SRC_DIR" \
        --out "$SERIES_DIR" || die "scripts/export-patches.sh could not make the patch series; the tree is unchanged"
    fixes_head="$(sed -n 1p "$SERIES_DIR/commits")"
    new_head="$(sed -n 2p "$SERIES_DIR/commits")"
    sgit rev-parse -q --verify "$new_head^{commit}" >/dev/null ||
        die "scripts/export-patches.sh left no commit $new_head"
    sgit tag -f ixgbe-fixes "$fixes_head" >/dev/null # the last fix, to edit them from
    shopt -s nullglob
    fixes=("$SERIES_DIR"/fixes/*.patch)
    device=("$SERIES_DIR"/ixgbe/*.patch)
    shopt -u nullglob
    sgit am --abort >/dev/null 2>&1 || true
    # Links into this repository from before the series carried the
    # device's files (or of a file since gone) would stand in the way.
    while IFS= read -r -d '' l; do
        if [[ "$(readlink "$l")" == "$REPO_ROOT"/* ]]; then
            rm -f "$l"
        fi
    done < <(find "$SRC_DIR/hw" "$SRC_DIR/tests" "$SRC_DIR/docs" -type l -print0)
    # Tracked files back to HEAD (only those changed by hand), then the new
    # series; untracked files (our symlinks) stay, step 4 refreshes them.
    sgit reset -q --hard HEAD
    sgit checkout -q -B ixgbe-build "$new_head"
    # (the device series' cover letter is no patch)
    printf '%s\n%s\n%s\n%s\n' "$want_patches" "$(sgit rev-parse HEAD)" "${#fixes[@]}" "$((${#device[@]} - 1))" >"$PATCH_STAMP"
    log "patch series applied: ${#fixes[@]} fix(es), $((${#device[@]} - 1)) device patch(es)"
fi
if [[ -f "$PATCH_STAMP" ]]; then
    n_fixes="$(sed -n 3p "$PATCH_STAMP")"
    n_device="$(sed -n 4p "$PATCH_STAMP")"
fi

# ------------------------------------------------------------- 4. links ---
linked=()
# link_one REPO_FILE TREE_PATH
link_one() {
    local f=$1 rel=$2 dst="$SRC_DIR/$2"
    if [[ -e "$dst" && ! -L "$dst" ]]; then
        die "$rel exists in the QEMU tree as a real file (from QEMU or a patch); the project's copy cannot be linked over it"
    fi
    mkdir -p "$(dirname "$dst")"
    if [[ "$(readlink "$dst" 2>/dev/null || true)" != "$f" ]]; then
        ln -sfn "$f" "$dst"
    fi
    linked+=("$rel")
}
for m in "${LINK_MAP[@]}"; do
    link_one "$REPO_ROOT/${m%%:*}" "${m#*:}"
done
# Drop links whose project file is gone (deleted or renamed).
while IFS= read -r -d '' l; do
    if [[ "$(readlink "$l")" == "$REPO_ROOT"/* && ! -e "$l" ]]; then
        log "removing stale link ${l#"$SRC_DIR"/}"
        rm -f "$l"
    fi
done < <(find "$SRC_DIR/hw" "$SRC_DIR/tests" "$SRC_DIR/configs" -type l -print0)

# Configure and ninja only read the tree: let other builds compile too.
flock -s 9

# --------------------------------------------------------- 5. configure ---
# Logs of the default build keep their names; others are named after theirs.
if [[ "$BUILD_NAME" == qemu-build ]]; then
    CONFIGURE_LOG="$BUILD_DIR/qemu-configure.log"
    NINJA_LOG="$BUILD_DIR/qemu-ninja.log"
else
    CONFIGURE_LOG="$BUILD_DIR/$BUILD_NAME-configure.log"
    NINJA_LOG="$BUILD_DIR/$BUILD_NAME-ninja.log"
fi
CONF_STAMP="$QBUILD_DIR/.qemu-ixgbe-configure"
want_conf="$(printf '%s\n' "$src_ident" "$SRC_DIR" "${CONFIGURE_ARGS[@]}" | sha256sum | cut -d' ' -f1)"
have_conf=""
[[ -f "$CONF_STAMP" ]] && have_conf="$(<"$CONF_STAMP")"
if [[ "$want_conf" != "$have_conf" || ! -f "$QBUILD_DIR/build.ninja" ]]; then
    if [[ -d "$QBUILD_DIR" ]]; then
        log "configuration changed: starting $QBUILD_DIR afresh"
        rm -rf "$QBUILD_DIR"
    fi
    mkdir -p "$QBUILD_DIR"
    log "configure ${CONFIGURE_ARGS[*]}"
    if ! (cd "$QBUILD_DIR" && "$SRC_DIR/configure" "${CONFIGURE_ARGS[@]}") >"$CONFIGURE_LOG" 2>&1; then
        tail -n 40 "$CONFIGURE_LOG" >&2
        die "QEMU configure failed; full log: $CONFIGURE_LOG"
    fi
    printf '%s\n' "$want_conf" >"$CONF_STAMP"
fi

# Run from the build tree, QEMU looks for its firmware directories below
# qemu-build/qemu-bundle (its relocatable layout); point them at the real ones.
for d in "${FIRMWARE_DIRS[@]}"; do
    [[ -d "$d" ]] || warn "firmware directory $d is missing (run scripts/deps.sh)"
    mkdir -p "$QBUILD_DIR/qemu-bundle$(dirname "$d")"
    ln -sfn "$d" "$QBUILD_DIR/qemu-bundle$d"
done

# ------------------------------------------------------------- 6. ninja ---
ninja_has() {
    ninja -C "$QBUILD_DIR" -t query "$1" >/dev/null 2>&1
}

# Bring build.ninja up to date first (a changed patch series may add
# targets), so that the queries below see the current target list.
ninja -C "$QBUILD_DIR" build.ninja >>"$NINJA_LOG" 2>&1 ||
    die "regenerating $QBUILD_DIR/build.ninja failed (see $NINJA_LOG)"

targets=(qemu-system-x86_64)
# The ixgbe qtests: stand-alone tests, a binary each named after its file.
shopt -s nullglob
qtest_srcs=("$REPO_ROOT"/tests/qtest/ixgbe*-test.c)
shopt -u nullglob
for t in "${qtest_srcs[@]}"; do
    name="tests/qtest/$(basename "$t" .c)"
    if ninja_has "$name"; then
        targets+=("$name")
    else
        warn "$name.c exists but the QEMU build has no target $name (is it listed in tests/qtest/meson.build by a patch?)"
    fi
done
targets+=("${QEMU_UNIT_TESTS[@]}")
# shellcheck disable=SC2206
targets+=(${EXTRA_NINJA_TARGETS:-})
targets+=("${OPT_TARGETS[@]}")

for t in "${targets[@]:1}"; do
    ninja_has "$t" || die "the QEMU build has no ninja target '$t'"
done

ninja_args=(-C "$QBUILD_DIR")
[[ -n "${NINJA_JOBS:-}" ]] && ninja_args+=(-j "$NINJA_JOBS")
log "ninja ${targets[*]}"
# Show compiler output in full, progress lines only now and then, and
# meson's output only in the log when ninja regenerates QEMU's build files.
if nice -n 10 ninja "${ninja_args[@]}" "${targets[@]}" 2>&1 | tee "$NINJA_LOG" |
    awk '/^\[[0-9]+\/[0-9]+\] / {
            if ($0 ~ /Regenerating build files/) { regen = 1; print "  ninja: regenerating QEMU build files (meson)"; fflush() }
            split(substr($1, 2), n, "/"); n[2] = n[2] + 0
            if (n[1] > 0 && (n[1] % 250 == 0 || n[1] == n[2])) { print "  ninja: " n[1] "/" n[2]; fflush() }
            next
         }
         regen && /^Running postconf script/ { regen = 0; next }
         regen { next }
         { print; fflush() }' >&2; then
    rc=0
else
    rc=$? # pipefail: ninja's status (tee and awk do not fail)
fi
if ((rc != 0)); then
    echo "---- last lines of ${NINJA_LOG}:" >&2
    grep -vE '^\[[0-9]+/[0-9]+\] ' "$NINJA_LOG" | tail -n 40 >&2 || true
    echo "----" >&2
    die "ninja failed (exit $rc); full log: ${NINJA_LOG}"
fi
steps="$(grep -cE '^\[[0-9]+/[0-9]+\] ' "$NINJA_LOG" || true)"

# Our own files must compile without warnings, even though QEMU's tree is
# built with -Werror off. Objects with warnings are deleted so the next build
# compiles them (and reports them) again.
own_warnings="$(grep -E '(^|/)(hw/net/ixgbe|tests/qtest/ixgbe)[^:/]*:[0-9]+(:[0-9]+)?: warning:' "$NINJA_LOG" || true)"
if [[ -n "$own_warnings" ]]; then
    find "$QBUILD_DIR" -name '*ixgbe*.o' -delete
    if [[ "${IXGBE_ALLOW_WARNINGS:-0}" == 1 ]]; then
        warn "compiler warnings in the project's own files (IXGBE_ALLOW_WARNINGS=1):"
        printf '%s\n' "$own_warnings" >&2
    else
        printf '%s\n' "$own_warnings" >&2
        die "compiler warnings in the project's own files (see above); set IXGBE_ALLOW_WARNINGS=1 to continue anyway"
    fi
fi

QEMU_BIN="$QBUILD_DIR/qemu-system-x86_64"
[[ -x "$QEMU_BIN" ]] || die "$QEMU_BIN was not produced"
ixgbe_state="ixgbe device: absent"
if "$QEMU_BIN" -nodefaults -machine none -device help 2>/dev/null | grep -q '"ixgbe"'; then
    ixgbe_state="ixgbe device: present"
elif ((n_device)); then
    warn "the device series is applied but qemu-system-x86_64 lists no 'ixgbe' device (is it hooked into hw/net/meson.build and Kconfig?)"
fi

build_label=""
[[ "$BUILD_NAME" == qemu-build ]] || build_label=" in $BUILD_NAME"
summary="$(printf 'build-qemu: OK%s: QEMU %s (%s), %s fix(es) + %s device patch(es), %d ninja step(s), %s, targets: %s, in %s' \
    "$build_label" "$qemu_version" "$src_ident" "${n_fixes:-0}" "${n_device:-0}" "$steps" "$ixgbe_state" \
    "${targets[*]}" "$(fmt_duration $(($(now_s) - t_start)))")"
[[ -n "$STAMP_FILE" ]] && printf '%s\n' "$summary" >"$STAMP_FILE"
printf '%s\n' "$summary"
