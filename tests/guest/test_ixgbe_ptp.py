"""IEEE 1588 on the emulated 82599 with the stock driver and linuxptp: the
port's PTP hardware clock runs with the guest's time and follows phase and
frequency adjustments, ptp4l synchronises one port's clock to the other's
over the wire with hardware time stamps, and phc2sys one clock to another.

The two ports are wired through a QEMU hub, which hands a frame from one
port to the other within the transmit call: the time a frame spends
between its two time stamps is then the model's own, not a trip through
the host's sockets and main loop (hundreds of microseconds under TCG, with
as much jitter), so the servo's offsets say how well the clock and the
time stamps are modelled.

The same two ports also carry the UDP segmentation offload scenario (at
the end), so that it needs no guest of its own."""
from __future__ import annotations

import base64
import ipaddress
import math
import re
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ixgbe_testlib.host import scaled
from ixgbe_testlib.netcheck import risen
from ixgbe_testlib.nicargs import mac_address
from ixgbe_testlib.vm import VMFactory, load_driver
from scenarios import WIRE_NET, Guest, back_to_back_args, boot_back_to_back, wire_back_to_back

# L2 transport, hardware time stamps, log to stdout. ptp4l waits 1 ms by
# default for a transmit time stamp, which the driver's work item delivers
# well after that in an emulated guest on a loaded host: 200 ms, so that a
# time stamp that never comes is still caught.
# Four Sync messages a second (logSyncInterval -2): the servo's 60 locked
# samples take 15 s rather than a minute at ptp4l's default rate (and a
# summary interval as short, so that each sample is logged).
PTP4L_OPTS = "-2 -H -m -q --tx_timestamp_timeout 200 --logSyncInterval -2 --summary_interval -2"
LOCKED_SAMPLES = 60
# Measured here (TCG, 2 shared host cores under load): 3-6 us rms. A host
# that deschedules QEMU between a frame's hand-over and its time stamp adds
# a few samples of hundreds of microseconds (80 us rms in one run beside
# another guest suite), and one such sample of a millisecond swings the
# servo for about 7 s: 14 of the 30 samples judged, in a full test run with
# three suites on two cores (-971,803 ns, then 77 us down to 7 us). So the
# lower quartile of |offset| is held to PTP_TYPICAL_BOUND_NS, which one
# swing cannot move, and the rms only to PTP_RMS_BOUND_NS: a stamp taken
# at the wrong place is off by milliseconds in every sample.
PTP_TYPICAL_BOUND_NS = 50_000
PTP_RMS_BOUND_NS = 1_000_000


@pytest.fixture(scope="module")
def g(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    guest = boot_back_to_back(make_module_vm, "ixgbe", "ixgbe", smp=2, hub=True)
    wire_back_to_back(guest.vm, *guest.devs)
    return guest


@pytest.fixture(scope="module")
def gi(require_ixgbe: None, make_module_vm: VMFactory) -> Guest:
    """The same two ports in a guest whose virtual clock counts guest
    instructions (-icount): the host's time for the model's own work does
    not advance it, so a frame handed from port to port through the hub
    arrives at the time it left, as over a wire of zero length."""
    macs = [mac_address(0), mac_address(1)]
    vm = make_module_vm(
        name="icount",
        smp=2,
        args=["-icount", "shift=auto,sleep=off"],
        args_factory=back_to_back_args("ixgbe", macs, hub=True),
    )
    load_driver(vm, "ixgbe")
    guest = Guest(vm, "ixgbe", vm.wait_netdevs("ixgbe", 2)[:2], macs, vm.uptime())
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


@pytest.mark.kernel_sensitive("ptp")
def test_ethtool_reports_hardware_timestamping(g: Guest) -> None:
    out = g.vm.sh(f"ethtool -T {g.devs[0]}")
    assert "hardware-transmit" in out and "hardware-receive" in out, out
    assert re.search(r"PTP Hardware Clock: \d+", out), out


@pytest.mark.kernel_sensitive("ptp")
def test_clock_runs_with_guest_time(g: Guest) -> None:
    a = g.devs[0]
    phc0, sys0 = phc_seconds(g, a)
    time.sleep(scaled(5))
    phc1, sys1 = phc_seconds(g, a)
    assert phc1 > phc0, f"the PHC stands: {phc0} then {phc1}"
    assert abs((phc1 - phc0) - (sys1 - sys0)) < 0.05 * (sys1 - sys0), (phc0, phc1, sys0, sys1)


@pytest.mark.kernel_sensitive("ptp")
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


@pytest.mark.kernel_sensitive("ptp")
def test_phase_adjustment(g: Guest) -> None:
    """phc_ctl adj (the driver's adjtime: TIMADJ in the model's terms, a
    timecounter offset in the driver's) moves the clock by that much."""
    a = g.devs[0]
    phc0, up0 = phc_seconds(g, a)
    g.vm.sh(f"phc_ctl {a} adj 100")
    phc1, up1 = phc_seconds(g, a)
    gained = (phc1 - phc0) - (up1 - up0)
    assert 99.9 < gained < 100.1, f"the PHC gained {gained:.3f}s for an adjustment of 100s"
    g.vm.sh(f"phc_ctl {a} -- adj -100")


def s2_offsets(log: str) -> list[tuple[float, int]]:
    """(ptp4l time stamp, master offset in ns) of the servo's locked samples."""
    return [(float(t), int(o)) for t, o in re.findall(r"ptp4l\[(\d+\.\d+)\]: master offset\s+(-?\d+) s2", log)]


def run_ptp4l(g: Guest) -> list[int]:
    """ptp4l with port 0 the master and port 1 (netns peer) the slave, for
    LOCKED_SAMPLES of the slave's locked servo; the slave's offsets (ns)
    over the second half of them. No time stamp may be lost."""
    a, b = g.devs
    g.vm.sh(f"setsid ptp4l -i {a} {PTP4L_OPTS} --masterOnly 1 </dev/null >/tmp/ptp-master.log 2>&1 &")
    g.vm.sh(f"ip netns exec peer setsid ptp4l -i {b} {PTP4L_OPTS} -s </dev/null >/tmp/ptp-slave.log 2>&1 &")
    try:
        g.vm.wait_until(
            f"{LOCKED_SAMPLES} samples of the slave's locked servo",
            lambda: len(s2_offsets(g.vm.run("cat /tmp/ptp-slave.log").stdout)) >= LOCKED_SAMPLES,
            timeout=scaled(400),
            interval=2.0,
        )
    finally:
        g.vm.run("kill $(pidof ptp4l)")
    slave = g.vm.sh("cat /tmp/ptp-slave.log")
    master = g.vm.sh("cat /tmp/ptp-master.log")
    for log in (slave, master):
        assert "timed out while polling for tx timestamp" not in log, log
        assert "received SYNC without timestamp" not in log, log
    offsets = [o for _, o in s2_offsets(slave)]
    return offsets[len(offsets) // 2 :]


def rms(values: list[int]) -> float:
    return math.sqrt(sum(v * v for v in values) / len(values))


@pytest.mark.kernel_sensitive("ptp")
def test_ptp4l_synchronises_the_ports(g: Guest, record_summary: Callable[[str], None]) -> None:
    """The slave's servo locks on hardware time stamps and stays close. The
    stamps are taken where the model hands a frame over and where it takes
    one in; between them lies the host's time for the model's own work,
    which a loaded host stretches by microseconds, now and then by far
    more (see PTP_TYPICAL_BOUND_NS). A clock or time stamp
    taken from the wrong place would be off by milliseconds or seconds."""
    late = run_ptp4l(g)
    record_summary(f"ptp4l slave offset, TCG: rms {rms(late) / 1000:.2f} us, "
                   f"max {max(map(abs, late)) / 1000:.2f} us ({len(late)} samples)")
    assert statistics.quantiles(map(abs, late), n=4)[0] < PTP_TYPICAL_BOUND_NS, late
    assert rms(late) < PTP_RMS_BOUND_NS, late


def test_ptp4l_under_a_microsecond_with_icount(gi: Guest, record_summary: Callable[[str], None]) -> None:
    """With the virtual clock counting instructions, the model's time
    stamps are exact (path delay 0-3 ns): the slave's offset stays under
    1 us rms over the second half of its locked samples."""
    late = run_ptp4l(gi)
    record_summary(f"ptp4l slave offset, -icount: rms {rms(late):.0f} ns, "
                   f"max {max(map(abs, late))} ns ({len(late)} samples)")
    assert rms(late) < 1000, late


def ptp_device(g: Guest, dev: str, netns: str = "") -> str:
    """/dev/ptpN of a port (the clocks are global; the port may be in a netns)."""
    prefix = f"ip netns exec {netns} " if netns else ""
    m = re.search(r"PTP Hardware Clock: (\d+)", g.vm.sh(f"{prefix}ethtool -T {dev}"))
    assert m, f"{dev} has no PTP clock"
    return f"/dev/ptp{m.group(1)}"


@pytest.mark.kernel_sensitive("ptp")
def test_phc2sys_synchronises_the_clocks(g: Guest) -> None:
    """phc2sys steers port 1's clock to port 0's (both in this guest) and
    locks on them."""
    src, dst = ptp_device(g, g.devs[0]), ptp_device(g, g.devs[1], "peer")
    g.vm.sh(f"phc_ctl {dst} -- adj 0.5")
    g.vm.sh(f"setsid phc2sys -s {src} -c {dst} -O 0 -m -q -R 4 </dev/null >/tmp/phc2sys.log 2>&1 &")
    try:
        g.vm.wait_until(
            "phc2sys locked",
            lambda: len(re.findall(r"offset\s+-?\d+ s2", g.vm.run("cat /tmp/phc2sys.log").stdout)) >= 20,
            timeout=scaled(120),
            interval=2.0,
        )
    finally:
        g.vm.run("kill $(pidof phc2sys)")
    log = g.vm.sh("cat /tmp/phc2sys.log")
    offsets = [int(o) for o in re.findall(r"offset\s+(-?\d+) s2", log)]
    assert all(abs(o) < PTP_TYPICAL_BOUND_NS for o in offsets[-10:]), log


# ------------------------------------------------------------------- USO
# UDP segmentation offload, on this module's two ports (one reused guest):
# a UDP_SEGMENT send from port 0 must reach port 1's namespace as separate
# datagrams of gso_size bytes each, which only a device that segments UDP
# into whole datagrams delivers (IP fragments reassemble into one datagram;
# an unsegmented IPv6 frame is dropped as too long).

USO_TOTAL = 14_500
USO_GSO_SIZE = 1400
USO_PORT = 5555
USO_HELPER = Path(__file__).with_name("udpgso.c")


@pytest.fixture(scope="module")
def udpgso(g: Guest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """udpgso.c, built here without a C library and copied into the guest,
    which has neither a compiler nor a language with setsockopt."""
    exe = tmp_path_factory.mktemp("udpgso") / "udpgso"
    cflags = "-static -nostdlib -nostartfiles -ffreestanding -fno-stack-protector -fno-builtin -fno-pie -no-pie -Os -s"
    subprocess.run(["cc", *cflags.split(), "-o", str(exe), str(USO_HELPER)], check=True)
    g.vm.sh(f"echo {base64.b64encode(exe.read_bytes()).decode()} | base64 -d >/tmp/udpgso && chmod +x /tmp/udpgso")
    return "/tmp/udpgso"


def uso_datagrams(g: Guest, udpgso: str, dst: str) -> list[tuple[int, bool]]:
    """(length, payload in sequence) of each datagram that port 1 (netns
    peer) received from one UDP_SEGMENT send of port 0 to dst."""
    vm, log, addr = g.vm, "/tmp/uso-recv.txt", ipaddress.ip_address(dst).packed.hex()
    vm.sh(f"ip netns exec peer setsid {udpgso} recv {addr} {USO_PORT} </dev/null >{log} 2>&1 &")
    vm.wait_until("UDP receiver in netns peer", lambda: "ready" in vm.run(f"cat {log}").stdout)
    vm.sh(f"{udpgso} send {addr} {USO_PORT} {USO_TOTAL} {USO_GSO_SIZE}")
    vm.wait_until("UDP receiver done", lambda: not vm.run("pidof udpgso").stdout.strip(), timeout=30)
    out = vm.sh(f"cat {log}")
    return [(int(n), v == "ok") for n, v in re.findall(r"^(\d+) (ok|bad)$", out, re.M)]


def test_udp_segmentation(g: Guest, udpgso: str) -> None:
    """The driver hands the device UDP segmentation contexts (L4T UDP,
    MSS): 14,500 bytes with gso_size 1400 arrive as 11 datagrams, in
    order and intact, over IPv4 and IPv6."""
    a, b = g.devs
    feats = g.vm.sh(f"ethtool -k {a}")
    assert re.search(r"tx-udp-segmentation: on", feats), feats
    g.vm.sh(f"ip -6 addr add 2001:db8:51::1/64 dev {a} nodad")
    g.vm.sh(f"ip netns exec peer ip -6 addr add 2001:db8:51::2/64 dev {b} nodad")
    before = g.vm.ethtool_stats(b, netns="peer")
    want = [(USO_GSO_SIZE, True)] * (USO_TOTAL // USO_GSO_SIZE) + [(USO_TOTAL % USO_GSO_SIZE, True)]
    got = {dst: uso_datagrams(g, udpgso, dst) for dst in (f"{WIRE_NET}.2", "2001:db8:51::2")}
    print(f"USO datagrams at the peer: { {k: len(v) for k, v in got.items()} }")
    for dst, dgrams in got.items():
        assert dgrams == want, f"to {dst}: {len(dgrams)} datagrams {dgrams}, want {len(want)}"
    up = risen(before, g.vm.ethtool_stats(b, netns="peer"))
    assert not up, f"peer error counters rose: {up}"
