"""PCI option ROM files (the network boot ROMs in pc-bios/): their images,
and what differs between two builds of them (scripts/build-ipxe.sh --check).
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from pathlib import Path

CODE_TYPES = {0: "legacy x86", 3: "EFI"}


@dataclasses.dataclass(frozen=True)
class RomImage:
    """One image of a PCI expansion ROM (PCI Firmware spec 3.0, 5.1)."""

    offset: int
    length: int
    vendor: int
    device: int
    class_code: int
    revision: int  # PCI data structure revision
    code_type: int  # 0 x86 legacy, 3 EFI
    last: bool
    checksum_ok: bool
    # EFI images only
    efi_subsystem: int | None = None
    efi_machine: int | None = None
    efi_compressed: bool | None = None


def parse_rom(data: bytes) -> list[RomImage]:
    """The images of a PCI option ROM file, in order; ValueError if malformed."""
    images: list[RomImage] = []
    off = 0
    while True:
        if off + 0x1A > len(data) or data[off : off + 2] != b"\x55\xaa":
            raise ValueError(f"no ROM signature 55 AA at {off:#x}")
        pcir = off + struct.unpack_from("<H", data, off + 0x18)[0]
        if pcir + 0x18 > len(data) or data[pcir : pcir + 4] != b"PCIR":
            raise ValueError(f"no PCI data structure for the image at {off:#x}")
        vendor, device = struct.unpack_from("<HH", data, pcir + 4)
        revision = data[pcir + 0xC]
        class_code = int.from_bytes(data[pcir + 0xD : pcir + 0x10], "little")
        length = struct.unpack_from("<H", data, pcir + 0x10)[0] * 512
        code_type, indicator = data[pcir + 0x14], data[pcir + 0x15]
        if length == 0 or off + length > len(data):
            raise ValueError(f"image at {off:#x}: length {length} runs past the file ({len(data)})")
        subsystem = machine = None
        compressed = None
        if code_type == 3:
            sig, subsystem, machine, compression = struct.unpack_from("<IHHH", data, off + 4)
            if sig != 0x0EF1:
                raise ValueError(f"EFI image at {off:#x} without the EFI signature (got {sig:#x})")
            compressed = compression == 1
        # The bytes of an image (its declared length) sum to zero.
        checksum_ok = sum(data[off : off + length]) % 256 == 0
        images.append(
            RomImage(off, length, vendor, device, class_code, revision, code_type,
                     bool(indicator & 0x80), checksum_ok, subsystem, machine, compressed)
        )  # fmt: skip
        if indicator & 0x80:
            return images
        off += length


def image_name(image: RomImage) -> str:
    return f"{CODE_TYPES.get(image.code_type, f'type {image.code_type}')} image at {image.offset:#x}"


def byte_diff(a: bytes, b: bytes) -> str:
    """How two byte strings differ: sizes, the differing bytes, their span."""
    diff = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
    parts = []
    if len(a) != len(b):
        parts.append(f"size {len(a)} -> {len(b)}")
    if diff:
        parts.append(f"{len(diff)} byte(s) differ in {diff[0]:#x}..{diff[-1]:#x}")
    return ", ".join(parts) or "same bytes"


def rom_diff(committed: bytes, built: bytes) -> list[str]:
    """Which images of two ROM files differ and how (the whole file when
    either is not a well-formed option ROM)."""
    try:
        old, new = parse_rom(committed), parse_rom(built)
    except ValueError as exc:
        return [f"not comparable image by image ({exc}): {byte_diff(committed, built)}"]
    lines = []
    if len(old) != len(new):
        lines.append(f"{len(old)} image(s) -> {len(new)}")
    for a, b in zip(old, new):
        da = committed[a.offset : a.offset + a.length]
        db = built[b.offset : b.offset + b.length]
        if da != db:
            lines.append(f"{image_name(a)}: {byte_diff(da, db)}")
    return lines or [byte_diff(committed, built)]


@dataclasses.dataclass(frozen=True)
class Manifest:
    """scripts/build-ipxe.sh's manifest: settings, and the files with size and sha256."""

    settings: list[str]  # every other non-comment line, in order
    files: dict[str, tuple[int, str]]  # name -> (size, sha256)


def read_manifest(path: Path) -> Manifest:
    settings: list[str] = []
    files: dict[str, tuple[int, str]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if not f or line.startswith("#"):
            continue
        if f[0] in ("rom", "test-nbp"):
            files[f[1]] = (int(f[-2]), f[-1])
        else:
            settings.append(line)
    return Manifest(settings, files)


def compare_builds(committed_dir: Path, built_dir: Path, manifest_name: str) -> tuple[bool, list[str]]:
    """(same, report): whether every file the committed manifest lists is,
    byte for byte, the built one; the report names what differs and the
    build settings that changed."""
    old = read_manifest(committed_dir / manifest_name)
    new = read_manifest(built_dir / manifest_name)
    same = True
    report = []
    for name, (size, sha) in old.files.items():
        path = committed_dir / name
        data = path.read_bytes() if path.is_file() else b""
        if (len(data), hashlib.sha256(data).hexdigest()) != (size, sha):
            same = False
            report.append(f"{name}: the committed file is not what {manifest_name} lists")
            continue
        built = built_dir / name
        if not built.is_file():
            same = False
            report.append(f"{name}: not built")
            continue
        bdata = built.read_bytes()
        if bdata == data:
            report.append(f"{name}: same ({size} bytes, sha256 {sha[:16]}...)")
            continue
        same = False
        how = rom_diff(data, bdata) if name.endswith(".rom") else [byte_diff(data, bdata)]
        report.append(f"{name}: DIFFERS")
        report += [f"  {h}" for h in how]
    for name in sorted(set(new.files) - set(old.files)):
        same = False
        report.append(f"{name}: built, but not committed")
    changed = [f"  committed: {s}" for s in old.settings if s not in new.settings]
    changed += [f"  built:     {s}" for s in new.settings if s not in old.settings]
    if changed:
        report.append("build settings that differ (the likely cause of any difference):")
        report += changed
    return same, report
