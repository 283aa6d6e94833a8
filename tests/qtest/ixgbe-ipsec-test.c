/*
 * QTest of the Intel 82599 (ixgbe) IPsec security association tables:
 * the staging registers and index registers through which the Linux
 * driver (ixgbe_ipsec.c) writes SAs, read back through the same index
 * registers; bad programming logged and ignored; the tables kept across
 * migration and cleared by a reset; the engine reported fused off.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "libqtest.h"
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

/* Until the datapath encrypts and decrypts, the engine says it is absent */
static void test_fused_off(void)
{
    IxgbeTest t;

    ixgbe_test_start(&t);
    g_assert_cmphex(rd(&t, IXGBE_SECTXSTAT) & 0x2, ==, 0x2);
    g_assert_cmphex(rd(&t, IXGBE_SECRXSTAT) & 0x2, ==, 0x2);
    ixgbe_test_stop(&t);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    qtest_add_func("ixgbe/ipsec/tables", test_tables);
    qtest_add_func("ixgbe/ipsec/bad-programming", test_bad_programming);
    qtest_add_func("ixgbe/ipsec/migration-reset", test_migration_and_reset);
    qtest_add_func("ixgbe/ipsec/fused-off", test_fused_off);
    return g_test_run();
}
