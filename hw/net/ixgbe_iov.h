/*
 * Intel 82599 10 GbE controller: walks over a byte range of an iovec, and
 * the CRC the receive path takes of a frame where it lies (ixgbe_iov.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_IOV_H
#define HW_NET_IXGBE_IOV_H

/*
 * Called for each contiguous piece of a range, in order; pos is the
 * piece's offset from the start of the range.
 */
typedef void IxgbeIovFn(void *opaque, const uint8_t *buf, size_t len,
                        size_t pos);

/*
 * Bytes [off, off + n) of an iovec, piece by piece; returns how many
 * there were (fewer than n when the iovec ends first).
 */
size_t ixgbe_iov_walk(const struct iovec *iov, int iovcnt, size_t off,
                      size_t n, IxgbeIovFn *fn, void *opaque);

/* CRC-32 (as zlib's crc32) of bytes [off, off + n), continuing crc */
uint32_t ixgbe_iov_crc(uint32_t crc, const struct iovec *iov, int iovcnt,
                       size_t off, size_t n);

#endif
