"""ansible-lint at the production profile and ansible-playbook --syntax-check."""
from __future__ import annotations

import subprocess

import pytest

from harness import PLAYBOOKS, ansible_env, tool


def test_ansible_lint_production_profile() -> None:
    proc = subprocess.run([tool("ansible-lint"), "--profile", "production", "--nocolor"],
                          cwd=str(PLAYBOOKS), check=False, capture_output=True, text=True,
                          timeout=600, env=ansible_env(), stdin=subprocess.DEVNULL)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "Profile 'production' was required, and it passed" in out, out[-2000:]


@pytest.mark.parametrize("playbook", ["site.yml", "ci-vm.yml", "qemu-package.yml", "measure.yml"])
def test_syntax_check(playbook: str) -> None:
    proc = subprocess.run([tool("ansible-playbook"), "--syntax-check", playbook],
                          cwd=str(PLAYBOOKS), check=False, capture_output=True, text=True,
                          timeout=300, env=ansible_env(), stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "playbook: %s" % playbook in proc.stdout
