"""The system being tuned: files under a root, an ethtool and a service manager."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Optional

from .discover import parse_interrupts
from .errors import PrivilegeError
from .ethtool import Ethtool
from .services import Services
from .sysfs import Root


@dataclass
class Host:
    root: Root
    ethtool: Optional[Ethtool]
    services: Services

    @property
    def live(self) -> bool:
        return self.root.live

    def check_privilege(self, what: str) -> None:
        if self.live and os.geteuid() != 0:
            raise PrivilegeError(f"nettune {what} changes /proc, /sys and NIC settings and must run as root "
                                 f"(euid 0); this process runs as uid {os.geteuid()}. Nothing was changed.")

    def annotate(self, cmds: List[List[str]]) -> str:
        """The commands a change took, as printed after it (listed, not run, in a --root tree)."""
        if not cmds:
            return ""
        text = "; ".join(" ".join(c) for c in cmds)
        return f"   [{text}]" if self.live else f"   [{text}: recorded in the tree, not run (--root)]"


class IrqNumbers:
    """The IRQ number of each action name in /proc/interrupts, read when first asked.

    IRQ numbers change across reboots and driver reloads; action names
    ("eth0-TxRx-0", "virtio1-input.0") do not.
    """

    def __init__(self, host: Host) -> None:
        self.host = host
        self._numbers: Optional[Dict[str, int]] = None

    def get(self, action: str) -> Optional[int]:
        if self._numbers is None:
            try:
                rows = parse_interrupts(self.host.root.read("/proc/interrupts"))
            except OSError:
                rows = []
            self._numbers = {name: irq for irq, names in rows for name in names}
        return self._numbers.get(action)
