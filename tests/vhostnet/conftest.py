"""pytest glue for the vhostnet suite: a QEMU binary with -device ixgbe, root
(network namespace, taps, the image build). The options, fixtures and hooks
every VM suite shares are ixgbe_testlib.pytest_plugin's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ixgbe_testlib.host import has_device


@pytest.fixture(scope="session")
def log_name() -> str:
    return "vhostnet"


@pytest.fixture(scope="session")
def qemu(qemu: Path) -> Path:
    """The plugin's QEMU binary, which here must have -device ixgbe."""
    if not has_device("ixgbe", qemu):
        pytest.fail(f"QEMU binary {qemu} has no '-device ixgbe' (build it with scripts/build-qemu.sh)",
                    pytrace=False)
    return qemu


@pytest.fixture(scope="session")
def privileged() -> None:
    if os.geteuid() != 0:
        pytest.fail("the vhostnet suite needs root (network namespace, taps, image build)", pytrace=False)
