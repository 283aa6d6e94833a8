"""A real vhost-user backend for the tests: DPDK's testpmd with the net_vhost vdev.

testpmd runs interactively on a pipe and is never told to `start` forwarding, so
its lcores block instead of busy-polling; the vhost library still accepts QEMU's
connection and runs its own threads. Memory comes from malloc (--no-huge), no
shared config is written (--no-shconf); only an empty runtime directory
/var/run/dpdk/<prefix> is left by EAL, which stop() removes.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import List, Optional

import pytest

RUN_DIR = Path("/var/run/dpdk")


def find_testpmd() -> str:
    """dpdk-testpmd, or a skip naming the package (a failure where CI=... is set)."""
    found = shutil.which("dpdk-testpmd")
    if not found:
        msg = ("dpdk-testpmd not installed (Debian package dpdk-dev, listed in "
               "scripts/deps/apt-ansible.txt): run scripts/deps.sh")
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return found


class Testpmd:
    """One testpmd process serving one vhost-user socket (vhost-user server, QEMU connects)."""

    __test__ = False  # not a pytest test class

    def __init__(self, socket_path: Path, prefix: str, lcore_cpus: List[int],
                 queues: int = 1) -> None:
        self.socket = socket_path
        self.prefix = prefix
        self.cpus = ",".join(str(c) for c in sorted(lcore_cpus))
        self.queues = queues
        self.log = socket_path.with_suffix(".%s.log" % prefix)
        self.proc: Optional[subprocess.Popen[str]] = None
        self._made_run_dir = False

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 30) -> "Testpmd":
        # two lcores, both allowed on all the given CPUs: the role must narrow them
        cmd = [find_testpmd(), "--no-pci", "--no-huge", "-m", "64", "--no-shconf",
               "--no-telemetry", "--file-prefix", self.prefix,
               "--lcores", "(0,1)@(%s)" % self.cpus,
               "--vdev", "net_vhost0,iface=%s,queues=%d,client=0" % (self.socket, self.queues),
               "--", "-i", "--rxq=%d" % self.queues, "--txq=%d" % self.queues,
               "--total-num-mbufs=2048", "--no-mlockall"]
        self._made_run_dir = not RUN_DIR.exists()
        with open(self.log, "w", encoding="utf-8") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if self.socket.exists() and "testpmd>" in self.log.read_text(errors="replace"):
                return self
            time.sleep(0.2)
        out = self.log.read_text(errors="replace")[-3000:]
        self.stop()
        raise AssertionError("testpmd did not come up on %s: %s" % (self.socket, out))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.flush()
                self.proc.wait(20)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(10)
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
        self.socket.unlink(missing_ok=True)
        shutil.rmtree(RUN_DIR / self.prefix, ignore_errors=True)
        if self._made_run_dir:
            try:
                RUN_DIR.rmdir()
            except OSError:
                pass  # not empty: someone else's DPDK runs there
