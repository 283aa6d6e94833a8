"""pytest glue of the package tests: the package built twice from the
existing QEMU build, and the clean root it is installed into."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from debpkg import Build, CleanRoot, build_package, rootfs_base
from ixgbe_testlib.host import build_dir

TIMINGS: dict[str, float] = {}


@pytest.fixture(scope="session")
def privileged() -> None:
    """chroot, mounts and dpkg in the clean root need root."""
    if os.geteuid() != 0:
        pytest.fail("the package tests need root (chroot, overlay mounts, dpkg in the clean root)", pytrace=False)


@pytest.fixture(scope="session")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    """The package, built by scripts/package.sh from the existing build."""
    if not (build_dir() / "qemu-build" / "qemu-system-x86_64").is_file():
        pytest.fail("no QEMU build: run scripts/build-qemu.sh (meson builds it before this suite)", pytrace=False)
    b = build_package(tmp_path_factory.mktemp("pkg-a"))
    TIMINGS["scripts/package.sh, first build"] = b.seconds
    return b


@pytest.fixture(scope="session")
def deb(build: Build) -> Path:
    return build.deb


@pytest.fixture(scope="session")
def build_again(build: Build, tmp_path_factory: pytest.TempPathFactory) -> Build:
    b = build_package(tmp_path_factory.mktemp("pkg-b"))
    TIMINGS["scripts/package.sh, second build"] = b.seconds
    return b


def apt_cache() -> Path:
    """Packages the clean roots download, kept across runs."""
    return build_dir() / "pkg-test" / "apt-archives"


@pytest.fixture(scope="session")
def base(privileged: None) -> Path:
    b = rootfs_base()
    if not (b / "usr" / "bin" / "apt-get").is_file():
        pytest.fail(f"no clean root to install into: {b} is missing (scripts/build-rootfs.sh bookworm builds it; "
                    "meson builds it before this suite)", pytrace=False)
    return b


@pytest.fixture
def fresh_root(base: Path, tmp_path: Path) -> CleanRoot:
    """A clean root of the test's own, nothing installed yet."""
    return CleanRoot(base, tmp_path / "root", apt_cache())


@pytest.fixture(scope="module")
def installed_root(base: Path, deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CleanRoot]:
    """A clean root with the package installed by apt (its Depends from Debian's archive)."""
    root = CleanRoot(base, tmp_path_factory.mktemp("installed"), apt_cache())
    root.add_file(deb, f"/root/{deb.name}")
    t0 = time.monotonic()
    seed_libvirt_apparmor(root)
    argv = ["apt-get", "-q", "-y", "--no-install-recommends", "install", f"/root/{deb.name}"]
    r = root.run(argv, timeout=900)
    if r.returncode != 0:
        # Lists older than the archive: refresh them once and retry.
        root.check(["apt-get", "-q", "update"], timeout=600)
        root.check(argv, timeout=900)
    TIMINGS["apt-get install into the clean root"] = time.monotonic() - t0
    yield root


def seed_libvirt_apparmor(root: CleanRoot) -> None:
    """libvirt's AppArmor profiles as libvirt-daemon-system installs them:
    its /etc/apparmor.d (from Debian's package, not installed: the rest of
    libvirt is not needed) and the empty site-local files its postinst
    creates."""
    script = ("cd /tmp && apt-get -q download libvirt-daemon-system && "
              "dpkg-deb --fsys-tarfile libvirt-daemon-system_*.deb | tar -x -C / ./etc/apparmor.d && "
              "rm -f libvirt-daemon-system_*.deb && "
              "install -D -m 0644 /dev/null /etc/apparmor.d/local/abstractions/libvirt-qemu && "
              "install -D -m 0644 /dev/null /etc/apparmor.d/local/usr.sbin.libvirtd")
    if root.run(["sh", "-c", script], timeout=300).returncode != 0:
        root.check(["apt-get", "-q", "update"], timeout=600)
        root.check(["sh", "-c", script], timeout=300)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("package timings")
    for name, seconds in TIMINGS.items():
        terminalreporter.write_line(f"{seconds:7.1f} s  {name}")
