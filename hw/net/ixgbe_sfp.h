/*
 * Intel 82599 10 GbE controller: the port's media (backplane or SFP+
 * cage), the SFP+ module in the cage and the I2C bus the driver
 * bit-bangs through I2CCTL to reach it (ixgbe_sfp.c).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_SFP_H
#define HW_NET_IXGBE_SFP_H

#include "exec/hwaddr.h"
#include "migration/vmstate.h"

typedef struct IxgbeCore IxgbeCore;
typedef struct IxgbePart IxgbePart;

/* What the port is wired to; fixed by the device type */
typedef enum IxgbeMedia {
    IXGBE_MEDIA_KR,             /* 10GBASE-KR backplane (0x1517) */
    IXGBE_MEDIA_KX4_KX_KR,      /* KX4/KX/KR combined backplane (0x10F8) */
    IXGBE_MEDIA_SFP,            /* SFP+ cage (0x10FB) */
} IxgbeMedia;

/* The module in the cage (property "sfp" of the SFP+ device type) */
typedef enum IxgbeSfpType {
    IXGBE_SFP_NONE,             /* empty cage */
    IXGBE_SFP_DA,               /* passive direct-attach copper cable */
    IXGBE_SFP_SR,               /* Intel-branded 10GBASE-SR optic */
    IXGBE_SFP_UNSUPPORTED,      /* a third-party 10GBASE-SR optic */
    IXGBE_SFP__MAX,
} IxgbeSfpType;

/* Where the I2C slave logic is within a transaction */
typedef enum IxgbeI2cState {
    IXGBE_I2C_IDLE,             /* no START seen */
    IXGBE_I2C_ADDR,             /* receiving the address byte */
    IXGBE_I2C_WRITE,            /* receiving the offset or data bytes */
    IXGBE_I2C_READ,             /* sending data bytes */
    IXGBE_I2C_IGNORE,           /* NACKed: waiting for START or STOP */
} IxgbeI2cState;

#define IXGBE_SFP_PAGE_SIZE     256

typedef struct IxgbeSfp {
    /* Fixed by the device type and the "sfp" property */
    IxgbeMedia media;
    uint32_t type;              /* IxgbeSfpType of the module in the cage */

    /* The I2C bus */
    uint32_t state;             /* IxgbeI2cState */
    uint8_t shift;              /* the byte being shifted in or out */
    uint8_t nbits;              /* clocks of it so far */
    bool ack_phase;             /* the ninth clock of a byte */
    bool master_ack;            /* the driver acknowledged a read byte */
    bool sda_out;               /* what the module drives (true: released) */
    uint8_t dev;                /* the addressed page: 0xA0 or 0xA2 */
    uint8_t offset;             /* the module's byte pointer */
    bool have_offset;           /* the first written byte set it */
    bool idle_clock_logged;
    bool wrapped_logged;

    /* The module's memory: what the guest can change on page A2h */
    uint8_t a2_user[IXGBE_SFP_PAGE_SIZE];
} IxgbeSfp;

extern const VMStateDescription ixgbe_vmstate_sfp;

/* Device type and property glue */
const char *ixgbe_sfp_type_name(IxgbeSfpType type);
bool ixgbe_sfp_type_parse(const char *name, IxgbeSfpType *type,
                          Error **errp);
void ixgbe_sfp_init(IxgbeCore *core, IxgbeMedia media, IxgbeSfpType type);
void ixgbe_sfp_change_module(IxgbeCore *core, IxgbeSfpType type);

/* Reset, EEPROM image, link */

/* The module's memory as the I2C bus reads it (qtests, ethtool -m) */
uint8_t ixgbe_sfp_byte(IxgbeCore *core, uint8_t dev, uint8_t offset);

/* The SFP+ cage as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_sfp_part;

#endif
