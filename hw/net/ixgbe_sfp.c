/*
 * Intel 82599 10 GbE controller: the port's media and the SFP+ cage.
 *
 * The backplane parts (10GBASE-KR, and the KX4/KX/KR combined part) only
 * differ in the link modes AUTOC advertises.  The SFP+ part (0x10FB, the
 * X520 adapters) has a cage: the driver finds out what is in it by
 * bit-banging I2C through I2CCTL, the cage reports a module on pin SDP2
 * (ESDP, with a GPI_SDP2 interrupt when that changes) and the driver
 * switches an optic's transmitter off through SDP3 (TX_DISABLE).
 *
 * The cage's I2C bus is a QEMU I2C bus driven by QEMU's bit-bang I2C
 * master logic (bitbang_i2c) from I2CCTL's SCL and SDA outputs; I2CCTL
 * reads the SDA line it returns.  On the bus sits the module, an
 * SFF-8472 memory at 0xA0 and, for optics, 0xA2 (ixgbe_sfp_module.c).
 * What a driver does wrong on the bus (both lines changed in one write,
 * a START or STOP in the middle of a byte) is a guest error.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qapi/error.h"
#include "hw/qdev-properties.h"
#include "net/net.h"
#include "hw/i2c/bitbang_i2c.h"
#include "ixgbe_core.h"
#include "ixgbe_sfp.h"
#include "trace.h"

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
/* The I2C bus                                                         */
/* ------------------------------------------------------------------ */

static bool ixgbe_sfp_present(IxgbeSfp *sfp)
{
    return sfp->media == IXGBE_MEDIA_SFP && sfp->type != IXGBE_SFP_NONE;
}

static bool ixgbe_sfp_is_optic(IxgbeSfp *sfp)
{
    return ixgbe_sfp_type_is_optic(sfp->type);
}

/* The module's pins as the cage drives them now */
static void ixgbe_sfp_sync_pins(IxgbeCore *core)
{
    ixgbe_sfp_module_set_pins(&core->sfp.module,
                              ixgbe_get(core, IXGBE_ESDP) & IXGBE_ESDP_SDP3,
                              qemu_get_queue(core->nic)->link_down);
}

/*
 * The bus forgets any transfer; the master's lines are I2CCTL's outputs
 * and the module releases SDA.  (bitbang_i2c_init() leaves the state and
 * the address of a transfer alone: its users start from zeroed memory.)
 */
static void ixgbe_sfp_bus_idle(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;
    uint32_t i2cctl = ixgbe_get(core, IXGBE_I2CCTL);

    if (!sfp->bus) {
        return;
    }
    i2c_end_transfer(sfp->bus);
    bitbang_i2c_init(&sfp->i2c, sfp->bus);
    sfp->i2c.state = STOPPED;
    sfp->i2c.current_addr = -1;
    sfp->i2c.buffer = 0;
    sfp->i2c.last_clock = !!(i2cctl & IXGBE_I2CCTL_CLK_OUT);
    sfp->i2c.last_data = !!(i2cctl & IXGBE_I2CCTL_DATA_OUT);
    sfp->sda = sfp->i2c.last_data;
}

/* Bits of the byte on the bus a START or STOP would cut short, or 0 */
static unsigned ixgbe_sfp_bits_cut(bitbang_i2c_state state)
{
    /* A repeated START or a STOP follows one clock with SDA high */
    if (state > SENDING_BIT6 && state <= SENDING_BIT0) {
        return state - SENDING_BIT7;
    }
    if (state == WAITING_FOR_ACK || state == SENDING_ACK) {
        return 8;
    }
    /* A read goes on until the host NACKs a byte */
    if (state >= RECEIVING_BIT7 && state <= RECEIVING_BIT0) {
        return state - RECEIVING_BIT7;
    }
    return 0;
}

static void ixgbe_sfp_i2c_set(IxgbeSfp *sfp, int line, bool level)
{
    bool sda_edge = line == BITBANG_I2C_SDA && sfp->i2c.last_clock &&
                    sfp->i2c.last_data != level;

    if (sda_edge && (ixgbe_sfp_bits_cut(sfp->i2c.state) ||
                     sfp->i2c.state == RECEIVING_BIT7)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2C %s after %u bits of a byte: the "
                      "transfer is abandoned\n", level ? "STOP" : "START",
                      ixgbe_sfp_bits_cut(sfp->i2c.state));
    }
    sfp->sda = bitbang_i2c_set(&sfp->i2c, line, level);
    /*
     * A STOP after a repeated START whose address byte was not complete
     * leaves the bus's transfer open (bitbang_i2c ends it only once it
     * knows the address): end it here.
     */
    if (sfp->i2c.state == STOPPED && i2c_bus_busy(sfp->bus)) {
        i2c_end_transfer(sfp->bus);
    }
}

static uint32_t ixgbe_sfp_read_i2cctl(IxgbeCore *core, hwaddr addr)
{
    IxgbeSfp *sfp = &core->sfp;
    uint32_t v = ixgbe_get(core, addr);

    v &= IXGBE_I2CCTL_CLK_OUT | IXGBE_I2CCTL_DATA_OUT;
    if (v & IXGBE_I2CCTL_CLK_OUT) {
        v |= IXGBE_I2CCTL_CLK_IN;       /* no module stretches the clock */
    }
    /* Without a cage nothing pulls SDA down but the master */
    if (sfp->bus ? sfp->sda : !!(v & IXGBE_I2CCTL_DATA_OUT)) {
        v |= IXGBE_I2CCTL_DATA_IN;
    }
    return v;
}

static void ixgbe_sfp_write_i2cctl(IxgbeCore *core, hwaddr addr, uint32_t val,
                                   uint32_t old)
{
    IxgbeSfp *sfp = &core->sfp;
    bool scl = val & IXGBE_I2CCTL_CLK_OUT;
    bool sda = val & IXGBE_I2CCTL_DATA_OUT;

    *ixgbe_reg(core, addr) = val & (IXGBE_I2CCTL_CLK_OUT |
                                    IXGBE_I2CCTL_DATA_OUT);
    if (((old ^ val) & IXGBE_I2CCTL_CLK_OUT) &&
        ((old ^ val) & IXGBE_I2CCTL_DATA_OUT)) {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: I2CCTL write 0x%x changes SCL and SDA at once; "
                      "taken as SDA changing while SCL is low\n", val);
    }
    if (!sfp->bus) {
        return;
    }
    ixgbe_sfp_sync_pins(core);
    /* SDA changes while SCL is low: SCL falls first, or rises last */
    if (scl) {
        ixgbe_sfp_i2c_set(sfp, BITBANG_I2C_SDA, sda);
        ixgbe_sfp_i2c_set(sfp, BITBANG_I2C_SCL, scl);
    } else {
        ixgbe_sfp_i2c_set(sfp, BITBANG_I2C_SCL, scl);
        ixgbe_sfp_i2c_set(sfp, BITBANG_I2C_SDA, sda);
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
}

/* An SFP+ part gets its cage's I2C bus, and the module on it */
static void ixgbe_sfp_realize(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;
    Object *owner = OBJECT(core->owner);

    if (sfp->media != IXGBE_MEDIA_SFP) {
        return;
    }
    sfp->bus = i2c_init_bus(DEVICE(owner), "sfp-i2c");
    object_initialize_child(owner, "sfp-module", &sfp->module,
                            TYPE_IXGBE_SFP_MODULE);
    qdev_prop_set_uint8(DEVICE(&sfp->module), "address", IXGBE_SFP_A0 >> 1);
    ixgbe_sfp_module_set_type(&sfp->module, sfp->type);
    qdev_realize(DEVICE(&sfp->module), BUS(sfp->bus), &error_abort);
    ixgbe_sfp_bus_idle(core);
}

/* The bus goes with the PCI function; the module goes now */
static void ixgbe_sfp_unrealize(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;

    if (sfp->bus) {
        i2c_end_transfer(sfp->bus);
        object_unparent(OBJECT(&sfp->module));
        sfp->bus = NULL;
    }
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
    ixgbe_sfp_bus_idle(core);
    ixgbe_sfp_module_set_type(&sfp->module, type);
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
    ixgbe_sfp_bus_idle(core);
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

/*
 * The bit-bang state must be one bitbang_i2c_set() can continue from;
 * the module checks its own (ixgbe_vmstate_sfp_module).
 */
static bool ixgbe_sfp_post_load(IxgbeCore *core)
{
    IxgbeSfp *sfp = &core->sfp;
    bitbang_i2c_interface *i2c = &sfp->i2c;

    if (sfp->media != IXGBE_MEDIA_SFP) {
        return true;
    }
    if (i2c->state > SENT_NACK || i2c->last_data > 1u ||
        i2c->last_clock > 1u || i2c->device_out > 1u ||
        i2c->current_addr < -1 || i2c->current_addr > 0xFF) {
        error_report("ixgbe: migrated SFP+ I2C bus state is invalid "
                     "(state %u, lines %d/%d/%d, address %d)",
                     i2c->state, i2c->last_clock, i2c->last_data,
                     i2c->device_out, i2c->current_addr);
        return false;
    }
    sfp->type = sfp->module.type;
    return true;
}

/*
 * The cage: QEMU's bit-bang I2C master (bitbang_i2c has no migration
 * state of its own), the SDA line it last returned and the module.  The
 * transfer the bus itself has open travels in QEMU's "i2c_bus" section.
 */
const VMStateDescription ixgbe_vmstate_sfp = {
    .name = "ixgbe-sfp",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(i2c.state, IxgbeSfp),
        VMSTATE_INT32(i2c.last_data, IxgbeSfp),
        VMSTATE_INT32(i2c.last_clock, IxgbeSfp),
        VMSTATE_INT32(i2c.device_out, IxgbeSfp),
        VMSTATE_UINT8(i2c.buffer, IxgbeSfp),
        VMSTATE_INT32(i2c.current_addr, IxgbeSfp),
        VMSTATE_BOOL(sda, IxgbeSfp),
        VMSTATE_STRUCT(module, IxgbeSfp, 0, ixgbe_vmstate_sfp_module,
                       IxgbeSfpModule),
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
    .realize = ixgbe_sfp_realize,
    .unrealize = ixgbe_sfp_unrealize,
    .eeprom = ixgbe_sfp_build_eeprom,
    .link_ok = ixgbe_sfp_link_ok,
    .regs = ixgbe_sfp_regs,
    .nregs = ARRAY_SIZE(ixgbe_sfp_regs),
    .reset = ixgbe_sfp_reset,
    .post_load = ixgbe_sfp_post_load,
};
