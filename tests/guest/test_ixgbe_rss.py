"""ixgbe RSS: 64 flows sent from the host each land on the RX queue that
the reference Toeplitz hash, with the key and RETA read from the guest,
predicts; all 4 queues receive flows."""

from __future__ import annotations

import pytest

from ixgbe_testlib.vm import VMFactory
from scenarios import assert_qemu_quiet, boot_dgram_nic, check_rss

pytestmark = pytest.mark.usefixtures("require_ixgbe")


@pytest.mark.kernel_sensitive("traffic", family="rss")
def test_rss_flows_match_toeplitz(require_ixgbe: None, make_vm: VMFactory) -> None:
    """Own VM: its NIC's wire is a datagram socket of this test, which sends
    the flows."""
    g, port = boot_dgram_nic(make_vm, "ixgbe", "ixgbe", smp=4, name="ixgbe-rss")
    with port:
        nq = g.vm.channels(g.dev)["current"].get("Combined")
        assert nq == 4, f"expected 4 combined queues, got {nq}"
        rss = g.vm.rss(g.dev)
        assert rss.key is not None and len(rss.key) == 40, f"RSS key not readable: {rss}"
        assert len(rss.reta) == 128, f"82599 RETA has 128 entries, ethtool shows {len(rss.reta)}"
        assert rss.hash_function in ("", "toeplitz"), rss.hash_function
        report = check_rss(g, port, rss.key, rss, nq)
        print(report)
    assert_qemu_quiet(g.vm)
