"""pytest glue for the end-to-end tests: the Debian systemd guest image (built
on demand, cached by scripts/build-rootfs.sh), a QEMU binary with -device
ixgbe, the systemd guest the nettune modules share, step timings. The
options, fixtures and hooks every VM suite shares (--qemu, --vm-log-dir,
log_root, VM logs in the report of a failing test) are
ixgbe_testlib.pytest_plugin's."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ixgbe_testlib.errors import HarnessError
from ixgbe_testlib.host import has_device
from ixgbe_testlib.sysguest import Lab, RootfsImage, SystemdVM, build_rootfs, ixgbe_wire, pick_accel, virtio_wire
from ixgbe_testlib.vmreport import remember_vm

TIMINGS: dict[str, float] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("e2e", "end-to-end tests on the Debian systemd guest")
    group.addoption(
        "--rootfs-suite",
        default="bookworm",
        choices=("bookworm",),
        help="guest image suite (default bookworm)",
    )


@pytest.fixture(scope="session")
def log_name() -> str:
    return "e2e"


@pytest.fixture(scope="session")
def qemu(qemu: Path) -> Path:
    """The plugin's QEMU binary, which here must have -device ixgbe (a failure, not a skip)."""
    if not has_device("ixgbe", qemu):
        pytest.fail(
            f"QEMU binary {qemu} has no '-device ixgbe' (build it with scripts/build-qemu.sh)",
            pytrace=False,
        )
    return qemu


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


# ------------------------------------------------ the nettune modules' guest
NETTUNE_VCPUS = 4


@dataclasses.dataclass
class NettuneGuest:
    """The systemd guest test_nettune_e2e.py and test_nettune_managers.py share."""

    vm: SystemdVM
    lab: Lab
    # nettune installed from NETTUNE_SRC with guest/install.sh (test_nettune_e2e.py)
    nettune_installed: bool = False
    # NetworkManager and tuned started (test_nettune_managers.py): from then on the
    # guest is no longer the image as booted, which test_nettune_e2e.py needs
    managers: bool = False


@pytest.fixture(scope="session")
def nettune_guest(request: pytest.FixtureRequest, rootfs: RootfsImage, qemu: Path,
                  log_root: Path) -> Iterator[NettuneGuest]:
    """One boot for both nettune modules: 4 vCPUs, 1 GiB, the ixgbe port and a
    virtio-net port with 4 queue pairs on a multiqueue tap, in a lab network
    namespace. test_nettune_e2e.py runs first, on the guest as the image boots
    (systemd-networkd owns both ports; NetworkManager and tuned are installed
    but masked); test_nettune_managers.py then hands the ixgbe port to
    NetworkManager and starts tuned. meson runs the files in that order, and so
    does `pytest tests/e2e` (alphabetical)."""
    with Lab([ixgbe_wire(0), virtio_wire(1, queues=NETTUNE_VCPUS)]) as lab:
        vm = SystemdVM(
            rootfs, lab=lab, name="debian", log_dir=log_root / "nettune", smp=NETTUNE_VCPUS, memory_mb=1024,
            accel=pick_accel(log_root), qemu=qemu,
        )  # fmt: skip
        remember_vm(request.node, vm)
        try:
            t0 = time.monotonic()
            vm.start()
            TIMINGS["nettune guest: boot to agent"] = time.monotonic() - t0
            yield NettuneGuest(vm, lab)
        finally:
            vm.shutdown()


@pytest.fixture
def timed(request: pytest.FixtureRequest) -> Iterator[None]:
    """Record how long a test took (printed at the end of the session)."""
    t0 = time.monotonic()
    yield
    TIMINGS[request.node.name] = time.monotonic() - t0


@pytest.fixture(scope="session")
def dpdk_viommu_guest(request: pytest.FixtureRequest, rootfs: RootfsImage, qemu: Path, log_root: Path) -> Iterator[Any]:
    """test_dpdk_pmd.py's vfio-viommu guest, booted once for the session: that
    file's steps for the binding run on it, then test_dpdk_vf.py's on VFs of
    its port 0 (one boot for both files)."""
    from test_dpdk_pmd import VFIO_VIOMMU, dpdk_guest

    with dpdk_guest(VFIO_VIOMMU, rootfs, qemu, log_root, request.node) as guest:
        yield guest


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("end-to-end timings")
    for name, secs in TIMINGS.items():
        terminalreporter.write_line(f"{secs:8.1f} s  {name}")
