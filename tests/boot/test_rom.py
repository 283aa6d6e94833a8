"""The boot ROMs' layout: what SeaBIOS and OVMF look for before running one.

One file per PCI device ID, like QEMU's efi-*.rom: a legacy x86 image, then
an EFI boot-service driver for x86-64, both naming 8086:<id> and the network
class in their PCI data structures, the last one marked last.
"""

from __future__ import annotations

import pytest

from netboot import IPXE_CHIP, VENDOR, BootRoms, parse_rom

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
