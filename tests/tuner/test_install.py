"""guest/install.sh, the systemd units and the udev rule."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

import pytest

from conftest import GUEST, TREES

INSTALL = os.path.join(GUEST, "install.sh")


def run(argv: List[str], env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                          timeout=120, env=env, cwd=cwd)


@pytest.fixture
def staged(tmp_path: "os.PathLike[str]") -> str:
    dest = os.path.join(str(tmp_path), "dest")
    r = run(["bash", INSTALL, "--destdir", dest, "--profile", "forwarding"])
    assert r.returncode == 0, r.stderr
    return dest


def test_install_layout(staged: str) -> None:
    for rel in ("usr/local/sbin/nettune", "usr/local/lib/nettune/nettune/cli.py",
                "usr/local/lib/nettune/nettune/record.py", "etc/systemd/system/nettune.service",
                "etc/systemd/system/nettune-reapply@.service", "etc/udev/rules.d/90-nettune.rules",
                "etc/nettune.conf"):
        assert os.path.isfile(os.path.join(staged, rel)), rel
    assert os.access(os.path.join(staged, "usr/local/sbin/nettune"), os.X_OK)
    conf = open(os.path.join(staged, "etc/nettune.conf")).read()
    assert re.search(r"^profile = forwarding$", conf, re.M)
    wrapper = open(os.path.join(staged, "usr/local/sbin/nettune")).read()
    assert 'sys.path.insert(0, "/usr/local/lib/nettune")' in wrapper


def test_installed_package_runs_and_plans_like_the_source(staged: str) -> None:
    tree = os.path.join(TREES, "numa2-ixgbe")
    env = dict(os.environ, PYTHONPATH=os.path.join(staged, "usr/local/lib/nettune"))
    installed = run([sys.executable, "-m", "nettune", "--root", tree, "plan", "--json"], env=env,
                    cwd=staged)
    source = run([sys.executable, os.path.join(GUEST, "bin", "nettune"), "--root", tree, "plan", "--json"])
    assert installed.returncode == 0 and source.returncode == 0, installed.stderr
    assert installed.stdout == source.stdout


def test_install_keeps_an_existing_config(staged: str) -> None:
    conf = os.path.join(staged, "etc/nettune.conf")
    with open(conf, "w") as f:
        f.write("[nettune]\nprofile = latency\n")
    r = run(["bash", INSTALL, "--destdir", staged])
    assert r.returncode == 0
    assert open(conf).read() == "[nettune]\nprofile = latency\n"


@pytest.mark.parametrize("args,msg", [
    (["--profile", "turbo"], "--profile must be"),
    (["--prefix", "relative"], "--prefix must be an absolute path"),
    (["--bogus"], "unknown argument"),
    (["--destdir"], "--destdir needs a directory"),
])
def test_install_rejects_bad_arguments(args: List[str], msg: str) -> None:
    r = run(["bash", INSTALL] + args)
    assert r.returncode == 2 and msg in r.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_units_pass_systemd_analyze_verify(staged: str, tmp_path: "os.PathLike[str]") -> None:
    """systemd's own parser accepts both units (ExecStart pointed at an existing nettune)."""
    units = os.path.join(str(tmp_path), "units")
    os.makedirs(units)
    exe = os.path.join(GUEST, "bin", "nettune")
    for src, dst in (("nettune.service", "nettune.service"), ("nettune-reapply@.service", "nettune-reapply@eth0.service")):
        text = open(os.path.join(staged, "etc/systemd/system", src)).read()
        assert "ExecStart=/usr/local/sbin/nettune --config /etc/nettune.conf apply --missing-ok" in text
        with open(os.path.join(units, dst), "w") as f:
            f.write(text.replace("/usr/local/sbin/nettune", exe))
    r = run(["systemd-analyze", "verify", os.path.join(units, "nettune.service"),
             os.path.join(units, "nettune-reapply@eth0.service")], env=dict(os.environ, SYSTEMD_LOG_LEVEL="warning"))
    problems = [line for line in (r.stdout + r.stderr).splitlines() if line.strip()]
    assert r.returncode == 0 and problems == [], problems


def test_udev_rule_starts_the_reapply_unit() -> None:
    text = open(os.path.join(GUEST, "udev", "90-nettune.rules")).read()
    rule = re.sub(r"\\\n\s*", " ", "\n".join(line for line in text.splitlines() if not line.startswith("#")))
    rules = [r for r in rule.splitlines() if r.strip()]
    assert len(rules) == 1
    pairs = re.findall(r'([A-Z_]+(?:\{[^}]+\})?)\s*(==|!=|\+=|=)\s*"([^"]*)"', rules[0])
    # every comma-separated element parsed as KEY op "value"
    assert len(pairs) == rules[0].count(",") + 1
    d = {(k, op): v for k, op, v in pairs}
    assert d[("ACTION", "==")] == "add|move" and d[("SUBSYSTEM", "==")] == "net"
    assert d[("TAG", "+=")] == "systemd"
    unit = d[("ENV{SYSTEMD_WANTS}", "+=")]
    assert unit == "nettune-reapply@%k.service"
    assert os.path.isfile(os.path.join(GUEST, "systemd", "nettune-reapply@.service"))
    svc = open(os.path.join(GUEST, "systemd", "nettune-reapply@.service")).read()
    assert "Type=oneshot" in svc and not re.search(r"^RemainAfterExit=", svc, re.M)


def test_units_start_timeout_bounds_a_stuck_apply_only() -> None:
    """The units' start timeout is far above a slow apply's time: nettune bounds its own ethtool
    (30 s) and systemctl (60 s) calls; a TCG guest's boot apply took 39 s at host load 11 and 111 s at load 14, and a
    timeout reached by a slow apply kills it half-way (unit failed, system degraded)."""
    for unit in ("nettune.service", "nettune-reapply@.service"):
        text = open(os.path.join(GUEST, "systemd", unit)).read()
        m = re.search(r"^TimeoutStartSec=(\d+)(min|s)?$", text, re.M)
        assert m, f"{unit}: no TimeoutStartSec"
        seconds = int(m.group(1)) * (60 if m.group(2) == "min" else 1)
        assert seconds >= 600, f"{unit}: TimeoutStartSec={m.group(0)} would kill a slow apply half-way"
