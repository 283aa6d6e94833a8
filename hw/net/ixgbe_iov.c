/*
 * Intel 82599 10 GbE controller: walks over a byte range of an iovec, and
 * the CRC and checksum of such a range.
 *
 * The receive path leaves a frame in the backend's pieces (no copy), so
 * what it computes over the frame it computes piece by piece.  The
 * checksum adds the range in 32-bit words in host order and converts the
 * folded sum once at the end: the ones' complement sum does not depend on
 * byte order (RFC 1071), and a piece that starts at an odd offset of the
 * range contributes its sum byte-swapped.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/bswap.h"
#include "ixgbe_iov.h"
#include <zlib.h>

size_t ixgbe_iov_walk(const struct iovec *iov, int iovcnt, size_t off,
                      size_t n, IxgbeIovFn *fn, void *opaque)
{
    size_t pos = 0;

    for (int i = 0; i < iovcnt && pos < n; i++) {
        size_t run;

        if (off >= iov[i].iov_len) {
            off -= iov[i].iov_len;
            continue;
        }
        run = MIN(iov[i].iov_len - off, n - pos);
        fn(opaque, (const uint8_t *)iov[i].iov_base + off, run, pos);
        pos += run;
        off = 0;
    }
    return pos;
}

static void ixgbe_iov_crc_piece(void *opaque, const uint8_t *buf, size_t len,
                                size_t pos)
{
    uint32_t *crc = opaque;

    *crc = crc32(*crc, buf, len);
}

uint32_t ixgbe_iov_crc(uint32_t crc, const struct iovec *iov, int iovcnt,
                       size_t off, size_t n)
{
    ixgbe_iov_walk(iov, iovcnt, off, n, ixgbe_iov_crc_piece, &crc);
    return crc;
}

/* Fold a sum of 16-bit quantities to 16 bits (end-around carry) */
static uint16_t ixgbe_csum_fold(uint64_t sum)
{
    while (sum >> 16) {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    return sum;
}

/*
 * Ones' complement sum of buf in host-order 16-bit words, folded; the
 * caller converts it to network order.
 */
static uint16_t ixgbe_csum_piece(const uint8_t *p, size_t len)
{
    uint64_t sum = 0;

    /*
     * 32-bit words (ldl_he_p is signed: taken as unsigned); a 64-bit sum
     * of them cannot overflow for any length that fits in memory.
     */
    for (; len >= 16; p += 16, len -= 16) {
        sum += (uint64_t)(uint32_t)ldl_he_p(p) + (uint32_t)ldl_he_p(p + 4) +
               (uint32_t)ldl_he_p(p + 8) + (uint32_t)ldl_he_p(p + 12);
    }
    for (; len >= 4; p += 4, len -= 4) {
        sum += (uint32_t)ldl_he_p(p);
    }
    for (; len >= 2; p += 2, len -= 2) {
        sum += lduw_he_p(p);
    }
    if (len) {
        uint8_t last[2] = { *p, 0 };

        sum += lduw_he_p(last);
    }
    return ixgbe_csum_fold(sum);
}

static void ixgbe_iov_csum_piece(void *opaque, const uint8_t *buf, size_t len,
                                 size_t pos)
{
    uint32_t *sum = opaque;
    uint16_t host = ixgbe_csum_piece(buf, len);
    uint16_t be = lduw_be_p(&host);

    /* A piece at an odd offset holds the other byte of each word */
    *sum += (pos & 1) ? bswap16(be) : be;
}

uint32_t ixgbe_iov_csum(const struct iovec *iov, int iovcnt, size_t off,
                        size_t n)
{
    uint32_t sum = 0;

    if (iovcnt >= 1 && off <= iov[0].iov_len && n <= iov[0].iov_len - off) {
        /* The common case, a range in the first piece */
        ixgbe_iov_csum_piece(&sum, (const uint8_t *)iov[0].iov_base + off,
                             n, 0);
    } else {
        ixgbe_iov_walk(iov, iovcnt, off, n, ixgbe_iov_csum_piece, &sum);
    }
    return sum;
}
