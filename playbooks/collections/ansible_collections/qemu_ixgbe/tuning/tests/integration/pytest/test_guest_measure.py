"""guest_net_measure through playbooks/measure.yml: `nettune measure` run by the role on a
host, against a peer running `nettune measure --serve`, and its report fetched.

The host is this machine inside a network namespace of its own (ansible-playbook runs
there with the local connection), the peer `nettune measure --serve` in a second one,
a veth pair between them: real iperf3, sockperf, nettune apply and revert on a live
kernel, without touching the machine's own interfaces. nettune's configuration names
the veth and keeps the sysctls that are not per namespace (as tests/tuner's live test).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from harness import REPO, run_playbook

NETTUNE = REPO / "guest" / "bin" / "nettune"
HOST_NS, PEER_NS = "nt-measure-host-%d" % os.getpid(), "nt-measure-peer-%d" % os.getpid()
HOST_IP, PEER_IP = "192.0.2.1", "192.0.2.2"
CONFIG = """
[nettune]
profile = forwarding
interfaces = mh0
irqbalance = ignore
housekeeping = none
[sysctl]
net.core.netdev_max_backlog = keep
net.core.netdev_budget = keep
net.core.rmem_max = keep
net.core.wmem_max = keep
"""
# a veth has no IRQs, so no interrupt heat map
PLOTS = {"bars-throughput.png", "bars-latency.png", "bars-udp64.png", "heat-softirq.png", "heat-softirq-time.png"}


def sh(*argv: str) -> None:
    proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, "%s: %s" % (" ".join(argv), proc.stderr)


@pytest.fixture(scope="module")
def lab() -> Iterator[None]:
    if os.geteuid() != 0:
        pytest.fail("needs root (network namespaces)")
    missing = [t for t in ("ip", "iperf3", "sockperf", "ethtool") if shutil.which(t) is None]
    if missing:
        pytest.fail("%s not found: run scripts/deps.sh (scripts/deps/apt-ansible.txt)" % ", ".join(missing))
    sh("ip", "netns", "add", HOST_NS)
    sh("ip", "netns", "add", PEER_NS)
    try:
        sh("ip", "link", "add", "mh0", "netns", HOST_NS, "numtxqueues", "4", "numrxqueues", "4",
           "type", "veth", "peer", "name", "mp0", "netns", PEER_NS, "numtxqueues", "4", "numrxqueues", "4")
        for ns, dev, ip in ((HOST_NS, "mh0", HOST_IP), (PEER_NS, "mp0", PEER_IP)):
            sh("ip", "-n", ns, "addr", "add", ip + "/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        yield
    finally:
        subprocess.run(["ip", "netns", "del", HOST_NS], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", PEER_NS], check=False, capture_output=True)


@pytest.fixture
def peer(lab: None, tmp_path: Path) -> Iterator[Path]:
    log = tmp_path / "serve.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen(["ip", "netns", "exec", PEER_NS, sys.executable, str(NETTUNE), "measure",
                                 "--serve"], stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while "serving:" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield log
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def inventory(tmp_path: Path, **extra: Any) -> Path:
    (tmp_path / "nettune.conf").write_text(CONFIG)
    host: Dict[str, Any] = dict({
        "ansible_connection": "local",
        "ansible_python_interpreter": sys.executable,
        "guest_net_measure_peer": PEER_IP,
        "guest_net_measure_interface": "mh0",
        "guest_net_measure_runs": 1,
        "guest_net_measure_seconds": 1,
        "guest_net_measure_command": [sys.executable, str(NETTUNE), "--config", str(tmp_path / "nettune.conf"),
                                      "--state", str(tmp_path / "state.json")],
        "guest_net_measure_remote_dir": str(tmp_path / "remote"),
        "guest_net_measure_fetch_dir": str(tmp_path / "reports"),
    }, **extra)
    path = tmp_path / "inventory.json"
    path.write_text(json.dumps({"all": {"children": {"measure_hosts": {"hosts": {"localhost": host}}}}}))
    return path


def measure(tmp_path: Path, check: bool = False, **extra: Any):  # type: ignore[no-untyped-def]
    return run_playbook("measure.yml", inventory(tmp_path, **extra), check=check,
                        prefix=["ip", "netns", "exec", HOST_NS], timeout=900)


def files(d: Path) -> List[str]:
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def test_measure_role_fetches_the_report_and_leaves_the_tuning(peer: Path, tmp_path: Path) -> None:
    run = measure(tmp_path)
    assert run.rc == 0, run.failures() or run.stdout[-3000:]
    got = tmp_path / "reports" / "localhost"
    assert files(got) == sorted(PLOTS | {"report.json", "report.md"})
    # the controller's copies are the host's files, byte for byte
    for name in files(got):
        assert (got / name).read_bytes() == (tmp_path / "remote" / name).read_bytes(), name
    for name in PLOTS:
        assert (got / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    rep = json.loads((got / "report.json").read_text())
    assert rep["peer"] == PEER_IP and rep["interface"] == "mh0"
    assert rep["phases"] == ["before", "after", "reverted"] and rep["runs"] == 1 and set(rep["plots"]) == PLOTS
    assert len(rep["runs_detail"]) == 15
    gbps = [r["values"]["gbps"] for r in rep["runs_detail"] if r["workload"] == "tcp_tx"]
    assert len(gbps) == 3 and min(gbps) > 0, gbps
    # apply ran for the 'after' phase (its log is in the report directory) and revert after it
    assert "applied" in (tmp_path / "remote" / "apply.log").read_text()
    assert not (tmp_path / "state.json").exists(), "measure left nettune's changes applied"
    # what the role published: one verdict set per metric, from the fetched report.json
    verdicts = run.task_results("Publish the verdicts")[0]["ansible_facts"]["guest_net_measure_verdicts"]
    assert verdicts == [row["verdicts"] for row in rep["metrics"]] and len(verdicts) == 6
    # a measurement is an action: the role reports it as a change (and the fetched files), every time
    changed = {t.split(" : ", 1)[-1].split(": ")[0] for t in run.changed_tasks()}
    assert {"Measure", "Fetch the report and plots"} <= changed, run.changed_tasks()

    # check mode: says what it would run, runs nothing, fetches nothing
    stamp = (tmp_path / "remote" / "report.json").stat().st_mtime_ns
    check = measure(tmp_path, check=True, guest_net_measure_fetch_dir=str(tmp_path / "check"))
    assert check.rc == 0, check.failures()
    shown = json.dumps(check.task_results("Show what would run (check mode)"))
    assert "would run: %s %s" % (sys.executable, NETTUNE) in shown and " measure --peer %s" % PEER_IP in shown
    assert "would fetch report.json, report.md and the plots to %s/localhost/" % (tmp_path / "check") in shown
    assert not (tmp_path / "check").exists()
    assert (tmp_path / "remote" / "report.json").stat().st_mtime_ns == stamp


def test_measure_role_without_a_peer_fails_clearly(lab: None, tmp_path: Path) -> None:
    run = measure(tmp_path, guest_net_measure_phases="now")
    assert run.rc != 0
    assert "peer %s unreachable on TCP 11111 (sockperf)" % PEER_IP in json.dumps(run.task_results("Measure"))
    assert not (tmp_path / "reports" / "localhost").exists()
    assert not (tmp_path / "state.json").exists()
