#!/usr/bin/env python3
"""Run a command and record the CPU time it and its descendants used.

    cputime.py --out DIR -- COMMAND [ARGS...]

scripts/test.sh runs every test through this (`meson test --wrapper`): the
test phase keeps the cores busy, so a suite's wall time depends on what
runs beside it, while its CPU time is what it costs the others. The command
runs with this process's stdio and environment; its exit status (or the
signal that ended it) is passed on. Afterwards DIR/<pid>.json holds
{"argv": COMMAND, "user": S, "system": S, "wall": S}: the CPU seconds of
every descendant that was waited for (getrusage(RUSAGE_CHILDREN)), which
covers the QEMUs and guests a test starts and reaps. A daemon that outlives
its parent and is reaped by init (a libvirtd the test does not wait for)
is not counted.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType


def parse(argv: list[str]) -> tuple[Path, list[str]]:
    if len(argv) < 4 or argv[0] != "--out" or argv[2] != "--":
        raise SystemExit("usage: cputime.py --out DIR -- COMMAND [ARGS...]")
    return Path(argv[1]), argv[3:]


def main(argv: list[str]) -> int:
    out, cmd = parse(argv)
    t0 = time.monotonic()
    child = subprocess.Popen(cmd)

    def forward(signum: int, _frame: FrameType | None) -> None:
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    rc = child.wait()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "argv": cmd,
        "user": round(usage.ru_utime, 2),
        "system": round(usage.ru_stime, 2),
        "wall": round(time.monotonic() - t0, 2),
    }
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{os.getpid()}.json").write_text(json.dumps(record) + "\n", encoding="utf-8")
    except OSError as e:
        print(f"cputime.py: cannot record the CPU time in {out}: {e}", file=sys.stderr)
    if rc < 0:
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
