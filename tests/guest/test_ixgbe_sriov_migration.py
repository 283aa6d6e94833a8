"""ixgbe SR-IOV across live migration: a guest whose PF has two VFs
enabled, each driven by ixgbevf in a network namespace of its own, moves
to a new QEMU. On the destination the VFs keep their PCI state (BARs,
bus mastering, MSI-X table), their mailbox and their pools: each still
reaches the wire, the PF and the other VF, interrupts keep arriving, and
a MAC change (a mailbox request to the PF driver) works.

The guest is migration.MigratingGuest: two ixgbe ports wired back to back,
port 0 (the PF with the VFs) at WIRE_NET.1, port 1 in netns "peer" at
WIRE_NET.2."""

from __future__ import annotations

import pytest

from ixgbe_testlib.vm import VM, VMFactory
from migration import MigratingGuest, MigrationResult
from scenarios import WIRE_NET, Guest, assert_clean_log, assert_qemu_quiet

pytestmark = pytest.mark.usefixtures("require_ixgbe")

NUM_VFS = 2
PF, PEER = f"{WIRE_NET}.1", f"{WIRE_NET}.2"
VFS = [f"{WIRE_NET}.{10 + n}" for n in range(NUM_VFS)]
# a locally administered MAC a VF asks the PF for after the move
NEW_MAC = "02:00:00:00:5e:10"


class VfGuest:
    """The migrating guest with its VFs up, one netns "vfN" per VF."""

    def __init__(self, mg: MigratingGuest) -> None:
        self.mg = mg
        vm = mg.vm
        pf = mg.ports[0]
        vm.modprobe("ixgbevf")
        vm.sh(f"echo {NUM_VFS} > /sys/class/net/{pf}/device/sriov_numvfs", timeout=180)
        devs = sorted(vm.wait_netdevs("ixgbevf", NUM_VFS, timeout=120), key=vm.pci_address)
        self.vfs = Guest(vm, "ixgbevf", devs, [vm.sh(f"cat /sys/class/net/{d}/address").strip() for d in devs])
        for n, dev in enumerate(devs):
            vm.sh(f"ip netns add vf{n} && ip link set {dev} netns vf{n}")
            vm.link_up(dev, f"{VFS[n]}/24", netns=f"vf{n}")
            vm.wait_until(f"carrier on {dev} in netns vf{n}", lambda: self.carrier(n, dev))

    def carrier(self, n: int, dev: str) -> bool:
        return self.vm.run(f"ip netns exec vf{n} cat /sys/class/net/{dev}/carrier").stdout.strip() == "1"

    @property
    def vm(self) -> VM:
        return self.mg.vm

    def migrate(self) -> MigrationResult:
        result, _ = self.mg.migrate()
        self.vfs.vm = self.mg.vm
        return result

    def dev(self, n: int) -> str:
        return self.vfs.devs[n]

    def ping_all(self, when: str) -> None:
        """Each VF reaches the wire's peer, the PF and the other VF."""
        for n in range(NUM_VFS):
            for dst in [PEER, PF] + [a for i, a in enumerate(VFS) if i != n]:
                r = self.vm.ping(dst, count=3, netns=f"vf{n}")
                assert r.ok and " 0% packet loss" in r.stdout, f"VF {n} -> {dst} {when}:\n{r.stdout}"

    def vf_interrupts(self) -> int:
        """Interrupts delivered to the VFs' MSI-X vectors."""
        total = 0
        for line in self.vm.sh("cat /proc/interrupts").splitlines():
            if any(d in line for d in self.vfs.devs):
                total += sum(int(w) for w in line.split()[1:] if w.isdigit())
        return total


@pytest.fixture(scope="module")
def vg(require_ixgbe: None, make_module_vm: VMFactory) -> VfGuest:
    return VfGuest(MigratingGuest(make_module_vm, "ixgbe", "ixgbe", "ixgbe-vf-mig", smp=2))


def test_vfs_work_before_the_move(vg: VfGuest) -> None:
    vg.ping_all("before the migration")


def test_vfs_work_after_the_move(vg: VfGuest) -> None:
    since = vg.vm.uptime()
    result = vg.migrate()
    assert result.status == "completed"
    irqs = vg.vf_interrupts()
    vg.ping_all("after the migration")
    assert vg.vf_interrupts() > irqs, "no VF interrupt on the destination"
    # the VFs' PCI functions came back as they were: bound, enabled, mastering
    for pci in vg.vfs.pcis:
        assert vg.vm.sh(f"cat /sys/bus/pci/devices/{pci}/enable").strip() == "1"
        assert vg.vm.sh(f"readlink /sys/bus/pci/devices/{pci}/driver").strip().endswith("/ixgbevf")
    assert_clean_log(vg.mg.g, since, " after a migration with VFs")
    assert_clean_log(vg.vfs, since, " after a migration")
    assert_qemu_quiet(vg.vm)


def test_vf_mailbox_after_the_move(vg: VfGuest) -> None:
    """A MAC change is a mailbox request the PF driver must answer; the
    internal switch then delivers to the new MAC."""
    since = vg.vm.uptime()
    dev = vg.dev(0)
    vg.vm.sh(f"ip netns exec vf0 ip link set {dev} address {NEW_MAC}")
    assert vg.vm.sh(f"ip netns exec vf0 cat /sys/class/net/{dev}/address").strip() == NEW_MAC
    vg.vm.sh(f"ip netns exec vf0 ip neigh flush all; ip netns exec peer ip neigh flush all; ip neigh flush all")
    vg.ping_all("after a MAC change on the destination")
    assert_clean_log(vg.vfs, since, " after a MAC change")
    assert_qemu_quiet(vg.vm)


def test_vfs_move_again_and_disable(vg: VfGuest) -> None:
    """A second move (the state the first destination saves), then the
    VFs are removed cleanly on the last QEMU."""
    since = vg.vm.uptime()
    vg.migrate()
    vg.ping_all("after a second migration")
    vg.vm.sh(f"echo 0 > /sys/class/net/{vg.mg.ports[0]}/device/sriov_numvfs", timeout=180)
    assert vg.vm.netdevs("ixgbevf") == []
    r = vg.vm.ping(PEER, count=3)
    assert r.ok, r.stdout
    assert_clean_log(vg.mg.g, since, " after the VFs were removed")
    assert_qemu_quiet(vg.vm)
