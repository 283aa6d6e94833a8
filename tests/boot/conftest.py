"""pytest glue for the network boot tests: the boot ROMs, the guest image, VMs, logs on failure."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "guest"), str(HERE)]

from netboot import BootRoms, NetbootFactory, NetbootVM, find_ovmf, load_boot_roms  # noqa: E402
from vm import (  # noqa: E402
    KERNELS,
    GuestImage,
    HarnessError,
    build_dir,
    guest_image,
    has_device,
    qemu_binary,
)
from vmreport import failure_sections, remember_vm  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("boot", "network boot tests")
    group.addoption(
        "--boot-kernel",
        choices=KERNELS,
        default="6.12",
        help="guest kernel image served over TFTP (built by scripts/build-guest.sh KERNEL)",
    )
    group.addoption(
        "--ipxe-dir",
        default=None,
        help="boot ROMs made by scripts/build-ipxe.sh (default: $BUILD_DIR/ipxe)",
    )


def rom_dir(config: pytest.Config) -> Path:
    opt = config.getoption("--ipxe-dir")
    return Path(opt).resolve() if opt else build_dir() / "ipxe"


@pytest.fixture(scope="session")
def boot_roms(pytestconfig: pytest.Config) -> BootRoms:
    """The ROMs; a skip naming the reason when scripts/build-ipxe.sh could not
    get iPXE's source (--allow-unavailable), a failure when they are missing."""
    d = rom_dir(pytestconfig)
    unavailable = d / "UNAVAILABLE"
    if unavailable.is_file():
        pytest.skip(f"no boot ROMs: {unavailable.read_text().strip()}")
    try:
        return load_boot_roms(d)
    except (OSError, HarnessError) as exc:
        pytest.fail(f"boot ROMs missing in {d} (run scripts/build-ipxe.sh): {exc}", pytrace=False)


@pytest.fixture(scope="session")
def image(pytestconfig: pytest.Config) -> GuestImage:
    try:
        return guest_image(str(pytestconfig.getoption("--boot-kernel")))
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def qemu() -> Path:
    try:
        binary = qemu_binary()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    if not has_device("ixgbe", binary):
        pytest.skip(f"QEMU binary {binary} has no '-device ixgbe' (device model not built in)")
    return binary


@pytest.fixture(scope="session")
def ovmf() -> tuple[Path, Path]:
    try:
        return find_ovmf()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def make_netboot_vm(
    request: pytest.FixtureRequest, boot_roms: BootRoms, image: GuestImage, qemu: Path
) -> Iterator[NetbootFactory]:
    """make_netboot_vm(name, firmware=, machine=, romfile=) -> NetbootVM, not
    started (start() returns once the guest agent answers, else raises
    GuestError). ROMs are found by name in boot_roms' directory (-L)."""
    vms: list[NetbootVM] = []
    safe_name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid).strip("_")[:150]
    test_dir = build_dir() / "test-logs" / "boot" / safe_name
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)

    def make(name: str, **kwargs: Any) -> NetbootVM:
        vm = NetbootVM(image, name=name, log_dir=test_dir, qemu=qemu, rom_dirs=[boot_roms.directory],
                       uefi_nbp=boot_roms.uefi_nbp, **kwargs)  # fmt: skip
        vms.append(vm)
        remember_vm(request.node, vm)
        return vm

    try:
        yield make
    finally:
        for vm in vms:
            vm.shutdown()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        report.sections.extend(failure_sections(item))
    return report


_passed: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        _passed.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Exit 77 (meson's SKIP) when tests ran but every one was skipped, e.g.
    for want of boot ROMs: the run then counts as skipped, not passed."""
    if exitstatus == 0 and session.testscollected and not _passed:
        session.exitstatus = 77
