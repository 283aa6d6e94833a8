"""Parsers of what the guest prints: the console stream, `dmesg -r`,
ethtool's outputs, /proc/interrupts. Pure functions, tested on recorded
output (tests/guest/test_parsers.py)."""

from __future__ import annotations

import dataclasses
import re

from ixgbe_testlib.errors import GuestError

# ----------------------------------------------------------------- console
# A kernel message on the console: "[ seconds] text" up to its line end. The
# kernel writes each one whole (under the port lock), possibly in the middle
# of a line of the agent's, whose output never contains "[".
_KMSG_ON_CONSOLE = re.compile(rb"\[\s*\d+\.\d+\] [^\n]*\n")


def strip_kernel_messages(raw: bytes) -> bytes:
    """The console stream without the kernel messages printed into it."""
    return _KMSG_ON_CONSOLE.sub(b"", raw)


# --------------------------------------------------------------- kernel log
@dataclasses.dataclass(frozen=True)
class KmsgRecord:
    level: int  # 0 emerg .. 7 debug
    facility: int  # 0 kernel
    timestamp: float  # seconds since boot
    text: str

    @property
    def is_warning_or_worse(self) -> bool:
        return self.level <= 4


_DMESG_RE = re.compile(r"^<(\d+)>\[\s*(\d+\.\d+)\]\s?(.*)$")


def parse_dmesg_raw(text: str) -> list[KmsgRecord]:
    """Parse `dmesg -r` output: `<prio>[ seconds] message` lines.

    prio = facility * 8 + level. Lines without a prefix continue the previous
    record.
    """
    records: list[KmsgRecord] = []
    for line in text.splitlines():
        m = _DMESG_RE.match(line)
        if m:
            prio = int(m.group(1))
            records.append(KmsgRecord(prio & 7, prio >> 3, float(m.group(2)), m.group(3)))
        elif records and line.strip():
            last = records[-1]
            records[-1] = dataclasses.replace(last, text=last.text + "\n" + line)
    return records


# ---------------------------------------------------------------- parsers
def parse_ethtool_stats(text: str) -> dict[str, int]:
    """`ethtool -S dev` -> {counter: value}."""
    stats: dict[str, int] = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([^:]+):\s+(-?\d+)\s*$", line)
        if m:
            stats[m.group(1).strip()] = int(m.group(2))
    if not stats:
        raise GuestError(f"no counters in ethtool -S output:\n{text}")
    return stats


def parse_ethtool_settings(text: str) -> dict[str, str]:
    """`ethtool dev` -> {"Speed": "10000Mb/s", "Link detected": "yes", ...}."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s+([A-Za-z][^:]*):\s*(.*)$", line)
        if m:
            out[m.group(1).strip()] = m.group(2).strip()
    return out


@dataclasses.dataclass(frozen=True)
class SelfTest:
    passed: bool
    results: dict[str, int]  # e.g. {"Register test  (offline)": 0, ...}
    output: str


def parse_selftest(text: str) -> SelfTest:
    """`ethtool -t dev [offline|online]` output."""
    m = re.search(r"The test result is (PASS|FAIL)", text)
    if not m:
        raise GuestError(f"no test result in ethtool -t output:\n{text}")
    results: dict[str, int] = {}
    after = text.split("The test extra info:", 1)
    if len(after) == 2:
        for line in after[1].splitlines():
            r = re.match(r"^(.*\S)\s+(-?\d+)\s*$", line)
            if r:
                results[r.group(1).strip()] = int(r.group(2))
    return SelfTest(m.group(1) == "PASS", results, text)


def parse_channels(text: str) -> dict[str, dict[str, int]]:
    """`ethtool -l dev` -> {"max": {"Combined": 63, ...}, "current": {...}}."""
    section = ""
    out: dict[str, dict[str, int]] = {"max": {}, "current": {}}
    for line in text.splitlines():
        if line.startswith("Pre-set maximums"):
            section = "max"
        elif line.startswith("Current hardware settings"):
            section = "current"
        else:
            m = re.match(r"^(RX|TX|Other|Combined):\s+(\S+)", line)
            if m and section:
                value = m.group(2)
                out[section][m.group(1)] = int(value) if value.isdigit() else 0
    if not out["current"]:
        raise GuestError(f"cannot parse ethtool -l output:\n{text}")
    return out


@dataclasses.dataclass(frozen=True)
class RssConfig:
    reta: list[int]
    key: bytes | None  # None when the driver cannot report it
    hash_function: str  # e.g. "toeplitz" (the function marked "on")


def parse_rss(text: str) -> RssConfig:
    """`ethtool -x dev` -> redirection table, hash key and active function."""
    reta: list[int] = []
    key: bytes | None = None
    func = ""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^\s*(\d+):\s+((?:\d+\s*)+)$", line)
        if m:
            start = int(m.group(1))
            values = [int(v) for v in m.group(2).split()]
            if start != len(reta):
                raise GuestError(f"RETA rows out of order at {start}:\n{text}")
            reta.extend(values)
        elif line.startswith("RSS hash key:") and i + 1 < len(lines):
            hexkey = lines[i + 1].strip()
            if re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2})*", hexkey):
                key = bytes.fromhex(hexkey.replace(":", ""))
        f = re.match(r"^\s*(\w+):\s+on\s*$", line)
        if f:
            func = f.group(1)
    if not reta:
        raise GuestError(f"cannot parse ethtool -x output:\n{text}")
    return RssConfig(reta, key, func)


def parse_interrupts(text: str) -> dict[str, int]:
    """/proc/interrupts -> {action name: total count over all CPUs}."""
    lines = text.splitlines()
    if not lines:
        raise GuestError("empty /proc/interrupts")
    ncpu = len(lines[0].split())
    out: dict[str, int] = {}
    for line in lines[1:]:
        parts = line.split()
        if not parts or not parts[0].endswith(":") or not parts[0][:-1].isdigit():
            continue
        counts = [int(p) for p in parts[1 : 1 + ncpu] if p.isdigit()]
        name = parts[-1]
        out[name] = sum(counts)
    return out
