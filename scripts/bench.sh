#!/usr/bin/env bash
# Benchmark the emulated Intel 82599 (-device ixgbe) against QEMU's own igb,
# e1000e and virtio-net-pci: one guest per model, same QEMU build, same guest
# image, same vCPUs and memory, in one run. Prints one table per metric with
# the ratios ixgbe/<other> (and one of bulk TCP receive with every model
# against igb), and writes every raw sample as JSON.
#
#   scripts/bench.sh [--kernel 6.1|6.12] [--quick] [--reps N] [--seconds S]
#                    [--models ixgbe,igb,e1000e,virtio-net,ixgbe-lro] [--workloads LIST]
#                    [--trace-seconds S] [--out-dir DIR]
#   scripts/bench.sh --device-model [--quick] [OPTIONS]
#   scripts/bench.sh --dpdk [--quick] [OPTIONS]
#
# --device-model: instead, the guest-free benchmark of the device models
# (ixgbe, igb, e1000e, virtio-net-pci) driven through their rings over the
# qtest protocol (tests/bench/devbench.py; its options: scripts/bench.sh
# --device-model --help): host instructions, QEMU CPU time, register
# accesses and interrupts per packet; $BUILD_DIR/bench/device-model/devbench-<time>-<mode>
# .{json,txt,png}, copied to latest.*. Needs no guest image.
#   --device-model --memory [--quick]: host memory per device instead (N =
#   0, 1, 2, 4 NICs of one model per QEMU, several starts each; anonymous
#   RSS and the heap under massif; ixgbe, igb, e1000e, virtio-net-pci;
#   tests/bench/devmem.py, about 3 min, --quick about 15 s without massif):
#   devmem-<time>-<mode>.{json,txt}, copied to latest-memory.*.
#   --device-model --quick also runs --memory --quick after the rest.
#
# --dpdk: instead, DPDK testpmd io forwarding between two ports of one model
# wired back to back (-netdev dgram), ixgbe (net_ixgbe) against igb
# (net_e1000_igb; --models adds e1000e), on the Debian systemd guest of the
# e2e tests (scripts/build-rootfs.sh, built when missing): packets per second,
# QEMU CPU and register accesses per packet (tests/bench/dpdkbench.py; its
# options: scripts/bench.sh --dpdk --help; full form about 6 min, --quick
# about 4); $BUILD_DIR/bench/dpdk/dpdkbench-<time>-<mode>.{json,txt}, copied
# to latest.*.
#
#   --kernel K     guest kernel (default 6.1)
#   --quick        3 samples of 2 s per cell instead of 5 of 5 s
#   --reps N       samples per workload and model
#   --seconds S    length of each sample
#   --models LIST  subset of models to compare (ixgbe is always included):
#                  ixgbe, igb, e1000e, virtio-net (the default), and
#                  ixgbe-lro, ixgbe with `ethtool -K <port> lro on` on every
#                  port (RSC; the driver leaves LRO off at probe)
#   --workloads LIST
#                  subset of slirp-tcp-tx, slirp-tcp-rx, b2b-tcp, b2b-udp,
#                  vf-vf-tcp, vf-wire-tcp (default: all); the vf-* ones run
#                  on the models with SR-IOV VFs (ixgbe, igb), the others
#                  show "no VFs" there
#   --trace-seconds S
#                  length of one more b2b-tcp run per model with QEMU's MMIO
#                  trace on: register accesses per frame, and those that
#                  would exit under KVM (default 3, --quick 2; 0: none)
#   --out-dir DIR  results directory (default $BUILD_DIR/bench)
#
# Output: $BUILD_DIR/bench/nicbench-<time>-<kernel>-<mode>.{json,txt}, copied
# to latest.json / latest.txt; VM logs under $BUILD_DIR/bench/logs/<time>/.
# What is measured and how to read it: docs/benchmarks.md.
#
# Missing pieces are built first (scripts/deps.sh, scripts/build-qemu.sh,
# scripts/build-guest.sh <kernel>); existing ones are used as they are.
#
# Environment: BUILD_DIR (default <repo>/build); QEMU (another binary);
# GUEST_ACCEL (tcg, the default; kvm; auto), GUEST_TCG_THREAD and
# GUEST_TIMEOUT_SCALE, as for the guest tests (tests/guest/README.md).
#
# Exit status: 0 when every sample was measured, 1 when a model or a sample
# failed (the tables still show what was measured), 2 on bad usage or a
# missing prerequisite.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
    header_help
}

bad_usage() {
    printf '[%s] ERROR: %s (see %s --help)\n' "$LOG_NAME" "$*" "$0" >&2
    exit 2
}

# --device-model: the guest-free benchmark, with options of its own
for a in "$@"; do
    if [[ "$a" == --device-model ]]; then
        dm_args=()
        for b in "$@"; do
            [[ "$b" == --device-model ]] || dm_args+=("$b")
        done
        export PYTHONDONTWRITEBYTECODE=1
        if [[ ! -x "$VENV_PYTHON" ]] || ! command -v valgrind >/dev/null 2>&1 ||
            ! "$VENV_PYTHON" -c 'import matplotlib' >/dev/null 2>&1; then
            log "Python venv, matplotlib or valgrind missing: running scripts/deps.sh"
            "$REPO_ROOT/scripts/deps.sh" || die "scripts/deps.sh failed"
        fi
        memory=0 quick=0 out_dir=()
        for ((i = 0; i < ${#dm_args[@]}; i++)); do
            case "${dm_args[i]}" in
            --memory) memory=1 ;;
            --quick) quick=1 ;;
            --out-dir) out_dir=(--out-dir "${dm_args[i + 1]:-}") ;;
            --out-dir=*) out_dir=("${dm_args[i]}") ;;
            esac
        done
        for b in "${dm_args[@]}"; do
            if [[ "$b" == -h || "$b" == --help ]]; then
                if ((memory)); then
                    exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" --memory --help
                fi
                exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" --help
            fi
        done
        "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" --check-args "${dm_args[@]}" || exit 2
        if [[ -z "${QEMU:-}" && ! -x "$BUILD_DIR/qemu-build/qemu-system-x86_64" ]]; then
            log "no QEMU build yet: running scripts/build-qemu.sh"
            "$REPO_ROOT/scripts/build-qemu.sh" || die "scripts/build-qemu.sh failed"
        fi
        if ((quick && !memory)); then
            # the quick form of the memory figures (about 15 s) after the rest
            rc=0
            "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" "${dm_args[@]}" || rc=$?
            "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" --memory --quick "${out_dir[@]}" ||
                { r=$?; ((r > rc)) && rc=$r; }
            exit "$rc"
        fi
        exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/devbench.py" "${dm_args[@]}"
    fi
done

# --dpdk: testpmd forwarding on the systemd guest, with options of its own
for a in "$@"; do
    if [[ "$a" == --dpdk ]]; then
        dp_args=()
        for b in "$@"; do
            [[ "$b" == --dpdk ]] || dp_args+=("$b")
        done
        export PYTHONDONTWRITEBYTECODE=1
        if [[ ! -x "$VENV_PYTHON" ]]; then
            log "Python venv missing: running scripts/deps.sh"
            "$REPO_ROOT/scripts/deps.sh" || die "scripts/deps.sh failed"
        fi
        for b in "${dp_args[@]}"; do
            if [[ "$b" == -h || "$b" == --help ]]; then
                exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/dpdkbench.py" --help
            fi
        done
        "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/dpdkbench.py" --check-args "${dp_args[@]}" || exit 2
        if [[ -z "${QEMU:-}" && ! -x "$BUILD_DIR/qemu-build/qemu-system-x86_64" ]]; then
            log "no QEMU build yet: running scripts/build-qemu.sh"
            "$REPO_ROOT/scripts/build-qemu.sh" || die "scripts/build-qemu.sh failed"
        fi
        if [[ ! -f "$BUILD_DIR/rootfs/bookworm/disk.img" ]]; then
            log "no systemd guest image yet: running scripts/build-rootfs.sh bookworm"
            "$REPO_ROOT/scripts/build-rootfs.sh" bookworm || die "scripts/build-rootfs.sh failed"
        fi
        exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/dpdkbench.py" "${dp_args[@]}"
    fi
done

kernel=6.1
args=()
while (($#)); do
    case "$1" in
    --kernel | --reps | --seconds | --models | --workloads | --trace-seconds | --out-dir)
        (($# >= 2)) || bad_usage "$1 needs a value"
        if [[ "$1" == --kernel ]]; then kernel=$2; fi
        args+=("$1" "$2")
        shift 2
        ;;
    --kernel=* | --reps=* | --seconds=* | --models=* | --workloads=* | --trace-seconds=* | --out-dir=*)
        if [[ "$1" == --kernel=* ]]; then kernel=${1#*=}; fi
        args+=("$1")
        shift
        ;;
    --quick)
        args+=(--quick)
        shift
        ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        bad_usage "unknown argument '$1'"
        ;;
    esac
done
case "$kernel" in
6.1 | 6.12) ;;
*) bad_usage "--kernel must be 6.1 or 6.12, got '$kernel'" ;;
esac

if [[ ! -x "$VENV_PYTHON" ]] || ! command -v iperf3 >/dev/null 2>&1; then
    log "Python venv or host iperf3 missing: running scripts/deps.sh"
    "$REPO_ROOT/scripts/deps.sh" || die "scripts/deps.sh failed"
fi
export PYTHONDONTWRITEBYTECODE=1
# every argument checked before anything is built
"${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/nicbench.py" --check-args "${args[@]}" || exit 2

if [[ -z "${QEMU:-}" && ! -x "$BUILD_DIR/qemu-build/qemu-system-x86_64" ]]; then
    log "no QEMU build yet: running scripts/build-qemu.sh"
    "$REPO_ROOT/scripts/build-qemu.sh" || die "scripts/build-qemu.sh failed"
fi
if [[ ! -f "$BUILD_DIR/guest/$kernel/vmlinuz" || ! -f "$BUILD_DIR/guest/$kernel/initrd.img" ]]; then
    log "no guest image for kernel $kernel yet: running scripts/build-guest.sh $kernel"
    "$REPO_ROOT/scripts/build-guest.sh" "$kernel" || die "scripts/build-guest.sh $kernel failed"
fi

exec "${PROJECT_PYTHON[@]}" "$REPO_ROOT/tests/bench/nicbench.py" "${args[@]}"
