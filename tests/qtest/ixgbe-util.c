/*
 * Test harness for the Intel 82599 (ixgbe) qtests: the machine with its
 * socket netdev, register access, frames, and descriptor rings in guest
 * memory, as a driver would set them up.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include <poll.h>
#include "libqtest.h"
#include "libqos/libqos-pc.h"
#include "libqos/libqos-malloc.h"
#include "libqos/pci.h"
#include "qobject/qdict.h"
#include "net/eth.h"
#include "qemu/bswap.h"
#include "qemu/cutils.h"
#include "qemu/units.h"
#include "hw/pci/pci_regs.h"
#include "hw/net/ixgbe_regs.h"
#include "ixgbe-util.h"

const uint8_t test_mac[ETH_ALEN] = {
    0x52, 0x54, 0x00, 0x12, 0x34, 0x56
};
const uint8_t peer_mac[ETH_ALEN] = {
    0x52, 0x54, 0x00, 0xaa, 0xbb, 0xcc
};
const uint8_t other_mac[ETH_ALEN] = {
    0x52, 0x54, 0x00, 0x99, 0x88, 0x77
};
const uint8_t bcast_mac[ETH_ALEN] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff
};

/* ------------------------------------------------------------------ */
/* Machine, registers, socket backend                                  */
/* ------------------------------------------------------------------ */

/*
 * Boot a q35 machine with the NIC on the root complex (slot
 * IXGBE_TEST_SLOT) or, with on_port, behind a PCI Express root port
 * ("rp0") whose bus number and memory window the test assigns as firmware
 * would.  extra: more QEMU options (may be "").
 */
void ixgbe_test_boot(IxgbeTest *t, bool on_port, const char *extra)
{
    ixgbe_test_boot_model(t, "ixgbe", on_port, extra);
}

/* The same with another device type (model: "ixgbe-sfp", ...) */
void ixgbe_test_boot_model(IxgbeTest *t, const char *model, bool on_port,
                           const char *extra)
{
    g_autofree char *where = NULL;
    int sv[2], fd, devfn = QPCI_DEVFN(IXGBE_TEST_SLOT, 0);

    memset(t, 0, sizeof(*t));
    g_assert_cmpint(socketpair(PF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    fd = g_file_open_tmp("ixgbe-test-log-XXXXXX", &t->log_path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    where = on_port ?
        g_strdup_printf("-device pcie-root-port,id=rp0,bus=pcie.0,chassis=1,"
                        "addr=%d -device %s,bus=rp0", IXGBE_TEST_PORT_SLOT,
                        model) :
        g_strdup_printf("-device %s,addr=%d", model, IXGBE_TEST_SLOT);
    t->qs = qtest_pc_boot("-M q35 -nodefaults -d guest_errors,unimp -D %s "
                          "-netdev socket,fd=%d,id=net0 "
                          "%s,id=nic0,netdev=net0,mac=" IXGBE_TEST_MAC
                          ",romfile= %s",
                          t->log_path, sv[1], where, extra);
    close(sv[1]);
    t->sock = sv[0];
    t->qts = t->qs->qts;
    if (on_port) {
        int secbus;

        g_assert_cmpint(qpci_secondary_buses_init(t->qs->pcibus), ==, 1);
        t->port = qpci_device_find(t->qs->pcibus,
                                   QPCI_DEVFN(IXGBE_TEST_PORT_SLOT, 0));
        g_assert(t->port);
        secbus = qpci_config_readb(t->port, PCI_SECONDARY_BUS);
        qpci_config_writew(t->port, PCI_MEMORY_BASE, 0xe000);
        qpci_config_writew(t->port, PCI_MEMORY_LIMIT, 0xeff0);
        qpci_device_enable(t->port);
        devfn = QPCI_DEVFN(secbus << 5, 0);
    }
    t->dev = qpci_device_find(t->qs->pcibus, devfn);
    g_assert(t->dev);
    t->bar0 = qpci_iomap(t->dev, 0, &t->bar0_size);
    qpci_device_enable(t->dev);
}

void ixgbe_test_start_args(IxgbeTest *t, const char *extra)
{
    ixgbe_test_boot(t, false, extra);
}

void ixgbe_test_start(IxgbeTest *t)
{
    ixgbe_test_start_args(t, "");
}

void ixgbe_test_stop(IxgbeTest *t)
{
    if (t->dev && t->dev->msix_enabled) {
        qpci_msix_disable(t->dev);
    }
    g_free(t->dev);
    g_free(t->port);
    qtest_shutdown(t->qs);
    close(t->sock);
    unlink(t->log_path);
    g_free(t->log_path);
}

/* How many times QEMU's log holds text */
unsigned ixgbe_test_log_count(IxgbeTest *t, const char *text)
{
    g_autofree char *log = NULL;
    unsigned n = 0;

    g_assert_true(g_file_get_contents(t->log_path, &log, NULL, NULL));
    for (const char *p = strstr(log, text); p; p = strstr(p + 1, text)) {
        n++;
    }
    return n;
}

bool ixgbe_test_logged(IxgbeTest *t, const char *text)
{
    return ixgbe_test_log_count(t, text) > 0;
}

uint32_t rd(IxgbeTest *t, uint32_t reg)
{
    return qpci_io_readl(t->dev, t->bar0, reg);
}

void wr(IxgbeTest *t, uint32_t reg, uint32_t val)
{
    qpci_io_writel(t->dev, t->bar0, reg, val);
}

uint32_t rxq(unsigned q, uint32_t reg)
{
    g_assert(q < 64);
    return IXGBE_RXQ_LO + q * IXGBE_RXQ_STRIDE + reg;
}

uint32_t txq(unsigned q, uint32_t reg)
{
    return IXGBE_TXQ_BASE + q * IXGBE_TXQ_STRIDE + reg;
}

uint32_t eitr(unsigned vector)
{
    g_assert(vector < 24);
    return IXGBE_EITR_LO + vector * 4;
}

/* The key of Microsoft's RSS verification table */
const uint8_t ixgbe_rss_key[IXGBE_RSS_KEY_SIZE] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2,
    0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4,
    0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};

unsigned rss_entry_mod4(unsigned entry)
{
    return entry % 4;
}

void rss_program(IxgbeTest *t, unsigned (*queue_of)(unsigned entry),
                 uint32_t mrqc)
{
    for (unsigned i = 0; i < IXGBE_RSS_KEY_SIZE / 4; i++) {
        wr(t, IXGBE_RSSRK0 + i * 4, ldl_le_p(ixgbe_rss_key + i * 4));
    }
    for (unsigned i = 0; i < IXGBE_RETA_ENTRIES / 4; i++) {
        uint32_t reg = 0;

        for (unsigned b = 0; b < 4; b++) {
            reg |= queue_of(i * 4 + b) << (b * 8);
        }
        wr(t, IXGBE_RETA0 + i * 4, reg);
    }
    wr(t, IXGBE_MRQC, mrqc);
}

/* Send one frame to the device (the socket netdev prefixes its length) */
void backend_send(IxgbeTest *t, const uint8_t *frame, size_t len)
{
    uint32_t be_len = htonl(len);
    struct iovec iov[] = {
        { .iov_base = &be_len, .iov_len = sizeof(be_len) },
        { .iov_base = (void *)frame, .iov_len = len },
    };
    struct msghdr msg = { .msg_iov = iov, .msg_iovlen = ARRAY_SIZE(iov) };

    g_assert_cmpint(sendmsg(t->sock, &msg, 0), ==, sizeof(be_len) + len);
}

static bool backend_readable(IxgbeTest *t, int timeout_ms)
{
    struct pollfd pfd = { .fd = t->sock, .events = POLLIN };

    return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN);
}

/*
 * Receive one frame the device transmitted.  Returns its length, or -1 if
 * none arrives within timeout_ms.
 */
int backend_recv(IxgbeTest *t, uint8_t *buf, size_t size,
                 int timeout_ms)
{
    uint32_t be_len;
    size_t len;

    if (!backend_readable(t, timeout_ms)) {
        return -1;
    }
    g_assert_cmpint(recv(t->sock, &be_len, sizeof(be_len), MSG_WAITALL), ==,
                    sizeof(be_len));
    len = ntohl(be_len);
    g_assert_cmpuint(len, <=, size);
    g_assert_cmpint(recv(t->sock, buf, len, MSG_WAITALL), ==, len);
    return len;
}

/*
 * Nothing was transmitted.  The device sends during the tail write, so a
 * frame it sent would already be waiting in the socket.
 */
void backend_assert_silent(IxgbeTest *t)
{
    uint8_t buf[64 * KiB];
    int len = backend_recv(t, buf, sizeof(buf), SILENCE_MS);

    if (len >= 0) {
        GString *hex = qemu_hexdump_line(NULL, buf, MIN(len, 32), 1, 0);

        g_test_message("unexpected frame of %d bytes: %s...", len, hex->str);
        g_string_free(hex, true);
    }
    g_assert_cmpint(len, ==, -1);
}

/* An Ethernet frame with a recognisable payload */
size_t build_frame(uint8_t *buf, const uint8_t *dst, size_t len,
                   uint8_t seed)
{
    g_assert_cmpuint(len, >=, 60);
    memcpy(buf, dst, ETH_ALEN);
    memcpy(buf + 6, peer_mac, ETH_ALEN);
    stw_be_p(buf + 12, 0x88b5);            /* local experimental type */
    for (size_t i = 14; i < len; i++) {
        buf[i] = seed + i * 7;
    }
    return len;
}

uint16_t ip_checksum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2) {
        sum += lduw_be_p(p + i);
    }
    while (sum >> 16) {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    return ~sum;
}

/* A 60-byte IPv4 frame to the device, UDP (proto 17) or TCP (proto 6) */
size_t build_ipv4_frame(uint8_t *buf, uint8_t proto,
                        const uint8_t *sip, const uint8_t *dip,
                        uint16_t sport, uint16_t dport)
{
    uint8_t *ip = buf + 14, *l4 = ip + 20;
    size_t len = 60;

    memset(buf, 0, len);
    memcpy(buf, test_mac, ETH_ALEN);
    memcpy(buf + 6, peer_mac, ETH_ALEN);
    stw_be_p(buf + 12, 0x0800);
    ip[0] = 0x45;
    stw_be_p(ip + 2, len - 14);
    ip[8] = 64;
    ip[9] = proto;
    memcpy(ip + 12, sip, 4);
    memcpy(ip + 16, dip, 4);
    stw_be_p(ip + 10, ip_checksum(ip, 20));
    stw_be_p(l4, sport);
    stw_be_p(l4 + 2, dport);
    if (proto == 17) {
        stw_be_p(l4 + 4, len - 14 - 20);   /* checksum 0: none */
    } else {
        l4[12] = 5 << 4;                   /* 20-byte header, 6 data */
    }
    return len;
}

/* ------------------------------------------------------------------ */
/* Rings                                                               */
/* ------------------------------------------------------------------ */

uint64_t tx_ring_setup(IxgbeTest *t, unsigned q, unsigned ndesc,
                       unsigned wthresh)
{
    uint64_t ring = guest_alloc(&t->qs->alloc, ndesc * DESC_SIZE);

    qtest_memset(t->qts, ring, 0, ndesc * DESC_SIZE);
    wr(t, txq(q, IXGBE_TXQ_TDBAL), (uint32_t)ring);
    wr(t, txq(q, IXGBE_TXQ_TDBAH), ring >> 32);
    wr(t, txq(q, IXGBE_TXQ_TDLEN), ndesc * DESC_SIZE);
    wr(t, txq(q, IXGBE_TXQ_TDH), 0);
    wr(t, txq(q, IXGBE_TXQ_TDT), 0);
    wr(t, IXGBE_DMATXCTL, rd(t, IXGBE_DMATXCTL) | IXGBE_DMATXCTL_TE);
    wr(t, txq(q, IXGBE_TXQ_TXDCTL),
       IXGBE_TXDCTL_ENABLE | (wthresh << IXGBE_TXDCTL_WTHRESH_SHIFT));
    g_assert_cmphex(rd(t, txq(q, IXGBE_TXQ_TXDCTL)) & IXGBE_TXDCTL_ENABLE,
                    ==, IXGBE_TXDCTL_ENABLE);
    return ring;
}

/* Advanced data descriptor for len bytes at buf; cmd adds EOP/RS */
void tx_put_data(IxgbeTest *t, uint64_t ring, unsigned idx,
                 uint64_t buf, uint32_t len, uint32_t paylen,
                 uint32_t cmd)
{
    tx_put_desc(t, ring, idx, buf, len, cmd, paylen << TXD_PAYLEN_SHIFT);
}

/* The same with olinfo_status as given (offload requests, PAYLEN) */
void tx_put_desc(IxgbeTest *t, uint64_t ring, unsigned idx, uint64_t buf,
                 uint32_t len, uint32_t cmd, uint32_t olinfo)
{
    uint8_t d[DESC_SIZE];

    stq_le_p(d, buf);
    stl_le_p(d + 8, len | IXGBE_TXD_DTYP_DATA | IXGBE_TXD_CMD_DEXT |
             IXGBE_TXD_CMD_IFCS | cmd);
    stl_le_p(d + 12, olinfo);
    qtest_memwrite(t->qts, ring + idx * DESC_SIZE, d, sizeof(d));
}

/*
 * Copy frame into a fresh guest buffer, describe it as one EOP|RS data
 * descriptor at idx of queue q's ring and hand it over (TDT = idx + 1).
 */
void tx_send_frame(IxgbeTest *t, unsigned q, uint64_t ring, unsigned idx,
                   const uint8_t *frame, size_t len)
{
    uint64_t buf = guest_frame(t, frame, len);

    tx_put_data(t, ring, idx, buf, len, len,
                IXGBE_TXD_CMD_EOP | IXGBE_TXD_CMD_RS);
    wr(t, txq(q, IXGBE_TXQ_TDT), idx + 1);
}

/* The next frame on the wire is frame */
void backend_expect(IxgbeTest *t, const uint8_t *frame, size_t len)
{
    g_autofree uint8_t *got = g_malloc(len + 1);

    g_assert_cmpint(backend_recv(t, got, len + 1, WAIT_US / 1000), ==, len);
    g_assert_cmpmem(got, len, frame, len);
}

bool tx_dd(IxgbeTest *t, uint64_t ring, unsigned idx)
{
    return qtest_readb(t->qts, ring + idx * DESC_SIZE + 12) &
           IXGBE_TXD_STA_DD;
}

/* Copy a frame into a fresh guest buffer */
uint64_t guest_frame(IxgbeTest *t, const uint8_t *frame, size_t len)
{
    uint64_t buf = guest_alloc(&t->qs->alloc, len);

    qtest_memwrite(t->qts, buf, frame, len);
    return buf;
}

/* Receive path common to all queues: filters, CRC strip, RXEN */
void rx_enable(IxgbeTest *t)
{
    wr(t, IXGBE_HLREG0, rd(t, IXGBE_HLREG0) | IXGBE_HLREG0_RXCRCSTRP);
    wr(t, IXGBE_FCTRL, IXGBE_FCTRL_BAM);
    wr(t, IXGBE_RXCTRL, IXGBE_RXCTRL_RXEN);
}

/*
 * MAC loopback: receive queue 0 (rx_ndesc descriptors, unicast
 * promiscuous) takes what transmit queue 0 (tx_ndesc) sends; returns the
 * transmit ring
 */
uint64_t loopback_setup(IxgbeTest *t, RxRing *r, unsigned rx_ndesc,
                        unsigned tx_ndesc)
{
    rx_ring_setup(t, r, 0, rx_ndesc);
    rx_enable(t);
    wr(t, IXGBE_FCTRL, IXGBE_FCTRL_BAM | IXGBE_FCTRL_UPE);
    wr(t, IXGBE_HLREG0, rd(t, IXGBE_HLREG0) | IXGBE_HLREG0_LPBK);
    return tx_ring_setup(t, 0, tx_ndesc, 0);
}

void rx_ring_setup(IxgbeTest *t, RxRing *r, unsigned q, unsigned ndesc)
{
    r->queue = q;
    r->ndesc = ndesc;
    r->next = 0;
    r->ring = guest_alloc(&t->qs->alloc, ndesc * DESC_SIZE);
    r->bufs = guest_alloc(&t->qs->alloc, ndesc * RX_BUF_SIZE);
    qtest_memset(t->qts, r->bufs, 0, ndesc * RX_BUF_SIZE);
    for (unsigned i = 0; i < ndesc; i++) {
        uint8_t d[DESC_SIZE] = { 0 };

        stq_le_p(d, r->bufs + i * RX_BUF_SIZE);
        qtest_memwrite(t->qts, r->ring + i * DESC_SIZE, d, sizeof(d));
    }
    wr(t, rxq(q, IXGBE_RXQ_RDBAL), (uint32_t)r->ring);
    wr(t, rxq(q, IXGBE_RXQ_RDBAH), r->ring >> 32);
    wr(t, rxq(q, IXGBE_RXQ_RDLEN), ndesc * DESC_SIZE);
    wr(t, rxq(q, IXGBE_RXQ_SRRCTL),
       SRRCTL_DESCTYPE_ADV_ONEBUF | (RX_BUF_SIZE / KiB));
    wr(t, rxq(q, IXGBE_RXQ_RDH), 0);
    wr(t, rxq(q, IXGBE_RXQ_RXDCTL), IXGBE_RXDCTL_ENABLE);
    g_assert_cmphex(rd(t, rxq(q, IXGBE_RXQ_RXDCTL)) & IXGBE_RXDCTL_ENABLE,
                    ==, IXGBE_RXDCTL_ENABLE);
    /* All but one descriptor belong to the device */
    wr(t, rxq(q, IXGBE_RXQ_RDT), ndesc - 1);
}

bool rx_desc_done(IxgbeTest *t, const RxRing *r, unsigned idx,
                  uint8_t *wb)
{
    qtest_memread(t->qts, r->ring + idx * DESC_SIZE, wb, DESC_SIZE);
    return ldl_le_p(wb + 8) & IXGBE_RXD_STAT_DD;
}

/* Descriptor idx written back, as guest memory shows it */
bool rx_dd(IxgbeTest *t, const RxRing *r, unsigned idx)
{
    uint8_t wb[DESC_SIZE];

    return rx_desc_done(t, r, idx, wb);
}

/*
 * Wait until the device completes the next descriptor of one of the rings;
 * return that ring's index (and the write-back in wb), or -1 on timeout.
 */
int rx_wait_any(IxgbeTest *t, RxRing *rings, unsigned nrings,
                uint8_t *wb)
{
    gint64 end = g_get_monotonic_time() + WAIT_US;

    do {
        for (unsigned i = 0; i < nrings; i++) {
            if (rings[i].next < rings[i].ndesc &&
                rx_desc_done(t, &rings[i], rings[i].next, wb)) {
                rings[i].next++;
                return i;
            }
        }
        g_usleep(1000);
    } while (g_get_monotonic_time() < end);
    return -1;
}

void rx_wait(IxgbeTest *t, RxRing *r, uint8_t *wb)
{
    g_assert_cmpint(rx_wait_any(t, r, 1, wb), ==, 0);
}

uint32_t rx_wb_status(const uint8_t *wb)
{
    return ldl_le_p(wb + 8);
}

uint32_t rx_wb_hash(const uint8_t *wb)
{
    return ldl_le_p(wb + 4);
}

uint32_t rx_wb_rss_type(const uint8_t *wb)
{
    return ldl_le_p(wb) & 0xf;
}

uint32_t rx_wb_length(const uint8_t *wb)
{
    return lduw_le_p(wb + 12);
}

void rx_check_data(IxgbeTest *t, const RxRing *r, unsigned idx,
                   const uint8_t *data, size_t len)
{
    g_autofree uint8_t *got = g_malloc(len);

    qtest_memread(t->qts, r->bufs + idx * RX_BUF_SIZE, got, len);
    g_assert_cmpmem(got, len, data, len);
}

/* ------------------------------------------------------------------ */
/* Migration through a file                                            */
/* ------------------------------------------------------------------ */

void migrate_wait(QTestState *qts, const char *want)
{
    for (int i = 0; i < 3000; i++) {
        QDict *rsp = qtest_qmp_assert_success_ref(qts,
                                                  "{'execute': "
                                                  "'query-migrate'}");
        const char *st = qdict_haskey(rsp, "status") ?
                         qdict_get_str(rsp, "status") : "none";
        bool done = !strcmp(st, want);
        bool failed = !strcmp(st, "failed");

        if (failed && !done && qdict_haskey(rsp, "error-desc")) {
            g_test_message("migration failed: %s",
                           qdict_get_str(rsp, "error-desc"));
        }
        qobject_unref(rsp);
        if (done) {
            return;
        }
        g_assert_false(failed);
        g_usleep(10 * 1000);
    }
    g_assert_not_reached();
}

/* Stop the source and save its state to a file; returns the file's path */
char *save_to_file(IxgbeTest *t)
{
    char *path = NULL;
    int fd = g_file_open_tmp("ixgbe-mig-XXXXXX", &path, NULL);
    g_autofree char *uri = g_strdup_printf("file:%s", path);

    g_assert_cmpint(fd, >=, 0);
    close(fd);
    qtest_qmp_assert_success(t->qts, "{'execute': 'stop'}");
    qtest_qmp_assert_success(t->qts, "{'execute': 'migrate', 'arguments': "
                             "{'uri': %s}}", uri);
    migrate_wait(t->qts, "completed");
    return path;
}

/* Start a destination like the source and load the file into it */
bool load_from_file(IxgbeTest *dst, const char *path)
{
    return load_from_file_boot(dst, path, false);
}

/* The same for a source booted with ixgbe_test_boot(..., on_port, "") */
bool load_from_file_boot(IxgbeTest *dst, const char *path, bool on_port)
{
    g_autofree char *uri = g_strdup_printf("file:%s", path);
    bool ok;

    ixgbe_test_boot(dst, on_port, "-incoming defer");
    qtest_qmp_assert_success(dst->qts,
                             "{'execute': 'migrate-incoming', 'arguments': "
                             "{'uri': %s, 'exit-on-error': false}}", uri);
    for (;;) {
        QDict *rsp = qtest_qmp_assert_success_ref(dst->qts,
                                                  "{'execute': "
                                                  "'query-migrate'}");
        const char *st = qdict_haskey(rsp, "status") ?
                         qdict_get_str(rsp, "status") : "none";

        ok = !strcmp(st, "completed");
        if (ok || !strcmp(st, "failed")) {
            qobject_unref(rsp);
            break;
        }
        qobject_unref(rsp);
        g_usleep(10 * 1000);
    }
    return ok;
}

/* Replace the only occurrence of a big-endian pattern in the stream */
void patch_stream(const char *path, const uint8_t *pat, size_t len,
                         const uint8_t *with)
{
    g_autofree char *data = NULL;
    size_t size;
    char *hit, *again;

    g_assert_true(g_file_get_contents(path, &data, &size, NULL));
    hit = memmem(data, size, pat, len);
    g_assert_nonnull(hit);
    again = memmem(hit + 1, size - (hit + 1 - data), pat, len);
    g_assert_null(again);
    memcpy(hit, with, len);
    g_assert_true(g_file_set_contents(path, data, size, NULL));
}

/* ------------------------------------------------------------------ */
/* PCI Express native hot-plug, as the OS's hot-plug driver does it    */
/* ------------------------------------------------------------------ */

void wait_device_deleted(QTestState *qts, const char *id)
{
    for (;;) {
        QDict *resp = qtest_qmp_eventwait_ref(qts, "DEVICE_DELETED");
        QDict *data = qdict_get_qdict(resp, "data");
        bool match = data && qdict_haskey(data, "device") &&
                     !strcmp(qdict_get_str(data, "device"), id);

        qobject_unref(resp);
        if (match) {
            return;
        }
    }
}

/*
 * The guest powers off the slot of t's device (behind a root port, with
 * the id "nic0") and the device goes; t no longer has one.
 */
void unplug_by_slot_power(IxgbeTest *t)
{
    uint8_t exp = qpci_find_capability(t->port, PCI_CAP_ID_EXP, 0);

    slot_power(t->port, exp, false);
    wait_device_deleted(t->qts, "nic0");
    g_free(t->dev);
    t->dev = NULL;
}

/* Act as the OS's hot-plug driver: set the slot's power and indicator */
void slot_power(QPCIDevice *port, uint8_t exp, bool on)
{
    uint16_t ctl = qpci_config_readw(port, exp + PCI_EXP_SLTCTL);

    ctl &= ~(PCI_EXP_SLTCTL_PCC | PCI_EXP_SLTCTL_PIC);
    ctl |= on ? PCI_EXP_SLTCTL_PWR_ON | PCI_EXP_SLTCTL_PWR_IND_ON
              : PCI_EXP_SLTCTL_PWR_OFF | PCI_EXP_SLTCTL_PWR_IND_OFF;
    qpci_config_writew(port, exp + PCI_EXP_SLTCTL, ctl);
}

void slot_ack_events(QPCIDevice *port, uint8_t exp)
{
    qpci_config_writew(port, exp + PCI_EXP_SLTSTA,
                       PCI_EXP_SLTSTA_ABP | PCI_EXP_SLTSTA_PDC |
                       PCI_EXP_SLTSTA_CC | PCI_EXP_SLTSTA_DLLSC);
}
