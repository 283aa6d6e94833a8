/*
 * Unit tests of the ixgbe model's iovec helpers (hw/net/ixgbe_iov.c): the
 * range walk, and the CRC of a range against zlib's over the same bytes
 * made contiguous.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "../../hw/net/ixgbe_iov.h"
#include <zlib.h>

#define MAX_LEN     9018
#define MAX_PIECES  8

/* buf cut into cnt pieces at random points (empty pieces included) */
static int split(uint8_t *buf, size_t len, struct iovec *iov, int cnt)
{
    size_t cuts[MAX_PIECES + 1];

    cuts[0] = 0;
    cuts[cnt] = len;
    for (int i = 1; i < cnt; i++) {
        cuts[i] = g_test_rand_int_range(0, len + 1);
    }
    /* insertion sort of the inner cuts */
    for (int i = 2; i < cnt; i++) {
        for (int j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
            size_t c = cuts[j];

            cuts[j] = cuts[j - 1];
            cuts[j - 1] = c;
        }
    }
    for (int i = 0; i < cnt; i++) {
        iov[i].iov_base = buf + cuts[i];
        iov[i].iov_len = cuts[i + 1] - cuts[i];
    }
    return cnt;
}

static void fill_random(uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = g_test_rand_int();
    }
}

static void test_crc_random(void)
{
    g_autofree uint8_t *buf = g_malloc(MAX_LEN);
    struct iovec iov[MAX_PIECES];

    for (int round = 0; round < 500; round++) {
        size_t len = g_test_rand_int_range(0, MAX_LEN);
        int cnt = split(buf, len, iov, g_test_rand_int_range(1,
                                                            MAX_PIECES + 1));
        size_t off = g_test_rand_int_range(0, len + 1);
        size_t n = g_test_rand_int_range(0, len - off + 1);
        uint32_t seed = g_test_rand_int();

        fill_random(buf, len);
        g_assert_cmphex(ixgbe_iov_crc(seed, iov, cnt, off, n), ==,
                        crc32(seed, buf + off, n));
    }
}

typedef struct Seen {
    uint8_t copy[256];
    size_t next_pos;
    unsigned calls;
} Seen;

static void collect(void *opaque, const uint8_t *buf, size_t len, size_t pos)
{
    Seen *s = opaque;

    g_assert_cmpuint(pos, ==, s->next_pos);
    g_assert_cmpuint(len, >, 0);
    memcpy(s->copy + pos, buf, len);
    s->next_pos = pos + len;
    s->calls++;
}

/* Pieces in order, each with its offset in the range; empty ones skipped */
static void test_walk(void)
{
    uint8_t data[100];
    struct iovec iov[4] = {
        { data, 10 }, { data + 10, 0 }, { data + 10, 45 }, { data + 55, 45 },
    };
    Seen s = { 0 };

    fill_random(data, sizeof(data));
    g_assert_cmpuint(ixgbe_iov_walk(iov, 4, 7, 60, collect, &s), ==, 60);
    g_assert_cmpuint(s.calls, ==, 3);
    g_assert(memcmp(s.copy, data + 7, 60) == 0);

    memset(&s, 0, sizeof(s));
    g_assert_cmpuint(ixgbe_iov_walk(iov, 4, 90, 60, collect, &s), ==, 10);
    g_assert_cmpuint(s.calls, ==, 1);
    g_assert(memcmp(s.copy, data + 90, 10) == 0);

    memset(&s, 0, sizeof(s));
    g_assert_cmpuint(ixgbe_iov_walk(iov, 4, 100, 5, collect, &s), ==, 0);
    g_assert_cmpuint(ixgbe_iov_walk(iov, 4, 3, 0, collect, &s), ==, 0);
    g_assert_cmpuint(s.calls, ==, 0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/ixgbe-iov/crc/random", test_crc_random);
    g_test_add_func("/ixgbe-iov/walk", test_walk);
    return g_test_run();
}
