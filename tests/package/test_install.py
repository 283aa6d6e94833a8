"""The package installed into a clean Debian root (Debian's packages only,
no checkout, no build): apt resolves its Depends from the archive, the
installed binary offers the device, finds its firmware and boot ROM where
the package put them, and answers a qtest probe of the PF's PCI IDs;
never looks at the build's checkout, brings AppArmor rules that libvirt's
stock profiles include and Debian's apparmor_parser compiles; removing it
leaves Debian's firmware packages in place and takes its lines out of
libvirt's profiles. A missing dependency and a package for another
architecture are errors at install time.

The tests run in file order on one root (`installed_root`); the removal
is last."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from debpkg import (
    AA_LOCAL,
    BINARY,
    DEBIAN_QEMU_PATHS,
    FIRMWARE_DIRS,
    LIBDIR,
    PKG,
    ROMDIR,
    WRAPPER,
    CleanRoot,
    deb_field,
    pci_cfg_addr,
    qtest_session,
    repack,
)
from ixgbe_testlib.host import REPO_ROOT, build_dir

pytestmark = pytest.mark.usefixtures("privileged")

SLOT = 4  # -device ixgbe,addr=04.0
ROM_SIZE_MASK = 0xFFFC0000  # the 243200-byte ROMs in a 256 KiB BAR
DECOY_ROM_SIZE = 64 * 1024


def test_installed_by_apt(installed_root: CleanRoot, deb: Path) -> None:
    out = installed_root.check(["dpkg-query", "-W", "-f", "${Status} ${Version}", PKG])
    assert out == f"install ok installed {deb_field(deb, 'Version')}", out


def test_no_debian_qemu_path_taken(installed_root: CleanRoot) -> None:
    files = installed_root.check(["dpkg", "-L", PKG]).split()
    assert f"{LIBDIR}/qemu-system-x86_64" in files, files
    for f in files:
        for p in DEBIAN_QEMU_PATHS:
            assert not (f == p or f.startswith(p + "/")), f
    # Neither the package nor its dependencies brought Debian's QEMU.
    assert installed_root.run(["test", "-e", "/usr/bin/qemu-system-x86_64"]).returncode != 0
    assert installed_root.run(["dpkg-query", "-W", "qemu-system-x86"]).returncode != 0


def test_device_help_lists_the_parts(installed_root: CleanRoot) -> None:
    out = installed_root.check([WRAPPER, "-nodefaults", "-machine", "none", "-device", "help"])
    for name in ("ixgbe", "ixgbe-sfp", "ixgbe-combo"):
        assert f'name "{name}"' in out, out


def test_device_ixgbe_help(installed_root: CleanRoot) -> None:
    out = installed_root.check([WRAPPER, "-nodefaults", "-machine", "none", "-device", "ixgbe,help"])
    assert "romfile=" in out and "mac=" in out, out


def test_firmware_dirs_are_the_package_and_debian(installed_root: CleanRoot) -> None:
    """Every directory QEMU searches is under its qemu-bundle; they resolve
    to Debian's firmware directories and the package's ROMs, or to nothing
    (the build's checkout, absent from the bundle)."""
    bundle = f"{LIBDIR}/qemu-bundle/"
    dirs = installed_root.check([WRAPPER, "-L", "help"]).split()
    assert dirs and all(d.startswith(bundle) for d in dirs), dirs
    resolved = installed_root.check(["readlink", "-m", *dirs]).split()
    assert ROMDIR in resolved and "/usr/share/seabios" in resolved, resolved
    assert all(r in FIRMWARE_DIRS or r.startswith(bundle) for r in resolved), resolved
    for r in resolved:
        if r.startswith(bundle):
            assert installed_root.run(["test", "-e", r]).returncode != 0, r


def probe(root: CleanRoot, qemu: str, device: str, tmp_path: Path) -> tuple[list[str], str]:
    argv = [qemu, "-M", "q35", "-accel", "qtest", "-qtest", "stdio", "-display", "none", "-nodefaults",
            "-device", f"{device},addr={SLOT:02x}.0"]
    id_reg, rom_bar = pci_cfg_addr(SLOT, 0x00), pci_cfg_addr(SLOT, 0x30)
    commands = [f"outl 0xcf8 {id_reg:#x}", "inl 0xcfc",
                f"outl 0xcf8 {rom_bar:#x}", "outl 0xcfc 0xfffff800", f"outl 0xcf8 {rom_bar:#x}", "inl 0xcfc"]
    err = tmp_path / "qemu.err"
    replies = qtest_session(root.popen(argv, err), commands)
    return replies, err.read_text(errors="replace")


@pytest.mark.parametrize("command", [WRAPPER, BINARY])
def test_qtest_probe_ids_and_boot_rom(installed_root: CleanRoot, command: str, tmp_path: Path) -> None:
    """The PF's vendor/device ID through the PCI configuration ports, and
    its expansion ROM BAR sized for the package's boot ROM (QEMU stops when
    it cannot find the ROM), by the /usr/bin name and by the binary's path."""
    replies, err = probe(installed_root, command, "ixgbe", tmp_path)
    assert len(replies) == 6 and all(r.startswith("OK") for r in replies), (replies, err)
    assert int(replies[1].split()[1], 16) == 0x15178086, replies
    assert int(replies[5].split()[1], 16) & 0xFFFFF800 == ROM_SIZE_MASK, replies


def test_qtest_probe_without_rom(installed_root: CleanRoot, tmp_path: Path) -> None:
    """The control: romfile="" leaves the ROM BAR unimplemented (reads 0)."""
    replies, err = probe(installed_root, WRAPPER, 'ixgbe,romfile=', tmp_path)
    assert len(replies) == 6, (replies, err)
    assert int(replies[1].split()[1], 16) == 0x15178086, replies
    assert int(replies[5].split()[1], 16) == 0, replies


def build_firmware_path() -> list[str]:
    """The firmware directories configure baked into the build (--firmwarepath)."""
    config = (build_dir() / "qemu-build" / "config-host.h").read_text(encoding="utf-8")
    m = re.search(r"^#define CONFIG_QEMU_FIRMWAREPATH (.*)$", config, re.M)
    assert m, "config-host.h has no CONFIG_QEMU_FIRMWAREPATH"
    return re.findall(r'"([^"]+)"', m.group(1))


def test_never_looks_at_the_checkout(installed_root: CleanRoot, tmp_path: Path) -> None:
    """The build searches the checkout's pc-bios/ for firmware first. The
    installed binary finds its boot ROM where that directory is out of
    reach (the clean root has no checkout), and with a decoy ROM of
    another size there (every ROM name of the manifest, 64 KiB) still
    loads the package's 256 KiB one."""
    outside = [d for d in build_firmware_path() if not d.startswith("/usr/")]
    assert outside, build_firmware_path()
    for d in outside:
        assert installed_root.run(["test", "-e", d]).returncode != 0, f"{d} is in the clean root"
    replies, err = probe(installed_root, BINARY, "ixgbe", tmp_path)
    assert len(replies) == 6 and int(replies[5].split()[1], 16) & 0xFFFFF800 == ROM_SIZE_MASK, (replies, err)

    roms = re.findall(r"^rom (\S+) ", (REPO_ROOT / "pc-bios" / "ixgbe-roms.manifest").read_text(), re.M)
    decoys = [f"{d}/{r}" for d in outside for r in roms]
    installed_root.check(["sh", "-c", 'for f; do mkdir -p "${f%/*}" && head -c ' + str(DECOY_ROM_SIZE)
                          + ' /dev/zero >"$f"; done', "decoy", *decoys])
    try:
        replies, err = probe(installed_root, WRAPPER, "ixgbe", tmp_path)
    finally:
        installed_root.check(["sh", "-c", 'rm -f "$@"; for f; do rmdir -p "${f%/*}" 2>/dev/null; done; true',
                              "clean", *decoys])
    assert len(replies) == 6, (replies, err)
    assert int(replies[5].split()[1], 16) & 0xFFFFF800 == ROM_SIZE_MASK, \
        f"ROM BAR {replies[5]}: the binary loaded the decoy from {outside}"


def test_apparmor_rules_in_libvirts_profiles(installed_root: CleanRoot) -> None:
    """libvirt's stock profiles (libvirt-daemon-system's, seeded before the
    install) include the package's rules through their site-local files;
    Debian's apparmor_parser expands and compiles them (-Q: not loaded,
    this kernel has no AppArmor). libvirtd may run the binary for its
    capability probe; a domain (virt-aa-helper's TEMPLATE.qemu) may run it
    and read the ROMs."""
    for local, name in AA_LOCAL.items():
        lines = installed_root.check(["cat", local]).splitlines()
        assert f"include if exists <abstractions/{name}>" in lines, (local, lines)
    installed_root.check(["apt-get", "-q", "-y", "--no-install-recommends", "install", "apparmor"], timeout=600)
    libvirtd, domain = "/etc/apparmor.d/usr.sbin.libvirtd", "/etc/apparmor.d/libvirt/TEMPLATE.qemu"
    for profile in (libvirtd, domain):
        installed_root.check(["apparmor_parser", "-Q", "-K", "-T", profile])
    expanded = installed_root.check(["apparmor_parser", "-p", libvirtd])
    assert f"{BINARY} PUx," in expanded
    expanded = installed_root.check(["apparmor_parser", "-p", domain])
    assert f"{BINARY} rmix," in expanded and f"{ROMDIR}/** r," in expanded


def test_foreign_architecture_is_an_install_error(fresh_root: CleanRoot, deb: Path, tmp_path: Path) -> None:
    """The same package said to be arm64: dpkg and apt refuse it, naming the architectures."""
    other = repack(deb, tmp_path, Architecture="arm64")
    fresh_root.add_file(other, f"/root/{other.name}")
    r = fresh_root.run(["dpkg", "-i", f"/root/{other.name}"])
    assert r.returncode != 0, r.stdout
    assert "package architecture (arm64) does not match system (amd64)" in r.stderr, r.stderr
    r = fresh_root.run(["apt-get", "-q", "-y", "install", f"/root/{other.name}"])
    assert r.returncode != 0, r.stdout
    assert "arm64" in r.stdout + r.stderr, r.stdout + r.stderr
    assert fresh_root.run(["dpkg-query", "-W", PKG]).returncode != 0


def test_missing_dependency_is_an_install_error(fresh_root: CleanRoot, deb: Path) -> None:
    """dpkg -i without apt: the Depends the root lacks stop the configuration, by name."""
    have = {line.split()[0] for line in (build_dir() / "rootfs" / "bookworm" / "base.packages")
            .read_text(encoding="utf-8").splitlines() if line.strip()}
    depends = [d.strip().split()[0] for d in deb_field(deb, "Depends").split(",")]
    missing = [d for d in depends if d not in have]
    assert missing, f"the clean root already has every dependency ({depends}): nothing to show"
    fresh_root.add_file(deb, f"/root/{deb.name}")
    r = fresh_root.run(["dpkg", "-i", f"/root/{deb.name}"])
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "dependency problems" in out, out
    for name in missing:
        assert f"depends on {name}" in out, (name, out)
    status = fresh_root.check(["dpkg-query", "-W", "-f", "${Status}", PKG])
    assert status != "install ok installed", status


def test_remove_leaves_debian_firmware(installed_root: CleanRoot) -> None:
    installed_root.check(["dpkg", "--purge", PKG])
    for gone in (LIBDIR, WRAPPER, ROMDIR):
        assert installed_root.run(["test", "-e", gone]).returncode != 0, f"{gone} left after purge"
    for kept in ("/usr/share/seabios/bios-256k.bin", "/usr/share/qemu"):
        assert installed_root.run(["test", "-e", kept]).returncode == 0, f"{kept} gone with the package"
    # libvirt's site-local AppArmor files stay, without the package's lines.
    for local in AA_LOCAL:
        assert "qemu-ixgbe" not in installed_root.check(["cat", local]), local
    installed_root.check(["apparmor_parser", "-Q", "-K", "-T", "/etc/apparmor.d/usr.sbin.libvirtd"])
