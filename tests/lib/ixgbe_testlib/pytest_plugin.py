"""pytest options, fixtures and hooks shared by the suites that boot guests
(tests/guest, tests/e2e, tests/boot, tests/devloop). Registered once, by
tests/conftest.py (`pytest_plugins`); a suite's conftest adds what is its
own and may override a fixture here (e.g. `qemu`, to demand -device ixgbe).

Options: `--qemu PATH` (wins over $QEMU), `--vm-log-dir DIR` (default
$BUILD_DIR/test-logs/<the suite's `log_name`>).

Fixtures: `qemu` (the binary; fails when it is missing), `require_ixgbe`
(skips when the binary has no -device ixgbe), `image` (the guest image of
the suite's `kernel` fixture), `log_root` (the suite's log directory).
`vm_factory()` is the body of a suite's VM-making fixture: every VM made is
remembered for the failure report and shut down when the fixture ends.

A failing test's report carries the logs of every VM it used
(ixgbe_testlib.vmreport).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import GuestImage, build_dir, guest_image, has_device, qemu_binary
from ixgbe_testlib.vmreport import failure_sections, remember_vm

if TYPE_CHECKING:  # the plugin loads for every suite under tests/: no QMP client needed for that
    from ixgbe_testlib.vm import VM

V = TypeVar("V", bound="VM")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("vm", "tests that boot guests (ixgbe_testlib)")
    group.addoption(
        "--qemu",
        default=None,
        help="QEMU binary to test (default: $QEMU, else $BUILD_DIR/qemu-build/qemu-system-x86_64), "
        "e.g. a sanitizer build",
    )
    group.addoption(
        "--vm-log-dir",
        default=None,
        help="where each test's VM logs go (default: $BUILD_DIR/test-logs/<suite>, "
        "e.g. guest-6.1, e2e, boot)",
    )


def pytest_configure(config: pytest.Config) -> None:
    # --qemu wins over $QEMU: the harness (ixgbe_testlib.host.qemu_binary) reads the variable
    path = config.getoption("--qemu", default=None)
    if path:
        os.environ["QEMU"] = str(Path(path).resolve())


@pytest.fixture(scope="session")
def qemu() -> Path:
    try:
        return qemu_binary()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def require_ixgbe(qemu: Path) -> None:
    """Skip (with the reason) when the QEMU binary has no ixgbe device."""
    if not has_device("ixgbe", qemu):
        pytest.skip(f"QEMU binary {qemu} has no '-device ixgbe' (device model not built in)")


@pytest.fixture(scope="session")
def image(kernel: str) -> GuestImage:
    """The guest image of the suite's `kernel` fixture (scripts/build-guest.sh)."""
    try:
        return guest_image(kernel)
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def log_root(pytestconfig: pytest.Config, log_name: str) -> Path:
    """--vm-log-dir, else $BUILD_DIR/test-logs/<log_name> (the suite's fixture)."""
    opt = pytestconfig.getoption("--vm-log-dir")
    root = Path(opt) if opt else build_dir() / "test-logs" / log_name
    root.mkdir(parents=True, exist_ok=True)
    return root


def vm_log_dir(log_root: Path, node: pytest.Item | pytest.Collector) -> Path:
    """A fresh directory under log_root named after the test (or its module, class)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", node.nodeid).strip("_")[:150]
    d = log_root / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def vm_factory(
    request: pytest.FixtureRequest,
    log_root: Path,
    new: Callable[..., V],
    start: Callable[[V], V] | None = None,
) -> Iterator[Callable[..., V]]:
    """Yields make(name, **kwargs) -> new(name=name, log_dir=<the test's log
    directory>, **kwargs), then start(vm) when given. Every VM made is
    remembered for the failure report and shut down at the end, pass or fail."""
    vms: list[V] = []
    test_dir = vm_log_dir(log_root, request.node)

    def make(name: str = "vm", **kwargs: Any) -> V:
        vm = new(name=name, log_dir=test_dir, **kwargs)
        vms.append(vm)
        # make the logs of this VM reachable from every test that uses it
        remember_vm(request.node, vm)
        return start(vm) if start is not None else vm

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
