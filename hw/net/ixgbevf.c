/*
 * QEMU model of the Intel 82599 10 Gigabit Ethernet controller: a virtual
 * function (device 0x10ED).
 *
 * The PF (ixgbe.c) creates its VFs with QEMU's SR-IOV helpers; a VF is a
 * PCI Express function with BAR 0 (16 KiB of registers, ixgbe_sriov.c
 * maps them onto the PF's), BAR 3 (the MSI-X table and PBA of its three
 * vectors) and function level reset, which the PF sees in VFLRE.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/range.h"
#include "qapi/error.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/pci/msix.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "ixgbe_core.h"
#include "ixgbe.h"
#include "ixgbe_sriov.h"
#include "ixgbevf.h"
#include "trace.h"

OBJECT_DECLARE_SIMPLE_TYPE(IxgbeVfState, IXGBEVF)

#define IXGBEVF_MMIO_BAR    0
#define IXGBEVF_MSIX_BAR    3

#define IXGBEVF_CAP_MSIX    0x70
#define IXGBEVF_CAP_PCIE    0xA0
#define IXGBEVF_CAP_AER     0x100
#define IXGBEVF_CAP_ARI     0x150

struct IxgbeVfState {
    PCIDevice parent_obj;

    MemoryRegion mmio;
    MemoryRegion msix;
};

static IxgbeCore *ixgbevf_core(PCIDevice *d)
{
    return ixgbe_pf_core(pcie_sriov_get_pf(d));
}

/*
 * A VF's registers are the PF's core: an access takes the PF's guard
 * (ixgbe_core_enter), so one that comes from the device's own DMA, of
 * any function, is refused like one to the PF's BARs.
 */
static MemTxResult ixgbevf_mmio_read(void *opaque, hwaddr addr,
                                     uint64_t *val, unsigned size,
                                     MemTxAttrs attrs)
{
    PCIDevice *d = opaque;
    IxgbeCore *core = ixgbevf_core(d);
    int vfn = pcie_sriov_vf_number(d);

    if (!ixgbe_core_enter(core, "VF register read", vfn, addr)) {
        *val = 0;
        return MEMTX_ACCESS_ERROR;
    }
    *val = ixgbe_bar_read(core, vfn, addr);
    ixgbe_core_leave(core);
    return MEMTX_OK;
}

static MemTxResult ixgbevf_mmio_write(void *opaque, hwaddr addr,
                                      uint64_t val, unsigned size,
                                      MemTxAttrs attrs)
{
    PCIDevice *d = opaque;
    IxgbeCore *core = ixgbevf_core(d);
    int vfn = pcie_sriov_vf_number(d);

    if (!ixgbe_core_enter(core, "VF register write", vfn, addr)) {
        return MEMTX_ACCESS_ERROR;
    }
    ixgbe_bar_write(core, vfn, addr, val, true);
    ixgbe_core_leave(core);
    return MEMTX_OK;
}

static const MemoryRegionOps ixgbevf_mmio_ops = {
    .read_with_attrs = ixgbevf_mmio_read,
    .write_with_attrs = ixgbevf_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static void ixgbevf_write_config(PCIDevice *d, uint32_t addr, uint32_t val,
                                 int len)
{
    uint32_t devctl = d->exp.exp_cap + PCI_EXP_DEVCTL;
    IxgbeCore *core = ixgbevf_core(d);

    if (!ixgbe_core_enter(core, "VF config write", pcie_sriov_vf_number(d),
                          addr)) {
        return;
    }
    pci_default_write_config(d, addr, val, len);
    /* Tell the PF before the reset that pcie_cap_flr_write_config does */
    if (ranges_overlap(addr, len, devctl, 2) &&
        (pci_get_word(d->config + devctl) & PCI_EXP_DEVCTL_BCR_FLR)) {
        ixgbe_vf_flr(core, pcie_sriov_vf_number(d));
    }
    pcie_cap_flr_write_config(d, addr, val, len);
    ixgbe_core_leave(core);
}

static void ixgbevf_pci_realize(PCIDevice *d, Error **errp)
{
    IxgbeVfState *s = IXGBEVF(d);

    d->config_write = ixgbevf_write_config;

    memory_region_init_io(&s->mmio, OBJECT(d), &ixgbevf_mmio_ops, d,
                          "ixgbevf-mmio", IXGBE_VF_MMIO_SIZE);
    ixgbe_coalesce_add_zones(&s->mmio, true);
    pci_register_bar(d, IXGBEVF_MMIO_BAR, PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->mmio);
    memory_region_init(&s->msix, OBJECT(d), "ixgbevf-msix",
                       IXGBE_VF_MSIX_SIZE);
    pci_register_bar(d, IXGBEVF_MSIX_BAR, PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->msix);

    if (msix_init(d, IXGBE_VF_MSIX_VECTORS, &s->msix, IXGBEVF_MSIX_BAR, 0,
                  &s->msix, IXGBEVF_MSIX_BAR, IXGBE_VF_MSIX_PBA_OFFSET,
                  IXGBEVF_CAP_MSIX, errp) < 0) {
        return;
    }
    for (unsigned v = 0; v < IXGBE_VF_MSIX_VECTORS; v++) {
        msix_vector_use(d, v);
    }
    if (pcie_endpoint_cap_init(d, IXGBEVF_CAP_PCIE) < 0) {
        error_setg(errp, "ixgbevf: failed to add the PCIe capability");
        goto err_msix;
    }
    pcie_cap_flr_init(d);
    if (pcie_aer_init(d, PCI_ERR_VER, IXGBEVF_CAP_AER, PCI_ERR_SIZEOF,
                      errp) < 0) {
        goto err_pcie;
    }
    pcie_ari_init(d, IXGBEVF_CAP_ARI);
    return;

err_pcie:
    pcie_cap_exit(d);
err_msix:
    msix_unuse_all_vectors(d);
    msix_uninit(d, &s->msix, &s->msix);
}

static void ixgbevf_pci_uninit(PCIDevice *d)
{
    IxgbeVfState *s = IXGBEVF(d);

    pcie_aer_exit(d);
    pcie_cap_exit(d);
    msix_unuse_all_vectors(d);
    msix_uninit(d, &s->msix, &s->msix);
}

/*
 * A VF's PCI state (config space, MSI-X table and PBA) travels inside the
 * PF's state, after the PF's config space: loading that sets VF Enable
 * again, which resets every VF (pci_set_enabled), so a section of the VF's
 * own, loaded before the PF's, would be lost.
 */
const VMStateDescription vmstate_ixgbevf_pci = {
    .name = "ixgbevf-pci",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, IxgbeVfState),
        VMSTATE_MSIX(parent_obj, IxgbeVfState),
        VMSTATE_END_OF_LIST()
    }
};

/* FLR, VF Enable, a bus reset: the VF's state in the PF's core */
static void ixgbevf_reset_hold(Object *obj, ResetType type)
{
    PCIDevice *d = PCI_DEVICE(obj);

    ixgbe_vf_reset(ixgbevf_core(d), pcie_sriov_vf_number(d));
}

static void ixgbevf_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *c = PCI_DEVICE_CLASS(klass);

    c->realize = ixgbevf_pci_realize;
    c->exit = ixgbevf_pci_uninit;
    c->vendor_id = PCI_VENDOR_ID_INTEL;
    c->device_id = IXGBE_DEV_ID_82599_VF;
    c->revision = 1;
    c->class_id = PCI_CLASS_NETWORK_ETHERNET;
    c->subsystem_vendor_id = PCI_VENDOR_ID_INTEL;
    c->subsystem_id = IXGBE_SUBSYS_ID;

    rc->phases.hold = ixgbevf_reset_hold;

    dc->desc = "Intel 82599 Virtual Function";
    dc->user_creatable = false;
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static const TypeInfo ixgbevf_info = {
    .name = TYPE_IXGBEVF,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(IxgbeVfState),
    .class_init = ixgbevf_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void ixgbevf_register_types(void)
{
    type_register_static(&ixgbevf_info);
}

type_init(ixgbevf_register_types)
