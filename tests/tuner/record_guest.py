#!/usr/bin/env python3
"""Record fixture trees from real guests: the project's QEMU, a Debian kernel, stock drivers.

    scripts/python.sh tests/tuner/record_guest.py [--kernel 6.1] [--only NAME ...] [--out DIR]

For each case it boots the test guest (ixgbe_testlib.vm) with 4 vCPUs and one NIC,
loads the driver, brings the link up, runs guest/record.sh inside the guest (the
guest has busybox, no Python), copies the snapshot out over the console, and
cuts the tree with `nettune.record --from-root`. Then it runs every ethtool change
that any profile plans for the tree in the same throwaway guest, and marks what
the driver refuses as unsupported in the tree's ethtool.json ("refuse"). Trees land in
tests/tuner/trees/<name>/ (their README says RECORDED). Runs one guest at a time.

virtio-net with 4 queue pairs needs a multiqueue backend: a tap device with
queues=4, created by QEMU inside a private network namespace (unshare --net),
so the host's network is never touched. That case needs root.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

from ixgbe_testlib import host, nicargs
from ixgbe_testlib.vm import VM
from nettune import cli
from nettune.ethtool import EthtoolError, command as ethtool_command, dump_json
from nettune.record import main as record_main

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


@dataclass
class Case:
    name: str
    model: str
    modules: List[str]
    driver: str
    note: str
    multiqueue_tap: bool = False


CASES = [
    Case("igb-4q-recorded", "igb", ["igb"], "igb", "QEMU's igb (82576), 4 vCPUs, slirp backend."),
    Case("e1000e-1q-recorded", "e1000e", ["e1000e"], "e1000e", "QEMU's e1000e (82574L), 4 vCPUs, slirp backend."),
    Case("virtio-4q-recorded", "virtio-net-pci", ["virtio_pci", "virtio_net"], "virtio_net",
         "QEMU virtio-net-pci with mq=on and a 4-queue tap backend, 4 vCPUs.", multiqueue_tap=True),
    Case("ixgbe-4q-recorded", "ixgbe", ["ixgbe"], "ixgbe", "The project's emulated 82599 (ixgbe), 4 vCPUs, "
         "slirp backend."),
]


def nic_args(case: Case) -> List[str]:
    mac = nicargs.mac_address(0)
    if case.multiqueue_tap:
        return (["-netdev", "tap,id=n0,ifname=nt0,script=no,downscript=no,queues=4,vhost=off"]
                + nicargs.nic_args(case.model, "n0", 0, mac, extra="mq=on,vectors=10"))
    return nicargs.user_netdev("n0") + nicargs.nic_args(case.model, "n0", 0, mac)


def qemu_in_private_netns(workdir: Path) -> Path:
    """A wrapper that starts QEMU in a new network namespace (for its tap device)."""
    wrapper = workdir / "qemu-netns"
    wrapper.write_text(f"#!/bin/sh\nexec unshare --net -- {host.qemu_binary()} \"$@\"\n")
    wrapper.chmod(0o755)
    return wrapper


def record_case(case: Case, kernel: str, out_dir: Path, log_dir: Path) -> Path:
    image = host.guest_image(kernel)
    work = Path(tempfile.mkdtemp(prefix="nettune-rec-"))
    try:
        qemu = qemu_in_private_netns(work) if case.multiqueue_tap else None
        with VM(image, name=case.name, log_dir=log_dir, smp=4, args=nic_args(case), qemu=qemu) as vm:
            for mod in case.modules:
                vm.modprobe(mod)
            dev = vm.wait_netdevs(case.driver, 1, timeout=120)[0]
            vm.sh(f"ip link set {dev} up")
            script = (REPO / "guest" / "record.sh").read_text()
            res = vm.run("cat > /tmp/record.sh <<'NETTUNE_EOF'\n" + script + "NETTUNE_EOF\n"
                         "sh /tmp/record.sh /tmp/rec >/dev/null && tar -C /tmp/rec -cf - . | gzip -c | base64",
                         timeout=300)
            if res.rc != 0:
                raise SystemExit(f"{case.name}: record.sh failed in the guest (rc {res.rc}):\n{res.stdout[-2000:]}")
            blob = base64.b64decode("".join(res.stdout.split()))
            stage = work / "stage"
            stage.mkdir()
            with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
                for member in tar.getmembers():
                    if member.name.startswith("/") or ".." in Path(member.name).parts:
                        raise SystemExit(f"{case.name}: unsafe path in the snapshot: {member.name}")
                tar.extractall(stage)
            dst = out_dir / case.name
            if dst.exists():
                shutil.rmtree(dst)
            rc = record_main([str(dst), "--from-root", str(stage), "--name", case.name, "--note",
                              case.note + f" Guest kernel {kernel} (Debian), recorded by "
                              "tests/tuner/record_guest.py."])
            if rc != 0:
                raise SystemExit(f"{case.name}: nettune.record failed ({rc})")
            measure_refusals(vm, dst)
        return dst
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure_refusals(vm: "VM", tree: Path) -> None:
    """Run every ethtool change any profile plans for this tree in the (throwaway) guest;
    record the operations the driver refuses as unsupported in ethtool.json ("refuse"),
    so apply on the tree meets the same refusals as on the real driver."""
    commands: List[List[str]] = []
    for profile in ("throughput", "latency", "forwarding"):
        out = io.StringIO()
        if cli.run(["--root", str(tree), "plan", "--json", "-p", profile], out=out) != 0:
            raise SystemExit(f"{tree.name}: plan failed")
        for s in json.loads(out.getvalue())["settings"]:
            if s["kind"] == "ethtool":
                argv = ethtool_command(s["iface"], s["target"], s["want"])
                if argv not in commands:
                    commands.append(argv)
    refused: Dict[str, Dict[str, str]] = {}
    ops = {"-A": "pause", "-G": "rings", "-C": "coalesce", "-K": "features", "-L": "channels"}
    for argv in commands:
        res = vm.run(" ".join(argv) + " 2>&1", timeout=60)
        if res.rc != 0:
            msg = (res.stdout.strip().splitlines() or [f"exit status {res.rc}"])[-1]
            print(f"{tree.name}: {' '.join(argv)}: {msg}", file=sys.stderr)
            if EthtoolError(msg).unsupported:
                refused.setdefault(argv[2], {})[ops[argv[1]]] = msg
    if not refused:
        return
    path = tree / "ethtool.json"
    data = json.loads(path.read_text())
    for dev, by_op in refused.items():
        data["devices"][dev]["refuse"] = by_op
    path.write_text(dump_json(data))
    with open(tree / "README.md", "a", encoding="utf-8") as f:
        f.write("\nRefusals in ethtool.json were measured by running the planned ethtool commands in the "
                "guest: " + "; ".join(f"{d} {op}: {m}" for d, ops_ in refused.items() for op, m in ops_.items())
                + ".\n")


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="6.1", choices=host.KERNELS)
    ap.add_argument("--only", action="append", help="case name (repeatable); default all")
    ap.add_argument("--out", default=str(HERE / "trees"))
    args = ap.parse_args(argv)
    build = host.build_dir()
    cases = [c for c in CASES if not args.only or c.name in args.only]
    if args.only and len(cases) != len(args.only):
        known = ", ".join(c.name for c in CASES)
        raise SystemExit(f"unknown case in {args.only} (known: {known})")
    for case in cases:
        if not host.has_device(case.model):
            print(f"skip {case.name}: this QEMU has no -device {case.model}", file=sys.stderr)
            continue
        if case.multiqueue_tap and (os.geteuid() != 0 or shutil.which("unshare") is None):
            print(f"skip {case.name}: needs root and unshare for the tap backend", file=sys.stderr)
            continue
        path = record_case(case, args.kernel, Path(args.out), build / "test-logs" / "tuner-record")
        print(f"recorded {case.name} -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
