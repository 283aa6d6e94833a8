# shellcheck shell=bash
# Private apt state for the guest's Debian packages, shared by
# scripts/build-guest.sh and scripts/oot-module.sh. Source it after lib.sh,
# with APT_DIR (package lists, one directory per suite) and DEB_DIR (the
# downloaded .deb files) set. The system's apt configuration is never used
# or touched.
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r "$KEYRING" ]] || die "$KEYRING missing (Debian package debian-archive-keyring)"

apt_opts() { # <suite>
    local d="$APT_DIR/$1"
    printf '%s\n' \
        -o "Dir::Etc::SourceList=$d/sources.list" \
        -o "Dir::Etc::SourceParts=-" \
        -o "Dir::State::Lists=$d/lists" \
        -o "Dir::Cache=$d/cache" \
        -o "APT::Sandbox::User=root" \
        -o "Acquire::Languages=none" \
        -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false" \
        -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false" \
        -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false"
}

apt_prepare() { # <suite>: write the sources list, refresh the lists when stale
    local suite=$1 d="$APT_DIR/$1" max_age=${GUEST_APT_MAX_AGE:-24}
    [[ "$max_age" =~ ^[0-9]+$ ]] || die "GUEST_APT_MAX_AGE must be a number of hours, got '$max_age'"
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    local src="deb [signed-by=$KEYRING] http://deb.debian.org/debian"
    local want
    want="$(printf '%s\n' \
        "$src $suite main" \
        "$src $suite-updates main" \
        "deb [signed-by=$KEYRING] http://deb.debian.org/debian-security $suite-security main")"
    local stamp="$d/lists/.updated"
    if [[ ! -f "$d/sources.list" ]] || [[ "$(cat "$d/sources.list")" != "$want" ]]; then
        printf '%s\n' "$want" >"$d/sources.list"
        rm -f "$stamp"
    fi
    if [[ -f "$stamp" ]] && [[ -n "$(find "$stamp" -mmin -$((max_age * 60)) 2>/dev/null)" ]]; then
        return 0
    fi
    log "refreshing package lists for $suite"
    local -a opts
    mapfile -t opts < <(apt_opts "$suite")
    if apt-get "${opts[@]}" -q update >"$d/update.log" 2>&1 &&
        ! grep -Eq '^(E: |W: (Failed to fetch|Some index files failed))' "$d/update.log"; then
        touch "$stamp"
    elif compgen -G "$d/lists/*_Packages*" >/dev/null; then
        warn "apt-get update for $suite failed; using the lists fetched before (see $d/update.log)"
    else
        cat "$d/update.log" >&2
        die "apt-get update for $suite failed and no package lists are cached"
    fi
}

apt_q() { # <suite> <apt-cache args...>
    local suite=$1
    shift
    local -a opts
    mapfile -t opts < <(apt_opts "$suite")
    apt-cache "${opts[@]}" "$@"
}

candidates() { # <suite> <pkg>... -> "pkg version" lines (one apt-cache run)
    local suite=$1
    shift
    apt_q "$suite" policy "$@" 2>/dev/null | awk '
        /^[^ ].*:$/ { pkg = substr($0, 1, length($0) - 1) }
        /^  Candidate:/ { print pkg, $2 }'
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
        mapfile -t opts < <(apt_opts "$suite")
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
