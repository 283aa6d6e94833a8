#!/usr/bin/env bash
# Build the test guest: a Debian kernel plus a small busybox initramfs whose
# init runs a command agent on the serial console (scripts/guest/).
#
#   scripts/build-guest.sh <kernel>        kernel: 6.1 (Debian 12) or 6.12 (Debian 13)
#
# Output: $BUILD_DIR/guest/<kernel>/{vmlinuz,initrd.img,manifest.txt}
#
# Everything comes from Debian packages, downloaded with `apt-get download`
# (never installed) against a private apt state under $BUILD_DIR/guest/apt/,
# so the system's apt configuration is never touched:
#   - the kernel: linux-image-amd64 of the kernel's release, resolved to the
#     exact linux-image-<abi>-amd64 package it depends on;
#   - busybox-static, dash (/bin/sh), and ethtool, iperf3, iproute2 (ip, ss,
#     tc), iputils-ping, linuxptp (ptp4l, phc2sys, phc_ctl, hwstamp_ctl)
#     from the host's release, copied with their shared libraries (ldd).
# Kernel modules (NIC drivers and their dependency closure) are copied
# decompressed, with a modules.dep made by depmod, so the guest's
# modprobe/rmmod can load and unload them. Nothing is loaded at boot unless
# the kernel command line asks for it (guest.net=dhcp, guest.modules=...:
# see scripts/guest/init).
#
# The image is rebuilt only when its inputs change: this script, the files in
# scripts/guest/, and the exact package versions chosen.
#
# Environment:
#   BUILD_DIR             build directory (default: <repo>/build)
#   GUEST_KERNEL_PKG      exact kernel package to use instead of the one
#                         linux-image-amd64 depends on (e.g. linux-image-6.1.0-56-amd64)
#   GUEST_EXTRA_MODULES   space-separated extra modules to include
#   GUEST_APT_MAX_AGE     refresh the private package lists when older than
#                         this many hours (default 24; 0 = always)
#   GUEST_FORCE=1         rebuild even when the stamp is current
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    cat >&2 <<EOF
usage: scripts/build-guest.sh <kernel>
  kernel: 6.1  (Debian 12 bookworm, linux-image-6.1.0-*-amd64)
          6.12 (Debian 13 trixie,   linux-image-6.12.*-amd64)
EOF
    exit 2
}

[[ $# -eq 1 ]] || usage
KERNEL="$1"
case "$KERNEL" in
    6.1) KSUITE=bookworm ;;
    6.12) KSUITE=trixie ;;
    -h | --help) usage ;;
    *)
        printf '[build-guest] ERROR: unknown kernel "%s" (expected 6.1 or 6.12)\n' "$KERNEL" >&2
        usage
        ;;
esac

need_cmd apt-get apt-cache dpkg-deb depmod modprobe cpio gzip xz zstd ldd sha256sum find sort

T0=$(now_s)
GUEST_DIR="$BUILD_DIR/guest"
OUT_DIR="$GUEST_DIR/$KERNEL"
APT_DIR="$GUEST_DIR/apt"
DEB_DIR="$GUEST_DIR/debs"
GUEST_SRC="$REPO_ROOT/scripts/guest"
mkdir -p "$GUEST_DIR" "$APT_DIR" "$DEB_DIR"

# One build at a time: builds of both kernels share the package lists and
# the .deb cache (meson may start them together).
need_cmd flock
exec 9>"$GUEST_DIR/.lock"
if ! flock -n 9; then
    log "waiting for another build-guest.sh to finish"
    flock 9
fi

# The userland comes from the host's own release so that ldd resolves the
# binaries' libraries to compatible host copies.
HOST_SUITE="$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")"
case "$HOST_SUITE" in
    bookworm | trixie) ;;
    *) die "host release '${HOST_SUITE:-unknown}' is not supported (expected Debian bookworm or trixie)" ;;
esac

# Modules the tests load on demand; their dependencies are added below.
MODULES=(ixgbe ixgbevf igb igbvf e1000e virtio_net virtio_pci veth 8021q macvlan)
read -r -a EXTRA <<<"${GUEST_EXTRA_MODULES:-}"
MODULES+=("${EXTRA[@]}")

# Userland packages and the files taken from them (package-relative paths).
# dash is /bin/sh: busybox's own shell runs its applets in preference to
# $PATH, which would shadow the real ip/ping with busybox's reduced ones.
USER_PKGS=(busybox-static dash ethtool iperf3 libiperf0 iproute2 iputils-ping linuxptp)
USER_BINS=(dash ethtool iperf3 ip ss tc ping ptp4l phc2sys phc_ctl hwstamp_ctl)

# ---------------------------------------------------------------- private apt
# shellcheck source=scripts/guest-apt.sh
. "$REPO_ROOT/scripts/guest-apt.sh"

apt_prepare "$KSUITE"
[[ "$HOST_SUITE" == "$KSUITE" ]] || apt_prepare "$HOST_SUITE"

# ---------------------------------------------------------- resolve versions
if [[ -n "${GUEST_KERNEL_PKG:-}" ]]; then
    KPKG="$GUEST_KERNEL_PKG"
else
    KPKG="$(apt_q "$KSUITE" depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-/ {print $2; exit}')"
    [[ -n "$KPKG" ]] || die "cannot resolve linux-image-amd64 in Debian $KSUITE"
fi
case "$KERNEL:$KPKG" in
    6.1:linux-image-6.1.*-amd64 | 6.12:linux-image-6.12.*-amd64) ;;
    *) die "kernel package '$KPKG' does not match kernel $KERNEL (expected linux-image-$KERNEL.*-amd64)" ;;
esac
KVER_PKG="$(candidates "$KSUITE" "$KPKG" | awk -v p="$KPKG" '$1 == p {print $2}')"
[[ -n "$KVER_PKG" && "$KVER_PKG" != "(none)" ]] || die "package '$KPKG' not found in Debian $KSUITE"

declare -A UVER=()
resolve_versions UVER "$HOST_SUITE" "${USER_PKGS[@]}"

# ---------------------------------------------------------------- the stamp
PKG_LIST="$(
    printf '%s %s %s\n' "$KSUITE" "$KPKG" "$KVER_PKG"
    for p in "${USER_PKGS[@]}"; do printf '%s %s %s\n' "$HOST_SUITE" "$p" "${UVER[$p]}"; done
    printf 'modules %s\n' "${MODULES[*]}"
)"
mapfile -t SCRIPT_FILES < <(find "$GUEST_SRC" -type f | LC_ALL=C sort)
STAMP="$(
    {
        hash_files "$REPO_ROOT/scripts/build-guest.sh" "$REPO_ROOT/scripts/lib.sh" \
            "$REPO_ROOT/scripts/guest-apt.sh" "${SCRIPT_FILES[@]}"
        printf '%s\n' "$PKG_LIST"
    } | sha256sum | cut -d' ' -f1
)"

if [[ "${GUEST_FORCE:-0}" != 1 && -f "$OUT_DIR/stamp" && "$(cat "$OUT_DIR/stamp")" == "$STAMP" &&
    -s "$OUT_DIR/vmlinuz" && -s "$OUT_DIR/initrd.img" ]]; then
    log "guest $KERNEL is up to date: $(sed -n 's/^kernel-release //p' "$OUT_DIR/manifest.txt") ($OUT_DIR)"
    exit 0
fi

# ----------------------------------------------------------------- download
fetch_deb "$KSUITE" "$KPKG" "$KVER_PKG"
for p in "${USER_PKGS[@]}"; do fetch_deb "$HOST_SUITE" "$p" "${UVER[$p]}"; done

# ------------------------------------------------------------------ unpack
WORK="$GUEST_DIR/work-$KERNEL"
rm -rf "$WORK"
mkdir -p "$WORK/kernel" "$WORK/user" "$WORK/root"
ROOT="$WORK/root"
log "unpacking $KPKG $KVER_PKG"
dpkg-deb -x "$(deb_file "$KPKG" "$KVER_PKG")" "$WORK/kernel"
for p in "${USER_PKGS[@]}"; do
    dpkg-deb -x "$(deb_file "$p" "${UVER[$p]}")" "$WORK/user"
done

# The kernel release (uname -r) is the single directory under modules/.
MODBASE=""
for d in "$WORK/kernel/lib/modules" "$WORK/kernel/usr/lib/modules"; do
    [[ -d "$d" ]] && MODBASE="$d"
done
[[ -n "$MODBASE" ]] || die "$KPKG has no lib/modules directory"
mapfile -t kvers < <(find "$MODBASE" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
[[ ${#kvers[@]} -eq 1 ]] || die "$KPKG: expected one kernel release under modules/, found: ${kvers[*]:-none}"
KREL="${kvers[0]}"
VMLINUZ="$WORK/kernel/boot/vmlinuz-$KREL"
[[ -f "$VMLINUZ" ]] || die "$KPKG has no boot/vmlinuz-$KREL"

# depmod/modprobe -d expect <base>/lib/modules/<release>.
KBASE="$WORK/kbase"
mkdir -p "$KBASE/lib/modules"
ln -s "$MODBASE/$KREL" "$KBASE/lib/modules/$KREL"
depmod -b "$KBASE" "$KREL" || die "depmod failed on the modules of $KPKG"

# ------------------------------------------------------------ module closure
declare -A MODFILES=()
BUILTIN=()
for m in "${MODULES[@]}"; do
    out="$(modprobe -d "$KBASE" -S "$KREL" --show-depends "$m" 2>&1)" ||
        die "module '$m' not found in $KPKG: $out"
    while read -r kind path _; do
        case "$kind" in
            insmod) MODFILES["$path"]=1 ;;
            builtin) BUILTIN+=("$path") ;;
            softdep) ;;
            *) die "unexpected modprobe --show-depends output for $m: $kind $path" ;;
        esac
    done <<<"$out"
done

mkdir -p "$ROOT/lib/modules/$KREL"
MODCOUNT=0
for f in "${!MODFILES[@]}"; do
    real="$(readlink -f "$f")"
    rel="${real#"$(readlink -f "$MODBASE/$KREL")"/}"
    [[ "$rel" != "$real" ]] || die "module path $f is outside the kernel's module tree"
    dst="$ROOT/lib/modules/$KREL/$rel"
    mkdir -p "$(dirname "$dst")"
    case "$rel" in
        *.ko) cp "$real" "$dst" ;;
        *.ko.xz) xz -dc "$real" >"${dst%.xz}" ;;
        *.ko.zst) zstd -q -dc "$real" >"${dst%.zst}" ;;
        *.ko.gz) gzip -dc "$real" >"${dst%.gz}" ;;
        *) die "unknown module file type: $rel" ;;
    esac
    MODCOUNT=$((MODCOUNT + 1))
done
for f in modules.builtin modules.builtin.modinfo modules.order; do
    [[ -f "$MODBASE/$KREL/$f" ]] && sed -e 's/\.ko\.\(xz\|zst\|gz\)$/.ko/' "$MODBASE/$KREL/$f" >"$ROOT/lib/modules/$KREL/$f"
done
depmod -b "$ROOT" "$KREL" || die "depmod failed on the guest's module tree"

# ------------------------------------------------------------------ userland
mkdir -p "$ROOT"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,var}
ln -s ../run "$ROOT/var/run"
install -m 0755 "$WORK/user/bin/busybox" "$ROOT/bin/busybox"

copy_with_libs() { # <program name> -> $ROOT/usr/bin/<name>, plus its libraries
    local src="" dst="$ROOT/usr/bin/$1" line lib d
    for d in usr/sbin usr/bin sbin bin; do
        if [[ -f "$WORK/user/$d/$1" && ! -L "$WORK/user/$d/$1" ]]; then
            src="$WORK/user/$d/$1"
            break
        fi
    done
    [[ -n "$src" ]] || die "program $1 not found in the unpacked packages (${USER_PKGS[*]})"
    cp "$src" "$dst"
    local ldpath="$WORK/user/usr/lib/x86_64-linux-gnu:$WORK/user/lib/x86_64-linux-gnu"
    local out
    out="$(LD_LIBRARY_PATH="$ldpath" ldd "$src" 2>&1)" || die "ldd $1 failed: $out"
    while IFS= read -r line; do
        case "$line" in
            *"not found"*) die "$1: library not found: $line (install the package that provides it)" ;;
            *"=> /"*) lib="${line#*=> }" ;;
            *"/ld-linux"*) lib="${line%% (*}" ;;
            *) continue ;;
        esac
        lib="${lib%% (*}"
        lib="$(printf '%s' "$lib" | tr -d '[:space:]')"
        local target="${lib#"$WORK/user"}"
        # Keep the library's own directory layout (lib64/ld-linux, lib/x86_64-linux-gnu).
        target="${target#/usr}"
        mkdir -p "$ROOT$(dirname "$target")"
        [[ -e "$ROOT$target" ]] || cp -L "$lib" "$ROOT$target"
    done <<<"$out"
}
for b in "${USER_BINS[@]}"; do copy_with_libs "$b"; done
# The ELF interpreter path is /lib64/ld-linux-x86-64.so.2.
if [[ ! -e "$ROOT/lib64/ld-linux-x86-64.so.2" ]]; then
    mkdir -p "$ROOT/lib64"
    ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$ROOT/lib64/ld-linux-x86-64.so.2"
fi
[[ -e "$ROOT/lib64/ld-linux-x86-64.so.2" ]] || die "no dynamic loader in the image"
# /usr/lib is searched by the loader as well; keep one copy under /lib.
ln -s ../lib "$ROOT/usr/lib"
[[ -d "$WORK/user/usr/share/iproute2" ]] && mkdir -p "$ROOT/usr/share" &&
    cp -r "$WORK/user/usr/share/iproute2" "$ROOT/usr/share/"

ln -s /usr/bin/dash "$ROOT/bin/sh"
# busybox applets for everything not provided by a real binary above.
mapfile -t applets < <("$ROOT/bin/busybox" --list-full) || die "cannot list busybox applets"
for a in "${applets[@]}"; do
    name="${a##*/}"
    case "$name" in sh | ip | ss | tc | ping | busybox | linuxrc | init) continue ;; esac
    [[ -e "$ROOT/$a" || -e "$ROOT/bin/$name" || -e "$ROOT/usr/bin/$name" || -e "$ROOT/usr/sbin/$name" ]] && continue
    mkdir -p "$ROOT/$(dirname "$a")"
    ln -s /bin/busybox "$ROOT/$a"
done

# ------------------------------------------------------------ init and agent
install -m 0755 "$GUEST_SRC/init" "$ROOT/init"
install -m 0755 "$GUEST_SRC/guest-agent" "$ROOT/sbin/guest-agent"
install -m 0755 "$GUEST_SRC/netsetup" "$ROOT/sbin/netsetup"
mkdir -p "$ROOT/usr/share/udhcpc"
install -m 0755 "$GUEST_SRC/udhcpc.script" "$ROOT/usr/share/udhcpc/default.script"
printf 'root:x:0:0:root:/root:/bin/sh\n' >"$ROOT/etc/passwd"
printf 'root:x:0:\n' >"$ROOT/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$ROOT/etc/hosts"
printf 'guest\n' >"$ROOT/etc/hostname"
{
    printf 'kernel %s\n' "$KERNEL"
    printf 'kernel-release %s\n' "$KREL"
    printf 'kernel-package %s %s\n' "$KPKG" "$KVER_PKG"
    for p in "${USER_PKGS[@]}"; do printf 'package %s %s\n' "$p" "${UVER[$p]}"; done
    printf 'modules %s\n' "${MODULES[*]}"
    printf 'builtin %s\n' "${BUILTIN[*]:-}"
} >"$ROOT/etc/guest-image"

# -------------------------------------------------------------------- pack
SDE=1700000000 # fixed timestamps: the same inputs give the same image
find "$ROOT" -exec touch -h -d "@$SDE" {} +
mkdir -p "$OUT_DIR"
(cd "$ROOT" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    cpio --quiet --null -o -H newc --owner=0:0 --reproducible) | gzip -n -6 >"$OUT_DIR/initrd.img.tmp"
cp "$VMLINUZ" "$OUT_DIR/vmlinuz.tmp"
mv "$OUT_DIR/initrd.img.tmp" "$OUT_DIR/initrd.img"
mv "$OUT_DIR/vmlinuz.tmp" "$OUT_DIR/vmlinuz"
{
    cat "$ROOT/etc/guest-image"
    printf 'module-files'
    (cd "$ROOT/lib/modules/$KREL" && find . -name '*.ko' -printf ' %P' | LC_ALL=C sort)
    printf '\ninitrd-sha256 %s\n' "$(sha256sum <"$OUT_DIR/initrd.img" | cut -d' ' -f1)"
    printf 'vmlinuz-sha256 %s\n' "$(sha256sum <"$OUT_DIR/vmlinuz" | cut -d' ' -f1)"
} >"$OUT_DIR/manifest.txt"
printf '%s\n' "$STAMP" >"$OUT_DIR/stamp"
rm -rf "$WORK"

SIZE_KB=$(($(stat -c %s "$OUT_DIR/initrd.img") / 1024))
log "built guest $KERNEL in $(fmt_duration $(($(now_s) - T0))): kernel $KREL ($KPKG $KVER_PKG)," \
    "$MODCOUNT modules, initrd ${SIZE_KB} KiB -> ${OUT_DIR#"$REPO_ROOT"/}/{vmlinuz,initrd.img}"
