#!/usr/bin/env python3
"""Cold-boot the test guest many times with a NIC and count QEMU aborts.

Each boot runs the guest image of tests/guest (direct kernel boot, q35, TCG,
`-cpu max`, 4 vCPUs by default) with one NIC behind a PCIe root port, loads
the NIC's driver and waits until its interface has carrier. A boot ends as

  ok       the driver probed and the link came up;
  abort    QEMU died (its exit status and the last lines of its stderr,
           e.g. an assertion, are recorded);
  failed   QEMU stayed up but the guest did not get there in time.

Usage (from the repository root):

  scripts/python.sh tests/guest/boot_stress.py --kernel 6.1 -n 30 -j 2
  scripts/python.sh tests/guest/boot_stress.py --qemu /path/to/qemu-system-x86_64 \\
      --kernel 6.12 -n 30 -j 2 --json out.json

It prints one line per boot, then boots, ok, aborts, failures, the distinct
abort messages with their counts and the wall time. The exit status is 0 when
every boot was ok, 1 otherwise. Several boots in parallel (-j) load the
machine, which some races need to show up.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import dataclasses
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import KERNELS, guest_image, qemu_binary, scaled
from ixgbe_testlib.nicargs import mac_address, nic_args, user_netdev
from ixgbe_testlib.vm import VM

DRIVERS = {"ixgbe": "ixgbe", "igb": "igb", "e1000e": "e1000e", "virtio-net-pci": "virtio_net"}


@dataclasses.dataclass
class Boot:
    index: int
    outcome: str  # ok | abort | failed
    seconds: float
    message: str = ""
    exit_code: int | None = None
    log_dir: str = ""


def abort_message(stderr: str) -> str:
    """The line that says why QEMU died (an assertion, a signal), else the last one."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "Assertion" in ln or "assertion" in ln or "ERROR:" in ln or "AddressSanitizer" in ln:
            # the source location depends on the build directory: keep from the file name on
            return re.sub(r"^.*?([\w./-]*\.[ch]:\d+)", r"\1", ln)
    return lines[-1] if lines else "(nothing on stderr)"


def one_boot(index: int, args: argparse.Namespace, log_root: Path) -> Boot:
    image = guest_image(args.kernel)
    driver = DRIVERS[args.device]
    extra = ["-cpu", args.cpu] + nic_args(args.device, "n0", 0, mac_address(0)) + user_netdev("n0")
    vm = VM(
        image,
        name=f"boot{index:03d}",
        log_dir=log_root,
        smp=args.smp,
        memory_mb=args.memory,
        args=extra,
        accel="tcg",
        qemu=args.qemu,
        boot_timeout=args.timeout,
    )
    t0 = time.monotonic()
    outcome, message = "ok", ""
    try:
        vm.start()
        if driver == "virtio_net":
            vm.modprobe("virtio_pci")
        vm.modprobe(driver)
        dev = vm.wait_netdevs(driver, 1, timeout=args.timeout)[0]
        vm.link_up(dev)
        vm.wait_carrier(dev, timeout=args.timeout)
    except (GuestError, HarnessError) as exc:
        # QEMU may still be writing its last words: give it a moment to exit
        deadline = time.monotonic() + 5
        while vm.alive() and time.monotonic() < deadline and vm.exit_code is None:
            time.sleep(0.2)
        if vm.exit_code is not None and vm.exit_code != 0:
            outcome, message = "abort", abort_message(vm.stderr_tail(8000))
        else:
            outcome, message = "failed", str(exc).splitlines()[0][:300]
    finally:
        code = vm.exit_code
        vm.shutdown(save_dmesg=outcome != "ok")
    seconds = time.monotonic() - t0
    return Boot(index, outcome, seconds, message, code if outcome == "abort" else None, str(vm.log_dir))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--qemu", type=Path, default=None, help="QEMU binary (default: $QEMU or the build's)")
    p.add_argument("--kernel", choices=KERNELS, default="6.1")
    p.add_argument("-n", "--boots", type=int, default=30, help="number of cold boots (default 30)")
    p.add_argument("-j", "--jobs", type=int, default=2, help="boots running at once (default 2)")
    p.add_argument("--smp", type=int, default=4)
    p.add_argument("--cpu", default="max")
    p.add_argument("--memory", type=int, default=768, help="guest RAM in MiB")
    p.add_argument("--device", choices=sorted(DRIVERS), default="ixgbe")
    p.add_argument("--timeout", type=float, default=240, help="seconds for boot, probe and link each")
    p.add_argument("--log-dir", type=Path, default=None, help="keep every boot's logs here")
    p.add_argument("--json", type=Path, default=None, help="write the results as JSON")
    args = p.parse_args(argv)
    try:
        args.qemu = (args.qemu or qemu_binary()).resolve()
        guest_image(args.kernel)
    except HarnessError as exc:
        p.error(str(exc))
    if args.boots < 1 or args.jobs < 1:
        p.error("--boots and --jobs must be at least 1")

    keep = args.log_dir is not None
    log_root = args.log_dir or Path(tempfile.mkdtemp(prefix="boot-stress."))
    log_root.mkdir(parents=True, exist_ok=True)
    print(
        f"boot-stress: {args.boots} cold boots, {args.jobs} at a time: {args.qemu} "
        f"-machine q35 -accel tcg -cpu {args.cpu} -smp {args.smp} -device {args.device}, "
        f"kernel {args.kernel} ({guest_image(args.kernel).release}), timeout {scaled(args.timeout):.0f}s",
        flush=True,
    )
    lock = threading.Lock()
    results: list[Boot] = []
    t0 = time.monotonic()

    def run(i: int) -> Boot:
        b = one_boot(i, args, log_root)
        with lock:
            results.append(b)
            note = f"  {b.message}" if b.message else ""
            print(
                f"[{len(results):3d}/{args.boots}] boot {i:3d}: {b.outcome:6s} {b.seconds:6.1f}s{note}",
                flush=True,
            )
        return b

    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(run, range(args.boots)))
    wall = time.monotonic() - t0

    counts = collections.Counter(b.outcome for b in results)
    messages = collections.Counter(b.message for b in results if b.outcome == "abort")
    print(
        f"boots {len(results)}  ok {counts['ok']}  aborts {counts['abort']}  "
        f"failed {counts['failed']}  wall {wall:.0f}s  "
        f"(mean boot {sum(b.seconds for b in results) / len(results):.1f}s)"
    )
    for msg, n in messages.most_common():
        print(f"  abort x{n}: {msg}")
    for b in results:
        if b.outcome == "failed":
            print(f"  failed boot {b.index}: {b.message}")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "qemu": str(args.qemu),
                    "kernel": args.kernel,
                    "release": guest_image(args.kernel).release,
                    "jobs": args.jobs,
                    "smp": args.smp,
                    "cpu": args.cpu,
                    "device": args.device,
                    "wall_seconds": round(wall, 1),
                    "counts": dict(counts),
                    "aborts": dict(messages),
                    "boots": [dataclasses.asdict(b) for b in sorted(results, key=lambda b: b.index)],
                },
                indent=1,
            )
        )
    if not keep:
        # keep only the logs of the boots that went wrong
        bad = {Path(b.log_dir).name for b in results if b.outcome != "ok"}
        for d in log_root.iterdir():
            if d.name not in bad:
                shutil.rmtree(d, ignore_errors=True)
        if bad:
            print(f"logs of the boots that went wrong: {log_root}")
        else:
            shutil.rmtree(log_root, ignore_errors=True)
    return 0 if counts["ok"] == len(results) else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
