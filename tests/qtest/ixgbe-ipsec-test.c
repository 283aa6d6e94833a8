/*
 * QTest of the Intel 82599 (ixgbe) inline IPsec engine: the security
 * association tables, through the staging registers and index registers
 * the Linux driver (ixgbe_ipsec.c) writes SAs with, read back through the
 * same index registers; bad programming logged and ignored; the tables
 * kept across migration and cleared by a reset.  The ESP datapath with
 * the known-answer vectors of draft-mcgrew-gcm-test-01 (the RFC 4106
 * test vectors): encryption on transmit, byte for byte on the wire;
 * decryption and the descriptor's IPsec status on receive; a wrong ICV
 * and an unknown SPI; packets the engine cannot process dropped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "qemu/bswap.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define IPSTXIDX            0x08900
#define IPSTXSALT           0x08904
#define IPSTXKEY(i)         (0x08908 + (i) * 4)
#define IPSRXIDX            0x08E00
#define IPSRXIPADDR(i)      (0x08E04 + (i) * 4)
#define IPSRXSPI            0x08E14
#define IPSRXIPIDX          0x08E18
#define IPSRXKEY(i)         (0x08E1C + (i) * 4)
#define IPSRXSALT           0x08E2C
#define IPSRXMOD            0x08E30

#define IPSIDX_EN           (1u << 0)
#define IPSIDX_READ         (1u << 30)
#define IPSIDX_WRITE        (1u << 31)
#define TBL_IP              1
#define TBL_SPI             2
#define TBL_KEY             3

static uint32_t idx_val(unsigned tbl, unsigned idx, uint32_t op)
{
    return IPSIDX_EN | tbl << 1 | idx << 3 | op;
}

/* A value per table entry and word, so entries cannot be mistaken */
static uint32_t pat(unsigned tbl, unsigned idx, unsigned word)
{
    return 0x9e3779b9u * (tbl * 4096 + idx * 8 + word + 1);
}

static void tx_sa_write(IxgbeTest *t, unsigned idx)
{
    for (unsigned i = 0; i < 4; i++) {
        wr(t, IPSTXKEY(i), pat(0, idx, i));
    }
    wr(t, IPSTXSALT, pat(0, idx, 4));
    wr(t, IPSTXIDX, idx_val(0, idx, IPSIDX_WRITE));
}

static void tx_sa_check(IxgbeTest *t, unsigned idx, bool zero)
{
    wr(t, IPSTXIDX, idx_val(0, idx, IPSIDX_READ));
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmphex(rd(t, IPSTXKEY(i)), ==, zero ? 0 : pat(0, idx, i));
    }
    g_assert_cmphex(rd(t, IPSTXSALT), ==, zero ? 0 : pat(0, idx, 4));
}

static void rx_sa_write(IxgbeTest *t, unsigned idx)
{
    wr(t, IPSRXSPI, pat(TBL_SPI, idx, 0));
    wr(t, IPSRXIPIDX, idx % 128);
    wr(t, IPSRXIDX, idx_val(TBL_SPI, idx, IPSIDX_WRITE));
    for (unsigned i = 0; i < 4; i++) {
        wr(t, IPSRXKEY(i), pat(TBL_KEY, idx, i));
    }
    wr(t, IPSRXSALT, pat(TBL_KEY, idx, 4));
    wr(t, IPSRXMOD, 0x1D);
    wr(t, IPSRXIDX, idx_val(TBL_KEY, idx, IPSIDX_WRITE));
}

static void rx_sa_check(IxgbeTest *t, unsigned idx, bool zero)
{
    wr(t, IPSRXIDX, idx_val(TBL_SPI, idx, IPSIDX_READ));
    g_assert_cmphex(rd(t, IPSRXSPI), ==, zero ? 0 : pat(TBL_SPI, idx, 0));
    g_assert_cmphex(rd(t, IPSRXIPIDX), ==, zero ? 0 : idx % 128);
    wr(t, IPSRXIDX, idx_val(TBL_KEY, idx, IPSIDX_READ));
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmphex(rd(t, IPSRXKEY(i)), ==,
                        zero ? 0 : pat(TBL_KEY, idx, i));
    }
    g_assert_cmphex(rd(t, IPSRXSALT), ==, zero ? 0 : pat(TBL_KEY, idx, 4));
    g_assert_cmphex(rd(t, IPSRXMOD), ==, zero ? 0 : 0x1D);
}

static void rx_ip_write(IxgbeTest *t, unsigned idx)
{
    for (unsigned i = 0; i < 4; i++) {
        wr(t, IPSRXIPADDR(i), pat(TBL_IP, idx, i));
    }
    wr(t, IPSRXIDX, idx_val(TBL_IP, idx, IPSIDX_WRITE));
}

static void rx_ip_check(IxgbeTest *t, unsigned idx, bool zero)
{
    wr(t, IPSRXIDX, idx_val(TBL_IP, idx, IPSIDX_READ));
    for (unsigned i = 0; i < 4; i++) {
        g_assert_cmphex(rd(t, IPSRXIPADDR(i)), ==,
                        zero ? 0 : pat(TBL_IP, idx, i));
    }
}

static const unsigned sa_idx[] = { 0, 1, 127, 128, 513, 1023 };
static const unsigned ip_idx[] = { 0, 1, 64, 127 };

static void write_all(IxgbeTest *t)
{
    for (unsigned i = 0; i < G_N_ELEMENTS(sa_idx); i++) {
        tx_sa_write(t, sa_idx[i]);
        rx_sa_write(t, sa_idx[i]);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(ip_idx); i++) {
        rx_ip_write(t, ip_idx[i]);
    }
}

static void check_all(IxgbeTest *t, bool zero)
{
    /* read back in another order than written, with writes in between */
    for (unsigned i = G_N_ELEMENTS(sa_idx); i-- > 0;) {
        tx_sa_check(t, sa_idx[i], zero);
        rx_sa_check(t, sa_idx[i], zero);
    }
    for (unsigned i = G_N_ELEMENTS(ip_idx); i-- > 0;) {
        rx_ip_check(t, ip_idx[i], zero);
    }
    /* entries never written read as zero */
    tx_sa_check(t, 2, true);
    rx_sa_check(t, 1022, true);
    rx_ip_check(t, 2, true);
}

/* The tables as the driver writes them, read back entry by entry */
static void test_tables(void)
{
    IxgbeTest t;

    ixgbe_test_start(&t);
    write_all(&t);
    /* WRITE and READ clear themselves; the enable bit and index stay */
    g_assert_cmphex(rd(&t, IPSTXIDX), ==, idx_val(0, 1023, 0));
    g_assert_cmphex(rd(&t, IPSRXIDX), ==, idx_val(TBL_IP, 127, 0));
    check_all(&t, false);
    g_assert_cmphex(rd(&t, IPSRXIDX), ==, idx_val(TBL_IP, 2, 0));
    /* an index register write without WRITE or READ moves nothing */
    wr(&t, IPSTXKEY(0), 0x12345678);
    wr(&t, IPSTXIDX, idx_val(0, 0, 0));
    tx_sa_check(&t, 0, false);
    ixgbe_test_stop(&t);
}

/* Bad programming is logged and changes no table entry */
static void test_bad_programming(void)
{
    IxgbeTest t;

    ixgbe_test_start(&t);
    write_all(&t);

    /* an IP table entry past the 128 there are */
    for (unsigned i = 0; i < 4; i++) {
        wr(&t, IPSRXIPADDR(i), 0xdeadbeef);
    }
    wr(&t, IPSRXIDX, idx_val(TBL_IP, 128, IPSIDX_WRITE));
    g_assert_true(ixgbe_test_logged(&t, "IP table entry 128 out of range"));
    wr(&t, IPSRXIDX, idx_val(TBL_IP, 1023, IPSIDX_READ));
    g_assert_cmphex(rd(&t, IPSRXIPADDR(0)), ==, 0xdeadbeef);
    /* the reserved table 0 */
    wr(&t, IPSRXIDX, idx_val(0, 1, IPSIDX_WRITE));
    g_assert_true(ixgbe_test_logged(&t, "reserved table 0"));
    /* READ and WRITE at once */
    wr(&t, IPSTXIDX, idx_val(0, 1, IPSIDX_WRITE | IPSIDX_READ));
    wr(&t, IPSRXIDX, idx_val(TBL_KEY, 1, IPSIDX_WRITE | IPSIDX_READ));
    g_assert_cmpuint(ixgbe_test_log_count(&t, "READ and WRITE at once"),
                     ==, 2);
    check_all(&t, false);
    /* reserved IPSRXMOD and IPSRXIPIDX bits are not kept */
    wr(&t, IPSRXMOD, 0xFFFFFFFF);
    wr(&t, IPSRXIPIDX, 0xFFFFFFFF);
    g_assert_cmphex(rd(&t, IPSRXMOD), ==, 0x1D);
    g_assert_cmphex(rd(&t, IPSRXIPIDX), ==, 0x7F);
    ixgbe_test_stop(&t);
}

/* The tables migrate; a software reset (CTRL.RST) clears them */
static void test_migration_and_reset(void)
{
    g_autofree char *path = NULL;
    IxgbeTest src, dst;

    ixgbe_test_start(&src);
    write_all(&src);
    path = save_to_file(&src);
    ixgbe_test_stop(&src);

    g_assert_true(load_from_file(&dst, path));
    check_all(&dst, false);
    wr(&dst, IXGBE_CTRL, IXGBE_CTRL_RST);
    check_all(&dst, true);
    ixgbe_test_stop(&dst);
    unlink(path);
}

/* Until ESP with TSO is modelled, the offload says it is absent */
static void test_fused_off(void)
{
    IxgbeTest t;

    ixgbe_test_start(&t);
    g_assert_cmphex(rd(&t, IXGBE_SECTXSTAT) & 0x2, ==, 0x2);
    g_assert_cmphex(rd(&t, IXGBE_SECRXSTAT) & 0x2, ==, 0x2);
    ixgbe_test_stop(&t);
}

/* ------------------------------------------------------------------ */
/* The ESP datapath                                                    */
/* ------------------------------------------------------------------ */

#define CTX_MACLEN_SHIFT    9
#define CTX_TUCMD_IPV4      (1u << 10)
#define CTX_L4T_TCP         (1u << 11)
#define CTX_IPSEC_ESP       (1u << 13)
#define CTX_IPSEC_ENCRYPT   (1u << 14)
#define TXD_POPTS_IPSEC     (1u << 10)
#define RXMOD_VALID         (1u << 0)
#define RXMOD_ESP           (1u << 2)
#define RXMOD_DECRYPT       (1u << 3)
#define RXD_STAT_SECP       (1u << 17)
#define RXD_ERR_IPSEC_MASK  (3u << 27)
#define RXD_ERR_IPSEC_AUTH  (3u << 27)
#define RXD_PKTTYPE_ESP     0x1000u     /* in the first word */

#define ESP_ICV             16

/*
 * A known answer of draft-mcgrew-gcm-test-01: AES-128-GCM in ESP, an
 * 8-byte AAD (SPI, 32-bit sequence number).  The plaintext is the ESP
 * payload with its trailer (padding, pad length 2, next header).
 */
typedef struct EspCase {
    const char *key, *salt, *spi, *seq, *iv, *plain, *cipher, *icv;
} EspCase;

static const EspCase esp_cases[] = {
    {   /* test case 2 */
        .key = "00000000000000000000000000000000", .salt = "00000000",
        .spi = "00000000", .seq = "00000001", .iv = "0000000000000000",
        .plain = "4500003c99c500008001cb7a40679318010101010800075c0200440061"
                 "62636465666768696a6b6c6d6e6f70717273747576776162636465666768"
                 "6901020201",
        .cipher = "4688daf2f973a392732909c331d56d60f694abaa414b5e7ff5fdcdff"
                  "f5e9a284456476492719ffb64de7d9dca1e1d894bc3bd57873ed4d18"
                  "1d19d4d5c8c18af3",
        .icv = "f821d496eeb096e98ad2b69e4799c71d",
    }, {   /* test case 3: a salt, another key, SPI and sequence number */
        .key = "3de09874b388e6491988d0c3607eae1f", .salt = "57690e43",
        .spi = "42f67e3f", .seq = "10101010", .iv = "4e280000a2fca1a3",
        .plain = "4500003c99c300008001cb7c40679318010101010800085c0200430061"
                 "62636465666768696a6b6c6d6e6f70717273747576776162636465666768"
                 "6901020201",
        .cipher = "fba2caa4853cf9f0f22cb10d86dd83b0fec75691cf1a04b00d1138ec"
                  "9c35791765acbd8701ad79845bf9fe3fba487bc91755e6662b4c8d0d"
                  "1f5e22739530320a",
        .icv = "c8c6f867793dcace1d88505ed1935f75",
    },
};

static const uint8_t esp_sip[4] = { 192, 168, 7, 1 };
static const uint8_t esp_dip[4] = { 192, 168, 7, 2 };

static size_t unhex(const char *hex, uint8_t *out)
{
    size_t n = strlen(hex) / 2;

    for (size_t i = 0; i < n; i++) {
        out[i] = g_ascii_xdigit_value(hex[2 * i]) << 4 |
                 g_ascii_xdigit_value(hex[2 * i + 1]);
    }
    return n;
}

/*
 * An Ethernet/IPv4/ESP frame of case c: the ESP payload its plaintext
 * (with 16 zero bytes for the ICV) or its ciphertext and ICV.  Returns
 * the length; *payload_off is where the ESP payload starts.
 */
static size_t esp_frame(uint8_t *f, const EspCase *c, const uint8_t *dst,
                        const uint8_t *src, bool encrypted,
                        size_t *payload_off)
{
    size_t n, off = 14 + 20;

    memcpy(f, dst, 6);
    memcpy(f + 6, src, 6);
    stw_be_p(f + 12, 0x0800);
    off += unhex(c->spi, f + off);
    off += unhex(c->seq, f + off);
    off += unhex(c->iv, f + off);
    *payload_off = off;
    if (encrypted) {
        n = unhex(c->cipher, f + off);
        unhex(c->icv, f + off + n);
    } else {
        n = unhex(c->plain, f + off);
        memset(f + off + n, 0, ESP_ICV);
    }
    off += n + ESP_ICV;
    memset(f + 14, 0, 20);
    f[14] = 0x45;
    stw_be_p(f + 16, off - 14);
    f[22] = 64;
    f[23] = 50;     /* ESP */
    memcpy(f + 26, esp_sip, 4);
    memcpy(f + 30, esp_dip, 4);
    stw_be_p(f + 24, ip_checksum(f + 14, 20));
    return off;
}

/* The key and salt registers as the driver writes them (a TX SA) */
static void esp_tx_sa(IxgbeTest *t, unsigned idx, const EspCase *c)
{
    uint8_t key[16], salt[4];

    unhex(c->key, key);
    unhex(c->salt, salt);
    for (unsigned i = 0; i < 4; i++) {
        wr(t, IPSTXKEY(i), ldl_be_p(key + 4 * (3 - i)));
    }
    wr(t, IPSTXSALT, ldl_be_p(salt));
    wr(t, IPSTXIDX, idx_val(0, idx, IPSIDX_WRITE));
}

/* RX SA idx for case c to esp_dip, through IP table entry ip */
static void esp_rx_sa(IxgbeTest *t, unsigned idx, unsigned ip,
                      const EspCase *c, uint32_t mode)
{
    uint8_t key[16], salt[4], spi[4];

    for (unsigned i = 0; i < 3; i++) {
        wr(t, IPSRXIPADDR(i), 0);
    }
    wr(t, IPSRXIPADDR(3), ldl_le_p(esp_dip));
    wr(t, IPSRXIDX, idx_val(TBL_IP, ip, IPSIDX_WRITE));
    unhex(c->spi, spi);
    wr(t, IPSRXSPI, ldl_le_p(spi));
    wr(t, IPSRXIPIDX, ip);
    wr(t, IPSRXIDX, idx_val(TBL_SPI, idx, IPSIDX_WRITE));
    unhex(c->key, key);
    unhex(c->salt, salt);
    for (unsigned i = 0; i < 4; i++) {
        wr(t, IPSRXKEY(i), ldl_be_p(key + 4 * (3 - i)));
    }
    wr(t, IPSRXSALT, ldl_be_p(salt));
    wr(t, IPSRXMOD, mode);
    wr(t, IPSRXIDX, idx_val(TBL_KEY, idx, IPSIDX_WRITE));
}

/*
 * Hand transmit queue 0 the frame f of len bytes for IPsec with TX SA
 * sa: a context (slot 0) and one data descriptor at descriptor *next
 */
static void esp_send(IxgbeTest *t, uint64_t ring, unsigned *next,
                     const uint8_t *f, size_t len, unsigned sa,
                     uint32_t tucmd, uint32_t iplen, uint32_t cmd,
                     uint32_t popts)
{
    uint64_t buf = guest_frame(t, f, len);
    uint8_t d[DESC_SIZE];

    memset(d, 0, sizeof(d));
    stl_le_p(d, iplen | 14 << CTX_MACLEN_SHIFT);
    stl_le_p(d + 4, sa);
    stl_le_p(d + 8, IXGBE_TXD_DTYP_CTXT | IXGBE_TXD_CMD_DEXT | tucmd);
    qtest_memwrite(t->qts, ring + *next * DESC_SIZE, d, sizeof(d));
    tx_put_desc(t, ring, *next + 1, buf, len,
                cmd | IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS,
                (uint32_t)len << TXD_PAYLEN_SHIFT | TXD_POPTS_IPSEC | popts);
    *next += 2;
    wr(t, txq(0, IXGBE_TXQ_TDT), *next);
    g_assert_true(tx_dd(t, ring, *next - 1));
}

#define ESP_TUCMD(trailer) \
    (CTX_IPSEC_ESP | CTX_IPSEC_ENCRYPT | CTX_L4T_TCP | CTX_TUCMD_IPV4 | \
     (trailer))

/* The trailer of the cases: 2 bytes of padding, pad length, next header */
#define ESP_CASE_TRAILER    (2 + 2 + ESP_ICV)

/* Transmit: each case's plaintext leaves encrypted, with its ICV */
static void test_esp_tx(void)
{
    uint8_t plain[256], want[256];
    size_t len, off;
    unsigned next = 0;
    IxgbeTest t;
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 16, 0);
    for (unsigned i = 0; i < G_N_ELEMENTS(esp_cases); i++) {
        unsigned sa = i ? 1023 : 5;

        esp_tx_sa(&t, sa, &esp_cases[i]);
    }
    for (unsigned i = 0; i < G_N_ELEMENTS(esp_cases); i++) {
        unsigned sa = i ? 1023 : 5;

        len = esp_frame(plain, &esp_cases[i], peer_mac, test_mac, false,
                        &off);
        g_assert_cmpuint(esp_frame(want, &esp_cases[i], peer_mac, test_mac,
                                   true, &off), ==, len);
        esp_send(&t, ring, &next, plain, len, sa,
                 ESP_TUCMD(ESP_CASE_TRAILER), 0, 0, 0);
        backend_expect(&t, want, len);
    }
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, G_N_ELEMENTS(esp_cases));
    g_assert_false(ixgbe_test_logged(&t, "IPsec"));
    ixgbe_test_stop(&t);
}

/*
 * Transmit requests the engine cannot honour are dropped, never sent in
 * the clear: TSO, AH, a packet that is not ESP, one too short for ESP,
 * the engine disabled.
 */
static void test_esp_tx_refused(void)
{
    static const struct {
        const char *why;
        uint32_t tucmd, cmd;
        size_t cut;
        uint8_t proto;
    } bad[] = {
        { "TSO with ESP", ESP_TUCMD(20), IXGBE_TXD_CMD_TSE, 0, 50 },
        { "AH is not modelled", ESP_TUCMD(20) & ~CTX_IPSEC_ESP, 0, 0, 50 },
        { "no ESP header", ESP_TUCMD(20), 0, 0, 6 },
        { "too short for ESP", ESP_TUCMD(20), 0, 1, 50 },
    };
    uint8_t f[256];
    size_t len, off;
    unsigned next = 0;
    IxgbeTest t;
    uint64_t ring;

    ixgbe_test_start(&t);
    ring = tx_ring_setup(&t, 0, 16, 0);
    esp_tx_sa(&t, 7, &esp_cases[1]);
    for (unsigned i = 0; i < G_N_ELEMENTS(bad); i++) {
        len = esp_frame(f, &esp_cases[1], peer_mac, test_mac, false, &off);
        f[23] = bad[i].proto;
        if (bad[i].cut) {
            /* the IP header says: no room for the ICV */
            stw_be_p(f + 16, off - 14 + 8);
            stw_be_p(f + 24, 0);
            stw_be_p(f + 24, ip_checksum(f + 14, 20));
        }
        esp_send(&t, ring, &next, f, len, 7, bad[i].tucmd, 0, bad[i].cmd,
                 0);
        backend_assert_silent(&t);
        g_assert_true(ixgbe_test_logged(&t, bad[i].why));
    }
    /* SA lookup off (IPS_TX_EN clear) */
    wr(&t, IPSTXIDX, 0);
    len = esp_frame(f, &esp_cases[1], peer_mac, test_mac, false, &off);
    esp_send(&t, ring, &next, f, len, 7, ESP_TUCMD(20), 0, 0, 0);
    backend_assert_silent(&t);
    g_assert_true(ixgbe_test_logged(&t, "the engine is disabled"));
    g_assert_cmpuint(rd(&t, IXGBE_GPTC), ==, 0);
    ixgbe_test_stop(&t);
}

static void esp_rx_setup(IxgbeTest *t, RxRing *r)
{
    rx_ring_setup(t, r, 0, 8);
    rx_enable(t);
    wr(t, IXGBE_RAL(0), IXGBE_TEST_RAL);
    wr(t, IXGBE_RAH(0), IXGBE_TEST_RAH | IXGBE_RAH_AV);
}

/*
 * Receive: a frame of each case is decrypted in place (the ESP header, IV
 * and ICV stay) with SECP and the ESP packet type; a wrong ICV is flagged
 * and the frame left as received; a frame of an unknown SPI passes
 * untouched without SECP.
 */
static void test_esp_rx(void)
{
    uint8_t f[256], want[256], wb[DESC_SIZE];
    size_t len, off;
    IxgbeTest t;
    RxRing r;

    ixgbe_test_start(&t);
    esp_rx_setup(&t, &r);
    esp_rx_sa(&t, 3, 9, &esp_cases[0], RXMOD_VALID | RXMOD_ESP |
              RXMOD_DECRYPT);
    esp_rx_sa(&t, 1000, 127, &esp_cases[1], RXMOD_VALID | RXMOD_ESP |
              RXMOD_DECRYPT);
    for (unsigned i = 0; i < G_N_ELEMENTS(esp_cases); i++) {
        len = esp_frame(f, &esp_cases[i], test_mac, peer_mac, true, &off);
        esp_frame(want, &esp_cases[i], test_mac, peer_mac, false, &off);
        /* the ICV stays as received */
        memcpy(want + len - ESP_ICV, f + len - ESP_ICV, ESP_ICV);
        backend_send(&t, f, len);
        rx_wait(&t, &r, wb);
        g_assert_cmphex(rx_wb_status(wb) & (RXD_STAT_SECP |
                                            RXD_ERR_IPSEC_MASK), ==,
                        RXD_STAT_SECP);
        g_assert_cmphex(ldl_le_p(wb) & RXD_PKTTYPE_ESP, ==, RXD_PKTTYPE_ESP);
        g_assert_cmpuint(rx_wb_length(wb), ==, len);
        rx_check_data(&t, &r, i, want, len);
    }

    /* a wrong ICV: flagged, the frame as received */
    len = esp_frame(f, &esp_cases[1], test_mac, peer_mac, true, &off);
    f[len - 1] ^= 0x80;
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (RXD_STAT_SECP | RXD_ERR_IPSEC_MASK),
                    ==, RXD_STAT_SECP | RXD_ERR_IPSEC_AUTH);
    rx_check_data(&t, &r, 2, f, len);

    /* an unknown SPI (and a known SPI to another address): untouched */
    len = esp_frame(f, &esp_cases[1], test_mac, peer_mac, true, &off);
    f[34] ^= 1;
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (RXD_STAT_SECP | RXD_ERR_IPSEC_MASK),
                    ==, 0);
    g_assert_cmphex(ldl_le_p(wb) & RXD_PKTTYPE_ESP, ==, 0);
    rx_check_data(&t, &r, 3, f, len);
    len = esp_frame(f, &esp_cases[1], test_mac, peer_mac, true, &off);
    f[33] ^= 1;
    stw_be_p(f + 24, 0);
    stw_be_p(f + 24, ip_checksum(f + 14, 20));
    backend_send(&t, f, len);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & RXD_STAT_SECP, ==, 0);
    rx_check_data(&t, &r, 4, f, len);
    ixgbe_test_stop(&t);
}

/*
 * Round trip through MAC loopback: a TCP segment in ESP whose checksum the
 * engine computes (TXSM: from IPLEN to the trailer) before it encrypts,
 * decrypted on receive with the same key: the TCP checksum verifies.
 */
static void test_esp_loopback_csum(void)
{
    uint8_t f[256], got[256], wb[DESC_SIZE];
    const size_t l4 = 14 + 20 + 16, data = 40, pad = 2;
    size_t len = l4 + 20 + data + pad + 2 + ESP_ICV, end;
    uint32_t sum = 0;
    unsigned next = 0;
    IxgbeTest t;
    uint64_t ring;
    RxRing r;

    ixgbe_test_start(&t);
    ring = loopback_setup(&t, &r, 8, 8);
    esp_tx_sa(&t, 11, &esp_cases[1]);
    esp_rx_sa(&t, 12, 0, &esp_cases[1], RXMOD_VALID | RXMOD_ESP |
              RXMOD_DECRYPT);

    memset(f, 0, sizeof(f));
    memcpy(f, test_mac, 6);
    memcpy(f + 6, test_mac, 6);
    stw_be_p(f + 12, 0x0800);
    f[14] = 0x45;
    stw_be_p(f + 16, len - 14);
    f[22] = 64;
    f[23] = 50;
    memcpy(f + 26, esp_sip, 4);
    memcpy(f + 30, esp_dip, 4);
    stw_be_p(f + 24, ip_checksum(f + 14, 20));
    unhex(esp_cases[1].spi, f + 34);
    stl_be_p(f + 38, 77);
    stq_be_p(f + 42, 0x0123456789abcdefULL);
    /* TCP header, its checksum field seeded with the pseudo-header sum */
    stw_be_p(f + l4, 40000);
    stw_be_p(f + l4 + 2, 5001);
    f[l4 + 12] = 5 << 4;
    f[l4 + 13] = 0x18;
    for (size_t i = 0; i < data; i++) {
        f[l4 + 20 + i] = i * 7;
    }
    end = l4 + 20 + data;
    f[end] = 1;
    f[end + 1] = 2;
    f[end + 2] = pad;
    f[end + 3] = 6;     /* next header: TCP */
    sum = lduw_be_p(esp_sip) + lduw_be_p(esp_sip + 2) +
          lduw_be_p(esp_dip) + lduw_be_p(esp_dip + 2) + 6 + 20 + data;
    sum = (sum & 0xffff) + (sum >> 16);
    stw_be_p(f + l4 + 16, sum);

    esp_send(&t, ring, &next, f, len, 11, ESP_TUCMD(pad + 2 + ESP_ICV),
             l4 - 14, 0, IXGBE_TXD_POPTS_TXSM);
    rx_wait(&t, &r, wb);
    g_assert_cmphex(rx_wb_status(wb) & (RXD_STAT_SECP | RXD_ERR_IPSEC_MASK),
                    ==, RXD_STAT_SECP);
    qtest_memread(t.qts, r.bufs, got, len);
    /* decrypted: all but the checksum and the ICV as sent */
    g_assert_cmpmem(got, l4 + 16, f, l4 + 16);
    g_assert_cmpmem(got + l4 + 18, end + 4 - l4 - 18, f + l4 + 18,
                    end + 4 - l4 - 18);
    /* the checksum, pseudo-header included, sums to all ones */
    sum = lduw_be_p(esp_sip) + lduw_be_p(esp_sip + 2) +
          lduw_be_p(esp_dip) + lduw_be_p(esp_dip + 2) + 6 + 20 + data;
    for (size_t i = l4; i < end; i += 2) {
        sum += lduw_be_p(got + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    g_assert_cmphex(sum, ==, 0xffff);
    g_assert_cmphex(lduw_be_p(got + l4 + 16), !=, 0);
    ixgbe_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/ipsec/tables", test_tables);
    qtest_add_func("ixgbe/ipsec/bad-programming", test_bad_programming);
    qtest_add_func("ixgbe/ipsec/migration-reset", test_migration_and_reset);
    qtest_add_func("ixgbe/ipsec/fused-off", test_fused_off);
    qtest_add_func("ixgbe/ipsec/esp-tx", test_esp_tx);
    qtest_add_func("ixgbe/ipsec/esp-tx-refused", test_esp_tx_refused);
    qtest_add_func("ixgbe/ipsec/esp-rx", test_esp_rx);
    qtest_add_func("ixgbe/ipsec/esp-loopback-csum", test_esp_loopback_csum);
    return g_test_run();
}
