#!/usr/bin/env bash
# Build the libvirt-host variant of the systemd guest: the default image's
# package stage (scripts/build-rootfs.sh bookworm) plus Debian's libvirt
# daemon, QEMU and an SSH server, so that the guest is itself a KVM-less
# libvirt host whose nested TCG domains can use vhost-net (the guest kernel
# has /dev/vhost-net; the CI machines do not). Used by the vhostnet suite.
#
#   scripts/build-rootfs-libvirt.sh
#
# Output: $BUILD_DIR/rootfs-libvirt/bookworm/{disk.img,vmlinuz,initrd.img,manifest.txt}
# (booted like the default image, with Debian 12's 6.1 kernel) and
# {vmlinuz-6.12,initrd-6.12.img} (the same disk with Debian 13's 6.12 kernel). The default image is neither changed nor
# made bigger: this variant has its own directory, lock and .deb cache.
#
# Stages, each cached:
#   1. runs scripts/build-rootfs.sh bookworm (quick when up to date) for the
#      default package stage;
#   2. packages: a copy of that stage, then apt-get installs
#      scripts/rootfs/variants/libvirt.txt in a chroot (lib.sh's
#      variant_packages). Rebuilt when the
#      default package stage or the list change (or PACKAGE_STAGE below);
#   3. image: as scripts/build-rootfs.sh's image stage (overlay, guest agent,
#      machine-id, mke2fs -d), with libvirtd, virtlogd and sshd enabled,
#      vhost_net and tun loaded at boot, and scripts/rootfs/variants/
#      libvirt-qemu.conf appended to /etc/libvirt/qemu.conf.
#
# Environment: BUILD_DIR, ROOTFS_FORCE=1 (as scripts/build-rootfs.sh).
# Needs root (chroot, mounts).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck disable=SC2034 # read by lib.sh's log/die
LOG_NAME=build-rootfs-libvirt

[[ $# -eq 0 ]] || {
    sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    [[ "$1" == -h || "$1" == --help ]] && exit 0
    exit 2
}
need_cmd chroot mke2fs sha256sum flock mount umount
[[ $EUID -eq 0 ]] || die "building the guest image needs root (chroot, mounts)"

T0=$(now_s)
SUITE=bookworm
HERE="$REPO_ROOT/scripts/rootfs"
LIST="$HERE/variants/libvirt.txt"
QEMU_CONF="$HERE/variants/libvirt-qemu.conf"
AGENT="$REPO_ROOT/scripts/guest/guest-agent"
DEFAULT="$BUILD_DIR/rootfs/$SUITE"
ROOT_DIR="$BUILD_DIR/rootfs-libvirt"
OUT="$ROOT_DIR/$SUITE"
DEBS="$ROOT_DIR/debs"
BASE="$OUT/base"

bash "$REPO_ROOT/scripts/build-rootfs.sh" "$SUITE"
[[ -d "$DEFAULT/base" && -s "$DEFAULT/base.stamp" && -s "$DEFAULT/sources.list" ]] ||
    die "no default package stage in $DEFAULT (scripts/build-rootfs.sh $SUITE)"
mapfile -t PACKAGES < <(read_list_files "$LIST")
((${#PACKAGES[@]})) || die "$LIST lists no package"

mkdir -p "$OUT/logs" "$DEBS"
exec 9>"$ROOT_DIR/.lock"
if ! flock -n 9; then
    log "waiting for another build-rootfs-libvirt to finish"
    flock 9
fi

# ------------------------------------------------------ stage 2: packages
# The package stage's key: the default stage, the list, and this number, to be
# raised when the stage's steps below change.
PACKAGE_STAGE=1
KEY_BASE="$(
    {
        cat "$DEFAULT/base.stamp"
        sha256sum <"$DEFAULT/base.packages"
        hash_files "$LIST"
        printf 'package stage %s\n' "$PACKAGE_STAGE"
    } | sha256sum | cut -d' ' -f1
)"

in_chroot() { # <tree> <command>...
    local tree=$1
    shift
    chroot "$tree" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
        DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true "$@"
}

T_BASE=0
if [[ "${ROOTFS_FORCE:-0}" == 1 || ! -f "$BASE.stamp" || "$(cat "$BASE.stamp")" != "$KEY_BASE" ]]; then
    t=$(now_s)
    NEW="$OUT/base.new"
    rm -f "$BASE.stamp"
    rm -rf --one-file-system "$NEW"
    log "copying the default package stage; installing ${PACKAGES[*]} (log: ${OUT#"$REPO_ROOT"/}/logs/apt.log)"
    variant_packages "$DEFAULT/base" "$NEW" "$DEBS" "$OUT/logs/apt.log" "${PACKAGES[@]}"
    rm -rf --one-file-system "$BASE"
    mv "$NEW" "$BASE"
    mv "$NEW.packages" "$BASE.packages"
    printf '%s\n' "$KEY_BASE" >"$BASE.stamp"
    T_BASE=$(($(now_s) - t))
    log "package stage built in $(fmt_duration "$T_BASE"): $(wc -l <"$BASE.packages") packages"
else
    log "package stage up to date ($(wc -l <"$BASE.packages") packages)"
fi

# --------------------------------------------------------- stage 3: image
KREL="$(find "$BASE/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | head -n1)"
[[ -n "$KREL" ]] || die "no kernel in the package stage"
bash "$REPO_ROOT/scripts/build-guest.sh" 6.12
K2PKG="$(awk '$1 == "kernel-package" { print $2 "_" $3; exit }' "$BUILD_DIR/guest/6.12/manifest.txt")"
K2_DEB="$BUILD_DIR/guest/debs/${K2PKG/:/%3a}_amd64.deb"
[[ -s "$K2_DEB" ]] || die "the 6.12 kernel package $K2_DEB is missing (scripts/build-guest.sh 6.12)"
K2REL="${K2PKG%%_*}"
K2REL="${K2REL#linux-image-}"
mapfile -t OVERLAY_FILES < <(cd "$HERE/overlay" && find . \( -type f -o -type l \) | LC_ALL=C sort)
KEY_IMAGE="$(
    {
        printf '%s\n' "$KEY_BASE"
        hash_files "${BASH_SOURCE[0]}" "$REPO_ROOT/scripts/lib.sh" "$AGENT" "$QEMU_CONF"
        printf 'second kernel %s\n' "$K2PKG"
        for f in "${OVERLAY_FILES[@]}"; do
            printf '%s\n' "$f"
            if [[ -L "$HERE/overlay/$f" ]]; then readlink "$HERE/overlay/$f"; else sha256sum <"$HERE/overlay/$f"; fi
        done
    } | sha256sum | cut -d' ' -f1
)"
if [[ "${ROOTFS_FORCE:-0}" != 1 && -f "$OUT/stamp" && "$(cat "$OUT/stamp")" == "$KEY_IMAGE" &&
    -s "$OUT/disk.img" && -s "$OUT/vmlinuz" && -s "$OUT/initrd.img" ]]; then
    log "guest image libvirt/$SUITE is up to date: kernel $KREL, ${OUT#"$REPO_ROOT"/}/disk.img"
    exit 0
fi

t=$(now_s)
STAGE="$OUT/image.work"
rm -rf --one-file-system "$STAGE"
cp -a "$BASE" "$STAGE"
tar -C "$HERE/overlay" --owner=0 --group=0 --numeric-owner -cf - . |
    tar -C "$STAGE" --no-overwrite-dir -xpf - || die "copying scripts/rootfs/overlay into the image failed"
install -D -m 0755 "$AGENT" "$STAGE/usr/local/sbin/guest-agent"
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$STAGE/etc/machine-id"
printf '\n' >>"$STAGE/etc/machine-id"
in_chroot "$STAGE" ssh-keygen -A >"$OUT/logs/ssh-keygen.log" 2>&1 || die "ssh-keygen -A in the image failed"
# The second kernel: Debian 13's 6.12 (the package scripts/build-guest.sh 6.12
# fetched), whose vhost workers are threads of QEMU (6.1's are kernel threads).
# Its modules and an initramfs-tools initrd made in the image; the disk boots
# with either kernel (vmlinuz, initrd.img: 6.1; vmlinuz-6.12, initrd-6.12.img).
dpkg-deb -x "$K2_DEB" "$STAGE"
in_chroot "$STAGE" depmod "$K2REL" || die "depmod $K2REL in the image failed"
in_chroot "$STAGE" update-initramfs -c -k "$K2REL" >"$OUT/logs/initramfs-6.12.log" 2>&1 ||
    die "update-initramfs -c -k $K2REL in the image failed: $(tail -n 20 "$OUT/logs/initramfs-6.12.log")"
# The nested domains need vhost_net and tun at boot (the device nodes would
# load them on first open too; loading them makes /dev/vhost-net visible).
printf '# nested domains with vhost-net (scripts/build-rootfs-libvirt.sh)\nvhost_net\ntun\n' \
    >"$STAGE/etc/modules-load.d/vhost-net.conf"
{
    printf '\n'
    cat "$QEMU_CONF"
} >>"$STAGE/etc/libvirt/qemu.conf"
chroot "$STAGE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    systemctl enable guest-agent.service systemd-networkd.service libvirtd.service virtlogd.service \
    ssh.service >"$OUT/logs/systemctl.log" 2>&1 ||
    die "systemctl enable in the image failed: $(cat "$OUT/logs/systemctl.log")"
chroot "$STAGE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    systemctl mask serial-getty@ttyS0.service getty@tty1.service e2scrub_reap.service \
    modprobe@drm.service modprobe@fuse.service modprobe@loop.service modprobe@dm_mod.service \
    libvirt-guests.service >>"$OUT/logs/systemctl.log" 2>&1 ||
    die "systemctl mask in the image failed: $(cat "$OUT/logs/systemctl.log")"
[[ -x "$STAGE/usr/sbin/libvirtd" && -x "$STAGE/usr/bin/qemu-system-x86_64" ]] ||
    die "libvirtd or qemu-system-x86_64 missing from the image"
PYVER="$(chroot "$STAGE" /usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" ||
    die "python3 in the image does not run"

USED_MB=$(du -sm "$STAGE" | cut -f1)
FREE_MB=$((USED_MB / 2 > 512 ? USED_MB / 2 : 512))
SIZE_MB=$(((USED_MB + FREE_MB + 63) / 64 * 64))
log "packing ${USED_MB} MiB into a ${SIZE_MB} MiB ext4 image (mke2fs -d)"
rm -f "$OUT/disk.img.tmp"
mke2fs -q -F -t ext4 -L nettune-root -d "$STAGE" "$OUT/disk.img.tmp" "${SIZE_MB}M" >"$OUT/logs/mke2fs.log" 2>&1 || {
    cat "$OUT/logs/mke2fs.log" >&2
    die "mke2fs -d $STAGE failed"
}
cp "$STAGE/boot/vmlinuz-$KREL" "$OUT/vmlinuz"
cp "$STAGE/boot/initrd.img-$KREL" "$OUT/initrd.img"
cp "$STAGE/boot/vmlinuz-$K2REL" "$OUT/vmlinuz-6.12"
cp "$STAGE/boot/initrd.img-$K2REL" "$OUT/initrd-6.12.img"
mv "$OUT/disk.img.tmp" "$OUT/disk.img"
rm -rf --one-file-system "$STAGE"
{
    printf 'suite %s\n' "$SUITE"
    printf 'variant libvirt\n'
    printf 'kernel-release %s\n' "$KREL"
    printf 'kernel-release-6.12 %s\n' "$K2REL"
    printf 'python %s\n' "$PYVER"
    printf 'image-size-mb %s\n' "$SIZE_MB"
    printf 'used-mb %s\n' "$USED_MB"
    sed 's/^/package /' "$BASE.packages"
} >"$OUT/manifest.txt"
printf '%s\n' "$KEY_IMAGE" >"$OUT/stamp"
log "built guest image libvirt/$SUITE in $(fmt_duration $(($(now_s) - T0)))" \
    "(packages $(fmt_duration "$T_BASE"), image $(fmt_duration $(($(now_s) - t)))):" \
    "kernel $KREL, ${USED_MB} MiB used of ${SIZE_MB} MiB"
