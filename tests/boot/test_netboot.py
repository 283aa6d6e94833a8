"""PXE boot of the project's guest kernel through the emulated 82599's boot ROM.

Each firmware/machine pair boots the same command line twice: with the ROM
(romfile=efi-ixgbe-1517.rom, found through -L like QEMU's own ROMs) it must
network-boot the guest, whose ixgbe driver then takes the same NIC over; with
romfile="" it must not boot at all, which shows that it was the ROM that
drove the NIC.
"""

from __future__ import annotations

import re
import shlex
import time

import pytest
from netboot import (
    BOOT_SCRIPT,
    GUEST_IP,
    HOST_IP,
    IPXE_CHIP,
    MAC,
    NO_BOOT_MARK,
    PXE_MARK,
    UEFI_NBP,
    VENDOR,
    BootRoms,
    NetbootFactory,
    busid,
)
from ixgbe_testlib.errors import GuestError

# `-device ixgbe`: the 82599 KR backplane port
DEVICE_ID = 0x1517
CASES = [("bios", "q35"), ("bios", "pc"), ("uefi", "q35")]


def case_id(case: tuple[str, str]) -> str:
    return "-".join(case)


def check_firmware_netboot(firmware: str, con: str) -> None:
    """What the console shows of the firmware and iPXE finding the NIC,
    getting an address and fetching the boot script."""
    if firmware == "bios":
        # iPXE from the ROM: the NIC its intelx driver bound, DHCP, TFTP
        assert re.search(r"iPXE \(PCI [0-9a-f:.]+\) starting execution", con), "SeaBIOS did not run the ROM"
        nic = re.search(rf"net0: {MAC} using (\S+) on (\S+)", con)
        assert nic, "iPXE found no NIC"
        assert nic.group(1) == IPXE_CHIP[DEVICE_ID], nic.group(0)
        assert re.search(rf"net0: {MAC} using .*\n\s*\[Link:up", con), "iPXE saw no link"
        assert f"net0: {GUEST_IP}/255.255.255.0 gw {HOST_IP}" in con
    else:
        # OVMF's PXE client over the ROM's UEFI driver (SNP), then iPXE over that
        assert ">>Start PXE over IPv4" in con, "OVMF found no network boot option"
        assert f"Station IP address is {GUEST_IP}" in con
        assert f"NBP filename is {UEFI_NBP}" in con
        assert "NBP file downloaded successfully" in con
        assert re.search(r'starting Boot[0-9A-F]+ "UEFI PXEv4 \(MAC:' + MAC.replace(":", "").upper(), con)
    assert f"tftp://{HOST_IP}/{BOOT_SCRIPT}... ok" in con


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_netboot_guest_kernel(
    request: pytest.FixtureRequest,
    make_netboot_vm: NetbootFactory,
    boot_roms: BootRoms,
    case: tuple[str, str],
) -> None:
    firmware, machine = case
    if firmware == "uefi":
        request.getfixturevalue("ovmf")
    rom = boot_roms.rom(DEVICE_ID).name
    vm = make_netboot_vm("pxe", firmware=firmware, machine=machine, romfile=rom)
    t0 = time.monotonic()
    vm.start()
    seconds = time.monotonic() - t0
    con = vm.console()
    print(f"{firmware}/{machine}: guest agent up {seconds:.1f}s after QEMU started (network boot)")

    check_firmware_netboot(firmware, con)
    seen = re.search(rf"{PXE_MARK} chip=(\S*) busid=(\S*) mac=(\S*) ip=(\S*)", con)
    assert seen, f"{BOOT_SCRIPT} did not run"
    assert seen.group(2) == busid(DEVICE_ID), f"booted from another NIC: {seen.group(0)}"
    assert (seen.group(3), seen.group(4)) == (MAC, GUEST_IP), seen.group(0)
    assert "vmlinuz... ok" in con and "initrd.img... ok" in con

    # the booted kernel: its own ixgbe driver on the same device, link up, address by DHCP
    dev = vm.wait_netdevs("ixgbe", timeout=120)[0]
    q = shlex.quote(dev)
    ids = vm.sh(f"cat /sys/class/net/{q}/device/vendor /sys/class/net/{q}/device/device").split()
    assert ids == [f"0x{VENDOR:04x}", f"0x{DEVICE_ID:04x}"], ids
    assert vm.sh(f"cat /sys/class/net/{q}/address").strip() == MAC
    vm.wait_carrier(dev)
    vm.wait_until(f"{GUEST_IP} on {dev}", lambda: GUEST_IP in vm.sh(f"ip -4 -br addr show dev {q}"))
    assert vm.ping(HOST_IP, count=2).ok


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_no_rom_no_netboot(
    request: pytest.FixtureRequest, make_netboot_vm: NetbootFactory, case: tuple[str, str]
) -> None:
    """The negative control: the same command line with romfile="" boots nothing."""
    firmware, machine = case
    if firmware == "uefi":
        request.getfixturevalue("ovmf")
    vm = make_netboot_vm("norom", firmware=firmware, machine=machine, romfile="", boot_timeout=180)
    t0 = time.monotonic()
    with pytest.raises(GuestError) as failed:
        vm.start()
    print(f"{firmware}/{machine} without a ROM: the firmware gave up after {time.monotonic() - t0:.1f}s")
    con = vm.console()
    # the firmware went through its boot options and gave up (and ended the run)
    gave_up = "No bootable device" if firmware == "bios" else f"\n{NO_BOOT_MARK}"
    assert gave_up in con, f"the firmware did not give up: {failed.value}"
    assert "iPXE" not in con and PXE_MARK not in con
    if firmware == "uefi":
        assert "Start PXE over IPv4" not in con
    assert "@@AGENT-READY" not in con
