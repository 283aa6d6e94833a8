#!/usr/bin/env bash
# Build iPXE network boot ROMs for the emulated 82599: one file per PCI device
# ID, each a legacy BIOS image followed by an x86-64 UEFI driver image (the
# layout of QEMU's own efi-*.rom), so that SeaBIOS and OVMF both PXE boot.
#
#   $BUILD_DIR/ipxe/efi-ixgbe-<device id>.rom     e.g. efi-ixgbe-1517.rom
#   $BUILD_DIR/ipxe/manifest.txt                  source, version, file sizes and hashes
#   $BUILD_DIR/ipxe/test/snponly-chain.efi        for the UEFI boot tests (below)
#
#   1. the source: Debian's ipxe source package, downloaded through a private
#      apt state ($BUILD_DIR/apt-ipxe; scripts/debsrc.sh, as for QEMU),
#      cached in $BUILD_DIR/downloads/ipxe and unpacked with
#      'dpkg-source -x', which applies Debian's own patches; or IPXE_SRC;
#   2. ipxe-patches/*.patch applied in order (the 82599 IDs iPXE lacks);
#   3. every ID of IPXE_ROM_IDS must then be in the intelx driver's table;
#   4. only the targets needed: make CONFIG=qemu (QEMU's iPXE configuration)
#      bin/8086DDDD.rom (legacy BIOS) and bin-x86_64-efi/8086DDDD.efirom
#      (the UEFI driver in a PCI ROM image, EFI-compressed by iPXE's own
#      util/efirom: what EDK2's EfiRom -ec does for QEMU's ROMs);
#   5. iPXE's util/catrom.pl joins the two images into one ROM.
#
# Like QEMU's ROMs (CONFIG=qemu sets EFI_DOWNGRADE_UX), the UEFI image only
# drives the NIC (SNP) and leaves network boot to the firmware: OVMF's own
# PXE client then boots an EFI program, not an iPXE script. For the tests
# the same tree also yields such a program: snponly-chain.efi, iPXE as a
# UEFI application over the firmware's SNP, which runs DHCP and chains
# tftp://<next-server>/boot.ipxe (as a PXE server serving ipxe.efi would).
#
# A PCI ROM image names one vendor/device pair in its header and SeaBIOS
# runs an image only when that pair matches the device, hence one file per
# ID. Nothing is rebuilt when the inputs are unchanged (the source, the
# patches, the ID list, this script, the compiler): see
# $BUILD_DIR/ipxe/inputs.sha256.
#
# Environment:
#   IPXE_SRC            build this iPXE tree (the directory holding src/,
#                       e.g. an upstream git checkout) instead of Debian's
#                       package; it is copied, never modified in place
#   IPXE_DEB_VERSIONS   acceptable Debian versions, exact or globs, in order
#                       (default: "1.21.1+git20250501.dad20602+dfsg-1 1.21.1+git*")
#   IPXE_DEB_SUITES     Debian suites searched (default: "trixie")
#   IPXE_ROM_IDS        Intel (8086) device IDs to build ROMs for
#                       (default: "1517 10fb 10f8")
#   IPXE_JOBS           make -j value (default 2)
#   DEBIAN_MIRROR       Debian archive URL (default: the host's apt mirror)
#   BUILD_DIR           build directory (default: <repo>/build)
#
# Usage: scripts/build-ipxe.sh [--stamp FILE] [--allow-unavailable]
#   --stamp FILE          on success, write the summary line to FILE (meson)
#   --allow-unavailable   when no acceptable source package can be downloaded,
#                         write the reason to $BUILD_DIR/ipxe/UNAVAILABLE and
#                         exit 0 (the boot tests then skip, naming it)
#                         instead of failing; any other failure still fails
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=scripts/debsrc.sh
. "$(dirname "${BASH_SOURCE[0]}")/debsrc.sh"

STAMP_FILE=""
ALLOW_UNAVAILABLE=0
while (($#)); do
    case "$1" in
    --stamp)
        (($# >= 2)) || die "--stamp needs a value"
        STAMP_FILE=$2
        shift 2
        ;;
    --allow-unavailable)
        ALLOW_UNAVAILABLE=1
        shift
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/build-ipxe.sh --help)" ;;
    esac
done

IPXE_DEB_VERSIONS="${IPXE_DEB_VERSIONS:-1.21.1+git20250501.dad20602+dfsg-1 1.21.1+git*}"
IPXE_DEB_SUITES="${IPXE_DEB_SUITES:-trixie}"
IPXE_ROM_IDS="${IPXE_ROM_IDS:-1517 10fb 10f8}"
IPXE_JOBS="${IPXE_JOBS:-2}"
VENDOR=8086
MAKE_CONFIG=qemu

OUT_DIR="$BUILD_DIR/ipxe"
WORK_DIR="$BUILD_DIR/ipxe-src"
DL_DIR="$BUILD_DIR/downloads/ipxe"
APT_DIR="$BUILD_DIR/apt-ipxe"
PATCH_DIR="$REPO_ROOT/ipxe-patches"
INPUTS_FILE="$OUT_DIR/inputs.sha256"
UNAVAILABLE_FILE="$OUT_DIR/UNAVAILABLE"
MAKE_LOG="$BUILD_DIR/ipxe-make.log"

[[ "$IPXE_JOBS" =~ ^[1-9][0-9]*$ ]] || die "IPXE_JOBS must be a positive number, got '$IPXE_JOBS'"
ids=()
for id in $IPXE_ROM_IDS; do
    id="${id,,}"
    [[ "$id" =~ ^[0-9a-f]{4}$ ]] || die "IPXE_ROM_IDS: '$id' is not a 4-digit hex device ID"
    ids+=("$id")
done
((${#ids[@]})) || die "IPXE_ROM_IDS is empty"

rom_name() { # device id -> output file name
    printf 'efi-ixgbe-%s.rom' "$1"
}

need_cmd make gcc ld perl patch sha256sum flock
t_start=$(now_s)
mkdir -p "$OUT_DIR"
exec 8>"$BUILD_DIR/.build-ipxe.lock"
if ! flock -n 8; then
    log "another build-ipxe is running; waiting for it"
    flock 8
fi

finish() { # summary line: stdout and the --stamp file
    [[ -n "$STAMP_FILE" ]] && printf '%s\n' "$1" >"$STAMP_FILE"
    printf '%s\n' "$1"
}

# The source cannot be had: fail, or (--allow-unavailable) say so where the
# tests look and succeed.
unavailable() {
    if ((ALLOW_UNAVAILABLE == 0)); then
        die "$1"
    fi
    warn "$1"
    warn "no boot ROMs built (--allow-unavailable): the reason is in $UNAVAILABLE_FILE"
    rm -f "$OUT_DIR"/efi-ixgbe-*.rom "$INPUTS_FILE" "$OUT_DIR/manifest.txt"
    rm -rf "$OUT_DIR/test"
    printf '%s\n' "$1" >"$UNAVAILABLE_FILE"
    finish "build-ipxe: UNAVAILABLE: $1"
    exit 0
}

# ------------------------------------------------------------- 1. source ---
# Sets SRC_IDENT, and SRC_KIND (debian|tree) with DSC or TREE.
SRC_IDENT="" SRC_KIND="" DSC="" TREE="" DEB_VERSION=""
if [[ -n "${IPXE_SRC:-}" ]]; then
    [[ -d "$IPXE_SRC" ]] || die "IPXE_SRC=$IPXE_SRC is not a directory"
    TREE="$(cd "$IPXE_SRC" && pwd -P)"
    [[ -f "$TREE/src/Makefile" && -f "$TREE/src/drivers/net/intelx.c" ]] ||
        die "IPXE_SRC=$TREE does not look like an iPXE tree (needs src/Makefile and src/drivers/net/intelx.c)"
    case "$TREE/" in
    "$BUILD_DIR"/*) die "IPXE_SRC=$TREE lies inside the build directory; point it at a tree of your own" ;;
    esac
    SRC_KIND=tree
    # Names, sizes and modification times of its files (not build outputs).
    SRC_IDENT="tree path=$TREE files=$(find "$TREE" \( -path "$TREE/.git" -o -path "$TREE/src/bin" \
        -o -path "$TREE/src/bin-*" \) -prune -o -type f -printf '%P %s %T@\n' | LC_ALL=C sort |
        sha256sum | cut -c1-16)"
else
    need_cmd dpkg-source
    debsrc_download ipxe "$IPXE_DEB_VERSIONS" "$IPXE_DEB_SUITES" "$DL_DIR" "$APT_DIR"
    [[ -n "$DEBSRC_CHOSEN" ]] ||
        unavailable "Debian's ipxe source package could not be downloaded (wanted: $IPXE_DEB_VERSIONS; suites: $IPXE_DEB_SUITES; offered: $DEBSRC_OFFERED; tried: $DEBSRC_TRIED). Set IPXE_DEB_VERSIONS, IPXE_DEB_SUITES or IPXE_SRC."
    DEB_VERSION=$DEBSRC_CHOSEN
    DSC="$DL_DIR/$(debsrc_dsc_name ipxe "$DEB_VERSION")"
    SRC_KIND=debian
    SRC_IDENT="debian-ipxe $DEB_VERSION dsc=$(sha256sum <"$DSC" | cut -c1-16)"
fi

shopt -s nullglob
patches=("$PATCH_DIR"/*.patch)
shopt -u nullglob

want_inputs="$(
    {
        printf 'source %s\nids %s\nconfig %s\n' "$SRC_IDENT" "${ids[*]}" "$MAKE_CONFIG"
        hash_files "${patches[@]}" "$REPO_ROOT/scripts/build-ipxe.sh"
        gcc --version | head -n1
        ld --version | head -n1
    } | sha256sum | cut -d' ' -f1
)"

TEST_NBP="$OUT_DIR/test/snponly-chain.efi"
outputs_present() {
    local id
    for id in "${ids[@]}"; do
        [[ -s "$OUT_DIR/$(rom_name "$id")" ]] || return 1
    done
    [[ -s "$TEST_NBP" ]]
}

summary() {
    local id files=()
    for id in "${ids[@]}"; do
        files+=("$(rom_name "$id") ($(stat -c %s "$OUT_DIR/$(rom_name "$id")") bytes)")
    done
    printf 'build-ipxe: OK: %s, %d patch(es), in %s: %s' "$SRC_IDENT" "${#patches[@]}" \
        "$OUT_DIR" "$(IFS=,; echo "${files[*]}")"
}

if [[ -f "$INPUTS_FILE" && "$(<"$INPUTS_FILE")" == "$want_inputs" ]] && outputs_present; then
    rm -f "$UNAVAILABLE_FILE"
    log "boot ROMs up to date ($SRC_IDENT)"
    finish "$(summary)"
    exit 0
fi
rm -f "$INPUTS_FILE"

# -------------------------------------------------- unpack (or copy) -------
rm -rf "$WORK_DIR"
if [[ "$SRC_KIND" == debian ]]; then
    log "unpacking $(basename "$DSC") with dpkg-source -x (applies debian/patches)"
    dpkg-source --no-copy -x "$DSC" "$WORK_DIR" >"$BUILD_DIR/ipxe-src.unpack.log" 2>&1 || {
        cat "$BUILD_DIR/ipxe-src.unpack.log" >&2
        rm -rf "$WORK_DIR"
        die "dpkg-source -x $(basename "$DSC") failed"
    }
else
    log "copying $TREE into $WORK_DIR (without .git and build outputs)"
    mkdir -p "$WORK_DIR"
    tar -C "$TREE" --exclude=./.git --exclude=./src/bin --exclude='./src/bin-*' -cf - . |
        tar -C "$WORK_DIR" -xf - || die "copying IPXE_SRC=$TREE failed"
fi
[[ -f "$WORK_DIR/src/Makefile" ]] || die "$WORK_DIR/src/Makefile missing: not an iPXE source tree"

# ------------------------------------------------------------ 2. patches ---
for p in "${patches[@]}"; do
    log "applying ipxe-patches/$(basename "$p")"
    patch -d "$WORK_DIR" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -i "$p" \
        >"$BUILD_DIR/ipxe-patch.log" 2>&1 || {
        cat "$BUILD_DIR/ipxe-patch.log" >&2
        die "ipxe-patches/$(basename "$p") does not apply to $SRC_IDENT"
    }
done

# ---------------------------------------------------- 3. the driver's IDs ---
INTELX="$WORK_DIR/src/drivers/net/intelx.c"
for id in "${ids[@]}"; do
    grep -qiE "PCI_ROM *\( *0x$VENDOR *, *0x$id *," "$INTELX" ||
        die "iPXE's intelx driver has no PCI_ROM entry for $VENDOR:$id (add it in ipxe-patches/)"
done

# -------------------------------------------------------------- 4. build ---
make_args=(-C "$WORK_DIR/src" -j"$IPXE_JOBS" CONFIG="$MAKE_CONFIG")
# The version iPXE reports (it would ask git, and there is no .git here) and
# a build timestamp that does not change with every build.
version=""
if [[ "$SRC_KIND" == debian ]]; then
    version="${DEB_VERSION#*:}"
    version="${version%-*}"
    if command -v dpkg-parsechangelog >/dev/null 2>&1; then
        make_args+=(SOURCE_DATE_EPOCH="$(dpkg-parsechangelog -l "$WORK_DIR/debian/changelog" -STimestamp)")
    fi
elif git -C "$TREE" rev-parse --git-dir >/dev/null 2>&1; then
    version="$(git -C "$TREE" describe --tags --always --long --abbrev=1 --match 'v*' 2>/dev/null || true)"
    version="${version#v}"
    make_args+=(SOURCE_DATE_EPOCH="$(git -C "$TREE" log -1 --pretty=%ct)")
fi
if [[ "$version" =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)(.*)$ ]]; then
    make_args+=(VERSION_MAJOR="${BASH_REMATCH[1]}" VERSION_MINOR="${BASH_REMATCH[2]}"
        VERSION_PATCH="${BASH_REMATCH[3]}")
    [[ -n "${BASH_REMATCH[4]}" ]] && make_args+=(EXTRAVERSION=+)
fi
targets=()
for id in "${ids[@]}"; do
    targets+=("bin/$VENDOR$id.rom" "bin-x86_64-efi/$VENDOR$id.efirom")
done
log "make ${make_args[*]:2} ${targets[*]} (log: $MAKE_LOG)"
if ! nice -n 10 make "${make_args[@]}" "${targets[@]}" >"$MAKE_LOG" 2>&1; then
    echo "---- last lines of $MAKE_LOG:" >&2
    tail -n 40 "$MAKE_LOG" >&2
    echo "----" >&2
    die "building iPXE failed (full log: $MAKE_LOG)"
fi

# ------------------------------------------------------------ 5. combine ---
{
    printf 'source %s\n' "$SRC_IDENT"
    printf 'ipxe-version %s\n' "$(make -s -C "$WORK_DIR/src" "${make_args[@]:3}" version 2>/dev/null || echo unknown)"
    printf 'patches%s\n' "$(printf ' %s' "${patches[@]#"$REPO_ROOT"/}")"
} >"$OUT_DIR/manifest.txt.new"
for id in "${ids[@]}"; do
    rom="$OUT_DIR/$(rom_name "$id")"
    perl "$WORK_DIR/src/util/catrom.pl" "$WORK_DIR/src/bin/$VENDOR$id.rom" \
        "$WORK_DIR/src/bin-x86_64-efi/$VENDOR$id.efirom" >"$rom.new" ||
        die "util/catrom.pl failed for $VENDOR:$id"
    [[ "$(head -c2 "$rom.new" | od -An -tx1 | tr -d ' \n')" == 55aa ]] ||
        die "$rom.new does not start with a PCI ROM signature"
    mv "$rom.new" "$rom"
    printf 'rom %s %s:%s %s %s\n' "$(basename "$rom")" "$VENDOR" "$id" "$(stat -c %s "$rom")" \
        "$(sha256sum <"$rom" | cut -d' ' -f1)" >>"$OUT_DIR/manifest.txt.new"
done

# The UEFI tests' network boot program (see the top). Built after the ROMs:
# EMBED applies to everything a make run links.
cat >"$WORK_DIR/src/snponly-chain.ipxe" <<'EOF'
#!ipxe
dhcp || exit 1
chain tftp://${next-server}/boot.ipxe || exit 1
EOF
log "make bin-x86_64-efi/snponly.efi with an embedded chain script (for the UEFI boot tests)"
if ! nice -n 10 make "${make_args[@]}" EMBED=snponly-chain.ipxe bin-x86_64-efi/snponly.efi >>"$MAKE_LOG" 2>&1; then
    tail -n 40 "$MAKE_LOG" >&2
    die "building bin-x86_64-efi/snponly.efi failed (full log: $MAKE_LOG)"
fi
mkdir -p "$OUT_DIR/test"
cp "$WORK_DIR/src/bin-x86_64-efi/snponly.efi" "$TEST_NBP.new"
mv "$TEST_NBP.new" "$TEST_NBP"
printf 'test-nbp %s %s\n' "${TEST_NBP#"$OUT_DIR"/}" "$(stat -c %s "$TEST_NBP")" >>"$OUT_DIR/manifest.txt.new"
mv "$OUT_DIR/manifest.txt.new" "$OUT_DIR/manifest.txt"
rm -f "$UNAVAILABLE_FILE"
printf '%s\n' "$want_inputs" >"$INPUTS_FILE"
finish "$(summary); built in $(fmt_duration $(($(now_s) - t_start)))"
