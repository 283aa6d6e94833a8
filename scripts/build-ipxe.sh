#!/usr/bin/env bash
# Build the iPXE network boot ROMs of the emulated 82599 from upstream iPXE at
# the commit pinned in pc-bios/ixgbe-roms.manifest, and check or update the
# committed copies in pc-bios/ (what QEMU loads: each device type's default
# romfile). One file per PCI device ID, each a legacy BIOS image followed by
# an x86-64 UEFI driver image (the layout of QEMU's own efi-*.rom):
#
#   pc-bios/efi-ixgbe-<device id>.rom     e.g. efi-ixgbe-1517.rom
#   pc-bios/ipxe-snponly-chain.efi        for the UEFI boot tests (below)
#   pc-bios/ixgbe-roms.manifest           iPXE commit, patches, build
#                                         configuration, compiler, sizes, sha256
#
#   1. the source: IPXE_SRC, a checkout of https://github.com/ipxe/ipxe (or
#      an export of it) at the pinned commit; it is copied, never modified;
#   2. ipxe-patches/*.patch applied in order (the 82599 IDs iPXE lacks);
#   3. every ID of IPXE_ROM_IDS must then be in the intelx driver's table;
#   4. only the targets needed: make CONFIG=qemu (QEMU's iPXE configuration)
#      bin/8086DDDD.rom (legacy BIOS) and bin-x86_64-efi/8086DDDD.efirom
#      (the UEFI driver in a PCI ROM image, EFI-compressed by iPXE's own
#      util/efirom: what EDK2's EfiRom -ec does for QEMU's ROMs), with the
#      version and SOURCE_DATE_EPOCH taken from the pinned commit;
#   5. iPXE's util/catrom.pl joins the two images into one ROM.
#
# Like QEMU's ROMs (CONFIG=qemu sets EFI_DOWNGRADE_UX), the UEFI image only
# drives the NIC (SNP) and leaves network boot to the firmware: OVMF's own
# PXE client then boots an EFI program, not an iPXE script. For the tests
# the same tree also yields such a program: ipxe-snponly-chain.efi, iPXE as
# a UEFI application over the firmware's SNP, which runs DHCP and chains
# tftp://<next-server>/boot.ipxe (as a PXE server serving ipxe.efi would).
#
# The build goes to $BUILD_DIR/ipxe (with a manifest of its own); then
#   --check     compares it with the committed files: exit 0 when every file
#               is byte for byte the committed one, 1 otherwise, naming the
#               files, the ROM images (legacy, EFI) and byte ranges that
#               differ and the manifest lines (compiler, patches, ...) that
#               explain why;
#   --install   copies it, its manifest and iPXE's licence texts into
#               pc-bios/; IPXE_SRC must then be a clean git checkout, whose
#               HEAD becomes the pinned commit (how the pin is moved).
# Without either, IPXE_SRC must be at the pinned commit (checked when it is a
# git checkout) and nothing outside $BUILD_DIR changes.
#
# Settings, in the environment or as NAME=VALUE arguments:
#   IPXE_SRC            the iPXE tree (the directory holding src/); required
#   IPXE_ROM_IDS        Intel (8086) device IDs (default: "1517 10fb 10f8")
#   IPXE_PATCH_DIR      the patch series (default: ipxe-patches/)
#   IPXE_ROM_DIR        the committed files (default: pc-bios/)
#   IPXE_JOBS           make -j value (default 2)
#   BUILD_DIR           build directory (default: <repo>/build)
#
# Usage: scripts/build-ipxe.sh [--check | --install] [NAME=VALUE]...
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

MODE=build
while (($#)); do
    case "$1" in
    --check) MODE=check ;;
    --install) MODE=install ;;
    IPXE_SRC=* | IPXE_ROM_IDS=* | IPXE_PATCH_DIR=* | IPXE_ROM_DIR=* | IPXE_JOBS=*)
        export "${1?}"
        ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/build-ipxe.sh --help)" ;;
    esac
    shift
done

IPXE_ROM_IDS="${IPXE_ROM_IDS:-1517 10fb 10f8}"
IPXE_JOBS="${IPXE_JOBS:-2}"
PATCH_DIR="${IPXE_PATCH_DIR:-$REPO_ROOT/ipxe-patches}"
ROM_DIR="${IPXE_ROM_DIR:-$REPO_ROOT/pc-bios}"
VENDOR=8086
MAKE_CONFIG=qemu
UPSTREAM=https://github.com/ipxe/ipxe
MANIFEST_NAME=ixgbe-roms.manifest
NBP_NAME=ipxe-snponly-chain.efi
LICENCES=(COPYING COPYING.GPLv2 COPYING.UBDL)

OUT_DIR="$BUILD_DIR/ipxe"
WORK_DIR="$BUILD_DIR/ipxe-src"
MAKE_LOG="$BUILD_DIR/ipxe-make.log"
PINNED="$ROM_DIR/$MANIFEST_NAME"

[[ "$IPXE_JOBS" =~ ^[1-9][0-9]*$ ]] || die "IPXE_JOBS must be a positive number, got '$IPXE_JOBS'"
ids=()
for id in $IPXE_ROM_IDS; do
    id="${id,,}"
    [[ "$id" =~ ^[0-9a-f]{4}$ ]] || die "IPXE_ROM_IDS: '$id' is not a 4-digit hex device ID"
    ids+=("$id")
done
((${#ids[@]})) || die "IPXE_ROM_IDS is empty"
[[ -d "$PATCH_DIR" ]] || die "patch directory $PATCH_DIR is missing"

rom_name() { # device id -> file name
    printf 'efi-ixgbe-%s.rom' "$1"
}

manifest_value() { # manifest key -> the rest of its first line
    sed -n "s/^$2 //p" "$1" | head -n1
}

need_cmd make gcc ld perl patch sha256sum flock git
t_start=$(now_s)
mkdir -p "$OUT_DIR"
exec 8>"$BUILD_DIR/.build-ipxe.lock"
if ! flock -n 8; then
    log "another build-ipxe is running; waiting for it"
    flock 8
fi

# ------------------------------------------------------------- 1. source ---
[[ -n "${IPXE_SRC:-}" ]] ||
    die "IPXE_SRC is not set: point it at a checkout of $UPSTREAM (the commit is in ${PINNED#"$REPO_ROOT"/})"
[[ -d "$IPXE_SRC" ]] || die "IPXE_SRC=$IPXE_SRC is not a directory"
TREE="$(cd "$IPXE_SRC" && pwd -P)"
[[ -f "$TREE/src/Makefile" && -f "$TREE/src/drivers/net/intelx.c" ]] ||
    die "IPXE_SRC=$TREE does not look like an iPXE tree (needs src/Makefile and src/drivers/net/intelx.c)"
case "$TREE/" in
"$BUILD_DIR"/*) die "IPXE_SRC=$TREE lies inside the build directory; point it at a tree of your own" ;;
esac

tree_head=""
if [[ "$(git -C "$TREE" rev-parse --show-toplevel 2>/dev/null)" == "$TREE" ]]; then
    tree_head="$(git -C "$TREE" rev-parse HEAD)"
fi
if [[ "$MODE" == install ]]; then
    # The tree's HEAD becomes the pin: it must be a clean checkout.
    [[ -n "$tree_head" ]] || die "--install needs IPXE_SRC to be a git checkout (its HEAD is recorded)"
    [[ -z "$(git -C "$TREE" status --porcelain --untracked-files=no)" ]] ||
        die "IPXE_SRC=$TREE has uncommitted changes; --install records a commit, so it builds a clean one"
    commit=$tree_head
    commit_date="$(git -C "$TREE" log -1 --format=%cI HEAD)"
    describe="$(git -C "$TREE" describe --tags --always --long --abbrev=5 --match 'v*' HEAD)"
else
    [[ -f "$PINNED" ]] || die "$PINNED is missing: nothing pins the iPXE commit (see --install)"
    commit="$(manifest_value "$PINNED" ipxe-commit)"
    commit_date="$(manifest_value "$PINNED" ipxe-commit-date)"
    describe="$(manifest_value "$PINNED" ipxe-describe)"
    [[ "$commit" =~ ^[0-9a-f]{40}$ && -n "$commit_date" && -n "$describe" ]] ||
        die "$PINNED names no iPXE commit, date and description"
    if [[ -z "$tree_head" ]]; then
        warn "IPXE_SRC=$TREE is not a git checkout: cannot tell whether it is iPXE $commit"
    elif [[ "$tree_head" != "$commit" ]]; then
        die "IPXE_SRC=$TREE is at $tree_head, the ROMs are pinned to $commit (git -C $TREE checkout $commit)"
    fi
fi

shopt -s nullglob
patches=("$PATCH_DIR"/*.patch)
shopt -u nullglob

# ------------------------------------------------------------ 2. patches ---
rm -rf "$WORK_DIR"
log "copying $TREE into $WORK_DIR (without .git and build outputs)"
mkdir -p "$WORK_DIR"
tar -C "$TREE" --exclude=./.git --exclude=./src/bin --exclude='./src/bin-*' -cf - . |
    tar -C "$WORK_DIR" -xf - || die "copying IPXE_SRC=$TREE failed"
for p in "${patches[@]}"; do
    log "applying $(basename "$p")"
    patch -d "$WORK_DIR" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -i "$p" \
        >"$BUILD_DIR/ipxe-patch.log" 2>&1 || {
        cat "$BUILD_DIR/ipxe-patch.log" >&2
        die "$(basename "$p") does not apply to iPXE $commit"
    }
done

# ---------------------------------------------------- 3. the driver's IDs ---
INTELX="$WORK_DIR/src/drivers/net/intelx.c"
for id in "${ids[@]}"; do
    grep -qiE "PCI_ROM *\( *0x$VENDOR *, *0x$id *," "$INTELX" ||
        die "iPXE's intelx driver has no PCI_ROM entry for $VENDOR:$id (add it in ipxe-patches/)"
done

# -------------------------------------------------------------- 4. build ---
# The version iPXE reports (it would ask git, and the copy has no .git) and
# a build timestamp: both from the pinned commit, so that a checkout and an
# export of it build the same bytes.
make_vars=(CONFIG="$MAKE_CONFIG")
if [[ "$describe" =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)(.*)$ ]]; then
    make_vars+=(VERSION_MAJOR="${BASH_REMATCH[1]}" VERSION_MINOR="${BASH_REMATCH[2]}"
        VERSION_PATCH="${BASH_REMATCH[3]}")
    [[ "${BASH_REMATCH[4]}" =~ ^-0-g ]] || make_vars+=(EXTRAVERSION=+)
fi
epoch="$(date -d "$commit_date" +%s)" || die "bad commit date '$commit_date'"
make_vars+=(SOURCE_DATE_EPOCH="$epoch")
make_args=(-C "$WORK_DIR/src" -j"$IPXE_JOBS" "${make_vars[@]}")
targets=()
for id in "${ids[@]}"; do
    targets+=("bin/$VENDOR$id.rom" "bin-x86_64-efi/$VENDOR$id.efirom")
done
log "make ${make_vars[*]} ${targets[*]} (log: $MAKE_LOG)"
if ! nice -n 10 make "${make_args[@]}" "${targets[@]}" >"$MAKE_LOG" 2>&1; then
    echo "---- last lines of $MAKE_LOG:" >&2
    tail -n 40 "$MAKE_LOG" >&2
    echo "----" >&2
    die "building iPXE failed (full log: $MAKE_LOG)"
fi
# The UEFI tests' network boot program (see the top). Built after the ROMs:
# EMBED applies to everything a make run links.
cat >"$WORK_DIR/src/snponly-chain.ipxe" <<'EOF'
#!ipxe
dhcp || exit 1
chain tftp://${next-server}/boot.ipxe || exit 1
EOF
log "make EMBED=snponly-chain.ipxe bin-x86_64-efi/snponly.efi (for the UEFI boot tests)"
if ! nice -n 10 make "${make_args[@]}" EMBED=snponly-chain.ipxe bin-x86_64-efi/snponly.efi >>"$MAKE_LOG" 2>&1; then
    tail -n 40 "$MAKE_LOG" >&2
    die "building bin-x86_64-efi/snponly.efi failed (full log: $MAKE_LOG)"
fi

# ------------------------------------------------------------ 5. combine ---
rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"
file_line() { # kind, name, more fields -> manifest line with size and sha256
    local f="$OUT_DIR/$2"
    printf '%s %s %s%s %s\n' "$1" "$2" "${3:+$3 }" "$(stat -c %s "$f")" "$(sha256sum <"$f" | cut -d' ' -f1)"
}
{
    printf '# iPXE boot ROMs of the emulated 82599, written by scripts/build-ipxe.sh\n'
    printf '# source: %s at ipxe-commit with the patches below; licence: README.md here\n' "$UPSTREAM"
    printf 'ipxe-commit %s\n' "$commit"
    printf 'ipxe-commit-date %s\n' "$commit_date"
    printf 'ipxe-describe %s\n' "$describe"
    for p in "${patches[@]}"; do
        printf 'patch %s %s\n' "$(basename "$p")" "$(sha256sum <"$p" | cut -d' ' -f1)"
    done
    printf 'make %s\n' "${make_vars[*]}"
    printf 'rom-layout bin/%s<id>.rom + bin-x86_64-efi/%s<id>.efirom joined by util/catrom.pl\n' "$VENDOR" "$VENDOR"
    printf 'test-nbp-build bin-x86_64-efi/snponly.efi EMBED=dhcp; chain tftp://${next-server}/boot.ipxe\n'
    printf 'compiler %s\n' "$(gcc --version | head -n1)"
    printf 'linker %s\n' "$(ld --version | head -n1)"
} >"$OUT_DIR/$MANIFEST_NAME"
for id in "${ids[@]}"; do
    rom="$OUT_DIR/$(rom_name "$id")"
    perl "$WORK_DIR/src/util/catrom.pl" "$WORK_DIR/src/bin/$VENDOR$id.rom" \
        "$WORK_DIR/src/bin-x86_64-efi/$VENDOR$id.efirom" >"$rom" ||
        die "util/catrom.pl failed for $VENDOR:$id"
    [[ "$(head -c2 "$rom" | od -An -tx1 | tr -d ' \n')" == 55aa ]] ||
        die "$rom does not start with a PCI ROM signature"
    file_line rom "$(basename "$rom")" "$VENDOR:$id" >>"$OUT_DIR/$MANIFEST_NAME"
done
cp "$WORK_DIR/src/bin-x86_64-efi/snponly.efi" "$OUT_DIR/$NBP_NAME"
file_line test-nbp "$NBP_NAME" >>"$OUT_DIR/$MANIFEST_NAME"
log "built in $(fmt_duration $(($(now_s) - t_start))): $OUT_DIR"

# ------------------------------------------------- 6. check or install ---
case "$MODE" in
check)
    # Only the standard library: the system's python3 does without the venv.
    py=("${PROJECT_PYTHON[@]}")
    [[ -x "$VENV_PYTHON" ]] || py=(env "PYTHONPATH=$PROJECT_PYTHONPATH" python3)
    "${py[@]}" "$REPO_ROOT/scripts/ipxe-rom-check.py" "$ROM_DIR" "$OUT_DIR" "$MANIFEST_NAME"
    ;;
install)
    mkdir -p "$ROM_DIR"
    cp "$OUT_DIR"/efi-ixgbe-*.rom "$OUT_DIR/$NBP_NAME" "$OUT_DIR/$MANIFEST_NAME" "$ROM_DIR/"
    for l in "${LICENCES[@]}"; do
        cp "$TREE/$l" "$ROM_DIR/ipxe-$l"
    done
    printf 'build-ipxe: installed iPXE %s (%s) into %s\n' "$describe" "$commit" "$ROM_DIR"
    ;;
*)
    printf 'build-ipxe: OK: iPXE %s (%s), %d patch(es): %s\n' "$describe" "$commit" "${#patches[@]}" "$OUT_DIR"
    ;;
esac
