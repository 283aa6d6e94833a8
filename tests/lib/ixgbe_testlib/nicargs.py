"""QEMU arguments for the guest's NICs: `-device` (behind a PCIe root port)
and `-netdev` (slirp, or a unix datagram wire), and their MAC addresses."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def nic_args(
    model: str,
    netdev: str,
    index: int,
    mac: str,
    root_port: bool = True,
    extra: str = "",
) -> list[str]:
    """-device arguments for a NIC; by default behind its own PCIe root port,
    where an add-in card sits on real hardware."""
    dev = f"{model},netdev={netdev},mac={mac},romfile=,id=nic{index}"
    if extra:
        dev += "," + extra
    if not root_port:
        return ["-device", dev]
    port = f"rp{index}"
    return [
        "-device", f"pcie-root-port,id={port},chassis={index + 1},slot={index + 1}",
        "-device", f"{dev},bus={port}",
    ]  # fmt: skip


def mac_address(index: int) -> str:
    return f"52:54:00:12:34:{0x56 + index:02x}"


def user_netdev(netdev: str, hostfwd: Sequence[tuple[int, int]] = (), subnet: int = 2) -> list[str]:
    """-netdev user (slirp: guest 10.0.<subnet>.15, host loopback as
    10.0.<subnet>.2; a host forward goes to the guest's .15)."""
    opts = f"user,id={netdev},net=10.0.{subnet}.0/24,restrict=off"
    for host_port, guest_port in hostfwd:
        opts += f",hostfwd=tcp:127.0.0.1:{host_port}-:{guest_port}"
    return ["-netdev", opts]


def dgram_netdev(netdev: str, local: Path, remote: Path) -> list[str]:
    """-netdev dgram over unix sockets: one Ethernet frame per datagram."""
    return [
        "-netdev",
        f"dgram,id={netdev},local.type=unix,local.path={local},remote.type=unix,remote.path={remote}",
    ]
