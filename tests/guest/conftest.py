"""pytest glue for the guest tests: options, VM fixtures, logs on failure."""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from vm import (
    KERNELS,
    VM,
    GuestImage,
    HarnessError,
    VMFactory,
    build_dir,
    guest_image,
    has_device,
    qemu_binary,
)
from vmreport import failure_sections, remember_vm  # noqa: E402


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("guest", "guest VM tests")
    group.addoption(
        "--kernel",
        choices=KERNELS,
        default="6.1",
        help="guest kernel image to boot (built by scripts/build-guest.sh KERNEL)",
    )
    group.addoption(
        "--qemu",
        default=None,
        help="QEMU binary to test (default: $QEMU, else $BUILD_DIR/qemu-build/qemu-system-x86_64), "
        "e.g. a sanitizer build",
    )
    group.addoption(
        "--guest-log-dir",
        default=None,
        help="where each test's VM logs go (default: $BUILD_DIR/test-logs/guest-<kernel>)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # --qemu wins over $QEMU: the harness (vm.qemu_binary) reads the variable
    path = config.getoption("--qemu", default=None)
    if path:
        os.environ["QEMU"] = str(Path(path).resolve())


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
def image(kernel: str) -> GuestImage:
    try:
        return guest_image(kernel)
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def qemu() -> Path:
    try:
        return qemu_binary()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def log_root(pytestconfig: pytest.Config, kernel: str) -> Path:
    opt = pytestconfig.getoption("--guest-log-dir")
    root = Path(opt) if opt else build_dir() / "test-logs" / f"guest-{kernel}"
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def require_ixgbe(qemu: Path) -> None:
    """Skip (with the reason) when the QEMU binary has no ixgbe device."""
    if not has_device("ixgbe", qemu):
        pytest.skip(f"QEMU binary {qemu} has no '-device ixgbe' (device model not built in)")


def _safe_name(nodeid: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:150]


def _factory(
    request: pytest.FixtureRequest, image: GuestImage, qemu: Path, log_root: Path
) -> Iterator[VMFactory]:
    vms: list[VM] = []
    test_dir = log_root / _safe_name(request.node.nodeid)
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)

    def make(name: str = "vm", **kwargs: Any) -> VM:
        vm = VM(image, name=name, log_dir=test_dir, qemu=qemu, **kwargs)
        vms.append(vm)
        # make the logs of this VM reachable from every test that uses it
        remember_vm(request.node, vm)
        return vm.start()

    try:
        yield make
    finally:
        for vm in vms:
            vm.shutdown()


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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        report.sections.extend(failure_sections(item))
    return report
