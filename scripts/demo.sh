#!/usr/bin/env bash
# The demo, in one command on a fresh Debian 12 machine (as root):
#
#   scripts/demo.sh [--profile throughput|latency|forwarding] [--seconds N]
#                   [--measure-runs N] [--measure-seconds S]
#
# 1. scripts/deps.sh         Debian packages and the Python venv
# 2. scripts/build-qemu.sh   QEMU with the emulated Intel 82599 (-device ixgbe)
# 3. scripts/build-rootfs.sh the Debian systemd guest image
# 4. scripts/demo.py         boot the guest (4 vCPUs, -device ixgbe, its wire a
#    tap in a private network namespace = the host-side traffic peer), install
#    nettune, show its plan, record the readings, apply, record again, verify,
#    iperf3 both ways with per-queue counters, revert, then `nettune measure`
#    before apply / after apply / after revert (verdicts, counters, PNG plots
#    in $BUILD_DIR/demo/measure/), and print a report.
# Each build step is cached: a second run only boots the VM.
#
# Exit status: 0 when every step passed, 1 when one failed (the report says
# which), 2 on bad arguments. Report: $BUILD_DIR/demo/report.txt; logs under
# $BUILD_DIR/demo/logs/.
#
# Environment: BUILD_DIR, GUEST_ACCEL (tcg|kvm|auto), GUEST_TIMEOUT_SCALE,
# NETTUNE_SRC; and those of the build scripts (see README.md).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Check the arguments before building anything (scripts/demo.py checks again).
usage_error() {
    printf '[demo] ERROR: %s\n' "$*" >&2
    printf 'usage: scripts/demo.sh [--profile throughput|latency|forwarding] [--seconds N] [--measure-runs N] [--measure-seconds S]\n' >&2
    exit 2
}
args=("$@")
while (($#)); do
    case "$1" in
        -h | --help)
            sed -n '2,23p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        --profile)
            [[ $# -ge 2 ]] || usage_error "--profile needs a value"
            case "$2" in throughput | latency | forwarding) ;; *) usage_error "unknown profile '$2'" ;; esac
            shift 2
            ;;
        --seconds)
            [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 && "$2" -le 600 ]] ||
                usage_error "--seconds needs a number of seconds from 1 to 600"
            shift 2
            ;;
        --measure-runs)
            [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -le 20 ]] ||
                usage_error "--measure-runs needs a number from 0 to 20"
            shift 2
            ;;
        --measure-seconds)
            [[ $# -ge 2 && "$2" =~ ^[0-9]+$ && "$2" -ge 1 && "$2" -le 60 ]] ||
                usage_error "--measure-seconds needs a number of seconds from 1 to 60"
            shift 2
            ;;
        *) usage_error "unknown argument '$1'" ;;
    esac
done
set -- "${args[@]}"
[[ $EUID -eq 0 ]] || die "the demo needs root (packages, debootstrap, network namespace and tap); run it as root"

T0=$(now_s)
step() {
    local name=$1 t
    shift
    log "== $name"
    t=$(now_s)
    "$@" || die "$name failed (see above)"
    log "$name: $(fmt_duration $(($(now_s) - t)))"
}
step "dependencies (scripts/deps.sh)" bash "$REPO_ROOT/scripts/deps.sh"
step "QEMU (scripts/build-qemu.sh)" bash "$REPO_ROOT/scripts/build-qemu.sh"
step "guest image (scripts/build-rootfs.sh)" bash "$REPO_ROOT/scripts/build-rootfs.sh" bookworm
[[ -x "$VENV_PYTHON" ]] || die "$VENV_PYTHON missing after scripts/deps.sh"

log "== boot, tune, traffic, revert (scripts/demo.py)"
export DEMO_BUILD_SECONDS=$(($(now_s) - T0))
rc=0
"${PROJECT_PYTHON[@]}" "$REPO_ROOT/scripts/demo.py" "$@" || rc=$?
log "total $(fmt_duration $(($(now_s) - T0))) (build steps ${DEMO_BUILD_SECONDS}s); report: ${BUILD_DIR}/demo/report.txt"
exit "$rc"
