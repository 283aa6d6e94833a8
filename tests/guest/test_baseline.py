"""Baselines on QEMU's own NICs (igb, e1000e, virtio-net) in the same QEMU
build: they prove the harness and every scenario the ixgbe tests use.

The tests of one class share one VM (in file order); RSS and the two-port
wiring need VMs of their own."""

from __future__ import annotations

import pytest

from scenarios import (
    Guest,
    assert_clean_log,
    assert_qemu_quiet,
    assert_selftest_pass,
    boot_back_to_back,
    boot_dgram_nic,
    boot_user_nic,
    check_back_to_back,
    check_rss,
    check_set_link,
    iperf3_both_ways,
    iperf3_hostfwd,
)
from ixgbe_testlib.iperf3 import free_tcp_port
from ixgbe_testlib.vm import VMFactory


def check_probe_link_and_log(g: Guest) -> None:
    settings = g.vm.ethtool(g.dev)
    assert settings.get("Link detected") == "yes", settings
    r = g.vm.ping("10.0.2.2")
    assert r.ok, r.stdout
    assert_clean_log(g)


class TestIgb:
    HOSTFWD_PORT = free_tcp_port()

    @pytest.fixture(scope="class")
    @classmethod
    def g(cls, make_class_vm: VMFactory) -> Guest:
        return boot_user_nic(make_class_vm, "igb", "igb", hostfwd=[(cls.HOSTFWD_PORT, 5201)], name="igb")

    def test_probe_link_and_clean_log(self, g: Guest) -> None:
        check_probe_link_and_log(g)

    def test_iperf3_guest_host(self, g: Guest) -> None:
        print(f"igb iperf3 Mbit/s: {iperf3_both_ways(g, g.vm.log_dir)}")

    def test_iperf3_hostfwd(self, g: Guest) -> None:
        print(f"igb host->guest via hostfwd: {iperf3_hostfwd(g, self.HOSTFWD_PORT):.0f} Mbit/s")

    def test_selftest_offline(self, g: Guest) -> None:
        assert_selftest_pass(g)
        # the link comes back after the offline test
        g.vm.wait_carrier(g.dev)
        assert g.vm.ping("10.0.2.2").ok

    def test_set_link(self, g: Guest) -> None:
        check_set_link(g)
        assert g.vm.ping("10.0.2.2").ok

    def test_quiet_after_all(self, g: Guest) -> None:
        assert_clean_log(g, what=" after all igb tests")
        assert_qemu_quiet(g.vm)


class TestE1000e:
    def test_probe_link_and_clean_log(self, make_vm: VMFactory) -> None:
        """Own VM: the class's one test, on its own NIC model."""
        check_probe_link_and_log(boot_user_nic(make_vm, "e1000e", "e1000e", name="e1000e"))


class TestVirtioNet:
    @pytest.fixture(scope="class")
    @classmethod
    def g(cls, make_class_vm: VMFactory) -> Guest:
        return boot_user_nic(make_class_vm, "virtio-net-pci", "virtio_net", name="virtio-net")

    def test_probe_link_and_clean_log(self, g: Guest) -> None:
        check_probe_link_and_log(g)

    def test_iperf3_guest_host(self, g: Guest) -> None:
        print(f"virtio-net iperf3 Mbit/s: {iperf3_both_ways(g, g.vm.log_dir)}")


def test_igb_rss_matches_toeplitz(make_vm: VMFactory) -> None:
    """igb takes its key from the kernel's global RSS key
    (net.core.netdev_rss_key) since it cannot report it through ethtool.

    Own VM: its NIC's wire is a datagram socket of this test."""
    g, port = boot_dgram_nic(make_vm, "igb", "igb", smp=4)
    with port:
        nq = g.vm.channels(g.dev)["current"]["Combined"]
        assert nq == 4
        rss = g.vm.rss(g.dev)
        key = bytes.fromhex(g.vm.sh("cat /proc/sys/net/core/netdev_rss_key").strip().replace(":", ""))[:40]
        check_rss(g, port, key, rss, nq)


# QEMU's igb sends frames shorter than 60 bytes (ARP, TCP ACKs) without
# padding them, and its receiver counts such frames as undersize (RUC, see
# igb_receive_internal() in hw/net/igb_core.c). Over slirp nobody notices;
# port to port the counters below rise. A real 82576 pads them (TCTL.PSP).
IGB_UNPADDED_TX_COUNTERS = frozenset({"rx_short_length_errors", "rx_length_errors", "rx_errors"})


def test_igb_back_to_back(make_vm: VMFactory) -> None:
    """Own VM: two igb ports wired to each other."""
    g = boot_back_to_back(make_vm, "igb", "igb")
    rates = check_back_to_back(g, g.vm.log_dir, tolerated=IGB_UNPADDED_TX_COUNTERS)
    print(f"igb port-to-port iperf3 Mbit/s: {rates}")
    # eth1 now lives in another namespace: the log check must still cover it
    assert_clean_log(g)
