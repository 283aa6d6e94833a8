"""The 82599 parts besides the KR backplane one: the combined KX4/KX/KR
backplane port (-device ixgbe-combo, 0x10F8) and the SFP+ port of the X520
(-device ixgbe-sfp, 0x10FB) with its module (property "sfp").

Per part, the stock driver probes without a warning and ethtool shows the
port type and link modes of that part. On the SFP+ part: ethtool -m decodes
the module's SFF-8472 memory (a direct-attach cable and an Intel SR optic
with diagnostics); an empty cage probes, says nothing about a module and
keeps the link down; a third-party optic is refused by the driver itself;
pulling the module out through QMP (qom-set of "sfp") takes the link down
and pushing one in brings it back with the driver's "detected SFP+"."""

from __future__ import annotations

import re
from typing import ClassVar

import pytest

from ixgbe_testlib.host import has_device
from ixgbe_testlib.nicargs import mac_address, nic_args, user_netdev
from ixgbe_testlib.vm import VM, VMFactory
from scenarios import (
    WIRE_NET,
    HOST_IP,
    Guest,
    NicsGuest,
    NicSpec,
    UserNic,
    assert_clean_log,
    assert_qemu_quiet,
    assert_selftest_pass,
    boot_nics,
    boot_user_nic,
)

pytestmark = pytest.mark.usefixtures("require_ixgbe")

# ixgbe_sfp_type values the driver prints ("detected SFP+: N", "SFP+: N")
SFP_TYPE_DA_CORE0 = 3
SFP_TYPE_SRLR_CORE0 = 5


@pytest.fixture(autouse=True, scope="module")
def require_variants(qemu) -> None:  # noqa: ANN001 - fixture from conftest
    for name in ("ixgbe-sfp", "ixgbe-combo"):
        if not has_device(name, qemu):
            pytest.skip(f"QEMU binary {qemu} has no '-device {name}'")


def probe_lines(vm: VM, pci: str = "") -> list[str]:
    """The driver's kernel log lines (about the device at `pci` when given)."""
    return [r.text for r in vm.dmesg() if "ixgbe" in r.text and pci in r.text]


# The QOM path of the first NIC (nic_args gives it the id nic0)
NIC0 = "/machine/peripheral/nic0"


def boot_sfp(make_vm: VMFactory, sfp: str, *, up: bool = True, name: str = "x520") -> Guest:
    """A VM with one ixgbe-sfp port on slirp and the given module."""
    if up:
        return boot_user_nic(make_vm, "ixgbe-sfp", "ixgbe", smp=2, name=name, device_opts=f"sfp={sfp}")
    mac = mac_address(0)
    vm = make_vm(name=name, smp=2, args=nic_args("ixgbe-sfp", "n0", 0, mac, extra=f"sfp={sfp}") + user_netdev("n0"))
    vm.modprobe("ixgbe")
    return Guest(vm, "ixgbe", [], [mac], vm.uptime(), pcis=[])


def settings(vm: VM, dev: str) -> tuple[dict[str, str], str]:
    text = vm.sh(f"ethtool {dev}")
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([A-Za-z][^:]*):\s*(.*)$", line)
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out, text


# ------------------------------------------------------------------ probe


def selftest_then_quiet(g: Guest) -> None:
    """The driver's offline self-test (register, EEPROM, interrupt, loopback
    and link tests) passes, traffic flows after it, and neither the kernel
    log nor QEMU has anything to say."""
    assert_selftest_pass(g)
    g.vm.wait_carrier(g.dev)
    assert g.vm.ping(g.host, count=3).ok
    assert_clean_log(g)
    assert_qemu_quiet(g.vm)


class TestPartsAtProbe:
    """One guest with three ports whose state the driver reads at probe,
    one test each: the combined backplane part (another device ID), an SR
    optic in an X520's cage and an empty cage (both must be so at boot). A
    module the driver refuses at probe has a guest of its own (below): its
    error would be in every other port's log check."""

    SPECS: ClassVar[list[NicSpec]] = [
        UserNic("ixgbe-combo", "ixgbe"),
        UserNic("ixgbe-sfp", "ixgbe", subnet=3, opts="sfp=sr"),
        UserNic("ixgbe-sfp", "ixgbe", subnet=4, opts="sfp=none", up=False),
    ]
    COMBO, SR, EMPTY = range(3)

    @pytest.fixture(scope="class")
    @classmethod
    def nics(cls, require_ixgbe: None, make_class_vm: VMFactory) -> NicsGuest:
        return boot_nics(make_class_vm, cls.SPECS, smp=2, name="parts")

    @pytest.mark.kernel_sensitive("probe")
    def test_combo_backplane_probe(self, nics: NicsGuest) -> None:
        g = nics.guests[self.COMBO]
        vm = g.vm
        assert vm.sh(f"cat /sys/class/net/{g.dev}/device/device").strip() == "0x10f8"
        s, text = settings(vm, g.dev)
        print(text)
        assert s.get("Port") == "Other", text  # the driver's backplane port
        modes = s.get("Supported link modes", "") + text
        for mode in ("10000baseKX4/Full", "10000baseKR/Full", "1000baseKX/Full"):
            assert mode in modes, f"{mode} not supported:\n{text}"
        assert s.get("Speed") == "10000Mb/s" and s.get("Link detected") == "yes", text
        assert vm.ping(g.host).ok
        selftest_then_quiet(g)

    @pytest.mark.kernel_sensitive("probe")
    def test_sfp_sr_optic_diagnostics(self, nics: NicsGuest) -> None:
        g = nics.guests[self.SR]
        vm = g.vm
        lines = probe_lines(vm, g.pcis[0])
        assert any(f"SFP+: {SFP_TYPE_SRLR_CORE0}" in t for t in lines), lines
        s, text = settings(vm, g.dev)
        print(text)
        assert s.get("Port") == "FIBRE", text
        assert s.get("Link detected") == "yes", text
        m = vm.sh(f"ethtool -m {g.dev}")
        print(m)
        assert re.search(r"Connector\s*:\s*0x07 \(LC\)", m), m
        assert "10G Ethernet: 10G Base-SR" in m, m
        assert re.search(r"Vendor OUI\s*:\s*00:1b:21", m), m
        assert re.search(r"Laser wavelength\s*:\s*850nm", m), m
        assert re.search(r"Module temperature\s*:\s*35\.50 degrees C", m), m
        assert re.search(r"Module voltage\s*:\s*3\.3000 V", m), m
        assert re.search(r"Laser bias current\s*:\s*6\.000 mA", m), m
        assert re.search(r"Laser output power\s*:\s*0\.6000 mW", m), m
        assert re.search(r"Receiver signal average optical power\s*:\s*0\.5000 mW", m), m
        assert re.search(r"Laser bias current high alarm\s*:\s*Off", m), m
        # the driver switches the transmitter off while the port is down
        vm.sh(f"ip link set {g.dev} down")
        m = vm.sh(f"ethtool -m {g.dev}")
        assert re.search(r"Laser output power\s*:\s*0\.0000 mW", m), m
        assert re.search(r"Laser output power low alarm\s*:\s*On", m), m
        vm.sh(f"ip link set {g.dev} up")
        vm.wait_carrier(g.dev)
        assert vm.ping(g.host, count=3).ok
        selftest_then_quiet(g)

    @pytest.mark.kernel_sensitive("probe")
    def test_sfp_empty_cage(self, nics: NicsGuest) -> None:
        g = nics.guests[self.EMPTY]
        vm = g.vm
        vm.sh(f"ip link set {g.dev} up")
        lines = probe_lines(vm, g.pcis[0])
        print("\n".join(lines))
        assert lines, "no probe messages from the port"
        assert not any("SFP+:" in t for t in lines), lines
        vm.sh("sleep 5")
        assert vm.carrier(g.dev) is False, "link up with an empty cage"
        s, text = settings(vm, g.dev)
        print(text)
        # no module type, so the driver's ethtool names no port
        assert s.get("Port") == "Other" and s.get("Link detected") == "no", text
        r = vm.run(f"ethtool -m {g.dev}")
        assert not r.ok, f"ethtool -m read a module from an empty cage:\n{r.stdout}"
        assert_clean_log(g)
        assert_qemu_quiet(vm)


class TestDirectAttachCable:
    """One guest with a direct-attach cable in the cage for three
    scenarios, in this order: the probe, ethtool and traffic; module swaps
    through QMP, which end with the cable back in; a module the driver
    refuses, which ends with the port gone (hence last)."""

    @pytest.fixture(scope="class")
    @classmethod
    def g(cls, require_ixgbe: None, make_class_vm: VMFactory) -> Guest:
        return boot_sfp(make_class_vm, "da")

    @pytest.mark.kernel_sensitive("traffic", family="sfp")
    def test_sfp_da_probe_ethtool_traffic(self, g: Guest) -> None:
        vm = g.vm
        print("\n".join(probe_lines(vm)))
        assert vm.sh(f"cat /sys/class/net/{g.dev}/device/device").strip() == "0x10fb"
        assert any(f"SFP+: {SFP_TYPE_DA_CORE0}" in t for t in probe_lines(vm)), probe_lines(vm)
        s, text = settings(vm, g.dev)
        print(text)
        assert s.get("Port") == "Direct Attach Copper", text
        assert "10000baseT/Full" in text and "FIBRE" in text, text
        assert s.get("Speed") == "10000Mb/s" and s.get("Link detected") == "yes", text
        m = vm.sh(f"ethtool -m {g.dev}")
        print(m)
        assert re.search(r"Identifier\s*:\s*0x03 \(SFP\)", m), m
        assert re.search(r"Connector\s*:\s*0x21 \(Copper pigtail\)", m), m
        assert "Passive Cable" in m and "QEMU-SFP-DAC-3M" in m, m
        raw = vm.sh(f"ethtool -m {g.dev} hex on")
        assert "0x0000:" in raw and "0x0100:" not in raw, "a passive cable has no A2h page:\n" + raw
        assert vm.ping(HOST_IP, count=3).ok
        r = vm.run(f"ping -c 50 -i 0.01 -s 1400 {HOST_IP}", timeout=60)
        assert r.ok, r.stdout
        assert_clean_log(g)
        assert_qemu_quiet(vm)

    @pytest.mark.kernel_sensitive("link")
    def test_sfp_module_hot_unplug_plug(self, g: Guest) -> None:
        vm = g.vm
        mark = vm.uptime()
        path = NIC0
        assert vm.qmp("qom-get", path=path, property="sfp") == "da"
        for cycle in range(2):
            vm.qmp("qom-set", path=path, property="sfp", value="none")
            vm.wait_carrier(g.dev, up=False, timeout=60)
            assert vm.run(f"ethtool -m {g.dev}").ok is False, "ethtool -m read a pulled module"
            new = "sr" if cycle == 0 else "da"
            vm.qmp("qom-set", path=path, property="sfp", value=new)
            vm.wait_carrier(g.dev, up=True, timeout=60)
            assert vm.qmp("qom-get", path=path, property="sfp") == new
            r = vm.ping(HOST_IP, count=3)
            assert r.ok, f"cycle {cycle}: no traffic after the module came back:\n{r.stdout}"
        msgs = [r.text for r in vm.dmesg(mark) if "ixgbe" in r.text]
        print("\n".join(msgs))
        assert sum("NIC Link is Down" in t for t in msgs) == 2, msgs
        assert sum("NIC Link is Up 10 Gbps" in t for t in msgs) == 2, msgs
        assert any(f"detected SFP+: {SFP_TYPE_SRLR_CORE0}" in t for t in msgs), msgs
        assert any(f"detected SFP+: {SFP_TYPE_DA_CORE0}" in t for t in msgs), msgs
        s, text = settings(vm, g.dev)
        assert s.get("Port") == "Direct Attach Copper", text
        assert_clean_log(g, since=mark, what=" over module swaps")
        assert_qemu_quiet(vm)

    def test_sfp_hot_plug_unsupported_and_bad_value(self, g: Guest) -> None:
        vm = g.vm
        path = NIC0
        with pytest.raises(Exception, match="unknown SFP\\+ module type 'qsfp'"):
            vm.qmp("qom-set", path=path, property="sfp", value="qsfp")
        assert vm.qmp("qom-get", path=path, property="sfp") == "da"
        vm.qmp("qom-set", path=path, property="sfp", value="unsupported")
        vm.wait_until(
            "the driver's refusal",
            lambda: any("unsupported SFP+ module type was detected" in t for t in probe_lines(vm)),
            60,
        )
        vm.wait_until("the netdev to go", lambda: not vm.netdevs("ixgbe"), 60)
        print("\n".join(probe_lines(vm)))
        assert vm.alive()
        assert_qemu_quiet(vm)


@pytest.mark.kernel_sensitive("probe")
def test_sfp_unsupported_module_refused(make_vm: VMFactory) -> None:
    """Own VM: the driver refuses the port at probe, with an error that the
    log check of any other port in the guest would count."""
    g = boot_sfp(make_vm, "unsupported", up=False)
    vm = g.vm
    vm.wait_until(
        "the driver's refusal",
        lambda: any("unsupported SFP+" in t for t in probe_lines(vm)),
        60,
    )
    lines = probe_lines(vm)
    print("\n".join(lines))
    assert any("failed to load because an unsupported SFP+ or QSFP module type was detected" in t for t in lines)
    assert not vm.netdevs("ixgbe"), "a netdev for a port the driver refused"
    assert vm.alive()
    # the model itself has nothing to say about it
    assert_qemu_quiet(vm)


def test_bad_sfp_property_is_a_startup_error(make_vm: VMFactory) -> None:
    """Own VM: a QEMU that must refuse to start."""
    with pytest.raises(Exception) as exc:
        make_vm(name="bad", args=nic_args("ixgbe-sfp", "n0", 0, mac_address(0), extra="sfp=qsfp") + user_netdev("n0"))
    assert "unknown SFP+ module type 'qsfp'" in str(exc.value), str(exc.value)


# -------------------------------------------------------------- migration


def test_sfp_migration_mid_i2c(make_vm: VMFactory) -> None:
    """Live migration while the driver reads the module over I2C without
    pause (ethtool -m in a loop, so a move most likely stops the bus in the
    middle of a transfer): no read fails, no guest error, and a module
    swapped at run time on the source is what the destination has.

    Own VM: a migrating pair of QEMUs with an optic in the cage at boot."""
    from migration import MigratingGuest

    mg = MigratingGuest(make_vm, "ixgbe-sfp,sfp=sr", "ixgbe", name="x520mig", smp=2)
    a, _ = mg.ports
    before = mg.vm.sh(f"ethtool -m {a}")
    loop = (
        f"while :; do if ethtool -m {a} >/dev/null 2>&1; then echo >> /tmp/i2c-ok; "
        f"else echo fail >> /tmp/i2c-fail; fi; done"
    )
    # its own session: the agent ends what a command leaves in its group
    mg.vm.sh(f"setsid sh -c {loop!r} </dev/null >/dev/null 2>&1 & echo $! > /tmp/i2c-loop")

    def count() -> int:
        return int(mg.vm.sh("cat /tmp/i2c-ok 2>/dev/null | wc -l").strip())

    mg.vm.wait_until("ethtool -m to run in a loop", lambda: count() > 0, 60)
    reads = []
    for _ in range(3):
        n0 = count()
        mg.migrate()
        assert mg.vm.ping(f"{WIRE_NET}.2", count=3).ok
        reads.append(count() - n0)
    mg.vm.sh("kill $(cat /tmp/i2c-loop)")
    vm = mg.vm
    print("module reads around each migration:", reads)
    assert all(n > 0 for n in reads), f"the I2C loop did not run: {reads}"
    fails = vm.sh("cat /tmp/i2c-fail 2>/dev/null; true")
    assert not fails.strip(), f"ethtool -m failed across migrations:\n{fails}"
    after = vm.sh(f"ethtool -m {a}")
    # the live readings may move; the serial ID must not
    strip = re.compile(r"^\s*(Receiver signal|Laser output|Laser bias|Module temp|Module volt).*$", re.M)
    assert strip.sub("", after) == strip.sub("", before)

    # port 0 gets a cable on the source; the destination was started with sr
    vm.qmp("qom-set", path=NIC0, property="sfp", value="da")
    vm.wait_until(
        "the cable to be detected",
        lambda: any(f"detected SFP+: {SFP_TYPE_DA_CORE0}" in t for t in probe_lines(vm)),
        60,
    )
    vm.wait_carrier(a)
    mg.migrate()
    vm = mg.vm
    assert vm.qmp("qom-get", path=NIC0, property="sfp") == "da"
    s, text = settings(vm, a)
    assert s.get("Port") == "Direct Attach Copper", text
    assert "Passive Cable" in vm.sh(f"ethtool -m {a}")
    assert vm.ping(f"{WIRE_NET}.2", count=3).ok
    assert_clean_log(mg.g, what=" across migrations")
    for v in mg.vms:
        assert_qemu_quiet(v)
