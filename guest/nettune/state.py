"""The state file: the previous value of everything nettune changed.

Written atomically (temporary file, fsync, rename, fsync of the directory) before
each change, so an interruption at any point leaves a record of what to restore.

Layout (JSON):
  {"version": 1, "profile": "...", "created_dirs": ["/var/lib/nettune"],
   "changes": [{"id": "sysfs:/proc/irq/24/smp_affinity_list", "kind": "irq",
                "target": "...", "iface": "eth0", "label": "...",
                "previous": <raw value>, "applied": <raw value>}, ...]}
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import posixpath
import tempfile
from typing import Any, Dict, Iterator, List, Optional

from .ethtool import dump_json
from .errors import NettuneError
from .sysfs import Root

DEFAULT_STATE = "/var/lib/nettune/state.json"
LIVE_LOCK = "/run/nettune.lock"


class StateError(NettuneError):
    pass


class StateStore:
    def __init__(self, root: Root, path: Optional[str] = None) -> None:
        """`path` is a host path; without it the state lives at DEFAULT_STATE inside the root."""
        self.root = root
        self.path = path if path else root.host_path(DEFAULT_STATE)
        self.system_dir = posixpath.dirname(DEFAULT_STATE) if not path else None

    def load(self) -> Optional[Dict[str, Any]]:
        import json
        try:
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            raise StateError(f"state file {self.path} is unreadable: {e}") from None
        if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("changes"), list):
            raise StateError(f"state file {self.path} is not a nettune state (version 1)")
        return data

    def save(self, data: Dict[str, Any]) -> None:
        directory = os.path.dirname(self.path)
        created = self._makedirs(directory)
        if created:
            data.setdefault("created_dirs", [])
            data["created_dirs"] = sorted(set(data["created_dirs"]) | set(created))
        fd, tmp = tempfile.mkstemp(prefix=".state.", dir=directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(dump_json(data))
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    def _makedirs(self, directory: str) -> List[str]:
        """Create missing directories; return them (as host paths) for removal on revert."""
        missing: List[str] = []
        d = directory
        while not os.path.isdir(d):
            missing.append(d)
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
        for d in reversed(missing):
            os.mkdir(d, 0o755)
        return missing

    def remove(self, data: Optional[Dict[str, Any]]) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        for d in sorted((data or {}).get("created_dirs", []), key=len, reverse=True):
            with contextlib.suppress(OSError):
                os.rmdir(d)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One nettune at a time (boot unit and udev-triggered runs may overlap)."""
        if self.root.live and os.path.isdir(os.path.dirname(LIVE_LOCK)):
            fd = os.open(LIVE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
        elif self.root.live:
            fd = os.open("/", os.O_RDONLY)
        else:
            fd = os.open(self.root.root, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
