"""The logs of the VMs a failing test used, attached to its pytest report.

Fixtures remember each VM they start on the test's (or module's, class's) node
with `remember_vm`; the hook of ixgbe_testlib.pytest_plugin calls
`failure_sections` for a failed report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ixgbe_testlib.vm import VM

LAUNCHED = pytest.StashKey[list["VM"]]()


def remember_vm(node: pytest.Item | pytest.Collector, vm: VM) -> None:
    node.stash.setdefault(LAUNCHED, []).append(vm)


def failure_sections(item: pytest.Item) -> list[tuple[str, str]]:
    """Log locations, QEMU's complaints, console and agent tails of every VM the
    test used, its own and those of module- or class-scoped fixtures."""
    vms: list[VM] = []
    node: pytest.Item | pytest.Collector | None = item
    while node is not None:
        launched: list[VM] = node.stash.get(LAUNCHED, [])
        vms.extend(launched)
        node = node.parent
    sections: list[tuple[str, str]] = []
    for vm in vms:
        sections.append((f"{vm.name}: logs", f"in {vm.log_dir}"))
        problems = vm.qemu_problems()
        if problems:
            sections.append((f"{vm.name}: QEMU stderr / guest errors", problems[-6000:]))
        sections.append((f"{vm.name}: console (tail)", vm.console_tail(3000)))
        try:
            agent = vm.agent_log.read_text(errors="replace")[-6000:]
        except OSError:
            agent = ""
        sections.append((f"{vm.name}: agent log (tail)", agent))
    return sections
