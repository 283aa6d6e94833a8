"""Checks shared by the NIC tests: kernel-log problems of one device, error
counters, and RSS flow placement (observed vs. predicted)."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Mapping, Sequence

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.frames import Flow, FramePort
from ixgbe_testlib.host import scaled
from ixgbe_testlib.parsers import KmsgRecord
from ixgbe_testlib.toeplitz import flow_hash, reta_queue
from ixgbe_testlib.vm import VM

# ------------------------------------------------------------- kernel log


def device_problems(
    records: Iterable[KmsgRecord], driver: str, pci_addresses: Sequence[str], netdevs: Sequence[str]
) -> list[KmsgRecord]:
    """Kernel log records at warning level or worse (level <= 4: emerg,
    alert, crit, err, warning) that concern the device: printed by its driver
    ("ixgbe ...", "ixgbe: ..."), or naming its PCI address (the PCI core,
    DMA/IOMMU, AER) or one of its interfaces ("eth0: ...")."""
    pats = [re.compile(rf"^{re.escape(driver)}[ :]")]
    pats += [re.compile(re.escape(a)) for a in pci_addresses]
    pats += [re.compile(rf"(^|[\s:]){re.escape(n)}(:|\s|$)") for n in netdevs]
    return [r for r in records if r.level <= 4 and any(p.search(r.text) for p in pats)]


# Warnings the driver prints, by design, when the kernel denies it MSI-X
# and MSI (`pci=nomsi`): it falls back to one queue on a legacy interrupt.
NOMSI_FALLBACK = (
    re.compile(r"Failed to allocate MSI-X interrupts"),
    re.compile(r"Disabling SR-IOV support"),
    re.compile(r"Disabling RSS support"),
    re.compile(r"Failed to allocate MSI interrupt, falling back to legacy"),
)


def without(records: Iterable[KmsgRecord], expected: Sequence[re.Pattern[str]]) -> list[KmsgRecord]:
    """`records` minus those matching one of the `expected` patterns."""
    return [r for r in records if not any(p.search(r.text) for p in expected)]


def format_records(records: Iterable[KmsgRecord]) -> str:
    return "\n".join(f"<{r.level}>[{r.timestamp:12.6f}] {r.text}" for r in records)


# ---------------------------------------------------------- error counters

# Hardware and driver error/loss counters: "*_errors" (CRC, length, missed,
# ...), "missed", DMA/buffer exhaustion, allocation failures, TX hangs. Not
# the kernel's software counters rx_dropped/tx_dropped: they also count
# normal events, e.g. a frame handed to an interface while it goes down.
_ERROR_COUNTER = re.compile(
    r"(errors?$|_err$|_errors?_|missed|no_dma|no_buffer|alloc.*failed|failed$|timeout)"
)
# Counters whose names match but which count normal events.
_NOT_ERRORS: frozenset[str] = frozenset()


def error_counters(stats: Mapping[str, int]) -> dict[str, int]:
    """The counters of an `ethtool -S` dict that count errors or losses."""
    return {k: v for k, v in stats.items() if _ERROR_COUNTER.search(k) and k not in _NOT_ERRORS}


def risen(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, tuple[int, int]]:
    """Error counters that went up between two `ethtool -S` snapshots."""
    b, a = error_counters(before), error_counters(after)
    return {k: (b.get(k, 0), v) for k, v in a.items() if v > b.get(k, 0)}


# --------------------------------------------------------------------- RSS


def rx_queue_packets(stats: Mapping[str, int]) -> dict[int, int]:
    """{queue: packets} from the per-queue `rx_queue_N_packets` counters."""
    out = {}
    for k, v in stats.items():
        m = re.fullmatch(r"rx_queue_(\d+)_packets", k)
        if m:
            out[int(m.group(1))] = v
    if not out:
        raise GuestError("no rx_queue_N_packets counters in ethtool -S")
    return out


def hashes_ports(flow_hash_text: str) -> bool:
    """Whether `ethtool -n dev rx-flow-hash X` says the L4 ports are hashed."""
    if "IP SA" not in flow_hash_text or "IP DA" not in flow_hash_text:
        raise GuestError(f"RSS does not hash on IP addresses:\n{flow_hash_text}")
    return "L4 bytes 0 & 1" in flow_hash_text and "L4 bytes 2 & 3" in flow_hash_text


@dataclasses.dataclass(frozen=True)
class FlowPlacement:
    flow: Flow
    queue: int | None  # where the frames landed (None: not on one queue)
    deltas: dict[int, int]  # packets per queue while this flow was sent
    hash_value: int | None = None
    predicted: int | None = None


def place_flows(
    vm: VM,
    dev: str,
    port: FramePort,
    flows: Sequence[Flow],
    dst_mac: str,
    src_mac: str = "02:00:00:00:00:01",
    frames_per_flow: int = 3,
    settle_timeout: float = 20.0,
) -> list[FlowPlacement]:
    """Send each flow alone and see which RX queue(s) its frames reach."""
    before = rx_queue_packets(vm.ethtool_stats(dev))
    out: list[FlowPlacement] = []
    for i, flow in enumerate(flows):
        for k in range(frames_per_flow):
            port.send(flow.frame(dst_mac, src_mac, seq=i * frames_per_flow + k))
        deadline = time.monotonic() + scaled(settle_timeout)
        while True:
            now = rx_queue_packets(vm.ethtool_stats(dev))
            deltas = {q: now.get(q, 0) - before.get(q, 0) for q in now}
            if sum(deltas.values()) >= frames_per_flow or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        port.drain()
        moved = {q: d for q, d in deltas.items() if d}
        queue = next(iter(moved)) if len(moved) == 1 and sum(moved.values()) == frames_per_flow else None
        out.append(FlowPlacement(flow, queue, moved))
        before = now
    return out


def predict(
    placements: Sequence[FlowPlacement], key: bytes, reta: Sequence[int], ports: Mapping[str, bool]
) -> list[FlowPlacement]:
    """Add the reference hash and queue to each placement. `ports` says per
    protocol ("udp", "tcp") whether the L4 ports are part of the hash."""
    out = []
    for p in placements:
        f = p.flow
        if ports[f.proto]:
            h = flow_hash(key, f.src, f.dst, f.sport, f.dport)
        else:
            h = flow_hash(key, f.src, f.dst)
        out.append(dataclasses.replace(p, hash_value=h, predicted=reta_queue(h, reta)))
    return out


def make_flows(dst: str, count: int = 64) -> list[Flow]:
    """`count` distinct IPv4 flows towards `dst`: three quarters UDP from
    distinct source addresses, one quarter TCP SYNs from one address with
    distinct source ports (so both the 2-tuple and the 4-tuple hash count)."""
    net = dst.rsplit(".", 1)[0]
    flows = []
    n_tcp = count // 4
    for i in range(count - n_tcp):
        flows.append(Flow("udp", f"{net}.{10 + i}", dst, 40000 + i, 9))
    for i in range(n_tcp):
        flows.append(Flow("tcp", f"{net}.9", dst, 33000 + 7 * i, 5001))
    return flows


def placement_report(placements: Sequence[FlowPlacement]) -> str:
    lines = []
    for p in placements:
        f = p.flow
        h = f"{p.hash_value:#010x}" if p.hash_value is not None else "-"
        lines.append(
            f"{f.proto} {f.src}:{f.sport} -> {f.dst}:{f.dport} hash={h} "
            f"predicted={p.predicted} observed={p.queue} per-queue={p.deltas}"
        )
    return "\n".join(lines)
