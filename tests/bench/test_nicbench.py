"""Unit tests of the benchmark runner's parts that need no guest: argument
checks, turning a sample's guest files into figures, and the summary tables."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchlib import BenchError, CpuSnapshot, TaskStat, TrafficPath
from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.host import GuestImage
from nicbench import (
    DEFAULT_MODELS,
    MODELS,
    RECEIVE_TABLE,
    SUBJECT,
    TABLES,
    WORKLOADS,
    Sample,
    NicGuest,
    Workload,
    model_workloads,
    context_notes,
    facts_lines,
    feature_settings,
    features_missed,
    evaluate,
    parse_args,
    ratios,
    receive_ratios,
    render_receive_table,
    render_tables,
    rsc_notes,
    render_trace_table,
    summaries,
    trace_figures,
    trace_notes,
    trace_ratios,
)
from mmiotrace import count_mmio, parse_zones

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


# ------------------------------------------------------------------ options
def test_defaults_full_and_quick() -> None:
    full = parse_args([])
    assert (full.reps, full.seconds, full.kernel, full.quick) == (5, 5, "6.1", False)
    assert [m.name for m in full.models] == ["ixgbe", "igb", "e1000e", "virtio-net"]
    quick = parse_args(["--quick", "--kernel", "6.12"])
    assert (quick.reps, quick.seconds, quick.kernel) == (3, 2, "6.12")
    assert parse_args(["--quick", "--reps", "4"]).reps == 4


def test_models_subset_always_has_ixgbe_first() -> None:
    args = parse_args(["--models", "virtio-net,igb,igb"])
    assert [m.name for m in args.models] == ["ixgbe", "virtio-net", "igb"]


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--models", "rtl8139"], "unknown model"),
        (["--reps", "0"], "--reps must be between"),
        (["--seconds", "500"], "--seconds must be between"),
        (["--kernel", "5.10"], "invalid choice"),
        (["--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_are_named(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_tables_only_name_known_workloads() -> None:
    names = {w.name for w in WORKLOADS}
    for _, _, metrics in TABLES:
        for m in metrics:
            assert m.workload in names, m


# ------------------------------------------------------------- a sample
def _testbed() -> NicGuest:
    image = GuestImage("6.1", Path("vmlinuz"), Path("initrd.img"), "6.1.0-test")
    tb = NicGuest(MODELS[1], image, Path("qemu"), "tcg", Path("logs"))
    # as recorded: igb ports eth0 (root ns) -> eth1 (ns peer)
    tb.ports = {"slirp": "eth9", "a": "eth0", "b": "eth1"}
    tb.pci = {"slirp": "0000:01:00.0", "a": "0000:02:00.0", "b": "0000:03:00.0"}
    tb.irqs = {"slirp": [20], "a": [26, 27, 28, 29, 30], "b": [31, 32, 33, 34, 35]}
    return tb


def _zeroed(text: str) -> str:
    """The same /proc/net/dev with every counter 0 (a 'before' snapshot)."""
    lines = text.splitlines()
    out = lines[:2]
    for ln in lines[2:]:
        name, _, rest = ln.partition(":")
        out.append(f"{name}:" + " 0" * len(rest.split()))
    return "\n".join(out) + "\n"


def _irqs_zeroed(text: str) -> str:
    lines = text.splitlines()
    out = [lines[0]]
    for ln in lines[1:]:
        head, _, rest = ln.partition(":")
        if head.strip().isdigit():
            cols = rest.split()
            out.append(f"{head}: " + "  0" * 2 + "  " + " ".join(cols[2:]))
        else:
            out.append(ln)
    return "\n".join(out) + "\n"


def _files(out: str, rc: str = "0") -> dict[str, str]:
    irq = (DATA / "guest-proc-interrupts.txt").read_text()
    root = (DATA / "guest-proc-net-dev-root.txt").read_text()
    peer = (DATA / "guest-proc-net-dev-peer.txt").read_text()
    return {
        "before": f"@@interrupts\n{_irqs_zeroed(irq)}@@netdev root\n{_zeroed(root)}@@netdev peer\n{_zeroed(peer)}",
        "after": f"@@interrupts\n{irq}@@netdev root\n{root}@@netdev peer\n{peer}",
        "out": out,
        "rc": rc + "\n",
    }


def _cpus() -> tuple[CpuSnapshot, CpuSnapshot]:
    before = CpuSnapshot(
        10, 1000, {10: TaskStat(10, "qemu", 100, 0), 11: TaskStat(11, "CPU 0/TCG", 800, 0)}, 5.0
    )
    after = CpuSnapshot(
        10, 1300, {10: TaskStat(10, "qemu", 150, 0), 11: TaskStat(11, "CPU 0/TCG", 1050, 0)}, 7.0
    )
    return before, after


def test_evaluate_recorded_b2b_tcp_sample() -> None:
    tb = _testbed()
    w = next(w for w in WORKLOADS if w.name == "b2b-tcp")
    report = json.loads((DATA / "iperf3-tcp.json").read_text())
    s = evaluate(tb, w, 0, _cpus(), _files(json.dumps(report)))
    assert s.ok, s.error
    # IRQs of both ports, from the recorded /proc/interrupts (before: zeros)
    assert s.figures["irqs"] == (1 + 357 + 19 + 1195 + 19) + (1 + 946 + 11 + 441 + 44)
    # eth0 sent 32738 and received 331 frames; eth1 received 32613 and sent 338
    assert s.figures["frames"] == max(32738, 32613) + max(338, 331)
    assert s.figures["cpu_s"] == pytest.approx(3.0)  # 300 ticks at 100 Hz
    assert s.figures["cpu_main_s"] == pytest.approx(0.5)
    assert s.figures["cpu_us_per_frame"] == pytest.approx(3e6 / s.figures["frames"])
    assert s.figures["mbps"] == pytest.approx(report["end"]["sum_received"]["bits_per_second"] / 1e6)
    assert s.raw["before"]["port_interrupts"]["a"] == 0
    assert s.raw["after"]["links"]["eth0"]["tx_packets"] == 32738


def test_evaluate_reports_a_failed_iperf3() -> None:
    tb = _testbed()
    w = next(w for w in WORKLOADS if w.name == "b2b-tcp")
    s = evaluate(tb, w, 0, _cpus(), _files((DATA / "iperf3-refused.json").read_text(), rc="1"))
    assert not s.ok
    assert "iperf3 exited with 1" in s.error and "Connection refused" in s.error
    s = evaluate(tb, w, 0, _cpus(), _files("iperf3: some crash\n", rc="139"))
    assert not s.ok and "gave no JSON" in s.error


# ------------------------------------------------------------------ tables
def _samples() -> list[Sample]:
    out = []
    for rep, (a, b) in enumerate([(100.0, 50.0), (120.0, 60.0), (110.0, 40.0)]):
        out.append(
            Sample(
                "ixgbe",
                "b2b-tcp",
                rep,
                True,
                figures={"mbps": a, "irq_per_s": 10.0, "host_other_cpu_pct": 5.0},
            )
        )
        out.append(
            Sample("igb", "b2b-tcp", rep, True, figures={"mbps": b, "irq_per_s": 40.0, "rx_dropped": 2.0})
        )
    out.append(Sample("igb", "b2b-tcp", 3, False, error="boom", figures={"mbps": 1e9}))
    return out


def test_summaries_ignore_failed_samples() -> None:
    summ = summaries(_samples())
    assert summ["b2b-tcp"]["mbps"]["ixgbe"].median == 110.0
    assert summ["b2b-tcp"]["mbps"]["igb"].median == 50.0
    assert summ["b2b-tcp"]["mbps"]["igb"].n == 3


def test_render_tables_and_ratios() -> None:
    summ = summaries(_samples())
    text = render_tables(summ, ["ixgbe", "igb"])
    row = next(ln for ln in text.splitlines() if ln.startswith("b2b TCP port->port, Mbit/s"))
    assert row.split()[-1] == "2.20"  # 110 / 50
    assert "110 ±9%" in row and "50.0 ±20%" in row
    irq_row = next(ln for ln in text.splitlines() if ln.startswith("b2b-tcp, IRQ/s"))
    assert irq_row.split()[-1] == "0.25"
    # every table is there, with its title
    for title, _, _ in TABLES:
        assert f"== {title}" in text
    r = ratios(summ, ["ixgbe", "igb"])
    assert r["b2b-tcp.mbps"] == {f"{SUBJECT}/igb": pytest.approx(2.2)}
    assert r["slirp-tcp-tx.mbps"] == {f"{SUBJECT}/igb": None}


def test_context_notes() -> None:
    lines = context_notes(_samples(), ["ixgbe", "igb"])
    assert lines == [
        "CPU used by other host processes during the samples, % of one CPU (median): ixgbe 5 (max 5)",
        "frames dropped by the guest's receiving ports, per sample (median): igb 2 (max 2)",
    ]


def test_facts_lines() -> None:
    from benchlib import driver_facts

    ixgbe = driver_facts((DATA / "guest-ethtool-ixgbe.txt").read_text())
    no_queues = {**ixgbe, "combined_queues": ""}
    assert facts_lines({"ixgbe": ixgbe, "igb": {}, "x": no_queues}) == [
        "ixgbe: driver ixgbe 6.1.0-56-amd64, 2 queue pair(s), coalescing: rx-usecs 1, tx-usecs 0; "
        "TSO on, tx checksum on, LRO off, GRO on",
        "x: driver ixgbe 6.1.0-56-amd64, queue count not reported, coalescing: rx-usecs 1, tx-usecs 0; "
        "TSO on, tx checksum on, LRO off, GRO on",
    ]


def test_check_args_validates_without_running() -> None:
    from nicbench import main

    assert parse_args(["--check-args", "--quick"]).check_args
    assert main(["--check-args", "--models", "igb", "--kernel", "6.12"]) == 0
    with pytest.raises(SystemExit):
        main(["--check-args", "--models", "nope"])


# -------------------------------------------------------------- VF workloads
def _workload(name: str) -> Workload:
    return next(w for w in WORKLOADS if w.name == name)


def test_workloads_option_selects_in_table_order() -> None:
    assert [w.name for w in parse_args([]).workloads] == [
        "slirp-tcp-tx",
        "slirp-tcp-rx",
        "b2b-tcp",
        "b2b-udp",
        "vf-vf-tcp",
        "vf-wire-tcp",
    ]
    args = parse_args(["--workloads", "vf-wire-tcp, b2b-tcp,vf-wire-tcp"])
    assert [w.name for w in args.workloads] == ["b2b-tcp", "vf-wire-tcp"]


@pytest.mark.parametrize(
    "value,message", [("b2b-tcp,vf-to-vf", "unknown workload(s) ['vf-to-vf']"), (",", "names no workload")]
)
def test_workloads_option_rejects_bad_names(value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(["--workloads", value])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_only_models_with_vfs_run_vf_workloads() -> None:
    by_name = {m.name: m for m in MODELS}
    assert {m.name: m.vf_driver for m in MODELS if m.vf_driver} == {
        "ixgbe": "ixgbevf",
        "igb": "igbvf",
        "ixgbe-lro": "ixgbevf",
    }
    vf = [_workload("vf-vf-tcp"), _workload("vf-wire-tcp")]
    assert all(w.needs_vfs for w in vf)
    assert not any(w.needs_vfs for w in WORKLOADS if w not in vf)
    chosen = [_workload("b2b-tcp"), *vf]
    assert model_workloads(by_name["igb"], chosen) == chosen
    assert model_workloads(by_name["e1000e"], chosen) == [_workload("b2b-tcp")]
    assert model_workloads(by_name["virtio-net"], vf) == []


def _vf_testbed() -> NicGuest:
    """The igb testbed with VFs: PF "v" (eth3), its wire peer "w" (eth4,
    netns vwire), VF 0 eth5 (netns vf0), VF 1 eth6 (netns vf1)."""
    image = GuestImage("6.1", Path("vmlinuz"), Path("initrd.img"), "6.1.0-test")
    tb = NicGuest(MODELS[1], image, Path("qemu"), "tcg", Path("logs"), with_vfs=True)
    tb.ports = {"slirp": "eth9", "a": "eth0", "b": "eth1", "v": "eth3", "w": "eth4", "vf0": "eth5", "vf1": "eth6"}
    tb.pci = {
        "slirp": "0000:01:00.0",
        "a": "0000:02:00.0",
        "b": "0000:03:00.0",
        "v": "0000:04:00.0",
        "w": "0000:05:00.0",
        "vf0": "0000:04:10.0",
        "vf1": "0000:04:10.4",
    }
    tb.irqs = {
        "slirp": [20],
        "a": [26, 27],
        "b": [31, 32],
        "v": [40, 41],
        "w": [45, 46],
        "vf0": [50, 51],
        "vf1": [55, 56],
    }
    tb.ns_pids = {"peer": 300, "vwire": 301, "vf0": 302, "vf1": 303}
    return tb


def test_vf_testbed_needs_a_model_with_vfs() -> None:
    image = GuestImage("6.1", Path("vmlinuz"), Path("initrd.img"), "6.1.0-test")
    with pytest.raises(BenchError, match="e1000e has no VFs"):
        NicGuest(MODELS[2], image, Path("qemu"), "tcg", Path("logs"), with_vfs=True)


def test_vf_ports_come_after_the_others(tmp_path: Path) -> None:
    """With VFs the guest gets two ports more, behind root ports 3 and 4,
    wired to each other; ports 0-2 keep their arguments (and PCI addresses)."""
    image = GuestImage("6.1", Path("vmlinuz"), Path("initrd.img"), "6.1.0-test")
    plain = NicGuest(MODELS[0], image, Path("qemu"), "tcg", Path("logs"))._args(tmp_path)
    with_vfs = NicGuest(MODELS[0], image, Path("qemu"), "tcg", Path("logs"), with_vfs=True)._args(tmp_path)
    assert with_vfs[: len(plain)] == plain
    extra = " ".join(with_vfs[len(plain) :])
    assert "pcie-root-port,id=rp3" in extra and "pcie-root-port,id=rp4" in extra
    assert "ixgbe,netdev=v0,mac=52:54:00:12:34:59" in extra and "ixgbe,netdev=v1,mac=52:54:00:12:34:5a" in extra
    assert f"local.path={tmp_path / 'va'},remote.type=unix,remote.path={tmp_path / 'vb'}" in extra
    assert f"local.path={tmp_path / 'vb'},remote.type=unix,remote.path={tmp_path / 'va'}" in extra


def test_vf_traffic_paths_snapshots_and_commands() -> None:
    tb = _vf_testbed()
    vv, vw = _workload("vf-vf-tcp"), _workload("vf-wire-tcp")
    # the VFs' own IRQs (and the wire peer's), never their PF's
    assert tb.traffic_path(vv) == TrafficPath("vf-vf", ("eth5", "eth6"), (50, 51, 55, 56))
    assert tb.traffic_path(vw) == TrafficPath("vf-wire", ("eth5", "eth4"), (50, 51, 45, 46))
    assert tb.traffic_path(_workload("b2b-tcp")) == TrafficPath("b2b", ("eth0", "eth1"), (26, 27, 31, 32))
    assert tb.snapshot_ns(vv) == "vf0:302 vf1:303"
    assert tb.snapshot_ns(vw) == "vf0:302 vwire:301"
    assert tb.snapshot_ns(_workload("b2b-udp")) == tb.snapshot_ns(_workload("slirp-tcp-rx")) == "peer:300"
    assert tb.workload_cmd(vv, 2, 5555) == "ip netns exec vf0 iperf3 -i 0 -J -t 2 -c 203.0.113.11 -p 5201"
    assert tb.workload_cmd(vw, 2, 5555) == "ip netns exec vf0 iperf3 -i 0 -J -t 2 -c 203.0.113.1 -p 5201"


def test_vf_irqs_are_read_for_every_function() -> None:
    tb = _vf_testbed()
    cmd = tb._irqs_cmd()
    for bdf in tb.pci.values():
        assert bdf in cmd
    text = "".join(
        f"@@irqs {bdf}\n" + "\n".join(str(i) for i in tb.irqs[role]) + "\n" for role, bdf in tb.pci.items()
    )
    assert tb._parse_irqs(text) == tb.irqs
    missing_vf = text.split("@@irqs 0000:04:10.4")[0]
    with pytest.raises(GuestError, match="no IRQ list for '0000:04:10.4'"):
        tb._parse_irqs(missing_vf)


def _proc_interrupts(counts: dict[int, int]) -> str:
    lines = ["           CPU0       CPU1       "]
    lines += [f" {irq}: {c // 2:10d} {c - c // 2:10d}   PCI-MSI {irq}-edge      ethX" for irq, c in counts.items()]
    return "\n".join(lines) + "\n"


def _net_dev(links: dict[str, tuple[int, int, int, int]]) -> str:
    """/proc/net/dev with (rx_bytes, rx_packets, tx_bytes, tx_packets) per interface."""
    out = [
        "Inter-|   Receive                                                |  Transmit",
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
        "carrier compressed",
        "    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0"
        "       0          0",
    ]
    for name, (rb, rp, tb_, tp) in links.items():
        out.append(f"  {name}: {rb} {rp} 0 0 0 0 0 0 {tb_} {tp} 0 0 0 0 0 0")
    return "\n".join(out) + "\n"


def _vf_snapshot(irqs: dict[int, int], root: dict[str, Any], per_ns: dict[str, dict[str, Any]]) -> str:
    text = f"@@interrupts\n{_proc_interrupts(irqs)}@@netdev root\n{_net_dev(root)}"
    for ns, links in per_ns.items():
        text += f"@@netdev {ns}\n{_net_dev(links)}"
    return text


def test_evaluate_vf_to_vf_sample_counts_the_vfs() -> None:
    """Frames from the two VFs' counters (in their namespaces), interrupts
    of the VF functions only: the PF's (40, 41) and the wire port's do not
    count, though they moved too."""
    tb = _vf_testbed()
    report = json.loads((DATA / "iperf3-tcp.json").read_text())
    zero = (0, 0, 0, 0)
    irq0 = {40: 0, 41: 0, 45: 0, 46: 0, 50: 0, 51: 0, 55: 0, 56: 0}
    irq1 = {40: 7, 41: 9, 45: 1000, 46: 1000, 50: 120, 51: 30, 55: 200, 56: 11}
    files = {
        "before": _vf_snapshot(irq0, {"eth0": zero, "eth3": zero}, {"vf0": {"eth5": zero}, "vf1": {"eth6": zero}}),
        "after": _vf_snapshot(
            irq1,
            {"eth0": (5, 5, 5, 5), "eth3": (99, 99, 99, 99)},
            {"vf0": {"eth5": (40_000, 600, 30_000_000, 20_000)}, "vf1": {"eth6": (29_000_000, 19_500, 42_000, 610)}},
        ),
        "out": json.dumps(report),
        "rc": "0\n",
    }
    s = evaluate(tb, _workload("vf-vf-tcp"), 0, _cpus(), files)
    assert s.ok, s.error
    frames = max(20_000, 19_500) + max(610, 600)
    assert s.figures["frames"] == frames
    assert s.figures["irqs"] == 120 + 30 + 200 + 11
    assert s.figures["irq_per_frame"] == pytest.approx(361 / frames)
    assert s.figures["cpu_us_per_frame"] == pytest.approx(3e6 / frames)
    # the raw record keeps every function's interrupts (the PF's as well) and the VFs' counters
    assert s.raw["after"]["port_interrupts"]["v"] == 16
    assert s.raw["after"]["port_interrupts"]["vf1"] == 211
    assert s.raw["after"]["links"]["eth5"]["tx_packets"] == 20_000


def test_evaluate_vf_sample_without_its_namespace_fails() -> None:
    """A snapshot that lacks the receiving VF's namespace is an error, not a
    sample of 0 frames."""
    tb = _vf_testbed()
    zero = (0, 0, 0, 0)
    snap = _vf_snapshot({50: 0, 51: 0, 55: 0, 56: 0}, {"eth0": zero}, {"vf0": {"eth5": zero}})
    files = {"before": snap, "after": snap, "out": (DATA / "iperf3-tcp.json").read_text(), "rc": "0\n"}
    s = evaluate(tb, _workload("vf-vf-tcp"), 0, _cpus(), files)
    assert not s.ok and "eth6" in s.error


def _vf_samples() -> list[Sample]:
    out = []
    for rep, (a, b) in enumerate([(300.0, 100.0), (330.0, 120.0), (270.0, 80.0)]):
        out.append(Sample("ixgbe", "vf-vf-tcp", rep, True, figures={"mbps": a, "irq_per_frame": 0.1}))
        out.append(Sample("igb", "vf-vf-tcp", rep, True, figures={"mbps": b, "irq_per_frame": 0.4}))
        out.append(Sample("e1000e", "b2b-tcp", rep, True, figures={"mbps": 50.0}))
        out.append(Sample("ixgbe", "b2b-tcp", rep, True, figures={"mbps": 100.0}))
    return out


def test_vf_rows_name_models_without_vfs() -> None:
    summ = summaries(_vf_samples())
    models = ["ixgbe", "igb", "e1000e"]
    text = render_tables(summ, models, ["b2b-tcp", "vf-vf-tcp"])
    lines = text.splitlines()
    row = next(ln for ln in lines if ln.startswith("VF->VF TCP (internal switch), Mbit/s"))
    # ixgbe 300, igb 100, e1000e: no VFs (value and ratio), ixgbe/igb 3.00
    assert re.split(r"\s{2,}", row)[1:] == ["300 ±10%", "100 ±20%", "no VFs", "3.00", "no VFs"]
    irq = next(ln for ln in lines if ln.startswith("VF->VF TCP, IRQ/frame"))
    assert re.split(r"\s{2,}", irq)[1:] == ["0.1 ±0%", "0.4 ±0%", "no VFs", "0.25", "no VFs"]
    # a b2b row of a model without VFs is measured as usual; igb ran no b2b: "-"
    b2b = next(ln for ln in lines if ln.startswith("b2b TCP port->port, Mbit/s"))
    assert re.split(r"\s{2,}", b2b)[1:] == ["100 ±0%", "-", "50.0 ±0%", "-", "2.00"]
    # rows of workloads not chosen are left out, and so are tables left empty
    assert "slirp" not in text and "VF->wire" not in text and "b2b-udp" not in text
    assert "VF->wire TCP, Mbit/s" in render_tables(summ, models)


def test_vf_ratios_leave_out_models_without_vfs() -> None:
    r = ratios(summaries(_vf_samples()), ["ixgbe", "igb", "e1000e"])
    assert r["vf-vf-tcp.mbps"] == {"ixgbe/igb": pytest.approx(3.0)}
    assert r["vf-wire-tcp.mbps"] == {"ixgbe/igb": None}  # not measured: None, not left out
    assert r["b2b-tcp.mbps"] == {"ixgbe/igb": None, "ixgbe/e1000e": pytest.approx(2.0)}


def test_facts_lines_with_vf_facts() -> None:
    from benchlib import driver_facts

    ixgbe = driver_facts((DATA / "guest-ethtool-ixgbe.txt").read_text())
    vf = {**ixgbe, "driver": "ixgbevf", "combined_queues": "1"}
    lines = facts_lines({"ixgbe": {**ixgbe, "vf": vf}})
    assert len(lines) == 2
    assert lines[1].startswith("ixgbe VF: driver ixgbevf 6.1.0-56-amd64, 1 queue pair(s)")


# ------------------------------------------------------------ trace run
def test_trace_seconds_option() -> None:
    assert parse_args([]).trace_seconds == 3
    assert parse_args(["--quick"]).trace_seconds == 2
    assert parse_args(["--quick", "--trace-seconds", "0"]).trace_seconds == 0
    with pytest.raises(SystemExit):
        parse_args(["--trace-seconds", "61"])


def test_every_guest_announces_the_coalesced_zones(tmp_path: Path) -> None:
    """The zones' trace event is on from the command line, for every model
    (igb and e1000e announce none, so all their accesses count as exits)."""
    image = GuestImage("6.1", Path("vmlinuz"), Path("initrd.img"), "6.1.0-test")
    for m in MODELS:
        args = NicGuest(m, image, Path("qemu"), "tcg", Path("logs"))._args(tmp_path)
        assert args[:2] == ["-trace", "ixgbe_coalesced_zone"]
    assert {m.name: m.mmio_region for m in MODELS} == {
        "ixgbe": "ixgbe-mmio",
        "igb": "igb-mmio",
        "e1000e": "e1000e-mmio",
        "virtio-net": "",
        "ixgbe-lro": "ixgbe-mmio",
    }


# a trace run's -D log: the zones of two ports at realize, then per frame
# burst a TX tail write (exits), an RX tail write (coalesced), an interrupt
# cause read (exits), and a timer read (another region)
TRACE_LOG = """\
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x01000+0x1000 may be coalesced
ixgbe_coalesced_zone ixgbe-mmio: writes to 0x01000+0x1000 may be coalesced
memory_region_ops_write cpu 1 mr 0x55d0 addr 0xfe806018 value 0x1f size 4 name 'ixgbe-mmio'
memory_region_ops_write cpu 1 mr 0x55d0 addr 0xfea01018 value 0x1f size 4 name 'ixgbe-mmio'
memory_region_ops_read cpu 1 mr 0x55d0 addr 0xfe800800 value 0x0 size 4 name 'ixgbe-mmio'
memory_region_ops_read cpu 0 mr 0x55e0 addr 0xfed000f0 value 0x0 size 4 name 'hpet'
"""


def test_trace_figures_per_frame() -> None:
    counts = count_mmio(TRACE_LOG * 10, {"ixgbe-mmio": 0x20000})
    figures = {"frames": 40.0, "irq_per_frame": 0.05, "frames_per_s": 20.0, "mbps": 1.5}
    t = trace_figures(counts, parse_zones(TRACE_LOG), MODELS[0], figures)
    assert t["frames"] == 40
    assert t["nic_reads_per_pkt"] == 10 / 40
    assert t["nic_writes_per_pkt"] == 20 / 40
    assert t["nic_exits_per_pkt"] == 20 / 40  # 10 TX tail writes + 10 reads; the RX tail writes are coalesced
    assert (t["irq_per_frame"], t["frames_per_s"], t["mbps"]) == (0.05, 20.0, 1.5)
    assert t["accesses"] == {"read": 10, "write": 20}
    assert t["coalesced_zones"] == [[0x1000, 0x1000]]
    # only the model's own registers; the timer's read is left out
    assert [(e["op"], e["offset"], e["per_pkt"], e["exits"]) for e in t["top_registers"]] == [
        ("read", "0x00800", 0.25, True),
        ("write", "0x01018", 0.25, False),
        ("write", "0x06018", 0.25, True),
    ]
    # igb announces no zones: the same accesses, in its region, would all exit
    igb_log = TRACE_LOG.replace("ixgbe-mmio'", "igb-mmio'")
    g = trace_figures(count_mmio(igb_log * 10, {"igb-mmio": 0x20000}), parse_zones(igb_log), MODELS[1], figures)
    assert g["nic_exits_per_pkt"] == 30 / 40
    with pytest.raises(BenchError, match="no frames"):
        trace_figures(counts, {}, MODELS[0], {"frames": 0.0})


def test_trace_table_ratios_and_notes() -> None:
    traces: dict[str, dict[str, Any]] = {
        "ixgbe": {"nic_reads_per_pkt": 0.1, "nic_writes_per_pkt": 0.4, "nic_exits_per_pkt": 0.3, "irq_per_frame": 0.02},
        "igb": {"nic_reads_per_pkt": 0.2, "nic_writes_per_pkt": 0.4, "nic_exits_per_pkt": 0.6, "irq_per_frame": 0.04},
        "e1000e": {"nic_reads_per_pkt": 0.1, "nic_writes_per_pkt": 0.2, "nic_exits_per_pkt": 1.2},
    }
    models = ["ixgbe", "igb", "e1000e", "virtio-net"]
    out = render_trace_table(traces, models)
    assert "ixgbe/igb" in out and "ixgbe/e1000e" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("accesses that would exit under KVM/frame"))
    assert line.split()[-5:] == ["counted", "0.50", "0.25", "not", "counted"]
    assert "IRQ/frame" in out and "kframes/s with the trace on" in out
    r = trace_ratios(traces, models)
    assert r["nic_exits_per_pkt"] == {"ixgbe/igb": 0.5, "ixgbe/e1000e": 0.25, "ixgbe/virtio-net": None}
    assert r["irq_per_frame"]["ixgbe/e1000e"] is None
    top = [{"region": "ixgbe-mmio", "op": "write", "offset": "0x06018", "per_pkt": 0.25, "exits": True}]
    assert trace_notes({"ixgbe": {"top_registers": top}}) == [
        "ixgbe: busiest registers in the trace run, per frame: write 0x06018 0.25"
    ]


# ------------------------------------------------- LRO and bulk TCP receive
def _model(name: str) -> Any:
    return next(m for m in MODELS if m.name == name)


def test_ixgbe_lro_is_a_variant_chosen_by_name() -> None:
    """ixgbe-lro: the same device and drivers as ixgbe, LRO on at setup; not
    in the default run, chosen with --models (ixgbe still first)."""
    lro, plain = _model("ixgbe-lro"), _model("ixgbe")
    assert (lro.device, lro.driver, lro.vf_driver, lro.mmio_region) == (
        plain.device,
        plain.driver,
        plain.vf_driver,
        plain.mmio_region,
    )
    assert (lro.features, plain.features) == ("lro on", "")
    assert "ixgbe-lro" not in DEFAULT_MODELS
    assert [m.name for m in parse_args([]).models] == list(DEFAULT_MODELS)
    args = parse_args(["--models", "ixgbe-lro,igb,virtio-net,e1000e"])
    assert [m.name for m in args.models] == ["ixgbe", "ixgbe-lro", "igb", "virtio-net", "e1000e"]


def test_feature_settings() -> None:
    assert feature_settings("lro on") == {"large-receive-offload": "on"}
    assert feature_settings("lro off gro on") == {"large-receive-offload": "off", "generic-receive-offload": "on"}
    assert feature_settings("") == {}
    for bad in ("lro", "lro maybe", "jumbo on"):
        with pytest.raises(BenchError, match="features"):
            feature_settings(bad)


def test_features_missed_reads_ethtool_k() -> None:
    text = (DATA / "guest-ethtool-ixgbe.txt").read_text().split("@@\n")[2]  # the recorded ethtool -k
    assert features_missed({"generic-receive-offload": "on"}, text) == {}
    assert features_missed({"large-receive-offload": "on"}, text) == {"large-receive-offload": "off"}
    assert features_missed({"large-receive-offload": "off"}, text) == {}
    assert features_missed({"no-such-feature": "on"}, text) == {"no-such-feature": ""}
    fixed = (DATA / "guest-ethtool-virtio_net.txt").read_text().split("@@\n")[2]  # "off [fixed]"
    assert features_missed({"large-receive-offload": "off"}, fixed) == {}


class _FakeVM:
    """Answers `ethtool -k` as a driver would after the `ethtool -K` it got
    (or ignores them all: a driver that refuses)."""

    def __init__(self, obeys: bool) -> None:
        self.obeys = obeys
        self.commands: list[str] = []
        self.lro: dict[str, str] = {}

    def sh(self, cmd: str, **_: Any) -> str:
        self.commands.append(cmd)
        words = cmd.split()
        if words[:2] == ["ethtool", "-K"] and self.obeys:
            self.lro[words[2]] = words[4]
        if words[:2] == ["ethtool", "-k"]:
            return f"Features for {words[2]}:\nlarge-receive-offload: {self.lro.get(words[2], 'off')}\n"
        return ""


def _lro_testbed(vm: _FakeVM) -> NicGuest:
    image = GuestImage("6.12", Path("vmlinuz"), Path("initrd.img"), "6.12.0-test")
    tb = NicGuest(_model("ixgbe-lro"), image, Path("qemu"), "tcg", Path("logs"))
    tb.ports = {"slirp": "eth0", "a": "eth1", "b": "eth2"}
    tb.vm = vm  # type: ignore[assignment]
    return tb


def test_features_are_set_on_every_port_and_checked() -> None:
    vm = _FakeVM(obeys=True)
    _lro_testbed(vm)._set_features()
    assert [c for c in vm.commands if "-K" in c] == [f"ethtool -K eth{n} lro on" for n in (1, 2, 0)]
    assert vm.lro == {"eth0": "on", "eth1": "on", "eth2": "on"}
    with pytest.raises(GuestError, match="left port a with {'large-receive-offload': 'off'}"):
        _lro_testbed(_FakeVM(obeys=False))._set_features()


def test_rsc_counters_are_read_on_the_receiving_port() -> None:
    """ixgbe guests read the receiving port's RSC counters around each
    sample (in its namespace); the VF to VF path has no such port; other
    drivers read none and fetch no such files."""
    tb = _vf_testbed()
    assert not tb.counts_rsc and "rsc0" not in tb.file_kinds
    tb = NicGuest(_model("ixgbe-lro"), tb.image, Path("qemu"), "tcg", Path("logs"), with_vfs=True)
    tb.ports = _vf_testbed().ports
    assert tb.counts_rsc and tb.file_kinds[-2:] == ("rsc0", "rsc1")
    assert tb.rsc_cmd(_workload("slirp-tcp-rx"), "/tmp/x") == "ethtool -S eth9 | grep hw_rsc_ > /tmp/x"
    assert tb.rsc_cmd(_workload("b2b-tcp"), "/tmp/x") == "ip netns exec peer ethtool -S eth1 | grep hw_rsc_ > /tmp/x"
    assert tb.rsc_cmd(_workload("vf-wire-tcp"), "/tmp/x") == (
        "ip netns exec vwire ethtool -S eth4 | grep hw_rsc_ > /tmp/x"
    )
    assert tb.rsc_cmd(_workload("vf-vf-tcp"), "/tmp/x") == ": > /tmp/x"


def test_evaluate_takes_the_rsc_counters_and_the_guest_cpu() -> None:
    tb = _testbed()
    w = _workload("b2b-tcp")
    report = json.loads((DATA / "iperf3-tcp.json").read_text())
    files = _files(json.dumps(report))
    stat0, stat1 = "cpu  100 0 100 1000 0 0 50 0 0 0\n", "cpu  150 0 160 1040 0 0 90 0 0 0\n"
    files["before"] = files["before"].replace("@@netdev root", f"@@stat\n{stat0}@@netdev root")
    files["after"] = files["after"].replace("@@netdev root", f"@@stat\n{stat1}@@netdev root")
    files["rsc0"] = "     hw_rsc_aggregated: 10\n     hw_rsc_flushed: 5\n"
    files["rsc1"] = "     hw_rsc_aggregated: 2010\n     hw_rsc_flushed: 1005\n"
    s = evaluate(tb, w, 0, _cpus(), files)
    assert s.ok, s.error
    mb = report["end"]["sum_received"]["bytes"] / 1e6
    assert s.figures["guest_busy_ms_per_mb"] == pytest.approx(1500 / mb)
    assert s.figures["guest_softirq_ms_per_mb"] == pytest.approx(400 / mb)
    assert s.figures["cpu_vcpu_ms_per_mb"] == pytest.approx(2500 / mb)  # 250 vCPU ticks at 100 Hz
    assert s.figures["rsc_aggregates"] == 1000
    assert s.figures["rsc_segments_per_aggregate"] == pytest.approx(3.0)
    assert s.raw["rsc_counters"]["after"] == {"hw_rsc_aggregated": "2010", "hw_rsc_flushed": "1005"}
    assert s.raw["after"]["guest_cpu_ticks"]["softirq"] == 90
    # an RSC count that cannot be read fails the sample
    s = evaluate(tb, w, 0, _cpus(), {**files, "rsc1": "ethtool: bad command line\n"})
    assert not s.ok and "hw_rsc" in s.error


def _receive_samples() -> list[Sample]:
    out = []
    figures = {
        "ixgbe": (100.0, 40.0),
        "ixgbe-lro": (150.0, 30.0),
        "igb": (80.0, 50.0),
        "virtio-net": (60.0, 100.0),
    }
    for rep in range(3):
        for model, (mbps, ms) in figures.items():
            f = {"mbps": mbps + rep, "cpu_vcpu_ms_per_mb": ms, "guest_busy_ms_per_mb": ms * 1.5}
            if model.startswith("ixgbe"):
                f["rsc_aggregates"] = 0.0 if model == "ixgbe" else 900.0 + rep
                if model == "ixgbe-lro":
                    f["rsc_segments_per_aggregate"] = 3.0 + rep
            out.append(Sample(model, "slirp-tcp-rx", rep, True, figures=f))
    return out


def test_receive_table_puts_every_model_against_igb() -> None:
    summ = summaries(_receive_samples())
    models = ["ixgbe", "ixgbe-lro", "igb", "virtio-net"]
    text = render_receive_table(summ, models, ["slirp-tcp-rx"])
    lines = text.splitlines()
    assert lines[0].startswith(f"== {RECEIVE_TABLE[0]}")
    assert lines[1].split() == [
        "ixgbe",
        "ixgbe-lro",
        "igb",
        "virtio-net",
        "ixgbe/igb",
        "ixgbe-lro/igb",
        "virtio-net/igb",
    ]
    row = next(ln for ln in lines if ln.startswith("slirp TCP host->guest, Mbit/s"))
    assert row.split()[-3:] == ["1.25", "1.86", "0.75"]  # 101/81, 151/81, 61/81
    vcpu = next(ln for ln in lines if ln.startswith("slirp host->guest, vCPU threads ms/MB"))
    assert vcpu.split()[-3:] == ["0.80", "0.60", "2.00"]
    assert "b2b" not in text  # the rows of workloads not chosen are left out
    # without the reference, or without its workloads, no table
    assert render_receive_table(summ, ["ixgbe", "ixgbe-lro"], ["slirp-tcp-rx"]) == ""
    assert render_receive_table(summ, models, ["b2b-udp"]) == ""
    r = receive_ratios(summ, models)
    assert r["slirp-tcp-rx.mbps"] == {
        "ixgbe/igb": pytest.approx(101 / 81),
        "ixgbe-lro/igb": pytest.approx(151 / 81),
        "virtio-net/igb": pytest.approx(61 / 81),
    }
    assert r["b2b-tcp.mbps"] == {"ixgbe/igb": None, "ixgbe-lro/igb": None, "virtio-net/igb": None}
    assert receive_ratios(summ, ["ixgbe"]) == {}

    # bulk TCP into the guest: the slirp and the b2b rows
    assert {m.workload for m in RECEIVE_TABLE[2]} == {"slirp-tcp-rx", "b2b-tcp"}


def test_rsc_notes() -> None:
    lines = rsc_notes(_receive_samples(), ["ixgbe", "ixgbe-lro", "igb"])
    assert lines == [
        "ixgbe: RSC aggregates of the receiving port per sample x segments per aggregate (median): slirp-tcp-rx 0",
        "ixgbe-lro: RSC aggregates of the receiving port per sample x segments per aggregate (median): "
        "slirp-tcp-rx 901 x 4.00",
    ]
