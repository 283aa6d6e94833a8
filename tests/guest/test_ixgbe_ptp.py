"""IEEE 1588 on the emulated 82599 with the stock driver and linuxptp: the
port's PTP hardware clock runs with the guest's time and follows frequency
adjustments, and ptp4l synchronises one port's clock to the other's over
the wire with hardware time stamps."""
from __future__ import annotations

import re
import time

import pytest

from ixgbe_testlib.host import scaled
from ixgbe_testlib.vm import VMFactory
from scenarios import Guest, boot_back_to_back, wire_back_to_back

# L2 transport, hardware time stamps, log to stdout. ptp4l waits 1 ms by
# default for a transmit time stamp, which the driver's work item delivers
# well after that in an emulated guest on a loaded host: 200 ms, so that a
# time stamp that never comes is still caught.
PTP4L_OPTS = "-2 -H -m -q --tx_timestamp_timeout 200"


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    guest = boot_back_to_back(make_module_vm, "ixgbe", "ixgbe", smp=2)
    wire_back_to_back(guest.vm, *guest.devs)
    return guest


def phc_seconds(g: Guest, dev: str, netns: str = "") -> tuple[float, float]:
    """(PHC time, guest uptime) of dev's clock, in seconds (the guest's
    date has no sub-second format; /proc/uptime has centiseconds)."""
    prefix = f"ip netns exec {netns} " if netns else ""
    out = g.vm.sh(f"{prefix}phc_ctl {dev} get; cat /proc/uptime")
    m = re.search(r"clock time is (\d+\.\d+)", out)
    assert m, out
    return float(m.group(1)), float(out.strip().splitlines()[-1].split()[0])


def test_ethtool_reports_hardware_timestamping(g: Guest) -> None:
    out = g.vm.sh(f"ethtool -T {g.devs[0]}")
    assert "hardware-transmit" in out and "hardware-receive" in out, out
    assert re.search(r"PTP Hardware Clock: \d+", out), out


def test_clock_runs_with_guest_time(g: Guest) -> None:
    a = g.devs[0]
    phc0, sys0 = phc_seconds(g, a)
    time.sleep(scaled(5))
    phc1, sys1 = phc_seconds(g, a)
    assert phc1 > phc0, f"the PHC stands: {phc0} then {phc1}"
    assert abs((phc1 - phc0) - (sys1 - sys0)) < 0.05 * (sys1 - sys0), (phc0, phc1, sys0, sys1)


def test_frequency_adjustment(g: Guest) -> None:
    """phc_ctl freq (the driver's adjfine, TIMINCA): +10% makes the clock
    gain about a tenth of the elapsed time."""
    a = g.devs[0]
    g.vm.sh(f"phc_ctl {a} freq 100000000")  # ppb
    try:
        phc0, sys0 = phc_seconds(g, a)
        time.sleep(scaled(5))
        phc1, sys1 = phc_seconds(g, a)
    finally:
        g.vm.sh(f"phc_ctl {a} freq 0")
    ratio = (phc1 - phc0) / (sys1 - sys0)
    assert 1.07 < ratio < 1.13, f"PHC/system rate {ratio:.4f} with +10% asked"


def test_ptp4l_synchronises_the_ports(g: Guest) -> None:
    """Port 0 is the master, port 1 (netns peer) the slave: the slave's
    servo locks (s2) on hardware time stamps, and no time stamp is lost."""
    a, b = g.devs
    g.vm.sh(f"setsid ptp4l -i {a} {PTP4L_OPTS} --masterOnly 1 </dev/null >/tmp/ptp-master.log 2>&1 &")
    g.vm.sh(f"ip netns exec peer setsid ptp4l -i {b} {PTP4L_OPTS} -s </dev/null >/tmp/ptp-slave.log 2>&1 &")
    try:
        g.vm.wait_until(
            "the slave's servo locked (s2)",
            lambda: len(re.findall(r"master offset\s+-?\d+ s2", g.vm.run("cat /tmp/ptp-slave.log").stdout)) >= 5,
            timeout=scaled(120),
            interval=2.0,
        )
    finally:
        g.vm.run("kill $(pidof ptp4l)")
    slave = g.vm.sh("cat /tmp/ptp-slave.log")
    master = g.vm.sh("cat /tmp/ptp-master.log")
    offsets = [int(x) for x in re.findall(r"master offset\s+(-?\d+) s2", slave)]
    # Under TCG a frame takes a few hundred microseconds of virtual time
    # from one port to the other (the path delay ptp4l measures), and the
    # servo wanders by about as much; a clock or time stamp taken from the
    # wrong place would be off by seconds.
    assert all(abs(o) < 10_000_000 for o in offsets[-3:]), slave
    for log in (slave, master):
        assert "timed out while polling for tx timestamp" not in log, log
        assert "received SYNC without timestamp" not in log, log
