"""dpdk-testpmd in interactive mode in a systemd guest: started with its
commands written into a FIFO and its output in a log file, for the e2e
tests (tests/e2e/test_dpdk_*.py) and the DPDK benchmark
(tests/bench/dpdkbench.py); and the parser of its port statistics, which
both read (tested without a VM by tests/e2e/test_testpmd_parsers.py)."""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Callable, Sequence

from ixgbe_testlib.errors import GuestError
from ixgbe_testlib.sysguest import SystemdVM


@dataclasses.dataclass(frozen=True)
class PortStats:
    """One port's block of `show port stats all`."""

    rx_packets: int
    rx_missed: int
    rx_bytes: int
    rx_errors: int
    rx_nombuf: int
    tx_packets: int
    tx_errors: int
    tx_bytes: int
    # testpmd's own rates since the previous `show port stats` of the port
    # (its "Throughput (since last show)" lines): both, or None
    rx_pps: int | None = None
    tx_pps: int | None = None


_COUNTERS = {
    "RX-packets": "rx_packets", "RX-missed": "rx_missed", "RX-bytes": "rx_bytes", "RX-errors": "rx_errors",
    "RX-nombuf": "rx_nombuf", "TX-packets": "tx_packets", "TX-errors": "tx_errors", "TX-bytes": "tx_bytes",
}  # fmt: skip
_RATES = {"Rx-pps": "rx_pps", "Tx-pps": "tx_pps"}
_KEYS = _COUNTERS | _RATES


def parse_port_stats(text: str, rates: bool = False) -> dict[int, PortStats]:
    """`show port stats all` -> {port: counters}. A block that lacks a
    counter (output cut short) is an error; so is one without testpmd's
    rates (Rx-pps and Tx-pps) when `rates` asks for them. Otherwise a
    block has its rates only if it has both."""
    parts = re.split(r"^.*NIC statistics for port (\d+)\b.*$", text, flags=re.MULTILINE)
    out: dict[int, PortStats] = {}
    for i in range(1, len(parts) - 1, 2):
        port, block = int(parts[i]), parts[i + 1]
        values: dict[str, int] = {}
        for k, v in re.findall(r"([RT][Xx]-[a-z]+):\s+(\d+)", block):
            if k in _KEYS:
                values.setdefault(_KEYS[k], int(v))
        wanted = set(_COUNTERS.values()) | (set(_RATES.values()) if rates else set())
        missing = sorted(wanted - set(values))
        if missing:
            raise GuestError(f"port {port}: no {', '.join(missing)} in testpmd's statistics:\n{block.strip()}")
        if not set(_RATES.values()) <= set(values):
            values = {k: v for k, v in values.items() if k not in _RATES.values()}
        out[port] = PortStats(**values)
    return out


class Testpmd:
    """dpdk-testpmd in interactive mode in the guest, its commands written
    into a FIFO (kept open by a holder process so it never sees EOF), its
    output in a log file read over the agent: each read fetches only what
    testpmd wrote since the previous one (reading the whole log at every
    poll took 75 s of the 134 s the e2e uio guest's commands took)."""

    __test__ = False  # not a test class for pytest
    FIFO = "/run/testpmd.in"
    LOG = "/run/testpmd.log"
    HOLDER = "/run/testpmd.holder"
    PROMPT = "testpmd> "
    EXIT = re.compile(r"@@TESTPMD-EXIT (\d+)@@")

    def __init__(self, vm: SystemdVM) -> None:
        self.vm = vm
        self._log = b""  # the log as read so far

    def log(self) -> str:
        """The whole log so far."""
        r = self.vm.run(f"tail -c +{len(self._log) + 1} {self.LOG} 2>/dev/null")
        if r.ok:
            self._log += r.raw
        return self._log.decode(errors="replace")

    def wait_log(self, what: str, done: Callable[[str], bool], timeout: float, interval: float = 0.5) -> str:
        """The log, once `done(log)` holds (or testpmd exited)."""

        def probe() -> str | None:
            text = self.log()
            return text if done(text) or self.EXIT.search(text) else None

        return self.vm.wait_until(what, probe, timeout, interval)

    def start(self, eal: Sequence[str], app: Sequence[str], timeout: float = 240) -> str:
        f, log = self.FIFO, self.LOG
        cmd = shlex.join(["stdbuf", "-oL", "-eL", "dpdk-testpmd", *eal, "--", "-i", *app])
        self.vm.sh(f"rm -f {f} {log} {self.HOLDER} && mkfifo {f}")
        self._log = b""
        self.vm.sh(f"setsid sh -c 'echo $$ > {self.HOLDER}; exec sleep 100000 > {f}' < /dev/null > /dev/null 2>&1 &")
        self.vm.sh(
            f"setsid sh -c '{cmd} < {f} > {log} 2>&1; echo \"@@TESTPMD-EXIT $?@@\" >> {log}'"
            " < /dev/null > /dev/null 2>&1 &"
        )
        return self.wait_log("the testpmd prompt", lambda t: self.PROMPT in t, timeout, interval=1)

    def cmd(self, line: str, timeout: float = 120) -> str:
        """Run one testpmd command; return its output (up to the next prompt)."""
        # the log as read so far ends with the prompt this command is typed
        # at: start() and the previous command waited for it
        before = self._log.decode(errors="replace")
        if self.EXIT.search(before):
            raise GuestError(f"testpmd is not running:\n{before[-3000:]}")
        n = before.count(self.PROMPT)
        # typed, and the log read a moment later in the same guest command:
        # most commands have answered by then, the others are polled for
        r = self.vm.run(
            f"echo {shlex.quote(line)} > {self.FIFO} && sleep 0.2 && tail -c +{len(self._log) + 1} {self.LOG}"
        )
        if not r.ok:
            raise GuestError(f"could not type `{line}` into testpmd: {r.stdout}")
        self._log += r.raw
        text = self._log.decode(errors="replace")
        if text.count(self.PROMPT) <= n:
            text = self.wait_log(f"testpmd to finish `{line}`", lambda t: t.count(self.PROMPT) > n, timeout)
        # the output starts after the prompt the command was typed at
        start = 0
        for _ in range(n):
            start = text.index(self.PROMPT, start) + len(self.PROMPT)
        end = text.find(self.PROMPT, start)
        return text[start : end if end >= 0 else len(text)]

    def quit(self, timeout: float = 180) -> tuple[int, str]:
        self.vm.sh(f"echo quit > {self.FIFO}")
        text = self.wait_log("testpmd to exit", lambda t: False, timeout, interval=1)
        self.vm.run(f"kill $(cat {self.HOLDER}) 2>/dev/null")
        m = self.EXIT.search(text)
        assert m is not None
        return int(m.group(1)), text
