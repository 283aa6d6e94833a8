#!/usr/bin/env bash
# Run the kernel's own NIC selftests (tools/testing/selftests/drivers/net and
# drivers/net/hw) against emulated NICs, two ports of one model wired back to
# back, and print a table of every test case (ok / fail / skip):
#
#   scripts/netdev-selftests.sh [--models ixgbe,igb,virtio] [--kernel 6.12] [options]
#
# In the guest, port 0 stays in the root namespace (NETIF, LOCAL_V4/V6) and
# port 1 moves to the network namespace "remote" (REMOTE_TYPE=netns,
# REMOTE_ARGS=remote, REMOTE_V4/V6), the setup the netdev CI uses for
# virtio-net; the forwarding-library tests of drivers/net/hw then get both
# ports in the root namespace (NETIFS). See docs/netdev-selftests.md.
#
# The selftests come from Debian's linux-source package of the guest image's
# own kernel (scripts/build-guest.sh): the first run downloads it, unpacks
# tools/ and Documentation/netlink/ and runs
#   make -C tools/testing/selftests TARGETS="drivers/net drivers/net/hw" install
# as the kernel's Makefiles build them (helpers such as net/lib/csum compiled
# on this host), then packs the installed tree with a Python, PyYAML, socat,
# jq, bash, coreutils, devlink and mausezahn from this host's Debian release
# and the ethtool of the kernel's own release into a second initramfs archive
# loaded on top of the guest image. All of it is cached in
# $BUILD_DIR/netdev-selftests/<kernel release>/; later runs only boot.
#
# Options (all but the first group go to scripts/netdev_selftests.py):
#   --kernel 6.1|6.12     guest image and its kernel's selftests (default 6.12)
#   --linux-src DIR       take the selftests from this kernel source tree
#                         instead of the Debian package (another kernel's
#                         selftests against the guest image's kernel; the
#                         guest kernel itself: GUEST_KERNEL_PKG, see
#                         scripts/build-guest.sh)
#   --prepare-only        build the cache and print the overlay's path
#   --models LIST         comma-separated: ixgbe, ixgbe-sfp, igb, e1000e, virtio
#   --tests LIST          test programs (ping.py, hw/csum.py, ...); default all
#   --ci                  the fixed short subset CI runs (fails on any case
#                         not ok; see docs/netdev-selftests.md)
#   --markdown FILE       also write the table as Markdown
#   --json FILE           also write the results as JSON
#   --timeout S           seconds per test program (default 900; 240 with --ci)
# Exit status: 0 when every case ran (failures are results, not errors; with
# --ci: when every case of the subset is ok); 1 otherwise; 2 bad input.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KERNEL=6.12
LINUX_SRC=""
PREPARE_ONLY=0
PASS=()
while (($#)); do
    case "$1" in
        --kernel) [[ $# -ge 2 ]] || die "--kernel needs a value"; KERNEL=$2; PASS+=("$1" "$2"); shift 2 ;;
        --linux-src) [[ $# -ge 2 ]] || die "--linux-src needs a value"; LINUX_SRC=$2; shift 2 ;;
        --prepare-only) PREPARE_ONLY=1; shift ;;
        -h | --help) header_help; exit 0 ;;
        *) PASS+=("$1"); shift ;;
    esac
done
case "$KERNEL" in
    6.1) KSUITE=bookworm ;;
    6.12) KSUITE=trixie ;;
    *) printf '[netdev-selftests] ERROR: unknown kernel "%s" (expected 6.1 or 6.12)\n' "$KERNEL" >&2; exit 2 ;;
esac
need_cmd apt-get dpkg-deb tar xz zstd make gcc rsync cpio gzip ldd sha256sum flock depmod modprobe

MANIFEST="$BUILD_DIR/guest/$KERNEL/manifest.txt"
[[ -f "$MANIFEST" ]] || die "$MANIFEST missing: run scripts/build-guest.sh $KERNEL first"
KREL=$(sed -n 's/^kernel-release //p' "$MANIFEST")
read -r KPKG KVER < <(sed -n 's/^kernel-package //p' "$MANIFEST")
SRCPKG="linux-source-$KERNEL"
HOST_SUITE="$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")"

CACHE="$BUILD_DIR/netdev-selftests/$KREL"
DEB_DIR="$BUILD_DIR/netdev-selftests/debs"
APT_DIR="$BUILD_DIR/guest/apt"
mkdir -p "$CACHE" "$DEB_DIR"
exec 8>"$CACHE/.lock"
flock 8

# The guest's extra userland, from this host's release (the guest image's
# userland is too: its libraries resolve against this host's, as in
# scripts/build-guest.sh).
USER_PKGS=(python3.11-minimal libpython3.11-minimal libpython3.11-stdlib python3-yaml
    libyaml-0-2 socat jq libjq1 libonig5 bash coreutils iproute2
    netsniff-ng libcli1.10 libnet1 liburcu8 libnl-genl-3-200 libgeoip1 libnetfilter-conntrack3 libnfnetlink0)
USER_BINS=(usr/bin/python3.11 usr/bin/socat usr/bin/jq bin/bash sbin/devlink usr/sbin/mausezahn)
# ethtool of the kernel's own release: the selftests call options (--json
# with -c, -x, context) newer than the guest image's ethtool has. Taken only
# while it runs on this host's C library (checked below).
KSUITE_PKGS=(ethtool)
# Kernel modules the tests need that the guest image leaves out, loaded by
# scripts/netdev_selftests.py before the tests (the forwarding library's VRFs).
EXTRA_MODULES=(vrf sch_ingress cls_flower act_gact act_mirred)

# ------------------------------------------------------------ the packages
exec 9>"$BUILD_DIR/guest/.lock" # the private apt state is build-guest.sh's
flock 9
# shellcheck source=scripts/guest-apt.sh
. "$REPO_ROOT/scripts/guest-apt.sh"
apt_prepare "$HOST_SUITE"
declare -A UVER=()
resolve_versions UVER "$HOST_SUITE" "${USER_PKGS[@]}"
for p in "${USER_PKGS[@]}"; do fetch_deb "$HOST_SUITE" "$p" "${UVER[$p]}"; done
apt_prepare "$KSUITE"
declare -A KSVER=()
resolve_versions KSVER "$KSUITE" "${KSUITE_PKGS[@]}"
for p in "${KSUITE_PKGS[@]}"; do fetch_deb "$KSUITE" "$p" "${KSVER[$p]}"; done
[[ -n "$LINUX_SRC" ]] || fetch_deb "$KSUITE" "$SRCPKG" "$KVER"
exec 9>&-

# ------------------------------------------------- the selftests, installed
if [[ -n "$LINUX_SRC" ]]; then
    [[ -f "$LINUX_SRC/tools/testing/selftests/drivers/net/Makefile" ]] ||
        die "$LINUX_SRC is not a kernel source tree (no tools/testing/selftests/drivers/net)"
    SRC=$(cd "$LINUX_SRC" && pwd -P)
    SRC_ID="tree $SRC" # rebuilt (make is incremental) and repacked on every run
else
    SRC="$CACHE/src/$SRCPKG"
    SRC_ID="package $SRCPKG $KVER"
fi
KSFT="$CACHE/ksft"
KSFT_STAMP="$(printf '%s\n' "$SRC_ID" "$(hash_files "${BASH_SOURCE[0]}")" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$CACHE/ksft.stamp" || "$(cat "$CACHE/ksft.stamp")" != "$KSFT_STAMP" || -n "$LINUX_SRC" ]]; then
    T0=$(now_s)
    if [[ -z "$LINUX_SRC" && ! -f "$SRC/include/uapi/linux/ethtool.h" ]]; then
        log "unpacking tools/ and Documentation/netlink/ from $SRCPKG $KVER"
        rm -rf "$CACHE/src"
        mkdir -p "$CACHE/src"
        dpkg-deb --fsys-tarfile "$(deb_file "$SRCPKG" "$KVER")" |
            tar -xO "./usr/src/$SRCPKG.tar.xz" |
            tar -xJ -C "$CACHE/src" "$SRCPKG/tools" "$SRCPKG/Documentation/netlink" \
                "$SRCPKG/scripts" "$SRCPKG/Makefile" "$SRCPKG/include/uapi/linux/ethtool.h"
    fi
    log "building and installing drivers/net drivers/net/hw from $SRC_ID"
    rm -rf "$KSFT"
    if ! make -C "$SRC/tools/testing/selftests" TARGETS="drivers/net drivers/net/hw" \
        install INSTALL_PATH="$KSFT" >"$CACHE/make.log" 2>&1; then
        tail -n 30 "$CACHE/make.log" >&2
        die "the selftests' build failed (full log: $CACHE/make.log)"
    fi
    [[ -x "$KSFT/drivers/net/ping.py" ]] || die "no drivers/net/ping.py in $KSFT after make install"
    printf '%s\n' "$KSFT_STAMP" >"$CACHE/ksft.stamp"
    rm -f "$CACHE/overlay.stamp"
    log "selftests built in $(fmt_duration $(($(now_s) - T0)))"
fi

# --------------------------------------------------------------- the overlay
OVERLAY="$CACHE/overlay.cpio.gz"
OV_STAMP="$(
    {
        cat "$CACHE/ksft.stamp"
        hash_files "${BASH_SOURCE[0]}"
        for p in "${USER_PKGS[@]}"; do printf '%s %s\n' "$p" "${UVER[$p]}"; done
        for p in "${KSUITE_PKGS[@]}"; do printf '%s %s\n' "$p" "${KSVER[$p]}"; done
        printf '%s\n' "$KPKG $KVER" "${EXTRA_MODULES[@]}"
    } | sha256sum | cut -d' ' -f1
)"
if [[ ! -f "$CACHE/overlay.stamp" || "$(cat "$CACHE/overlay.stamp")" != "$OV_STAMP" || ! -s "$OVERLAY" ]]; then
    T0=$(now_s)
    WORK="$CACHE/work"
    rm -rf "$WORK"
    mkdir -p "$WORK/user" "$WORK/root"
    ROOT="$WORK/root"
    for p in "${USER_PKGS[@]}"; do dpkg-deb -x "$(deb_file "$p" "${UVER[$p]}")" "$WORK/user"; done
    mkdir -p "$ROOT/usr/bin" "$ROOT/bin" "$ROOT/lib/x86_64-linux-gnu"
    # The guest image has /usr/lib -> /lib: the overlay's files go under lib/.
    cp -a "$WORK/user/usr/lib/python3.11" "$ROOT/lib/python3.11"
    rm -rf "$ROOT/lib/python3.11"/{test,idlelib,tkinter,turtledemo,ensurepip,lib2to3,pydoc_data,config-3.11-x86_64-linux-gnu}
    find "$ROOT/lib/python3.11" -name __pycache__ -prune -exec rm -rf {} +
    mkdir -p "$ROOT/lib/python3"
    cp -a "$WORK/user/usr/lib/python3/dist-packages" "$ROOT/lib/python3/"
    for d in lib usr/lib; do
        [[ -d "$WORK/user/$d/x86_64-linux-gnu" ]] && cp -a "$WORK/user/$d/x86_64-linux-gnu/." "$ROOT/lib/x86_64-linux-gnu/"
    done
    find "$ROOT/lib/x86_64-linux-gnu" -mindepth 1 -maxdepth 1 ! -name '*.so*' -exec rm -rf {} +
    for b in "${USER_BINS[@]}"; do install -m 0755 "$WORK/user/$b" "$ROOT/usr/bin/${b##*/}"; done
    mkdir -p "$WORK/ks"
    for p in "${KSUITE_PKGS[@]}"; do dpkg-deb -x "$(deb_file "$p" "${KSVER[$p]}")" "$WORK/ks"; done
    install -m 0755 "$WORK/ks/usr/sbin/ethtool" "$ROOT/usr/bin/ethtool"
    "$ROOT/usr/bin/ethtool" --version >/dev/null 2>&1 ||
        die "ethtool ${KSVER[ethtool]} of Debian $KSUITE does not run on this host's C library"
    ln -s python3.11 "$ROOT/usr/bin/python3"
    # GNU coreutils in place of busybox's applets (the tests use options
    # such as readlink -e and mktemp -u that busybox lacks)
    # ($PATH has /usr/bin first; /bin/<name> names the same program)
    while read -r f; do
        install -m 0755 "$WORK/user/$f" "$ROOT/usr/bin/${f##*/}"
        ln -sf "/usr/bin/${f##*/}" "$ROOT/bin/${f##*/}"
    done < <(dpkg-deb -c "$(deb_file coreutils "${UVER[coreutils]}")" |
        awk '$1 ~ /^-..x/ && $6 ~ /^\.\/(usr\/)?bin\// {sub(/^\.\//, "", $6); print $6}')
    ln -s /usr/bin/bash "$ROOT/bin/bash"
    # Every library the programs and Python's extension modules need that
    # neither the packages nor the guest image carry: this host's copy
    # (the same Debian release).
    ldpath="$ROOT/lib/x86_64-linux-gnu"
    while IFS= read -r f; do
        out="$(LD_LIBRARY_PATH="$ldpath" ldd "$f" 2>&1)" || continue
        if [[ "$out" == *"not found"* && "$f" == */lib-dynload/* ]]; then
            rm -f "$f" # an extension module of a library the guest does without (gdbm, tk, ...)
            continue
        fi
        while IFS= read -r line; do
            case "$line" in
                *"not found"*) die "$f: library not found: $line" ;;
                *"=> /"*) lib="${line#*=> }" ;;
                *) continue ;;
            esac
            lib="${lib%% (*}"
            [[ "$lib" == "$ROOT"/* ]] && continue
            dst="$ROOT/lib/x86_64-linux-gnu/${lib##*/}"
            [[ -e "$dst" ]] || cp -L "$lib" "$dst"
        done <<<"$out"
    done < <(find "$ROOT/bin" "$ROOT/usr/bin" "$ROOT/lib" -type f \( -perm -u+x -o -name '*.so*' \) | LC_ALL=C sort)
    cp -a "$KSFT" "$ROOT/ksft"
    # ethtool_lib.sh reads the link modes from the kernel's UAPI header
    mkdir -p "$ROOT/usr/include/linux"
    cp "$SRC/include/uapi/linux/ethtool.h" "$ROOT/usr/include/linux/"
    # their dependency closure, in load order (modprobe --show-depends)
    mkdir -p "$WORK/kernel" "$ROOT/ksft-modules"
    kdeb=$(compgen -G "$BUILD_DIR/guest/debs/${KPKG}_${KVER//:/%3a}_*.deb" | head -n1) ||
        die "the guest kernel's package $KPKG $KVER is not in $BUILD_DIR/guest/debs (rebuild the guest image)"
    # (the networking part of the module tree holds them and what they need)
    dpkg-deb --fsys-tarfile "$kdeb" | tar -x -C "$WORK/kernel" --wildcards \
        '*/modules/*/kernel/net/*' '*/modules/*/kernel/drivers/net/*' '*/modules/*/kernel/lib/*' \
        '*/modules/*/modules.*'
    MODBASE=$WORK/kernel/lib/modules
    [[ -d "$MODBASE/$KREL" ]] || MODBASE=$WORK/kernel/usr/lib/modules
    mkdir -p "$WORK/kbase/lib/modules"
    ln -s "$MODBASE/$KREL" "$WORK/kbase/lib/modules/$KREL"
    depmod -b "$WORK/kbase" "$KREL"
    : >"$ROOT/ksft-modules/load-order"
    for m in "${EXTRA_MODULES[@]}"; do
        modprobe -d "$WORK/kbase" -S "$KREL" --show-depends "$m" >"$WORK/deps" 2>&1 || die "module $m: $(cat "$WORK/deps")"
        while read -r kind f _; do
            [[ "$kind" == insmod ]] || continue
            name=${f##*/}
            name=${name%%.ko*}.ko
            grep -qx "$name" "$ROOT/ksft-modules/load-order" && continue
            case "$f" in
                *.ko) cp "$f" "$ROOT/ksft-modules/$name" ;;
                *.ko.xz) xz -dc "$f" >"$ROOT/ksft-modules/$name" ;;
                *.ko.zst) zstd -q -dc "$f" >"$ROOT/ksft-modules/$name" ;;
                *) die "unknown module file type: $f" ;;
            esac
            printf '%s\n' "$name" >>"$ROOT/ksft-modules/load-order"
        done <"$WORK/deps"
    done
    SDE=1700000000
    find "$ROOT" -exec touch -h -d "@$SDE" {} +
    (cd "$ROOT" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --quiet --null -o -H newc --owner=0:0 --reproducible) | gzip -n -6 >"$OVERLAY.tmp"
    mv "$OVERLAY.tmp" "$OVERLAY"
    printf '%s\n' "$OV_STAMP" >"$CACHE/overlay.stamp"
    rm -rf "$WORK"
    log "overlay built in $(fmt_duration $(($(now_s) - T0))): $(($(stat -c %s "$OVERLAY") / 1024)) KiB"
fi

if ((PREPARE_ONLY)); then
    printf '%s\n' "$OVERLAY"
    exit 0
fi
[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing: run scripts/deps.sh first"
exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/scripts/netdev_selftests.py" --overlay "$OVERLAY" \
    --ksft "$KSFT" "${PASS[@]}"
