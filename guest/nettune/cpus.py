"""CPU list and CPU mask text formats used by sysfs and procfs.

* A *CPU list* is what `smp_affinity_list`, `cpu/online` or `node*/cpulist` hold:
  "0-3,8,10-11".
* A *CPU mask* is what `rps_cpus`, `xps_cpus` or `smp_affinity` hold: hexadecimal,
  least significant bit = CPU 0, zero-padded to the number of possible CPUs and
  split into comma-separated 32-bit words ("00000000,0000000f").
"""

from __future__ import annotations

from typing import Iterable, List

from .errors import UsageError


def parse_cpulist(text: str, what: str = "CPU list") -> List[int]:
    """Parse "0-3,5" into [0, 1, 2, 3, 5]. Empty text is the empty list."""
    text = text.strip()
    cpus: set[int] = set()
    if not text:
        return []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise UsageError(f"{what} {text!r}: empty element")
        stride = 1
        if ":" in part:  # the kernel also accepts "0-7:2" (every second CPU)
            part, _, stride_text = part.partition(":")
            if not stride_text.isdigit() or int(stride_text) == 0:
                raise UsageError(f"{what} {text!r}: bad stride in {part!r}")
            stride = int(stride_text)
        if "-" in part:
            lo_text, _, hi_text = part.partition("-")
            if not (lo_text.isdigit() and hi_text.isdigit()):
                raise UsageError(f"{what} {text!r}: {part!r} is not a CPU range")
            lo, hi = int(lo_text), int(hi_text)
            if hi < lo:
                raise UsageError(f"{what} {text!r}: range {part!r} runs backwards")
            cpus.update(range(lo, hi + 1, stride))
        else:
            if not part.isdigit():
                raise UsageError(f"{what} {text!r}: {part!r} is not a CPU number")
            cpus.add(int(part))
    return sorted(cpus)


def format_cpulist(cpus: Iterable[int]) -> str:
    """Format [0, 1, 2, 3, 5] as "0-3,5" (the kernel's own spelling)."""
    ordered = sorted(set(cpus))
    parts: List[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_mask(text: str, what: str = "CPU mask") -> List[int]:
    """Parse a hexadecimal CPU mask ("00000000,0000000f" or "f") into a CPU list."""
    digits = text.strip().replace(",", "")
    if digits == "":
        return []
    try:
        value = int(digits, 16)
    except ValueError:
        raise UsageError(f"{what} {text.strip()!r} is not a hexadecimal CPU mask") from None
    cpus: List[int] = []
    bit = 0
    while value:
        if value & 1:
            cpus.append(bit)
        value >>= 1
        bit += 1
    return cpus


def format_mask(cpus: Iterable[int], nr_cpu_ids: int) -> str:
    """Format CPUs as the kernel prints a cpumask for `nr_cpu_ids` possible CPUs."""
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    width = max(1, (max(nr_cpu_ids, 1) + 3) // 4)
    digits = format(value, "x").rjust(width, "0")
    groups: List[str] = []
    while len(digits) > 8:
        groups.insert(0, digits[-8:])
        digits = digits[:-8]
    groups.insert(0, digits)
    return ",".join(groups)
