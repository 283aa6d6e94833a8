/*
 * Intel 82599 10 GbE controller: register offsets and bit fields.
 *
 * Names follow the 82599 datasheet (section 8, "Programming Interface").
 * Offsets are byte offsets into BAR0.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#ifndef HW_NET_IXGBE_REGS_H
#define HW_NET_IXGBE_REGS_H

/* PCI identity: one device ID per 82599 part (ixgbe.c) */
#define IXGBE_DEV_ID_82599_KR       0x1517  /* 10GBASE-KR backplane */
#define IXGBE_DEV_ID_82599_SFP      0x10FB  /* SFP+ cage (X520) */
#define IXGBE_DEV_ID_82599_COMBO_BACKPLANE 0x10F8  /* KX4/KX/KR backplane */
#define IXGBE_SUBSYS_ID             0x0001
/* Its virtual functions */
#define IXGBE_DEV_ID_82599_VF       0x10ED

#define IXGBE_MMIO_SIZE             (128 * KiB)
#define IXGBE_IO_SIZE               32
#define IXGBE_MSIX_SIZE             (16 * KiB)
#define IXGBE_MSIX_PBA_OFFSET       0x2000
#define IXGBE_MSIX_VECTORS          64
#define IXGBE_NUM_QUEUES            128
#define IXGBE_NUM_STAT_QUEUES       16
#define IXGBE_RAR_ENTRIES           128
#define IXGBE_RETA_ENTRIES          128
#define IXGBE_RSS_KEY_SIZE          40
#define IXGBE_EEPROM_WORDS          1024

/* General control */
#define IXGBE_CTRL          0x00000
#define IXGBE_STATUS        0x00008
#define IXGBE_CTRL_EXT      0x00018
#define IXGBE_ESDP          0x00020
#define IXGBE_I2CCTL        0x00028
#define IXGBE_LEDCTL        0x00200
#define IXGBE_CORECTL       0x14F00

/* Software-definable pins (ESDP) as the SFP+ parts wire them */
#define IXGBE_ESDP_SDP2             (1u << 2)   /* in: SFP+ cage full */
#define IXGBE_ESDP_SDP3             (1u << 3)   /* out: TX_DISABLE */

/* I2CCTL: the I2C bus to the SFP+ module, bit-banged */
#define IXGBE_I2CCTL_CLK_IN         (1u << 0)
#define IXGBE_I2CCTL_CLK_OUT        (1u << 1)
#define IXGBE_I2CCTL_DATA_IN        (1u << 2)
#define IXGBE_I2CCTL_DATA_OUT       (1u << 3)

#define IXGBE_CTRL_GIO_DIS          (1u << 2)
#define IXGBE_CTRL_LNK_RST          (1u << 3)
#define IXGBE_CTRL_RST              (1u << 26)

#define IXGBE_CTRL_EXT_PFRSTD       (1u << 14)

#define IXGBE_STATUS_LINK_UP        (1u << 7)
#define IXGBE_STATUS_GIO            (1u << 19)

/* Interrupts */
#define IXGBE_EICR          0x00800
#define IXGBE_EICS          0x00808
#define IXGBE_EIAC          0x00810
#define IXGBE_EITR_LO       0x00820     /* EITR[0..23] */
#define IXGBE_EIMS          0x00880
#define IXGBE_EIMC          0x00888
#define IXGBE_EIAM          0x00890
#define IXGBE_EITRSEL       0x00894
#define IXGBE_GPIE          0x00898
#define IXGBE_IVAR0         0x00900     /* 64 registers */
#define IXGBE_IVAR_MISC     0x00A00
#define IXGBE_EICS_EX0      0x00A90     /* 2 registers */
#define IXGBE_EIMS_EX0      0x00AA0
#define IXGBE_EIMC_EX0      0x00AB0
#define IXGBE_EIAM_EX0      0x00AD0
#define IXGBE_EITR_HI       0x12300     /* EITR[24..127] */
#define IXGBE_PBACL         0x11068

#define IXGBE_EICR_RTX_QUEUE        0x0000FFFFu
#define IXGBE_EICR_FLOW_DIR         (1u << 16)
#define IXGBE_EICR_RX_MISS          (1u << 17)
#define IXGBE_EICR_LSC              (1u << 20)
#define IXGBE_EICR_GPI_SDP1         (1u << 25)
#define IXGBE_EICR_GPI_SDP2         (1u << 26)
#define IXGBE_EICR_TCP_TIMER        (1u << 30)
#define IXGBE_EICR_OTHER            (1u << 31)
#define IXGBE_EICR_MISC_CAUSES      0x7FFF0000u

#define IXGBE_GPIE_SDP1_GPIEN       (1u << 1)
#define IXGBE_GPIE_SDP2_GPIEN       (1u << 2)
#define IXGBE_GPIE_MSIX_MODE        (1u << 4)
#define IXGBE_GPIE_OCD              (1u << 5)
#define IXGBE_GPIE_EIAME            (1u << 30)

#define IXGBE_EITR_INTERVAL_MASK    0x00000FF8u
#define IXGBE_EITR_LLI_MOD          (1u << 15)
#define IXGBE_EITR_CNT_WDIS         (1u << 31)

#define IXGBE_IVAR_VECTOR_MASK      0x3F
#define IXGBE_IVAR_VALID            0x80

/*
 * IVAR and VTIVAR each route two queues: the even queue's receive cause
 * in bits 7:0 and its transmit cause in 15:8, the odd queue's in 23:16
 * and 31:24.  The byte for one queue's cause, from the register that
 * holds it:
 */
static inline uint8_t ixgbe_ivar_byte(uint32_t ivar, unsigned queue,
                                      bool is_tx)
{
    return ivar >> ((queue & 1) * 16 + (is_tx ? 8 : 0));
}

#define IXGBE_EICR_MAILBOX          (1u << 19)

/* EEPROM, flash, semaphores, firmware */
#define IXGBE_EEC           0x10010
#define IXGBE_EERD          0x10014
#define IXGBE_FLA           0x1001C
#define IXGBE_EEMNGCTL      0x10110
#define IXGBE_SWSM          0x10140
#define IXGBE_FWSM          0x10148
#define IXGBE_FACTPS        0x10150
#define IXGBE_GSSR          0x10160
#define IXGBE_GRC           0x10200
#define IXGBE_GCR           0x11000
#define IXGBE_GCR_EXT       0x11050
#define IXGBE_FWSTS         0x15F0C

#define IXGBE_EEC_EE_REQ            (1u << 6)
#define IXGBE_EEC_EE_GNT            (1u << 7)
#define IXGBE_EEC_PRES              (1u << 8)
#define IXGBE_EEC_ARD               (1u << 9)
#define IXGBE_EEC_SIZE_SHIFT        11
#define IXGBE_EEC_SIZE_FIELD        4   /* 1 << (4 + 6) = 1024 words */

#define IXGBE_EERD_START            (1u << 0)
#define IXGBE_EERD_DONE             (1u << 1)
#define IXGBE_EERD_ADDR_SHIFT       2
#define IXGBE_EERD_ADDR_MASK        0x3FFF
#define IXGBE_EERD_DATA_SHIFT       16

#define IXGBE_SWSM_SMBI             (1u << 0)
#define IXGBE_SWSM_SWESMBI          (1u << 1)
#define IXGBE_GSSR_SW_MASK          0x1Fu
#define IXGBE_FWSM_FW_VAL           (1u << 15)

/* MAC, link, PHY access */
#define IXGBE_HLREG0        0x04240
#define IXGBE_HLREG1        0x04244
#define IXGBE_PAP           0x04248
#define IXGBE_MSCA          0x0425C
#define IXGBE_MSRWD         0x04260
#define IXGBE_MAXFRS        0x04268
#define IXGBE_MFLCN         0x04294
#define IXGBE_AUTOC         0x042A0
#define IXGBE_LINKS         0x042A4
#define IXGBE_AUTOC2        0x042A8
#define IXGBE_AUTOC3        0x042AC
#define IXGBE_ANLP1         0x042B0
#define IXGBE_ANLP2         0x042B4
#define IXGBE_MMNGC         0x042D0
#define IXGBE_LINKS2        0x04324

#define IXGBE_HLREG0_RXCRCSTRP      (1u << 1)
#define IXGBE_HLREG0_JUMBOEN        (1u << 2)
#define IXGBE_HLREG0_LPBK           (1u << 15)
#define IXGBE_MAXFRS_MFS_SHIFT      16

#define IXGBE_MSCA_MDI_COMMAND      (1u << 30)
#define IXGBE_MSRWD_READ_SHIFT      16

#define IXGBE_AUTOC_FLU             (1u << 0)
#define IXGBE_AUTOC_AN_RESTART      (1u << 12)
#define IXGBE_AUTOC_LMS_10G_SERIAL  (3u << 13)
#define IXGBE_AUTOC_LMS_KX4_KX_KR   (4u << 13)
#define IXGBE_AUTOC_KR_SUPP         (1u << 16)
#define IXGBE_AUTOC_KX_SUPP         (1u << 30)
#define IXGBE_AUTOC_KX4_SUPP        (1u << 31)

#define IXGBE_AUTOC2_10G_SFI        (2u << 16)

#define IXGBE_LINKS_SPEED_10G       (3u << 28)
#define IXGBE_LINKS_UP              (1u << 30)
#define IXGBE_LINKS_KX_AN_COMP      (1u << 31)
#define IXGBE_ANLP1_AN_STATE_LINK_OK (0xBu << 16)

/* Receive */
#define IXGBE_RXQ_LO        0x01000     /* queues 0..63, 0x40 apart */
#define IXGBE_RXQ_HI        0x0D000     /* queues 64..127 */
#define IXGBE_RXQ_STRIDE    0x40
#define IXGBE_RXQ_RDBAL     0x00
#define IXGBE_RXQ_RDBAH     0x04
#define IXGBE_RXQ_RDLEN     0x08
#define IXGBE_RXQ_DCA       0x0C
#define IXGBE_RXQ_RDH       0x10
#define IXGBE_RXQ_SRRCTL    0x14
#define IXGBE_RXQ_RDT       0x18
#define IXGBE_RXQ_RXDCTL    0x28
#define IXGBE_SRRCTL_ALIAS  0x02100     /* SRRCTL[0..15] alias */
#define IXGBE_DCA_ALIAS     0x02200     /* DCA_RXCTRL[0..15] alias */
#define IXGBE_RQSMR0        0x02300     /* 32 registers */
#define IXGBE_RDRXCTL       0x02F00
#define IXGBE_RXCTRL        0x03000
#define IXGBE_RXPBSIZE0     0x03C00
#define IXGBE_RXCSUM        0x05000
#define IXGBE_RFCTL         0x05008
#define IXGBE_FCTRL         0x05080
#define IXGBE_VLNCTRL       0x05088
#define IXGBE_MCSTCTRL      0x05090
#define IXGBE_MTA0          0x05200     /* 128 registers */
#define IXGBE_RAL_ALIAS     0x05400     /* RAL/RAH[0..15] alias */
#define IXGBE_PSRTYPE_ALIAS 0x05480
#define IXGBE_MRQC          0x05818
#define IXGBE_RETA0         0x05C00     /* 32 registers */
#define IXGBE_RSSRK0        0x05C80     /* 10 registers */
#define IXGBE_VFTA0         0x0A000     /* 128 registers */
#define IXGBE_RAL0          0x0A200     /* RAL/RAH pairs, 128 entries */
#define IXGBE_MPSAR0        0x0A600
#define IXGBE_PSRTYPE0      0x0EA00
#define IXGBE_FDIRCTRL      0x0EE00
#define IXGBE_FDIRSIPV6_0   0x0EE0C     /* 3 registers */
#define IXGBE_FDIRIPSA      0x0EE18
#define IXGBE_FDIRIPDA      0x0EE1C
#define IXGBE_FDIRPORT      0x0EE20
#define IXGBE_FDIRVLAN      0x0EE24
#define IXGBE_FDIRHASH      0x0EE28
#define IXGBE_FDIRCMD       0x0EE2C
#define IXGBE_FDIRFREE      0x0EE38
#define IXGBE_FDIRDIP4M     0x0EE3C
#define IXGBE_FDIRSIP4M     0x0EE40
#define IXGBE_FDIRTCPM      0x0EE44
#define IXGBE_FDIRUDPM      0x0EE48
#define IXGBE_FDIRLEN       0x0EE4C
#define IXGBE_FDIRUSTAT     0x0EE50
#define IXGBE_FDIRFSTAT     0x0EE54
#define IXGBE_FDIRMATCH     0x0EE58
#define IXGBE_FDIRMISS      0x0EE5C
#define IXGBE_FDIRHKEY      0x0EE68
#define IXGBE_FDIRSKEY      0x0EE6C
#define IXGBE_FDIRM         0x0EE70
#define IXGBE_FDIRIP6M      0x0EE74
#define IXGBE_FDIRSCTPM     0x0EE78
#define IXGBE_SECRXCTRL     0x08D00
#define IXGBE_SECRXSTAT     0x08D04

/* IEEE 1588 */
#define IXGBE_RXMTRL        0x05120
#define IXGBE_ETQF0         0x05128     /* 8 registers */
#define IXGBE_ETQF_COUNT    8
#define IXGBE_ETQF(n)       (IXGBE_ETQF0 + (n) * 4)
#define IXGBE_TSYNCRXCTL    0x05188
#define IXGBE_RXSATRL       0x051A0
#define IXGBE_RXSTMPH       0x051A4
#define IXGBE_RXSATRH       0x051A8
#define IXGBE_RXSTMPL       0x051E8
#define IXGBE_TSYNCTXCTL    0x08C00
#define IXGBE_TXSTMPL       0x08C04
#define IXGBE_TXSTMPH       0x08C08
#define IXGBE_SYSTIML       0x08C0C
#define IXGBE_SYSTIMH       0x08C10
#define IXGBE_TIMINCA       0x08C14
#define IXGBE_TIMADJL       0x08C18
#define IXGBE_TIMADJH       0x08C1C

/* Receive queue filters ahead of the Flow Director (ixgbe_ntuple.c) */
#define IXGBE_SAQF0         0x0E000     /* 128 registers each */
#define IXGBE_DAQF0         0x0E200
#define IXGBE_SDPQF0        0x0E400
#define IXGBE_FTQF0         0x0E600
#define IXGBE_L34TIMIR0     0x0E800
#define IXGBE_NTUPLE_COUNT  128
#define IXGBE_SAQF(n)       (IXGBE_SAQF0 + (n) * 4)
#define IXGBE_DAQF(n)       (IXGBE_DAQF0 + (n) * 4)
#define IXGBE_SDPQF(n)      (IXGBE_SDPQF0 + (n) * 4)
#define IXGBE_FTQF(n)       (IXGBE_FTQF0 + (n) * 4)
#define IXGBE_L34TIMIR(n)   (IXGBE_L34TIMIR0 + (n) * 4)
#define IXGBE_ETQS0         0x0EC00     /* 8 registers, one per ETQF */
#define IXGBE_ETQS(n)       (IXGBE_ETQS0 + (n) * 4)
#define IXGBE_SYNQF         0x0EC30

#define IXGBE_FTQF_PROTO_MASK       0x3u        /* TCP 0, UDP 1, SCTP 2 */
#define IXGBE_FTQF_PROTO_OTHER      3u
#define IXGBE_FTQF_PRIO_SHIFT       2
#define IXGBE_FTQF_PRIO_MASK        0x7u
#define IXGBE_FTQF_POOL_SHIFT       8
#define IXGBE_FTQF_POOL_MASK        0x3Fu
/* FTQF 29:25: a set bit leaves its field out of the comparison */
#define IXGBE_FTQF_MASK_SRC_ADDR    (1u << 25)
#define IXGBE_FTQF_MASK_DST_ADDR    (1u << 26)
#define IXGBE_FTQF_MASK_SRC_PORT    (1u << 27)
#define IXGBE_FTQF_MASK_DST_PORT    (1u << 28)
#define IXGBE_FTQF_MASK_PROTO       (1u << 29)
#define IXGBE_FTQF_POOL_MASK_EN     (1u << 30)
#define IXGBE_FTQF_QUEUE_EN         (1u << 31)
#define IXGBE_FTQF_WMASK            0xFE003F1Fu
#define IXGBE_L34TIMIR_SIZE_BP      (1u << 12)
#define IXGBE_L34TIMIR_CTRL_BP      (1u << 19)  /* with 18:13, TCP flags */
#define IXGBE_L34TIMIR_LLI          (1u << 20)
#define IXGBE_L34TIMIR_QUEUE_SHIFT  21
#define IXGBE_L34TIMIR_QUEUE_MASK   0x7Fu
#define IXGBE_L34TIMIR_WMASK        0x0FFFF000u
#define IXGBE_ETQS_QUEUE_SHIFT      16
#define IXGBE_ETQS_QUEUE_MASK       0x7Fu
#define IXGBE_ETQS_LLI              (1u << 29)
#define IXGBE_ETQS_QUEUE_EN         (1u << 31)
#define IXGBE_ETQS_WMASK            0xA07F0000u
#define IXGBE_ETQF_UP_SHIFT         16
#define IXGBE_ETQF_UP_MASK          0x7u
#define IXGBE_ETQF_UP_EN            (1u << 19)
#define IXGBE_SYNQF_EN              (1u << 0)
#define IXGBE_SYNQF_QUEUE_SHIFT     1
#define IXGBE_SYNQF_QUEUE_MASK      0x7Fu
#define IXGBE_SYNQF_SYNQFP          (1u << 31)  /* SYN before 5-tuple */
#define IXGBE_SYNQF_WMASK           0x800000FFu

#define IXGBE_ETQF_1588             (1u << 30)
#define IXGBE_ETQF_FILTER_EN        (1u << 31)
#define IXGBE_TSYNCRXCTL_VALID      (1u << 0)
#define IXGBE_TSYNCRXCTL_TYPE_MASK  (7u << 1)
#define IXGBE_TSYNCRXCTL_TYPE_L2_V2     (0u << 1)
#define IXGBE_TSYNCRXCTL_TYPE_L4_V1     (1u << 1)
#define IXGBE_TSYNCRXCTL_TYPE_L2_L4_V2  (2u << 1)
#define IXGBE_TSYNCRXCTL_TYPE_ALL       (4u << 1)
#define IXGBE_TSYNCRXCTL_TYPE_EVENT_V2  (5u << 1)
#define IXGBE_TSYNCRXCTL_ENABLED    (1u << 4)
#define IXGBE_TSYNCTXCTL_VALID      (1u << 0)
#define IXGBE_TSYNCTXCTL_ENABLED    (1u << 4)
#define IXGBE_TIMINCA_IP_SHIFT      24
#define IXGBE_TIMINCA_IV_MASK       0x00FFFFFFu
#define IXGBE_TIMADJH_SIGN          (1u << 31)
#define IXGBE_PTP_EVENT_PORT        319

#define IXGBE_RXDCTL_THRESH_MASK    0x7Fu   /* PTHRESH, HTHRESH, WTHRESH */
#define IXGBE_RXDCTL_HTHRESH_SHIFT  8
#define IXGBE_RXDCTL_WTHRESH_SHIFT  16
#define IXGBE_RXDCTL_ENABLE         (1u << 25)
#define IXGBE_RXDCTL_SWFLSH         (1u << 26)
#define IXGBE_RXDCTL_VME            (1u << 30)
#define IXGBE_SRRCTL_BSIZEPKT_MASK  0x1Fu
#define IXGBE_SRRCTL_DESCTYPE_SHIFT 25
#define IXGBE_SRRCTL_DESCTYPE_MASK  7u
#define IXGBE_SRRCTL_DESCTYPE_LEGACY 0
#define IXGBE_SRRCTL_DROP_EN        (1u << 28)
#define IXGBE_RDRXCTL_DMAIDONE      (1u << 3)
#define IXGBE_RXCTRL_RXEN           (1u << 0)
#define IXGBE_RXCSUM_IPPCSE         (1u << 12)
#define IXGBE_RXCSUM_PCSD           (1u << 13)
#define IXGBE_FCTRL_SBP             (1u << 1)
#define IXGBE_FCTRL_MPE             (1u << 8)
#define IXGBE_FCTRL_UPE             (1u << 9)
#define IXGBE_FCTRL_BAM             (1u << 10)
#define IXGBE_VLNCTRL_VFE           (1u << 30)
#define IXGBE_MCSTCTRL_MO_MASK      3u
#define IXGBE_MCSTCTRL_MFE          (1u << 2)
#define IXGBE_RAH_AV                (1u << 31)
#define IXGBE_MRQC_MRQE_MASK        0xFu
#define IXGBE_MRQC_RSS              1u
#define IXGBE_MRQC_TCPIPV4          (1u << 16)
#define IXGBE_MRQC_IPV4             (1u << 17)
#define IXGBE_MRQC_IPV6             (1u << 20)
#define IXGBE_MRQC_TCPIPV6          (1u << 21)
#define IXGBE_MRQC_UDPIPV4          (1u << 22)
#define IXGBE_MRQC_UDPIPV6          (1u << 23)
#define IXGBE_FDIRCTRL_PBALLOC_MASK 3u
#define IXGBE_FDIRCTRL_INIT_DONE    (1u << 3)
#define IXGBE_FDIRCTRL_PERFECT      (1u << 4)
#define IXGBE_FDIRCTRL_REPORT       (1u << 5)
#define IXGBE_FDIRCTRL_REPORT_ALWAYS (1u << 7)
#define IXGBE_FDIRCTRL_DROP_Q_SHIFT 8
#define IXGBE_FDIRCTRL_DROP_Q_MASK  0x7Fu
#define IXGBE_FDIRCTRL_DROP_NO_MATCH (1u << 15)
#define IXGBE_FDIRCTRL_FLEX_SHIFT   16
#define IXGBE_FDIRCTRL_FLEX_MASK    0x1Fu
#define IXGBE_FDIRCTRL_MAX_LEN_SHIFT 24
#define IXGBE_FDIRCTRL_MAX_LEN_MASK 0xFu
#define IXGBE_FDIRCTRL_FULL_THRESH_SHIFT 28
#define IXGBE_FDIRCMD_CMD_MASK      3u
#define IXGBE_FDIRCMD_CMD_ADD       1u
#define IXGBE_FDIRCMD_CMD_REMOVE    2u
#define IXGBE_FDIRCMD_CMD_QUERY     3u
#define IXGBE_FDIRCMD_FILTER_VALID  (1u << 2)
#define IXGBE_FDIRCMD_FILTER_UPDATE (1u << 3)
#define IXGBE_FDIRCMD_FLOW_TYPE_SHIFT 5         /* L4 type 6:5, IPv6 7 */
#define IXGBE_FDIRCMD_FLOW_TYPE_MASK 7u
#define IXGBE_FDIRCMD_CLEARHT       (1u << 8)
#define IXGBE_FDIRCMD_DROP          (1u << 9)
#define IXGBE_FDIRCMD_INT           (1u << 10)
#define IXGBE_FDIRCMD_LAST          (1u << 11)
#define IXGBE_FDIRCMD_COLLISION     (1u << 12)
#define IXGBE_FDIRCMD_QUEUE_EN      (1u << 15)
#define IXGBE_FDIRCMD_RX_QUEUE_SHIFT 16
#define IXGBE_FDIRCMD_RX_QUEUE_MASK 0x7Fu
#define IXGBE_FDIRCMD_TUNNEL        (1u << 23)
#define IXGBE_FDIRCMD_VT_POOL_SHIFT 24
#define IXGBE_FDIRCMD_VT_POOL_MASK  0x3Fu
#define IXGBE_FDIRHASH_SIG_SHIFT    16          /* signature or SW index */
#define IXGBE_FDIRM_VLANID          (1u << 0)
#define IXGBE_FDIRM_VLANP           (1u << 1)
#define IXGBE_FDIRM_POOL            (1u << 2)
#define IXGBE_FDIRM_L4P             (1u << 3)
#define IXGBE_FDIRM_FLEX            (1u << 4)
#define IXGBE_FDIRM_DIPV6           (1u << 5)
#define IXGBE_SECRXSTAT_RDY         (1u << 0)
#define IXGBE_SECRXSTAT_OFF_DIS     (1u << 1)   /* IPsec fused off */

/* Transmit */
#define IXGBE_TXQ_BASE      0x06000     /* queues 0..127, 0x40 apart */
#define IXGBE_TXQ_STRIDE    0x40
#define IXGBE_TXQ_TDBAL     0x00
#define IXGBE_TXQ_TDBAH     0x04
#define IXGBE_TXQ_TDLEN     0x08
#define IXGBE_TXQ_TDH       0x10
#define IXGBE_TXQ_TDT       0x18
#define IXGBE_TXQ_TXDCTL    0x28
#define IXGBE_TXQ_TDWBAL    0x38
#define IXGBE_TXQ_TDWBAH    0x3C
#define IXGBE_DMATXCTL      0x04A80
#define IXGBE_RTTDCS        0x04900
#define IXGBE_DTXMXSZRQ     0x08100
#define IXGBE_MTQC          0x08120
#define IXGBE_TQSM0         0x08600     /* 32 registers */
#define IXGBE_SECTXCTRL     0x08800
#define IXGBE_SECTXSTAT     0x08804
#define IXGBE_TXPBSIZE0     0x0CC00

#define IXGBE_TXDCTL_WTHRESH_SHIFT  16
#define IXGBE_TXDCTL_WTHRESH_MASK   0x7Fu
#define IXGBE_TXDCTL_ENABLE         (1u << 25)
#define IXGBE_TDWBAL_HEAD_WB_EN     (1u << 0)
#define IXGBE_DMATXCTL_TE           (1u << 0)
#define IXGBE_SECTXSTAT_RDY         (1u << 0)
#define IXGBE_SECTXSTAT_OFF_DIS     (1u << 1)   /* IPsec fused off */

/* Statistics (all read-to-clear) */
#define IXGBE_CRCERRS       0x04000
#define IXGBE_MPC0          0x03FA0     /* 8 registers */
#define IXGBE_RNBC0         0x03FC0     /* 8 registers */
#define IXGBE_PRC64         0x0405C
#define IXGBE_GPRC          0x04074
#define IXGBE_BPRC          0x04078
#define IXGBE_MPRC          0x0407C
#define IXGBE_GPTC          0x04080
#define IXGBE_GORCL         0x04088
#define IXGBE_GOTCL         0x04090
#define IXGBE_RUC           0x040A4
#define IXGBE_ROC           0x040AC
#define IXGBE_TORL          0x040C0
#define IXGBE_TPR           0x040D0
#define IXGBE_TPT           0x040D4
#define IXGBE_PTC64         0x040D8
#define IXGBE_MPTC          0x040F0
#define IXGBE_BPTC          0x040F4
#define IXGBE_QPRC0         0x01030     /* 16, 0x40 apart */
#define IXGBE_QBRC0         0x01034     /* 16 64-bit, 0x40 apart */
#define IXGBE_QPRDC0        0x01430     /* 16, 0x40 apart */
#define IXGBE_QPTC0         0x06030     /* 16, 0x40 apart */
#define IXGBE_QBTC0         0x08700     /* 16 64-bit, 8 apart */

/*
 * Virtualization (SR-IOV): pools, the PF<->VF mailbox, VF reset events and
 * the per-pool counters the VFs read.
 */
#define IXGBE_MAX_VFS               64
#define IXGBE_VF_OFFSET             0x80    /* routing ID of VF 0 - PF's */
#define IXGBE_VF_STRIDE             2
#define IXGBE_VF_MMIO_SIZE          (16 * KiB)
#define IXGBE_VF_MSIX_SIZE          (16 * KiB)
#define IXGBE_VF_MSIX_PBA_OFFSET    0x2000
#define IXGBE_VF_MSIX_VECTORS       3
#define IXGBE_VF_IVARS              4       /* 8 queues at most per pool */
#define IXGBE_MBX_WORDS             16

#define IXGBE_VFLRE0        0x00600     /* VFs 0..31 */
#define IXGBE_VFLRE1        0x001C0     /* VFs 32..63 */
#define IXGBE_PFMBICR0      0x00710     /* 4 registers, 16 VFs each */
#define IXGBE_VFLREC0       0x00700     /* 2 registers */
#define IXGBE_PFMBIMR0      0x00720     /* 2 registers */
#define IXGBE_PFMAILBOX0    0x04B00     /* 64 registers */
#define IXGBE_PFMBMEM0      0x13000     /* 16 words per VF */
#define IXGBE_VT_CTL        0x051B0
#define IXGBE_VFRE0         0x051E0     /* 2 registers */
#define IXGBE_VFTE0         0x08110     /* 2 registers */
#define IXGBE_QDE           0x02F04
#define IXGBE_PFVFSPOOF0    0x08200     /* 8 registers */
#define IXGBE_PFDTXGSWC     0x08220
#define IXGBE_VMVIR0        0x08000     /* 64 registers */
#define IXGBE_VMECM0        0x08790     /* 2 registers */
#define IXGBE_PFVML2FLT0    0x0F000     /* 64 registers (VMOLR) */
#define IXGBE_PFVLVF0       0x0F100     /* 64 registers */
#define IXGBE_PFVLVFB0      0x0F200     /* 128 registers */
#define IXGBE_PVFGPRC0      0x0101C     /* 64, 0x40 apart, in RX queue blocks */
#define IXGBE_PVFGORC_LSB0  0x01020
#define IXGBE_PVFGORC_MSB0  0x0D020
#define IXGBE_PVFMPRC0      0x0D01C
#define IXGBE_PVFGPTC0      0x08300     /* 64, 4 apart */
#define IXGBE_PVFGOTC_LSB0  0x08400     /* 64 pairs, 8 apart */

#define IXGBE_PFUTA0        0x0F400     /* 128 registers */
#define IXGBE_SSVPC         0x08780

#define IXGBE_VT_CTL_VT_ENA         (1u << 0)
#define IXGBE_VT_CTL_POOL_SHIFT     7
#define IXGBE_VT_CTL_POOL_MASK      0x3Fu
#define IXGBE_VT_CTL_DIS_DEF_PL     (1u << 29)
#define IXGBE_VT_CTL_REPLEN         (1u << 30)

/* PFVML2FLT (VMOLR): what a pool accepts */
#define IXGBE_VMOLR_AUPE            (1u << 24)
#define IXGBE_VMOLR_ROMPE           (1u << 25)
#define IXGBE_VMOLR_ROPE            (1u << 26)
#define IXGBE_VMOLR_BAM             (1u << 27)
#define IXGBE_VMOLR_MPE             (1u << 28)

#define IXGBE_PFVLVF_VIEN           (1u << 31)
#define IXGBE_PFVLVF_VLANID_MASK    0xFFFu
#define IXGBE_PFDTXGSWC_VT_LBEN     (1u << 0)
#define IXGBE_PFVFSPOOF_VLANAS_SHIFT 8

/* VMVIR: the port VLAN of a pool's transmit side */
#define IXGBE_VMVIR_TAG_MASK        0xFFFFu
#define IXGBE_VMVIR_VLANA_SHIFT     30
#define IXGBE_VMVIR_VLANA_DESC      0u      /* as the descriptor says (VLE) */
#define IXGBE_VMVIR_VLANA_DEFAULT   1u      /* always insert the port VLAN */
#define IXGBE_VMVIR_VLANA_NEVER     2u      /* never insert a VLAN tag */
#define IXGBE_VMVIR_VLANA_RESERVED  3u      /* taken as DESC, logged */
#define IXGBE_VMVIR_WMASK           0xC000FFFFu

/* QDE: per queue drop enable, written and read through one register */
#define IXGBE_QDE_ENABLE            (1u << 0)
#define IXGBE_QDE_IDX_SHIFT         8
#define IXGBE_QDE_IDX_MASK          0x7Fu
#define IXGBE_QDE_WRITE             (1u << 16)
#define IXGBE_QDE_READ              (1u << 17)

/* MRQC.MRQE virtualization modes; MTQC pools */
#define IXGBE_MRQC_VMDQ             0x8u
#define IXGBE_MRQC_VMDQ_RSS32       0xAu
#define IXGBE_MRQC_VMDQ_RSS64       0xBu
#define IXGBE_MRQC_VMDQ_DCB8        0xCu
#define IXGBE_MRQC_VMDQ_DCB4        0xDu
#define IXGBE_PSRTYPE_RQPL_SHIFT    29
#define IXGBE_MTQC_VT_ENA           (1u << 1)
#define IXGBE_MTQC_NUM_MASK         (3u << 2)
#define IXGBE_MTQC_64VF             (1u << 2)
#define IXGBE_MTQC_32VF             (2u << 2)

#define IXGBE_GCR_EXT_VT_MODE_MASK  3u
#define IXGBE_GCR_EXT_VT_MODE_16    1u
#define IXGBE_GCR_EXT_VT_MODE_32    2u
#define IXGBE_GCR_EXT_VT_MODE_64    3u

#define IXGBE_PFMAILBOX_STS         (1u << 0)
#define IXGBE_PFMAILBOX_ACK         (1u << 1)
#define IXGBE_PFMAILBOX_VFU         (1u << 2)
#define IXGBE_PFMAILBOX_PFU         (1u << 3)
#define IXGBE_PFMAILBOX_RVFU        (1u << 4)
#define IXGBE_PFMBICR_VFREQ(vf)     (1u << ((vf) % 16))
#define IXGBE_PFMBICR_VFACK(vf)     (1u << (16 + (vf) % 16))

/* The VF's own register file (offsets into its BAR 0) */
#define IXGBE_VFCTRL        0x00000
#define IXGBE_VFSTATUS      0x00008
#define IXGBE_VFLINKS       0x00010
#define IXGBE_VFFRTIMER     0x00048
#define IXGBE_VTEICR        0x00100
#define IXGBE_VTEICS        0x00104
#define IXGBE_VTEIMS        0x00108
#define IXGBE_VTEIMC        0x0010C
#define IXGBE_VTEIAC        0x00110
#define IXGBE_VTEIAM        0x00114
#define IXGBE_VTIVAR0       0x00120     /* IXGBE_VF_IVARS registers */
#define IXGBE_VTIVAR_MISC   0x00140
#define IXGBE_VTRSCINT0     0x00180
#define IXGBE_VFMBMEM       0x00200
#define IXGBE_VFMAILBOX     0x002FC
#define IXGBE_VFPSRTYPE     0x00300
#define IXGBE_VTEITR0       0x00820     /* 3 registers */
#define IXGBE_VFRXQ_BASE    0x01000     /* RX queue n at + 0x40 * n */
#define IXGBE_VFTXQ_BASE    0x02000     /* TX queue n at + 0x40 * n */
#define IXGBE_VFGPRC        0x0101C
#define IXGBE_VFGORC_LSB    0x01020
#define IXGBE_VFGORC_MSB    0x01024
#define IXGBE_VFMPRC        0x01034
#define IXGBE_VFGPTC        0x0201C
#define IXGBE_VFGOTC_LSB    0x02020
#define IXGBE_VFGOTC_MSB    0x02024
#define IXGBE_VFRXMEMWRAP   0x03190

#define IXGBE_VFCTRL_RST            (1u << 26)
#define IXGBE_VTEICR_MASK           0x7u    /* one cause per MSI-X vector */

#define IXGBE_VFMAILBOX_REQ         (1u << 0)
#define IXGBE_VFMAILBOX_ACK         (1u << 1)
#define IXGBE_VFMAILBOX_VFU         (1u << 2)
#define IXGBE_VFMAILBOX_PFU         (1u << 3)
#define IXGBE_VFMAILBOX_PFSTS       (1u << 4)
#define IXGBE_VFMAILBOX_PFACK       (1u << 5)
#define IXGBE_VFMAILBOX_RSTI        (1u << 6)
#define IXGBE_VFMAILBOX_RSTD        (1u << 7)
#define IXGBE_VFMAILBOX_R2C_BITS    (IXGBE_VFMAILBOX_PFSTS | \
                                     IXGBE_VFMAILBOX_PFACK | \
                                     IXGBE_VFMAILBOX_RSTD)

/* Advanced transmit descriptor */
#define IXGBE_TXD_DTALEN_MASK       0xFFFFu
#define IXGBE_TXD_DTYP_MASK         (0xFu << 20)
#define IXGBE_TXD_DTYP_CTXT         (0x2u << 20)
#define IXGBE_TXD_DTYP_DATA         (0x3u << 20)
#define IXGBE_TXD_CMD_TSTAMP        (1u << 19)   /* IEEE 1588 time stamp */
#define IXGBE_TXD_CMD_EOP           (1u << 24)
#define IXGBE_TXD_CMD_IFCS          (1u << 25)
#define IXGBE_TXD_CMD_RS            (1u << 27)
#define IXGBE_TXD_CMD_DEXT          (1u << 29)
#define IXGBE_TXD_CMD_VLE           (1u << 30)
#define IXGBE_TXD_CMD_TSE           (1u << 31)
#define IXGBE_TXD_STA_DD            (1u << 0)
#define IXGBE_TXD_IDX_SHIFT         4
#define IXGBE_TXD_POPTS_IXSM        (1u << 8)
#define IXGBE_TXD_POPTS_TXSM        (1u << 9)
#define IXGBE_TXCTX_VLAN_SHIFT      16
#define IXGBE_TXCTX_L4T_MASK        (3u << 11)
#define IXGBE_TXCTX_L4T_SCTP        (2u << 11)
#define IXGBE_TXCTX_MSS_SHIFT       16
/* Legacy transmit descriptor: cmd byte at bits 31:24 of the second dword */
#define IXGBE_LTXD_CMD_IC           (1u << 26)

/* Advanced receive descriptor write-back */
#define IXGBE_RXD_STAT_DD           (1u << 0)
#define IXGBE_RXD_STAT_EOP          (1u << 1)
#define IXGBE_RXD_STAT_FLM          (1u << 2)    /* Flow Director match */
#define IXGBE_RXD_STAT_VP           (1u << 3)
#define IXGBE_RXD_STAT_UDPCS        (1u << 4)
#define IXGBE_RXD_STAT_L4CS         (1u << 5)
#define IXGBE_RXD_STAT_IPCS         (1u << 6)
#define IXGBE_RXD_STAT_TS           (1u << 16)   /* IEEE 1588 time stamp */
#define IXGBE_RXD_ERR_FDIR_LEN      (1u << 20)
#define IXGBE_RXD_ERR_FDIR_DROP     (1u << 21)
#define IXGBE_RXD_ERR_FDIR_COLL     (1u << 22)
#define IXGBE_RXD_ERR_TCPE          (1u << 30)
#define IXGBE_RXD_ERR_IPE           (1u << 31)
#define IXGBE_RXD_PKTTYPE_SHIFT     4
#define IXGBE_RXD_PKTTYPE_IPV4      (1u << 0)
#define IXGBE_RXD_PKTTYPE_IPV6      (1u << 2)
#define IXGBE_RXD_PKTTYPE_TCP       (1u << 4)
#define IXGBE_RXD_PKTTYPE_UDP       (1u << 5)
#define IXGBE_RXD_PKTTYPE_SCTP      (1u << 6)

/* RSS type reported in the receive descriptor */
enum {
    IXGBE_RSSTYPE_NONE = 0,
    IXGBE_RSSTYPE_IPV4_TCP = 1,
    IXGBE_RSSTYPE_IPV4 = 2,
    IXGBE_RSSTYPE_IPV6_TCP = 3,
    IXGBE_RSSTYPE_IPV6 = 5,
    IXGBE_RSSTYPE_IPV4_UDP = 7,
    IXGBE_RSSTYPE_IPV6_UDP = 8,
    IXGBE_RSSTYPE_FDIR = 15,        /* the hash field holds a filter ID */
};

/*
 * Descriptor layouts (16 bytes, little endian).  Transmit: the read format
 * of data descriptors; a context descriptor puts VLAN/MACLEN/IPLEN in the
 * low and the sequence-number seed in the high half of addr.  Receive: the
 * read format of one-buffer descriptors, and the advanced and legacy
 * write-back formats.
 */
typedef struct IxgbeTxDesc {
    uint64_t addr;
    uint32_t cmd_type_len;
    uint32_t olinfo_status;         /* STA.DD in bit 0 after write-back */
} IxgbeTxDesc;

typedef union IxgbeRxDesc {
    struct {
        uint64_t pkt_addr;
        uint64_t hdr_addr;
    } read;
    struct {
        uint32_t info;              /* RSS type 3:0, packet type 16:4 */
        uint32_t rss_hash;
        uint32_t status_error;
        uint16_t length;
        uint16_t vlan;
    } wb;
    struct {
        uint64_t addr;
        uint16_t length;
        uint16_t csum;
        uint8_t status;
        uint8_t errors;
        uint16_t special;
    } legacy;
} IxgbeRxDesc;

#define IXGBE_DESC_SIZE             16

/* Smallest TSO segment payload the model segments (a model limit) */
#define IXGBE_TSO_MIN_MSS           48

/* EEPROM words the drivers read */
#define IXGBE_EEPROM_CHECKSUM_WORD  0x3F
#define IXGBE_EEPROM_SUM            0xBABA
#define IXGBE_EEPROM_PTR_FIRST      0x03
#define IXGBE_EEPROM_PTR_LAST       0x0E
#define IXGBE_EEPROM_FW_PTR         0x0F
#define IXGBE_EEPROM_PBA0           0x15
#define IXGBE_EEPROM_PBA1           0x16
#define IXGBE_EEPROM_SAN_MAC_PTR    0x28
#define IXGBE_EEPROM_ALT_MAC_PTR    0x27
#define IXGBE_EEPROM_DEVICE_CAPS    0x2C
#define IXGBE_EEPROM_ETRACK_L       0x2D
#define IXGBE_EEPROM_ETRACK_H       0x2E
#define IXGBE_EEPROM_PHY_INIT_PTR   0x2B    /* SFP+ init sequences */
#define IXGBE_EEPROM_PHY_INIT_END   0xFFFF
/* Firmware module block: its LESM and pass-through patch pointers */
#define IXGBE_FW_LESM_PARAMETERS_PTR    0x2
#define IXGBE_FW_PASSTHROUGH_PATCH_PTR  0x4
#define IXGBE_FW_PATCH_VERSION_4        0x7

/*
 * Register arrays, one entry by index, under the names the Linux driver
 * gives them (ixgbe_type.h), so that IXGBE_QPRC(i) reads the same here.
 */
#define IXGBE_IVAR(i)           (IXGBE_IVAR0 + (i) * 4)
#define IXGBE_MTA(i)            (IXGBE_MTA0 + (i) * 4)
#define IXGBE_RETA(i)           (IXGBE_RETA0 + (i) * 4)
#define IXGBE_RSSRK(i)          (IXGBE_RSSRK0 + (i) * 4)
#define IXGBE_VFTA(i)           (IXGBE_VFTA0 + (i) * 4)
#define IXGBE_RAL(i)            (IXGBE_RAL0 + (i) * 8)
#define IXGBE_RAH(i)            (IXGBE_RAL0 + (i) * 8 + 4)
#define IXGBE_MPSAR_LO(i)       (IXGBE_MPSAR0 + (i) * 8)
#define IXGBE_MPSAR_HI(i)       (IXGBE_MPSAR0 + (i) * 8 + 4)
#define IXGBE_PSRTYPE(i)        (IXGBE_PSRTYPE0 + (i) * 4)
#define IXGBE_FDIRSIPV6(i)      (IXGBE_FDIRSIPV6_0 + (i) * 4)
#define IXGBE_QPRC(i)           (IXGBE_QPRC0 + (i) * 0x40)
#define IXGBE_QBRC_L(i)         (IXGBE_QBRC0 + (i) * 0x40)
#define IXGBE_QBRC_H(i)         (IXGBE_QBRC0 + (i) * 0x40 + 4)
#define IXGBE_QPRDC(i)          (IXGBE_QPRDC0 + (i) * 0x40)
#define IXGBE_QPTC(i)           (IXGBE_QPTC0 + (i) * 0x40)
#define IXGBE_QBTC_L(i)         (IXGBE_QBTC0 + (i) * 8)
#define IXGBE_QBTC_H(i)         (IXGBE_QBTC0 + (i) * 8 + 4)
#define IXGBE_PFMBICR(i)        (IXGBE_PFMBICR0 + (i) * 4)
#define IXGBE_VFLREC(i)         (IXGBE_VFLREC0 + (i) * 4)
#define IXGBE_PFMBIMR(i)        (IXGBE_PFMBIMR0 + (i) * 4)
#define IXGBE_PFMAILBOX(i)      (IXGBE_PFMAILBOX0 + (i) * 4)
#define IXGBE_VFRE(i)           (IXGBE_VFRE0 + (i) * 4)
#define IXGBE_VFTE(i)           (IXGBE_VFTE0 + (i) * 4)
#define IXGBE_PFVFSPOOF(i)      (IXGBE_PFVFSPOOF0 + (i) * 4)
#define IXGBE_VMVIR(i)          (IXGBE_VMVIR0 + (i) * 4)
#define IXGBE_VMECM(i)          (IXGBE_VMECM0 + (i) * 4)
#define IXGBE_VMOLR(i)          (IXGBE_PFVML2FLT0 + (i) * 4)
#define IXGBE_VLVF(i)           (IXGBE_PFVLVF0 + (i) * 4)
#define IXGBE_VLVFB(i)          (IXGBE_PFVLVFB0 + (i) * 4)
#define IXGBE_PVFGPRC(i)        (IXGBE_PVFGPRC0 + (i) * 0x40)
#define IXGBE_PVFGORC_LSB(i)    (IXGBE_PVFGORC_LSB0 + (i) * 0x40)
#define IXGBE_PVFGORC_MSB(i)    (IXGBE_PVFGORC_MSB0 + (i) * 0x40)
#define IXGBE_PVFMPRC(i)        (IXGBE_PVFMPRC0 + (i) * 0x40)
#define IXGBE_PVFGPTC(i)        (IXGBE_PVFGPTC0 + (i) * 4)
#define IXGBE_PVFGOTC_LSB(i)    (IXGBE_PVFGOTC_LSB0 + (i) * 8)
#define IXGBE_PVFGOTC_MSB(i)    (IXGBE_PVFGOTC_LSB0 + (i) * 8 + 4)

#endif
