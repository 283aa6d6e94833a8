"""The real backends end to end: the ethtool binary and real sysfs/procfs, on a veth pair
in a network namespace made (and removed) by the test, so the host is never touched.

What this covers that the trees cannot: parsing of the installed ethtool's output,
`ethtool -K/-L` really changing a device, the kernel re-creating queues after a
channel change (discovery runs again), per-netns sysctls, and revert on a live kernel.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from typing import Iterator, List

import pytest

from conftest import GUEST
from nettune.cpus import parse_cpulist, parse_mask
from nettune.ethtool import find_ethtool

ETHTOOL = find_ethtool()
IP = shutil.which("ip")
NS = f"nettune-test-{os.getpid()}"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or ETHTOOL is None or IP is None,
    reason="needs root, ip (iproute2) and ethtool (scripts/deps/apt-tuner.txt installs them)")

CONFIG = """
[nettune]
profile = forwarding
interfaces = va
irqbalance = ignore
housekeeping = none
[sysctl]
# global (not per-namespace) on some kernels: never touch them from this test
net.core.netdev_max_backlog = keep
net.core.netdev_budget = keep
net.core.rmem_max = keep
net.core.wmem_max = keep
"""


def ns(*argv: str) -> str:
    proc = subprocess.run([IP or "ip", "netns", "exec", NS] + list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
    assert proc.returncode == 0, f"{argv}: {proc.stderr}"
    return proc.stdout


def nettune(tmp: str, *argv: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([IP or "ip", "netns", "exec", NS, sys.executable, os.path.join(GUEST, "bin", "nettune"),
                           "--config", os.path.join(tmp, "nettune.conf"), "--state",
                           os.path.join(tmp, "state.json")] + list(argv),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)


def snapshot() -> List[str]:
    """Everything nettune may change on va, as the kernel reports it."""
    out = [ns(ETHTOOL or "ethtool", "-k", "va"), ns(ETHTOOL or "ethtool", "-l", "va")]
    listing = ns("sh", "-c", "cd /sys/class/net/va/queues && for f in */rps_cpus */xps_cpus; do "
                             "echo $f $(cat $f 2>/dev/null || echo unreadable); done")
    sysctls = ns("sh", "-c", "cat /proc/sys/net/ipv4/ip_forward /proc/sys/net/ipv4/conf/all/rp_filter "
                             "/proc/sys/net/ipv4/conf/default/rp_filter /proc/sys/net/ipv4/conf/va/rp_filter "
                             "/proc/sys/net/ipv4/ip_early_demux")
    return out + [listing, sysctls]


@pytest.fixture
def veth(tmp_path: "os.PathLike[str]") -> Iterator[str]:
    subprocess.run([IP or "ip", "netns", "add", NS], check=True)
    try:
        ns(IP or "ip", "link", "add", "va", "numtxqueues", "4", "numrxqueues", "4", "type", "veth",
           "peer", "name", "vb", "numtxqueues", "4", "numrxqueues", "4")
        ns(IP or "ip", "link", "set", "va", "up")
        ns(IP or "ip", "link", "set", "vb", "up")
        ns(ETHTOOL or "ethtool", "-K", "va", "tx-nocache-copy", "on")   # something for the tuner to undo
        ns("sh", "-c", "echo 2 > /proc/sys/net/ipv4/conf/all/rp_filter")
        with open(os.path.join(str(tmp_path), "nettune.conf"), "w") as f:
            f.write(CONFIG)
        yield str(tmp_path)
    finally:
        subprocess.run([IP or "ip", "netns", "del", NS], check=False)


def test_real_ethtool_and_sysfs_apply_verify_revert(veth: str) -> None:
    before = snapshot()
    disc = nettune(veth, "discover", "-i", "va")
    assert disc.returncode == 0, disc.stderr
    assert "channels      rx 4, tx 4 (max rx 4, tx 4)" in disc.stdout
    with open("/sys/devices/system/cpu/online") as f:
        online = parse_cpulist(f.read())
    assert nettune(veth, "verify").returncode == 1

    r = nettune(veth, "apply")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "changed va feature tx-nocache-copy" in r.stdout and "[ethtool -K va tx-nocache-copy off]" in r.stdout
    k = ns(ETHTOOL or "ethtool", "-k", "va")
    assert "tx-nocache-copy: off" in k
    # one queue per online CPU (no housekeeping CPU here): the kernel really re-created the queues
    want = min(4, len(online))
    listing = ns("ls", "/sys/class/net/va/queues").split()
    assert sorted(listing) == sorted([f"rx-{q}" for q in range(want)] + [f"tx-{q}" for q in range(want)])
    for q in range(want):
        xps = ns("cat", f"/sys/class/net/va/queues/tx-{q}/xps_cpus").strip()
        assert parse_mask(xps) == [online[q]]
    assert ns("cat", "/proc/sys/net/ipv4/ip_forward").strip() == "1"
    assert ns("cat", "/proc/sys/net/ipv4/conf/all/rp_filter").strip() == "0"

    v = nettune(veth, "verify")
    assert v.returncode == 0, v.stdout + v.stderr
    again = nettune(veth, "apply")
    assert again.returncode == 0 and "nothing to change" in again.stdout, again.stdout

    ns(ETHTOOL or "ethtool", "-K", "va", "tx-nocache-copy", "on")     # drift made by someone else
    d = nettune(veth, "verify")
    assert d.returncode == 1 and "DRIFT va feature tx-nocache-copy" in d.stdout

    rv = nettune(veth, "revert")
    assert rv.returncode == 0, rv.stdout + rv.stderr
    assert snapshot() == before


def test_wait_up_is_woken_by_the_link_event() -> None:
    """`nettune wait-up` (the re-apply unit's ExecStartPre) returns as soon as the port is set
    up, times out with exit 1 when it never is, and refuses an unknown interface."""
    wns = NS + "-wait"
    subprocess.run([IP or "ip", "netns", "add", wns], check=True)
    cmd = [IP or "ip", "netns", "exec", wns, sys.executable, os.path.join(GUEST, "bin", "nettune"), "wait-up"]
    try:
        subprocess.run([IP or "ip", "-n", wns, "link", "add", "wa", "type", "veth", "peer", "name", "wb"],
                       check=True)
        late = subprocess.run(cmd + ["wa", "--timeout", "1"], stdout=subprocess.PIPE, universal_newlines=True,
                              timeout=30)
        assert late.returncode == 1 and "wa is not up after 1 s" in late.stdout
        unknown = subprocess.run(cmd + ["nosuch0"], stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        assert unknown.returncode == 2 and "no such interface: nosuch0" in unknown.stderr

        waiter = subprocess.Popen(cmd + ["wa", "--timeout", "60"], stdout=subprocess.PIPE, universal_newlines=True)
        try:
            time.sleep(1.0)
            assert waiter.poll() is None              # still waiting: the port is down
            up_at = time.monotonic()
            subprocess.run([IP or "ip", "-n", wns, "link", "set", "wa", "up"], check=True)
            out, _ = waiter.communicate(timeout=30)
        finally:
            waiter.kill()
        assert waiter.returncode == 0 and "wa is up" in out
        assert time.monotonic() - up_at < 5           # woken by the event, not by the timeout
        again = subprocess.run(cmd + ["wa", "--timeout", "0"], stdout=subprocess.PIPE, universal_newlines=True,
                               timeout=30)
        assert again.returncode == 0                  # already up: no wait at all
    finally:
        subprocess.run([IP or "ip", "netns", "del", wns], check=False)
