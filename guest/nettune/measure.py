"""`nettune measure`: a fixed set of workloads against a peer, N runs each, before `apply`,
after `apply` and after `revert` (or once, `--phases now`), with the system's counters
around every run, and a verdict per metric against a documented noise band.

Workloads (peer side: `nettune measure --serve`, iperf3 on TCP 5201 and 5202, sockperf on TCP 11111):

  tcp_tx     iperf3 -P 4            bulk TCP, this machine sends        Gbit/s received
  tcp_rx     iperf3 -P 4 -R         bulk TCP, the peer sends            Gbit/s received
  tcp_bidir  iperf3 -P 4 --bidir    bulk TCP both ways at once          Gbit/s received, both ways
  tcp_rr     sockperf ping-pong     64 B request/response over TCP      round trip p50 and p99, us
  udp_64     iperf3 -u -l 64 -b 0   64 B UDP datagrams, unlimited rate  kpps the peer received

Verdict (per metric, each phase against `before`): the change is the relative difference of
the medians; the noise band is the larger of MIN_BAND and the relative spread
(max - min) / median of either phase. |change| <= band: "no change within noise"; else
"better" or "worse" by the metric's direction.

The peer's iperf3 ports. An iperf3 server (3.12, and still upstream) closes its listening
socket at the end of every test, the failed ones included, and opens a new one; a client
that connected in between sits in the closed socket's queue and is reset ("unable to
receive control message: Connection reset by peer"). So measure never connects to an iperf3
port except to run a workload (reachability is checked on sockperf's port, whose server
takes a connection that sends nothing as a client that left), and consecutive iperf3 runs
alternate between two servers: the one a run used has the whole next run to listen again.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, TextIO, Tuple

from . import counters
from .errors import NettuneError, UsageError

IPERF3_PORTS = (5201, 5202)
SOCKPERF_PORT = 11111
STREAMS = 4
MIN_BAND = 0.05
PHASES_FULL = ("before", "after", "reverted")
PHASES_NOW = ("now",)
CONNECT_TIMEOUT = 5.0
SETTLE_TIMEOUT = 120.0     # apply/revert may re-create the queues: the link goes down and up
REPORT_VERSION = 1


class MeasureError(NettuneError):
    """A measurement could not be made; the tuning state is as it was before the command."""


class RunFailed(Exception):
    """One tool run gave no usable result."""


# --- workloads ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Metric:
    key: str
    title: str
    unit: str
    higher_is_better: bool


def _iperf3_json(stdout: str) -> Dict[str, Any]:
    try:
        data = json.loads(stdout)
    except ValueError:
        raise RunFailed("iperf3 printed no JSON result" + (f": {stdout.strip()[:200]}" if stdout.strip() else ""))
    if not isinstance(data, dict):
        raise RunFailed("iperf3 printed no JSON result")
    if data.get("error"):     # iperf3 3.12 exits 0 with -J even when it failed
        raise RunFailed(f"iperf3: {data['error']}")
    end = data.get("end")
    if not isinstance(end, dict) or "sum_received" not in end:
        raise RunFailed("iperf3 JSON has no end.sum_received")
    return end


def parse_iperf3_tcp(stdout: str) -> Dict[str, float]:
    """Gbit/s the receiving side counted; with --bidir both directions added."""
    end = _iperf3_json(stdout)
    bps = float(end["sum_received"]["bits_per_second"])
    if "sum_received_bidir_reverse" in end:
        bps += float(end["sum_received_bidir_reverse"]["bits_per_second"])
    return {"gbps": bps / 1e9}


def parse_iperf3_udp(stdout: str) -> Dict[str, float]:
    """Thousands of datagrams per second the peer received (sent minus lost), and the loss."""
    end = _iperf3_json(stdout)
    r = end["sum_received"]
    got = int(r["packets"]) - int(r["lost_packets"])
    secs = float(r["seconds"])
    if secs <= 0:
        raise RunFailed("iperf3 UDP result covers no time")
    return {"kpps": got / secs / 1e3, "loss_pct": float(r.get("lost_percent", 0.0))}


def parse_sockperf(stdout: str) -> Dict[str, float]:
    """p50 and p99 round trip (--full-rtt) in microseconds from sockperf ping-pong."""
    pct: Dict[str, float] = {}
    for line in stdout.splitlines():
        if "ERROR" in line:
            raise RunFailed(line.replace("sockperf: ", "sockperf: ", 1).strip())
        if "---> percentile" in line:
            name, _, value = line.split("---> percentile", 1)[1].partition("=")
            pct[name.strip()] = float(value)
    if "50.000" not in pct or "99.000" not in pct:
        raise RunFailed("sockperf printed no percentiles" + (f": {stdout.strip()[-200:]}" if stdout.strip() else ""))
    return {"p50_us": pct["50.000"], "p99_us": pct["99.000"]}


@dataclass(frozen=True)
class Workload:
    name: str
    title: str
    tool: str
    metrics: Tuple[Metric, ...]
    parse: Callable[[str], Dict[str, float]]
    raw_ext: str

    def argv(self, peer: str, seconds: int, port: int = IPERF3_PORTS[0]) -> List[str]:
        """The command line; `port` is the iperf3 server's (sockperf has one port)."""
        t = str(seconds)
        ip3 = ["iperf3", "-c", peer, "-p", str(port), "-t", t, "-J", "--connect-timeout", "5000"]
        if self.name == "tcp_tx":
            return ip3 + ["-P", str(STREAMS)]
        if self.name == "tcp_rx":
            return ip3 + ["-P", str(STREAMS), "-R"]
        if self.name == "tcp_bidir":
            return ip3 + ["-P", str(STREAMS), "--bidir"]
        if self.name == "udp_64":
            return ip3 + ["-u", "-l", "64", "-b", "0"]
        return ["sockperf", "ping-pong", "--tcp", "-i", peer, "-p", str(SOCKPERF_PORT), "-m", "64", "-t", t,
                "--full-rtt"]


WORKLOADS: Tuple[Workload, ...] = (
    Workload("tcp_tx", "bulk TCP, this machine sends", "iperf3",
             (Metric("gbps", "throughput", "Gbit/s", True),), parse_iperf3_tcp, "json"),
    Workload("tcp_rx", "bulk TCP, the peer sends", "iperf3",
             (Metric("gbps", "throughput", "Gbit/s", True),), parse_iperf3_tcp, "json"),
    Workload("tcp_bidir", "bulk TCP both ways", "iperf3",
             (Metric("gbps", "throughput (both ways)", "Gbit/s", True),), parse_iperf3_tcp, "json"),
    Workload("tcp_rr", "64 B request/response over TCP", "sockperf",
             (Metric("p50_us", "round trip p50", "us", False), Metric("p99_us", "round trip p99", "us", False)),
             parse_sockperf, "txt"),
    Workload("udp_64", "64 B UDP datagrams", "iperf3",
             (Metric("kpps", "packet rate received", "kpps", True),), parse_iperf3_udp, "json"),
)
TOOLS = ("iperf3", "sockperf")


# --- statistics and verdict -----------------------------------------------------------------
def summarize(values: Sequence[float]) -> Dict[str, Any]:
    med = float(statistics.median(values))
    lo, hi = float(min(values)), float(max(values))
    return {"runs": [float(v) for v in values], "median": med, "min": lo, "max": hi,
            "spread": (hi - lo) / abs(med) if med else 0.0}


def verdict(base: Dict[str, Any], new: Dict[str, Any], higher_is_better: bool,
            min_band: float = MIN_BAND) -> Dict[str, Any]:
    """`new` against `base` (two summaries): the change, the noise band, the verdict."""
    band = max(min_band, base["spread"], new["spread"])
    if base["median"]:
        change = (new["median"] - base["median"]) / abs(base["median"])
    else:
        change = 0.0 if not new["median"] else (1.0 if new["median"] > 0 else -1.0)
    if abs(change) <= band:
        word = "no change within noise"
    elif (change > 0) == higher_is_better:
        word = "better"
    else:
        word = "worse"
    return {"change": change, "band": band, "verdict": word}


# --- the environment measure runs in ---------------------------------------------------------
Completed = Tuple[int, str, str]


@dataclass
class Tools:
    """How measure runs programs and reaches the peer (tests give recorded ones)."""

    run: Callable[[List[str], float], Completed]
    which: Callable[[str], Optional[str]]
    connect: Callable[[str, int, float], None]

    @staticmethod
    def real() -> "Tools":
        return Tools(_run, shutil.which, _connect)


def _run(argv: List[str], timeout: float) -> Completed:
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                           timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return 124, "", f"{argv[0]} did not finish within {timeout:g} s"
    except OSError as e:
        return 127, "", f"{argv[0]}: {e.strerror or e}"
    return p.returncode, p.stdout, p.stderr


def _connect(host: str, port: int, timeout: float) -> None:
    with socket.create_connection((host, port), timeout=timeout):
        pass


@dataclass
class Env:
    """What the command needs from the rest of nettune."""

    root: Any                                   # sysfs.Root: where /proc is read
    tools: Tools
    apply: Callable[[TextIO], int]              # nettune apply (rolls itself back on failure)
    revert: Callable[[TextIO], int]             # nettune revert
    recorded_changes: Callable[[], int]         # changes in the state file now
    irq_names: Callable[[str], Dict[int, str]]  # the interface's IRQs: number -> name
    default_iface: Callable[[str], str]         # the interface that reaches the peer


@dataclass
class Options:
    peer: str
    out_dir: str
    iface: Optional[str] = None
    phases: Tuple[str, ...] = PHASES_FULL
    runs: int = 3
    seconds: int = 10


def parse_phases(text: str) -> Tuple[str, ...]:
    words = tuple(w for w in text.replace(" ", "").split(",") if w)
    if words in (PHASES_FULL, PHASES_NOW):
        return words
    raise UsageError(f"--phases must be {','.join(PHASES_FULL)} or now, not {text!r}")


# --- one phase -------------------------------------------------------------------------------
@dataclass
class Phase:
    name: str
    values: Dict[str, List[float]] = field(default_factory=dict)    # "workload.metric" -> per run
    runs: List[Dict[str, Any]] = field(default_factory=list)
    totals: Dict[str, Any] = field(default_factory=dict)             # counters summed over runs
    irq_names: Dict[int, str] = field(default_factory=dict)
    seconds: float = 0.0


def _ethtool_stats(tools: Tools) -> Callable[[str], Optional[str]]:
    def read(iface: str) -> Optional[str]:
        if tools.which("ethtool") is None:
            return None
        rc, out, _ = tools.run(["ethtool", "-S", iface], 30.0)
        return out if rc == 0 else None
    return read


class IperfPorts:
    """The iperf3 port of each run in turn: consecutive iperf3 runs never use the same server."""

    def __init__(self) -> None:
        self.runs = 0

    def next(self) -> int:
        port = IPERF3_PORTS[self.runs % len(IPERF3_PORTS)]
        self.runs += 1
        return port


def run_phase(name: str, opts: Options, env: Env, iface: str, out: TextIO,
              ports: Optional[IperfPorts] = None) -> Phase:
    ph = Phase(name, irq_names=env.irq_names(iface))
    ports = ports or IperfPorts()
    raw_dir = os.path.join(opts.out_dir, "raw")
    stats = _ethtool_stats(env.tools)
    t0 = time.monotonic()
    for i in range(1, opts.runs + 1):
        for w in WORKLOADS:
            argv = w.argv(opts.peer, opts.seconds, ports.next() if w.tool == "iperf3" else 0)
            before = counters.snapshot(env.root, iface, ph.irq_names, stats)
            rc, stdout, stderr = env.tools.run(argv, opts.seconds + 60.0)
            after = counters.snapshot(env.root, iface, ph.irq_names, stats)
            raw = f"{name}-{w.name}-{i}.{w.raw_ext}"
            with open(os.path.join(raw_dir, raw), "w", encoding="utf-8") as f:
                f.write(stdout if stdout or not stderr else stderr)
            try:
                values = w.parse(stdout)
            except RunFailed as e:
                why = str(e) if rc == 0 else f"{e} (exit {rc}{': ' + stderr.strip()[:200] if stderr.strip() else ''})"
                raise RunFailed(f"{name} run {i}/{opts.runs} of {w.name} ({' '.join(argv)}) failed: {why}")
            if rc != 0:
                raise RunFailed(f"{name} run {i}/{opts.runs} of {w.name} ({' '.join(argv)}) exited {rc}: "
                                f"{stderr.strip()[:200]}")
            d = counters.delta(before, after)
            counters.add(ph.totals, d)
            ph.runs.append({"phase": name, "workload": w.name, "run": i, "argv": argv, "raw": f"raw/{raw}",
                            "values": values, "counters": d})
            for m in w.metrics:
                ph.values.setdefault(f"{w.name}.{m.key}", []).append(values[m.key])
            shown = ", ".join(f"{m.key} {values[m.key]:.4g}" for m in w.metrics)
            out.write(f"  {name} {i}/{opts.runs} {w.name}: {shown}\n")
    ph.seconds = time.monotonic() - t0
    return ph


# --- the command -----------------------------------------------------------------------------
def preflight(opts: Options, env: Env) -> str:
    """Check the request before anything runs or changes; return the interface measured."""
    if opts.runs < 1 or opts.seconds < 1:
        raise UsageError("--runs and --seconds must be at least 1")
    missing = [t for t in TOOLS if env.tools.which(t) is None]
    if missing:
        raise UsageError(f"{', '.join(missing)} not found: install the Debian package(s) {', '.join(missing)} "
                         "(the workloads need them here and on the peer)")
    if "after" in opts.phases and env.recorded_changes():
        raise UsageError("nettune has changes applied already, so a 'before' phase would not be untuned: "
                         "run `nettune revert` first, or measure the current state with --phases now")
    # sockperf's port only: a connection to an iperf3 server is a test to it (module doc)
    try:
        env.tools.connect(opts.peer, SOCKPERF_PORT, CONNECT_TIMEOUT)
    except OSError as e:
        raise MeasureError(f"peer {opts.peer} unreachable on TCP {SOCKPERF_PORT} (sockperf): "
                           f"{getattr(e, 'strerror', None) or e}; is `nettune measure --serve` running there?")
    iface = opts.iface or env.default_iface(opts.peer)
    if not iface:
        raise UsageError(f"cannot tell which interface reaches {opts.peer}: name it with -i")
    return iface


def wait_reachable(peer: str, env: Env, when: str) -> None:
    """Wait until the peer's servers answer again (a channel or ring change takes the link
    down and up)."""
    timeout = SETTLE_TIMEOUT
    deadline = time.monotonic() + timeout
    while True:
        try:
            env.tools.connect(peer, SOCKPERF_PORT, CONNECT_TIMEOUT)
            return
        except OSError as e:
            if time.monotonic() >= deadline:
                raise MeasureError(f"peer {peer} not reachable {when} within {timeout:g} s: "
                                   f"{getattr(e, 'strerror', None) or e}") from None
            time.sleep(1.0)


def measure(opts: Options, env: Env, out: TextIO) -> Dict[str, Any]:
    """Run every phase and write the report; the tuning state ends as it began."""
    iface = preflight(opts, env)
    os.makedirs(os.path.join(opts.out_dir, "raw"), exist_ok=True)
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    phases: List[Phase] = []
    out.write(f"measure: {iface} -> {opts.peer}, phases {','.join(opts.phases)}, {opts.runs} run(s) of "
              f"{opts.seconds} s per workload\n")
    applied = False
    ports = IperfPorts()
    try:
        for name in opts.phases:
            if name == "after":
                out.write("measure: nettune apply\n")
                _logged(env.apply, opts.out_dir, "apply.log", out, "apply")
                applied = True
                wait_reachable(opts.peer, env, "after apply")
            elif name == "reverted":
                out.write("measure: nettune revert\n")
                applied = False
                _logged(env.revert, opts.out_dir, "revert.log", out, "revert")
                wait_reachable(opts.peer, env, "after revert")
            phases.append(run_phase(name, opts, env, iface, out, ports))
    except BaseException as e:
        if applied:
            out.write("measure: the 'after' phase failed; reverting what it applied\n")
            try:
                _logged(env.revert, opts.out_dir, "revert.log", out, "revert")
                undone = "the tuning applied for it was reverted"
            except (NettuneError, OSError) as e2:
                undone = f"reverting the tuning applied for it ALSO FAILED: {e2}"
            if isinstance(e, (RunFailed, NettuneError, OSError)):
                raise MeasureError(f"{e}; {undone}") from None
            raise
        if isinstance(e, RunFailed):
            raise MeasureError(f"{e}; the tuning state is as it was before the command") from None
        raise
    report = build_report(opts, iface, started, phases)
    from .measure_report import write_report
    write_report(report, opts.out_dir)
    out.write(f"measure: wrote {os.path.join(opts.out_dir, 'report.json')}, report.md and "
              f"{len(report['plots'])} plot(s)\n")
    for row in report["metrics"]:
        v = row.get("verdicts", {}).get("after")
        if v:
            out.write(f"  {row['workload']} {row['metric']}: {v['verdict']} ({v['change']:+.1%}, "
                      f"noise band {v['band']:.1%})\n")
    return report


def _logged(fn: Callable[[TextIO], int], out_dir: str, name: str, out: TextIO, what: str) -> None:
    import io
    buf = io.StringIO()
    try:
        rc = fn(buf)
    finally:
        with open(os.path.join(out_dir, name), "a", encoding="utf-8") as f:
            f.write(buf.getvalue())
        out.write("".join(f"  | {line}\n" for line in buf.getvalue().splitlines()[-3:]))
    if rc != 0:
        raise MeasureError(f"nettune {what} exited {rc} (see {name})")


def build_report(opts: Options, iface: str, started: str, phases: List[Phase]) -> Dict[str, Any]:
    rows: List[Dict[str, Any]] = []
    by_name = {p.name: p for p in phases}
    for w in WORKLOADS:
        for m in w.metrics:
            key = f"{w.name}.{m.key}"
            row: Dict[str, Any] = {"workload": w.name, "title": w.title, "tool": w.tool, "metric": m.key,
                                   "metric_title": m.title, "unit": m.unit, "higher_is_better": m.higher_is_better,
                                   "phases": {p.name: summarize(p.values[key]) for p in phases}}
            if "before" in by_name:
                row["verdicts"] = {p.name: verdict(row["phases"]["before"], row["phases"][p.name],
                                                   m.higher_is_better) for p in phases if p.name != "before"}
            rows.append(row)
    uname = os.uname()
    return {
        "version": REPORT_VERSION,
        "command": "nettune measure",
        "started": started,
        "host": uname.nodename, "kernel": uname.release, "cpus": os.cpu_count(),
        "peer": opts.peer, "interface": iface, "phases": [p.name for p in phases],
        "runs": opts.runs, "seconds": opts.seconds,
        "noise": {"min_band": MIN_BAND,
                  "rule": "change = (median - median before) / median before; band = max(min_band, "
                          "(max - min) / median of either phase); |change| <= band: no change within noise"},
        "workloads": [{"name": w.name, "title": w.title, "tool": w.tool, "argv": w.argv(opts.peer, opts.seconds)}
                      for w in WORKLOADS],
        "iperf3_ports": list(IPERF3_PORTS),
        "metrics": rows,
        "counters": {p.name: {"seconds": round(p.seconds, 3), "totals": p.totals,
                              "irqs": {str(k): v for k, v in sorted(p.irq_names.items())}} for p in phases},
        "runs_detail": [r for p in phases for r in p.runs],
        "plots": [],
    }


# --- the peer side ---------------------------------------------------------------------------
def serve(tools: Tools, out: TextIO, ready: Optional[Callable[[], None]] = None) -> int:
    """Run iperf3 and sockperf servers until SIGINT/SIGTERM (or one of them dies)."""
    missing = [t for t in TOOLS if tools.which(t) is None]
    if missing:
        raise UsageError(f"{', '.join(missing)} not found: install the Debian package(s) {', '.join(missing)}")
    argvs = [["iperf3", "-s", "-p", str(port)] for port in IPERF3_PORTS]
    argvs.append(["sockperf", "server", "--tcp", "-p", str(SOCKPERF_PORT)])
    procs: List["subprocess.Popen[bytes]"] = []
    logs = [tempfile.TemporaryFile() for _ in argvs]   # not pipes: nobody reads them while serving
    stop = {"sig": 0}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["sig"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for argv, log in zip(argvs, logs):
            procs.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log))
        time.sleep(0.5)
        out.write(f"serving: iperf3 on TCP {' and '.join(map(str, IPERF3_PORTS))}, sockperf on TCP {SOCKPERF_PORT} "
                  f"(stop with Ctrl-C or SIGTERM)\n")
        out.flush()
        if ready is not None:
            ready()
        while not stop["sig"]:
            dead = [(a, p, log) for a, p, log in zip(argvs, procs, logs) if p.poll() is not None]
            if dead:
                argv, p, log = dead[0]
                log.seek(0)
                err = log.read().decode(errors="replace").strip()
                raise MeasureError(f"{' '.join(argv)} exited {p.returncode}: {err[-300:] or 'no message'}")
            time.sleep(0.2)
        out.write("serve: stopped\n")
        return 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
        for s, h in old.items():
            signal.signal(s, h)
        sys.stdout.flush()
