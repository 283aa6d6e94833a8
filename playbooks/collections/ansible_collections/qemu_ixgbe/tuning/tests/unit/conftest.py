"""Unit tests of the collection's pure Python: importable as ansible_collections.qemu_ixgbe.tuning.

Puts the directory holding ansible_collections/ on sys.path, wherever the
collection is (in the project's repository or installed from its tarball).
"""
from __future__ import annotations

import sys
from pathlib import Path

# <dir>/ansible_collections/qemu_ixgbe/tuning/tests/unit/conftest.py -> <dir>
COLLECTIONS = Path(__file__).resolve().parents[5]

if str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))
