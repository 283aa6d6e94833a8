# Devices of the sanitizer build (ASan + UBSan + libFuzzer, made by
# scripts/fuzz.sh in $BUILD_DIR/qemu-fuzz): QEMU configured with
# --without-default-devices and this file, so the build compiles only what
# its users start. scripts/build-qemu.sh links it into the QEMU tree as
# configs/devices/x86_64-softmmu/ixgbe-sanitizer.mak.
#
# Its users: the fuzz targets (generic-fuzz-ixgbe*: q35, the PF behind a
# PCIe root port), 'scripts/run-qtest.sh --sanitizer' (the ixgbe qtests on
# q35, QEMU's pcie-sriov-test on igb) and the guest-asan suite
# (scripts/run-guest-sanitizer.sh: q35 with direct kernel boot, the NIC
# hot-plugged behind a root port). A test that needs another device fails
# with "'<name>' is not a valid device model name": add it here.

CONFIG_Q35=y
# the qtests' MMIO buffer (a TX fragment that needs a bounce buffer)
CONFIG_HPET=y
CONFIG_PCIE_PORT=y
CONFIG_IXGBE_PCI_EXPRESS=y
CONFIG_IGB_PCI_EXPRESS=y
# igb links with e1000x_common.c, which QEMU builds only for e1000/e1000e
CONFIG_E1000E_PCI_EXPRESS=y
