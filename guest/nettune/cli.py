"""Command line: nettune discover | plan | apply | verify | revert | wait-up | measure."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable, Dict, List, Optional, TextIO

from . import __version__
from .apply import apply
from .discover import Facts, default_interfaces, discover, format_facts, list_interfaces
from .errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, NettuneError, UsageError
from .ethtool import RealEthtool, RecordedEthtool, dump_json
from .host import Host
from .linkwait import wait_up
from .measure import Env, Options, Tools, measure, parse_phases, serve
from .plan import Plan, format_plan, make_plan, select_interfaces, sysctl_names
from .profiles import CATEGORIES, IRQBALANCE_POLICIES, PROFILES, Config, load_config
from .revert import revert
from .services import RealServices, RecordedServices
from .state import StateStore
from .sysfs import Root
from .verify import verify

DEFAULT_CONFIG = "/etc/nettune.conf"


class NothingToDo(Exception):
    pass
TREE_ETHTOOL = "/ethtool.json"
TREE_SERVICES = "/services.json"


def _globals(p: argparse.ArgumentParser, suppress: bool) -> None:
    d = argparse.SUPPRESS if suppress else None
    p.add_argument("--root", metavar="DIR", default=d,
                   help="work on a copy of /sys and /proc under DIR (ethtool and service actions are "
                        "recorded in DIR/ethtool.json and DIR/services.json, not run)")
    p.add_argument("--config", metavar="FILE", default=d,
                   help=f"profile and overrides, INI or JSON (default {DEFAULT_CONFIG} when it exists)")
    p.add_argument("--state", metavar="FILE", default=d,
                   help="state file (default /var/lib/nettune/state.json under the root)")


def _plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-p", "--profile", choices=sorted(PROFILES), help="tuning profile (default throughput)")
    p.add_argument("-i", "--interface", action="append", metavar="IF",
                   help="interface to tune (repeat or comma-separate; default: every NIC with a device)")
    p.add_argument("--cpus", metavar="LIST", help="CPUs the queues may use, e.g. 2-7 (default: the NIC's "
                                                  "NUMA node without housekeeping and isolated CPUs)")
    p.add_argument("--housekeeping", metavar="LIST", help="CPUs kept free of queue IRQs, or 'none' "
                                                          "(default: CPU 0 when there are more than 2)")
    p.add_argument("--irqbalance", choices=IRQBALANCE_POLICIES, help="stop it, ban the tuned IRQs, or ignore it")
    p.add_argument("--channels", metavar="N|auto|keep", help="queue count (default auto: one per usable CPU)")
    p.add_argument("--skip", action="append", metavar="CATEGORY",
                   help=f"leave a category alone: {', '.join(CATEGORIES)}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nettune", description="Plan, apply, verify and revert multiqueue NIC tuning.",
        epilog="Exit status: 0 ok, 1 drift found or change failed (rolled back), 2 bad input, "
               "3 missing privilege.")
    parser.add_argument("--version", action="version", version=f"nettune {__version__}")
    _globals(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    p = sub.add_parser("discover", help="show interfaces, queues, IRQs, CPUs, NUMA, irqbalance, CPU flags")
    _globals(p, True)
    p.add_argument("-i", "--interface", action="append", metavar="IF", help="only these interfaces")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("plan", help="print what apply would set, and why")
    _globals(p, True)
    _plan_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable, stable output")
    p = sub.add_parser("apply", help="carry the plan out, recording previous values")
    _globals(p, True)
    _plan_options(p)
    p.add_argument("-n", "--dry-run", action="store_true", help="print the changes, make none")
    p.add_argument("--missing-ok", action="store_true",
                   help="skip configured interfaces that do not exist (yet): for the boot and hot-plug units")
    p = sub.add_parser("verify", help="compare the live system with the plan; exit 1 on drift")
    _globals(p, True)
    _plan_options(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("revert", help="restore the recorded previous values")
    _globals(p, True)
    p.add_argument("-n", "--dry-run", action="store_true", help="print what would be restored")
    p = sub.add_parser("wait-up", help="wait until an interface is set up (its queue IRQs then exist); "
                                       "exit 1 on timeout")
    _globals(p, True)
    p.add_argument("interface", metavar="IF")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="default 60")
    p = sub.add_parser("measure", help="measure fixed workloads against a peer before apply, after apply and "
                                       "after revert; write report.json, report.md and PNG plots",
                       description="Run bulk TCP (one way, the other, both; iperf3 -P 4), 64 B TCP "
                                   "request/response (sockperf ping-pong: p50, p99) and 64 B UDP (iperf3) "
                                   "against a peer running `nettune measure --serve`, N runs each, with "
                                   "the system's counters around every run, and give a verdict per "
                                   "workload. The tuning state ends as it began, also when a run fails.")
    _globals(p, True)
    _plan_options(p)
    p.add_argument("--serve", action="store_true",
                   help="be the peer: run the iperf3 and sockperf servers until interrupted")
    p.add_argument("--peer", metavar="ADDR", help="the peer's address (it runs `nettune measure --serve`)")
    p.add_argument("--phases", default="before,after,reverted", metavar="LIST",
                   help="before,after,reverted (default: measure, apply, measure, revert, measure) or now "
                        "(measure the current state only)")
    p.add_argument("--runs", type=int, default=3, metavar="N", help="runs of each workload per phase (default 3)")
    p.add_argument("--seconds", type=int, default=10, metavar="S", help="length of each run (default 10)")
    p.add_argument("--out", metavar="DIR", help="where report.json, report.md, the plots and raw/ go")
    return parser


def _split(values: Optional[List[str]]) -> List[str]:
    out: List[str] = []
    for v in values or []:
        out += [w for w in v.replace(",", " ").split() if w]
    return out


def make_config(args: argparse.Namespace, root: Root) -> Config:
    path = getattr(args, "config", None)
    if path:
        cfg = load_config(path)
    elif os.path.isfile(root.host_path(DEFAULT_CONFIG)):
        cfg = load_config(root.host_path(DEFAULT_CONFIG))
    else:
        cfg = Config()
    if getattr(args, "profile", None):
        cfg.profile = args.profile
    ifs = _split(getattr(args, "interface", None))
    if ifs:
        cfg.interfaces = ifs
    for name in ("cpus", "housekeeping", "irqbalance"):
        val = getattr(args, name, None)
        if val:
            setattr(cfg, name, val)
    channels = getattr(args, "channels", None)
    if channels:
        if channels not in ("auto", "keep") and not (channels.isdigit() and int(channels) > 0):
            raise UsageError(f"--channels must be a positive number, auto or keep, not {channels!r}")
        cfg.channels = channels
    skip = _split(getattr(args, "skip", None))
    bad = [s for s in skip if s not in CATEGORIES]
    if bad:
        raise UsageError(f"--skip: unknown category {', '.join(bad)} (choose from {', '.join(CATEGORIES)})")
    cfg.skip = sorted(set(cfg.skip) | set(skip))
    return cfg


def build_host(root_dir: Optional[str]) -> Host:
    if root_dir is None:
        root = Root("/")
        return Host(root=root, ethtool=RealEthtool(), services=RealServices(root))
    if not os.path.isdir(root_dir):
        raise UsageError(f"--root {root_dir}: no such directory")
    root = Root(root_dir)
    if not root.isdir("/sys/class/net"):
        raise UsageError(f"--root {root_dir}: no sys/class/net in it (make a tree with nettune.record)")
    eth_path = root.host_path(TREE_ETHTOOL)
    eth = RecordedEthtool(eth_path) if os.path.exists(eth_path) else None
    return Host(root=root, ethtool=eth, services=RecordedServices(root.host_path(TREE_SERVICES)))


def _discover_fn(host: Host, cfg: Config, missing_ok: bool = False, out: Optional[TextIO] = None) -> Callable[[], Facts]:
    def run() -> Facts:
        ifs = cfg.interfaces if cfg.interfaces else default_interfaces(host.root)
        known = list_interfaces(host.root)
        unknown = [i for i in ifs if i not in known]
        if unknown and missing_ok and cfg.interfaces:
            if out is not None:
                out.write(f"note: configured interface {', '.join(unknown)} not present; skipped\n")
            ifs = [i for i in ifs if i in known]
            cfg.interfaces = ifs
            if not ifs:
                raise NothingToDo("none of the configured interfaces is present")
            unknown = []
        if unknown:
            raise UsageError(f"unknown interface {', '.join(unknown)} (this machine has: "
                             f"{', '.join(known) or 'none'})")
        return discover(host.root, host.ethtool, host.services, interfaces=ifs,
                        sysctls=sysctl_names(cfg, ifs))
    return run


def run(argv: Optional[List[str]] = None, out: TextIO = sys.stdout) -> int:
    args = build_parser().parse_args(argv)
    host = build_host(getattr(args, "root", None))
    store = StateStore(host.root, getattr(args, "state", None))
    cmd = args.command
    if cmd == "revert":
        return revert(host, store, out, dry_run=args.dry_run)
    if cmd == "wait-up":
        return _wait_up(host, args, out)
    if cmd == "measure":
        return _measure(host, store, args, out)
    cfg = make_config(args, host.root)
    discover_fn = _discover_fn(host, cfg, getattr(args, "missing_ok", False), out)
    if cmd == "discover":
        facts = discover_fn()
        out.write(dump_json(facts.to_json()) if args.json else format_facts(facts, cfg.interfaces))
        return EXIT_OK
    if cmd == "apply":
        try:
            return apply(host, cfg, store, discover_fn, out, dry_run=args.dry_run)
        except NothingToDo as e:
            out.write(f"nothing to do: {e}\n")
            return EXIT_OK
    facts = discover_fn()
    select_interfaces(facts, cfg)
    plan = make_plan(facts, cfg)
    if cmd == "plan":
        out.write(dump_json(plan.to_json()) if args.json else format_plan(plan))
        return EXIT_OK
    if cmd == "verify":
        return _verify(host, store, plan, args.json, out)
    raise UsageError(f"unknown command {cmd}")


def _route_iface(tools: Tools, peer: str) -> str:
    rc, text, _ = tools.run(["ip", "-o", "route", "get", peer], 10.0)
    words = text.split() if rc == 0 else []
    return words[words.index("dev") + 1] if "dev" in words[:-1] else ""


def _measure(host: Host, store: StateStore, args: argparse.Namespace, out: TextIO) -> int:
    tools = Tools.real()
    if args.serve:
        return serve(tools, out)
    if not args.peer or not args.out:
        raise UsageError("measure needs --peer ADDR and --out DIR (or --serve on the peer)")
    cfg = make_config(args, host.root)
    discover_fn = _discover_fn(host, cfg, False, out)

    def irq_names(iface: str) -> Dict[int, str]:
        facts = discover(host.root, None, None, interfaces=[iface])
        itf = facts.interfaces.get(iface)
        if itf is None:
            raise UsageError(f"unknown interface {iface} (this machine has: "
                             f"{', '.join(sorted(facts.interfaces)) or 'none'})")
        return {**{q.irq: q.name for q in itf.queue_irqs}, **{o.irq: o.name for o in itf.other_irqs}}

    env = Env(root=host.root, tools=tools,
              apply=lambda o: apply(host, cfg, store, discover_fn, o),
              revert=lambda o: revert(host, store, o),
              recorded_changes=lambda: len((store.load() or {}).get("changes", [])),
              irq_names=irq_names,
              default_iface=lambda peer: _route_iface(tools, peer))
    ifs = _split(args.interface)
    opts = Options(peer=args.peer, out_dir=args.out, iface=ifs[0] if ifs else None,
                   phases=parse_phases(args.phases), runs=args.runs, seconds=args.seconds)
    if opts.iface is not None:
        irq_names(opts.iface)      # an unknown interface is bad input: refuse before anything runs
    measure(opts, env, out)
    return EXIT_OK


def _wait_up(host: Host, args: argparse.Namespace, out: TextIO) -> int:
    if wait_up(host.root, args.interface, args.timeout):
        out.write(f"{args.interface} is up\n")
        return EXIT_OK
    out.write(f"{args.interface} is not up after {args.timeout:g} s\n")
    return EXIT_FAILED


def _verify(host: Host, store: StateStore, plan: Plan, as_json: bool, out: TextIO) -> int:
    state = store.load()
    unsupported = list((state or {}).get("unsupported", []))
    drift, checked = verify(host, plan, unsupported)
    if as_json:
        out.write(dump_json({"ok": not drift, "checked": checked, "drift": drift, "profile": plan.profile,
                             "unsupported": unsupported}))
        return EXIT_FAILED if drift else EXIT_OK
    for d in drift:
        who = f"{d['iface']} " if d["iface"] else ""
        out.write(f"DRIFT {who}{d['label']}: want {d['want']}, have {d['have']}   ({d['target']})\n")
        if d.get("cause"):
            out.write(f"      by {d['cause']}\n")
    if drift:
        out.write(f"verify: {len(drift)} of {checked} settings differ from the plan "
                  f"(profile {plan.profile})\n")
    else:
        out.write(f"verify: all {checked} settings as planned (profile {plan.profile})"
                  + (f"; {len(unsupported)} the driver refused not checked" if unsupported else "") + "\n")
    return EXIT_FAILED if drift else EXIT_OK


def main(argv: Optional[List[str]] = None) -> int:
    try:
        return run(argv)
    except NettuneError as e:
        sys.stdout.flush()
        sys.stderr.write(f"nettune: error: {e}\n")
        return e.exit_code
    except OSError as e:
        sys.stdout.flush()
        where = f" ({e.filename})" if e.filename else ""
        sys.stderr.write(f"nettune: error: {e.strerror or e}{where}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stderr.write("nettune: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_FAILED


__all__ = ["main", "run", "EXIT_USAGE"]
