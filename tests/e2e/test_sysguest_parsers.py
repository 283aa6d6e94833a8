"""The pure parts of ixgbe_testlib.sysguest (no VM): parsers of the guest's ethtool
output, CPU masks and lists, and the plan-versus-readings comparison that the
end-to-end test relies on. The ethtool texts are what the Debian guest's
ethtool 6.1 printed for the emulated 82599 and for virtio-net."""

from __future__ import annotations

from typing import Any

import pytest

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.sysguest import (
    check_plan,
    mask_cpus,
    parse_coalesce,
    parse_current,
    parse_features,
    parse_pause,
    rx_queue_packets,
)

PAUSE = "Pause parameters for enp1s0:\nAutonegotiate:\ton\nRX:\t\ton\nTX:\t\toff\n"
RINGS = (
    "Ring parameters for enp1s0:\nPre-set maximums:\nRX:\t\t4096\nRX Mini:\tn/a\nRX Jumbo:\tn/a\n"
    "TX:\t\t4096\nCurrent hardware settings:\nRX:\t\t512\nRX Mini:\tn/a\nRX Jumbo:\tn/a\nTX:\t\t512\n"
    "RX Buf Len:\t\tn/a\nCQE Size:\t\tn/a\nTX Push:\toff\nTCP data split:\tn/a\n"
)
CHANNELS = (
    "Channel parameters for enp2s0:\nPre-set maximums:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\n"
    "Combined:\t4\nCurrent hardware settings:\nRX:\t\tn/a\nTX:\t\tn/a\nOther:\t\tn/a\nCombined:\t3\n"
)
COALESCE = (
    "Coalesce parameters for enp1s0:\nAdaptive RX: n/a  TX: n/a\nstats-block-usecs: n/a\n\n"
    "rx-usecs: 25\nrx-frames: n/a\n\ntx-usecs: 0\ntx-frames: n/a\n\nCQE mode RX: n/a  TX: n/a\n"
)
COALESCE_VIRTIO = "Coalesce parameters for enp2s0:\nAdaptive RX: off  TX: on\nrx-usecs: 0\ntx-usecs: 0\n"
FEATURES = (
    "Features for enp1s0:\nrx-checksumming: on\nntuple-filters: on\n"
    "tx-nocache-copy: off\nloopback: off [fixed]\n"
)


def test_pause() -> None:
    assert parse_pause(PAUSE) == {"autoneg": True, "rx": True, "tx": False}
    with pytest.raises(GuestError):
        parse_pause("netlink error: Operation not supported")


def test_rings_and_channels_current_block_only() -> None:
    rings = parse_current(RINGS, "-g")
    assert rings["rx"] == 512 and rings["tx"] == 512  # not the 4096 maximum
    assert rings["rx-mini"] is None and rings["tx-push"] is None
    assert parse_current(CHANNELS, "-l")["combined"] == 3
    with pytest.raises(GuestError):
        parse_current("Ring parameters for x:\n", "-g")


def test_coalesce() -> None:
    c = parse_coalesce(COALESCE)
    assert c["rx-usecs"] == 25 and c["tx-usecs"] == 0
    assert c["adaptive-rx"] is None and c["rx-frames"] is None
    v = parse_coalesce(COALESCE_VIRTIO)
    assert v["adaptive-rx"] is False and v["adaptive-tx"] is True


def test_features() -> None:
    f = parse_features(FEATURES)
    assert f == {"rx-checksumming": True, "ntuple-filters": True, "tx-nocache-copy": False, "loopback": False}


def test_masks_and_lists() -> None:
    assert mask_cpus("0000000e") == [1, 2, 3]
    assert mask_cpus("00000001,00000000") == [32]
    assert mask_cpus("0") == []


@pytest.mark.parametrize(("want", "have"), [("0-2,5", "0,1,2,5"), ("3", "3"), ("1-2", "1,,2"), ("", "")])
def test_check_plan_reads_cpu_lists_with_the_collections_parser(want: str, have: str) -> None:
    """IRQ affinity is compared as CPU lists (the collection's parser, which
    the tests share): the kernel's spelling and the plan's may differ."""
    plan = {"settings": [dict(_plan()["settings"][0], want=want)]}
    seen = _seen()
    seen["irq"]["e"]["e-TxRx-0"] = have
    assert check_plan(plan, seen) == []


@pytest.mark.parametrize("bad", ["x", "3-1", "1-", "0-7:2"])
def test_check_plan_refuses_what_is_not_a_cpu_list(bad: str) -> None:
    seen = _seen()
    seen["irq"]["e"]["e-TxRx-0"] = bad
    with pytest.raises(ValueError, match="bad CPU"):
        check_plan(_plan(), seen)


def test_rx_queue_packets() -> None:
    stats = {
        "rx_queue_0_packets": 5,
        "rx_queue_1_packets": 7,
        "rx_queue_1_bytes": 900,
        "tx_queue_0_packets": 1,
    }
    assert rx_queue_packets(stats) == {0: 5, 1: 7}


def _plan() -> dict[str, Any]:
    return {
        "settings": [
            {"key": "irq:e:e-TxRx-0", "kind": "irq", "target": "/proc/irq/41/smp_affinity_list", "want": "1",
             "iface": "e", "label": "IRQ 41 e-TxRx-0"},
            {"key": "xps:e:tx-0", "kind": "mask", "target": "/sys/class/net/e/queues/tx-0/xps_cpus",
             "want": "2", "iface": "e", "label": "tx-0 XPS"},
            {"key": "ethtool:e:rings", "kind": "ethtool", "target": "rings", "want": {"rx": 4096, "tx": 4096},
             "iface": "e", "label": "ring sizes"},
            {"key": "ethtool:e:coalesce", "kind": "ethtool", "target": "coalesce", "want": {"rx-usecs": 25},
             "iface": "e", "label": "interrupt coalescing"},
            {"key": "sysctl:net.core.rmem_max", "kind": "sysctl", "target": "/proc/sys/net/core/rmem_max",
             "want": "134217728", "iface": None, "label": "sysctl net.core.rmem_max"},
            {"key": "service:irqbalance", "kind": "service", "target": "irqbalance", "want": False,
             "iface": None, "label": "irqbalance running"},
        ]
    }  # fmt: skip


def _seen() -> dict[str, Any]:
    return {
        "irq": {"e": {"e-TxRx-0": "1", "e": "0"}},
        "queues": {"e": {"tx-0/xps_cpus": "00000002"}},
        "ethtool": {"e": {"rings": {"rx": 4096, "tx": 4096}, "coalesce": {"rx-usecs": 25}}},
        "sysctl": {"net.core.rmem_max": "134217728"},
        "irqbalance": "inactive",
    }


def test_check_plan_agrees_when_readings_match() -> None:
    assert check_plan(_plan(), _seen()) == []


@pytest.mark.parametrize(
    ("path", "value", "expect"),
    [
        (("irq", "e", "e-TxRx-0"), "0-3", "IRQ 41 e-TxRx-0"),
        (("queues", "e", "tx-0/xps_cpus"), "1", "tx-0 XPS"),
        (("ethtool", "e", "rings"), {"rx": 512, "tx": 4096}, "ring sizes"),
        (("sysctl", "net.core.rmem_max"), "212992", "rmem_max"),
        (("irqbalance",), "active", "irqbalance"),
    ],
)
def test_check_plan_reports_each_kind_of_difference(path: tuple[str, ...], value: Any, expect: str) -> None:
    seen = _seen()
    node = seen
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    bad = check_plan(_plan(), seen)
    assert len(bad) == 1 and expect in bad[0], bad


def test_check_plan_missing_readings_and_ignored_keys() -> None:
    seen = _seen()
    del seen["irq"]["e"]["e-TxRx-0"]  # the IRQ vanished
    seen["ethtool"]["e"]["coalesce"] = None  # the driver reports no coalescing
    bad = check_plan(_plan(), seen)
    assert len(bad) == 2, bad
    assert check_plan(_plan(), seen, ignore=["irq:e:e-TxRx-0", "ethtool:e:coalesce"]) == []


def test_check_plan_refuses_unknown_kinds() -> None:
    plan = {"settings": [{"key": "file:x", "kind": "file", "target": "/etc/x", "want": "a", "iface": None,
                          "label": "drop-in"}]}  # fmt: skip
    assert check_plan(plan, _seen()) == ["drop-in: setting kind 'file' not checked by this test"]
