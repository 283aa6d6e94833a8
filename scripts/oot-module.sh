#!/usr/bin/env bash
# Build an Intel NIC driver out of tree for the guest image's exact Debian
# kernel, from Debian's own kernel source, so that it loads in the test VM:
#
#   scripts/oot-module.sh [--kernel 6.1] [--module ixgbe|ixgbevf] [--src DIR]
#
# Prints the path of the built .ko on stdout. Then, e.g.:
#   scripts/devvm.sh --module "$(scripts/oot-module.sh)" -- 'dmesg | grep ixgbe'
#
# The first run fetches, for the kernel of $BUILD_DIR/guest/<kernel>/
# (scripts/build-guest.sh), the packages of exactly that version:
# linux-headers-<abi>-amd64, linux-headers-<abi>-common, linux-kbuild-<ver>
# and linux-source-<ver>; it unpacks the headers (no installation: the
# system is not touched) and the driver's directory of the source into
# $BUILD_DIR/oot/<release>/. Later runs only compile.
#
#   --src DIR   build this driver source (a copy you edited) instead of the
#               pristine one, $BUILD_DIR/oot/<release>/src/<module>, which
#               --prepare-only prints
#   --prepare-only  fetch and unpack, print the pristine source directory
#
# Needs the compiler the kernel was built with (gcc-12 for Debian 12's 6.1).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    sed -n '2,22p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

KERNEL=6.1
MODULE=ixgbe
SRC=""
PREPARE_ONLY=0
while (($#)); do
    case "$1" in
        --kernel) [[ $# -ge 2 ]] || usage; KERNEL=$2; shift 2 ;;
        --module) [[ $# -ge 2 ]] || usage; MODULE=$2; shift 2 ;;
        --src) [[ $# -ge 2 ]] || usage; SRC=$2; shift 2 ;;
        --prepare-only) PREPARE_ONLY=1; shift ;;
        -h | --help) usage ;;
        *) printf '[oot-module] ERROR: unknown argument %s\n' "$1" >&2; usage ;;
    esac
done
case "$KERNEL" in
    6.1) SUITE=bookworm ;;
    6.12) SUITE=trixie ;;
    *) die "unknown kernel '$KERNEL' (expected 6.1 or 6.12)" ;;
esac
case "$MODULE" in
    ixgbe | ixgbevf) ;;
    *) die "unknown module '$MODULE' (expected ixgbe or ixgbevf)" ;;
esac
need_cmd apt-get apt-cache dpkg-deb tar xz make sed

MANIFEST="$BUILD_DIR/guest/$KERNEL/manifest.txt"
[[ -f "$MANIFEST" ]] || die "$MANIFEST missing: run scripts/build-guest.sh $KERNEL first"
KREL=$(sed -n 's/^kernel-release //p' "$MANIFEST")
read -r KPKG KVER < <(sed -n 's/^kernel-package //p' "$MANIFEST")
ABI=${KPKG#linux-image-}        # 6.1.0-56-amd64
ABI_COMMON=${ABI%-amd64}-common # 6.1.0-56-common
SRCPKG="linux-source-$KERNEL"

OOT="$BUILD_DIR/oot/$KREL"
HEADERS="$OOT/usr/src/linux-headers-$ABI"
PRISTINE="$OOT/src/$MODULE"
APT_DIR="$BUILD_DIR/guest/apt"
DEB_DIR="$BUILD_DIR/oot/debs"
mkdir -p "$OOT" "$DEB_DIR"
# One run at a time per kernel: suites that run side by side (devloop,
# ansible's test_ci_vm.py) may both prepare or build here.
need_cmd flock
exec 8>"$OOT/.lock"
flock 8

# ------------------------------------------------------------------ prepare
if [[ ! -f "$OOT/.prepared" ]]; then
    T0=$(now_s)
    exec 9>"$BUILD_DIR/guest/.lock" # the private apt state is build-guest.sh's
    flock 9
    # shellcheck source=scripts/guest-apt.sh
    . "$REPO_ROOT/scripts/guest-apt.sh"
    apt_prepare "$SUITE"
    KBUILD=$(apt_q "$SUITE" show "linux-headers-$ABI=$KVER" 2>/dev/null |
        sed -n 's/^Depends:.*\(linux-kbuild-[^ ,]*\).*/\1/p' | head -n1)
    [[ -n "$KBUILD" ]] || die "linux-headers-$ABI $KVER is not in Debian $SUITE's package lists" \
        "(the guest kernel $KPKG $KVER may be gone from the archive: rebuild the guest image)"
    for p in "linux-headers-$ABI" "linux-headers-$ABI_COMMON" "$KBUILD" "$SRCPKG"; do
        fetch_deb "$SUITE" "$p" "$KVER"
    done
    exec 9>&-
    rm -rf "${OOT:?}/usr" "${OOT:?}/src"
    for p in "linux-headers-$ABI" "linux-headers-$ABI_COMMON" "$KBUILD"; do
        dpkg-deb -x "$(deb_file "$p" "$KVER")" "$OOT"
    done
    # The arch headers' Makefile includes the common one by its installed
    # (absolute) path; point it at the unpacked copy.
    sed -i "s|^include /usr/src/|include $OOT/usr/src/|" "$HEADERS/Makefile"
    log "unpacking drivers/net/ethernet/intel/{ixgbe,ixgbevf} from $SRCPKG $KVER"
    mkdir -p "$OOT/src"
    dpkg-deb --fsys-tarfile "$(deb_file "$SRCPKG" "$KVER")" |
        tar -xO "./usr/src/$SRCPKG.tar.xz" |
        tar -xJ -C "$OOT/src" --strip-components=5 \
            "$SRCPKG/drivers/net/ethernet/intel/ixgbe" "$SRCPKG/drivers/net/ethernet/intel/ixgbevf"
    [[ -f "$OOT/src/ixgbe/ixgbe_main.c" ]] || die "the ixgbe source is missing from $SRCPKG"
    touch "$OOT/.prepared"
    log "kernel headers and driver source for $KREL ready in $(fmt_duration $(($(now_s) - T0))): ${OOT#"$REPO_ROOT"/}"
fi
if ((PREPARE_ONLY)); then
    printf '%s\n' "$PRISTINE"
    exit 0
fi

# -------------------------------------------------------------------- build
CC=$(sed -n 's/^CC = .*)\(gcc[-0-9]*\)$/\1/p' "$HEADERS/.kernelvariables")
[[ -n "$CC" ]] || CC=gcc
command -v "$CC" >/dev/null ||
    die "kernel $KREL was built with $CC, which is not installed (apt-get install $CC)"
DIR=${SRC:-$PRISTINE}
[[ -f "$DIR/Makefile" ]] || die "$DIR has no Makefile: --src takes the driver's directory"
DIR=$(cd "$DIR" && pwd -P)
log "building $MODULE for $KREL in $DIR"
if ! make -C "$HEADERS" M="$DIR" -j"$(nproc)" modules >"$DIR/build.log" 2>&1; then
    tail -n 30 "$DIR/build.log" >&2
    die "the module build failed (full log: $DIR/build.log)"
fi
[[ -f "$DIR/$MODULE.ko" ]] || die "no $MODULE.ko in $DIR after the build (see $DIR/build.log)"
printf '%s\n' "$DIR/$MODULE.ko"
