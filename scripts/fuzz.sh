#!/usr/bin/env bash
# Fuzz the ixgbe model with QEMU's generic-fuzz targets (libFuzzer, ASan +
# UBSan); see docs/fuzzing.md. --config picks the target and its inputs:
#   ixgbe (default)  generic-fuzz-ixgbe: the backplane part
#   ixgbe-sfp        generic-fuzz-ixgbe-sfp: the SFP+ part with an SR optic,
#                    so also the I2C bus and the module's EEPROM
#   ixgbe-sriov      generic-fuzz-ixgbe-sriov: the PF behind a PCIe root
#                    port with 4 VFs enabled (VF BARs, mailbox, pools)
#   ixgbe-defer      generic-fuzz-ixgbe-defer: the same with 2 VFs and
#                    x-defer-coalesced=on (held register writes)
# Below, CONFIG stands for that name.
#
# The fuzzing build is made by scripts/build-qemu.sh in $BUILD_DIR/qemu-fuzz
# from the same patched source tree as $BUILD_DIR/qemu-build: clang,
# --enable-fuzzing, --enable-asan, --enable-ubsan, and only the devices its
# users start (scripts/qemu-devices/x86_64-sanitizer.mak: q35, the PCIe
# root port, ixgbe, igb). Besides qemu-fuzz-x86_64
# it holds an ASan + UBSan qemu-system-x86_64 and the ixgbe qtests, which
# 'scripts/run-qtest.sh --sanitizer' runs.
#
# What runs, in this order (the build unless --no-build; the rest as asked):
#   --replay       every input of tests/fuzz/CONFIG/corpus and
#                  tests/fuzz/CONFIG/crashers once; fails on any sanitizer
#                  report, crash or timeout
#   --seconds N    fuzz for N seconds, starting from the corpus in the
#                  repository and the seeds of tests/fuzz/ixgbe/make-seeds.py
#                  (which also writes a dictionary of register offsets);
#                  new inputs go to the work corpus
#                  $BUILD_DIR/fuzz/CONFIG/corpus, crashes and timeouts to
#                  $BUILD_DIR/fuzz/CONFIG/artifacts. Fails when one is found.
#                  With --replay and without --save (the short form the
#                  tests run), fuzzing starts from the seeds and an empty
#                  corpus of its own: libFuzzer runs every starting input
#                  before it mutates, and counts that time against N, so
#                  starting from the corpus just replayed (and from a work
#                  corpus that grows with every run) would repeat the
#                  replay and leave no time to fuzz.
#   --coverage     replay the corpus with libFuzzer's -print_coverage=1 and
#                  print the edges covered in hw/net/ixgbe*.c
# With none of them, fuzzes for 120 seconds.
#
# Options:
#   --config NAME  ixgbe, ixgbe-sfp, ixgbe-sriov or ixgbe-defer (above)
#   --jobs N       fuzzing processes (default 1; N > 1 uses libFuzzer's
#                  -jobs=N -workers=N, each process with its own QEMU)
#   --keep-going   after a crash or timeout, start the fuzzer again for the
#                  time left (for long campaigns)
#   --save         after fuzzing (or alone), merge the work corpus into the
#                  repository's corpus (libFuzzer -merge=1: the smallest set
#                  of inputs with the same coverage) and copy new crashes and
#                  timeouts to tests/fuzz/CONFIG/crashers
#   --trace FILE   write the qtest trace that FILE (a crasher) replays, and
#                  a C reproducer made from it (QEMU's scripts/oss-fuzz/
#                  output_reproducer.py), to $BUILD_DIR/fuzz/CONFIG/reproducers
#   --build-only   only build
#   --no-build     use the fuzzing build as it is (e.g. for a campaign while
#                  the device sources are being edited)
#   --stamp FILE   on success, write the summary line to FILE (meson)
#
# Environment: BUILD_DIR, NINJA_JOBS (see scripts/build-qemu.sh);
# FUZZ_TIMEOUT (seconds one input may take; default 30), FUZZ_MAX_LEN
# (longest input; default 4096), FUZZ_ARGS (more libFuzzer flags).
set -euo pipefail
# The body is one block, read whole before it runs: editing this file while
# a campaign runs does not disturb it.
{
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FUZZER="$SANITIZER_BUILD_DIR/qemu-fuzz-x86_64"

config=ixgbe seconds="" jobs=1 replay=0 coverage=0 save=0 keep_going=0 build_only=0 no_build=0
trace_file="" stamp=""
while (($#)); do
    case "$1" in
    --config | --seconds | --jobs | --trace | --stamp)
        (($# >= 2)) || die "$1 needs a value"
        case "$1" in
        --config) config=$2 ;;
        --seconds) seconds=$2 ;;
        --jobs) jobs=$2 ;;
        --trace) trace_file=$2 ;;
        --stamp) stamp=$2 ;;
        esac
        shift 2
        continue
        ;;
    --replay) replay=1 ;;
    --coverage) coverage=1 ;;
    --save) save=1 ;;
    --keep-going) keep_going=1 ;;
    --build-only) build_only=1 ;;
    --no-build) no_build=1 ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument: $1 (see scripts/fuzz.sh --help)" ;;
    esac
    shift
done
# VFs the target enables (its seeds use them)
case "$config" in
ixgbe | ixgbe-sfp) num_vfs=0 ;;
ixgbe-sriov) num_vfs=4 ;;
ixgbe-defer) num_vfs=2 ;;
*) die "--config must be ixgbe, ixgbe-sfp, ixgbe-sriov or ixgbe-defer, got '$config'" ;;
esac
TARGET=generic-fuzz-$config
REPO_CORPUS="$REPO_ROOT/tests/fuzz/$config/corpus"
REPO_CRASHERS="$REPO_ROOT/tests/fuzz/$config/crashers"
WORK="$BUILD_DIR/fuzz/$config"
[[ -z "$seconds" || "$seconds" =~ ^[0-9]+$ ]] || die "--seconds needs a number"
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "--jobs needs a positive number"
if [[ -z "$seconds" ]] && ((!replay && !coverage && !build_only && !save)) && [[ -z "$trace_file" ]]; then
    seconds=120
fi

t0=$(now_s)

# ------------------------------------------------------------- build ---
# The fuzzing build: the default build's options plus these.
need_cmd clang clang++ llvm-symbolizer
args=(--build-name qemu-fuzz
    --configure-arg --cc=clang --configure-arg --cxx=clang++
    --configure-arg --enable-fuzzing --configure-arg --enable-asan --configure-arg --enable-ubsan
    --configure-arg --without-default-devices --configure-arg --with-devices-x86_64=ixgbe-sanitizer
    --target qemu-fuzz-x86_64)
if ((no_build)); then
    wait_for_qemu_build qemu-fuzz
    [[ -x "$FUZZER" ]] || die "$FUZZER is missing (run scripts/fuzz.sh --build-only)"
    summary_parts=("build reused")
else
    build_summary="$(bash "$REPO_ROOT/scripts/build-qemu.sh" "${args[@]}")" ||
        die "the fuzzing build failed (see above)"
    log "$build_summary"
    [[ -x "$FUZZER" ]] || die "$FUZZER was not built"
    summary_parts=("build ok")
fi
finish() {
    local line="fuzz ($TARGET):" p sep=""
    for p in "${summary_parts[@]}"; do
        line+="$sep $p"
        sep=";"
    done
    line+=", in $(fmt_duration $(($(now_s) - t0)))"
    [[ -n "$stamp" ]] && printf '%s\n' "$line" >"$stamp"
    printf '%s\n' "$line"
}
if ((build_only)); then
    finish
    exit 0
fi

# -------------------------------------------------------- run setup ---
# Any sanitizer report ends the process with an error; libFuzzer saves the
# input. Leak checking is off (-detect_leaks=0 below too): QEMU keeps global
# allocations for its lifetime, which LeakSanitizer would report.
sanitizer_env ""
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-30}"
FUZZ_MAX_LEN="${FUZZ_MAX_LEN:-4096}"
mkdir -p "$WORK/corpus" "$WORK/artifacts" "$WORK/logs" "$REPO_CORPUS" "$REPO_CRASHERS"
# Seeds: driver-like sequences (rings, DMA patterns, MSI-X, I/O BAR; with
# VFs, the mailbox, pools and VF queues too); a dictionary of the register
# offsets.
rm -rf "$WORK/seeds"
seed_args=("$WORK/seeds" --dict "$WORK/ixgbe.dict" "$REPO_ROOT/hw/net/ixgbe_regs.h")
if ((num_vfs)); then
    seed_args+=(--vfs "$num_vfs")
fi
"$VENV_PYTHON" "$REPO_ROOT/tests/fuzz/ixgbe/make-seeds.py" "${seed_args[@]}" >/dev/null ||
    die "tests/fuzz/ixgbe/make-seeds.py failed"
# shellcheck disable=SC2206  # word splitting intended
extra_flags=(${FUZZ_ARGS:-})
common_flags=(-timeout="$FUZZ_TIMEOUT" -max_len="$FUZZ_MAX_LEN" -rss_limit_mb=4096
    -detect_leaks=0 -print_final_stats=1 "${extra_flags[@]}")

# Sanitizer or libFuzzer reports in a log.
REPORT_RE='ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer|libFuzzer)|runtime error:|SUMMARY: (Address|Undefined|Leak)|==[0-9]+== ERROR'

list_inputs() { # regular files of the given directories, sorted
    local d
    for d in "$@"; do
        [[ -d "$d" ]] && find "$d" -maxdepth 1 -type f ! -name 'README*' ! -name '.*' -print
    done | sort
}

# ------------------------------------------------------------ replay ---
if ((replay)); then
    mapfile -t corpus_files < <(list_inputs "$REPO_CORPUS")
    mapfile -t crasher_files < <(list_inputs "$REPO_CRASHERS")
    log "replaying ${#corpus_files[@]} corpus input(s) and ${#crasher_files[@]} crasher(s)"
    rlog="$WORK/logs/replay.log"
    : >"$rlog"
    rc=0
    if ((${#corpus_files[@]})); then
        nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" -runs=0 \
            "$REPO_CORPUS" >>"$rlog" 2>&1 || rc=$?
    fi
    # Crashers one at a time: each must run clean on its own.
    bad_crashers=()
    for f in "${crasher_files[@]}"; do
        r=0
        nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" "$f" >>"$rlog" 2>&1 || r=$?
        ((r == 0)) || bad_crashers+=("${f#"$REPO_ROOT"/}")
    done
    if ((rc != 0 || ${#bad_crashers[@]})) || grep -qE "$REPORT_RE" "$rlog"; then
        grep -nE -A40 "$REPORT_RE" "$rlog" | head -n 200 >&2 || tail -n 60 "$rlog" >&2
        ((${#bad_crashers[@]})) && warn "crashers that still fail: ${bad_crashers[*]}"
        die "replay failed (corpus exit $rc); full log: $rlog"
    fi
    execs="$(sed -nE 's/.*stat::number_of_executed_units: *([0-9]+).*/\1/p' "$rlog" | head -n1)"
    summary_parts+=("replay ok: ${#corpus_files[@]} corpus input(s) (${execs:-0} executed), ${#crasher_files[@]} crasher(s)")
    log "replay: clean"
fi

# Merge the work corpus (and the seeds) into the repository's corpus:
# libFuzzer -merge=1 keeps the smallest set of inputs that reaches the same
# edges (-use_counters=0: hit counts do not count, which keeps the corpus
# a few times smaller); inputs are cut to FUZZ_MERGE_MAX_LEN bytes (default
# 2048).
save_corpus() {
    local merged
    merged="$(mktemp -d "$WORK/merge.XXXXXX")"
    log "merging the work corpus into tests/fuzz/$config/corpus (-merge=1)"
    if nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" -merge=1 \
        -max_len="${FUZZ_MERGE_MAX_LEN:-2048}" -use_counters=0 \
        "$merged" "$REPO_CORPUS" "$WORK/corpus" "$WORK/seeds" >"$WORK/logs/merge.log" 2>&1; then
        find "$REPO_CORPUS" -maxdepth 1 -type f -delete
        cp -- "$merged"/* "$REPO_CORPUS/" 2>/dev/null || true
        log "tests/fuzz/$config/corpus: $(list_inputs "$REPO_CORPUS" | wc -l) input(s), $(cat "$REPO_CORPUS"/* | wc -c) bytes"
    else
        warn "merge failed (see $WORK/logs/merge.log); the repository corpus is unchanged"
    fi
    rm -rf "$merged"
}

# -------------------------------------------------------------- fuzz ---
# One libFuzzer process per job, in-process mode (QEMU starts once per
# process). With --keep-going a process that stops on a crash or timeout is
# started again for the time left.
fuzz_once() { # SECONDS LOG
    local flags=("${common_flags[@]}" -max_total_time="$1" -artifact_prefix="$WORK/artifacts/"
        -dict="$WORK/ixgbe.dict")
    if ((jobs > 1)); then
        # -jobs writes fuzz-N.log files into the current directory.
        local jobdir rc=0
        jobdir="$(mktemp -d "$WORK/logs/jobs.XXXXXX")"
        (cd "$jobdir" && nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${flags[@]}" \
            -jobs="$jobs" -workers="$jobs" "${start_dirs[@]}") >"$2" 2>&1 || rc=$?
        cat "$jobdir"/fuzz-*.log >>"$2" 2>/dev/null || true
        rm -rf "$jobdir"
        return "$rc"
    else
        nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${flags[@]}" "${start_dirs[@]}" >"$2" 2>&1
    fi
}

# Where fuzzing starts; the first directory takes the new inputs.
start_dirs=("$WORK/corpus" "$REPO_CORPUS" "$WORK/seeds")
if ((replay && !save)); then
    rm -rf "$WORK/short-corpus"
    mkdir -p "$WORK/short-corpus"
    start_dirs=("$WORK/short-corpus" "$WORK/seeds")
fi
if [[ -n "$seconds" ]]; then
    flog="$WORK/logs/fuzz-$(date -u +%Y%m%dT%H%M%SZ).log"
    mapfile -t before < <(list_inputs "$WORK/artifacts")
    log "fuzzing $TARGET for ${seconds}s with $jobs job(s); log: $flog"
    t_fuzz=$(now_s) rc=0 runs=0 execs=0 sigbus=0
    : >"$flog"
    while :; do
        left=$((seconds - ($(now_s) - t_fuzz)))
        ((left > 0)) || break
        runs=$((runs + 1))
        r=0
        fuzz_once "$left" "$flog.part" || r=$?
        cat "$flog.part" >>"$flog"
        n="$(grep -oE '^#[0-9]+' "$flog.part" | tail -n1 | tr -d '#')"
        execs=$((execs + ${n:-0}))
        # Killed by SIGBUS with no report and no input saved (QEMU's own
        # SIGBUS handler re-raises it past libFuzzer's): twice in all the
        # runs so far, with nothing to replay and the device mapping no
        # file. Once is recorded and fuzzing goes on; twice fails.
        if ((r == 135 && sigbus == 0)) && ! grep -qE "$REPORT_RE" "$flog.part"; then
            sigbus=1
            warn "the fuzzer died of SIGBUS after ${n:-0} executions with no report and no input saved; starting again for the time left (a second time fails)"
            summary_parts+=("one SIGBUS death without a report, restarted")
            continue
        fi
        ((r == 0)) || rc=$r
        ((r != 0 && keep_going)) || break
        # A crash while loading the corpus would only repeat itself.
        grep -qE '^#[0-9]+[[:space:]]+INITED' "$flog.part" || break
        log "fuzzer exited $r after ${n:-0} executions; --keep-going: starting again"
    done
    rm -f "$flog.part"
    elapsed=$(($(now_s) - t_fuzz))
    speed=$((elapsed > 0 ? execs / elapsed : 0))
    mapfile -t after < <(list_inputs "$WORK/artifacts")
    new_artifacts=()
    # a set, not printf | grep -q (SIGPIPE under pipefail reads as no match)
    declare -A was_there=()
    for f in "${before[@]}"; do
        was_there[$f]=1
    done
    for f in "${after[@]}"; do
        # slow-unit-* files (inputs over 10 s) are information, not failures.
        [[ "$(basename "$f")" =~ ^(crash|timeout|oom|leak)- ]] || continue
        [[ -n "${was_there[$f]:-}" ]] && continue
        # On a busy machine an input can pass the timeout without hanging:
        # a timeout that runs through once more, given ten times as long,
        # was load, not a hang. It is kept aside, not reported.
        if [[ "$(basename "$f")" == timeout-* ]]; then
            t0=$(now_s)
            if "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" \
                -timeout=$((FUZZ_TIMEOUT * 10)) "$f" >"$WORK/logs/recheck.log" 2>&1; then
                mkdir -p "$WORK/slow"
                mv -- "$f" "$WORK/slow/"
                log "$(basename "$f") ran through in $(($(now_s) - t0))s on a second run: load, not a hang (kept in $WORK/slow)"
                continue
            fi
        fi
        new_artifacts+=("$f")
    done
    cov="$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$flog" | tail -n1)"
    n_work="$(list_inputs "${start_dirs[0]}" | wc -l)"
    log "fuzz: $execs executions in ${elapsed}s ($speed exec/s, $runs process(es)), ${cov:-no coverage line}, work corpus $n_work input(s), exit $rc"
    summary_parts+=("fuzzed ${elapsed}s: $execs execs at $speed/s, ${cov:-?}, ${#new_artifacts[@]} new artifact(s)")
    if ((save)); then
        for f in "${new_artifacts[@]}"; do
            cp -- "$f" "$REPO_CRASHERS/"
            log "saved crasher tests/fuzz/$config/crashers/$(basename "$f")"
        done
        save_corpus
    fi
    if ((${#new_artifacts[@]})) || { ((rc != 0)) && ((!keep_going)); }; then
        grep -nE -A40 "$REPORT_RE" "$flog" | head -n 200 >&2 || tail -n 60 "$flog" >&2
        for f in "${new_artifacts[@]}"; do
            warn "artifact: $f (replay: scripts/fuzz.sh --trace $f)"
        done
        die "fuzzing found a problem (exit $rc); full log: $flog"
    fi
fi

if ((save)) && [[ -z "$seconds" ]]; then
    save_corpus
    summary_parts+=("corpus merged: $(list_inputs "$REPO_CORPUS" | wc -l) input(s)")
fi

# ---------------------------------------------------------- coverage ---
if ((coverage)); then
    mapfile -t corpus_files < <(list_inputs "$REPO_CORPUS" "$WORK/corpus")
    clog="$WORK/logs/coverage.log"
    log "coverage of hw/net/ixgbe*.c over ${#corpus_files[@]} input(s) (repository and work corpus)"
    # The corpus directories as a whole (-runs=0 runs each input once).
    nice -n 10 "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" -runs=0 -print_coverage=1 \
        "$REPO_CORPUS" "$WORK/corpus" >"$clog" 2>&1 || die "coverage run failed; log: $clog"
    report="$(awk '
        /^(UN)?COVERED_FUNC: / {
            n = split($0, f, " ")
            loc = f[n]; sub(/:[0-9]+$/, "", loc)
            if (loc !~ /hw\/net\/ixgbe[^\/]*\.c$/) next
            sub(/.*\//, "", loc)
            split(f[5], e, "/")
            cov[loc] += e[1]; tot[loc] += e[2]
            fn[loc]++; if (e[1] > 0) fncov[loc]++
            next
        }
        END {
            for (k in tot) {
                printf "  %-22s edges %5d / %5d (%5.1f%%)  functions %4d / %4d\n", k, cov[k], tot[k], tot[k] ? 100 * cov[k] / tot[k] : 0, fncov[k], fn[k]
                C += cov[k]; T += tot[k]; FC += fncov[k]; F += fn[k]
            }
            if (T) printf "  %-22s edges %5d / %5d (%5.1f%%)  functions %4d / %4d\n", "total", C, T, 100 * C / T, FC, F
        }' "$clog" | sort)"
    [[ -n "$report" ]] || die "no coverage lines for hw/net/ixgbe*.c in $clog"
    printf 'edge coverage of hw/net/ixgbe*.c (libFuzzer -print_coverage):\n%s\n' "$report"
    total="$(grep -E '^ +total ' <<<"$report" | sed -E 's/ +functions.*//; s/^ +total +//')"
    summary_parts+=("coverage ${total}")
fi

# ------------------------------------------------------------- trace ---
if [[ -n "$trace_file" ]]; then
    [[ -f "$trace_file" ]] || die "no such file: $trace_file"
    out="$WORK/reproducers/$(basename "$trace_file")"
    mkdir -p "$(dirname "$out")"
    log "replaying $trace_file with QTEST_LOG=1"
    QTEST_LOG=1 FUZZ_SERIALIZE_QTEST=1 "$FUZZER" --fuzz-target="$TARGET" "${common_flags[@]}" \
        "$trace_file" >"$out.log" 2>&1 || true
    # QEMU's own scripts (scripts/oss-fuzz) turn the qtest log into a plain
    # trace for "-qtest stdio" and into a stand-alone C qtest.
    qargs="$(sed -nE 's/^Starting [^ ]+ with Arguments: //p' "$out.log" | head -n1 |
        sed -E 's/-machine accel=qtest, //; s/ -qtest \/dev\/null//; s/ +$//')"
    [[ -n "$qargs" ]] || die "no QEMU command line in $out.log"
    qargs="-accel qtest $qargs"
    grep -E '\[R \+[0-9.]+\]' "$out.log" >"$out.qtest-log" || true
    "$VENV_PYTHON" "$BUILD_DIR/qemu-src/scripts/oss-fuzz/reorder_fuzzer_qtest_trace.py" \
        "$out.qtest-log" >"$out.trace" || die "could not reorder the trace ($out.qtest-log)"
    QEMU_PATH="$SANITIZER_BUILD_DIR/qemu-system-x86_64" QEMU_ARGS="$qargs" \
        "$VENV_PYTHON" "$BUILD_DIR/qemu-src/scripts/oss-fuzz/output_reproducer.py" \
        -owner "The QEMU Project" -name test_ixgbe_fuzz "$out.trace" >"$out.c" ||
        warn "output_reproducer.py failed; the trace is $out.trace"
    log "replay the trace: $SANITIZER_BUILD_DIR/qemu-system-x86_64 $qargs -qtest stdio < $out.trace"
    log "trace: $out.trace ($(wc -l <"$out.trace") command(s)); C reproducer: $out.c; log: $out.log"
    grep -nE -A30 "$REPORT_RE" "$out.log" | head -n 80 >&2 || true
    summary_parts+=("trace written to $out.trace")
fi

finish
exit 0
}
