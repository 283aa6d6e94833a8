"""The harness itself: console agent, timeouts, kernel-log levels, QMP."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ixgbe_testlib
from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.host import GuestImage
from ixgbe_testlib.vm import VM, VMFactory


@pytest.fixture(scope="module")
def vm(make_module_vm: VMFactory) -> Iterator[VM]:
    yield make_module_vm(name="harness")


def test_exit_status_and_stderr(vm: VM) -> None:
    r = vm.run("echo out; echo err >&2; exit 7")
    assert r.rc == 7 and not r.timed_out
    assert r.stdout == "out\nerr\n"


def test_kernel_release_matches_image(vm: VM) -> None:
    assert vm.sh("uname -r").strip() == vm.image.release == vm.release


def test_timeout_kills_the_whole_command(vm: VM) -> None:
    r = vm.run("sleep 300 & sleep 301; echo not reached", timeout=2)
    assert r.timed_out and r.rc != 0
    assert "not reached" not in r.stdout
    # neither sleep survives: the agent kills the command's process group
    assert vm.run("ps -o args | grep -c '^sleep 30[01]'").stdout.strip() == "0"


def test_binary_output_arrives_intact(vm: VM) -> None:
    want = vm.sh("head -c 200000 /dev/urandom > /tmp/blob && md5sum < /tmp/blob").split()[0]
    r = vm.run("cat /tmp/blob", timeout=120)
    assert r.ok and len(r.raw) == 200000
    assert hashlib.md5(r.raw).hexdigest() == want


def test_output_survives_kernel_messages_on_the_console(vm: VM) -> None:
    """Kernel messages printed on the console while a result is in flight
    must not corrupt it (the host checks length and md5 and asks again)."""
    want = vm.sh("head -c 60000 /dev/urandom | base64 > /tmp/text && md5sum < /tmp/text").split()[0]
    # a writer of kernel messages (level 3, console level 8) that outlives
    # its command and so runs while the next result is on the wire
    vm.sh(
        "rm -f /tmp/noise.done; dmesg -n 8; "
        '(i=0; while [ $i -lt 3000 ]; do echo "<3>console noise $i" > /dev/kmsg; i=$((i+1)); done; '
        "touch /tmp/noise.done) >/dev/null 2>&1 &"
    )
    try:
        start = vm.console_position()
        r = vm.run("cat /tmp/text", timeout=120)
        vm.run("while [ ! -e /tmp/noise.done ]; do sleep 0.2; done", timeout=300)
    finally:
        vm.sh("dmesg -n 1")
    assert r.ok
    assert hashlib.md5(r.raw).hexdigest() == want
    during = vm.console_text(start)
    block = during[during.index("@@AGENT-RESULT") : during.index("@@AGENT-DONE")]
    assert "console noise" in block, "premise: kernel messages were not printed during the transfer"


def test_dmesg_levels(vm: VM) -> None:
    mark = vm.uptime()
    vm.sh("echo '<3>harness marker err' > /dev/kmsg; echo '<6>harness marker info' > /dev/kmsg")
    recs = {r.text: r for r in vm.dmesg(since=mark) if "harness marker" in r.text}
    assert recs["harness marker err"].level == 3 and recs["harness marker err"].is_warning_or_worse
    assert recs["harness marker info"].level == 6 and not recs["harness marker info"].is_warning_or_worse
    # records from before the mark are left out
    assert all(r.timestamp > mark for r in vm.dmesg(since=mark))


def test_uptime_mark_is_after_what_came_before(vm: VM) -> None:
    """A record logged just before vm.uptime() is never after its mark,
    and one logged just after it always is."""
    for i in range(8):
        vm.sh(f"echo '<4>before {i}' > /dev/kmsg")
        mark = vm.uptime()
        vm.sh(f"echo '<4>after {i}' > /dev/kmsg")
        texts = [r.text for r in vm.dmesg(since=mark)]
        assert f"before {i}" not in texts, (mark, texts)
        assert f"after {i}" in texts, (mark, texts)


def test_qmp(vm: VM) -> None:
    assert vm.qmp("query-status")["status"] == "running"
    cpus = vm.qmp("query-cpus-fast")
    assert len(cpus) == vm.smp


def test_modules_load_and_unload(vm: VM) -> None:
    for _ in range(2):
        vm.modprobe("ixgbe")
        assert "ixgbe" in vm.sh("lsmod")
        vm.rmmod("ixgbe")
        assert "ixgbe " not in vm.sh("lsmod")


def _gone(pid: int, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie child of ours is gone too
        if Path(f"/proc/{pid}/stat").exists() and " Z " in Path(f"/proc/{pid}/stat").read_text():
            return True
        time.sleep(0.2)
    return False


def test_bad_qemu_arguments_fail_fast(image: GuestImage, qemu: Path, tmp_path: Path) -> None:
    vm = VM(image, name="bad", log_dir=tmp_path, qemu=qemu, args=["-device", "no-such-nic"])
    t0 = time.monotonic()
    with pytest.raises(GuestError, match="no-such-nic"):
        vm.start()
    assert time.monotonic() - t0 < 60
    assert vm.pid is not None and _gone(vm.pid)


def test_a_guest_that_hangs_before_any_driver_boots_twice(image: GuestImage, qemu: Path, tmp_path: Path) -> None:
    """A boot that hangs before any NIC driver is loaded (here: an init
    that only waits, so the agent never starts) is tried once more with a
    warning, then fails; QEMU is gone and both boots are in the serial log."""
    vm = VM(image, name="hang", log_dir=tmp_path, qemu=qemu, append="rdinit=/bin/cat", boot_timeout=8)
    with pytest.warns(UserWarning, match="boot 1 hung before any NIC driver"), pytest.raises(
        GuestError, match="guest agent not ready"
    ):
        vm.start()
    assert vm.pid is not None and _gone(vm.pid)
    boots = vm.serial_log.read_text(errors="replace").count("Linux version")
    assert boots == 2, f"{boots} boot(s) in the serial log, expected 2"
    assert "boot 1 hung before any NIC driver was loaded" in vm.agent_log.read_text()


def test_problems_of_an_earlier_vm_of_the_same_name_are_not_this_ones(
    image: GuestImage, qemu: Path, tmp_path: Path
) -> None:
    """A rerun in the same log directory appends to qemu-stderr.log: what an
    earlier VM of the same name wrote there is not this VM's problem."""
    old = tmp_path / "again" / "qemu-stderr.log"
    old.parent.mkdir(parents=True)
    old.write_text("qemu-system-x86_64: an earlier run's complaint\n")
    vm = VM(image, name="again", log_dir=tmp_path, qemu=qemu)
    assert vm.qemu_problems() == ""
    with old.open("a") as f:
        f.write("qemu-system-x86_64: this run's complaint\n")
    assert "this run's complaint" in vm.qemu_problems()
    assert "earlier run" not in vm.qemu_problems()
    vm.shutdown()


def test_shutdown_leaves_nothing(make_vm: VMFactory) -> None:
    """Own VM: the test shuts it down."""
    vm = make_vm(name="short")
    pid, sockets = vm.pid, vm.sock_path("qmp").parent
    assert pid is not None and sockets.is_dir()
    vm.shutdown()
    assert _gone(pid), f"QEMU {pid} still running after shutdown()"
    assert not sockets.exists()
    assert (vm.log_dir / "dmesg.log").read_text().startswith("<")


def test_qemu_dies_with_a_killed_harness(image: GuestImage, qemu: Path, tmp_path: Path) -> None:
    """QEMU must not outlive a harness that is killed outright (SIGKILL,
    e.g. by a test runner's timeout): no cleanup code runs then."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; sys.path.insert(0, sys.argv[1]);"
            "from ixgbe_testlib.host import guest_image; from ixgbe_testlib.vm import VM;"
            "vm = VM(guest_image(sys.argv[2]), name='orphan', log_dir=Path(sys.argv[3]),"
            " qemu=Path(sys.argv[4]));"
            "vm.start(); print(vm.pid, flush=True); time.sleep(600)",
            str(Path(ixgbe_testlib.__file__).resolve().parents[1]),  # tests/lib, for the child's sys.path
            image.kernel,
            str(tmp_path),
            str(qemu),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), f"child harness did not start a VM: {line!r}"
        pid = int(line)
        assert not _gone(pid, timeout=0.5)
        # the killed harness cannot remove its socket directory: we will
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        sockdirs = {Path(m.group(1)) for a in cmdline for m in [re.search(r"path=(/tmp/guestvm\.[^/]+)/", a)] if m}
    finally:
        child.kill()
        child.wait()
    assert _gone(pid), f"QEMU {pid} outlived its killed harness"
    for d in sockdirs:
        shutil.rmtree(d, ignore_errors=True)
