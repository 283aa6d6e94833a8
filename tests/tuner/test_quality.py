"""The guest code stays standard-library only, Python 3.9 compatible and fully typed;
the entry script maps errors to exit codes."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from typing import List

import pytest

from conftest import GUEST, HERE, TREES

PACKAGE = os.path.join(GUEST, "nettune")
SOURCES = sorted(os.path.join(PACKAGE, f) for f in os.listdir(PACKAGE) if f.endswith(".py"))


def imports(path: str) -> List[str]:
    tree = ast.parse(open(path).read(), path)
    names: List[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", SOURCES, ids=os.path.basename)
def test_guest_code_is_stdlib_only_and_39_compatible(path: str) -> None:
    ast.parse(open(path).read(), path, feature_version=(3, 9))
    foreign = [n for n in imports(path) if n not in sys.stdlib_module_names and n != "__future__"]
    assert foreign == [], f"{path} imports non-stdlib modules {foreign}"
    assert "from __future__ import annotations" in open(path).read() or os.path.basename(path) == "__init__.py"


def test_mypy_strict() -> None:
    pytest.importorskip("mypy", reason="mypy comes from scripts/deps/pip-tuner.txt")
    env = dict(os.environ, MYPYPATH=os.pathsep.join([GUEST, HERE]))
    for args in (["--strict", PACKAGE],
                 ["--strict", "--explicit-package-bases"] + sorted(
                     os.path.join(HERE, f) for f in os.listdir(HERE)
                     if f.endswith(".py") and f != "record_guest.py")):   # that one drives ixgbe_testlib.vm
        proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", os.devnull] + args,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env)
        assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("args,rc,text", [
    (["apply", "-i", "eth9"], 2, "nettune: error: unknown interface eth9"),
    (["plan", "--cpus", "0-99"], 2, "nettune: error: CPU list '0-99' names CPU 4-99"),
    (["verify"], 1, "DRIFT eth0 IRQ 24 eth0-TxRx-0: want 1, have 0-3"),
    (["plan", "--bogus"], 2, "unrecognized arguments"),
    (["plan"], 0, "eth0 (ixgbe, NUMA node unknown): 3 queue(s) on CPUs 1-3"),
])
def test_entry_script_exit_codes(args: List[str], rc: int, text: str) -> None:
    proc = subprocess.run([sys.executable, os.path.join(GUEST, "bin", "nettune"), "--root",
                           os.path.join(TREES, "ixgbe-4q")] + args,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    assert proc.returncode == rc
    assert text in proc.stdout + proc.stderr
