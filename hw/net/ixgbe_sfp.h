/*
 * Intel 82599 10 GbE controller: the port's media (backplane or SFP+
 * cage) and the cage's I2C bus, which the driver bit-bangs through
 * I2CCTL to reach the module (ixgbe_sfp.c; the module:
 * ixgbe_sfp_module.h).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_SFP_H
#define HW_NET_IXGBE_SFP_H

#include "exec/hwaddr.h"
#include "migration/vmstate.h"
#include "hw/i2c/bitbang_i2c.h"
#include "ixgbe_sfp_module.h"

typedef struct IxgbeCore IxgbeCore;
typedef struct IxgbePart IxgbePart;

/* What the port is wired to; fixed by the device type */
typedef enum IxgbeMedia {
    IXGBE_MEDIA_KR,             /* 10GBASE-KR backplane (0x1517) */
    IXGBE_MEDIA_KX4_KX_KR,      /* KX4/KX/KR combined backplane (0x10F8) */
    IXGBE_MEDIA_SFP,            /* SFP+ cage (0x10FB) */
} IxgbeMedia;

typedef struct IxgbeSfp {
    /* Fixed by the device type and the "sfp" property */
    IxgbeMedia media;
    uint32_t type;              /* IxgbeSfpType of the module in the cage */

    /* The cage's I2C bus (SFP+ parts only), driven through I2CCTL */
    I2CBus *bus;
    bitbang_i2c_interface i2c;
    bool sda;                   /* the SDA line bitbang_i2c_set() returned */
    IxgbeSfpModule module;
} IxgbeSfp;

extern const VMStateDescription ixgbe_vmstate_sfp;

/* Device type and property glue */
const char *ixgbe_sfp_type_name(IxgbeSfpType type);
bool ixgbe_sfp_type_parse(const char *name, IxgbeSfpType *type,
                          Error **errp);
void ixgbe_sfp_init(IxgbeCore *core, IxgbeMedia media, IxgbeSfpType type);
void ixgbe_sfp_change_module(IxgbeCore *core, IxgbeSfpType type);

/* The SFP+ cage as a part of the device (IxgbePart, ixgbe_core.h) */
extern const IxgbePart ixgbe_sfp_part;

#endif
