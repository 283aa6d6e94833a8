"""The kernel selftests' results (scripts/netdev-selftests.sh), on output
recorded from the 6.12 guest's drivers/net and drivers/net/hw tests."""

from __future__ import annotations

from ixgbe_testlib.ksft import not_ok, parse_output

STATS = """KTAP version 1
1..5
ok 1 stats.check_pause
ok 2 stats.check_fec # XFAIL FEC not supported by the device
ok 3 stats.pkt_byte_sum # SKIP qstats not supported by the device
# Check| At /ksft/drivers/net/./stats.py, line 40, in check_pause:
# Check|     ksft_ge(b, a)
# Check failed 3 < 5
not ok 4 stats.qstat_by_ifindex
ok 5 stats.check_down # SKIP qstats not supported by the device
# Totals: pass:1 fail:1 xfail:1 xpass:0 skip:2 error:0
"""

CSUM = """KTAP version 1
1..3
# Exception| Traceback (most recent call last):
# Exception|   File "/ksft/net/lib/py/ksft.py", line 213, in ksft_run
# Exception|     case(*args)
# Exception| AttributeError: 'NetDrvEpEnv' object has no attribute 'remote_ifname'
not ok 1 csum.ipv4_rx_tcp
ok 2 csum.ipv4_rx_udp
# Exception|     raise NlError(nl_msg)
# Exception| net.lib.ynl.lib.ynl.NlError: Netlink error: Operation not supported
# Exception| nl_len = 28 (12) nl_flags = 0x202 nl_type = 3
# Exception| 	error: -95
not ok 3 rss_ctx.test_rss_key_indir
"""

ETHTOOL_SH = """TEST: force speed 1000 on both ends                                 [FAIL]
\terror in configuration. eth0 speed 1000 autoneg off
TEST: eth0 does not support rx histogram counters                   [XFAIL]
TEST: SKIP: dev eth0 does not support loopback feature              [ OK ]
TEST: advertise subset of speeds                                    [ OK ]
"""


def test_ktap_cases_with_skip_xfail_and_the_reason_of_a_failure() -> None:
    cases = parse_output("drivers/net:stats.py", STATS, 1, False)
    assert [(c.name, c.result) for c in cases] == [
        ("stats.check_pause", "ok"),
        ("stats.check_fec", "skip"),
        ("stats.pkt_byte_sum", "skip"),
        ("stats.qstat_by_ifindex", "fail"),
        ("stats.check_down", "skip"),
    ]
    assert cases[1].note == "xfail: FEC not supported by the device"
    assert cases[2].note == "qstats not supported by the device"
    assert cases[3].note == "Check failed 3 < 5"
    assert cases[0].note == ""


def test_an_exception_is_the_reason_and_does_not_leak_to_the_next_case() -> None:
    cases = parse_output("drivers/net/hw:csum.py", CSUM, 1, False)
    assert cases[0].result == "fail"
    assert cases[0].note.startswith("AttributeError: 'NetDrvEpEnv' object has no attribute")
    assert (cases[1].result, cases[1].note) == ("ok", "")
    assert cases[2].note == "net.lib.ynl.lib.ynl.NlError: Netlink error: Operation not supported"


def test_forwarding_library_lines() -> None:
    cases = parse_output("drivers/net/hw:ethtool.sh", ETHTOOL_SH, 1, False)
    assert [(c.name, c.result, c.note) for c in cases] == [
        ("force speed 1000 on both ends", "fail", "error in configuration. eth0 speed 1000 autoneg off"),
        ("eth0 does not support rx histogram counters", "skip", "xfail"),
        ("dev eth0 does not support loopback feature", "skip", ""),
        ("advertise subset of speeds", "ok", ""),
    ]


def test_a_program_without_cases_is_one_case_by_its_exit_status() -> None:
    skip = parse_output("drivers/net:netcons_basic.sh", "SKIP: udevadm(1) is not available\n", 4, False)
    assert [(c.name, c.result, c.note) for c in skip] == [("", "skip", "SKIP: udevadm(1) is not available")]
    crash = parse_output("drivers/net/hw:devlink_port_split.py", "Traceback\nAssertionError\n", 1, False)
    assert [(c.result, c.note) for c in crash] == [("fail", "exit 1: AssertionError")]
    clean = parse_output("drivers/net:x.sh", "", 0, False)
    assert [c.result for c in clean] == ["ok"]


def test_a_killed_program_fails_after_the_cases_it_finished() -> None:
    cases = parse_output("drivers/net:ping.py", "ok 1 ping.test_v4\n", 137, True)
    assert [(c.name, c.result) for c in cases] == [("ping.test_v4", "ok"), ("", "fail")]
    assert cases[1].note == "timed out (killed)"


def test_the_ci_subset_fails_on_a_failed_skipped_or_missing_case() -> None:
    cases = parse_output("drivers/net:stats.py", STATS, 1, False)
    assert not_ok(cases, {"drivers/net:stats.py": ("stats.check_pause",)}) == []
    assert not_ok(cases, {"drivers/net:stats.py": ("stats.check_pause", "stats.qstat_by_ifindex",
                                                   "stats.check_fec")}) == [
        "drivers/net:stats.py stats.qstat_by_ifindex: fail",
        "drivers/net:stats.py stats.check_fec: skip",
    ]
    assert not_ok(cases, {"drivers/net:ping.py": ("ping.test_v4",)}) == ["drivers/net:ping.py ping.test_v4: missing"]
