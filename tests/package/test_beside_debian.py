"""The package beside Debian's own QEMU (qemu-system-x86 from the archive)
in a clean root: installing, upgrading and removing it leaves every file of
Debian's QEMU as dpkg installed it (dpkg --verify), its command where it
was, and that command still runs without the ixgbe device.

The steps run in file order on one root."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import apt_cache
from debpkg import BINARY, PKG, WRAPPER, CleanRoot, deb_field, repack

pytestmark = pytest.mark.usefixtures("privileged")

DEBIAN_QEMU = ("qemu-system-x86", "qemu-system-common", "qemu-system-data")
EXCLUDED = ("doc", "man", "lintian", "locale")  # the root's dpkg path-exclude
INSTALL = ["apt-get", "-q", "-y", "--no-install-recommends", "install"]


@pytest.fixture(scope="module")
def root(base: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CleanRoot]:
    r = CleanRoot(base, tmp_path_factory.mktemp("beside"), apt_cache())
    if r.run(INSTALL + ["qemu-system-x86"], timeout=900).returncode != 0:
        r.check(["apt-get", "-q", "update"], timeout=600)
        r.check(INSTALL + ["qemu-system-x86"], timeout=900)
    yield r


State = tuple[str, str, str, str]


def debian_qemu(root: CleanRoot) -> State:
    """Debian QEMU's packages and versions, what dpkg --verify says of
    their files, what its command is, and its device list's ixgbe lines
    (none). The root's dpkg leaves out documentation (path-exclude), which
    --verify lists as missing; no other file may be."""
    versions = root.check(["dpkg-query", "-W", *DEBIAN_QEMU])
    verify = root.run(["dpkg", "--verify", *DEBIAN_QEMU]).stdout
    changed = [line for line in verify.splitlines()
               if not line.startswith(tuple(f"missing     /usr/share/{d}/" for d in EXCLUDED))]
    assert not changed, "Debian's QEMU changed:\n" + "\n".join(changed)
    command = root.check(["sh", "-c", "ls -l /usr/bin/qemu-system-x86_64 | cut -d' ' -f1,5-; dpkg -S "
                          "/usr/bin/qemu-system-x86_64"])
    devices = root.check(["qemu-system-x86_64", "-nodefaults", "-machine", "none", "-device", "help"])
    assert 'name "e1000e"' in devices, devices
    return versions, verify, command, "\n".join(line for line in devices.splitlines() if "ixgbe" in line)


@pytest.fixture(scope="module")
def before(root: CleanRoot) -> State:
    state = debian_qemu(root)
    assert state[3] == "", state
    return state


def test_install(root: CleanRoot, before: State, deb: Path) -> None:
    root.add_file(deb, f"/root/{deb.name}")
    root.check(INSTALL + [f"/root/{deb.name}"], timeout=900)
    assert debian_qemu(root) == before
    assert 'name "ixgbe"' in root.check([WRAPPER, "-nodefaults", "-machine", "none", "-device", "help"])


def test_upgrade(root: CleanRoot, before: State, deb: Path, tmp_path: Path) -> None:
    version = deb_field(deb, "Version") + "+u1"
    newer = repack(deb, tmp_path, Version=version)
    root.add_file(newer, f"/root/{newer.name}")
    root.check(["dpkg", "-i", f"/root/{newer.name}"])
    assert root.check(["dpkg-query", "-W", "-f", "${Status} ${Version}", PKG]) == f"install ok installed {version}"
    assert debian_qemu(root) == before
    assert 'name "ixgbe"' in root.check([BINARY, "-nodefaults", "-machine", "none", "-device", "help"])


def test_remove(root: CleanRoot, before: State) -> None:
    root.check(["dpkg", "--purge", PKG])
    assert root.run(["test", "-e", BINARY]).returncode != 0
    assert debian_qemu(root) == before
