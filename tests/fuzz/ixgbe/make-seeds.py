#!/usr/bin/env python3
"""Write seed inputs for QEMU's generic-fuzz-ixgbe target.

libFuzzer finds its way into the device from an empty corpus, slowly: these
seeds start it where a driver would be, with the receive and transmit rings
set up and enabled, frames going out (to the slirp backend or looped back
by HLREG0.LPBK), MSI-X vectors routed and the I/O BAR in use. Each seed is a
sequence of generic-fuzz operations (tests/qtest/fuzz/generic_fuzz.c in
QEMU) separated by "FUZZ"; descriptors and buffers come from its DMA
patterns, which fill any guest memory the device reads.

With --dict, it also writes a libFuzzer dictionary: the register offsets
of hw/net/ixgbe_regs.h as the 32-bit operands of generic-fuzz's MMIO
operations, so that mutations land on registers rather than on holes.

With --vfs N (the targets with SR-IOV: N VFs enabled), it adds seeds that
use the VFs: the mailbox both ways, the PF in virtualization mode with
pools, a VF's transmit queue and interrupts, loopback between pools. The
VFs' BARs follow the PF's in the fuzzed regions, in address order: N
register BARs, then each VF's MSI-X table and PBA.

Usage: make-seeds.py OUTPUT_DIR [--dict FILE REGS_HEADER] [--vfs N]
(scripts/fuzz.sh runs it before fuzzing)
"""

import hashlib
import pathlib
import re
import struct
import sys

SEP = b"FUZZ"

# generic-fuzz opcodes (enum cmds)
OP_IN, OP_OUT, OP_READ, OP_WRITE, OP_PCI_READ, OP_PCI_WRITE = range(6)
OP_ADD_DMA_PATTERN, OP_CLEAR_DMA_PATTERNS, OP_CLOCK_STEP = 7, 8, 9

# Matched memory regions in address order: BAR0 (registers), then the
# MSI-X table and PBA of BAR4. The I/O BAR is the only PIO region.
MMIO, MSIX_TABLE = 0, 1
LONG = 2

# 82599 registers (queue 0 unless noted)
CTRL = 0x0
EICS = 0x808
EIAC = 0x810
EITR0 = 0x820
EIMS = 0x880
GPIE = 0x898
IVAR0 = 0x900
RDBAL = 0x1000
RDBAH = 0x1004
RDLEN = 0x1008
RDH = 0x1010
SRRCTL = 0x1014
RDT = 0x1018
RXDCTL = 0x1028
RSCCTL = 0x102C
RXCTRL = 0x3000
RSCDBU = 0x3028
HLREG0 = 0x4240
DMATXCTL = 0x4A80
FCTRL = 0x5080
ETQF0 = 0x5128
TSYNCRXCTL = 0x5188
RXSTMPH = 0x51A4
RXSTMPL = 0x51E8
MRQC = 0x5818
RETA0 = 0x5C00
RSSRK0 = 0x5C80
TDBAL = 0x6000
TDBAH = 0x6004
TDLEN = 0x6008
TDH = 0x6010
TDT = 0x6018
TXDCTL = 0x6028
TDWBAL = 0x6038
FDIRCTRL = 0xEE00
FDIRIPSA = 0xEE18
FDIRIPDA = 0xEE1C
FDIRPORT = 0xEE20
FDIRHASH = 0xEE28
FDIRCMD = 0xEE2C
FDIRFREE = 0xEE38
FDIRMATCH = 0xEE58
FDIRHKEY = 0xEE68
FDIRSKEY = 0xEE6C
FDIRM = 0xEE70
TSYNCTXCTL = 0x8C00
TXSTMPL = 0x8C04
TXSTMPH = 0x8C08
SYSTIML = 0x8C0C
SYSTIMH = 0x8C10
TIMINCA = 0x8C14
TIMADJL = 0x8C18
TIMADJH = 0x8C1C
EERD = 0x10014
I2CCTL = 0x28
ESDP = 0x20
I2C_CLK_OUT, I2C_DATA_OUT = 1 << 1, 1 << 3
RXQ_STRIDE = 0x40
# SR-IOV: PF registers
CTRL_EXT = 0x18
PFRSTD = 1 << 14
GCR_EXT = 0x11050
MTQC = 0x8120
VT_CTL = 0x51B0
VFRE0 = 0x51E0
VFTE0 = 0x8110
PFDTXGSWC = 0x8220
PFVML2FLT0 = 0xF000
RAL0 = 0xA200
MPSAR0 = 0xA600
PFMBICR0 = 0x710
PFMBIMR0 = 0x720
PFMAILBOX0 = 0x4B00
PFMBMEM0 = 0x13000
# VF registers (VF BAR0)
VFCTRL = 0x0
VFSTATUS = 0x8
VTEICR = 0x100
VTEICS = 0x104
VTEIMS = 0x108
VTEIAC = 0x110
VTIVAR0 = 0x120
VTIVAR_MISC = 0x140
VFMBMEM = 0x200
VFMAILBOX = 0x2FC
VFPSRTYPE = 0x300
VTEITR0 = 0x820
VFRXQ = 0x1000
VFTXQ = 0x2000
MB_REQ, MB_ACK, MB_VFU, MB_PFU = 1, 2, 4, 8


def write(off, val, region=MMIO, size=LONG):
    # struct { uint8_t size, base; uint32_t offset; uint64_t value; }
    return bytes([OP_WRITE]) + struct.pack("<BBxxIQ", size, region, off, val)


def read(off, region=MMIO, size=LONG):
    return bytes([OP_READ]) + struct.pack("<BBxxI", size, region, off)


def outl(port_off, val):
    # struct { uint8_t size, base; uint16_t offset; uint32_t value; }
    return bytes([OP_OUT]) + struct.pack("<BBHI", LONG, 0, port_off, val)


def inl(port_off):
    return bytes([OP_IN]) + struct.pack("<BBH", LONG, 0, port_off)


def pci_write(off, val, size=LONG):
    # struct { uint8_t size, base, offset; uint32_t value; }
    return bytes([OP_PCI_WRITE]) + struct.pack("<BBBxI", size, 0, off, val)


def dma_pattern(data, index=0, stride=0):
    return bytes([OP_ADD_DMA_PATTERN, index, stride]) + data


def clock_step():
    return bytes([OP_CLOCK_STEP])


def legacy_tx_desc(addr, length, cmd=0x0B):
    # buffer address, length, CSO, CMD (EOP | IFCS | RS), STA, CSS, VLAN
    return struct.pack("<QHBBBBH", addr, length, 0, cmd, 0, 0, 0)


def adv_tx_data_desc(addr, length, paylen, tse=False, tstamp=False):
    dcmd = 0x01 | 0x02 | 0x08 | 0x20 | (0x80 if tse else 0)  # EOP IFCS RS DEXT [TSE]
    cmd_type_len = length | (3 << 20) | (dcmd << 24)  # DTYP data
    if tstamp:
        cmd_type_len |= 1 << 19  # MAC.1588: IEEE 1588 time stamp
    olinfo = (paylen << 14) | (0x3 << 8)  # PAYLEN, POPTS IXSM|TXSM
    return struct.pack("<QII", addr, cmd_type_len, olinfo)


def adv_tx_ctx_desc(maclen=14, iplen=20, l4len=20, mss=1448):
    vlan_macip = (maclen << 9) | iplen
    type_tucmd = (2 << 20) | (1 << 29) | (0x3 << 9)  # DTYP context, DEXT, IPV4 | L4T TCP
    mss_l4len = (mss << 16) | (l4len << 8)
    return struct.pack("<IIII", vlan_macip, 0, type_tucmd, mss_l4len)


def arp_request():
    eth = b"\xff" * 6 + bytes.fromhex("525400123456") + b"\x08\x06"
    arp = struct.pack(">HHBBH", 1, 0x0800, 6, 4, 1) + bytes.fromhex("525400123456")
    arp += bytes([10, 0, 2, 15]) + b"\x00" * 6 + bytes([10, 0, 2, 2])
    return (eth + arp).ljust(60, b"\x00")


def tcp_frame(payload=1500):
    eth = bytes.fromhex("525400123500") + bytes.fromhex("525400123456") + b"\x08\x00"
    ip = struct.pack(
        ">BBHHHBBH4s4s",
        0x45,
        0,
        20 + 20 + payload,
        1,
        0x4000,
        64,
        6,
        0,
        bytes([10, 0, 2, 15]),
        bytes([10, 0, 2, 2]),
    )
    tcp = struct.pack(">HHIIBBHHH", 40000, 80, 1, 0, 0x50, 0x18, 65535, 0, 0)
    return eth + ip + tcp + bytes(range(256)) * (payload // 256) + b"\x00" * (payload % 256)


def ptp_sync_l2():
    """A PTP v2 Sync message over Ethernet (EtherType 0x88F7)."""
    eth = bytes.fromhex("011b19000000") + bytes.fromhex("525400123456") + b"\x88\xf7"
    msg = bytes([0x00, 0x02]) + struct.pack(">H", 44) + bytes(18) + bytes.fromhex("5254fffe123456") + b"\x00\x01"
    msg += struct.pack(">HBB", 7, 0, 0) + bytes(10)
    return (eth + msg).ljust(60, b"\x00")


def rings(rx=True, tx=True, queue=0, ndesc=64, loopback=False):
    ops = [write(FCTRL, 0x700), write(HLREG0, 0x8002 if loopback else 0x0002)]
    q = queue * RXQ_STRIDE
    if rx:
        ops += [
            write(RDBAL + q, 0x00200000 + queue * 0x10000),
            write(RDBAH + q, 0),
            write(RDLEN + q, ndesc * 16),
            write(SRRCTL + q, 0x2),
            write(RXDCTL + q, 1 << 25),
            write(RDT + q, ndesc - 1),
            write(RXCTRL, 1),
        ]
    if tx:
        ops += [
            write(TDBAL + q, 0x00300000 + queue * 0x10000),
            write(TDBAH + q, 0),
            write(TDLEN + q, ndesc * 16),
            write(TXDCTL + q, 1 << 25),
            write(DMATXCTL, 1),
        ]
    return ops


def interrupts():
    return [
        write(GPIE, 0x80000000 | 0x10),
        write(IVAR0, 0x81808180),
        write(EITR0, 0x200),
        write(EIAC, 0xFFFF),
        write(EIMS, 0x7FFFFFFF),
    ]


def msix():
    ops = [pci_write(0x72, 0x8000 | 63, size=1)]
    for v in range(4):
        ops += [
            write(v * 16, 0xFEE00000 + v * 0x1000, MSIX_TABLE),
            write(v * 16 + 8, 0x4040 + v, MSIX_TABLE),
            write(v * 16 + 12, 0, MSIX_TABLE),
        ]
    return ops


def i2c_read_byte(dev, offset):
    """Bit-bang through I2CCTL what a driver does to read one byte of the
    SFP+ module's EEPROM (dev 0xA0 or 0xA2): start, device address for a
    write, the offset, repeated start, the address for a read, eight data
    bits, no acknowledge, stop."""
    ops = []

    def bus(clk, data):
        ops.append(write(I2CCTL, (I2C_CLK_OUT if clk else 0) | (I2C_DATA_OUT if data else 0)))

    def start():
        bus(0, 1), bus(1, 1), bus(1, 0), bus(0, 0)

    def byte_out(b):
        for i in range(7, -1, -1):
            bit = (b >> i) & 1
            bus(0, bit), bus(1, bit), bus(0, bit)
        bus(0, 1), bus(1, 1), ops.append(read(I2CCTL)), bus(0, 1)  # acknowledge

    start()
    byte_out(dev)
    byte_out(offset)
    start()
    byte_out(dev | 1)
    for _ in range(8):
        bus(0, 1), bus(1, 1), ops.append(read(I2CCTL)), bus(0, 1)
    bus(0, 1), bus(1, 1), bus(0, 1)  # no acknowledge
    bus(0, 0), bus(1, 0), bus(1, 1)  # stop
    return ops


def seeds():
    out = {}
    # The SFP+ module's EEPROM (ixgbe-sfp): identifier, then diagnostics,
    # and the pins that report the module.
    out["sfp-eeprom"] = i2c_read_byte(0xA0, 0) + i2c_read_byte(0xA2, 96) + [read(ESDP)]
    # Transmit to slirp: one descriptor whose buffer holds an ARP request
    # (the two patterns alternate: descriptor read, buffer read), so that
    # slirp answers and the receive path runs.
    out["arp-to-slirp"] = (
        rings()
        + interrupts()
        + [dma_pattern(legacy_tx_desc(0x00400000, 60)), dma_pattern(arp_request()), write(TDT, 1)]
        + [clock_step()] * 4
        + [read(0x3FA0), read(TDH), read(RDH)]
    )
    # Loopback: frames come straight back into the receive ring.
    out["loopback"] = (
        rings(loopback=True)
        + interrupts()
        + [dma_pattern(legacy_tx_desc(0x00400000, 60), index=2, stride=1), write(TDT, 8)]
        + [clock_step()] * 3
        + [read(RDH), read(EICS)]
    )
    # Advanced descriptors with TSO (context + data) and checksum offload.
    out["tso-loopback"] = rings(loopback=True) + [
        dma_pattern(adv_tx_ctx_desc() + adv_tx_data_desc(0x00400000, 3054, 3000, tse=True)),
        dma_pattern(tcp_frame(3000)),
        write(TDT, 2),
        clock_step(),
        read(TDH),
    ]
    # Receive side coalescing: a TSO packet looped back as three in-order
    # segments of one flow, checksums right, into a queue with RSC on (16
    # descriptors) whose vector has a throttle interval; then again with
    # 1 KiB buffers and one descriptor per aggregate (MAXDESC 0).
    tso = [
        dma_pattern(adv_tx_ctx_desc() + adv_tx_data_desc(0x00400000, 4398, 4344, tse=True)),
        dma_pattern(tcp_frame(4344)),
    ]
    out["rsc-loopback"] = (
        rings(loopback=True)
        + interrupts()
        + [write(RSCCTL, 0x1 | (3 << 2)), write(RSCDBU, 0x80)]
        + tso
        + [write(TDT, 2), clock_step(), read(RDH), write(SRRCTL, 0x1), write(RSCCTL, 0x1), write(TDT, 4)]
        + [clock_step()] * 2
        + [read(RDH), write(RXDCTL, 0)]
    )
    # Head write-back and WTHRESH batching.
    out["tx-head-writeback"] = rings(rx=False) + [
        write(TDWBAL, 0x00500000 | 1),
        write(TXDCTL, (1 << 25) | (4 << 16)),
        dma_pattern(legacy_tx_desc(0x00400000, 64)),
        write(TDT, 5),
        clock_step(),
        write(TXDCTL, 0),
        read(TDH),
    ]
    # MSI-X: table entries, vectors routed through IVAR, interrupts forced.
    out["msix"] = msix() + interrupts() + [write(EICS, 0xF)] + [clock_step()] * 3
    # RSS over 4 queues.
    ops = []
    for qn in range(4):
        ops += rings(tx=(qn == 0), queue=qn, loopback=True)
    ops += [write(MRQC, 0x1 | (1 << 16) | (1 << 17) | (1 << 22))]
    ops += [write(RETA0 + 4 * i, 0x03020100) for i in range(4)]
    ops += [write(RSSRK0 + 4 * i, 0x6D5A6D5A) for i in range(10)]
    ops += [
        dma_pattern(legacy_tx_desc(0x00400000, 60)),
        dma_pattern(tcp_frame(0)),
        write(TDT, 2),
        clock_step(),
        read(RDH),
    ]
    out["rss-loopback"] = ops
    # Flow Director: a signature table with a filter, then a perfect-match
    # table with a drop filter, and a looped-back TCP frame through each.
    ops = []
    for qn in range(2):
        ops += rings(tx=(qn == 0), queue=qn, loopback=True)
    ops += [
        write(FDIRHKEY, 0x3DAD14E2),
        write(FDIRSKEY, 0x174D3614),
        write(FDIRCTRL, 0x1 | 0x20 | (6 << 16) | (0xA << 24) | (4 << 28)),
        write(FDIRHASH, 0x097D4107),
        write(FDIRCMD, 0x1 | 0x8 | 0x800 | 0x8000 | (2 << 5) | (1 << 16)),
        dma_pattern(legacy_tx_desc(0x00400000, 60)),
        dma_pattern(tcp_frame(0)),
        write(TDT, 1),
        clock_step(),
        write(FDIRCTRL, 0x1 | 0x10 | 0x20 | (127 << 8) | (6 << 16) | (4 << 28)),
        write(FDIRM, 0x37),
        write(FDIRIPSA, 0x0A00000A),
        write(FDIRIPDA, 0x1400000A),
        write(FDIRPORT, 0x1451_9C40),
        write(FDIRHASH, 0x00050107),
        write(FDIRCMD, 0x1 | 0x8 | 0x200 | 0x8000 | (2 << 5) | (127 << 16)),
        write(FDIRCMD, 0x3),
        write(TDT, 2),
        clock_step(),
        read(FDIRFREE),
        read(FDIRMATCH),
        read(RDH),
    ]
    out["fdir-loopback"] = ops
    # IEEE 1588: the clock running (TIMINCA as the driver sets it), an L2
    # PTP frame looped back with a transmit time stamp and a receive stamp.
    frame = ptp_sync_l2()
    out["ptp-loopback"] = rings(loopback=True) + [
        write(TIMINCA, (1 << 24) | 0xCCCCCC),
        write(ETQF0, 0xC00088F7),
        write(TSYNCRXCTL, 0x10 | (4 << 1)),
        write(TSYNCTXCTL, 0x10),
        dma_pattern(adv_tx_data_desc(0x00400000, len(frame), len(frame), tstamp=True)),
        dma_pattern(frame),
        write(TDT, 1),
        clock_step(),
        read(SYSTIML),
        read(SYSTIMH),
        read(TXSTMPL),
        read(TXSTMPH),
        read(RXSTMPL),
        read(RXSTMPH),
        write(TIMADJL, 1000),
        write(TIMADJH, 0x80000000),
        read(TSYNCRXCTL),
    ]
    # I/O BAR (IOADDR/IODATA) and EEPROM reads.
    out["ioaddr-eeprom"] = [
        outl(0, EERD),
        outl(4, 0x1),
        inl(4),
        outl(0, 0x4240),
        inl(4),
        write(EERD, 0x3F << 2 | 1),
        read(EERD),
        outl(0, 0x1FFFC),
        inl(4),
    ]
    # Software reset with the rings running.
    out["reset-running"] = (
        rings(loopback=True)
        + interrupts()
        + [
            dma_pattern(legacy_tx_desc(0x00400000, 60)),
            write(TDT, 3),
            write(CTRL, 1 << 26),
            clock_step(),
            read(CTRL),
        ]
    )
    return out


def vf_seeds(nvfs):
    """Seeds for the targets with nvfs VFs (VF n's registers are fuzzed
    region 3 + n, its MSI-X table 3 + nvfs + 2 * n)."""

    def vf(n):
        return 3 + n

    def vf_msix(n):
        return 3 + nvfs + 2 * n

    out = {}
    last = nvfs - 1
    vt = [
        write(GCR_EXT, 3),  # 64 pools of 2 queues
        write(CTRL_EXT, PFRSTD),
        write(PFMBIMR0, 0xFFFFFFFF),
        write(MRQC, 0xB),
        write(MTQC, 0x2 | 0x4),
        write(VT_CTL, 0x1 | (1 << 30) | (nvfs << 7)),
        write(VFRE0, (1 << (nvfs + 1)) - 1),
        write(VFTE0, (1 << (nvfs + 1)) - 1),
    ]
    vt += [write(PFVML2FLT0 + 4 * p, (1 << 24) | (1 << 27)) for p in range(nvfs + 1)]
    # The VF's reset request through the mailbox, the PF's answer, the
    # VF's acknowledge; then a message from the PF.
    out["vf-mailbox"] = vt + [
        write(VFMAILBOX, MB_VFU, vf(last)),
        write(VFMBMEM, 0x1, vf(last)),
        write(VFMAILBOX, MB_REQ, vf(last)),
        read(PFMBICR0),
        read(PFMAILBOX0 + 4 * last),
        read(PFMBMEM0 + 64 * last),
        write(PFMAILBOX0 + 4 * last, 0x8),  # PFU
        write(PFMBMEM0 + 64 * last, 0x80000001),
        write(PFMBMEM0 + 64 * last + 4, 0x00120054),
        write(PFMAILBOX0 + 4 * last, 0x1 | 0x8),  # STS | PFU
        read(VFMAILBOX, vf(last)),
        read(VFMBMEM, vf(last)),
        write(VFMAILBOX, MB_ACK, vf(last)),
        write(VTIVAR_MISC, 0x80 | 1, vf(last)),
        write(VTEIMS, 0x7, vf(last)),
        write(PFMAILBOX0 + 4 * last, 0x1),
        read(VTEICR, vf(last)),
        read(VFSTATUS, vf(last)),
        write(VFCTRL, 1 << 26, vf(last)),
        read(VFMAILBOX, vf(last)),
    ]
    # A VF's transmit queue (PF queue 2 * n) to slirp, with MSI-X.
    out["vf-tx"] = vt + [
        pci_write(0x72, 0x8000 | 2, size=1),
        write(0, 0xFEE00000, vf_msix(0)),
        write(8, 0x4041, vf_msix(0)),
        write(VTIVAR0, 0x80 << 8, vf(0)),
        write(VTEIAC, 1, vf(0)),
        write(VTEIMS, 1, vf(0)),
        write(VTEITR0, 100 << 3, vf(0)),
        write(VFTXQ + 0x00, 0x00300000, vf(0)),
        write(VFTXQ + 0x04, 0, vf(0)),
        write(VFTXQ + 0x08, 64 * 16, vf(0)),
        write(VFTXQ + 0x28, 1 << 25, vf(0)),
        write(DMATXCTL, 1),
        dma_pattern(legacy_tx_desc(0x00400000, 60)),
        dma_pattern(arp_request()),
        write(VFTXQ + 0x18, 1, vf(0)),
        clock_step(),
        read(VFTXQ + 0x10, vf(0)),
        read(VTEICR, vf(0)),
    ]
    # Pools: VF 0's frame looped back to the last VF and the PF (VT_LBEN),
    # receive rings in every pool.
    ops = vt + [write(PFDTXGSWC, 1), write(FCTRL, 0x700), write(RXCTRL, 1)]
    for p in range(nvfs + 1):
        ops += [
            write(RAL0 + 8 * p, 0x00000002),
            write(RAL0 + 8 * p + 4, (0x10 + p) << 8 | 0x80000000),
            write(MPSAR0 + 8 * p, 1 << p),
        ]
    for n in range(nvfs):
        ops += [
            write(VFRXQ + 0x00, 0x00200000 + n * 0x10000, vf(n)),
            write(VFRXQ + 0x08, 32 * 16, vf(n)),
            write(VFRXQ + 0x14, 0x2, vf(n)),
            write(VFRXQ + 0x28, 1 << 25, vf(n)),
            write(VFRXQ + 0x18, 31, vf(n)),
        ]
    frame = bytearray(arp_request())
    frame[0:6] = bytes([2, 0, 0, 0x10 + last, 0, 0])
    ops += [
        write(VFTXQ + 0x00, 0x00300000, vf(0)),
        write(VFTXQ + 0x08, 64 * 16, vf(0)),
        write(VFTXQ + 0x28, 1 << 25, vf(0)),
        write(DMATXCTL, 1),
        dma_pattern(legacy_tx_desc(0x00400000, 60)),
        dma_pattern(bytes(frame)),
        write(VFTXQ + 0x18, 2, vf(0)),
        clock_step(),
        read(VFRXQ + 0x10, vf(last)),
        read(VFPSRTYPE, vf(last)),
    ]
    out["vf-pool-loopback"] = ops
    return out


def write_dict(path, header):
    regs = re.findall(
        r"^#define\s+(IXGBE_\w+)\s+0x([0-9A-Fa-f]{5})\b", pathlib.Path(header).read_text(), re.M
    )
    lines = []
    for name, hexval in regs:
        enc = "".join("\\x%02x" % b for b in struct.pack("<I", int(hexval, 16)))
        lines.append('%s="%s"' % (name.lower(), enc))
    # Registers of a queue's block that ixgbe_regs.h does not name (queue 0)
    for name, off in (("ixgbe_rscctl0", RSCCTL), ("ixgbe_rscdbu", RSCDBU)):
        enc = "".join("\\x%02x" % b for b in struct.pack("<I", off))
        lines.append('%s="%s"' % (name, enc))
    lines.append('separator="FUZZ"')
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def main():
    args = sys.argv[1:]
    nvfs = 0
    if len(args) >= 3 and args[-2] == "--vfs":
        nvfs = int(args[-1])
        args = args[:-2]
    if len(args) == 4 and args[1] == "--dict":
        write_dict(args[2], args[3])
        args = args[:1]
    if len(args) != 1:
        sys.exit(__doc__)
    outdir = pathlib.Path(args[0])
    outdir.mkdir(parents=True, exist_ok=True)
    all_seeds = seeds()
    if nvfs:
        all_seeds.update(vf_seeds(nvfs))
    for name, ops in all_seeds.items():
        data = SEP.join(ops)
        path = outdir / ("seed-" + name + "-" + hashlib.sha1(data).hexdigest()[:12])
        path.write_bytes(data)
        print(path)


if __name__ == "__main__":
    main()
