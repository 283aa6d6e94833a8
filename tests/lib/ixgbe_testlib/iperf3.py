"""iperf3 from the host's side: a server on the loopback for one test, a
client (e.g. to a hostfwd port), free ports, and the JSON reports of either
end (the guest's client is `VM.iperf3_client`)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from ixgbe_testlib.errors import GuestError, HarnessError
from ixgbe_testlib.host import die_with_parent, scaled


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tcp_listening(port: int) -> bool:
    """Whether a TCP socket of this network namespace listens on `port` (IPv4)."""
    with open("/proc/net/tcp", encoding="ascii") as f:
        next(f)
        for line in f:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


class HostIperf3Server:
    """`iperf3 -s` on the host's loopback for one test (killed at exit)."""

    def __init__(self, log_dir: Path, port: int | None = None) -> None:
        self.port = port or free_tcp_port()
        self.log_path = log_dir / f"host-iperf3-{self.port}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> HostIperf3Server:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as fh:
            self._proc = subprocess.Popen(
                ["iperf3", "-s", "-B", "127.0.0.1", "-p", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=fh,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            # Look for the listening socket instead of connecting to it: iperf3
            # takes every connection for a client and a probe disturbs the test.
            if tcp_listening(self.port):
                return self
            if self._proc.poll() is not None:
                break
            time.sleep(0.1)
        self.__exit__()
        raise HarnessError(f"host iperf3 server did not start: {self.log_path.read_text()}")

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=10)


def host_iperf3_client(port: int, seconds: int = 5, reverse: bool = False) -> dict[str, Any]:
    """iperf3 -c 127.0.0.1:port on the host (e.g. to a hostfwd port)."""
    argv = ["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t", str(seconds), "-J"]
    if reverse:
        argv.append("-R")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + scaled(90), check=False)
    return iperf3_report("host iperf3", out.returncode == 0, out.returncode, out.stdout, out.stderr)


def iperf3_report(who: str, ok: bool, rc: int, stdout: str, stderr: str = "") -> dict[str, Any]:
    """The JSON report of an `iperf3 -J` run, or GuestError saying why there is none
    (`ok`: the command exited 0 in time)."""
    try:
        report: dict[str, Any] = json.loads(stdout)
    except ValueError:
        raise GuestError(f"{who} failed (rc={rc}):\n{stdout}{stderr}") from None
    if "error" in report or not ok:
        raise GuestError(f"{who} failed: {report.get('error', stderr or stdout)}")
    return report


def iperf3_summary(report: dict[str, Any]) -> tuple[float, int]:
    """(received Mbit/s, sender retransmits) from an iperf3 JSON report."""
    end = report["end"]
    mbps = float(end["sum_received"]["bits_per_second"]) / 1e6
    retrans = int(end.get("sum_sent", {}).get("retransmits", 0) or 0)
    return mbps, retrans
