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

# The Debian archive URL the host's apt already uses (first non-security
# "deb" site), unless DEBIAN_MIRROR says otherwise.
debian_mirror() {
    if [[ -n "${DEBIAN_MIRROR:-}" ]]; then
        printf '%s' "${DEBIAN_MIRROR%/}"
        return
    fi
    local site
    # shellcheck disable=SC2016  # apt's own $(FIELD) syntax, not the shell's
    site="$(apt-get indextargets --format '$(SITE) $(RELEASE) $(TARGET_OF)' 2>/dev/null |
        awk '$3 == "deb" && $2 !~ /-security$/ && $1 ~ /\/debian\/?$/ { print $1; exit }')"
    [[ -n "$site" ]] ||
        die "could not find a Debian mirror in the host's apt sources; set DEBIAN_MIRROR=<archive URL>"
    printf '%s' "${site%/}"
}

APT_OPTS=()
setup_private_apt() {
    local mirror suite
    mirror="$(debian_mirror)"
    mkdir -p "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial" "$APT_DIR/sources.list.d"
    : >"$APT_DIR/sources.list"
    for suite in $QEMU_DEB_SUITES; do
        printf 'deb-src %s %s main\n' "$mirror" "$suite" >>"$APT_DIR/sources.list"
    done
    APT_OPTS=(
        -o "Dir::Etc::SourceList=$APT_DIR/sources.list"
        -o "Dir::Etc::SourceParts=$APT_DIR/sources.list.d"
        -o "Dir::State::Lists=$APT_DIR/lists"
        -o "Dir::Cache=$APT_DIR/cache"
        -o "APT::Sandbox::User=$(id -un)"
    )
}

apt_update_private() {
    log "updating private apt lists ($(tr '\n' ';' <"$APT_DIR/sources.list"))"
    apt-get "${APT_OPTS[@]}" -q update >"$APT_DIR/update.log" 2>&1 || {
        cat "$APT_DIR/update.log" >&2
        die "apt-get update with the private sources list $APT_DIR/sources.list failed"
    }
    if grep -qE '^(W|E):' "$APT_DIR/update.log"; then
        grep -E '^(W|E):' "$APT_DIR/update.log" >&2
    fi
}

# Versions of source package qemu in the private lists, newest first.
available_versions() {
    apt-cache "${APT_OPTS[@]}" showsrc qemu 2>/dev/null |
        awk '/^Package:/ { p = $2 } /^Version:/ && p == "qemu" { print $2 }' |
        sort -u | sort_versions_desc
}

sort_versions_desc() {
    local -a vs=()
    local v i j tmp
    mapfile -t vs
    for ((i = 1; i < ${#vs[@]}; i++)); do
        for ((j = i; j > 0; j--)); do
            if dpkg --compare-versions "${vs[j]}" gt "${vs[j - 1]}"; then
                tmp=${vs[j]} vs[j]=${vs[j - 1]} vs[j - 1]=$tmp
            else
                break
            fi
        done
    done
    ((${#vs[@]})) && printf '%s\n' "${vs[@]}"
    return 0
}

dsc_name() {
    local v=${1#*:}
    printf 'qemu_%s.dsc' "$v"
}

# True when the .dsc of version $1 and every file it lists are in $DL_DIR.
cached_complete() {
    local dsc f
    dsc="$DL_DIR/$(dsc_name "$1")"
    [[ -f "$dsc" ]] || return 1
    while read -r f; do
        [[ -f "$DL_DIR/$f" ]] || return 1
    done < <(awk '/^Files:/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF == 3 { print $3 }' "$dsc")
    return 0
}

# Cached versions (from .dsc files), newest first.
cached_versions() {
    local d
    for d in "$DL_DIR"/qemu_*.dsc; do
        [[ -f "$d" ]] || continue
        awk '/^Version:/ { print $2; exit }' "$d"
    done | sort -u | sort_versions_desc
}

matching() { # versions on stdin matching pattern $1 (exact or glob)
    local pat=$1 v
    while read -r v; do
        # shellcheck disable=SC2053  # $pat is a glob on purpose
        [[ "$v" == $pat ]] && printf '%s\n' "$v"
    done
    return 0
}

fetch_debian() {
    local spec_ident chosen="" pat v first_pat tried=() ident new
    spec_ident="debian qemu versions=[$QEMU_DEB_VERSIONS] suites=[$QEMU_DEB_SUITES]"
    local cur
    cur="$(current_ident)"
    if [[ -n "$cur" && "$cur" == *"$spec_ident" ]]; then
        log "QEMU source up to date (${cur%% debian qemu versions=*})"
        echo "qemu-src: ${cur%% debian qemu versions=*}"
        return 0
    fi
    need_cmd apt-get apt-cache dpkg-source dpkg
    mkdir -p "$DL_DIR"
    read -r first_pat _ <<<"$QEMU_DEB_VERSIONS"

    # 1. a cached download that satisfies an acceptable version (in list order)
    for pat in $QEMU_DEB_VERSIONS; do
        while read -r v; do
            if cached_complete "$v"; then
                chosen=$v
                log "using cached Debian source qemu $v"
                break 2
            fi
        done < <(cached_versions | matching "$pat")
    done

    # 2. otherwise ask the archive, via the private apt state
    if [[ -z "$chosen" ]]; then
        setup_private_apt
        apt_update_private
        local -a avail
        mapfile -t avail < <(available_versions)
        log "qemu source versions offered by [$QEMU_DEB_SUITES]: ${avail[*]:-none}"
        for pat in $QEMU_DEB_VERSIONS; do
            while read -r v; do
                [[ -n "$v" ]] || continue
                [[ " ${tried[*]} " == *" $v "* ]] && continue
                tried+=("$v")
                log "downloading Debian source qemu=$v"
                if (cd "$DL_DIR" && apt-get "${APT_OPTS[@]}" -q source --download-only "qemu=$v") \
                    >"$APT_DIR/source.log" 2>&1 && cached_complete "$v"; then
                    chosen=$v
                    break 2
                fi
                warn "download of qemu=$v failed:"
                grep -E '^(E|W|Err):' "$APT_DIR/source.log" >&2 || tail -n 5 "$APT_DIR/source.log" >&2
            done < <(printf '%s\n' "${avail[@]}" | matching "$pat")
        done
        [[ -n "$chosen" ]] ||
            die "no acceptable qemu source version could be downloaded (wanted: $QEMU_DEB_VERSIONS; offered: ${avail[*]:-none}; tried: ${tried[*]:-none}). Set QEMU_DEB_VERSIONS, QEMU_DEB_SUITES or QEMU_SRC."
    fi
    if [[ "$chosen" != "$first_pat" ]]; then
        warn "using qemu $chosen instead of the preferred $first_pat"
    fi

    log "unpacking $(dsc_name "$chosen") with dpkg-source -x (applies debian/patches)"
    new="$(mktemp -d "$BUILD_DIR/qemu-src.new.XXXXXX")"
    rmdir "$new"
    dpkg-source --no-copy -x "$DL_DIR/$(dsc_name "$chosen")" "$new" >"$BUILD_DIR/qemu-src.unpack.log" 2>&1 || {
        cat "$BUILD_DIR/qemu-src.unpack.log" >&2
        rm -rf "$new"
        die "dpkg-source -x $(dsc_name "$chosen") failed"
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
