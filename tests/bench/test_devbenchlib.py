"""Unit tests of the device-model benchmark's pure parts (devbenchlib.py) and
of the runner's argument checks and qtest client (devbench.py): frames,
descriptors, register programs, qtest lines and their replay relocation,
PCI decoding, the trace-log, callgrind and perf parsers, per-window
figures, statistics, ratios and the table. Nothing here starts QEMU."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from benchlib import BenchError, Summary
from devbench import Qtest, parse_args
from devmem import configs, fits_of
from devmem import parse_args as mem_parse_args
from devbenchlib import (
    MEM_METRICS,
    MemFit,
    MassifSnapshot,
    fit_per_device,
    massif_sites,
    ols_slope,
    parse_massif,
    parse_smaps_rollup,
    ratio_range,
    render_memory_table,
    render_points_table,
    site_deltas,
    theil_sen,
    DEVICE_ENTRIES,
    DEVICE_MAC,
    METRICS,
    MODELS,
    Cell,
    Expect,
    Profile,
    Relocation,
    RingLayout,
    SetBits,
    Step,
    TraceCounts,
    Window,
    Write,
    adv_tx_desc,
    add_windows,
    all_ratios,
    bar_info,
    cf8,
    cmd_clock_step,
    cmd_memread,
    cmd_memwrite,
    cmd_readl,
    cmd_writel,
    count_figures,
    e1000e_eitr,
    entry_cost,
    file_class,
    fn_base,
    igb_eitr,
    ip_checksum,
    ixgbe_eitr,
    legacy_tx_desc,
    mac_ral_rah,
    msix_cap,
    null_command,
    paired_ratios,
    parse_callgrind,
    parse_cell,
    parse_memread,
    parse_perf_instructions,
    parse_reply,
    parse_trace,
    perf_supported,
    profile_delta,
    ratio_summary,
    render_table,
    rx_done,
    setup_ops,
    summarize_samples,
    tx_done,
    udp_frame,
    window_figures,
)

LAY = RingLayout(tx_ring=0x100000, rx_ring=0x110000, tx_bufs=0x200000, rx_bufs=0x600000, ndesc=256)


# ------------------------------------------------------------------ frames
@pytest.mark.parametrize("size", [60, 64, 1514])
def test_udp_frame_checksums_verify(size: int) -> None:
    f = udp_frame(size, seq=7)
    assert len(f) == size
    assert f[:6] == DEVICE_MAC and f[12:14] == b"\x08\x00"
    ip = f[14:34]
    assert ip_checksum(ip) == 0  # a correct header sums to 0xffff
    udp = f[34:]
    pseudo = ip[12:20] + struct.pack("!BBH", 0, 17, len(udp))
    assert ip_checksum(pseudo + udp) == 0
    assert struct.unpack("!H", f[38:40])[0] == len(udp)


@pytest.mark.parametrize("size", [59, 1515])
def test_udp_frame_rejects_sizes(size: int) -> None:
    with pytest.raises(BenchError):
        udp_frame(size)


def test_ip_checksum_known_header() -> None:
    # the classic example header (checksum field zeroed): 0xb861
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert ip_checksum(hdr) == 0xB861
    assert ip_checksum(b"\x01") == ~0x0100 & 0xFFFF  # odd length is padded


# ------------------------------------------------------------- descriptors
def test_advanced_tx_descriptor_layout() -> None:
    d = adv_tx_desc(0x1234_5678_9ABC, 1514)
    addr, cmd, olinfo = struct.unpack("<QII", d)
    assert addr == 0x1234_5678_9ABC
    assert cmd & 0xFFFF == 1514
    assert (cmd >> 20) & 0xF == 0x3  # DTYP data
    assert cmd & (1 << 29) and cmd & (1 << 24) and cmd & (1 << 25) and cmd & (1 << 27)  # DEXT EOP IFCS RS
    assert olinfo >> 14 == 1514  # PAYLEN
    assert not tx_done(d)
    done = bytearray(d)
    done[12] |= 1
    assert tx_done(bytes(done))


def test_legacy_tx_descriptor_layout() -> None:
    d = legacy_tx_desc(0x2000, 60, ide=True)
    addr, lower, upper = struct.unpack("<QII", d)
    assert (addr, lower & 0xFFFF, upper) == (0x2000, 60, 0)
    assert lower & (1 << 24) and lower & (1 << 25) and lower & (1 << 27) and lower & (1 << 31)
    assert not legacy_tx_desc(0x2000, 60, ide=False)[11] & 0x80
    with pytest.raises(BenchError):
        legacy_tx_desc(0, 0, ide=False)
    with pytest.raises(BenchError):
        adv_tx_desc(0, 1 << 16)


def test_rx_write_back_decoding() -> None:
    wb = struct.pack("<IIIHH", 0, 0, 0x3, 1514, 0)  # DD|EOP, length 1514
    assert rx_done(wb) == (True, 1514)
    assert rx_done(struct.pack("<IIIHH", 0, 0, 0x2, 60, 0)) == (False, 60)
    for m in MODELS.values():
        assert m.rx_desc(0xABC000) == struct.pack("<QQ", 0xABC000, 0)


def test_model_descriptor_formats() -> None:
    assert MODELS["ixgbe"].tx_desc(0x1000, 60) == adv_tx_desc(0x1000, 60)
    assert MODELS["igb"].tx_desc(0x1000, 60) == adv_tx_desc(0x1000, 60)
    assert MODELS["e1000e"].tx_desc(0x1000, 60) == legacy_tx_desc(0x1000, 60, ide=True)


# ------------------------------------------------------- register programs
def test_itr_encodings_follow_the_drivers() -> None:
    # ethtool -C rx-usecs 50, as each Linux driver writes it
    assert ixgbe_eitr(50) == 200 | (1 << 31)  # IXGBE_20K_ITR with CNT_WDIS
    assert ((ixgbe_eitr(50) & 0xFF8) >> 3) * 2 == 50  # the 82599 reads 2 us units
    assert igb_eitr(50) == 200 | (1 << 31)
    assert e1000e_eitr(50) == 195  # 1e9 / (20000 * 256)
    assert e1000e_eitr(0) == 0 and ixgbe_eitr(0) & 0xFFF == 0


def test_mac_ral_rah() -> None:
    assert mac_ral_rah(DEVICE_MAC) == (0x12005452, 0x5634)
    with pytest.raises(BenchError):
        mac_ral_rah(b"\0" * 5)


@pytest.mark.parametrize("model", ["ixgbe", "igb", "e1000e"])
def test_setup_programs(model: str) -> None:
    ops = setup_ops(model, LAY, 50)
    m = MODELS[model]
    writes = {op.reg: op.value for op in ops if isinstance(op, Write)}
    assert all(isinstance(op, (Write, SetBits, Step, Expect)) for op in ops)
    # the rings where the layout puts them, all but one RX descriptor handed over
    assert LAY.rx_ring & 0xFFFFFFFF in writes.values() and LAY.tx_ring & 0xFFFFFFFF in writes.values()
    assert writes[m.rdt] == LAY.ndesc - 1
    assert writes[m.tdt] == 0
    assert LAY.ndesc * 16 in writes.values()
    # the RX tail goes last among the ring registers: after the ring is enabled
    rdt_last = max(i for i, op in enumerate(ops) if isinstance(op, Write) and op.reg == m.rdt)
    base_lo = next(i for i, op in enumerate(ops) if isinstance(op, Write) and op.value == LAY.rx_ring)
    assert rdt_last > base_lo
    # the vector re-enable register is written at setup too (interrupts unmasked)
    assert m.rx_irq_enable[0] in writes and m.tx_irq_enable[0] in writes
    ral, rah = mac_ral_rah(DEVICE_MAC)
    assert ral in writes.values() and rah | (1 << 31) in writes.values()
    assert all(op.note for op in ops)


def test_setup_rejects_bad_input() -> None:
    with pytest.raises(BenchError):
        setup_ops("virtio", LAY, 50)
    with pytest.raises(BenchError):
        setup_ops("ixgbe", RingLayout(0, 0, 0, 0, 12), 50)
    with pytest.raises(BenchError):
        setup_ops("ixgbe", LAY, 50, 128)


def test_setup_ixgbe_rx_wthresh() -> None:
    def rxdctl(ops: list[Any]) -> int:
        return next(op.value for op in ops if isinstance(op, Write) and op.reg == 0x01028)

    assert rxdctl(setup_ops("ixgbe", LAY, 50)) == 1 << 25
    assert rxdctl(setup_ops("ixgbe", LAY, 50, 8)) == (1 << 25) | (8 << 16)
    # the other models do not take it
    assert setup_ops("igb", LAY, 50, 8) == setup_ops("igb", LAY, 50)


def test_ring_layout_buffers_wrap() -> None:
    assert LAY.tx_buf(0) == LAY.tx_bufs and LAY.tx_buf(257) == LAY.tx_bufs + 2048
    assert LAY.rx_buf(255) == LAY.rx_bufs + 255 * 2048


def test_models_table() -> None:
    assert set(MODELS) == {"ixgbe", "igb", "e1000e"}
    assert MODELS["e1000e"].tx_vector != MODELS["e1000e"].rx_vector  # separate vectors, like e1000e
    assert MODELS["ixgbe"].tx_vector == MODELS["ixgbe"].rx_vector  # one TxRx vector
    assert all(m.mmio_region == f"{m.name}-mmio" for m in MODELS.values())


# ------------------------------------------------------------- qtest lines
def test_command_lines() -> None:
    assert cmd_writel(0xE0000000, 0x1_0000_0001) == "writel 0xe0000000 0x1"
    assert cmd_readl(0x10) == "readl 0x10"
    assert cmd_memwrite(0x1000, b"\x01\xff") == "write 0x1000 2 0x01ff"
    assert cmd_memread(0x1000, 16) == "read 0x1000 16"
    assert cmd_clock_step(32000) == "clock_step 32000"


def test_parse_reply() -> None:
    assert parse_reply("OK\n") == ""
    assert parse_reply("OK 0x0000000000000001\n") == "0x0000000000000001"
    with pytest.raises(BenchError, match="FAIL"):
        parse_reply("FAIL Unknown command 'x'\n")
    with pytest.raises(BenchError):
        parse_reply("ERR invalid argument size\n")


def test_parse_memread() -> None:
    assert parse_memread("0x01ff", 2) == b"\x01\xff"
    with pytest.raises(BenchError):
        parse_memread("01ff", 2)
    with pytest.raises(BenchError):
        parse_memread("0x01", 2)


def test_null_command_relocates_device_addresses() -> None:
    rel = [Relocation(0xE0000000, 0x20000, 0xA00000), Relocation(0x100000, 4096, 0x120000)]
    assert null_command("writel 0xe0006018 0x20", rel) == "writel 0xa06018 0x20"
    assert null_command("readl 0xe0000008", rel) == "readl 0xa00008"
    assert null_command("write 0x100200 2 0x01ff", rel) == "write 0x120200 2 0x01ff"
    assert null_command("read 0x100ff0 16", rel) == "read 0x120ff0 16"
    assert null_command("clock_step 32000", rel) == "clock_step 32000"
    with pytest.raises(BenchError, match="no relocation"):
        null_command("writel 0x5000 1", rel)
    with pytest.raises(BenchError, match="unexpected"):
        null_command("outl 0xcf8 0x80000000", rel)
    assert not Relocation(0x100, 0x10, 0).maps(0x110)


# --------------------------------------------------------------- pci config
def test_cf8() -> None:
    assert cf8(0, 4, 0, 0x10) == 0x80002010
    assert cf8(0, 4, 0, 0x13) == 0x80002010  # dword aligned
    with pytest.raises(BenchError):
        cf8(0, 32, 0, 0)


def test_bar_info() -> None:
    assert bar_info(0, 0, 0, None) is None  # not implemented
    b = bar_info(0, 0x4, 0xFFFE0004, 0xFFFFFFFF)  # 64-bit, 128 KiB
    assert b is not None and (b.is_64, b.is_io, b.size) == (True, False, 128 * 1024)
    b = bar_info(1, 0x0, 0xFFF80000, None)  # 32-bit, 512 KiB
    assert b is not None and (b.is_64, b.size) == (False, 512 * 1024)
    b = bar_info(2, 0x1, 0xFFFFFFE1, None)  # I/O, 32 bytes
    assert b is not None and (b.is_io, b.size) == (True, 32)


def test_msix_cap() -> None:
    c = msix_cap(0x70, 0x003F_0011, 0x0000_0004, 0x0000_2004)
    assert (c.table_size, c.table_bar, c.table_offset, c.pba_bar, c.pba_offset) == (64, 4, 0, 4, 0x2000)
    with pytest.raises(BenchError):
        msix_cap(0x70, 0x0005, 0, 0)


# ----------------------------------------------------------- trace parsing
TRACE = """\
memory_region_ops_write cpu -1 mr 0x55d0 addr 0x6018 value 0x20 size 4 name 'ixgbe-mmio'
ixgbe_irq_msix MSI-X vector 0
memory_region_ops_read cpu -1 mr 0x55d0 addr 0x8 value 0x80080 size 4 name 'ixgbe-mmio'
1234@1700000000.000001:ixgbe_irq_msix MSI-X vector 3
e1000e_irq_msix_notify_vec MSI-X notify vector 0x1
e1000e_irq_msix_notify_postponed_vec Sending MSI-X postponed by EITR[1]
memory_region_ops_write cpu -1 mr 0x77 addr 0xcf8 value 0x80002010 size 4 name 'pci-conf-idx'
ixgbe: rxq 0: a 9000 byte frame needs 9 buffers
"""


def test_parse_trace_ixgbe() -> None:
    t = parse_trace(TRACE, MODELS["ixgbe"].irq_events)
    assert t.irqs == {0: 1, 3: 1} and t.interrupts == 2
    assert t.region_accesses("ixgbe-mmio") == 2
    assert t.accesses[("pci-conf-idx", "write")] == 1
    assert t.region_accesses("igb-mmio") == 0


def test_parse_trace_e1000e_events() -> None:
    t = parse_trace(TRACE, MODELS["e1000e"].irq_events)
    assert t.irqs == {1: 2}
    assert MODELS["igb"].irq_events == MODELS["e1000e"].irq_events  # igb reuses e1000e's events


def test_parse_trace_bad_line() -> None:
    with pytest.raises(BenchError):
        parse_trace("ixgbe_irq_msix MSI-X vector\n", ("ixgbe_irq_msix",))


# -------------------------------------------------------- callgrind profile
CALLGRIND = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 4242
cmd:  qemu-system-x86_64 -accel qtest
part: 1

desc: Timerange: Basic block 0 - 100
desc: Trigger: --dump-before=qmp_query_name

positions: line
events: Ir
summary: 950

ob=/q/qemu-system-x86_64
fl=/q/build/../qemu-src/system/qtest.c
fn=qtest_process_command
10 100
cfi=/q/build/../qemu-src/system/memory.c
cfn=memory_region_dispatch_write
calls=2 50 
10 600
fl=/q/build/../qemu-src/system/memory.c
fn=memory_region_dispatch_write
50 50
cfl=/q/build/../qemu-src/hw/net/ixgbe_core.c
cfn=ixgbe_core_write
calls=2 5
50 550
fl=/q/build/../qemu-src/hw/net/ixgbe_core.c
fn=ixgbe_core_write
fi=/q/qemu-src/include/system/dma.h
6 20
fe=/q/build/../qemu-src/hw/net/ixgbe_core.c
7 280
cfn=memory_region_dispatch_write'2
calls=1 50
7 250
fn=memory_region_dispatch_write'2
50 250
ob=/usr/lib/x86_64-linux-gnu/libc.so.6
fl=???
fn=__memcpy_avx_unaligned_erms
0 250

totals: 950
"""


def test_parse_callgrind_self_costs() -> None:
    p = parse_callgrind(CALLGRIND)
    assert p.total == 950
    assert p.by_fn == {
        "qtest_process_command": 100,
        "memory_region_dispatch_write": 50,
        "ixgbe_core_write": 300,
        "memory_region_dispatch_write'2": 250,
        "__memcpy_avx_unaligned_erms": 250,
    }
    assert sum(p.by_fn.values()) == p.total
    assert p.by_file["/q/qemu-src/include/system/dma.h"] == 20  # inlined code counts for its file
    assert p.calls[("qtest_process_command", "memory_region_dispatch_write")] == 600


def test_entry_cost_counts_outermost_calls_only() -> None:
    p = parse_callgrind(CALLGRIND)
    # the call from qtest (600) counts; the nested '2 level is inside it
    assert entry_cost(p) == 600
    assert entry_cost(p, ("ixgbe_core_write",)) == 550
    assert "memory_region_dispatch_write" in DEVICE_ENTRIES


def test_parse_callgrind_summary_and_errors() -> None:
    p = parse_callgrind(CALLGRIND.replace("totals: 950\n", ""))
    assert p.total == 950  # from summary:
    with pytest.raises(BenchError, match="not a callgrind"):
        parse_callgrind("fn=x\n1 2\n")
    with pytest.raises(BenchError, match="single event"):
        parse_callgrind("events: Ir Dr\n")
    with pytest.raises(BenchError, match="unexpected"):
        parse_callgrind("events: Ir\nbogus line\n")
    with pytest.raises(BenchError, match="bad cost"):
        parse_callgrind("events: Ir\nfn=x\n12\n")


def test_fn_base() -> None:
    assert fn_base("timerlist_run_timers.part.0") == "timerlist_run_timers"
    assert fn_base("flatview_write'2") == "flatview_write"
    assert fn_base("net_dgram_send") == "net_dgram_send"


@pytest.mark.parametrize(
    "path, cls",
    [
        ("/w/build/qemu-build/../qemu-src/hw/net/ixgbe_datapath.c", "device model"),
        ("/w/build/qemu-build/../qemu-src/hw/net/igb_core.c", "device model"),
        ("/w/build/qemu-build/../qemu-src/hw/net/e1000x_common.c", "device model"),
        ("/w/build/qemu-build/../qemu-src/hw/net/net_rx_pkt.c", "packet helpers, checksums"),
        ("/w/build/qemu-build/../qemu-src/net/checksum.c", "packet helpers, checksums"),
        ("/w/build/qemu-build/../qemu-src/net/dgram.c", "net core, backend"),
        ("/w/build/qemu-build/../qemu-src/system/physmem.c", "memory, DMA, MSI-X"),
        ("/w/build/qemu-src/include/system/dma.h", "memory, DMA, MSI-X"),
        ("/w/build/qemu-build/../qemu-src/hw/pci/msix.c", "memory, DMA, MSI-X"),
        ("/w/build/qemu-build/../qemu-src/system/qtest.c", "qtest protocol"),
        ("/w/build/qemu-build/../qemu-src/util/main-loop.c", "main loop, timers"),
        ("./string/../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S", "libraries (glibc, GLib)"),
        ("/usr/include/glib-2.0/glib/gstring.h", "libraries (glibc, GLib)"),
        ("???", "libraries (glibc, GLib)"),
        ("/w/build/qemu-build/../qemu-src/qom/object.c", "other QEMU"),
    ],
)
def test_file_class(path: str, cls: str) -> None:
    assert file_class(path) == cls


def test_profile_delta() -> None:
    real = Profile(1000, {"a": 700, "b": 300}, {"/x/hw/net/ixgbe.c": 700, "/x/util/main-loop.c": 300})
    null = Profile(400, {"b": 300, "c": 100}, {"/x/util/main-loop.c": 400})
    total, fns, classes = profile_delta(real, null)
    assert total == 600
    assert fns == {"a": 700, "b": 0, "c": -100}
    assert classes == {"device model": 700, "main loop, timers": -100}


# ----------------------------------------------------------- perf stat
PERF_OK = "123456789,,instructions,1000000,100.00,,\n"
PERF_NO = "<not supported>,,instructions,0,100.00,,\n"


def test_perf_parsing() -> None:
    assert perf_supported(PERF_OK) and not perf_supported(PERF_NO) and not perf_supported("")
    assert parse_perf_instructions(PERF_OK) == 123456789
    assert parse_perf_instructions("123,,instructions:u,1,100.00,,\n") == 123
    with pytest.raises(BenchError):
        parse_perf_instructions(PERF_NO)
    with pytest.raises(BenchError):
        parse_perf_instructions("nothing\n")


# ------------------------------------------------------------ figures
def window(packets: int, cpu: int, cmds: dict[str, int], reads: int = 0, writes: int = 0, polls: int = 0) -> Window:
    return Window(packets, cpu, 10 * cpu, cmds, reads, writes, polls, 1)


def test_window_figures_subtract_the_replay() -> None:
    cmds = {"write": 10, "writel": 20, "clock_step": 10, "read": 15}
    f = window_figures(window(320, 960_000, cmds, 0, 16, 5), window(0, 320_000, cmds))
    assert f["cpu_ns_per_pkt"] == pytest.approx(2000)
    assert f["cpu_ns_per_pkt_raw"] == pytest.approx(3000)
    assert f["protocol_share"] == pytest.approx(1 / 3)
    assert f["reg_accesses_per_pkt"] == pytest.approx(0.05)
    assert f["qtest_cmds_per_pkt"] == pytest.approx(55 / 320)
    assert f["polls_per_pkt"] == pytest.approx(5 / 320)


def test_window_figures_refuse_a_different_replay() -> None:
    with pytest.raises(BenchError, match="replay differs"):
        window_figures(window(32, 1, {"writel": 2}), window(0, 1, {"writel": 3}))
    with pytest.raises(BenchError):
        window_figures(window(0, 1, {}), window(0, 1, {}))


def test_add_windows() -> None:
    a = window(32, 100, {"writel": 2, "read": 1}, 1, 2, 1)
    b = window(64, 50, {"writel": 3, "clock_step": 1}, 0, 4, 2)
    s = add_windows(a, b)
    assert (s.packets, s.cpu_ns, s.wall_ns, s.mmio_reads, s.mmio_writes, s.polls, s.idle_ticks) == (
        96, 150, 1500, 1, 6, 3, 2)  # fmt: skip
    assert s.commands == {"writel": 5, "read": 1, "clock_step": 1}


def test_count_figures() -> None:
    t = TraceCounts({0: 40, 1: 2}, {("ixgbe-mmio", "write"): 90, ("ixgbe-mmio", "read"): 10})
    f = count_figures(2048, t, "ixgbe-mmio")
    assert f == {"irq_per_pkt": pytest.approx(42 / 2048), "qemu_reg_accesses_per_pkt": pytest.approx(100 / 2048)}
    with pytest.raises(BenchError):
        count_figures(0, t, "ixgbe-mmio")


# --------------------------------------------------------- cells, statistics
def test_cells() -> None:
    assert Cell("tx", 60).label == "TX 64B"  # 60 bytes + FCS on the wire
    assert Cell("rx", 1514).label == "RX 1514B"
    assert Cell("tx", 1514).key == "tx-1514"
    assert parse_cell("rx-60") == Cell("rx", 60)
    with pytest.raises(BenchError):
        parse_cell("tx60")


def samples_of(
    values: dict[str, list[float]], metric: str = "cpu_ns_per_pkt", cell: str = "tx-60"
) -> list[dict[str, Any]]:
    return [
        {"model": m, "cell": cell, "rep": i, "figures": {metric: v}, "raw": {}}
        for m, vs in values.items()
        for i, v in enumerate(vs)
    ]


def test_summaries_and_paired_ratios() -> None:
    s = samples_of({"ixgbe": [100, 120, 90], "igb": [200, 100, 180]})
    summ = summarize_samples(s)
    assert summ["cpu_ns_per_pkt"]["tx-60"]["ixgbe"] == Summary(3, 100, 90, 120)
    r = ratio_summary(s, summ, "cpu_ns_per_pkt", "tx-60", "igb")
    assert r is not None
    assert r["ratio"] == pytest.approx(100 / 180)
    # same-repetition pairs: 100/200, 120/100, 90/180
    assert (r["paired_min"], r["paired_max"], r["n_pairs"]) == (0.5, 1.2, 3)
    assert ratio_summary(s, summ, "cpu_ns_per_pkt", "tx-60", "e1000e") is None
    assert ratio_summary(s, summ, "irq_per_pkt", "tx-60", "igb") is None


def test_paired_ratios_skip_undefined() -> None:
    assert paired_ratios([1, 2, 3], [2, 0, 3]) == [0.5, 1.0]
    assert paired_ratios([1, 2], [1]) == [1.0]


def test_summarize_skips_non_finite() -> None:
    s = samples_of({"ixgbe": [1.0, float("nan")]})
    assert summarize_samples(s)["cpu_ns_per_pkt"]["tx-60"]["ixgbe"].n == 1


def test_render_table_and_ratios() -> None:
    s = samples_of({"ixgbe": [100, 110], "igb": [200, 220], "e1000e": [100, 100]})
    s += samples_of({"ixgbe": [0.02, 0.02], "igb": [0.01, 0.01], "e1000e": [0.016, 0.016]}, "irq_per_pkt", "rx-1514")
    summ = summarize_samples(s)
    cells = [Cell("tx", 60), Cell("rx", 1514)]
    out = render_table(s, summ, ["ixgbe", "igb", "e1000e"], cells)
    assert "== host CPU ns / packet" in out and "== interrupts / packet" in out
    assert "host instructions" not in out  # no samples: no block
    lines = out.splitlines()
    cpu_row = next(ln for ln in lines if ln.startswith("TX 64B"))
    assert "105 ±5%" in cpu_row and "0.50 (0.50-0.50)" in cpu_row and "1.05 (1.00-1.10)" in cpu_row
    irq_row = next(ln for ln in lines if ln.startswith("RX 1514B"))
    assert "2.00 (2.00-2.00)" in irq_row
    r = all_ratios(s, summ, ["ixgbe", "igb", "e1000e"], cells)
    assert r["cpu_ns_per_pkt"]["tx-60"]["ixgbe/igb"]["ratio"] == pytest.approx(0.5)
    assert set(r) == {"cpu_ns_per_pkt", "irq_per_pkt"}
    assert [m.key for m in METRICS] == ["instr_per_pkt", "cpu_ns_per_pkt", "reg_accesses_per_pkt", "irq_per_pkt"]


# ------------------------------------------------------------ the runner
def test_parse_args_ixgbe_rx_wthresh() -> None:
    assert parse_args([]).ixgbe_rx_wthresh == 0
    assert parse_args(["--ixgbe-rx-wthresh", "8"]).ixgbe_rx_wthresh == 8
    with pytest.raises(SystemExit):
        parse_args(["--ixgbe-rx-wthresh", "128"])


def test_parse_args_defaults_and_quick() -> None:
    a = parse_args([])
    assert (a.reps, a.packets, a.cg_packets, a.cg_reps, a.burst, a.ring) == (7, 16384, 2048, 2, 32, 256)
    assert a.models == ["ixgbe", "igb", "e1000e", "virtio-net"]
    assert [c.key for c in a.cells] == ["tx-60", "tx-1514", "rx-60", "rx-1514"]
    q = parse_args(["--quick"])
    assert (q.reps, q.packets, q.cg_packets, q.cg_reps) == (3, 4096, 512, 1)
    o = parse_args(["--models", "igb", "--sizes", "1514", "--directions", "rx", "--packets", "64", "--burst", "16"])
    assert o.models == ["ixgbe", "igb"] and [c.key for c in o.cells] == ["rx-1514"] and o.chunk == 64


@pytest.mark.parametrize(
    "argv",
    [
        ["--models", "virtio"],
        ["--sizes", "59"],
        ["--sizes", "x"],
        ["--directions", "up"],
        ["--burst", "48"],  # does not divide the ring
        ["--ring", "100"],
        ["--ring", "96"],  # not a power of 2: no split virtqueue (virtio-net is in by default)
        ["--ring", "512", "--models", "virtio-net"],  # QEMU's virtio-net TX queue holds 256
        ["--packets", "100"],
        ["--packets", "4096", "--chunk", "1536"],
        ["--reps", "0"],
        ["--rate", "10"],
    ],
)
def test_parse_args_rejects(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)


def test_parse_args_ring_without_virtio() -> None:
    assert parse_args(["--ring", "512", "--models", "igb,e1000e"]).ring == 512
    assert parse_args(["--ring", "96", "--burst", "32", "--models", "igb"]).ring == 96


@pytest.fixture
def fake_qemu() -> Iterator[tuple[Qtest, list[str]]]:
    """A qtest client talking to a thread that answers like QEMU: OK for
    writes, a value for reads, with an asynchronous IRQ line thrown in."""
    a, b = socket.socketpair()
    seen: list[str] = []

    def serve() -> None:
        f = b.makefile("rb")
        for raw in f:
            line = raw.decode().strip()
            seen.append(line)
            if line.startswith("read "):
                n = int(line.split()[2])
                b.sendall(b"IRQ raise 3\nOK 0x" + b"ab" * n + b"\n")
            elif line.startswith("readl"):
                b.sendall(b"OK 0x0000000000000007\n")
            elif line.startswith("bad"):
                b.sendall(b"FAIL Unknown command 'bad'\n")
            else:
                b.sendall(b"OK\n")

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield Qtest(a), seen
    a.close()
    b.close()


def test_qtest_batch_records_and_counts(fake_qemu: tuple[Qtest, list[str]]) -> None:
    qt, seen = fake_qemu
    qt.recording = []
    out = qt.batch(["writel 0x10 0x1", "read 0x100 2", "clock_step 10"])
    assert out == ["", "0xabab", ""]
    assert qt.readl(0x20) == 7
    assert qt.memread(0x100, 3) == b"\xab\xab\xab"
    assert qt.recording[0] == ["writel 0x10 0x1", "read 0x100 2", "clock_step 10"] and len(qt.recording) == 3
    assert qt.counts == {"writel": 1, "read": 2, "clock_step": 1, "readl": 1}
    assert seen[:3] == ["writel 0x10 0x1", "read 0x100 2", "clock_step 10"]
    with pytest.raises(BenchError, match="FAIL"):
        qt.cmd("bad")


# ------------------------------------------------------- host memory (--memory)
SMAPS_ROLLUP = """55df86123000-7ffeea7c3000 ---p 00000000 00:00 0                          [rollup]
Rss:               31492 kB
Pss:               27247 kB
Private_Dirty:     12872 kB
Anonymous:         12872 kB
AnonHugePages:      2048 kB
"""


def test_parse_smaps_rollup() -> None:
    got = parse_smaps_rollup(SMAPS_ROLLUP)
    assert got["Rss"] == 31492 * 1024
    assert got["Anonymous"] == 12872 * 1024
    assert got["AnonHugePages"] == 2048 * 1024
    assert "rollup" not in "".join(got)
    with pytest.raises(BenchError):
        parse_smaps_rollup("Anonymous: 4 kB\n")


def test_slopes_on_a_line_and_with_an_outlier() -> None:
    xs = [0, 0, 1, 1, 2, 2, 4, 4]
    ys = [100 + 7 * x for x in xs]
    assert ols_slope(xs, ys) == pytest.approx(7)
    assert theil_sen(xs, ys) == pytest.approx(7)
    # one start 4 MiB off: least squares follows it, Theil-Sen does not
    bumped = list(ys)
    bumped[6] += 4096
    assert theil_sen(xs, bumped) == pytest.approx(7)
    assert ols_slope(xs, bumped) > 7 + 100
    with pytest.raises(BenchError):
        theil_sen([1, 1], [2, 3])
    with pytest.raises(BenchError):
        ols_slope([1, 1], [2, 3])


def test_fit_per_device_noise_and_uncertainty() -> None:
    pts = [(0, 1000.0), (0, 1010.0), (2, 1200.0), (2, 1220.0), (4, 1400.0), (4, 1400.0)]
    f = fit_per_device(pts)
    assert f.slope == pytest.approx(theil_sen([p[0] for p in pts], [p[1] for p in pts]))
    assert f.noise == 20.0  # the two starts at N = 2
    assert f.uncertainty == pytest.approx(20.0 / 4)
    assert f.points == 6
    assert 995 <= f.intercept <= 1015


def test_ratio_range() -> None:
    a = MemFit(100.0, 100.0, 0.0, 0.0, 10.0, 6)
    b = MemFit(200.0, 200.0, 0.0, 0.0, 20.0, 6)
    r, lo, hi = ratio_range(a, b)
    assert r == pytest.approx(0.5)
    assert lo == pytest.approx(90 / 220) and hi == pytest.approx(110 / 180)
    assert r is not None and lo is not None and hi is not None and lo < r < hi
    tiny = MemFit(5.0, 5.0, 0.0, 0.0, 8.0, 6)  # within its noise of 0
    assert ratio_range(a, tiny)[1:] == (None, None)


MASSIF = """desc: --threshold=0.1
cmd: qemu-system-x86_64
time_unit: i
#-----------
snapshot=0
#-----------
time=10
mem_heap_B=1500
mem_heap_extra_B=60
mem_stacks_B=0
heap_tree=detailed
n3: 1500 (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 n2: 1000 0x52F485: object_new_with_type (object.c:767)
  n0: 800 0x52F486: qdev_new (qdev.c:149)
  n0: 200 0x52F487: object_new (object.c:780)
 n1: 400 0x4C2B6C: ixgbe_fdir_init (ixgbe_fdir.c:765)
  n0: 400 0x4C2B6D: ixgbe_core_realize (ixgbe_core.c:1178)
 n0: 100 in 12 places, all below massif's threshold (0.10%)
"""


def test_parse_massif_and_sites() -> None:
    snaps = parse_massif(MASSIF)
    assert len(snaps) == 1
    s = snaps[0]
    assert (s.heap_b, s.extra_b) == (1500, 60)
    assert s.tree[0][:2] == (0, 1500)
    assert s.tree[1] == (1, 1000, "object_new_with_type (object.c:767)")
    one = massif_sites(s, 1)
    assert one == {
        "object_new_with_type (object.c:767)": 1000,
        "ixgbe_fdir_init (ixgbe_fdir.c:765)": 400,
        "in several places, all below massif's threshold (0.10%)": 100,
    }
    two = massif_sites(s, 2)
    assert two["object_new_with_type (object.c:767) < qdev_new (qdev.c:149)"] == 800
    assert two["ixgbe_fdir_init (ixgbe_fdir.c:765) < ixgbe_core_realize (ixgbe_core.c:1178)"] == 400
    # a node that ends above the depth counts as itself
    assert two["in several places, all below massif's threshold (0.10%)"] == 100
    assert sum(two.values()) == s.heap_b
    with pytest.raises(BenchError):
        parse_massif("nothing here\n")


def test_site_deltas() -> None:
    lo = {"a": 100, "b": 50}
    hi = {"a": 500, "b": 50, "c": 80}
    d = site_deltas(hi, lo, 2)
    assert d == {"a": 200.0, "c": 40.0}
    assert list(d) == ["a", "c"]
    many = {f"s{i}": 10 * (i + 1) for i in range(20)}
    d = site_deltas(many, {}, 1, top=3)
    assert list(d)[:3] == ["s19", "s18", "s17"]
    assert d["(other sites)"] == sum(10 * (i + 1) for i in range(17))
    with pytest.raises(BenchError):
        site_deltas(hi, lo, 0)


def test_configs_and_fits() -> None:
    rounds = configs(["ixgbe", "igb"], [0, 1, 2])
    assert rounds == [("none", 0), ("ixgbe", 1), ("ixgbe", 2), ("igb", 1), ("igb", 2)]
    assert ("none", 0) not in configs(["ixgbe"], [1, 2])
    per_dev = {"ixgbe": 1000.0 * 1024, "igb": 2000.0 * 1024}  # bytes; the table shows KiB
    rss = [
        {"model": m, "devices": n, "start": s, "active": {"Anonymous": 10_000.0 + per_dev.get(m, 0) * n + 1024 * s}}
        for s in range(3)
        for m, n in rounds
    ]
    heap = [{"model": m, "devices": n, "start": 0, "heap_b": 500.0 + per_dev.get(m, 0) * n / 2} for m, n in rounds]
    fits = fits_of(rss, heap, ["ixgbe", "igb"])
    assert fits["ixgbe"]["Anonymous"].slope == pytest.approx(1000.0 * 1024)
    assert fits["igb"]["Anonymous"].slope == pytest.approx(2000.0 * 1024)
    assert fits["ixgbe"]["Anonymous"].noise == pytest.approx(2.0 * 1024)
    assert fits["igb"]["heap_b"].slope == pytest.approx(1000.0 * 1024)
    assert "Private_Dirty" not in fits["ixgbe"]  # not measured, not invented
    table = render_memory_table(fits, ["ixgbe", "igb"])
    heap_row = next(ln for ln in table.splitlines() if ln.startswith(MEM_METRICS[0].label))
    assert heap_row.split()[-1] == "0.50"
    anon_row = next(ln for ln in table.splitlines() if ln.startswith("anonymous RSS"))
    assert "0.50 (" in anon_row and "1,000.0 ±1.0" in anon_row
    points = {"ixgbe": {0: [{"Anonymous": 1024.0}, {"Anonymous": 3072.0}], 1: [{"Anonymous": 4096.0}]}}
    pt = render_points_table(points, "Anonymous")
    assert "2.0 (1.0-3.0)" in pt and "4.0" in pt


def test_memory_args() -> None:
    a = mem_parse_args(["--memory"])
    assert a.copies == [0, 1, 2, 4] and a.starts == 5 and a.heap_starts == 2
    assert a.models == ["ixgbe", "igb", "e1000e", "virtio-net"]
    q = mem_parse_args(["--quick", "--models", "igb"])
    assert q.copies == [0, 1, 2] and q.heap_starts == 0 and q.models == ["ixgbe", "igb"]
    for bad in (["--copies", "2"], ["--copies", "0,9"], ["--frames", "33"], ["--models", "rtl8139"], ["--starts", "0"]):
        with pytest.raises(SystemExit):
            mem_parse_args(bad)
