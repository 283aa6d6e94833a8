/*
 * QTest testcase for the Intel 82599 (ixgbe) model: what a hostile or
 * broken guest, or a corrupted migration stream, may do to it.
 *
 * Each case programs something no working driver would (rings, lengths
 * and indices out of range, buffers aimed at the device's own registers
 * or at nothing, offload requests that would cost QEMU dearly, unplug in
 * the middle of a packet, migration streams with out-of-range state) and
 * checks that QEMU survives, that the device logged a guest error (or
 * failed the migration), and that it still moves frames afterwards.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/libqos-malloc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"
#include "net/eth.h"
#include "qemu/bswap.h"
#include "qemu/units.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

/* An address nothing in the q35 machine decodes */
#define UNASSIGNED_ADDR         0xF0000000u
/* The HPET's registers: MMIO that is not the device's own */
#define HPET_ADDR               0xFED00000u

/*
 * Receive one frame the device sent, passing over the RARP announcements
 * QEMU makes for a NIC after migration.
 */
static int recv_skip_announce(IxgbeTest *t, uint8_t *buf, size_t size)
{
    int len;

    do {
        len = backend_recv(t, buf, size, WAIT_US / 1000);
    } while (len >= 14 && lduw_be_p(buf + 12) == 0x8035);  /* RARP */
    return len;
}

/* The device still transmits and receives one frame on queue 0 */
static void assert_device_works(IxgbeTest *t)
{
    uint8_t frame[128], got[256], wb[DESC_SIZE];
    uint64_t ring;
    RxRing r;
    size_t len;

    g_assert_cmphex(rd(t, IXGBE_STATUS), !=, 0xffffffff);
    ring = tx_ring_setup(t, 0, 8, 0);
    len = build_frame(frame, peer_mac, 100, 0x5a);
    tx_send_frame(t, 0, ring, 0, frame, len);
    g_assert_cmpint(recv_skip_announce(t, got, sizeof(got)), ==, len);
    g_assert_cmpmem(got, len, frame, len);
    g_assert_true(tx_dd(t, ring, 0));

    rx_ring_setup(t, &r, 0, 8);
    rx_enable(t);
    len = build_frame(frame, test_mac, 80, 0xa5);
    backend_send(t, frame, len);
    rx_wait(t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    rx_check_data(t, &r, 0, frame, len);
}

/* A TX context descriptor (advanced) for TSO with the given MSS */
static void tx_put_tso_context(IxgbeTest *t, uint64_t ring, unsigned idx,
                               uint32_t mss)
{
    uint8_t d[DESC_SIZE] = { 0 };

    /* MACLEN 14, IPLEN 20; IPv4, TCP, L4LEN 20 */
    stl_le_p(d, (14u << 9) | 20);
    stl_le_p(d + 8, IXGBE_TXD_DTYP_CTXT | IXGBE_TXD_CMD_DEXT |
             (1u << 10) | (1u << 11));
    stl_le_p(d + 12, (mss << IXGBE_TXCTX_MSS_SHIFT) | (20u << 8));
    qtest_memwrite(t->qts, ring + idx * DESC_SIZE, d, sizeof(d));
}

/* A TCP/IPv4 frame with len bytes of payload */
static size_t build_tcp_frame(uint8_t *buf, size_t payload)
{
    static const uint8_t sip[4] = { 10, 0, 0, 1 };
    static const uint8_t dip[4] = { 10, 0, 0, 2 };
    size_t len = build_ipv4_frame(buf, 6, sip, dip, 1000, 2000);

    /* build_ipv4_frame makes 14 + 20 + 20 header bytes, then padding */
    g_assert_cmpuint(len, ==, 60);
    for (size_t i = 54; i < 54 + payload; i++) {
        buf[i] = i;
    }
    stw_be_p(buf + 14 + 2, 20 + 20 + payload);
    return 54 + payload;
}

/* ------------------------------------------------------------------ */
/* Transmit                                                            */
/* ------------------------------------------------------------------ */

/*
 * TSO asked with an MSS of 0, 1 and just below the model's minimum: one
 * such packet would be cut into thousands of frames.  Each is dropped with
 * a guest error; the queue goes on.
 */
static void test_tso_tiny_mss(void)
{
    static const uint32_t mss[] = { 0, 1, IXGBE_TSO_MIN_MSS - 1 };
    uint8_t frame[2048];
    uint64_t ring, buf;
    size_t len = build_tcp_frame(frame, 1400);
    IxgbeTest t;
    unsigned idx = 0;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 16, 0);
    buf = guest_frame(&t, frame, len);
    for (unsigned i = 0; i < ARRAY_SIZE(mss); i++) {
        tx_put_tso_context(&t, ring, idx++, mss[i]);
        tx_put_data(&t, ring, idx++, buf, len, len - 54,
                    IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS |
                    IXGBE_TXD_CMD_TSE);
    }
    wr(&t, txq(0, IXGBE_TXQ_TDT), idx);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, idx);
    g_assert_true(ixgbe_test_logged(&t, "ixgbe: TSO with MSS 1"));
    g_assert_true(ixgbe_test_logged(&t, "ixgbe: TSO with MSS 0"));

    /* The smallest MSS accepted segments as asked */
    tx_put_tso_context(&t, ring, idx++, 700);
    tx_put_data(&t, ring, idx++, buf, len, len - 54,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS | IXGBE_TXD_CMD_TSE);
    wr(&t, txq(0, IXGBE_TXQ_TDT), idx);
    for (unsigned seg = 0; seg < 2; seg++) {
        uint8_t got[2048];

        g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000),
                        ==, 54 + 700);
    }
    backend_assert_silent(&t);
    ixgbe_test_stop(&t);
}

/*
 * A packet spread over more buffers than the device holds, and one larger
 * than the largest TSO packet: both dropped, the queue goes on.
 */
static void test_tx_too_many_buffers(void)
{
    IxgbeTest t;
    uint64_t ring, buf;
    unsigned n = 0;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 256, 0);
    buf = guest_alloc(&t.qs->alloc, 64 * KiB);
    qtest_memset(t.qts, buf, 0x11, 64 * KiB);

    /* 65 buffers of 16 bytes */
    for (unsigned i = 0; i < 65; i++) {
        tx_put_data(&t, ring, n++, buf, 16, 0,
                    i == 64 ? IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS : 0);
    }
    /* 64 buffers of 65535 bytes: 4 MiB in one packet */
    for (unsigned i = 0; i < 64; i++) {
        tx_put_data(&t, ring, n++, buf, 0xffff, 0,
                    i == 63 ? IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS : 0);
    }
    wr(&t, txq(0, IXGBE_TXQ_TDT), n);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, n);
    g_assert_true(ixgbe_test_logged(&t, "packet spans more than 64 buffers"));
    g_assert_true(ixgbe_test_logged(&t, "byte packet exceeds"));

    assert_device_works(&t);
    ixgbe_test_stop(&t);
}

/* A ring holding only context descriptors: consumed, nothing sent */
static void test_tx_context_only(void)
{
    IxgbeTest t;
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 64, 0);
    for (unsigned i = 0; i < 63; i++) {
        tx_put_tso_context(&t, ring, i, 1);
    }
    wr(&t, txq(0, IXGBE_TXQ_TDT), 63);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 63);

    assert_device_works(&t);
    ixgbe_test_stop(&t);
}

/*
 * Descriptors and buffers aimed at the device's own registers and MSI-X
 * table: the re-entrancy guard refuses the DMA, nothing is corrupted.
 */
static void test_dma_to_own_bars(void)
{
    IxgbeTest t;
    uint8_t frame[128];
    uint64_t bar0, ring;
    size_t len;
    RxRing r;

    ixgbe_test_start(&t);
    bar0 = qpci_config_readl(t.dev, PCI_BASE_ADDRESS_0) & ~0xfULL;
    bar0 |= (uint64_t)qpci_config_readl(t.dev, PCI_BASE_ADDRESS_1) << 32;
    g_assert_cmphex(bar0, !=, 0);

    /* TX: ring in BAR0 (the descriptors are registers), then buffers */
    wr(&t, txq(0, IXGBE_TXQ_TDBAL), (uint32_t)bar0 + IXGBE_RXQ_LO);
    wr(&t, txq(0, IXGBE_TXQ_TDBAH), bar0 >> 32);
    wr(&t, txq(0, IXGBE_TXQ_TDLEN), 8 * DESC_SIZE);
    wr(&t, IXGBE_DMATXCTL, IXGBE_DMATXCTL_TE);
    wr(&t, txq(0, IXGBE_TXQ_TXDCTL), IXGBE_TXDCTL_ENABLE);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 4);
    ring = tx_ring_setup(&t, 1, 8, 0);
    tx_put_data(&t, ring, 0, bar0 + IXGBE_CTRL, 64, 64,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(1, IXGBE_TXQ_TDT), 1);
    /* The read of the registers is refused: the frame is dropped */
    for (int i = 0; i < 500 && !tx_dd(&t, ring, 0); i++) {
        g_usleep(10 * 1000);
    }
    g_assert_true(tx_dd(&t, ring, 0));
    g_assert_true(ixgbe_test_logged(&t, "txq 1: buffer"));
    backend_assert_silent(&t);

    /* RX: buffers and the descriptor ring over CTRL and the MSI-X table */
    rx_ring_setup(&t, &r, 0, 8);
    rx_enable(&t);
    for (unsigned i = 0; i < 8; i++) {
        qtest_writeq(t.qts, r.ring + i * DESC_SIZE, bar0 + IXGBE_CTRL);
    }
    len = build_frame(frame, test_mac, 100, 3);
    memset(frame + 14, 0xff, len - 14);     /* CTRL.RST if it landed */
    backend_send(&t, frame, len);
    for (int i = 0; i < 500 && !rd(&t, IXGBE_GPRC); i++) {
        g_usleep(10 * 1000);
    }
    /* Nothing landed in the registers: not reset, queue 0 still set up */
    g_assert_cmphex(rd(&t, IXGBE_STATUS), !=, 0xffffffff);
    g_assert_cmphex(rd(&t, rxq(0, IXGBE_RXQ_RDLEN)), ==, 8 * DESC_SIZE);
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, IXGBE_TEST_RAL);
    /* QEMU's re-entrancy guard refused both DMAs (it warns on stderr) */
    g_assert_true(ixgbe_test_logged(&t, "txq 0: descriptor fetch"));
    g_assert_true(ixgbe_test_logged(&t, "not writable"));
    wr(&t, txq(0, IXGBE_TXQ_TXDCTL), 0);
    assert_device_works(&t);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

/*
 * The descriptor ring sits where nothing answers: the frame must not be
 * written anywhere (not to address 0 from a descriptor never read) nor
 * counted as received, and the head stays.
 */
static void test_rx_desc_fetch_fails(void)
{
    static const uint8_t canary[64] = { [0 ... 63] = 0xcc };
    uint8_t frame[128], low[64];
    IxgbeTest t;
    size_t len;
    RxRing r;

    ixgbe_test_start(&t);
    qtest_memwrite(t.qts, 0, canary, sizeof(canary));
    rx_ring_setup(&t, &r, 0, 8);
    wr(&t, IXGBE_IVAR0, IXGBE_IVAR_VALID);     /* RX queue 0 -> EICR bit 0 */
    rx_enable(&t);
    g_assert_cmpuint(rd(&t, IXGBE_GPRC), ==, 0);
    wr(&t, rxq(0, IXGBE_RXQ_RDBAL), UNASSIGNED_ADDR);
    wr(&t, rxq(0, IXGBE_RXQ_RDBAH), 0);

    len = build_frame(frame, test_mac, 100, 1);
    backend_send(&t, frame, len);
    /* The frame has been dealt with once the log says so */
    for (int i = 0; i < 500 &&
         !ixgbe_test_logged(&t, "rxq 0: descriptor fetch"); i++) {
        g_usleep(10 * 1000);
    }
    g_assert_true(ixgbe_test_logged(&t, "rxq 0: descriptor fetch"));
    qtest_memread(t.qts, 0, low, sizeof(low));
    g_assert_cmpmem(low, sizeof(low), canary, sizeof(canary));
    /* The MAC saw a good frame; the queue got none, the head stays */
    g_assert_cmpuint(rd(&t, IXGBE_GPRC), ==, 1);
    g_assert_cmpuint(rd(&t, IXGBE_QPRC0), ==, 0);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_EICS) & 1, ==, 0);

    assert_device_works(&t);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Register access                                                     */
/* ------------------------------------------------------------------ */

/*
 * Odd sizes, unaligned offsets and the last bytes of each BAR; the I/O
 * window's IOADDR past the registers; EEPROM words past the end; the
 * highest queue, vector and table indices.
 */
static void test_register_edges(void)
{
    IxgbeTest t;
    QPCIBar io;
    uint32_t eerd;

    ixgbe_test_start(&t);
    /* 1-, 2- and 8-byte, and unaligned, accesses */
    qpci_io_writeb(t.dev, t.bar0, IXGBE_MMIO_SIZE - 1, 0xff);
    qpci_io_writew(t.dev, t.bar0, IXGBE_MMIO_SIZE - 2, 0xffff);
    qpci_io_writeq(t.dev, t.bar0, IXGBE_MMIO_SIZE - 8, ~0ULL);
    (void)qpci_io_readb(t.dev, t.bar0, IXGBE_MMIO_SIZE - 1);
    (void)qpci_io_readw(t.dev, t.bar0, IXGBE_RAL0 + 1);
    (void)qpci_io_readl(t.dev, t.bar0, IXGBE_RAL0 + 2);
    (void)qpci_io_readq(t.dev, t.bar0, IXGBE_MMIO_SIZE - 8);
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, IXGBE_TEST_RAL);

    /* IOADDR is masked to the register window */
    io = qpci_iomap(t.dev, 2, NULL);
    qpci_io_writel(t.dev, io, 0, 0xffffffff);
    g_assert_cmphex(qpci_io_readl(t.dev, io, 0), ==, IXGBE_MMIO_SIZE - 4);
    (void)qpci_io_readl(t.dev, io, 4);
    qpci_io_writel(t.dev, io, 4, 0);
    qpci_io_writel(t.dev, io, 0, IXGBE_RAL0);
    g_assert_cmphex(qpci_io_readl(t.dev, io, 4), ==, IXGBE_TEST_RAL);
    (void)qpci_io_readl(t.dev, io, 8);
    qpci_io_writel(t.dev, io, 0x1c, 0x12345678);

    /* EEPROM word past the end: done, zero, logged */
    wr(&t, IXGBE_EERD, (IXGBE_EERD_ADDR_MASK << IXGBE_EERD_ADDR_SHIFT) |
       IXGBE_EERD_START);
    eerd = rd(&t, IXGBE_EERD);
    g_assert_cmphex(eerd & IXGBE_EERD_DONE, ==, IXGBE_EERD_DONE);
    g_assert_cmphex(eerd >> IXGBE_EERD_DATA_SHIFT, ==, 0);
    g_assert_true(ixgbe_test_logged(&t, "beyond the EEPROM"));

    /* Every IVAR entry, at the highest vector, valid */
    for (unsigned i = 0; i < 64; i++) {
        wr(&t, IXGBE_IVAR0 + i * 4, 0xffffffff);
    }
    wr(&t, IXGBE_IVAR_MISC, 0xffffffff);
    wr(&t, IXGBE_EIMS, 0xffffffff);
    wr(&t, IXGBE_EICS, 0xffffffff);
    for (unsigned i = 0; i < 32; i++) {
        wr(&t, IXGBE_RETA0 + i * 4, 0xffffffff);
    }
    wr(&t, IXGBE_EIMC, 0xffffffff);
    wr(&t, IXGBE_EICR, 0xffffffff);
    for (unsigned i = 0; i < 64; i++) {
        wr(&t, IXGBE_IVAR0 + i * 4, 0);
    }
    wr(&t, IXGBE_IVAR_MISC, 0);

    assert_device_works(&t);
    ixgbe_test_stop(&t);
}

/* The highest queue (127) transmits like queue 0 */
static void test_last_queue(void)
{
    uint8_t frame[128];
    IxgbeTest t;
    uint64_t ring;
    size_t len;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 127, 8, 0);
    len = build_frame(frame, peer_mac, 90, 0x7f);
    tx_send_frame(&t, 127, ring, 0, frame, len);
    backend_expect(&t, frame, len);
    g_assert_true(tx_dd(&t, ring, 0));
    ixgbe_test_stop(&t);
}

/* MAC loopback of a frame shorter than the minimum: padded, received */
static void test_loopback_short_frame(void)
{
    uint8_t frame[64], wb[DESC_SIZE], got[64];
    uint64_t ring, buf;
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    ring = loopback_setup(&t, &r, 8, 8);
    memcpy(frame, test_mac, ETH_ALEN);
    memcpy(frame + 6, peer_mac, ETH_ALEN);
    stw_be_p(frame + 12, 0x88b5);
    memset(frame + 14, 0x42, 6);
    buf = guest_frame(&t, frame, 20);
    tx_put_data(&t, ring, 0, buf, 20, 20,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, 60);
    qtest_memread(t.qts, r.bufs, got, 60);
    g_assert_cmpmem(got, 20, frame, 20);
    for (unsigned i = 20; i < 60; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }
    backend_assert_silent(&t);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Unplug with a packet half fetched                                   */
/* ------------------------------------------------------------------ */

/*
 * The guest posts the first buffer of a packet (no EOP; in RAM, or MMIO
 * that is not the device's) and then powers its own slot off: the device
 * goes away with nothing of the packet left mapped.
 */
static void unplug_mid_packet(uint64_t buf_addr)
{
    IxgbeTest t;
    uint64_t ring, buf = buf_addr;

    ixgbe_test_boot(&t, true, "-global ICH9-LPC.acpi-pci-hotplug-with-"
                    "bridge-support=off");
    ring = tx_ring_setup(&t, 0, 8, 0);
    if (!buf) {
        buf = guest_alloc(&t.qs->alloc, 64);
    }
    tx_put_data(&t, ring, 0, buf, 64, 64, 0);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);
    backend_assert_silent(&t);

    unplug_by_slot_power(&t);
    /* QEMU is still there and answers */
    qtest_qmp_assert_success(t.qts, "{'execute': 'query-status'}");
    ixgbe_test_stop(&t);
}

static void test_unplug_mid_packet_ram(void)
{
    unplug_mid_packet(0);
}

static void test_unplug_mid_packet_mmio(void)
{
    unplug_mid_packet(HPET_ADDR);
}

/* ------------------------------------------------------------------ */
/* Migration streams                                                   */
/* ------------------------------------------------------------------ */

/*
 * Replace the unique occurrence of sentinel in the saved stream with bad:
 * the destination must refuse the stream and stay up.
 */
static void assert_corrupt_load_fails(const char *path,
                                      const uint8_t *sentinel,
                                      const uint8_t *bad, size_t len)
{
    IxgbeTest dst;

    patch_stream(path, sentinel, len, bad);
    g_assert_false(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'query-status'}");
    ixgbe_test_stop(&dst);
    unlink(path);
}

/* A clean round trip loads: the harness itself works */
static void test_migration_roundtrip(void)
{
    IxgbeTest src, dst;
    g_autofree char *path = NULL;

    ixgbe_test_start(&src);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);
    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    assert_device_works(&dst);
    ixgbe_test_stop(&dst);
    unlink(path);
}

/* IOADDR (the I/O window's register offset) out of range: load fails */
static void test_migration_bad_ioaddr(void)
{
    static const uint8_t sentinel[4] = { 0x00, 0x01, 0xfe, 0xdc };
    static const uint8_t bad[4] = { 0x00, 0x02, 0x00, 0x00 };
    g_autofree char *path = NULL;
    IxgbeTest src;
    QPCIBar io;

    ixgbe_test_start(&src);
    io = qpci_iomap(src.dev, 2, NULL);
    qpci_io_writel(src.dev, io, 0, 0x1fedc);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    assert_corrupt_load_fails(path, sentinel, bad, sizeof(bad));
}

/*
 * A pending descriptor write-back count no ring can have: load fails (it
 * would drive a loop of DMA writes with the BQL held).
 */
static void test_migration_bad_writeback(void)
{
    static const uint8_t sentinel[8] = { 0, 0, 0, 1, 0, 0, 0x0a, 0xbc };
    static const uint8_t bad[8] = { 0xff, 0xff, 0xff, 0xf0, 0, 0, 0x0a, 0xbc };
    g_autofree char *path = NULL;
    uint8_t frame[128];
    IxgbeTest src;
    uint64_t ring;
    size_t len;

    ixgbe_test_start(&src);
    /* WTHRESH 8: one descriptor done, its write-back pending */
    ring = tx_ring_setup(&src, 0, 4096, 8);
    wr(&src, txq(0, IXGBE_TXQ_TDH), 0xabc);
    wr(&src, txq(0, IXGBE_TXQ_TDT), 0xabc);
    len = build_frame(frame, peer_mac, 80, 4);
    tx_send_frame(&src, 0, ring, 0xabc, frame, len);
    backend_expect(&src, frame, len);
    g_assert_false(tx_dd(&src, ring, 0xabc));
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    assert_corrupt_load_fails(path, sentinel, bad, sizeof(bad));
}

/*
 * A packet half fetched on the source completes on the destination: its
 * buffers travel with the migration, by address.
 */
static void test_migration_mid_packet(void)
{
    g_autofree char *path = NULL;
    uint8_t frame[256], got[256];
    IxgbeTest src, dst;
    uint64_t ring, buf;
    size_t len;

    ixgbe_test_start(&src);
    ring = tx_ring_setup(&src, 0, 8, 0);
    len = build_frame(frame, peer_mac, 200, 6);
    buf = guest_frame(&src, frame, len);
    tx_put_data(&src, ring, 0, buf, 120, len, 0);
    tx_put_data(&src, ring, 1, buf + 120, len - 120, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&src, txq(0, IXGBE_TXQ_TDT), 1);
    backend_assert_silent(&src);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    wr(&dst, txq(0, IXGBE_TXQ_TDT), 2);
    g_assert_cmpint(recv_skip_announce(&dst, got, sizeof(got)), ==, len);
    g_assert_cmpmem(got, len, frame, len);
    g_assert_true(tx_dd(&dst, ring, 1));
    ixgbe_test_stop(&dst);
    unlink(path);
}

/*
 * The link as the source's backend had it travels: a port whose link was
 * down (set_link) reads STATUS.LU and LINKS clear on the destination, and
 * its link comes back up when the destination's backend says so.
 */
static void test_migration_link_down(void)
{
    g_autofree char *path = NULL;
    IxgbeTest src, dst;

    ixgbe_test_start(&src);
    qtest_qmp_assert_success(src.qts, "{'execute': 'set_link', 'arguments': "
                             "{'name': 'net0', 'up': false}}");
    g_assert_cmphex(rd(&src, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==, 0);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    g_assert_cmphex(rd(&dst, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==, 0);
    g_assert_cmphex(rd(&dst, IXGBE_LINKS) & IXGBE_LINKS_UP, ==, 0);
    qtest_qmp_assert_success(dst.qts, "{'execute': 'set_link', 'arguments': "
                             "{'name': 'net0', 'up': true}}");
    g_assert_cmphex(rd(&dst, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==,
                    IXGBE_STATUS_LINK_UP);
    ixgbe_test_stop(&dst);
    unlink(path);
    g_free(path);

    /* A port whose link was up stays up */
    ixgbe_test_start(&src);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);
    g_assert_true(load_from_file(&dst, path));
    g_assert_cmphex(rd(&dst, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==,
                    IXGBE_STATUS_LINK_UP);
    ixgbe_test_stop(&dst);
    unlink(path);
}

/*
 * A stream whose PTP clock segment starts at the far past or the far
 * future of the virtual clock: SYSTIM reads without signed overflow (the
 * sanitizer build reports any) and runs on from there.
 */
static void test_migration_ptp_extreme_base(void)
{
    static const int64_t bases[] = { INT64_MIN, INT64_MAX };

    for (unsigned i = 0; i < ARRAY_SIZE(bases); i++) {
        g_autofree char *path = NULL;
        uint8_t pat[12] = { 0 }, with[12] = { 0 };
        IxgbeTest src, dst;
        int64_t at;

        ixgbe_test_start(&src);
        wr(&src, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | 0x00CCCCCC);
        at = qtest_clock_step(src.qts, 0x123456789);
        wr(&src, IXGBE_SYSTIMH, 0x11223344);
        /* The segment's start in virtual time, then the SYSTIMH latch */
        stq_be_p(pat, at);
        stq_be_p(with, bases[i]);
        path = save_to_file(&src);
        ixgbe_test_stop(&src);

        patch_stream(path, pat, sizeof(pat), with);
        g_assert_true(load_from_file(&dst, path));
        qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
        rd(&dst, IXGBE_SYSTIML);
        rd(&dst, IXGBE_SYSTIMH);
        qtest_clock_step(dst.qts, 1000);
        rd(&dst, IXGBE_SYSTIML);
        assert_device_works(&dst);
        ixgbe_test_stop(&dst);
        unlink(path);
    }
}

/*
 * A register the model does not know is kept as plain storage and
 * reported once per offset (LOG_UNIMP), not once per access.
 */
static void test_unknown_register_logged_once(void)
{
    const uint32_t unknown = 0x0F7F0;
    IxgbeTest t;

    ixgbe_test_start(&t);
    for (unsigned i = 0; i < 3; i++) {
        wr(&t, unknown, 0x1234 + i);
        g_assert_cmphex(rd(&t, unknown), ==, 0x1234 + i);
    }
    g_assert_cmpuint(ixgbe_test_log_count(&t, "unmodelled PF register"),
                     ==, 1);
    g_assert_cmpuint(ixgbe_test_log_count(&t, "0x0f7f0"), ==, 1);
    rd(&t, unknown + 4);
    rd(&t, unknown + 4);
    g_assert_cmpuint(ixgbe_test_log_count(&t, "unmodelled PF register"),
                     ==, 2);
    ixgbe_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("ixgbe/bad-input/tso-tiny-mss", test_tso_tiny_mss);
    qtest_add_func("ixgbe/bad-input/tx-too-many-buffers",
                   test_tx_too_many_buffers);
    qtest_add_func("ixgbe/bad-input/tx-context-only", test_tx_context_only);
    qtest_add_func("ixgbe/bad-input/dma-to-own-bars", test_dma_to_own_bars);
    qtest_add_func("ixgbe/bad-input/rx-desc-fetch-fails",
                   test_rx_desc_fetch_fails);
    qtest_add_func("ixgbe/bad-input/register-edges", test_register_edges);
    qtest_add_func("ixgbe/bad-input/last-queue", test_last_queue);
    qtest_add_func("ixgbe/bad-input/loopback-short-frame",
                   test_loopback_short_frame);
    qtest_add_func("ixgbe/bad-input/unknown-register-logged-once",
                   test_unknown_register_logged_once);
    qtest_add_func("ixgbe/unplug/mid-packet-ram", test_unplug_mid_packet_ram);
    qtest_add_func("ixgbe/unplug/mid-packet-mmio",
                   test_unplug_mid_packet_mmio);
    qtest_add_func("ixgbe/migration/roundtrip", test_migration_roundtrip);
    qtest_add_func("ixgbe/migration/mid-packet", test_migration_mid_packet);
    qtest_add_func("ixgbe/migration/bad-ioaddr", test_migration_bad_ioaddr);
    qtest_add_func("ixgbe/migration/bad-writeback",
                   test_migration_bad_writeback);
    qtest_add_func("ixgbe/migration/link-down", test_migration_link_down);
    qtest_add_func("ixgbe/migration/ptp-extreme-base",
                   test_migration_ptp_extreme_base);

    return g_test_run();
}
