"""Baselines on QEMU's own NICs (igb, e1000e, virtio-net) in the same QEMU
build: they prove the harness and every scenario the ixgbe tests use.

One guest carries them all (in file order, each test leaving the guest in
the state the next starts from): an igb on slirp with a host forward, an
igb whose wire is a datagram socket of the RSS test, two igb ports wired
back to back, an e1000e and a virtio-net each on a slirp network of its
own. The module ends by migrating that guest under a ping flood between
the two igb ports, which gives the downtime to compare with ixgbe's
(test_ixgbe_migration.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from migration import MigratingGuest, ping_flood_across_migration, print_migration
from scenarios import (
    IGB_UNPADDED_TX_COUNTERS,
    Guest,
    NicSpec,
    NicsGuest,
    PairNics,
    SocketNic,
    UserNic,
    assert_clean_log,
    assert_qemu_quiet,
    assert_selftest_pass,
    boot_nics,
    check_back_to_back,
    check_rss,
    check_set_link,
    iperf3_both_ways,
    iperf3_hostfwd,
    nics_args,
)
from ixgbe_testlib.iperf3 import free_tcp_port
from ixgbe_testlib.vm import VMFactory

HOSTFWD_PORT = free_tcp_port()
# 4 vCPUs: igb then has the 4 RX queues the RSS test spreads flows over
VCPUS = 4
SPECS: list[NicSpec] = [
    UserNic("igb", "igb", hostfwd=((HOSTFWD_PORT, 5201),)),  # n0: QMP set_link's netdev
    SocketNic("igb", "igb"),
    PairNics("igb", "igb"),
    UserNic("e1000e", "e1000e", subnet=3),
    UserNic("virtio-net-pci", "virtio_net", subnet=4),
]
IGB, IGB_WIRE, IGB_PAIR, E1000E, VIRTIO = range(len(SPECS))


@pytest.fixture(scope="module")
def nics(make_module_vm: VMFactory) -> NicsGuest:
    return boot_nics(make_module_vm, SPECS, smp=VCPUS, name="baseline")


def check_probe_link_and_log(g: Guest) -> None:
    settings = g.vm.ethtool(g.dev)
    assert settings.get("Link detected") == "yes", settings
    r = g.vm.ping(g.host)
    assert r.ok, r.stdout
    assert_clean_log(g)


class TestIgb:
    @pytest.fixture(scope="class")
    @classmethod
    def g(cls, nics: NicsGuest) -> Guest:
        return nics.guests[IGB]

    def test_probe_link_and_clean_log(self, g: Guest) -> None:
        check_probe_link_and_log(g)

    def test_iperf3_guest_host(self, g: Guest) -> None:
        print(f"igb iperf3 Mbit/s: {iperf3_both_ways(g, g.vm.log_dir)}")

    def test_iperf3_hostfwd(self, g: Guest) -> None:
        print(f"igb host->guest via hostfwd: {iperf3_hostfwd(g, HOSTFWD_PORT):.0f} Mbit/s")

    def test_selftest_offline(self, g: Guest) -> None:
        assert_selftest_pass(g)
        # the link comes back after the offline test
        g.vm.wait_carrier(g.dev)
        assert g.vm.ping(g.host).ok

    def test_set_link(self, g: Guest) -> None:
        check_set_link(g)
        assert g.vm.ping(g.host).ok

    def test_quiet_after_all(self, g: Guest) -> None:
        assert_clean_log(g, what=" after all igb tests")
        assert_qemu_quiet(g.vm)


class TestE1000e:
    def test_probe_link_and_clean_log(self, nics: NicsGuest) -> None:
        check_probe_link_and_log(nics.guests[E1000E])


class TestVirtioNet:
    def test_probe_link_and_clean_log(self, nics: NicsGuest) -> None:
        check_probe_link_and_log(nics.guests[VIRTIO])

    def test_iperf3_guest_host(self, nics: NicsGuest) -> None:
        g = nics.guests[VIRTIO]
        print(f"virtio-net iperf3 Mbit/s: {iperf3_both_ways(g, g.vm.log_dir)}")


def test_igb_rss_matches_toeplitz(nics: NicsGuest) -> None:
    """igb takes its key from the kernel's global RSS key
    (net.core.netdev_rss_key) since it cannot report it through ethtool.
    Its wire is a datagram socket of this test; the port gives its address
    (WIRE_NET.1) up afterwards, to the back-to-back ports."""
    g, port = nics.guests[IGB_WIRE], nics.ports[IGB_WIRE]
    try:
        with port:
            nq = g.vm.channels(g.dev)["current"]["Combined"]
            assert nq == VCPUS
            rss = g.vm.rss(g.dev)
            key = bytes.fromhex(g.vm.sh("cat /proc/sys/net/core/netdev_rss_key").strip().replace(":", ""))[:40]
            check_rss(g, port, key, rss, nq)
    finally:
        g.vm.sh(f"ip addr flush dev {g.dev} && ip link set {g.dev} down")
    assert_clean_log(g)


def test_igb_back_to_back(nics: NicsGuest) -> None:
    g = nics.guests[IGB_PAIR]
    rates = check_back_to_back(g, g.vm.log_dir, tolerated=IGB_UNPADDED_TX_COUNTERS)
    print(f"igb port-to-port iperf3 Mbit/s: {rates}")
    # eth1 now lives in another namespace: the log check must still cover it
    assert_clean_log(g)


def test_igb_ping_flood_migration(nics: NicsGuest, record_summary: Callable[[str], None]) -> None:
    """The ping flood of test_ixgbe_migration.py between the two igb ports,
    wired by the test before, across two moves of the whole guest: proves
    the method and gives the downtime to compare. Last: the guest ends up
    in another QEMU (without the host forward, which the source holds)."""
    igb = MigratingGuest.adopt(
        nics.make_vm, nics.guests[IGB_PAIR], nics_args(SPECS, hostfwd=False), name="baseline", smp=VCPUS
    )
    downtimes = []
    for _ in range(2):
        # QEMU's igb sends short frames unpadded: its peer counts them as errors
        result = ping_flood_across_migration(igb, tolerated=IGB_UNPADDED_TX_COUNTERS)
        downtimes.append(result.downtime_ms)
        record_summary(print_migration("igb", "ping flood", result))
    record_summary(f"migration downtime under a ping flood (ms): igb: {', '.join(map(str, downtimes))}")
