/*
 * An SFF-8472 SFP+ module as an I2C slave: the serial ID at 0xA0 and,
 * for optics, the diagnostics at 0xA2 (ixgbe_sfp_module.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_SFP_MODULE_H
#define HW_NET_IXGBE_SFP_MODULE_H

#include "hw/i2c/i2c.h"
#include "qom/object.h"

#define TYPE_IXGBE_SFP_MODULE "ixgbe-sfp-module"
OBJECT_DECLARE_SIMPLE_TYPE(IxgbeSfpModule, IXGBE_SFP_MODULE)

/* The module in the cage (property "sfp" of the SFP+ device type) */
typedef enum IxgbeSfpType {
    IXGBE_SFP_NONE,             /* empty cage */
    IXGBE_SFP_DA,               /* passive direct-attach copper cable */
    IXGBE_SFP_SR,               /* Intel-branded 10GBASE-SR optic */
    IXGBE_SFP_UNSUPPORTED,      /* a third-party 10GBASE-SR optic */
    IXGBE_SFP__MAX,
} IxgbeSfpType;

#define IXGBE_SFP_A0            0xA0    /* serial ID page (SFF-8472 A0h) */
#define IXGBE_SFP_A2            0xA2    /* diagnostics page (SFF-8472 A2h) */
#define IXGBE_SFP_PAGE_SIZE     256

struct IxgbeSfpModule {
    I2CSlave parent_obj;        /* its "address" is 0x50 (A0h) */

    uint32_t type;              /* IxgbeSfpType; NONE answers nowhere */

    /* Pins the cage drives; set before every access, not migrated */
    bool tx_disable;            /* TX_DISABLE */
    bool rx_los;                /* no light reaches the receiver */

    /* The transfer */
    uint8_t page;               /* the page addressed: 0xA0 or 0xA2 */
    uint8_t offset;             /* the byte pointer */
    bool have_offset;           /* a write's first byte set it */
    bool wrapped;               /* a read ran past byte 0xFF */
    bool wrapped_logged;

    /* What the guest can change on page A2h */
    uint8_t a2_user[IXGBE_SFP_PAGE_SIZE];
};

extern const VMStateDescription ixgbe_vmstate_sfp_module;

static inline bool ixgbe_sfp_type_is_optic(IxgbeSfpType type)
{
    return type == IXGBE_SFP_SR || type == IXGBE_SFP_UNSUPPORTED;
}

/* Another module in the cage: its memory is new, any transfer forgotten */
void ixgbe_sfp_module_set_type(IxgbeSfpModule *m, IxgbeSfpType type);
void ixgbe_sfp_module_set_pins(IxgbeSfpModule *m, bool tx_disable,
                               bool rx_los);

#endif
