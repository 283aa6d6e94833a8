"""Unit tests of the benchmark's pure parts: statistics, /proc parsing, the
guest snapshot format, per-sample figures and the ratio tables.

The /proc and iperf3 inputs in data/ were recorded in the project's test
guest (Debian 6.1 kernel, igb ports, iperf3 3.12)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from benchlib import (
    BenchError,
    CpuSnapshot,
    CpuTimes,
    GuestSnapshot,
    PAIR_KINDS,
    LinkStats,
    Row,
    Summary,
    TaskStat,
    TrafficPath,
    cpu_delta,
    driver_facts,
    fmt_summary,
    fmt_value,
    iperf3_figures,
    parse_irq_list,
    parse_proc_interrupts,
    parse_proc_net_dev,
    parse_proc_stat_cpu,
    parse_proc_stat_times,
    parse_snapshot,
    parse_task_stat,
    ratio,
    ratio_table,
    reference_table,
    rsc_figures,
    sample_figures,
    summarize,
    thread_class,
    wire_frames,
)

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


def data(name: str) -> str:
    return (DATA / name).read_text()


def iperf(name: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(data(name))
    return report


# -------------------------------------------------------------- statistics
def test_summarize_odd_count() -> None:
    s = summarize([3.0, 1.0, 2.0])
    assert (s.n, s.median, s.low, s.high) == (3, 2.0, 1.0, 3.0)
    assert s.spread_pct == pytest.approx(100.0)


def test_summarize_even_count_takes_mean_of_middle_pair() -> None:
    s = summarize([10, 40, 20, 30])
    assert s.median == 25.0
    assert s.spread_pct == pytest.approx(100.0 * 30 / 25)


def test_summarize_single_sample_has_no_spread() -> None:
    s = summarize([7.5])
    assert (s.n, s.median, s.spread_pct) == (1, 7.5, 0.0)


def test_summarize_rejects_empty_and_non_finite() -> None:
    with pytest.raises(BenchError, match="no samples"):
        summarize([])
    with pytest.raises(BenchError, match="non-finite"):
        summarize([1.0, math.nan])
    with pytest.raises(BenchError, match="non-finite"):
        summarize([math.inf])


def test_summary_as_dict() -> None:
    d = summarize([1, 2, 4]).as_dict()
    assert d == {"n": 3, "median": 2.0, "min": 1.0, "max": 4.0, "spread_pct": 150.0}


def test_ratio() -> None:
    assert ratio(3.0, 2.0) == 1.5
    assert ratio(1.0, 0.0) is None
    assert ratio(math.nan, 1.0) is None


# ------------------------------------------------------- /proc/interrupts
def test_parse_proc_interrupts_recorded_guest() -> None:
    irqs = parse_proc_interrupts(data("guest-proc-interrupts.txt"))
    # per-CPU columns are summed; the named rows (NMI, LOC, ERR, ...) are not IRQs
    assert irqs[27] == 357
    assert irqs[29] == 1195
    assert irqs[32] == 946
    assert irqs[0] == 87
    assert set(irqs) == {0, 1, 4, 8, 9, 12, *range(24, 36)}


def test_parse_proc_interrupts_sums_all_cpus_not_the_irq_chip_numbers() -> None:
    text = (
        "           CPU0       CPU1       CPU2\n"
        " 40:          5         6          7   PCI-MSIX-0000:01:00.0   0-edge      eth0-TxRx-0\n"
        " 41:          0         0          1   PCI-MSI 1048576-edge      eth1\n"
        "ERR:          0\n"
    )
    assert parse_proc_interrupts(text) == {40: 18, 41: 1}


@pytest.mark.parametrize(
    "text,match",
    [
        ("", "no CPU header"),
        (" 24:  1  2  PCI-MSI x\n", "no CPU header"),
        ("   CPU0   CPU1\n 24:   5\n", "fewer than 2 counts"),
        ("   CPU0   CPU1\n 24:   5  x  PCI-MSI\n", "fewer than 2 counts"),
    ],
)
def test_parse_proc_interrupts_rejects_garbage(text: str, match: str) -> None:
    with pytest.raises(BenchError, match=match):
        parse_proc_interrupts(text)


# ------------------------------------------------------------ /proc/net/dev
def test_parse_proc_net_dev_recorded_guest() -> None:
    root = parse_proc_net_dev(data("guest-proc-net-dev-root.txt"))
    assert set(root) == {"lo", "eth0"}
    e = root["eth0"]
    assert (e.rx_bytes, e.rx_packets, e.rx_errors, e.rx_dropped) == (22621, 331, 8, 0)
    assert (e.tx_bytes, e.tx_packets) == (28310711, 32738)
    peer = parse_proc_net_dev(data("guest-proc-net-dev-peer.txt"))
    assert peer["eth1"].rx_packets == 32613


def test_parse_proc_net_dev_rejects_short_lines() -> None:
    text = data("guest-proc-net-dev-root.txt") + "  eth9: 1 2 3\n"
    with pytest.raises(BenchError, match="bad /proc/net/dev line"):
        parse_proc_net_dev(text)
    with pytest.raises(BenchError, match="not /proc/net/dev"):
        parse_proc_net_dev(data("guest-proc-interrupts.txt"))


def test_link_stats_minus_and_backwards() -> None:
    a = LinkStats(10, 2, 0, 0, 0, 20, 3, 0, 0)
    b = LinkStats(110, 12, 0, 1, 0, 220, 13, 0, 0)
    d = b.minus(a)
    assert (d.rx_bytes, d.rx_packets, d.rx_dropped, d.tx_packets) == (100, 10, 1, 10)
    with pytest.raises(BenchError, match="backwards"):
        a.minus(b)


# ---------------------------------------------------------- /proc/<pid>/stat
def test_parse_task_stat_comm_with_spaces_and_parentheses() -> None:
    line = "4242 (CPU 0/TCG) R 1 2 3 4 5 6 7 8 9 10 1234 567 0 0 20 0 5 0 99"
    t = parse_task_stat(line)
    assert (t.tid, t.comm, t.utime, t.stime, t.ticks) == (4242, "CPU 0/TCG", 1234, 567, 1801)
    odd = parse_task_stat("7 (a) b (c)) S 1 2 3 4 5 6 7 8 9 10 11 12 0 0")
    assert (odd.comm, odd.utime, odd.stime) == ("a) b (c)", 11, 12)


def test_parse_task_stat_rejects_garbage() -> None:
    for bad in ("", "x (y) S 1", "12 (y) S 1 2 3", "12 (y) S 1 2 3 4 5 6 7 8 9 10 u s"):
        with pytest.raises(BenchError):
            parse_task_stat(bad)


def test_parse_task_stat_of_this_process_and_its_threads() -> None:
    """The real /proc of the test process: the process line and a thread."""
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="bench-test-worker")
    worker.start()
    try:
        me = parse_task_stat(Path(f"/proc/{os.getpid()}/stat").read_text())
        tasks = [
            parse_task_stat((t / "stat").read_text()) for t in Path(f"/proc/{os.getpid()}/task").iterdir()
        ]
    finally:
        stop.set()
        worker.join()
    assert me.tid == os.getpid()
    assert me.utime + me.stime >= 0
    assert any(t.tid == os.getpid() for t in tasks)
    assert len(tasks) >= 2
    assert thread_class(os.getpid(), next(t for t in tasks if t.tid == os.getpid())) == "main"


def test_thread_class() -> None:
    assert thread_class(100, TaskStat(100, "qemu-system-x86", 0, 0)) == "main"
    assert thread_class(100, TaskStat(101, "CPU 0/TCG", 0, 0)) == "vcpu"
    assert thread_class(100, TaskStat(102, "CPU 11/KVM", 0, 0)) == "vcpu"
    assert thread_class(100, TaskStat(105, "ALL CPUs/TCG", 0, 0)) == "vcpu"
    assert thread_class(100, TaskStat(103, "call_rcu", 0, 0)) == "other"
    assert thread_class(100, TaskStat(104, "worker", 0, 0)) == "other"


def _cpu(total: int, tasks: list[tuple[int, str, int]], wall: float, host: int = 0) -> CpuSnapshot:
    return CpuSnapshot(100, total, {t: TaskStat(t, c, ticks, 0) for t, c, ticks in tasks}, wall, host)


def test_cpu_delta_splits_by_thread_class() -> None:
    before = _cpu(1000, [(100, "qemu", 200), (101, "CPU 0/TCG", 300), (102, "CPU 1/TCG", 400)], 10.0, 5000)
    after = _cpu(
        1450,
        [(100, "qemu", 250), (101, "CPU 0/TCG", 450), (102, "CPU 1/TCG", 600), (105, "worker", 20)],
        12.0,
        5600,
    )
    d = cpu_delta(before, after, 100)
    assert d["main"] == pytest.approx(0.5)
    assert d["vcpu"] == pytest.approx(3.5)
    # the total (process line, 450 ticks) keeps the time of threads that
    # ended: "other" is what is not main or vcpu, at least the live workers' 20
    assert d["other"] == pytest.approx(0.5)
    assert d["total"] == pytest.approx(4.5)
    assert d["wall"] == pytest.approx(2.0)
    assert d["host_busy"] == pytest.approx(6.0)


def test_cpu_delta_rejects_mismatches() -> None:
    a = _cpu(100, [], 0.0)
    with pytest.raises(BenchError, match="backwards"):
        cpu_delta(a, _cpu(50, [], 1.0), 100)
    with pytest.raises(BenchError, match="different processes"):
        cpu_delta(a, CpuSnapshot(7, 200, {}, 1.0), 100)
    with pytest.raises(BenchError, match="tick rate"):
        cpu_delta(a, a, 0)


def test_parse_proc_stat_cpu() -> None:
    text = "cpu  100 5 50 1000 20 3 2 0 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\nintr 1 2\n"
    busy, total = parse_proc_stat_cpu(text)
    assert total == 100 + 5 + 50 + 1000 + 20 + 3 + 2
    assert busy == total - 1000 - 20
    assert parse_proc_stat_cpu(Path("/proc/stat").read_text())[1] > 0
    with pytest.raises(BenchError):
        parse_proc_stat_cpu("intr 1 2\n")


def test_parse_proc_stat_times_and_minus() -> None:
    t = parse_proc_stat_times("cpu  100 5 50 1000 20 3 7 1 0 0\n")
    assert t == CpuTimes(100, 5, 50, 1000, 20, 3, 7, 1)
    assert (t.total, t.busy) == (1186, 1186 - 1000 - 20)
    later = parse_proc_stat_times("cpu  150 5 80 1100 20 4 17 1 0 0\n")
    d = later.minus(t)
    assert (d.user, d.system, d.idle, d.softirq, d.busy) == (50, 30, 100, 10, 50 + 30 + 1 + 10)
    with pytest.raises(BenchError, match="went backwards"):
        t.minus(later)
    with pytest.raises(BenchError, match="short or bad cpu line"):
        parse_proc_stat_times("cpu 1 2 3\n")
    with pytest.raises(BenchError, match="no cpu line"):
        parse_proc_stat_times("cpu0 1 2 3 4 5 6 7 8\n")


def test_parse_irq_list() -> None:
    assert parse_irq_list("27\n28\n29\n") == [27, 28, 29]
    assert parse_irq_list("11") == [11]
    with pytest.raises(BenchError):
        parse_irq_list("")
    with pytest.raises(BenchError):
        parse_irq_list("27 x")


# ----------------------------------------------------------- guest snapshot
def snapshot_text(interrupts: str, root: str, peer: str) -> str:
    return f"@@interrupts\n{interrupts}@@netdev root\n{root}@@netdev peer\n{peer}"


def test_parse_snapshot_recorded_guest() -> None:
    s = parse_snapshot(
        snapshot_text(
            data("guest-proc-interrupts.txt"),
            data("guest-proc-net-dev-root.txt"),
            data("guest-proc-net-dev-peer.txt"),
        )
    )
    assert set(s.links) == {"eth0", "eth1"}  # lo of both namespaces left out
    assert s.irq_total([26, 27, 28, 29, 30]) == 1 + 357 + 19 + 1195 + 19
    assert s.irq_total([27, 999]) == 357  # an IRQ without a handler is not listed
    assert s.listed([27, 999]) == {27}
    assert s.cpu is None  # a snapshot without @@stat: no guest CPU figures


def test_parse_snapshot_with_the_guest_cpu_line() -> None:
    text = snapshot_text(
        data("guest-proc-interrupts.txt"),
        data("guest-proc-net-dev-root.txt"),
        data("guest-proc-net-dev-peer.txt"),
    )
    irq, _, rest = text.partition("@@netdev root\n")
    s = parse_snapshot(f"{irq}@@stat\ncpu  100 5 50 1000 20 3 7 1 0 0\n@@netdev root\n{rest}")
    assert s.cpu == CpuTimes(100, 5, 50, 1000, 20, 3, 7, 1)
    assert set(s.links) == {"eth0", "eth1"}
    with pytest.raises(BenchError, match="no cpu line"):
        parse_snapshot(f"{irq}@@stat\n\n")


def test_parse_snapshot_errors() -> None:
    irq, root = data("guest-proc-interrupts.txt"), data("guest-proc-net-dev-root.txt")
    with pytest.raises(BenchError, match="two network namespaces"):
        parse_snapshot(snapshot_text(irq, root, root))
    with pytest.raises(BenchError, match="without /proc/interrupts"):
        parse_snapshot(f"@@netdev root\n{root}")
    with pytest.raises(BenchError, match="unknown guest snapshot section"):
        parse_snapshot(f"@@interrupts\n{irq}@@bogus\n")
    with pytest.raises(BenchError, match="does not start with a section"):
        parse_snapshot("garbage\n@@interrupts\n" + irq)
    with pytest.raises(BenchError, match="no IRQs"):
        GuestSnapshot({}, {}).irq_total([])


def test_snapshot_shell_snippet_on_this_host() -> None:
    """The exact shell function the guest runs, run here on the host's own
    /proc, with this process standing in for the iperf3 server of netns
    "peer" (so both @@netdev sections show the same namespace)."""
    from nicbench import SNAPSHOT_SH

    out = subprocess.run(
        ["sh", "-c", f"BENCH_NS='peer:{os.getpid()}'; {SNAPSHOT_SH}; snap"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    assert out.startswith("@@interrupts\n")
    head, sep, peer = out.partition("@@netdev peer\n")
    assert sep and "@@netdev root\n" in head
    snap = parse_snapshot(head)
    assert set(snap.links) == set(parse_proc_net_dev(peer)) - {"lo"}
    assert all(count >= 0 for count in snap.interrupts.values())
    # the @@stat line is this host's own CPU accounting, read by the shell's `read`
    assert snap.cpu is not None and snap.cpu.total > 0
    assert snap.cpu.busy <= parse_proc_stat_times(Path("/proc/stat").read_text()).busy


@pytest.mark.parametrize(
    "namespaces",
    [[], ["peer"], ["vf0", "vf1"], ["vf0", "vwire"]],
)
def test_snapshot_shell_snippet_names_every_namespace(namespaces: list[str]) -> None:
    """One @@netdev section per "name:pid" of $BENCH_NS, in its order, after
    the root namespace's; each holds that pid's /proc/<pid>/net/dev."""
    from nicbench import SNAPSHOT_SH

    bench_ns = " ".join(f"{ns}:{os.getpid()}" for ns in namespaces)
    out = subprocess.run(
        ["sh", "-c", f"BENCH_NS='{bench_ns}'; {SNAPSHOT_SH}; snap"],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    ).stdout
    heads = [ln for ln in out.splitlines() if ln.startswith("@@")]
    assert heads == ["@@interrupts", "@@stat", "@@netdev root"] + [f"@@netdev {ns}" for ns in namespaces]
    mine = set(parse_proc_net_dev(Path(f"/proc/{os.getpid()}/net/dev").read_text()))
    for section in out.split("@@netdev ")[2:]:
        _, _, content = section.partition("\n")
        assert set(parse_proc_net_dev(content)) == mine


# --------------------------------------------------------------------- iperf3
def test_iperf3_figures_tcp() -> None:
    f = iperf3_figures(iperf("iperf3-tcp.json"))
    end = iperf("iperf3-tcp.json")["end"]["sum_received"]
    assert f["seconds"] == pytest.approx(end["seconds"])
    assert f["mbps"] == pytest.approx(end["bits_per_second"] / 1e6)
    assert f["payload_bytes"] == end["bytes"]
    assert f["mbps"] > 1


def test_iperf3_figures_udp() -> None:
    rep = iperf("iperf3-udp.json")
    f = iperf3_figures(rep)
    sent, recv = rep["end"]["sum_sent"], rep["end"]["sum_received"]
    assert rep["start"]["test_start"]["blksize"] == 18
    assert f["sent_pps"] == pytest.approx(sent["packets"] / sent["seconds"])
    delivered = recv["packets"] - recv["lost_packets"]
    assert f["delivered_pps"] == pytest.approx(delivered / sent["seconds"])
    assert 0 <= f["lost_pct"] < 100
    assert f["delivered_pps"] <= f["sent_pps"]


def test_iperf3_figures_errors() -> None:
    with pytest.raises(BenchError, match="Connection refused"):
        iperf3_figures(iperf("iperf3-refused.json"))
    with pytest.raises(BenchError, match="without start/end"):
        iperf3_figures({"start": {}})
    rep = iperf("iperf3-tcp.json")
    rep["start"]["test_start"]["protocol"] = "SCTP"
    with pytest.raises(BenchError, match="SCTP"):
        iperf3_figures(rep)


# ------------------------------------------------------------ sample figures
def _links(a: tuple[int, int], b: tuple[int, int]) -> dict[str, LinkStats]:
    """eth1/eth2 with (rx_packets, tx_packets)."""
    return {
        "eth1": LinkStats(0, a[0], 0, 0, 0, 0, a[1], 0, 0),
        "eth2": LinkStats(0, b[0], 0, 0, 0, 0, b[1], 0, 0),
    }


def test_wire_frames_takes_the_larger_count_per_direction() -> None:
    # sender counted a TSO burst as one frame (tx 10) but 300 arrived;
    # 150 ACKs the other way, of which the receiver dropped none
    delta = _links(a=(150, 10), b=(300, 150))
    assert wire_frames(delta, "eth1", "eth2") == 300 + 150
    # the receiver dropped 40 of 100 UDP frames: the sender's count wins
    delta = _links(a=(0, 100), b=(60, 0))
    assert wire_frames(delta, "eth1", "eth2") == 100


def test_sample_figures_b2b() -> None:
    before = GuestSnapshot({30: 100, 31: 50, 33: 7}, _links((0, 0), (0, 0)))
    after = GuestSnapshot({30: 300, 31: 250, 33: 107}, _links((1000, 200), (4000, 1000)))
    path = TrafficPath("b2b", ("eth1", "eth2"), (30, 31, 32, 33))  # 32: no handler
    cpu = {"total": 2.5, "main": 0.5, "vcpu": 2.0, "other": 0.0, "wall": 2.0, "host_busy": 3.0}
    iperf_f = {"seconds": 2.0, "mbps": 100.0, "payload_bytes": 25e6}
    f = sample_figures(path, before, after, cpu, iperf_f)
    frames = 4000 + 1000
    assert f["irqs"] == 500
    assert f["irq_per_s"] == 250
    assert f["frames"] == frames
    assert f["frames_per_s"] == frames / 2
    assert f["irq_per_frame"] == pytest.approx(500 / frames)
    assert f["cpu_us_per_frame"] == pytest.approx(2.5e6 / frames)
    assert f["cpu_main_us_per_frame"] == pytest.approx(0.5e6 / frames)
    assert f["cpu_ms_per_mb"] == pytest.approx(2500 / 25)
    assert f["cpu_pct"] == pytest.approx(125.0)
    assert f["host_other_cpu_pct"] == pytest.approx(25.0)
    assert f["mbps"] == 100.0


def test_sample_figures_guest_cpu_per_mb() -> None:
    """The guest's busy and softirq time per MB received, from its
    /proc/stat at both ends (USER_HZ ticks), and the vCPU threads' host
    CPU time per MB; none of the guest's figures without its CPU line."""
    links = _links((0, 0), (0, 0))
    after_links = _links((100, 1000), (1000, 100))
    path = TrafficPath("b2b", ("eth1", "eth2"), (30,))
    cpu = {"total": 3.0, "main": 0.5, "vcpu": 2.5, "other": 0.0, "wall": 2.0}
    it = {"seconds": 2.0, "mbps": 80.0, "payload_bytes": 20e6}
    t0 = CpuTimes(100, 0, 100, 1000, 0, 0, 50, 0)
    t1 = CpuTimes(150, 0, 160, 1040, 0, 0, 90, 0)  # 50 + 60 + 40 busy ticks, 40 of them softirq
    f = sample_figures(path, GuestSnapshot({30: 0}, links, t0), GuestSnapshot({30: 9}, after_links, t1), cpu, it)
    assert f["guest_busy_s"] == pytest.approx(1.5)
    assert f["guest_softirq_s"] == pytest.approx(0.4)
    assert f["guest_busy_ms_per_mb"] == pytest.approx(1500 / 20)
    assert f["guest_softirq_ms_per_mb"] == pytest.approx(400 / 20)
    assert f["cpu_vcpu_ms_per_mb"] == pytest.approx(2500 / 20)
    assert f["cpu_ms_per_mb"] == pytest.approx(3000 / 20)
    f = sample_figures(path, GuestSnapshot({30: 0}, links), GuestSnapshot({30: 9}, after_links, t1), cpu, it)
    assert "guest_busy_s" not in f and "guest_busy_ms_per_mb" not in f
    with pytest.raises(BenchError, match="went backwards"):
        sample_figures(path, GuestSnapshot({30: 0}, links, t1), GuestSnapshot({30: 9}, after_links, t0), cpu, it)


def test_sample_figures_slirp_has_no_per_frame_figures() -> None:
    links = {"eth0": LinkStats(0, 0, 0, 0, 0, 0, 0, 0, 0)}
    after_links = {"eth0": LinkStats(0, 900, 0, 2, 1, 0, 30, 0, 0)}
    path = TrafficPath("slirp", ("eth0",), (27, 28))
    cpu = {"total": 1.0, "main": 0.6, "vcpu": 0.4, "other": 0.0, "wall": 1.0}
    f = sample_figures(
        path,
        GuestSnapshot({27: 0, 28: 0}, links),
        GuestSnapshot({27: 10, 28: 10}, after_links),
        cpu,
        {"seconds": 1.0, "mbps": 8.0, "payload_bytes": 1e6},
    )
    assert "irq_per_frame" not in f and "cpu_us_per_frame" not in f
    assert f["irq_per_mb"] == 20
    assert f["rx_dropped"] == 3
    assert "host_other_cpu_pct" not in f


@pytest.mark.parametrize("kind", ["vf-vf", "vf-wire"])
def test_sample_figures_vf_paths_count_frames_between_their_two_ports(kind: str) -> None:
    """VF paths are pairs like b2b: frames from the sender's and the
    receiver's counters, per frame figures from them."""
    before = GuestSnapshot({40: 10, 41: 0}, _links((0, 0), (0, 0)))
    after = GuestSnapshot({40: 70, 41: 40}, _links((300, 6000), (5900, 250)))
    path = TrafficPath(kind, ("eth1", "eth2"), (40, 41))
    cpu = {"total": 3.0, "main": 1.0, "vcpu": 2.0, "other": 0.0, "wall": 2.0}
    f = sample_figures(path, before, after, cpu, {"seconds": 2.0, "mbps": 50.0, "payload_bytes": 12e6})
    frames = max(6000, 5900) + max(250, 300)
    assert f["frames"] == frames
    assert f["irqs"] == 100
    assert f["irq_per_frame"] == pytest.approx(100 / frames)
    assert f["cpu_us_per_frame"] == pytest.approx(3e6 / frames)
    assert f["cpu_main_us_per_frame"] == pytest.approx(1e6 / frames)


def test_sample_figures_unknown_path_kind_has_no_frames() -> None:
    links = _links((0, 0), (0, 0))
    after = _links((10, 10), (10, 10))
    path = TrafficPath("slirp", ("eth1", "eth2"), (40,))
    cpu = {"total": 1.0, "main": 0.5, "vcpu": 0.5, "other": 0.0, "wall": 1.0}
    f = sample_figures(
        path, GuestSnapshot({40: 0}, links), GuestSnapshot({40: 1}, after), cpu, {"seconds": 1.0, "payload_bytes": 1.0}
    )
    assert "frames" not in f
    assert set(PAIR_KINDS) == {"b2b", "vf-vf", "vf-wire"}


def test_sample_figures_rejects_moved_irqs() -> None:
    links = _links((0, 0), (0, 0))
    path = TrafficPath("b2b", ("eth1", "eth2"), (30, 31))
    cpu = {"total": 1.0, "main": 0.5, "vcpu": 0.5, "other": 0.0, "wall": 1.0}
    it = {"seconds": 1.0, "mbps": 1.0, "payload_bytes": 1.0}
    with pytest.raises(BenchError, match="changed during the sample"):
        sample_figures(path, GuestSnapshot({30: 1, 31: 1}, links), GuestSnapshot({30: 5}, links), cpu, it)
    with pytest.raises(BenchError, match="none of the device's IRQs"):
        sample_figures(path, GuestSnapshot({}, links), GuestSnapshot({}, links), cpu, it)
    with pytest.raises(BenchError, match="ran 0"):
        sample_figures(
            path, GuestSnapshot({30: 1}, links), GuestSnapshot({30: 1}, links), cpu, {**it, "seconds": 0}
        )


# -------------------------------------------------------------------- tables
def test_fmt_value() -> None:
    assert fmt_value(12345.6) == "12,346"
    assert fmt_value(123.4) == "123"
    assert fmt_value(12.34) == "12.3"
    assert fmt_value(1.234) == "1.23"
    assert fmt_value(0.01234) == "0.0123"
    assert fmt_value(0) == "0"
    assert fmt_value(math.nan) == "n/a"


def test_fmt_summary() -> None:
    assert fmt_summary(None) == "-"
    assert fmt_summary(Summary(1, 5.0, 5.0, 5.0)) == "5.00"
    assert fmt_summary(Summary(3, 200.0, 180.0, 220.0)) == "200 ±10%"


def test_ratio_table_layout_and_ratios() -> None:
    rows = [
        Row(
            "TCP, Mbit/s",
            {"ixgbe": Summary(3, 200, 190, 210), "igb": Summary(3, 100, 100, 100), "e1000e": None},
        ),
        Row(
            "IRQ/s",
            {
                "ixgbe": Summary(1, 50, 50, 50),
                "igb": Summary(1, 200, 200, 200),
                "e1000e": Summary(1, 25, 25, 25),
            },
        ),
    ]
    table = ratio_table("== Test", rows, ["ixgbe", "igb", "e1000e"], "ixgbe", note="a note")
    # ratios of medians (200/100, 50/200, 50/25); "-" where a model has no
    # samples; cells right-aligned, labels left-aligned
    assert table.splitlines() == [
        "== Test",
        "               ixgbe      igb  e1000e  ixgbe/igb  ixgbe/e1000e",
        "-----------  -------  -------  ------  ---------  ------------",
        "TCP, Mbit/s  200 ±5%  100 ±0%       -       2.00             -",
        "IRQ/s           50.0      200    25.0       0.25          2.00",
        "a note",
    ]


def test_ratio_table_prints_why_a_model_has_no_value() -> None:
    """A model absent by design shows the reason in its value and ratio
    cells; a model without samples still shows "-"."""
    rows = [
        Row(
            "VF TCP, Mbit/s",
            {"ixgbe": Summary(1, 90, 90, 90), "igb": Summary(1, 60, 60, 60), "e1000e": None, "virtio-net": None},
            {"e1000e": "no VFs"},
        )
    ]
    table = ratio_table("== T", rows, ["ixgbe", "igb", "e1000e", "virtio-net"], "ixgbe")
    cells = table.splitlines()[-1].split()
    assert cells[3:] == ["90.0", "60.0", "no", "VFs", "-", "1.50", "no", "VFs", "-"]


def test_reference_table_puts_every_model_against_the_reference() -> None:
    rows = [
        Row(
            "TCP, Mbit/s",
            {"ixgbe": Summary(3, 200, 190, 210), "igb": Summary(3, 100, 100, 100), "virtio-net": None},
        ),
        Row(
            "ms/MB",
            {"ixgbe": Summary(1, 5, 5, 5), "igb": Summary(1, 20, 20, 20), "virtio-net": Summary(1, 30, 30, 30)},
        ),
    ]
    table = reference_table("== Test", rows, ["ixgbe", "igb", "virtio-net"], "igb")
    assert table.splitlines() == [
        "== Test",
        "               ixgbe      igb  virtio-net  ixgbe/igb  virtio-net/igb",
        "-----------  -------  -------  ----------  ---------  --------------",
        "TCP, Mbit/s  200 ±5%  100 ±0%           -       2.00               -",
        "ms/MB           5.00     20.0        30.0       0.25            1.50",
    ]
    with pytest.raises(BenchError, match="not one of the models"):
        reference_table("t", rows, ["ixgbe"], "igb")


RSC_BEFORE = "     hw_rsc_aggregated: 1000\n     hw_rsc_flushed: 400\n"


def test_rsc_figures_segments_per_aggregate() -> None:
    """hw_rsc_flushed counts aggregates, hw_rsc_aggregated the segments
    beyond the first in them."""
    after = "     hw_rsc_aggregated: 4000\n     hw_rsc_flushed: 1400\n"
    assert rsc_figures(RSC_BEFORE, after) == {
        "rsc_aggregates": 1000.0,
        "rsc_segments_added": 3000.0,
        "rsc_segments_per_aggregate": pytest.approx(4.0),
    }
    # LRO off: nothing coalesced, no segments per aggregate to speak of
    assert rsc_figures(RSC_BEFORE, RSC_BEFORE) == {"rsc_aggregates": 0.0, "rsc_segments_added": 0.0}


@pytest.mark.parametrize(
    "after,match",
    [
        ("     hw_rsc_flushed: 500\n", "shows no"),
        ("     hw_rsc_aggregated: 900\n     hw_rsc_flushed: 500\n", "went backwards"),
        ("     hw_rsc_aggregated: x\n     hw_rsc_flushed: 500\n", "non-numeric"),
    ],
)
def test_rsc_figures_errors(after: str, match: str) -> None:
    with pytest.raises(BenchError, match=match):
        rsc_figures(RSC_BEFORE, after)


def test_ratio_table_needs_the_subject() -> None:
    with pytest.raises(BenchError, match="not one of the models"):
        ratio_table("t", [], ["igb"], "ixgbe")


# ------------------------------------------------------------ driver facts
def test_driver_facts_recorded_ixgbe_and_virtio() -> None:
    ixgbe = driver_facts(data("guest-ethtool-ixgbe.txt"))
    assert ixgbe == {
        "driver": "ixgbe",
        "version": "6.1.0-56-amd64",
        "coalesce": {"rx-usecs": "1", "tx-usecs": "0"},
        "offloads": {
            "rx-checksumming": "on",
            "tx-checksumming": "on",
            "tcp-segmentation-offload": "on",
            "generic-segmentation-offload": "on",
            "generic-receive-offload": "on",
            "large-receive-offload": "off",
        },
        "combined_queues": "2",
    }
    virtio = driver_facts(data("guest-ethtool-virtio_net.txt"))
    # slirp gives virtio-net no vnet header: no checksum or TSO offload
    assert virtio["offloads"]["tx-checksumming"] == "off"
    assert virtio["offloads"]["tcp-segmentation-offload"] == "off"
    assert virtio["coalesce"] == {"rx-usecs": "0", "rx-frames": "1", "tx-usecs": "0", "tx-frames": "1"}
    assert virtio["combined_queues"] == "1"


def test_driver_facts_needs_four_outputs() -> None:
    with pytest.raises(BenchError, match="expected 4 ethtool outputs"):
        driver_facts("driver: x\n@@\n")
