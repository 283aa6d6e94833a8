"""The developer's one-line change to ixgbe and its out-of-tree build, shared by
the dev-loop tests (tests/devloop) and the test_vm role's test
(the collection's tests/integration/pytest/test_ci_vm.py)."""
from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from ixgbe_testlib.host import REPO_ROOT as REPO
from ixgbe_testlib.host import build_dir

BUILD_DIR = build_dir()
OOT = REPO / "scripts" / "oot-module.sh"

PROBE_MESSAGE = "devloop: out-of-tree ixgbe probing"
_ANCHOR = "\terr = pci_enable_device_mem(pdev);\n"


def add_probe_message(main_c: Path) -> None:
    """Add a dev_info() line at the start of ixgbe_probe()'s body."""
    text = main_c.read_text()
    start = text.index("static int ixgbe_probe(struct pci_dev *pdev")
    at = text.index(_ANCHOR, start)
    line = '\tdev_info(&pdev->dev, "%s\\n");\n' % PROBE_MESSAGE
    main_c.write_text(text[:at] + line + text[at:])


def _oot(*args: str) -> str:
    proc = subprocess.run([str(OOT), "--kernel", "6.1", *args], capture_output=True, text=True,
                          timeout=1800, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise AssertionError("scripts/oot-module.sh %s failed:\n%s" % (" ".join(args), proc.stderr))
    return proc.stdout.strip().splitlines()[-1]


def patched_ixgbe() -> Path:
    """ixgbe.ko from Debian's linux-source of the 6.1 guest kernel's exact
    version, with a probe message added, built out of tree against that
    kernel's headers (scripts/oot-module.sh). Kept under $BUILD_DIR/devloop/
    keyed by the source, so only the first caller builds; a lock keeps two
    suites running side by side (devloop, the collection's test_ci_vm.py)
    from building into the same directory at once."""
    locks = BUILD_DIR / "devloop"
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / ".lock", "w", encoding="ascii") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _patched_ixgbe()


def _patched_ixgbe() -> Path:
    pristine = Path(_oot("--prepare-only"))
    release = pristine.parent.parent.name
    sources = sorted(pristine.glob("*.[ch]")) + [pristine / "Makefile"]
    digest = hashlib.sha256(PROBE_MESSAGE.encode())
    for f in sources:
        digest.update(f.name.encode() + f.read_bytes())
    work = BUILD_DIR / "devloop" / ("ixgbe-%s-%s" % (release, digest.hexdigest()[:12]))
    ko = work / "ixgbe.ko"
    if not ko.is_file():
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        for f in sources:
            shutil.copy2(f, work / f.name)
        add_probe_message(work / "ixgbe_main.c")
        built = Path(_oot("--src", str(work)))
        assert built == ko, built
    return ko
