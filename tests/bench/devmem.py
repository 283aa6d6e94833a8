"""Host memory per NIC device: ixgbe against QEMU's igb, e1000e and
virtio-net-pci (`scripts/bench.sh --device-model --memory`).

The same QEMU setup as the device-model benchmark (devbench.py: `-machine
q35 -accel qtest`, no guest, a `-netdev dgram` backend per NIC), but with N
devices of one model in one QEMU, N = 0, 1, 2, 4, and several starts of each
configuration. ixgbe, igb and e1000e are programmed as their Linux drivers
program them (devbench's Bed, one queue pair, MSI-X) and each moves frames
both ways (64 and 1514 bytes, every descriptor and buffer of both rings
used); virtio-net-pci is realized but not driven (this mode does not use
devdrivers.VirtioNet). Then, per QEMU:

  - /proc/PID/smaps_rollup: Anonymous, Private_Dirty, Rss and Pss, with
    guest RAM left out: it is a memfd backend (`memory-backend-memfd`), so
    it is not anonymous memory, and its mapping's pages are subtracted from
    Rss, Pss and Private_Dirty. QEMU runs with transparent huge pages off
    (PR_SET_THP_DISABLE, inherited by exec): QEMU asks for huge pages on its
    RAM blocks (the firmware ROMs too), and whether a 2 MiB page fits into
    a block depends on where ASLR put it, which made anonymous RSS jump by
    2-4 MiB from start to start whatever the devices.
  - the heap (valgrind --tool=massif, a detailed snapshot through vgdb
    after the traffic): bytes malloc'ed and not freed, with their call
    sites, independent of the host's load and of page residency.

Bytes per device is the slope of each figure over N (Theil-Sen: the median
of the slopes between every two starts at different N, so one odd start
does not move it), with an uncertainty of the largest spread among the
starts of one N divided by the range of N; ratios ixgbe/other are printed
with the range those uncertainties allow, "unresolved" when it reaches 0.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchargs import check_ranges, choose_models
from benchlib import BenchError, host_facts, sha256_file
from devbench import Bed, QemuProc, build_dir, snapshot_qemu, MAX_DEVICES, MEMORY
from devbenchlib import (
    MEM_DEVICES,
    MEM_METRICS,
    MEM_MODEL_NAMES,
    MODELS,
    SMAPS_KEYS,
    SUBJECT,
    Cell,
    MemFit,
    fit_per_device,
    massif_sites,
    parse_massif,
    parse_smaps_rollup,
    ratio_range,
    render_memory_table,
    render_points_table,
    site_deltas,
)

log = logging.getLogger("devmem")

PR_SET_THP_DISABLE = 41
GUEST_RAM = ["-machine", "memory-backend=guest-ram", "-object", f"memory-backend-memfd,id=guest-ram,size={MEMORY}"]
GUEST_RAM_MAPPING = "/memfd:memory-backend-memfd"
CELLS = (Cell("tx", 1514), Cell("rx", 1514), Cell("tx", 60), Cell("rx", 60))
RING = 256
BURST = 32
RATE_PPS = 1_000_000
ITR_US = 50
# glib and QEMU allocation wrappers: massif attributes their bytes to the caller
ALLOC_FNS = ("g_malloc", "g_malloc0", "g_realloc", "g_malloc_n", "g_malloc0_n", "g_realloc_n", "g_try_malloc",
             "g_try_malloc0", "g_try_malloc_n", "g_try_malloc0_n", "g_memdup", "g_memdup2", "g_strdup", "g_strndup",
             "qemu_memalign", "qemu_try_memalign", "g_slice_alloc", "g_slice_alloc0")  # fmt: skip


def disable_thp() -> bool:
    """Transparent huge pages off for this process and what it execs."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def guest_ram_pages(pid: int) -> dict[str, int]:
    """Rss, Pss, Private_Dirty of the guest RAM mapping(s), bytes."""
    out = {k: 0 for k in SMAPS_KEYS}
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(" ", 1)[0]
        if "-" in first and ":" not in first:  # a mapping's header line
            inside = line.rstrip().split(None, 5)[-1].startswith(GUEST_RAM_MAPPING)
        elif inside:
            k, _, v = line.partition(":")
            if k in out and v.strip().endswith("kB"):
                out[k] += int(v.split()[0]) * 1024
    return out


def rss_figures(pid: int) -> dict[str, float]:
    roll = parse_smaps_rollup(Path(f"/proc/{pid}/smaps_rollup").read_text())
    ram = guest_ram_pages(pid)
    fig: dict[str, float] = {k: float(roll.get(k, 0) - (0 if k == "Anonymous" else ram[k])) for k in SMAPS_KEYS}
    fig["guest_ram_rss"] = float(ram["Rss"])
    fig["AnonHugePages"] = float(roll.get("AnonHugePages", 0))
    return fig


def drive(proc: QemuProc, model: str, n: int, frames: int, log_dir: Path) -> dict[str, int]:
    """Program each of the n NICs and move `frames` frames per cell through
    each (virtio-net-pci: nothing). Returns frames moved per device."""
    if model not in MODELS or n == 0:
        return {}
    beds = [Bed(MODELS[model], Path(), log_dir, RING, ITR_US, shared=(proc, i)) for i in range(n)]
    moved: dict[str, int] = {}
    for bed in beds:
        bed.setup()
    for cell in CELLS:
        for bed in beds:
            w, _ = bed.run(cell, frames, BURST, RATE_PPS)
            moved[cell.key] = moved.get(cell.key, 0) + w.packets
    return moved


def devices(model: str, n: int) -> list[str]:
    return [MEM_DEVICES[model]] * n if n else []


def settle(proc: QemuProc) -> None:
    """Let QEMU's RCU thread run its deferred frees (it batches them for up
    to 50 ms), and the main loop go idle."""
    proc.qmp.execute("query-status")
    time.sleep(0.3)
    proc.qmp.execute("query-status")


def rss_start(qemu: Path, model: str, n: int, frames: int, log_dir: Path) -> dict[str, Any]:
    proc = QemuProc(devices(model, n), qemu, log_dir, f"mem-{model}-{n}", machine=GUEST_RAM)
    try:
        settle(proc)
        realized = rss_figures(proc.pid)
        moved = drive(proc, model, n, frames, log_dir)
        settle(proc)
        active = rss_figures(proc.pid)
    finally:
        proc.close()
    return {"realized": realized, "active": active, "frames": moved}


def heap_start(qemu: Path, model: str, n: int, frames: int, log_dir: Path) -> dict[str, Any]:
    out_dir = log_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    vg = ["valgrind", "--tool=massif", f"--massif-out-file={out_dir / 'massif.out'}", "--threshold=0.1",
          "--max-snapshots=20", f"--log-file={out_dir / 'valgrind.log'}", "--vgdb=yes",
          *[f"--alloc-fn={f}" for f in ALLOC_FNS]]  # fmt: skip
    proc = QemuProc(devices(model, n), qemu, log_dir, f"massif-{model}-{n}", valgrind=vg, machine=GUEST_RAM)
    snap_file = out_dir / "snapshot.massif"
    try:
        settle(proc)
        moved = drive(proc, model, n, frames, log_dir)
        settle(proc)
        r = subprocess.run(["vgdb", f"--pid={proc.pid}", "detailed_snapshot", str(snap_file)], capture_output=True,
                           text=True, timeout=120, check=False)  # fmt: skip
        if r.returncode != 0 or not snap_file.exists():
            raise BenchError(f"vgdb detailed_snapshot failed: {(r.stderr or r.stdout).strip()[-300:]}")
    finally:
        proc.close()
    snap = parse_massif(snap_file.read_text(errors="replace"))[-1]
    return {
        "heap_b": float(snap.heap_b),
        "heap_total_b": float(snap.heap_b + snap.extra_b),
        "sites": massif_sites(snap, 1),
        "sites2": massif_sites(snap, 2),
        "frames": moved,
    }


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="devbench --memory",
        description="Host memory per NIC device (ixgbe vs igb, e1000e, virtio-net-pci): N devices per QEMU, "
        "slope over N of anonymous RSS and of the heap (massif).",
    )
    p.add_argument("--memory", action="store_true", help="this mode (implied)")
    p.add_argument("--quick", action="store_true", help="RSS only, N = 0,1,2, 2 starts each (about 20 s)")
    p.add_argument("--starts", type=int, help="QEMU starts per configuration for RSS (default 5, quick 2)")
    p.add_argument("--heap-starts", type=int, help="starts per configuration under massif (default 2, quick 0)")
    p.add_argument("--copies", help="devices of one model per QEMU (default 0,1,2,4; quick 0,1,2)")
    p.add_argument("--models", default=",".join(MEM_MODEL_NAMES), help="subset of ixgbe,igb,e1000e,virtio-net")
    p.add_argument("--frames", type=int, default=512, help="frames per direction and size per device (default 512)")
    p.add_argument("--thp", action="store_true", help="leave transparent huge pages on (shows the 2 MiB noise)")
    p.add_argument("--out-dir", type=Path, help="results directory (default $BUILD_DIR/bench/device-model)")
    p.add_argument("--keep-logs", action="store_true", help="keep massif snapshots")
    p.add_argument("--check-args", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    a.starts = a.starts if a.starts is not None else (2 if a.quick else 5)
    a.heap_starts = a.heap_starts if a.heap_starts is not None else (0 if a.quick else 2)
    copies = a.copies or ("0,1,2" if a.quick else "0,1,2,4")
    try:
        a.copies = sorted({int(c) for c in copies.split(",") if c.strip()})
    except ValueError:
        p.error(f"bad --copies {copies!r}")
    if len(a.copies) < 2 or a.copies[0] < 0 or a.copies[-1] > MAX_DEVICES:
        p.error(f"--copies needs two or more counts in 0..{MAX_DEVICES}, got {copies!r}")
    check_ranges(p, a, ("starts", 1, 50), ("heap_starts", 0, 10))
    if a.frames < BURST or a.frames % BURST:
        p.error(f"--frames must be a positive multiple of {BURST}, got {a.frames}")
    a.models = choose_models(p, a.models, MEM_MODEL_NAMES, SUBJECT)
    return a


def configs(models: Sequence[str], copies: Sequence[int]) -> list[tuple[str, int]]:
    """The QEMUs of one round: the one without NICs (N = 0 of every model)
    once, then each model with each N > 0."""
    out = [("none", 0)] if 0 in copies else []
    return out + [(m, n) for m in models for n in copies if n > 0]


def points_of(starts: Sequence[dict[str, Any]], model: str, key: str, phase: str | None) -> list[tuple[int, float]]:
    pts = []
    for s in starts:
        if s["model"] in (model, "none"):
            figs = s[phase] if phase else s
            if key in figs:
                pts.append((int(s["devices"]), float(figs[key])))
    return pts


def fits_of(rss: Sequence[dict[str, Any]], heap: Sequence[dict[str, Any]],
            models: Sequence[str]) -> dict[str, dict[str, MemFit]]:  # fmt: skip
    out: dict[str, dict[str, MemFit]] = {}
    for m in models:
        for met in MEM_METRICS:
            pts = points_of(rss, m, met.key, "active") if met.source == "rss" else points_of(heap, m, met.key, None)
            if len({x for x, _ in pts}) >= 2:
                out.setdefault(m, {})[met.key] = fit_per_device(pts)
    return out


def main(argv: Sequence[str]) -> int:
    a = parse_args(argv)
    if a.check_args:
        return 0
    logging.basicConfig(level=logging.INFO, format="[devmem %(asctime)s] %(message)s", datefmt="%H:%M:%S",
                        stream=sys.stderr)  # fmt: skip
    t_start = time.monotonic()
    started = datetime.datetime.now(datetime.timezone.utc)
    stamp = started.strftime("%Y%m%dT%H%M%SZ")
    mode = "quick" if a.quick else "full"
    out_dir = (a.out_dir or build_dir() / "bench" / "device-model").resolve()
    log_dir = out_dir / "logs" / f"memory-{stamp}"
    log_dir.mkdir(parents=True, exist_ok=True)
    src = Path(os.environ.get("QEMU") or build_dir() / "qemu-build" / "qemu-system-x86_64")
    qemu = snapshot_qemu(src, out_dir)
    version = subprocess.run([str(qemu), "-version"], capture_output=True, text=True, check=True).stdout
    thp_off = False if a.thp else disable_thp()
    if not a.thp and not thp_off:
        log.warning("cannot turn transparent huge pages off: RSS may jump by 2 MiB pages from start to start")
    if a.heap_starts and shutil.which("valgrind") is None:
        raise BenchError("valgrind not found (Debian package valgrind; scripts/deps.sh installs it)")
    rounds = configs(a.models, a.copies)
    log.info("%s: %s, N = %s; %d RSS starts and %d massif starts per configuration, %d frames per cell and device",
             mode, ",".join(a.models), ",".join(map(str, a.copies)), a.starts, a.heap_starts, a.frames)  # fmt: skip
    rss: list[dict[str, Any]] = []
    heap: list[dict[str, Any]] = []
    failure = ""
    try:
        for s in range(a.starts):  # round robin, the order rotating: every configuration sees the same host drift
            k = s % len(rounds)
            for model, n in rounds[k:] + rounds[:k]:
                r = rss_start(qemu, model, n, a.frames, log_dir / f"rss-{model}-{n}")
                rss.append({"model": model, "devices": n, "start": s, **r})
                log.info("start %d %-10s N=%d anonymous %8.1f KiB, private dirty %8.1f KiB, realized anonymous "
                         "%8.1f KiB", s, model, n, r["active"]["Anonymous"] / 1024, r["active"]["Private_Dirty"] / 1024,
                         r["realized"]["Anonymous"] / 1024)  # fmt: skip
        for s in range(a.heap_starts):
            for model, n in rounds:
                h = heap_start(qemu, model, n, a.frames, log_dir / f"massif-{model}-{n}-{s}")
                heap.append({"model": model, "devices": n, "start": s, **h})
                log.info("massif %d %-10s N=%d heap %9.1f KiB (+%.1f KiB overhead)", s, model, n, h["heap_b"] / 1024,
                         (h["heap_total_b"] - h["heap_b"]) / 1024)  # fmt: skip
    except (BenchError, OSError) as exc:
        failure = str(exc)
        log.error("%s (logs in %s)", failure, log_dir)

    fits = fits_of(rss, heap, a.models)
    text_parts = [render_memory_table(fits, a.models)]
    rss_points = {m: {n: [s["active"] for s in rss if s["model"] in (m, "none") and s["devices"] == n]
                      for n in a.copies} for m in a.models}  # fmt: skip
    text_parts.append(render_points_table(rss_points, "Anonymous"))
    if heap:
        heap_points = {m: {n: [s for s in heap if s["model"] in (m, "none") and s["devices"] == n]
                           for n in a.copies} for m in a.models}  # fmt: skip
        text_parts.append(render_points_table(heap_points, "heap_b"))
    sites: dict[str, dict[str, float]] = {}
    n_hi = max(a.copies)
    for m in a.models:
        hi = [s for s in heap if s["model"] == m and s["devices"] == n_hi and s["start"] == 0]
        lo = [s for s in heap if s["model"] == "none" and s["start"] == 0]
        if hi and lo and n_hi > 0:
            sites[m] = site_deltas(hi[0]["sites2"], lo[0]["sites2"], n_hi)
    if SUBJECT in sites:
        rows = [f"  {v / 1024:10,.1f}  {k[:110]}" for k, v in sites[SUBJECT].items()]
        text_parts.append(f"== {SUBJECT}: heap bytes per device by allocation site (KiB; massif, N={n_hi} - none)\n"
                          + "\n".join(rows))  # fmt: skip
    elapsed = time.monotonic() - t_start
    hf = {**host_facts(), "loadavg": os.getloadavg()}
    header = (
        f"NIC host memory per device {started.isoformat(timespec='seconds')} ({mode}): {version.splitlines()[0]}, "
        f"-machine q35 -accel qtest, -m {MEMORY} as a memfd; host {hf['cpus']} CPUs, {elapsed / 60:.1f} min\n"
        f"N = {','.join(map(str, a.copies))} devices of one model per QEMU, {a.starts} starts each for RSS, "
        f"{a.heap_starts} under massif; ixgbe, igb, e1000e programmed (one queue pair, MSI-X) and moving "
        f"{a.frames} frames per direction and size (64B, 1514B) each; virtio-net-pci realized, not driven\n"
        f"transparent huge pages {'on' if a.thp else 'off' if thp_off else 'on (could not turn off)'}; "
        "guest RAM left out of every RSS figure\n"
        "per device: Theil-Sen slope over N ± (largest max-min of one N) / (N range); ratios: of slopes "
        "(range the ± allow)"
    )
    text = header + "\n\n" + "\n\n".join(text_parts)
    if failure:
        text += "\n\nPROBLEM: " + failure
    print(text)
    ratios: dict[str, dict[str, Any]] = {}
    for met in MEM_METRICS:
        for o in a.models:
            if o != SUBJECT and met.key in fits.get(SUBJECT, {}) and met.key in fits.get(o, {}):
                rv, rlo, rhi = ratio_range(fits[SUBJECT][met.key], fits[o][met.key])
                ratios.setdefault(met.key, {})[f"{SUBJECT}/{o}"] = {"ratio": rv, "low": rlo, "high": rhi}
    result = {
        "schema": 1,
        "kind": "memory",
        "started": started.isoformat(timespec="seconds"),
        "mode": mode,
        "elapsed_s": elapsed,
        "settings": {"models": a.models, "copies": a.copies, "starts": a.starts, "heap_starts": a.heap_starts,
                     "frames": a.frames, "cells": [c.key for c in CELLS], "ring": RING, "thp_disabled": thp_off,
                     "devices": {m: MEM_DEVICES[m] for m in a.models}},  # fmt: skip
        "qemu": {"version": version.splitlines()[0], "sha256": sha256_file(qemu)},
        "host": hf,
        "rss_starts": rss,
        "heap_starts": [{k: v for k, v in s.items() if k not in ("sites",)} for s in heap],
        "fits": {m: {k: f.as_dict() for k, f in per.items()} for m, per in fits.items()},
        "ratios": ratios,
        "heap_sites_per_device": sites,
        "table": text,
        "failure": failure,
    }
    name = f"devmem-{stamp}-{mode}"
    (out_dir / f"{name}.json").write_text(json.dumps(result, indent=1) + "\n")
    (out_dir / f"{name}.txt").write_text(text + "\n")
    shutil.copyfile(out_dir / f"{name}.json", out_dir / "latest-memory.json")
    shutil.copyfile(out_dir / f"{name}.txt", out_dir / "latest-memory.txt")
    if not a.keep_logs and not failure:
        shutil.rmtree(log_dir, ignore_errors=True)
    log.info("results: %s.{json,txt} (also latest-memory.*)", os.path.relpath(out_dir / name))
    return 1 if failure else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except BenchError as exc:
        log.error("%s", exc)
        sys.exit(2)
