"""ixgbe receive side coalescing, the driver's large-receive-offload (off
at probe in the 6.1 and 6.12 drivers; `ethtool -K lro on` turns RSC on):
two ports wired back to back, one in a network namespace, and a 16 MiB
file of random bytes sent from the namespace's port into the
other one. With LRO on the file arrives intact and the driver's RSC
counters (hw_rsc_aggregated, hw_rsc_flushed, which it takes from the
descriptors' RSCCNT) move; after `ethtool -K lro off` the file still
arrives intact and they stay where they were."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.vm import VMFactory
from scenarios import WIRE_NET, Guest, assert_clean_log, assert_qemu_quiet, boot_back_to_back, wire_back_to_back

pytestmark = pytest.mark.usefixtures("require_ixgbe")

SIZE = 16 * 1024 * 1024
PORT = 5301
RSC_COUNTERS = ("hw_rsc_aggregated", "hw_rsc_flushed")


@pytest.fixture(scope="module")
def b2b(require_ixgbe: None, make_module_vm: VMFactory) -> Iterator[Guest]:
    g = boot_back_to_back(make_module_vm, "ixgbe", "ixgbe", smp=2)
    wire_back_to_back(g.vm, *g.devs)
    g.vm.sh(f"head -c {SIZE} /dev/urandom > /tmp/rsc-src")
    yield g


def lro(g: Guest) -> str:
    for line in g.vm.sh(f"ethtool -k {g.devs[0]}").splitlines():
        if line.strip().startswith("large-receive-offload:"):
            return line.split(":", 1)[1].split()[0]
    raise AssertionError(f"ethtool -k {g.devs[0]} shows no large-receive-offload")


def transfer(g: Guest) -> None:
    """The file from the namespace's port to the root namespace's one
    with busybox nc, compared by SHA-256."""
    vm = g.vm
    vm.sh(f"rm -f /tmp/rsc-dst; (nc -l -p {PORT} > /tmp/rsc-dst 2>/dev/null &)")
    vm.wait_until("nc listening", lambda: "LISTEN" in vm.run(f"ss -ltn 'sport = :{PORT}'").stdout)
    r = vm.run(f"ip netns exec peer timeout 240 nc {WIRE_NET}.1 {PORT} < /tmp/rsc-src", timeout=300)
    assert r.ok, f"nc failed:\n{r.stdout}"
    vm.wait_until("nc done", lambda: "ESTAB" not in vm.run(f"ss -tn 'sport = :{PORT}'").stdout)
    size = int(vm.sh("wc -c < /tmp/rsc-dst").strip())
    src, dst = (vm.sh(f"sha256sum {f}").split()[0] for f in ("/tmp/rsc-src", "/tmp/rsc-dst"))
    assert size == SIZE and src == dst, f"received {size} bytes, sha256 {dst}; sent {SIZE}, sha256 {src}"


def rsc_counts(g: Guest) -> dict[str, int]:
    stats = g.vm.ethtool_stats(g.devs[0])
    missing = [c for c in RSC_COUNTERS if c not in stats]
    assert not missing, f"ethtool -S {g.devs[0]} has no {missing}"
    return {c: stats[c] for c in RSC_COUNTERS}


@pytest.mark.skip(
    reason="work in progress: the busybox nc transfer arrived short (63488 of 16 MiB) with LRO on on 6.12, "
    "and iperf3 -F was no integrity check even with LRO off; not yet known whether RSC or the method"
)
@pytest.mark.kernel_sensitive("traffic", family="rsc")
def test_lro_on_and_off(b2b: Guest) -> None:
    """`ethtool -K lro on` (the driver resets the port): the transfer is
    intact and coalesced. Then `ethtool -K lro off`: intact, and nothing is
    coalesced."""
    g, dev = b2b, b2b.devs[0]
    assert lro(g) == "off", "the driver leaves LRO off at probe"
    g.vm.sh(f"ethtool -K {dev} lro on")
    assert lro(g) == "on"
    g.vm.wait_carrier(dev)
    before = g.vm.ethtool_stats(dev)
    transfer(g)
    after = g.vm.ethtool_stats(dev)
    moved = {c: after[c] - before[c] for c in RSC_COUNTERS}
    print(f"LRO on: {moved}")
    assert moved["hw_rsc_flushed"] > 0 and moved["hw_rsc_aggregated"] > moved["hw_rsc_flushed"], moved
    up = risen(before, after)
    assert not up, f"error counters rose: {up}"

    g.vm.sh(f"ethtool -K {dev} lro off")
    assert lro(g) == "off"
    g.vm.wait_carrier(dev)
    before = rsc_counts(g)
    transfer(g)
    after = rsc_counts(g)
    print(f"LRO off: before {before}, after {after}")
    assert after == before
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)
