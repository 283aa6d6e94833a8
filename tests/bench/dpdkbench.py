"""DPDK testpmd io forwarding between two ports of one NIC model, wired back
to back: the emulated 82599 (DPDK's net_ixgbe) against QEMU's igb (82576,
net_e1000_igb) and, optionally, e1000e (82574, net_e1000_em), in one run.

One guest per model, all on the same QEMU binary (copied once at the start)
and the same Debian systemd image (scripts/build-rootfs.sh: DPDK 22.11,
disk opened with snapshot=on, so it never changes), 2 vCPUs (testpmd's main
lcore and its one forwarding lcore), 2 GiB, -cpu max (Debian's DPDK needs
SSE4.2):

    port 0 (-netdev dgram, unix socket a) <-- wire --> port 1 (-netdev dgram, unix socket b)

both bound to uio_pci_generic (IOVA as PA, 2 MiB hugepages); testpmd
forwards io between them (rx on 0 -> tx on 1, rx on 1 -> tx on 0) and
`start tx_first N` sends N bursts of 32 64-byte packets from each port.
Those then circulate (port 0 -> wire -> port 1 -> testpmd -> port 0 -> ...)
without end, so the rate is what the device model, the wire and the guest's
forwarding loop can do, the same closed loop for every model.

Every guest is booted and its forwarding started once, then paused (QMP
stop). For each window, the guests are visited round-robin: resume, a
warm-up, a window between two `show port stats all`, pause. Per window:
packets forwarded per second (the two ports' RX counter deltas over the
window's host time), testpmd's own Rx-pps (its clock, same interval), the
other side's counters as a cross-check, and the QEMU process's CPU time
(host /proc). Then one extra window per model with QEMU's
memory_region_ops_read/write trace on (QMP trace-event-set-state): register
accesses, tail writes per packet, and the accesses that would exit to QEMU
under KVM: reads, and writes outside the ranges the device registered as
coalesced MMIO (its ixgbe_coalesced_zone trace, on from the command line;
tests/bench/mmiotrace.py).

Run through scripts/bench.sh --dpdk; `python3 tests/bench/dpdkbench.py --help`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchlib import BenchError, cpu_delta, host_facts, sha256_file
from dpdkbenchlib import (
    SUBJECT,
    Model,
    in_flight,
    mmio_figures,
    parse_args,
    parse_probed,
    port_stats,
    ratios,
    render,
    summaries,
    verdict,
    window_figures,
)
from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import build_dir, has_device, qemu_binary
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args
from ixgbe_testlib.sysguest import RootfsImage, SystemdVM, pick_accel, rootfs_image
from ixgbe_testlib.testpmd import PortStats, Testpmd
from mmiotrace import ZONE_EVENT, count_mmio, format_top, mmio_traced, parse_zones
from nicbench import cpu_snapshot, find_qemu_pid, loadavg, snapshot_qemu

log = logging.getLogger("dpdkbench")

VCPUS = 2
MEMORY_MB = 2048
HUGEPAGES = 256  # 2 MiB pages
DESCRIPTORS = 512  # RX and TX ring size of every port, same for every model


@dataclasses.dataclass
class Stamp:
    """testpmd's counters, the moment they were read and QEMU's CPU time."""

    stats: dict[int, PortStats]
    wall: float
    cpu: Any


class DpdkGuest:
    """One guest of one model: two ports wired to each other, testpmd forwarding."""

    def __init__(self, model: Model, image: RootfsImage, qemu: Path, accel: str, log_dir: Path, tx_bursts: int) -> None:
        self.model = model
        self.image = image
        self.qemu = qemu
        self.accel = accel
        self.log_dir = log_dir
        self.tx_bursts = tx_bursts
        self.vm: SystemdVM | None = None
        self.tp: Testpmd | None = None
        self.pid = 0
        self.pcis: list[str] = []
        self.boot_seconds = 0.0
        self.setup_seconds = 0.0

    def _args(self, d: Path) -> list[str]:
        dev = self.model.device
        # the device's coalesced ranges are announced at realize: only the
        # command line can turn their trace event on in time
        return (
            ["-cpu", "max", "-trace", ZONE_EVENT]
            + nic_args(dev, "w0", 0, mac_address(0))
            + nic_args(dev, "w1", 1, mac_address(1))
            + dgram_netdev("w0", d / "wa", d / "wb")
            + dgram_netdev("w1", d / "wb", d / "wa")
        )

    @property
    def guest(self) -> SystemdVM:
        if self.vm is None:
            raise HarnessError(f"{self.model.name}: no VM")
        return self.vm

    @property
    def testpmd(self) -> Testpmd:
        if self.tp is None:
            raise HarnessError(f"{self.model.name}: testpmd not started")
        return self.tp

    def start(self) -> None:
        t0 = time.monotonic()
        self.vm = SystemdVM(
            self.image, name=f"dpdk-{self.model.name}", log_dir=self.log_dir, smp=VCPUS, memory_mb=MEMORY_MB,
            accel=self.accel, qemu=self.qemu, args_factory=self._args,
        )  # fmt: skip
        vm = self.vm
        vm.start()
        self.pid = find_qemu_pid(vm)
        self.boot_seconds = time.monotonic() - t0
        t1 = time.monotonic()
        devs = vm.wait_netdevs(self.model.kernel_driver, 2, timeout=180)
        self.pcis = sorted(vm.pci_address(d) for d in devs)
        vm.modprobe("uio_pci_generic")
        for d in devs:
            vm.sh(f"ip addr flush dev {d} && ip link set {d} down")
        vm.sh(shlex.join(["dpdk-devbind.py", "-b", "uio_pci_generic", *self.pcis]), timeout=120)
        for pci in self.pcis:
            drv = vm.sh(f"basename $(readlink /sys/bus/pci/devices/{pci}/driver)").strip()
            if drv != "uio_pci_generic":
                raise GuestError(f"{pci} is bound to {drv}, not uio_pci_generic")
        vm.sh(f"echo {HUGEPAGES} > /proc/sys/vm/nr_hugepages")
        self.tp = Testpmd(vm)
        eal = ["-l", f"0-{VCPUS - 1}", "-n", "1", "--iova-mode=pa"]
        for pci in self.pcis:
            eal += ["-a", pci]
        app = [
            "--forward-mode=io", "--rxq=1", "--txq=1", f"--rxd={DESCRIPTORS}", f"--txd={DESCRIPTORS}",
            "--burst=32", "--no-lsc-interrupt",
        ]  # fmt: skip
        out = self.tp.start(eal, app)
        probed = parse_probed(out, self.model.pmd)
        if sorted(probed) != self.pcis:
            raise GuestError(f"testpmd probed {probed} with {self.model.pmd}, expected {self.pcis}:\n{out[-3000:]}")
        self.tp.cmd(f"start tx_first {self.tx_bursts}")
        self.setup_seconds = time.monotonic() - t1

    def pause(self) -> None:
        self.guest.qmp("stop")

    def resume(self) -> None:
        self.guest.qmp("cont")

    def stamp(self) -> Stamp:
        """Counters and CPU time; the wall time is the middle of the command's round trip."""
        t0 = time.monotonic()
        cpu = cpu_snapshot(self.pid)
        text = self.testpmd.cmd("show port stats all")
        t1 = time.monotonic()
        return Stamp(port_stats(text), (t0 + t1) / 2, cpu)

    def window(self, seconds: float) -> dict[str, float]:
        a = self.stamp()
        time.sleep(seconds)
        b = self.stamp()
        cpu = cpu_delta(a.cpu, b.cpu, os.sysconf("SC_CLK_TCK"))
        return window_figures(a.stats, b.stats, b.wall - a.wall, cpu, in_flight(self.tx_bursts))

    def trace_window(self, seconds: float) -> dict[str, Any]:
        """A window with the MMIO trace on: register accesses per packet, and
        those that would exit under KVM (the coalesced ranges the device
        announced at realize, in the log before the window)."""
        a = self.stamp()
        with mmio_traced(self.guest) as trace:
            t0 = time.monotonic()
            time.sleep(seconds)
        t1 = time.monotonic()
        b = self.stamp()
        head, text = trace.read()
        # the packets forwarded while the trace was on, at the rate of the
        # whole window (its stats are read before and after, with it off)
        fig = window_figures(a.stats, b.stats, b.wall - a.wall, None, in_flight(self.tx_bursts))
        packets = round(fig["fwd_pps"] * (t1 - t0))
        counts = count_mmio(text, {self.model.mmio_region: self.model.bar_size})
        out = mmio_figures(counts, self.model, packets, parse_zones(head))
        out["trace_fwd_pps"] = fig["fwd_pps"]
        out["trace_seconds"] = t1 - t0
        return out

    def problems(self) -> str:
        """QEMU's stderr (the trace goes to the -D log, so not that)."""
        vm = self.guest
        try:
            return vm.stderr_log.read_text(errors="replace").strip()
        except OSError:
            return ""

    def shutdown(self) -> None:
        if self.vm is not None:
            self.vm.shutdown(save_dmesg=False)


def dpdk_version(image: RootfsImage) -> str:
    """The guest image's DPDK package version (its manifest)."""
    for line in (image.disk.parent / "manifest.txt").read_text().splitlines():
        if line.startswith("package dpdk "):
            return line.split()[2]
    return ""


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    if args.check_args:
        return 0
    logging.basicConfig(
        level=logging.INFO, format="[dpdkbench %(asctime)s] %(message)s", datefmt="%H:%M:%S", stream=sys.stderr
    )
    logging.getLogger("qemu").setLevel(logging.WARNING)
    logging.getLogger("guest").setLevel(logging.WARNING)
    t_start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    mode = "quick" if args.quick else "full"
    out_dir = Path(args.out_dir or build_dir() / "bench" / "dpdk").resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    log_dir = out_dir / "logs" / stamp
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        image = rootfs_image("bookworm")
        src_qemu = qemu_binary()
    except HarnessError as exc:
        log.error("%s", exc)
        return 2
    if "\npackage dpdk-dev " not in "\n" + (image.disk.parent / "manifest.txt").read_text():
        log.error("the guest image has no dpdk-dev (scripts/rootfs/packages.txt)")
        return 2
    qemu = snapshot_qemu(src_qemu, out_dir)
    missing = [m.device for m in args.models if not has_device(m.device, qemu)]
    if missing:
        log.error("QEMU binary %s has no -device %s", src_qemu, ", ".join(missing))
        return 2
    accel = pick_accel(log_dir)
    version = subprocess.run([str(qemu), "-version"], capture_output=True, text=True, check=True).stdout
    models = [m.name for m in args.models]
    log.info(
        "%s mode: %s; %d windows x %d s (warm-up %d s) per model, trace window %d s; %d packets in flight; accel %s",
        mode, ", ".join(models), args.reps, args.seconds, args.warmup, args.trace_seconds,
        in_flight(args.tx_bursts), accel,
    )  # fmt: skip
    meta: dict[str, Any] = {
        "schema": 1,
        "started": started.isoformat(timespec="seconds"),
        "mode": mode,
        "reps": args.reps,
        "seconds": args.seconds,
        "warmup_s": args.warmup,
        "trace_seconds": args.trace_seconds,
        "tx_bursts": args.tx_bursts,
        "in_flight": in_flight(args.tx_bursts),
        "descriptors": DESCRIPTORS,
        "accel": accel,
        "vm": {"smp": VCPUS, "memory_mb": MEMORY_MB, "machine": "q35", "cpu": "max"},
        "guest": {"image": "rootfs-bookworm", "release": image.release, "dpdk": dpdk_version(image)},
        "qemu": {"version": version.splitlines()[0], "sha256": sha256_file(qemu)},
        "host": host_facts(),
        "models": [dataclasses.asdict(m) for m in args.models],
    }
    windows: list[dict[str, Any]] = []
    traces: dict[str, dict[str, Any]] = {}
    failures: dict[str, str] = {}
    qemu_stderr: dict[str, str] = {}
    guests: list[DpdkGuest] = []
    try:
        for m in args.models:
            g = DpdkGuest(m, image, qemu, accel, log_dir, args.tx_bursts)
            log.info("%s: booting, binding the ports, starting testpmd", m.name)
            try:
                g.start()
                g.pause()
            except (GuestError, HarnessError, BenchError, OSError) as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                failures[m.name] = f"setup: {first}"
                log.error("%s: setup failed: %s (logs in %s)", m.name, exc, log_dir)
                g.shutdown()
                continue
            guests.append(g)
            log.info(
                "%s: forwarding (boot %.0f s, setup %.0f s), ports %s", m.name, g.boot_seconds, g.setup_seconds, g.pcis
            )
        for rep in range(args.reps):
            order = guests[rep % len(guests) :] + guests[: rep % len(guests)] if guests else []
            for g in order:
                if g.model.name in failures:
                    continue
                w: dict[str, Any] = {"model": g.model.name, "rep": rep, "ok": False, "figures": {}}
                try:
                    g.resume()
                    time.sleep(args.warmup)
                    w["figures"] = g.window(args.seconds)
                    w["ok"] = True
                    g.pause()
                except BenchError as exc:
                    w["error"] = str(exc)
                    log.error("rep %d %s: %s", rep, g.model.name, exc)
                    g.pause()
                except (GuestError, HarnessError, OSError) as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    w["error"] = first
                    failures[g.model.name] = f"rep {rep}: {first}"
                    log.error("rep %d %s failed: %s", rep, g.model.name, exc)
                    g.shutdown()
                w["host_loadavg"] = loadavg()
                windows.append(w)
                if w["ok"]:
                    f = w["figures"]
                    log.info(
                        "rep %d %-7s %7.0f pps (testpmd %7.0f), QEMU %.0f%% CPU, %.1f us/packet",
                        rep, g.model.name, f["fwd_pps"], f["testpmd_pps"], f["cpu_pct"], f["us_per_pkt"],
                    )  # fmt: skip
        if args.trace_seconds:
            for g in guests:
                if g.model.name in failures:
                    continue
                try:
                    g.resume()
                    time.sleep(args.warmup)
                    traces[g.model.name] = g.trace_window(args.trace_seconds)
                    g.pause()
                    t = traces[g.model.name]
                    log.info(
                        "trace %-7s %.3f NIC writes, %.3f reads, %.3f TX / %.3f RX tail writes, "
                        "%.3f KVM exits per packet",
                        g.model.name, t["nic_writes_per_pkt"], t["nic_reads_per_pkt"],
                        t["tx_tail_writes_per_pkt"], t["rx_tail_writes_per_pkt"], t["nic_exits_per_pkt"],
                    )  # fmt: skip
                except (GuestError, HarnessError, BenchError, OSError) as exc:
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                    failures[g.model.name] = f"trace window: {first}"
                    log.error("%s: trace window failed: %s", g.model.name, exc)
    finally:
        for g in guests:
            if g.vm is not None and g.vm.alive():
                qemu_stderr[g.model.name] = g.problems()
            g.shutdown()

    summ = summaries(windows)
    tables = render(summ, traces, models)
    goal_ratio, goal = verdict(summ)
    elapsed = time.monotonic() - t_start
    header = (
        f"DPDK forwarding benchmark {meta['started']} ({mode}): {meta['qemu']['version']}, accel {accel}, "
        f"guest {image.release} with DPDK {meta['guest']['dpdk'] or '?'}, {VCPUS} vCPUs, {MEMORY_MB} MiB, "
        f"{args.reps} windows x {args.seconds} s per model after {args.warmup} s warm-up, {elapsed / 60:.1f} min\n"
        f"testpmd io forwarding between ports 0 and 1 (uio_pci_generic, 1 queue, {DESCRIPTORS} descriptors), "
        f"wired to each other (-netdev dgram); {in_flight(args.tx_bursts)} 64-byte packets circulating "
        f"(start tx_first {args.tx_bursts}).\n"
        "cells: median ±half the min-max range (relative); ratios are of medians."
    )
    notes = [goal]
    for m in models:
        ws = [w for w in windows if w["model"] == m and w["ok"]]
        if ws:
            cross = max(w["figures"]["crosscheck"] for w in ws)
            lost = sum(w["figures"]["lost"] for w in ws)
            tp = [w["figures"]["testpmd_pps"] / w["figures"]["fwd_pps"] for w in ws]
            notes.append(
                f"{m}: port counters agree within {100 * cross:.3f}% (one port's TX vs the other's RX), "
                f"{lost:.0f} packets lost, testpmd's own rate / ours {min(tp):.3f}-{max(tp):.3f}"
            )
    for m, t in traces.items():
        region = next(x.mmio_region for x in args.models if x.name == m)
        notes.append(
            f"{m}: busiest registers in the trace window, per packet: {format_top(t['top_registers'], region)}"
        )
    for m, err in qemu_stderr.items():
        if err:
            notes.append(f"{m}: QEMU wrote to stderr: {err.splitlines()[0]}")
    text = header + "\n\n" + tables + "\n\n" + "\n".join(notes)
    bad = [w for w in windows if not w["ok"]]
    expected = len(args.models) * args.reps
    if failures or bad or len(windows) - len(bad) != expected:
        text += "\n\nPROBLEMS:\n" + "\n".join(
            [f"  {m}: {e}" for m, e in failures.items()]
            + [f"  {w['model']} window {w['rep']}: {w.get('error', '?')}" for w in bad]
        )
    print(text)
    result = {
        **meta,
        "elapsed_s": elapsed,
        "boot_s": {g.model.name: g.boot_seconds for g in guests},
        "failures": failures,
        "windows": windows,
        "traces": traces,
        "summary": {f: {m: s.as_dict() for m, s in per.items()} for f, per in summ.items()},
        "ratios": ratios(summ, models),
        "goal": {"ratio": goal_ratio, "target": 2.0, "reached": goal_ratio is not None and goal_ratio >= 2.0},
        "tables": tables,
    }
    name = f"dpdkbench-{stamp}-{mode}"
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{name}.txt").write_text(text + "\n")
    shutil.copyfile(out_dir / f"{name}.json", out_dir / "latest.json")
    shutil.copyfile(out_dir / f"{name}.txt", out_dir / "latest.txt")
    log.info("results: %s (also latest.*); VM logs: %s", out_dir / f"{name}.json", log_dir)
    good = len(windows) - len(bad)
    if failures or good != expected:
        log.error("%d of %d windows measured", good, expected)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except (HarnessError, BenchError) as exc:
        log.error("%s", exc)
        sys.exit(2)
