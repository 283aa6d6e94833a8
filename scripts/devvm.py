"""Boot the project's test guest with your own kernel or driver module on the
emulated 82599 and run a command in it (scripts/devvm.sh is the entry point).

The VM is the guest image of scripts/build-guest.sh (busybox, iproute2,
ethtool, iperf3, ping and a command agent on the serial console) on the
project's QEMU, with its NICs on user-mode networking, their drivers loaded
and each port configured by DHCP before the command runs. What you bring goes
on top of that image as a second initramfs archive (see
playbooks/.../module_utils/guestimage.py):

  --module ixgbe.ko            a rebuilt module for the image's Debian kernel
  --bzimage F --modules DIR    your kernel and its `make modules_install
                               INSTALL_MOD_PATH=DIR` (--kernel-tree T: T/arch/x86/boot/bzImage)

Exit status: the command's; 124 when it timed out (the guest kills it);
2 bad input (nothing started); 3 the VM did not boot or died. Logs stay in
--log-dir (console, dmesg, agent transcript, QEMU's stderr); nothing else is
left behind.
"""
from __future__ import annotations

import argparse
import os
import re
import select
import socket
import sys
import tempfile
import termios
import time
import tty
from collections.abc import Sequence
from pathlib import Path

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils import guestimage
from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import GuestImage, build_dir, has_device
from ixgbe_testlib.vm import VM

EXIT_BAD_INPUT = 2
EXIT_NO_BOOT = 3
EXIT_TIMEOUT = 124
NIC_DEVICES = {"ixgbe": "ixgbe", "igb": "igb", "e1000e": "e1000e", "virtio": "virtio-net-pci"}
SHELL_END = b"@@GUEST-SHELL-END@@"  # scripts/guest/init prints it when the shell exits


def say(msg: str) -> None:
    print(f"[devvm] {msg}", file=sys.stderr, flush=True)


class BadInput(Exception):
    pass


class NoBoot(Exception):
    pass


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="scripts/devvm.sh",
        description="Boot a VM with the emulated Intel 82599 (and other NICs) on the project's "
        "guest image, with your own kernel or rebuilt driver module, and run a command in it.",
        epilog="examples:\n"
        "  scripts/devvm.sh -- ip -br addr                      # stock Debian 6.1 kernel\n"
        "  scripts/devvm.sh --module ixgbe.ko -- 'dmesg | grep ixgbe; ethtool eth0'\n"
        "  scripts/devvm.sh --kernel-tree ~/linux --modules /tmp/mods -- uname -r\n"
        "  scripts/devvm.sh --nic ixgbe --nic virtio --smp 4 --shell\n"
        "exit status: the command's; 124 timed out; 2 bad input; 3 the VM did not boot",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    k = p.add_argument_group("kernel")
    k.add_argument("--kernel", dest="kernel_version", choices=("6.1", "6.12"),
                   help="guest image (Debian kernel and userland) to start from; default: "
                   "the one whose kernel --module was built for, else 6.1")
    k.add_argument("--kernel-tree", type=Path, metavar="DIR",
                   help="a kernel build tree: boots DIR/arch/x86/boot/bzImage")
    k.add_argument("--bzimage", type=Path, metavar="FILE", help="kernel image to boot")
    k.add_argument("--modules", type=Path, metavar="DIR",
                   help="INSTALL_MOD_PATH of that kernel's 'make modules_install': "
                   "its NIC drivers and their dependencies go into the VM")
    k.add_argument("--module", type=Path, action="append", default=[], metavar="FILE.ko",
                   help="a rebuilt module (ixgbe.ko, ixgbevf.ko, ...) for the VM's kernel; "
                   "replaces the stock one (repeatable)")
    k.add_argument("--load", action="append", default=[], metavar="MODULE",
                   help="load this module at boot as well (repeatable)")
    k.add_argument("--append", default="", metavar="ARGS", help="more kernel command-line arguments")
    n = p.add_argument_group("network")
    n.add_argument("--nic", action="append", choices=sorted(NIC_DEVICES), metavar="MODEL",
                   help="add a NIC: ixgbe (the emulated 82599, default), igb, e1000e, virtio "
                   "(repeatable; each on its own user-mode network 10.0.2.0/24, 10.0.3.0/24, ...)")
    n.add_argument("--nics", type=int, default=1, metavar="N",
                   help="with one --nic (or none): that many of it (default 1)")
    n.add_argument("--queues", type=int, default=0, metavar="N",
                   help="combined queues per port (ethtool -L); default: the driver's (one per vCPU)")
    n.add_argument("--no-network", action="store_true",
                   help="do not load the NIC drivers or configure the ports")
    v = p.add_argument_group("VM")
    v.add_argument("--smp", type=int, default=2, metavar="N", help="vCPUs (default 2)")
    v.add_argument("--memory", type=int, default=768, metavar="MB", help="memory (default 768)")
    v.add_argument("--qemu-arg", action="append", default=[], metavar="ARG",
                   help="extra QEMU argument, one per option (repeatable), e.g. --qemu-arg=-cpu "
                   "--qemu-arg=max")
    v.add_argument("--accel", choices=("tcg", "kvm", "auto"),
                   help="accelerator (default: GUEST_ACCEL, else tcg)")
    r = p.add_argument_group("run")
    r.add_argument("--timeout", type=int, default=600, metavar="S",
                   help="seconds the command may run; then it is killed (default 600)")
    r.add_argument("--boot-timeout", type=int, default=180, metavar="S",
                   help="seconds the guest may take to come up (default 180)")
    r.add_argument("--shell", action="store_true",
                   help="an interactive shell in the guest (after the command, if any); "
                   "leave it with 'exit' or Ctrl-]")
    r.add_argument("--log-dir", type=Path, metavar="DIR",
                   help="keep the logs here (default $BUILD_DIR/devvm/<date-time>)")
    p.add_argument("command", nargs="*", help="shell command to run in the guest (after --)")
    args = p.parse_args(argv)
    if args.kernel_tree and args.bzimage:
        p.error("--kernel-tree and --bzimage both name the kernel: give one")
    if args.modules and not (args.kernel_tree or args.bzimage):
        p.error("--modules belongs to a kernel of your own: add --bzimage or --kernel-tree")
    for name, value in (("--smp", args.smp), ("--nics", args.nics), ("--timeout", args.timeout),
                        ("--boot-timeout", args.boot_timeout)):
        if value < 1:
            p.error(f"{name} must be at least 1")
    if args.queues < 0:
        p.error("--queues must not be negative")
    if args.nic and len(args.nic) > 1 and args.nics != 1:
        p.error("--nics N repeats a single --nic; with several --nic, list each")
    if not args.command and not args.shell:
        p.error("nothing to do: give a command after -- or --shell")
    return args


def nic_list(args: argparse.Namespace) -> list[str]:
    models = args.nic or ["ixgbe"]
    return models * args.nics if len(models) == 1 else models


def nic_args(models: list[str]) -> list[str]:
    out: list[str] = []
    for i, model in enumerate(models):
        out += ["-netdev", f"user,id=net{i},net=10.0.{2 + i}.0/24",
                "-device", f"{NIC_DEVICES[model]},netdev=net{i},mac=52:54:00:12:34:{0x56 + i:02x},romfile="]
    return out


def base_image(version: str) -> GuestImage:
    d = build_dir() / "guest" / version
    files = [d / "vmlinuz", d / "initrd.img", d / "manifest.txt"]
    for f in files:
        if not f.is_file():
            raise BadInput(f"guest image file {f} missing: run scripts/build-guest.sh {version}")
    release = ""
    for line in files[2].read_text().splitlines():
        if line.startswith("kernel-release "):
            release = line.split(None, 1)[1].strip()
    return GuestImage(version, files[0], files[1], release)


def choose_version(args: argparse.Namespace) -> str:
    """The base image: asked for, or the one whose kernel the modules were built for."""
    if args.kernel_version:
        return str(args.kernel_version)
    if args.module and not (args.kernel_tree or args.bzimage):
        wanted = set()
        for m in args.module:
            try:
                info = guestimage.modinfo(guestimage._decompress(str(m)), str(m))
            except (OSError, guestimage.ImageError) as exc:
                raise BadInput(str(exc)) from exc
            wanted.add(guestimage.vermagic_release(info))
        for version in ("6.1", "6.12"):
            manifest = build_dir() / "guest" / version / "manifest.txt"
            if manifest.is_file() and any(f"kernel-release {w}\n" in manifest.read_text() for w in wanted):
                return version
    return "6.1"


def prepare_image(args: argparse.Namespace, work: Path) -> GuestImage:
    base = base_image(choose_version(args))
    for m in args.module:
        if not m.is_file():
            raise BadInput(f"module {m} not found")
    kernel = kernel_image(args)
    if kernel is None and not args.module:
        return base
    initrd = work / "initrd.img"
    try:
        summary = guestimage.build_overlay(
            str(base.initrd), str(initrd), bzimage=str(kernel) if kernel else None,
            modules_dir=str(args.modules) if args.modules else None,
            module_files=[str(m) for m in args.module], extra_modules=args.load)
    except guestimage.ImageError as exc:
        raise BadInput(str(exc)) from exc
    say_overlay(summary, kernel, base)
    return GuestImage(base.kernel, kernel or base.vmlinuz, initrd, summary.release)


def kernel_image(args: argparse.Namespace) -> Path | None:
    """The bzImage of --kernel-tree or --bzimage (None: the image's own kernel)."""
    if args.kernel_tree:
        kernel: Path = args.kernel_tree / "arch" / "x86" / "boot" / "bzImage"
        if not kernel.is_file():
            raise BadInput(f"{kernel} not found: build the kernel first (make bzImage modules)")
        return kernel
    if args.bzimage:
        if not args.bzimage.is_file():
            raise BadInput(f"kernel image {args.bzimage} not found")
        return Path(args.bzimage)
    return None


def say_overlay(summary: guestimage.Summary, kernel: Path | None, base: GuestImage) -> None:
    """What the overlay changed: the kernel and its modules, or the modules replaced and added."""
    if kernel is not None:
        say(f"kernel {kernel} ({summary.release}), userland of guest image {base.kernel}"
            + (f", {len(summary.added)} modules from {summary.modules_from}"
               if summary.modules_from else ", no modules"))
    for rel in summary.replaced:
        say(f"module {rel} replaced by yours")
    if kernel is None:
        for rel in summary.added:
            say(f"module {rel} added")


def boot_failure(vm: VM, exc: Exception, boot_timeout: int) -> str:
    """Why the guest did not come up, in one sentence, from what it left behind."""
    console = vm.console_tail(200000)
    stderr = vm.stderr_tail().strip()
    panic = re.search(r"Kernel panic - not syncing: ([^\r\n]*)", console)
    if panic:
        return f"the kernel panicked: {panic.group(1).strip()}"
    if vm.exit_code not in (None, 0) and stderr:
        return f"QEMU stopped (exit {vm.exit_code}): {stderr.splitlines()[-1]}"
    if not console.strip():
        return (f"the kernel printed nothing on the serial console within {boot_timeout} s: not a "
                "bootable x86_64 kernel, or one without CONFIG_SERIAL_8250_CONSOLE")
    if "guest-init:" not in console:
        last = [ln for ln in console.splitlines() if ln.strip()][-1:]
        return ("the kernel did not reach the image's /init (it needs initramfs with gzip, "
                f"devtmpfs, the 8250 serial console); last console line: {last[0] if last else ''}")
    if not vm.alive():
        return f"the VM stopped during boot{': ' + stderr.splitlines()[-1] if stderr else ''}"
    return f"the guest agent did not answer within {boot_timeout} s ({exc})"


def strip_marker(pending: bytes, data: bytes, marker: bytes = SHELL_END) -> tuple[bytes, bytes, bool]:
    """Split console output into what can be shown now and what must wait
    (a tail that may be the start of `marker`); the marker itself is never
    shown, however the bytes were chunked. Returns (show, pending, seen)."""
    buf = pending + data
    at = buf.find(marker)
    if at >= 0:
        return buf[:at], b"", True
    keep = 0
    for n in range(min(len(marker) - 1, len(buf)), 0, -1):
        if marker.startswith(buf[-n:]):
            keep = n
            break
    return buf[:len(buf) - keep], buf[len(buf) - keep:], False


def interactive_shell(path: Path) -> str:
    """Connect the terminal (or stdin/stdout) to the guest shell on ttyS1.
    Returns why it ended: "exit" (the guest shell exited), "detach" (Ctrl-])
    or "closed" (the guest side went away)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(path))
    stdin_fd, stdout_fd = sys.stdin.fileno(), sys.stdout.fileno()
    is_tty = os.isatty(stdin_fd)
    saved = termios.tcgetattr(stdin_fd) if is_tty else None
    if is_tty:
        say("shell on the guest: leave with 'exit' or Ctrl-]")
        tty.setraw(stdin_fd)
    sock.sendall(b"\n")
    pending = b""
    stdin_open = True
    try:
        while True:
            fds = [sock] + ([stdin_fd] if stdin_open else [])
            ready, _, _ = select.select(fds, [], [], 1.0)
            if sock in ready:
                data = sock.recv(65536)
                if not data:
                    os.write(stdout_fd, pending)
                    return "closed"
                show, pending, seen = strip_marker(pending, data)
                os.write(stdout_fd, show)
                if seen:
                    return "exit"
            if stdin_open and stdin_fd in ready:
                data = os.read(stdin_fd, 4096)
                if is_tty and b"\x1d" in data:
                    return "detach"
                if not data:
                    stdin_open = False  # piped input used up: wait for the shell to finish
                    continue
                sock.sendall(data.replace(b"\n", b"\r") if is_tty else data)
    finally:
        if saved is not None:
            termios.tcsetattr(stdin_fd, termios.TCSADRAIN, saved)
        sock.close()


def run(args: argparse.Namespace) -> int:
    log_root = args.log_dir or build_dir() / "devvm" / time.strftime("%Y%m%d-%H%M%S")
    log_root.mkdir(parents=True, exist_ok=True)
    models = nic_list(args)
    with tempfile.TemporaryDirectory(prefix="devvm.") as tmp:
        image = prepare_image(args, Path(tmp))
        for model in set(models):
            if not has_device(NIC_DEVICES[model]):
                raise BadInput(f"this QEMU has no -device {NIC_DEVICES[model]}")

        def shell_port(sock_dir: Path) -> list[str]:
            if not args.shell:
                return []
            return ["-chardev", f"socket,id=shell0,path={sock_dir / 'shell'},server=on,wait=off",
                    "-serial", "chardev:shell0"]

        vm = VM(image, name="vm", log_dir=log_root, smp=args.smp, memory_mb=args.memory,
                args=nic_args(models) + list(args.qemu_arg), args_factory=shell_port,
                append=kernel_append(args), accel=args.accel, boot_timeout=args.boot_timeout)
        say(f"booting {image.release} ({image.vmlinuz}) with {len(models)} NIC(s) "
            f"{' '.join(models)}, {args.smp} vCPUs; logs in {vm.log_dir}")
        t0 = time.monotonic()
        try:
            try:
                vm.start()
            except (GuestError, HarnessError) as exc:
                raise NoBoot(boot_failure(vm, exc, args.boot_timeout)) from exc
            say(f"up in {time.monotonic() - t0:.1f} s: kernel {vm.release}")
            for line in vm.console_text().splitlines():
                if line.startswith("guest-net: "):  # scripts/guest/netsetup's report
                    say(line.removeprefix("guest-net: ").rstrip())
            rc = run_command(vm, args) if args.command else 0
            if args.shell:
                ended = interactive_shell(vm.sock_path("shell"))
                say({"exit": "the guest shell exited", "detach": "detached from the guest shell",
                     "closed": "the guest shell's port closed"}[ended])
            return rc
        except GuestError as exc:
            raise NoBoot(f"the VM failed: {exc}") from exc
        finally:
            vm.shutdown()
            say(f"logs: {vm.serial_log} (console), {vm.log_dir / 'dmesg.log'} (dmesg), "
                f"{vm.agent_log} (commands)")


def kernel_append(args: argparse.Namespace) -> str:
    """The guest image's kernel parameters for the network, modules and shell asked for."""
    append = []
    if not args.no_network:
        append.append("guest.net=dhcp")
        if args.queues:
            append.append(f"guest.queues={args.queues}")
    if args.load:
        append.append("guest.modules=" + ",".join(args.load))
    if args.shell:
        append.append("guest.shell=ttyS1")
    if args.append:
        append.append(args.append)
    return " ".join(append)


def run_command(vm: VM, args: argparse.Namespace) -> int:
    """Run the command line in the guest, its output on stdout; its exit status."""
    cmd = " ".join(args.command)
    say(f"$ {cmd}")
    res = vm.run(cmd, timeout=args.timeout)
    sys.stdout.write(res.stdout)
    sys.stdout.flush()
    if res.timed_out:
        say(f"the command did not finish within {args.timeout} s and was killed "
            f"(exit {EXIT_TIMEOUT}); console: {vm.serial_log}")
        return EXIT_TIMEOUT
    say(f"exit status {res.rc} after {res.seconds:.1f} s")
    return res.rc


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except BadInput as exc:
        say(f"ERROR: {exc}")
        return EXIT_BAD_INPUT
    except NoBoot as exc:
        say(f"ERROR: {exc}")
        return EXIT_NO_BOOT
    except HarnessError as exc:
        say(f"ERROR: {exc}")
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
