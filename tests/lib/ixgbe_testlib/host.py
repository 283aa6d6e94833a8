"""Where the build puts things and how long to wait: the build directory,
the QEMU binary and the devices it has, the guest images, the timeout scale;
and child processes that die with the harness.

Environment:
  QEMU                 QEMU binary (default $BUILD_DIR/qemu-build/qemu-system-x86_64)
  BUILD_DIR            build directory (default <repo>/build)
  GUEST_TIMEOUT_SCALE  multiply every guest timeout (default 1)
"""

from __future__ import annotations

import ctypes
import dataclasses
import os
import re
import signal
import subprocess
from pathlib import Path

from ixgbe_testlib.errors import HarnessError

REPO_ROOT = Path(__file__).resolve().parents[3]
KERNELS = ("6.1", "6.12")
FIRMWARE_DIRS = (Path("/usr/share/qemu"), Path("/usr/share/seabios"))


# ----------------------------------------------------------------- locations
def build_dir() -> Path:
    return Path(os.environ.get("BUILD_DIR") or REPO_ROOT / "build").resolve()


def qemu_binary() -> Path:
    env = os.environ.get("QEMU")
    path = Path(env) if env else build_dir() / "qemu-build" / "qemu-system-x86_64"
    if not path.is_file() or not os.access(path, os.X_OK):
        raise HarnessError(
            f"QEMU binary {path} not found or not executable"
            + ("" if env else " (build it with scripts/build-qemu.sh, or set QEMU=...)")
        )
    return path


# CONFIG_HZ of Debian's amd64 kernels, which every guest image boots
GUEST_HZ = 250


def host_tsc_khz() -> int | None:
    """The host's TSC rate in kHz, None where it is not known. Linux on an
    x86 CPU with a constant TSC derives loops_per_jiffy from the TSC's rate,
    so /proc/cpuinfo's bogomips is twice the rate in MHz."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = re.search(r"^flags\s*:(.*)$", text, re.M)
    mips = re.search(r"^bogomips\s*:\s*([0-9.]+)", text, re.M)
    if flags is None or "constant_tsc" not in flags[1].split() or mips is None:
        return None
    return round(float(mips[1]) * 500)


def tcg_delay_calibration(hz: int = GUEST_HZ) -> str:
    """The kernel parameter `lpj=` that gives every vCPU of a TCG guest the
    delay loop of the host's TSC ("" where the rate is not known).

    A TCG guest's TSC counts at the host's rate. The kernel takes the boot
    vCPU's loops per jiffy from the TSC but times each other vCPU against
    jiffies, and TCG running all vCPUs in turn on one thread spoils that
    timing: on 6.1 a second vCPU came out at 0.06 BogoMIPS against the
    first's 4,200, so a driver's 1 s mailbox timeout (2000 x udelay(500))
    ran out in milliseconds there."""
    khz = host_tsc_khz()
    return f"lpj={khz * 1000 // hz}" if khz else ""


def delay_loop_problem(dmesg: str, cpuinfo: str, vcpus: int) -> str:
    """What is wrong with a guest's delay loops, "" if nothing: each of its
    `vcpus` vCPUs must show (in `cpuinfo`, /proc/cpuinfo or its bogomips
    lines) BogoMIPS within 2 % of twice the TSC MHz its kernel reported
    (in `dmesg`)."""
    tsc = re.search(r"tsc: Detected ([0-9.]+) MHz", dmesg)
    if tsc is None:
        return "the kernel did not report the TSC's rate"
    mips = [float(v) for v in re.findall(r"^bogomips\s*:\s*([0-9.]+)", cpuinfo, re.M)]
    want = 2 * float(tsc[1])
    if len(mips) != vcpus or any(abs(m - want) >= 0.02 * want for m in mips):
        return f"BogoMIPS per vCPU {mips} ({vcpus} vCPUs), TSC {tsc[1]} MHz"
    return ""


@dataclasses.dataclass(frozen=True)
class GuestImage:
    kernel: str
    vmlinuz: Path
    initrd: Path
    release: str  # the kernel's `uname -r`


def guest_image(kernel: str) -> GuestImage:
    if kernel not in KERNELS:
        raise HarnessError(f"unknown guest kernel {kernel!r}; expected one of {', '.join(KERNELS)}")
    d = build_dir() / "guest" / kernel
    vmlinuz, initrd, manifest = d / "vmlinuz", d / "initrd.img", d / "manifest.txt"
    for f in (vmlinuz, initrd, manifest):
        if not f.is_file():
            raise HarnessError(f"guest image file {f} missing: run scripts/build-guest.sh {kernel}")
    release = ""
    for line in manifest.read_text().splitlines():
        if line.startswith("kernel-release "):
            release = line.split(None, 1)[1].strip()
    return GuestImage(kernel, vmlinuz, initrd, release)


def timeout_scale() -> float:
    raw = os.environ.get("GUEST_TIMEOUT_SCALE", "1")
    try:
        value = float(raw)
    except ValueError:
        raise HarnessError(f"GUEST_TIMEOUT_SCALE must be a number, got {raw!r}") from None
    if value <= 0:
        raise HarnessError(f"GUEST_TIMEOUT_SCALE must be positive, got {raw!r}")
    return value


def scaled(seconds: float) -> float:
    return seconds * timeout_scale()


_device_cache: dict[Path, str] = {}


def qemu_devices(qemu: Path | None = None) -> str:
    """The output of `qemu -device help` (cached per binary)."""
    binary = qemu or qemu_binary()
    if binary not in _device_cache:
        out = subprocess.run(
            [str(binary), "-machine", "none", "-device", "help"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if out.returncode != 0:
            raise HarnessError(f"{binary} -device help failed ({out.returncode}): {out.stderr.strip()}")
        _device_cache[binary] = out.stdout + out.stderr
    return _device_cache[binary]


def has_device(name: str, qemu: Path | None = None) -> bool:
    return re.search(rf'^name "{re.escape(name)}"', qemu_devices(qemu), re.MULTILINE) is not None


# ---------------------------------------------------------------- processes
def die_with_parent() -> None:
    """In a child process: get SIGKILL when the harness dies, so that no
    QEMU outlives a killed test run (e.g. a test runner's timeout)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
