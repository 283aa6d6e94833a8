# shellcheck shell=bash
# Private apt state for the guest's Debian packages, shared by
# scripts/build-guest.sh, scripts/oot-module.sh and scripts/netdev-selftests.sh.
# Source it after lib.sh, with APT_DIR (package lists, one directory per
# suite) and DEB_DIR (the downloaded .deb files) set. The system's apt configuration is never used
# or touched (lib.sh's private apt state: apt_state_*).
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r "$KEYRING" ]] || die "$KEYRING missing (Debian package debian-archive-keyring)"

apt_prepare() { # <suite>: write the sources list, refresh the lists when stale
    local suite=$1 max_age=${GUEST_APT_MAX_AGE:-24}
    [[ "$max_age" =~ ^[0-9]+$ ]] || die "GUEST_APT_MAX_AGE must be a number of hours, got '$max_age'"
    local src="deb [signed-by=$KEYRING] http://deb.debian.org/debian"
    apt_state_lists "$APT_DIR/$suite" "$(printf '%s\n' \
        "$src $suite main" \
        "$src $suite-updates main" \
        "deb [signed-by=$KEYRING] http://deb.debian.org/debian-security $suite-security main")" \
        "$max_age" "$suite"
}

apt_q() { # <suite> <apt-cache args...>
    local suite=$1
    shift
    local -a opts
    mapfile -t opts < <(apt_state_opts "$APT_DIR/$suite")
    apt-cache "${opts[@]}" "$@"
}

candidates() { # <suite> <pkg>... -> "pkg version" lines (one apt-cache run)
    local suite=$1
    shift
    apt_state_candidates "$APT_DIR/$suite" "$@"
}

resolve_versions() { # <assoc array name> <suite> <pkg>...: each package's candidate version
    local -n _versions=$1
    local suite=$2 p v
    shift 2
    while read -r p v; do
        # shellcheck disable=SC2004 # an associative array, through the nameref
        _versions[$p]="$v"
    done < <(candidates "$suite" "$@")
    for p in "$@"; do
        [[ -n "${_versions[$p]:-}" && "${_versions[$p]}" != "(none)" ]] || die "package '$p' not found in Debian $suite"
    done
}

deb_path() { # <pkg> <version> -> path of the cached .deb
    local v=${2//:/%3a}
    printf '%s/%s_%s_amd64.deb' "$DEB_DIR" "$1" "$v"
}

fetch_deb() { # <suite> <pkg> <version>
    local suite=$1 pkg=$2 ver=$3 f
    f="$(deb_path "$pkg" "$ver")"
    if [[ ! -s "$f" ]]; then
        # Some packages are arch "all"; look for either name.
        if compgen -G "$DEB_DIR/${pkg}_${ver//:/%3a}_*.deb" >/dev/null; then
            return 0
        fi
        log "downloading $pkg $ver ($suite)"
        local -a opts
        mapfile -t opts < <(apt_state_opts "$APT_DIR/$suite")
        (cd "$DEB_DIR" && apt-get "${opts[@]}" -q download "$pkg=$ver" >/dev/null) ||
            die "apt-get download $pkg=$ver from $suite failed"
    fi
}

deb_file() { # <pkg> <version> -> existing cached .deb
    local m
    m="$(compgen -G "$DEB_DIR/${1}_${2//:/%3a}_*.deb" | head -n1)"
    [[ -n "$m" ]] || die "downloaded package $1 $2 not found in $DEB_DIR"
    printf '%s' "$m"
}
