/*
 * Intel 82599 10 GbE controller: the security association tables of the
 * inline IPsec engine (datasheet 7.12, registers 8.2.3.x IPsec).
 *
 * Software reaches the tables through staging registers and an index
 * register per direction, as the datasheet describes:
 *
 *  - transmit: IPSTXKEY0..3 and IPSTXSALT stage one SA; a write of
 *    IPSTXIDX with WRITE (bit 31) stores them into the SA at SA_IDX
 *    (bits 12:3), with READ (bit 30) loads that SA back into them.
 *    IPS_TX_EN (bit 0) turns SA lookup on.
 *  - receive: IPSRXIDX selects a table in bits 2:1 (1: IP addresses,
 *    128 entries of IPSRXIPADDR0..3; 2: SPIs, IPSRXSPI and IPSRXIPIDX;
 *    3: keys, IPSRXKEY0..3, IPSRXSALT, IPSRXMOD) and an entry in bits
 *    12:3, with WRITE and READ as for transmit and IPS_RX_EN in bit 0.
 *
 * WRITE and READ clear themselves.  The registers keep the values as
 * written (the driver stores keys and salts byte-swapped, SPIs and
 * addresses in network order read as little endian words); the
 * datapath, not the tables, decides what they mean.
 *
 * Bad programming is reported (LOG_GUEST_ERROR) and ignored: an IP table
 * entry beyond 127, the reserved table 0, READ and WRITE together.
 *
 * The tables are kept for the driver, reset with the device, and
 * migrated while any entry is set.
 *
 * The datapath (datasheet 7.12.4, as the Linux driver uses it): ESP in
 * transport mode with AES-128-GCM (RFC 4106), or AES-128-GMAC when the
 * SA does not encrypt (RFC 4543), through QEMU's crypto layer.
 *
 *  - transmit: a data descriptor with POPTS.IPSEC, its context naming
 *    the TX SA (SA_IDX, bits 9:0 of the second word) and the trailer
 *    length (IPS_ESP_LEN, bits 8:0 of TUCMD).  Software leaves the ESP
 *    header (SPI, sequence number), the 8-byte IV, the payload, the
 *    padding, pad length and next header, and 16 bytes for the ICV at
 *    the end.  The engine computes the inner TCP/UDP checksum (TXSM: from
 *    the context's IPLEN to the trailer), encrypts from after the IV to
 *    the ICV with nonce = salt || IV and AAD = SPI || sequence number, and
 *    writes the ICV.  A packet the engine cannot process (TSO, AH, no
 *    ESP header where the IP header says, too short for one, the engine
 *    disabled) is dropped and logged: never sent in the clear.
 *  - receive: an untagged IPv4 (without options or fragmentation) or
 *    IPv6 (ESP the next header) frame carrying ESP whose destination
 *    address is in the IP table and whose SPI an SA with VALID names, for
 *    that IP entry and family, is decrypted in place and its ICV
 *    checked: SECP and the packet type IPSEC_ESP in the descriptor, the
 *    error field (bits 28:27) 3 when the ICV does not match (the frame
 *    then stays as received), 2 when the frame is too short for ESP with
 *    a 16-byte ICV, 1 when the SA is for AH.  Any other frame passes
 *    untouched without SECP.  The ESP header, IV, trailer and ICV stay in
 *    the frame, as the driver's ixgbe_ipsec_rx expects.
 *
 * The 82599 counts no IPsec packets: frames sent count in GPTC as any.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/log.h"
#include "qemu/iov.h"
#include "qapi/error.h"
#include "crypto/aead.h"
#include "net/net.h"
#include "net/eth.h"
#include "net/checksum.h"
#include "hw/pci/pci_device.h"
#include "ixgbe_ipsec.h"
#include "trace.h"

#define IXGBE_IPSTXIDX          0x08900
#define IXGBE_IPSTXSALT         0x08904
#define IXGBE_IPSTXKEY(i)       (0x08908 + (i) * 4)
#define IXGBE_IPSRXIPADDR(i)    (0x08E04 + (i) * 4)
#define IXGBE_IPSRXSPI          0x08E14
#define IXGBE_IPSRXIPIDX        0x08E18
#define IXGBE_IPSRXKEY(i)       (0x08E1C + (i) * 4)
#define IXGBE_IPSRXSALT         0x08E2C
#define IXGBE_IPSRXMOD          0x08E30

#define IXGBE_IPSRXIDX_TBL_SHIFT 1
#define IXGBE_IPSRXIDX_TBL_MASK (3u << IXGBE_IPSRXIDX_TBL_SHIFT)
#define IXGBE_IPSIDX_IDX_SHIFT  3
#define IXGBE_IPSIDX_IDX_MASK   (0x3FFu << IXGBE_IPSIDX_IDX_SHIFT)
#define IXGBE_IPSIDX_READ       (1u << 30)
#define IXGBE_IPSIDX_WRITE      (1u << 31)

enum {
    IXGBE_IPSRX_TBL_IP = 1,
    IXGBE_IPSRX_TBL_SPI = 2,
    IXGBE_IPSRX_TBL_KEY = 3,
};

/* IPSRXMOD: VALID, PROTO (ESP), DECRYPT, IPV6 */
#define IXGBE_IPSRXMOD_MASK     0x0000001Du
#define IXGBE_RXMOD_VALID       (1u << 0)
#define IXGBE_RXMOD_PROTO_ESP   (1u << 2)
#define IXGBE_RXMOD_DECRYPT     (1u << 3)
#define IXGBE_RXMOD_IPV6        (1u << 4)
#define IXGBE_IPSRXIPIDX_MASK   0x0000007Fu

static unsigned ixgbe_ipsec_idx(uint32_t val)
{
    return (val & IXGBE_IPSIDX_IDX_MASK) >> IXGBE_IPSIDX_IDX_SHIFT;
}

/* The operation asked for: 1 write, -1 read, 0 none (or both: refused) */
static int ixgbe_ipsec_op(uint32_t val, const char *reg)
{
    bool rd = val & IXGBE_IPSIDX_READ, wr = val & IXGBE_IPSIDX_WRITE;

    if (rd && wr) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: %s 0x%08" PRIx32
                      " asks for READ and WRITE at once; ignored\n",
                      reg, val);
        return 0;
    }
    return wr ? 1 : rd ? -1 : 0;
}

static void ixgbe_ipsec_copy(IxgbeCore *core, uint32_t *entry, hwaddr reg,
                             unsigned n, bool to_table)
{
    for (unsigned i = 0; i < n; i++) {
        if (to_table) {
            entry[i] = ixgbe_get(core, reg + i * 4);
        } else {
            *ixgbe_reg(core, reg + i * 4) = entry[i];
        }
    }
}

static void ixgbe_write_ipstxidx(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    int op = ixgbe_ipsec_op(val, "IPSTXIDX");
    unsigned idx = ixgbe_ipsec_idx(val);
    IxgbeIpsecTxSa *sa = &core->ipsec->tx[idx];

    *ixgbe_reg(core, addr) = val & ~(IXGBE_IPSIDX_READ | IXGBE_IPSIDX_WRITE);
    if (!op) {
        return;
    }
    ixgbe_ipsec_copy(core, sa->key, IXGBE_IPSTXKEY(0), 4, op > 0);
    ixgbe_ipsec_copy(core, &sa->salt, IXGBE_IPSTXSALT, 1, op > 0);
    trace_ixgbe_ipsec_tx_sa(op > 0 ? "write" : "read", idx, sa->salt);
}

static void ixgbe_write_ipsrxidx(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    int op = ixgbe_ipsec_op(val, "IPSRXIDX");
    unsigned idx = ixgbe_ipsec_idx(val);
    unsigned tbl = (val & IXGBE_IPSRXIDX_TBL_MASK) >> IXGBE_IPSRXIDX_TBL_SHIFT;
    IxgbeIpsec *ips = core->ipsec;
    IxgbeIpsecRxSa *sa = &ips->rx[idx];
    bool store = op > 0;

    *ixgbe_reg(core, addr) = val & ~(IXGBE_IPSIDX_READ | IXGBE_IPSIDX_WRITE);
    if (!op) {
        return;
    }
    switch (tbl) {
    case IXGBE_IPSRX_TBL_IP:
        if (idx >= IXGBE_IPSEC_RX_IP_COUNT) {
            qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: IPSRXIDX 0x%08" PRIx32
                          ": IP table entry %u out of range (%u entries);"
                          " ignored\n", val, idx, IXGBE_IPSEC_RX_IP_COUNT);
            return;
        }
        ixgbe_ipsec_copy(core, ips->rx_ip[idx], IXGBE_IPSRXIPADDR(0), 4,
                         store);
        trace_ixgbe_ipsec_rx_ip(store ? "write" : "read", idx,
                                ips->rx_ip[idx][0], ips->rx_ip[idx][1],
                                ips->rx_ip[idx][2], ips->rx_ip[idx][3]);
        break;
    case IXGBE_IPSRX_TBL_SPI:
        ixgbe_ipsec_copy(core, &sa->spi, IXGBE_IPSRXSPI, 1, store);
        ixgbe_ipsec_copy(core, &sa->ip_idx, IXGBE_IPSRXIPIDX, 1, store);
        trace_ixgbe_ipsec_rx_spi(store ? "write" : "read", idx, sa->spi,
                                 sa->ip_idx);
        break;
    case IXGBE_IPSRX_TBL_KEY:
        ixgbe_ipsec_copy(core, sa->key, IXGBE_IPSRXKEY(0), 4, store);
        ixgbe_ipsec_copy(core, &sa->salt, IXGBE_IPSRXSALT, 1, store);
        ixgbe_ipsec_copy(core, &sa->mode, IXGBE_IPSRXMOD, 1, store);
        trace_ixgbe_ipsec_rx_key(store ? "write" : "read", idx, sa->salt,
                                 sa->mode);
        break;
    default:
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: IPSRXIDX 0x%08" PRIx32
                      ": reserved table 0; ignored\n", val);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* The ESP datapath                                                    */
/* ------------------------------------------------------------------ */

#define IXGBE_SECCTRL_DIS       0x00000003u /* SECxX_DIS, xX_DIS */

/* The transmit context descriptor's fields for IPsec */
#define IXGBE_TXCTX_SA_IDX_MASK     0x000003FFu     /* second word */
#define IXGBE_TXCTX_IPLEN_MASK      0x000001FFu     /* first word */
#define IXGBE_TXCTX_MACLEN_SHIFT    9
#define IXGBE_TXCTX_MACLEN_MASK     0x7Fu
#define IXGBE_TXCTX_ESP_LEN_MASK    0x000001FFu     /* TUCMD word */
#define IXGBE_TXCTX_TUCMD_IPV4      (1u << 10)
#define IXGBE_TXCTX_L4T_TCP         (1u << 11)
#define IXGBE_TXCTX_L4T_RSV         (3u << 11)
#define IXGBE_TXCTX_IPSEC_ESP       (1u << 13)
#define IXGBE_TXCTX_IPSEC_ENCRYPT   (1u << 14)

/* Receive descriptor: status, error field, packet type */
#define IXGBE_RXD_STAT_SECP         (1u << 17)
#define IXGBE_RXD_ERR_IPSEC_SHIFT   27
#define IXGBE_RXD_ERR_IPSEC_PROTO   1u
#define IXGBE_RXD_ERR_IPSEC_LENGTH  2u
#define IXGBE_RXD_ERR_IPSEC_AUTH    3u
#define IXGBE_RXD_PKTTYPE_IPSEC_ESP (1u << 8)

#define IXGBE_ESP_HDR       8       /* SPI, sequence number */
#define IXGBE_ESP_IV        8
#define IXGBE_ESP_ICV       16
#define IXGBE_ESP_KEY       16
#define IXGBE_ESP_SALT      4
#define IXGBE_ESP_BUF       (64 * KiB)

/*
 * The key and salt as bytes, from the registers as the driver writes
 * them: IPSxXKEY(3 - i) holds key bytes 4i..4i+3 big endian, the salt
 * register the salt's bytes big endian.
 */
static void ixgbe_esp_key(const uint32_t *key, uint32_t salt,
                          uint8_t *kb, uint8_t *nonce)
{
    for (unsigned i = 0; i < 4; i++) {
        stl_be_p(kb + 4 * i, key[3 - i]);
    }
    stl_be_p(nonce, salt);
}

/*
 * AES-128-GCM over the ESP packet esp of len bytes (header, IV, the rest,
 * ICV): encrypt (RFC 4106) or, without encryption, authenticate all of
 * it before the ICV (RFC 4543).  Encrypting writes the ICV; decrypting
 * checks it and returns -EBADMSG when it does not match.
 */
static int ixgbe_esp_crypt(const uint32_t *key, uint32_t salt, bool encrypt,
                           bool enc, uint8_t *esp, size_t len)
{
    uint8_t kb[IXGBE_ESP_KEY], nonce[IXGBE_ESP_SALT + IXGBE_ESP_IV];
    size_t text = len - IXGBE_ESP_HDR - IXGBE_ESP_IV - IXGBE_ESP_ICV;
    uint8_t *payload = esp + IXGBE_ESP_HDR + IXGBE_ESP_IV;
    uint8_t *icv = esp + len - IXGBE_ESP_ICV;
    size_t naad = enc ? IXGBE_ESP_HDR : len - IXGBE_ESP_ICV;
    g_autoptr(QCryptoAEAD) aead = NULL;
    Error *err = NULL;
    int ret;

    ixgbe_esp_key(key, salt, kb, nonce);
    memcpy(nonce + IXGBE_ESP_SALT, esp + IXGBE_ESP_HDR, IXGBE_ESP_IV);
    aead = qcrypto_aead_new(QCRYPTO_CIPHER_ALGO_AES_128,
                            QCRYPTO_AEAD_MODE_GCM, kb, sizeof(kb), &err);
    if (aead) {
        if (encrypt) {
            ret = qcrypto_aead_encrypt(aead, nonce, sizeof(nonce), esp, naad,
                                       payload, payload, enc ? text : 0,
                                       icv, IXGBE_ESP_ICV, &err);
        } else {
            ret = qcrypto_aead_decrypt(aead, nonce, sizeof(nonce), esp, naad,
                                       payload, payload, enc ? text : 0,
                                       icv, IXGBE_ESP_ICV, &err);
        }
    } else {
        ret = -1;
    }
    if (ret == -1) {
        error_report_err(err);
    }
    return ret;
}

static bool ixgbe_esp_tx_drop(unsigned q, uint32_t sa, const char *why)
{
    qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: txq %u: IPsec offload with TX SA "
                  "%u: %s, frame dropped\n", q, sa, why);
    trace_ixgbe_ipsec_tx_drop(q, sa, why);
    return false;
}

bool ixgbe_ipsec_tx(IxgbeCore *core, unsigned q, const IxgbeTxContext *ctx,
                    uint32_t cmd, uint32_t olinfo, uint8_t *buf, size_t len,
                    const uint16_t *vlan, size_t size, size_t *out_len)
{
    uint32_t tucmd = ctx->type_tucmd_mlhl;
    unsigned idx = ctx->seqnum_seed & IXGBE_TXCTX_SA_IDX_MASK;
    size_t l3 = (ctx->vlan_macip_lens >> IXGBE_TXCTX_MACLEN_SHIFT) &
                IXGBE_TXCTX_MACLEN_MASK;
    size_t trailer = tucmd & IXGBE_TXCTX_ESP_LEN_MASK;
    bool ip4 = tucmd & IXGBE_TXCTX_TUCMD_IPV4;
    const IxgbeIpsecTxSa *sa = &core->ipsec->tx[idx];
    size_t esp, end, l4;
    uint8_t proto;

    if ((ixgbe_get(core, IXGBE_SECTXCTRL) & IXGBE_SECCTRL_DIS) ||
        !(ixgbe_get(core, IXGBE_IPSTXIDX) & IXGBE_IPSIDX_EN)) {
        return ixgbe_esp_tx_drop(q, idx, "the engine is disabled");
    }
    if (cmd & IXGBE_TXD_CMD_TSE) {
        return ixgbe_esp_tx_drop(q, idx, "TSO with ESP is not modelled");
    }
    if (!(tucmd & IXGBE_TXCTX_IPSEC_ESP)) {
        return ixgbe_esp_tx_drop(q, idx, "AH is not modelled");
    }
    /* The IP header where MACLEN says, of the family TUCMD.IPV4 says */
    if (len < l3 + (ip4 ? 20 : 40) ||
        (buf[l3] >> 4) != (ip4 ? 4 : 6)) {
        return ixgbe_esp_tx_drop(q, idx, "no IP header at MACLEN");
    }
    if (ip4) {
        esp = l3 + (buf[l3] & 0xF) * 4;
        end = l3 + lduw_be_p(buf + l3 + 2);
        proto = buf[l3 + 9];
    } else {
        esp = l3 + 40;
        end = esp + lduw_be_p(buf + l3 + 4);
        proto = buf[l3 + 6];
    }
    if (proto != IPPROTO_ESP) {
        return ixgbe_esp_tx_drop(q, idx, "no ESP header after the IP header");
    }
    if (end > len || esp + IXGBE_ESP_HDR + IXGBE_ESP_IV + IXGBE_ESP_ICV > end) {
        return ixgbe_esp_tx_drop(q, idx, "packet too short for ESP");
    }

    /* The inner checksum first: from IPLEN to the ESP trailer */
    if (olinfo & IXGBE_TXD_POPTS_TXSM) {
        bool tcp = (tucmd & IXGBE_TXCTX_L4T_RSV) == IXGBE_TXCTX_L4T_TCP;
        size_t cso;

        if ((tucmd & IXGBE_TXCTX_L4T_RSV) & ~IXGBE_TXCTX_L4T_TCP) {
            return ixgbe_esp_tx_drop(q, idx, "SCTP checksum with ESP");
        }
        l4 = l3 + (ctx->vlan_macip_lens & IXGBE_TXCTX_IPLEN_MASK);
        cso = l4 + (tcp ? 16 : 6);
        if (l4 < esp + IXGBE_ESP_HDR + IXGBE_ESP_IV || trailer > end ||
            cso + 2 > end - trailer) {
            return ixgbe_esp_tx_drop(q, idx, "checksum outside the payload");
        }
        stw_be_p(buf + cso, net_checksum_finish_nozero(
                     net_checksum_add(end - trailer - l4, buf + l4)));
    }
    if (ip4 && (olinfo & IXGBE_TXD_POPTS_IXSM)) {
        stw_be_p(buf + l3 + 10, 0);
        stw_be_p(buf + l3 + 10, net_checksum_finish(
                     net_checksum_add((buf[l3] & 0xF) * 4, buf + l3)));
    }
    if (ixgbe_esp_crypt(sa->key, sa->salt, true,
                        tucmd & IXGBE_TXCTX_IPSEC_ENCRYPT, buf + esp,
                        end - esp) < 0) {
        return ixgbe_esp_tx_drop(q, idx, "the crypto layer failed");
    }
    trace_ixgbe_ipsec_tx(q, idx, end - esp);

    *out_len = len;
    if (vlan) {
        if (len + 4 > size) {
            return ixgbe_esp_tx_drop(q, idx, "no room for the VLAN tag");
        }
        memmove(buf + 2 * ETH_ALEN + 4, buf + 2 * ETH_ALEN,
                len - 2 * ETH_ALEN);
        stw_be_p(buf + 2 * ETH_ALEN, ixgbe_get(core, IXGBE_VLNCTRL));
        stw_be_p(buf + 2 * ETH_ALEN + 2, *vlan);
        *out_len = len + 4;
    }
    return true;
}

/* The RX SA for SPI spi (as the SPI register holds it) to address daddr */
static int ixgbe_esp_rx_sa(IxgbeIpsec *ips, uint32_t spi, const uint8_t *daddr,
                           bool ip6)
{
    uint32_t want[4] = { 0 };

    if (ip6) {
        for (unsigned i = 0; i < 4; i++) {
            want[i] = ldl_le_p(daddr + 4 * i);
        }
    } else {
        want[3] = ldl_le_p(daddr);
    }
    for (unsigned i = 0; i < IXGBE_IPSEC_SA_COUNT; i++) {
        const IxgbeIpsecRxSa *sa = &ips->rx[i];

        /* ip_idx from a migration stream is not masked: checked here */
        if (sa->spi == spi && (sa->mode & IXGBE_RXMOD_VALID) &&
            !(sa->mode & IXGBE_RXMOD_IPV6) == !ip6 &&
            sa->ip_idx < IXGBE_IPSEC_RX_IP_COUNT &&
            !memcmp(ips->rx_ip[sa->ip_idx], want, sizeof(want))) {
            return i;
        }
    }
    return -1;
}

uint32_t ixgbe_ipsec_rx_frame(IxgbeCore *core, const uint8_t *hdr,
                              size_t hdr_len, const struct iovec **iov,
                              int *iovcnt, size_t len, uint32_t *pkt_type)
{
    IxgbeIpsec *ips = core->ipsec;
    const IxgbeIpsecRxSa *sa;
    size_t l3 = ETH_HLEN, esp, end;
    const uint8_t *daddr;
    uint16_t ethertype;
    uint32_t err = 0;
    bool ip6;
    int idx;

    if ((ixgbe_get(core, IXGBE_SECRXCTRL) & IXGBE_SECCTRL_DIS) ||
        hdr_len < l3 + 40 + IXGBE_ESP_HDR) {
        return 0;
    }
    ethertype = lduw_be_p(hdr + 12);
    if (ethertype == ETH_P_IP) {
        /* No options, not a fragment */
        if (hdr[l3] != 0x45 || hdr[l3 + 9] != IPPROTO_ESP ||
            (lduw_be_p(hdr + l3 + 6) & 0x3FFF)) {
            return 0;
        }
        ip6 = false;
        esp = l3 + 20;
        end = l3 + lduw_be_p(hdr + l3 + 2);
        daddr = hdr + l3 + 16;
    } else if (ethertype == ETH_P_IPV6) {
        if ((hdr[l3] >> 4) != 6 || hdr[l3 + 6] != IPPROTO_ESP) {
            return 0;
        }
        ip6 = true;
        esp = l3 + 40;
        end = esp + lduw_be_p(hdr + l3 + 4);
        daddr = hdr + l3 + 24;
    } else {
        return 0;
    }
    idx = ixgbe_esp_rx_sa(ips, ldl_le_p(hdr + esp), daddr, ip6);
    if (idx < 0) {
        trace_ixgbe_ipsec_rx(-1, "no SA");
        return 0;
    }
    sa = &ips->rx[idx];
    *pkt_type |= IXGBE_RXD_PKTTYPE_IPSEC_ESP;
    if (!(sa->mode & IXGBE_RXMOD_PROTO_ESP)) {
        err = IXGBE_RXD_ERR_IPSEC_PROTO;
    } else if (end > len ||
               esp + IXGBE_ESP_HDR + IXGBE_ESP_IV + IXGBE_ESP_ICV > end) {
        err = IXGBE_RXD_ERR_IPSEC_LENGTH;
    } else {
        if (!ips->rx_buf) {
            ips->rx_buf = g_malloc(IXGBE_ESP_BUF);
        }
        if (len > IXGBE_ESP_BUF) {
            err = IXGBE_RXD_ERR_IPSEC_LENGTH;
        } else {
            iov_to_buf(*iov, *iovcnt, 0, ips->rx_buf, len);
            switch (ixgbe_esp_crypt(sa->key, sa->salt, false,
                                    sa->mode & IXGBE_RXMOD_DECRYPT,
                                    ips->rx_buf + esp, end - esp)) {
            case 0:
                ips->rx_iov.iov_base = ips->rx_buf;
                ips->rx_iov.iov_len = len;
                *iov = &ips->rx_iov;
                *iovcnt = 1;
                break;
            default:
                /* The frame goes up as it came */
                err = IXGBE_RXD_ERR_IPSEC_AUTH;
                break;
            }
        }
    }
    trace_ixgbe_ipsec_rx(idx, err ? "error" : "decrypted");
    return IXGBE_RXD_STAT_SECP | err << IXGBE_RXD_ERR_IPSEC_SHIFT;
}

/* The tables come first in IxgbeIpsec: state ends at the working memory */
#define IXGBE_IPSEC_STATE_SIZE  offsetof(IxgbeIpsec, rx_buf)

bool ixgbe_ipsec_migration_needed(IxgbeCore *core)
{
    return !buffer_is_zero(core->ipsec, IXGBE_IPSEC_STATE_SIZE);
}

static void ixgbe_ipsec_realize(IxgbeCore *core)
{
    core->ipsec = g_new0(IxgbeIpsec, 1);
}

static void ixgbe_ipsec_unrealize(IxgbeCore *core)
{
    if (core->ipsec) {
        g_free(core->ipsec->rx_buf);
    }
    g_clear_pointer(&core->ipsec, g_free);
}

static void ixgbe_ipsec_reset(IxgbeCore *core)
{
    memset(core->ipsec, 0, IXGBE_IPSEC_STATE_SIZE);
}

static const IxgbeRegDesc ixgbe_ipsec_regs[] = {
    REG("IPSTXIDX", IXGBE_IPSTXIDX, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_ipstxidx),
    PLAIN("IPSTXSALT", IXGBE_IPSTXSALT, 1, 4, 0, ALL),
    PLAIN("IPSTXKEY", IXGBE_IPSTXKEY(0), 4, 4, 0, ALL),
    REG("IPSRXIDX", IXGBE_IPSRXIDX, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_ipsrxidx),
    PLAIN("IPSRXIPADDR", IXGBE_IPSRXIPADDR(0), 4, 4, 0, ALL),
    PLAIN("IPSRXSPI", IXGBE_IPSRXSPI, 1, 4, 0, ALL),
    PLAIN("IPSRXIPIDX", IXGBE_IPSRXIPIDX, 1, 4, 0, IXGBE_IPSRXIPIDX_MASK),
    PLAIN("IPSRXKEY", IXGBE_IPSRXKEY(0), 4, 4, 0, ALL),
    PLAIN("IPSRXSALT", IXGBE_IPSRXSALT, 1, 4, 0, ALL),
    PLAIN("IPSRXMOD", IXGBE_IPSRXMOD, 1, 4, 0, IXGBE_IPSRXMOD_MASK),
};

const IxgbePart ixgbe_ipsec_part = {
    .regs = ixgbe_ipsec_regs,
    .nregs = ARRAY_SIZE(ixgbe_ipsec_regs),
    .realize = ixgbe_ipsec_realize,
    .unrealize = ixgbe_ipsec_unrealize,
    .reset = ixgbe_ipsec_reset,
};
