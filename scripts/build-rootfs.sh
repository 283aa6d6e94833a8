#!/usr/bin/env bash
# Build the systemd guest: a Debian system made from Debian packages, as a raw
# ext4 disk image plus its kernel and initrd for direct kernel boot.
#
#   scripts/build-rootfs.sh [SUITE]
#                       SUITE: bookworm (default, the only one)
#
# Output: $BUILD_DIR/rootfs/<suite>/{disk.img,vmlinuz,initrd.img,manifest.txt}
#   boot: -kernel vmlinuz -initrd initrd.img -append "root=/dev/vda rw console=ttyS0"
#         -drive file=disk.img,format=raw,if=none,id=root,snapshot=on
#         -device virtio-blk-pci,drive=root
#
# Two stages, each cached:
#   1. packages (scripts/rootfs/mkbase.sh): debootstrap --variant=minbase, then
#      apt-get installs scripts/rootfs/packages.txt (systemd, udev, the
#      linux-image-amd64 kernel with its initramfs-tools initrd, ethtool,
#      iproute2, iperf3, irqbalance, python3, NetworkManager and tuned, ...)
#      from the suite and its -updates/-security suites. Rebuilt when
#      mkbase.sh, packages.txt, initramfs-modules or the apt sources change,
#      or when any installed package has a newer version in the archive.
#   2. image: the package tree plus scripts/rootfs/overlay/ (fstab, hostname,
#      network and systemd settings), the harness's serial command agent
#      (scripts/guest/guest-agent, run by guest-agent.service) and a fresh
#      machine-id, packed with `mke2fs -d` (no loop mounts). Rebuilt when
#      stage 1, this script, scripts/lib.sh, the overlay or the agent change.
#      NetworkManager and tuned are masked: systemd-networkd alone configures
#      the ports, and tests/e2e/test_nettune_managers.py starts them itself.
# nettune itself is not in the image: install it with guest/install.sh.
#
# Packages come from the Debian archives the host's apt is configured with
# (`apt-get indextargets`: entries for SUITE, SUITE-updates, SUITE-security);
# version checks use a private apt state in $BUILD_DIR/rootfs/apt/, so the
# host's apt configuration and lists are never touched.
#
# Environment:
#   BUILD_DIR            build directory (default: <repo>/build)
#   ROOTFS_APT_MAX_AGE   refresh the private package lists when older than this
#                        many hours (default 24; 0 = always)
#   ROOTFS_FORCE=1       rebuild both stages even when up to date
#
# Needs root (debootstrap, chroot, mounting proc/sys in the chroot).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { # <exit status>: the header above, on stdout for --help
    if [[ $1 -eq 0 ]]; then
        sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    else
        sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    fi
    exit "$1"
}

SUITE=bookworm
if [[ $# -gt 1 ]]; then
    usage 2
elif [[ $# -eq 1 ]]; then
    case "$1" in
        -h | --help) usage 0 ;;
        bookworm) SUITE=$1 ;;
        *)
            printf '[build-rootfs] ERROR: unsupported suite "%s" (supported: bookworm)\n' "$1" >&2
            usage 2
            ;;
    esac
fi

need_cmd apt-get apt-cache debootstrap chroot mke2fs sha256sum flock
[[ $EUID -eq 0 ]] || die "building the guest image needs root (debootstrap, chroot, mounts)"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[[ -r "$KEYRING" ]] || die "$KEYRING missing (Debian package debian-archive-keyring)"
case "${ROOTFS_APT_MAX_AGE:-24}" in
    '' | *[!0-9]*) die "ROOTFS_APT_MAX_AGE must be a number of hours, got '${ROOTFS_APT_MAX_AGE}'" ;;
esac

T0=$(now_s)
HERE="$REPO_ROOT/scripts/rootfs"
AGENT="$REPO_ROOT/scripts/guest/guest-agent"
ROOT_DIR="$BUILD_DIR/rootfs"
OUT="$ROOT_DIR/$SUITE"
APT_DIR="$ROOT_DIR/apt/$SUITE"
DEBS="$ROOT_DIR/debs"
BASE="$OUT/base"
[[ -f "$AGENT" ]] || die "$AGENT missing (the serial command agent the image runs)"
mkdir -p "$OUT/logs" "$APT_DIR" "$DEBS"

# One build at a time per build directory (the test and the demo may both ask).
exec 9>"$ROOT_DIR/.lock"
if ! flock -n 9; then
    log "waiting for another build-rootfs to finish"
    flock 9
fi

# ------------------------------------------------------ the host's sources
# "deb [signed-by=...] URI RELEASE COMPONENTS" for SUITE, -updates, -security.
host_sources() {
    local targets
    # shellcheck disable=SC2016 # apt's own format
    targets="$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT) $(ARCHITECTURE)' \
        'Created-By: Packages' 2>/dev/null)" || die "apt-get indextargets failed (is apt configured?)"
    awk -v s="$SUITE" -v k="$KEYRING" '
        $4 != "amd64" && $4 != "all" { next }
        $2 == s || $2 == s "-updates" || $2 == s "-security" {
            key = $1 " " $2
            if (!(key in comps)) { order[++n] = key; comps[key] = "" }
            if (index(" " comps[key] " ", " " $3 " ") == 0) comps[key] = comps[key] (comps[key] == "" ? "" : " ") $3
        }
        END { for (i = 1; i <= n; i++) { split(order[i], p, " "); print "deb [signed-by=" k "] " p[1] " " p[2] " " comps[order[i]] } }
    ' <<<"$targets" | LC_ALL=C sort -k4,4
}
SOURCES_TEXT="$(host_sources)"
grep -q " $SUITE main" <<<"$SOURCES_TEXT" || die "the host's apt sources have no Debian '$SUITE' entry with component main" \
    "(apt-get indextargets shows none); add one, e.g. 'deb http://deb.debian.org/debian $SUITE main'"
for s in "$SUITE-updates" "$SUITE-security"; do
    grep -q " $s " <<<"$SOURCES_TEXT" || warn "the host's apt sources have no '$s' entry; the image will not have its updates"
done

# --------------------------------------------------------- private apt state
# (lib.sh's apt_state_*: the lists of SUITE and its -updates/-security from
# the host's archives, in $APT_DIR)

# "name installed candidate" for every package of a name/version list whose
# archive candidate differs from the installed version.
outdated() { # <packages file>
    local -a names
    mapfile -t names < <(cut -d' ' -f1 "$1")
    ((${#names[@]})) || return 0
    apt_state_candidates "$APT_DIR" "${names[@]}" |
        LC_ALL=C sort | LC_ALL=C join -j1 <(LC_ALL=C sort "$1") - |
        awk '$3 != "(none)" && $2 != $3 { print $1, $2, $3 }'
}

apt_state_lists "$APT_DIR" "$SOURCES_TEXT" "${ROOTFS_APT_MAX_AGE:-24}" "$SUITE"

# ------------------------------------------------------ stage 1: packages
# (scripts/lib.sh, shared helpers, counts for the cheap image stage only)
BASE_INPUTS=("$HERE/mkbase.sh" "$HERE/packages.txt" "$HERE/initramfs-modules")
KEY_BASE="$(
    {
        printf 'suite %s\n' "$SUITE"
        hash_files "${BASE_INPUTS[@]}"
        printf '%s\n' "$SOURCES_TEXT"
    } | sha256sum | cut -d' ' -f1
)"

base_reason=""
if [[ "${ROOTFS_FORCE:-0}" == 1 ]]; then
    base_reason="ROOTFS_FORCE=1"
elif [[ ! -d "$BASE" || ! -s "$BASE.packages" || ! -f "$BASE.stamp" ]]; then
    base_reason="no package stage built yet"
elif [[ "$(cat "$BASE.stamp")" != "$KEY_BASE" ]]; then
    base_reason="its inputs changed (scripts/rootfs/mkbase.sh, packages.txt, initramfs-modules or the apt sources)"
else
    newer="$(outdated "$BASE.packages")"
    if [[ -n "$newer" ]]; then
        base_reason="newer package versions in the archive: $(awk '{ printf "%s%s %s -> %s", (NR > 1 ? ", " : ""), $1, $2, $3 }' <<<"$newer")"
    fi
fi

T_BASE=0
if [[ -n "$base_reason" ]]; then
    log "building the package stage: $base_reason"
    t=$(now_s)
    SOURCES_FILE="$OUT/sources.list"
    printf '%s\n' "$SOURCES_TEXT" >"$SOURCES_FILE"
    rm -f "$BASE.stamp"
    bash "$HERE/mkbase.sh" "$SUITE" "$OUT/base.new" "$SOURCES_FILE" "$DEBS"
    rm -rf --one-file-system "$BASE"
    mv "$OUT/base.new" "$BASE"
    mv "$OUT/base.new.packages" "$BASE.packages"
    printf '%s\n' "$KEY_BASE" >"$BASE.stamp"
    T_BASE=$(($(now_s) - t))
    log "package stage built in $(fmt_duration "$T_BASE")"
else
    log "package stage up to date ($(wc -l <"$BASE.packages") packages)"
fi

# --------------------------------------------------------- stage 2: image
UNITS=(guest-agent.service systemd-networkd.service)
OVERLAY="$HERE/overlay"
mapfile -t OVERLAY_FILES < <(cd "$OVERLAY" && find . \( -type f -o -type l \) | LC_ALL=C sort | sed "s|^|$OVERLAY/|")
KEY_IMAGE="$(
    {
        printf '%s\n' "$KEY_BASE"
        sha256sum <"$BASE.packages"
        hash_files "$REPO_ROOT/scripts/build-rootfs.sh" "$REPO_ROOT/scripts/lib.sh" "$AGENT"
        printf 'units %s\n' "${UNITS[*]}"
        for f in "${OVERLAY_FILES[@]}"; do
            printf '%s\n' "${f#"$REPO_ROOT"/}"
            if [[ -L "$f" ]]; then readlink "$f"; else sha256sum <"$f"; fi
        done
    } | sha256sum | cut -d' ' -f1
)"

KREL="$(find "$BASE/lib/modules" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | head -n1)"
[[ -n "$KREL" ]] || die "no kernel in the package stage ($BASE/lib/modules is empty)"

if [[ "${ROOTFS_FORCE:-0}" != 1 && -z "$base_reason" && -f "$OUT/stamp" && "$(cat "$OUT/stamp")" == "$KEY_IMAGE" &&
    -s "$OUT/disk.img" && -s "$OUT/vmlinuz" && -s "$OUT/initrd.img" ]]; then
    log "guest image $SUITE is up to date: kernel $KREL, ${OUT#"$REPO_ROOT"/}/{disk.img,vmlinuz,initrd.img}"
    exit 0
fi

t=$(now_s)
STAGE="$OUT/image.work"
rm -rf --one-file-system "$STAGE"
log "assembling the image tree"
cp -a "$BASE" "$STAGE"
# The overlay's files belong to root in the image; existing directories keep
# their owner and mode.
tar -C "$OVERLAY" --owner=0 --group=0 --numeric-owner -cf - . |
    tar -C "$STAGE" --no-overwrite-dir -xpf - || die "copying scripts/rootfs/overlay into the image failed"
install -D -m 0755 "$AGENT" "$STAGE/usr/local/sbin/guest-agent"
# A machine-id of its own (an empty one would make every boot a first boot).
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$STAGE/etc/machine-id"
printf '\n' >>"$STAGE/etc/machine-id"
# systemctl works offline in a chroot: it only creates the unit symlinks.
chroot "$STAGE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    systemctl enable "${UNITS[@]}" >"$OUT/logs/systemctl.log" 2>&1 ||
    die "systemctl enable in the image failed: $(cat "$OUT/logs/systemctl.log")"
# Masked: the getty on ttyS0 (the agent owns the port) and on tty1 (no
# display), boot jobs that only cost time under TCG and touch nothing the
# tests look at (loading drm/fuse/loop/dm_mod, the e2scrub reaper), and the
# network managers the image carries for nettune's coexistence test, which
# unmasks and starts them on a booted guest (mkbase.sh disabled them): the
# guest boots as it would without them, systemd-networkd owning the ports.
MANAGERS=(NetworkManager.service NetworkManager-wait-online.service NetworkManager-dispatcher.service tuned.service)
MASKED=(serial-getty@ttyS0.service getty@tty1.service e2scrub_reap.service
    modprobe@drm.service modprobe@fuse.service modprobe@loop.service modprobe@dm_mod.service "${MANAGERS[@]}")
chroot "$STAGE" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    systemctl mask "${MASKED[@]}" >>"$OUT/logs/systemctl.log" 2>&1 ||
    die "systemctl mask in the image failed: $(cat "$OUT/logs/systemctl.log")"
for u in "${UNITS[@]}" irqbalance.service udev.service; do
    [[ -n "$(find "$STAGE/etc/systemd/system" -name "$u" -path '*.wants/*' 2>/dev/null)" ]] ||
        [[ "$u" == udev.service && -e "$STAGE/lib/systemd/system/sysinit.target.wants/systemd-udevd.service" ]] ||
        die "$u is not enabled in the image"
done
for u in "${MANAGERS[@]}"; do
    [[ -z "$(find "$STAGE/etc/systemd/system" -name "$u" -path '*.wants/*' 2>/dev/null)" ]] ||
        die "$u is enabled in the image (it must only be masked)"
done
[[ -e "$STAGE/usr/bin/python3" ]] || die "no python3 in the image"
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
cp "$STAGE/boot/vmlinuz-$KREL" "$OUT/vmlinuz.tmp"
cp "$STAGE/boot/initrd.img-$KREL" "$OUT/initrd.img.tmp"
mv "$OUT/disk.img.tmp" "$OUT/disk.img"
mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
mv "$OUT/initrd.img.tmp" "$OUT/initrd.img"
rm -rf --one-file-system "$STAGE"
{
    printf 'suite %s\n' "$SUITE"
    printf 'kernel-release %s\n' "$KREL"
    printf 'python %s\n' "$PYVER"
    printf 'image-size-mb %s\n' "$SIZE_MB"
    printf 'used-mb %s\n' "$USED_MB"
    printf 'source %s\n' "${SOURCES_TEXT//$'\n'/ | }"
    printf 'disk-sha256 %s\n' "$(sha256sum <"$OUT/disk.img" | cut -d' ' -f1)"
    printf 'vmlinuz-sha256 %s\n' "$(sha256sum <"$OUT/vmlinuz" | cut -d' ' -f1)"
    printf 'initrd-sha256 %s\n' "$(sha256sum <"$OUT/initrd.img" | cut -d' ' -f1)"
    sed 's/^/package /' "$BASE.packages"
} >"$OUT/manifest.txt"
printf '%s\n' "$KEY_IMAGE" >"$OUT/stamp"
T_IMAGE=$(($(now_s) - t))

log "built guest image $SUITE in $(fmt_duration $(($(now_s) - T0))) (packages $(fmt_duration "$T_BASE"), image $(fmt_duration "$T_IMAGE")):" \
    "kernel $KREL, python $PYVER, $(wc -l <"$BASE.packages") packages, ${USED_MB} MiB used of ${SIZE_MB} MiB" \
    "-> ${OUT#"$REPO_ROOT"/}/{disk.img,vmlinuz,initrd.img}"
