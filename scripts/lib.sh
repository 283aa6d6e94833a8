# shellcheck shell=bash
# Shared helpers for the project's shell scripts. Source it; do not run it.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Sets REPO_ROOT (absolute path of the repository) and BUILD_DIR (absolute;
# default "$REPO_ROOT/build", override with the BUILD_DIR environment variable).

if [[ -n "${_QEMU_IXGBE_LIB_SH:-}" ]]; then
    return 0
fi
_QEMU_IXGBE_LIB_SH=1

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
BUILD_DIR="${BUILD_DIR:-$REPO_ROOT/build}"
mkdir -p "$BUILD_DIR"
BUILD_DIR="$(cd "$BUILD_DIR" && pwd -P)"
export REPO_ROOT BUILD_DIR

# Name used as the prefix of every message, e.g. "build-qemu".
LOG_NAME="$(basename "${0%.sh}")"

log() {
    printf '[%s] %s\n' "$LOG_NAME" "$*" >&2
}

warn() {
    printf '[%s] WARNING: %s\n' "$LOG_NAME" "$*" >&2
}

die() {
    printf '[%s] ERROR: %s\n' "$LOG_NAME" "$*" >&2
    exit 1
}

# The calling script's usage: its header comment (line 2 up to
# `set -euo pipefail`), without the comment marks.
header_help() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# Print the ERR location so a failing command inside a script names itself.
_lib_on_err() {
    local rc=$? cmd=$BASH_COMMAND
    printf '[%s] ERROR: command failed (exit %d) at %s:%s: %s\n' \
        "$LOG_NAME" "$rc" "${BASH_SOURCE[1]:-?}" "${BASH_LINENO[0]:-?}" "$cmd" >&2
}
trap _lib_on_err ERR

need_cmd() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 ||
            die "required command '$c' not found; run scripts/deps.sh first"
    done
}

# Non-comment, non-blank lines of the given list files (one item per line,
# '#' starts a comment), sorted and de-duplicated.
read_list_files() {
    local f
    for f in "$@"; do
        [[ -f "$f" ]] || continue
        sed -e 's/#.*//' -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' "$f"
    done | awk 'NF' | sort -u
}

# sha256 over the names and contents of the given files (missing files hash
# as absent), printed as one hex string.
hash_files() {
    local f
    for f in "$@"; do
        printf '%s\n' "${f#"$REPO_ROOT"/}"
        if [[ -f "$f" ]]; then sha256sum <"$f"; else echo absent; fi
    done | sha256sum | cut -d' ' -f1
}

# ------------------------------------------------------- private apt state
# apt-get and apt-cache against a private state directory DIR: its own
# sources list, package lists, cache and (empty) dpkg status, so that the
# host's apt configuration and lists are never used or touched. Shared by
# scripts/guest-apt.sh (build-guest.sh, oot-module.sh), scripts/build-rootfs.sh
# and scripts/debsrc.sh (fetch-qemu.sh); each writes its own
# sources.
#
#   mapfile -t opts < <(apt_state_opts DIR)    the options; then apt-get "${opts[@]}" ...
#   apt_state_lists DIR SOURCES MAX_AGE WHAT    write DIR/sources.list (SOURCES: its
#       lines), run apt-get update when they changed or the lists are older than
#       MAX_AGE hours (0: every time); when the update fails, the lists fetched
#       before are used (a warning), or it dies when there are none. WHAT names
#       the lists in messages.
#   apt_state_candidates DIR PKG...             "pkg version" lines, the version
#       apt would pick from the archive ("(none)" when it has none).
apt_state_opts() { # <dir>
    printf '%s\n' \
        -o "Dir::Etc::SourceList=$1/sources.list" \
        -o "Dir::Etc::SourceParts=-" \
        -o "Dir::State::Lists=$1/lists" \
        -o "Dir::State::status=$1/status" \
        -o "Dir::Cache=$1/cache" \
        -o "APT::Sandbox::User=root" \
        -o "Acquire::Languages=none" \
        -o "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false" \
        -o "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false" \
        -o "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false" \
        -o "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false"
}

apt_state_lists() { # <dir> <sources> <max age, hours> <what>
    local d=$1 sources=$2 max_age=$3 what=$4 stamp="$1/lists/.updated"
    [[ "$max_age" =~ ^[0-9]+$ ]] || die "apt_state_lists: the maximum age must be a number of hours, got '$max_age'"
    mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
    touch "$d/status"
    if [[ ! -f "$d/sources.list" || "$(cat "$d/sources.list")" != "$sources" ]]; then
        printf '%s\n' "$sources" >"$d/sources.list"
        rm -f "$stamp"
    fi
    if ((max_age > 0)) && [[ -f "$stamp" && -n "$(find "$stamp" -mmin -$((max_age * 60)) 2>/dev/null)" ]]; then
        return 0
    fi
    log "refreshing the package lists of $what (private apt state ${d#"$REPO_ROOT"/})"
    local -a opts
    mapfile -t opts < <(apt_state_opts "$d")
    if apt-get "${opts[@]}" -q update >"$d/update.log" 2>&1 &&
        ! grep -Eq '^(E: |W: (Failed to fetch|Some index files failed))' "$d/update.log"; then
        touch "$stamp"
    elif compgen -G "$d/lists/*_Packages*" >/dev/null || compgen -G "$d/lists/*_Sources*" >/dev/null; then
        warn "apt-get update for $what failed; using the lists fetched before (see $d/update.log)"
    else
        cat "$d/update.log" >&2
        die "apt-get update for $what failed and no package lists are cached"
    fi
}

apt_state_candidates() { # <dir> <pkg>...
    local d=$1
    shift
    local -a opts
    mapfile -t opts < <(apt_state_opts "$d")
    apt-cache "${opts[@]}" policy "$@" 2>/dev/null | awk '
        /^[^ ].*:$/ { pkg = substr($0, 1, length($0) - 1) }
        /^  Candidate:/ { print pkg, $2 }'
}

# Seconds since the epoch, for timing summaries.
now_s() {
    date +%s
}

# Format a duration in seconds as "1m23s".
fmt_duration() {
    local s=$1
    if ((s >= 60)); then
        printf '%dm%02ds' $((s / 60)) $((s % 60))
    else
        printf '%ds' "$s"
    fi
}

# The python interpreter of the project's virtualenv.
VENV_DIR="$BUILD_DIR/venv"
VENV_PYTHON="$VENV_DIR/bin/python3"
export VENV_DIR VENV_PYTHON

# QEMU as scripts/build-qemu.sh and scripts/build-series.sh configure it.
# The firmware path, searched by the binary before its own data directory:
# the project's committed boot ROMs (pc-bios/efi-ixgbe-*.rom, the devices'
# default romfile), then Debian's firmware directories (packages seabios,
# qemu-system-data, ipxe-qemu).
QEMU_FIRMWARE_DIRS=("$REPO_ROOT/pc-bios" /usr/share/qemu /usr/share/seabios /usr/lib/ipxe/qemu)

# shellcheck disable=SC2034 # used by the scripts that source this file
QEMU_CONFIGURE_ARGS=(
    --target-list=x86_64-softmmu
    --disable-docs
    --disable-werror
    --disable-download
    --enable-slirp
    --enable-numa
    --disable-gtk
    --disable-sdl
    --disable-vnc
    --disable-opengl
    --disable-spice
    --disable-xen
    --disable-rust
    --disable-install-blobs
    # No firmware is built here: use the committed ixgbe ROMs and Debian's
    # (seabios, qemu-system-data, ipxe-qemu), so the binary runs without -L
    # (qtests need this too).
    --firmwarepath="$(IFS=:; echo "${QEMU_FIRMWARE_DIRS[*]}")"
    --with-pkgversion=qemu-ixgbe
    --python="$VENV_PYTHON"
)
# Debug information: line tables only by default (file and line in
# backtraces, sanitizer reports and profiles, no variables), which takes
# about a tenth less compile time than full -g; QEMU_DEBUG_INFO=full for -g.
case "${QEMU_DEBUG_INFO:-lines}" in
lines) QEMU_CONFIGURE_ARGS+=(--disable-debug-info --extra-cflags=-g1) ;;
full) QEMU_CONFIGURE_ARGS+=(--enable-debug-info) ;;
*) die "QEMU_DEBUG_INFO must be lines or full, got '$QEMU_DEBUG_INFO'" ;;
esac

# The venv's python with the project's import roots on PYTHONPATH: the shared
# test library (tests/lib: ixgbe_testlib), the in-guest tuner (guest:
# nettune), the collection (playbooks/collections: ansible_collections.*).
# pytest gets them from pytest.ini (`pythonpath`, read here, so that the list
# is written once); a program that imports them (scripts/devvm.py,
# scripts/demo.py, tests/bench/nicbench.py, tests/guest/boot_stress.py,
# tests/tuner/{gen_trees,record_guest}.py) runs as
#   "${PROJECT_PYTHON[@]}" PROGRAM ARGS...     (from a shell: scripts/python.sh)
PROJECT_PYTHONPATH=""
read -ra _roots <<<"$(sed -n 's/^pythonpath[[:space:]]*=//p' "$REPO_ROOT/pytest.ini")"
for _root in "${_roots[@]}"; do
    PROJECT_PYTHONPATH+="${PROJECT_PYTHONPATH:+:}$REPO_ROOT/$_root"
done
unset _root _roots
# shellcheck disable=SC2034 # used by the scripts that source this file
PROJECT_PYTHON=(env "PYTHONPATH=$PROJECT_PYTHONPATH${PYTHONPATH:+:$PYTHONPATH}" "$VENV_PYTHON")

# The ASan + UBSan build made by scripts/fuzz.sh (also used by
# scripts/run-qtest.sh --sanitizer).
SANITIZER_BUILD_DIR="$BUILD_DIR/qemu-fuzz"
export SANITIZER_BUILD_DIR

# wait_for_qemu_build NAME: return once no scripts/build-qemu.sh is building
# $BUILD_DIR/NAME (qemu-build or qemu-fuzz). The test command builds the
# sanitizer QEMU in a test of its own, beside the first guest suites; a test
# that uses that build waits here rather than start on a half-built tree.
wait_for_qemu_build() {
    local lock="$BUILD_DIR/.build-qemu-dir-$1.lock"
    [[ "$1" == qemu-build ]] && lock="$BUILD_DIR/.build-qemu-dir.lock"
    [[ -e "$lock" ]] || return 0
    if ! flock -s -n "$lock" true; then
        log "waiting for the build in $BUILD_DIR/$1 to finish"
        flock -s "$lock" true
    fi
}

# QEMU's own tests (unit tests, qtests) of QEMU code the patch series changes
# (ninja targets of the QEMU build): scripts/build-qemu.sh builds them and
# scripts/run-qtest.sh runs them with the ixgbe qtests.
# shellcheck disable=SC2034 # used by the scripts that source this file
QEMU_UNIT_TESTS=(
    tests/unit/test-crypto-aead # qemu-patches/fixes: crypto/aead, AES-GCM
    tests/qtest/i2c-bus-test # qemu-patches/fixes: hw/i2c, bus state unregistered when freed
    tests/unit/test-io-task # qemu-patches/fixes: io/task, results at default priority
    tests/unit/test-ixgbe-iov # the model's iovec walk and CRC
    tests/unit/test-ixgbe-rx-hdrs # the model's receive header classifier against net_rx_pkt
    tests/unit/test-net-checksum # qemu-patches/fixes: net/checksum, 32 bits at a time
    tests/unit/test-net-tx-pkt # qemu-patches/fixes: net_tx_pkt, UDP segmentation
    tests/qtest/pcie-sriov-test # qemu-patches/fixes: pcie_sriov, NumVFs on load
)

# Export ASAN_OPTIONS and UBSAN_OPTIONS so that any sanitizer report ends
# the process with an error and a symbolized stack trace. With a directory
# argument, reports are also written to files there (asan.PID, ubsan.PID),
# whoever prints them; sanitizer_reports lists them. Leak checking follows
# SANITIZER_DETECT_LEAKS (default 0).
sanitizer_env() {
    local dir=${1:-} sym common
    sym="$(command -v llvm-symbolizer || true)"
    common="halt_on_error=1:abort_on_error=0:print_stacktrace=1:symbolize=1"
    [[ -n "$sym" ]] && common+=":external_symbolizer_path=$sym"
    ASAN_OPTIONS="$common:detect_leaks=${SANITIZER_DETECT_LEAKS:-0}"
    UBSAN_OPTIONS="$common"
    if [[ -n "$dir" ]]; then
        ASAN_OPTIONS+=":log_path=$dir/asan"
        UBSAN_OPTIONS+=":log_path=$dir/ubsan"
    fi
    export ASAN_OPTIONS UBSAN_OPTIONS
    if [[ -n "$sym" ]]; then
        export ASAN_SYMBOLIZER_PATH="$sym"
    fi
}

# The files of sanitizer_env DIR that hold a report, one a line (warnings
# alone, such as ASan's about QEMU's coroutine stack switching, are not).
sanitizer_reports() {
    find "$1" -maxdepth 1 -type f \( -name 'asan.*' -o -name 'ubsan.*' \) -size +0 \
        -exec grep -lE 'ERROR: [A-Za-z]+Sanitizer|runtime error:|SUMMARY: [A-Za-z]+Sanitizer' {} + 2>/dev/null | sort
}

# ------------------------------------------------- guest image variants
# Debian packages installed with --no-install-recommends into a copy of a
# package stage (a chroot with proc, sys and devpts mounted, daemons kept from
# starting by policy-rc.d), for the guest image's variants
# (scripts/build-rootfs-libvirt.sh).
#
#   variant_packages SRC NEW DEBS LOG PKG...   copy the tree SRC to NEW and
#       install PKG... in it (.debs cached in DEBS, apt's output in LOG); write
#       NEW.packages ("name version" lines). SSH host keys are left out (an
#       image makes its own). Dies on failure, leaving no mount behind.
variant_packages() { # <src> <new> <debs> <log> <pkg>...
    local src=$1 new=$2 debs=$3 logf=$4 fs f archives
    shift 4
    local -a mounts=()
    _variant_umount() {
        local i
        for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
            umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null || true
        done
        mounts=()
    }
    _variant_chroot() {
        chroot "$new" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
            DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true "$@"
    }
    rm -rf --one-file-system "$new"
    mkdir -p "$debs"
    cp -a "$src" "$new"
    trap _variant_umount EXIT
    for fs in proc:proc sysfs:sys devpts:dev/pts; do
        mkdir -p "$new/${fs#*:}"
        mount -t "${fs%%:*}" "${fs%%:*}" "$new/${fs#*:}" -o nosuid,nodev,noexec ||
            die "cannot mount ${fs%%:*} in $new"
        mounts+=("$new/${fs#*:}")
    done
    printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
    chmod 0755 "$new/usr/sbin/policy-rc.d"
    rm -f "$new/etc/resolv.conf"
    cp -L /etc/resolv.conf "$new/etc/resolv.conf" 2>/dev/null || true
    archives="$new/var/cache/apt/archives"
    mkdir -p "$archives/partial"
    find "$debs" -maxdepth 1 -name '*.deb' -exec cp -l -n -t "$archives/" {} + 2>/dev/null || true
    {
        _variant_chroot apt-get -q update &&
            _variant_chroot apt-get -q -y -o Dpkg::Options::=--force-confold --no-install-recommends \
                install "$@"
    } >"$logf" 2>&1 || {
        _variant_umount
        tail -n 40 "$logf" >&2
        die "installing the variant's packages failed (see above and $logf)"
    }
    for f in "$archives"/*.deb; do
        [[ -e "$f" && ! -e "$debs/${f##*/}" ]] && { cp -l "$f" "$debs/" 2>/dev/null || cp "$f" "$debs/"; }
    done
    _variant_chroot apt-get -q clean >/dev/null
    rm -rf "$new"/var/lib/apt/lists/* "$new"/var/cache/apt/*.bin "$new/usr/sbin/policy-rc.d"
    mkdir -p "$new/var/lib/apt/lists/partial"
    rm -f "$new/etc/resolv.conf"
    : >"$new/etc/resolv.conf"
    rm -f "$new"/etc/ssh/ssh_host_*
    _variant_umount
    trap - EXIT
    # shellcheck disable=SC2016 # dpkg-query's own format
    _variant_chroot dpkg-query -W -f '${Package} ${Version}\n' | LC_ALL=C sort >"$new.packages"
}
