"""scripts/build-ipxe.sh's own logic, without iPXE's source: a stub tree
whose Makefile makes tiny option ROM images stands in for iPXE, so that
pinning (--install), the rebuild check (--check), its report of what
differs, and the refusals run in a second, with no compiler of iPXE.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "build-ipxe.sh"
IDS = ("1517", "10fb", "10f8")

# Makes a PCI option ROM image: one 512-byte block, header, PCI data
# structure, then bytes that depend on the image's inputs.
MKROM = r"""
import os, struct, sys
kind, target = sys.argv[1], sys.argv[2]
device = int(target[-4:], 16)
img = bytearray(512)
img[0:2] = b"\x55\xaa"
img[2] = 1
if kind == "efi":
    struct.pack_into("<IHHHH", img, 4, 0x0EF1, 11, 0x8664, 1, 0x40)
struct.pack_into("<H", img, 0x18, 0x40)
img[0x40:0x44] = b"PCIR"
struct.pack_into("<HH", img, 0x44, 0x8086, device)
img[0x4C] = 3
img[0x4D:0x50] = (0x020000).to_bytes(3, "little")
struct.pack_into("<H", img, 0x50, 1)
img[0x54] = 3 if kind == "efi" else 0
img[0x55] = 0x80 if kind == "efi" else 0
payload = (kind + os.environ.get("SOURCE_DATE_EPOCH", "") + os.environ.get("STUB_" + kind.upper(), "")).encode()
img[0x100:0x100 + len(payload)] = payload
sys.stdout.buffer.write(bytes(img))
"""

MAKEFILE = """\
export SOURCE_DATE_EPOCH
bin/%.rom:
\tmkdir -p bin && python3 mkrom.py legacy $* > $@
bin-x86_64-efi/%.efirom:
\tmkdir -p bin-x86_64-efi && python3 mkrom.py efi $* > $@
bin-x86_64-efi/snponly.efi:
\tmkdir -p bin-x86_64-efi && cat $(EMBED) > $@
"""

PATCH = """\
--- a/src/drivers/net/intelx.c
+++ b/src/drivers/net/intelx.c
@@ -1,2 +1,3 @@
 PCI_ROM ( 0x8086, 0x10f8, "combo", "combo", 0 ),
 PCI_ROM ( 0x8086, 0x10fb, "sfp", "sfp", 0 ),
+PCI_ROM ( 0x8086, 0x1517, "kr", "kr", 0 ),
"""


def git(tree: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00"}
    return subprocess.run(
        ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()  # fmt: skip


@pytest.fixture
def stub(tmp_path: Path) -> dict[str, Path]:
    tree = tmp_path / "ipxe"
    (tree / "src" / "drivers" / "net").mkdir(parents=True)
    (tree / "src" / "util").mkdir()
    (tree / "src" / "Makefile").write_text(MAKEFILE)
    (tree / "src" / "mkrom.py").write_text(MKROM)
    (tree / "src" / "util" / "catrom.pl").write_text("undef $/; print <>;\n")
    (tree / "src" / "drivers" / "net" / "intelx.c").write_text(
        'PCI_ROM ( 0x8086, 0x10f8, "combo", "combo", 0 ),\nPCI_ROM ( 0x8086, 0x10fb, "sfp", "sfp", 0 ),\n'
    )
    for name in ("COPYING", "COPYING.GPLv2", "COPYING.UBDL"):
        (tree / name).write_text(f"{name} text\n")
    git(tree, "init", "-q")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "stub")
    git(tree, "tag", "v2.0.0")
    (tree / "README").write_text("one more commit\n")
    git(tree, "add", ".")
    git(tree, "commit", "-q", "-m", "more")
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "0001-kr.patch").write_text(PATCH)
    return {"tree": tree, "patches": patches, "roms": tmp_path / "pc-bios", "build": tmp_path / "build"}


def run(stub: dict[str, Path], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {
        **os.environ,
        "BUILD_DIR": str(stub["build"]),
        "IPXE_PATCH_DIR": str(stub["patches"]),
        "IPXE_ROM_DIR": str(stub["roms"]),
        **env,
    }
    return subprocess.run(
        ["bash", str(SCRIPT), *args, f"IPXE_SRC={stub['tree']}"],
        capture_output=True, text=True, env=full_env, timeout=120, check=False,
    )  # fmt: skip


def test_install_pins_the_commit_and_check_matches(stub: dict[str, Path]) -> None:
    done = run(stub, "--install")
    assert done.returncode == 0, done.stderr
    manifest = (stub["roms"] / "ixgbe-roms.manifest").read_text()
    head = git(stub["tree"], "rev-parse", "HEAD")
    assert f"ipxe-commit {head}\n" in manifest
    assert "ipxe-commit-date 2026-01-02T03:04:05+00:00\n" in manifest
    assert "ipxe-describe v2.0.0-1-g" in manifest
    # version and timestamp come from the pin: 2.0.0 plus one commit
    assert "make CONFIG=qemu VERSION_MAJOR=2 VERSION_MINOR=0 VERSION_PATCH=0 EXTRAVERSION=+ SOURCE_DATE_EPOCH=1767323045\n" in manifest
    assert "patch 0001-kr.patch " in manifest and "compiler gcc" in manifest
    for i in IDS:
        assert f"rom efi-ixgbe-{i}.rom 8086:{i} 1024 " in manifest
        assert (stub["roms"] / f"efi-ixgbe-{i}.rom").stat().st_size == 1024
    assert "test-nbp ipxe-snponly-chain.efi " in manifest
    assert (stub["roms"] / "ipxe-COPYING.GPLv2").read_text() == "COPYING.GPLv2 text\n"

    check = run(stub, "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "MATCH: the build is the committed bytes" in check.stdout
    assert "efi-ixgbe-1517.rom: same (1024 bytes" in check.stdout


def test_check_names_the_image_that_differs(stub: dict[str, Path]) -> None:
    assert run(stub, "--install").returncode == 0
    check = run(stub, "--check", STUB_EFI="another compiler")
    assert check.returncode == 1, check.stdout + check.stderr
    out = check.stdout
    assert "MISMATCH" in out
    for i in IDS:
        assert f"efi-ixgbe-{i}.rom: DIFFERS" in out
    assert "EFI image at 0x200: 16 byte(s) differ in 0x10d..0x11c" in out
    assert "legacy x86 image" not in out, "only the EFI images changed"
    assert "ipxe-snponly-chain.efi: same" in out


def test_check_names_changed_settings_and_tampered_files(stub: dict[str, Path]) -> None:
    assert run(stub, "--install").returncode == 0
    (stub["patches"] / "0001-kr.patch").write_text(PATCH + " \n")  # same effect, other bytes
    rom = stub["roms"] / "efi-ixgbe-10fb.rom"
    rom.write_bytes(rom.read_bytes()[:-1] + b"\x01")
    check = run(stub, "--check")
    assert check.returncode == 1
    assert "efi-ixgbe-10fb.rom: the committed file is not what ixgbe-roms.manifest lists" in check.stdout
    assert "efi-ixgbe-1517.rom: same" in check.stdout
    assert "build settings that differ" in check.stdout
    assert "  committed: patch 0001-kr.patch" in check.stdout and "  built:     patch 0001-kr.patch" in check.stdout


def test_refusals(stub: dict[str, Path]) -> None:
    # nothing pinned yet
    done = run(stub, "--check")
    assert done.returncode != 0 and "nothing pins the iPXE commit" in done.stderr
    assert run(stub, "--install").returncode == 0
    # a tree at another commit than the pin
    git(stub["tree"], "checkout", "-q", "HEAD~1")
    done = run(stub, "--check")
    assert done.returncode != 0 and "the ROMs are pinned to" in done.stderr, done.stderr
    # --install records a commit: not from a tree with changes
    git(stub["tree"], "checkout", "-q", "-")
    (stub["tree"] / "README").write_text("changed\n")
    done = run(stub, "--install")
    assert done.returncode != 0 and "uncommitted changes" in done.stderr
    # an ID the driver does not know, even with the patches
    git(stub["tree"], "checkout", "-q", "--", "README")
    done = run(stub, IPXE_ROM_IDS="1517 10ed")
    assert done.returncode != 0 and "no PCI_ROM entry for 8086:10ed" in done.stderr
    # no source at all
    done = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, text=True,
                          env={**os.environ, "BUILD_DIR": str(stub["build"]), "IPXE_SRC": ""}, check=False)  # fmt: skip
    assert done.returncode != 0 and "IPXE_SRC is not set" in done.stderr
