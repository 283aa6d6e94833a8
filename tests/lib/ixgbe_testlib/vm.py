"""Boot a test guest under our QEMU and drive it.

A `VM` is one QEMU process running the project's guest image
(`$BUILD_DIR/guest/<kernel>/{vmlinuz,initrd.img}`, made by
scripts/build-guest.sh) with direct kernel boot on q35. It is driven through

- QMP, over a unix socket the harness listens on (`vm.qmp("set_link", ...)`);
- the serial console, where the image's agent (scripts/guest/guest-agent)
  runs shell commands: `vm.run("ethtool eth0") -> Result(rc, stdout)`.

Every VM writes its logs into its own directory: QEMU's stderr
(`qemu-stderr.log`), QEMU's `-d guest_errors` log (`qemu-debug.log`), the raw
console (`serial.log`), every command and its output (`agent.log`) and the
guest's kernel log at shutdown (`dmesg.log`).

Environment (and those of ixgbe_testlib.host: QEMU, BUILD_DIR,
GUEST_TIMEOUT_SCALE):
  GUEST_ACCEL          tcg (default), kvm, or auto: use KVM only if a real
                       boot under KVM works (probed once, result cached)
  GUEST_TCG_THREAD     single or multi: TCG's threading (default QEMU's)
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import logging
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from qemu.qmp.legacy import QEMUMonitorProtocol

from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import (
    FIRMWARE_DIRS,
    GuestImage,
    build_dir,
    die_with_parent,
    qemu_binary,
    scaled,
    tcg_delay_calibration,
)
from ixgbe_testlib.iperf3 import iperf3_report
from ixgbe_testlib.parsers import (
    KmsgRecord,
    RssConfig,
    SelfTest,
    parse_channels,
    parse_dmesg_raw,
    parse_ethtool_settings,
    parse_ethtool_stats,
    parse_interrupts,
    parse_rss,
    parse_selftest,
    strip_kernel_messages,
)

log = logging.getLogger("guest")

T = TypeVar("T")


class CommandFailed(GuestError):
    def __init__(self, result: Result) -> None:
        self.result = result
        super().__init__(
            f"guest command failed (rc={result.rc}{', timed out' if result.timed_out else ''}): "
            f"{result.cmd}\n--- output ---\n{result.stdout}"
        )


@dataclasses.dataclass(frozen=True)
class Result:
    cmd: str
    rc: int
    stdout: str  # stdout and stderr together
    timed_out: bool
    seconds: float
    raw: bytes = dataclasses.field(default=b"", repr=False)  # the output, undecoded

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out

    def check(self) -> Result:
        if not self.ok:
            raise CommandFailed(self)
        return self


# ------------------------------------------------------------------- accel
def _kvm_usable() -> bool:
    return os.access("/dev/kvm", os.R_OK | os.W_OK)


def choose_accel(image: GuestImage, qemu: Path, log_dir: Path) -> str:
    """tcg, or kvm when asked for (GUEST_ACCEL=kvm) or when a probe boot works."""
    want = os.environ.get("GUEST_ACCEL", "tcg").strip().lower()
    if want in ("tcg", "kvm"):
        if want == "kvm" and not _kvm_usable():
            raise HarnessError("GUEST_ACCEL=kvm but /dev/kvm is not usable")
        return want
    if want != "auto":
        raise HarnessError(f"GUEST_ACCEL must be tcg, kvm or auto, got {want!r}")
    if not _kvm_usable():
        return "tcg"
    st = qemu.stat()
    key = f"{qemu}:{st.st_mtime_ns}:{os.uname().release}:{image.release}"
    cache = build_dir() / "guest" / "accel-probe.json"
    try:
        cached = json.loads(cache.read_text())
        if cached.get("key") == key:
            return str(cached["accel"])
    except (OSError, ValueError, KeyError):
        pass
    # A real boot: KVM_CREATE_VM can work on hosts where a guest never runs.
    accel = "tcg"
    probe = VM(image, name="kvm-probe", log_dir=log_dir, accel="kvm", boot_timeout=30.0, qemu=qemu)
    try:
        probe.start()
        if probe.run("echo kvm-ok", timeout=10).stdout.strip() == "kvm-ok":
            accel = "kvm"
    except (GuestError, HarnessError) as exc:
        log.info("KVM probe boot failed, using TCG: %s", exc)
    finally:
        probe.shutdown()
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "accel": accel}))
    return accel


# ----------------------------------------------------------------- console
_RESULT_RE = re.compile(rb"@@AGENT-RESULT ([0-9a-f]+) (-?\d+) ([01]) (\d+) ([0-9a-f]{32})@@")
_NOT_B64 = re.compile(rb"[^A-Za-z0-9+/=]")
# the agent's greeting, or an RCU stall reported while the kernel boots
_BOOT_RE = re.compile(rb"@@AGENT-READY (\S+)@@|(rcu: INFO: \S+ detected (?:expedited )?stalls)")
# what PID 1 prints first (scripts/guest/init): the kernel reached userspace
_INIT_STARTED = b"guest-init:"
# A boot that hangs before any NIC driver is loaded (the drivers are
# modules, loaded before the agent starts only with guest.modules= or
# guest.net=) cannot be the device's doing: multi-threaded TCG now and then
# leaves a vCPU spinning in early boot (docs/hardening.md). Such a boot is
# tried once more, with a warning. A hang after a driver load, or a QEMU
# that exits, fails at once.
BOOT_ATTEMPTS = 2


class _EarlyBootHang(GuestError):
    """The guest hung before any NIC driver was loaded; QEMU still runs."""


class _Console:
    """Reads the serial socket into a buffer (and serial.log) on a thread."""

    def __init__(self, sock: socket.socket, logfile: Path) -> None:
        self._sock = sock
        self._buf = bytearray()
        self._cond = threading.Condition()
        self._closed = False
        self._log = logfile.open("ab", buffering=0)
        self._thread = threading.Thread(target=self._reader, name="serial-reader", daemon=True)
        self._thread.start()

    def _reader(self) -> None:
        try:
            while True:
                try:
                    data = self._sock.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    break
                self._log.write(data)
                with self._cond:
                    self._buf += data
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, data: bytes) -> None:
        self._sock.sendall(data)

    def size(self) -> int:
        with self._cond:
            return len(self._buf)

    def wait_for(
        self,
        pattern: re.Pattern[bytes],
        start: int,
        deadline: float,
        alive: Callable[[], bool],
        clean: Callable[[bytes], bytes] | None = None,
    ) -> re.Match[bytes] | None:
        """First match of `pattern` in the stream from `start` on (after
        `clean` when given), waiting until `deadline`."""
        with self._cond:
            while True:
                if clean is None:
                    m = pattern.search(self._buf, start)
                else:
                    m = pattern.search(clean(bytes(self._buf[start:])))
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or self._closed or not alive():
                    return None
                self._cond.wait(min(left, 0.5))

    def text(self, start: int = 0, end: int | None = None) -> bytes:
        with self._cond:
            return bytes(self._buf[start:end])

    def close(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._sock.close()
        self._thread.join(timeout=5)
        self._log.close()


# ----------------------------------------------------------------------- VM
class VM:
    """One QEMU process with the test guest. Use as a context manager, or
    call start() and shutdown() (shutdown always kills QEMU)."""

    # how often start() boots when the guest hangs before a NIC driver loads
    boot_attempts = BOOT_ATTEMPTS

    def __init__(
        self,
        image: GuestImage,
        *,
        name: str = "vm",
        log_dir: Path,
        smp: int = 1,
        memory_mb: int = 768,
        args: Sequence[str] = (),
        args_factory: Callable[[Path], Sequence[str]] | None = None,
        append: str = "",
        accel: str | None = None,
        qemu: Path | None = None,
        boot_timeout: float = 180.0,
        incoming: str | None = None,
    ) -> None:
        if smp < 1 or memory_mb < 128:
            raise HarnessError(f"bad VM size: smp={smp} memory={memory_mb}M")
        self.image = image
        self.name = name
        self.qemu = qemu or qemu_binary()
        self.smp = smp
        self.memory_mb = memory_mb
        self.extra_args = list(args)
        self.append = append
        self.accel = accel
        self.boot_timeout = boot_timeout
        # `-incoming URI`: the VM waits for a migration stream instead of booting
        self.incoming = incoming
        self.log_dir = log_dir / name
        self.log_dir.mkdir(parents=True, exist_ok=True)
        # unix socket paths must stay short (108 bytes): use a private tmp dir
        self._sock_dir = Path(tempfile.mkdtemp(prefix="guestvm.", dir="/tmp"))
        if args_factory is not None:
            # arguments that name sockets in the VM's private directory
            self.extra_args += list(args_factory(self._sock_dir))
        self.stderr_log = self.log_dir / "qemu-stderr.log"
        self.debug_log = self.log_dir / "qemu-debug.log"
        self.serial_log = self.log_dir / "serial.log"
        self.agent_log = self.log_dir / "agent.log"
        # QEMU's stderr is appended to the log (a second boot of this VM
        # adds to it); an earlier VM of the same name in the same directory
        # (a rerun) left its part before this offset. QEMU truncates its -D
        # log itself.
        self._stderr_start = self.stderr_log.stat().st_size if self.stderr_log.exists() else 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._console: _Console | None = None
        self._qmp: QEMUMonitorProtocol | None = None
        self._lock = threading.Lock()
        self._agent_fh = self.agent_log.open("a", encoding="utf-8")
        self.release = ""
        self._ready = False  # the agent answered
        self._marks = 0  # uptime() marks written to the kernel log

    # -------------------------------------------------------------- paths
    def sock_path(self, name: str) -> Path:
        """A short path for a unix socket that belongs to this VM."""
        return self._sock_dir / name

    # ---------------------------------------------------------- lifecycle
    def command_line(self, accel: str) -> list[str]:
        for d in FIRMWARE_DIRS:
            if not d.is_dir():
                raise HarnessError(f"firmware directory {d} missing (Debian packages qemu-system-data, seabios)")
        cmdline = " ".join(
            p
            for p in (
                "console=ttyS0,115200",
                "printk.time=1",
                "panic=-1",
                "oops=panic",
                "log_buf_len=8M",
                "printk.devkmsg=on",
                tcg_delay_calibration() if accel == "tcg" else "",
                self.append,
            )
            if p
        )
        return [
            str(self.qemu),
            "-name", f"guest={self.name},debug-threads=on",
            "-machine", "q35",
            "-accel", self._accel_option(accel),
            "-smp", str(self.smp),
            "-m", f"{self.memory_mb}M",
            "-nodefaults",
            "-no-user-config",
            "-display", "none",
            "-no-reboot",
            "-L", str(FIRMWARE_DIRS[0]),
            "-L", str(FIRMWARE_DIRS[1]),
            "-kernel", str(self.image.vmlinuz),
            "-initrd", str(self.image.initrd),
            "-append", cmdline,
            "-chardev", f"socket,id=con0,path={self.sock_path('serial')}",
            "-serial", "chardev:con0",
            "-chardev", f"socket,id=qmp0,path={self.sock_path('qmp')}",
            "-mon", "chardev=qmp0,mode=control",
            "-D", str(self.debug_log),
            "-d", "guest_errors",
            *self.extra_args,
            *(["-incoming", self.incoming] if self.incoming else []),
        ]  # fmt: skip

    @staticmethod
    def _accel_option(accel: str) -> str:
        """-accel value; GUEST_TCG_THREAD=single|multi picks TCG's threading
        (one host thread for all vCPUs is steadier on an overloaded host)."""
        thread = os.environ.get("GUEST_TCG_THREAD", "").strip()
        if accel != "tcg" or not thread:
            return accel
        if thread not in ("single", "multi"):
            raise HarnessError(f"GUEST_TCG_THREAD must be single or multi, got {thread!r}")
        return f"tcg,thread={thread}"

    def start(self) -> VM:
        if self._proc is not None:
            raise HarnessError(f"VM {self.name} already started")
        accel = self.accel or choose_accel(self.image, self.qemu, self.log_dir.parent)
        for attempt in range(1, self.boot_attempts + 1):
            try:
                return self._launch(accel)
            except _EarlyBootHang as exc:
                if attempt == self.boot_attempts:
                    self.shutdown()
                    raise
                self._note(f"# boot {attempt} hung before any NIC driver was loaded, booting again: {exc}")
                warnings.warn(
                    f"{self.name}: boot {attempt} hung before any NIC driver was loaded, booted again", stacklevel=2
                )
                self._reset_after_hang()
            except BaseException:
                self.shutdown()
                raise
        raise AssertionError("unreachable")

    def _launch(self, accel: str) -> VM:
        """Start QEMU and wait for the agent (or for the incoming migration)."""
        serial_listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        serial_listener.bind(str(self.sock_path("serial")))
        serial_listener.listen(1)
        self._qmp = QEMUMonitorProtocol(str(self.sock_path("qmp")), server=True)
        argv = self.command_line(accel)
        self._note(f"# start: {shlex.join(argv)}")
        log.info("%s: starting %s", self.name, shlex.join(argv))
        with self.stderr_log.open("ab") as err:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        serial_listener.settimeout(0.5)
        deadline = time.monotonic() + scaled(30)
        try:
            while True:
                try:
                    conn, _ = serial_listener.accept()
                    break
                except TimeoutError:
                    if not self.alive() or time.monotonic() > deadline:
                        raise GuestError(f"QEMU did not connect its serial port{self._exit_note()}") from None
        finally:
            serial_listener.close()
        self._console = _Console(conn, self.serial_log)
        try:
            self._qmp.accept(timeout=scaled(30))
        except Exception as exc:  # qemu.qmp raises several types
            # QEMU drops the connection when it exits on a bad argument:
            # let it finish so that its message makes it into the error
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            raise GuestError(f"QMP connection failed: {exc}{self._exit_note()}") from exc
        self._qmp.settimeout(scaled(60))
        if self.incoming:
            # no boot: the guest arrives with the migration stream
            self._note(f"# waiting for an incoming migration on {self.incoming}")
            return self
        ready = self._console.wait_for(_BOOT_RE, 0, time.monotonic() + scaled(self.boot_timeout), self.alive)
        if not ready or ready.group(1) is None:
            what = "an RCU stall" if ready else f"guest agent not ready after {scaled(self.boot_timeout):.0f}s"
            error = _EarlyBootHang if self.alive() and not self._drivers_loaded() else GuestError
            raise error(f"{self.name}: {what}{self._exit_note()}\n--- console tail ---\n{self.console_tail()}")
        self.release = ready.group(1).decode()
        self._ready = True
        self._note(f"# ready: kernel {self.release}, accel {accel}")
        return self

    def _drivers_loaded(self) -> bool:
        """Whether the guest may have loaded a NIC driver by now: the init
        greeted and the command line asks it to load modules (without
        guest.modules/guest.net nothing is loaded before the agent runs)."""
        assert self._console is not None
        asked = any(w.startswith(("guest.modules=", "guest.net=")) for w in self.append.split())
        return asked and _INIT_STARTED in self._console.text()

    def _reset_after_hang(self) -> None:
        """Kill a hung QEMU and forget it, keeping the logs, so that _launch
        can run again."""
        self._stop_qemu()
        self._proc = None
        for name in ("serial", "qmp"):
            self.sock_path(name).unlink(missing_ok=True)

    def __enter__(self) -> VM:
        return self.start() if self._proc is None else self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _exit_note(self) -> str:
        if self._proc is not None and self._proc.poll() is not None:
            return f" (QEMU exited with {self._proc.returncode}: {self.stderr_tail().strip()})"
        return ""

    def shutdown(self, save_dmesg: bool = True) -> None:
        """Stop QEMU; always kills it in the end. Safe to call twice."""
        proc = self._proc
        if proc is not None and proc.poll() is None and save_dmesg and self._ready:
            try:
                out = self.run("dmesg -r", timeout=20)
                (self.log_dir / "dmesg.log").write_text(out.stdout)
            except (GuestError, OSError) as exc:
                self._note(f"# dmesg at shutdown failed: {exc}")
        self._stop_qemu()
        if not self._agent_fh.closed:
            self._agent_fh.close()
        for p in self._sock_dir.glob("*"):
            try:
                p.unlink()
            except OSError:
                pass
        try:
            self._sock_dir.rmdir()
        except OSError:
            pass

    def _stop_qemu(self) -> None:
        """Ask QEMU to quit, kill it if it does not, close its connections."""
        proc = self._proc
        if self._qmp is not None:
            if proc is not None and proc.poll() is None:
                try:
                    self._qmp.settimeout(5)
                    self._qmp.cmd("quit")
                except Exception:  # noqa: BLE001 - QEMU may be gone already
                    pass
            try:
                self._qmp.close()
            except Exception:  # noqa: BLE001
                pass
            self._qmp = None
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
            self._note(f"# QEMU exited with {proc.returncode}")
        if self._console is not None:
            self._console.close()
            self._console = None

    @property
    def pid(self) -> int | None:
        """QEMU's process id."""
        return None if self._proc is None else self._proc.pid

    @property
    def exit_code(self) -> int | None:
        return None if self._proc is None else self._proc.poll()

    def wait_exit(self, timeout: float) -> int:
        """Wait for QEMU to exit on its own (e.g. after a guest panic)."""
        if self._proc is None:
            raise HarnessError("VM not started")
        return self._proc.wait(timeout=timeout)

    # --------------------------------------------------------------- logs
    def _note(self, text: str) -> None:
        if not self._agent_fh.closed:
            self._agent_fh.write(text.rstrip("\n") + "\n")
            self._agent_fh.flush()

    def stderr_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def console_position(self) -> int:
        """Bytes received on the console so far (a mark for console_text)."""
        return self._console.size() if self._console is not None else 0

    def console_text(self, start: int = 0) -> str:
        """The raw console stream from `start` on."""
        if self._console is None:
            return ""
        return self._console.text(start).decode(errors="replace")

    def console_tail(self, n: int = 4000) -> str:
        if self._console is None:
            try:
                return self.serial_log.read_text(errors="replace")[-n:]
            except OSError:
                return ""
        return self._console.text(max(0, self._console.size() - n)).decode(errors="replace")

    def qemu_problems(self) -> str:
        """Anything QEMU wrote to stderr or to its guest-error log."""
        parts = []
        for f in (self.stderr_log, self.debug_log):
            try:
                with f.open("rb") as fh:
                    fh.seek(self._stderr_start if f == self.stderr_log else 0)
                    text = fh.read().decode(errors="replace").strip()
            except OSError:
                continue
            if text:
                parts.append(f"--- {f.name} ---\n{text}")
        return "\n".join(parts)

    def thread_stacks(self, timeout: float = 60) -> str:
        """Every QEMU thread's name, state and, where gdb is installed, its
        backtrace: what a hung QEMU was doing. Also written to the log dir."""
        pid = self.pid
        if pid is None or not self.alive():
            return f"{self.name}: QEMU is not running"
        lines = [f"{self.name}: QEMU pid {pid}"]
        for task in sorted(Path(f"/proc/{pid}/task").glob("*"), key=lambda t: int(t.name)):
            try:
                comm = (task / "comm").read_text().strip()
                state = next(ln for ln in (task / "status").read_text().splitlines() if ln.startswith("State:"))
                wchan = (task / "wchan").read_text().strip()
            except (OSError, StopIteration):
                continue
            lines.append(f"  thread {task.name} {comm}: {state.split(':', 1)[1].strip()} in {wchan or '-'}")
        gdb = shutil.which("gdb")
        if gdb:
            res = subprocess.run(
                [gdb, "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off", "-ex", "thread apply all bt"],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            lines.append(res.stdout.strip() or res.stderr.strip())
        text = "\n".join(lines)
        try:
            (self.log_dir / "thread-stacks.txt").write_text(text + "\n")
        except OSError:
            pass
        return text

    # ---------------------------------------------------------------- QMP
    def qmp(self, command: str, **args: Any) -> Any:
        """Run a QMP command; returns its "return" value, raises on error."""
        if self._qmp is None:
            raise HarnessError(f"VM {self.name} is not running")
        self._note(f"# qmp {command} {json.dumps(args)}")
        return self._qmp.cmd(command, **args)

    def qmp_events(self, wait: float = 0.0) -> list[dict[str, Any]]:
        """QMP events received so far (and taken off the queue); with `wait`,
        waits up to that many seconds for a first one."""
        if self._qmp is None:
            raise HarnessError(f"VM {self.name} is not running")
        try:
            events = self._qmp.get_events(wait=wait if wait > 0 else False)
        except TimeoutError:
            return []
        for ev in events:
            self._note(f"# qmp event {json.dumps(ev)}")
        return [dict(ev) for ev in events]

    def wait_qmp_event(
        self, name: str, timeout: float = 60, match: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any]:
        """The next QMP event called `name` (for which `match` is true)."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise GuestError(f"{self.name}: no QMP event {name} within {scaled(timeout):.0f}s")
            if not self.alive():
                raise GuestError(f"{self.name}: QEMU died waiting for QMP event {name}{self._exit_note()}")
            for ev in self.qmp_events(wait=min(left, 1.0)):
                if ev.get("event") == name and (match is None or match(ev)):
                    return ev

    def adopt_guest(self, release: str, timeout: float = 60) -> None:
        """After an incoming migration completed: the guest (and its agent)
        now run here; check that the agent answers on this VM's console."""
        if not self.incoming:
            raise HarnessError(f"VM {self.name} was not started with -incoming")
        if self._console is None:
            raise HarnessError(f"VM {self.name} is not running")
        deadline = time.monotonic() + scaled(timeout)
        while True:
            try:
                with self._lock:
                    self._ping(self._console)
                break
            except GuestError:
                if time.monotonic() > deadline or not self.alive():
                    raise
        self.release = release
        self._ready = True
        self._note(f"# adopted the migrated guest (kernel {release})")

    # ------------------------------------------------------------ console
    def run(self, cmd: str, timeout: float = 60, check: bool = False) -> Result:
        """Run a shell command (busybox sh) in the guest.

        `timeout` is in (unscaled) seconds; the guest kills the command's
        process group when it runs out and the result says timed_out.
        """
        with self._lock:
            result = self._run(cmd, scaled(timeout))
        return result.check() if check else result

    def _run(self, cmd: str, timeout: float) -> Result:
        console = self._console
        if console is None or not self.alive():
            raise GuestError(f"VM {self.name} is not running{self._exit_note()}")
        cid = uuid.uuid4().hex[:16]
        secs = max(1, math.ceil(timeout))
        payload = base64.b64encode(cmd.encode())
        lines = [b"D " + payload[i : i + 76] + b"\n" for i in range(0, len(payload), 76)]
        t0 = time.monotonic()
        self._note(f"$ {cmd}")
        # Send in slices with a round trip in between, so the guest's tty
        # input buffer never holds more than a couple of KiB.
        for i in range(0, len(lines), 24):
            console.send(b"".join(lines[i : i + 24]))
            if i + 24 < len(lines):
                self._ping(console)
        start = console.size()
        console.send(f"X {cid} {secs}\n".encode())
        deadline = t0 + timeout + scaled(30)
        for attempt in range(6):
            res = self._collect(console, cid, start, deadline)
            if res is not None:
                rc, timed_out, data = res
                out = data.decode(errors="replace")
                result = Result(cmd, rc, out, timed_out, time.monotonic() - t0, data)
                self._note(f"# rc={rc}{' TIMED OUT' if timed_out else ''} ({result.seconds:.1f}s)\n{out}")
                return result
            # damaged in transit: ask for the same result again
            self._note(f"# result {cid} damaged on the console, asking again ({attempt + 1})")
            time.sleep(attempt)
            start = console.size()
            console.send(f"G {cid}\n".encode())
            deadline = time.monotonic() + scaled(30)
        raise GuestError(f"result of guest command could not be read intact: {cmd}")

    def _ping(self, console: _Console) -> None:
        token = uuid.uuid4().hex[:8]
        start = console.size()
        console.send(f"P {token}\n".encode())
        if not console.wait_for(
            re.compile(rb"@@AGENT-PONG " + token.encode() + rb"@@"),
            start,
            time.monotonic() + scaled(30),
            self.alive,
        ):
            raise GuestError(f"guest agent does not answer{self._exit_note()}")

    def _collect(self, console: _Console, cid: str, start: int, deadline: float) -> tuple[int, bool, bytes] | None:
        """(rc, timed_out, output) of command `cid`, or None if damaged."""
        block_re = re.compile(
            rb"(@@AGENT-RESULT " + cid.encode() + rb" [^@\n]*@@)(.*?)@@AGENT-DONE " + cid.encode() + rb"@@",
            re.DOTALL,
        )
        block = console.wait_for(block_re, start, deadline, self.alive, clean=strip_kernel_messages)
        if block is None:
            raise GuestError(
                f"no (complete) answer from the guest agent{self._exit_note()}\n"
                f"--- console tail ---\n{self.console_tail()}"
            )
        m = _RESULT_RE.fullmatch(block.group(1))
        if m is None:
            return None
        rc, timed_out, nbytes, md5 = int(m.group(2)), m.group(3) == b"1", int(m.group(4)), m.group(5)
        try:
            data = base64.b64decode(_NOT_B64.sub(b"", block.group(2)), validate=True)
        except ValueError:
            return None
        if len(data) != nbytes or hashlib.md5(data).hexdigest().encode() != md5:
            return None
        return rc, timed_out, data

    # ------------------------------------------------------ guest helpers
    def sh(self, cmd: str, timeout: float = 60) -> str:
        """Run a command that must succeed; return its output."""
        return self.run(cmd, timeout=timeout, check=True).stdout

    def wait_until(self, what: str, probe: Callable[[], T | None], timeout: float = 60, interval: float = 0.5) -> T:
        """Call `probe` until it returns something other than None/False."""
        deadline = time.monotonic() + scaled(timeout)
        while True:
            value = probe()
            if value is not None and value is not False:
                return value
            if time.monotonic() > deadline:
                raise GuestError(f"timed out after {scaled(timeout):.0f}s waiting for {what}")
            time.sleep(interval)

    def dmesg(self, since: float | None = None) -> list[KmsgRecord]:
        """The guest kernel log; only records after `since` (seconds) if given."""
        records = parse_dmesg_raw(self.sh("dmesg -r", timeout=30))
        if since is not None:
            records = [r for r in records if r.timestamp > since]
        return records

    def uptime(self) -> float:
        """Seconds since guest boot on the kernel log's own clock, as a mark
        for dmesg(since=): the time stamp of a line this call writes to
        /dev/kmsg, so every record logged before the call is at or before it
        and every later one after it. (/proc/uptime counts in 10 ms steps on
        another clock: a record of the previous command could land after
        such a mark.)"""
        self._marks += 1
        token = f"harness: mark {self._marks}"
        out = self.sh(f"echo '<6>{token}' > /dev/kmsg && dmesg -r | grep -F '{token}' | tail -n 1")
        records = parse_dmesg_raw(out)
        if not records:
            raise GuestError(f"the kernel log has no {token!r} line")
        return records[-1].timestamp

    def modprobe(self, module: str, *params: str) -> None:
        """Load a module (and its dependencies); a no-op for built-in ones."""
        name = shlex.quote(module.replace("-", "_"))
        self.sh(
            f'grep -q "/{name}\\.ko$" /lib/modules/$(uname -r)/modules.builtin 2>/dev/null || '
            + shlex.join(["modprobe", module, *params]),
            timeout=120,
        )

    def rmmod(self, module: str) -> None:
        self.sh(shlex.join(["rmmod", module]), timeout=120)

    def netdevs(self, driver: str | None = None) -> list[str]:
        """Network interfaces (by PCI address order when bound to a driver)."""
        out = self.sh(
            "for d in /sys/class/net/*; do n=${d##*/}; "
            'drv=$(basename "$(readlink $d/device/driver 2>/dev/null)" 2>/dev/null); '
            'bus=$(basename "$(readlink $d/device 2>/dev/null)" 2>/dev/null); '
            'echo "$n ${drv:--} ${bus:--}"; done'
        )
        rows = [ln.split() for ln in out.splitlines() if len(ln.split()) == 3]
        if driver is not None:
            rows = [r for r in rows if r[1] == driver]
            rows.sort(key=lambda r: r[2])
        return [r[0] for r in rows]

    def wait_netdevs(self, driver: str, count: int = 1, timeout: float = 60) -> list[str]:
        """Wait until `count` interfaces bound to `driver` exist; return them.

        A new interface is born eth<N> and udev renames it (enp1s0) a moment
        later, so a name is only returned once udev's queue is empty and the
        list reads the same before and after waiting for it.
        """

        def probe() -> list[str] | None:
            before = self.netdevs(driver)
            if len(before) < count:
                return None
            self.run("udevadm settle --timeout=30", timeout=40)
            devs = self.netdevs(driver)
            return devs if devs == before else None

        return self.wait_until(f"{count} {driver} interface(s)", probe, timeout)

    def pci_address(self, dev: str) -> str:
        return self.sh(f"basename $(readlink /sys/class/net/{shlex.quote(dev)}/device)").strip()

    def carrier(self, dev: str) -> bool | None:
        """Carrier of an interface that is up (None when it is down)."""
        r = self.run(f"cat /sys/class/net/{shlex.quote(dev)}/carrier")
        if not r.ok:
            return None
        return r.stdout.strip() == "1"

    def wait_carrier(self, dev: str, up: bool = True, timeout: float = 60) -> None:
        self.wait_until(
            f"carrier {'up' if up else 'down'} on {dev}",
            lambda: self.carrier(dev) is up,
            timeout,
        )

    def link_up(self, dev: str, address: str | None = None, mtu: int | None = None, netns: str | None = None) -> None:
        """Configure and bring up an interface (optionally inside a netns)."""
        ns = f"ip netns exec {shlex.quote(netns)} " if netns else ""
        q = shlex.quote(dev)
        cmds = []
        if mtu is not None:
            cmds.append(f"{ns}ip link set {q} mtu {int(mtu)}")
        if address is not None:
            cmds.append(f"{ns}ip addr add {shlex.quote(address)} dev {q}")
        cmds.append(f"{ns}ip link set {q} up")
        self.sh(" && ".join(cmds))

    def ethtool(self, dev: str) -> dict[str, str]:
        return parse_ethtool_settings(self.sh(f"ethtool {shlex.quote(dev)}"))

    def ethtool_stats(self, dev: str, netns: str | None = None) -> dict[str, int]:
        ns = f"ip netns exec {shlex.quote(netns)} " if netns else ""
        return parse_ethtool_stats(self.sh(f"{ns}ethtool -S {shlex.quote(dev)}"))

    def channels(self, dev: str) -> dict[str, dict[str, int]]:
        return parse_channels(self.sh(f"ethtool -l {shlex.quote(dev)}"))

    def rss(self, dev: str) -> RssConfig:
        return parse_rss(self.sh(f"ethtool -x {shlex.quote(dev)}"))

    def rx_flow_hash(self, dev: str, flow_type: str) -> str:
        """`ethtool -n dev rx-flow-hash <flow_type>` (e.g. tcp4, udp4) text."""
        return self.sh(f"ethtool -n {shlex.quote(dev)} rx-flow-hash {shlex.quote(flow_type)}")

    def interrupts(self) -> dict[str, int]:
        return parse_interrupts(self.sh("cat /proc/interrupts"))

    def selftest(self, dev: str, mode: str = "offline", timeout: float = 180) -> SelfTest:
        if mode not in ("offline", "online", "external_lb"):
            raise HarnessError(f"bad ethtool self-test mode {mode!r}")
        r = self.run(f"ethtool -t {shlex.quote(dev)} {mode}", timeout=timeout)
        if r.timed_out:
            raise GuestError(f"ethtool -t {dev} {mode} timed out:\n{r.stdout}")
        return parse_selftest(r.stdout)

    def ping(
        self,
        address: str,
        count: int = 3,
        size: int | None = None,
        dont_fragment: bool = False,
        netns: str | None = None,
        timeout: float = 60,
    ) -> Result:
        ns = f"ip netns exec {shlex.quote(netns)} " if netns else ""
        opts = f"-c {int(count)} -i 0.2 -W 5"
        if size is not None:
            opts += f" -s {int(size)}"
        if dont_fragment:
            opts += " -M do"
        return self.run(f"{ns}ping {opts} {shlex.quote(address)}", timeout=timeout)

    def iperf3_client(
        self, server: str, port: int, seconds: int = 5, reverse: bool = False, netns: str | None = None
    ) -> dict[str, Any]:
        """Run iperf3 -c in the guest and return its JSON report."""
        ns = f"ip netns exec {shlex.quote(netns)} " if netns else ""
        r = self.run(
            f"{ns}iperf3 -c {shlex.quote(server)} -p {int(port)} -t {int(seconds)} -J" + (" -R" if reverse else ""),
            timeout=seconds + 60,
        )
        return iperf3_report("iperf3 in the guest", r.ok, r.rc, r.stdout)


def load_driver(vm: VM, driver: str) -> None:
    """modprobe a NIC's driver (virtio_net wants virtio_pci first)."""
    if driver == "virtio_net":
        vm.modprobe("virtio_pci")
    vm.modprobe(driver)


# make_vm(name=..., smp=..., args=[...], args_factory=..., append=...) -> started VM
VMFactory = Callable[..., VM]
