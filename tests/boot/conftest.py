"""pytest glue for the network boot tests: the boot ROMs, the guest image's
kernel, VMs, meson's SKIP status. The options, fixtures and hooks every VM
suite shares (--qemu, --vm-log-dir, image, log_root, logs on failure) are
ixgbe_testlib.pytest_plugin's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import KERNELS, GuestImage
from ixgbe_testlib.pytest_plugin import vm_factory
from netboot import BootRoms, NetbootFactory, NetbootVM, find_ovmf, load_boot_roms


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("boot", "network boot tests")
    group.addoption(
        "--boot-kernel",
        choices=KERNELS,
        default="6.12",
        help="guest kernel image served over TFTP (built by scripts/build-guest.sh KERNEL)",
    )


@pytest.fixture(scope="session")
def boot_roms() -> BootRoms:
    """The committed ROMs (pc-bios/): a failure, never a skip, when they are missing."""
    try:
        return load_boot_roms()
    except (OSError, HarnessError) as exc:
        pytest.fail(f"boot ROMs missing (scripts/build-ipxe.sh --install): {exc}", pytrace=False)


@pytest.fixture(scope="session")
def kernel(pytestconfig: pytest.Config) -> str:
    return str(pytestconfig.getoption("--boot-kernel"))


@pytest.fixture(scope="session")
def log_name() -> str:
    return "boot"


@pytest.fixture(scope="session")
def qemu(qemu: Path, require_ixgbe: None) -> Path:
    """The plugin's QEMU binary; the tests that use it skip without -device ixgbe."""
    return qemu


@pytest.fixture(scope="session")
def ovmf() -> tuple[Path, Path]:
    try:
        return find_ovmf()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def make_netboot_vm(
    request: pytest.FixtureRequest, boot_roms: BootRoms, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[NetbootFactory]:
    """make_netboot_vm(name, firmware=, machine=, model=, romfile=) ->
    NetbootVM, not started (start() returns once the guest agent answers,
    else raises GuestError). QEMU finds the ROMs itself (its firmware path)."""

    def new(**kwargs: Any) -> NetbootVM:
        return NetbootVM(image, qemu=qemu, uefi_nbp=boot_roms.uefi_nbp, **kwargs)

    yield from vm_factory(request, log_root, new)


_passed: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        _passed.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Exit 77 (meson's SKIP) when tests ran but every one was skipped (e.g.
    a QEMU without -device ixgbe): the run then counts as skipped, not passed."""
    if exitstatus == 0 and session.testscollected and not _passed:
        session.exitstatus = 77
