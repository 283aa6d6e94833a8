"""The harness's two kinds of failure."""

from __future__ import annotations


class HarnessError(Exception):
    """The harness cannot do what was asked (missing files, bad arguments)."""


class GuestError(Exception):
    """The guest or QEMU misbehaved: died, hung, or answered garbage."""
