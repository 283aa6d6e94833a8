/*
 * QTest cases for the 82599 parts other than the KR backplane one: the
 * SFP+ part (ixgbe-sfp, 0x10FB) with its module on the I2C bus the driver
 * bit-bangs through I2CCTL, and the KX4/KX/KR combined backplane part
 * (ixgbe-combo, 0x10F8).
 *
 * The I2C cases drive the bus as ixgbe_phy.c does: one I2CCTL write per
 * line change, SDA sampled while SCL is high.  They read the module's
 * SFF-8472 pages (A0h serial ID, A2h diagnostics), see an empty cage and
 * a cable without diagnostics NACK, and check that malformed sequences
 * (both lines changed at once, a START or STOP mid-byte), reads off the
 * end of a page and writes to read-only bytes are logged as guest errors
 * while the bus keeps working.  Module swaps through
 * qom-set raise GPI_SDP2 and a link change; a migration in the middle of
 * a read resumes where it stopped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

#define SFP_A0      0xA0
#define SFP_A2      0xA2

static void start_sfp(IxgbeTest *t, const char *module, const char *extra)
{
    g_autofree char *model = g_strdup_printf("ixgbe-sfp,sfp=%s", module);

    ixgbe_test_boot_model(t, model, false, extra);
}

/* ------------------------------------------------------------------ */
/* A bit-banging I2C master, as the Linux driver is one                */
/* ------------------------------------------------------------------ */

static void i2c_lines(IxgbeTest *t, bool scl, bool sda)
{
    wr(t, IXGBE_I2CCTL, (scl ? IXGBE_I2CCTL_CLK_OUT : 0) |
                        (sda ? IXGBE_I2CCTL_DATA_OUT : 0));
}

static uint32_t i2c_out(IxgbeTest *t)
{
    return rd(t, IXGBE_I2CCTL) & (IXGBE_I2CCTL_CLK_OUT |
                                  IXGBE_I2CCTL_DATA_OUT);
}

static void i2c_set_sda(IxgbeTest *t, bool sda)
{
    uint32_t v = i2c_out(t);

    i2c_lines(t, v & IXGBE_I2CCTL_CLK_OUT, sda);
}

static void i2c_set_scl(IxgbeTest *t, bool scl)
{
    uint32_t v = i2c_out(t);

    i2c_lines(t, scl, v & IXGBE_I2CCTL_DATA_OUT);
}

static bool i2c_sda_in(IxgbeTest *t)
{
    return rd(t, IXGBE_I2CCTL) & IXGBE_I2CCTL_DATA_IN;
}

static void i2c_start(IxgbeTest *t)
{
    i2c_set_sda(t, true);
    i2c_set_scl(t, true);
    i2c_set_sda(t, false);
    i2c_set_scl(t, false);
}

static void i2c_stop(IxgbeTest *t)
{
    i2c_set_sda(t, false);
    i2c_set_scl(t, true);
    i2c_set_sda(t, true);
}

/* Clock one bit out; the slave's answer during the high phase returned */
static bool i2c_bit(IxgbeTest *t, bool bit)
{
    bool in;

    i2c_set_sda(t, bit);
    i2c_set_scl(t, true);
    in = i2c_sda_in(t);
    i2c_set_scl(t, false);
    return in;
}

/* Send a byte; true if the slave acknowledged it */
static bool i2c_send(IxgbeTest *t, uint8_t byte)
{
    for (int i = 7; i >= 0; i--) {
        i2c_bit(t, (byte >> i) & 1);
    }
    return !i2c_bit(t, true);
}

/* Receive a byte and acknowledge it (ack) or not */
static uint8_t i2c_recv(IxgbeTest *t, bool ack)
{
    uint8_t byte = 0;

    for (int i = 0; i < 8; i++) {
        byte = byte << 1 | i2c_bit(t, true);
    }
    i2c_bit(t, !ack);
    return byte;
}

/*
 * Random read of len bytes from page dev at offset, as
 * ixgbe_read_i2c_byte_generic_int() does for one: false on a NACK.
 */
static bool i2c_read(IxgbeTest *t, uint8_t dev, uint8_t offset,
                     uint8_t *buf, size_t len)
{
    bool ok = false;

    i2c_start(t);
    if (i2c_send(t, dev) && i2c_send(t, offset)) {
        i2c_start(t);
        if (i2c_send(t, dev | 1)) {
            for (size_t i = 0; i < len; i++) {
                buf[i] = i2c_recv(t, i + 1 < len);
            }
            ok = true;
        }
    }
    i2c_stop(t);
    return ok;
}

static uint8_t sum8(const uint8_t *p, size_t len)
{
    uint8_t s = 0;

    while (len--) {
        s += *p++;
    }
    return s;
}

/* ------------------------------------------------------------------ */
/* Cases                                                               */
/* ------------------------------------------------------------------ */

/* Every part answers with its own device ID */
static void test_device_ids(void)
{
    static const struct {
        const char *model;
        uint16_t id;
    } parts[] = {
        { "ixgbe", IXGBE_DEV_ID_82599_KR },
        { "ixgbe-combo", IXGBE_DEV_ID_82599_COMBO_BACKPLANE },
        { "ixgbe-sfp", IXGBE_DEV_ID_82599_SFP },
    };

    for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
        IxgbeTest t;

        ixgbe_test_boot_model(&t, parts[i].model, false, "");
        g_assert_cmphex(qpci_config_readw(t.dev, PCI_DEVICE_ID), ==,
                        parts[i].id);
        ixgbe_test_stop(&t);
    }
}

/* AUTOC as each part's EEPROM would load it; link without a module */
static void test_link_modes(void)
{
    IxgbeTest t;

    ixgbe_test_boot_model(&t, "ixgbe-combo", false, "");
    g_assert_cmphex(rd(&t, IXGBE_AUTOC) & (IXGBE_AUTOC_KX4_SUPP |
                    IXGBE_AUTOC_KX_SUPP | IXGBE_AUTOC_KR_SUPP), ==,
                    IXGBE_AUTOC_KX4_SUPP | IXGBE_AUTOC_KX_SUPP |
                    IXGBE_AUTOC_KR_SUPP);
    g_assert_true(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    ixgbe_test_stop(&t);

    start_sfp(&t, "none", "");
    g_assert_cmphex(rd(&t, IXGBE_AUTOC) & (7u << 13), ==,
                    IXGBE_AUTOC_LMS_10G_SERIAL);
    g_assert_false(rd(&t, IXGBE_ESDP) & IXGBE_ESDP_SDP2);
    g_assert_false(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    ixgbe_test_stop(&t);
}

/* The SFP+ part's EEPROM: init sequences for DA and SR/LR, checksum */
static uint16_t ee_word(IxgbeTest *t, unsigned word)
{
    wr(t, IXGBE_EERD, (word << IXGBE_EERD_ADDR_SHIFT) | IXGBE_EERD_START);
    return rd(t, IXGBE_EERD) >> IXGBE_EERD_DATA_SHIFT;
}

static void test_eeprom_init_sequences(void)
{
    IxgbeTest t;
    uint16_t sum = 0, list, fw, cfg;
    unsigned found = 0;

    start_sfp(&t, "da", "");
    for (unsigned w = 0; w <= IXGBE_EEPROM_CHECKSUM_WORD; w++) {
        sum += ee_word(&t, w);
    }
    g_assert_cmphex(sum, ==, IXGBE_EEPROM_SUM);

    list = ee_word(&t, IXGBE_EEPROM_PHY_INIT_PTR);
    g_assert_cmphex(list, !=, 0);
    g_assert_cmphex(list, !=, 0xFFFF);
    for (unsigned at = list + 1; ee_word(&t, at) != 0xFFFF; at += 2) {
        uint16_t id = ee_word(&t, at), data = ee_word(&t, at + 1);
        unsigned n = 0;

        g_assert_cmpuint(data, >, IXGBE_EEPROM_CHECKSUM_WORD);
        while (ee_word(&t, data + 1 + n) != 0xFFFF) {
            n++;
            g_assert_cmpuint(n, <, 64);
        }
        g_assert_cmpuint(n, >, 0);
        found |= 1u << id;
    }
    /* DA core 0/1 (3, 4), SR/LR core 0/1 (5, 6) */
    g_assert_cmphex(found, ==, 0x78);

    /* A firmware patch newer than 5 and no LESM: no pre-production warning */
    fw = ee_word(&t, IXGBE_EEPROM_FW_PTR);
    cfg = ee_word(&t, fw + IXGBE_FW_PASSTHROUGH_PATCH_PTR);
    g_assert_cmpuint(ee_word(&t, cfg + IXGBE_FW_PATCH_VERSION_4), >, 5);
    g_assert_cmphex(ee_word(&t, fw + IXGBE_FW_LESM_PARAMETERS_PTR), ==,
                    0xFFFF);
    ixgbe_test_stop(&t);
}

/* The serial ID and the diagnostics of the SR optic */
static void test_i2c_read_sr(void)
{
    IxgbeTest t;
    uint8_t a0[256], a2[256], b;

    start_sfp(&t, "sr", "");
    g_assert_true(rd(&t, IXGBE_ESDP) & IXGBE_ESDP_SDP2);
    g_assert_true(i2c_read(&t, SFP_A0, 0, a0, sizeof(a0)));
    g_assert_cmphex(a0[0], ==, 0x03);               /* SFP */
    g_assert_cmphex(a0[2], ==, 0x07);               /* LC */
    g_assert_cmphex(a0[3], ==, 0x10);               /* 10GBASE-SR */
    g_assert_cmphex(a0[8], ==, 0);                  /* not a cable */
    g_assert_cmphex(a0[37], ==, 0x00);              /* Intel's OUI */
    g_assert_cmphex(a0[38], ==, 0x1B);
    g_assert_cmphex(a0[39], ==, 0x21);
    g_assert_cmpmem(&a0[20], 10, "Intel Corp", 10);
    g_assert_cmphex(a0[63], ==, sum8(a0, 63));
    g_assert_cmphex(a0[95], ==, sum8(&a0[64], 31));
    g_assert_cmphex(a0[92] & 0x40, ==, 0x40);       /* diagnostics */
    g_assert_cmphex(a0[94], !=, 0);                 /* SFF-8472 rev */

    /* Random reads of single bytes, as the driver does them */
    g_assert_true(i2c_read(&t, SFP_A0, 0x25, &b, 1));
    g_assert_cmphex(b, ==, 0x00);
    g_assert_true(i2c_read(&t, SFP_A0, 0x27, &b, 1));
    g_assert_cmphex(b, ==, 0x21);

    g_assert_true(i2c_read(&t, SFP_A2, 0, a2, sizeof(a2)));
    g_assert_cmphex(a2[95], ==, sum8(a2, 95));
    g_assert_cmphex(a2[96] << 8 | a2[97], ==, 35 * 256 + 128); /* 35.5 C */
    g_assert_cmpuint(a2[98] << 8 | a2[99], ==, 33000);      /* 3.3 V */
    /* The transmitter is on out of reset; no peer, so no light in */
    g_assert_cmpuint(a2[102] << 8 | a2[103], ==, 6000);     /* 0.6 mW */
    g_assert_cmphex(a2[110] & 0x82, ==, 0x00);

    /* Switched off through SDP3 (TX_DISABLE) */
    wr(&t, IXGBE_ESDP, IXGBE_ESDP_SDP3);
    g_assert_true(i2c_read(&t, SFP_A2, 102, a2, 2));
    g_assert_cmpuint(a2[0] << 8 | a2[1], ==, 0);
    g_assert_true(i2c_read(&t, SFP_A2, 110, &b, 1));
    g_assert_cmphex(b & 0x80, ==, 0x80);
    g_assert_false(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    wr(&t, IXGBE_ESDP, 0);
    g_assert_true(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);

    /* The user area of A2h keeps what is written to it */
    i2c_start(&t);
    g_assert_true(i2c_send(&t, SFP_A2));
    g_assert_true(i2c_send(&t, 0x80));
    g_assert_true(i2c_send(&t, 0x5A));
    g_assert_true(i2c_send(&t, 0xA5));
    i2c_stop(&t);
    g_assert_true(i2c_read(&t, SFP_A2, 0x80, a2, 2));
    g_assert_cmphex(a2[0], ==, 0x5A);
    g_assert_cmphex(a2[1], ==, 0xA5);

    g_assert_false(ixgbe_test_logged(&t, "ixgbe:"));
    ixgbe_test_stop(&t);
}

/* A passive cable: A0h only; its page A2h NACKs */
static void test_i2c_read_da(void)
{
    IxgbeTest t;
    uint8_t a0[96], b;

    start_sfp(&t, "da", "");
    g_assert_true(i2c_read(&t, SFP_A0, 0, a0, sizeof(a0)));
    g_assert_cmphex(a0[0], ==, 0x03);
    g_assert_cmphex(a0[2], ==, 0x21);               /* copper pigtail */
    g_assert_cmphex(a0[8], ==, 0x04);               /* passive cable */
    g_assert_cmphex(a0[63], ==, sum8(a0, 63));
    g_assert_cmphex(a0[92] & 0x40, ==, 0);          /* no diagnostics */
    g_assert_false(i2c_read(&t, SFP_A2, 0, &b, 1));
    g_assert_false(ixgbe_test_logged(&t, "ixgbe:"));
    ixgbe_test_stop(&t);
}

/* An empty cage: nothing answers, SDA stays high for the ACK */
static void test_i2c_nack_without_module(void)
{
    IxgbeTest t;
    uint8_t b = 0x55;

    start_sfp(&t, "none", "");
    g_assert_false(i2c_read(&t, SFP_A0, 0, &b, 1));
    g_assert_false(i2c_read(&t, SFP_A2, 0, &b, 1));
    ixgbe_test_stop(&t);

    /* Another address on a full cage NACKs too */
    start_sfp(&t, "sr", "");
    g_assert_false(i2c_read(&t, 0xA4, 0, &b, 1));
    g_assert_true(i2c_read(&t, SFP_A0, 0, &b, 1));
    g_assert_cmphex(b, ==, 0x03);
    g_assert_false(ixgbe_test_logged(&t, "ixgbe:"));
    ixgbe_test_stop(&t);
}

/* Malformed sequences are guest errors; the bus recovers after each */
static void test_i2c_malformed(void)
{
    IxgbeTest t;
    uint8_t b, buf[4];

    start_sfp(&t, "sr", "");

    /* Clock pulses with no START: nothing answers them */
    i2c_lines(&t, false, true);
    i2c_lines(&t, true, true);
    g_assert_true(i2c_sda_in(&t));
    i2c_lines(&t, false, true);
    g_assert_true(i2c_read(&t, SFP_A0, 0, &b, 1));
    g_assert_cmphex(b, ==, 0x03);

    /* Both lines changed in one write */
    i2c_lines(&t, false, false);
    i2c_lines(&t, true, true);
    g_assert_true(ixgbe_test_logged(&t, "changes SCL and SDA at once"));
    i2c_stop(&t);

    /* A STOP after four bits of the address */
    i2c_start(&t);
    for (int i = 0; i < 4; i++) {
        i2c_bit(&t, 1);
    }
    i2c_stop(&t);
    /* the STOP itself takes one more clock */
    g_assert_true(ixgbe_test_logged(&t, "STOP after 5 bits"));
    g_assert_true(i2c_read(&t, SFP_A0, 3, &b, 1));
    g_assert_cmphex(b, ==, 0x10);

    /* A read that runs off the end of the page wraps, with an error */
    g_assert_true(i2c_read(&t, SFP_A0, 0xFE, buf, 4));
    g_assert_cmphex(buf[2], ==, 0x03);              /* byte 0 again */
    g_assert_true(ixgbe_test_logged(&t, "ran past the end of SFP+ page"));

    /* A write to the serial ID is ignored, with an error */
    i2c_start(&t);
    g_assert_true(i2c_send(&t, SFP_A0));
    g_assert_true(i2c_send(&t, 0));
    g_assert_true(i2c_send(&t, 0x99));
    i2c_stop(&t);
    g_assert_true(ixgbe_test_logged(&t, "read-only SFP+ byte 0x00"));
    g_assert_true(i2c_read(&t, SFP_A0, 0, &b, 1));
    g_assert_cmphex(b, ==, 0x03);

    /* The driver's bus clear in the middle of a read: START, 9 clocks */
    i2c_start(&t);
    g_assert_true(i2c_send(&t, SFP_A0));
    g_assert_true(i2c_send(&t, 0));
    i2c_start(&t);
    g_assert_true(i2c_send(&t, SFP_A0 | 1));
    i2c_bit(&t, true);
    i2c_bit(&t, true);
    i2c_start(&t);
    for (int i = 0; i < 9; i++) {
        i2c_bit(&t, true);
    }
    i2c_start(&t);
    i2c_stop(&t);
    g_assert_true(i2c_read(&t, SFP_A0, 2, &b, 1));
    g_assert_cmphex(b, ==, 0x07);

    /* QEMU is still there and the device still answers */
    qtest_qmp_assert_success(t.qts, "{'execute': 'query-status'}");
    g_assert_cmphex(rd(&t, IXGBE_STATUS) & IXGBE_STATUS_GIO, ==,
                    IXGBE_STATUS_GIO);
    ixgbe_test_stop(&t);
}

static void qom_set_sfp(IxgbeTest *t, const char *module)
{
    qtest_qmp_assert_success(t->qts,
                             "{'execute': 'qom-set', 'arguments': "
                             "{'path': '/machine/peripheral/nic0', "
                             "'property': 'sfp', 'value': %s}}", module);
}

/* Pulling and pushing the module: SDP2, GPI_SDP2, LSC, link */
static void test_module_swap(void)
{
    IxgbeTest t;
    QDict *rsp;
    uint8_t b;

    start_sfp(&t, "da", "");
    g_assert_true(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    /* As the Linux driver sets them up */
    wr(&t, IXGBE_GPIE, IXGBE_GPIE_SDP1_GPIEN | IXGBE_GPIE_SDP2_GPIEN);
    rd(&t, IXGBE_EICR);

    qom_set_sfp(&t, "none");
    g_assert_false(rd(&t, IXGBE_ESDP) & IXGBE_ESDP_SDP2);
    g_assert_false(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    g_assert_cmphex(rd(&t, IXGBE_EICR) &
                    (IXGBE_EICR_GPI_SDP2 | IXGBE_EICR_LSC), ==,
                    IXGBE_EICR_GPI_SDP2 | IXGBE_EICR_LSC);
    g_assert_false(i2c_read(&t, SFP_A0, 0, &b, 1));

    qom_set_sfp(&t, "sr");
    g_assert_true(rd(&t, IXGBE_ESDP) & IXGBE_ESDP_SDP2);
    g_assert_true(rd(&t, IXGBE_LINKS) & IXGBE_LINKS_UP);
    g_assert_cmphex(rd(&t, IXGBE_EICR) &
                    (IXGBE_EICR_GPI_SDP2 | IXGBE_EICR_LSC), ==,
                    IXGBE_EICR_GPI_SDP2 | IXGBE_EICR_LSC);
    g_assert_true(i2c_read(&t, SFP_A0, 3, &b, 1));
    g_assert_cmphex(b, ==, 0x10);

    /* Without GPIE.SDP2_GPIEN no GPI cause, but still a link change */
    wr(&t, IXGBE_GPIE, 0);
    qom_set_sfp(&t, "none");
    g_assert_cmphex(rd(&t, IXGBE_EICR) &
                    (IXGBE_EICR_GPI_SDP2 | IXGBE_EICR_LSC), ==,
                    IXGBE_EICR_LSC);

    /* A bad value is refused and changes nothing */
    rsp = qtest_qmp(t.qts, "{'execute': 'qom-set', 'arguments': "
                    "{'path': '/machine/peripheral/nic0', "
                    "'property': 'sfp', 'value': 'qsfp'}}");
    g_assert_true(qdict_haskey(rsp, "error"));
    qobject_unref(rsp);
    rsp = qtest_qmp(t.qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': '/machine/peripheral/nic0', "
                    "'property': 'sfp'}}");
    g_assert_cmpstr(qdict_get_str(rsp, "return"), ==, "none");
    qobject_unref(rsp);
    ixgbe_test_stop(&t);
}

/* An unknown module type on the command line: QEMU does not start */
static void test_bad_property(void)
{
    g_autofree char *out = NULL, *err = NULL;
    g_autofree char *cmd = g_strdup_printf(
        "%s -M q35 -nodefaults -display none -accel qtest "
        "-device ixgbe-sfp,sfp=qsfp", g_getenv("QTEST_QEMU_BINARY"));
    int status = 0;

    g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(err, "unknown SFP+ module type 'qsfp'"));

    g_free(err);
    g_free(cmd);
    cmd = g_strdup_printf("%s -M q35 -nodefaults -display none "
                          "-accel qtest -device ixgbe-combo,sfp=da",
                          g_getenv("QTEST_QEMU_BINARY"));
    g_assert_true(g_spawn_command_line_sync(cmd, NULL, &err, &status, NULL));
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(err, "sfp"));
}

/* ------------------------------------------------------------------ */
/* Migration in the middle of an I2C read (migrate_wait: ixgbe-util.c) */
/* ------------------------------------------------------------------ */

static void test_migration_mid_read(void)
{
    IxgbeTest src, dst;
    g_autofree char *path = NULL;
    g_autofree char *uri = NULL;
    uint8_t got[4], want[4];
    int fd = g_file_open_tmp("ixgbe-sfp-mig-XXXXXX", &path, NULL);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    uri = g_strdup_printf("file:%s", path);

    /* What the bytes are, read in one go */
    start_sfp(&src, "sr", "");
    g_assert_true(i2c_read(&src, SFP_A0, 20, want, sizeof(want)));

    /* Stop after three bits of the second byte, SCL low */
    i2c_start(&src);
    g_assert_true(i2c_send(&src, SFP_A0));
    g_assert_true(i2c_send(&src, 20));
    i2c_start(&src);
    g_assert_true(i2c_send(&src, SFP_A0 | 1));
    got[0] = i2c_recv(&src, true);
    got[1] = 0;
    for (int i = 0; i < 3; i++) {
        got[1] = got[1] << 1 | i2c_bit(&src, true);
    }
    qtest_qmp_assert_success(src.qts, "{'execute': 'stop'}");
    qtest_qmp_assert_success(src.qts, "{'execute': 'migrate', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(src.qts, "completed");
    ixgbe_test_stop(&src);

    start_sfp(&dst, "sr", "-incoming defer");
    qtest_qmp_assert_success(dst.qts, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(dst.qts, "completed");
    qtest_qmp_assert_success(dst.qts, "{'execute': 'cont'}");

    /* The rest of the second byte, then two more */
    for (int i = 0; i < 5; i++) {
        got[1] = got[1] << 1 | i2c_bit(&dst, true);
    }
    i2c_bit(&dst, false);
    got[2] = i2c_recv(&dst, true);
    got[3] = i2c_recv(&dst, false);
    i2c_stop(&dst);
    g_assert_cmpmem(got, sizeof(got), want, sizeof(want));
    g_assert_false(ixgbe_test_logged(&dst, "ixgbe:"));
    ixgbe_test_stop(&dst);
    unlink(path);
}

/* The module type swapped at run time travels with the migration */
static void test_migration_module(void)
{
    IxgbeTest src, dst;
    g_autofree char *path = NULL;
    g_autofree char *uri = NULL;
    int fd = g_file_open_tmp("ixgbe-sfp-mig-XXXXXX", &path, NULL);
    QDict *rsp;
    uint8_t b;

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    uri = g_strdup_printf("file:%s", path);
    start_sfp(&src, "da", "");
    qom_set_sfp(&src, "sr");
    qtest_qmp_assert_success(src.qts, "{'execute': 'stop'}");
    qtest_qmp_assert_success(src.qts, "{'execute': 'migrate', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(src.qts, "completed");
    ixgbe_test_stop(&src);

    start_sfp(&dst, "da", "-incoming defer");
    qtest_qmp_assert_success(dst.qts, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(dst.qts, "completed");
    rsp = qtest_qmp(dst.qts, "{'execute': 'qom-get', 'arguments': "
                    "{'path': '/machine/peripheral/nic0', "
                    "'property': 'sfp'}}");
    g_assert_cmpstr(qdict_get_str(rsp, "return"), ==, "sr");
    qobject_unref(rsp);
    g_assert_true(i2c_read(&dst, SFP_A0, 3, &b, 1));
    g_assert_cmphex(b, ==, 0x10);
    ixgbe_test_stop(&dst);
    unlink(path);
}

/*
 * The guest powers the slot of an SFP+ port off in the middle of an I2C
 * read, then the VM migrates: the cage's I2C bus went with the port and
 * left nothing in the stream that a destination without it would not
 * know ("i2c_bus" state of a freed bus, the fix "hw/i2c: unregister an I2C
 * bus's migration state when the bus is freed").
 */
static void test_migration_after_unplug(void)
{
    const char *hotplug = "-global ICH9-LPC.acpi-pci-hotplug-with-"
                          "bridge-support=off";
    IxgbeTest src;
    QTestState *dst;
    g_autofree char *path = NULL;
    g_autofree char *uri = NULL;
    int fd = g_file_open_tmp("ixgbe-sfp-mig-XXXXXX", &path, NULL);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    uri = g_strdup_printf("file:%s", path);

    ixgbe_test_boot_model(&src, "ixgbe-sfp,sfp=sr", true, hotplug);
    i2c_start(&src);
    g_assert_true(i2c_send(&src, SFP_A0));
    g_assert_true(i2c_send(&src, 20));
    i2c_start(&src);
    g_assert_true(i2c_send(&src, SFP_A0 | 1));
    i2c_bit(&src, true);

    unplug_by_slot_power(&src);
    qtest_qmp_assert_success(src.qts, "{'execute': 'stop'}");
    qtest_qmp_assert_success(src.qts, "{'execute': 'migrate', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(src.qts, "completed");
    ixgbe_test_stop(&src);

    dst = qtest_initf("-M q35 -nodefaults -device pcie-root-port,id=rp0,"
                      "bus=pcie.0,chassis=1,addr=%d %s -incoming defer",
                      IXGBE_TEST_PORT_SLOT, hotplug);
    qtest_qmp_assert_success(dst, "{'execute': 'migrate-incoming', "
                             "'arguments': {'uri': %s}}", uri);
    migrate_wait(dst, "completed");
    qtest_quit(dst);
    unlink(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    qtest_add_func("ixgbe-sfp/device-ids", test_device_ids);
    qtest_add_func("ixgbe-sfp/link-modes", test_link_modes);
    qtest_add_func("ixgbe-sfp/eeprom-init-sequences",
                   test_eeprom_init_sequences);
    qtest_add_func("ixgbe-sfp/i2c/read-sr", test_i2c_read_sr);
    qtest_add_func("ixgbe-sfp/i2c/read-da", test_i2c_read_da);
    qtest_add_func("ixgbe-sfp/i2c/nack-without-module",
                   test_i2c_nack_without_module);
    qtest_add_func("ixgbe-sfp/i2c/malformed", test_i2c_malformed);
    qtest_add_func("ixgbe-sfp/module-swap", test_module_swap);
    qtest_add_func("ixgbe-sfp/bad-property", test_bad_property);
    qtest_add_func("ixgbe-sfp/migration/mid-read", test_migration_mid_read);
    qtest_add_func("ixgbe-sfp/migration/module", test_migration_module);
    qtest_add_func("ixgbe-sfp/migration/after-unplug",
                   test_migration_after_unplug);

    return g_test_run();
}
