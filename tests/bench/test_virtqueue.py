"""Unit tests of the virtio pieces of the device-model benchmark
(virtqueue.py) and of the replay relocation of a virtio-net window's
commands: split virtqueue layout, descriptors, avail and used rings, event
indexes, the virtio-net header, virtio-pci capabilities; bytes checked by
hand against the virtio 1.2 specification's structures."""

from __future__ import annotations

import pytest

from benchlib import BenchError
from devbenchlib import ALL_MODELS, MODEL_NAMES, Relocation, TraceCounts, cmd_readl, cmd_writel, null_command
from virtqueue import (
    CAP_COMMON,
    CAP_NOTIFY,
    COMMON_CFG,
    DESC_F_WRITE,
    DRIVER_FEATURES,
    NET_HDR_LEN,
    SplitLayout,
    SplitQueue,
    VirtioCap,
    need_event,
    net_hdr,
    parse_used,
    parse_virtio_cap,
    spans,
    vq_desc,
)


def test_driver_features_are_the_documented_choice() -> None:
    # VERSION_1 (32), MAC (5), MRG_RXBUF (15), EVENT_IDX (29); no CSUM (0), GUEST_CSUM (1), TSO, CTRL_VQ
    assert DRIVER_FEATURES == 0x1_2000_8020


def test_common_cfg_layout() -> None:
    # struct virtio_pci_common_cfg (4.1.4.3): 0x38 bytes, the 64-bit addresses split in halves
    assert COMMON_CFG["device_status"] == (0x14, 1)
    assert COMMON_CFG["queue_select"] == (0x16, 2)
    assert COMMON_CFG["queue_notify_off"] == (0x1E, 2)
    assert COMMON_CFG["queue_device_hi"] == (0x34, 4)
    ends = sorted(off + size for off, size in COMMON_CFG.values())
    assert ends[-1] == 0x38
    # no two fields overlap
    spans_ = sorted(COMMON_CFG.values())
    assert all(a[0] + a[1] <= b[0] for a, b in zip(spans_, spans_[1:]))


def test_vq_desc_bytes() -> None:
    d = vq_desc(0x0060_1000, 2048, DESC_F_WRITE, 7)
    assert d.hex() == "0010600000000000" + "00080000" + "0200" + "0700"
    with pytest.raises(BenchError):
        vq_desc(0x1000, 0)


def test_net_hdr() -> None:
    assert NET_HDR_LEN == 12
    assert net_hdr() == bytes(12)
    assert net_hdr(1).hex() == "00" * 10 + "0100"  # num_buffers, le16 at byte 10


def test_need_event() -> None:
    # vring_need_event(event, new, old): event in [old, new)
    assert need_event(0, 32, 0)
    assert need_event(31, 32, 0)
    assert not need_event(32, 32, 0)
    assert need_event(40, 64, 32)  # 40 is in [32, 64)
    assert not need_event(5, 64, 32)
    # across the 16-bit wrap: old 0xFFF0, new 0x0010
    assert need_event(0xFFFF, 0x0010, 0xFFF0)
    assert need_event(0x0005, 0x0010, 0xFFF0)
    assert not need_event(0x0010, 0x0010, 0xFFF0)
    assert not need_event(0xFFEF, 0x0010, 0xFFF0)


def test_split_layout_256() -> None:
    lay = SplitLayout(0x100000, 256)
    assert lay.desc == 0x100000
    assert lay.desc_addr(3) == 0x100030
    assert lay.avail == 0x101000
    assert lay.avail_idx == 0x101002
    assert lay.avail_entry(1) == 0x101006
    assert lay.used_event == 0x101204  # after flags, idx and 256 le16 entries
    assert lay.used == 0x102000  # 0x101206 rounded up to 4 KiB
    assert lay.used_idx == 0x102002
    assert lay.used_entry(2) == 0x102014
    assert lay.avail_event == 0x102804  # after flags, idx and 256 8-byte entries
    assert lay.nbytes == 0x2806
    for bad in (0, 1, 96, 65536):
        with pytest.raises(BenchError):
            SplitLayout(0, bad)


def test_spans() -> None:
    assert spans(0, 4, 8) == [(0, 4)]
    assert spans(6, 4, 8) == [(6, 2), (0, 2)]
    assert spans(6, 0, 8) == [(6, 0)]
    with pytest.raises(BenchError):
        spans(8, 1, 8)


def test_post_wraps_and_publishes_the_index_last() -> None:
    q = SplitQueue(SplitLayout(0x10000, 8), avail_idx=6, last_used=6, kicked=6)
    writes = q.post([vq_desc(0xA000 + i, 60 + i) for i in range(3)])
    assert [(hex(a), d.hex()) for a, d in writes] == [
        (hex(0x10000 + 6 * 16), vq_desc(0xA000, 60).hex() + vq_desc(0xA001, 61).hex()),
        (hex(0x10000), vq_desc(0xA002, 62).hex()),
        (hex(0x10080 + 4 + 12), "0600" "0700"),  # avail ring slots 6, 7: heads 6, 7
        (hex(0x10080 + 4), "0000"),  # slot 0: head 0
        (hex(0x10080 + 2), "0900"),  # avail->idx = 9, last
    ]
    assert q.outstanding == 3
    with pytest.raises(BenchError):
        q.post([vq_desc(0xB000, 60)] * 6)  # 3 + 6 > 8


def test_avail_index_wraps_at_16_bits() -> None:
    q = SplitQueue(SplitLayout(0, 8), avail_idx=0xFFFE, last_used=0xFFFE, kicked=0xFFFE)
    writes = q.post([vq_desc(0x1000, 60)] * 4)
    assert writes[-1][1].hex() == "0200"
    assert q.avail_idx == 2 and q.outstanding == 4
    # heads: 0xFFFE % 8 = 6, 7, 0, 1
    assert writes[2][1].hex() == "0600" "0700" and writes[3][1].hex() == "0000" "0100"


def test_kick_prepare_follows_avail_event() -> None:
    q = SplitQueue(SplitLayout(0, 64))
    q.post([vq_desc(0x1000, 60)] * 32)
    assert q.kick_prepare(0)  # the device waits at 0: notify
    q.post([vq_desc(0x1000, 60)] * 16)
    assert not q.kick_prepare(10)  # the device has not caught up to 32: no notify
    q.post([vq_desc(0x1000, 60)] * 8)
    assert q.kick_prepare(48)  # it waits at 48, crossed by 48..56


def test_used_reads_and_complete() -> None:
    q = SplitQueue(SplitLayout(0x20000, 8), avail_idx=6, last_used=6, kicked=6)
    q.post([vq_desc(0x1000, 60)] * 4)  # heads 6, 7, 0, 1
    used = 0x20000 + 0x1000  # 8 entries: desc 0x80, avail 0x80 + 22 -> used on the next 4 KiB
    assert q.used_reads() == [(used + 2, 2), (used + 4 + 6 * 8, 16), (used + 4, 16)]
    raw = bytes.fromhex("06000000" "48000000" "07000000" "48000000" "00000000" "48000000")
    entries = parse_used(raw)
    assert entries == [(6, 72), (7, 72), (0, 72)]
    assert q.complete(9, entries) == [72, 72, 72]
    assert (q.last_used, q.outstanding) == (9, 1)
    assert q.complete(9, []) == []


def test_complete_rejects_out_of_order_and_overrun() -> None:
    q = SplitQueue(SplitLayout(0, 8))
    q.post([vq_desc(0x1000, 60)] * 2)
    with pytest.raises(BenchError, match="head 1, expected 0"):
        q.complete(1, [(1, 0)])
    with pytest.raises(BenchError, match="used 3"):
        q.complete(3, [(0, 0), (1, 0), (2, 0)])
    with pytest.raises(BenchError):
        parse_used(bytes(12))


def test_parse_virtio_cap() -> None:
    # QEMU's common configuration capability: vndr 9, next 0x70, len 16, type 1; BAR 4, offset 0, 4 KiB
    assert parse_virtio_cap([0x01107009, 0x4, 0x0, 0x1000]) == VirtioCap(CAP_COMMON, 4, 0, 0x1000)
    # its notification capability: len 20, type 2, at 0x3000, multiplier 4
    assert parse_virtio_cap([0x02140009, 0x4, 0x3000, 0x1000, 4]) == VirtioCap(CAP_NOTIFY, 4, 0x3000, 0x1000, 4)
    with pytest.raises(BenchError):
        parse_virtio_cap([0x01107011, 0x4, 0, 0x1000])  # MSI-X, not vendor
    with pytest.raises(BenchError):
        parse_virtio_cap([0x02100009, 0x4, 0x3000, 0x1000])  # notification without its multiplier


def test_sized_register_commands() -> None:
    assert cmd_writel(0xE0003004, 1, 2) == "writew 0xe0003004 0x1"
    assert cmd_writel(0xE0000014, 0x10F, 1) == "writeb 0xe0000014 0xf"
    assert cmd_readl(0xE0002000, 1) == "readb 0xe0002000"
    assert cmd_writel(0x10, 5) == "writel 0x10 0x5"


def test_null_command_relocates_a_virtio_window() -> None:
    """A virtio-net window's commands (ring writes, used ring and
    avail_event reads, the notify write, the mailbox) all move to scratch."""
    lay = SplitLayout(0x100000, 256)
    rel = [
        Relocation(0xE0004000, 0x4000, 0xA00000),  # the modern BAR
        Relocation(lay.base, lay.nbytes, 0x120000),  # transmitq1
        Relocation(0x110000, lay.nbytes, 0x130000),  # receiveq1
        Relocation(0xF00000, 16, 0xF01000),  # mailbox
    ]
    assert null_command("write 0x101002 2 0x2000", rel) == "write 0x121002 2 0x2000"
    assert null_command("read 0x102804 2", rel) == "read 0x122804 2"
    assert null_command("read 0x112002 2", rel) == "read 0x132002 2"
    assert null_command("writew 0xe0007004 0x1", rel) == "writew 0xa03004 0x1"
    assert null_command("readb 0xe0004014", rel) == "readb 0xa00014"
    assert null_command("read 0xf00000 16", rel) == "read 0xf01000 16"
    assert null_command("clock_step 32000", rel) == "clock_step 32000"
    with pytest.raises(BenchError):
        null_command("write 0x600000 72 0x00", rel)  # a buffer: not touched in a window


def test_virtio_model_and_its_regions() -> None:
    assert "virtio-net" in MODEL_NAMES
    m = ALL_MODELS["virtio-net"]
    assert m.device == "virtio-net-pci"
    t = TraceCounts({}, {("virtio-pci-common-virtio-net", "read"): 3, ("virtio-pci-notify-virtio-net", "write"): 5,
                         ("msix-table", "write"): 4})  # fmt: skip
    assert t.region_accesses(m.mmio_region) == 8
