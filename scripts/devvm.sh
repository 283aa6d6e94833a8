#!/usr/bin/env bash
# Boot the project's test guest with your own kernel or rebuilt driver module
# on the emulated Intel 82599 and run a command in it:
#
#   scripts/devvm.sh [options] -- COMMAND       (scripts/devvm.sh --help for all)
#   scripts/devvm.sh --module ixgbe.ko -- 'dmesg | grep ixgbe; ip -br addr'
#   scripts/devvm.sh --kernel-tree ~/linux --modules ~/linux-mods -- uname -r
#
# Needs the QEMU build and a guest image (scripts/build-qemu.sh,
# scripts/build-guest.sh 6.1); the work is done by scripts/devvm.py in the
# project's venv. Exit status: the command's; 124 timed out; 2 bad input;
# 3 the VM did not boot.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing: run scripts/deps.sh first"
exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/scripts/devvm.py" "$@"
