"""nettune end to end, on a Debian guest booted with systemd and udev (a
rootfs built from Debian packages, scripts/build-rootfs.sh), with 4 vCPUs, the
emulated 82599 (`-device ixgbe`, stock Linux ixgbe driver) and a multiqueue
virtio-net NIC (4 queue pairs on a multiqueue tap).

The steps run in order on one VM, as an administrator would (conftest's
nettune_guest, which test_nettune_managers.py uses after this module):

1. the guest boots: systemd is PID 1, udev bound both NICs, irqbalance runs,
   NetworkManager and tuned are installed but masked (systemd-networkd alone
   configures the ports, nettune sees no other manager), both NICs have 4
   queues; nettune is installed with guest/install.sh, the
   operator's own XPS masks are set and the untuned readings are recorded;
2. `nettune apply`, then `nettune verify` passes;
3. the IRQ affinity in /proc/irq, xps_cpus/rps_cpus in sysfs and ethtool
   -a/-g/-c/-k/-l read back what `nettune plan --json` says (read here
   directly, not through nettune); what nettune skipped as unsupported really
   is refused by the driver;
4. `rmmod ixgbe; modprobe ixgbe`: without any manual step (nettune's udev
   rule and reapply unit, systemd-networkd bringing the port back), `verify`
   passes again and the readings match the plan;
5. after a reboot (systemd's, QEMU keeps running) likewise (nettune.service);
6. `nettune revert` restores the original readings (also the XPS masks the
   drivers reset when apply changed the channel count);
7. `nettune measure` over the ixgbe port against the lab's host end (the guest
   image's own iperf3 and sockperf, run by `nettune measure --serve` in the
   lab's network namespace): before apply, after apply, after revert; the
   report's figures are recomputed here from the raw tool output it kept, and
   its counters show the queue IRQs pinned as planned in the 'after' phase;
8. the kernel log has no warnings about either NIC and QEMU reported nothing.

Readings that irqbalance owns (the affinity of IRQs while it runs) cannot be
compared by value before and after: irqbalance rewrites them every 10 s. For
those, step 6 checks that irqbalance runs again and that the same IRQs exist.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import statistics
import struct
import time
import zlib
from pathlib import Path
from typing import Any

import pytest

from conftest import NETTUNE_VCPUS, TIMINGS, NettuneGuest
from ixgbe_testlib.netcheck import device_problems, format_records
from ixgbe_testlib.sysguest import (
    Lab,
    RootfsImage,
    SystemdVM,
    check_plan,
    measure_peer,
    plan_json,
    plan_sysctls,
    readings,
)

VCPUS = NETTUNE_VCPUS
REPO_ROOT = Path(__file__).resolve().parents[2]
# The nettune source tree installed into the guest (guest/install.sh in it).
NETTUNE_SRC = Path(os.environ.get("NETTUNE_SRC") or REPO_ROOT / "guest").resolve()
# installed in the image, masked (scripts/build-rootfs.sh); test_nettune_managers.py starts them
MANAGER_UNITS = ("NetworkManager.service", "NetworkManager-wait-online.service",
                 "NetworkManager-dispatcher.service", "tuned.service")
NETTUNE_LOGS = "journalctl -b --no-pager -o short-monotonic -u nettune.service -u 'nettune-reapply@*'"


@dataclasses.dataclass
class Setup:
    vm: SystemdVM
    lab: Lab
    ixgbe: str  # interface names in the guest
    virtio: str
    original: dict[str, Any] = dataclasses.field(default_factory=dict)
    original_plan: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def devs(self) -> list[str]:
        return sorted([self.ixgbe, self.virtio])


def settle(vm: SystemdVM, timeout: float = 300) -> None:
    """Wait until systemd has no job queued or running (boot units, udev's
    nettune-reapply@ oneshots)."""
    vm.wait_until(
        "systemd to finish its jobs",
        lambda: vm.run("systemctl list-jobs --no-legend", timeout=60).stdout.strip() == "",
        timeout,
        interval=2,
    )


def wait_ports(s: Setup, timeout: float = 240) -> None:
    """Both ports configured by systemd-networkd (the image's lab network)
    and the ixgbe queue vectors requested (ixgbe requests them when the port
    goes up)."""
    ix, vi = s.lab.wire("ixgbe"), s.lab.wire("virtio_net")
    s.ixgbe = s.vm.wait_netdevs("ixgbe", 1, timeout=timeout)[0]
    s.virtio = s.vm.wait_netdevs("virtio_net", 1, timeout=timeout)[0]
    s.vm.wait_ipv4(s.ixgbe, ix.guest_ip, timeout)
    s.vm.wait_ipv4(s.virtio, vi.guest_ip, timeout)
    s.vm.wait_until(
        f"{s.ixgbe} queue vectors in /proc/interrupts",
        lambda: f"{s.ixgbe}-TxRx-0" in s.vm.run("cat /proc/interrupts").stdout,
        timeout,
    )


def verify(vm: SystemdVM, when: str) -> str:
    r = vm.run("nettune verify", timeout=300)
    if not r.ok:
        logs = vm.run(NETTUNE_LOGS + " | tail -n 60").stdout
        pytest.fail(
            f"nettune verify {when} failed (rc={r.rc}):\n{r.stdout}\n"
            f"--- nettune unit logs (this boot) ---\n{logs}",
            pytrace=False,
        )
    assert "settings as planned" in r.stdout, r.stdout
    return r.stdout


def assert_readings_match_plan(s: Setup, when: str) -> dict[str, Any]:
    plan = plan_json(s.vm)
    assert sorted(plan["interfaces"]) == s.devs, plan["interfaces"]
    seen = readings(s.vm, s.devs, plan_sysctls(plan))
    bad = check_plan(plan, seen, ignore=unsupported(s.vm))
    assert not bad, f"{when}: live readings differ from the plan:\n" + "\n".join(bad)
    need = {"irq", "mask", "ethtool"}
    for dev in s.devs:
        kinds = {x["kind"] for x in plan["settings"] if x["iface"] == dev}
        assert need <= kinds, f"{when}: the plan for {dev} lacks IRQ, XPS or ethtool settings"
    return plan


def unit_seconds(vm: SystemdVM, unit: str) -> float:
    """Seconds from a oneshot unit's start to its main process's exit (systemd's timestamps)."""
    props = dict(
        line.partition("=")[::2]
        for line in vm.sh(
            f"systemctl show -p ExecMainStartTimestampMonotonic -p ExecMainExitTimestampMonotonic "
            f"-p InactiveExitTimestampMonotonic {shlex.quote(unit)}"
        ).splitlines()
    )
    start = int(props.get("InactiveExitTimestampMonotonic") or 0)
    end = int(props.get("ExecMainExitTimestampMonotonic") or 0)
    return (end - start) / 1e6 if start and end >= start else float("nan")


def unsupported(vm: SystemdVM) -> list[str]:
    r = vm.run("cat /var/lib/nettune/state.json")
    if not r.ok:
        return []
    state: dict[str, Any] = json.loads(r.stdout)
    return [str(k) for k in state.get("unsupported", [])]


ETHTOOL_FLAG = {"pause": "-A", "rings": "-G", "coalesce": "-C", "features": "-K", "channels": "-L"}


def ethtool_command(setting: dict[str, Any]) -> str:
    argv = ["ethtool", ETHTOOL_FLAG[setting["target"]], setting["iface"]]
    for key, value in sorted(setting["want"].items()):
        argv += [key, ("on" if value else "off") if isinstance(value, bool) else str(value)]
    return shlex.join(argv)


# ------------------------------------------------------------------ fixture
@pytest.fixture(scope="module")
def setup(nettune_guest: NettuneGuest) -> Setup:
    """conftest's shared guest as the image booted it (this module runs on it first)."""
    g = nettune_guest
    if g.managers:
        pytest.fail("the shared guest already runs NetworkManager and tuned: test_nettune_managers.py must run "
                    "after this module", pytrace=False)  # fmt: skip
    t0 = time.monotonic()
    s = Setup(g.vm, g.lab, "", "")
    wait_ports(s)
    settle(g.vm)
    TIMINGS["ports up and systemd settled, after the boot"] = time.monotonic() - t0
    return s


# -------------------------------------------------------------------- steps
def test_boot_systemd_udev_multiqueue(setup: Setup, timed: None) -> None:
    vm = setup.vm
    assert vm.sh("cat /proc/1/comm").strip() == "systemd"
    assert vm.run("systemctl is-active systemd-udevd").stdout.strip() == "active"
    state = vm.systemd_state()
    assert state == "running", f"systemd is {state}:\n{vm.run('systemctl --failed --no-pager').stdout}"
    assert vm.sh("nproc").strip() == str(VCPUS)
    assert vm.run("systemctl is-active irqbalance").stdout.strip() == "active"
    # the image carries NetworkManager and tuned for test_nettune_managers.py, masked until it
    # starts them: here nothing but systemd-networkd configures the ports, and nettune sees no manager
    for unit in MANAGER_UNITS:
        assert vm.run(f"systemctl is-enabled {unit}").stdout.strip() == "masked", unit
    out = vm.run("systemctl is-active NetworkManager.service tuned.service").stdout
    assert out.split() == ["inactive", "inactive"], out
    out = vm.sh("networkctl list --no-legend")
    for dev in setup.devs:
        assert re.search(rf"^\s*\d+ {re.escape(dev)} .* configured\b", out, re.M), out
    for dev in setup.devs:
        ch = vm.channels(dev)
        assert ch["current"].get("Combined") == VCPUS, f"{dev}: {ch}"
    # the lab wires work both ways before anything is tuned
    for wire in setup.lab.wires:
        r = vm.ping(wire.host_ip, count=3)
        assert r.ok and " 0% packet loss" in r.stdout, f"ping {wire.host_ip} failed:\n{r.stdout}"


def test_install_and_apply_then_verify(setup: Setup, nettune_guest: NettuneGuest, timed: None) -> None:
    vm = setup.vm
    assert (NETTUNE_SRC / "install.sh").is_file(), f"no install.sh in {NETTUNE_SRC} (NETTUNE_SRC)"
    vm.put_tree(NETTUNE_SRC, "/root/nettune-src")
    out = vm.sh("bash /root/nettune-src/install.sh", timeout=180)
    assert "enabled nettune.service" in out, out
    nettune_guest.nettune_installed = True
    # NetworkManager and tuned, installed but masked, are no managers of this host to nettune
    out = vm.sh("nettune discover")
    assert "systemd-networkd: active" in out and "NetworkManager:" not in out and "tuned:" not in out, out
    # The operator's own XPS masks (every CPU on every TX queue, not the drivers' 1:1
    # default): apply's channel change makes both drivers re-create their queues and
    # reset these, and step 6 checks that revert brings them back all the same.
    every_cpu = f"{(1 << VCPUS) - 1:x}"
    for dev in setup.devs:
        vm.sh(f"for f in /sys/class/net/{dev}/queues/tx-*/xps_cpus; do echo {every_cpu} > $f; done")
    setup.original_plan = plan_json(vm)
    setup.original = readings(vm, setup.devs, plan_sysctls(setup.original_plan))
    r = vm.run("nettune apply", timeout=300)
    assert r.ok, f"nettune apply failed (rc={r.rc}):\n{r.stdout}"
    assert "applied profile" in r.stdout, r.stdout
    verify(vm, "right after apply")


def test_readings_match_plan(setup: Setup, timed: None) -> None:
    vm = setup.vm
    plan = assert_readings_match_plan(setup, "after apply")
    # what nettune skipped as unsupported is really refused by the driver
    skipped = unsupported(vm)
    for key in skipped:
        setting = next((x for x in plan["settings"] if x["key"] == key), None)
        assert (
            setting is not None and setting["kind"] == "ethtool"
        ), f"unsupported {key} not an ethtool setting"
        r = vm.run(ethtool_command(setting))
        assert (
            not r.ok and "not supported" in r.stdout.lower()
        ), f"nettune skipped {key} as unsupported, but `{ethtool_command(setting)}` gives rc={r.rc}: {r.stdout}"
    # the tuning changed something real on both NICs: fewer queues than CPUs
    # (CPU 0 is housekeeping), the others pinned 1:1
    for dev in setup.devs:
        lay = plan["interfaces"][dev]
        assert lay["queues"] == VCPUS - 1, lay
        assert sorted(lay["queue_cpu"].values()) == list(range(1, VCPUS)), lay


def test_driver_reload_reapplies(setup: Setup, timed: None) -> None:
    vm = setup.vm
    name = setup.ixgbe
    vm.sh("rmmod ixgbe && modprobe ixgbe", timeout=180)
    wait_ports(setup)
    # the port is born eth<N>; the harness hands out udev's name for it
    assert setup.ixgbe == name, f"the port came back as {setup.ixgbe}, not {name}"
    settle(vm)
    verify(vm, "after rmmod ixgbe; modprobe ixgbe")
    assert_readings_match_plan(setup, "after the driver reload")
    r = vm.ping(setup.lab.wire("ixgbe").host_ip, count=3)
    assert (
        r.ok and " 0% packet loss" in r.stdout
    ), f"ixgbe port does not pass traffic after the reload:\n{r.stdout}"


def test_reboot_reapplies(setup: Setup, timed: None) -> None:
    vm = setup.vm
    seconds = vm.reboot(timeout=600)
    TIMINGS["reboot (agent back)"] = seconds
    wait_ports(setup)
    settle(vm)
    # how long the boot's apply took, by systemd's own clock (against the units' start timeouts)
    TIMINGS["nettune.service apply at boot"] = unit_seconds(vm, "nettune.service")
    unit = vm.run("systemctl is-active nettune.service").stdout.strip()
    assert unit == "active", f"nettune.service is {unit}:\n{vm.run(NETTUNE_LOGS).stdout[-4000:]}"
    state = vm.systemd_state()
    assert state == "running", f"systemd is {state}:\n{vm.run('systemctl --failed --no-pager').stdout}"
    verify(vm, "after a reboot")
    assert_readings_match_plan(setup, "after the reboot")


def test_revert_restores_original(setup: Setup, timed: None) -> None:
    vm = setup.vm
    assert setup.original, "no original readings (the apply step did not run)"
    r = vm.run("nettune revert", timeout=300)
    assert r.ok, f"nettune revert failed (rc={r.rc}):\n{r.stdout}"
    assert vm.run("test -e /var/lib/nettune/state.json").rc != 0, "state file still there after revert"
    wait_ports(setup)
    settle(vm)
    now = readings(vm, setup.devs, plan_sysctls(setup.original_plan))
    before = setup.original
    diffs: list[str] = []
    for dev in setup.devs:
        for section, want in before["ethtool"][dev].items():
            have = now["ethtool"][dev][section]
            if have != want:
                diffs.append(f"{dev} ethtool {section}: was {want}, now {have}")
        if now["queues"][dev] != before["queues"][dev]:
            diffs.append(f"{dev} queue masks: was {before['queues'][dev]}, now {now['queues'][dev]}")
        if before["irqbalance"] == "active":
            # irqbalance owns IRQ affinity: the same IRQs must exist again
            if sorted(now["irq"][dev]) != sorted(before["irq"][dev]):
                diffs.append(f"{dev} IRQs: was {sorted(before['irq'][dev])}, now {sorted(now['irq'][dev])}")
        elif now["irq"][dev] != before["irq"][dev]:
            diffs.append(f"{dev} IRQ affinity: was {before['irq'][dev]}, now {now['irq'][dev]}")
    if now["sysctl"] != before["sysctl"]:
        diffs.append(f"sysctls: was {before['sysctl']}, now {now['sysctl']}")
    if now["irqbalance"] != before["irqbalance"]:
        diffs.append(f"irqbalance: was {before['irqbalance']}, now {now['irqbalance']}")
    assert not diffs, (
        "revert did not restore the original readings:\n" + "\n".join(diffs) + f"\n--- revert ---\n{r.stdout}"
    )


# ------------------------------------------------------------ nettune measure
MEASURE_RUNS, MEASURE_SECONDS = 2, 1
MEASURE_PLOTS = {
    "bars-throughput.png",
    "bars-latency.png",
    "bars-udp64.png",
    "heat-interrupts.png",
    "heat-softirq.png",
    "heat-softirq-time.png",
}


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of an 8-bit RGB PNG, after checking every chunk's CRC and that
    the image data inflates to one filter byte plus 3 bytes per pixel per row."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, size = 8, b"", (0, 0)
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        tag, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        assert struct.unpack(">I", data[pos + 8 + n : pos + 12 + n])[0] == zlib.crc32(tag + body), tag
        if tag == b"IHDR":
            size = struct.unpack(">II", body[:8])
            assert body[8:10] == b"\x08\x02", "not 8-bit RGB"
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    assert len(zlib.decompress(idat)) == size[1] * (3 * size[0] + 1)
    return size


def raw_values(workload: str, text: str) -> dict[str, float]:
    """A run's figures read from the tool's own output (independently of nettune)."""
    if workload == "tcp_rr":
        pct = dict(re.findall(r"percentile (\d+\.\d+) =\s+([\d.]+)", text))
        return {"p50_us": float(pct["50.000"]), "p99_us": float(pct["99.000"])}
    end = json.loads(text)["end"]
    rcv = end["sum_received"]
    if workload == "udp_64":
        return {"kpps": (rcv["packets"] - rcv["lost_packets"]) / rcv["seconds"] / 1e3, "loss_pct": rcv["lost_percent"]}
    bps = rcv["bits_per_second"] + end.get("sum_received_bidir_reverse", {}).get("bits_per_second", 0)
    return {"gbps": bps / 1e9}


def test_measure_before_after_reverted(setup: Setup, rootfs: RootfsImage, log_root: Path, timed: None) -> None:
    vm, lab = setup.vm, setup.lab
    peer = lab.wire("ixgbe").host_ip
    assert vm.run("test -e /var/lib/nettune/state.json").rc != 0, "tuning still applied (the revert step failed?)"
    plan = plan_json(vm)
    # no peer yet: a clear error, nothing changed
    r = vm.run(f"nettune measure --peer {peer} -i {setup.ixgbe} --runs 1 --seconds 1 --out /root/nopeer 2>&1")
    assert r.rc == 1 and f"peer {peer} unreachable on TCP 11111 (sockperf)" in r.stdout, r.stdout
    assert vm.run("test -e /var/lib/nettune/state.json").rc != 0
    out_dir = log_root / "nettune" / "measure"
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    with measure_peer(lab, rootfs, NETTUNE_SRC, out_dir / "serve.log"):
        r = vm.run(
            f"nettune measure --peer {peer} -i {setup.ixgbe} --runs {MEASURE_RUNS} --seconds {MEASURE_SECONDS} "
            "--out /root/measure 2>&1",
            timeout=900,
        )
    TIMINGS["nettune measure (3 phases)"] = time.monotonic() - t0
    (out_dir / "measure.out").write_text(r.stdout)
    assert r.ok, f"nettune measure failed (rc={r.rc}):\n{r.stdout}"
    assert vm.run("test -e /var/lib/nettune/state.json").rc != 0, "measure left the tuning applied"
    vm.get_tree("/root/measure", out_dir)
    rep = json.loads((out_dir / "report.json").read_text())
    assert (out_dir / "report.md").is_file() and set(rep["plots"]) == MEASURE_PLOTS, rep["plots"]
    for name in MEASURE_PLOTS:
        w, h = png_size((out_dir / name).read_bytes())
        assert w > 100 and h > 50, (name, w, h)
    assert rep["phases"] == ["before", "after", "reverted"] and rep["interface"] == setup.ixgbe
    # every run's figures as the tools printed them, and the medians and verdicts from those
    runs = rep["runs_detail"]
    assert len(runs) == 3 * MEASURE_RUNS * 5
    for run in runs:
        assert run["values"] == pytest.approx(raw_values(run["workload"], (out_dir / run["raw"]).read_text())), run
    for row in rep["metrics"]:
        per_phase = {}
        for phase in rep["phases"]:
            vals = [
                x["values"][row["metric"]] for x in runs if x["phase"] == phase and x["workload"] == row["workload"]
            ]
            s = row["phases"][phase]
            assert s["median"] == pytest.approx(statistics.median(vals)) and s["runs"] == pytest.approx(vals)
            per_phase[phase] = s
        for phase in ("after", "reverted"):
            v, b, n = row["verdicts"][phase], per_phase["before"], per_phase[phase]
            band = max(0.05, (b["max"] - b["min"]) / b["median"], (n["max"] - n["min"]) / n["median"])
            change = (n["median"] - b["median"]) / b["median"]
            assert v["band"] == pytest.approx(band) and v["change"] == pytest.approx(change)
            want = (
                "no change within noise"
                if abs(change) <= band
                else "better" if (change > 0) == row["higher_is_better"] else "worse"
            )
            assert v["verdict"] == want, row
    # the counters explain the change: after apply each queue IRQ of the port fired only on
    # the CPU the plan gave its queue; before, irqbalance placed them
    queue_cpu = {int(q): c for q, c in plan["interfaces"][setup.ixgbe]["queue_cpu"].items()}
    after_irqs = rep["counters"]["after"]["totals"]["irq"]
    queues = {
        int(m.group(1)): counts
        for name, counts in after_irqs.items()
        if (m := re.fullmatch(rf"{re.escape(setup.ixgbe)}-TxRx-(\d+)", name))
    }
    assert sorted(queues) == sorted(queue_cpu), (after_irqs, queue_cpu)
    for q, counts in queues.items():
        assert sum(counts) > 0, f"queue {q} had no interrupts during the after phase: {after_irqs}"
        # an interrupt already on its way when the affinity changed still lands on the
        # CPU it was sent to (x86 moves a vector at its next interrupt): one or two
        elsewhere = sum(counts) - counts[queue_cpu[q]]
        assert counts[queue_cpu[q]] > 0 and elsewhere <= max(2, sum(counts) // 100), (q, counts, queue_cpu)
    before_rx = rep["counters"]["before"]["totals"]["softirq"]["NET_RX"]
    assert sum(before_rx) > 0, rep["counters"]["before"]["totals"]
    md = (out_dir / "report.md").read_text()
    assert "| tcp_tx (iperf3) | throughput, Gbit/s (higher is better) |" in md and "![bars-throughput.png]" in md


def test_no_device_warnings(setup: Setup, timed: None) -> None:
    vm = setup.vm
    problems = []
    for driver, dev in (("ixgbe", setup.ixgbe), ("virtio_net", setup.virtio)):
        problems += device_problems(vm.dmesg(), driver, [vm.pci_address(dev)], [dev])
    assert not problems, "kernel warnings about the NICs (this boot):\n" + format_records(problems)
    assert not vm.qemu_problems(), f"QEMU reported problems:\n{vm.qemu_problems()}"
