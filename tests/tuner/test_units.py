"""CPU list/mask formats, ethtool output parsing, override files."""

from __future__ import annotations

import json
import os
from typing import List

import pytest

from conftest import HERE
from nettune.cpus import format_cpulist, format_mask, parse_cpulist, parse_mask
from nettune.errors import UsageError
from nettune.ethtool import (EthtoolError, command, parse_channels, parse_coalesce, parse_driver,
                             parse_features, parse_ntuple, parse_pause, parse_rings)
from nettune.profiles import Config, load_config

SAMPLES = os.path.join(HERE, "samples")


def sample(name: str) -> str:
    with open(os.path.join(SAMPLES, name), encoding="utf-8") as f:
        return f.read()


# --- CPU lists and masks ------------------------------------------------------------------
@pytest.mark.parametrize("text,cpus", [
    ("0-3,5", [0, 1, 2, 3, 5]), ("7", [7]), ("", []), ("0-7:2", [0, 2, 4, 6]), (" 1,1,2 ", [1, 2]),
])
def test_parse_cpulist(text: str, cpus: List[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("bad", ["a", "3-1", "1,,2", "1-", "0-3:0"])
def test_parse_cpulist_rejects(bad: str) -> None:
    with pytest.raises(UsageError):
        parse_cpulist(bad)


def test_format_cpulist_round_trip() -> None:
    assert format_cpulist([5, 0, 1, 2, 3, 9, 10]) == "0-3,5,9-10"
    assert format_cpulist([]) == ""
    assert parse_cpulist(format_cpulist([1, 4, 5, 6])) == [1, 4, 5, 6]


def test_masks_use_kernel_width_and_word_commas() -> None:
    assert format_mask([1], 2) == "2"
    assert format_mask([], 4) == "0"
    assert format_mask([4, 5], 8) == "30"
    assert format_mask([0], 40) == "00,00000001"
    assert format_mask([35], 40) == "08,00000000"
    assert parse_mask("00,00000001") == [0]
    assert parse_mask("f0") == [4, 5, 6, 7]
    with pytest.raises(UsageError):
        parse_mask("xyz")


# --- ethtool parsing (captured and documented outputs) ----------------------------------------
def test_parse_rings_virtio_captured() -> None:
    r = parse_rings(sample("virtio-618-g.txt"))
    assert r["max"] == {"rx": 256, "rx-mini": None, "rx-jumbo": None, "tx": 256}
    assert r["current"]["rx"] == 256 and r["current"]["tx"] == 256


def test_parse_coalesce_virtio_captured() -> None:
    c = parse_coalesce(sample("virtio-618-c.txt"))
    assert c["adaptive-rx"] is False and c["adaptive-tx"] is None
    assert c["rx-usecs"] == 0 and c["rx-frames"] == 1 and c["rx-usecs-irq"] is None


def test_parse_coalesce_ixgbe_written() -> None:
    c = parse_coalesce(sample("written-ixgbe-c.txt"))
    assert c["adaptive-rx"] is None and c["rx-usecs"] == 1 and c["tx-usecs"] == 0 and c["tx-frames-irq"] == 256


def test_parse_features_captured() -> None:
    f = parse_features(sample("virtio-618-k.txt"))
    assert f["tx-nocache-copy"] == {"on": False, "fixed": False}
    assert f["ntuple-filters"] == {"on": False, "fixed": True}
    assert f["tx-checksum-ip-generic"]["on"] is True   # indented child features are kept
    v = parse_features(sample("veth-618-k.txt"))
    assert v["generic-receive-offload"] == {"on": False, "fixed": False}


def test_parse_channels_captured_and_written() -> None:
    assert parse_channels(sample("virtio-618-l.txt"))["max"]["combined"] == 1
    veth = parse_channels(sample("veth-618-l.txt"))
    assert veth["max"] == {"rx": 4, "tx": 4, "other": None, "combined": None}
    ix = parse_channels(sample("written-ixgbe-l.txt"))
    assert ix["max"]["combined"] == 63 and ix["current"] == {"rx": None, "tx": None, "other": 1, "combined": 4}


def test_parse_pause_ignores_negotiation_lines() -> None:
    assert parse_pause(sample("written-ixgbe-a.txt")) == {"autoneg": True, "rx": True, "tx": True}
    with pytest.raises(EthtoolError):
        parse_pause("netlink error: Operation not supported\n")


def test_parse_ntuple_and_driver() -> None:
    assert parse_ntuple(sample("virtio-618-n.txt")) == {"rx_rings": 1, "ntuple_rules": None}
    assert parse_ntuple(sample("written-ixgbe-n.txt")) == {"rx_rings": 4, "ntuple_rules": 2}
    d = parse_driver(sample("virtio-618-i.txt"))
    assert d["driver"] == "virtio_net" and d["bus_info"] == "0000:00:03.0"


def test_ethtool_command_lines() -> None:
    assert command("eth0", "pause", {"rx": False, "tx": False, "autoneg": False}) == \
        ["ethtool", "-A", "eth0", "autoneg", "off", "rx", "off", "tx", "off"]
    assert command("eth0", "coalesce", {"rx-usecs": 25, "adaptive-rx": False}) == \
        ["ethtool", "-C", "eth0", "adaptive-rx", "off", "rx-usecs", "25"]
    assert command("eth0", "channels", {"combined": 3}) == ["ethtool", "-L", "eth0", "combined", "3"]
    assert command("eth0", "rings", {"tx": 80, "rx": 512}) == ["ethtool", "-G", "eth0", "rx", "512", "tx", "80"]


def test_unsupported_errors_are_recognised() -> None:
    assert EthtoolError("ethtool -C eth0 rx-usecs 25: netlink error: Operation not supported").unsupported
    assert not EthtoolError("ethtool -G eth0 rx 9999: Invalid argument").unsupported


# --- override files ------------------------------------------------------------------------------
INI = """
[nettune]
profile = latency
interfaces = eth0, eth1
cpus = 2-3
housekeeping = none
irqbalance = ban
channels = 2
skip = sysctl
[ethtool]
rx_ring = 1024
rx_usecs = 4     ; short
flow_control = keep
[features]
generic-receive-offload = off
tx-nocache-copy = keep
[sysctl]
net.core.busy_poll = 25
net.core.busy_read = keep
"""


def test_ini_and_json_overrides_are_equivalent(tmp_path: "os.PathLike[str]") -> None:
    ini = os.path.join(str(tmp_path), "a.conf")
    with open(ini, "w") as f:
        f.write(INI)
    js = os.path.join(str(tmp_path), "a.json")
    with open(js, "w") as f:
        json.dump({"profile": "latency", "interfaces": ["eth0", "eth1"], "cpus": "2-3", "housekeeping": "none",
                   "irqbalance": "ban", "channels": 2, "skip": ["sysctl"],
                   "ethtool": {"rx_ring": 1024, "rx_usecs": 4, "flow_control": "keep"},
                   "features": {"generic-receive-offload": False, "tx-nocache-copy": "keep"},
                   "sysctl": {"net.core.busy_poll": 25, "net.core.busy_read": "keep"}}, f)
    a, b = load_config(ini), load_config(js)
    assert a.to_json() == b.to_json()
    assert a.profile == "latency" and a.interfaces == ["eth0", "eth1"] and a.channels == "2"
    assert a.rings == {"rx": 1024} and a.coalesce == {"rx-usecs": 4} and a.flow_control_off is False
    assert a.features == {"generic-receive-offload": False, "tx-nocache-copy": None}
    assert a.sysctls == {"net.core.busy_poll": "25", "net.core.busy_read": None}


@pytest.mark.parametrize("text,msg", [
    ("[nettune]\nprofile = turbo\n", "unknown profile"),
    ("[nettune]\nirqbalance = maybe\n", "irqbalance must be"),
    ("[ethtool]\nrx_ring = big\n", "expected a number"),
    ("[ethtool]\nbogus = 1\n", "unknown ethtool setting"),
    ("[weird]\nx = 1\n", "unknown section"),
    ("[sysctl]\nkernel.panic = 1\n", "not a net.* sysctl"),
    ("[nettune]\nskip = everything\n", "unknown categories"),
    ("{not json", "not valid JSON"),
])
def test_bad_override_files_name_the_problem(tmp_path: "os.PathLike[str]", text: str, msg: str) -> None:
    p = os.path.join(str(tmp_path), "bad.conf")
    with open(p, "w") as f:
        f.write(text)
    with pytest.raises(UsageError, match=msg):
        load_config(p)


def test_missing_config_file() -> None:
    with pytest.raises(UsageError, match="cannot read config file"):
        load_config("/nonexistent/nettune.conf")


def test_config_defaults() -> None:
    c = Config()
    assert c.profile == "throughput" and c.irqbalance == "stop" and c.channels == "auto" and c.xps
