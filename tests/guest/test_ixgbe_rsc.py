"""ixgbe receive side coalescing, the driver's large-receive-offload (off
at probe in the 6.1 and 6.12 drivers; `ethtool -K lro on` turns RSC on):
two ports wired back to back, one in a network namespace, and a 16 MiB
file of random bytes sent over TCP from the namespace's port into the
other one, over IPv4 and over IPv6. With LRO on the file arrives intact,
the driver's RSC counters (hw_rsc_aggregated, hw_rsc_flushed, which it
takes from the descriptors' RSCCNT) show segments coalesced several to an
aggregate, and the kernel does not find the aggregates' gso_size (which
the driver derives from RSCCNT) suspect; after `ethtool -K lro off` the
file still arrives intact and the counters stay where they were."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ixgbe_testlib.iperf3 import iperf3_summary
from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.vm import VMFactory
from scenarios import WIRE_NET, Guest, assert_clean_log, assert_qemu_quiet, boot_back_to_back, wire_back_to_back

pytestmark = pytest.mark.usefixtures("require_ixgbe")

SIZE = 16 * 1024 * 1024
PORT = 5301
WIRE_NET6 = "fd00:5301::"
RSC_COUNTERS = ("hw_rsc_aggregated", "hw_rsc_flushed")
SUSPECT_GRO = "suspect GRO implementation"
RSCCTL_RSCEN = 1
RFCTL_RSC_DIS = 1 << 5


@pytest.fixture(scope="module")
def b2b(require_ixgbe: None, make_module_vm: VMFactory) -> Iterator[Guest]:
    g = boot_back_to_back(make_module_vm, "ixgbe", "ixgbe", smp=2)
    wire_back_to_back(g.vm, *g.devs)
    a, b = g.devs
    g.vm.sh(
        f"ip -6 addr add {WIRE_NET6}1/64 dev {a} nodad && "
        f"ip netns exec peer ip -6 addr add {WIRE_NET6}2/64 dev {b} nodad"
    )
    g.vm.sh(f"head -c {SIZE} /dev/urandom > /tmp/rsc-src")
    yield g


def lro(g: Guest) -> str:
    for line in g.vm.sh(f"ethtool -k {g.devs[0]}").splitlines():
        if line.strip().startswith("large-receive-offload:"):
            return line.split(":", 1)[1].split()[0]
    raise AssertionError(f"ethtool -k {g.devs[0]} shows no large-receive-offload")


def rsc_regs(g: Guest) -> tuple[list[int], int]:
    """The receiving port's RSCCTL of its first four receive queues and its
    RFCTL, read from BAR 0 through QEMU's monitor."""
    bar0 = int(g.vm.sh(f"head -1 /sys/bus/pci/devices/{g.pcis[0]}/resource").split()[0], 16)

    def word(off: int) -> int:
        out = str(g.vm.qmp("human-monitor-command", **{"command-line": f"xp /1wx {bar0 + off:#x}"}))
        return int(out.split(":", 1)[1].split()[0], 16)

    return [word(0x102C + 0x40 * q) for q in range(4)], word(0x5008)


def transfer(g: Guest, dst: str) -> float:
    """The file from the namespace's port to dst (an address of the root
    namespace's port) with busybox nc, compared by size and SHA-256;
    returns the transfer's MB/s. The listener's stdin stays open (busybox
    nc half-closes the connection when its stdin ends, and the sender then
    stops early), so the sender's end of file is what ends it."""
    vm = g.vm
    vm.sh(f"rm -f /tmp/rsc-dst; (sleep 300 | nc -l -p {PORT} > /tmp/rsc-dst 2>/dev/null &)")
    vm.wait_until("nc listening", lambda: "LISTEN" in vm.run(f"ss -ltn 'sport = :{PORT}'").stdout)
    t0 = time.monotonic()
    r = vm.run(f"ip netns exec peer timeout 240 nc {dst} {PORT} < /tmp/rsc-src", timeout=300)
    elapsed = time.monotonic() - t0
    assert r.ok, f"nc failed:\n{r.stdout}"
    vm.wait_until("nc done", lambda: "ESTAB" not in vm.run(f"ss -tn 'sport = :{PORT}'").stdout)
    size = int(vm.sh("wc -c < /tmp/rsc-dst").strip())
    src, got = (vm.sh(f"sha256sum {f}").split()[0] for f in ("/tmp/rsc-src", "/tmp/rsc-dst"))
    assert size == SIZE and src == got, f"received {size} bytes, sha256 {got}; sent {SIZE}, sha256 {src}"
    return SIZE / elapsed / 1e6


def rsc_counts(g: Guest) -> dict[str, int]:
    stats = g.vm.ethtool_stats(g.devs[0])
    missing = [c for c in RSC_COUNTERS if c not in stats]
    assert not missing, f"ethtool -S {g.devs[0]} has no {missing}"
    return {c: stats[c] for c in RSC_COUNTERS}


@pytest.mark.kernel_sensitive("traffic", family="rsc")
def test_lro_on_and_off(b2b: Guest) -> None:
    """`ethtool -K lro on` (the driver resets the port): IPv4 and IPv6
    transfers are intact and coalesced, several segments to an aggregate,
    with no suspect gso_size. Then `ethtool -K lro off`: intact, and
    nothing is coalesced. RSCCTL (RSCEN on each queue of the port) and
    RFCTL.RSC_DIS follow the setting."""
    g, dev = b2b, b2b.devs[0]
    assert lro(g) == "off", "the driver leaves LRO off at probe"
    g.vm.sh(f"ethtool -K {dev} lro on")
    assert lro(g) == "on"
    g.vm.wait_carrier(dev)
    rscctl, rfctl = rsc_regs(g)
    nq = int(g.vm.sh(f"ls -d /sys/class/net/{dev}/queues/rx-* | wc -l"))
    assert all(r & RSCCTL_RSCEN for r in rscctl[:nq]) and not rfctl & RFCTL_RSC_DIS, (rscctl, hex(rfctl))
    for dst in (f"{WIRE_NET}.1", f"{WIRE_NET6}1"):
        before = g.vm.ethtool_stats(dev)
        rate = transfer(g, dst)
        after = g.vm.ethtool_stats(dev)
        moved = {c: after[c] - before[c] for c in RSC_COUNTERS}
        print(f"LRO on, to {dst}: {rate:.1f} MB/s, {moved}")
        assert moved["hw_rsc_flushed"] > 0 and moved["hw_rsc_aggregated"] > moved["hw_rsc_flushed"], moved
        up = risen(before, after)
        assert not up, f"error counters rose: {up}"
    log = g.vm.sh("dmesg")
    assert SUSPECT_GRO not in log, "the kernel found the aggregates' gso_size suspect:\n" + log[-2000:]

    g.vm.sh(f"ethtool -K {dev} lro off")
    assert lro(g) == "off"
    g.vm.wait_carrier(dev)
    rscctl, rfctl = rsc_regs(g)
    assert not any(rscctl) and rfctl & RFCTL_RSC_DIS, (rscctl, hex(rfctl))
    for dst in (f"{WIRE_NET}.1", f"{WIRE_NET6}1"):
        before = rsc_counts(g)
        rate = transfer(g, dst)
        after = rsc_counts(g)
        print(f"LRO off, to {dst}: {rate:.1f} MB/s, before {before}, after {after}")
        assert after == before
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)



BULK_PORTS = (5302, 5303)
BULK_SECONDS = 4


def iperf3_server(g: Guest, port: int) -> None:
    """A one-off iperf3 server in the root namespace, listening."""
    g.vm.sh(f"iperf3 -s -D -1 -p {port}")
    listen = f"ss -ltn 'sport = :{port}'"
    g.vm.wait_until(f"iperf3 server on port {port}", lambda: "LISTEN" in g.vm.run(listen).stdout)


def bulk(g: Guest, port: int, lro_on: bool, gro_on: bool) -> tuple[float, float, float]:
    """iperf3 from the namespace's port into the other one (an iperf3
    server on `port` there, one per run: a server reopens its listening
    socket after each test) for BULK_SECONDS with LRO and GRO set on the
    receiving port: (Mbit/s received, the sender's retransmissions per MB,
    segments per RSC aggregate)."""
    g.vm.sh(f"ethtool -K {g.devs[0]} lro {'on' if lro_on else 'off'} gro {'on' if gro_on else 'off'}")
    g.vm.wait_carrier(g.devs[0])
    before = rsc_counts(g)
    mbps, retrans = iperf3_summary(g.vm.iperf3_client(f"{WIRE_NET}.1", port, BULK_SECONDS, netns="peer"))
    after = rsc_counts(g)
    flushed = after["hw_rsc_flushed"] - before["hw_rsc_flushed"]
    segs = 1 + (after["hw_rsc_aggregated"] - before["hw_rsc_aggregated"]) / flushed if flushed else 1.0
    per_mb = retrans / max(mbps * BULK_SECONDS / 8, 1.0)
    print(f"LRO {'on' if lro_on else 'off'}, GRO {'on' if gro_on else 'off'}: {mbps:.1f} Mbit/s, "
          f"{retrans} retransmissions ({per_mb:.2f}/MB), {segs:.1f} segments per aggregate")
    return mbps, per_mb, segs


def test_lro_with_gro(b2b: Guest) -> None:
    """LRO with GRO on, what the driver runs once LRO is on, against both
    off, in the same guest one after the other: a bulk TCP stream moves
    at least as fast (0.6x allowed for a loaded host) and with no more
    retransmissions per MB than both off (twice allowed, plus 1/MB).
    GRO merges what it takes for a segment and an aggregate into one
    frame; when a lone segment came just before an aggregate of its flow
    in one poll, the merged frame lost the aggregate's payload (the
    stock driver gives RSC frames no segment count), and the sender
    retransmitted it: a quarter of the throughput and 10-40 times the
    retransmissions."""
    g = b2b
    for port in BULK_PORTS:
        iperf3_server(g, port)
    off_mbps, off_retrans, _ = bulk(g, BULK_PORTS[0], False, False)
    on_mbps, on_retrans, segs = bulk(g, BULK_PORTS[1], True, True)
    g.vm.sh(f"ethtool -K {g.devs[0]} lro off gro on")
    assert segs > 1.5, f"LRO on coalesced {segs:.1f} segments per aggregate"
    assert on_mbps >= 0.6 * off_mbps, f"LRO+GRO {on_mbps:.1f} Mbit/s, both off {off_mbps:.1f}"
    assert on_retrans <= 2 * off_retrans + 1, f"retransmissions/MB: LRO+GRO {on_retrans:.2f}, both off {off_retrans:.2f}"
    assert_qemu_quiet(g.vm)
