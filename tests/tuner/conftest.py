"""Shared fixtures for the nettune tests: tree copies, a tree hash, an in-process CLI."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
from dataclasses import dataclass
from typing import Callable, List

import pytest

from nettune import cli
from nettune.errors import NettuneError

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GUEST = os.path.join(REPO, "guest")  # nettune's package root (on sys.path by pytest.ini)
TREES = os.path.join(HERE, "trees")

# Fixture data, not tests: keep pytest out of the sysfs-like trees (their links form cycles).
collect_ignore = ["trees", "samples", "golden", "gen_trees.py", "record_guest.py"]

BUILT_TREES = ["ixgbe-4q", "virtio-4q", "igb-4q", "e1000e-1q", "i40e-8q", "mlx5-8q", "numa2-ixgbe"]


def tree_hash(path: str) -> str:
    """Hash of every file (content and mode) and link target under `path`,
    and of the directories that hold them. Empty directories do not count:
    git does not keep them, so a fresh clone lacks those of a tree."""
    entries: list[tuple[str, bytes]] = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        rel = os.path.relpath(dirpath, path)
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            full = os.path.join(dirpath, name)
            if os.path.islink(full):
                entries.append((f"{rel}/{name}", f"L -> {os.readlink(full)}\n".encode()))
            else:
                st = os.stat(full)
                with open(full, "rb") as f:
                    entries.append((f"{rel}/{name}", f"F {st.st_mode & 0o7777:o}\n".encode() + f.read()))
    dirs = {os.path.dirname(rel) for rel, _ in entries}
    for d in list(dirs):
        while d not in ("", "."):
            d = os.path.dirname(d)
            dirs.add(d)
    h = hashlib.sha256()
    for d in sorted(dirs):
        h.update(f"D {d}\n".encode())
    for rel, data in sorted(entries):
        h.update(f"E {rel}\n".encode())
        h.update(data)
    return h.hexdigest()


@dataclass
class Result:
    rc: int
    out: str
    err: str


def run_nettune(args: List[str]) -> Result:
    """Run the CLI in-process exactly as `main` does, capturing output and exit code."""
    out = io.StringIO()
    try:
        rc = cli.run(args, out=out)
        err = ""
    except NettuneError as e:
        rc, err = e.exit_code, str(e)
    except SystemExit as e:   # argparse errors
        rc, err = int(e.code or 0), "argparse"
    return Result(rc, out.getvalue(), err)


@pytest.fixture
def tree(tmp_path: "os.PathLike[str]") -> Callable[[str], str]:
    """Copy a fixture tree into a temporary directory and return its path."""
    def make(name: str) -> str:
        dst = os.path.join(str(tmp_path), name)
        shutil.copytree(os.path.join(TREES, name), dst, symlinks=True)
        return dst
    return make


@pytest.fixture
def nt() -> Callable[..., Result]:
    def call(*args: str) -> Result:
        return run_nettune(list(args))
    return call
