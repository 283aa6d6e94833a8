#!/usr/bin/env bash
# Write the QEMU patch series anew, check it, or make it for the build.
#
# qemu-patches/ holds two 'git format-patch' series against the pristine
# QEMU tree (tag 'pristine' of $BUILD_DIR/qemu-src, which
# scripts/build-qemu.sh makes), as they would be sent upstream:
#
#   fixes/      QEMU fixes that do not need the device, each upstreamable
#               on its own with its own test (unnumbered, applied first).
#               These are kept as patches: edit them as commits (below).
#   ixgbe/      the device, a numbered series with a cover letter, applied
#               on top of the fixes. It is GENERATED: from the device's
#               files in this repository (hw/net/, tests/qtest/,
#               tests/unit/, docs/system/devices/ixgbe.rst, the trace events
#               in hw/net/trace-events-ixgbe) as ixgbe-src/MANIFEST places
#               them in patches, with the commit messages (ixgbe-src/*.msg,
#               the cover letter ixgbe-src/cover-letter.txt) and the small
#               diffs of QEMU's own files (ixgbe-src/*.diff: Kconfig,
#               meson.build, MAINTAINERS, ...) kept there. Never edit
#               ixgbe/*.patch: edit the files and run this script.
#
# A file under hw/net/, tests/qtest/ or tests/unit/ that MANIFEST does not
# place in a patch (or places twice) stops this script, and so the build.
# scripts/build-qemu.sh builds QEMU from this same series (--out): the
# files the build compiles are the ones the series adds.
#
# Ways to run it:
#
#   (default)          write qemu-patches/fixes/ and qemu-patches/ixgbe/
#                      anew: the fixes replayed and written in canonical
#                      form, the device series generated.
#   --fixes-from REF   as the default, but the fixes are the commits
#                      pristine..REF of the QEMU tree. To change a fix:
#                        git -C build/qemu-src worktree add -b fixes ../fixes ixgbe-fixes
#                      (ixgbe-fixes: the tag build-qemu.sh leaves at the
#                      last fix), commit there (a new fix is a new commit;
#                      amend, or rebase -i pristine, to change one), run
#                      'scripts/export-patches.sh --fixes-from fixes', then
#                      remove the worktree and the branch.
#   --check            write nothing; fail (exit 1, with a diff) unless both
#                      series are byte for byte what the default would
#                      write, and 'git am' of fixes/ then ixgbe/ onto
#                      pristine gives exactly the tree the generation made
#                      from this repository's files. Exit 77 (skipped)
#                      while there is no QEMU tree with a 'pristine' tag.
#                      The 'series' test of meson runs this.
#   --out DIR          write the series to DIR/fixes and DIR/ixgbe, and to
#                      DIR/commits the commits it was written from (the
#                      last fix, the last device patch), for
#                      scripts/build-qemu.sh; nothing else.
#
# The series are made in a scratch worktree of the QEMU tree's repository
# (under $BUILD_DIR, removed afterwards; only the files the series touch
# are checked out; the tree itself is not touched), and written by 'git
# format-patch' without per-machine details (no commit ids, no git
# version, fixed abbreviations, dates and identity, no user or system git
# configuration), so the same sources give the same files anywhere. The
# fixes applied to pristine are kept under refs/ixgbe-series/fixes/ in that
# repository, named after their content, and replayed only when they change.
#
# Usage: scripts/export-patches.sh [--src DIR]
#                                  [--fixes-from REF | --check | --out DIR]
#   --src DIR   the QEMU tree (default $BUILD_DIR/qemu-src)
# Environment: IXGBE_SERIES_LOCK_HELD=1 when the caller already holds
# build-qemu.sh's lock on the tree (build-qemu.sh itself).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC_DIR="$BUILD_DIR/qemu-src"
MODE="write"
FIXES_REF=""
OUT_DIR=""
while (($#)); do
    case "$1" in
    --src | --fixes-from | --out)
        (($# >= 2)) || die "$1 needs a value"
        case "$1" in
        --src) SRC_DIR=$2 ;;
        --fixes-from) FIXES_REF=$2 ;;
        --out) MODE=out OUT_DIR=$2 ;;
        esac
        shift 2
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
[[ -z "$FIXES_REF" || "$MODE" == write ]] || die "--fixes-from only writes qemu-patches/"

PATCH_DIR="$REPO_ROOT/qemu-patches"
FIXES_DIR="$PATCH_DIR/fixes"
DEVICE_DIR="$PATCH_DIR/ixgbe"
SPEC_DIR="$PATCH_DIR/ixgbe-src"
MANIFEST="$SPEC_DIR/MANIFEST"
TRACE=hw/net/trace-events
TRACE_FRAGMENT=hw/net/trace-events-ixgbe
TRACE_ANCHOR='# igb.c'
MAINT_TITLE=ixgbe
# Every file in these directories of the repository is the device's and
# goes into QEMU's tree through a patch of the device series.
DEVICE_DIRS=(hw/net tests/qtest tests/unit)
DEVICE_EXTRA=(docs/system/devices/ixgbe.rst)
# Identity and dates of the device series (format-patch prints them).
AUTHOR_NAME="qemu-ixgbe developers"
AUTHOR_EMAIL="devel@qemu-ixgbe.invalid"
SERIES_DATE=1795737600 # 2026-11-27 00:00:00 UTC; patch i is i seconds later

need_cmd git flock

# ---------------------------------------------------------- the manifest ---
[[ -f "$MANIFEST" ]] || die "$MANIFEST is missing"
names=() adds=() glues=()
trace_patch=""
declare -A placed=()
lineno=0
while IFS= read -r line || [[ -n "$line" ]]; do
    lineno=$((lineno + 1))
    line="${line%%#*}"
    read -r -a words <<<"$line"
    ((${#words[@]})) || continue
    where="ixgbe-src/MANIFEST:$lineno"
    if [[ "${words[0]}" != patch ]] && ((${#names[@]} == 0)); then
        die "$where: '${words[0]}' before the first 'patch'"
    fi
    i=$((${#names[@]} - 1))
    case "${words[0]}" in
    patch)
        ((${#words[@]} == 2)) || die "$where: 'patch NAME'"
        [[ -f "$SPEC_DIR/${words[1]}.msg" ]] || die "$where: no message ixgbe-src/${words[1]}.msg"
        names+=("${words[1]}") adds+=("") glues+=("")
        ;;
    add)
        ((${#words[@]} >= 2)) || die "$where: 'add PATH...'"
        for f in "${words[@]:1}"; do
            [[ -f "$REPO_ROOT/$f" ]] || die "$where: $f does not exist"
            [[ -z "${placed[$f]:-}" ]] || die "$where: $f is already added by patch ${placed[$f]}"
            placed[$f]=${names[i]}
            adds[i]+="$f "
        done
        ;;
    glue)
        ((${#words[@]} >= 2)) || die "$where: 'glue NAME.diff...'"
        for g in "${words[@]:1}"; do
            [[ -f "$SPEC_DIR/$g" ]] || die "$where: no diff ixgbe-src/$g"
            glues[i]+="$g "
        done
        ;;
    trace-events)
        [[ -z "$trace_patch" ]] || die "$where: the trace events are already added by patch $trace_patch"
        trace_patch=${names[i]}
        placed[$TRACE_FRAGMENT]=$trace_patch
        ;;
    *) die "$where: unknown directive '${words[0]}'" ;;
    esac
done <"$MANIFEST"
((${#names[@]})) || die "ixgbe-src/MANIFEST has no patch"
[[ -n "$trace_patch" ]] || die "no patch of ixgbe-src/MANIFEST adds the trace events (trace-events)"

# Every file of the device must be in exactly one patch.
unplaced=()
while IFS= read -r -d '' f; do
    f="${f#"$REPO_ROOT"/}"
    [[ -n "${placed[$f]:-}" ]] || unplaced+=("$f")
done < <(
    for d in "${DEVICE_DIRS[@]}"; do
        # (editors' hidden and backup files aside)
        [[ -d "$REPO_ROOT/$d" ]] && find "$REPO_ROOT/$d" \( -type f -o -type l \) \
            ! -name '.*' ! -name '*~' -print0
    done
    for f in "${DEVICE_EXTRA[@]}"; do
        [[ -e "$REPO_ROOT/$f" ]] && printf '%s\0' "$REPO_ROOT/$f"
    done
)
((${#unplaced[@]} == 0)) ||
    die "not placed in any patch of qemu-patches/ixgbe-src/MANIFEST (add them with 'add' to the patch they belong to):"$'\n'"$(printf '  %s\n' "${unplaced[@]}")"
# ... and every file of ixgbe-src/ in use.
for f in "$SPEC_DIR"/*; do
    b="$(basename "$f")"
    case "$b" in
    MANIFEST | cover-letter.txt) continue ;;
    *.msg) [[ " ${names[*]} " == *" ${b%.msg} "* ]] && continue ;;
    *.diff) [[ " ${glues[*]} " == *" $b "* ]] && continue ;;
    esac
    die "qemu-patches/ixgbe-src/$b is not used by MANIFEST (remove it or use it)"
done
[[ -f "$SPEC_DIR/cover-letter.txt" ]] || die "qemu-patches/ixgbe-src/cover-letter.txt is missing"

# ------------------------------------------------------------ the tree ---
if ! git -C "$SRC_DIR" rev-parse -q --verify refs/tags/pristine >/dev/null 2>&1; then
    if [[ "$MODE" == check ]]; then
        log "no QEMU tree with a 'pristine' tag in $SRC_DIR (run scripts/build-qemu.sh first): skipped"
        exit 77
    fi
    die "$SRC_DIR has no 'pristine' tag (run scripts/build-qemu.sh first)"
fi

# build-qemu.sh holds this lock exclusively while it changes the tree.
if [[ "${IXGBE_SERIES_LOCK_HELD:-0}" != 1 ]]; then
    exec 9>"$BUILD_DIR/.build-qemu.lock"
    if ! flock -n -s 9; then
        log "waiting for build-qemu.sh to finish patching $SRC_DIR"
        flock -s 9
    fi
fi

# Git as the series is made with: a fixed identity, no user or system
# configuration (diff prefixes, whitespace fixes, signatures...), fixed
# abbreviations, no automatic gc in the shared repository.
GIT_ID=(-c user.name="$AUTHOR_NAME" -c user.email="$AUTHOR_EMAIL"
    -c commit.gpgsign=false -c core.autocrlf=false -c advice.detachedHead=false
    -c core.abbrev=8 -c gc.auto=0)
cgit() {
    GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git "${GIT_ID[@]}" "$@"
}
# The same in the scratch worktree ($WT), of which only the files the
# series touch are checked out (sparse checkout, set for these commands
# alone, not in the repository's configuration).
wgit() {
    cgit -c core.sparseCheckout=true -C "$WT" "$@"
}

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

# ------------------------------------------------------------- the fixes ---
mkdir -p "$work/in" "$work/out/fixes" "$work/out/ixgbe"
if [[ -n "$FIXES_REF" ]]; then
    cgit -C "$SRC_DIR" rev-parse -q --verify "$FIXES_REF^{commit}" >/dev/null ||
        die "$FIXES_REF is not a commit of $SRC_DIR"
    cgit -C "$SRC_DIR" merge-base --is-ancestor pristine "$FIXES_REF" ||
        die "$FIXES_REF does not descend from pristine"
    cgit -C "$SRC_DIR" format-patch -q --zero-commit -o "$work/in" "pristine..$FIXES_REF"
else
    shopt -s nullglob
    committed=("$FIXES_DIR"/*.patch)
    shopt -u nullglob
    ((${#committed[@]} == 0)) || cp "${committed[@]}" "$work/in/"
fi
shopt -s nullglob
fix_patches=("$work/in"/*.patch)
glue_paths=()
for g in "${glues[@]}"; do
    for d in $g; do
        glue_paths+=("$SPEC_DIR/$d")
    done
done
shopt -u nullglob

# The fixes applied to pristine, kept under a ref named after their
# content: replayed only when they (or pristine) change.
fixes_key="$({
    cgit -C "$SRC_DIR" rev-parse pristine
    cat "${fix_patches[@]}" </dev/null
} | sha256sum | cut -c1-16)"
FIXES_CACHE=refs/ixgbe-series/fixes
cached="$(cgit -C "$SRC_DIR" rev-parse -q --verify "$FIXES_CACHE/$fixes_key^{commit}" 2>/dev/null || true)"
cgit -C "$SRC_DIR" worktree add -q --no-checkout --detach "$WT" "${cached:-pristine}"
sparse="$(wgit rev-parse --git-path info/sparse-checkout)"
mkdir -p "$(dirname "$sparse")"
{
    printf '/%s\n' "$TRACE" MAINTAINERS "${!placed[@]}"
    cat "${fix_patches[@]}" "${glue_paths[@]}" </dev/null |
        sed -n 's|^diff --git a/\(.*\) b/\(.*\)$|/\1\n/\2|p'
} | sort -u >"$sparse"
wgit read-tree -mu HEAD

if [[ -z "$cached" ]]; then
    for p in "${fix_patches[@]}"; do
        if ! out="$(wgit am -q --keep-cr --committer-date-is-author-date "$p" 2>&1)"; then
            printf '%s\n' "$out" >&2
            die "fix $(basename "$p") does not apply to pristine with git am (after the fixes before it)"
        fi
    done
    # Keep only the current fixes' entry.
    cgit -C "$SRC_DIR" for-each-ref --format='delete %(refname)' "$FIXES_CACHE/" |
        cgit -C "$SRC_DIR" update-ref --stdin
    cgit -C "$SRC_DIR" update-ref "$FIXES_CACHE/$fixes_key" "$(wgit rev-parse HEAD)"
fi
fixes_head="$(wgit rev-parse HEAD)"

# ------------------------------------------------- the device series ---
# QEMU's trace-events with the device's events before TRACE_ANCHOR.
trace_content() {
    wgit show "HEAD:$TRACE" |
        awk -v frag="$REPO_ROOT/$TRACE_FRAGMENT" -v anchor="$TRACE_ANCHOR" '
            $0 == anchor && !done {
                while ((getline line < frag) > 0) print line
                print ""
                done = 1
            }
            { print }
            END { exit done ? 0 : 3 }' ||
        die "QEMU's $TRACE has no line '$TRACE_ANCHOR' to put the device's trace events before"
}

# MAINTAINERS with the F: lines of the device's section replaced by FILES
# (sorted), when the section is there; unchanged otherwise.
maintainers_content() {
    awk -v title="$MAINT_TITLE" -v files="$1" '
        $0 == title { insec = 1; print; next }
        insec && /^F:/ { next }
        insec && /^$/ {
            n = split(files, f, " ")
            for (k = 1; k <= n; k++) print "F: " f[k]
            insec = 0
        }
        { print }' "$WT/MAINTAINERS"
}

all_added=""
for i in "${!names[@]}"; do
    name=${names[i]}
    for f in ${adds[i]}; do
        mkdir -p "$(dirname "$WT/$f")"
        cp "$REPO_ROOT/$f" "$WT/$f"
        all_added+="$f"$'\n'
    done
    # shellcheck disable=SC2086 # a list of paths without spaces
    [[ -z "${adds[i]}" ]] || wgit add -- ${adds[i]}
    for g in ${glues[i]}; do
        if ! out="$(wgit apply --index "$SPEC_DIR/$g" 2>&1)"; then
            printf '%s\n' "$out" >&2
            die "ixgbe-src/$g (patch $name) does not apply to QEMU's tree after the patches before it"
        fi
    done
    if [[ "$trace_patch" == "$name" ]]; then
        trace_content >"$work/trace"
        cp "$work/trace" "$WT/$TRACE"
        wgit add -- "$TRACE"
    fi
    maintainers_content "$(sort <<<"$all_added" | awk 'NF' | tr '\n' ' ')" >"$work/maint"
    cp "$work/maint" "$WT/MAINTAINERS"
    wgit add -- MAINTAINERS
    when="@$((SERIES_DATE + i)) +0000"
    GIT_AUTHOR_DATE="$when" GIT_COMMITTER_DATE="$when" \
        wgit commit -q --no-verify --cleanup=whitespace -F "$SPEC_DIR/$name.msg" ||
        die "patch $name: nothing to commit"
done

# ------------------------------------------------------------ the output ---
wgit format-patch -q --no-numbered --zero-commit --no-signature \
    -o "$work/out/fixes" "pristine..$fixes_head"
GIT_COMMITTER_DATE="@$SERIES_DATE +0000" \
    wgit format-patch -q --numbered --cover-letter --zero-commit --no-signature \
    -o "$work/out/ixgbe" "$fixes_head..HEAD"
# The cover letter: subject and blurb from cover-letter.txt, a fixed date.
cover="$work/out/ixgbe/0000-cover-letter.patch"
awk -v txt="$SPEC_DIR/cover-letter.txt" -v date="$(LC_ALL=C date -u -d "@$SERIES_DATE" '+%a, %d %b %Y %H:%M:%S +0000')" '
    BEGIN {
        getline subject < txt
        while ((getline l < txt) > 0) blurb = blurb l "\n"
        sub(/^\n+/, "", blurb); sub(/\n+$/, "", blurb)
    }
    /^Date: / && !dated { print "Date: " date; dated = 1; next }
    { gsub(/\*\*\* SUBJECT HERE \*\*\*/, subject) }
    /^\*\*\* BLURB HERE \*\*\*$/ { print blurb; next }
    { print }' "$cover" >"$work/cover"
mv "$work/cover" "$cover"
generated_tree="$(wgit rev-parse 'HEAD^{tree}')"
n_fixes="$(find "$work/out/fixes" -name '*.patch' | wc -l)"
n_dev="$(find "$work/out/ixgbe" -name '*.patch' ! -name '0000-cover-letter.patch' | wc -l)"

case "$MODE" in
out)
    mkdir -p "$OUT_DIR/fixes" "$OUT_DIR/ixgbe"
    rm -f "$OUT_DIR"/fixes/*.patch "$OUT_DIR"/ixgbe/*.patch
    cp "$work/out/fixes"/*.patch "$OUT_DIR/fixes/"
    cp "$work/out/ixgbe"/*.patch "$OUT_DIR/ixgbe/"
    # The commits the series was written from (in the QEMU tree's
    # repository): the last fix, the last device patch.
    printf '%s\n%s\n' "$fixes_head" "$(wgit rev-parse HEAD)" >"$OUT_DIR/commits"
    log "$n_fixes fix(es) and $n_dev device patch(es) in $OUT_DIR"
    ;;
write)
    mkdir -p "$FIXES_DIR" "$DEVICE_DIR"
    rm -f "$FIXES_DIR"/*.patch "$DEVICE_DIR"/*.patch
    cp "$work/out/fixes"/*.patch "$FIXES_DIR/"
    cp "$work/out/ixgbe"/*.patch "$DEVICE_DIR/"
    log "wrote $n_fixes fix(es) to qemu-patches/fixes/ and $n_dev device patch(es) and a cover letter to qemu-patches/ixgbe/"
    ;;
check)
    # The committed series, as files, against the one made here.
    mkdir -p "$work/committed/fixes" "$work/committed/ixgbe"
    for d in fixes ixgbe; do
        find "$PATCH_DIR/$d" -maxdepth 1 -name '*.patch' -exec cp {} "$work/committed/$d/" \; 2>/dev/null || true
    done
    if ! diff -ru "$work/committed" "$work/out" >"$work/diff"; then
        sed -e "s|$work/committed|qemu-patches|g" -e "s|$work/out|regenerated|g" "$work/diff" | head -n 400
        die "qemu-patches/ is not what scripts/export-patches.sh makes of the fixes and the device's files (diff above); run it and commit the result"
    fi
    # git am of the committed series onto pristine gives the generated tree.
    wgit reset -q --hard pristine
    for p in "$PATCH_DIR"/fixes/*.patch "$PATCH_DIR"/ixgbe/*.patch; do
        [[ "$(basename "$p")" == 0000-cover-letter.patch ]] && continue
        if ! out="$(wgit am -q --keep-cr "$p" 2>&1)"; then
            printf '%s\n' "$out" >&2
            die "${p#"$REPO_ROOT"/} does not apply with git am after the patches before it"
        fi
    done
    applied_tree="$(wgit rev-parse 'HEAD^{tree}')"
    [[ "$applied_tree" == "$generated_tree" ]] ||
        die "git am of qemu-patches/fixes and qemu-patches/ixgbe onto pristine gives tree $applied_tree, the device's files give $generated_tree"
    log "qemu-patches/: $n_fixes fix(es) and $n_dev device patch(es) up to date with the device's files; git am onto pristine gives the tree the build uses: ok"
    build_tree="$(cgit -C "$SRC_DIR" rev-parse -q --verify 'HEAD^{tree}' 2>/dev/null || true)"
    if [[ "$build_tree" != "$generated_tree" ]]; then
        log "note: $SRC_DIR is not at the current sources yet (the next scripts/build-qemu.sh run applies them)"
    fi
    ;;
esac
