"""Stand-in for the get-pip.py that ansible-test bootstraps its virtualenvs with.

ansible-test creates each sanity tool's virtualenv without pip, then runs a
get-pip.py from its cache (~/.ansible/test/cache/get_pip_<version>.py), which
it downloads from the Ansible project's own file server when missing. This
file takes that place (scripts/ansible-sanity.sh copies it there), so that
only the package registries are needed: the standard library's ensurepip
installs the pip bundled with Python, which then installs the pip version
ansible-test asked for from the package index.

Called as `python get_pip_<version>.py [pip options] pip==<version>
[--no-setuptools] [--no-wheel]` with the new virtualenv's Python.
"""
from __future__ import annotations

import subprocess
import sys
from typing import List

GET_PIP_ONLY = ("--no-setuptools", "--no-wheel")


def main(argv: List[str]) -> int:
    pip_args = [a for a in argv if a not in GET_PIP_ONLY]
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True,
                   stdout=subprocess.DEVNULL)
    return subprocess.run([sys.executable, "-m", "pip", "install", "--no-input"] + pip_args,
                          check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
