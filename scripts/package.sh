#!/usr/bin/env bash
# Build a Debian binary package of the patched QEMU from the existing build
# ($BUILD_DIR/qemu-build/qemu-system-x86_64, made by scripts/build-qemu.sh),
# to install beside Debian's own QEMU, never over it:
#
#   /usr/lib/qemu-ixgbe/qemu-system-x86_64      the binary, stripped
#   /usr/lib/qemu-ixgbe/qemu-bundle/...         where it looks for firmware (below)
#   /usr/bin/qemu-system-x86_64-ixgbe           symlink to the binary
#   /usr/share/qemu-ixgbe/efi-ixgbe-*.rom       the boot ROMs of pc-bios/
#   /usr/share/doc/qemu-ixgbe/                  copyright (machine-readable),
#                                               changelog, device documentation,
#                                               the ROMs' manifest
#   /etc/apparmor.d/abstractions/qemu-ixgbe*    AppArmor rules for libvirt (below)
#
# Package qemu-ixgbe, version <QEMU version>+ixgbe.<commit date>.g<commit>-1
# (e.g. 10.0.13+ixgbe.20261126.g9e19260-1; ".dirty" after the hash when
# tracked files differ from the commit). Depends: the binary's shared
# libraries (dpkg-shlibdeps) and the firmware Debian's QEMU uses too (seabios,
# qemu-system-data, ipxe-qemu); control file by dpkg-gencontrol, archive by
# dpkg-deb. Reproducible: SOURCE_DATE_EPOCH is the commit's time, every file
# has that mtime and root:root, dpkg-deb sorts the file list; the same build
# and commit give the same bytes.
#
# Firmware: the build's firmware path names the checkout's pc-bios/ and
# Debian's firmware directories. QEMU looks below <its directory>/qemu-bundle
# for each of them when that directory exists (its relocatable layout, what
# scripts/build-qemu.sh uses to run QEMU from the build tree). The package
# ships that directory: Debian's firmware directories map to themselves, the
# data directory (searched last) to /usr/share/qemu-ixgbe, and the checkout
# maps to nothing, so the installed binary, whether started by the /usr/bin
# name or by its own path (libvirt's <emulator>), finds the ROMs of
# -device ixgbe* with no option and never looks at a checkout.
#
# AppArmor: libvirt's stock profiles (libvirt-daemon-system) allow the
# emulators in /usr/bin and the firmware in /usr/share/qemu, seabios, ...,
# not /usr/lib/qemu-ixgbe nor /usr/share/qemu-ixgbe. The package ships two
# abstractions (scripts/package/apparmor-*: the domain may run the binary and
# read the ROMs; libvirtd may run it for its capability probe), and its
# postinst adds one "include if exists" line for each to the site-local
# files of those profiles (/etc/apparmor.d/local/abstractions/libvirt-qemu,
# /etc/apparmor.d/local/usr.sbin.libvirtd); the postrm takes them out.
#
# Usage: scripts/package.sh [--output DIR]
#   --output DIR   where the .deb goes (default $BUILD_DIR/pkg); an older
#                  qemu-ixgbe_*.deb there is replaced
# Prints the .deb's path on stdout.
#
# Environment:
#   BUILD_DIR        build directory (default: <repo>/build)
#   PKG_MAINTAINER   the Maintainer field (default: the commit's author)
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PKG=qemu-ixgbe
LIBDIR=/usr/lib/$PKG
ROMDIR=/usr/share/$PKG
DOCDIR=/usr/share/doc/$PKG
AADIR=/etc/apparmor.d/abstractions
FILES_DIR="$REPO_ROOT/scripts/package"
WRAPPER=/usr/bin/qemu-system-x86_64-ixgbe
OUT_DIR="$BUILD_DIR/pkg"

while (($#)); do
    case "$1" in
    --output)
        (($# >= 2)) || die "$1 needs a value"
        OUT_DIR=$2
        shift 2
        ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/package.sh --help)" ;;
    esac
done

t0=$(now_s)
need_cmd dpkg dpkg-deb dpkg-shlibdeps dpkg-gencontrol readelf strip gzip git md5sum

# ------------------------------------------------------------- the input
host_arch="$(dpkg --print-architecture)"
[[ "$host_arch" == amd64 ]] ||
    die "this host is $host_arch: the package is amd64 and its Depends come from this host's amd64 libraries; build it on an amd64 Debian host"

QBUILD="$BUILD_DIR/qemu-build"
QEMU_BIN="$QBUILD/qemu-system-x86_64"
CONFIG_H="$QBUILD/config-host.h"
VERSION_FILE="$BUILD_DIR/qemu-src/VERSION"
[[ -f "$QEMU_BIN" && -x "$QEMU_BIN" ]] ||
    die "no QEMU build: $QEMU_BIN is missing; build it first with scripts/build-qemu.sh"
[[ -f "$CONFIG_H" ]] || die "$CONFIG_H is missing: $QBUILD is not a complete QEMU build (run scripts/build-qemu.sh)"
[[ -f "$VERSION_FILE" ]] || die "$VERSION_FILE is missing: no QEMU source tree (run scripts/build-qemu.sh)"

elf_header="$(LC_ALL=C readelf -h "$QEMU_BIN" 2>/dev/null)" || die "$QEMU_BIN is not an ELF file"
elf_machine="$(sed -n 's/^ *Machine: *//p' <<<"$elf_header")"
elf_class="$(sed -n 's/^ *Class: *//p' <<<"$elf_header")"
[[ "$elf_class" == ELF64 && "$elf_machine" == "Advanced Micro Devices X86-64" ]] ||
    die "$QEMU_BIN is built for ${elf_machine:-an unknown machine} ($elf_class), not amd64 (x86-64): not packaged"

qemu_version="$(tr -d '[:space:]' <"$VERSION_FILE")"
[[ "$qemu_version" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "unexpected QEMU version '$qemu_version' in $VERSION_FILE"
qemu_source="$(sed -n 's/^qemu-src: //p' "$BUILD_DIR/.fetch-qemu.out" 2>/dev/null | tail -n1 || true)"
[[ -n "$qemu_source" ]] || qemu_source="QEMU $qemu_version"

# "A", "B", ... of '#define NAME "A", "B",' in config-host.h, one a line.
config_strings() {
    sed -n "s/^#define $1 //p" "$CONFIG_H" | grep -o '"[^"]*"' | tr -d '"'
}
mapfile -t firmware_path < <(config_strings CONFIG_QEMU_FIRMWAREPATH)
datadir="$(config_strings CONFIG_QEMU_DATADIR)"
if ((${#firmware_path[@]} == 0)) || [[ -z "$datadir" ]]; then
    die "$CONFIG_H names no firmware path or data directory"
fi

# ROMs: the manifest's 'rom' lines (file, PCI ID, size, sha256), checked.
MANIFEST="$REPO_ROOT/pc-bios/ixgbe-roms.manifest"
[[ -f "$MANIFEST" ]] || die "$MANIFEST is missing"
roms=()
while read -r _ file _ size sum; do
    f="$REPO_ROOT/pc-bios/$file"
    [[ -f "$f" ]] || die "pc-bios/$file (in the manifest) is missing"
    [[ "$(stat -c %s "$f")" == "$size" && "$(sha256sum <"$f" | cut -d' ' -f1)" == "$sum" ]] ||
        die "pc-bios/$file does not match its manifest line (size $size, sha256 $sum)"
    roms+=("$f")
done < <(grep '^rom ' "$MANIFEST")
((${#roms[@]})) || die "$MANIFEST lists no rom"

# ------------------------------------------------------------ the commit
commit="$(git -C "$REPO_ROOT" rev-parse HEAD)" || die "$REPO_ROOT is not a git checkout"
short="$(git -C "$REPO_ROOT" rev-parse --short=7 HEAD)"
SOURCE_DATE_EPOCH="$(git -C "$REPO_ROOT" log -1 --format=%ct HEAD)"
export SOURCE_DATE_EPOCH
commit_day="$(TZ=UTC0 date -d "@$SOURCE_DATE_EPOCH" +%Y%m%d)"
dirty=""
if [[ -n "$(git -C "$REPO_ROOT" status --porcelain --untracked-files=no)" ]]; then
    dirty=".dirty"
    warn "tracked files differ from commit $short: the version says so (.dirty)"
fi
pkg_version="$qemu_version+ixgbe.$commit_day.g$short$dirty-1"
maintainer="${PKG_MAINTAINER:-$(git -C "$REPO_ROOT" log -1 --format='%an <%ae>' HEAD)}"

# ----------------------------------------------------------- the staging
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd -P)"
WORK="$OUT_DIR/.work"
rm -rf "$WORK"
STAGE="$WORK/root"
umask 022
mkdir -p "$STAGE$LIBDIR" "$STAGE$ROMDIR" "$STAGE$DOCDIR" "$STAGE/usr/bin" "$STAGE$AADIR" "$WORK/debian"

strip --strip-unneeded --remove-section=.comment --remove-section=.note \
    -o "$STAGE$LIBDIR/qemu-system-x86_64" "$QEMU_BIN" || die "strip $QEMU_BIN failed"
chmod 0755 "$STAGE$LIBDIR/qemu-system-x86_64"
ln -s "$(realpath -m -s --relative-to="$(dirname "$WRAPPER")" "$LIBDIR/qemu-system-x86_64")" "$STAGE$WRAPPER"

# qemu-bundle: relative links, as Debian policy wants them within /usr.
bundle_link() { # <path QEMU asks for> <where it is>
    local at="$LIBDIR/qemu-bundle$1"
    mkdir -p "$STAGE$(dirname "$at")"
    ln -s "$(realpath -m -s --relative-to="$(dirname "$at")" "$2")" "$STAGE$at"
}
for d in "${firmware_path[@]}"; do
    case "$d" in
    "$datadir") die "the firmware path names the data directory $d: cannot map it twice" ;;
    /usr/*) bundle_link "$d" "$d" ;;
    # The checkout's pc-bios/ (or any other directory outside the system):
    # the installed binary does not look there.
    *) log "firmware directory $d: not searched by the installed binary" ;;
    esac
done
bundle_link "$datadir" "$ROMDIR"

for f in "${roms[@]}"; do
    install -m 0644 "$f" "$STAGE$ROMDIR/"
done
install -m 0644 "$MANIFEST" "$STAGE$DOCDIR/"
install -m 0644 "$FILES_DIR/apparmor-qemu-ixgbe" "$STAGE$AADIR/qemu-ixgbe"
install -m 0644 "$FILES_DIR/apparmor-qemu-ixgbe-libvirtd" "$STAGE$AADIR/qemu-ixgbe-libvirtd"
install -m 0644 "$REPO_ROOT/docs/system/devices/ixgbe.rst" "$STAGE$DOCDIR/"

ipxe_commit="$(sed -n 's/^ipxe-commit //p' "$MANIFEST")"
# Indented for a deb822 field: blank lines become " .".
deb822_text() {
    sed -e 's/^[[:space:]]*$/./' -e 's/^/ /'
}
cat >"$STAGE$DOCDIR/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: qemu-ixgbe
Comment: QEMU $qemu_version ($qemu_source) with the qemu-ixgbe patch series
 and device model, the emulated Intel 82599 (project commit $commit), and
 the iPXE boot ROMs of the emulated 82599 (iPXE commit $ipxe_commit with
 the project's patches; ixgbe-roms.manifest in this directory).

Files: *
Copyright: Fabrice Bellard and the QEMU contributors
License: GPL-2
Comment: From QEMU's LICENSE: the QEMU emulator as a whole is released under
 the GNU General Public License, version 2. Parts of it have specific
 licences compatible with the GPL, version 2; source files with no licensing
 information, and the ixgbe device model (hw/net/ixgbe*, SPDX
 GPL-2.0-or-later), are released under the GPL, version 2 or (at your
 option) any later version.

Files: usr/share/qemu-ixgbe/*
Copyright: Michael Brown <mbrown@fensystems.co.uk> and the iPXE contributors
License: GPL-2
Comment: Built from iPXE, https://github.com/ipxe/ipxe. iPXE is under the GPL,
 version 2 or (at your option) any later version; some of its files are also
 offered under the Unmodified Binary Distribution Licence (UBDL). The ROMs as
 a whole are distributed under the GPL, version 2. iPXE's own note:
 .
$(deb822_text <"$REPO_ROOT/pc-bios/ipxe-COPYING")

Files: usr/share/doc/qemu-ixgbe/ixgbe.rst etc/apparmor.d/abstractions/*
Copyright: the qemu-ixgbe contributors
License: GPL-2+

License: GPL-2
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License, version 2, as published
 by the Free Software Foundation.
 .
 On Debian systems, the complete text of the GNU General Public License,
 version 2, can be found in "/usr/share/common-licenses/GPL-2".

License: GPL-2+
 This program is free software; you can redistribute it and/or modify it
 under the terms of the GNU General Public License as published by the Free
 Software Foundation; either version 2 of the License, or (at your option)
 any later version.
 .
 On Debian systems, the complete text of the GNU General Public License,
 version 2, can be found in "/usr/share/common-licenses/GPL-2".
EOF

cat >"$WORK/debian/changelog" <<EOF
$PKG ($pkg_version) bookworm; urgency=medium

  * QEMU $qemu_version with the ixgbe device model and patch series of
    commit $commit.
  * QEMU source: $qemu_source.

 -- $maintainer  $(LC_ALL=C date -u -R -d "@$SOURCE_DATE_EPOCH")
EOF
gzip -9n -c "$WORK/debian/changelog" >"$STAGE$DOCDIR/changelog.Debian.gz"
chmod 0644 "$STAGE$DOCDIR"/*

cat >"$WORK/debian/control" <<EOF
Source: $PKG
Section: otherosfs
Priority: optional
Maintainer: $maintainer
Standards-Version: 4.6.2
Rules-Requires-Root: no

Package: $PKG
Architecture: amd64
Depends: \${shlibs:Depends}, seabios, qemu-system-data, ipxe-qemu
Recommends: ovmf
Description: QEMU x86-64 system emulator with the emulated Intel 82599 NIC
 QEMU $qemu_version with -device ixgbe, ixgbe-sfp and ixgbe-combo: the Intel
 82599 10 GbE controller (KR backplane, SFP+ and combined backplane parts)
 as the unmodified Linux ixgbe and ixgbevf drivers and DPDK's ixgbe drivers
 use it, with their iPXE network boot ROMs.
 .
 It installs beside Debian's QEMU: run it as qemu-system-x86_64-ixgbe, or
 name it (or $LIBDIR/qemu-system-x86_64) as a libvirt
 domain's emulator; AppArmor rules for libvirt's profiles are included.
 .
 QEMU source: $qemu_source; project commit $commit.
EOF

# Depends from the binary's libraries, then the control file.
(cd "$WORK" && dpkg-shlibdeps -Tdebian/substvars "${STAGE#"$WORK"/}$LIBDIR/qemu-system-x86_64") \
    >"$WORK/shlibdeps.log" 2>&1 || {
    cat "$WORK/shlibdeps.log" >&2
    die "dpkg-shlibdeps failed (see above)"
}
grep -q '^shlibs:Depends=.*libglib' "$WORK/debian/substvars" ||
    die "dpkg-shlibdeps found no library dependencies: $(cat "$WORK/debian/substvars")"
mkdir -p "$STAGE/DEBIAN"
(cd "$WORK" && dpkg-gencontrol -p"$PKG" -Tdebian/substvars -Proot -fdebian/files) \
    >"$WORK/gencontrol.log" 2>&1 || {
    cat "$WORK/gencontrol.log" >&2
    die "dpkg-gencontrol failed (see above)"
}
(cd "$STAGE" && find usr -type f -print0 | LC_ALL=C sort -z | xargs -0 md5sum) >"$STAGE/DEBIAN/md5sums"
(cd "$STAGE" && find etc -type f | LC_ALL=C sort | sed 's|^|/|') >"$STAGE/DEBIAN/conffiles"
install -m 0755 "$FILES_DIR/postinst" "$FILES_DIR/postrm" "$STAGE/DEBIAN/"
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/md5sums" "$STAGE/DEBIAN/conffiles"

# Every file of the package with the commit's time.
find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

deb="$OUT_DIR/${PKG}_${pkg_version}_amd64.deb"
rm -f "$OUT_DIR/${PKG}"_*_amd64.deb
dpkg-deb --root-owner-group -Zxz -z1 --threads-max=1 --build "$STAGE" "$deb" >"$WORK/dpkg-deb.log" 2>&1 || {
    cat "$WORK/dpkg-deb.log" >&2
    die "dpkg-deb --build failed (see above)"
}
depends="$(dpkg-deb -f "$deb" Depends)"
rm -rf "$WORK"
log "built ${deb#"$REPO_ROOT"/} ($(($(stat -c %s "$deb") / 1024)) KiB) in $(fmt_duration $(($(now_s) - t0))): QEMU $qemu_version, commit $short$dirty; Depends: $depends"
printf '%s\n' "$deb"
