"""Raw Ethernet frames from the host into a guest NIC.

`FramePort` is the host's end of a QEMU `-netdev dgram` backend over unix
sockets: every datagram is one Ethernet frame (no FCS). Frames are built
here byte by byte: Ethernet II, IPv4 (with header checksum), UDP and TCP
(with checksums over the pseudo-header).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import socket
import struct
from pathlib import Path

ETH_P_IPV4 = 0x0800
IPPROTO_TCP = 6
IPPROTO_UDP = 17


def mac_bytes(mac: str) -> bytes:
    parts = mac.split(":")
    if len(parts) != 6:
        raise ValueError(f"bad MAC address {mac!r}")
    return bytes(int(p, 16) for p in parts)


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of `data`."""
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ethernet(dst: str, src: str, ethertype: int, payload: bytes) -> bytes:
    frame = mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ethertype) + payload
    # pad to the 60-byte minimum (the FCS is not carried)
    return frame + bytes(max(0, 60 - len(frame)))


def ipv4(src: str, dst: str, proto: int, payload: bytes, ttl: int = 64, ident: int = 0) -> bytes:
    s, d = ipaddress.IPv4Address(src).packed, ipaddress.IPv4Address(dst).packed
    total = 20 + len(payload)
    if total > 0xFFFF:
        raise ValueError(f"IPv4 packet too long: {total}")
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, ident, 0x4000, ttl, proto, 0, s, d)
    header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    return header + payload


def _pseudo(src: str, dst: str, proto: int, length: int) -> bytes:
    return (
        ipaddress.IPv4Address(src).packed
        + ipaddress.IPv4Address(dst).packed
        + struct.pack("!BBH", 0, proto, length)
    )


def udp(src: str, dst: str, sport: int, dport: int, payload: bytes) -> bytes:
    length = 8 + len(payload)
    seg = struct.pack("!HHHH", sport, dport, length, 0) + payload
    csum = checksum(_pseudo(src, dst, IPPROTO_UDP, length) + seg) or 0xFFFF
    return seg[:6] + struct.pack("!H", csum) + seg[8:]


def tcp_syn(src: str, dst: str, sport: int, dport: int, seq: int = 1) -> bytes:
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, 0, 5 << 4, 0x02, 65535, 0, 0)
    csum = checksum(_pseudo(src, dst, IPPROTO_TCP, len(seg)) + seg)
    return seg[:16] + struct.pack("!H", csum) + seg[18:]


@dataclasses.dataclass(frozen=True)
class Flow:
    """One IPv4 flow towards the guest."""

    proto: str  # "udp" or "tcp"
    src: str
    dst: str
    sport: int
    dport: int

    def frame(self, dst_mac: str, src_mac: str, seq: int = 0) -> bytes:
        if self.proto == "udp":
            l4 = udp(self.src, self.dst, self.sport, self.dport, b"rss-probe %d" % seq)
            proto = IPPROTO_UDP
        elif self.proto == "tcp":
            l4 = tcp_syn(self.src, self.dst, self.sport, self.dport, seq=1000 + seq)
            proto = IPPROTO_TCP
        else:
            raise ValueError(f"unknown protocol {self.proto!r}")
        return ethernet(dst_mac, src_mac, ETH_P_IPV4, ipv4(self.src, self.dst, proto, l4, ident=seq))


class FramePort:
    """The host's end of `-netdev dgram,local.path=<qemu>,remote.path=<host>`."""

    def __init__(self, host_path: Path, qemu_path: Path) -> None:
        self.host_path = host_path
        self.qemu_path = qemu_path
        if host_path.exists():
            host_path.unlink()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._sock.bind(str(host_path))
        self._sock.setblocking(False)

    def send(self, frame: bytes) -> None:
        self._sock.sendto(frame, str(self.qemu_path))

    def drain(self) -> int:
        """Discard whatever the guest sent to us; return the frame count."""
        n = 0
        while True:
            try:
                self._sock.recv(65536)
            except BlockingIOError:
                return n
            n += 1

    def close(self) -> None:
        self._sock.close()
        try:
            os.unlink(self.host_path)
        except OSError:
            pass

    def __enter__(self) -> FramePort:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
