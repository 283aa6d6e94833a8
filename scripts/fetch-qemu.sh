#!/usr/bin/env bash
# Obtain the QEMU source tree in $BUILD_DIR/qemu-src.
#
# Default: Debian's qemu source package, fetched with apt-get through a
# PRIVATE sources list and state directory inside $BUILD_DIR (the host's apt
# configuration is never touched), then unpacked with 'dpkg-source -x', which
# applies Debian's patch series (among them the one that skips the firmware
# blobs stripped from the +ds tarball). Downloads are cached in
# $BUILD_DIR/downloads/qemu and fetched again only when missing.
#
# Environment:
#   QEMU_SRC            use this existing QEMU tree instead (e.g. an upstream
#                       release). It is copied, never modified in place; it is
#                       copied again when a file in it is newer than the copy,
#                       when its git HEAD changes, or with QEMU_SRC_REFRESH=1.
#   QEMU_DEB_VERSIONS   acceptable Debian versions, tried in order; each entry
#                       is an exact version or a glob
#                       (default: "1:10.0.13+ds-0+deb13u1 1:10.0.*").
#                       Within a glob the newest matching version wins.
#   QEMU_DEB_SUITES     Debian suites searched for source packages
#                       (default: "trixie").
#   DEBIAN_MIRROR       Debian archive URL (default: the Debian mirror the
#                       host's own apt sources use).
#   BUILD_DIR           build directory (default: <repo>/build).
#
# Prints the source identity on stdout's last line as "qemu-src: ...".
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/debsrc.sh
. "$(dirname "${BASH_SOURCE[0]}")/debsrc.sh"

QEMU_DEB_VERSIONS="${QEMU_DEB_VERSIONS:-1:10.0.13+ds-0+deb13u1 1:10.0.*}"
QEMU_DEB_SUITES="${QEMU_DEB_SUITES:-trixie}"

SRC_DIR="$BUILD_DIR/qemu-src"
SRC_STAMP="$BUILD_DIR/qemu-src.source"
DL_DIR="$BUILD_DIR/downloads/qemu"
APT_DIR="$BUILD_DIR/apt"

# Replace $SRC_DIR with the tree in $1 (a fresh directory next to it), then
# record the identity $2.
install_tree() {
    local new=$1 ident=$2
    [[ -f "$new/VERSION" && -f "$new/configure" ]] ||
        die "$new does not look like a QEMU source tree (no VERSION/configure)"
    rm -rf "$SRC_DIR" "$SRC_STAMP"
    mv "$new" "$SRC_DIR"
    printf '%s\n' "$ident" >"$SRC_STAMP"
}

current_ident() {
    if [[ -d "$SRC_DIR" && -f "$SRC_STAMP" ]]; then
        cat "$SRC_STAMP"
    fi
}

# ------------------------------------------------------------- QEMU_SRC ---

user_tree_ident() {
    local src=$1 id
    id="user-tree path=$src version=$(tr -d '\n' <"$src/VERSION")"
    if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        id+=" head=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo none)"
        id+=" changes=$(git -C "$src" status --porcelain=v1 --untracked-files=no 2>/dev/null |
            sha256sum | cut -c1-16)"
    fi
    printf '%s' "$id"
}

fetch_user_tree() {
    local src ident new
    [[ -d "$QEMU_SRC" ]] || die "QEMU_SRC=$QEMU_SRC is not a directory"
    src="$(cd "$QEMU_SRC" && pwd -P)"
    [[ -f "$src/VERSION" && -f "$src/configure" && -f "$src/meson.build" ]] ||
        die "QEMU_SRC=$src does not look like a QEMU source tree (needs VERSION, configure, meson.build)"
    case "$src/" in
    "$BUILD_DIR"/*) die "QEMU_SRC=$src lies inside the build directory; point it at a tree of your own" ;;
    esac
    ident="$(user_tree_ident "$src")"
    # Same identity and no file changed since the copy: nothing to do.
    if [[ "${QEMU_SRC_REFRESH:-0}" != 1 && "$(current_ident)" == "$ident" ]] &&
        [[ -z "$(find "$src" \( -path "$src/.git" -o -path "$src/build" \) -prune -o \
            -newer "$SRC_STAMP" -print -quit)" ]]; then
        log "QEMU source up to date ($ident)"
        echo "qemu-src: $ident"
        return 0
    fi
    log "copying $src into $SRC_DIR (without .git and build/)"
    new="$(mktemp -d "$BUILD_DIR/qemu-src.new.XXXXXX")"
    tar -C "$src" --exclude=./.git --exclude=./build -cf - . | tar -C "$new" -xf - ||
        die "copying QEMU_SRC=$src failed"
    install_tree "$new" "$ident"
    echo "qemu-src: $ident"
}

# --------------------------------------------------------- Debian source ---
# (download helpers: scripts/debsrc.sh)

fetch_debian() {
    local spec_ident chosen first_pat ident new
    spec_ident="debian qemu versions=[$QEMU_DEB_VERSIONS] suites=[$QEMU_DEB_SUITES]"
    local cur
    cur="$(current_ident)"
    if [[ -n "$cur" && "$cur" == *"$spec_ident" ]]; then
        log "QEMU source up to date (${cur%% debian qemu versions=*})"
        echo "qemu-src: ${cur%% debian qemu versions=*}"
        return 0
    fi
    need_cmd dpkg-source
    read -r first_pat _ <<<"$QEMU_DEB_VERSIONS"
    debsrc_download qemu "$QEMU_DEB_VERSIONS" "$QEMU_DEB_SUITES" "$DL_DIR" "$APT_DIR"
    chosen=$DEBSRC_CHOSEN
    [[ -n "$chosen" ]] ||
        die "no acceptable qemu source version could be downloaded (wanted: $QEMU_DEB_VERSIONS; offered: $DEBSRC_OFFERED; tried: $DEBSRC_TRIED). Set QEMU_DEB_VERSIONS, QEMU_DEB_SUITES or QEMU_SRC."
    if [[ "$chosen" != "$first_pat" ]]; then
        warn "using qemu $chosen instead of the preferred $first_pat"
    fi

    log "unpacking $(debsrc_dsc_name qemu "$chosen") with dpkg-source -x (applies debian/patches)"
    new="$(mktemp -d "$BUILD_DIR/qemu-src.new.XXXXXX")"
    rmdir "$new"
    dpkg-source --no-copy -x "$DL_DIR/$(debsrc_dsc_name qemu "$chosen")" "$new" >"$BUILD_DIR/qemu-src.unpack.log" 2>&1 || {
        cat "$BUILD_DIR/qemu-src.unpack.log" >&2
        rm -rf "$new"
        die "dpkg-source -x $(debsrc_dsc_name qemu "$chosen") failed"
    }
    ident="debian-qemu $chosen $spec_ident"
    install_tree "$new" "$ident"
    log "QEMU source ready: $SRC_DIR (Debian qemu $chosen, upstream $(tr -d '\n' <"$SRC_DIR/VERSION"))"
    echo "qemu-src: debian-qemu $chosen"
}

t0=$(now_s)
if [[ -n "${QEMU_SRC:-}" ]]; then
    fetch_user_tree
else
    fetch_debian
fi
log "done in $(fmt_duration $(($(now_s) - t0)))"
