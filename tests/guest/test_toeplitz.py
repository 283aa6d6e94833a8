"""The reference RSS hash against the published verification vectors.

Key and expected values: the "Verifying the RSS Hash Calculation" table of
Microsoft's RSS documentation (also the 82599 datasheet's RSS verification
suite).
"""

from __future__ import annotations

import pytest

from ixgbe_testlib.toeplitz import flow_hash, reta_queue, rss_input, toeplitz_hash

KEY = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")

# (source, source port, destination, destination port, IP-only hash, IP+TCP hash)
IPV4_VECTORS = [
    ("66.9.149.187", 2794, "161.142.100.80", 1766, 0x323E8FC2, 0x51CCC178),
    ("199.92.111.2", 14230, "65.69.140.83", 4739, 0xD718262A, 0xC626B0EA),
    ("24.19.198.95", 12898, "12.22.207.184", 38024, 0xD2D0A5DE, 0x5C2B394A),
    ("38.27.205.30", 48228, "209.142.163.6", 2217, 0x82989176, 0xAFC7327F),
    ("153.39.163.191", 44251, "202.188.127.2", 1303, 0x5D1809C5, 0x10E828A2),
]

IPV6_VECTORS = [
    ("3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766, 0x2CC18CD5, 0x40207D3D),
    ("3ffe:501:8::260:97ff:fe40:efab", 14230, "ff02::1", 4739, 0x0F0C461C, 0xDDE51BBF),
    (
        "3ffe:1900:4545:3:200:f8ff:fe21:67cf",
        44251,
        "fe80::200:f8ff:fe21:67cf",
        38024,
        0x4B61E985,
        0x02D1FEEF,
    ),
]


@pytest.mark.parametrize("src,sport,dst,dport,ip_hash,tcp_hash", IPV4_VECTORS + IPV6_VECTORS)
def test_verification_vectors(
    src: str, sport: int, dst: str, dport: int, ip_hash: int, tcp_hash: int
) -> None:
    assert flow_hash(KEY, src, dst) == ip_hash
    assert flow_hash(KEY, src, dst, sport, dport) == tcp_hash


def test_input_layout() -> None:
    data = rss_input("1.2.3.4", "5.6.7.8", 0x0102, 0x0304)
    assert data == bytes([1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4])
    assert len(rss_input("::1", "::2")) == 32
    assert len(rss_input("::1", "::2", 1, 2)) == 36


def test_zero_input_and_single_bit() -> None:
    assert toeplitz_hash(KEY, bytes(12)) == 0
    # the first input bit selects the first 32 key bits
    assert toeplitz_hash(KEY, b"\x80" + bytes(11)) == int.from_bytes(KEY[:4], "big")
    # the ninth input bit selects key bits 8..39
    assert toeplitz_hash(KEY, b"\x00\x80" + bytes(10)) == int.from_bytes(KEY[1:5], "big")


def test_reta_lookup_uses_low_bits() -> None:
    reta = [i % 4 for i in range(128)]
    assert reta_queue(0x12345600 | 5, reta) == 1
    assert reta_queue(0xFFFFFF80 | 127, reta) == 3
    assert reta_queue(0x80, reta) == 0


@pytest.mark.parametrize(
    "call",
    [
        lambda: rss_input("1.2.3.4", "::1"),
        lambda: rss_input("1.2.3.4", "5.6.7.8", 1, None),
        lambda: rss_input("1.2.3.4", "5.6.7.8", 70000, 1),
        lambda: reta_queue(1, [0, 1, 2]),
        lambda: toeplitz_hash(KEY[:8], bytes(12)),
    ],
)
def test_bad_input_is_rejected(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]
