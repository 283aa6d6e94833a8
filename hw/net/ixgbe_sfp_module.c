/*
 * An SFF-8472 SFP+ module, as an I2C slave on the bus of an SFP+ cage.
 *
 * The module answers at 0xA0 with its serial ID (identifier, connector,
 * transceiver codes, vendor, part and serial numbers) and, when it is an
 * optic with diagnostics, at 0xA2 with thresholds, live readings and
 * alarm flags.  A write's first byte sets the byte pointer, the bytes
 * after it are stored from there; a read starts at the pointer, and the
 * pointer moves past every byte sent or stored.  Page A2h's status and
 * control byte, its extended control byte and its user bytes keep what
 * the host writes; a write to any other byte, and a read running off the
 * end of a page, are guest errors.
 *
 * The cage owns the module's pins: it sets TX_DISABLE and whether light
 * reaches the receiver (ixgbe_sfp_module_set_pins()) before every access,
 * and swaps the module (ixgbe_sfp_module_set_type()).  The module kinds
 * are chosen for the 82599's driver (an Intel optic, which it requires,
 * a third-party one, which it refuses, and a passive cable); the device
 * has no other tie to the NIC.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/error-report.h"
#include "migration/vmstate.h"
#include "ixgbe_sfp_module.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* The module's memory                                                 */
/* ------------------------------------------------------------------ */

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

static void ixgbe_sfp_build_a0(IxgbeSfpModule *m, uint8_t *a0)
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

    switch (m->type) {
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
        if (m->type == IXGBE_SFP_SR) {
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

static void ixgbe_sfp_readings(IxgbeSfpModule *m, int32_t *v)
{
    bool tx_on = !m->tx_disable && !(m->a2_user[DDM_STATUS] & 0x40);
    bool rx_light = !m->rx_los;

    v[0] = 35 * 256 + 128;              /* 35.5 C */
    v[1] = 33000;                       /* 3.3 V */
    v[2] = tx_on ? 3000 : 0;            /* 6 mA */
    v[3] = tx_on ? 6000 : 0;            /* 0.6 mW, -2.2 dBm */
    v[4] = rx_light ? 5000 : 0;         /* 0.5 mW, -3.0 dBm */
}

static void ixgbe_sfp_build_a2(IxgbeSfpModule *m, uint8_t *a2)
{
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

    ixgbe_sfp_readings(m, v);
    for (unsigned i = 0; i < DDM_NVALUES; i++) {
        const int32_t *t = ddm_thresholds[i];
        unsigned bit = 15 - i * 2;      /* high flag; the low one follows */

        put_be16(&a2[DDM_TEMP + i * 2], v[i]);
        alarms |= (v[i] > t[0]) << bit | (v[i] < t[1]) << (bit - 1);
        warnings |= (v[i] > t[2]) << bit | (v[i] < t[3]) << (bit - 1);
    }
    put_be16(&a2[DDM_ALARMS], alarms);
    put_be16(&a2[DDM_WARNINGS], warnings);

    if (m->tx_disable) {
        status |= 0x80;                 /* TX_DISABLE pin */
    }
    status |= m->a2_user[DDM_STATUS] & 0x48;  /* soft TX_DISABLE, RS */
    if (!v[4]) {
        status |= 0x02;                 /* RX_LOS */
    }
    a2[DDM_STATUS] = status;            /* bit 0 clear: data ready */
    a2[DDM_EXT_CONTROL] = m->a2_user[DDM_EXT_CONTROL];
    memcpy(&a2[DDM_USER], &m->a2_user[DDM_USER],
           DDM_USER_END + 1 - DDM_USER);
}

/* A passive cable has no diagnostics and does not answer at 0xA2 */
static bool ixgbe_sfp_module_answers(IxgbeSfpModule *m, uint8_t page)
{
    if (m->type == IXGBE_SFP_NONE) {
        return false;
    }
    return page == IXGBE_SFP_A0 ||
           (page == IXGBE_SFP_A2 && ixgbe_sfp_type_is_optic(m->type));
}

static uint8_t ixgbe_sfp_module_byte(IxgbeSfpModule *m, uint8_t page,
                                     uint8_t offset)
{
    uint8_t buf[IXGBE_SFP_PAGE_SIZE];

    if (page == IXGBE_SFP_A0) {
        ixgbe_sfp_build_a0(m, buf);
    } else {
        ixgbe_sfp_build_a2(m, buf);
    }
    return buf[offset];
}

static bool ixgbe_sfp_writable(uint8_t page, uint8_t offset)
{
    return page == IXGBE_SFP_A2 &&
           (offset == DDM_STATUS || offset == DDM_EXT_CONTROL ||
            (offset >= DDM_USER && offset <= DDM_USER_END));
}

static void ixgbe_sfp_store(IxgbeSfpModule *m, uint8_t offset, uint8_t val)
{
    trace_ixgbe_sfp_i2c_write(m->page, offset, val);
    if (!ixgbe_sfp_writable(m->page, offset)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C write of 0x%02x to read-only SFP+ byte "
                      "0x%02x of page 0x%02x ignored\n",
                      val, offset, m->page);
        return;
    }
    m->a2_user[offset] = val;
}

/* ------------------------------------------------------------------ */
/* The I2C slave                                                       */
/* ------------------------------------------------------------------ */

/* One device, two addresses: A0h (its own, "address") and A2h */
static bool ixgbe_sfp_module_match(I2CSlave *i2c, uint8_t address,
                                   bool broadcast, I2CNodeList *current_devs)
{
    IxgbeSfpModule *m = IXGBE_SFP_MODULE(i2c);
    uint8_t page = address << 1;
    I2CNode *node;

    if (broadcast) {
        return false;                   /* no general call */
    }
    trace_ixgbe_sfp_i2c_addr(page, ixgbe_sfp_module_answers(m, page));
    if (!ixgbe_sfp_module_answers(m, page)) {
        return false;
    }
    m->page = page;
    node = g_new(I2CNode, 1);
    node->elt = i2c;
    QLIST_INSERT_HEAD(current_devs, node, next);
    return true;
}

static int ixgbe_sfp_module_event(I2CSlave *i2c, enum i2c_event event)
{
    IxgbeSfpModule *m = IXGBE_SFP_MODULE(i2c);

    switch (event) {
    case I2C_START_SEND:
        m->have_offset = false;
        /* fall through */
    case I2C_START_RECV:
        m->wrapped = false;
        m->wrapped_logged = false;
        break;
    default:
        break;
    }
    return 0;
}

static uint8_t ixgbe_sfp_module_recv(I2CSlave *i2c)
{
    IxgbeSfpModule *m = IXGBE_SFP_MODULE(i2c);
    uint8_t val;

    if (m->wrapped && !m->wrapped_logged) {
        m->wrapped_logged = true;
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C read ran past the end of SFP+ page "
                      "0x%02x: it wraps to byte 0\n", m->page);
    }
    val = ixgbe_sfp_module_byte(m, m->page, m->offset);
    trace_ixgbe_sfp_i2c_read(m->page, m->offset, val);
    /* The byte pointer moves past every byte sent */
    if (!++m->offset) {
        m->wrapped = true;
    }
    return val;
}

static int ixgbe_sfp_module_send(I2CSlave *i2c, uint8_t data)
{
    IxgbeSfpModule *m = IXGBE_SFP_MODULE(i2c);

    if (!m->have_offset) {
        m->offset = data;
        m->have_offset = true;
    } else {
        ixgbe_sfp_store(m, m->offset++, data);
    }
    return 0;
}

void ixgbe_sfp_module_set_type(IxgbeSfpModule *m, IxgbeSfpType type)
{
    m->type = type;
    m->offset = 0;
    m->have_offset = false;
    m->wrapped = false;
    m->wrapped_logged = false;
    memset(m->a2_user, 0, sizeof(m->a2_user));
}

void ixgbe_sfp_module_set_pins(IxgbeSfpModule *m, bool tx_disable,
                               bool rx_los)
{
    m->tx_disable = tx_disable;
    m->rx_los = rx_los;
}

/* ------------------------------------------------------------------ */
/* Migration                                                           */
/* ------------------------------------------------------------------ */

static int ixgbe_sfp_module_post_load(void *opaque, int version_id)
{
    IxgbeSfpModule *m = opaque;

    if (m->type >= IXGBE_SFP__MAX ||
        (m->page != 0 && m->page != IXGBE_SFP_A0 &&
         m->page != IXGBE_SFP_A2)) {
        error_report("ixgbe: migrated SFP+ module state is invalid "
                     "(module %u, page 0x%02x)", m->type, m->page);
        return -EINVAL;
    }
    return 0;
}

/*
 * The cage migrates the module inside its own state (the module is a part
 * of the NIC, not a device of its own on the command line).
 */
const VMStateDescription ixgbe_vmstate_sfp_module = {
    .name = "ixgbe-sfp-module",
    .version_id = 1,
    .minimum_version_id = 1,
    .post_load = ixgbe_sfp_module_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_I2C_SLAVE(parent_obj, IxgbeSfpModule),
        VMSTATE_UINT32(type, IxgbeSfpModule),
        VMSTATE_UINT8(page, IxgbeSfpModule),
        VMSTATE_UINT8(offset, IxgbeSfpModule),
        VMSTATE_BOOL(have_offset, IxgbeSfpModule),
        VMSTATE_BOOL(wrapped, IxgbeSfpModule),
        VMSTATE_BOOL(wrapped_logged, IxgbeSfpModule),
        VMSTATE_UINT8_ARRAY(a2_user, IxgbeSfpModule, IXGBE_SFP_PAGE_SIZE),
        VMSTATE_END_OF_LIST()
    }
};

static void ixgbe_sfp_module_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    I2CSlaveClass *sc = I2C_SLAVE_CLASS(klass);

    dc->desc = "SFF-8472 SFP+ module (the cage of ixgbe-sfp)";
    /* Its pins belong to the cage that creates it */
    dc->user_creatable = false;
    sc->match_and_add = ixgbe_sfp_module_match;
    sc->event = ixgbe_sfp_module_event;
    sc->recv = ixgbe_sfp_module_recv;
    sc->send = ixgbe_sfp_module_send;
}

static const TypeInfo ixgbe_sfp_module_info = {
    .name = TYPE_IXGBE_SFP_MODULE,
    .parent = TYPE_I2C_SLAVE,
    .instance_size = sizeof(IxgbeSfpModule),
    .class_init = ixgbe_sfp_module_class_init,
};

static void ixgbe_sfp_module_register_types(void)
{
    type_register_static(&ixgbe_sfp_module_info);
}

type_init(ixgbe_sfp_module_register_types)
