# shellcheck shell=bash disable=SC2034  # DEBSRC_* results are read by the scripts that source this
# Download a Debian source package (its .dsc and every file it lists) with
# apt-get through a PRIVATE sources list and state directory (lib.sh's
# apt_state_*), so the host's apt configuration is never touched. Used by
# scripts/fetch-qemu.sh (qemu). Source it after lib.sh; do not run it.
#
#   debsrc_download PKG "VERSIONS" "SUITES" DL_DIR APT_DIR
#
# VERSIONS is a list of acceptable versions, tried in order; each entry is an
# exact version or a glob (within a glob the newest matching version wins).
# A complete download already in DL_DIR is used without asking the archive.
# Sets DEBSRC_CHOSEN to the version obtained, or to "" (after saying why on
# stderr) when no acceptable version could be had; DEBSRC_OFFERED and
# DEBSRC_TRIED then list what the archive offered and what failed. The .dsc
# is "$DL_DIR/$(debsrc_dsc_name PKG "$DEBSRC_CHOSEN")".
#
# DEBIAN_MIRROR (environment) overrides the archive URL, which is otherwise
# the Debian mirror the host's own apt sources use.

if [[ -n "${_QEMU_IXGBE_DEBSRC_SH:-}" ]]; then
    return 0
fi
_QEMU_IXGBE_DEBSRC_SH=1

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

# debsrc_lists APT_DIR SUITES: the private lists (lib.sh's apt_state_*) with
# deb-src lines for SUITES, fetched afresh; sets DEBSRC_APT_OPTS for
# apt-get/apt-cache.
DEBSRC_APT_OPTS=()
debsrc_lists() {
    local apt_dir=$1 suites=$2 mirror suite sources=""
    mirror="$(debian_mirror)"
    for suite in $suites; do
        sources+="${sources:+$'\n'}deb-src $mirror $suite main"
    done
    apt_state_lists "$apt_dir" "$sources" 0 "the source packages of [$suites]"
    mapfile -t DEBSRC_APT_OPTS < <(apt_state_opts "$apt_dir")
}

# Versions on stdin, newest first (dpkg's ordering).
sort_versions_desc() {
    local -a vs=()
    local i j tmp
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

# Versions of source package $1 in the private lists, newest first.
debsrc_available() {
    apt-cache "${DEBSRC_APT_OPTS[@]}" showsrc "$1" 2>/dev/null |
        awk -v pkg="$1" '/^Package:/ { p = $2 } /^Version:/ && p == pkg { print $2 }' |
        sort -u | sort_versions_desc
}

# debsrc_dsc_name PKG VERSION: the .dsc file name (without the epoch).
debsrc_dsc_name() {
    printf '%s_%s.dsc' "$1" "${2#*:}"
}

# debsrc_cached_complete DL_DIR PKG VERSION: true when the .dsc and every
# file it lists are in DL_DIR.
debsrc_cached_complete() {
    local dl_dir=$1 dsc f
    dsc="$dl_dir/$(debsrc_dsc_name "$2" "$3")"
    [[ -f "$dsc" ]] || return 1
    while read -r f; do
        [[ -f "$dl_dir/$f" ]] || return 1
    done < <(awk '/^Files:/ { on = 1; next } /^[^ ]/ { on = 0 } on && NF == 3 { print $3 }' "$dsc")
    return 0
}

# debsrc_cached_versions DL_DIR PKG: versions with a .dsc in DL_DIR, newest first.
debsrc_cached_versions() {
    local d
    for d in "$1/$2"_*.dsc; do
        [[ -f "$d" ]] || continue
        awk '/^Version:/ { print $2; exit }' "$d"
    done | sort -u | sort_versions_desc
}

# Versions on stdin matching pattern $1 (exact or glob).
debsrc_matching() {
    local pat=$1 v
    while read -r v; do
        # shellcheck disable=SC2053  # $pat is a glob on purpose
        [[ "$v" == $pat ]] && printf '%s\n' "$v"
    done
    return 0
}

# debsrc_download PKG VERSIONS SUITES DL_DIR APT_DIR (see the top of this file).
DEBSRC_CHOSEN=""
DEBSRC_OFFERED=""
DEBSRC_TRIED=""
debsrc_download() {
    local pkg=$1 versions=$2 suites=$3 dl_dir=$4 apt_dir=$5
    local pat v
    local -a avail=() tried=()
    DEBSRC_CHOSEN="" DEBSRC_OFFERED="" DEBSRC_TRIED=""
    need_cmd apt-get apt-cache dpkg
    mkdir -p "$dl_dir"

    # 1. a cached download that satisfies an acceptable version (in list order)
    for pat in $versions; do
        while read -r v; do
            if debsrc_cached_complete "$dl_dir" "$pkg" "$v"; then
                log "using cached Debian source $pkg $v"
                DEBSRC_CHOSEN=$v
                return 0
            fi
        done < <(debsrc_cached_versions "$dl_dir" "$pkg" | debsrc_matching "$pat")
    done

    # 2. otherwise ask the archive, via the private apt state
    debsrc_lists "$apt_dir" "$suites"
    mapfile -t avail < <(debsrc_available "$pkg")
    log "$pkg source versions offered by [$suites]: ${avail[*]:-none}"
    for pat in $versions; do
        while read -r v; do
            [[ -n "$v" ]] || continue
            [[ " ${tried[*]} " == *" $v "* ]] && continue
            tried+=("$v")
            log "downloading Debian source $pkg=$v"
            if (cd "$dl_dir" && apt-get "${DEBSRC_APT_OPTS[@]}" -q source --download-only "$pkg=$v") \
                >"$apt_dir/source.log" 2>&1 && debsrc_cached_complete "$dl_dir" "$pkg" "$v"; then
                DEBSRC_CHOSEN=$v
                return 0
            fi
            warn "download of $pkg=$v failed:"
            grep -E '^(E|W|Err):' "$apt_dir/source.log" >&2 || tail -n 5 "$apt_dir/source.log" >&2
        done < <(printf '%s\n' "${avail[@]}" | debsrc_matching "$pat")
    done
    DEBSRC_OFFERED="${avail[*]:-none}"
    DEBSRC_TRIED="${tried[*]:-none}"
    return 0
}
