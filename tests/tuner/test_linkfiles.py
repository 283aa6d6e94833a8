"""Coexistence with systemd .link files: apply refuses an ethtool setting that the .link
file udev applies to the NIC also sets, before changing anything, naming the file and keys;
udev's choice of file (the first match by name, /etc over /usr/lib, a masked name) is
followed, so a file that does not apply to the NIC is no conflict."""

from __future__ import annotations

import os
from typing import Callable, Dict

import pytest

from conftest import Result, tree_hash
from nettune import linkfiles
from nettune.sysfs import Root

NT = Callable[..., Result]
TREE = Callable[[str], str]


def put(root: str, files: Dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


RINGS = "[Match]\nDriver=ixgbe\n\n[Link]\nNamePolicy=keep\nRxBufferSize=512\nTxBufferSize=512\n"


def test_apply_refuses_what_a_link_file_sets(tree: TREE, nt: NT) -> None:
    root = tree("ixgbe-4q")
    put(root, {"/etc/systemd/network/10-ixgbe.link": RINGS})
    before = tree_hash(root)
    r = nt("--root", root, "apply")
    assert r.rc != 0
    assert ("eth0 rings: /etc/systemd/network/10-ixgbe.link sets RxBufferSize=512, TxBufferSize=512 "
            "(udev applies it whenever the device appears)") in r.err, r.err
    assert "Nothing was changed" in r.err
    assert tree_hash(root) == before


@pytest.mark.parametrize("files", [
    # another driver's file
    {"/etc/systemd/network/10-mlx.link": RINGS.replace("ixgbe", "mlx5_core")},
    # negated: every driver but ixgbe
    {"/etc/systemd/network/10-not.link": RINGS.replace("Driver=ixgbe", "Driver=!ixgbe e1000e")},
    # udev applies only the first matching file: an earlier one without ethtool keys wins
    {"/usr/lib/systemd/network/05-first.link": "[Match]\nDriver=ix*\n[Link]\nNamePolicy=path\n",
     "/etc/systemd/network/10-ixgbe.link": RINGS},
    # /etc's empty file of the same name masks the one in /usr/lib
    {"/usr/lib/systemd/network/10-ixgbe.link": RINGS, "/etc/systemd/network/10-ixgbe.link": ""},
    # keys nettune does not plan for this NIC (no rx-jumbo ring)
    {"/etc/systemd/network/10-ixgbe.link": RINGS.replace("RxBufferSize=512\nTxBufferSize=512", "RxJumboBufferSize=9")},
])
def test_link_files_that_do_not_set_the_planned_settings(tree: TREE, nt: NT, files: Dict[str, str]) -> None:
    root = tree("ixgbe-4q")
    put(root, files)
    r = nt("--root", root, "apply")
    assert r.rc == 0, r.err + r.out
    assert "applied profile" in r.out


def test_unknown_match_keys_may_match_and_do_not_hide_a_later_file(tree: TREE) -> None:
    root = tree("ixgbe-4q")
    put(root, {"/etc/systemd/network/10-orig.link": "[Match]\nOriginalName=eth*\n[Link]\nRxFlowControl=yes\n",
               "/usr/lib/systemd/network/20-usb.link": "[Match]\nType=ether\nProperty=ID_BUS=usb\n[Link]\n"
                                                       "NamePolicy=mac\n",
               "/usr/lib/systemd/network/30-ixgbe.link": RINGS,
               "/usr/lib/systemd/network/99-default.link": "[Match]\nOriginalName=*\n[Link]\nRxBufferSize=1\n"})
    text = linkfiles.conflict(Root(root), "eth0", "pause", ["autoneg", "rx", "tx"])
    assert text is not None and "10-orig.link sets RxFlowControl=yes" in text
    # 30-ixgbe.link surely matches: 99-default.link after it is not applied
    assert linkfiles.conflict(Root(root), "eth0", "rings", ["rx", "tx"]) == (
        "eth0 rings: /usr/lib/systemd/network/30-ixgbe.link sets RxBufferSize=512, TxBufferSize=512 (udev applies "
        "it whenever the device appears); remove those keys there, or keep this setting out of nettune's "
        "configuration")
