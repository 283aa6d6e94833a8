"""Root-relative access to /sys, /proc and /etc.

Every path nettune handles is written as the system sees it ("/sys/class/net/eth0/mtu").
A `Root` maps such a path onto the live system (root "/") or onto a copy of the
tree under a directory (`--root DIR`). Symbolic links inside a copied tree are
resolved inside that tree, whether they are relative (as sysfs makes them) or
absolute, so a copy behaves like the real thing.
"""

from __future__ import annotations

import os
import posixpath
from typing import List, Optional

_MAX_LINKS = 40


class Root:
    def __init__(self, root: str = "/") -> None:
        self.root = os.path.abspath(root)
        self.live = self.root == "/"

    # --- path mapping -------------------------------------------------------
    def host_path(self, path: str) -> str:
        """Where a system path lives on this machine's file system (no link resolution)."""
        if not path.startswith("/"):
            raise ValueError(f"system path must be absolute: {path!r}")
        if self.live:
            return path
        return self.root + posixpath.normpath(path)

    def resolve(self, path: str) -> str:
        """The system path `path` names once every symbolic link in it is followed."""
        if self.live:
            return os.path.realpath(path)
        return self._resolve(path, 0)

    def _resolve(self, path: str, hops: int) -> str:
        if hops > _MAX_LINKS:
            raise OSError(f"too many levels of symbolic links: {path}")
        parts = [p for p in path.split("/") if p not in ("", ".")]
        cur = "/"
        for i, part in enumerate(parts):
            if part == "..":
                cur = posixpath.dirname(cur) or "/"
                continue
            cand = posixpath.join(cur, part)
            host = self.root + cand
            if os.path.islink(host):
                target = os.readlink(host)
                base = target if target.startswith("/") else posixpath.join(cur, target)
                rest = "/".join(parts[i + 1:])
                return self._resolve(base + ("/" + rest if rest else ""), hops + 1)
            cur = cand
        return cur

    def real(self, path: str) -> str:
        """Host path of `path` after link resolution."""
        return self.host_path(self.resolve(path))

    # --- queries ------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return os.path.exists(self.real(path))

    def isdir(self, path: str) -> bool:
        return os.path.isdir(self.real(path))

    def islink(self, path: str) -> bool:
        parent = self.resolve(posixpath.dirname(path) or "/")
        return os.path.islink(self.host_path(posixpath.join(parent, posixpath.basename(path))))

    def listdir(self, path: str) -> List[str]:
        try:
            return sorted(os.listdir(self.real(path)))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read(self, path: str) -> str:
        """The file's whole content, as the kernel gives it (usually with a final newline)."""
        with open(self.real(path), "r", encoding="utf-8", errors="replace") as f:
            return f.read()

    def read_value(self, path: str) -> Optional[str]:
        """The stripped content, or None when the file is missing or unreadable."""
        try:
            return self.read(path).strip()
        except OSError:
            return None

    def can_write(self, path: str) -> bool:
        return os.access(self.real(path), os.W_OK)

    # --- changes ------------------------------------------------------------
    def write(self, path: str, data: str) -> None:
        """Write `data` to an existing file in one write(2), as sysfs needs.

        Never creates files: a missing attribute is an error, as it is in sysfs.
        """
        host = self.real(path)
        if os.path.isdir(host):
            raise IsADirectoryError(21, "Is a directory", path)
        fd = os.open(host, os.O_WRONLY | os.O_TRUNC)
        try:
            raw = data.encode("utf-8")
            written = os.write(fd, raw)
            if written != len(raw):
                raise OSError(f"short write to {path}: {written} of {len(raw)} bytes")
        finally:
            os.close(fd)
