"""Helpers of the package tests: building the package with
scripts/package.sh, reading a .deb with dpkg-deb, a clean root to install
it into, and QEMU's qtest protocol for a probe of the installed binary.

The clean root is an overlay on the systemd guest's package stage
($BUILD_DIR/rootfs/bookworm/base, made by scripts/build-rootfs.sh from
Debian packages only): the base stays untouched, the root's changes go to
an upper directory of the test's own. Each command runs in a private mount
namespace (`unshare --mount`) that mounts the overlay, /proc and /dev, and
chroots into it; the namespace and its mounts end with the command.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from ixgbe_testlib.host import REPO_ROOT, build_dir

PACKAGE_SH = REPO_ROOT / "scripts" / "package.sh"
PKG = "qemu-ixgbe"
LIBDIR = "/usr/lib/qemu-ixgbe"
BINARY = f"{LIBDIR}/qemu-system-x86_64"
WRAPPER = "/usr/bin/qemu-system-x86_64-ixgbe"
ROMDIR = "/usr/share/qemu-ixgbe"
DOCDIR = "/usr/share/doc/qemu-ixgbe"
# The AppArmor abstractions for libvirt's profiles, and the site-local files
# of those profiles (libvirt-daemon-system) the postinst adds an include to.
AA_ABSTRACTIONS = ("/etc/apparmor.d/abstractions/qemu-ixgbe", "/etc/apparmor.d/abstractions/qemu-ixgbe-libvirtd")
AA_LOCAL = {"/etc/apparmor.d/local/abstractions/libvirt-qemu": "qemu-ixgbe",
            "/etc/apparmor.d/local/usr.sbin.libvirtd": "qemu-ixgbe-libvirtd"}
# Where Debian's QEMU and its firmware packages put their files.
DEBIAN_QEMU_PATHS = ("/usr/bin/qemu-system-x86_64", "/usr/share/qemu", "/usr/share/seabios",
                     "/usr/lib/ipxe", "/usr/share/doc/qemu-system-x86", "/usr/share/man/man1/qemu")
# What the firmware links of the installed binary's qemu-bundle may point to.
FIRMWARE_DIRS = {"/usr/share/qemu", "/usr/share/seabios", "/usr/lib/ipxe/qemu", ROMDIR}


@dataclasses.dataclass(frozen=True)
class Build:
    deb: Path
    seconds: float
    stderr: str


def run_package_sh(output: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(PACKAGE_SH), "--output", str(output)],
        capture_output=True, text=True, check=False, timeout=600,
        env={**os.environ, **(env or {})},
    )


def build_package(output: Path) -> Build:
    t0 = time.monotonic()
    r = run_package_sh(output)
    seconds = time.monotonic() - t0
    if r.returncode != 0:
        raise AssertionError(f"scripts/package.sh failed (exit {r.returncode}):\n{r.stderr}")
    deb = Path(r.stdout.strip().splitlines()[-1])
    if not deb.is_file() or deb.parent != output.resolve():
        raise AssertionError(f"scripts/package.sh printed {deb}, not a .deb in {output}:\n{r.stderr}")
    return Build(deb, seconds, r.stderr)


# ------------------------------------------------------------ the .deb
@dataclasses.dataclass(frozen=True)
class Entry:
    mode: str  # e.g. "-rwxr-xr-x", "lrwxrwxrwx", "drwxr-xr-x"
    owner: str  # "root/root"
    mtime: str  # "2026-11-26 20:50"
    path: str  # "/usr/bin/x" (dpkg-deb's "./usr/bin/x"; directories without the slash)
    target: str  # a symlink's target, else ""


def deb_field(deb: Path, field: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True, text=True,
                          check=True).stdout.strip()


def deb_contents(deb: Path) -> list[Entry]:
    """dpkg-deb --contents, in the archive's order."""
    out = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True,
                         check=True, env={**os.environ, "TZ": "UTC0"}).stdout
    entries: list[Entry] = []
    for line in out.splitlines():
        m = re.match(r"^(\S+) (\S+) +\d+ (\d{4}-\d\d-\d\d \d\d:\d\d) \./(.*?)(?: -> (.*))?$", line)
        if not m:
            raise AssertionError(f"unexpected dpkg-deb --contents line: {line!r}")
        path = "/" + m.group(4).rstrip("/")
        entries.append(Entry(m.group(1), m.group(2), m.group(3), path, m.group(5) or ""))
    return entries


def deb_extract(deb: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(dest)], check=True)
    return dest


def repack(deb: Path, dest: Path, **fields: str) -> Path:
    """A copy of the package with control fields replaced (e.g.
    Architecture="arm64", Version="..."), written uncompressed to dest/."""
    tree = dest / "tree"
    subprocess.run(["dpkg-deb", "-R", str(deb), str(tree)], check=True)
    control = tree / "DEBIAN" / "control"
    lines = control.read_text(encoding="utf-8").splitlines()
    for name, value in fields.items():
        lines = [f"{name}: {value}" if line.startswith(f"{name}: ") else line for line in lines]
    control.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = dest / f"{PKG}_{fields.get('Version', deb_field(deb, 'Version'))}_" \
                 f"{fields.get('Architecture', 'amd64')}.deb"
    subprocess.run(["dpkg-deb", "--root-owner-group", "-Znone", "--build", str(tree), str(out)],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return out


# ------------------------------------------------------ the clean root
def rootfs_base() -> Path:
    return build_dir() / "rootfs" / "bookworm" / "base"


ENTER = r"""
set -eu
base=$1 upper=$2 work=$3 root=$4 cache=$5
shift 5
mount -t overlay overlay -o "lowerdir=$base,upperdir=$upper,workdir=$work" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --bind "$cache" "$root/var/cache/apt/archives"
exec chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
    DEBIAN_FRONTEND=noninteractive "$@"
"""


class CleanRoot:
    """A Debian root made from Debian packages only (see the module's
    docstring), with its own changes under `top`. Downloaded packages are
    kept in `cache` (the root's /var/cache/apt/archives) across runs."""

    def __init__(self, base: Path, top: Path, cache: Path) -> None:
        if not (base / "usr" / "bin" / "apt-get").is_file():
            raise AssertionError(f"{base} is not a Debian root (no apt-get): build it with scripts/build-rootfs.sh")
        self.base = base.resolve()
        self.top = top
        self.cache = cache
        for d in ("upper", "work", "root"):
            (top / d).mkdir(parents=True, exist_ok=True)
        (cache / "partial").mkdir(parents=True, exist_ok=True)
        # Name resolution for apt, and the package lists build-rootfs.sh
        # fetched for the same sources (apt-get update when there are none).
        etc = top / "upper" / "etc"
        etc.mkdir(exist_ok=True)
        shutil.copyfile("/etc/resolv.conf", etc / "resolv.conf")
        lists = build_dir() / "rootfs" / "apt" / "bookworm" / "lists"
        have = [f for f in lists.glob("*") if f.is_file() and ("_Packages" in f.name or f.name.endswith("Release"))]
        if have:
            dest = top / "upper" / "var" / "lib" / "apt" / "lists"
            dest.mkdir(parents=True, exist_ok=True)
            for f in have:
                shutil.copyfile(f, dest / f.name)
        else:
            self.check(["apt-get", "-q", "update"], timeout=600)

    def enter(self, argv: list[str]) -> list[str]:
        """The command line that runs argv in the root (ENTER)."""
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c", ENTER, "enter",
                str(self.base), str(self.top / "upper"), str(self.top / "work"), str(self.top / "root"),
                str(self.cache), *argv]

    def run(self, argv: list[str], *, input: str | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.enter(argv), input=input, capture_output=True, text=True, check=False, timeout=timeout,
        )

    def popen(self, argv: list[str], stderr: Path) -> subprocess.Popen[str]:
        """The command with pipes on stdin and stdout (the process is the
        command itself: unshare, sh and chroot exec it)."""
        with stderr.open("w") as err:
            return subprocess.Popen(
                self.enter(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1,
            )

    def check(self, argv: list[str], *, input: str | None = None, timeout: float = 300) -> str:
        r = self.run(argv, input=input, timeout=timeout)
        if r.returncode != 0:
            raise AssertionError(
                f"in the clean root, {' '.join(argv)} failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def add_file(self, src: Path, inside: str) -> None:
        dest = self.top / "upper" / inside.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


# --------------------------------------------------------------- qtest
def pci_cfg_addr(dev: int, reg: int, bus: int = 0, fn: int = 0) -> int:
    return 0x80000000 | bus << 16 | dev << 11 | fn << 8 | reg


def qtest_session(proc: subprocess.Popen[str], commands: list[str]) -> list[str]:
    """Send qtest commands one by one; their replies ("OK", "OK 0x...",
    "FAIL ..."), fewer when QEMU ended. QEMU is killed at the end."""
    assert proc.stdin and proc.stdout
    replies: list[str] = []
    try:
        for cmd in commands:
            try:
                proc.stdin.write(cmd + "\n")
                proc.stdin.flush()
            except BrokenPipeError:
                break
            line = proc.stdout.readline()
            while line and not line.startswith(("OK", "FAIL", "ERR")):
                line = proc.stdout.readline()
            if not line:
                break
            replies.append(line.strip())
    finally:
        proc.kill()
        proc.wait(timeout=60)
    return replies
