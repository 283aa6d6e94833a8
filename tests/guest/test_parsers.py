"""The harness's parsers, on output recorded from the guest (ixgbe, igb)."""

from __future__ import annotations

import pytest

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.netcheck import (
    NOMSI_FALLBACK,
    device_problems,
    error_counters,
    hashes_ports,
    risen,
    without,
)
from ixgbe_testlib.parsers import (
    KmsgRecord,
    parse_channels,
    parse_dmesg_raw,
    parse_ethtool_settings,
    parse_ethtool_stats,
    parse_interrupts,
    parse_rss,
    parse_selftest,
    strip_kernel_messages,
)

ETHTOOL = """Settings for eth0:
\tSupported ports: [ FIBRE ]
\tSupported link modes:   1000baseKX/Full
\t                        10000baseKR/Full
\tSpeed: 10000Mb/s
\tDuplex: Full
        Current message level: 0x00000007 (7)
                               drv probe link
\tLink detected: yes
"""

CHANNELS = """Channel parameters for eth0:
Pre-set maximums:
RX:\t\tn/a
TX:\t\tn/a
Other:\t\t1
Combined:\t63
Current hardware settings:
RX:\t\tn/a
TX:\t\tn/a
Other:\t\t1
Combined:\t4
"""

SELFTEST_PASS = """The test result is PASS
The test extra info:
Register test  (offline)\t 0
Eeprom test    (offline)\t 0
Interrupt test (offline)\t 0
Loopback test  (offline)\t 0
Link test   (on/offline)\t 0
"""

RSS = (
    "RX flow hash indirection table for eth0 with 4 RX ring(s):\n"
    + "".join(f"{i:5}:      0     1     2     3     0     1     2     3\n" for i in range(0, 128, 8))
    + "RSS hash key:\n"
    "01:4b:19:1c:90:03:b5:ff:b7:54:55:47:c7:d7:ba:eb:ef:f5:fe:2a:af:84:61:08:c6:e4:be:fc:fa:77:"
    "71:7b:73:4a:06:67:8c:5d:4f:9a\n"
    "RSS hash function:\n    toeplitz: on\n    xor: off\n    crc32: off\n"
)

INTERRUPTS = """           CPU0       CPU1       CPU2       CPU3
  0:        154          0          0          0   IO-APIC   2-edge      timer
 25:          0          0          0          3  PCI-MSIX-0000:01:00.0   0-edge      eth0-TxRx-0
 26:          3          0          0          0  PCI-MSIX-0000:01:00.0   1-edge      eth0-TxRx-1
 29:          0          0          0          0  PCI-MSIX-0000:01:00.0   4-edge      eth0
NMI:          0          0          0          0   Non-maskable interrupts
ERR:          0
"""

STATS = """NIC statistics:
     rx_packets: 12
     rx_errors: 0
     rx_dropped: 0
     rx_missed_errors: 0
     fdir_miss: 5
     tx_restart_queue: 0
     alloc_rx_page_failed: 0
     rx_no_dma_resources: 0
     rx_queue_0_packets: 7
     rx_queue_1_packets: 5
     rx_queue_0_csum_err: 0
"""


def test_ethtool_settings() -> None:
    s = parse_ethtool_settings(ETHTOOL)
    assert s["Speed"] == "10000Mb/s"
    assert s["Link detected"] == "yes"


def test_channels_with_na() -> None:
    ch = parse_channels(CHANNELS)
    assert ch["current"] == {"RX": 0, "TX": 0, "Other": 1, "Combined": 4}
    assert ch["max"]["Combined"] == 63


def test_selftest() -> None:
    st = parse_selftest(SELFTEST_PASS)
    assert st.passed and len(st.results) == 5 and set(st.results.values()) == {0}
    assert st.results["Link test   (on/offline)"] == 0
    failed = parse_selftest(SELFTEST_PASS.replace("PASS", "FAIL").replace("(offline)\t 0", "(offline)\t 13"))
    assert not failed.passed and failed.results["Loopback test  (offline)"] == 13
    with pytest.raises(GuestError):
        parse_selftest("Cannot test: Operation not supported")


def test_rss() -> None:
    rss = parse_rss(RSS)
    assert len(rss.reta) == 128 and rss.reta[:5] == [0, 1, 2, 3, 0]
    assert rss.key is not None and len(rss.key) == 40 and rss.key[:2] == b"\x01\x4b"
    assert rss.hash_function == "toeplitz"
    # igb cannot report its key
    no_key = parse_rss(RSS.replace(RSS.splitlines()[18], "Operation not supported"))
    assert no_key.key is None and len(no_key.reta) == 128


def test_interrupts() -> None:
    irq = parse_interrupts(INTERRUPTS)
    assert irq["eth0-TxRx-0"] == 3 and irq["eth0-TxRx-1"] == 3 and irq["eth0"] == 0
    assert "NMI" not in irq and "interrupts" not in irq


def test_stats_and_error_counters() -> None:
    stats = parse_ethtool_stats(STATS)
    assert stats["rx_queue_1_packets"] == 5
    errs = error_counters(stats)
    assert set(errs) == {
        "rx_errors",
        "rx_missed_errors",
        "alloc_rx_page_failed",
        "rx_no_dma_resources",
        "rx_queue_0_csum_err",
    }
    after = dict(stats, rx_missed_errors=3, rx_dropped=9, fdir_miss=50)
    assert risen(stats, after) == {"rx_missed_errors": (0, 3)}
    with pytest.raises(GuestError):
        parse_ethtool_stats("no stats available")


def test_flow_hash_fields() -> None:
    assert not hashes_ports(
        "UDP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\nIP DA\n"
    )
    assert hashes_ports(
        "TCP over IPV4 flows use these fields for computing Hash flow key:\nIP SA\nIP DA\n"
        "L4 bytes 0 & 1 [TCP/UDP src port]\nL4 bytes 2 & 3 [TCP/UDP dst port]\n"
    )
    with pytest.raises(GuestError):
        hashes_ports("Cannot get RX network flow hashing options: Operation not supported")


DMESG = """<6>[    9.101000] ixgbe: Intel(R) 10 Gigabit PCI Express Network Driver
<4>[    9.102000] ixgbe 0000:01:00.0: Failed to allocate MSI-X interrupts. Err: -22
<3>[    9.103000] ixgbe 0000:01:00.0 eth0: something broke
<4>[    9.104000] pci 0000:01:00.0: BAR 0: failed to assign
<4>[    9.105000] clocksource: timekeeping watchdog on CPU1: hpet wd-wd read-back delay
<3>[    9.106000] eth0: tx hang
  continuation line
<4>[    9.107000] igb 0000:02:00.0: unrelated device
<12>[    9.108000] user space message at level 4
"""


def test_dmesg_and_device_problems() -> None:
    recs = parse_dmesg_raw(DMESG)
    assert len(recs) == 8
    assert recs[0] == KmsgRecord(6, 0, 9.101, "ixgbe: Intel(R) 10 Gigabit PCI Express Network Driver")
    assert recs[5].text == "eth0: tx hang\n  continuation line"
    assert (recs[7].facility, recs[7].level) == (1, 4)
    bad = device_problems(recs, "ixgbe", ["0000:01:00.0"], ["eth0"])
    assert [r.timestamp for r in bad] == [9.102, 9.103, 9.104, 9.106]
    assert [r.timestamp for r in without(bad, NOMSI_FALLBACK)] == [9.103, 9.104, 9.106]


def test_kernel_messages_are_cut_out_of_the_console_stream() -> None:
    raw = b"QUJD[   12.345678] ixgbe 0000:01:00.0 eth0: NIC Link is Up\r\nREVG\r\nSEk=\r\n"
    assert strip_kernel_messages(raw) == b"QUJDREVG\r\nSEk=\r\n"
