"""pytest glue for the end-to-end tests: the Debian systemd guest image (built
on demand, cached by scripts/build-rootfs.sh), the QEMU binary, log
directories, step timings, and VM logs in the report of a failing test."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "guest"), str(HERE)]

from sysguest import RootfsImage, build_rootfs  # noqa: E402
from vm import HarnessError, build_dir, has_device, qemu_binary  # noqa: E402
from vmreport import failure_sections  # noqa: E402

TIMINGS: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("e2e", "end-to-end tests on the Debian systemd guest")
    group.addoption(
        "--e2e-log-dir",
        default=None,
        help="where VM logs go (default: $BUILD_DIR/test-logs/e2e)",
    )
    group.addoption(
        "--rootfs-suite",
        default="bookworm",
        choices=("bookworm",),
        help="guest image suite (default bookworm)",
    )


@pytest.fixture(scope="session")
def log_root(pytestconfig: pytest.Config) -> Path:
    opt = pytestconfig.getoption("--e2e-log-dir")
    root = Path(opt) if opt else build_dir() / "test-logs" / "e2e"
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session")
def qemu() -> Path:
    try:
        binary = qemu_binary()
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    if not has_device("ixgbe", binary):
        pytest.fail(
            f"QEMU binary {binary} has no '-device ixgbe' (build it with scripts/build-qemu.sh)",
            pytrace=False,
        )
    return binary


@pytest.fixture(scope="session")
def privileged() -> None:
    """The lab network (ip netns, taps) and the image build need root."""
    if os.geteuid() != 0:
        pytest.fail("the end-to-end tests need root (network namespace, taps, image build)", pytrace=False)


@pytest.fixture(scope="session")
def rootfs(pytestconfig: pytest.Config, log_root: Path, privileged: None) -> RootfsImage:
    """The guest image, built (or found up to date) by scripts/build-rootfs.sh."""
    suite = str(pytestconfig.getoption("--rootfs-suite"))
    try:
        image, seconds = build_rootfs(suite, log_root / "build-rootfs.log")
    except HarnessError as exc:
        pytest.fail(str(exc), pytrace=False)
    TIMINGS["image (build-rootfs.sh)"] = seconds
    return image


@pytest.fixture
def timed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Record how long a test took (printed at the end of the session)."""
    t0 = time.monotonic()
    yield
    TIMINGS[request.node.name] = time.monotonic() - t0


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("end-to-end timings")
    for name, secs in TIMINGS.items():
        terminalreporter.write_line(f"{secs:8.1f} s  {name}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        report.sections.extend(failure_sections(item))
    return report
