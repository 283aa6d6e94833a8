"""Network boot of the test guest through the emulated 82599's boot ROM.

A `NetbootVM` is the guest harness's `VM` (ixgbe_testlib.vm) without
direct kernel boot: the firmware (SeaBIOS, or OVMF for UEFI) boots from the
NIC, whose option ROM is the committed iPXE ROM (pc-bios/, the device's
default romfile; scripts/build-ipxe.sh), over QEMU's user network. Its TFTP
directory (in the VM's log directory) serves

- `boot.ipxe`, an iPXE script that prints what iPXE knows of the NIC and
  loads the guest image's kernel and initramfs with the harness's kernel
  command line, so the guest agent comes up as with direct kernel boot;
- `vmlinuz`, `initrd.img` (links to the guest image);
- `snponly-chain.efi` for UEFI: OVMF's own PXE client (the ROM only drives
  the NIC there, as QEMU's ROMs do) boots an EFI program, which then runs
  `boot.ipxe`.

SeaBIOS shows its screen (and iPXE's) on the serial console through its
"sercon" (fw_cfg etc/sercon-port); OVMF writes to the serial console itself.
When nothing can be booted the firmware ends the run: SeaBIOS reboots at once
(`-boot reboot-timeout=0` with `-no-reboot`), OVMF's shell runs
`startup.nsh` from a small FAT disk, which prints `NO_BOOT_MARK` and powers
off. A run without a working boot ROM therefore ends quickly, with a reason.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import GuestImage
from ixgbe_testlib.vm import VM

VENDOR = 0x8086
# iPXE's name (the intelx driver's table) of each device ID the project presents
IPXE_CHIP = {0x1517: "82599-kr", 0x10FB: "82599-sfp", 0x10F8: "82599-combo-backplane"}
# the device type that presents each of them
DEVICE_IDS = {"ixgbe": 0x1517, "ixgbe-sfp": 0x10FB, "ixgbe-combo": 0x10F8}
# the committed ROMs (scripts/build-ipxe.sh), in the built QEMU's firmware path
ROM_DIR = Path(__file__).resolve().parents[2] / "pc-bios"
MANIFEST_NAME = "ixgbe-roms.manifest"
MAC = "52:54:00:12:34:56"
GUEST_IP = "10.0.2.15"
HOST_IP = "10.0.2.2"
BOOT_SCRIPT = "boot.ipxe"
UEFI_NBP = "snponly-chain.efi"
# what boot.ipxe prints first: iPXE's view of the NIC it booted from
PXE_MARK = "IXGBE-PXE"
# what OVMF's shell prints when no boot option worked (startup.nsh)
NO_BOOT_MARK = "IXGBE-NO-NETBOOT"
# OVMF builds in Debian: 4 MiB flash (bookworm, trixie), 2 MiB (bookworm only)
OVMF_CANDIDATES = (
    (Path("/usr/share/OVMF/OVMF_CODE_4M.fd"), Path("/usr/share/OVMF/OVMF_VARS_4M.fd")),
    (Path("/usr/share/OVMF/OVMF_CODE.fd"), Path("/usr/share/OVMF/OVMF_VARS.fd")),
)

_ANSI = re.compile(r"\x1b(\[[0-9;?=]*[A-Za-z]|[()][0-9A-Za-z])")


def clean_console(text: str) -> str:
    """Console text without terminal escapes and carriage returns."""
    return _ANSI.sub("", text).replace("\r", "")


def busid(device_id: int) -> str:
    """iPXE's ${netX/busid} of a PCI NIC: bus type 1, vendor, device."""
    raw = struct.pack(">BHH", 1, VENDOR, device_id)
    return ":".join(f"{b:02x}" for b in raw)


# ---------------------------------------------------------------- the ROMs
@dataclasses.dataclass(frozen=True)
class BootRoms:
    """The committed boot ROMs (pc-bios/, listed in its manifest)."""

    directory: Path
    roms: dict[int, Path]  # device id -> ROM file
    uefi_nbp: Path
    manifest: str

    def rom(self, device_id: int) -> Path:
        try:
            return self.roms[device_id]
        except KeyError:
            raise HarnessError(
                f"no boot ROM for {VENDOR:04x}:{device_id:04x} in {self.directory} "
                f"(built: {', '.join(f'{d:04x}' for d in self.roms)})"
            ) from None


def load_boot_roms(directory: Path = ROM_DIR) -> BootRoms:
    manifest = directory / MANIFEST_NAME
    text = manifest.read_text()
    roms: dict[int, Path] = {}
    nbp: Path | None = None
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "rom" and len(f) >= 3:
            roms[int(f[2].split(":")[1], 16)] = directory / f[1]
        elif f and f[0] == "test-nbp" and len(f) >= 2:
            nbp = directory / f[1]
    missing = [p for p in [*roms.values(), *([nbp] if nbp else [])] if not p.is_file()]
    if not roms or nbp is None or missing:
        raise HarnessError(f"{manifest} lists no ROMs, no test NBP, or files that are gone: {missing}")
    return BootRoms(directory, roms, nbp, text)


def find_ovmf() -> tuple[Path, Path]:
    """(code, vars template) of Debian's OVMF (package ovmf)."""
    for code, varstore in OVMF_CANDIDATES:
        if code.is_file() and varstore.is_file():
            return code, varstore
    raise HarnessError(
        "OVMF not found (" + ", ".join(str(c) for c, _ in OVMF_CANDIDATES) + "): install Debian's ovmf"
    )


# ----------------------------------------------------------------- the VM
class NetbootVM(VM):
    """The test guest, booted from the network through the NIC's option ROM.

    `model`: the NIC's device type. `romfile`: its romfile property ("" =
    no ROM; None = not on the command line: the device's default, found in
    the built QEMU's firmware path like QEMU's own ROMs). `firmware`:
    "bios" (SeaBIOS, `-boot n`) or "uefi" (OVMF, the NIC first in the boot
    order).
    """

    # A network boot that stops before the agent is the firmware's or the
    # ROM's doing (the negative controls stop there on purpose): one boot,
    # no second try.
    boot_attempts = 1

    def __init__(
        self,
        image: GuestImage,
        *,
        name: str,
        log_dir: Path,
        firmware: str,
        machine: str,
        romfile: str | None = None,
        model: str = "ixgbe",
        uefi_nbp: Path | None = None,
        qemu: Path | None = None,
        boot_timeout: float = 240.0,
    ) -> None:
        if firmware not in ("bios", "uefi"):
            raise HarnessError(f"firmware must be bios or uefi, got {firmware!r}")
        if firmware == "uefi" and uefi_nbp is None:
            raise HarnessError("a UEFI network boot needs the EFI boot program (uefi_nbp)")
        # guest.net=dhcp: the booted kernel's driver takes the NIC over and configures it
        super().__init__(image, name=name, log_dir=log_dir, qemu=qemu, append="guest.net=dhcp",
                         boot_timeout=boot_timeout)  # fmt: skip
        self.firmware = firmware
        self.machine = machine
        self.romfile = romfile
        self.model = model
        self.tftp_dir = self.log_dir / "tftp"
        self._uefi_nbp = uefi_nbp
        self._prepare()

    def kernel_cmdline(self) -> str:
        """The kernel command line the harness would pass with -append."""
        argv = super().command_line("tcg")
        return argv[argv.index("-append") + 1]

    def _prepare(self) -> None:
        if self.tftp_dir.exists():
            shutil.rmtree(self.tftp_dir)
        self.tftp_dir.mkdir(parents=True)
        (self.tftp_dir / "vmlinuz").symlink_to(self.image.vmlinuz)
        (self.tftp_dir / "initrd.img").symlink_to(self.image.initrd)
        # initrd= names the image for the kernel's EFI stub; the BIOS path ignores it
        (self.tftp_dir / BOOT_SCRIPT).write_text(
            "#!ipxe\n"
            f"echo {PXE_MARK} chip=${{net0/chip}} busid=${{net0/busid}} mac=${{net0/mac}} ip=${{net0/ip}}\n"
            f"kernel vmlinuz initrd=initrd.img {self.kernel_cmdline()}\n"
            "initrd initrd.img\n"
            "boot\n"
        )
        if self.firmware == "bios":
            # SeaBIOS's serial console: a little-endian I/O port number
            (self.log_dir / "sercon-port.bin").write_bytes(struct.pack("<H", 0x3F8))
        else:
            assert self._uefi_nbp is not None
            shutil.copyfile(self._uefi_nbp, self.tftp_dir / UEFI_NBP)
            _, varstore = find_ovmf()
            shutil.copyfile(varstore, self.log_dir / "ovmf-vars.fd")
            esp = self.log_dir / "esp"
            esp.mkdir(exist_ok=True)
            (esp / "startup.nsh").write_text(f"echo {NO_BOOT_MARK}\r\nreset -s\r\n")

    def firmware_args(self) -> list[str]:
        if self.firmware == "bios":
            return [
                "-fw_cfg", f"name=etc/sercon-port,file={self.log_dir / 'sercon-port.bin'}",
                "-boot", "order=n,reboot-timeout=0",
            ]  # fmt: skip
        code, _ = find_ovmf()
        return [
            "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={code}",
            "-drive", f"if=pflash,format=raw,unit=1,file={self.log_dir / 'ovmf-vars.fd'}",
            # OVMF connects only the devices in QEMU's boot order: list the disk too
            "-drive", f"if=none,id=esp,format=raw,readonly=on,file=fat:{self.log_dir / 'esp'}",
            "-device", "virtio-blk-pci,drive=esp,bootindex=1",
        ]  # fmt: skip

    def nic_args(self) -> list[str]:
        bootfile = BOOT_SCRIPT if self.firmware == "bios" else UEFI_NBP
        dev = f"{self.model},id=nic0,netdev=n0,mac={MAC},bootindex=0"
        if self.romfile is not None:
            dev += f",romfile={self.romfile}"
        return [
            "-netdev", f"user,id=n0,net=10.0.2.0/24,tftp={self.tftp_dir},bootfile={bootfile}",
            "-device", dev,
        ]  # fmt: skip

    def command_line(self, accel: str) -> list[str]:
        """The harness's command line, less direct kernel boot, on this
        machine type, with the firmware and the NIC."""
        base = super().command_line(accel)
        argv: list[str] = []
        i = 0
        while i < len(base):
            arg = base[i]
            if arg in ("-kernel", "-initrd", "-append"):
                i += 2
                continue
            if arg == "-machine":
                argv += ["-machine", self.machine]
                i += 2
                continue
            argv.append(arg)
            i += 1
        return argv + self.firmware_args() + self.nic_args()

    def console(self) -> str:
        """Everything on the serial console so far (serial.log, written as it
        arrives, also after QEMU is gone), cleaned of escapes."""
        try:
            return clean_console(self.serial_log.read_text(errors="replace"))
        except OSError:
            return ""


# make_netboot_vm(name, firmware=..., machine=..., model=..., romfile=...) -> NetbootVM, not started
NetbootFactory = Callable[..., NetbootVM]
