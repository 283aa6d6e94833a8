"""Coexistence with NetworkManager and tuned (guest/nettune/managers.py's policy), on copies
of the recorded ixgbe tree with the files of a guest that runs both: samples/managers/ holds
the lab-ixgbe connection of the managers guest image and tuned 2.20's stock profiles
(Debian 12), NetworkManager and tuned in /proc and enabled.

- detection: the connection bound to eth0 (by [match] driver, interface-name, MAC), tuned's
  active profile with its include chain;
- apply writes the ethtool values NetworkManager 1.42 has properties for into the connection
  (not the queue count: a note), verify passes, revert restores the file byte for byte;
- a connection or tuned profile that sets another value is refused before any change,
  naming the manager, the file or profile and the keys; equal values are no conflict;
- verify names the manager behind a drifted value.
"""

from __future__ import annotations

import json
import os
import shutil
from typing import Callable, Dict

import pytest

from conftest import HERE, Result, tree_hash
from nettune import cli, nm, tuned
from nettune.sysfs import Root

NT = Callable[..., Result]
TREE = Callable[[str], str]
SAMPLES = os.path.join(HERE, "samples", "managers")
CONN = "/etc/NetworkManager/system-connections/lab-ixgbe.nmconnection"


def managed(tree: TREE, profile: str = "virtual-guest") -> str:
    """ixgbe-4q-recorded plus NetworkManager (running, lab-ixgbe bound to eth0) and tuned."""
    root = tree("ixgbe-4q-recorded")
    shutil.copytree(SAMPLES, root, dirs_exist_ok=True, symlinks=True)
    os.chmod(root + CONN, 0o600)
    put(root, {"/etc/tuned/active_profile": profile + "\n"})
    return root


def put(root: str, files: Dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def read(root: str, path: str) -> str:
    with open(root + path) as f:
        return f.read()


def test_discover_names_the_connection_and_the_tuned_profile(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    r = nt("--root", root, "discover", "--json")
    assert r.rc == 0, r.err
    m = json.loads(r.out)["managers"]
    assert m["networkmanager"]["running"] is True
    assert m["networkmanager"]["connections"]["eth0"]["connection"] == "lab-ixgbe"
    assert m["networkmanager"]["connections"]["eth0"]["file"] == CONN
    assert m["tuned"] == {"active": True, "profile": "virtual-guest",
                          "chain": ["throughput-performance", "virtual-guest"], "missing": []}
    text = nt("--root", root, "discover").out
    assert f"NetworkManager:   running; eth0: 'lab-ixgbe' ({CONN})" in text
    assert "tuned:            profile virtual-guest (virtual-guest <- throughput-performance)" in text


def test_apply_writes_the_connection_verify_and_revert_exactly(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    before = tree_hash(root)
    original = read(root, CONN)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err + r.out
    # (the recorded ixgbe reports no adaptive coalescing; tx-nocache-copy is off already but goes into
    # the connection too, so that NetworkManager keeps it)
    assert ("[nmcli connection modify 6f1c0a52-8d7e-4c1b-9a55-0c6a3f0e1b01 "
            "ethtool.coalesce-rx-usecs 25 ethtool.feature-ntuple on "
            "ethtool.feature-tx-nocache-copy off ethtool.pause-autoneg off ethtool.pause-rx off "
            "ethtool.pause-tx off ethtool.ring-rx 4096 ethtool.ring-tx 4096") in r.out, r.out
    assert "NetworkManager 1.42 has no ethtool property for channels combined" in r.out
    kf = nm.parse_keyfile(read(root, CONN), CONN)
    assert kf.ethtool() == {"coalesce-rx-usecs": 25,
                            "feature-ntuple": True, "feature-tx-nocache-copy": False, "pause-autoneg": False,
                            "pause-rx": False, "pause-tx": False, "ring-rx": 4096, "ring-tx": 4096}
    assert read(root, CONN).startswith(original.rstrip("\n"))       # the rest of the file untouched
    assert os.stat(root + CONN).st_mode & 0o777 == 0o600
    v = nt("--root", root, "verify")
    assert v.rc == 0 and "settings as planned" in v.out, v.out
    again = nt("--root", root, "apply")
    assert again.rc == 0 and "nothing to change" in again.out, again.out
    rv = nt("--root", root, "revert")
    assert rv.rc == 0, rv.err + rv.out
    assert "restored eth0 NetworkManager connection 'lab-ixgbe'" in rv.out
    assert read(root, CONN) == original
    assert tree_hash(root) == before


def test_a_connection_value_of_its_own_is_refused(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    put(root, {CONN: read(SAMPLES, CONN) + "\n[ethtool]\nring-rx=512\nfeature-ntuple=true\n"})
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 1
    assert (f"eth0: NetworkManager connection 'lab-ixgbe' ({CONN}) sets ethtool.ring-rx=512 (nettune: 4096) "
            "(NetworkManager applies them on every activation); remove them (nmcli connection modify "
            "6f1c0a52-8d7e-4c1b-9a55-0c6a3f0e1b01 ethtool.ring-rx \"\")") in r.err, r.err
    assert "feature-ntuple" not in r.err           # the same value is no conflict
    assert "Nothing was changed" in r.err
    assert tree_hash(root) == before


def test_a_runtime_connection_is_not_written(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    run = "/run/NetworkManager/system-connections/lab-ixgbe.nmconnection"
    os.makedirs(os.path.dirname(root + run))
    os.rename(root + CONN, root + run)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err
    assert "connection 'lab-ixgbe' lives in /run/NetworkManager/system-connections (gone at reboot)" in r.out
    assert "nmcli" not in r.out and "[ethtool]" not in read(root, run)


def test_without_networkmanager_the_connection_is_left_alone(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    shutil.rmtree(os.path.join(root, "proc", "411"))
    original = read(root, CONN)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err
    assert read(root, CONN) == original and "nmcli" not in r.out


def test_tuned_sysctls_of_another_value_are_refused(tree: TREE, nt: NT) -> None:
    root = managed(tree, "network-throughput")
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc == 1
    assert ('tuned profile network-throughput (network-throughput) [sysctl] sets '
            'net.ipv4.tcp_rmem=4096 87380 16777216 (nettune: 4096 87380 67108864); '
            'net.ipv4.tcp_wmem=4096 16384 16777216 (nettune: 4096 87380 67108864); tuned re-applies it') in r.err, r.err
    assert tree_hash(root) == before


def test_tuned_values_equal_to_nettunes_are_no_conflict(tree: TREE, nt: NT) -> None:
    # network-latency sets busy_read=50 and busy_poll=50, as nettune's latency profile does
    root = managed(tree, "network-latency")
    r = nt("--root", root, "apply", "-p", "latency")
    assert r.rc == 0, r.err


def test_tuned_net_scheduler_and_irqbalance_conflicts(tree: TREE, nt: NT) -> None:
    root = managed(tree, "lab")
    put(root, {"/etc/tuned/lab/tuned.conf": "[main]\ninclude=virtual-guest\n[variables]\niso=1-2\n"
                                            "[net]\ndevices=eth*\nring=rx 512 tx 4096\n"
                                            "[scheduler]\nisolated_cores=${iso}\n"
                                            "[irqbalance]\nbanned_cpus=3\n"})
    r = nt("--root", root, "apply", "--irqbalance", "ban")
    assert r.rc == 1
    assert "tuned profile lab (lab) sets [net] rings rx 512 for eth0" in r.err, r.err
    assert "[scheduler] isolated_cores=1-2 moves IRQs off CPU 1-2, where nettune pins queue IRQs" in r.err
    assert "[irqbalance] banned_cpus=3 sets irqbalance's banned CPUs" in r.err
    put(root, {"/etc/tuned/lab/tuned.conf": "[main]\ninclude=virtual-guest\n[net]\ndevices=eth1\nring=rx 512\n"})
    assert nt("--root", root, "apply").rc == 0


def test_verify_names_the_manager_behind_a_drift(tree: TREE, nt: NT) -> None:
    root = managed(tree)
    assert nt("--root", root, "apply").rc == 0
    # the operator changes the connection and NetworkManager applies it
    text = read(root, CONN).replace("ring-rx=4096", "ring-rx=512")
    put(root, {CONN: text})
    host = cli.build_host(root)
    assert host.ethtool is not None
    host.ethtool.set("eth0", "rings", {"rx": 512})
    # tuned switches to a profile with its own TCP buffers
    put(root, {"/etc/tuned/active_profile": "network-throughput\n",
               "/proc/sys/net/ipv4/tcp_rmem": "4096\t87380\t16777216\n"})
    r = nt("--root", root, "verify")
    assert r.rc == 1
    assert (f"DRIFT eth0 ring sizes: want rx 4096 tx 4096, have rx 512 tx 4096   (rings)\n"
            f"      by NetworkManager connection 'lab-ixgbe' ({CONN}) sets ethtool.ring-rx=512\n") in r.out, r.out
    assert ("      by tuned profile network-throughput (network-throughput) [sysctl] sets "
            "net.ipv4.tcp_rmem=4096 87380 16777216\n") in r.out
    j = json.loads(nt("--root", root, "verify", "--json").out)
    assert {d["label"]: d.get("cause", "")[:14] for d in j["drift"]} == {
        "ring sizes": "NetworkManager", "NetworkManager connection 'lab-ixgbe'": "the connection",
        "sysctl net.ipv4.tcp_rmem": "tuned profile "}


@pytest.mark.parametrize("text, bound", [
    ("[connection]\nid=a\ntype=ethernet\ninterface-name=eth0\n", True),
    ("[connection]\nid=a\ntype=ethernet\ninterface-name=eth1\n[match]\ndriver=ixgbe\n", False),
    ("[connection]\nid=a\ntype=ethernet\n[ethernet]\nmac-address=52:54:00:12:34:56\n", True),
    ("[connection]\nid=a\ntype=ethernet\n[ethernet]\nmac-address=52:54:00:12:34:57\n", False),
    ("[connection]\nid=a\ntype=ethernet\n[match]\ninterface-name=eth*;!eth0\n", False),
    ("[connection]\nid=a\ntype=wifi\ninterface-name=eth0\n", False),
    ("[connection]\nid=a\ntype=ethernet\n", False),      # an unbound profile names no interface
])
def test_binding(text: str, bound: bool) -> None:
    kf = nm.parse_keyfile(text, "/etc/NetworkManager/system-connections/a.nmconnection")
    assert nm.binds(kf, "eth0", "52:54:00:12:34:56", "ixgbe") is bound


def test_set_keys_keeps_the_file_and_adds_or_replaces() -> None:
    text = "[connection]\nid=a\n\n[ethtool]\nring-rx=1\n\n[ipv4]\nmethod=auto\n"
    assert nm.set_keys(text, "ethtool", {"ring-rx": "2", "ring-tx": "3"}) == (
        "[connection]\nid=a\n\n[ethtool]\nring-rx=2\nring-tx=3\n\n[ipv4]\nmethod=auto\n")
    assert nm.set_keys("[connection]\nid=a\n\n", "ethtool", {"ring-rx": "2"}) == (
        "[connection]\nid=a\n\n[ethtool]\nring-rx=2\n")


def test_tuned_merge_replace_and_raise_only(tmp_path: "os.PathLike[str]") -> None:
    root = str(tmp_path)
    put(root, {"/usr/lib/tuned/base/tuned.conf": "[sysctl]\na.b=1\nc.d=2\n[cpu]\ngovernor=x\n",
               "/etc/tuned/mid/tuned.conf": "[main]\ninclude=base\n[sysctl]\nc.d=3\ne.f=>100\n",
               "/etc/tuned/top/tuned.conf": "[main]\ninclude=mid, gone\n[cpu]\nreplace=1\nenergy=y\n"})
    prof = tuned.load(Root(root), ["top"])
    assert prof.chain == ["base", "mid", "top"] and prof.missing == ["gone"]
    assert tuned.sysctls(prof) == {"a.b": ("1", "base"), "c.d": ("3", "mid"), "e.f": (">100", "mid")}
    assert prof.units["cpu"].options == {"replace": "1", "energy": "y"}
    assert tuned.sysctl_agrees(">100", "300") and not tuned.sysctl_agrees(">100", "50")
