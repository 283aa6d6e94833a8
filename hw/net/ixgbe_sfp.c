/*
 * Intel 82599 10 GbE controller: the port's media, the SFP+ module and
 * the I2C bus to it.
 *
 * The backplane parts (10GBASE-KR, and the KX4/KX/KR combined part) only
 * differ in the link modes AUTOC advertises.  The SFP+ part (0x10FB, the
 * X520 adapters) has a cage: the driver finds out what is in it by
 * bit-banging I2C through I2CCTL, the cage reports a module on pin SDP2
 * (ESDP, with a GPI_SDP2 interrupt when that changes) and the driver
 * switches an optic's transmitter off through SDP3 (TX_DISABLE).  The
 * module is an SFF-8472 memory on the bus at 0xA0 (the serial ID) and,
 * for optics with diagnostics, at 0xA2 (thresholds, live readings,
 * alarm flags).
 *
 * The I2C slave sees the bus as a real one would: it samples SDA on the
 * rising edge of SCL, changes its own SDA output after the falling edge,
 * and takes an SDA edge while SCL is high for a START or STOP.  The line
 * is the wired AND of the driver's DATA_OUT and the module's output.
 * What a driver does wrong on the bus (both lines changed in one write,
 * clock pulses without a START, a START or STOP in the middle of a byte,
 * a read running off the end of a page, writes to read-only bytes) is a
 * guest error; the module behaves as a real one would.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "net/net.h"
#include "ixgbe_core.h"
#include "ixgbe_sfp.h"
#include "trace.h"

#define SFP_A0          0xA0    /* serial ID page (SFF-8472 A0h) */
#define SFP_A2          0xA2    /* diagnostics page (SFF-8472 A2h) */

static const char *const ixgbe_sfp_names[IXGBE_SFP__MAX] = {
    [IXGBE_SFP_NONE] = "none",
    [IXGBE_SFP_DA] = "da",
    [IXGBE_SFP_SR] = "sr",
    [IXGBE_SFP_UNSUPPORTED] = "unsupported",
};

const char *ixgbe_sfp_type_name(IxgbeSfpType type)
{
    return type < IXGBE_SFP__MAX ? ixgbe_sfp_names[type] : "?";
}

bool ixgbe_sfp_type_parse(const char *name, IxgbeSfpType *type,
                          Error **errp)
{
    for (unsigned i = 0; i < IXGBE_SFP__MAX; i++) {
        if (!strcmp(name, ixgbe_sfp_names[i])) {
            *type = i;
            return true;
        }
    }
    error_setg(errp, "ixgbe: unknown SFP+ module type '%s'", name);
    error_append_hint(errp, "Choose none (empty cage), da (passive "
                      "direct-attach cable), sr (Intel 10GBASE-SR optic) "
                      "or unsupported (third-party 10GBASE-SR optic).\n");
    return false;
}

/* ------------------------------------------------------------------ */
/* The module's memory                                                 */
/* ------------------------------------------------------------------ */

static bool ixgbe_sfp_present(IxgbeSfp *sfp)
{
    return sfp->media == IXGBE_MEDIA_SFP && sfp->type != IXGBE_SFP_NONE;
}

static bool ixgbe_sfp_is_optic(IxgbeSfp *sfp)
{
    return sfp->type == IXGBE_SFP_SR || sfp->type == IXGBE_SFP_UNSUPPORTED;
}

/* A passive cable has no diagnostics and does not answer at 0xA2 */
static bool ixgbe_sfp_answers(IxgbeSfp *sfp, uint8_t dev)
{
    if (!ixgbe_sfp_present(sfp)) {
        return false;
    }
    return dev == SFP_A0 || (dev == SFP_A2 && ixgbe_sfp_is_optic(sfp));
}

static void put_str(uint8_t *p, const char *s, size_t len)
{
    memset(p, ' ', len);
    memcpy(p, s, MIN(strlen(s), len));
}

static void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = v >> 8;
    p[1] = v;
}

static uint8_t sum8(const uint8_t *p, size_t len)
{
    uint8_t s = 0;

    while (len--) {
        s += *p++;
    }
    return s;
}

/* SFF-8472 serial ID (A0h), bytes the driver and ethtool -m read */
enum {
    SFF_ID = 0, SFF_EXT_ID = 1, SFF_CONNECTOR = 2,
    SFF_10G_COMP = 3, SFF_1G_COMP = 6, SFF_CABLE_TECH = 8,
    SFF_ENCODING = 11, SFF_BR_NOMINAL = 12,
    SFF_LEN_OM2 = 16, SFF_LEN_OM1 = 17, SFF_LEN_COPPER = 18, SFF_LEN_OM3 = 19,
    SFF_VENDOR_NAME = 20, SFF_VENDOR_OUI = 37, SFF_VENDOR_PN = 40,
    SFF_VENDOR_REV = 56, SFF_WAVELENGTH = 60, SFF_CC_BASE = 63,
    SFF_OPTIONS = 64, SFF_VENDOR_SN = 68, SFF_DATE = 84,
    SFF_DIAG_TYPE = 92, SFF_ENH_OPTIONS = 93, SFF_8472_COMP = 94,
    SFF_CC_EXT = 95,
};

static void ixgbe_sfp_build_a0(IxgbeSfp *sfp, uint8_t *a0)
{
    static const uint8_t intel_oui[3] = { 0x00, 0x1B, 0x21 };
    /* An OUI no driver knows: the optic of an unknown third party */
    static const uint8_t other_oui[3] = { 0x00, 0x00, 0x00 };

    memset(a0, 0, IXGBE_SFP_PAGE_SIZE);
    a0[SFF_ID] = 0x03;                  /* SFP/SFP+ */
    a0[SFF_EXT_ID] = 0x04;              /* serial ID module definition */
    a0[SFF_ENCODING] = 0x06;            /* 64B/66B */
    a0[SFF_BR_NOMINAL] = 103;           /* 10.3 GBd */
    put_str(&a0[SFF_VENDOR_REV], "A", 4);
    put_str(&a0[SFF_DATE], "250101", 8);

    switch (sfp->type) {
    case IXGBE_SFP_DA:
        a0[SFF_CONNECTOR] = 0x21;       /* copper pigtail */
        a0[SFF_CABLE_TECH] = 0x04;      /* passive cable */
        a0[SFF_LEN_COPPER] = 3;         /* metres */
        put_str(&a0[SFF_VENDOR_NAME], "QEMU", 16);
        memcpy(&a0[SFF_VENDOR_OUI], other_oui, 3);
        put_str(&a0[SFF_VENDOR_PN], "QEMU-SFP-DAC-3M", 16);
        put_str(&a0[SFF_VENDOR_SN], "QDA0000000000001", 16);
        a0[SFF_WAVELENGTH] = 0x01;      /* SFF-8431 appendix E cable */
        break;
    case IXGBE_SFP_SR:
    case IXGBE_SFP_UNSUPPORTED:
        a0[SFF_CONNECTOR] = 0x07;       /* LC */
        a0[SFF_10G_COMP] = 0x10;        /* 10GBASE-SR */
        a0[SFF_LEN_OM2] = 8;            /* 80 m */
        a0[SFF_LEN_OM1] = 3;            /* 30 m */
        a0[SFF_LEN_OM3] = 30;           /* 300 m */
        put_be16(&a0[SFF_WAVELENGTH], 850);
        a0[SFF_OPTIONS + 1] = 0x1A;     /* TX_DISABLE, TX_FAULT, RX_LOS */
        a0[SFF_DIAG_TYPE] = 0x68;       /* DDM, internal, average RX */
        a0[SFF_ENH_OPTIONS] = 0xC0;     /* alarm flags, soft TX_DISABLE */
        a0[SFF_8472_COMP] = 0x05;       /* SFF-8472 rev 11.0 */
        if (sfp->type == IXGBE_SFP_SR) {
            put_str(&a0[SFF_VENDOR_NAME], "Intel Corp", 16);
            memcpy(&a0[SFF_VENDOR_OUI], intel_oui, 3);
            put_str(&a0[SFF_VENDOR_PN], "QEMU-E10GSFPSR", 16);
            put_str(&a0[SFF_VENDOR_SN], "QSR0000000000001", 16);
        } else {
            put_str(&a0[SFF_VENDOR_NAME], "QEMU OTHER", 16);
            memcpy(&a0[SFF_VENDOR_OUI], other_oui, 3);
            put_str(&a0[SFF_VENDOR_PN], "QEMU-SFP-SR", 16);
            put_str(&a0[SFF_VENDOR_SN], "QOT0000000000001", 16);
        }
        break;
    default:
        g_assert_not_reached();
    }
    a0[SFF_CC_BASE] = sum8(a0, SFF_CC_BASE);
    a0[SFF_CC_EXT] = sum8(&a0[SFF_OPTIONS], SFF_CC_EXT - SFF_OPTIONS);
}

/* SFF-8472 diagnostics (A2h) */
enum {
    DDM_THRESHOLDS = 0, DDM_CC_DMI = 95,
    DDM_TEMP = 96, DDM_VCC = 98, DDM_TX_BIAS = 100, DDM_TX_POWER = 102,
    DDM_RX_POWER = 104, DDM_STATUS = 110, DDM_ALARMS = 112,
    DDM_WARNINGS = 116, DDM_EXT_CONTROL = 118, DDM_USER = 128,
    DDM_USER_END = 247,
};

#define DDM_NVALUES 5

/*
 * Alarm high, alarm low, warning high, warning low of temperature
 * (1/256 degree C), Vcc (100 uV), TX bias (2 uA), TX and RX power
 * (0.1 uW), as a 10GBASE-SR optic sets them.
 */
static const int32_t ddm_thresholds[DDM_NVALUES][4] = {
    { 75 * 256, -5 * 256, 70 * 256, 0 },
    { 36000, 30000, 35000, 31000 },
    { 7500, 500, 6000, 1000 },
    { 10000, 1000, 7900, 1900 },
    { 10000, 100, 7900, 200 },
};

static void ixgbe_sfp_readings(IxgbeCore *core, int32_t *v)
{
    IxgbeSfp *sfp = &core->sfp;
    bool tx_on = !(ixgbe_get(core, IXGBE_ESDP) & IXGBE_ESDP_SDP3) &&
                 !(sfp->a2_user[DDM_STATUS] & 0x40);
    bool rx_light = !qemu_get_queue(core->nic)->link_down;

    v[0] = 35 * 256 + 128;              /* 35.5 C */
    v[1] = 33000;                       /* 3.3 V */
    v[2] = tx_on ? 3000 : 0;            /* 6 mA */
    v[3] = tx_on ? 6000 : 0;            /* 0.6 mW, -2.2 dBm */
    v[4] = rx_light ? 5000 : 0;         /* 0.5 mW, -3.0 dBm */
}

static void ixgbe_sfp_build_a2(IxgbeCore *core, uint8_t *a2)
{
    IxgbeSfp *sfp = &core->sfp;
    int32_t v[DDM_NVALUES];
    uint8_t status = 0;
    uint16_t alarms = 0, warnings = 0;

    memset(a2, 0, IXGBE_SFP_PAGE_SIZE);
    for (unsigned i = 0; i < DDM_NVALUES; i++) {
        for (unsigned j = 0; j < 4; j++) {
            put_be16(&a2[DDM_THRESHOLDS + i * 8 + j * 2],
                     ddm_thresholds[i][j]);
        }
    }
    a2[DDM_CC_DMI] = sum8(a2, DDM_CC_DMI);

    ixgbe_sfp_readings(core, v);
    for (unsigned i = 0; i < DDM_NVALUES; i++) {
        const int32_t *t = ddm_thresholds[i];
        unsigned bit = 15 - i * 2;      /* high flag; the low one follows */

        put_be16(&a2[DDM_TEMP + i * 2], v[i]);
        alarms |= (v[i] > t[0]) << bit | (v[i] < t[1]) << (bit - 1);
        warnings |= (v[i] > t[2]) << bit | (v[i] < t[3]) << (bit - 1);
    }
    put_be16(&a2[DDM_ALARMS], alarms);
    put_be16(&a2[DDM_WARNINGS], warnings);

    if (ixgbe_get(core, IXGBE_ESDP) & IXGBE_ESDP_SDP3) {
        status |= 0x80;                 /* TX_DISABLE pin */
    }
    status |= sfp->a2_user[DDM_STATUS] & 0x48;  /* soft TX_DISABLE, RS */
    if (!v[4]) {
        status |= 0x02;                 /* RX_LOS */
    }
    a2[DDM_STATUS] = status;            /* bit 0 clear: data ready */
    a2[DDM_EXT_CONTROL] = sfp->a2_user[DDM_EXT_CONTROL];
    memcpy(&a2[DDM_USER], &sfp->a2_user[DDM_USER],
           DDM_USER_END + 1 - DDM_USER);
}

uint8_t ixgbe_sfp_byte(IxgbeCore *core, uint8_t dev, uint8_t offset)
{
    uint8_t page[IXGBE_SFP_PAGE_SIZE];

    if (!ixgbe_sfp_answers(&core->sfp, dev)) {
        return 0xFF;
    }
    if (dev == SFP_A0) {
        ixgbe_sfp_build_a0(&core->sfp, page);
    } else {
        ixgbe_sfp_build_a2(core, page);
    }
    return page[offset];
}

static bool ixgbe_sfp_writable(uint8_t dev, uint8_t offset)
{
    return dev == SFP_A2 &&
           (offset == DDM_STATUS || offset == DDM_EXT_CONTROL ||
            (offset >= DDM_USER && offset <= DDM_USER_END));
}

static void ixgbe_sfp_store(IxgbeCore *core, uint8_t offset, uint8_t val)
{
    IxgbeSfp *sfp = &core->sfp;

    trace_ixgbe_sfp_i2c_write(sfp->dev, offset, val);
    if (!ixgbe_sfp_writable(sfp->dev, offset)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C write of 0x%02x to read-only SFP+ byte "
                      "0x%02x of page 0x%02x ignored\n",
                      val, offset, sfp->dev);
        return;
    }
    sfp->a2_user[offset] = val;
}

/* ------------------------------------------------------------------ */
/* The I2C slave                                                       */
/* ------------------------------------------------------------------ */

static void ixgbe_i2c_idle(IxgbeSfp *sfp)
{
    sfp->state = IXGBE_I2C_IDLE;
    sfp->nbits = 0;
    sfp->shift = 0;
    sfp->ack_phase = false;
    sfp->master_ack = false;
    sfp->sda_out = true;
}

static bool ixgbe_i2c_mid_byte(IxgbeSfp *sfp)
{
    switch (sfp->state) {
    case IXGBE_I2C_ADDR:
    case IXGBE_I2C_WRITE:
        /* A repeated START or a STOP follows one clock with SDA high */
        return sfp->ack_phase || sfp->nbits > 1;
    case IXGBE_I2C_READ:
        return true;
    default:
        return false;
    }
}

static void ixgbe_i2c_start(IxgbeSfp *sfp)
{
    if (ixgbe_i2c_mid_byte(sfp)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C START after %u bits of a byte: the "
                      "transfer is abandoned\n", sfp->nbits);
    }
    trace_ixgbe_sfp_i2c_start();
    ixgbe_i2c_idle(sfp);
    sfp->state = IXGBE_I2C_ADDR;
    sfp->wrapped_logged = false;
}

static void ixgbe_i2c_stop(IxgbeSfp *sfp)
{
    if (ixgbe_i2c_mid_byte(sfp)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C STOP after %u bits of a byte: the "
                      "transfer is abandoned\n", sfp->nbits);
    }
    trace_ixgbe_sfp_i2c_stop();
    ixgbe_i2c_idle(sfp);
    sfp->idle_clock_logged = false;
}

/* The module puts the next byte of a read on the bus */
static void ixgbe_i2c_load(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    sfp->shift = ixgbe_sfp_byte(core, sfp->dev, sfp->offset);
    trace_ixgbe_sfp_i2c_read(sfp->dev, sfp->offset, sfp->shift);
    sfp->nbits = 0;
    sfp->sda_out = sfp->shift & 0x80;
}

static void ixgbe_i2c_scl_rise(IxgbeSfp *sfp, bool sda)
{
    switch (sfp->state) {
    case IXGBE_I2C_ADDR:
    case IXGBE_I2C_WRITE:
        if (!sfp->ack_phase) {
            sfp->shift = sfp->shift << 1 | sda;
            sfp->nbits++;
        }
        break;
    case IXGBE_I2C_READ:
        if (sfp->ack_phase) {
            sfp->master_ack = !sda;
        } else {
            sfp->nbits++;
        }
        break;
    default:
        break;
    }
}

static void ixgbe_i2c_scl_fall(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    switch (sfp->state) {
    case IXGBE_I2C_IDLE:
        if (!sfp->idle_clock_logged) {
            sfp->idle_clock_logged = true;
            qemu_log_mask(LOG_GUEST_ERROR,
                          "ixgbe: I2C clock pulses without a START "
                          "condition are ignored\n");
        }
        break;
    case IXGBE_I2C_ADDR:
        if (sfp->ack_phase) {
            bool acked = !sfp->sda_out;

            sfp->ack_phase = false;
            sfp->nbits = 0;
            sfp->sda_out = true;
            if (!acked) {
                sfp->state = IXGBE_I2C_IGNORE;
            } else if (sfp->shift & 1) {
                sfp->state = IXGBE_I2C_READ;
                ixgbe_i2c_load(core);
            } else {
                sfp->state = IXGBE_I2C_WRITE;
                sfp->have_offset = false;
            }
        } else if (sfp->nbits == 8) {
            uint8_t dev = sfp->shift & 0xFE;
            bool ack = ixgbe_sfp_answers(sfp, dev);

            trace_ixgbe_sfp_i2c_addr(sfp->shift, ack);
            if (ack) {
                sfp->dev = dev;
            }
            sfp->sda_out = !ack;
            sfp->ack_phase = true;
        }
        break;
    case IXGBE_I2C_WRITE:
        if (sfp->ack_phase) {
            sfp->ack_phase = false;
            sfp->nbits = 0;
            sfp->sda_out = true;
        } else if (sfp->nbits == 8) {
            if (!sfp->have_offset) {
                sfp->offset = sfp->shift;
                sfp->have_offset = true;
            } else {
                ixgbe_sfp_store(core, sfp->offset++, sfp->shift);
            }
            sfp->shift = 0;
            sfp->sda_out = false;       /* ACK */
            sfp->ack_phase = true;
        }
        break;
    case IXGBE_I2C_READ:
        if (sfp->ack_phase) {
            /* The byte pointer moves past every byte sent */
            sfp->ack_phase = false;
            sfp->offset++;
            if (sfp->master_ack) {
                if (!sfp->offset && !sfp->wrapped_logged) {
                    sfp->wrapped_logged = true;
                    qemu_log_mask(LOG_GUEST_ERROR,
                                  "ixgbe: I2C read ran past the end of SFP+ "
                                  "page 0x%02x: it wraps to byte 0\n",
                                  sfp->dev);
                }
                ixgbe_i2c_load(core);
            } else {
                sfp->state = IXGBE_I2C_IGNORE;
                sfp->sda_out = true;
            }
        } else if (sfp->nbits == 8) {
            sfp->sda_out = true;        /* the master acknowledges */
            sfp->ack_phase = true;
        } else {
            sfp->sda_out = (sfp->shift << sfp->nbits) & 0x80;
        }
        break;
    default:
        break;
    }
}

static bool ixgbe_i2c_line_sda(IxgbeSfp *sfp, uint32_t i2cctl)
{
    return (i2cctl & IXGBE_I2CCTL_DATA_OUT) && sfp->sda_out;
}

static uint32_t ixgbe_sfp_read_i2cctl(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = ixgbe_get(core, addr);

    v &= IXGBE_I2CCTL_CLK_OUT | IXGBE_I2CCTL_DATA_OUT;
    if (v & IXGBE_I2CCTL_CLK_OUT) {
        v |= IXGBE_I2CCTL_CLK_IN;       /* no module stretches the clock */
    }
    if (ixgbe_i2c_line_sda(&core->sfp, v)) {
        v |= IXGBE_I2CCTL_DATA_IN;
    }
    return v;
}

static void ixgbe_sfp_write_i2cctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                                   uint32_t old)
{
    IxgbeSfp *sfp = &core->sfp;
    bool scl0 = old & IXGBE_I2CCTL_CLK_OUT;
    bool scl1 = val & IXGBE_I2CCTL_CLK_OUT;
    bool sda_changed = (old ^ val) & IXGBE_I2CCTL_DATA_OUT;
    bool line0 = ixgbe_i2c_line_sda(sfp, old);
    bool line1;

    *ixgbe_reg(core, addr) = val & (IXGBE_I2CCTL_CLK_OUT |
                                    IXGBE_I2CCTL_DATA_OUT);
    if (scl0 != scl1 && sda_changed) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2CCTL write 0x%x changes SCL and SDA at once; "
                      "taken as SDA changing while SCL is low\n", val);
    }
    if (scl0 == scl1) {
        line1 = ixgbe_i2c_line_sda(sfp, val);
        if (scl1 && line0 && !line1) {
            ixgbe_i2c_start(sfp);
        } else if (scl1 && !line0 && line1) {
            ixgbe_i2c_stop(sfp);
        }
    } else if (scl1) {
        ixgbe_i2c_scl_rise(sfp, ixgbe_i2c_line_sda(sfp, val));
    } else {
        ixgbe_i2c_scl_fall(core);
    }
}

/* ------------------------------------------------------------------ */
/* Pins, link, module changes                                          */
/* ------------------------------------------------------------------ */

static uint32_t ixgbe_sfp_read_esdp(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = ixgbe_get(core, addr);

    if (core->sfp.media != IXGBE_MEDIA_SFP) {
        return v;
    }
    v &= ~IXGBE_ESDP_SDP2;
    if (ixgbe_sfp_present(&core->sfp)) {
        v |= IXGBE_ESDP_SDP2;
    }
    return v;
}

static void ixgbe_sfp_write_esdp(IxgbeCore *core, hwaddr addr, uint32_t val,
                                 uint32_t old)
{
    if (core->sfp.media == IXGBE_MEDIA_SFP &&
        ((old ^ val) & IXGBE_ESDP_SDP3)) {
        trace_ixgbe_sfp_laser(!(val & IXGBE_ESDP_SDP3));
        if (ixgbe_sfp_is_optic(&core->sfp)) {
            ixgbe_raise_other_cause(core, IXGBE_EICR_LSC);
        }
    }
}

/*
 * Whether the port has a signal, apart from the peer (the netdev's link):
 * a backplane always has; an SFP+ port needs a module and, for an optic,
 * its transmitter on (a passive cable has none to switch off).
 */
static bool ixgbe_sfp_link_ok(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    if (sfp->media != IXGBE_MEDIA_SFP) {
        return true;
    }
    if (!ixgbe_sfp_present(sfp)) {
        return false;
    }
    return !ixgbe_sfp_is_optic(sfp) ||
           !(ixgbe_get(core, IXGBE_ESDP) & IXGBE_ESDP_SDP3);
}

void ixgbe_sfp_init(IxgbeCore *core, IxgbeMedia media, IxgbeSfpType type)
{
    IxgbeSfp *sfp = &core->sfp;

    sfp->media = media;
    sfp->type = media == IXGBE_MEDIA_SFP ? type : IXGBE_SFP_NONE;
    ixgbe_i2c_idle(sfp);
}

/*
 * A module pulled out or pushed in (QOM property "sfp" at run time): the
 * bus forgets any transfer, SDP2 follows the cage, and the driver hears of
 * it through GPI_SDP2 (if it enabled that in GPIE) and a link change.
 */
void ixgbe_sfp_change_module(IxgbeCore *core, IxgbeSfpType type)
{
    IxgbeSfp *sfp = &core->sfp;

    if (sfp->media != IXGBE_MEDIA_SFP || sfp->type == type) {
        return;
    }
    trace_ixgbe_sfp_module(ixgbe_sfp_type_name(sfp->type),
                           ixgbe_sfp_type_name(type));
    sfp->type = type;
    ixgbe_i2c_idle(sfp);
    memset(sfp->a2_user, 0, sizeof(sfp->a2_user));
    if (ixgbe_get(core, IXGBE_GPIE) & IXGBE_GPIE_SDP2_GPIEN) {
        ixgbe_raise_other_cause(core, IXGBE_EICR_GPI_SDP2);
    }
    ixgbe_raise_other_cause(core, IXGBE_EICR_LSC);
}

/*
 * After the register file's reset: the link modes of the part (what its
 * EEPROM would load into AUTOC/AUTOC2) and the I2C bus lines released.
 * The module itself is not reset with the MAC.
 */
static void ixgbe_sfp_reset(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    switch (sfp->media) {
    case IXGBE_MEDIA_KR:
        break;
    case IXGBE_MEDIA_KX4_KX_KR:
        *ixgbe_reg(core, IXGBE_AUTOC) |= IXGBE_AUTOC_KX4_SUPP;
        break;
    case IXGBE_MEDIA_SFP:
        *ixgbe_reg(core, IXGBE_AUTOC) = IXGBE_AUTOC_LMS_10G_SERIAL;
        *ixgbe_reg(core, IXGBE_AUTOC2) = IXGBE_AUTOC2_10G_SFI;
        break;
    }
    *ixgbe_reg(core, IXGBE_I2CCTL) = IXGBE_I2CCTL_CLK_OUT |
                                     IXGBE_I2CCTL_DATA_OUT;
    ixgbe_i2c_idle(sfp);
    sfp->idle_clock_logged = false;
}

/* ------------------------------------------------------------------ */
/* EEPROM: firmware block and SFP+ init sequences                      */
/* ------------------------------------------------------------------ */

/* Where the SFP+ part's extra EEPROM structures live (word addresses) */
#define EE_FW_BLOCK         0x200
#define EE_FW_PATCH_CFG     0x210
#define EE_PHY_INIT_LIST    0x220
#define EE_PHY_INIT_DA      0x240
#define EE_PHY_INIT_SRLR    0x250

/* The driver's SFP+ type IDs (ixgbe_sfp_type) the list is keyed by */
enum {
    SFP_ID_DA_CORE0 = 3, SFP_ID_DA_CORE1 = 4,
    SFP_ID_SRLR_CORE0 = 5, SFP_ID_SRLR_CORE1 = 6,
};

/*
 * Words the driver writes to CORECTL for each module: the analog setup
 * of the SFI interface, which the model does not have; these are
 * placeholders of the right shape (register << 8 | value).
 */
static const uint16_t ee_init_da[] = { 0x0B00, 0x0C08, 0x0D44 };
static const uint16_t ee_init_srlr[] = { 0x0B00, 0x0C00, 0x0D40 };

static void ee_put_seq(uint16_t *ee, unsigned at, const uint16_t *seq,
                       unsigned n)
{
    ee[at] = n;                         /* skipped by the driver */
    for (unsigned i = 0; i < n; i++) {
        ee[at + 1 + i] = seq[i];
    }
    ee[at + 1 + n] = IXGBE_EEPROM_PHY_INIT_END;
}

/*
 * Called before the checksum is computed.  An SFP+ part's EEPROM has a
 * firmware block (the driver checks for a patch version above 5 on fiber
 * parts and warns of a pre-production adapter otherwise; no LESM) and the
 * list of init sequences per module type, which setup_sfp() looks up.
 * Both lie outside the checksummed sections.
 */
static void ixgbe_sfp_build_eeprom(IxgbeCore *core)
{
    uint16_t *ee = core->eeprom;
    static const uint16_t list[] = {
        SFP_ID_DA_CORE0, EE_PHY_INIT_DA, SFP_ID_DA_CORE1, EE_PHY_INIT_DA,
        SFP_ID_SRLR_CORE0, EE_PHY_INIT_SRLR,
        SFP_ID_SRLR_CORE1, EE_PHY_INIT_SRLR,
    };

    if (core->sfp.media != IXGBE_MEDIA_SFP) {
        return;
    }
    ee[IXGBE_EEPROM_FW_PTR] = EE_FW_BLOCK;
    ee[EE_FW_BLOCK] = 0x0010;
    ee[EE_FW_BLOCK + IXGBE_FW_LESM_PARAMETERS_PTR] = 0xFFFF;
    ee[EE_FW_BLOCK + IXGBE_FW_PASSTHROUGH_PATCH_PTR] = EE_FW_PATCH_CFG;
    ee[EE_FW_PATCH_CFG] = 0x0008;
    ee[EE_FW_PATCH_CFG + IXGBE_FW_PATCH_VERSION_4] = 0x0006;

    ee[IXGBE_EEPROM_PHY_INIT_PTR] = EE_PHY_INIT_LIST;
    ee[EE_PHY_INIT_LIST] = ARRAY_SIZE(list);
    for (unsigned i = 0; i < ARRAY_SIZE(list); i++) {
        ee[EE_PHY_INIT_LIST + 1 + i] = list[i];
    }
    ee[EE_PHY_INIT_LIST + 1 + ARRAY_SIZE(list)] = IXGBE_EEPROM_PHY_INIT_END;
    ee_put_seq(ee, EE_PHY_INIT_DA, ee_init_da, ARRAY_SIZE(ee_init_da));
    ee_put_seq(ee, EE_PHY_INIT_SRLR, ee_init_srlr, ARRAY_SIZE(ee_init_srlr));
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

static bool ixgbe_sfp_post_load(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    if (sfp->type >= IXGBE_SFP__MAX ||
        (sfp->media != IXGBE_MEDIA_SFP && sfp->type != IXGBE_SFP_NONE) ||
        sfp->state > IXGBE_I2C_IGNORE || sfp->nbits > 8 ||
        (sfp->dev != 0 && sfp->dev != SFP_A0 && sfp->dev != SFP_A2)) {
        error_report("ixgbe: migrated SFP+ state is invalid (module %u, "
                     "I2C state %u, %u bits, page 0x%02x)",
                     sfp->type, sfp->state, sfp->nbits, sfp->dev);
        return false;
    }
    return true;
}

const VMStateDescription ixgbe_vmstate_sfp = {
    .name = "ixgbe-sfp",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(type, IxgbeSfp),
        VMSTATE_UINT32(state, IxgbeSfp),
        VMSTATE_UINT8(shift, IxgbeSfp),
        VMSTATE_UINT8(nbits, IxgbeSfp),
        VMSTATE_BOOL(ack_phase, IxgbeSfp),
        VMSTATE_BOOL(master_ack, IxgbeSfp),
        VMSTATE_BOOL(sda_out, IxgbeSfp),
        VMSTATE_UINT8(dev, IxgbeSfp),
        VMSTATE_UINT8(offset, IxgbeSfp),
        VMSTATE_BOOL(have_offset, IxgbeSfp),
        VMSTATE_BOOL(idle_clock_logged, IxgbeSfp),
        VMSTATE_BOOL(wrapped_logged, IxgbeSfp),
        VMSTATE_UINT8_ARRAY(a2_user, IxgbeSfp, IXGBE_SFP_PAGE_SIZE),
        VMSTATE_END_OF_LIST()
    }
};

/* The registers of the SFP+ cage: its pins and its I2C bus */
static const IxgbeRegDesc ixgbe_sfp_regs[] = {
    REG("ESDP", IXGBE_ESDP, 1, 4, 0, ALL, 0, ixgbe_sfp_read_esdp,
        ixgbe_sfp_write_esdp),
    REG("I2CCTL", IXGBE_I2CCTL, 1, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_sfp_read_i2cctl, ixgbe_sfp_write_i2cctl),
};

const IxgbePart ixgbe_sfp_part = {
    .eeprom = ixgbe_sfp_build_eeprom,
    .link_ok = ixgbe_sfp_link_ok,
    .regs = ixgbe_sfp_regs,
    .nregs = ARRAY_SIZE(ixgbe_sfp_regs),
    .reset = ixgbe_sfp_reset,
    .post_load = ixgbe_sfp_post_load,
};
