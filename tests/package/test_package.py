"""scripts/package.sh: the Debian package of the patched QEMU, built from
the existing build. Its files (beside Debian's QEMU, never on its paths),
Depends computed from the binary's libraries, the version, reproducible
bytes, the copyright file, lintian, and the refusals of bad input."""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from debpkg import (
    AA_ABSTRACTIONS,
    BINARY,
    DEBIAN_QEMU_PATHS,
    DOCDIR,
    FIRMWARE_DIRS,
    LIBDIR,
    PKG,
    ROMDIR,
    WRAPPER,
    Build,
    deb_contents,
    deb_extract,
    deb_field,
    run_package_sh,
)
from ixgbe_testlib.host import REPO_ROOT, build_dir



def manifest_roms() -> list[str]:
    text = (REPO_ROOT / "pc-bios" / "ixgbe-roms.manifest").read_text(encoding="utf-8")
    return re.findall(r"^rom (\S+) ", text, re.M)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------ contents
def test_file_list(deb: Path) -> None:
    entries = deb_contents(deb)
    files = {e.path for e in entries if not e.mode.startswith("d")}
    roms = {f"{ROMDIR}/{r}" for r in manifest_roms()}
    assert len(roms) == 3, roms
    docs = {f"{DOCDIR}/{f}" for f in ("copyright", "changelog.Debian.gz", "ixgbe.rst", "ixgbe-roms.manifest")}
    links = {e.path for e in entries if e.path.startswith(f"{LIBDIR}/qemu-bundle/") and e.mode.startswith("l")}
    assert files == {BINARY, WRAPPER, *AA_ABSTRACTIONS} | roms | docs | links, sorted(files)
    by_path = {e.path: e for e in entries}
    assert by_path[BINARY].mode == "-rwxr-xr-x"
    assert by_path[WRAPPER].mode.startswith("l")
    assert posixpath.normpath(posixpath.join(posixpath.dirname(WRAPPER), by_path[WRAPPER].target)) == BINARY
    for f in roms | docs | set(AA_ABSTRACTIONS):
        assert by_path[f].mode == "-rw-r--r--", by_path[f]
    for e in entries:
        if e.mode.startswith("d"):
            assert e.mode == "drwxr-xr-x", e


def test_firmware_links_name_system_dirs_and_the_roms(deb: Path) -> None:
    """The binary's qemu-bundle: relative links to Debian's firmware
    directories and to the package's ROMs; the data directory, which QEMU
    searches whatever the build's firmware path, goes to the ROMs."""
    bundle = f"{LIBDIR}/qemu-bundle"
    links = {e.path: e.target for e in deb_contents(deb) if e.path.startswith(bundle + "/") and e.mode[0] == "l"}
    resolved: dict[str, str] = {}
    for path, target in links.items():
        assert not target.startswith("/"), f"{path} -> {target}: not relative"
        resolved[path] = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    assert set(resolved.values()) <= FIRMWARE_DIRS, resolved
    config = (build_dir() / "qemu-build" / "config-host.h").read_text(encoding="utf-8")
    datadir = re.search(r'^#define CONFIG_QEMU_DATADIR "([^"]+)"', config, re.M)
    assert datadir, "config-host.h has no CONFIG_QEMU_DATADIR"
    assert resolved.get(bundle + datadir.group(1)) == ROMDIR, resolved
    # No link leads to the checkout.
    assert not any(str(REPO_ROOT) in p or "pc-bios" in p for p in links), links


def test_nothing_on_debian_qemu_paths(deb: Path) -> None:
    for e in deb_contents(deb):
        for p in DEBIAN_QEMU_PATHS:
            assert not (e.path == p or e.path.startswith(p + "/")), f"{e.path} is on Debian QEMU's path {p}"
        assert e.path in ("/", "/usr", "/usr/bin", "/usr/lib", "/usr/share", "/usr/share/doc", WRAPPER,
                          "/etc", "/etc/apparmor.d", "/etc/apparmor.d/abstractions", *AA_ABSTRACTIONS) or \
            e.path.startswith((LIBDIR, ROMDIR, DOCDIR)), e.path


def test_conffiles_and_maintainer_scripts(deb: Path, tmp_path: Path) -> None:
    """The AppArmor abstractions are conffiles; postinst and postrm are
    the ones of scripts/package/, executable."""
    ctl = tmp_path / "ctl"
    subprocess.run(["dpkg-deb", "-e", str(deb), str(ctl)], check=True)
    assert (ctl / "conffiles").read_text(encoding="utf-8").split() == list(AA_ABSTRACTIONS)
    for script in ("postinst", "postrm"):
        assert os.access(ctl / script, os.X_OK), script
        assert (ctl / script).read_bytes() == (REPO_ROOT / "scripts" / "package" / script).read_bytes()


def test_owner_mtime_order(deb: Path) -> None:
    """root:root, every file at the commit's time, the archive in name
    order (each directory's entries sorted, depth first; dpkg-deb puts
    the symlinks last, in the same order)."""
    entries = deb_contents(deb)
    by_path = {e.path: e for e in entries}
    stamp = subprocess.run(["date", "-u", "-d", "@" + git("log", "-1", "--format=%ct"), "+%Y-%m-%d %H:%M"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert {e.owner for e in entries} == {"root/root"}
    assert {e.mtime for e in entries} == {stamp}
    paths = [e.path for e in entries]
    assert paths == sorted(paths, key=lambda p: (by_path[p].mode[0] == "l", p.split("/"))), paths


def test_binary_stripped_amd64_and_runs(deb: Path, tmp_path: Path) -> None:
    root = deb_extract(deb, tmp_path / "x")
    binary = root / BINARY.lstrip("/")
    header = subprocess.run(["readelf", "-h", str(binary)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Machine:\s+Advanced Micro Devices X86-64", header), header
    sections = subprocess.run(["readelf", "-S", "-W", str(binary)], capture_output=True, text=True,
                              check=True).stdout
    assert ".symtab" not in sections and ".debug_" not in sections, "the packaged binary is not stripped"
    assert binary.stat().st_size < (build_dir() / "qemu-build" / "qemu-system-x86_64").stat().st_size
    out = subprocess.run([str(binary), "-nodefaults", "-machine", "none", "-device", "help"],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    assert '"ixgbe"' in out, out


# ------------------------------------------------------------- control
def test_depends_computed_from_the_binary(deb: Path) -> None:
    """Depends: a versioned entry for the package of every library the
    binary links directly (dpkg-shlibdeps), and the firmware packages."""
    depends = deb_field(deb, "Depends")
    names = {d.split()[0] for alt in depends.split(",") for d in [alt.strip()]}
    assert {"seabios", "qemu-system-data", "ipxe-qemu"} <= names, depends
    assert re.search(r"libglib2\.0-0 \(>= [^)]+\)", depends), depends
    assert re.search(r"libc6 \(>= [^)]+\)", depends), depends
    binary = build_dir() / "qemu-build" / "qemu-system-x86_64"
    dyn = subprocess.run(["readelf", "-d", str(binary)], capture_output=True, text=True, check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", dyn)
    assert "libslirp.so.0" in needed and "libglib-2.0.so.0" in needed, needed
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    where = dict(re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M))
    for soname in needed:
        path = where[soname]
        alt = path[4:] if path.startswith("/usr/") else "/usr" + path
        r = subprocess.run(["dpkg", "-S", path, alt], capture_output=True, text=True, check=False)
        owners = {line.split(":")[0] for line in r.stdout.splitlines() if ": " in line}
        assert owners, f"no package owns {path} ({soname})"
        assert owners & names, f"{soname} ({path}, package {owners}) is not in Depends: {depends}"


def test_control_fields(deb: Path) -> None:
    assert deb_field(deb, "Package") == PKG
    assert deb_field(deb, "Architecture") == "amd64"
    assert deb_field(deb, "Section") == "otherosfs"
    assert int(deb_field(deb, "Installed-Size")) > 10_000
    assert "-device ixgbe" in deb_field(deb, "Description")


def test_version_names_qemu_and_the_commit(deb: Path) -> None:
    qemu = (build_dir() / "qemu-src" / "VERSION").read_text(encoding="utf-8").strip()
    version = deb_field(deb, "Version")
    m = re.fullmatch(r"(\d+\.\d+\.\d+)\+ixgbe\.(\d{8})\.g([0-9a-f]{7,})(\.dirty)?-1", version)
    assert m, version
    assert m.group(1) == qemu
    assert m.group(2) == subprocess.run(["date", "-u", "-d", "@" + git("log", "-1", "--format=%ct"), "+%Y%m%d"],
                                        capture_output=True, text=True, check=True).stdout.strip()
    assert git("rev-parse", "HEAD").startswith(m.group(3))
    assert bool(m.group(4)) == bool(git("status", "--porcelain", "--untracked-files=no"))
    assert deb.name == f"{PKG}_{version}_amd64.deb"
    subprocess.run(["dpkg", "--validate-version", version], check=True)


def test_reproducible(build: Build, build_again: Build) -> None:
    assert build.deb.name == build_again.deb.name
    assert sha256(build.deb) == sha256(build_again.deb), "two builds of one commit differ"


def test_copyright_machine_readable(deb: Path, tmp_path: Path) -> None:
    root = deb_extract(deb, tmp_path / "x")
    text = (root / DOCDIR.lstrip("/") / "copyright").read_text(encoding="utf-8")
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p]
    fields: list[dict[str, str]] = []
    for p in paragraphs:
        f: dict[str, str] = {}
        key = ""
        for line in p.splitlines():
            if line.startswith((" ", "\t")):
                assert key, f"continuation line first in a paragraph: {line!r}"
                f[key] += "\n" + line.strip()
            else:
                key, _, value = line.partition(":")
                assert _ and re.fullmatch(r"[A-Za-z-]+", key), f"not a field: {line!r}"
                f[key] = value.strip()
        fields.append(f)
    assert fields[0]["Format"] == "https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
    qemu = (build_dir() / "qemu-src" / "VERSION").read_text(encoding="utf-8").strip()
    assert f"QEMU {qemu}" in fields[0]["Comment"] and git("rev-parse", "HEAD") in fields[0]["Comment"]
    files = {f["Files"]: f for f in fields if "Files" in f}
    assert files["*"]["License"] == "GPL-2" and "QEMU" in files["*"]["Copyright"]
    assert "GPL-2.0-or-later" in files["*"]["Comment"]
    rom = files["usr/share/qemu-ixgbe/*"]
    assert rom["License"] == "GPL-2" and "iPXE" in rom["Copyright"] and "UBDL" in rom["Comment"]
    standalone = {f["License"].split("\n")[0]: f["License"] for f in fields if "Files" not in f and "License" in f}
    for f in files.values():
        name = f["License"].split("\n")[0]
        assert name in standalone, f"licence {name} has no paragraph of its own"
    for name, body in standalone.items():
        assert "/usr/share/common-licenses/GPL-2" in body, name
    assert Path("/usr/share/common-licenses/GPL-2").is_file()


@pytest.mark.usefixtures("privileged")
def test_lintian_no_errors(deb: Path) -> None:
    if not shutil.which("lintian"):
        pytest.fail("lintian is not installed (scripts/deps.sh installs scripts/deps/apt-package.txt)", pytrace=False)
    r = subprocess.run(["lintian", "--allow-root", "--fail-on", "error", "--no-tag-display-limit", str(deb)],
                       capture_output=True, text=True, check=False, timeout=600)
    errors = [line for line in r.stdout.splitlines() if line.startswith("E:")]
    assert r.returncode == 0 and not errors, f"lintian (exit {r.returncode}):\n{r.stdout}\n{r.stderr}"


# ----------------------------------------------------------- bad input
def fake_build(tmp_path: Path, binary: Path | None) -> Path:
    """A build directory with the real build's configuration and VERSION and the given binary."""
    b = tmp_path / "build"
    (b / "qemu-build").mkdir(parents=True)
    (b / "qemu-src").mkdir()
    shutil.copyfile(build_dir() / "qemu-src" / "VERSION", b / "qemu-src" / "VERSION")
    shutil.copyfile(build_dir() / "qemu-build" / "config-host.h", b / "qemu-build" / "config-host.h")
    if binary:
        shutil.copyfile(binary, b / "qemu-build" / "qemu-system-x86_64")
        os.chmod(b / "qemu-build" / "qemu-system-x86_64", 0o755)
    return b


def refused(tmp_path: Path, env: dict[str, str]) -> str:
    out = tmp_path / "out"
    r = run_package_sh(out, env)
    assert r.returncode != 0, r.stderr
    if out.is_dir():
        assert not list(out.glob("*.deb")), "a refused build left a package"
    return r.stderr


def test_no_build_is_a_clear_error(tmp_path: Path) -> None:
    err = refused(tmp_path, {"BUILD_DIR": str(fake_build(tmp_path, None))})
    assert "no QEMU build" in err and "scripts/build-qemu.sh" in err, err


def test_binary_of_another_arch_is_refused(tmp_path: Path) -> None:
    """An ELF for AArch64 (a small x86-64 program with its e_machine set to 183)."""
    elf = bytearray(Path("/bin/true").read_bytes())
    assert elf[:4] == b"\x7fELF"
    elf[18:20] = (183).to_bytes(2, "little")
    other = tmp_path / "aarch64"
    other.write_bytes(bytes(elf))
    err = refused(tmp_path, {"BUILD_DIR": str(fake_build(tmp_path, other))})
    assert "AArch64" in err and "not amd64" in err, err


def test_non_amd64_host_is_refused(tmp_path: Path) -> None:
    """dpkg saying the host is arm64 (a dpkg in front of the real one on PATH)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "dpkg").write_text('#!/bin/sh\n[ "$1" = --print-architecture ] && { echo arm64; exit 0; }\n'
                               f'exec {shutil.which("dpkg")} "$@"\n')
    os.chmod(shim / "dpkg", 0o755)
    err = refused(tmp_path, {"PATH": f"{shim}:{os.environ['PATH']}"})
    assert "this host is arm64" in err, err
