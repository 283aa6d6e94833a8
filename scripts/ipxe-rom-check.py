"""scripts/build-ipxe.sh --check: are the boot ROMs just built the committed ones?

usage: ipxe-rom-check.py COMMITTED_DIR BUILT_DIR MANIFEST_NAME
Exit status 0 when every committed file is byte for byte the built one, 1 if not.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ixgbe_testlib.optionrom import compare_builds


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    committed, built, manifest = Path(argv[0]), Path(argv[1]), argv[2]
    same, report = compare_builds(committed, built, manifest)
    for line in report:
        print(f"build-ipxe --check: {line}")
    verdict = "MATCH: the build is the committed bytes" if same else "MISMATCH: the build differs from the committed files"
    print(f"build-ipxe --check: {verdict} ({committed})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
