"""The pure part of ixgbe_testlib.testpmd (no VM): the parser of testpmd's
`show port stats all`, which the e2e tests and the DPDK benchmark read, on
what DPDK 22.11's testpmd printed, with and without its rates."""

from __future__ import annotations

import pytest

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.testpmd import PortStats, parse_port_stats

# both ports with testpmd's rates (what the DPDK benchmark reads)
WITH_RATES = """
  ######################## NIC statistics for port 0  ########################
  RX-packets: 1200345    RX-missed: 0          RX-bytes:  72020700
  RX-errors: 0
  RX-nombuf:  0         
  TX-packets: 1200401    TX-errors: 0          TX-bytes:  72024060

  Throughput (since last show)
  Rx-pps:        40011          Rx-bps:     19205280
  Tx-pps:        40013          Tx-bps:     19206240
  ############################################################################

  ######################## NIC statistics for port 1  ########################
  RX-packets: 1200290    RX-missed: 2          RX-bytes:  72017400
  RX-errors: 1
  RX-nombuf:  3         
  TX-packets: 1200200    TX-errors: 4          TX-bytes:  72012000

  Throughput (since last show)
  Rx-pps:        40009          Rx-bps:     19204320
  Tx-pps:        40006          Tx-bps:     19202880
  ############################################################################
"""
# port 0 with its Rx-pps line only, port 1 without rates (the e2e tests read
# the counters only)
WITHOUT_RATES = (
    "\n  ######################## NIC statistics for port 0  ########################\n"
    "  RX-packets: 200        RX-missed: 0          RX-bytes:  145375\n"
    "  RX-errors: 0\n"
    "  RX-nombuf:  0         \n"
    "  TX-packets: 2000       TX-errors: 0          TX-bytes:  1475575\n"
    "\n  Throughput (since last show)\n"
    "  Rx-pps:            0          Rx-bps:            0\n"
    "  ############################################################################\n"
    "\n  ######################## NIC statistics for port 1  ########################\n"
    "  RX-packets: 2000       RX-missed: 3          RX-bytes:  1475575\n"
    "  RX-errors: 1\n"
    "  RX-nombuf:  2         \n"
    "  TX-packets: 200        TX-errors: 0          TX-bytes:  145375\n"
)


def test_parse_port_stats_with_rates() -> None:
    s = parse_port_stats(WITH_RATES)
    assert sorted(s) == [0, 1]
    assert s[0] == PortStats(1200345, 0, 72020700, 0, 0, 1200401, 0, 72024060, 40011, 40013)
    assert s[1] == PortStats(1200290, 2, 72017400, 1, 3, 1200200, 4, 72012000, 40009, 40006)
    assert parse_port_stats(WITH_RATES, rates=True) == s


def test_parse_port_stats_without_rates() -> None:
    stats = parse_port_stats(WITHOUT_RATES)
    assert stats[0] == PortStats(200, 0, 145375, 0, 0, 2000, 0, 1475575)
    assert stats[1] == PortStats(2000, 3, 1475575, 1, 2, 200, 0, 145375)
    # testpmd prints both rates: port 0's Rx-pps alone gives it none
    assert (stats[0].rx_pps, stats[0].tx_pps) == (None, None)
    with pytest.raises(GuestError, match="port 0: no tx_pps"):
        parse_port_stats(WITHOUT_RATES, rates=True)


def test_parse_port_stats_cut_short_is_an_error() -> None:
    cut = WITH_RATES[: WITH_RATES.index("Throughput (since last show)", 400)]
    with pytest.raises(GuestError, match="port 1: no rx_pps, tx_pps"):
        parse_port_stats(cut, rates=True)
    assert parse_port_stats(cut)[1] == PortStats(1200290, 2, 72017400, 1, 3, 1200200, 4, 72012000)
    with pytest.raises(GuestError):
        parse_port_stats("  ###### NIC statistics for port 0  ####\n  RX-packets: 1\n")
    assert parse_port_stats("testpmd> ") == {}
