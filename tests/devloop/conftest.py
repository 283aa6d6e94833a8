"""pytest glue for the driver-developer loop: a patched ixgbe built out of tree, the CLI."""
from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ixgbe_testlib.devloop import BUILD_DIR, REPO
from ixgbe_testlib.devloop import patched_ixgbe as build_patched_ixgbe

DEVVM = REPO / "scripts" / "devvm.sh"


@dataclass(frozen=True)
class Run:
    rc: int
    stdout: str
    stderr: str
    log_dir: Path


def devvm(*args: str, log_dir: Path, timeout: float = 600, stdin: str | None = None) -> Run:
    """scripts/devvm.sh with these arguments, logs into log_dir."""
    proc = subprocess.run([str(DEVVM), "--log-dir", str(log_dir), *args], capture_output=True,
                          text=True, timeout=timeout, input=stdin,
                          stdin=None if stdin is not None else subprocess.DEVNULL)
    return Run(proc.returncode, proc.stdout, proc.stderr, log_dir / "vm")


@pytest.fixture(scope="session")
def guest_61() -> Path:
    d = BUILD_DIR / "guest" / "6.1"
    if not (d / "manifest.txt").is_file():
        pytest.fail(f"{d} missing: run scripts/build-guest.sh 6.1")
    return d


@pytest.fixture(scope="session")
def patched_ixgbe(guest_61: Path) -> Path:
    """ixgbe.ko with a probe message, built out of tree for the 6.1 guest kernel (cached)."""
    return build_patched_ixgbe()


@pytest.fixture
def no_qemu_left(tmp_path: Path) -> Iterator[None]:
    """Fails the test when a QEMU it started (its logs are under tmp_path) outlives it."""
    yield None
    left = []
    for p in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (p / "cmdline").read_bytes()
        except OSError:
            continue
        if b"qemu-system" in cmd and str(tmp_path).encode() in cmd:
            left.append(p.name)
    assert not left, f"QEMU processes left behind: {left}"
