"""PXE boot of the project's guest kernel through the emulated 82599's boot ROM.

For each boot (every device type under SeaBIOS and OVMF on q35, and the pc
machine with one device type: BOOTS below), the command line names
no ROM: the device's default romfile (pc-bios/efi-ixgbe-<id>.rom, found in
the built QEMU's firmware path like QEMU's own ROMs) must network-boot the
guest, whose ixgbe driver then takes the same NIC over. The negative
controls run the same command line with romfile="": nothing boots, which
shows that it was the ROM that drove the NIC; and a romfile QEMU cannot find
stops QEMU at start-up with its usual error.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
from netboot import (
    BOOT_SCRIPT,
    DEVICE_IDS,
    GUEST_IP,
    HOST_IP,
    IPXE_CHIP,
    MAC,
    NO_BOOT_MARK,
    PXE_MARK,
    UEFI_NBP,
    VENDOR,
    NetbootFactory,
    busid,
)
from ixgbe_testlib.errors import GuestError

CASES = [("bios", "q35"), ("bios", "pc"), ("uefi", "q35")]
# Which boots run: every device type under each firmware on q35 (the ROM
# image and its driver differ by device ID and by firmware: the legacy
# iPXE entry under SeaBIOS, the UEFI driver under OVMF), and the pc machine
# (conventional PCI instead of PCIe, the same ROM images) with one device
# type. Seven boots, where the full product was nine.
BOOTS = [(case, model) for case in CASES for model in DEVICE_IDS if case[1] == "q35" or model == "ixgbe"]


def case_id(case: tuple[str, str]) -> str:
    return "-".join(case)


def boot_id(boot: tuple[tuple[str, str], str]) -> str:
    return f"{case_id(boot[0])}-{boot[1]}"


def check_firmware_netboot(firmware: str, con: str, device_id: int) -> None:
    """What the console shows of the firmware and iPXE finding the NIC,
    getting an address and fetching the boot script."""
    if firmware == "bios":
        # iPXE from the ROM: the NIC its intelx driver bound, DHCP, TFTP
        assert re.search(r"iPXE \(PCI [0-9a-f:.]+\) starting execution", con), "SeaBIOS did not run the ROM"
        nic = re.search(rf"net0: {MAC} using (\S+) on (\S+)", con)
        assert nic, "iPXE found no NIC"
        assert nic.group(1) == IPXE_CHIP[device_id], nic.group(0)
        # (iPXE's lines wrap at 80 columns: a long part name pushes "[open]" over)
        assert re.search(rf"net0: {MAC} using \S+ on \S+ \(Ethernet\) \[\s*open\]\s*\[Link:up", con), "iPXE saw no link"
        assert f"net0: {GUEST_IP}/255.255.255.0 gw {HOST_IP}" in con
    else:
        # OVMF's PXE client over the ROM's UEFI driver (SNP), then iPXE over that
        assert ">>Start PXE over IPv4" in con, "OVMF found no network boot option"
        assert f"Station IP address is {GUEST_IP}" in con
        assert f"NBP filename is {UEFI_NBP}" in con
        assert "NBP file downloaded successfully" in con
        assert re.search(r'starting Boot[0-9A-F]+ "UEFI PXEv4 \(MAC:' + MAC.replace(":", "").upper(), con)
    assert f"tftp://{HOST_IP}/{BOOT_SCRIPT}... ok" in con


@pytest.mark.parametrize("boot", BOOTS, ids=boot_id)
def test_netboot_guest_kernel(
    request: pytest.FixtureRequest, make_netboot_vm: NetbootFactory, boot: tuple[tuple[str, str], str]
) -> None:
    (firmware, machine), model = boot
    device_id = DEVICE_IDS[model]
    if firmware == "uefi":
        request.getfixturevalue("ovmf")
    vm = make_netboot_vm("pxe", firmware=firmware, machine=machine, model=model)
    argv = vm.command_line("tcg")
    assert not any("romfile" in a for a in argv), "the ROM must come from the device's default"
    t0 = time.monotonic()
    vm.start()
    seconds = time.monotonic() - t0
    con = vm.console()
    print(f"{firmware}/{machine}/{model}: guest agent up {seconds:.1f}s after QEMU started (network boot)")
    assert vm.qmp("qom-get", path="/machine/peripheral/nic0", property="romfile") == f"efi-ixgbe-{device_id:04x}.rom"

    check_firmware_netboot(firmware, con, device_id)
    seen = re.search(rf"{PXE_MARK} chip=(\S*)\s+busid=(\S*)\s+mac=(\S*)\s+ip=(\S*)", con)
    assert seen, f"{BOOT_SCRIPT} did not run"
    assert seen.group(2) == busid(device_id), f"booted from another NIC: {seen.group(0)}"
    assert (seen.group(3), seen.group(4)) == (MAC, GUEST_IP), seen.group(0)
    # (iPXE shows and erases the progress of a slow download before "ok")
    for name in ("vmlinuz", "initrd.img"):
        assert re.search(rf"{re.escape(name)}\.\.\.[ 0-9%\b]* ok", con), f"{name} was not loaded"

    # the booted kernel: its own ixgbe driver on the same device, link up, address by DHCP
    dev = vm.wait_netdevs("ixgbe", timeout=120)[0]
    q = shlex.quote(dev)
    ids = vm.sh(f"cat /sys/class/net/{q}/device/vendor /sys/class/net/{q}/device/device").split()
    assert ids == [f"0x{VENDOR:04x}", f"0x{device_id:04x}"], ids
    assert vm.sh(f"cat /sys/class/net/{q}/address").strip() == MAC
    vm.wait_carrier(dev)
    vm.wait_until(f"{GUEST_IP} on {dev}", lambda: GUEST_IP in vm.sh(f"ip -4 -br addr show dev {q}"))
    assert vm.ping(HOST_IP, count=1).ok


@pytest.mark.parametrize("case", [("bios", "q35"), ("uefi", "q35")], ids=case_id)
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


def test_missing_rom_stops_qemu(qemu: Path) -> None:
    """A romfile QEMU cannot find is a start-up error, as for QEMU's own NICs."""
    out = subprocess.run(
        [str(qemu), "-M", "q35", "-accel", "tcg", "-nodefaults", "-display", "none", "-S",
         "-device", "ixgbe,romfile=no-such-ixgbe.rom"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert out.returncode == 1, out
    assert 'failed to find romfile "no-such-ixgbe.rom"' in out.stderr, out.stderr
