/*
 * Intel 82599 10 GbE controller: register file, EEPROM, link and
 * interrupt logic.
 *
 * Every register the model knows is described once, by a row of
 * ixgbe_reg_table or of a part's table (IxgbePart): offset, instance
 * count and stride, reset value, writable bits, whether a read clears it,
 * the handler for registers with side effects, and which registers
 * another address is an alias of.  Registers in no table behave as plain
 * storage; accesses to them have a trace event of their own
 * (ixgbe_reg_unmodelled) and are reported once (LOG_UNIMP).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/timer.h"
#include "system/runstate.h"
#include "net/net.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/msi.h"
#include "hw/pci/msix.h"
#include "net_tx_pkt.h"
#include "net_rx_pkt.h"
#include "ixgbe_core.h"
#include "trace.h"


/* ------------------------------------------------------------------ */
/* Interrupts                                                          */
/* ------------------------------------------------------------------ */

static bool ixgbe_msix_mode(IxgbeCore *core)
{
    return msix_enabled(core->owner) &&
           (ixgbe_get(core, IXGBE_GPIE) & IXGBE_GPIE_MSIX_MODE);
}

static uint32_t ixgbe_eicr_value(IxgbeCore *core)
{
    uint32_t v = (uint32_t)(core->vec_cause & IXGBE_EICR_RTX_QUEUE) |
                 core->oth_cause;

    if (core->oth_cause & IXGBE_EICR_MISC_CAUSES) {
        v |= IXGBE_EICR_OTHER;
    }
    return v;
}

static uint32_t ixgbe_eitr_interval_ns(IxgbeCore *core, unsigned vector)
{
    hwaddr a = vector < 24 ? IXGBE_EITR_LO + vector * 4
                           : IXGBE_EITR_HI + (vector - 24) * 4;
    return ixgbe_itr_interval_ns(ixgbe_get(core, a));
}

static int ixgbe_other_vector(IxgbeCore *core)
{
    uint32_t ent = (ixgbe_get(core, IXGBE_IVAR_MISC) >> 8) & 0xFF;

    return (ent & IXGBE_IVAR_VALID) ? (int)(ent & IXGBE_IVAR_VECTOR_MASK) : -1;
}

static bool ixgbe_legacy_pending(IxgbeCore *core)
{
    uint32_t mask = (uint32_t)(core->vec_mask & IXGBE_EICR_RTX_QUEUE) |
                    core->oth_mask;

    return ixgbe_eicr_value(core) & mask;
}

/* The IVAR byte that routes a queue's RX or TX cause */
uint32_t ixgbe_ivar_entry(IxgbeCore *core, unsigned queue, bool is_tx)
{
    return ixgbe_ivar_byte(ixgbe_get(core, IXGBE_IVAR(queue / 2)),
                           queue, is_tx);
}

/* Each part is told before a VF's interrupt for queue is signalled */
void ixgbe_before_queue_irq(IxgbeCore *core, unsigned queue)
{
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->before_queue_irq) {
            core->parts[i]->before_queue_irq(core, queue);
        }
    }
}

/* Each part is told before an interrupt is signalled on vector */
static void ixgbe_before_irq(IxgbeCore *core, int vector)
{
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->before_irq) {
            core->parts[i]->before_irq(core, vector);
        }
    }
}

static void ixgbe_arm_vector(IxgbeCore *core, unsigned v)
{
    uint32_t ns = ixgbe_eitr_interval_ns(core, v);

    if (ns) {
        core->vec[v].armed = true;
        timer_mod(core->vec[v].timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + ns);
    }
}

/* Signal MSI-X vector v now: flush write-backs, auto-clear, auto-mask */
static void ixgbe_msix_fire(IxgbeCore *core, unsigned v)
{
    uint32_t gpie = ixgbe_get(core, IXGBE_GPIE);
    uint32_t eiac = ixgbe_get(core, IXGBE_EIAC);
    uint64_t bit = BIT_ULL(v);

    ixgbe_before_irq(core, v);

    if (v >= 16 || (eiac & bit)) {
        core->vec_cause &= ~bit;
    }
    if (gpie & IXGBE_GPIE_EIAME) {
        core->vec_mask &= ~(core->vec_automask & bit);
    }
    if (ixgbe_other_vector(core) == (int)v) {
        uint32_t eiam = ixgbe_get(core, IXGBE_EIAM) & IXGBE_EICR_MISC_CAUSES;

        if (!(gpie & IXGBE_GPIE_OCD)) {
            core->oth_cause &= ~(eiac & IXGBE_EICR_MISC_CAUSES);
        }
        if (gpie & IXGBE_GPIE_EIAME) {
            core->oth_mask &= ~eiam;
        }
    }
    trace_ixgbe_irq_msix(v);
    msix_notify(core->owner, v);
    ixgbe_arm_vector(core, v);
}

static void ixgbe_update_interrupts(IxgbeCore *core)
{
    PCIDevice *d = core->owner;

    if (ixgbe_msix_mode(core)) {
        int ov = ixgbe_other_vector(core);
        uint64_t pend = core->vec_cause & core->vec_mask;

        if (ov >= 0 &&
            (core->oth_cause & core->oth_mask & IXGBE_EICR_MISC_CAUSES)) {
            pend |= BIT_ULL(ov);
        }
        while (pend) {
            unsigned v = ctz64(pend);

            pend &= pend - 1;
            if (!core->vec[v].armed) {
                ixgbe_msix_fire(core, v);
            }
        }
        return;
    }

    /*
     * One message for every cause: MSI, or MSI-X while GPIE.Multiple_MSIX
     * is clear, which signals MSI-X vector 0 (DPDK under vfio-pci runs the
     * port this way when it wants no per-queue interrupts).
     */
    if (msi_enabled(d) || msix_enabled(d)) {
        if (core->intx_level) {
            /* Message interrupts replace the pin */
            core->intx_level = false;
            trace_ixgbe_irq_intx(false);
            pci_set_irq(d, 0);
        }
        if (ixgbe_legacy_pending(core) && !core->vec[0].armed) {
            ixgbe_before_irq(core, -1);
            if (msix_enabled(d)) {
                trace_ixgbe_irq_msix(0);
                msix_notify(d, 0);
            } else {
                trace_ixgbe_irq_msi();
                msi_notify(d, 0);
            }
            ixgbe_arm_vector(core, 0);
        }
        return;
    }

    if (ixgbe_legacy_pending(core) != core->intx_level) {
        core->intx_level = !core->intx_level;
        if (core->intx_level) {
            ixgbe_before_irq(core, -1);
        }
        trace_ixgbe_irq_intx(core->intx_level);
        pci_set_irq(d, core->intx_level);
    }
}

static void ixgbe_vector_timer(void *opaque)
{
    IxgbeVector *vec = opaque;

    if (!ixgbe_core_enter(vec->core, "interrupt timer", -1, 0)) {
        return;
    }
    vec->armed = false;
    ixgbe_update_interrupts(vec->core);
    ixgbe_core_leave(vec->core);
}

void ixgbe_raise_queue_cause(IxgbeCore *core, bool is_tx, unsigned queue)
{
    uint32_t ent = ixgbe_ivar_entry(core, queue, is_tx);

    if (!(ent & IXGBE_IVAR_VALID)) {
        return;
    }
    /*
     * In MSI-X mode the entry names a vector; otherwise it names one of the
     * sixteen EICR queue bits.
     */
    if (ixgbe_msix_mode(core)) {
        core->vec_cause |= BIT_ULL(ent & IXGBE_IVAR_VECTOR_MASK);
    } else {
        core->vec_cause |= BIT_ULL(ent & 0xF);
    }
    ixgbe_update_interrupts(core);
}

void ixgbe_raise_other_cause(IxgbeCore *core, uint32_t cause)
{
    core->oth_cause |= cause & IXGBE_EICR_MISC_CAUSES;
    ixgbe_update_interrupts(core);
}

static uint32_t ixgbe_read_eicr(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = ixgbe_eicr_value(core);

    /* In MSI-X mode causes are cleared by writes or auto-clear only */
    if (!ixgbe_msix_mode(core)) {
        core->vec_cause &= ~(uint64_t)IXGBE_EICR_RTX_QUEUE;
        core->oth_cause = 0;
        ixgbe_update_interrupts(core);
    }
    return v;
}

static uint32_t ixgbe_read_eics(IxgbeCore *core, hwaddr addr)
{
    return ixgbe_eicr_value(core);
}

static void ixgbe_write_eicr(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    core->vec_cause &= ~(uint64_t)(val & IXGBE_EICR_RTX_QUEUE);
    core->oth_cause &= ~(val & ~IXGBE_EICR_RTX_QUEUE);
    ixgbe_update_interrupts(core);
}

static void ixgbe_write_eics(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    core->vec_cause |= val & IXGBE_EICR_RTX_QUEUE;
    core->oth_cause |= val & IXGBE_EICR_MISC_CAUSES;
    ixgbe_update_interrupts(core);
}

static uint32_t ixgbe_read_eims(IxgbeCore *core, hwaddr addr)
{
    return (uint32_t)(core->vec_mask & IXGBE_EICR_RTX_QUEUE) | core->oth_mask;
}

static void ixgbe_write_eims(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    core->vec_mask |= val & IXGBE_EICR_RTX_QUEUE;
    core->oth_mask |= val & ~IXGBE_EICR_RTX_QUEUE;
    ixgbe_update_interrupts(core);
}

static void ixgbe_write_eimc(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    core->vec_mask &= ~(uint64_t)(val & IXGBE_EICR_RTX_QUEUE);
    core->oth_mask &= ~(val & ~IXGBE_EICR_RTX_QUEUE);
    ixgbe_update_interrupts(core);
}

static void ixgbe_write_eiam(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    core->vec_automask = (core->vec_automask & ~(uint64_t)IXGBE_EICR_RTX_QUEUE)
                         | (val & IXGBE_EICR_RTX_QUEUE);
    *ixgbe_reg(core, addr) = val;
}

static uint32_t ixgbe_read_eiam(IxgbeCore *core, hwaddr addr)
{
    return (ixgbe_get(core, addr) & ~IXGBE_EICR_RTX_QUEUE) |
           (uint32_t)(core->vec_automask & IXGBE_EICR_RTX_QUEUE);
}

/* The _EX registers each cover 32 vectors */
static unsigned ixgbe_ex_shift(hwaddr addr)
{
    return (addr & 4) ? 32 : 0;
}

static uint32_t ixgbe_read_eics_ex(IxgbeCore *core, hwaddr addr)
{
    return core->vec_cause >> ixgbe_ex_shift(addr);
}

static void ixgbe_write_eics_ex(IxgbeCore *core, hwaddr addr, uint32_t val,
                                uint32_t old)
{
    core->vec_cause |= (uint64_t)val << ixgbe_ex_shift(addr);
    ixgbe_update_interrupts(core);
}

static uint32_t ixgbe_read_eims_ex(IxgbeCore *core, hwaddr addr)
{
    return core->vec_mask >> ixgbe_ex_shift(addr);
}

static void ixgbe_write_eims_ex(IxgbeCore *core, hwaddr addr, uint32_t val,
                                uint32_t old)
{
    core->vec_mask |= (uint64_t)val << ixgbe_ex_shift(addr);
    ixgbe_update_interrupts(core);
}

static void ixgbe_write_eimc_ex(IxgbeCore *core, hwaddr addr, uint32_t val,
                                uint32_t old)
{
    core->vec_mask &= ~((uint64_t)val << ixgbe_ex_shift(addr));
    ixgbe_update_interrupts(core);
}

static uint32_t ixgbe_read_eiam_ex(IxgbeCore *core, hwaddr addr)
{
    return core->vec_automask >> ixgbe_ex_shift(addr);
}

static void ixgbe_write_eiam_ex(IxgbeCore *core, hwaddr addr, uint32_t val,
                                uint32_t old)
{
    unsigned sh = ixgbe_ex_shift(addr);

    core->vec_automask = (core->vec_automask & ~(0xFFFFFFFFULL << sh)) |
                         ((uint64_t)val << sh);
}

static void ixgbe_write_eitr(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    /* The counter field is not modelled; keep interval and LLI moderation */
    *ixgbe_reg(core, addr) = val & (IXGBE_EITR_INTERVAL_MASK |
                                    IXGBE_EITR_LLI_MOD);
}

static void ixgbe_write_pbacl(IxgbeCore *core, hwaddr addr, uint32_t val,
                              uint32_t old)
{
    for (unsigned v = 0; v < 32; v++) {
        if (val & BIT(v)) {
            msix_clr_pending(core->owner, v);
        }
    }
}

static void ixgbe_write_gpie(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    ixgbe_update_interrupts(core);
}

/* ------------------------------------------------------------------ */
/* Reset, EEPROM, semaphores, link                                     */
/* ------------------------------------------------------------------ */

static void ixgbe_soft_reset(IxgbeCore *core);

static void ixgbe_write_ctrl(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    if (val & (IXGBE_CTRL_RST | IXGBE_CTRL_LNK_RST)) {
        trace_ixgbe_reset(val);
        ixgbe_soft_reset(core);
        /* Reset completes at once: the bits read back clear */
        return;
    }
    *ixgbe_reg(core, addr) = val;
}

static bool ixgbe_link_up(IxgbeCore *core)
{
    NetClientState *nc = qemu_get_queue(core->nic);

    if (ixgbe_get(core, IXGBE_AUTOC) & IXGBE_AUTOC_FLU) {
        return true;
    }
    if (nc->link_down) {
        return false;
    }
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->link_ok && !core->parts[i]->link_ok(core)) {
            return false;
        }
    }
    return true;
}

static uint32_t ixgbe_read_status(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = 0;

    if (ixgbe_link_up(core)) {
        v |= IXGBE_STATUS_LINK_UP;
    }
    if (!(ixgbe_get(core, IXGBE_CTRL) & IXGBE_CTRL_GIO_DIS)) {
        v |= IXGBE_STATUS_GIO;
    }
    return v;
}

static uint32_t ixgbe_read_links(IxgbeCore *core, hwaddr addr)
{
    if (!ixgbe_link_up(core)) {
        return 0;
    }
    return IXGBE_LINKS_UP | IXGBE_LINKS_SPEED_10G | IXGBE_LINKS_KX_AN_COMP;
}

static uint32_t ixgbe_read_eec(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = ixgbe_get(core, addr);

    v |= IXGBE_EEC_PRES | IXGBE_EEC_ARD |
         (IXGBE_EEC_SIZE_FIELD << IXGBE_EEC_SIZE_SHIFT);
    if (v & IXGBE_EEC_EE_REQ) {
        v |= IXGBE_EEC_EE_GNT;
    }
    return v;
}

static void ixgbe_write_eerd(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    uint32_t word = (val >> IXGBE_EERD_ADDR_SHIFT) & IXGBE_EERD_ADDR_MASK;
    uint16_t data = 0;

    if (!(val & IXGBE_EERD_START)) {
        return;
    }
    if (word < IXGBE_EEPROM_WORDS) {
        data = core->eeprom[word];
    } else {
        qemu_log_mask(LOG_GUEST_ERROR,
                      "ixgbe: EERD read of word 0x%x beyond the EEPROM\n",
                      word);
    }
    *ixgbe_reg(core, addr) = ((uint32_t)data << IXGBE_EERD_DATA_SHIFT) |
                             (word << IXGBE_EERD_ADDR_SHIFT) |
                             IXGBE_EERD_DONE;
}

/* SWSM.SMBI is a hardware semaphore: a read returns it and then sets it */
static uint32_t ixgbe_read_swsm(IxgbeCore *core, hwaddr addr)
{
    uint32_t v = ixgbe_get(core, addr);

    *ixgbe_reg(core, addr) = v | IXGBE_SWSM_SMBI;
    return v;
}

static void ixgbe_write_msca(IxgbeCore *core, hwaddr addr, uint32_t val,
                             uint32_t old)
{
    /* No PHY behind the MDIO interface: commands complete, reads 0xFFFF */
    *ixgbe_reg(core, addr) = val & ~IXGBE_MSCA_MDI_COMMAND;
    if (val & IXGBE_MSCA_MDI_COMMAND) {
        uint32_t *msrwd = ixgbe_reg(core, IXGBE_MSRWD);

        *msrwd = (*msrwd & 0xFFFF) | (0xFFFFu << IXGBE_MSRWD_READ_SHIFT);
    }
}

static uint32_t ixgbe_read_anlp1(IxgbeCore *core, hwaddr addr)
{
    return IXGBE_ANLP1_AN_STATE_LINK_OK;
}

static uint32_t ixgbe_read_rdrxctl(IxgbeCore *core, hwaddr addr)
{
    return ixgbe_get(core, addr) | IXGBE_RDRXCTL_DMAIDONE;
}

/* ------------------------------------------------------------------ */
/* Queue registers                                                     */
/* ------------------------------------------------------------------ */

/* ------------------------------------------------------------------ */
/* The register table                                                  */
/* ------------------------------------------------------------------ */


static const IxgbeRegDesc ixgbe_reg_table[] = {
    /* General */
    REG("CTRL", IXGBE_CTRL, 1, 4, 0, ALL, IXGBE_RF_RAW, NULL,
        ixgbe_write_ctrl),
    REG("STATUS", IXGBE_STATUS, 1, 4, 0, 0, 0, ixgbe_read_status, NULL),
    PLAIN("CORECTL", IXGBE_CORECTL, 1, 4, 0, ALL),
    PLAIN("LEDCTL", IXGBE_LEDCTL, 1, 4, 0x00081C00, ALL),

    /* Interrupts */
    REG("EICR", IXGBE_EICR, 1, 4, 0, 0, IXGBE_RF_RAW, ixgbe_read_eicr,
        ixgbe_write_eicr),
    REG("EICS", IXGBE_EICS, 1, 4, 0, 0, IXGBE_RF_RAW, ixgbe_read_eics,
        ixgbe_write_eics),
    PLAIN("EIAC", IXGBE_EIAC, 1, 4, 0, ALL),
    REG("EITR", IXGBE_EITR_LO, 24, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_eitr),
    REG("EITR", IXGBE_EITR_HI, 104, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_eitr),
    REG("EIMS", IXGBE_EIMS, 1, 4, 0, 0, IXGBE_RF_RAW, ixgbe_read_eims,
        ixgbe_write_eims),
    REG("EIMC", IXGBE_EIMC, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_eimc),
    REG("EIAM", IXGBE_EIAM, 1, 4, 0, 0, IXGBE_RF_RAW, ixgbe_read_eiam,
        ixgbe_write_eiam),
    PLAIN("EITRSEL", IXGBE_EITRSEL, 1, 4, 0, ALL),
    REG("GPIE", IXGBE_GPIE, 1, 4, 0, 0xC000FFFF, 0, NULL, ixgbe_write_gpie),
    PLAIN("IVAR", IXGBE_IVAR0, 64, 4, 0, 0xBFBFBFBF),
    PLAIN("IVAR_MISC", IXGBE_IVAR_MISC, 1, 4, 0, 0x0000BFBF),
    REG("EICS_EX", IXGBE_EICS_EX0, 2, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_read_eics_ex, ixgbe_write_eics_ex),
    REG("EIMS_EX", IXGBE_EIMS_EX0, 2, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_read_eims_ex, ixgbe_write_eims_ex),
    REG("EIMC_EX", IXGBE_EIMC_EX0, 2, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_eimc_ex),
    REG("EIAM_EX", IXGBE_EIAM_EX0, 2, 4, 0, 0, IXGBE_RF_RAW,
        ixgbe_read_eiam_ex, ixgbe_write_eiam_ex),
    REG("PBACL", IXGBE_PBACL, 1, 4, 0, 0, IXGBE_RF_RAW, NULL,
        ixgbe_write_pbacl),

    /* EEPROM, semaphores, firmware */
    REG("EEC", IXGBE_EEC, 1, 4, 0, 0x7F, 0, ixgbe_read_eec, NULL),
    REG("EERD", IXGBE_EERD, 1, 4, 0, 0, IXGBE_RF_RAW, NULL, ixgbe_write_eerd),
    PLAIN("FLA", IXGBE_FLA, 1, 4, 0, ALL),
    PLAIN("EEMNGCTL", IXGBE_EEMNGCTL, 1, 4, 0x000C0000, 0),
    REG("SWSM", IXGBE_SWSM, 1, 4, 0, IXGBE_SWSM_SMBI | IXGBE_SWSM_SWESMBI, 0,
        ixgbe_read_swsm, NULL),
    PLAIN("FWSM", IXGBE_FWSM, 1, 4, IXGBE_FWSM_FW_VAL, 0),
    PLAIN("FACTPS", IXGBE_FACTPS, 1, 4, 0, 0),
    PLAIN("GSSR", IXGBE_GSSR, 1, 4, 0, IXGBE_GSSR_SW_MASK),
    PLAIN("GRC", IXGBE_GRC, 1, 4, 0, ALL),
    PLAIN("FWSTS", IXGBE_FWSTS, 1, 4, 0, 0),
    PLAIN("MMNGC", IXGBE_MMNGC, 1, 4, 0, 0),

    /* MAC and link */
    PLAIN("HLREG0", IXGBE_HLREG0, 1, 4, 0x00002403, ALL),
    PLAIN("HLREG1", IXGBE_HLREG1, 1, 4, 0, 0),
    REG("MSCA", IXGBE_MSCA, 1, 4, 0, 0, IXGBE_RF_RAW, NULL, ixgbe_write_msca),
    REG("MSRWD", IXGBE_MSRWD, 1, 4, 0, 0x0000FFFF, IXGBE_RF_HW, NULL, NULL),
    PLAIN("MAXFRS", IXGBE_MAXFRS, 1, 4, 1518u << IXGBE_MAXFRS_MFS_SHIFT,
          0xFFFF0000),
    PLAIN("MFLCN", IXGBE_MFLCN, 1, 4, 0, ALL),
    PLAIN("AUTOC", IXGBE_AUTOC, 1, 4,
          IXGBE_AUTOC_LMS_KX4_KX_KR | IXGBE_AUTOC_KR_SUPP |
          IXGBE_AUTOC_KX_SUPP, ALL),
    REG("LINKS", IXGBE_LINKS, 1, 4, 0, 0, 0, ixgbe_read_links, NULL),
    PLAIN("LINKS2", IXGBE_LINKS2, 1, 4, 0, 0),
    PLAIN("AUTOC2", IXGBE_AUTOC2, 1, 4, 0, ALL),
    PLAIN("AUTOC3", IXGBE_AUTOC3, 1, 4, 0, ALL),
    REG("ANLP1", IXGBE_ANLP1, 1, 4, 0, 0, 0, ixgbe_read_anlp1, NULL),
    PLAIN("ANLP2", IXGBE_ANLP2, 1, 4, 0, 0),

    /* Receive */
    PLAIN("RQSMR", IXGBE_RQSMR0, 32, 4, 0, 0x0F0F0F0F),
    REG("RDRXCTL", IXGBE_RDRXCTL, 1, 4, 0x00000880, ALL, 0,
        ixgbe_read_rdrxctl, NULL),
    PLAIN("RXPBSIZE", IXGBE_RXPBSIZE0, 8, 4, 0x00080000, 0x000FFC00),
    PLAIN("RXCSUM", IXGBE_RXCSUM, 1, 4, 0, 0x3000),
    PLAIN("RFCTL", IXGBE_RFCTL, 1, 4, 0, ALL),
    PLAIN("FCTRL", IXGBE_FCTRL, 1, 4, 0, 0x0702),
    PLAIN("VLNCTRL", IXGBE_VLNCTRL, 1, 4, 0x8100, ALL),
    PLAIN("MCSTCTRL", IXGBE_MCSTCTRL, 1, 4, 0, 0x7),
    PLAIN("MTA", IXGBE_MTA0, 128, 4, 0, ALL),
    PLAIN("RAL", IXGBE_RAL0, 128, 8, 0, ALL),
    PLAIN("RAH", IXGBE_RAH(0), 128, 8, 0, 0x8000FFFF),
    PLAIN("MPSAR", IXGBE_MPSAR0, 256, 4, 0, ALL),
    PLAIN("VFTA", IXGBE_VFTA0, 128, 4, 0, ALL),
    PLAIN("PSRTYPE", IXGBE_PSRTYPE0, 64, 4, 0, ALL),
    PLAIN("MRQC", IXGBE_MRQC, 1, 4, 0, ALL),
    PLAIN("RETA", IXGBE_RETA0, 32, 4, 0, ALL),
    PLAIN("RSSRK", IXGBE_RSSRK0, 10, 4, 0, ALL),
    PLAIN("SECRXCTRL", IXGBE_SECRXCTRL, 1, 4, 0, ALL),
    PLAIN("SECRXSTAT", IXGBE_SECRXSTAT, 1, 4,
          IXGBE_SECRXSTAT_RDY | IXGBE_SECRXSTAT_OFF_DIS, 0),

    /* Transmit */
    PLAIN("RTTDCS", IXGBE_RTTDCS, 1, 4, 0, ALL),
    PLAIN("DTXMXSZRQ", IXGBE_DTXMXSZRQ, 1, 4, 0x10, 0xFFF),
    PLAIN("MTQC", IXGBE_MTQC, 1, 4, 0, 0xF),
    PLAIN("TQSM", IXGBE_TQSM0, 32, 4, 0, 0x0F0F0F0F),
    PLAIN("SECTXCTRL", IXGBE_SECTXCTRL, 1, 4, 0, ALL),
    PLAIN("SECTXSTAT", IXGBE_SECTXSTAT, 1, 4,
          IXGBE_SECTXSTAT_RDY | IXGBE_SECTXSTAT_OFF_DIS, 0),
    PLAIN("TXPBSIZE", IXGBE_TXPBSIZE0, 8, 4, 0x00028000, 0x000FFC00),

    /* Statistics */
    STAT("PXON2OFFCNT", 0x03240, 8, 4),
    STAT("PXONTXC/PXOFFTXC/LXONTXC", 0x03F00, 28, 4),
    STAT("MPC", IXGBE_MPC0, 8, 4),
    STAT("RNBC", IXGBE_RNBC0, 8, 4),
    /* 0x04000-0x040FC, every word a counter (reserved ones read zero) */
    STAT("CRCERRS", IXGBE_CRCERRS, 1, 4),
    STAT("ILLERRC", 0x04004, 1, 4),
    STAT("ERRBC", 0x04008, 1, 4),
    STAT("reserved", 0x0400C, 1, 4),
    STAT("MSPDC", 0x04010, 1, 4),
    STAT("reserved", 0x04014, 8, 4),
    STAT("MLFC", 0x04034, 1, 4),
    STAT("MRFC", 0x04038, 1, 4),
    STAT("reserved", 0x0403C, 1, 4),
    STAT("RLEC", 0x04040, 1, 4),
    STAT("reserved", 0x04044, 6, 4),
    STAT("PRC64..PRC1522", IXGBE_PRC64, 6, 4),
    STAT("GPRC", IXGBE_GPRC, 1, 4),
    STAT("BPRC", IXGBE_BPRC, 1, 4),
    STAT("MPRC", IXGBE_MPRC, 1, 4),
    STAT("GPTC", IXGBE_GPTC, 1, 4),
    STAT("reserved", 0x04084, 1, 4),
    STAT("GORCL", IXGBE_GORCL, 1, 4),
    STAT("GORCH", IXGBE_GORCL + 4, 1, 4),
    STAT("GOTCL", IXGBE_GOTCL, 1, 4),
    STAT("GOTCH", IXGBE_GOTCL + 4, 1, 4),
    STAT("reserved", 0x04098, 3, 4),
    STAT("RUC", IXGBE_RUC, 1, 4),
    STAT("RFC", 0x040A8, 1, 4),
    STAT("ROC", IXGBE_ROC, 1, 4),
    STAT("RJC", 0x040B0, 1, 4),
    STAT("MNGPRC", 0x040B4, 1, 4),
    STAT("MNGPDC", 0x040B8, 1, 4),
    STAT("reserved", 0x040BC, 1, 4),
    STAT("TORL", IXGBE_TORL, 1, 4),
    STAT("TORH", IXGBE_TORL + 4, 1, 4),
    STAT("reserved", 0x040C8, 2, 4),
    STAT("TPR", IXGBE_TPR, 1, 4),
    STAT("TPT", IXGBE_TPT, 1, 4),
    STAT("PTC64..PTC1522", IXGBE_PTC64, 6, 4),
    STAT("MPTC", IXGBE_MPTC, 1, 4),
    STAT("BPTC", IXGBE_BPTC, 1, 4),
    STAT("reserved", 0x040F8, 2, 4),
    STAT("XEC", 0x04120, 1, 4),
    STAT("PXONRXCNT/PXOFFRXCNT", 0x04140, 16, 4),
    STAT("LXONRXCNT/LXOFFRXCNT", 0x041A4, 2, 4),
    STAT("RXNFGPC..", 0x041B0, 6, 4),
    STAT("RXDGPC..", 0x02F50, 16, 4),
    STAT("FCoE Rx", 0x02418, 6, 4),
    STAT("FCCRC", 0x05118, 1, 4),
    STAT("SSVPC/FCoE Tx", 0x08780, 3, 4),
    STAT("TXDGPC..", 0x087A0, 5, 4),
    STAT("LXONRXC/LXOFFRXC", 0x0CF60, 3, 4),
    STAT("MNGPTC", 0x0CF90, 1, 4),
    STAT("QPRC", IXGBE_QPRC0, 16, 0x40),
    STAT("QBRC_L", IXGBE_QBRC0, 16, 0x40),
    STAT("QBRC_H", IXGBE_QBRC_H(0), 16, 0x40),
    STAT("QPRDC", IXGBE_QPRDC0, 16, 0x40),
    STAT("QPTC", IXGBE_QPTC0, 16, 0x40),
    STAT("QBTC", IXGBE_QBTC0, 32, 4),

    /* 82598-compatible addresses of the first sixteen instances */
    ALIAS("SRRCTL", IXGBE_SRRCTL_ALIAS, 16, 4, RQ(IXGBE_RXQ_SRRCTL),
          IXGBE_RXQ_STRIDE),
    ALIAS("DCA_RXCTRL", IXGBE_DCA_ALIAS, 16, 4, RQ(IXGBE_RXQ_DCA),
          IXGBE_RXQ_STRIDE),
    ALIAS("RAL/RAH", IXGBE_RAL_ALIAS, 32, 4, IXGBE_RAL0, 4),
    ALIAS("PSRTYPE", IXGBE_PSRTYPE_ALIAS, 16, 4, IXGBE_PSRTYPE0, 4),
};

/*
 * The register file of every instance: the rows of the core's table, then
 * those of each part, and for each register index the 1-based position of
 * its row (0: not described).  Built once; every instance has the same
 * parts (ixgbe_parts[] in ixgbe.c).
 */
static const IxgbeRegDesc **ixgbe_rows;
static unsigned ixgbe_nrows;
static uint16_t ixgbe_reg_lookup[IXGBE_NUM_REGS];

static void ixgbe_add_rows(const IxgbeRegDesc *rows, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const IxgbeRegDesc *d = &rows[i];

        for (unsigned k = 0; k < d->count; k++) {
            hwaddr a = d->base + (hwaddr)k * d->stride;

            /* Each register is described once */
            assert(a < IXGBE_MMIO_SIZE && !(a & 3) &&
                   !ixgbe_reg_lookup[a >> 2]);
            ixgbe_reg_lookup[a >> 2] = ixgbe_nrows + 1;
        }
        ixgbe_rows[ixgbe_nrows++] = d;
    }
}

static void ixgbe_build_reg_lookup(const IxgbePart *const *parts,
                                   unsigned nparts)
{
    static const IxgbePart *const *built_for;
    unsigned n = ARRAY_SIZE(ixgbe_reg_table);

    if (built_for) {
        assert(built_for == parts);
        return;
    }
    for (unsigned i = 0; i < nparts; i++) {
        n += parts[i]->nregs;
    }
    ixgbe_rows = g_new(const IxgbeRegDesc *, n);
    ixgbe_add_rows(ixgbe_reg_table, ARRAY_SIZE(ixgbe_reg_table));
    for (unsigned i = 0; i < nparts; i++) {
        ixgbe_add_rows(parts[i]->regs, parts[i]->nregs);
    }
    built_for = parts;
}

static const IxgbeRegDesc *ixgbe_reg_desc(hwaddr addr)
{
    uint16_t i = ixgbe_reg_lookup[addr >> 2];

    return i ? ixgbe_rows[i - 1] : NULL;
}

/*
 * The register at addr and its description; an alias resolves to the
 * register it stands for.
 */
static const IxgbeRegDesc *ixgbe_resolve(hwaddr *addr)
{
    const IxgbeRegDesc *d = ixgbe_reg_desc(*addr);

    if (d && (d->flags & IXGBE_RF_ALIAS)) {
        *addr = d->alias + (*addr - d->base) / d->stride * d->alias_stride;
        d = ixgbe_reg_desc(*addr);
    }
    return d;
}

/*
 * One device, one guard.  The PF and its VFs are PCI functions of their
 * own, each with its BARs and, in QEMU, its own re-entrancy guard; but
 * all of them reach this one core.  A DMA of the datapath that lands on
 * a register of another function (a descriptor ring, a buffer, a head
 * write-back or an MSI-X message aimed at a VF's BAR) would run the core
 * inside itself.  So the PF's guard serves every function: QEMU engages
 * it for the PF's BARs and for frames from the backend, and every other
 * way into the core (a VF's BAR, a config write, a timer, a link change)
 * takes it here.  What finds it engaged came from the device's own DMA
 * and is refused, as QEMU refuses such an access to the PF's BARs.
 */
bool ixgbe_core_enter(IxgbeCore *core, const char *what, int vf,
                      hwaddr addr)
{
    if (core->guard->engaged_in_io) {
        qemu_log_mask(LOG_GUEST_ERROR, "ixgbe: %s (function %s%d, 0x%"
                      HWADDR_PRIx ") from the device's own DMA refused\n",
                      what, vf < 0 ? "PF" : "VF ", vf < 0 ? 0 : vf, addr);
        trace_ixgbe_reentry_refused(what, vf, addr);
        return false;
    }
    core->guard->engaged_in_io = true;
    return true;
}

void ixgbe_core_leave(IxgbeCore *core)
{
    core->guard->engaged_in_io = false;
}

/*
 * A register the model does not know, reported once per offset: on the
 * PF it is plain storage (a driver reads back what it wrote), on a VF it
 * reads as zero and ignores writes.
 */
void ixgbe_log_unimp(IxgbeCore *core, int vf, hwaddr addr, bool write)
{
    unsigned long *seen = vf < 0 ? core->unimp_logged : core->vf_unimp_logged;

    if (!test_and_set_bit(addr >> 2, seen)) {
        qemu_log_mask(LOG_UNIMP, "ixgbe: %s of unmodelled %s register "
                      "0x%05" HWADDR_PRIx " (%s)\n",
                      write ? "write" : "read", vf < 0 ? "PF" : "VF", addr,
                      vf < 0 ? "kept as plain storage" :
                      "reads as zero, writes ignored");
    }
}

uint64_t ixgbe_core_read(IxgbeCore *core, hwaddr addr, unsigned size)
{
    const IxgbeRegDesc *d;
    uint32_t val;

    addr &= ~3ULL;
    d = ixgbe_resolve(&addr);
    if (!d) {
        val = ixgbe_get(core, addr);
        trace_ixgbe_reg_unmodelled(addr, val, false);
        ixgbe_log_unimp(core, -1, addr, false);
        return val;
    }
    if (d->read) {
        val = d->read(core, addr);
    } else {
        val = ixgbe_get(core, addr);
        if (d->flags & IXGBE_RF_RC) {
            *ixgbe_reg(core, addr) = 0;
        }
    }
    trace_ixgbe_reg_read(addr, d->name, val);
    return val;
}

void ixgbe_core_write(IxgbeCore *core, hwaddr addr, uint64_t val64,
                      unsigned size)
{
    const IxgbeRegDesc *d;
    uint32_t val = val64, old;

    addr &= ~3ULL;
    d = ixgbe_resolve(&addr);
    old = ixgbe_get(core, addr);
    if (!d) {
        /* Plain storage, so that a driver reads back what it wrote */
        trace_ixgbe_reg_unmodelled(addr, val, true);
        ixgbe_log_unimp(core, -1, addr, true);
        *ixgbe_reg(core, addr) = val;
        return;
    }
    trace_ixgbe_reg_write(addr, d->name, val);
    if (!(d->flags & IXGBE_RF_RAW)) {
        *ixgbe_reg(core, addr) = (old & ~d->wmask) | (val & d->wmask);
    }
    if (d->write) {
        d->write(core, addr, val, old);
    }
}

/* ------------------------------------------------------------------ */
/* EEPROM image, reset, link                                           */
/* ------------------------------------------------------------------ */

static void ixgbe_build_eeprom(IxgbeCore *core)
{
    uint16_t sum = 0;

    for (unsigned i = 0; i < IXGBE_EEPROM_WORDS; i++) {
        core->eeprom[i] = 0xFFFF;
    }
    /* Control words and no pointed-to sections (0xFFFF: absent) */
    for (unsigned i = 0; i < IXGBE_EEPROM_CHECKSUM_WORD; i++) {
        if (i < IXGBE_EEPROM_PTR_FIRST || i > IXGBE_EEPROM_FW_PTR) {
            core->eeprom[i] = 0;
        }
    }
    core->eeprom[IXGBE_EEPROM_PBA0] = 0x1234;
    core->eeprom[IXGBE_EEPROM_PBA1] = 0x5678;
    core->eeprom[0x17] = 0xFFFF;    /* no option ROM / iSCSI block */
    core->eeprom[0x1B] = 0xFFFF;    /* no OEM version block */
    core->eeprom[IXGBE_EEPROM_ALT_MAC_PTR] = 0xFFFF;
    core->eeprom[IXGBE_EEPROM_SAN_MAC_PTR] = 0xFFFF;
    core->eeprom[0x33] = 0xFFFF;
    core->eeprom[IXGBE_EEPROM_ETRACK_L] = 0x0001;
    core->eeprom[IXGBE_EEPROM_ETRACK_H] = 0x8000;
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->eeprom) {
            core->parts[i]->eeprom(core);
        }
    }
    for (unsigned i = 0; i < IXGBE_EEPROM_CHECKSUM_WORD; i++) {
        sum += core->eeprom[i];
    }
    core->eeprom[IXGBE_EEPROM_CHECKSUM_WORD] = IXGBE_EEPROM_SUM - sum;
}

static void ixgbe_load_mac_address(IxgbeCore *core)
{
    const uint8_t *m = core->permanent_mac;

    *ixgbe_reg(core, IXGBE_RAL0) = m[0] | (m[1] << 8) | (m[2] << 16) |
                                 ((uint32_t)m[3] << 24);
    *ixgbe_reg(core, IXGBE_RAH(0)) = m[4] | (m[5] << 8) | IXGBE_RAH_AV;
}

static void ixgbe_reset_state(IxgbeCore *core)
{
    memset(core->mac, 0, sizeof(core->mac));
    for (unsigned i = 0; i < ixgbe_nrows; i++) {
        const IxgbeRegDesc *d = ixgbe_rows[i];

        if (d->flags & IXGBE_RF_ALIAS) {
            continue;
        }
        for (unsigned n = 0; n < d->count; n++) {
            *ixgbe_reg(core, d->base + (hwaddr)n * d->stride) = d->reset;
        }
    }
    ixgbe_load_mac_address(core);

    core->vec_cause = core->vec_mask = core->vec_automask = 0;
    core->oth_cause = core->oth_mask = 0;
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        timer_del(core->vec[v].timer);
        core->vec[v].armed = false;
    }
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->reset) {
            core->parts[i]->reset(core);
        }
    }
}

/* CTRL.RST / CTRL.LNK_RST: everything but PCI state returns to defaults */
static void ixgbe_soft_reset(IxgbeCore *core)
{
    ixgbe_reset_state(core);
    ixgbe_update_interrupts(core);
}

void ixgbe_core_reset(IxgbeCore *core)
{
    ixgbe_reset_state(core);
    if (core->intx_level) {
        core->intx_level = false;
        pci_set_irq(core->owner, 0);
    }
}

void ixgbe_core_set_link_status(IxgbeCore *core)
{
    NetClientState *nc = qemu_get_queue(core->nic);

    trace_ixgbe_link(!nc->link_down);
    ixgbe_raise_other_cause(core, IXGBE_EICR_LSC);
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->link_change) {
            core->parts[i]->link_change(core, !nc->link_down);
        }
    }
}

/*
 * The VM stops (before a migration's last pass over RAM, or a snapshot):
 * each part puts down what it holds (queued register writes, descriptors
 * whose write-back WTHRESH holds), so that the state and the RAM that are
 * saved have them.
 */
static void ixgbe_vm_state_change(void *opaque, bool running, RunState state)
{
    IxgbeCore *core = opaque;

    if (running) {
        return;
    }
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->vm_stop) {
            core->parts[i]->vm_stop(core);
        }
    }
}

void ixgbe_core_realize(IxgbeCore *core, PCIDevice *owner, NICState *nic,
                        const uint8_t *macaddr,
                        const IxgbePart *const *parts, unsigned nparts)
{
    ixgbe_build_reg_lookup(parts, nparts);
    core->owner = owner;
    core->nic = nic;
    core->parts = parts;
    core->nparts = nparts;
    core->guard = &DEVICE(owner)->mem_reentrancy_guard;
    memcpy(core->permanent_mac, macaddr, sizeof(core->permanent_mac));
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        core->vec[v].core = core;
        core->vec[v].timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                          ixgbe_vector_timer, &core->vec[v]);
    }
    ixgbe_build_eeprom(core);
    for (unsigned i = 0; i < nparts; i++) {
        if (parts[i]->realize) {
            parts[i]->realize(core);
        }
    }
    core->vm_state = qemu_add_vm_change_state_handler(ixgbe_vm_state_change,
                                                      core);
}

void ixgbe_core_unrealize(IxgbeCore *core)
{
    qemu_del_vm_change_state_handler(core->vm_state);
    core->vm_state = NULL;
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        timer_free(core->vec[v].timer);
        core->vec[v].timer = NULL;
    }
    for (unsigned i = core->nparts; i-- > 0;) {
        if (core->parts[i]->unrealize) {
            core->parts[i]->unrealize(core);
        }
    }
}

/*
 * A register the table describes holds, outside its writable bits, its
 * reset value, unless the device itself updates it: anything else in a
 * migration stream did not come from this device.
 */
static bool ixgbe_regs_valid(IxgbeCore *core)
{
    for (unsigned i = 0; i < ixgbe_nrows; i++) {
        const IxgbeRegDesc *d = ixgbe_rows[i];

        if (d->flags & (IXGBE_RF_RC | IXGBE_RF_RAW | IXGBE_RF_HW |
                        IXGBE_RF_ALIAS)) {
            continue;
        }
        for (unsigned n = 0; n < d->count; n++) {
            hwaddr a = d->base + (hwaddr)n * d->stride;
            uint32_t v = ixgbe_get(core, a);

            if ((v ^ d->reset) & ~d->wmask) {
                error_report("ixgbe: migrated %s (0x%05" HWADDR_PRIx
                             ") = 0x%08x has read-only bits changed",
                             d->name, a, v);
                return false;
            }
        }
    }
    return true;
}

/*
 * Saving the state: nothing held may stay behind.  The VM stopped first,
 * which wrote back held descriptors (ixgbe_vm_state_change) while RAM was
 * still being saved; this is a second sweep that finds nothing in that
 * case.  What was read ahead is dropped: the destination reads the same
 * descriptors from its ring again.
 */
int ixgbe_core_pre_save(IxgbeCore *core)
{
    if (ixgbe_core_enter(core, "migration", -1, 0)) {
        for (unsigned i = 0; i < core->nparts; i++) {
            if (core->parts[i]->pre_save) {
                core->parts[i]->pre_save(core);
            }
        }
        ixgbe_core_leave(core);
    }
    core->backend_link_down = qemu_get_queue(core->nic)->link_down;
    return 0;
}

/*
 * Runs while the incoming migration is still loading: validate, but raise
 * no interrupt and do no DMA.  Pending causes were either delivered on the
 * source (MSI-X pending bits and the INTx level travel with the PCI state)
 * or wait for a moderation timer, which travels too.
 */
int ixgbe_core_post_load(IxgbeCore *core)
{
    if (!ixgbe_regs_valid(core)) {
        return -EINVAL;
    }
    for (unsigned i = 0; i < core->nparts; i++) {
        if (core->parts[i]->post_load && !core->parts[i]->post_load(core)) {
            return -EINVAL;
        }
    }
    for (unsigned v = 0; v < IXGBE_MSIX_VECTORS; v++) {
        /* A vector held by a timer that is not running would stay silent */
        core->vec[v].armed = core->vec[v].armed &&
                             timer_pending(core->vec[v].timer);
    }
    /* The link as the source's backend had it (STATUS.LU, LINKS) */
    qemu_get_queue(core->nic)->link_down = core->backend_link_down;
    return 0;
}
