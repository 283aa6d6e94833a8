/*
 * QTest testcase for the Intel 82599 (ixgbe) 10 GbE controller model
 *
 * Each test starts a q35 machine with one "-device ixgbe" whose netdev is
 * a socket backend; the test holds the other end of the socket, so it can
 * read the frames the device transmits and inject frames for it to
 * receive.  Descriptor rings and buffers live in guest memory; the test
 * plays the role of the driver through BAR0 (tests/qtest/ixgbe-util.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"
#include "net/eth.h"
#include "qemu/bitops.h"
#include "qemu/bswap.h"
#include "qemu/timer.h"
#include "qemu/units.h"
#include "hw/pci/pci_ids.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

/* ------------------------------------------------------------------ */
/* Toeplitz hash (Microsoft RSS), written from its definition          */
/* ------------------------------------------------------------------ */

static uint32_t toeplitz(const uint8_t *key, size_t keylen,
                         const uint8_t *in, size_t len)
{
    uint32_t hash = 0;
    uint32_t window = ldl_be_p(key);    /* key bits [k, k + 32) */
    size_t next_bit = 32;               /* next key bit to shift in */

    g_assert_cmpuint(keylen * 8, >=, len * 8 + 32);
    for (size_t i = 0; i < len; i++) {
        for (int b = 7; b >= 0; b--) {
            if (in[i] & (1u << b)) {
                hash ^= window;
            }
            window <<= 1;
            if (key[next_bit / 8] & (0x80u >> (next_bit % 8))) {
                window |= 1;
            }
            next_bit++;
        }
    }
    return hash;
}

/* Hash input for IPv4 + ports: source, destination address, ports */
static uint32_t rss_hash_ipv4(const uint8_t *sip, const uint8_t *dip,
                              uint16_t sport, uint16_t dport, bool ports)
{
    uint8_t in[12];

    memcpy(in, sip, 4);
    memcpy(in + 4, dip, 4);
    stw_be_p(in + 8, sport);
    stw_be_p(in + 10, dport);
    return toeplitz(ixgbe_rss_key, IXGBE_RSS_KEY_SIZE, in, ports ? 12 : 8);
}

static void test_toeplitz_reference(void)
{
    /* Rows of the published verification table (IPv4, IPv4 with TCP) */
    static const struct {
        uint8_t dip[4], sip[4];
        uint16_t dport, sport;
        uint32_t ip, ip_ports;
    } v[] = {
        { { 161, 142, 100, 80 }, { 66, 9, 149, 187 }, 1766, 2794,
          0x323e8fc2, 0x51ccc178 },
        { { 65, 69, 140, 83 }, { 199, 92, 111, 2 }, 4739, 14230,
          0xd718262a, 0xc626b0ea },
        { { 12, 22, 207, 184 }, { 24, 19, 198, 95 }, 38024, 12898,
          0xd2d0a5de, 0x5c2b394a },
    };

    for (size_t i = 0; i < ARRAY_SIZE(v); i++) {
        g_assert_cmphex(rss_hash_ipv4(v[i].sip, v[i].dip, v[i].sport,
                                      v[i].dport, false), ==, v[i].ip);
        g_assert_cmphex(rss_hash_ipv4(v[i].sip, v[i].dip, v[i].sport,
                                      v[i].dport, true), ==, v[i].ip_ports);
    }
}

/* ------------------------------------------------------------------ */
/* MSI-X helpers                                                       */
/* ------------------------------------------------------------------ */

static void msix_setup(IxgbeTest *t)
{
    qpci_msix_enable(t->dev);
    g_assert_cmpint(qpci_msix_table_size(t->dev), ==, IXGBE_MSIX_VECTORS);
    wr(t, IXGBE_GPIE, IXGBE_GPIE_MSIX_MODE | GPIE_PBA_SUPPORT);
}

/* Route RX queue q's cause to MSI-X vector v */
static void ivar_rx(IxgbeTest *t, unsigned q, unsigned v)
{
    uint32_t reg = IXGBE_IVAR0 + (q / 2) * 4;
    unsigned shift = (q & 1) * 16;
    uint32_t ivar = rd(t, reg);

    ivar &= ~(0xffu << shift);
    ivar |= (v | IXGBE_IVAR_VALID) << shift;
    wr(t, reg, ivar);
}

/* Vectors 0..63 whose PBA bit is set, as a mask */
static uint64_t msix_pending_mask(IxgbeTest *t)
{
    uint64_t m = 0;

    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        if (qpci_msix_pending(t->dev, v)) {
            m |= BIT_ULL(v);
        }
    }
    return m;
}

/*
 * Assert that exactly vector v is pending (v < 0: none), then clear it
 * through PBACL, the device's pending bit clear register.
 */
static void msix_test_clear_pending(IxgbeTest *t, int v)
{
    g_assert_cmphex(msix_pending_mask(t), ==, v < 0 ? 0 : BIT_ULL(v));
    if (v >= 0) {
        g_assert_cmpint(v, <, 32);
        wr(t, IXGBE_PBACL, 1u << v);
        g_assert_false(qpci_msix_pending(t->dev, v));
    }
}

static void msix_entry_write(IxgbeTest *t, unsigned v, uint64_t addr,
                             uint32_t data, bool masked)
{
    uint64_t off = t->dev->msix_table_off + v * PCI_MSIX_ENTRY_SIZE;

    qpci_io_writel(t->dev, t->dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_LOWER_ADDR, (uint32_t)addr);
    qpci_io_writel(t->dev, t->dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_UPPER_ADDR, addr >> 32);
    qpci_io_writel(t->dev, t->dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_DATA, data);
    qpci_io_writel(t->dev, t->dev->msix_table_bar,
                   off + PCI_MSIX_ENTRY_VECTOR_CTRL,
                   masked ? PCI_MSIX_ENTRY_CTRL_MASKBIT : 0);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

static void test_init_pci(void)
{
    IxgbeTest t;
    uint8_t msix, pcie;
    uint16_t lnksta;

    ixgbe_test_start(&t);

    g_assert_cmphex(qpci_config_readw(t.dev, PCI_VENDOR_ID), ==,
                    PCI_VENDOR_ID_INTEL);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_DEVICE_ID), ==, 0x1517);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_CLASS_DEVICE), ==,
                    PCI_CLASS_NETWORK_ETHERNET);
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_STATUS) &
                    PCI_STATUS_CAP_LIST, ==, PCI_STATUS_CAP_LIST);

    /* BAR0: 64-bit memory, 128 KiB of registers */
    g_assert_cmphex(qpci_config_readl(t.dev, PCI_BASE_ADDRESS_0) &
                    (PCI_BASE_ADDRESS_SPACE | PCI_BASE_ADDRESS_MEM_TYPE_MASK),
                    ==, PCI_BASE_ADDRESS_SPACE_MEMORY |
                    PCI_BASE_ADDRESS_MEM_TYPE_64);
    g_assert_cmpuint(t.bar0_size, ==, 128 * KiB);

    /* The driver reads the MSI-X table size at 0x72 and the link at 0xB2 */
    msix = qpci_find_capability(t.dev, PCI_CAP_ID_MSIX, 0);
    g_assert_cmphex(msix, ==, 0x70);
    g_assert_cmpint(qpci_msix_table_size(t.dev), ==, 64);
    g_assert_cmphex(qpci_config_readw(t.dev, 0x72) & PCI_MSIX_FLAGS_QSIZE,
                    ==, 63);
    pcie = qpci_find_capability(t.dev, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(pcie, ==, 0xa0);
    /* On the root complex's own bus QEMU makes it an integrated endpoint */
    g_assert_cmphex(qpci_config_readw(t.dev, pcie + PCI_EXP_FLAGS) &
                    PCI_EXP_FLAGS_TYPE, ==, PCI_EXP_TYPE_RC_END << 4);
    lnksta = qpci_config_readw(t.dev, 0xb2);
    g_assert_cmphex(lnksta & PCI_EXP_LNKSTA_CLS, ==, PCI_EXP_LNKSTA_CLS_5_0GB);
    g_assert_cmphex((lnksta & PCI_EXP_LNKSTA_NLW) >> PCI_EXP_LNKSTA_NLW_SHIFT,
                    ==, 8);
    g_assert_cmphex(qpci_find_capability(t.dev, PCI_CAP_ID_MSI, 0), !=, 0);
    g_assert_cmphex(qpci_find_capability(t.dev, PCI_CAP_ID_PM, 0), !=, 0);

    ixgbe_test_stop(&t);
}

static void test_init_registers(void)
{
    IxgbeTest t;
    uint32_t status, eec, links;
    uint16_t words[0x40], sum = 0;
    QPCIBar io;

    ixgbe_test_start(&t);

    status = rd(&t, IXGBE_STATUS);
    g_assert_cmphex(status, !=, 0xffffffff);
    g_assert_cmphex(status & IXGBE_STATUS_LINK_UP, ==, IXGBE_STATUS_LINK_UP);
    g_assert_cmphex(status & IXGBE_STATUS_GIO, ==, IXGBE_STATUS_GIO);
    links = rd(&t, IXGBE_LINKS);
    g_assert_cmphex(links & (IXGBE_LINKS_UP | IXGBE_LINKS_SPEED_10G), ==,
                    IXGBE_LINKS_UP | IXGBE_LINKS_SPEED_10G);

    /*
     * The inline IPsec engine is not modelled: its fuses say so, and the
     * driver then offers no ESP offload (never one that does nothing)
     */
    g_assert_cmphex(rd(&t, IXGBE_SECTXSTAT) & IXGBE_SECTXSTAT_OFF_DIS, ==,
                    IXGBE_SECTXSTAT_OFF_DIS);
    g_assert_cmphex(rd(&t, IXGBE_SECRXSTAT) & IXGBE_SECRXSTAT_OFF_DIS, ==,
                    IXGBE_SECRXSTAT_OFF_DIS);

    /* EEPROM present, auto-read done: the driver uses EERD, no bit-bang */
    eec = rd(&t, IXGBE_EEC);
    g_assert_cmphex(eec & (IXGBE_EEC_PRES | IXGBE_EEC_ARD), ==,
                    IXGBE_EEC_PRES | IXGBE_EEC_ARD);

    for (unsigned w = 0; w < ARRAY_SIZE(words); w++) {
        uint32_t eerd;

        wr(&t, IXGBE_EERD, (w << IXGBE_EERD_ADDR_SHIFT) | IXGBE_EERD_START);
        eerd = rd(&t, IXGBE_EERD);
        g_assert_cmphex(eerd & IXGBE_EERD_DONE, ==, IXGBE_EERD_DONE);
        words[w] = eerd >> IXGBE_EERD_DATA_SHIFT;
        sum += words[w];
    }
    /*
     * With every section pointer (words 0x03..0x0E) absent, the driver's
     * checksum is the plain sum of words 0x00..0x3F.
     */
    for (unsigned w = 0x03; w <= 0x0e; w++) {
        g_assert_true(words[w] == 0 || words[w] == 0xffff);
    }
    g_assert_cmphex(sum, ==, 0xbaba);

    /* The MAC given with mac= is in receive address 0, marked valid */
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, IXGBE_TEST_RAL);
    g_assert_cmphex(rd(&t, IXGBE_RAL0 + 4), ==,
                    IXGBE_TEST_RAH | IXGBE_RAH_AV);
    /* ... and in the 82598-compatible alias */
    g_assert_cmphex(rd(&t, IXGBE_RAL_ALIAS), ==, IXGBE_TEST_RAL);

    /* The I/O BAR reaches the same registers through IOADDR/IODATA */
    io = qpci_iomap(t.dev, 2, NULL);
    g_assert_true(io.is_io);
    qpci_io_writel(t.dev, io, 0, IXGBE_RAL0);
    g_assert_cmphex(qpci_io_readl(t.dev, io, 4), ==, IXGBE_TEST_RAL);

    ixgbe_test_stop(&t);
}

static void test_reset(void)
{
    IxgbeTest t;
    uint32_t ctrl;

    ixgbe_test_start(&t);

    wr(&t, rxq(0, IXGBE_RXQ_RDBAL), 0x12345680);
    g_assert_cmphex(rd(&t, rxq(0, IXGBE_RXQ_RDBAL)), ==, 0x12345680);
    wr(&t, txq(5, IXGBE_TXQ_TDLEN), 0x1000);
    g_assert_cmphex(rd(&t, txq(5, IXGBE_TXQ_TDLEN)), ==, 0x1000);
    wr(&t, IXGBE_EIMS, 0x0000ffff);
    g_assert_cmphex(rd(&t, IXGBE_EIMS), ==, 0x0000ffff);
    /* A driver may overwrite RAR0; reset reloads it from the EEPROM MAC */
    wr(&t, IXGBE_RAL0, 0x01020304);
    wr(&t, IXGBE_RAL0 + 4, 0x0506);
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, 0x01020304);

    ctrl = rd(&t, IXGBE_CTRL);
    wr(&t, IXGBE_CTRL, ctrl | IXGBE_CTRL_RST);
    /* The driver polls CTRL.RST only briefly: it must read clear at once */
    g_assert_cmphex(rd(&t, IXGBE_CTRL) & IXGBE_CTRL_RST, ==, 0);

    g_assert_cmphex(rd(&t, rxq(0, IXGBE_RXQ_RDBAL)), ==, 0);
    g_assert_cmphex(rd(&t, txq(5, IXGBE_TXQ_TDLEN)), ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_EIMS), ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, IXGBE_TEST_RAL);
    g_assert_cmphex(rd(&t, IXGBE_RAL0 + 4), ==,
                    IXGBE_TEST_RAH | IXGBE_RAH_AV);
    g_assert_cmphex(rd(&t, IXGBE_STATUS), !=, 0xffffffff);

    /* CTRL.LNK_RST also completes at once */
    wr(&t, rxq(0, IXGBE_RXQ_RDBAL), 0x12345680);
    wr(&t, IXGBE_CTRL, rd(&t, IXGBE_CTRL) | IXGBE_CTRL_LNK_RST);
    g_assert_cmphex(rd(&t, IXGBE_CTRL) & IXGBE_CTRL_LNK_RST, ==, 0);

    /* PCI state survives a software reset: BAR0 still decodes */
    g_assert_cmphex(qpci_config_readw(t.dev, PCI_COMMAND) &
                    PCI_COMMAND_MEMORY, ==, PCI_COMMAND_MEMORY);
    g_assert_cmphex(rd(&t, IXGBE_RAL0), ==, IXGBE_TEST_RAL);

    ixgbe_test_stop(&t);
}

static void test_tx(void)
{
    IxgbeTest t;
    uint8_t frame[256], got[2048];
    uint64_t ring, buf, part;
    int len;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);

    /* One frame in one descriptor */
    build_frame(frame, peer_mac, 100, 1);
    buf = guest_frame(&t, frame, 100);
    tx_put_data(&t, ring, 0, buf, 100, 100,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);

    len = backend_recv(&t, got, sizeof(got), WAIT_US / 1000);
    g_assert_cmpint(len, ==, 100);
    g_assert_cmpmem(got, len, frame, 100);
    /* WTHRESH = 0: the RS descriptor is written back at once */
    g_assert_true(tx_dd(&t, ring, 0));
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);

    /* One frame in two descriptors; only the second asks for status */
    build_frame(frame, peer_mac, 200, 2);
    buf = guest_frame(&t, frame, 80);
    part = guest_frame(&t, frame + 80, 120);
    tx_put_data(&t, ring, 1, buf, 80, 200, 0);
    tx_put_data(&t, ring, 2, part, 120, 0,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 3);

    len = backend_recv(&t, got, sizeof(got), WAIT_US / 1000);
    g_assert_cmpint(len, ==, 200);
    g_assert_cmpmem(got, len, frame, 200);
    g_assert_false(tx_dd(&t, ring, 1));
    g_assert_true(tx_dd(&t, ring, 2));
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 3);

    /* Six frames with one tail write, wrapping the 8-entry ring */
    for (unsigned i = 0; i < 6; i++) {
        unsigned idx = (3 + i) % 8;

        build_frame(frame, peer_mac, 64 + i, 10 + i);
        buf = guest_frame(&t, frame, 64 + i);
        tx_put_data(&t, ring, idx, buf, 64 + i, 64 + i,
                    IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    }
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    for (unsigned i = 0; i < 6; i++) {
        build_frame(frame, peer_mac, 64 + i, 10 + i);
        len = backend_recv(&t, got, sizeof(got), WAIT_US / 1000);
        g_assert_cmpint(len, ==, 64 + i);
        g_assert_cmpmem(got, len, frame, 64 + i);
        g_assert_true(tx_dd(&t, ring, (3 + i) % 8));
    }
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);
    backend_assert_silent(&t);

    /* Good packets transmitted: 8, read-to-clear */
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, 8);
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, 0);

    ixgbe_test_stop(&t);
}

/*
 * TXDCTL.WTHRESH: descriptors are written back when WTHRESH of them are
 * done, all at once, a run that wraps the ring on both sides; only
 * STA.DD changes in them
 */
static void test_tx_wthresh(void)
{
    uint8_t frame[128], got[256], before[8][DESC_SIZE], after[DESC_SIZE];
    IxgbeTest t;
    uint64_t ring, buf;
    unsigned idx = 0;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 3);
    build_frame(frame, peer_mac, 80, 1);
    buf = guest_frame(&t, frame, 80);

    /*
     * 2 frames, 4, then 3: written back as 0-2, 3-5 and the wrapping run
     * 6, 7, 0 (descriptor 0 reused once its first write-back is in)
     */
    for (unsigned round = 0; round < 3; round++) {
        static const unsigned frames[] = { 2, 4, 3 };
        unsigned n = frames[round];

        for (unsigned i = 0; i < n; i++) {
            unsigned d = (idx + i) % 8;

            tx_put_data(&t, ring, d, buf, 80, 80,
                        IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
            qtest_memread(t.qts, ring + d * DESC_SIZE, before[d], DESC_SIZE);
        }
        wr(&t, txq(0, IXGBE_TXQ_TDT), (idx + n) % 8);
        for (unsigned i = 0; i < n; i++) {
            g_assert_cmpint(backend_recv(&t, got, sizeof(got),
                                         WAIT_US / 1000), ==, 80);
        }
        idx = (idx + n) % 8;
        g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, idx);
        if (!round) {
            /* 2 < WTHRESH: both held */
            g_assert_false(tx_dd(&t, ring, 0));
            g_assert_false(tx_dd(&t, ring, 1));
        }
    }
    for (unsigned d = 0; d < 8; d++) {
        qtest_memread(t.qts, ring + d * DESC_SIZE, after, DESC_SIZE);
        g_assert_true(after[12] & IXGBE_TXD_STA_DD);
        after[12] &= ~IXGBE_TXD_STA_DD;
        g_assert_cmpmem(after, DESC_SIZE, before[d], DESC_SIZE);
    }
    backend_assert_silent(&t);
    ixgbe_test_stop(&t);
}

static void test_rx(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t frame[1600], wb[DESC_SIZE];
    size_t len;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 8);
    rx_enable(&t);

    /* A unicast frame to our MAC */
    len = build_frame(frame, test_mac, 98, 1);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (IXGBE_RXD_STAT_DD |
                                        IXGBE_RXD_STAT_EOP), ==,
                    IXGBE_RXD_STAT_DD | IXGBE_RXD_STAT_EOP);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    rx_check_data(&t, &r, 0, frame, len);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 1);

    /*
     * A frame to another unicast MAC is filtered; the broadcast behind it
     * (FCTRL.BAM) takes the next descriptor.
     */
    len = build_frame(frame, other_mac, 70, 2);
    backend_send(&t, frame, len);
    len = build_frame(frame, bcast_mac, 72, 3);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, 72);
    rx_check_data(&t, &r, 1, frame, len);

    /* A 1400-byte frame spans two 1 KiB buffers; EOP only on the last */
    len = build_frame(frame, test_mac, 1400, 4);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (IXGBE_RXD_STAT_DD |
                                        IXGBE_RXD_STAT_EOP), ==,
                    IXGBE_RXD_STAT_DD);
    g_assert_cmpuint(rx_wb_length(wb), ==, RX_BUF_SIZE);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (IXGBE_RXD_STAT_DD |
                                        IXGBE_RXD_STAT_EOP), ==,
                    IXGBE_RXD_STAT_DD | IXGBE_RXD_STAT_EOP);
    g_assert_cmpuint(rx_wb_length(wb), ==, len - RX_BUF_SIZE);
    rx_check_data(&t, &r, 2, frame, RX_BUF_SIZE);
    rx_check_data(&t, &r, 3, frame + RX_BUF_SIZE, len - RX_BUF_SIZE);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 4);

    /* Good packets received: 3 (the filtered one is not counted) */
    g_assert_cmpuint(rd(&t, IXGBE_GPRC), ==, 3);
    g_assert_cmpuint(rd(&t, IXGBE_BPRC), ==, 1);

    ixgbe_test_stop(&t);
}

/* CRC-32 (IEEE 802.3), bit by bit, as the FCS is computed */
static uint32_t fcs32(const uint8_t *p, size_t len)
{
    uint32_t crc = 0xffffffff;

    for (size_t i = 0; i < len; i++) {
        crc ^= p[i];
        for (int b = 0; b < 8; b++) {
            crc = (crc >> 1) ^ (0xedb88320 & -(crc & 1));
        }
    }
    return ~crc;
}

/*
 * An IPv4/UDP frame of len bytes with an 802.1Q tag (VLAN vid) and a
 * correct UDP checksum
 */
static size_t build_vlan_udp_frame(uint8_t *buf, size_t len, uint16_t vid)
{
    uint8_t *ip = buf + 18, *udp = ip + 20;
    size_t udp_len = len - 18 - 20;
    uint32_t sum = 0;

    memset(buf, 0, len);
    memcpy(buf, test_mac, ETH_ALEN);
    memcpy(buf + 6, peer_mac, ETH_ALEN);
    stw_be_p(buf + 12, 0x8100);
    stw_be_p(buf + 14, vid);
    stw_be_p(buf + 16, 0x0800);
    ip[0] = 0x45;
    stw_be_p(ip + 2, len - 18);
    ip[8] = 64;
    ip[9] = 17;
    memcpy(ip + 12, (uint8_t[]){ 192, 0, 2, 1 }, 4);
    memcpy(ip + 16, (uint8_t[]){ 192, 0, 2, 2 }, 4);
    stw_be_p(ip + 10, ip_checksum(ip, 20));
    stw_be_p(udp, 4000);
    stw_be_p(udp + 2, 5000);
    stw_be_p(udp + 4, udp_len);
    for (size_t i = 8; i < udp_len; i++) {
        udp[i] = i * 13 + 1;
    }
    /* Pseudo header, then the datagram (odd length padded with zero) */
    for (unsigned i = 12; i < 20; i += 2) {
        sum += lduw_be_p(ip + i);
    }
    sum += 17 + udp_len;
    for (size_t i = 0; i < udp_len; i += 2) {
        sum += (udp[i] << 8) | (i + 1 < udp_len ? udp[i + 1] : 0);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    stw_be_p(udp + 6, ~sum ? ~sum : 0xffff);
    return len;
}

/* Add bytes to a ones' complement sum as big-endian 16-bit words */
static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i < len; i += 2) {
        sum += (p[i] << 8) | (i + 1 < len ? p[i + 1] : 0);
    }
    return sum;
}

static uint16_t csum_fold(uint32_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

/*
 * An untagged IPv4 or IPv6 frame of len bytes carrying TCP (proto 6) or
 * UDP (17), with right IP header and TCP/UDP checksums
 */
static size_t build_l4_frame(uint8_t *buf, size_t len, bool v6,
                             uint8_t proto)
{
    size_t iplen = v6 ? 40 : 20, l4len = len - 14 - iplen;
    uint8_t *ip = buf + 14, *l4 = ip + iplen;
    unsigned cso = proto == 6 ? 16 : 6;
    uint32_t sum;

    memset(buf, 0, len);
    memcpy(buf, test_mac, ETH_ALEN);
    memcpy(buf + 6, peer_mac, ETH_ALEN);
    stw_be_p(buf + 12, v6 ? 0x86dd : 0x0800);
    if (v6) {
        ip[0] = 0x60;
        stw_be_p(ip + 4, l4len);
        ip[6] = proto;
        ip[7] = 64;
        for (unsigned i = 0; i < 32; i++) {
            ip[8 + i] = 0x20 + i * 7;
        }
    } else {
        ip[0] = 0x45;
        stw_be_p(ip + 2, len - 14);
        ip[8] = 64;
        ip[9] = proto;
        memcpy(ip + 12, (uint8_t[]){ 192, 0, 2, 1, 192, 0, 2, 2 }, 8);
        stw_be_p(ip + 10, ip_checksum(ip, 20));
    }
    stw_be_p(l4, 4000);
    stw_be_p(l4 + 2, 5000);
    if (proto == 6) {
        l4[12] = 5 << 4;            /* data offset: 20 bytes */
        l4[13] = 0x18;              /* PSH, ACK */
        stw_be_p(l4 + 14, 1000);
    } else {
        stw_be_p(l4 + 4, l4len);
    }
    for (size_t i = proto == 6 ? 20 : 8; i < l4len; i++) {
        l4[i] = i * 13 + 1;
    }
    /* Pseudo header: the addresses, the protocol and the length */
    sum = csum_add(proto + l4len, v6 ? ip + 8 : ip + 12, v6 ? 32 : 8);
    sum = csum_add(sum, l4, l4len);
    stw_be_p(l4 + cso, csum_fold(sum) ? csum_fold(sum) : 0xffff);
    return len;
}

/*
 * The checksum status of received frames: IPv4/UDP with a VLAN tag right
 * and at odd lengths, a wrong IP header checksum (IPE) or UDP checksum
 * (TCPE) each reported alone, a datagram sent without a checksum (0) not
 * checked; then TCP and UDP over IPv4 and IPv6, right and corrupted
 */
static void test_rx_checksum_status(void)
{
    static const uint32_t ok = IXGBE_RXD_STAT_IPCS | IXGBE_RXD_STAT_L4CS |
                               IXGBE_RXD_STAT_UDPCS;
    static const struct {
        size_t len;
        int corrupt;            /* byte to flip, or -1 */
        bool no_udp_csum;
        uint32_t want;
    } cases[] = {
        { 200, -1, false, ok },
        { 201, -1, false, ok },
        { 1001, -1, false, ok },
        { 200, 18 + 8, false, ok | IXGBE_RXD_ERR_IPE },
        { 201, 200, false, ok | IXGBE_RXD_ERR_TCPE },
        { 1001, 517, false, ok | IXGBE_RXD_ERR_TCPE },
        { 200, 100, true, IXGBE_RXD_STAT_IPCS },
    };
    const uint32_t mask = ok | IXGBE_RXD_ERR_IPE | IXGBE_RXD_ERR_TCPE;
    uint8_t frame[1100], wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 32);
    rx_enable(&t);
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        size_t len = build_vlan_udp_frame(frame, cases[i].len, 5);

        if (cases[i].no_udp_csum) {
            stw_be_p(frame + 18 + 20 + 6, 0);
        }
        if (cases[i].corrupt >= 0) {
            frame[cases[i].corrupt] ^= 0x40;
        }
        backend_send(&t, frame, len);
        rx_wait(&t, &r, wb);
        g_assert_cmpuint(rx_wb_length(wb), ==, len);
        g_assert_cmphex(rx_wb_status(wb) & mask, ==, cases[i].want);
    }

    for (unsigned v6 = 0; v6 < 2; v6++) {
        for (unsigned tcp = 0; tcp < 2; tcp++) {
            uint32_t want = IXGBE_RXD_STAT_L4CS |
                            (v6 ? 0 : IXGBE_RXD_STAT_IPCS) |
                            (tcp ? 0 : IXGBE_RXD_STAT_UDPCS);

            for (unsigned bad = 0; bad < 2; bad++) {
                size_t len = build_l4_frame(frame, 333 + v6 * 100, v6,
                                            tcp ? 6 : 17);

                if (bad) {
                    frame[len - 3] ^= 0x01;
                }
                backend_send(&t, frame, len);
                rx_wait(&t, &r, wb);
                g_assert_cmphex(rx_wb_status(wb) & mask, ==,
                                want | (bad ? IXGBE_RXD_ERR_TCPE : 0));
                g_assert_cmphex((ldl_le_p(wb) >> IXGBE_RXD_PKTTYPE_SHIFT) &
                                (IXGBE_RXD_PKTTYPE_IPV6 |
                                 IXGBE_RXD_PKTTYPE_TCP), ==,
                                (v6 ? IXGBE_RXD_PKTTYPE_IPV6 : 0) |
                                (tcp ? IXGBE_RXD_PKTTYPE_TCP : 0));
            }
        }
    }
    ixgbe_test_stop(&t);
}

/*
 * Transmit frame in MAC loopback from guest buffers cut at the given
 * offsets (one descriptor each): the receive side gets it as the
 * transmit path's scatter-gather list (its header copies, then the
 * payload in the pieces of the guest's buffers).
 */
static void loopback_frags(IxgbeTest *t, uint64_t ring, unsigned *idx,
                           const uint8_t *frame, size_t len,
                           const size_t *cuts, unsigned ncuts)
{
    size_t start = 0;

    for (unsigned i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        uint64_t buf = guest_frame(t, frame + start, end - start);

        tx_put_data(t, ring, *idx, buf, end - start, i ? 0 : len,
                    i == ncuts ? IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS : 0);
        *idx = (*idx + 1) % 16;
        start = end;
    }
    wr(t, txq(0, IXGBE_TXQ_TDT), *idx);
}

/*
 * Receive from a scatter-gather list: the VLAN tag stripped into the
 * descriptor (RXDCTL.VME), the CRC kept (HLREG0.RXCRCSTRP clear) and
 * computed over what reaches memory, a frame spanning two buffers, a short
 * frame padded before the tag is stripped, checksums checked across the
 * pieces, and the octet counters.
 */
static void test_rx_sg_vlan_crc(void)
{
    static const size_t cuts[] = { 5, 13, 15, 40, 700 };
    static const size_t short_cuts[] = { 14 };
    uint8_t frame[1600], want[1600], wb[DESC_SIZE];
    size_t len, n;
    unsigned idx = 0;
    uint64_t ring;
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    ring = loopback_setup(&t, &r, 8, 16);
    wr(&t, IXGBE_HLREG0, rd(&t, IXGBE_HLREG0) & ~IXGBE_HLREG0_RXCRCSTRP);
    wr(&t, rxq(0, IXGBE_RXQ_RXDCTL),
       rd(&t, rxq(0, IXGBE_RXQ_RXDCTL)) | IXGBE_RXDCTL_VME);

    /* 1400 bytes in six pieces: 1396 without the tag, 1400 with the CRC */
    len = build_vlan_udp_frame(frame, 1400, 0x2123);
    loopback_frags(&t, ring, &idx, frame, len, cuts, ARRAY_SIZE(cuts));
    memcpy(want, frame, 12);
    memcpy(want + 12, frame + 16, len - 16);
    n = len - 4;
    stl_le_p(want + n, fcs32(want, n));
    n += 4;
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (IXGBE_RXD_STAT_DD |
                                        IXGBE_RXD_STAT_EOP), ==,
                    IXGBE_RXD_STAT_DD);
    g_assert_cmpuint(rx_wb_length(wb), ==, RX_BUF_SIZE);
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, n - RX_BUF_SIZE);
    g_assert_cmphex(rx_wb_status(wb) &
                    (IXGBE_RXD_STAT_DD | IXGBE_RXD_STAT_EOP |
                     IXGBE_RXD_STAT_VP | IXGBE_RXD_STAT_IPCS |
                     IXGBE_RXD_STAT_L4CS | IXGBE_RXD_STAT_UDPCS |
                     IXGBE_RXD_ERR_IPE | IXGBE_RXD_ERR_TCPE), ==,
                    IXGBE_RXD_STAT_DD | IXGBE_RXD_STAT_EOP |
                    IXGBE_RXD_STAT_VP | IXGBE_RXD_STAT_IPCS |
                    IXGBE_RXD_STAT_L4CS | IXGBE_RXD_STAT_UDPCS);
    g_assert_cmphex(lduw_le_p(wb + 14), ==, 0x2123);
    g_assert_cmphex((ldl_le_p(wb) >> IXGBE_RXD_PKTTYPE_SHIFT) &
                    (IXGBE_RXD_PKTTYPE_IPV4 | IXGBE_RXD_PKTTYPE_UDP), ==,
                    IXGBE_RXD_PKTTYPE_IPV4 | IXGBE_RXD_PKTTYPE_UDP);
    rx_check_data(&t, &r, 0, want, RX_BUF_SIZE);
    rx_check_data(&t, &r, 1, want + RX_BUF_SIZE, n - RX_BUF_SIZE);
    /* Queue bytes: what reached memory; total octets: the wire's */
    g_assert_cmpuint(rd(&t, IXGBE_QBRC0), ==, n);
    g_assert_cmpuint(rd(&t, IXGBE_GORCL), ==, n);
    g_assert_cmpuint(rd(&t, IXGBE_TORL), ==, len + 4);

    /*
     * A 30-byte tagged frame in two pieces: padded to 60, 56 without the
     * tag, 60 with the CRC over the padding
     */
    memset(frame, 0, sizeof(frame));
    memcpy(frame, test_mac, ETH_ALEN);
    memcpy(frame + 6, peer_mac, ETH_ALEN);
    stw_be_p(frame + 12, 0x8100);
    stw_be_p(frame + 14, 7);
    stw_be_p(frame + 16, 0x88b5);
    memset(frame + 18, 0x5a, 12);
    loopback_frags(&t, ring, &idx, frame, 30, short_cuts,
                   ARRAY_SIZE(short_cuts));
    memset(want, 0, sizeof(want));
    memcpy(want, frame, 12);
    memcpy(want + 12, frame + 16, 14);
    stl_le_p(want + 56, fcs32(want, 56));
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, 60);
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_VP, ==,
                    IXGBE_RXD_STAT_VP);
    g_assert_cmphex(lduw_le_p(wb + 14), ==, 7);
    rx_check_data(&t, &r, 2, want, 60);

    g_assert_cmpuint(rd(&t, IXGBE_GPRC), ==, 2);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 3);
    backend_assert_silent(&t);
    ixgbe_test_stop(&t);
}

/* RETA entry i -> queue, a pattern that is not simply i % 4 */
static unsigned reta_queue(unsigned i)
{
    return ((i >> 2) ^ (i * 3)) & 3;
}

static void test_rss(void)
{
    static const uint8_t sip[4] = { 192, 0, 2, 10 };
    static const uint8_t dip[4] = { 198, 51, 100, 20 };
    IxgbeTest t;
    RxRing rings[4];
    uint8_t frame[64], wb[DESC_SIZE];
    unsigned hits[4] = { 0 };
    size_t len;

    ixgbe_test_start(&t);
    for (unsigned q = 0; q < 4; q++) {
        rx_ring_setup(&t, &rings[q], q, 32);
    }
    rss_program(&t, reta_queue, IXGBE_MRQC_RSS | IXGBE_MRQC_IPV4 |
                IXGBE_MRQC_TCPIPV4 | IXGBE_MRQC_UDPIPV4);
    rx_enable(&t);

    /* UDP flows that differ in their ports, then one TCP flow */
    for (unsigned i = 0; i < 25; i++) {
        bool tcp = i == 24;
        uint16_t sport = 1024 + i * 257, dport = 4789 + (i % 3);
        uint32_t hash = rss_hash_ipv4(sip, dip, sport, dport, true);
        unsigned want = reta_queue(hash & (IXGBE_RETA_ENTRIES - 1));
        int got;

        len = build_ipv4_frame(frame, tcp ? 6 : 17, sip, dip, sport, dport);
        backend_send(&t, frame, len);
        got = rx_wait_any(&t, rings, 4, wb);
        g_assert_cmpint(got, ==, want);
        g_assert_cmphex(rx_wb_hash(wb), ==, hash);
        g_assert_cmpuint(rx_wb_rss_type(wb), ==,
                         tcp ? IXGBE_RSSTYPE_IPV4_TCP :
                         IXGBE_RSSTYPE_IPV4_UDP);
        rx_check_data(&t, &rings[got], rings[got].next - 1, frame, len);
        hits[got]++;
    }
    /* The flows above were chosen to reach every queue */
    for (unsigned q = 0; q < 4; q++) {
        g_assert_cmpuint(hits[q], >, 0);
    }

    /* A frame RSS cannot hash goes to queue 0 with hash 0 */
    len = build_frame(frame, test_mac, 60, 5);
    backend_send(&t, frame, len);
    g_assert_cmpint(rx_wait_any(&t, rings, 4, wb), ==, 0);
    g_assert_cmphex(rx_wb_hash(wb), ==, 0);
    g_assert_cmpuint(rx_wb_rss_type(wb), ==, IXGBE_RSSTYPE_NONE);

    /* RSS off (MRQC.MRQE = 0): a hashable flow also goes to queue 0 */
    wr(&t, IXGBE_MRQC, 0);
    for (unsigned i = 0; i < 4; i++) {
        len = build_ipv4_frame(frame, 17, sip, dip, 2000 + i * 1000, 53);
        backend_send(&t, frame, len);
        g_assert_cmpint(rx_wait_any(&t, rings, 4, wb), ==, 0);
    }

    ixgbe_test_stop(&t);
}

static unsigned rss_entry_queue1(unsigned entry)
{
    return 1;
}

/*
 * Queues 0 and 1 with RSS steering every IPv4 flow to queue 1 and other
 * frames to queue 0.
 */
static void two_queue_setup(IxgbeTest *t, RxRing *rings)
{
    rx_ring_setup(t, &rings[0], 0, 16);
    rx_ring_setup(t, &rings[1], 1, 16);
    rss_program(t, rss_entry_queue1,
                IXGBE_MRQC_RSS | IXGBE_MRQC_IPV4 | IXGBE_MRQC_UDPIPV4);
    rx_enable(t);
}

static void send_ipv4(IxgbeTest *t, uint16_t sport)
{
    static const uint8_t sip[4] = { 10, 0, 0, 1 };
    static const uint8_t dip[4] = { 10, 0, 0, 2 };
    uint8_t frame[64];
    size_t len = build_ipv4_frame(frame, 17, sip, dip, sport, 9);

    backend_send(t, frame, len);
}

static void send_other(IxgbeTest *t)
{
    uint8_t frame[64];
    size_t len = build_frame(frame, test_mac, 60, 9);

    backend_send(t, frame, len);
}

static void test_msix_routing(void)
{
    IxgbeTest t;
    RxRing rings[2];
    uint8_t wb[DESC_SIZE];
    uint64_t msg;

    ixgbe_test_start(&t);
    two_queue_setup(&t, rings);
    msix_setup(&t);
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        g_assert_true(qpci_msix_masked(t.dev, v));
    }

    /* RX queue 1 -> vector 3, RX queue 0 -> vector 5, both auto-cleared */
    ivar_rx(&t, 1, 3);
    ivar_rx(&t, 0, 5);
    wr(&t, IXGBE_EIAC, BIT(3) | BIT(5));
    wr(&t, IXGBE_EIMS, BIT(3) | BIT(5));
    g_assert_cmphex(rd(&t, IXGBE_EIMS) & 0xffff, ==, BIT(3) | BIT(5));
    msix_test_clear_pending(&t, -1);

    /* The vectors are masked in the table: delivery shows in the PBA */
    send_ipv4(&t, 1000);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, 3);
    /* EIAC: the cause was cleared when the vector fired */
    g_assert_cmphex(rd(&t, IXGBE_EICS) & BIT(3), ==, 0);

    send_other(&t);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 0);
    msix_test_clear_pending(&t, 5);

    /* A second frame on queue 1 interrupts again (EITR = 0) */
    send_ipv4(&t, 1001);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, 3);

    /* Masked in EIMC: the cause stays in EICR, no message */
    wr(&t, IXGBE_EIMC, BIT(3));
    send_ipv4(&t, 1002);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, -1);
    g_assert_cmphex(rd(&t, IXGBE_EICS) & BIT(3), ==, BIT(3));
    /* Unmasking the cause sends the held interrupt */
    wr(&t, IXGBE_EIMS, BIT(3));
    msix_test_clear_pending(&t, 3);

    /* Unmasked in the table: the message itself is written to memory */
    msg = guest_alloc(&t.qs->alloc, 4);
    qtest_writel(t.qts, msg, 0);
    msix_entry_write(&t, 3, msg, 0x4903, false);
    send_ipv4(&t, 1003);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    g_assert_cmphex(qtest_readl(t.qts, msg), ==, 0x4903);
    msix_test_clear_pending(&t, -1);

    ixgbe_test_stop(&t);
}

static void test_eitr(void)
{
    IxgbeTest t;
    RxRing rings[2];
    uint8_t wb[DESC_SIZE];
    /* EITR interval: bits 11:3 in 2 us units */
    const unsigned interval_us = 200;

    ixgbe_test_start(&t);
    two_queue_setup(&t, rings);
    msix_setup(&t);
    ivar_rx(&t, 1, 3);
    wr(&t, IXGBE_EIAC, BIT(3));
    wr(&t, IXGBE_EIMS, BIT(3));
    wr(&t, eitr(3), (interval_us / 2) << 3);
    g_assert_cmphex(rd(&t, eitr(3)) & IXGBE_EITR_INTERVAL_MASK, ==,
                    (interval_us / 2) << 3);

    /* The first interrupt goes out at once and starts the interval */
    send_ipv4(&t, 1);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, 3);

    /* The second is held until the interval has passed */
    send_ipv4(&t, 2);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, -1);
    qtest_clock_step(t.qts, (interval_us / 2) * SCALE_US);
    msix_test_clear_pending(&t, -1);
    qtest_clock_step(t.qts, (interval_us / 2 + 10) * SCALE_US);
    msix_test_clear_pending(&t, 3);

    /* Once the interval ends with nothing pending, nothing is sent */
    qtest_clock_step(t.qts, 2 * interval_us * SCALE_US);
    msix_test_clear_pending(&t, -1);

    /* With EITR = 0 there is no hold-off */
    wr(&t, eitr(3), 0);
    qtest_clock_step(t.qts, 2 * interval_us * SCALE_US);
    send_ipv4(&t, 3);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, 3);
    send_ipv4(&t, 4);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    msix_test_clear_pending(&t, 3);

    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Receive descriptor cache and write-back batching                    */
/* ------------------------------------------------------------------ */

/* Wait until queue q's head is at want: the device has taken the frames */
static void wait_rdh(IxgbeTest *t, unsigned q, uint32_t want)
{
    for (int i = 0; i < 5000 && rd(t, rxq(q, IXGBE_RXQ_RDH)) != want; i++) {
        g_usleep(1000);
    }
    g_assert_cmpuint(rd(t, rxq(q, IXGBE_RXQ_RDH)), ==, want);
}

/* Give descriptor idx its buffer again, as a driver refilling the ring */
static void rx_rearm(IxgbeTest *t, const RxRing *r, unsigned idx)
{
    uint8_t d[DESC_SIZE] = { 0 };

    stq_le_p(d, r->bufs + idx * RX_BUF_SIZE);
    qtest_memwrite(t->qts, r->ring + idx * DESC_SIZE, d, sizeof(d));
}

static void rx_set_thresholds(IxgbeTest *t, unsigned q, unsigned pthresh,
                              unsigned hthresh, unsigned wthresh)
{
    uint32_t v = IXGBE_RXDCTL_ENABLE | pthresh |
                 (hthresh << IXGBE_RXDCTL_HTHRESH_SHIFT) |
                 (wthresh << IXGBE_RXDCTL_WTHRESH_SHIFT);

    wr(t, rxq(q, IXGBE_RXQ_RXDCTL), v);
    g_assert_cmphex(rd(t, rxq(q, IXGBE_RXQ_RXDCTL)), ==, v);
}

/* RX queue 0 on MSI-X vector 2, auto-cleared, with an interval of 200 us */
#define WB_VECTOR       2
#define WB_INTERVAL_US  200

static void wb_vector_setup(IxgbeTest *t)
{
    msix_setup(t);
    ivar_rx(t, 0, WB_VECTOR);
    wr(t, IXGBE_EIAC, BIT(WB_VECTOR));
    wr(t, IXGBE_EIMS, BIT(WB_VECTOR));
    wr(t, eitr(WB_VECTOR), (WB_INTERVAL_US / 2) << 3);
}

static void send_sized(IxgbeTest *t, size_t len, uint8_t seed)
{
    uint8_t frame[2048];

    build_frame(frame, test_mac, len, seed);
    backend_send(t, frame, len);
}

/*
 * Queue 0 with an ndesc ring, WTHRESH wthresh and its vector as above;
 * one frame received, whose interrupt (the first: no interval runs yet)
 * writes it back at once
 */
static void wb_test_start(IxgbeTest *t, RxRing *r, unsigned ndesc,
                          unsigned wthresh)
{
    ixgbe_test_start(t);
    rx_ring_setup(t, r, 0, ndesc);
    rx_enable(t);
    wb_vector_setup(t);
    rx_set_thresholds(t, 0, 0, 0, wthresh);
    send_sized(t, 60, 1);
    wait_rdh(t, 0, 1);
    g_assert_true(rx_dd(t, r, 0));
    msix_test_clear_pending(t, WB_VECTOR);
}

/*
 * RXDCTL.WTHRESH: completed descriptors are written back when WTHRESH of
 * them are pending or when the queue's vector fires, not before; the data
 * is in memory at once; a frame spanning two buffers is written back
 * whole; a disabled queue writes back what it held.
 */
static void test_rx_wthresh(void)
{
    uint8_t frame[2048], wb[DESC_SIZE];
    IxgbeTest t;
    RxRing r;

    /* The first frame's interrupt goes out at once and writes it back */
    wb_test_start(&t, &r, 16, 4);

    /* Three more are held (3 < WTHRESH) while the interval runs */
    for (unsigned i = 1; i <= 3; i++) {
        send_sized(&t, 60 + i, 1 + i);
        wait_rdh(&t, 0, 1 + i);
    }
    for (unsigned i = 1; i <= 3; i++) {
        g_assert_false(rx_dd(&t, &r, i));
    }
    build_frame(frame, test_mac, 63, 4);
    rx_check_data(&t, &r, 3, frame, 63);
    msix_test_clear_pending(&t, -1);

    /* The fourth reaches WTHRESH: all four are written back */
    send_sized(&t, 64, 5);
    wait_rdh(&t, 0, 5);
    for (unsigned i = 1; i <= 4; i++) {
        g_assert_true(rx_desc_done(&t, &r, i, wb));
        g_assert_cmpuint(rx_wb_length(wb), ==, 60 + i);
    }
    msix_test_clear_pending(&t, -1);

    /* One held frame is written back when the interval ends */
    send_sized(&t, 70, 6);
    wait_rdh(&t, 0, 6);
    g_assert_false(rx_dd(&t, &r, 5));
    qtest_clock_step(t.qts, (WB_INTERVAL_US / 2) * SCALE_US);
    g_assert_false(rx_dd(&t, &r, 5));
    msix_test_clear_pending(&t, -1);
    qtest_clock_step(t.qts, (WB_INTERVAL_US / 2 + 10) * SCALE_US);
    g_assert_true(rx_dd(&t, &r, 5));
    msix_test_clear_pending(&t, WB_VECTOR);

    /* Two frames of two buffers each: held until the fourth descriptor */
    send_sized(&t, 1400, 7);
    wait_rdh(&t, 0, 8);
    g_assert_false(rx_dd(&t, &r, 6));
    g_assert_false(rx_dd(&t, &r, 7));
    send_sized(&t, 1300, 8);
    wait_rdh(&t, 0, 10);
    g_assert_true(rx_desc_done(&t, &r, 6, wb));
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_EOP, ==, 0);
    g_assert_cmpuint(rx_wb_length(wb), ==, RX_BUF_SIZE);
    g_assert_true(rx_desc_done(&t, &r, 7, wb));
    g_assert_cmphex(rx_wb_status(wb) & IXGBE_RXD_STAT_EOP, ==,
                    IXGBE_RXD_STAT_EOP);
    g_assert_cmpuint(rx_wb_length(wb), ==, 1400 - RX_BUF_SIZE);
    g_assert_true(rx_desc_done(&t, &r, 9, wb));
    g_assert_cmpuint(rx_wb_length(wb), ==, 1300 - RX_BUF_SIZE);
    build_frame(frame, test_mac, 1400, 7);
    rx_check_data(&t, &r, 6, frame, RX_BUF_SIZE);
    rx_check_data(&t, &r, 7, frame + RX_BUF_SIZE, 1400 - RX_BUF_SIZE);

    /* A held descriptor is written back when the queue is disabled */
    send_sized(&t, 80, 9);
    wait_rdh(&t, 0, 11);
    g_assert_false(rx_dd(&t, &r, 10));
    wr(&t, rxq(0, IXGBE_RXQ_RXDCTL), 4u << IXGBE_RXDCTL_WTHRESH_SHIFT);
    g_assert_true(rx_dd(&t, &r, 10));

    g_assert_cmpuint(rd(&t, IXGBE_QPRC0), ==, 9);
    ixgbe_test_stop(&t);
}

/*
 * A ring with fewer descriptors than WTHRESH: the frames that fill it are
 * written back by the interrupt, a frame without descriptors waits
 * (RDT = RDH) and is taken once the driver gives some back, and with
 * SRRCTL.DROP_EN it is dropped and counted in RNBC.
 */
static void test_rx_wthresh_ring_full(void)
{
    uint8_t wb[DESC_SIZE];
    uint32_t rnbc = 0;
    IxgbeTest t;
    RxRing r;

    wb_test_start(&t, &r, 8, 16);
    for (unsigned i = 1; i < 7; i++) {
        send_sized(&t, 60, 1 + i);
    }
    wait_rdh(&t, 0, 7);
    /* The ring is full (RDH = RDT): the eighth frame waits */
    send_sized(&t, 90, 8);
    g_usleep(SILENCE_MS * 1000);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 7);
    g_assert_cmpuint(rd(&t, IXGBE_RNBC0), ==, 0);
    for (unsigned i = 1; i < 7; i++) {
        g_assert_false(rx_dd(&t, &r, i));
    }
    /* The interval ends: the interrupt writes back what the ring holds */
    qtest_clock_step(t.qts, (WB_INTERVAL_US + 10) * SCALE_US);
    for (unsigned i = 1; i < 7; i++) {
        g_assert_true(rx_dd(&t, &r, i));
    }
    msix_test_clear_pending(&t, WB_VECTOR);

    /* The driver gives 7, 0..5 back: the waiting frame takes entry 7 */
    rx_rearm(&t, &r, 7);
    for (unsigned i = 0; i < 6; i++) {
        rx_rearm(&t, &r, i);
    }
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 6);
    wait_rdh(&t, 0, 0);
    qtest_clock_step(t.qts, (WB_INTERVAL_US + 10) * SCALE_US);
    g_assert_true(rx_desc_done(&t, &r, 7, wb));
    g_assert_cmpuint(rx_wb_length(wb), ==, 90);
    msix_test_clear_pending(&t, WB_VECTOR);

    /* With DROP_EN, a frame finding no descriptor is counted and lost */
    wr(&t, rxq(0, IXGBE_RXQ_SRRCTL),
       rd(&t, rxq(0, IXGBE_RXQ_SRRCTL)) | IXGBE_SRRCTL_DROP_EN);
    for (unsigned i = 0; i < 6; i++) {
        send_sized(&t, 60, 20 + i);
    }
    wait_rdh(&t, 0, 6);
    send_sized(&t, 60, 30);
    for (int i = 0; i < 5000 && !rnbc; i++) {
        g_usleep(1000);
        rnbc += rd(&t, IXGBE_RNBC0);
    }
    g_assert_cmpuint(rnbc, ==, 1);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 6);
    g_assert_cmpuint(rd(&t, IXGBE_QPRDC0), ==, 1);
    ixgbe_test_stop(&t);
}

/*
 * A driver that hands descriptors back without waiting for their
 * write-back (no interrupt ever fires: the vector is masked), three times
 * round a ring smaller than WTHRESH: the held write-backs never cover
 * more than the ring, so nothing is written past its end.
 */
static void test_rx_wthresh_reused_ring(void)
{
    static const uint8_t canary[256] = { [0 ... 255] = 0xcc };
    uint8_t after[sizeof(canary)];
    uint64_t ring;
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 8);
    ring = guest_alloc(&t.qs->alloc, 8 * DESC_SIZE + sizeof(canary));
    for (unsigned i = 0; i < 8; i++) {
        qtest_writeq(t.qts, ring + i * DESC_SIZE, r.bufs + i * RX_BUF_SIZE);
        qtest_writeq(t.qts, ring + i * DESC_SIZE + 8, 0);
    }
    qtest_memwrite(t.qts, ring + 8 * DESC_SIZE, canary, sizeof(canary));
    wr(&t, rxq(0, IXGBE_RXQ_RDBAL), (uint32_t)ring);
    wr(&t, rxq(0, IXGBE_RXQ_RDBAH), ring >> 32);
    wr(&t, rxq(0, IXGBE_RXQ_RDH), 0);
    r.ring = ring;
    rx_enable(&t);
    msix_setup(&t);
    ivar_rx(&t, 0, WB_VECTOR);
    rx_set_thresholds(&t, 0, 0, 0, 100);

    for (unsigned round = 0; round < 3; round++) {
        for (unsigned i = 0; i < 7; i++) {
            send_sized(&t, 60, round * 7 + i);
        }
        wait_rdh(&t, 0, (7 * (round + 1)) % 8);
        wr(&t, rxq(0, IXGBE_RXQ_RDT), (7 * (round + 2)) % 8);
    }
    qtest_memread(t.qts, ring + 8 * DESC_SIZE, after, sizeof(after));
    g_assert_cmpmem(after, sizeof(after), canary, sizeof(canary));
    /* Disabling the queue writes back what it still holds */
    wr(&t, rxq(0, IXGBE_RXQ_RXDCTL), 0);
    for (unsigned i = 0; i < 8; i++) {
        g_assert_true(rx_dd(&t, &r, i));
    }
    qtest_memread(t.qts, ring + 8 * DESC_SIZE, after, sizeof(after));
    g_assert_cmpmem(after, sizeof(after), canary, sizeof(canary));
    g_assert_cmpuint(rd(&t, IXGBE_QPRC0), ==, 21);
    ixgbe_test_stop(&t);
}

/*
 * RXDCTL.PTHRESH/HTHRESH: a tail write reads descriptors ahead, as many
 * as were made available; a descriptor the driver rewrites after that is
 * used as it was read.
 */
static void test_rx_prefetch(void)
{
    uint8_t frame[128], got[128];
    uint64_t alt;
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 16);
    alt = guest_alloc(&t.qs->alloc, 2 * RX_BUF_SIZE);
    qtest_memset(t.qts, alt, 0, 2 * RX_BUF_SIZE);
    rx_enable(&t);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 0);
    rx_set_thresholds(&t, 0, 8, 1, 0);

    /* Entries 0..3 are read at the tail write */
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 4);
    qtest_writeq(t.qts, r.ring, alt);
    qtest_writeq(t.qts, r.ring + 4 * DESC_SIZE, alt + RX_BUF_SIZE);
    /* 4 < PTHRESH cached, 4 >= HTHRESH more: entries 4..7 are read */
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 8);

    for (unsigned i = 0; i < 5; i++) {
        send_sized(&t, 100, 40 + i);
    }
    wait_rdh(&t, 0, 5);
    build_frame(frame, test_mac, 100, 40);
    rx_check_data(&t, &r, 0, frame, 100);
    build_frame(frame, test_mac, 100, 44);
    qtest_memread(t.qts, alt + RX_BUF_SIZE, got, 100);
    g_assert_cmpmem(got, 100, frame, 100);
    /* Nothing went to the rewritten address of entry 0 */
    qtest_memread(t.qts, alt, got, 100);
    for (unsigned i = 0; i < 100; i++) {
        g_assert_cmpuint(got[i], ==, 0);
    }
    ixgbe_test_stop(&t);
}

/*
 * Migration with write-backs held: stopping the VM writes them back, so
 * the destination's RAM has them; the destination reads the rest of the
 * ring afresh and goes on where the source stopped.
 */
static void test_rx_wthresh_migration(void)
{
    g_autofree char *path = NULL;
    uint8_t frame[128];
    IxgbeTest src, dst;
    RxRing r;

    ixgbe_test_start(&src);
    rx_ring_setup(&src, &r, 0, 16);
    rx_enable(&src);
    wb_vector_setup(&src);
    rx_set_thresholds(&src, 0, 0, 0, 8);
    send_sized(&src, 60, 1);
    wait_rdh(&src, 0, 1);
    msix_test_clear_pending(&src, WB_VECTOR);
    send_sized(&src, 61, 2);
    send_sized(&src, 62, 3);
    wait_rdh(&src, 0, 3);
    g_assert_false(rx_dd(&src, &r, 1));
    g_assert_false(rx_dd(&src, &r, 2));

    path = save_to_file(&src);
    g_assert_true(rx_dd(&src, &r, 1));
    g_assert_true(rx_dd(&src, &r, 2));
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    g_assert_true(rx_dd(&dst, &r, 1));
    g_assert_true(rx_dd(&dst, &r, 2));
    g_assert_false(rx_dd(&dst, &r, 3));
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");
    send_sized(&dst, 100, 4);
    wait_rdh(&dst, 0, 4);
    qtest_clock_step(dst.qts, (WB_INTERVAL_US + 10) * SCALE_US);
    g_assert_true(rx_dd(&dst, &r, 3));
    build_frame(frame, test_mac, 100, 4);
    rx_check_data(&dst, &r, 3, frame, 100);
    ixgbe_test_stop(&dst);
    unlink(path);
}

static void set_link(IxgbeTest *t, bool up)
{
    qtest_qmp_assert_success(t->qts, "{'execute': 'set_link', 'arguments':"
                             " {'name': 'net0', 'up': %i}}", up);
}

static void test_link(void)
{
    IxgbeTest t;
    const unsigned other_vector = 7;

    ixgbe_test_start(&t);
    msix_setup(&t);
    /* "Other" causes (LSC among them) -> vector 7 */
    wr(&t, IXGBE_IVAR_MISC, (other_vector | IXGBE_IVAR_VALID) << 8);
    wr(&t, IXGBE_EIMS, IXGBE_EICR_LSC);
    msix_test_clear_pending(&t, -1);

    set_link(&t, false);
    g_assert_cmphex(rd(&t, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP, ==, 0);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, IXGBE_EICR_LSC);
    msix_test_clear_pending(&t, other_vector);
    /* In MSI-X mode EICR is cleared by writing ones, not by reading */
    wr(&t, IXGBE_EICR, IXGBE_EICR_LSC);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, 0);

    set_link(&t, true);
    g_assert_cmphex(rd(&t, IXGBE_STATUS) & IXGBE_STATUS_LINK_UP, ==,
                    IXGBE_STATUS_LINK_UP);
    g_assert_cmphex(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP, ==, IXGBE_LINKS_UP);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, IXGBE_EICR_LSC);
    msix_test_clear_pending(&t, other_vector);

    /* A masked cause raises no interrupt */
    wr(&t, IXGBE_EICR, IXGBE_EICR_LSC);
    wr(&t, IXGBE_EIMC, IXGBE_EICR_LSC);
    set_link(&t, false);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, IXGBE_EICR_LSC);
    msix_test_clear_pending(&t, -1);

    ixgbe_test_stop(&t);
}

static void test_bad_tx_ring(void)
{
    IxgbeTest t;
    uint8_t frame[128], got[256];
    uint64_t ring, buf;
    int len;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);
    build_frame(frame, peer_mac, 100, 7);
    buf = guest_frame(&t, frame, 100);
    tx_put_data(&t, ring, 0, buf, 100, 100,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);

    /* TDLEN 0: nothing to process */
    wr(&t, txq(0, IXGBE_TXQ_TDLEN), 0);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 0);
    g_assert_false(tx_dd(&t, ring, 0));

    /* Tail beyond the end of the ring */
    wr(&t, txq(0, IXGBE_TXQ_TDT), 0);
    wr(&t, txq(0, IXGBE_TXQ_TDLEN), 8 * DESC_SIZE);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 9);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 0);
    g_assert_false(tx_dd(&t, ring, 0));

    /* Ring outside guest RAM (and outside any device) */
    wr(&t, txq(0, IXGBE_TXQ_TDT), 0);
    wr(&t, txq(0, IXGBE_TXQ_TDBAH), 0x00ff0000);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 0);

    /* Device alive; once the ring is valid again, the queue works */
    g_assert_cmphex(rd(&t, IXGBE_STATUS), !=, 0xffffffff);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 0);
    wr(&t, txq(0, IXGBE_TXQ_TDBAH), ring >> 32);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    len = backend_recv(&t, got, sizeof(got), WAIT_US / 1000);
    g_assert_cmpint(len, ==, 100);
    g_assert_cmpmem(got, len, frame, 100);
    g_assert_true(tx_dd(&t, ring, 0));
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);

    ixgbe_test_stop(&t);
}

static void test_bad_tx_zero_length(void)
{
    IxgbeTest t;
    uint8_t frame[128];
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);

    /* A zero-length data descriptor that claims to end a frame */
    tx_put_data(&t, ring, 0, 0, 0, 0, IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);
    g_assert_true(tx_dd(&t, ring, 0));

    /* The next frame is not polluted by what was dropped */
    build_frame(frame, peer_mac, 90, 8);
    tx_send_frame(&t, 0, ring, 1, frame, 90);
    backend_expect(&t, frame, 90);
    backend_assert_silent(&t);

    ixgbe_test_stop(&t);
}

static void test_bad_tx_buffer(void)
{
    IxgbeTest t;
    uint8_t frame[128];
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);

    /*
     * A buffer at an address nothing decodes: the data cannot be fetched,
     * so the frame must not go out (the model logs "frame dropped").
     */
    tx_put_data(&t, ring, 0, 0x00ff000000000000ULL, 100, 100,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    backend_assert_silent(&t);
    g_assert_cmpuint(rd(&t, txq(0, IXGBE_TXQ_TDH)), ==, 1);

    /* The queue goes on with the next frame */
    build_frame(frame, peer_mac, 90, 9);
    tx_send_frame(&t, 0, ring, 1, frame, 90);
    backend_expect(&t, frame, 90);

    ixgbe_test_stop(&t);
}

static void test_bad_rx_ring(void)
{
    IxgbeTest t;
    RxRing rings[2];
    uint8_t frame[128], wb[DESC_SIZE];
    size_t len;

    /*
     * Non-IP frames go to queue 0, whose ring is broken; an IPv4 frame sent
     * behind each one lands in queue 1 and shows that the device has dealt
     * with the frame before it.
     */
    ixgbe_test_start(&t);
    two_queue_setup(&t, rings);

    /* RDLEN 0 */
    wr(&t, rxq(0, IXGBE_RXQ_RDLEN), 0);
    len = build_frame(frame, test_mac, 80, 1);
    backend_send(&t, frame, len);
    send_ipv4(&t, 1);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    g_assert_false(rx_desc_done(&t, &rings[0], 0, wb));

    /* Tail beyond the end of the ring */
    wr(&t, rxq(0, IXGBE_RXQ_RDLEN), 16 * DESC_SIZE);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 20);
    len = build_frame(frame, test_mac, 80, 2);
    backend_send(&t, frame, len);
    send_ipv4(&t, 2);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    g_assert_false(rx_desc_done(&t, &rings[0], 0, wb));

    /* Ring outside guest RAM (and outside any device) */
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 15);
    wr(&t, rxq(0, IXGBE_RXQ_RDBAH), 0x00ff0000);
    len = build_frame(frame, test_mac, 80, 3);
    backend_send(&t, frame, len);
    send_ipv4(&t, 3);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 1);
    g_assert_false(rx_desc_done(&t, &rings[0], 0, wb));

    /*
     * A valid ring again: nothing was held back, the next frame is the
     * first to land.
     */
    g_assert_cmphex(rd(&t, IXGBE_STATUS), !=, 0xffffffff);
    wr(&t, rxq(0, IXGBE_RXQ_RDBAH), rings[0].ring >> 32);
    wr(&t, rxq(0, IXGBE_RXQ_RDH), 0);
    wr(&t, rxq(0, IXGBE_RXQ_RDT), 15);
    len = build_frame(frame, test_mac, 80, 4);
    backend_send(&t, frame, len);
    g_assert_cmpint(rx_wait_any(&t, rings, 2, wb), ==, 0);
    g_assert_cmpuint(rx_wb_length(wb), ==, len);
    rx_check_data(&t, &rings[0], 0, frame, len);
    g_assert_cmpuint(rd(&t, rxq(0, IXGBE_RXQ_RDH)), ==, 1);

    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* Hot-plug behind a PCI Express root port (native hot-plug)           */
/* ------------------------------------------------------------------ */

#define HP_PORT_SLOT    6

/* Plug an ixgbe into the port, power the slot and check it works */
static void hotplug_one(QOSState *qs, QPCIDevice *port, uint8_t exp,
                        int secbus)
{
    QPCIDevice *dev;
    QPCIBar bar;
    uint16_t sta;

    qtest_qmp_device_add(qs->qts, "ixgbe", "hp0",
                         "{'bus': 'rp0', 'mac': '" IXGBE_TEST_MAC "', "
                         "'romfile': ''}");
    sta = qpci_config_readw(port, exp + PCI_EXP_SLTSTA);
    g_assert_cmphex(sta & PCI_EXP_SLTSTA_PDS, ==, PCI_EXP_SLTSTA_PDS);
    g_assert_cmphex(sta & PCI_EXP_SLTSTA_PDC, ==, PCI_EXP_SLTSTA_PDC);
    slot_ack_events(port, exp);
    slot_power(port, exp, true);

    dev = qpci_device_find(qs->pcibus, QPCI_DEVFN(secbus << 5, 0));
    g_assert(dev);
    g_assert_cmphex(qpci_config_readw(dev, PCI_VENDOR_ID), ==,
                    PCI_VENDOR_ID_INTEL);
    g_assert_cmphex(qpci_config_readw(dev, PCI_DEVICE_ID), ==, 0x1517);
    g_assert_cmphex(qpci_find_capability(dev, PCI_CAP_ID_MSIX, 0), ==, 0x70);
    /* Behind a root port it is a PCI Express endpoint */
    g_assert_cmphex(qpci_config_readw(dev, 0xa0 + PCI_EXP_FLAGS) &
                    PCI_EXP_FLAGS_TYPE, ==, PCI_EXP_TYPE_ENDPOINT << 4);

    /* Registers reachable through the port's memory window */
    bar = qpci_iomap(dev, 0, NULL);
    g_assert_cmphex(bar.addr >> 20, >=,
                    qpci_config_readw(port, PCI_MEMORY_BASE) >> 4);
    g_assert_cmphex((bar.addr + 128 * KiB - 1) >> 20, <=,
                    qpci_config_readw(port, PCI_MEMORY_LIMIT) >> 4);
    qpci_device_enable(dev);
    g_assert_cmphex(qpci_io_readl(dev, bar, IXGBE_STATUS), !=, 0xffffffff);
    g_assert_cmphex(qpci_io_readl(dev, bar, IXGBE_RAL0), ==, IXGBE_TEST_RAL);
    g_assert_cmphex(qpci_io_readl(dev, bar, IXGBE_RAL0 + 4), ==,
                    IXGBE_TEST_RAH | IXGBE_RAH_AV);
    g_free(dev);
}

static void hotunplug_one(QOSState *qs, QPCIDevice *port, uint8_t exp,
                          int secbus)
{
    QPCIDevice *dev;
    uint16_t sta;

    /* device_del presses the attention button; the OS powers the slot off */
    qtest_qmp_device_del_send(qs->qts, "hp0");
    sta = qpci_config_readw(port, exp + PCI_EXP_SLTSTA);
    g_assert_cmphex(sta & PCI_EXP_SLTSTA_ABP, ==, PCI_EXP_SLTSTA_ABP);
    slot_ack_events(port, exp);
    slot_power(port, exp, false);
    wait_device_deleted(qs->qts, "hp0");

    sta = qpci_config_readw(port, exp + PCI_EXP_SLTSTA);
    g_assert_cmphex(sta & PCI_EXP_SLTSTA_PDS, ==, 0);
    dev = qpci_device_find(qs->pcibus, QPCI_DEVFN(secbus << 5, 0));
    g_assert_null(dev);
}

static void test_hotplug(void)
{
    QOSState *qs;
    QPCIDevice *port;
    uint8_t exp;
    int secbus;

    qs = qtest_pc_boot("-M q35 -nodefaults "
                       "-global ICH9-LPC.acpi-pci-hotplug-with-bridge-support"
                       "=off "
                       "-device pcie-root-port,id=rp0,bus=pcie.0,"
                       "chassis=1,addr=%d", HP_PORT_SLOT);

    /* Firmware's job: bus numbers and a memory window for the port */
    g_assert_cmpint(qpci_secondary_buses_init(qs->pcibus), ==, 1);
    port = qpci_device_find(qs->pcibus, QPCI_DEVFN(HP_PORT_SLOT, 0));
    g_assert(port);
    secbus = qpci_config_readb(port, PCI_SECONDARY_BUS);
    g_assert_cmpint(secbus, ==, 1);
    qpci_config_writew(port, PCI_MEMORY_BASE, 0xe000);
    qpci_config_writew(port, PCI_MEMORY_LIMIT, 0xeff0);
    qpci_device_enable(port);

    exp = qpci_find_capability(port, PCI_CAP_ID_EXP, 0);
    g_assert_cmphex(exp, !=, 0);
    g_assert_cmphex(qpci_config_readl(port, exp + PCI_EXP_SLTCAP) &
                    PCI_EXP_SLTCAP_HPC, ==, PCI_EXP_SLTCAP_HPC);
    g_assert_cmphex(qpci_config_readw(port, exp + PCI_EXP_SLTSTA) &
                    PCI_EXP_SLTSTA_PDS, ==, 0);
    g_assert_null(qpci_device_find(qs->pcibus, QPCI_DEVFN(secbus << 5, 0)));

    hotplug_one(qs, port, exp, secbus);
    hotunplug_one(qs, port, exp, secbus);
    /* A second round: unplug left nothing behind that blocks a new plug */
    hotplug_one(qs, port, exp, secbus);
    hotunplug_one(qs, port, exp, secbus);

    g_free(port);
    qtest_shutdown(qs);
}

static void test_device_present(void)
{
    g_assert_true(qtest_has_device("ixgbe"));
}

/* ------------------------------------------------------------------ */
/* What DPDK's ixgbe PMD relies on (tests/e2e/test_dpdk_pmd.py)         */
/* ------------------------------------------------------------------ */

/* Size-bucket counters: 64, 65-127, ..., 1024-max bytes with the CRC */
#define DPDK_PRC(i)             (IXGBE_PRC64 + (i) * 4)
#define DPDK_PTC(i)             (IXGBE_PTC64 + (i) * 4)
#define DPDK_TXCTX_TUCMD_IPV4   (1u << 10)
#define DPDK_TXCTX_L4T_TCP      (1u << 11)
#define DPDK_TXCTX_L4LEN_SHIFT  8
#define DPDK_TXCTX_MACLEN_SHIFT 9

/*
 * MSI-X enabled in the function but GPIE.Multiple_MSIX clear: every cause
 * signals vector 0 and EICR clears on read, as with MSI.  DPDK runs a port
 * bound to vfio-pci this way (link-change interrupt only).
 */
static void test_msix_single_vector(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t frame[128], wb[DESC_SIZE];
    size_t len;

    ixgbe_test_start(&t);
    qpci_msix_enable(t.dev);
    g_assert_cmphex(rd(&t, IXGBE_GPIE) & IXGBE_GPIE_MSIX_MODE, ==, 0);
    wr(&t, IXGBE_EIMS, IXGBE_EICR_LSC);
    msix_test_clear_pending(&t, -1);

    set_link(&t, false);
    msix_test_clear_pending(&t, 0);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, IXGBE_EICR_LSC);
    g_assert_cmphex(rd(&t, IXGBE_EICR), ==, 0);
    set_link(&t, true);
    msix_test_clear_pending(&t, 0);
    g_assert_cmphex(rd(&t, IXGBE_EICR) & IXGBE_EICR_LSC, ==, IXGBE_EICR_LSC);

    /* A queue cause (IVAR names EICR bit 0 here) takes the same vector */
    rx_ring_setup(&t, &r, 0, 8);
    rx_enable(&t);
    ivar_rx(&t, 0, 0);
    wr(&t, IXGBE_EIMS, 1);
    len = build_frame(frame, test_mac, 80, 5);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    msix_test_clear_pending(&t, 0);
    g_assert_cmphex(rd(&t, IXGBE_EICR), ==, 1);

    ixgbe_test_stop(&t);
}

/*
 * Byte and size counters: the MAC counters (TOR, GOTC, PRCxx, PTCxx) count
 * the frame as on the wire, padded and with its CRC; GORC and the queue
 * counters (QBRC, QBTC) count what was written to or read from host memory.
 * DPDK subtracts the CRC from GOTC and TOR itself.
 */
static void test_stats_wire_length(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t frame[128], got[256], wb[DESC_SIZE];
    uint64_t ring, buf;
    size_t len;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 8);
    rx_enable(&t);                          /* strips the CRC */

    len = build_frame(frame, test_mac, 100, 1);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rx_wb_length(wb), ==, 100);
    g_assert_cmpuint(rd(&t, IXGBE_GORCL), ==, 100);
    g_assert_cmpuint(rd(&t, IXGBE_QBRC0), ==, 100);
    g_assert_cmpuint(rd(&t, IXGBE_TORL), ==, 104);
    g_assert_cmpuint(rd(&t, DPDK_PRC(0)), ==, 0);
    g_assert_cmpuint(rd(&t, DPDK_PRC(1)), ==, 1);

    len = build_frame(frame, test_mac, 60, 2);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_cmpuint(rd(&t, IXGBE_TORL), ==, 64);
    g_assert_cmpuint(rd(&t, DPDK_PRC(0)), ==, 1);

    ring = tx_ring_setup(&t, 0, 8, 0);
    len = build_frame(frame, peer_mac, 100, 3);
    buf = guest_frame(&t, frame, len);
    tx_put_data(&t, ring, 0, buf, len, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000), ==,
                    100);
    g_assert_cmpuint(rd(&t, IXGBE_GOTCL), ==, 104);
    g_assert_cmpuint(rd(&t, IXGBE_QBTC0), ==, 100);
    g_assert_cmpuint(rd(&t, DPDK_PTC(1)), ==, 1);

    /* A short frame is padded to 60 bytes on the wire */
    buf = guest_frame(&t, frame, 42);
    tx_put_data(&t, ring, 1, buf, 42, 42,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 2);
    g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000), >=,
                    42);
    g_assert_cmpuint(rd(&t, IXGBE_GOTCL), ==, 64);
    g_assert_cmpuint(rd(&t, IXGBE_QBTC0), ==, 42);
    g_assert_cmpuint(rd(&t, DPDK_PTC(0)), ==, 1);

    ixgbe_test_stop(&t);
}

/*
 * TSO: one packet of 3 x MSS leaves as three frames, and the transmit
 * counters count three packets (DPDK's TX-packets is QPTC).
 */
static void test_tso_stats(void)
{
    enum { MSS = 1000, NSEG = 3, HDR = 14 + 20 + 20 };
    IxgbeTest t;
    g_autofree uint8_t *pkt = g_malloc0(HDR + NSEG * MSS);
    uint8_t got[2048], d[DESC_SIZE];
    uint8_t *ip = pkt + 14, *tcp = ip + 20;
    const uint8_t sip[4] = { 10, 0, 0, 1 }, dip[4] = { 10, 0, 0, 2 };
    uint64_t ring, buf;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);

    memcpy(pkt, peer_mac, ETH_ALEN);
    memcpy(pkt + 6, test_mac, ETH_ALEN);
    stw_be_p(pkt + 12, 0x0800);
    ip[0] = 0x45;
    stw_be_p(ip + 2, 20 + 20 + NSEG * MSS);
    ip[8] = 64;
    ip[9] = 6;
    memcpy(ip + 12, sip, 4);
    memcpy(ip + 16, dip, 4);
    stw_be_p(tcp, 1234);
    stw_be_p(tcp + 2, 80);
    stl_be_p(tcp + 4, 1000000);
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;                         /* ACK */
    for (unsigned i = HDR; i < HDR + NSEG * MSS; i++) {
        pkt[i] = i * 13;
    }
    buf = guest_frame(&t, pkt, HDR + NSEG * MSS);

    /* Context descriptor: IPv4/TCP, MACLEN 14, IPLEN 20, L4LEN 20, MSS */
    memset(d, 0, sizeof(d));
    stl_le_p(d, 20 | (14 << DPDK_TXCTX_MACLEN_SHIFT));
    stl_le_p(d + 8, IXGBE_TXD_DTYP_CTXT | IXGBE_TXD_CMD_DEXT |
             DPDK_TXCTX_TUCMD_IPV4 | DPDK_TXCTX_L4T_TCP);
    stl_le_p(d + 12, (MSS << IXGBE_TXCTX_MSS_SHIFT) |
             (20 << DPDK_TXCTX_L4LEN_SHIFT));
    qtest_memwrite(t.qts, ring, d, sizeof(d));
    /* One data descriptor with the whole packet; PAYLEN excludes headers */
    stq_le_p(d, buf);
    stl_le_p(d + 8, (HDR + NSEG * MSS) | IXGBE_TXD_DTYP_DATA |
             IXGBE_TXD_CMD_DEXT | IXGBE_TXD_CMD_IFCS | IXGBE_TXD_CMD_TSE |
             IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    stl_le_p(d + 12, (NSEG * MSS << TXD_PAYLEN_SHIFT) |
             IXGBE_TXD_POPTS_TXSM | IXGBE_TXD_POPTS_IXSM);
    qtest_memwrite(t.qts, ring + DESC_SIZE, d, sizeof(d));
    wr(&t, txq(0, IXGBE_TXQ_TDT), 2);

    for (unsigned i = 0; i < NSEG; i++) {
        g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000),
                        ==, HDR + MSS);
        g_assert_cmpuint(lduw_be_p(got + 14 + 2), ==, 20 + 20 + MSS);
        g_assert_cmphex(ip_checksum(got + 14, 20), ==, 0);
        g_assert_cmpuint(ldl_be_p(got + 14 + 20 + 4), ==,
                         1000000 + i * MSS);
        g_assert_cmpmem(got + HDR, MSS, pkt + HDR + i * MSS, MSS);
    }
    backend_assert_silent(&t);
    g_assert_true(tx_dd(&t, ring, 1));

    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, NSEG);
    g_assert_cmpuint(rd(&t, IXGBE_TPT), ==, NSEG);
    g_assert_cmpuint(rd(&t, IXGBE_QPTC0), ==, NSEG);
    g_assert_cmpuint(rd(&t, IXGBE_QBTC0), ==, NSEG * (HDR + MSS));
    g_assert_cmpuint(rd(&t, IXGBE_GOTCL), ==, NSEG * (HDR + MSS + 4));
    g_assert_cmpuint(rd(&t, DPDK_PTC(5)), ==, NSEG);

    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* IEEE 1588                                                           */
/* ------------------------------------------------------------------ */

/* What the Linux driver programs at 10 Gb/s: IP 1, IV 0x66666666 >> 7 */
#define PTP_INCVAL      0x00CCCCCCu
#define PTP_SHIFT       21          /* SYSTIM >> 21 counts nanoseconds */
#define PTP_INCVAL_FAST 0x00FFFFFFu /* the largest: 25% faster */

static uint64_t ptp_systim(IxgbeTest *t)
{
    uint32_t lo = rd(t, IXGBE_SYSTIML);     /* latches SYSTIMH */

    return (uint64_t)rd(t, IXGBE_SYSTIMH) << 32 | lo;
}

/* SYSTIM in ns after `ns` of virtual time */
static int64_t ptp_advance_ns(IxgbeTest *t, int64_t ns)
{
    uint64_t before = ptp_systim(t);

    qtest_clock_step(t->qts, ns);
    return (int64_t)((ptp_systim(t) - before) >> PTP_SHIFT);
}

/* SYSTIM >> PTP_SHIFT after ns of virtual time at increment iv every ip */
static int64_t ptp_expected_ns(int64_t ns, uint64_t iv, unsigned ip)
{
    return (int64_t)((uint64_t)(ns * 5 / 32 / ip) * iv >> PTP_SHIFT);
}

/* SYSTIM runs at TIMINCA's rate with virtual time and keeps its value */
static void test_ptp_clock(void)
{
    IxgbeTest t;
    uint64_t v;

    ixgbe_test_start(&t);
    /* Without an increment the clock stands */
    g_assert_cmpint(ptp_advance_ns(&t, NANOSECONDS_PER_SECOND), ==, 0);

    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    /*
     * One second is 156250000 periods of 6.4 ns; the driver's increment
     * makes a period 6.3999996 ns, 60 ns a second short of real time
     */
    g_assert_cmpint(ptp_advance_ns(&t, NANOSECONDS_PER_SECOND), ==,
                    ptp_expected_ns(NANOSECONDS_PER_SECOND, PTP_INCVAL, 1));
    g_assert_cmpint(ptp_advance_ns(&t, 5 * NANOSECONDS_PER_SECOND), ==,
                    ptp_expected_ns(5 * NANOSECONDS_PER_SECOND, PTP_INCVAL, 1));

    /* A frequency change (the driver's adjfine) bends the rate, no jump */
    v = ptp_systim(&t);
    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL_FAST);
    g_assert_cmpuint(ptp_systim(&t), >=, v);
    g_assert_cmpuint((ptp_systim(&t) - v) >> PTP_SHIFT, <, 1000);
    g_assert_cmpint(ptp_advance_ns(&t, NANOSECONDS_PER_SECOND), ==,
                    ptp_expected_ns(NANOSECONDS_PER_SECOND,
                                    PTP_INCVAL_FAST, 1));
    /* A longer increment period slows it down */
    wr(&t, IXGBE_TIMINCA, (4u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    g_assert_cmpint(ptp_advance_ns(&t, 4 * NANOSECONDS_PER_SECOND), ==,
                    ptp_expected_ns(4 * NANOSECONDS_PER_SECOND, PTP_INCVAL, 4));

    /* SYSTIML latches SYSTIMH: a carry between the reads is not seen */
    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    wr(&t, IXGBE_SYSTIMH, 7);
    wr(&t, IXGBE_SYSTIML, 0xFFFFFFF0u);
    g_assert_cmphex(rd(&t, IXGBE_SYSTIML), ==, 0xFFFFFFF0u);
    qtest_clock_step(t.qts, 10);            /* one period: carry */
    g_assert_cmphex(rd(&t, IXGBE_SYSTIMH), ==, 7);
    g_assert_cmphex(rd(&t, IXGBE_SYSTIML), <, 0x10000000u);
    g_assert_cmphex(rd(&t, IXGBE_SYSTIMH), ==, 8);

    /* TIMADJH:TIMADJL is added, or with the sign bit subtracted */
    wr(&t, IXGBE_TIMINCA, 0);
    v = ptp_systim(&t);
    wr(&t, IXGBE_TIMADJL, 0x1000);
    wr(&t, IXGBE_TIMADJH, 1);
    g_assert_cmphex(ptp_systim(&t), ==, v + 0x100001000ull);
    wr(&t, IXGBE_TIMADJH, IXGBE_TIMADJH_SIGN | 1);
    g_assert_cmphex(ptp_systim(&t), ==, v);

    /* A software reset stops and clears the clock */
    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    wr(&t, IXGBE_CTRL, IXGBE_CTRL_RST);
    g_assert_cmphex(rd(&t, IXGBE_TIMINCA), ==, 0);
    g_assert_cmphex(ptp_systim(&t), ==, 0);
    ixgbe_test_stop(&t);
}

/* A frame sent with the time stamp command latches TXSTMP once */
static void test_ptp_tx_stamp(void)
{
    IxgbeTest t;
    uint8_t frame[128], got[256];
    uint64_t ring, buf, stamp, before;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 8, 0);
    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    qtest_clock_step(t.qts, NANOSECONDS_PER_SECOND);

    /* Not enabled: nothing is latched */
    build_frame(frame, peer_mac, 100, 1);
    buf = guest_frame(&t, frame, 100);
    tx_put_data(&t, ring, 0, buf, 100, 100, IXGBE_TXD_CMD_EOP |
                IXGBE_TXD_CMD_RS | IXGBE_TXD_CMD_TSTAMP);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 1);
    g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000), ==,
                    100);
    g_assert_cmphex(rd(&t, IXGBE_TSYNCTXCTL), ==, 0);

    wr(&t, IXGBE_TSYNCTXCTL, IXGBE_TSYNCTXCTL_ENABLED);
    before = ptp_systim(&t);
    tx_put_data(&t, ring, 1, buf, 100, 100, IXGBE_TXD_CMD_EOP |
                IXGBE_TXD_CMD_RS | IXGBE_TXD_CMD_TSTAMP);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 2);
    g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000), ==,
                    100);
    g_assert_cmphex(rd(&t, IXGBE_TSYNCTXCTL), ==,
                    IXGBE_TSYNCTXCTL_ENABLED | IXGBE_TSYNCTXCTL_VALID);
    stamp = rd(&t, IXGBE_TXSTMPL);
    stamp |= (uint64_t)rd(&t, IXGBE_TXSTMPH) << 32;
    g_assert_cmpuint(stamp, >=, before);
    g_assert_cmpuint(stamp, <=, ptp_systim(&t));
    /* Reading TXSTMPH released the registers */
    g_assert_cmphex(rd(&t, IXGBE_TSYNCTXCTL), ==, IXGBE_TSYNCTXCTL_ENABLED);

    /* A frame without the command leaves them alone */
    tx_put_data(&t, ring, 2, buf, 100, 100,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(&t, txq(0, IXGBE_TXQ_TDT), 3);
    g_assert_cmpint(backend_recv(&t, got, sizeof(got), WAIT_US / 1000), ==,
                    100);
    g_assert_cmphex(rd(&t, IXGBE_TSYNCTXCTL), ==, IXGBE_TSYNCTXCTL_ENABLED);
    ixgbe_test_stop(&t);
}

/* A PTP v2 event message over L2: the 1588 EtherType of an ETQF filter */
static size_t build_ptp_l2(uint8_t *buf, uint8_t msgtype, uint16_t seq)
{
    memset(buf, 0, 64 + ETH_HLEN);
    memcpy(buf, test_mac, ETH_ALEN);
    memcpy(buf + 6, peer_mac, ETH_ALEN);
    stw_be_p(buf + 12, 0x88F7);
    buf[14] = msgtype;
    buf[15] = 2;                            /* versionPTP */
    stw_be_p(buf + 14 + 2, 44);             /* messageLength */
    memcpy(buf + 14 + 20, "\x01\x02\x03\x04\x05\x06\x07\x08", 8);
    stw_be_p(buf + 14 + 30, seq);
    return 64 + ETH_HLEN;
}

/* RX: event messages the filter takes are time stamped, one at a time */
static void test_ptp_rx_stamp(void)
{
    IxgbeTest t;
    RxRing r;
    uint8_t frame[128], wb[DESC_SIZE];
    uint64_t stamp, before;
    size_t len;

    ixgbe_test_start(&t);
    rx_ring_setup(&t, &r, 0, 8);
    rx_enable(&t);
    wr(&t, IXGBE_TIMINCA, (1u << IXGBE_TIMINCA_IP_SHIFT) | PTP_INCVAL);
    wr(&t, IXGBE_ETQF(3), IXGBE_ETQF_FILTER_EN | IXGBE_ETQF_1588 | 0x88F7);
    wr(&t, IXGBE_TSYNCRXCTL, IXGBE_TSYNCRXCTL_ENABLED |
       IXGBE_TSYNCRXCTL_TYPE_EVENT_V2);
    qtest_clock_step(t.qts, NANOSECONDS_PER_SECOND);

    /* Sync (type 0): stamped, TS in the descriptor */
    before = ptp_systim(&t);
    len = build_ptp_l2(frame, 0, 0x1234);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_true(rx_wb_status(wb) & IXGBE_RXD_STAT_TS);
    g_assert_true(rd(&t, IXGBE_TSYNCRXCTL) & IXGBE_TSYNCRXCTL_VALID);
    g_assert_cmphex(rd(&t, IXGBE_RXSATRH) >> 16, ==, 0x1234);

    /* While the stamp is unread, a second event message is not stamped */
    len = build_ptp_l2(frame, 1, 0x1235);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_false(rx_wb_status(wb) & IXGBE_RXD_STAT_TS);

    stamp = rd(&t, IXGBE_RXSTMPL);
    stamp |= (uint64_t)rd(&t, IXGBE_RXSTMPH) << 32;
    g_assert_cmpuint(stamp, >=, before);
    g_assert_cmpuint(stamp, <=, ptp_systim(&t));
    g_assert_false(rd(&t, IXGBE_TSYNCRXCTL) & IXGBE_TSYNCRXCTL_VALID);

    /* A general message (Follow_Up, type 8) is not an event message */
    len = build_ptp_l2(frame, 8, 0x1236);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_false(rx_wb_status(wb) & IXGBE_RXD_STAT_TS);
    /* Nor is a frame of another EtherType */
    len = build_frame(frame, test_mac, 98, 1);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_false(rx_wb_status(wb) & IXGBE_RXD_STAT_TS);
    g_assert_false(rd(&t, IXGBE_TSYNCRXCTL) & IXGBE_TSYNCRXCTL_VALID);

    /* Delay_Req (type 1) now that the registers are free again */
    len = build_ptp_l2(frame, 1, 0x1237);
    backend_send(&t, frame, len);
    rx_wait(&t, &r, wb);
    g_assert_true(rx_wb_status(wb) & IXGBE_RXD_STAT_TS);
    ixgbe_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("ixgbe/toeplitz-reference", test_toeplitz_reference);
    qtest_add_func("ixgbe/device-present", test_device_present);
    if (!qtest_has_device("ixgbe")) {
        /* device-present fails and says why; the rest cannot start */
        return g_test_run();
    }
    qtest_add_func("ixgbe/init/pci", test_init_pci);
    qtest_add_func("ixgbe/init/registers", test_init_registers);
    qtest_add_func("ixgbe/reset", test_reset);
    qtest_add_func("ixgbe/tx", test_tx);
    qtest_add_func("ixgbe/tx/wthresh", test_tx_wthresh);
    qtest_add_func("ixgbe/rx", test_rx);
    qtest_add_func("ixgbe/rx/checksum-status", test_rx_checksum_status);
    qtest_add_func("ixgbe/rx/sg-vlan-crc", test_rx_sg_vlan_crc);
    qtest_add_func("ixgbe/rss", test_rss);
    qtest_add_func("ixgbe/msix-routing", test_msix_routing);
    qtest_add_func("ixgbe/eitr", test_eitr);
    qtest_add_func("ixgbe/rx/wthresh", test_rx_wthresh);
    qtest_add_func("ixgbe/rx/wthresh-ring-full", test_rx_wthresh_ring_full);
    qtest_add_func("ixgbe/rx/prefetch", test_rx_prefetch);
    qtest_add_func("ixgbe/bad-input/rx-wthresh-reused-ring",
                   test_rx_wthresh_reused_ring);
    qtest_add_func("ixgbe/rx/wthresh-migration", test_rx_wthresh_migration);
    qtest_add_func("ixgbe/link", test_link);
    qtest_add_func("ixgbe/ptp/clock", test_ptp_clock);
    qtest_add_func("ixgbe/ptp/tx-stamp", test_ptp_tx_stamp);
    qtest_add_func("ixgbe/ptp/rx-stamp", test_ptp_rx_stamp);
    qtest_add_func("ixgbe/bad-input/tx-ring", test_bad_tx_ring);
    qtest_add_func("ixgbe/bad-input/tx-zero-length", test_bad_tx_zero_length);
    qtest_add_func("ixgbe/bad-input/rx-ring", test_bad_rx_ring);
    qtest_add_func("ixgbe/bad-input/tx-buffer", test_bad_tx_buffer);
    qtest_add_func("ixgbe/hotplug", test_hotplug);
    qtest_add_func("ixgbe/dpdk/msix-single-vector", test_msix_single_vector);
    qtest_add_func("ixgbe/dpdk/stats-wire-length", test_stats_wire_length);
    qtest_add_func("ixgbe/dpdk/tso-stats", test_tso_stats);

    return g_test_run();
}
