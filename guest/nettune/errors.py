"""Error types and the exit codes they map to."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILED = 1      # verify found drift, or apply/revert failed (and rolled back)
EXIT_USAGE = 2       # bad input: unknown interface, bad CPU list, bad config file
EXIT_PRIVILEGE = 3   # not allowed to change the system


class NettuneError(Exception):
    """Base class: a message meant for the operator, and an exit code."""

    exit_code = EXIT_FAILED


class UsageError(NettuneError):
    """The request itself is wrong; nothing was changed."""

    exit_code = EXIT_USAGE


class PrivilegeError(NettuneError):
    """The caller may not change what the plan touches; nothing was changed."""

    exit_code = EXIT_PRIVILEGE


class ApplyError(NettuneError):
    """A change failed; what had been changed was restored."""

    exit_code = EXIT_FAILED
