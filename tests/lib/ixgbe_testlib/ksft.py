"""Results of the kernel's selftests (tools/testing/selftests) from their
output: KTAP lines of the Python tests (`ok 1 ping.test_v4`, `not ok 2 ...`,
`# SKIP reason`, `# XFAIL reason`) and the `TEST: name [ OK ]` lines of the
shell tests' net/forwarding/lib.sh (scripts/netdev-selftests.sh)."""

from __future__ import annotations

import re
from dataclasses import dataclass

KTAP_RE = re.compile(r"^(not ok|ok) \d+ (\S+)(?:\s+#\s*(SKIP|XFAIL|TODO)\b\s*(.*))?\s*$")
# a KTAP comment that says why a case failed: the exception's last line or a check's message
DIAG_RE = re.compile(r"^#\s*(?:Exception\|\s*)?((?:[\w.]*?\w+(?:Error|Exception|Ex|Failure)\b|Check failed|Check\|).*)$")
FWD_RE = re.compile(r"^TEST: (.*?)\s+\[\s*(OK|FAIL|SKIP|XFAIL)\s*\]\s*$")


@dataclass
class Case:
    program: str  # "drivers/net:ping.py"
    name: str  # "ping.test_v4", or "" for the program as a whole
    result: str  # ok, fail, skip
    note: str = ""


def parse_output(program: str, text: str, rc: int, timed_out: bool) -> list[Case]:
    """The cases of one program's output; the program itself as one case
    when it printed none (or when it was killed)."""
    cases: list[Case] = []
    why = ""  # the last diagnostic line before a case's verdict
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = KTAP_RE.match(line)
        if m:
            verdict, name, directive, reason = m.groups()
            if directive == "SKIP":
                result = "skip"
            elif directive == "XFAIL":
                result = "skip"
                reason = f"xfail: {reason or ''}".strip()
            else:
                result = "ok" if verdict == "ok" else "fail"
                reason = why if result == "fail" else ""
            cases.append(Case(program, name, result, (reason or "").strip()[:200]))
            why = ""
            continue
        diag = DIAG_RE.match(line)
        if diag:
            why = diag.group(1).strip()
        m = FWD_RE.match(line)
        if m:
            name, verdict = m.groups()
            result = {"OK": "ok", "FAIL": "fail", "SKIP": "skip", "XFAIL": "skip"}[verdict]
            note = "xfail" if verdict == "XFAIL" else ""
            if name.startswith("SKIP: "):  # log_test_skip's line reads [ OK ]
                name, result, note = name.removeprefix("SKIP: "), "skip", ""
            cases.append(Case(program, name.strip(), result, note))
            continue
        if line.startswith("\t") and cases and cases[-1].result == "fail" and not cases[-1].note:
            cases[-1].note = line.strip()[:200]  # the forwarding library's reason, after [FAIL]
    if timed_out:
        cases.append(Case(program, "", "fail", "timed out (killed)"))
    elif not cases:
        last = [ln.strip(" #") for ln in text.splitlines() if ln.strip(" #")]
        note = last[-1][:160] if last else ""
        result = {0: "ok", 4: "skip"}.get(rc, "fail")
        cases.append(Case(program, "", result, f"exit {rc}: {note}" if result == "fail" else note))
    return cases


def not_ok(cases: list[Case], wanted: dict[str, tuple[str, ...]]) -> list[str]:
    """The wanted cases (program -> case names) that are not "ok" among
    `cases`, each as "program case: result" ("missing" when it did not run)."""
    got = {(c.program, c.name): c.result for c in cases}
    return [f"{p} {n}: {got.get((p, n), 'missing')}"
            for p, names in wanted.items() for n in names if got.get((p, n)) != "ok"]
