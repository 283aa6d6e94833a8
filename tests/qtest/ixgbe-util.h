/*
 * Test harness for the Intel 82599 (ixgbe) qtests (ixgbe-util.c)
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef TESTS_QTEST_IXGBE_UTIL_H
#define TESTS_QTEST_IXGBE_UTIL_H

#include "libqos/libqos-pc.h"
#include "libqos/pci.h"

#define IXGBE_TEST_SLOT         4
#define IXGBE_TEST_PORT_SLOT    6   /* the root port, with on_port */
#define IXGBE_TEST_MAC          "52:54:00:12:34:56"
/* RAL0/RAH0 as the MAC above reads in them (byte 0 in bits 7:0) */
#define IXGBE_TEST_RAL          0x12005452u
#define IXGBE_TEST_RAH          0x5634u

#define DESC_SIZE               16
#define RX_BUF_SIZE             1024        /* SRRCTL.BSIZEPKT = 1 KiB */
#define SRRCTL_DESCTYPE_ADV_ONEBUF (1u << IXGBE_SRRCTL_DESCTYPE_SHIFT)
#define TXD_PAYLEN_SHIFT        14
#define GPIE_PBA_SUPPORT        (1u << 31)

/* How long to wait for the device to act on a frame written to the socket */
#define WAIT_US                 (5 * G_USEC_PER_SEC)
/* How long to wait for a frame that must not come */
#define SILENCE_MS              100

extern const uint8_t test_mac[6];       /* the device's address */
extern const uint8_t peer_mac[6];       /* the test's end of the wire */
extern const uint8_t other_mac[6];
extern const uint8_t bcast_mac[6];

typedef struct IxgbeTest {
    QOSState *qs;
    QTestState *qts;
    QPCIDevice *dev;
    QPCIDevice *port;       /* the root port above dev, if any */
    QPCIBar bar0;
    uint64_t bar0_size;
    int sock;               /* the test's end of the socket netdev */
    char *log_path;         /* -d guest_errors goes here */
} IxgbeTest;

typedef struct RxRing {
    unsigned queue;
    unsigned ndesc;
    uint64_t ring;
    uint64_t bufs;          /* ndesc buffers of RX_BUF_SIZE, in order */
    unsigned next;          /* next descriptor the device will complete */
} RxRing;

/* Start the machine; extra: more QEMU options (may be "") */
void ixgbe_test_boot(IxgbeTest *t, bool on_port, const char *extra);
void ixgbe_test_boot_model(IxgbeTest *t, const char *model, bool on_port,
                           const char *extra);
void ixgbe_test_start_args(IxgbeTest *t, const char *extra);
void ixgbe_test_start(IxgbeTest *t);
void ixgbe_test_stop(IxgbeTest *t);
bool ixgbe_test_logged(IxgbeTest *t, const char *text);
unsigned ixgbe_test_log_count(IxgbeTest *t, const char *text);
uint32_t rd(IxgbeTest *t, uint32_t reg);
void wr(IxgbeTest *t, uint32_t reg, uint32_t val);
uint32_t rxq(unsigned q, uint32_t reg);
uint32_t txq(unsigned q, uint32_t reg);
uint32_t eitr(unsigned vector);
extern const uint8_t ixgbe_rss_key[];
/*
 * RSS: the hash key ixgbe_rss_key, RETA entry i steering to queue_of(i)
 * (rss_entry_mod4: queues 0-3 in turn), MRQC = mrqc
 */
unsigned rss_entry_mod4(unsigned entry);
void rss_program(IxgbeTest *t, unsigned (*queue_of)(unsigned entry),
                 uint32_t mrqc);
void backend_send(IxgbeTest *t, const uint8_t *frame, size_t len);
int backend_recv(IxgbeTest *t, uint8_t *buf, size_t size,
                 int timeout_ms);
void backend_assert_silent(IxgbeTest *t);
size_t build_frame(uint8_t *buf, const uint8_t *dst, size_t len,
                   uint8_t seed);
uint16_t ip_checksum(const uint8_t *p, size_t len);
size_t build_ipv4_frame(uint8_t *buf, uint8_t proto,
                        const uint8_t *sip, const uint8_t *dip,
                        uint16_t sport, uint16_t dport);
uint64_t tx_ring_setup(IxgbeTest *t, unsigned q, unsigned ndesc,
                       unsigned wthresh);
void tx_put_data(IxgbeTest *t, uint64_t ring, unsigned idx,
                 uint64_t buf, uint32_t len, uint32_t paylen,
                 uint32_t cmd);
void tx_put_desc(IxgbeTest *t, uint64_t ring, unsigned idx, uint64_t buf,
                 uint32_t len, uint32_t cmd, uint32_t olinfo);
bool tx_dd(IxgbeTest *t, uint64_t ring, unsigned idx);
void tx_send_frame(IxgbeTest *t, unsigned q, uint64_t ring, unsigned idx,
                   const uint8_t *frame, size_t len);
void backend_expect(IxgbeTest *t, const uint8_t *frame, size_t len);
uint64_t guest_frame(IxgbeTest *t, const uint8_t *frame, size_t len);
void rx_enable(IxgbeTest *t);
uint64_t loopback_setup(IxgbeTest *t, RxRing *r, unsigned rx_ndesc,
                        unsigned tx_ndesc);
void rx_ring_setup(IxgbeTest *t, RxRing *r, unsigned q, unsigned ndesc);
bool rx_desc_done(IxgbeTest *t, const RxRing *r, unsigned idx,
                  uint8_t *wb);
bool rx_dd(IxgbeTest *t, const RxRing *r, unsigned idx);
int rx_wait_any(IxgbeTest *t, RxRing *rings, unsigned nrings,
                uint8_t *wb);
void rx_wait(IxgbeTest *t, RxRing *r, uint8_t *wb);
uint32_t rx_wb_status(const uint8_t *wb);
uint32_t rx_wb_hash(const uint8_t *wb);
uint32_t rx_wb_rss_type(const uint8_t *wb);
uint32_t rx_wb_length(const uint8_t *wb);
void rx_check_data(IxgbeTest *t, const RxRing *r, unsigned idx,
                   const uint8_t *data, size_t len);
void migrate_wait(QTestState *qts, const char *want);
char *save_to_file(IxgbeTest *t);
bool load_from_file(IxgbeTest *dst, const char *path);
bool load_from_file_boot(IxgbeTest *dst, const char *path, bool on_port);
void patch_stream(const char *path, const uint8_t *pat, size_t len,
                  const uint8_t *with);
void wait_device_deleted(QTestState *qts, const char *id);
void slot_power(QPCIDevice *port, uint8_t exp, bool on);
void slot_ack_events(QPCIDevice *port, uint8_t exp);
void unplug_by_slot_power(IxgbeTest *t);

#endif
