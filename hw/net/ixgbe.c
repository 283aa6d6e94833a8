/*
 * QEMU model of the Intel 82599 10 Gigabit Ethernet controller:
 * PCI Express function, BARs, capabilities, properties and migration.
 *
 * One device type per 82599 part, as the stock drivers tell them apart
 * by device ID: "ixgbe" is the 10GBASE-KR backplane port (0x1517),
 * "ixgbe-combo" the KX4/KX/KR combined backplane port (0x10F8), and
 * "ixgbe-sfp" the SFP+ port of the X520 adapters (0x10FB), whose module
 * is chosen, and can be swapped at run time, with the property "sfp".
 * A backplane part needs neither a module nor a PHY behind MDIO, so the
 * drivers bring its link up from the MAC's own AUTOC/LINKS registers.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/units.h"
#include "qemu/range.h"
#include "qapi/error.h"
#include "qemu/error-report.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "hw/pci/pcie_sriov.h"
#include "hw/pci/pci_bus.h"
#include "hw/qdev-properties.h"
#include "system/system.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "ixgbe_core.h"
#include "ixgbe.h"
#include "ixgbe_datapath.h"
#include "ixgbe_fc.h"
#include "ixgbe_fdir.h"
#include "ixgbe_rsc.h"
#include "ixgbe_ipsec.h"
#include "ixgbe_ntuple.h"
#include "ixgbe_ptp.h"
#include "ixgbe_sriov.h"
#include "ixgbe_vt.h"
#include "ixgbevf.h"
#include "trace.h"

#define TYPE_IXGBE "ixgbe-base"
OBJECT_DECLARE_TYPE(IxgbeState, IxgbeClass, IXGBE)

/* What tells the parts apart */
typedef struct IxgbeVariant {
    const char *desc;
    uint16_t device_id;
    IxgbeMedia media;
    /* iPXE boot ROM (BIOS + UEFI) whose PCI header names device_id */
    const char *romfile;
} IxgbeVariant;

struct IxgbeClass {
    PCIDeviceClass parent_class;
    const IxgbeVariant *variant;
};

#define IXGBE_MMIO_BAR      0
#define IXGBE_IO_BAR        2
#define IXGBE_MSIX_BAR      4

#define IXGBE_CAP_PM        0x40
#define IXGBE_CAP_MSI       0x50
#define IXGBE_CAP_MSIX      0x70
#define IXGBE_CAP_PCIE      0xA0
#define IXGBE_CAP_AER       0x100
#define IXGBE_CAP_ARI       0x150
#define IXGBE_CAP_SRIOV     0x160

/* The VFs' BARs: registers, and the MSI-X table and PBA */
#define IXGBE_VF_MMIO_BAR   0
#define IXGBE_VF_MSIX_BAR   3

/* I/O BAR: indirect register access through IOADDR/IODATA */
#define IXGBE_IOADDR        0x0
#define IXGBE_IODATA        0x4

/* A VF's PCI function, for migration */
typedef struct IxgbeVfPci {
    PCIDevice *dev;
} IxgbeVfPci;

struct IxgbeState {
    PCIDevice parent_obj;
    NICState *nic;
    NICConf conf;

    MemoryRegion mmio;
    MemoryRegion io;
    MemoryRegion msix;

    uint32_t ioaddr;
    OnOffAuto sriov;
    IxgbeVfPci vf_pci[IXGBE_MAX_VFS];
    IxgbeCore core;
};

static const IxgbeVariant ixgbe_kr = {
    .desc = "Intel 82599 10 Gigabit Ethernet Controller (10GBASE-KR)",
    .device_id = IXGBE_DEV_ID_82599_KR,
    .media = IXGBE_MEDIA_KR,
    .romfile = "efi-ixgbe-1517.rom",
};

static const IxgbeVariant ixgbe_combo = {
    .desc = "Intel 82599 10 Gigabit Ethernet Controller "
            "(KX4/KX/KR backplane)",
    .device_id = IXGBE_DEV_ID_82599_COMBO_BACKPLANE,
    .media = IXGBE_MEDIA_KX4_KX_KR,
    .romfile = "efi-ixgbe-10f8.rom",
};

static const IxgbeVariant ixgbe_sfp = {
    .desc = "Intel 82599 10 Gigabit Ethernet Controller (SFP+, X520)",
    .device_id = IXGBE_DEV_ID_82599_SFP,
    .media = IXGBE_MEDIA_SFP,
    .romfile = "efi-ixgbe-10fb.rom",
};

IxgbeCore *ixgbe_pf_core(PCIDevice *pf)
{
    return &IXGBE(pf)->core;
}

static uint64_t ixgbe_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    IxgbeState *s = opaque;

    return ixgbe_bar_read(&s->core, -1, addr);
}

static void ixgbe_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    IxgbeState *s = opaque;

    ixgbe_bar_write(&s->core, -1, addr, val, true);
}

static const MemoryRegionOps ixgbe_mmio_ops = {
    .read = ixgbe_mmio_read,
    .write = ixgbe_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static uint64_t ixgbe_io_read(void *opaque, hwaddr addr, unsigned size)
{
    IxgbeState *s = opaque;

    switch (addr) {
    case IXGBE_IOADDR:
        return s->ioaddr;
    case IXGBE_IODATA:
        return ixgbe_bar_read(&s->core, -1, s->ioaddr);
    default:
        return 0;
    }
}

static void ixgbe_io_write(void *opaque, hwaddr addr, uint64_t val,
                           unsigned size)
{
    IxgbeState *s = opaque;

    switch (addr) {
    case IXGBE_IOADDR:
        s->ioaddr = val & (IXGBE_MMIO_SIZE - 4);
        break;
    case IXGBE_IODATA:
        ixgbe_bar_write(&s->core, -1, s->ioaddr, val, false);
        break;
    default:
        break;
    }
}

static const MemoryRegionOps ixgbe_io_ops = {
    .read = ixgbe_io_read,
    .write = ixgbe_io_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static bool ixgbe_nc_can_receive(NetClientState *nc)
{
    IxgbeState *s = qemu_get_nic_opaque(nc);

    return ixgbe_rx_can_receive(&s->core);
}

static ssize_t ixgbe_nc_receive_iov(NetClientState *nc,
                                    const struct iovec *iov, int iovcnt)
{
    IxgbeState *s = qemu_get_nic_opaque(nc);

    ssize_t ret = ixgbe_rx_receive(&s->core, iov, iovcnt, false);

    /* A frame the backend keeps until a tail write makes room for it */
    ixgbe_coalesce_rx_wait(&s->core, ret == 0);
    /* ...which the link partner is asked to pause for (ixgbe_fc.c) */
    ixgbe_fc_rx_held(&s->core, ret == 0);
    return ret;
}

static ssize_t ixgbe_nc_receive(NetClientState *nc, const uint8_t *buf,
                                size_t size)
{
    const struct iovec iov = { .iov_base = (uint8_t *)buf, .iov_len = size };

    return ixgbe_nc_receive_iov(nc, &iov, 1);
}

static void ixgbe_nc_link_status_changed(NetClientState *nc)
{
    IxgbeState *s = qemu_get_nic_opaque(nc);

    if (ixgbe_core_enter(&s->core, "link change", -1, 0)) {
        ixgbe_core_set_link_status(&s->core);
        ixgbe_core_leave(&s->core);
    }
}

static NetClientInfo ixgbe_net_info = {
    .type = NET_CLIENT_DRIVER_NIC,
    .size = sizeof(NICState),
    .can_receive = ixgbe_nc_can_receive,
    .receive = ixgbe_nc_receive,
    .receive_iov = ixgbe_nc_receive_iov,
    .link_status_changed = ixgbe_nc_link_status_changed,
};

static void ixgbe_write_config(PCIDevice *dev, uint32_t addr, uint32_t val,
                               int len)
{
    IxgbeState *s = IXGBE(dev);

    /* Through ECAM, config space is in reach of the device's own DMA */
    if (!ixgbe_core_enter(&s->core, "config write", -1, addr)) {
        return;
    }
    pci_default_write_config(dev, addr, val, len);
    pcie_cap_flr_write_config(dev, addr, val, len);
    if (range_covers_byte(addr, len, PCI_COMMAND) &&
        (dev->config[PCI_COMMAND] & PCI_COMMAND_MASTER) &&
        ixgbe_rx_can_receive(&s->core)) {
        qemu_flush_queued_packets(qemu_get_queue(s->nic));
    }
    ixgbe_core_leave(&s->core);
}

/*
 * SR-IOV as the 82599 has it: 64 VFs (Linux offers 63, keeping a pool for
 * the PF) at routing IDs PF + 0x80, 0x82, ..., 0xFE, so the PF must be
 * function 0 or 1 of its bus, behind a downstream port (ARI makes the VFs
 * reachable there).  "auto" enables it where the VFs fit.
 */
static bool ixgbe_sriov_fits(PCIDevice *d)
{
    PCIBus *bus = pci_get_bus(d);
    unsigned last = d->devfn + IXGBE_VF_OFFSET +
                    (IXGBE_MAX_VFS - 1) * IXGBE_VF_STRIDE;

    if (last >= PCI_DEVFN_MAX) {
        return false;
    }
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        if (bus->devices[d->devfn + IXGBE_VF_OFFSET + n * IXGBE_VF_STRIDE]) {
            return false;
        }
    }
    return true;
}

/* 1: SR-IOV on, 0: off, -1: asked for where it cannot be */
static int ixgbe_sriov_wanted(IxgbeState *s, Error **errp)
{
    PCIDevice *d = PCI_DEVICE(s);

    switch (s->sriov) {
    case ON_OFF_AUTO_OFF:
        return 0;
    case ON_OFF_AUTO_ON:
        if (!ixgbe_sriov_fits(d)) {
            error_setg(errp, "ixgbe: sriov=on needs routing IDs 0x%x..0x%x "
                       "free on the bus; put the device at function 0 "
                       "behind a PCI Express port",
                       d->devfn + IXGBE_VF_OFFSET,
                       d->devfn + IXGBE_VF_OFFSET +
                       (IXGBE_MAX_VFS - 1) * IXGBE_VF_STRIDE);
            return -1;
        }
        return 1;
    default:
        return ixgbe_sriov_fits(d);
    }
}

static bool ixgbe_sriov_init(PCIDevice *d, Error **errp)
{
    pcie_ari_init(d, IXGBE_CAP_ARI);
    if (!pcie_sriov_pf_init(d, IXGBE_CAP_SRIOV, TYPE_IXGBEVF,
                            IXGBE_DEV_ID_82599_VF, IXGBE_MAX_VFS,
                            IXGBE_MAX_VFS, IXGBE_VF_OFFSET, IXGBE_VF_STRIDE,
                            errp)) {
        return false;
    }
    pcie_sriov_pf_init_vf_bar(d, IXGBE_VF_MMIO_BAR,
                              PCI_BASE_ADDRESS_MEM_TYPE_64 |
                              PCI_BASE_ADDRESS_MEM_PREFETCH,
                              IXGBE_VF_MMIO_SIZE);
    pcie_sriov_pf_init_vf_bar(d, IXGBE_VF_MSIX_BAR,
                              PCI_BASE_ADDRESS_MEM_TYPE_64 |
                              PCI_BASE_ADDRESS_MEM_PREFETCH,
                              IXGBE_VF_MSIX_SIZE);
    for (unsigned n = 0; n < IXGBE_MAX_VFS; n++) {
        IXGBE(d)->vf_pci[n].dev = d->exp.sriov_pf.vf[n];
    }
    return true;
}

/*
 * The parts of the device beside its register file, in the order the
 * core calls them: the held register writes first, so that a VM stop
 * applies them before the datapath writes back what it holds.
 */
static const IxgbePart *const ixgbe_parts[] = {
    &ixgbe_coalesce_part,
    &ixgbe_sfp_part,
    &ixgbe_datapath_part,
    &ixgbe_fc_part,
    &ixgbe_rsc_part,
    &ixgbe_ptp_part,
    &ixgbe_ntuple_part,
    &ixgbe_fdir_part,
    &ixgbe_ipsec_part,
    &ixgbe_vt_part,
    &ixgbe_sriov_part,
};

static void ixgbe_pci_realize(PCIDevice *d, Error **errp)
{
    IxgbeState *s = IXGBE(d);
    DeviceState *dev = DEVICE(d);
    int ret;

    d->config_write = ixgbe_write_config;
    d->config[PCI_CACHE_LINE_SIZE] = 0x10;
    d->config[PCI_INTERRUPT_PIN] = 1;

    memory_region_init_io(&s->mmio, OBJECT(s), &ixgbe_mmio_ops, s,
                          "ixgbe-mmio", IXGBE_MMIO_SIZE);
    ixgbe_coalesce_add_zones(&s->mmio, false);
    pci_register_bar(d, IXGBE_MMIO_BAR, PCI_BASE_ADDRESS_MEM_TYPE_64,
                     &s->mmio);
    memory_region_init_io(&s->io, OBJECT(s), &ixgbe_io_ops, s,
                          "ixgbe-io", IXGBE_IO_SIZE);
    /* I/O ports are never coalesced, but the writes before them apply first */
    memory_region_set_flush_coalesced(&s->io);
    pci_register_bar(d, IXGBE_IO_BAR, PCI_BASE_ADDRESS_SPACE_IO, &s->io);
    memory_region_init(&s->msix, OBJECT(s), "ixgbe-msix", IXGBE_MSIX_SIZE);
    pci_register_bar(d, IXGBE_MSIX_BAR, PCI_BASE_ADDRESS_MEM_TYPE_64,
                     &s->msix);

    if (pcie_endpoint_cap_init(d, IXGBE_CAP_PCIE) < 0) {
        error_setg(errp, "ixgbe: failed to add the PCIe capability");
        return;
    }
    /* The link an 82599 negotiates in its intended slot: x8 at 5 GT/s */
    pcie_cap_fill_link_ep_usp(d, QEMU_PCI_EXP_LNK_X8, QEMU_PCI_EXP_LNK_5GT);

    ret = msix_init(d, IXGBE_MSIX_VECTORS, &s->msix, IXGBE_MSIX_BAR, 0,
                    &s->msix, IXGBE_MSIX_BAR, IXGBE_MSIX_PBA_OFFSET,
                    IXGBE_CAP_MSIX, errp);
    if (ret < 0) {
        return;
    }
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        msix_vector_use(d, v);
    }
    ret = msi_init(d, IXGBE_CAP_MSI, 1, true, true, errp);
    if (ret < 0) {
        goto err_msix;
    }
    if (pci_pm_init(d, IXGBE_CAP_PM, errp) < 0) {
        goto err_msi;
    }
    pcie_cap_flr_init(d);
    if (pcie_aer_init(d, PCI_ERR_VER, IXGBE_CAP_AER, PCI_ERR_SIZEOF,
                      errp) < 0) {
        goto err_msi;
    }

    qemu_macaddr_default_if_unset(&s->conf.macaddr);
    s->nic = qemu_new_nic(&ixgbe_net_info, &s->conf,
                          object_get_typename(OBJECT(s)), dev->id,
                          &dev->mem_reentrancy_guard, s);
    qemu_format_nic_info_str(qemu_get_queue(s->nic), s->conf.macaddr.a);

    ixgbe_core_realize(&s->core, d, s->nic, s->conf.macaddr.a, ixgbe_parts,
                       ARRAY_SIZE(ixgbe_parts));

    ret = ixgbe_sriov_wanted(s, errp);
    if (ret < 0 || (ret > 0 && !ixgbe_sriov_init(d, errp))) {
        ixgbe_core_unrealize(&s->core);
        qemu_del_nic(s->nic);
        pcie_aer_exit(d);
        goto err_msi;
    }
    return;

err_msi:
    msi_uninit(d);
err_msix:
    msix_unuse_all_vectors(d);
    msix_uninit(d, &s->msix, &s->msix);
}

static void ixgbe_pci_uninit(PCIDevice *d)
{
    IxgbeState *s = IXGBE(d);

    pcie_sriov_pf_exit(d);
    ixgbe_core_unrealize(&s->core);
    pcie_aer_exit(d);
    pcie_cap_exit(d);
    qemu_del_nic(s->nic);
    msix_unuse_all_vectors(d);
    msix_uninit(d, &s->msix, &s->msix);
    msi_uninit(d);
}

static void ixgbe_reset_hold(Object *obj, ResetType type)
{
    IxgbeState *s = IXGBE(obj);

    ixgbe_core_reset(&s->core);
}

static int ixgbe_post_load(void *opaque, int version_id)
{
    IxgbeState *s = opaque;

    if (s->ioaddr & ~(IXGBE_MMIO_SIZE - 4)) {
        error_report("ixgbe: migrated IOADDR 0x%x is outside the registers",
                     s->ioaddr);
        return -EINVAL;
    }
    return ixgbe_core_post_load(&s->core);
}

static int ixgbe_pre_save(void *opaque)
{
    IxgbeState *s = opaque;

    return ixgbe_core_pre_save(&s->core);
}

static bool ixgbe_txq_frags_needed(void *opaque)
{
    IxgbeTxQueue *txq = opaque;

    return txq->nfrags != 0;
}

/* The buffers of a packet still waiting for its EOP descriptor */
static const VMStateDescription ixgbe_vmstate_txq_frags = {
    .name = "ixgbe-txq/frags",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_txq_frags_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(nfrags, IxgbeTxQueue),
        VMSTATE_UINT64_ARRAY(frag_addr, IxgbeTxQueue, IXGBE_MAX_TX_FRAGS),
        VMSTATE_UINT32_ARRAY(frag_len, IxgbeTxQueue, IXGBE_MAX_TX_FRAGS),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_tx_ctx = {
    .name = "ixgbe-tx-ctx",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(vlan_macip_lens, IxgbeTxContext),
        VMSTATE_UINT32(seqnum_seed, IxgbeTxContext),
        VMSTATE_UINT32(type_tucmd_mlhl, IxgbeTxContext),
        VMSTATE_UINT32(mss_l4len_idx, IxgbeTxContext),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_txq = {
    .name = "ixgbe-txq",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(ctx, IxgbeTxQueue, 2, 1, ixgbe_vmstate_tx_ctx,
                             IxgbeTxContext),
        VMSTATE_UINT32(first_cmd, IxgbeTxQueue),
        VMSTATE_UINT32(first_olinfo, IxgbeTxQueue),
        VMSTATE_BOOL(in_packet, IxgbeTxQueue),
        VMSTATE_BOOL(drop, IxgbeTxQueue),
        VMSTATE_UINT32(wb_pending, IxgbeTxQueue),
        VMSTATE_UINT32(wb_next, IxgbeTxQueue),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &ixgbe_vmstate_txq_frags,
        NULL
    }
};

static const VMStateDescription ixgbe_vmstate_vector = {
    .name = "ixgbe-vector",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_TIMER_PTR(timer, IxgbeVector),
        VMSTATE_BOOL(armed, IxgbeVector),
        VMSTATE_END_OF_LIST()
    }
};

/* VF state that has no PF register, sent while the PF can have VFs */
static bool ixgbe_sriov_state_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return PCI_DEVICE(s)->exp.sriov_cap != 0;
}

/*
 * An enabled VF's PCI state.  The PF's config space, loaded before this,
 * has enabled the same VFs on the destination.
 */
static bool ixgbe_vf_enabled(void *opaque, int version_id)
{
    IxgbeVfPci *vf = opaque;

    return vf->dev && vf->dev->enabled;
}

static const VMStateDescription ixgbe_vmstate_vf_pci = {
    .name = "ixgbe-vf-pci",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER_TEST(dev, IxgbeVfPci, ixgbe_vf_enabled,
                                    vmstate_ixgbevf_pci, PCIDevice),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_vf = {
    .name = "ixgbe-vf",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(mailbox, IxgbeVf),
        VMSTATE_UINT32(eicr, IxgbeVf),
        VMSTATE_UINT32(eims, IxgbeVf),
        VMSTATE_UINT32(eiac, IxgbeVf),
        VMSTATE_UINT32(eiam, IxgbeVf),
        VMSTATE_UINT32_ARRAY(eitr, IxgbeVf, IXGBE_VF_MSIX_VECTORS),
        VMSTATE_UINT32_ARRAY(ivar, IxgbeVf, IXGBE_VF_IVARS),
        VMSTATE_UINT32(ivar_misc, IxgbeVf),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_sriov = {
    .name = "ixgbe/sriov",
    .version_id = 2,
    .minimum_version_id = 2,
    .needed = ixgbe_sriov_state_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(core.pf_rst_pending, IxgbeState),
        VMSTATE_STRUCT_ARRAY(core.vf, IxgbeState, IXGBE_MAX_VFS, 1,
                             ixgbe_vmstate_vf, IxgbeVf),
        VMSTATE_STRUCT_ARRAY(vf_pci, IxgbeState, IXGBE_MAX_VFS, 1,
                             ixgbe_vmstate_vf_pci, IxgbeVfPci),
        VMSTATE_STRUCT_2DARRAY(core.vf_vec, IxgbeState, IXGBE_MAX_VFS,
                               IXGBE_VF_MSIX_VECTORS, 1,
                               ixgbe_vmstate_vector, IxgbeVector),
        VMSTATE_END_OF_LIST()
    }
};

/* Per queue drop enables (QDE): sent once the guest has set one */
static bool ixgbe_qde_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return s->core.qde[0] || s->core.qde[1];
}

static const VMStateDescription ixgbe_vmstate_qde = {
    .name = "ixgbe/qde",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_qde_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64_ARRAY(core.qde, IxgbeState, 2),
        VMSTATE_END_OF_LIST()
    }
};

/* The IEEE 1588 clock: sent once the guest has started it or set it */
static bool ixgbe_ptp_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return s->core.ptp.base || ixgbe_get(&s->core, IXGBE_TIMINCA);
}

static const VMStateDescription ixgbe_vmstate_ptp = {
    .name = "ixgbe/ptp",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_ptp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT64(core.ptp.base, IxgbeState),
        VMSTATE_INT64(core.ptp.base_ns, IxgbeState),
        VMSTATE_UINT32(core.ptp.systimh_latch, IxgbeState),
        VMSTATE_END_OF_LIST()
    }
};

/* The SFP+ cage: the module in it and where the I2C bus is */
static bool ixgbe_sfp_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return s->core.sfp.media == IXGBE_MEDIA_SFP;
}

static const VMStateDescription ixgbe_vmstate_sfp_cage = {
    .name = "ixgbe/sfp",
    .version_id = 2,
    .minimum_version_id = 2,
    .needed = ixgbe_sfp_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT(core.sfp, IxgbeState, 2, ixgbe_vmstate_sfp, IxgbeSfp),
        VMSTATE_END_OF_LIST()
    }
};

/* The Flow Director's filters: sent once the guest has added one */
static bool ixgbe_fdir_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return ixgbe_fdir_migration_needed(&s->core);
}

static const VMStateDescription ixgbe_vmstate_fdir = {
    .name = "ixgbe/fdir",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_fdir_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER(core.fdir, IxgbeState,
                               ixgbe_vmstate_fdir_table, IxgbeFdir),
        VMSTATE_END_OF_LIST()
    }
};

/* The IPsec SA tables: sent while any entry is set */
static bool ixgbe_ipsec_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return ixgbe_ipsec_migration_needed(&s->core);
}

static const VMStateDescription ixgbe_vmstate_ipsec_tx_sa = {
    .name = "ixgbe/ipsec/tx-sa",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32_ARRAY(key, IxgbeIpsecTxSa, 4),
        VMSTATE_UINT32(salt, IxgbeIpsecTxSa),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_ipsec_rx_sa = {
    .name = "ixgbe/ipsec/rx-sa",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_UINT32(spi, IxgbeIpsecRxSa),
        VMSTATE_UINT32(ip_idx, IxgbeIpsecRxSa),
        VMSTATE_UINT32_ARRAY(key, IxgbeIpsecRxSa, 4),
        VMSTATE_UINT32(salt, IxgbeIpsecRxSa),
        VMSTATE_UINT32(mode, IxgbeIpsecRxSa),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_ipsec_tables = {
    .name = "ixgbe/ipsec/tables",
    .version_id = 1,
    .minimum_version_id = 1,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_ARRAY(tx, IxgbeIpsec, IXGBE_IPSEC_SA_COUNT, 1,
                             ixgbe_vmstate_ipsec_tx_sa, IxgbeIpsecTxSa),
        VMSTATE_STRUCT_ARRAY(rx, IxgbeIpsec, IXGBE_IPSEC_SA_COUNT, 1,
                             ixgbe_vmstate_ipsec_rx_sa, IxgbeIpsecRxSa),
        VMSTATE_UINT32_2DARRAY(rx_ip, IxgbeIpsec, IXGBE_IPSEC_RX_IP_COUNT, 4),
        VMSTATE_END_OF_LIST()
    }
};

static const VMStateDescription ixgbe_vmstate_ipsec = {
    .name = "ixgbe/ipsec",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_ipsec_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER(core.ipsec, IxgbeState,
                               ixgbe_vmstate_ipsec_tables, IxgbeIpsec),
        VMSTATE_END_OF_LIST()
    }
};

/* RSC: the flows held apart after a lone segment, while there are any */
static bool ixgbe_rsc_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return ixgbe_rsc_migration_needed(&s->core);
}

static const VMStateDescription ixgbe_vmstate_rsc = {
    .name = "ixgbe/rsc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_rsc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_STRUCT_POINTER(core.rsc, IxgbeState,
                               ixgbe_vmstate_rsc_lone_table, IxgbeRsc),
        VMSTATE_END_OF_LIST()
    }
};

/*
 * The backend's link, which STATUS.LU and LINKS report: sent while it is
 * down (a stream without it means up).
 */
static bool ixgbe_link_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return s->core.backend_link_down;
}

static const VMStateDescription ixgbe_vmstate_link = {
    .name = "ixgbe/link",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_link_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(core.backend_link_down, IxgbeState),
        VMSTATE_END_OF_LIST()
    }
};

/* Transmitted flow control: sent while an XOFF has not been lifted */
static bool ixgbe_fc_needed(void *opaque)
{
    IxgbeState *s = opaque;

    return s->core.fc.xoff;
}

static const VMStateDescription ixgbe_vmstate_fc = {
    .name = "ixgbe/fc",
    .version_id = 1,
    .minimum_version_id = 1,
    .needed = ixgbe_fc_needed,
    .fields = (const VMStateField[]) {
        VMSTATE_BOOL(core.fc.xoff, IxgbeState),
        VMSTATE_TIMER_PTR(core.fc.refresh, IxgbeState),
        VMSTATE_END_OF_LIST()
    }
};

static int ixgbe_pre_load(void *opaque)
{
    IxgbeState *s = opaque;

    s->core.backend_link_down = false;
    return 0;
}

static const VMStateDescription ixgbe_vmstate = {
    .name = "ixgbe",
    .version_id = 1,
    .minimum_version_id = 1,
    .pre_save = ixgbe_pre_save,
    .pre_load = ixgbe_pre_load,
    .post_load = ixgbe_post_load,
    .fields = (const VMStateField[]) {
        VMSTATE_PCI_DEVICE(parent_obj, IxgbeState),
        VMSTATE_MSIX(parent_obj, IxgbeState),
        VMSTATE_UINT32(ioaddr, IxgbeState),
        VMSTATE_UINT32_ARRAY(core.mac, IxgbeState, IXGBE_NUM_REGS),
        VMSTATE_UINT16_ARRAY(core.eeprom, IxgbeState, IXGBE_EEPROM_WORDS),
        VMSTATE_UINT64(core.vec_cause, IxgbeState),
        VMSTATE_UINT64(core.vec_mask, IxgbeState),
        VMSTATE_UINT64(core.vec_automask, IxgbeState),
        VMSTATE_UINT32(core.oth_cause, IxgbeState),
        VMSTATE_UINT32(core.oth_mask, IxgbeState),
        VMSTATE_BOOL(core.intx_level, IxgbeState),
        VMSTATE_STRUCT_ARRAY(core.vec, IxgbeState, IXGBE_MSIX_VECTORS, 1,
                             ixgbe_vmstate_vector, IxgbeVector),
        VMSTATE_STRUCT_ARRAY(core.txq, IxgbeState, IXGBE_NUM_QUEUES, 1,
                             ixgbe_vmstate_txq, IxgbeTxQueue),
        VMSTATE_UINT8_ARRAY(core.permanent_mac, IxgbeState, 6),
        VMSTATE_END_OF_LIST()
    },
    .subsections = (const VMStateDescription * const []) {
        &ixgbe_vmstate_ptp,
        &ixgbe_vmstate_sfp_cage,
        &ixgbe_vmstate_fdir,
        &ixgbe_vmstate_sriov,
        &ixgbe_vmstate_qde,
        &ixgbe_vmstate_link,
        &ixgbe_vmstate_ipsec,
        &ixgbe_vmstate_fc,
        &ixgbe_vmstate_rsc,
        NULL
    }
};

static const Property ixgbe_properties[] = {
    DEFINE_NIC_PROPERTIES(IxgbeState, conf),
    DEFINE_PROP_ON_OFF_AUTO("sriov", IxgbeState, sriov, ON_OFF_AUTO_AUTO),
    DEFINE_PROP_BOOL("x-defer-coalesced", IxgbeState, core.coalesce.defer,
                     false),
};

static char *ixgbe_get_sfp(Object *obj, Error **errp)
{
    IxgbeState *s = IXGBE(obj);

    return g_strdup(ixgbe_sfp_type_name(s->core.sfp.type));
}

/* Before realize: the module the port starts with; after: a swap */
static void ixgbe_set_sfp(Object *obj, const char *value, Error **errp)
{
    IxgbeState *s = IXGBE(obj);
    IxgbeSfpType type;

    if (!ixgbe_sfp_type_parse(value, &type, errp)) {
        return;
    }
    if (DEVICE(obj)->realized) {
        if (ixgbe_core_enter(&s->core, "module swap", -1, 0)) {
            ixgbe_sfp_change_module(&s->core, type);
            ixgbe_core_leave(&s->core);
        }
    } else {
        s->core.sfp.type = type;
    }
}

static void ixgbe_base_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);
    PCIDeviceClass *c = PCI_DEVICE_CLASS(klass);

    c->realize = ixgbe_pci_realize;
    c->exit = ixgbe_pci_uninit;
    c->vendor_id = PCI_VENDOR_ID_INTEL;
    c->revision = 1;
    c->class_id = PCI_CLASS_NETWORK_ETHERNET;
    c->subsystem_vendor_id = PCI_VENDOR_ID_INTEL;
    c->subsystem_id = IXGBE_SUBSYS_ID;

    rc->phases.hold = ixgbe_reset_hold;

    dc->vmsd = &ixgbe_vmstate;
    device_class_set_props(dc, ixgbe_properties);
    set_bit(DEVICE_CATEGORY_NETWORK, dc->categories);
}

static void ixgbe_variant_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *c = PCI_DEVICE_CLASS(klass);
    IxgbeClass *ic = IXGBE_CLASS(klass);
    const IxgbeVariant *v = data;

    ic->variant = v;
    c->device_id = v->device_id;
    c->romfile = v->romfile;
    dc->desc = v->desc;
    if (v->media == IXGBE_MEDIA_SFP) {
        object_class_property_add_str(klass, "sfp", ixgbe_get_sfp,
                                      ixgbe_set_sfp);
        object_class_property_set_description(klass, "sfp",
            "SFP+ module in the cage: none, da (passive direct-attach "
            "cable, the default), sr (Intel 10GBASE-SR optic) or "
            "unsupported (third-party optic); settable at run time");
    }
}

static void ixgbe_instance_init(Object *obj)
{
    IxgbeState *s = IXGBE(obj);
    const IxgbeVariant *v = IXGBE_GET_CLASS(obj)->variant;

    ixgbe_sfp_init(&s->core, v->media, IXGBE_SFP_DA);
    device_add_bootindex_property(obj, &s->conf.bootindex, "bootindex",
                                  "/ethernet-phy@0", DEVICE(obj));
}

#define IXGBE_VARIANT_TYPE(type_name, variant) { \
        .name = type_name, \
        .parent = TYPE_IXGBE, \
        .class_init = ixgbe_variant_class_init, \
        .class_data = (void *)&variant, \
    }

static const TypeInfo ixgbe_types[] = {
    {
        .name = TYPE_IXGBE,
        .parent = TYPE_PCI_DEVICE,
        .instance_size = sizeof(IxgbeState),
        .class_size = sizeof(IxgbeClass),
        .class_init = ixgbe_base_class_init,
        .instance_init = ixgbe_instance_init,
        .abstract = true,
        .interfaces = (InterfaceInfo[]) {
            { INTERFACE_PCIE_DEVICE },
            { }
        },
    },
    IXGBE_VARIANT_TYPE("ixgbe", ixgbe_kr),
    IXGBE_VARIANT_TYPE("ixgbe-combo", ixgbe_combo),
    IXGBE_VARIANT_TYPE("ixgbe-sfp", ixgbe_sfp),
};

DEFINE_TYPES(ixgbe_types)
