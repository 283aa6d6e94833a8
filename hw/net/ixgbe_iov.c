/*
 * Intel 82599 10 GbE controller: walks over a byte range of an iovec, and
 * the CRC of such a range.
 *
 * The receive path leaves a frame in the backend's pieces (no copy), so
 * what it computes over the frame it computes piece by piece (checksums
 * through net_checksum_add_iov()).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
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
