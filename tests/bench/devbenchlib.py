"""Pure parts of the device-model benchmark (devbench.py): the three Intel
NIC models' register programs and descriptor formats (virtio-net's
virtqueues: virtqueue.py; the drivers: devdrivers.py), the qtest command lines
and their relocation for the protocol-overhead replay, parsers (trace log,
callgrind profile, perf stat), per-window figures, statistics and tables.

Nothing here starts a process or opens a socket, so all of it is
unit-tested (tests/bench/test_devbenchlib.py). The runner is devbench.py.
"""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

from benchlib import BenchError, Summary, fmt_value, ratio, summarize

SUBJECT = "ixgbe"
MODEL_NAMES = ("ixgbe", "igb", "e1000e", "virtio-net")
DESC = 16  # every descriptor format used here is 16 bytes (virtio's too)

DEVICE_MAC = bytes.fromhex("525400123456")
PEER_MAC = bytes.fromhex("525400aabbcc")
DEVICE_IP = bytes([198, 51, 100, 2])  # TEST-NET-2
PEER_IP = bytes([198, 51, 100, 1])

# MSI-X messages are written into a "mailbox" in guest RAM, one 32-bit word
# per vector (data: vector + 1), which the client polls like an interrupt
# line: nothing in the qtest machine would run an interrupt handler.
MAILBOX_VECTORS = 4


# ------------------------------------------------------------------ frames
def ip_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(int(w) for w in struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def udp_frame(size: int, seq: int = 0, dst: bytes = DEVICE_MAC, src: bytes = PEER_MAC) -> bytes:
    """An Ethernet II / IPv4 / UDP frame of `size` bytes without FCS (60 is
    the 64-byte minimum frame, 1514 the 1518-byte maximum), with correct IP
    and UDP checksums, so that every model's receive checksum validation
    has real work to do."""
    if not 60 <= size <= 1514:
        raise BenchError(f"frame size {size} outside 60..1514")
    payload_len = size - 14 - 20 - 8
    payload = bytes((seq + i * 7) & 0xFF for i in range(payload_len))
    udp_len = 8 + payload_len
    ip_hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, seq & 0xFFFF, 0, 64, 17, 0, PEER_IP, DEVICE_IP)
    ip_hdr = ip_hdr[:10] + struct.pack("!H", ip_checksum(ip_hdr)) + ip_hdr[12:]
    sport, dport = 40000 + (seq & 0xFF), 5201
    pseudo = PEER_IP + DEVICE_IP + struct.pack("!BBH", 0, 17, udp_len)
    udp_hdr = struct.pack("!HHHH", sport, dport, udp_len, 0)
    csum = ip_checksum(pseudo + udp_hdr + payload) or 0xFFFF
    udp_hdr = udp_hdr[:6] + struct.pack("!H", csum)
    frame = dst + src + b"\x08\x00" + ip_hdr + udp_hdr + payload
    assert len(frame) == size
    return frame


# ---------------------------------------------------------- register programs
@dataclasses.dataclass(frozen=True)
class Write:
    reg: int
    value: int
    note: str = ""


@dataclasses.dataclass(frozen=True)
class SetBits:
    """Read-modify-write: reg |= bits."""

    reg: int
    bits: int
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Step:
    """Advance QEMU's virtual clock (qtest clock_step)."""

    ns: int
    note: str = ""


@dataclasses.dataclass(frozen=True)
class Expect:
    """Read reg and require (value & mask) == want."""

    reg: int
    mask: int
    want: int
    note: str = ""


Op = Union[Write, SetBits, Step, Expect]


@dataclasses.dataclass(frozen=True)
class RingLayout:
    """Where the rings and buffers live in guest memory."""

    tx_ring: int
    rx_ring: int
    tx_bufs: int
    rx_bufs: int
    ndesc: int
    buf_size: int = 2048

    def tx_buf(self, i: int) -> int:
        return self.tx_bufs + (i % self.ndesc) * self.buf_size

    def rx_buf(self, i: int) -> int:
        return self.rx_bufs + (i % self.ndesc) * self.buf_size


def mac_ral_rah(mac: bytes) -> tuple[int, int]:
    """RAL/RAH values (without the address-valid bit) for a MAC address."""
    if len(mac) != 6:
        raise BenchError(f"bad MAC {mac!r}")
    return struct.unpack("<I", mac[:4])[0], struct.unpack("<H", mac[4:])[0]


@dataclasses.dataclass(frozen=True)
class NicModel:
    """One NIC model as its Linux driver would program it for one queue
    pair with MSI-X (see each *_setup function for the registers)."""

    name: str
    device: str  # -device
    mmio_region: str  # name of BAR 0's MemoryRegion, as trace events show it
    tdt: int
    rdt: int
    tx_irq_enable: tuple[int, int]  # (register, value) a NAPI poll writes when done
    rx_irq_enable: tuple[int, int]
    tx_vector: int  # MSI-X vector of TX queue 0
    rx_vector: int  # MSI-X vector of RX queue 0
    irq_events: tuple[str, ...]  # trace events, one per MSI-X message the model sends
    tx_format: str  # "advanced" or "legacy"
    rx_format: str  # "advanced" or "extended"
    itr_reg: str  # how --itr-us is written, for the report

    def tx_desc(self, buf: int, length: int) -> bytes:
        if self.tx_format == "advanced":
            return adv_tx_desc(buf, length)
        return legacy_tx_desc(buf, length, ide=True)

    def rx_desc(self, buf: int) -> bytes:
        """Read format, the same 16 bytes for advanced and extended."""
        return struct.pack("<QQ", buf, 0)


# 82599 / 82576 advanced transmit data descriptor (the two are alike)
ADV_DTYP_DATA = 0x3 << 20
ADV_DCMD_EOP = 1 << 24
ADV_DCMD_IFCS = 1 << 25
ADV_DCMD_RS = 1 << 27
ADV_DCMD_DEXT = 1 << 29
ADV_PAYLEN_SHIFT = 14
# 82574 legacy transmit descriptor
LEG_CMD_EOP = 1 << 24
LEG_CMD_IFCS = 1 << 25
LEG_CMD_RS = 1 << 27
LEG_CMD_IDE = 1 << 31


def adv_tx_desc(buf: int, length: int) -> bytes:
    if not 0 < length < 1 << 16:
        raise BenchError(f"bad TX length {length}")
    cmd = length | ADV_DTYP_DATA | ADV_DCMD_DEXT | ADV_DCMD_IFCS | ADV_DCMD_EOP | ADV_DCMD_RS
    return struct.pack("<QII", buf, cmd, length << ADV_PAYLEN_SHIFT)


def legacy_tx_desc(buf: int, length: int, ide: bool) -> bytes:
    if not 0 < length < 1 << 16:
        raise BenchError(f"bad TX length {length}")
    cmd = length | LEG_CMD_EOP | LEG_CMD_IFCS | LEG_CMD_RS | (LEG_CMD_IDE if ide else 0)
    return struct.pack("<QII", buf, cmd, 0)


def tx_done(desc: bytes) -> bool:
    """DD in the status byte (byte 12) of every transmit format used here."""
    return bool(desc[12] & 1)


def rx_done(desc: bytes) -> tuple[bool, int]:
    """(DD, length) from a receive write-back: status/error dword at byte 8
    (DD = bit 0) and the length at byte 12, in the advanced (82599, 82576)
    and the extended (82574) formats alike."""
    status, length = struct.unpack_from("<IH", desc, 8)
    return bool(status & 1), length


# ---- interrupt moderation, written as each Linux driver writes
# `ethtool -C <if> rx-usecs N`
def ixgbe_eitr(usecs: int) -> int:
    # ixgbe: itr_setting = usecs << 2; EITR gets it (bits 11:3, 2 us units
    # on the 82599) with CNT_WDIS
    return ((usecs << 2) & 0xFF8) | (1 << 31)


def igb_eitr(usecs: int) -> int:
    # igb: itr_setting = usecs << 2 (values 1..3 are modes); 82576: & 0x7FFC
    # with CNT_IGNR
    return ((usecs << 2) & 0x7FFC) | (1 << 31)


def e1000e_eitr(usecs: int) -> int:
    # e1000e: itr = 1000000 / usecs interrupts/s; EITR_82574 =
    # 1e9 / (itr * 256) (256 ns units)
    if usecs == 0:
        return 0
    return 1_000_000_000 // ((1_000_000 // usecs) * 256)


# ---- ixgbe (82599)
IXGBE_EICR_OTHER = 1 << 31
IXGBE_EICR_LSC = 1 << 20


def ixgbe_setup(lay: RingLayout, itr_us: int, rx_wthresh: int = 0) -> list[Op]:
    """rx_wthresh: RXDCTL.WTHRESH (0, receive write-back per descriptor, is
    what Linux and DPDK program on the 82599)."""
    ral, rah = mac_ral_rah(DEVICE_MAC)
    rxdctl_note = f"RXDCTL0: ENABLE, WTHRESH {rx_wthresh}" if rx_wthresh else "RXDCTL0.ENABLE"
    return [
        # interrupts: MSI-X, one vector for the queue pair (0), one for the rest (1)
        Write(0x00898, (1 << 4) | (1 << 5) | (1 << 30) | (1 << 31), "GPIE: MSIX_MODE|OCD|EIAME|PBA_SUPPORT"),
        Write(0x00900, 0x80 | (0x80 << 8), "IVAR0: rx0 -> vector 0, tx0 -> vector 0"),
        Write(0x00A00, (0x80 | 1) << 8, "IVAR_MISC: other causes -> vector 1"),
        Write(0x00820, ixgbe_eitr(itr_us), f"EITR0: rx-usecs {itr_us}"),
        Write(0x00824, ixgbe_eitr(itr_us), "EITR1"),
        Write(0x00810, 0x1, "EIAC: vector 0 auto-clears"),
        Write(0x00AD0, 0xFFFFFFFF, "EIAM_EX0: auto-mask"),
        Write(0x00AD4, 0xFFFFFFFF, "EIAM_EX1"),
        # receive
        SetBits(0x04240, 1 << 1, "HLREG0.RXCRCSTRP"),
        Write(0x0A200, ral, "RAL0"),
        Write(0x0A204, rah | (1 << 31), "RAH0 | AV"),
        Write(0x05080, 1 << 10, "FCTRL: BAM"),
        Write(0x01000, lay.rx_ring & 0xFFFFFFFF, "RDBAL0"),
        Write(0x01004, lay.rx_ring >> 32, "RDBAH0"),
        Write(0x01008, lay.ndesc * DESC, "RDLEN0"),
        Write(0x01014, (1 << 25) | (lay.buf_size // 1024), "SRRCTL0: advanced one buffer, 2 KiB"),
        Write(0x01010, 0, "RDH0"),
        Write(0x01018, 0, "RDT0"),
        Write(0x01028, (1 << 25) | (rx_wthresh << 16), rxdctl_note),
        Expect(0x01028, 1 << 25, 1 << 25, "RXDCTL0 enabled"),
        Write(0x01018, lay.ndesc - 1, "RDT0: all but one descriptor to the device"),
        Write(0x03000, 1, "RXCTRL.RXEN"),
        # transmit (WTHRESH 8: what ixgbe uses at moderated rates)
        Write(0x06000, lay.tx_ring & 0xFFFFFFFF, "TDBAL0"),
        Write(0x06004, lay.tx_ring >> 32, "TDBAH0"),
        Write(0x06008, lay.ndesc * DESC, "TDLEN0"),
        Write(0x06010, 0, "TDH0"),
        Write(0x06018, 0, "TDT0"),
        SetBits(0x04A80, 1, "DMATXCTL.TE"),
        Write(0x06028, (1 << 25) | (8 << 16) | (1 << 8) | 32, "TXDCTL0: ENABLE, WTHRESH 8, HTHRESH 1, PTHRESH 32"),
        Expect(0x06028, 1 << 25, 1 << 25, "TXDCTL0 enabled"),
        # unmask: queue vector and the other causes
        Write(0x00AA0, 0x1, "EIMS_EX0: vector 0"),
        Write(0x00880, IXGBE_EICR_OTHER | IXGBE_EICR_LSC, "EIMS: OTHER|LSC"),
    ]


# ---- igb (82576) and e1000e (82574): shared bits
E1000_CTRL = 0x00000
E1000_STATUS = 0x00008
E1000_CTRL_EXT = 0x00018
E1000_MDIC = 0x00020
E1000_CTRL_SLU = 1 << 6
E1000_STATUS_LU = 1 << 1
MDIC_AUTONEG = (1 << 12) | (1 << 9)  # BMCR: AUTOEN | ANRESTART
MDIC_WRITE_BMCR = MDIC_AUTONEG | (0 << 16) | (1 << 21) | (1 << 26)  # reg 0, phy 1, op write
E1000_RCTL_EN = 1 << 1
E1000_RCTL_BAM = 1 << 15
E1000_RCTL_SECRC = 1 << 26
E1000_TCTL_EN = 1 << 1
E1000_TCTL_PSP = 1 << 3


def link_up_ops() -> list[Op]:
    """Set link up and let the PHY's autonegotiation finish (QEMU's igb
    completes it on a 500 ms virtual-time timer; e1000e has link at once)."""
    return [
        SetBits(E1000_CTRL, E1000_CTRL_SLU, "CTRL.SLU"),
        Write(E1000_MDIC, MDIC_WRITE_BMCR, "MDIC: PHY BMCR autoneg restart"),
        Step(1_000_000_000, "autonegotiation"),
        Expect(E1000_STATUS, E1000_STATUS_LU, E1000_STATUS_LU, "STATUS.LU"),
    ]


# ---- igb (82576)
def igb_setup(lay: RingLayout, itr_us: int) -> list[Op]:
    ral, rah = mac_ral_rah(DEVICE_MAC)
    return [
        *link_up_ops(),
        SetBits(E1000_CTRL_EXT, (1 << 31) | (1 << 24) | (1 << 0) | (1 << 28), "CTRL_EXT: PBA_CLR|EIAME|IRCA|DRV_LOAD"),
        Write(0x01514, (1 << 4) | (1 << 30) | (1 << 31) | 1, "GPIE: MSIX_MODE|EIAME|PBA|NSICR"),
        Write(0x01700, 0x80 | (0x80 << 8), "IVAR0: rx0 -> vector 0, tx0 -> vector 0"),
        Write(0x01740, (0x80 | 1) << 8, "IVAR_MISC: other causes -> vector 1"),
        Write(0x01680, igb_eitr(itr_us), f"EITR0: rx-usecs {itr_us}"),
        Write(0x01684, igb_eitr(itr_us), "EITR1"),
        # receive
        Write(0x05400, ral, "RAL0"),
        Write(0x05404, rah | (1 << 31), "RAH0 | AV"),
        Write(0x0C000, lay.rx_ring & 0xFFFFFFFF, "RDBAL0"),
        Write(0x0C004, lay.rx_ring >> 32, "RDBAH0"),
        Write(0x0C008, lay.ndesc * DESC, "RDLEN0"),
        Write(0x0C00C, (1 << 25) | (lay.buf_size // 1024), "SRRCTL0: advanced one buffer, 2 KiB"),
        Write(0x0C010, 0, "RDH0"),
        Write(0x0C018, 0, "RDT0"),
        Write(0x0C028, (1 << 25) | (1 << 16) | (8 << 8) | 8, "RXDCTL0: ENABLE, WTHRESH 1, HTHRESH 8, PTHRESH 8"),
        Write(0x0C018, lay.ndesc - 1, "RDT0: all but one descriptor to the device"),
        Write(0x00100, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC, "RCTL: EN|BAM|SECRC, 2 KiB buffers"),
        # transmit (WTHRESH 1: igb on an 82576 with MSI-X)
        Write(0x0E000, lay.tx_ring & 0xFFFFFFFF, "TDBAL0"),
        Write(0x0E004, lay.tx_ring >> 32, "TDBAH0"),
        Write(0x0E008, lay.ndesc * DESC, "TDLEN0"),
        Write(0x0E010, 0, "TDH0"),
        Write(0x0E018, 0, "TDT0"),
        Write(0x0E028, (1 << 25) | (1 << 16) | (1 << 8) | 8, "TXDCTL0: ENABLE, WTHRESH 1, HTHRESH 1, PTHRESH 8"),
        Write(0x00400, E1000_TCTL_EN | E1000_TCTL_PSP | (0xF << 4) | (0x40 << 12), "TCTL: EN|PSP, CT, COLD"),
        # unmask (igb_irq_enable)
        Write(0x0152C, 0x3, "EIAC: vectors 0, 1"),
        Write(0x01530, 0x3, "EIAM: vectors 0, 1"),
        Write(0x01524, 0x3, "EIMS: vectors 0, 1"),
        Write(0x000D0, (1 << 2) | (1 << 28) | (1 << 30), "IMS: LSC|DOUTSYNC|DRSTA"),
    ]


# ---- e1000e (82574L)
E1000E_ICR_RXQ0 = 1 << 20
E1000E_ICR_TXQ0 = 1 << 22
E1000E_ICR_OTHER = 1 << 24
E1000E_ICR_LSC = 1 << 2


def e1000e_setup(lay: RingLayout, itr_us: int) -> list[Op]:
    ral, rah = mac_ral_rah(DEVICE_MAC)
    eitr = e1000e_eitr(itr_us)
    eiac = E1000E_ICR_RXQ0 | E1000E_ICR_TXQ0 | E1000E_ICR_OTHER
    return [
        *link_up_ops(),
        # e1000_configure_msix: rx -> 0, tx -> 1, other -> 2, TX interrupt on every write-back
        Write(0x000E4, 0x8 | ((0x8 | 1) << 8) | ((0x8 | 2) << 16) | (1 << 31), "IVAR: rx0 0, tx0 1, other 2"),
        Write(0x000E8, eitr, f"EITR0: rx-usecs {itr_us}"),
        Write(0x000EC, eitr, "EITR1"),
        Write(0x000F0, eitr, "EITR2"),
        Write(0x000C4, eitr, "ITR"),
        Write(0x000E0, (~0x01F00000 & 0xFFFFFFFF) | E1000E_ICR_OTHER, "IAM"),
        SetBits(E1000_CTRL_EXT, (1 << 31) | (1 << 24) | (1 << 28), "CTRL_EXT: PBA_CLR|EIAME|DRV_LOAD"),
        # receive: extended descriptors (RFCTL.EXTEN), RDTR 0, RADV 8 (driver defaults)
        Write(0x05400, ral, "RAL0"),
        Write(0x05404, rah | (1 << 31), "RAH0 | AV"),
        SetBits(0x05008, 1 << 15, "RFCTL.EXTEN"),
        Write(0x02820, 0, "RDTR"),
        Write(0x0282C, 8, "RADV"),
        Write(0x02800, lay.rx_ring & 0xFFFFFFFF, "RDBAL"),
        Write(0x02804, lay.rx_ring >> 32, "RDBAH"),
        Write(0x02808, lay.ndesc * DESC, "RDLEN"),
        Write(0x02810, 0, "RDH"),
        Write(0x02818, 0, "RDT"),
        Write(0x02818, lay.ndesc - 1, "RDT: all but one descriptor to the device"),
        Write(0x00100, E1000_RCTL_EN | E1000_RCTL_BAM | E1000_RCTL_SECRC, "RCTL: EN|BAM|SECRC, 2 KiB buffers"),
        # transmit: legacy descriptors with IDE, TIDV 8, TADV 32 (driver defaults)
        Write(0x03800, lay.tx_ring & 0xFFFFFFFF, "TDBAL"),
        Write(0x03804, lay.tx_ring >> 32, "TDBAH"),
        Write(0x03808, lay.ndesc * DESC, "TDLEN"),
        Write(0x03810, 0, "TDH"),
        Write(0x03818, 0, "TDT"),
        Write(0x03820, 8, "TIDV 8"),
        Write(0x0382C, 32, "TADV 32"),
        Write(0x00400, E1000_TCTL_EN | E1000_TCTL_PSP | (0xF << 4) | (0x3F << 12), "TCTL: EN|PSP, CT, COLD"),
        # unmask (e1000_irq_enable with MSI-X)
        Write(0x000DC, eiac, "EIAC_82574: rx0|tx0|other"),
        Write(0x000D0, eiac | E1000E_ICR_LSC, "IMS: rx0|tx0|other|LSC"),
    ]


# igb reuses e1000e's trace events; every msix_notify() of the three
# models is next to one of these (QEMU 10.0 and this tree's ixgbe)
E1000E_IRQ_EVENTS = ("e1000e_irq_msix_notify_vec", "e1000e_irq_msix_notify_postponed_vec")

MODELS: dict[str, NicModel] = {
    "ixgbe": NicModel(
        "ixgbe", "ixgbe", "ixgbe-mmio", tdt=0x06018, rdt=0x01018,
        tx_irq_enable=(0x00AA0, 0x1), rx_irq_enable=(0x00AA0, 0x1), tx_vector=0, rx_vector=0,
        irq_events=("ixgbe_irq_msix",),
        tx_format="advanced", rx_format="advanced", itr_reg="EITR = usecs << 2 | CNT_WDIS",
    ),
    "igb": NicModel(
        "igb", "igb", "igb-mmio", tdt=0x0E018, rdt=0x0C018,
        tx_irq_enable=(0x01524, 0x1), rx_irq_enable=(0x01524, 0x1), tx_vector=0, rx_vector=0,
        irq_events=E1000E_IRQ_EVENTS,
        tx_format="advanced", rx_format="advanced", itr_reg="EITR = usecs << 2 | CNT_IGNR",
    ),
    "e1000e": NicModel(
        "e1000e", "e1000e", "e1000e-mmio", tdt=0x03818, rdt=0x02818,
        tx_irq_enable=(0x000D0, E1000E_ICR_TXQ0), rx_irq_enable=(0x000D0, E1000E_ICR_RXQ0),
        tx_vector=1, rx_vector=0, irq_events=E1000E_IRQ_EVENTS,
        tx_format="legacy", rx_format="extended", itr_reg="EITR = 1e9 / (1e6 / usecs * 256)",
    ),
}  # fmt: skip



@dataclasses.dataclass(frozen=True)
class VirtioNetModel:
    """virtio-net-pci, driven through its modern interface with split
    virtqueues (devdrivers.VirtioNet; the vectors are Linux's: configuration
    0, receiveq1 1, transmitq1 2)."""

    name: str
    device: str
    mmio_region: str  # prefix of its modern BAR's regions' names (common, isr, device, notify)
    irq_events: tuple[str, ...]
    tx_vector: int
    rx_vector: int
    ring_format: str = "split virtqueue, EVENT_IDX"


VIRTIO_NET = VirtioNetModel("virtio-net", "virtio-net-pci", "virtio-pci-", irq_events=("virtio_notify",),
                            tx_vector=2, rx_vector=1)  # fmt: skip
ALL_MODELS: dict[str, NicModel | VirtioNetModel] = {**MODELS, "virtio-net": VIRTIO_NET}

SETUPS = {"ixgbe": ixgbe_setup, "igb": igb_setup, "e1000e": e1000e_setup}


def setup_ops(model: str, lay: RingLayout, itr_us: int, ixgbe_rx_wthresh: int = 0) -> list[Op]:
    if model not in SETUPS:
        raise BenchError(f"unknown model {model!r}")
    if lay.ndesc < 8 or lay.ndesc % 8:
        raise BenchError(f"ring size {lay.ndesc} must be a multiple of 8")
    if not 0 <= ixgbe_rx_wthresh <= 127:
        raise BenchError(f"RXDCTL.WTHRESH {ixgbe_rx_wthresh} is not 0..127")
    if model == "ixgbe":
        return ixgbe_setup(lay, itr_us, ixgbe_rx_wthresh)
    return SETUPS[model](lay, itr_us)


# ------------------------------------------------------------ qtest lines
ACCESS_SUFFIX = {1: "b", 2: "w", 4: "l"}


def cmd_writel(addr: int, value: int, size: int = 4) -> str:
    """A register write of `size` bytes (writeb, writew, writel)."""
    return f"write{ACCESS_SUFFIX[size]} 0x{addr:x} 0x{value & ((1 << (8 * size)) - 1):x}"


def cmd_readl(addr: int, size: int = 4) -> str:
    """A register read of `size` bytes (readb, readw, readl)."""
    return f"read{ACCESS_SUFFIX[size]} 0x{addr:x}"


def cmd_memwrite(addr: int, data: bytes) -> str:
    return f"write 0x{addr:x} {len(data)} 0x{data.hex()}"


def cmd_memread(addr: int, size: int) -> str:
    return f"read 0x{addr:x} {size}"


def cmd_clock_step(ns: int) -> str:
    return f"clock_step {ns}"


def parse_reply(line: str) -> str:
    """The value of a qtest reply ("OK" -> "", "OK 0x12" -> "0x12");
    "FAIL ..."/"ERR ..." raise."""
    line = line.rstrip("\n")
    if line == "OK":
        return ""
    if line.startswith("OK "):
        return line[3:]
    raise BenchError(f"qtest: {line!r}")


def parse_memread(value: str, size: int) -> bytes:
    if not value.startswith("0x"):
        raise BenchError(f"read reply without 0x: {value[:40]!r}")
    data = bytes.fromhex(value[2:])
    if len(data) != size:
        raise BenchError(f"read returned {len(data)} bytes, asked for {size}")
    return data


@dataclasses.dataclass(frozen=True)
class Relocation:
    """Addresses in [base, base + size) move to target + offset."""

    base: int
    size: int
    target: int

    def maps(self, addr: int) -> bool:
        return self.base <= addr < self.base + self.size


def null_command(line: str, relocations: Sequence[Relocation]) -> str:
    """The command of the protocol-overhead replay for one recorded command:
    the same command with the same sizes, but every address the device
    would see (its registers, its rings and buffers) moved to scratch RAM,
    so QEMU parses, dispatches and answers it alike while the device does
    nothing. clock_step stays as it is (the device is idle then)."""
    words = line.split(" ")
    op = words[0]
    if op in ("writeb", "writew", "writel", "readb", "readw", "readl", "write", "read"):
        addr = int(words[1], 16)
        for r in relocations:
            if r.maps(addr):
                words[1] = f"0x{r.target + addr - r.base:x}"
                return " ".join(words)
        raise BenchError(f"no relocation for address 0x{addr:x} in {line[:60]!r}")
    if op == "clock_step":
        return line
    raise BenchError(f"unexpected command in a measured window: {line[:60]!r}")


# --------------------------------------------------------------- pci config
def cf8(bus: int, dev: int, fn: int, reg: int) -> int:
    """The CONFIG_ADDRESS value for a configuration register (dword aligned)."""
    if not (0 <= bus < 256 and 0 <= dev < 32 and 0 <= fn < 8 and 0 <= reg < 256):
        raise BenchError(f"bad config address {bus}:{dev}.{fn} reg 0x{reg:x}")
    return 0x80000000 | (bus << 16) | (dev << 11) | (fn << 8) | (reg & 0xFC)


@dataclasses.dataclass(frozen=True)
class BarInfo:
    index: int
    is_io: bool
    is_64: bool
    size: int


def bar_info(index: int, original: int, sized_lo: int, sized_hi: int | None) -> BarInfo | None:
    """A BAR from its value and what it read after writing all ones (and its
    upper half's for a 64-bit BAR); None when the BAR is not implemented."""
    if sized_lo == 0:
        return None
    if original & 1:
        size = (~(sized_lo & 0xFFFFFFFC) & 0xFFFF) + 1
        return BarInfo(index, True, False, size)
    is_64 = ((original >> 1) & 3) == 2
    mask = sized_lo & 0xFFFFFFF0
    if is_64:
        mask |= (sized_hi or 0) << 32
        size = (~mask & 0xFFFFFFFFFFFFFFFF) + 1
    else:
        size = (~mask & 0xFFFFFFFF) + 1
    return BarInfo(index, False, is_64, size)


@dataclasses.dataclass(frozen=True)
class MsixCap:
    offset: int  # of the capability in config space
    table_size: int
    table_bar: int
    table_offset: int
    pba_bar: int
    pba_offset: int


def msix_cap(offset: int, dword0: int, table: int, pba: int) -> MsixCap:
    """Decode an MSI-X capability from its three dwords."""
    if dword0 & 0xFF != 0x11:
        raise BenchError(f"not an MSI-X capability at 0x{offset:x}: 0x{dword0:08x}")
    return MsixCap(offset, ((dword0 >> 16) & 0x7FF) + 1, table & 7, table & ~7, pba & 7, pba & ~7)


# ----------------------------------------------------------- trace parsing
TRACE_RE = re.compile(
    r"memory_region_ops_(?P<op>read|write) cpu -?\d+ mr 0x[0-9a-f]+ addr 0x(?P<addr>[0-9a-f]+) "
    r"value 0x(?P<value>[0-9a-f]+) size (?P<size>\d+) name '(?P<name>[^']*)'"
)
VECTOR_RE = re.compile(r"(0x[0-9a-fA-F]+|\d+)\]?\s*$")


@dataclasses.dataclass
class TraceCounts:
    irqs: dict[int, int]  # MSI-X vector -> messages sent
    accesses: dict[tuple[str, str], int]  # (region, read|write) -> count

    @property
    def interrupts(self) -> int:
        return sum(self.irqs.values())

    def region_accesses(self, region: str) -> int:
        """Accesses to the regions whose names start with `region` (the
        Intel models have one, virtio-net-pci's modern BAR four)."""
        return sum(c for (name, _), c in self.accesses.items() if name.startswith(region))


def parse_trace(text: str, irq_events: Sequence[str]) -> TraceCounts:
    """Count, in QEMU's log (-D, trace backend "log"), the model's MSI-X
    trace events per vector (the vector is the message's last number:
    "MSI-X vector 3", "MSI-X notify vector 0x3", "... by EITR[3]") and the
    memory_region_ops_read/write lines per region. Other lines are skipped.
    A line may carry a "pid@time:" prefix (-msg timestamp=on)."""
    irqs: dict[int, int] = {}
    acc: dict[tuple[str, str], int] = {}
    events = set(irq_events)
    for line in text.splitlines():
        word = line.split(" ", 1)[0]
        word = word.rsplit(":", 1)[-1] if "@" in word else word
        if word in events:
            m = VECTOR_RE.search(line)
            if not m:
                raise BenchError(f"trace line without a vector: {line!r}")
            v = int(m.group(1), 0)
            irqs[v] = irqs.get(v, 0) + 1
            continue
        m = TRACE_RE.search(line)
        if m:
            key = (m.group("name"), m.group("op"))
            acc[key] = acc.get(key, 0) + 1
    return TraceCounts(irqs, acc)


# -------------------------------------------------------- callgrind profile
@dataclasses.dataclass
class Profile:
    """One callgrind dump: total instructions, self cost per function and
    per source file, and the inclusive cost of every call arc."""

    total: int
    by_fn: dict[str, int]
    by_file: dict[str, int]
    calls: dict[tuple[str, str], int] = dataclasses.field(default_factory=dict)  # (caller, callee) -> inclusive


# Where QEMU does work for a NIC model, whoever triggers it: the MMIO
# handlers (every register access, and what a tail write sets off: fetching
# descriptors, DMA, the backend's send, MSI-X), the backend's fd handlers
# (a received frame's way into the model), timer callbacks (interrupt
# moderation) and bottom halves. Idle main-loop iterations and the qtest
# protocol are outside all of them.
DEVICE_ENTRIES = (
    "memory_region_dispatch_read",
    "memory_region_dispatch_write",
    "net_dgram_send",
    "net_dgram_writable",
    "timerlist_run_timers",
    "aio_bh_call",
)


def fn_base(name: str) -> str:
    """A function's name without GCC's clone suffix (.part.0, .isra.0,
    .constprop.0) and callgrind's recursion level ('2)."""
    return name.split("'", 1)[0].split(".", 1)[0]


def entry_cost(prof: Profile, entries: Sequence[str] = DEVICE_ENTRIES) -> int:
    """Inclusive cost of the calls into the entry functions from outside
    them (a nested call, or a deeper recursion level, is already inside)."""
    want = set(entries)
    return sum(
        cost
        for (caller, callee), cost in prof.calls.items()
        if fn_base(callee) in want and "'" not in callee and fn_base(caller) not in want
    )


def parse_callgrind(text: str) -> Profile:
    """A callgrind output file written with --compress-strings=no and
    --compress-pos=no and the single event Ir. Self cost is every cost line
    except the one following a calls= line (that one is the call's
    inclusive cost). Cost lines are attributed to the current fn= and to the
    current source file (fi=/fe= for inlined code, else fl=)."""
    by_fn: dict[str, int] = {}
    by_file: dict[str, int] = {}
    calls: dict[tuple[str, str], int] = {}
    fn = fl = fi = cfn = "???"
    total: int | None = None
    summary: int | None = None
    after_calls = False
    saw_events = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            parts = line.split()
            if after_calls:
                after_calls = False
                if len(parts) < 2:
                    raise BenchError(f"callgrind: bad call cost line {raw!r}")
                calls[(fn, cfn)] = calls.get((fn, cfn), 0) + int(parts[1])
                continue
            if len(parts) < 2:
                raise BenchError(f"callgrind: bad cost line {raw!r}")
            cost = int(parts[1])
            by_fn[fn] = by_fn.get(fn, 0) + cost
            by_file[fi] = by_file.get(fi, 0) + cost
            continue
        key, _, val = line.partition("=")
        if key == "fn":
            fn, fi = val, fl
        elif key == "fl":
            fl = fi = val
        elif key in ("fi", "fe"):
            fi = val
        elif key == "calls":
            after_calls = True
        elif key == "cfn":
            cfn = val
        elif line.startswith("events:"):
            saw_events = True
            if line.split()[1:] != ["Ir"]:
                raise BenchError(f"callgrind: expected the single event Ir, got {line!r}")
        elif line.startswith("totals:"):
            total = int(line.split()[1])
        elif line.startswith("summary:"):
            summary = int(line.split()[1])
        elif line.startswith(("positions:", "version:", "creator:", "pid:", "cmd:", "part:", "desc:", "thread:")):
            pass
        elif re.match(r"^(ob|cob|cfi|cfl|jump|jcnd)=", line):
            pass
        else:
            raise BenchError(f"callgrind: unexpected line {raw!r}")
    if not saw_events:
        raise BenchError("not a callgrind profile (no events: line)")
    tot = total if total is not None else summary
    if tot is None:
        tot = sum(by_fn.values())
    return Profile(tot, by_fn, by_file, calls)


FILE_CLASSES = (
    ("device model", ("hw/net/ixgbe", "hw/net/igb", "hw/net/e1000", "hw/net/virtio-net", "hw/virtio/")),
    ("packet helpers, checksums", ("hw/net/net_rx_pkt", "hw/net/net_tx_pkt", "net/checksum", "net/eth")),
    ("net core, backend", ("net/",)),
    (
        "memory, DMA, MSI-X",
        ("system/memory", "system/physmem", "system/dma", "include/exec/", "include/system/", "hw/pci/"),
    ),
    ("qtest protocol", ("system/qtest", "chardev/", "io/")),
    ("main loop, timers", ("util/", "system/cpus", "system/runstate")),
)


def file_class(path: str) -> str:
    """The part of QEMU a source file belongs to (for the cost breakdown).
    Paths from QEMU's build are relative to its build dir ('../hw/net/..')."""
    p = path.replace("../", "")
    if p.startswith(("./", "/usr/")) or path == "???" or "glib" in p:
        return "libraries (glibc, GLib)"
    for label, prefixes in FILE_CLASSES:
        if any(pre in p for pre in prefixes):
            return label
    return "other QEMU"


def profile_delta(real: Profile, null: Profile) -> tuple[int, dict[str, int], dict[str, int]]:
    """real - null: total, per function and per file class."""
    fns = {k: real.by_fn.get(k, 0) - null.by_fn.get(k, 0) for k in set(real.by_fn) | set(null.by_fn)}
    classes: dict[str, int] = {}
    for prof, sign in ((real, 1), (null, -1)):
        for f, v in prof.by_file.items():
            c = file_class(f)
            classes[c] = classes.get(c, 0) + sign * v
    return real.total - null.total, fns, classes


# ----------------------------------------------------------- perf stat
def perf_supported(stderr: str) -> bool:
    """Whether `perf stat -x, -e instructions` counted anything."""
    for line in stderr.splitlines():
        parts = line.split(",")
        if len(parts) >= 3 and parts[2].startswith("instructions"):
            return parts[0].strip().isdigit()
    return False


def parse_perf_instructions(stderr: str) -> int:
    """The instruction count from `perf stat -x, -e instructions` output."""
    for line in stderr.splitlines():
        parts = line.split(",")
        if len(parts) >= 3 and parts[2].startswith("instructions"):
            if not parts[0].strip().isdigit():
                raise BenchError(f"perf: instructions not counted: {line!r}")
            return int(parts[0])
    raise BenchError(f"perf: no instructions line in {stderr[:200]!r}")


# ------------------------------------------------------------ figures
@dataclasses.dataclass
class Window:
    """What one measured window did and cost."""

    packets: int
    cpu_ns: int  # QEMU process CPU time (all threads)
    wall_ns: int
    commands: dict[str, int]  # qtest commands by kind
    mmio_reads: int  # the client's register accesses (the "driver's")
    mmio_writes: int
    polls: int = 0  # interrupts the client saw in its mailbox (NAPI polls)
    idle_ticks: int = 0  # ticks without new frames (ring full, or draining at the end)


def add_windows(a: Window, b: Window) -> Window:
    """Two windows (or a window's chunks) as one."""
    cmds = dict(a.commands)
    for k, v in b.commands.items():
        cmds[k] = cmds.get(k, 0) + v
    return Window(a.packets + b.packets, a.cpu_ns + b.cpu_ns, a.wall_ns + b.wall_ns, cmds,
                  a.mmio_reads + b.mmio_reads, a.mmio_writes + b.mmio_writes, a.polls + b.polls,
                  a.idle_ticks + b.idle_ticks)  # fmt: skip


def window_figures(real: Window, null: Window) -> dict[str, float]:
    """Per-packet figures of one device window and its protocol-overhead
    replay (same commands, device idle)."""
    if real.packets <= 0:
        raise BenchError("window without packets")
    if real.commands != null.commands:
        raise BenchError(f"replay differs from the window: {real.commands} vs {null.commands}")
    n = real.packets
    return {
        "packets": n,
        "cpu_ns_per_pkt": (real.cpu_ns - null.cpu_ns) / n,
        "cpu_ns_per_pkt_raw": real.cpu_ns / n,
        "protocol_share": null.cpu_ns / real.cpu_ns if real.cpu_ns else math.nan,
        "reg_accesses_per_pkt": (real.mmio_reads + real.mmio_writes) / n,
        "reg_reads_per_pkt": real.mmio_reads / n,
        "reg_writes_per_pkt": real.mmio_writes / n,
        "qtest_cmds_per_pkt": sum(real.commands.values()) / n,
        "polls_per_pkt": real.polls / n,
        "kpps_wall": 1e6 * n / real.wall_ns if real.wall_ns else math.nan,
    }


def count_figures(packets: int, counts: TraceCounts, region: str) -> dict[str, float]:
    if packets <= 0:
        raise BenchError("count window without packets")
    return {
        "irq_per_pkt": counts.interrupts / packets,
        "qemu_reg_accesses_per_pkt": counts.region_accesses(region) / packets,
    }


# --------------------------------------------------------- summaries, tables
@dataclasses.dataclass(frozen=True)
class Cell:
    direction: str  # "tx" or "rx"
    size: int  # frame bytes without FCS (60, 1514)

    @property
    def key(self) -> str:
        return f"{self.direction}-{self.size}"

    @property
    def label(self) -> str:
        wire = self.size + 4
        return f"{self.direction.upper()} {wire if wire == 64 else self.size}B"


def parse_cell(key: str) -> Cell:
    m = re.fullmatch(r"(tx|rx)-(\d+)", key)
    if not m:
        raise BenchError(f"bad cell {key!r}")
    return Cell(m.group(1), int(m.group(2)))


def paired_ratios(mine: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """Ratios of the samples taken in the same repetition (the models are
    measured round robin, so sample i of each saw the same host conditions)."""
    out = []
    for a, b in zip(mine, theirs):
        r = ratio(a, b)
        if r is not None:
            out.append(r)
    return out


@dataclasses.dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str


METRICS = (
    Metric("instr_per_pkt", "host instructions / packet, device work", "instructions"),
    Metric("cpu_ns_per_pkt", "host CPU ns / packet", "ns"),
    Metric("reg_accesses_per_pkt", "register accesses / packet", "accesses"),
    Metric("irq_per_pkt", "interrupts / packet", "MSI-X messages"),
)
# also in the text table and the JSON, not in the plot
EXTRA_METRICS = (
    Metric("instr_all_per_pkt", "host instructions / packet, all of QEMU's user space (callgrind)", "instructions"),
    Metric("instr_perf_per_pkt", "host instructions / packet, whole QEMU process (perf)", "instructions"),
)


def summarize_samples(
    samples: Iterable[Mapping[str, Any]],
) -> dict[str, dict[str, dict[str, Summary]]]:
    """samples (dicts with model, cell and figures) -> metric -> cell -> model -> Summary."""
    vals: dict[str, dict[str, dict[str, list[float]]]] = {}
    for s in samples:
        for k, v in s["figures"].items():
            if isinstance(v, (int, float)) and math.isfinite(v):
                vals.setdefault(k, {}).setdefault(s["cell"], {}).setdefault(s["model"], []).append(float(v))
    return {k: {c: {m: summarize(v) for m, v in per.items()} for c, per in cells.items()} for k, cells in vals.items()}


def sample_values(samples: Iterable[Mapping[str, Any]], metric: str, cell: str, model: str) -> list[float]:
    """One figure's values in repetition order."""
    rows = [s for s in samples if s["model"] == model and s["cell"] == cell and metric in s["figures"]]
    rows.sort(key=lambda s: s["rep"])
    return [float(s["figures"][metric]) for s in rows]


def ratio_summary(
    samples: Sequence[Mapping[str, Any]],
    summ: Mapping[str, Mapping[str, Mapping[str, Summary]]],
    metric: str,
    cell: str,
    other: str,
) -> dict[str, Any] | None:
    """ixgbe/other for one figure: ratio of the medians, and the lowest and
    highest ratio of samples from the same repetition."""
    per = summ.get(metric, {}).get(cell, {})
    if SUBJECT not in per or other not in per:
        return None
    r = ratio(per[SUBJECT].median, per[other].median)
    pr = paired_ratios(sample_values(samples, metric, cell, SUBJECT), sample_values(samples, metric, cell, other))
    return {
        "ratio": r,
        "paired_min": min(pr) if pr else None,
        "paired_max": max(pr) if pr else None,
        "n_pairs": len(pr),
    }


def fmt_cell(s: Summary | None) -> str:
    if s is None:
        return "-"
    if s.n == 1 or s.spread_pct == 0:
        return fmt_value(s.median)
    return f"{fmt_value(s.median)} ±{s.spread_pct / 2:.0f}%"


def fmt_ratio_range(r: Mapping[str, Any] | None) -> str:
    if r is None or r["ratio"] is None:
        return "-"
    out = f"{r['ratio']:.2f}"
    if r["n_pairs"] >= 2 and r["paired_min"] is not None:
        out += f" ({r['paired_min']:.2f}-{r['paired_max']:.2f})"
    return out


def render_table(
    samples: Sequence[Mapping[str, Any]],
    summ: Mapping[str, Mapping[str, Mapping[str, Summary]]],
    models: Sequence[str],
    cells: Sequence[Cell],
    metrics: Sequence[Metric] = METRICS,
) -> str:
    """One block per metric: a row per cell, a column per model (median
    ±half the min-max range), then ixgbe/other as ratio of medians with the
    range of same-repetition ratios in parentheses."""
    others = [m for m in models if m != SUBJECT]
    blocks = []
    for met in metrics:
        header = ["", *models, *[f"{SUBJECT}/{o}" for o in others]]
        body = []
        for cell in cells:
            per = summ.get(met.key, {}).get(cell.key, {})
            if not per:
                continue
            row = [cell.label, *[fmt_cell(per.get(m)) for m in models]]
            row += [fmt_ratio_range(ratio_summary(samples, summ, met.key, cell.key, o)) for o in others]
            body.append(row)
        if not body:
            continue
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

        def line(cs: Sequence[str]) -> str:
            return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cs)).rstrip()

        blocks.append(
            "\n".join(
                [f"== {met.label} ({met.unit}; lower is better)", line(header), line(["-" * w for w in widths])]
                + [line(r) for r in body]
            )
        )
    return "\n\n".join(blocks)


def all_ratios(
    samples: Sequence[Mapping[str, Any]],
    summ: Mapping[str, Mapping[str, Mapping[str, Summary]]],
    models: Sequence[str],
    cells: Sequence[Cell],
) -> dict[str, dict[str, dict[str, Any]]]:
    """metric -> cell -> "ixgbe/<other>" -> ratio_summary(), for every
    metric of the tables that has samples."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for met in (*METRICS, *EXTRA_METRICS):
        for cell in cells:
            for o in models:
                if o == SUBJECT:
                    continue
                r = ratio_summary(samples, summ, met.key, cell.key, o)
                if r is not None:
                    out.setdefault(met.key, {}).setdefault(cell.key, {})[f"{SUBJECT}/{o}"] = r
    return out


# ------------------------------------------------- host memory (--memory)
# `-device` of each model in the memory mode; virtio-net-pci is realized but
# not driven there (devmem.drive programs the Intel models only)
MEM_DEVICES = {"ixgbe": "ixgbe", "igb": "igb", "e1000e": "e1000e", "virtio-net": "virtio-net-pci"}
MEM_MODEL_NAMES = tuple(MEM_DEVICES)
# /proc/PID/smaps_rollup fields kept, in bytes
SMAPS_KEYS = ("Rss", "Pss", "Private_Dirty", "Anonymous")


def parse_smaps_rollup(text: str) -> dict[str, int]:
    """/proc/PID/smaps_rollup (or one mapping of smaps) -> field -> bytes."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = re.fullmatch(r"([A-Za-z_]+):\s+(\d+) kB", line.strip())
        if m:
            out[m.group(1)] = int(m.group(2)) * 1024
    if "Rss" not in out:
        raise BenchError(f"no Rss in smaps_rollup: {text[:200]!r}")
    return out


def ols_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of ys over xs."""
    if len(xs) != len(ys) or len(set(xs)) < 2:
        raise BenchError("a slope needs points at two or more x")
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Median of the slopes between every two points at different x: one
    outlying start in ten or so cannot move it, unlike a least-squares fit."""
    if len(xs) != len(ys):
        raise BenchError("xs and ys differ in length")
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i]) for i in range(len(xs)) for j in range(i + 1, len(xs)) if xs[j] != xs[i]
    ]
    if not slopes:
        raise BenchError("a slope needs points at two or more x")
    return float(statistics.median(slopes))


@dataclasses.dataclass(frozen=True)
class MemFit:
    """Bytes per device: the slope of a figure over the number of devices
    (N = 0, 1, 2, 4 ... of one model in one QEMU, several starts each)."""

    slope: float  # Theil-Sen, bytes per device
    ols: float  # least squares, for comparison
    intercept: float  # median of y - slope * x: the QEMU without that model
    noise: float  # largest max-min among the starts of one N
    uncertainty: float  # noise / (largest N - smallest N): what one noisy start can move the slope by
    points: int

    def as_dict(self) -> dict[str, float | int]:
        return dataclasses.asdict(self)


def fit_per_device(points: Sequence[tuple[int, float]]) -> MemFit:
    """points: (devices, value) of every start."""
    xs = [float(p[0]) for p in points]
    ys = [float(p[1]) for p in points]
    slope = theil_sen(xs, ys)
    by_x: dict[float, list[float]] = {}
    for x, y in zip(xs, ys):
        by_x.setdefault(x, []).append(y)
    noise = max(max(v) - min(v) for v in by_x.values())
    return MemFit(
        slope=slope,
        ols=ols_slope(xs, ys),
        intercept=statistics.median([y - slope * x for x, y in zip(xs, ys)]),
        noise=noise,
        uncertainty=noise / (max(xs) - min(xs)),
        points=len(points),
    )


def ratio_range(a: MemFit, b: MemFit) -> tuple[float | None, float | None, float | None]:
    """a/b of the slopes, and its lowest and highest value with each slope
    moved by its uncertainty (None where the denominator can reach 0)."""
    r = ratio(a.slope, b.slope)
    lo_den, hi_den = b.slope + b.uncertainty, b.slope - b.uncertainty
    if r is None or lo_den <= 0 or hi_den <= 0:
        return r, None, None
    return r, (a.slope - a.uncertainty) / lo_den, (a.slope + a.uncertainty) / hi_den


@dataclasses.dataclass
class MassifSnapshot:
    heap_b: int  # bytes asked for and not yet freed
    extra_b: int  # allocator overhead (headers, alignment)
    tree: list[tuple[int, int, str]]  # (depth, bytes, "function (file:line)"), root at depth 0


MASSIF_NODE_RE = re.compile(r"^( *)n\d+: (\d+) (.*)$")


def parse_massif(text: str) -> list[MassifSnapshot]:
    """The snapshots of a massif output file (massif.out.*, or what vgdb's
    `detailed_snapshot` writes), with the allocation tree of detailed ones."""
    snaps: list[MassifSnapshot] = []
    cur: MassifSnapshot | None = None
    for line in text.splitlines():
        if line.startswith("snapshot="):
            cur = MassifSnapshot(-1, -1, [])
            snaps.append(cur)
        elif cur is None:
            continue
        elif line.startswith("mem_heap_B="):
            cur.heap_b = int(line.split("=", 1)[1])
        elif line.startswith("mem_heap_extra_B="):
            cur.extra_b = int(line.split("=", 1)[1])
        else:
            m = MASSIF_NODE_RE.match(line)
            if m:
                # "in 12 places, all below massif's threshold": the count varies, the site does not
                label = re.sub(r"^in \d+ places?,", "in several places,", re.sub(r"^0x[0-9A-Fa-f]+: ", "", m.group(3)))
                cur.tree.append((len(m.group(1)), int(m.group(2)), label))
    if not snaps or any(s.heap_b < 0 or s.extra_b < 0 for s in snaps):
        raise BenchError(f"not a massif output: {text[:200]!r}")
    return snaps


def massif_sites(snap: MassifSnapshot, depth: int = 1) -> dict[str, int]:
    """Heap bytes by the call site `depth` frames below the allocation
    functions (1: the function that called g_malloc & co.). Nodes that end
    above that depth (below massif's threshold) count as their own label."""
    out: dict[str, int] = {}
    path: list[str] = []
    for i, (d, size, label) in enumerate(snap.tree):
        del path[d:]
        path.append(label)
        if d == 0:
            continue
        deeper = i + 1 < len(snap.tree) and snap.tree[i + 1][0] > d
        if d == depth or (d < depth and not deeper):
            key = " < ".join(path[1:])
            out[key] = out.get(key, 0) + size
    return out


def site_deltas(hi: Mapping[str, int], lo: Mapping[str, int], devices: int, top: int = 12) -> dict[str, float]:
    """Bytes per device by site between a QEMU with `devices` more devices
    (hi) and one without (lo), largest first; the rest as "(other sites)"."""
    if devices <= 0:
        raise BenchError("site deltas need at least one device more")
    d = {k: (hi.get(k, 0) - lo.get(k, 0)) / devices for k in set(hi) | set(lo)}
    d = {k: v for k, v in d.items() if v}
    ranked = sorted(d.items(), key=lambda kv: -abs(kv[1]))
    out = dict(ranked[:top])
    rest = sum(v for _, v in ranked[top:])
    if rest:
        out["(other sites)"] = rest
    return out


@dataclasses.dataclass(frozen=True)
class MemMetric:
    key: str
    label: str
    source: str  # "heap" (massif) or "rss" (smaps_rollup)


MEM_METRICS = (
    MemMetric("heap_b", "heap live (massif mem_heap_B)", "heap"),
    MemMetric("heap_total_b", "heap live + malloc overhead", "heap"),
    MemMetric("Anonymous", "anonymous RSS (smaps_rollup Anonymous; guest RAM excluded)", "rss"),
    MemMetric("Private_Dirty", "private dirty RSS (guest RAM excluded)", "rss"),
    MemMetric("Rss", "RSS (guest RAM excluded)", "rss"),
)


def fmt_kib(v: float) -> str:
    return f"{v / 1024:,.1f}"


def render_memory_table(fits: Mapping[str, Mapping[str, MemFit]], models: Sequence[str]) -> str:
    """One row per figure, a column per model (KiB per device, ± the
    uncertainty), then ixgbe/other with the range the uncertainties allow."""
    others = [m for m in models if m != SUBJECT]
    header = ["KiB per device", *models, *[f"{SUBJECT}/{o}" for o in others]]
    body = []
    for met in MEM_METRICS:
        per = {m: fits[m][met.key] for m in models if met.key in fits.get(m, {})}
        if not per:
            continue
        row = [met.label]
        for m in models:
            f = per.get(m)
            row.append(
                "-" if f is None else fmt_kib(f.slope) + (f" ±{fmt_kib(f.uncertainty)}" if f.uncertainty else "")
            )
        for o in others:
            if SUBJECT not in per or o not in per:
                row.append("-")
                continue
            r, lo, hi = ratio_range(per[SUBJECT], per[o])
            if r is None:
                row.append("-")
            elif lo is None or hi is None:
                row.append(f"{r:.2f} (unresolved)")
            else:
                row.append(f"{r:.2f}" if lo == hi else f"{r:.2f} ({lo:.2f}-{hi:.2f})")
        body.append(row)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cs: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cs)).rstrip()

    return "\n".join(
        ["== host memory per device (KiB; lower is better)", line(header), line(["-" * w for w in widths])]
        + [line(r) for r in body]
    )


def render_points_table(points: Mapping[str, Mapping[int, Sequence[Mapping[str, float]]]], key: str) -> str:
    """model -> devices -> starts' figures: median (min-max) of `key` in KiB
    per configuration, the raw material of the fits."""
    ns = sorted({n for per in points.values() for n in per})
    header = ["devices", *[str(n) for n in ns]]
    body = []
    for model, per in points.items():
        row = [model]
        for n in ns:
            vals = [float(p[key]) for p in per.get(n, []) if key in p]
            if not vals:
                row.append("-")
                continue
            s = summarize(vals)
            row.append(
                fmt_kib(s.median) if s.low == s.high else f"{fmt_kib(s.median)} ({fmt_kib(s.low)}-{fmt_kib(s.high)})"
            )
        body.append(row)
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cs: Sequence[str]) -> str:
        return "  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(cs)).rstrip()

    return "\n".join(
        [f"== {key} per QEMU (KiB: median (min-max) over starts)", line(header), line(["-" * w for w in widths])]
        + [line(r) for r in body]
    )
