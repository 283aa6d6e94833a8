"""pytest glue for the guest tests: the kernel option, VM fixtures, the
summary of figures. The options, fixtures and hooks every VM suite shares
(--qemu, --vm-log-dir, qemu, image, log_root, require_ixgbe, logs on
failure) are ixgbe_testlib.pytest_plugin's."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import KERNELS, GuestImage, guest_image, qemu_binary
from ixgbe_testlib.pytest_plugin import vm_factory
from ixgbe_testlib.vm import VM, VMFactory


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guest", "guest VM tests")
    group.addoption(
        "--kernel",
        choices=KERNELS,
        default="6.1",
        help="guest kernel image to boot (built by scripts/build-guest.sh KERNEL)",
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    kernel = config.getoption("--kernel")
    lines = [f"guest kernel: {kernel}"]
    try:
        image = guest_image(kernel)
        lines.append(f"guest image: {image.release} ({image.initrd.parent})")
    except HarnessError as exc:
        lines.append(f"guest image: MISSING ({exc})")
    try:
        lines.append(f"qemu: {qemu_binary()}")
    except HarnessError as exc:
        lines.append(f"qemu: MISSING ({exc})")
    return lines


@pytest.fixture(scope="session")
def kernel(pytestconfig: pytest.Config) -> str:
    return str(pytestconfig.getoption("--kernel"))


@pytest.fixture(scope="session")
def log_name(kernel: str) -> str:
    return f"guest-{kernel}"


def _factory(
    request: pytest.FixtureRequest, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[VMFactory]:
    def new(**kwargs: Any) -> VM:
        return VM(image, qemu=qemu, **kwargs)

    yield from vm_factory(request, log_root, new, start=VM.start)


@pytest.fixture
def make_vm(
    request: pytest.FixtureRequest, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[VMFactory]:
    """make_vm(name="vm", smp=.., memory_mb=.., args=[...], append="...") -> started VM.

    Every VM made is shut down (QEMU killed) when the test ends, pass or fail.
    """
    yield from _factory(request, image, qemu, log_root)


@pytest.fixture(scope="class")
def make_class_vm(
    request: pytest.FixtureRequest, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[VMFactory]:
    """Like make_vm, for VMs shared by the tests of one class."""
    yield from _factory(request, image, qemu, log_root)


@pytest.fixture(scope="module")
def make_module_vm(
    request: pytest.FixtureRequest, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[VMFactory]:
    """Like make_vm, for VMs shared by the tests of one module."""
    yield from _factory(request, image, qemu, log_root)


_SUMMARY = pytest.StashKey[list[str]]()


@pytest.fixture(scope="session")
def record_summary(pytestconfig: pytest.Config) -> Callable[[str], None]:
    """record_summary(line): a figure worth seeing in the run's log (e.g. a
    migration downtime), printed in the terminal summary even when the test
    passes."""
    lines = pytestconfig.stash.setdefault(_SUMMARY, [])
    return lines.append


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = config.stash.get(_SUMMARY, [])
    if lines:
        terminalreporter.section("guest figures")
        for line in lines:
            terminalreporter.write_line(line)
