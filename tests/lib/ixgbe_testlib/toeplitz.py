"""Reference Toeplitz RSS hash and redirection-table lookup.

The hash as NICs (and the 82599) compute it: for every bit of the input, from
the most significant bit of the first byte on, when the bit is set XOR the
result with the 32 bits of the key that start at that bit's position.

The input is the packet's fields in wire order:
  IPv4:      source address, destination address            (8 bytes)
  IPv4 + L4: ... then source port, destination port          (12 bytes)
  IPv6:      source address, destination address            (32 bytes)
  IPv6 + L4: ... then source port, destination port          (36 bytes)

The queue is the redirection table (RETA) entry selected by the low bits of
the hash: `reta[hash % len(reta)]` (the 82599's 128-entry table uses the 7
least significant bits).
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Sequence

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def toeplitz_hash(key: bytes, data: bytes) -> int:
    """32-bit Toeplitz hash of `data` under `key`."""
    if len(key) < 4:
        raise ValueError(f"RSS key must be at least 4 bytes, got {len(key)}")
    if len(key) * 8 < len(data) * 8 + 32 - 1:
        raise ValueError(f"RSS key of {len(key)} bytes is too short for {len(data)} bytes of input")
    key_int = int.from_bytes(key, "big")
    key_bits = len(key) * 8
    result = 0
    for byte_index, byte in enumerate(data):
        for bit in range(8):
            if byte & (0x80 >> bit):
                pos = byte_index * 8 + bit
                # the 32 key bits starting at bit position `pos` (MSB first)
                result ^= (key_int >> (key_bits - 32 - pos)) & 0xFFFFFFFF
    return result


def _addr(value: str | Address) -> Address:
    return ipaddress.ip_address(value) if isinstance(value, str) else value


def rss_input(
    src: str | Address,
    dst: str | Address,
    sport: int | None = None,
    dport: int | None = None,
) -> bytes:
    """The hash input for a flow: addresses, then ports when both are given."""
    s, d = _addr(src), _addr(dst)
    if s.version != d.version:
        raise ValueError(f"address families differ: {s} and {d}")
    data = s.packed + d.packed
    if (sport is None) != (dport is None):
        raise ValueError("give both ports or neither")
    if sport is not None and dport is not None:
        for p in (sport, dport):
            if not 0 <= p <= 0xFFFF:
                raise ValueError(f"port out of range: {p}")
        data += struct.pack("!HH", sport, dport)
    return data


def flow_hash(
    key: bytes,
    src: str | Address,
    dst: str | Address,
    sport: int | None = None,
    dport: int | None = None,
) -> int:
    """Toeplitz hash of a flow (2-tuple when no ports are given, else 4-tuple)."""
    return toeplitz_hash(key, rss_input(src, dst, sport, dport))


def reta_queue(hash_value: int, reta: Sequence[int]) -> int:
    """The queue the redirection table assigns to a hash value."""
    n = len(reta)
    if n == 0 or n & (n - 1):
        raise ValueError(f"RETA size must be a power of two, got {n}")
    return reta[hash_value & (n - 1)]
