"""Wait until an interface is brought up, woken by rtnetlink link events.

Drivers such as ixgbe and igb request their queue IRQs in ndo_open, so a NIC that
has just appeared (boot, modprobe, hot-plug) has no queue IRQs to pin until
something sets it up. The re-apply unit waits for that here instead of polling:
it joins the rtnetlink link group first and only then looks at the flags, so an
`ip link set up` between the two is never missed.
"""

from __future__ import annotations

import errno
import select
import socket
import time
from typing import Optional

from .errors import UsageError
from .sysfs import Root

IFF_UP = 0x1
RTMGRP_LINK = 0x1


def is_up(root: Root, name: str) -> Optional[bool]:
    """IFF_UP of the interface; None when it does not exist (any more)."""
    text = root.read_value(f"/sys/class/net/{name}/flags")
    if text is None:
        return None
    try:
        return bool(int(text, 16) & IFF_UP)
    except ValueError:
        return None


def wait_up(root: Root, name: str, timeout: float) -> bool:
    """True once `name` is up, False when `timeout` seconds pass or it vanishes first."""
    if is_up(root, name) is None:
        raise UsageError(f"no such interface: {name}")
    if not root.live:
        return bool(is_up(root, name))   # a recorded tree has no events to wait for
    deadline = time.monotonic() + timeout
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        sock.bind((0, RTMGRP_LINK))
        while True:
            up = is_up(root, name)
            if up is None or up:
                return bool(up)     # up, or gone (unplugged, renamed) while waiting
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([sock], [], [], left)
            if ready:
                try:
                    sock.recv(65536)    # any link event: look at the flags again
                except OSError as e:
                    if e.errno != errno.ENOBUFS:    # events were dropped: looking again covers it
                        raise
