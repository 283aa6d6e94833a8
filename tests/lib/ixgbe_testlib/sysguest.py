"""A Debian systemd guest (scripts/build-rootfs.sh) under the project's QEMU,
driven through the harness (ixgbe_testlib.vm), with wires to host-side
peers in a private network namespace.

- `build_rootfs()` runs scripts/build-rootfs.sh (cached) and returns the image.
- `Lab` owns a network namespace: QEMU runs inside it, so the taps it makes
  for the guest's NICs live there too; their host ends get the peer addresses
  of the image's lab network (ixgbe: 198.51.100.1 <-> .2, virtio-net:
  203.0.113.1 <-> .2), and iperf3 servers/clients run there. Nothing leaves
  the namespace.
- `SystemdVM` is the harness's `VM` with the image's disk (copy-on-write,
  `snapshot=on`, so the image never changes), without `-no-reboot`, and with
  `reboot()` (a systemd reboot, then wait for the agent again).
- `measure_peer()` runs `nettune measure --serve` at the host end of the
  lab's wires with the image's own iperf3, sockperf and python3 (its package
  tree as a chroot), so the host needs neither tool.
- `readings()` reads what nettune tunes straight from the guest (procfs,
  sysfs, ethtool -a/-g/-c/-k/-l, sysctl, systemctl), independently of nettune;
  `check_plan()` compares those readings with `nettune plan --json`.

Used by tests/e2e and by scripts/demo.py.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import subprocess
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ansible_collections.qemu_ixgbe.tuning.plugins.module_utils.cpulist import parse_cpulist
from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import REPO_ROOT, GuestImage, build_dir, guest_image, qemu_binary, scaled
from ixgbe_testlib.iperf3 import iperf3_report, iperf3_summary
from ixgbe_testlib.nicargs import mac_address, nic_args
from ixgbe_testlib.vm import VM, choose_accel

SUITES = ("bookworm",)


# ------------------------------------------------------------------ image
@dataclasses.dataclass(frozen=True)
class RootfsImage:
    suite: str
    disk: Path
    vmlinuz: Path
    initrd: Path
    release: str  # the kernel's `uname -r`
    manifest: dict[str, str]

    def guest_image(self) -> GuestImage:
        """The harness's view: kernel and initrd for direct kernel boot."""
        return GuestImage(f"rootfs-{self.suite}", self.vmlinuz, self.initrd, self.release)


def rootfs_image(suite: str = "bookworm", variant: str = "") -> RootfsImage:
    """The built image of a suite (scripts/build-rootfs.sh, in build/rootfs);
    `variant` "libvirt" is the libvirt-host variant
    (scripts/build-rootfs-libvirt.sh, in build/rootfs-libvirt)."""
    if suite not in SUITES:
        raise HarnessError(f"unknown rootfs suite {suite!r}; expected one of {', '.join(SUITES)}")
    if variant not in ("", "libvirt"):
        raise HarnessError(f"unknown rootfs variant {variant!r}; the only one is 'libvirt'")
    d = build_dir() / ("rootfs-" + variant if variant else "rootfs") / suite
    script = "scripts/build-rootfs-libvirt.sh" if variant else f"scripts/build-rootfs.sh {suite}"
    files = [d / "disk.img", d / "vmlinuz", d / "initrd.img", d / "manifest.txt"]
    for f in files:
        if not f.is_file():
            raise HarnessError(f"guest image file {f} missing: run {script}")
    manifest: dict[str, str] = {}
    for line in files[3].read_text().splitlines():
        key, _, value = line.partition(" ")
        if key != "package":
            manifest[key] = value.strip()
    return RootfsImage(suite, files[0], files[1], files[2], manifest.get("kernel-release", ""), manifest)


def build_rootfs(suite: str = "bookworm", log_file: Path | None = None) -> tuple[RootfsImage, float]:
    """Run scripts/build-rootfs.sh (quick when cached); return the image and
    the seconds it took. The script's output goes to `log_file` (or stderr)."""
    script = REPO_ROOT / "scripts" / "build-rootfs.sh"
    argv = ["bash", str(script), suite]
    t0 = time.monotonic()
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("ab") as fh:
            rc = subprocess.run(argv, stdout=fh, stderr=fh, check=False).returncode
    else:
        rc = subprocess.run(argv, check=False).returncode
    if rc != 0:
        tail = log_file.read_text(errors="replace")[-4000:] if log_file is not None else ""
        raise HarnessError(f"scripts/build-rootfs.sh {' '.join(argv[2:])} failed (exit {rc})\n{tail}")
    return rootfs_image(suite), time.monotonic() - t0


def pick_accel(log_dir: Path) -> str:
    """tcg unless GUEST_ACCEL asks otherwise; for `auto` the harness's KVM
    probe boots its own small guest image (when built), else TCG."""
    want = os.environ.get("GUEST_ACCEL", "tcg").strip().lower()
    if want not in ("tcg", "kvm", "auto"):
        raise HarnessError(f"GUEST_ACCEL must be tcg, kvm or auto, got {want!r}")
    if want == "kvm" and not os.access("/dev/kvm", os.R_OK | os.W_OK):
        raise HarnessError("GUEST_ACCEL=kvm but /dev/kvm is not usable")
    if want != "auto":
        return want
    try:
        probe_image = guest_image("6.1")
    except HarnessError:
        return "tcg"
    return choose_accel(probe_image, qemu_binary(), log_dir)


# -------------------------------------------------------------- the lab
@dataclasses.dataclass(frozen=True)
class Wire:
    """One guest NIC and the host end of its wire (a tap in the lab netns)."""

    netdev: str  # QEMU netdev id
    tap: str  # tap interface in the lab namespace
    model: str  # QEMU device
    driver: str  # guest driver
    mac: str
    host_ip: str
    guest_ip: str
    prefix: int = 24
    queues: int = 1  # tap queues (virtio-net multiqueue)
    device_opts: str = ""

    def qemu_args(self, index: int) -> list[str]:
        tap = f"tap,id={self.netdev},ifname={self.tap},script=no,downscript=no,vhost=off"
        if self.queues > 1:
            tap += f",queues={self.queues}"
        return nic_args(self.model, self.netdev, index, self.mac, extra=self.device_opts) + ["-netdev", tap]


def ixgbe_wire(index: int = 0) -> Wire:
    # the image's systemd-networkd gives an ixgbe port 198.51.100.2/24
    return Wire("n0", "tixgbe0", "ixgbe", "ixgbe", mac_address(index), "198.51.100.1", "198.51.100.2")


def virtio_wire(index: int = 1, queues: int = 4) -> Wire:
    # multiqueue virtio-net: a multiqueue tap, mq=on, 2 vectors per queue pair + config + control
    return Wire(
        "v0", "tvirtio0", "virtio-net-pci", "virtio_net", mac_address(index), "203.0.113.1", "203.0.113.2",
        queues=queues, device_opts=f"mq=on,vectors={2 * queues + 2}",
    )  # fmt: skip


class Lab:
    """A private network namespace for QEMU and the host ends of its wires."""

    def __init__(self, wires: Sequence[Wire], name: str | None = None) -> None:
        self.name = name or f"e2e-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.wires = list(wires)
        self._created = False

    def __enter__(self) -> Lab:
        r = subprocess.run(["ip", "netns", "add", self.name], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            raise HarnessError(f"ip netns add {self.name} failed: {r.stderr.strip()} (needs root)")
        self._created = True
        self.sh("ip link set lo up")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if not self._created:
            return
        # anything still running in the namespace (a QEMU that did not quit)
        pids = subprocess.run(["ip", "netns", "pids", self.name], capture_output=True, text=True, check=False)
        for pid in pids.stdout.split():
            try:
                os.kill(int(pid), 9)
            except (ProcessLookupError, ValueError):
                pass
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)
        self._created = False

    def prefix(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def run(self, argv: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.prefix() + list(argv), capture_output=True, text=True, timeout=timeout, check=False
        )

    def sh(self, cmd: str, timeout: float = 60) -> str:
        r = self.run(["sh", "-c", cmd], timeout=timeout)
        if r.returncode != 0:
            raise HarnessError(f"in netns {self.name}: {cmd} failed ({r.returncode}): {r.stderr.strip()}")
        return r.stdout

    def qemu_args(self) -> list[str]:
        out: list[str] = []
        for i, w in enumerate(self.wires):
            out += w.qemu_args(i)
        return out

    def wire(self, driver: str) -> Wire:
        for w in self.wires:
            if w.driver == driver:
                return w
        raise HarnessError(f"no {driver} wire in this lab")

    def up(self, timeout: float = 30) -> None:
        """Address and bring up the taps QEMU made (call once QEMU runs)."""
        deadline = time.monotonic() + timeout
        for w in self.wires:
            while self.run(["ip", "link", "show", w.tap]).returncode != 0:
                if time.monotonic() > deadline:
                    raise HarnessError(f"tap {w.tap} did not appear in netns {self.name}")
                time.sleep(0.2)
            self.sh(f"ip addr replace {w.host_ip}/{w.prefix} dev {w.tap} && ip link set {w.tap} up")

    def iperf3_client(
        self, server: str, port: int, seconds: int, reverse: bool = False, streams: int = 1
    ) -> dict[str, Any]:
        argv = ["iperf3", "-c", server, "-p", str(port), "-t", str(seconds), "-P", str(streams), "-J"]
        if reverse:
            argv.append("-R")
        r = self.run(argv, timeout=seconds + scaled(90))
        return iperf3_report("iperf3 in netns", r.returncode == 0, r.returncode, r.stdout, r.stderr)


@contextlib.contextmanager
def measure_peer(lab: Lab, rootfs: RootfsImage, nettune_src: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`nettune measure --serve` at the host end of the lab's wires: the guest image's
    package tree (its iperf3, sockperf and python3) as a chroot in a private mount
    namespace inside the lab's network namespace, with the nettune tree `nettune_src`
    (the project's guest/) bind-mounted at /mnt. Stopped (SIGTERM) on exit."""
    base = rootfs.disk.parent / "base"
    if not (base / "usr" / "bin" / "sockperf").is_file():
        raise HarnessError(f"no sockperf in the image's package tree {base}: rebuild it (scripts/build-rootfs.sh)")
    script = (
        'mount --bind "$1" "$0/mnt" && mount -t proc proc "$0/proc" && exec chroot "$0" '
        "env PYTHONPATH=/mnt PYTHONDONTWRITEBYTECODE=1 python3 -m nettune measure --serve"
    )
    argv = lab.prefix() + ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(base),
                           str(nettune_src)]  # fmt: skip
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as fh:
        proc = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + scaled(60)
        while "serving:" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise HarnessError(
                    f"nettune measure --serve did not start (rc={proc.poll()}):\n{log.read_text(errors='replace')}"
                )
            time.sleep(0.2)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------- VM
_READY = re.compile(r"@@AGENT-READY (\S+)@@")


class SystemdVM(VM):
    """The harness's VM, booting the Debian image from its disk under systemd."""

    def __init__(
        self,
        image: RootfsImage,
        *,
        lab: Lab | None = None,
        append: str = "",
        boot_timeout: float = 300.0,
        **kwargs: Any,
    ) -> None:
        self.rootfs = image
        self.lab = lab
        # systemd.show_status: keep boot status lines off the agent's console
        cmdline = " ".join(p for p in ("root=/dev/vda rw systemd.show_status=false", append) if p)
        super().__init__(image.guest_image(), append=cmdline, boot_timeout=boot_timeout, **kwargs)

    def command_line(self, accel: str) -> list[str]:
        argv = [a for a in super().command_line(accel) if a != "-no-reboot"]
        argv += [
            "-drive", f"file={self.rootfs.disk},format=raw,if=none,id=root,snapshot=on",
            "-device", "virtio-blk-pci,drive=root",
        ]  # fmt: skip
        if self.lab is not None:
            argv = self.lab.prefix() + argv + self.lab.qemu_args()
        return argv

    def start(self) -> SystemdVM:
        super().start()
        if self.lab is not None:
            self.lab.up()
        return self

    def boot_id(self) -> str:
        return self.sh("cat /proc/sys/kernel/random/boot_id").strip()

    def reboot(self, timeout: float = 300) -> float:
        """`systemctl reboot` in the guest, then wait for the agent of the
        next boot. Returns the seconds it took."""
        t0 = time.monotonic()
        old = self.boot_id()
        mark = self.console_position()
        # detached, so the agent can answer before systemd stops it
        self.sh("setsid sh -c 'sleep 1; systemctl reboot' >/dev/null 2>&1 < /dev/null &")
        deadline = time.monotonic() + scaled(timeout)
        while not _READY.search(self.console_text(mark)):
            if not self.alive():
                raise GuestError(f"QEMU exited during the reboot{self._exit_note()}")
            if time.monotonic() > deadline:
                raise GuestError(
                    f"guest agent not back {scaled(timeout):.0f}s after reboot\n"
                    f"--- console tail ---\n{self.console_tail()}"
                )
            time.sleep(0.5)
        new = self.boot_id()
        if new == old:
            raise GuestError("the guest did not reboot (same boot id)")
        return time.monotonic() - t0

    # ----------------------------------------------------------- helpers
    def put_tree(self, src: Path, dest: str, exclude: Sequence[str] = ("__pycache__", ".mypy_cache")) -> None:
        """Copy a directory of the repository into the guest (tar over the agent)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:

            def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
                if any(part in exclude for part in Path(info.name).parts):
                    return None
                info.uid = info.gid = 0
                info.uname = info.gname = "root"
                return info

            tar.add(str(src), arcname=".", filter=keep)
        payload = base64.b64encode(buf.getvalue()).decode()
        q = shlex.quote(dest)
        self.sh(
            f"rm -rf {q} && mkdir -p {q} && base64 -d <<'EOF' | tar -xz -C {q}\n{payload}\nEOF", timeout=120
        )

    def get_tree(self, src: str, dest: Path, timeout: float = 300) -> None:
        """Copy a directory of the guest to `dest` on the host (tar over the agent);
        only regular files and directories, nothing outside `dest`."""
        q = shlex.quote(src.rstrip("/"))
        blob = base64.b64decode(self.sh(f"tar czf - -C {q} . | base64 -w0", timeout=timeout))
        dest.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            members = tar.getmembers()
            bad = [m.name for m in members if not (m.isfile() or m.isdir()) or ".." in Path(m.name).parts
                   or Path(m.name).is_absolute()]
            if bad:
                raise GuestError(f"{src}: refusing to copy {', '.join(bad[:5])} from the guest")
            tar.extractall(dest, members=members)

    def systemd_state(self) -> str:
        """`systemctl is-system-running` (running, degraded, starting, ...)."""
        return self.run("systemctl is-system-running", timeout=60).stdout.strip()

    def wait_ipv4(self, dev: str, address: str, timeout: float = 120) -> None:
        self.wait_until(
            f"{address} on {dev}",
            lambda: f"inet {address}/" in self.run(f"ip -4 addr show dev {shlex.quote(dev)}").stdout,
            timeout,
        )


# ------------------------------------------------------ reading settings
_NUM = re.compile(r"^-?\d+$")


def _onoff(text: str) -> bool | None:
    word = text.strip().split(" ")[0].lower() if text.strip() else ""
    return True if word == "on" else False if word == "off" else None


def parse_pause(text: str) -> dict[str, bool | None]:
    names = {"autonegotiate": "autoneg", "rx": "rx", "tx": "tx"}
    out: dict[str, bool | None] = {}
    for line in text.splitlines():
        key, sep, val = line.partition(":")
        if sep and key.strip().lower() in names:
            out[names[key.strip().lower()]] = _onoff(val)
    if set(out) != set(names.values()):
        raise GuestError(f"cannot parse ethtool -a output:\n{text}")
    return out


def parse_current(text: str, what: str) -> dict[str, int | None]:
    """The "Current hardware settings" block of ethtool -g / -l."""
    out: dict[str, int | None] = {}
    current = False
    for line in text.splitlines():
        low = line.strip().lower()
        if low.startswith("pre-set maximums"):
            current = False
        elif low.startswith("current hardware settings"):
            current = True
        elif current:
            key, sep, val = line.partition(":")
            if sep:
                v = val.strip()
                out[key.strip().lower().replace(" ", "-")] = int(v) if _NUM.match(v) else None
    if not out:
        raise GuestError(f"cannot parse ethtool {what} output:\n{text}")
    return out


def parse_coalesce(text: str) -> dict[str, int | bool | None]:
    out: dict[str, int | bool | None] = {}
    for line in text.splitlines():
        m = re.match(r"^Adaptive RX:\s*(\S+)\s+TX:\s*(\S+)", line.strip())
        if m:
            out["adaptive-rx"] = _onoff(m.group(1))
            out["adaptive-tx"] = _onoff(m.group(2))
            continue
        key, sep, val = line.partition(":")
        if sep and re.fullmatch(r"[a-z][a-z0-9-]*", key.strip()):
            v = val.strip()
            out[key.strip()] = int(v) if _NUM.match(v) else None
    if "adaptive-rx" not in out:
        raise GuestError(f"cannot parse ethtool -c output:\n{text}")
    return out


def parse_features(text: str) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for line in text.splitlines():
        if line.startswith("Features for"):
            continue
        key, sep, val = line.strip().partition(":")
        flag = _onoff(val)
        if sep and flag is not None:
            out[key.strip()] = flag
    if not out:
        raise GuestError(f"cannot parse ethtool -k output:\n{text}")
    return out


def mask_cpus(mask: str) -> list[int]:
    """A sysfs CPU mask ("0000000e", "00000000,00000001") -> CPU numbers."""
    value = int(mask.strip().replace(",", "") or "0", 16)
    return [i for i in range(value.bit_length()) if value >> i & 1]


def irq_affinity(vm: VM, devs: Sequence[str]) -> dict[str, dict[str, str]]:
    """{dev: {IRQ action name: smp_affinity_list}} for the IRQs named after
    each interface (ixgbe: dev-TxRx-N and dev) or its virtio device
    (virtioN-input.M / -output.M / -config)."""
    script = (
        "for d in " + " ".join(shlex.quote(d) for d in devs) + "; do "
        'v=$(basename "$(readlink -f /sys/class/net/$d/device)"); '
        'awk -v d="$d" -v v="$v" \'NR > 1 { n = $NF; sub(":", "", $1); '
        'if (n == d || index(n, d "-") == 1 || (v ~ /^virtio/ && index(n, v "-") == 1)) print d, $1, n }\' /proc/interrupts; '
        'done | while read -r d irq name; do echo "$d $name $(cat /proc/irq/$irq/smp_affinity_list)"; done'
    )
    out: dict[str, dict[str, str]] = {d: {} for d in devs}
    for line in vm.sh(script).splitlines():
        parts = line.split()
        if len(parts) == 3:
            out[parts[0]][parts[1]] = parts[2]
    return out


def readings(vm: VM, devs: Sequence[str], sysctls: Sequence[str] = ()) -> dict[str, Any]:
    """Everything nettune may change, read from the live guest (not through
    nettune): IRQ affinity, XPS/RPS masks, ethtool -a/-g/-c/-k/-l, sysctls,
    whether irqbalance runs."""
    data: dict[str, Any] = {"irq": irq_affinity(vm, devs), "queues": {}, "ethtool": {}, "sysctl": {}}
    for d in devs:
        q = shlex.quote(d)
        masks: dict[str, str] = {}
        for line in vm.sh(
            f"cd /sys/class/net/{q}/queues && for f in tx-*/xps_cpus rx-*/rps_cpus; do "
            '[ -e "$f" ] && echo "$f $(cat "$f" 2>/dev/null || echo -)"; done'
        ).splitlines():
            name, _, value = line.partition(" ")
            masks[name] = value.strip()
        data["queues"][d] = masks
        eth: dict[str, Any] = {}
        for section, flag, parse in (
            ("pause", "-a", parse_pause),
            ("rings", "-g", lambda t: parse_current(t, "-g")),
            ("coalesce", "-c", parse_coalesce),
            ("features", "-k", parse_features),
            ("channels", "-l", lambda t: parse_current(t, "-l")),
        ):
            r = vm.run(f"ethtool {flag} {q}")
            # None: the driver does not report this section (virtio-net has no -a)
            eth[section] = parse(r.stdout) if r.ok else None
        data["ethtool"][d] = eth
    if sysctls:
        for line in vm.sh(
            "for s in " + " ".join(shlex.quote(s) for s in sysctls) + "; do "
            'echo "$s=$(sysctl -n "$s" 2>/dev/null | tr -s "[:space:]" " ")"; done'
        ).splitlines():
            key, _, value = line.partition("=")
            data["sysctl"][key] = value.strip()
    data["irqbalance"] = vm.run("systemctl is-active irqbalance").stdout.strip()
    return data


# ------------------------------------------------- plan versus readings
def plan_json(vm: VM, *args: str) -> dict[str, Any]:
    out = vm.sh("nettune plan --json " + " ".join(shlex.quote(a) for a in args), timeout=180)
    plan: dict[str, Any] = json.loads(out)
    return plan


def plan_sysctls(plan: dict[str, Any]) -> list[str]:
    return sorted(s["label"].split(" ", 1)[1] for s in plan["settings"] if s["kind"] == "sysctl")


def _check_irq(s: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    name = s["label"].split(" ", 2)[2]  # "IRQ 41 enp1s0-TxRx-0"
    have = seen["irq"].get(s["iface"], {}).get(name)
    if have is None or parse_cpulist(have) != parse_cpulist(s["want"]):
        return [f"{_who(s)}: want {s['want']}, /proc/irq says {have}"]
    return []


def _check_mask(s: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    rel = "/".join(s["target"].split("/")[-2:])  # tx-0/xps_cpus
    have = seen["queues"].get(s["iface"], {}).get(rel)
    if have is None or mask_cpus(have) != mask_cpus(s["want"]):
        return [f"{_who(s)}: want {s['want']}, sysfs says {have}"]
    return []


def _check_ethtool(s: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    section = seen["ethtool"].get(s["iface"], {}).get(s["target"]) or {}
    return [
        f"{_who(s)}: want {key}={value}, ethtool says {section.get(key)}"
        for key, value in s["want"].items()
        if section.get(key) != value
    ]


def _check_sysctl(s: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    have = seen["sysctl"].get(s["label"].split(" ", 1)[1])
    if have is None or have.split() != str(s["want"]).split():
        return [f"{_who(s)}: want {s['want']!r}, sysctl says {have!r}"]
    return []


def _check_service(s: dict[str, Any], seen: dict[str, Any]) -> list[str]:
    have_active = seen.get("irqbalance") == "active"
    if s["target"] != "irqbalance" or have_active != bool(s["want"]):
        return [
            f"{_who(s)}: want {'running' if s['want'] else 'stopped'}, systemctl says {seen.get('irqbalance')}"
        ]
    return []


# One check per setting kind of nettune's plan, each against readings() taken without nettune.
CHECKS: dict[str, Callable[[dict[str, Any], dict[str, Any]], list[str]]] = {
    "irq": _check_irq,
    "mask": _check_mask,
    "ethtool": _check_ethtool,
    "sysctl": _check_sysctl,
    "service": _check_service,
}


def _who(s: dict[str, Any]) -> str:
    return f"{s['iface'] + ' ' if s['iface'] else ''}{s['label']}"


def check_plan(plan: dict[str, Any], seen: dict[str, Any], ignore: Sequence[str] = ()) -> list[str]:
    """Settings of `plan` whose live reading (from `readings()`) differs.
    Returns human-readable mismatches; every setting must be checkable."""
    bad: list[str] = []
    for s in plan["settings"]:
        if s["key"] in ignore:
            continue
        check = CHECKS.get(s["kind"])
        if check is None:
            bad.append(f"{_who(s)}: setting kind {s['kind']!r} not checked by this test")
        else:
            bad += check(s, seen)
    return bad


def iperf3_mbps(report: dict[str, Any]) -> float:
    return iperf3_summary(report)[0]


def rx_queue_packets(stats: dict[str, int]) -> dict[int, int]:
    """Per-RX-queue packet counters of ethtool -S (ixgbe rx_queue_N_packets,
    virtio-net rx_queue_N_packets)."""
    out: dict[int, int] = {}
    for k, v in stats.items():
        m = re.fullmatch(r"rx_queue_(\d+)_packets", k)
        if m:
            out[int(m.group(1))] = v
    return out
