"""Run the kernel's drivers/net and drivers/net/hw selftests against emulated
NICs and print a table of every test case (scripts/netdev-selftests.sh
prepares the selftests and is the entry point).

One VM per model, two ports of that model wired back to back (unix datagram
sockets). The Python tests (NetDrvEnv, NetDrvEpEnv) run with port 0 in the
root namespace and port 1 in the namespace "remote", configured through
net.config as drivers/net/README.rst describes (NETIF, LOCAL_V4/V6,
REMOTE_V4/V6, REMOTE_TYPE=netns, REMOTE_ARGS=remote); the shell tests of
drivers/net/hw (net/forwarding/lib.sh) get both ports in the root namespace
as their two NETIFS. Each test program runs once; its KTAP lines (`ok N
name`, `not ok N name`, `# SKIP`) or forwarding-library lines (`TEST: name
[ OK ]`) are its cases, and a program that printed no case is one case.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import GuestImage, build_dir, has_device
from ixgbe_testlib.ksft import Case, not_ok, parse_output
from ixgbe_testlib.nicargs import dgram_netdev, mac_address, nic_args
from ixgbe_testlib.vm import VM

# model -> (QEMU device, guest driver)
MODELS = {
    "ixgbe": ("ixgbe", "ixgbe"),
    "ixgbe-sfp": ("ixgbe-sfp", "ixgbe"),
    "igb": ("igb", "igb"),
    "e1000e": ("e1000e", "e1000e"),
    "virtio": ("virtio-net-pci", "virtio_net"),
}
GUEST_KSFT = "/ksft"
NETNS = "remote"
LOCAL_V4, REMOTE_V4 = "192.0.2.1", "192.0.2.2"
LOCAL_V6, REMOTE_V6 = "2001:db8::1", "2001:db8::2"

# The short, fixed subset CI runs (`--ci`): cases that pass on the emulated
# 82599 with the 6.12 guest today (docs/netdev-selftests.md). Any of them
# not "ok" fails the run.
CI_CASES = {
    "drivers/net:ping.py": ("ping.test_v4", "ping.test_v6", "ping.test_tcp"),
    "drivers/net:queues.py": ("queues.get_queues", "queues.addremove_queues"),
    "drivers/net:stats.py": ("stats.check_pause",),
}
CI_MODELS = ("ixgbe",)
DEFAULT_TIMEOUT = 900
# a program of the subset takes 10-30 s; one that waits on a dead wire (a TCP
# connect retrying for about two minutes) is stopped well before meson's limit
CI_TIMEOUT = 240

def say(msg: str) -> None:
    print(f"[netdev-selftests] {msg}", file=sys.stderr, flush=True)


def vm_args(model: str, macs: Sequence[str]) -> Callable[[Path], list[str]]:
    """Two ports of `model` whose wires (unix datagram sockets in the VM's
    directory) are connected to each other."""
    device = MODELS[model][0]

    def args_for(d: Path) -> list[str]:
        return (nic_args(device, "w0", 0, macs[0]) + nic_args(device, "w1", 1, macs[1])
                + dgram_netdev("w0", d / "a", d / "b") + dgram_netdev("w1", d / "b", d / "a"))

    return args_for


def setup_netns(vm: VM, a: str, b: str) -> None:
    """Port a local, port b in the namespace of the "remote" end."""
    vm.sh(f"ip netns add {NETNS} && ip link set {b} netns {NETNS} && ip -n {NETNS} link set lo up")
    vm.sh(f"ip addr add {LOCAL_V4}/24 dev {a} && ip -6 addr add {LOCAL_V6}/64 dev {a} nodad && "
          f"ip link set {a} up")
    vm.sh(f"ip -n {NETNS} addr add {REMOTE_V4}/24 dev {b} && "
          f"ip -n {NETNS} -6 addr add {REMOTE_V6}/64 dev {b} nodad && ip -n {NETNS} link set {b} up")
    vm.wait_until(f"carrier on {a}", lambda: vm.run(f"cat /sys/class/net/{a}/carrier").stdout.strip() == "1")
    vm.wait_until(f"carrier on {b}", lambda: vm.run(
        f"ip netns exec {NETNS} cat /sys/class/net/{b}/carrier").stdout.strip() == "1")
    config = "\n".join([f"NETIF={a}", f"LOCAL_V4={LOCAL_V4}", f"REMOTE_V4={REMOTE_V4}",
                        f"LOCAL_V6={LOCAL_V6}", f"REMOTE_V6={REMOTE_V6}",
                        "REMOTE_TYPE=netns", f"REMOTE_ARGS={NETNS}", ""])
    for d in ("drivers/net", "drivers/net/hw"):
        vm.sh(f"printf %s {shlex.quote(config)} > {GUEST_KSFT}/{d}/net.config")
    # the remote end answers pings from the start (neighbour entries)
    vm.run(f"ping -c 1 -W 5 {REMOTE_V4}", timeout=30)


def setup_both_local(vm: VM, a: str, b: str) -> None:
    """Both ports back in the root namespace, without addresses: the
    forwarding library's NETIFS."""
    vm.run(f"ip -n {NETNS} link set {b} netns 1; ip netns del {NETNS}")
    vm.sh(f"ip addr flush dev {a} && ip addr flush dev {b} && ip link set {a} up && ip link set {b} up")


def list_programs(vm: VM) -> list[str]:
    out = vm.sh(f"cat {GUEST_KSFT}/kselftest-list.txt")
    return [ln.strip() for ln in out.splitlines() if ":" in ln]


def short_name(program: str) -> str:
    """drivers/net:ping.py -> ping.py, drivers/net/hw:csum.py -> hw/csum.py"""
    d, f = program.split(":", 1)
    return f if d == "drivers/net" else f"{d.removeprefix('drivers/net/')}/{f}"


def run_program(vm: VM, program: str, netifs: tuple[str, str], timeout: int) -> list[Case]:
    d, f = program.split(":", 1)
    args = f" {netifs[0]} {netifs[1]}" if f.endswith(".sh") and d == "drivers/net/hw" else ""
    t0 = time.monotonic()
    # unbuffered: a program killed at its time limit keeps the cases it finished
    res = vm.run(f"cd {GUEST_KSFT}/{d} && PYTHONUNBUFFERED=1 ./{f}{args} 2>&1", timeout=timeout)
    cases = parse_output(program, res.stdout, res.rc, res.timed_out)
    counts = {r: sum(c.result == r for c in cases) for r in ("ok", "fail", "skip")}
    say(f"  {short_name(program)}: exit {res.rc}{' (timed out)' if res.timed_out else ''}, "
        f"{counts['ok']} ok / {counts['fail']} fail / {counts['skip']} skip in {time.monotonic() - t0:.0f} s")
    return cases


def run_model(model: str, image: GuestImage, programs: Sequence[str] | None, args: argparse.Namespace,
              log_root: Path) -> tuple[list[Case], str]:
    device, driver = MODELS[model]
    if not has_device(device):
        raise HarnessError(f"this QEMU has no -device {device}")
    macs = [mac_address(0), mac_address(1)]
    vm = VM(image, name=model, log_dir=log_root, smp=args.smp, memory_mb=args.memory,
            args_factory=vm_args(model, macs), boot_timeout=args.boot_timeout)
    say(f"{model}: booting {image.release} with two {device} ports back to back; logs in {vm.log_dir}")
    cases: list[Case] = []
    try:
        vm.start()
        vm.modprobe(driver)
        # modules the tests need beyond the guest image's (scripts/netdev-selftests.sh)
        vm.sh("while read -r m; do grep -q \"^${m%.ko} \" /proc/modules || insmod /ksft-modules/$m; "
              "done < /ksft-modules/load-order")
        # what bash's process substitution needs, and the image's init leaves out
        vm.sh("[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd")
        devs = vm.wait_netdevs(driver, 2)[:2]
        a, b = devs
        info = vm.sh(f"ethtool -i {a} | sed -n 's/^\\(driver\\|version\\|firmware-version\\): //p' | xargs")
        todo = programs if programs is not None else list_programs(vm)
        py = [p for p in todo if not p.endswith(".sh") or not p.startswith("drivers/net/hw:")]
        sh = [p for p in todo if p not in py]
        setup_netns(vm, a, b)
        for p in py:
            cases += run_program(vm, p, (a, b), args.timeout)
        if sh:
            setup_both_local(vm, a, b)
            for p in sh:
                cases += run_program(vm, p, (a, b), args.timeout)
        problems = vm.qemu_problems()
        if problems:
            say(f"{model}: QEMU reported:\n{problems}")
        return cases, info
    finally:
        vm.shutdown()


def table(models: Sequence[str], results: dict[str, list[Case]]) -> list[tuple[str, str, list[str]]]:
    """Rows (program, case, one result per model) in the order first seen."""
    keys: list[tuple[str, str]] = []
    by_model: dict[str, dict[tuple[str, str], Case]] = {}
    for m in models:
        by_model[m] = {}
        for c in results[m]:
            k = (c.program, c.name)
            if k not in by_model[m]:
                by_model[m][k] = c
            if k not in keys:
                keys.append(k)
    rows = []
    for prog, name in keys:
        cells = []
        for m in models:
            got = by_model[m].get((prog, name))
            if got is None:
                cells.append("-")
                continue
            note = got.note if len(got.note) <= 90 else got.note[:87] + "..."
            cells.append(got.result + (f" ({note})" if note and got.result != "ok" else ""))
        rows.append((short_name(prog), name or "(whole program)", cells))
    return rows


def totals(cases: Sequence[Case]) -> str:
    return " / ".join(f"{sum(c.result == r for c in cases)} {r}" for r in ("ok", "fail", "skip"))


def print_table(models: Sequence[str], results: dict[str, list[Case]]) -> None:
    rows = table(models, results)
    w0 = max([len("program")] + [len(r[0]) for r in rows])
    w1 = max([len("case")] + [len(r[1]) for r in rows])
    short = [[cell.split(" ", 1)[0] for cell in r[2]] for r in rows]
    print(f"{'program':<{w0}}  {'case':<{w1}}  " + "  ".join(f"{m:<9}" for m in models))
    for r, cells in zip(rows, short):
        print(f"{r[0]:<{w0}}  {r[1]:<{w1}}  " + "  ".join(f"{c:<9}" for c in cells))
    for m in models:
        print(f"{m}: {totals(results[m])}")


def markdown(models: Sequence[str], results: dict[str, list[Case]], infos: dict[str, str]) -> str:
    out = ["| program | case | " + " | ".join(models) + " |",
           "| --- | --- | " + " | ".join("---" for _ in models) + " |"]
    for prog, name, cells in table(models, results):
        esc = [c.replace("|", "\\|") for c in cells]
        out.append(f"| {prog} | {name} | " + " | ".join(esc) + " |")
    out.append("| **total** | | " + " | ".join(totals(results[m]) for m in models) + " |")
    out.append("")
    for m in models:
        out.append(f"- {m}: driver {infos.get(m, '?')}")
    return "\n".join(out) + "\n"


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="scripts/netdev-selftests.sh",
                                description="The kernel's drivers/net and drivers/net/hw selftests "
                                "on emulated NICs, two ports back to back.")
    p.add_argument("--overlay", type=Path, required=True, help=argparse.SUPPRESS)
    p.add_argument("--ksft", type=Path, required=True, help=argparse.SUPPRESS)
    p.add_argument("--kernel", default="6.12", choices=("6.1", "6.12"))
    p.add_argument("--models", default="ixgbe", help="comma-separated: " + ", ".join(MODELS))
    p.add_argument("--tests", default="", help="comma-separated test programs (ping.py, hw/csum.py, ...)")
    p.add_argument("--ci", action="store_true", help="the fixed subset CI runs; fail unless all ok")
    p.add_argument("--markdown", type=Path)
    p.add_argument("--json", type=Path)
    p.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT,
                   help=f"seconds per test program (default {DEFAULT_TIMEOUT}; {CI_TIMEOUT} with --ci)")
    p.add_argument("--smp", type=int, default=2)
    p.add_argument("--memory", type=int, default=1024)
    p.add_argument("--boot-timeout", type=int, default=180)
    p.add_argument("--log-dir", type=Path)
    args = p.parse_args(argv)
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    bad = [m for m in args.model_list if m not in MODELS]
    if bad or not args.model_list:
        p.error(f"unknown model(s) {', '.join(bad) or '(none)'}; known: {', '.join(MODELS)}")
    if args.ci:
        if args.tests or args.models != "ixgbe":
            p.error("--ci runs its own fixed subset: no --tests or --models with it")
        args.model_list = list(CI_MODELS)
        if args.timeout == DEFAULT_TIMEOUT:
            args.timeout = CI_TIMEOUT
    return args


def select_programs(args: argparse.Namespace) -> list[str] | None:
    """The programs asked for, checked against the installed list."""
    installed = [ln.strip() for ln in (args.ksft / "kselftest-list.txt").read_text().splitlines() if ":" in ln]
    if args.ci:
        return list(CI_CASES)
    if not args.tests:
        return None
    by_short = {short_name(p): p for p in installed}
    out = []
    for t in args.tests.split(","):
        t = t.strip()
        if t in by_short:
            out.append(by_short[t])
        elif t in installed:
            out.append(t)
        else:
            raise HarnessError(f"no test program {t!r}; installed: {', '.join(sorted(by_short))}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        programs = select_programs(args)
        gdir = build_dir() / "guest" / args.kernel
        manifest = (gdir / "manifest.txt").read_text()
        release = re.search(r"^kernel-release (\S+)", manifest, re.MULTILINE)
        if release is None:
            raise HarnessError(f"{gdir}/manifest.txt names no kernel release")
        log_root = args.log_dir or build_dir() / "netdev-selftests" / "logs" / time.strftime("%Y%m%d-%H%M%S")
        log_root.mkdir(parents=True, exist_ok=True)
        results: dict[str, list[Case]] = {}
        infos: dict[str, str] = {}
        with tempfile.TemporaryDirectory(prefix="netdev-selftests.") as tmp:
            # the guest image with the selftests' archive on top (the kernel
            # unpacks concatenated initramfs archives in order)
            initrd = Path(tmp) / "initrd.img"
            with initrd.open("wb") as out:
                for part in (gdir / "initrd.img", args.overlay):
                    with part.open("rb") as f:
                        shutil.copyfileobj(f, out)
            image = GuestImage(args.kernel, gdir / "vmlinuz", initrd, release.group(1))
            for model in args.model_list:
                t0 = time.monotonic()
                results[model], infos[model] = run_model(model, image, programs, args, log_root)
                say(f"{model}: {totals(results[model])} in {time.monotonic() - t0:.0f} s")
    except (GuestError, HarnessError, OSError) as exc:
        say(f"ERROR: {exc}")
        return 1
    print_table(args.model_list, results)
    if args.markdown:
        args.markdown.write_text(markdown(args.model_list, results, infos))
    if args.json:
        args.json.write_text(json.dumps({m: {"driver": infos[m], "cases": [asdict(c) for c in results[m]]}
                                         for m in args.model_list}, indent=1) + "\n")
    if args.ci:
        want = sum(len(names) for names in CI_CASES.values())
        for model in args.model_list:
            bad = not_ok(results[model], CI_CASES)
            if bad:
                say(f"{model}: {len(bad)} of the {want} CI cases not ok: " + "; ".join(bad))
                return 1
            say(f"{model}: all {want} CI cases ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
