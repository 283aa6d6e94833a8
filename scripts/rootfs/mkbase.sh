#!/usr/bin/env bash
# The package stage of the guest image: a Debian system made from Debian
# packages only. Called by scripts/build-rootfs.sh, which decides when it has
# to run (it caches the result); not meant to be run by hand.
#
#   scripts/rootfs/mkbase.sh SUITE TARGET SOURCES DEBCACHE
#
#   SUITE     Debian suite (bookworm)
#   TARGET    directory to create (removed first)
#   SOURCES   apt sources list for the image, one-line format: the suite and
#             its -updates/-security suites, as configured on the host
#   DEBCACHE  directory of cached .deb files (read and filled)
#
# Steps: debootstrap --variant=minbase from the suite's mirror; then, in the
# chroot, apt-get dist-upgrade and install scripts/rootfs/packages.txt with
# --no-install-recommends from all suites of SOURCES (so updates and security
# fixes are in); the kernel's initramfs-tools initrd is checked for the
# modules of scripts/rootfs/initramfs-modules. Docs, man pages and locales are
# not unpacked. Writes TARGET.packages (name version, sorted) next to TARGET.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
# shellcheck disable=SC2034 # read by lib.sh's log/die
LOG_NAME=build-rootfs

[[ $# -eq 4 ]] || die "usage: scripts/rootfs/mkbase.sh SUITE TARGET SOURCES DEBCACHE"
SUITE=$1
TARGET=$2
SOURCES=$3
DEBCACHE=$4
HERE="$REPO_ROOT/scripts/rootfs"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

need_cmd debootstrap chroot mount umount
[[ $EUID -eq 0 ]] || die "building the guest image needs root (debootstrap, chroot, mounts)"
[[ -r "$KEYRING" ]] || die "$KEYRING missing (Debian package debian-archive-keyring)"
[[ -s "$SOURCES" ]] || die "apt sources file $SOURCES is missing or empty"
case "$TARGET" in /*) ;; *) die "TARGET must be an absolute path, not $TARGET" ;; esac
mkdir -p "$DEBCACHE"
DEBCACHE="$(cd "$DEBCACHE" && pwd -P)"

# The suite's own archive (not -updates/-security) is what debootstrap uses.
MIRROR="$(awk -v s="$SUITE" '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) break;
    if ($(i + 1) == s) { print $i; exit } }' "$SOURCES")"
[[ -n "$MIRROR" ]] || die "no '$SUITE' entry in $SOURCES"

mapfile -t PACKAGES < <(read_list_files "$HERE/packages.txt")
((${#PACKAGES[@]})) || die "scripts/rootfs/packages.txt lists no package"

# ------------------------------------------------------------ chroot mounts
MOUNTS=()
unmount_all() {
    local i
    for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${MOUNTS[i]}" 2>/dev/null || umount -l "${MOUNTS[i]}" 2>/dev/null || true
    done
    MOUNTS=()
}
trap unmount_all EXIT

mount_chroot() {
    local fs dir
    for fs in proc:proc sysfs:sys devpts:dev/pts; do
        dir="$TARGET/${fs#*:}"
        mkdir -p "$dir"
        if ! mountpoint -q "$dir"; then
            mount -t "${fs%%:*}" "${fs%%:*}" "$dir" -o nosuid,nodev,noexec ||
                die "cannot mount ${fs%%:*} on $dir"
            MOUNTS+=("$dir")
        fi
    done
}

in_chroot() {
    chroot "$TARGET" /usr/bin/env -i \
        PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
        DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true "$@"
}

LOGDIR="$(dirname "$TARGET")/logs"
mkdir -p "$LOGDIR"

# Remove a tree left by an earlier, interrupted build: first unmount whatever
# is still mounted below it, and never cross into another file system.
remove_tree() {
    local dir=$1 m
    [[ -e "$dir" ]] || return 0
    while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" || die "cannot unmount $m (left from an earlier build)"
    done < <(awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/self/mounts | sort -r)
    rm -rf --one-file-system "$dir"
}

# -------------------------------------------------------------- debootstrap
remove_tree "$TARGET"
t=$(now_s)
log "debootstrap --variant=minbase $SUITE from $MIRROR (log: ${LOGDIR#"$REPO_ROOT"/}/debootstrap.log)"
if ! debootstrap --variant=minbase --arch=amd64 --keyring="$KEYRING" --cache-dir="$DEBCACHE" \
    "$SUITE" "$TARGET" "$MIRROR" >"$LOGDIR/debootstrap.log" 2>&1; then
    tail -n 30 "$LOGDIR/debootstrap.log" >&2
    [[ -f "$TARGET/debootstrap/debootstrap.log" ]] && tail -n 30 "$TARGET/debootstrap/debootstrap.log" >&2
    die "debootstrap of $SUITE into $TARGET failed (see above and $LOGDIR/debootstrap.log)"
fi
log "debootstrap done in $(fmt_duration $(($(now_s) - t)))"

# ------------------------------------------------------- packages with apt
mount_chroot
# No daemon may start inside the build chroot.
printf '#!/bin/sh\nexit 101\n' >"$TARGET/usr/sbin/policy-rc.d"
chmod 0755 "$TARGET/usr/sbin/policy-rc.d"
# Keep the image small: no documentation, manuals or translations.
cat >"$TARGET/etc/dpkg/dpkg.cfg.d/90-guest-nodoc" <<'EOF'
# guest image: no documentation, manuals or translations (copyright files stay)
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
cp "$SOURCES" "$TARGET/etc/apt/sources.list"
rm -f "$TARGET"/etc/apt/sources.list.d/*
printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
    >"$TARGET/etc/apt/apt.conf.d/90-guest-norecommends"
# initramfs-tools is installed later; its conffile keeps this content (confold).
mkdir -p "$TARGET/etc/initramfs-tools"
{
    printf '# Modules the initrd always loads. Guest image: the root file system is\n'
    printf '# ext4 on virtio-blk (scripts/rootfs/initramfs-modules).\n'
    read_list_files "$HERE/initramfs-modules"
} >"$TARGET/etc/initramfs-tools/modules"
# Name resolution for apt while building only.
rm -f "$TARGET/etc/resolv.conf"
cp -L /etc/resolv.conf "$TARGET/etc/resolv.conf" 2>/dev/null || true

# Reuse cached .debs: hard links when the cache is on the same file system.
ARCHIVES="$TARGET/var/cache/apt/archives"
mkdir -p "$ARCHIVES/partial"
find "$DEBCACHE" -maxdepth 1 -name '*.deb' -exec cp -l -n -t "$ARCHIVES/" {} + 2>/dev/null ||
    find "$DEBCACHE" -maxdepth 1 -name '*.deb' -exec cp -n -t "$ARCHIVES/" {} +

t=$(now_s)
log "apt-get update, dist-upgrade, install ${#PACKAGES[@]} packages (log: ${LOGDIR#"$REPO_ROOT"/}/apt.log)"
{
    in_chroot apt-get -q update &&
        in_chroot apt-get -q -y -o Dpkg::Options::=--force-confold dist-upgrade &&
        in_chroot apt-get -q -y -o Dpkg::Options::=--force-confold --no-install-recommends install "${PACKAGES[@]}"
} >"$LOGDIR/apt.log" 2>&1 || {
    tail -n 40 "$LOGDIR/apt.log" >&2
    die "installing the guest's packages in the chroot failed (see above and $LOGDIR/apt.log)"
}
log "packages installed in $(fmt_duration $(($(now_s) - t)))"
# NetworkManager and tuned enable their units when installed; the guest runs
# neither at boot (build-rootfs.sh also masks them in the image: a test starts
# them on a booted guest), nor does any image made from this stage.
in_chroot systemctl disable NetworkManager.service NetworkManager-wait-online.service \
    NetworkManager-dispatcher.service tuned.service >>"$LOGDIR/apt.log" 2>&1 ||
    die "systemctl disable of NetworkManager and tuned in the chroot failed (see $LOGDIR/apt.log)"

for f in "$ARCHIVES"/*.deb; do
    [[ -e "$f" ]] || continue
    [[ -e "$DEBCACHE/${f##*/}" ]] || cp -l "$f" "$DEBCACHE/" 2>/dev/null || cp "$f" "$DEBCACHE/"
done
in_chroot apt-get -q clean >/dev/null
rm -rf "$TARGET"/var/lib/apt/lists/* "$TARGET"/var/cache/apt/*.bin
mkdir -p "$TARGET/var/lib/apt/lists/partial"

# ----------------------------------------------------------- kernel, initrd
mapfile -t KRELS < <(find "$TARGET/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n')
[[ ${#KRELS[@]} -eq 1 ]] || die "expected one kernel in the image, found: ${KRELS[*]:-none}"
KREL=${KRELS[0]}
[[ -s "$TARGET/boot/vmlinuz-$KREL" ]] || die "no /boot/vmlinuz-$KREL in the image"
[[ -s "$TARGET/boot/initrd.img-$KREL" ]] || die "no /boot/initrd.img-$KREL in the image (initramfs-tools failed?)"
INITRD_LIST="$(in_chroot lsinitramfs "/boot/initrd.img-$KREL")" ||
    die "lsinitramfs /boot/initrd.img-$KREL failed"
for m in $(read_list_files "$HERE/initramfs-modules"); do
    grep -Eq "/$m\\.ko(\\.(xz|zst|gz))?\$" <<<"$INITRD_LIST" ||
        grep -Eq "/$m\\.ko\$" "$TARGET/lib/modules/$KREL/modules.builtin" ||
        die "module $m is neither in the initrd nor built into kernel $KREL"
done
log "kernel $KREL; initrd has $(read_list_files "$HERE/initramfs-modules" | tr '\n' ' ')"

# ---------------------------------------------------------------- clean up
rm -f "$TARGET/usr/sbin/policy-rc.d" "$TARGET/etc/resolv.conf"
: >"$TARGET/etc/resolv.conf"
unmount_all
# shellcheck disable=SC2016 # dpkg-query's own format
in_chroot dpkg-query -W -f '${Package} ${Version}\n' | LC_ALL=C sort >"$TARGET.packages"
log "base system: $(wc -l <"$TARGET.packages") packages, $(du -sm "$TARGET" | cut -f1) MiB"
