"""pytest glue for the guest tests: the kernel option, VM fixtures, the
summary of figures, and the rule behind the `kernel_sensitive` marker
(README.md, "Which scenarios run on which kernel"). The options, fixtures
and hooks every VM suite shares (--qemu, --vm-log-dir, qemu, image,
log_root, require_ixgbe, logs on failure) are ixgbe_testlib.pytest_plugin's."""

from __future__ import annotations

import inspect
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


# The kernel that runs every scenario; the other runs the kernel_sensitive
# ones (`-m kernel_sensitive`, as meson's guest-6.1 does).
FULL_MATRIX_KERNEL = "6.12"

# What makes a scenario kernel-sensitive: the guest driver's code it drives
# is code that changes between the two kernels and that the device model has
# to answer (README.md). "traffic" takes a feature family, and each family
# has one marked traffic scenario.
KERNEL_SENSITIVE_AREAS = {
    "probe": "the driver's probe, reset and hardware initialisation of a part",
    "selftest": "the driver's ethtool offline self-test",
    "link": "link state: carrier, the watchdog, down/up, driver unload and reload",
    "traffic": "one traffic run per feature family, with the family's driver code",
    "sriov": "SR-IOV: the PF's VF setup, the PF/VF mailbox, ixgbevf",
    "ptp": "the PTP clock and hardware time stamps (the driver's ixgbe_ptp.c)",
}
TRAFFIC_FAMILIES = ("datapath", "rss", "flow-director", "sfp", "rsc")


# The scenarios that, on the full-matrix kernel, run against the sanitizer
# build's QEMU (meson's guest-asan, scripts/run-guest-sanitizer.sh: `-m
# sanitizer`) rather than the plain one (guest-6.12: `-m "not sanitizer"`).
SANITIZER_MARK = "sanitizer"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{SANITIZER_MARK}: on kernel {FULL_MATRIX_KERNEL} the scenario runs against the ASan/UBSan QEMU "
        "(guest-asan) instead of the plain one (guest-6.12); see tests/guest/README.md",
    )
    config.addinivalue_line(
        "markers",
        "kernel_sensitive(area, family=None): the scenario also runs on the older guest kernel "
        f"(areas: {', '.join(KERNEL_SENSITIVE_AREAS)}; traffic families: {', '.join(TRAFFIC_FAMILIES)}); "
        "see tests/guest/README.md",
    )


def _kernel_rule_errors(items: list[pytest.Item]) -> list[str]:
    """Violations of the rule: an unknown area, a traffic scenario without
    a known family, two traffic scenarios of one family, a test with a VM of
    its own (make_vm) whose docstring does not say why ("Own VM: ...")."""
    errors: list[str] = []
    traffic: dict[str, str] = {}
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        where = item.nodeid
        for mark in item.iter_markers("kernel_sensitive"):
            area = mark.args[0] if mark.args else None
            family = mark.kwargs.get("family")
            if area not in KERNEL_SENSITIVE_AREAS:
                errors.append(f"{where}: kernel_sensitive area {area!r} is not one of {list(KERNEL_SENSITIVE_AREAS)}")
            elif area == "traffic":
                if family not in TRAFFIC_FAMILIES:
                    errors.append(f"{where}: traffic family {family!r} is not one of {list(TRAFFIC_FAMILIES)}")
                    continue
                # parametrized copies of one function count once
                func = item.nodeid.split("[")[0]
                if traffic.setdefault(family, func) != func:
                    errors.append(f"{where}: a second traffic scenario of family {family!r} ({traffic[family]})")
            elif family is not None:
                errors.append(f"{where}: family= belongs to the traffic area only")
        if "make_vm" in item.fixturenames and "Own VM:" not in (inspect.getdoc(item.function) or ""):
            errors.append(f"{where}: boots a VM of its own (make_vm); its docstring must say why ('Own VM: ...')")
    return errors


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    errors = _kernel_rule_errors([i for i in items if Path(__file__).parent in i.path.parents])
    if errors:
        raise pytest.UsageError("tests/guest: the scenario rule (README.md) is broken:\n  " + "\n  ".join(errors))


def pytest_report_header(config: pytest.Config) -> list[str]:
    kernel = config.getoption("--kernel")
    lines = [f"guest kernel: {kernel}"]
    if kernel != FULL_MATRIX_KERNEL:
        lines.append(
            f"full scenario matrix: kernel {FULL_MATRIX_KERNEL}; on {kernel} `meson test` runs "
            "`-m kernel_sensitive` (tests/guest/README.md)"
        )
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
