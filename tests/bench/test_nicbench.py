"""Unit tests of the benchmark runner's parts that need no guest: argument
checks, turning a sample's guest files into figures, and the summary tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchlib import CpuSnapshot, TaskStat
from ixgbe_testlib.host import GuestImage
from nicbench import (
    MODELS,
    SUBJECT,
    TABLES,
    WORKLOADS,
    Sample,
    NicGuest,
    context_notes,
    facts_lines,
    evaluate,
    parse_args,
    ratios,
    render_tables,
    summaries,
)

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
        "TSO on, tx checksum on",
        "x: driver ixgbe 6.1.0-56-amd64, queue count not reported, coalescing: rx-usecs 1, tx-usecs 0; "
        "TSO on, tx checksum on",
    ]


def test_check_args_validates_without_running() -> None:
    from nicbench import main

    assert parse_args(["--check-args", "--quick"]).check_args
    assert main(["--check-args", "--models", "igb", "--kernel", "6.12"]) == 0
    with pytest.raises(SystemExit):
        main(["--check-args", "--models", "nope"])
