"""The committed boot ROMs (pc-bios/): their layout, what SeaBIOS and OVMF
look for before running one, and their manifest.

One file per PCI device ID, like QEMU's efi-*.rom: a legacy x86 image, then
an EFI boot-service driver for x86-64, both naming 8086:<id> and the network
class in their PCI data structures, the last one marked last.
"""

from __future__ import annotations

import hashlib

import pytest

from ixgbe_testlib.optionrom import parse_rom, read_manifest
from netboot import IPXE_CHIP, MANIFEST_NAME, VENDOR, BootRoms

PCI_CLASS_ETHERNET = 0x020000
CODE_TYPE_X86, CODE_TYPE_EFI = 0, 3
EFI_BOOT_SERVICE_DRIVER = 11
EFI_MACHINE_X64 = 0x8664


def test_every_device_id_has_a_rom(boot_roms: BootRoms) -> None:
    assert sorted(boot_roms.roms) == sorted(IPXE_CHIP), boot_roms.manifest


@pytest.mark.parametrize("device_id", sorted(IPXE_CHIP), ids=lambda d: f"{VENDOR:04x}-{d:04x}")
def test_rom_layout(boot_roms: BootRoms, device_id: int) -> None:
    path = boot_roms.rom(device_id)
    assert path.name == f"efi-ixgbe-{device_id:04x}.rom"
    data = path.read_bytes()
    images = parse_rom(data)
    assert [i.code_type for i in images] == [CODE_TYPE_X86, CODE_TYPE_EFI], images
    assert sum(i.length for i in images) == len(data)
    for image in images:
        assert (image.vendor, image.device) == (VENDOR, device_id), image
        assert image.class_code == PCI_CLASS_ETHERNET, image
        assert image.checksum_ok, image
        assert image.offset % 512 == 0 and image.length % 512 == 0, image
    legacy, efi = images
    assert not legacy.last and efi.last
    assert efi.efi_subsystem == EFI_BOOT_SERVICE_DRIVER
    assert efi.efi_machine == EFI_MACHINE_X64
    assert efi.efi_compressed, "the EFI driver is stored EFI-compressed, as EfiRom -ec does"


def test_manifest_describes_the_committed_files(boot_roms: BootRoms) -> None:
    """Every file is the one the manifest lists (size, sha256), and the
    manifest names the iPXE commit they come from, beside iPXE's licence."""
    manifest = read_manifest(boot_roms.directory / MANIFEST_NAME)
    assert sorted(manifest.files) == sorted([*(p.name for p in boot_roms.roms.values()), boot_roms.uefi_nbp.name])
    for name, (size, sha) in manifest.files.items():
        data = (boot_roms.directory / name).read_bytes()
        assert (len(data), hashlib.sha256(data).hexdigest()) == (size, sha), name
    keys = {line.split()[0] for line in manifest.settings}
    assert {"ipxe-commit", "ipxe-commit-date", "patch", "make", "compiler"} <= keys, manifest.settings
    for licence in ("ipxe-COPYING", "ipxe-COPYING.GPLv2", "ipxe-COPYING.UBDL"):
        assert (boot_roms.directory / licence).is_file(), licence
