"""Unit tests of the DPDK forwarding benchmark's pure parts (dpdkbenchlib)."""

from __future__ import annotations

import dataclasses

import pytest

from benchlib import BenchError, Summary
from dpdkbenchlib import (
    MODELS,
    TRACE_METRICS,
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
from ixgbe_testlib.testpmd import PortStats
from mmiotrace import count_mmio, parse_zones

# one port's block of `show port stats all` as DPDK 22.11's testpmd prints
# it, without its rates (ixgbe_testlib.testpmd's parser is tested, on the
# whole output, in tests/e2e/test_testpmd_parsers.py)
COUNTERS = """
  ######################## NIC statistics for port 1  ########################
  RX-packets: 1200290    RX-missed: 2          RX-bytes:  72017400
  RX-errors: 1
  RX-nombuf:  3         
  TX-packets: 1200200    TX-errors: 4          TX-bytes:  72012000
"""
RATES = """
  Throughput (since last show)
  Rx-pps:        40009          Rx-bps:     19204320
  Tx-pps:        40006          Tx-bps:     19202880
  ############################################################################
"""


def stats(rx: int, tx: int, lost: int = 0, pps: int = 0) -> PortStats:
    return PortStats(rx, lost, rx * 60, 0, 0, tx, 0, tx * 60, pps, pps)


def test_port_stats_with_rates() -> None:
    s = port_stats(COUNTERS + RATES)
    assert s == {1: PortStats(1200290, 2, 72017400, 1, 3, 1200200, 4, 72012000, 40009, 40006)}


def test_port_stats_cut_short_is_an_error() -> None:
    with pytest.raises(BenchError, match="port 1: no rx_pps, tx_pps"):
        port_stats(COUNTERS)
    with pytest.raises(BenchError, match="port 1: no tx_bytes"):
        port_stats(COUNTERS.replace("TX-bytes", "TX-octets") + RATES)
    assert port_stats("testpmd> ") == {}


def test_parse_probed() -> None:
    text = (
        "EAL: Probe PCI driver: net_e1000_igb (8086:10c9) device: 0000:01:00.0 (socket -1)\n"
        "EAL: Probe PCI driver: net_e1000_igb (8086:10c9) device: 0000:02:00.0 (socket -1)\n"
        "EAL: Probe PCI driver: net_virtio (1af4:1001) device: 0000:00:03.0 (socket -1)\n"
    )
    assert parse_probed(text, "net_e1000_igb") == ["0000:01:00.0", "0000:02:00.0"]
    assert parse_probed(text, "net_ixgbe") == []


def test_window_figures() -> None:
    before = {0: stats(1000, 1000), 1: stats(1000, 1000)}
    after = {0: stats(41000, 41010, pps=4000), 1: stats(41005, 40995, pps=4001)}
    f = window_figures(before, after, 10.0, {"total": 2.0, "main": 0.5, "vcpu": 1.5}, flight=64)
    assert f["packets"] == 80005
    assert f["fwd_pps"] == pytest.approx(8000.5)
    assert f["tx_pps"] == pytest.approx(8000.5)
    assert f["testpmd_pps"] == 8001
    # port 0 sent 40010, port 1 got 40005; port 1 sent 39995, port 0 got 40000
    assert f["crosscheck"] == pytest.approx(5 / 80005)
    assert f["lost"] == 0
    assert f["cpu_pct"] == pytest.approx(20.0)
    assert f["us_per_pkt"] == pytest.approx(2e6 / 80005)
    assert f["main_us_per_pkt"] == pytest.approx(0.5e6 / 80005)
    assert f["vcpu_us_per_pkt"] == pytest.approx(1.5e6 / 80005)
    assert "us_per_pkt" not in window_figures(before, after, 10.0, None, flight=64)


def test_window_figures_counts_losses() -> None:
    before = {0: stats(0, 0), 1: stats(0, 0)}
    after = {0: stats(100, 100, lost=3), 1: stats(100, 100, lost=2)}
    assert window_figures(before, after, 1.0)["lost"] == 5


def test_window_figures_rejects_bad_windows() -> None:
    zero = {0: stats(5, 5), 1: stats(5, 5)}
    with pytest.raises(BenchError, match="no packets forwarded"):
        window_figures(zero, zero, 5.0)
    with pytest.raises(BenchError, match="backwards"):
        window_figures({0: stats(10, 10), 1: stats(10, 10)}, {0: stats(9, 20), 1: stats(20, 20)}, 5.0, flight=64)
    with pytest.raises(BenchError, match="port 1 missing"):
        window_figures({0: stats(0, 0)}, {0: stats(9, 9)}, 5.0)
    with pytest.raises(BenchError, match="window of 0"):
        window_figures(zero, zero, 0.0)
    # statistics without testpmd's rates (port_stats() asks for them)
    no_rates = {0: dataclasses.replace(stats(50, 50), rx_pps=None), 1: stats(50, 50)}
    with pytest.raises(BenchError, match="no Rx-pps"):
        window_figures(zero, no_rates, 5.0, flight=64)
    # port 0 sent 1000 that port 1 never counted: more than the 64 in flight + 1% of 1000
    with pytest.raises(BenchError, match="disagree by 1000"):
        window_figures({0: stats(0, 0), 1: stats(0, 0)}, {0: stats(500, 1500), 1: stats(500, 500)}, 5.0, flight=64)
    # counters read a moment apart: 64 in flight + 1% of 200000 packets (2064) passes, 2065 does not
    ok = {0: stats(100000, 100000 + 2064), 1: stats(100000, 100000 - 2064)}
    zero0 = {0: stats(0, 0), 1: stats(0, 0)}
    assert window_figures(zero0, ok, 1.0, flight=64)["crosscheck"] == 2064 / 2e5
    bad = {0: stats(100000, 100000 + 2065), 1: stats(100000, 100000 - 2065)}
    with pytest.raises(BenchError, match="disagree by 2065"):
        window_figures(zero0, bad, 1.0, flight=64)


def test_in_flight() -> None:
    assert in_flight(1) == 64
    assert in_flight(4) == 256


TRACE = """\
123@1700000000.000001:memory_region_ops_write cpu 1 mr 0x55d0 addr 0x6018 value 0x1f size 4 name 'ixgbe-mmio'
123@1700000000.000002:memory_region_ops_write cpu 1 mr 0x55d0 addr 0x1018 value 0x1f size 4 name 'ixgbe-mmio'
123@1700000000.000003:memory_region_ops_write cpu 1 mr 0x55d0 addr 0x6018 value 0x3f size 4 name 'ixgbe-mmio'
123@1700000000.000004:memory_region_ops_read cpu 0 mr 0x55e0 addr 0xf0 value 0x0 size 4 name 'hpet'
123@1700000000.000005:memory_region_ops_read cpu 1 mr 0x55d0 addr 0xfe000008 value 0x0 size 4 name 'ixgbe-mmio'
123@1700000000.000006:memory_region_ops_write cpu 1 mr 0x55f0 addr 0xfe206018 value 0x7 size 4 name 'ixgbe-mmio'
123@1700000000.000006:ixgbe_rx_tail rxq 0 tail 31
"""


def test_count_mmio_and_figures() -> None:
    # without BAR sizes, registers are counted at the address the trace gives
    raw = count_mmio(TRACE)
    assert raw.by_region == {"ixgbe-mmio": {"read": 1, "write": 4}, "hpet": {"read": 1, "write": 0}}
    assert raw.at("ixgbe-mmio", "write", (0x6018,)) == 2
    assert raw.at("ixgbe-mmio", "read", (0x8,)) == 0
    # with them, at their offset in the BAR: the second port's (BAR at 0xfe200000) TDT adds up
    c = count_mmio(TRACE, {"ixgbe-mmio": 0x20000})
    assert c.by_region == raw.by_region
    assert c.at("ixgbe-mmio", "write", (0x6018,)) == 3
    assert c.at("ixgbe-mmio", "read", (0x8,)) == 1
    ixgbe = next(m for m in MODELS if m.name == "ixgbe")
    f = mmio_figures(c, ixgbe, 64)
    assert f["nic_writes_per_pkt"] == 4 / 64
    assert f["nic_reads_per_pkt"] == 1 / 64
    assert f["tx_tail_writes_per_pkt"] == 3 / 64
    assert f["rx_tail_writes_per_pkt"] == 1 / 64
    assert f["all_mmio_per_pkt"] == 6 / 64
    # without the device's zones, every access exits
    assert f["nic_exits_per_pkt"] == 5 / 64
    assert f["top_registers"][0] == {
        "region": "ixgbe-mmio",
        "op": "write",
        "offset": "0x06018",
        "per_pkt": 3 / 64,
        "exits": True,
    }
    # igb's tails are elsewhere: none of these
    igb = next(m for m in MODELS if m.name == "igb")
    assert mmio_figures(c, igb, 64)["tx_tail_writes_per_pkt"] == 0
    with pytest.raises(BenchError):
        mmio_figures(c, ixgbe, 0)


def test_mmio_figures_with_the_coalesced_zones() -> None:
    c = count_mmio(TRACE, {"ixgbe-mmio": 0x20000})
    zones = parse_zones("ixgbe_coalesced_zone ixgbe-mmio: writes to 0x01000+0x1000 may be coalesced\n")
    ixgbe = next(m for m in MODELS if m.name == "ixgbe")
    f = mmio_figures(c, ixgbe, 64, zones)
    # the RX tail write (0x01018) is coalesced; 3 TX tail writes and the read exit
    assert f["nic_exits_per_pkt"] == 4 / 64
    assert f["nic_writes_per_pkt"] == 4 / 64
    assert f["coalesced_zones"] == {"ixgbe-mmio": [[0x1000, 0x1000]]}
    exits = {(t["region"], t["op"], t["offset"]): t["exits"] for t in f["top_registers"]}
    assert exits[("ixgbe-mmio", "write", "0x06018")] is True
    assert exits[("ixgbe-mmio", "write", "0x01018")] is False
    assert exits[("hpet", "read", "0x000f0")] is True
    # the trace table shows the exits with the ratio
    assert "nic_exits_per_pkt" in [m.figure for m in TRACE_METRICS]
    igb = next(m for m in MODELS if m.name == "igb")
    traces = {"ixgbe": f, "igb": {**mmio_figures(c, igb, 64, zones), "nic_exits_per_pkt": 8 / 64}}
    out = render({}, traces, ["ixgbe", "igb"])
    line = next(ln for ln in out.splitlines() if ln.startswith("NIC accesses that would exit under KVM/packet"))
    assert line.split()[-1] == "0.50"


def test_parse_args_defaults_and_quick() -> None:
    a = parse_args([])
    assert [m.name for m in a.models] == ["ixgbe", "igb"]
    assert (a.reps, a.seconds, a.warmup, a.trace_seconds, a.tx_bursts) == (5, 10, 3, 3, 4)
    q = parse_args(["--quick", "--seconds", "4"])
    assert (q.reps, q.seconds, q.warmup, q.trace_seconds) == (3, 4, 2, 2)
    # ixgbe is always in, first
    assert [m.name for m in parse_args(["--models", "e1000e,igb"]).models] == ["ixgbe", "e1000e", "igb"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--reps", "0"],
        ["--seconds", "0"],
        ["--tx-bursts", "17"],
        ["--trace-seconds", "-1"],
        ["--models", "ixgbe"],
        ["--models", "virtio-net"],
        ["--bogus"],
    ],
)
def test_parse_args_rejects(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def windows(ixgbe: list[float], igb: list[float]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for model, vals in (("ixgbe", ixgbe), ("igb", igb)):
        for i, v in enumerate(vals):
            out.append({"model": model, "rep": i, "ok": True, "figures": {"fwd_pps": v, "us_per_pkt": 1e6 / v}})
    return out


def test_summaries_skip_failed_windows() -> None:
    ws = windows([80e3, 90e3, 85e3], [50e3, 40e3])
    ws.append({"model": "igb", "rep": 2, "ok": False, "figures": {}, "error": "gone"})
    s = summaries(ws)
    assert s["fwd_pps"]["ixgbe"] == Summary(3, 85e3, 80e3, 90e3)
    assert s["fwd_pps"]["igb"] == Summary(2, 45e3, 40e3, 50e3)
    assert ratios(s, ["ixgbe", "igb"])["fwd_pps"]["ixgbe/igb"] == pytest.approx(85 / 45)


def test_verdict() -> None:
    r, line = verdict(summaries(windows([80e3, 84e3], [50e3, 54e3])))
    assert r == pytest.approx(82 / 52)
    assert "NOT reached, 1.58x (range 1.48-1.68)" in line
    assert "ixgbe needs 27% more" in line
    r, line = verdict(summaries(windows([120e3], [50e3])))
    assert r == pytest.approx(2.4) and "reached, 2.40x" in line and "NOT" not in line
    r, line = verdict(summaries(windows([120e3], [])))
    assert r is None and "not measured" in line


def test_render_shows_ratio_and_missing_model() -> None:
    s = summaries(windows([80e3, 90e3, 85e3], [50e3, 40e3, 45e3]))
    text = render(s, {}, ["ixgbe", "igb", "e1000e"])
    line = next(ln for ln in text.splitlines() if ln.startswith("io forwarding"))
    # ixgbe 85 kpps ±6%, igb 45 ±11%, e1000e not measured, ratios 1.89 and -
    assert line.split()[-7:] == ["85.0", "±6%", "45.0", "±11%", "-", "1.89", "-"]
    assert "per packet, one window" not in text
    trace = {"ixgbe": {"nic_writes_per_pkt": 0.0625, "trace_fwd_pps": 20e3}, "igb": {"nic_writes_per_pkt": 0.125}}
    text = render(s, trace, ["ixgbe", "igb"])
    line = next(ln for ln in text.splitlines() if ln.startswith("NIC register writes/packet"))
    assert line.split()[-3:] == ["0.0625", "0.125", "0.50"]
