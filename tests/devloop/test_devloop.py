"""The driver-developer loop on the emulated 82599, as a developer runs it:

rebuild ixgbe out of tree with a visible change, boot it in a VM with
scripts/devvm.sh, see the change and a working link; boot a kernel of one's
own with its modules; and the ways it goes wrong (a module for another kernel,
a kernel that does not boot, a command that hangs) end with a message naming
the cause, the console log kept and nothing left running.
"""
from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import guestimage
from conftest import devvm
from ixgbe_testlib.devloop import BUILD_DIR, PROBE_MESSAGE, REPO
from ixgbe_testlib.iperf3 import HostIperf3Server

PORT_UP = re.compile(r"^eth0\s+UP\s+10\.0\.2\.15/24", re.MULTILINE)


def release_of(image_dir: Path) -> str:
    for line in (image_dir / "manifest.txt").read_text().splitlines():
        if line.startswith("kernel-release "):
            return line.split()[1]
    raise AssertionError(f"no kernel-release in {image_dir}/manifest.txt")


def test_stock_image_network_works_and_exit_status_is_the_commands(
        guest_61: Path, tmp_path: Path, no_qemu_left: None) -> None:
    with HostIperf3Server(tmp_path) as server:
        run = devvm("--", f"ip -br addr show eth0; ethtool -i eth0; "
                    f"iperf3 -c 10.0.2.2 -p {server.port} -t 2 && exit 7",
                    log_dir=tmp_path)
    assert run.rc == 7, run.stderr
    assert PORT_UP.search(run.stdout), run.stdout
    assert "driver: ixgbe" in run.stdout
    assert re.search(r"sender$", run.stdout, re.MULTILINE), run.stdout  # iperf3's summary
    assert "exit status 7" in run.stderr
    assert "eth0 (ixgbe) 10.0.2.15/24 default via 10.0.2.2" in run.stderr


def test_rebuilt_ixgbe_probes_the_emulated_82599(patched_ixgbe: Path, guest_61: Path,
                                                 tmp_path: Path, no_qemu_left: None) -> None:
    run = devvm("--module", str(patched_ixgbe), "--",
                "dmesg | grep devloop:; ip -br addr show eth0; ping -c 1 -W 10 10.0.2.2; "
                "cat /sys/module/ixgbe/taint; ethtool eth0 | grep 'Link detected'",
                log_dir=tmp_path)
    assert run.rc == 0, run.stderr + run.stdout
    assert PROBE_MESSAGE in run.stdout
    assert PORT_UP.search(run.stdout), run.stdout
    assert " 0% packet loss" in run.stdout
    assert re.search(r"^OE?$", run.stdout, re.MULTILINE), run.stdout  # taint: out-of-tree
    assert "Link detected: yes" in run.stdout
    assert "ixgbe/ixgbe.ko replaced by yours" in run.stderr
    # logs kept: the console and the guest's kernel log
    assert "Linux version " + release_of(guest_61) in (run.log_dir / "serial.log").read_text(
        errors="replace")
    assert PROBE_MESSAGE in (run.log_dir / "dmesg.log").read_text()


def test_own_kernel_with_installed_modules(patched_ixgbe: Path, guest_61: Path, tmp_path: Path,
                                           no_qemu_left: None) -> None:
    """A bzImage and the INSTALL_MOD_PATH tree of its modules_install (here
    Debian's kernel package, whose layout is the same, with depmod run as
    modules_install does), plus the rebuilt ixgbe over it."""
    pkg, version = (line.split()[1:3] for line in (guest_61 / "manifest.txt").read_text()
                    .splitlines() if line.startswith("kernel-package ")).__next__()
    deb = next((BUILD_DIR / "guest" / "debs").glob(f"{pkg}_{version.replace(':', '%3a')}_*.deb"))
    tree = tmp_path / "kernel"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], check=True)
    release = release_of(guest_61)
    subprocess.run(["depmod", "-b", str(tree), release], check=True)
    bzimage = tree / "boot" / f"vmlinuz-{release}"
    run = devvm("--bzimage", str(bzimage), "--modules", str(tree), "--module", str(patched_ixgbe),
                "--nic", "ixgbe", "--nic", "igb", "--", "uname -r; lsmod; dmesg | grep devloop:; "
                "ip -br addr", log_dir=tmp_path / "logs")
    assert run.rc == 0, run.stderr + run.stdout
    assert run.stdout.startswith(release)
    assert f"modules from {tree}" in run.stderr
    assert PROBE_MESSAGE in run.stdout
    assert re.search(r"^igb\s", run.stdout, re.MULTILINE)
    assert PORT_UP.search(run.stdout)
    assert re.search(r"^eth1\s+UP\s+10\.0\.3\.15/24", run.stdout, re.MULTILINE), run.stdout


def test_interactive_shell(guest_61: Path, tmp_path: Path, no_qemu_left: None) -> None:
    run = devvm("--shell", log_dir=tmp_path, stdin="ip -br addr show eth0\nexit\n")
    assert run.rc == 0, run.stderr
    # the terminal's echo of the input and the shell's prompts come in between
    assert re.search(r"eth0\s+UP\s+10\.0\.2\.15/24", run.stdout), run.stdout
    # devvm ended because the shell did, and its end-of-shell marker stays hidden
    assert "the guest shell exited" in run.stderr, run.stderr
    assert "GUEST-SHELL-END" not in run.stdout, run.stdout


def test_shell_end_marker_hidden_however_chunked() -> None:
    # the program scripts/devvm.py (not the conftest helper), loaded from its file
    spec = importlib.util.spec_from_file_location("devvm_script", REPO / "scripts" / "devvm.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)

    stream = b"$ exit\r\n" + script.SHELL_END + b"\r\n"
    for cut in range(1, len(stream)):
        for parts in ((stream[:cut], stream[cut:]), tuple(stream[i:i + 1] for i in range(len(stream)))):
            shown, pending, seen = b"", b"", False
            for part in parts:
                out, pending, seen = script.strip_marker(pending, part)
                shown += out
                if seen:
                    break
            assert seen and shown == b"$ exit\r\n", (cut, shown)
    # a prefix of the marker that does not become the marker is shown
    out, pending, seen = script.strip_marker(b"", b"ls @@GUEST")
    assert (out, pending, seen) == (b"ls ", b"@@GUEST", False)
    out, pending, seen = script.strip_marker(pending, b"S\r\n")
    assert (out, pending, seen) == (b"@@GUESTS\r\n", b"", False)


# ---------------------------------------------------------------- bad input
def test_module_for_another_kernel_is_refused(guest_61: Path, tmp_path: Path) -> None:
    other = BUILD_DIR / "guest" / "6.12"
    if not (other / "initrd.img").is_file():
        pytest.fail(f"{other} missing: run scripts/build-guest.sh 6.12")
    files = guestimage.read_initramfs(str(other / "initrd.img"))
    name = next(n for n in files if n.endswith("/ixgbe.ko"))
    ko = tmp_path / "ixgbe.ko"
    ko.write_bytes(files[name][1])
    run = devvm("--kernel", "6.1", "--module", str(ko), "--", "true", log_dir=tmp_path / "logs")
    assert run.rc == 2, run.stderr
    assert f"was built for kernel {release_of(other)}" in run.stderr
    assert f"the guest kernel is {release_of(guest_61)}" in run.stderr
    assert not (run.log_dir / "serial.log").exists()  # refused before any VM started


def test_file_that_is_not_a_kernel_is_refused(guest_61: Path, tmp_path: Path) -> None:
    run = devvm("--bzimage", str(guest_61 / "initrd.img"), "--", "true", log_dir=tmp_path)
    assert run.rc == 2
    assert "is not an x86 bzImage" in run.stderr


def test_kernel_that_panics(guest_61: Path, tmp_path: Path, no_qemu_left: None) -> None:
    # The kernel finds no init and no root file system: it panics and the VM stops.
    run = devvm("--append", "rdinit=/no/such/init", "--", "true", log_dir=tmp_path)
    assert run.rc == 3, run.stderr
    assert "the kernel panicked: VFS: Unable to mount root fs" in run.stderr
    assert "Kernel panic" in (run.log_dir / "serial.log").read_text(errors="replace")
    assert str(run.log_dir / "serial.log") in run.stderr


def test_kernel_that_never_starts(guest_61: Path, tmp_path: Path, no_qemu_left: None) -> None:
    # Half a kernel: the boot header is intact, the compressed kernel is not.
    data = (guest_61 / "vmlinuz").read_bytes()
    broken = tmp_path / "bzImage"
    broken.write_bytes(data[: len(data) // 2])
    run = devvm("--bzimage", str(broken), "--boot-timeout", "20", "--", "true",
                log_dir=tmp_path / "logs")
    assert run.rc == 3, run.stderr
    assert "ERROR: the kernel" in run.stderr
    assert (run.log_dir / "serial.log").exists()


def test_command_that_hangs(guest_61: Path, tmp_path: Path, no_qemu_left: None) -> None:
    run = devvm("--timeout", "5", "--", "echo started; sleep 600", log_dir=tmp_path)
    assert run.rc == 124, run.stderr
    assert "started" in run.stdout
    assert "did not finish within 5 s and was killed" in run.stderr
    assert (run.log_dir / "serial.log").exists()
    assert (run.log_dir / "dmesg.log").exists()
