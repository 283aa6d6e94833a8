#!/usr/bin/env bash
# The project's Python: the venv's interpreter (scripts/deps.sh makes it) with
# the project's import roots on PYTHONPATH, as pytest has them from
# pytest.ini (tests/lib for ixgbe_testlib, guest for nettune,
# playbooks/collections for the collection), for the programs that import
# them:
#
#   scripts/python.sh tests/guest/boot_stress.py --kernel 6.1 -n 30 -j 2
#   scripts/python.sh tests/tuner/gen_trees.py
#   scripts/python.sh -c 'from ixgbe_testlib.host import qemu_binary; print(qemu_binary())'
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing: run scripts/deps.sh first"
exec "${PROJECT_PYTHON[@]}" "$@"
