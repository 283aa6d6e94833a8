"""Fixtures of the integration suite: a running libvirtd, the project's QEMU and guest image.

Helpers (paths, the playbook runner, virsh) are in harness.py, imported by name,
so that no test module imports a conftest.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict, Iterator

import pytest

from harness import GUEST_DIR, QEMU, REPO, URI


@pytest.fixture(scope="session")
def libvirtd() -> Iterator[str]:
    """A running libvirtd on qemu:///system (started by hand when there is no systemd)."""
    if os.geteuid() != 0:
        pytest.fail("the libvirt tests need root (qemu:///system)")
    script = str(REPO / "scripts" / "libvirtd.sh")
    was_running = subprocess.run([script, "status"], check=False, capture_output=True,
                                 timeout=60, stdin=subprocess.DEVNULL).returncode == 0
    proc = subprocess.run([script, "start"], check=False, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail("scripts/libvirtd.sh start failed: %s" % proc.stderr)
    yield URI
    if not was_running:
        subprocess.run([script, "stop"], check=False, capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def qemu_binary() -> Path:
    if not QEMU.exists():
        pytest.fail("%s is missing: build it with scripts/build-qemu.sh" % QEMU)
    return QEMU


@pytest.fixture(scope="session")
def guest_image() -> Dict[str, Path]:
    kernel, initrd = GUEST_DIR / "vmlinuz", GUEST_DIR / "initrd.img"
    if not (kernel.exists() and initrd.exists()):
        pytest.fail("guest image missing in %s: run scripts/build-guest.sh 6.1" % GUEST_DIR)
    return {"kernel": kernel, "initrd": initrd}
