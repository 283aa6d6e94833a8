#!/usr/bin/env python3
"""The demo, run by scripts/demo.sh once QEMU and the guest image are built.

Boots the Debian systemd guest (scripts/build-rootfs.sh) with 4 vCPUs and the
emulated Intel 82599 (`-device ixgbe`, the stock Linux ixgbe driver), whose
wire is a tap in a private network namespace: the host-side traffic peer.
Then, in the guest: install nettune (guest/install.sh), show `nettune plan`,
record the readings nettune may change, `nettune apply`, record them again,
`nettune verify`, iperf3 both ways over the 82599 with per-queue counters
(ethtool -S), `nettune revert`, record them a third time; then `nettune
measure` against the host-side peer (`nettune measure --serve` there): fixed
workloads before apply, after apply and after revert, with verdicts, counters
and PNG plots ($BUILD_DIR/demo/measure/). Prints a report and exits non-zero
if any step failed.

  scripts/demo.py [--profile throughput|latency|forwarding] [--seconds N]
                  [--measure-runs N] [--measure-seconds S]

Environment: BUILD_DIR, QEMU, GUEST_ACCEL, GUEST_TIMEOUT_SCALE (see
tests/guest/README.md), NETTUNE_SRC (nettune tree to install, default guest/).
Logs: $BUILD_DIR/demo/ (the report, the VM's console, agent and QEMU logs).
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import shlex
import shutil
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import REPO_ROOT, build_dir, qemu_binary
from ixgbe_testlib.parsers import parse_ethtool_stats
from ixgbe_testlib.sysguest import (
    Lab,
    SystemdVM,
    Wire,
    iperf3_mbps,
    ixgbe_wire,
    measure_peer,
    pick_accel,
    plan_json,
    plan_sysctls,
    readings,
    rootfs_image,
    rx_queue_packets,
)
from ixgbe_testlib.vm import Result

VCPUS = 4
PROFILES = ("throughput", "latency", "forwarding")
IPERF_PORT = 5201


def rel(path: Path | str) -> str:
    """A path as the report shows it: relative to the repository when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def say(msg: str) -> None:
    print(f"[demo] {msg}", file=sys.stderr, flush=True)


class Report:
    """Sections of the final report plus the verdict of every step."""

    def __init__(self) -> None:
        self.sections: list[tuple[str, list[str]]] = []
        self.steps: list[tuple[str, bool, str]] = []

    def section(self, title: str, lines: Sequence[str]) -> None:
        self.sections.append((title, list(lines)))

    def step(self, name: str, ok: bool, detail: str = "") -> None:
        self.steps.append((name, ok, detail))
        say(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}")

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(ok for _, ok, _ in self.steps)

    def text(self) -> str:
        out: list[str] = []
        for title, lines in sorted(self.sections, key=lambda s: _rank(s[0])):
            out.append(f"== {title} " + "=" * max(3, 74 - len(title)))
            out.extend(lines)
            out.append("")
        out.append("== result " + "=" * 68)
        for name, ok, detail in self.steps:
            out.append(f"  {'PASS' if ok else 'FAIL'}  {name}{'  (' + detail + ')' if detail else ''}")
        failed = sum(1 for _, ok, _ in self.steps if not ok)
        out.append("")
        out.append(
            f"demo {'PASSED' if self.ok else 'FAILED'}: {len(self.steps) - failed} of {len(self.steps)} steps passed"
        )
        return "\n".join(out) + "\n"


# The report's sections, in this order (matched by the start of the title).
SECTION_ORDER = (
    "device",
    "driver probe",
    "tuning plan",
    "before / after",
    "verify result",
    "traffic",
    "per-queue distribution",
    "revert result",
    "timing",
)


def _rank(title: str) -> int:
    for i, prefix in enumerate(SECTION_ORDER):
        if title.startswith(prefix):
            return i
    return len(SECTION_ORDER)


def indent(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line for line in text.rstrip("\n").splitlines()]


# ------------------------------------------------------------ readings table
def flatten(r: dict[str, Any], dev: str) -> dict[str, str]:
    """One row per reading: "ethtool -g rx" -> "512", "IRQ enp1s0-TxRx-0" -> "0-3", ..."""
    rows: dict[str, str] = {}
    eth = r["ethtool"][dev]

    def v(x: Any) -> str:
        return "n/a" if x is None else ("on" if x is True else "off" if x is False else str(x))

    if eth["channels"]:
        rows["channels (ethtool -l) combined"] = v(eth["channels"].get("combined"))
    if eth["rings"]:
        for k in ("rx", "tx"):
            rows[f"ring (ethtool -g) {k}"] = v(eth["rings"].get(k))
    if eth["coalesce"]:
        for k in ("adaptive-rx", "adaptive-tx", "rx-usecs", "tx-usecs"):
            rows[f"coalesce (ethtool -c) {k}"] = v(eth["coalesce"].get(k))
    if eth["pause"]:
        for k in ("autoneg", "rx", "tx"):
            rows[f"pause (ethtool -a) {k}"] = v(eth["pause"].get(k))
    if eth["features"]:
        for k in ("ntuple-filters", "tx-nocache-copy", "generic-receive-offload"):
            if k in eth["features"]:
                rows[f"feature (ethtool -k) {k}"] = v(eth["features"][k])
    for name, aff in sorted(r["irq"][dev].items(), key=lambda kv: (len(kv[0]), kv[0])):
        rows[f"IRQ {name} smp_affinity_list"] = aff
    for q, mask in sorted(r["queues"][dev].items()):
        rows[f"{q}"] = mask
    for name, val in sorted(r["sysctl"].items()):
        rows[name] = val
    rows["irqbalance"] = r["irqbalance"]
    return rows


def table(columns: Sequence[tuple[str, dict[str, str]]]) -> list[str]:
    keys: list[str] = []
    for _, rows in columns:
        keys += [k for k in rows if k not in keys]
    width = max(len(k) for k in keys)
    colw = [max(len(title), *(len(rows.get(k, "-")) for k in keys)) for title, rows in columns]
    head = "  " + "reading".ljust(width) + "  " + "  ".join(t.ljust(w) for (t, _), w in zip(columns, colw))
    lines = [head, "  " + "-" * (len(head) - 2)]
    for k in keys:
        cells = [rows.get(k, "-") for _, rows in columns]
        mark = "  *" if len(set(cells[:2])) > 1 else ""
        lines.append("  " + k.ljust(width) + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, colw)) + mark)
    lines.append("  (* = changed by nettune apply)")
    return lines


# --------------------------------------------------------------------- demo
def run_demo(args: argparse.Namespace, report: Report, log_dir: Path) -> None:
    image = rootfs_image("bookworm")
    qemu = qemu_binary()
    wire = ixgbe_wire(0)
    nettune_src = Path(os.environ.get("NETTUNE_SRC") or REPO_ROOT / "guest").resolve()
    with Lab([wire], name=f"demo-{os.getpid()}") as lab:
        vm = SystemdVM(
            image, lab=lab, name="demo", log_dir=log_dir, smp=VCPUS, memory_mb=1024,
            accel=pick_accel(log_dir), qemu=qemu,
        )  # fmt: skip
        try:
            say(f"booting Debian {image.suite} (kernel {image.release}) with {VCPUS} vCPUs and -device ixgbe")
            t0 = time.monotonic()
            vm.start()
            dev = vm.wait_netdevs("ixgbe", 1, timeout=240)[0]
            vm.wait_ipv4(dev, wire.guest_ip, 240)
            vm.wait_until(
                "ixgbe queue vectors", lambda: f"{dev}-TxRx-0" in vm.run("cat /proc/interrupts").stdout, 240
            )
            boot_s = time.monotonic() - t0
            report.step(
                "boot (systemd, udev, systemd-networkd)", True, f"{boot_s:.0f} s to agent and link up"
            )
            demo_steps(args, report, vm, lab, dev, nettune_src, boot_s)
        finally:
            vm.shutdown()


@dataclasses.dataclass
class Demo:
    """What every step of the demo works with: the booted guest, its 82599 port
    (`dev`, `q` quoted for the shell) and the host-side peer."""

    args: argparse.Namespace
    report: Report
    vm: SystemdVM
    lab: Lab
    dev: str

    @property
    def q(self) -> str:
        return shlex.quote(self.dev)

    @property
    def wire(self) -> Wire:
        return self.lab.wire("ixgbe")


def demo_steps(
    args: argparse.Namespace,
    report: Report,
    vm: SystemdVM,
    lab: Lab,
    dev: str,
    nettune_src: Path,
    boot_s: float,
) -> None:
    d = Demo(args, report, vm, lab, dev)
    device_section(d, boot_s)
    probe_and_link(d)

    # ---- nettune: install, plan
    vm.put_tree(nettune_src, "/root/nettune-src")
    vm.sh(f"bash /root/nettune-src/install.sh --profile {shlex.quote(args.profile)}", timeout=180)
    plan_text = vm.sh(f"nettune plan -i {d.q}", timeout=180)
    sysctls = plan_sysctls(plan_json(vm, "-i", dev))

    # ---- before / apply / after / verify
    before = readings(vm, [dev], sysctls)
    apply = vm.run(f"nettune apply -i {d.q}", timeout=300)
    report.step("nettune apply", apply.ok, f"rc={apply.rc}")
    report.section(
        f"tuning plan (nettune plan -i {dev}, profile {args.profile})",
        [*indent(plan_text), "", f"  nettune apply -i {dev} (rc={apply.rc}):", *indent(apply.stdout, "    ")],
    )
    after = readings(vm, [dev], sysctls)
    verify = vm.run(f"nettune verify -i {d.q}", timeout=300)
    report.step(
        "nettune verify",
        verify.ok,
        verify.stdout.strip().splitlines()[-1] if verify.stdout.strip() else f"rc={verify.rc}",
    )

    traffic(d)

    # ---- revert
    revert = vm.run("nettune revert", timeout=300)
    report.step("nettune revert", revert.ok, f"rc={revert.rc}")
    vm.wait_until(
        "IRQs back after revert", lambda: f"{dev}-TxRx-0" in vm.run("cat /proc/interrupts").stdout, 120
    )
    reverted = readings(vm, [dev], sysctls)
    report.section(f"before / after (readings of {dev} and the stack, taken in the guest)", [
        *table([("before", flatten(before, dev)), ("after apply", flatten(after, dev)),
                ("after revert", flatten(reverted, dev))]),
    ])  # fmt: skip
    report.section("verify result", indent(verify.stdout or f"(no output, rc={verify.rc})"))
    revert_result(d, revert, before, reverted)
    if args.measure_runs:
        measure(d, nettune_src)
    problems = vm.qemu_problems()
    report.step(
        "QEMU reported no device or guest errors", not problems, problems.splitlines()[0] if problems else ""
    )


def device_section(d: Demo, boot_s: float) -> None:
    vm, q, wire = d.vm, d.q, d.wire
    pci = vm.pci_address(d.dev)
    ids = vm.sh(
        f"cd /sys/class/net/{q}/device && echo $(cat vendor device subsystem_vendor subsystem_device)"
    ).split()
    model = vm.run(
        f"udevadm info -q property -p /sys/class/net/{q} | sed -n 's/^ID_MODEL_FROM_DATABASE=//p'"
    ).stdout.strip()
    info = vm.sh(f"ethtool -i {q}")
    d.report.section("device", [
        f"  guest: Debian {vm.rootfs.suite}, kernel {vm.release}, {VCPUS} vCPUs, systemd {vm.sh('systemctl --version | head -n1').split()[1]}",
        f"  PCI {pci}: vendor {ids[0]} device {ids[1]} (subsystem {ids[2]}:{ids[3]}) {model}",
        f"  QEMU: {rel(vm.qemu)} -device ixgbe; wire: tap {wire.tap} in netns {d.lab.name} ({wire.host_ip} <-> {wire.guest_ip})",
        f"  booted in {boot_s:.0f} s ({vm.accel or 'tcg'})",
        *indent(info),
    ])  # fmt: skip


def probe_and_link(d: Demo) -> None:
    vm, dev, q = d.vm, d.dev, d.q
    probe = vm.sh(f"dmesg | grep -E 'ixgbe|{dev}' | grep -v -E 'renamed from|PHC' | tail -n 12")
    link = vm.ethtool(dev)
    channels = vm.channels(dev)
    vectors = [
        ln.split()[-1]
        for ln in vm.sh("cat /proc/interrupts").splitlines()
        if ln.split() and ln.split()[-1].startswith(dev)
    ]
    link_ok = link.get("Link detected") == "yes" and link.get("Speed") == "10000Mb/s"
    d.report.section("driver probe + link", [
        *indent(probe),
        f"  link: {link.get('Speed')}, duplex {link.get('Duplex')}, link detected: {link.get('Link detected')}",
        f"  queues: {channels['current'].get('Combined')} combined (maximum {channels['max'].get('Combined')}); "
        f"MSI-X vectors: {', '.join(vectors)}",
        f"  address: {vm.sh(f'ip -br addr show {q}').strip()}",
    ])  # fmt: skip
    d.report.step(
        "probe and 10 Gb/s link",
        link_ok,
        f"{link.get('Speed')}, link {link.get('Link detected')}, {len(vectors)} vectors",
    )
    ping = vm.ping(d.wire.host_ip, count=3)
    d.report.step("ping host peer over the 82599", ping.ok and " 0% packet loss" in ping.stdout)


def tx_queue_packets(stats: dict[str, int]) -> dict[int, int]:
    """{queue: packets} from ethtool -S's tx_queue_<n>_packets counters."""
    return {
        int(k.split("_")[2]): v
        for k, v in stats.items()
        if k.startswith("tx_queue_") and k.endswith("_packets")
    }


def traffic(d: Demo) -> None:
    """iperf3 both ways over the 82599, with the per-queue counters of each direction."""
    vm, wire = d.vm, d.wire
    vm.sh(f"iperf3 -s -D -B {wire.guest_ip} -p {IPERF_PORT} --logfile /tmp/iperf3-server.log")
    vm.wait_until(
        "iperf3 server in the guest",
        lambda: "LISTEN" in vm.run(f"ss -Hltn 'sport = :{IPERF_PORT}'").stdout,
        30,
    )
    lines: list[str] = []
    per_queue: list[str] = []
    rx_used: set[int] = set()
    for name, reverse in (("host -> guest (guest receives)", False), ("guest -> host (guest sends)", True)):
        counts = one_direction(d, name, reverse, lines)
        if counts is None:
            continue
        per_queue.append(f"  {name}:")
        for i, d_rx, d_tx in counts:
            if d_rx or d_tx:
                per_queue.append(f"    queue {i}:  rx {d_rx:>9} packets   tx {d_tx:>9} packets")
            if d_rx > 0 and not reverse:
                rx_used.add(i)
    d.report.section("traffic (iperf3 between the host peer and the guest, over the 82599)", lines)
    d.report.section(f"per-queue distribution (ethtool -S {d.dev}, deltas)", per_queue)
    d.report.step(
        "RSS spreads received flows over several RX queues",
        len(rx_used) >= 2,
        f"RX queues used: {sorted(rx_used)}",
    )


def one_direction(d: Demo, name: str, reverse: bool, lines: list[str]) -> list[tuple[int, int, int]] | None:
    """One iperf3 run (a line in `lines`, a step); the (queue, rx, tx) packet deltas
    of every RX queue, or None when iperf3 failed."""
    vm, q, args = d.vm, d.q, d.args
    s0 = parse_ethtool_stats(vm.sh(f"ethtool -S {q}"))
    try:
        rep = d.lab.iperf3_client(d.wire.guest_ip, IPERF_PORT, args.seconds, reverse=reverse, streams=4)
        mbps = iperf3_mbps(rep)
        retr = int(rep["end"].get("sum_sent", {}).get("retransmits", 0) or 0)
        lines.append(
            f"  {name:<32} {mbps:9.1f} Mbit/s  ({args.seconds} s, 4 TCP streams, {retr} retransmits)"
        )
        d.report.step(f"iperf3 {name}", mbps > 1.0, f"{mbps:.1f} Mbit/s")
    except GuestError as exc:
        lines.append(f"  {name:<32} FAILED: {exc}")
        d.report.step(f"iperf3 {name}", False, str(exc).splitlines()[0])
        return None
    s1 = parse_ethtool_stats(vm.sh(f"ethtool -S {q}"))
    rx0, rx1 = rx_queue_packets(s0), rx_queue_packets(s1)
    tx0, tx1 = tx_queue_packets(s0), tx_queue_packets(s1)
    return [(i, rx1[i] - rx0.get(i, 0), tx1.get(i, 0) - tx0.get(i, 0)) for i in sorted(rx1)]


def measure(d: Demo, nettune_src: Path) -> None:
    """`nettune measure` before apply, after apply and after revert against the host-side
    peer; the report's verdict table goes into the demo's report, the whole report (with
    its plots) to $BUILD_DIR/demo/measure/."""
    args, vm = d.args, d.vm
    out = build_dir() / "demo" / "measure"
    shutil.rmtree(out, ignore_errors=True)
    cmd = (
        f"nettune measure --peer {d.wire.host_ip} -i {d.q} -p {shlex.quote(args.profile)} "
        f"--runs {args.measure_runs} --seconds {args.measure_seconds} --out /root/measure"
    )
    with measure_peer(d.lab, vm.rootfs, nettune_src, out / "serve.log"):
        r = vm.run(cmd + " 2>&1", timeout=600 + 60 * args.measure_runs * args.measure_seconds)
    d.report.step("nettune measure (before apply, after apply, after revert)", r.ok, f"rc={r.rc}")
    if not r.ok:
        d.report.section("nettune measure", [f"  {cmd}", *indent(r.stdout[-3000:])])
        return
    vm.get_tree("/root/measure", out)
    md = (out / "report.md").read_text().splitlines()
    start = next(i for i, line in enumerate(md) if line.startswith("| workload"))
    verdicts = list(itertools.takewhile(lambda line: line.startswith("|"), md[start:]))
    d.report.section("measured (nettune measure, report and plots in " + rel(out) + ")", [
        f"  {cmd}",
        "  median [min-max] of each phase; the verdict compares with 'before' within the noise band",
        *indent("\n".join(verdicts)),
        "",
        "  under TCG the guest's CPUs are emulated and shared with QEMU's own device and",
        "  network threads on this host's cores: the spread between runs is large, and a",
        "  verdict of 'no change within noise' is the honest result there, not a failure",
        "  plots: " + ", ".join(sorted(p.name for p in out.glob("*.png"))),
    ])  # fmt: skip


def revert_result(d: Demo, revert: Result, before: dict[str, Any], reverted: dict[str, Any]) -> None:
    """Everything is back after revert, except IRQ affinity values owned by irqbalance."""
    fb, fr = flatten(before, d.dev), flatten(reverted, d.dev)
    owned = before["irqbalance"] == "active"
    compared = [k for k in fb if not (owned and k.startswith("IRQ "))]
    differ = [k for k in compared if fr.get(k) != fb[k]]
    irq_names_same = sorted(before["irq"][d.dev]) == sorted(reverted["irq"][d.dev])
    lines = indent(revert.stdout.strip() or "(no output)")
    lines.append("")
    if owned:
        lines.append("  IRQ affinity belongs to irqbalance, which ran before and runs again after revert")
        lines.append(
            f"  (it moves IRQs every 10 s): same IRQs present again: {'yes' if irq_names_same else 'NO'}"
        )
    lines.append(
        f"  readings back to their value before apply: {len(compared) - len(differ)} of {len(compared)}"
        + (f"; differ: {', '.join(differ)}" if differ else "")
    )
    d.report.section("revert result", lines)
    d.report.step(
        "revert restores the readings",
        revert.ok and not differ and irq_names_same,
        f"{len(compared) - len(differ)} of {len(compared)} readings restored"
        + (f", {len(fb) - len(compared)} IRQ affinities left to irqbalance" if owned else ""),
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument(
        "--profile", choices=PROFILES, default="throughput", help="nettune profile (default throughput)"
    )
    ap.add_argument("--seconds", type=int, default=10, help="iperf3 duration per direction (default 10)")
    ap.add_argument("--measure-runs", type=int, default=3, help="nettune measure runs per workload (default 3, 0: skip)")
    ap.add_argument("--measure-seconds", type=int, default=3, help="nettune measure run length (default 3)")
    args = ap.parse_args(argv)
    if args.seconds < 1 or args.seconds > 600:
        ap.error("--seconds must be between 1 and 600")
    if not 0 <= args.measure_runs <= 20 or not 1 <= args.measure_seconds <= 60:
        ap.error("--measure-runs must be 0 to 20 and --measure-seconds 1 to 60")
    if os.geteuid() != 0:
        print("demo: error: needs root (network namespace and tap for the host-side peer)", file=sys.stderr)
        return 2
    out_dir = build_dir() / "demo"
    log_dir = out_dir / "logs" / time.strftime("%Y%m%dT%H%M%S")
    log_dir.mkdir(parents=True, exist_ok=True)
    report = Report()
    t0 = time.monotonic()
    try:
        run_demo(args, report, log_dir)
    except (HarnessError, GuestError, OSError) as exc:
        report.step("demo ran to the end", False, str(exc).splitlines()[0])
        (log_dir / "error.txt").write_text(traceback.format_exc())
        say(f"error: {exc}")
    wall = time.monotonic() - t0
    build_s = os.environ.get("DEMO_BUILD_SECONDS")
    report.section("timing", [
        *( [f"  build (deps, QEMU, guest image): {int(build_s)} s"] if build_s else [] ),
        f"  VM part (boot, tune, traffic, revert): {wall:.0f} s",
        f"  logs: {rel(log_dir)}",
    ])  # fmt: skip
    text = report.text()
    (out_dir / "report.txt").write_text(text)
    (log_dir / "report.txt").write_text(text)
    print(text, end="")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
