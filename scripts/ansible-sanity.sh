#!/usr/bin/env bash
# ansible-test sanity on the collection qemu_ixgbe.tuning, with the venv's
# ansible-core and Python, locally (no containers):
#
#   scripts/ansible-sanity.sh                 every sanity test but `symlinks`
#   scripts/ansible-sanity.sh --test pylint   other arguments go to `ansible-test sanity`
#   scripts/ansible-sanity.sh --prime         only create the tools' virtualenvs
#
# ansible-test runs each tool (pylint, pycodestyle, yamllint, validate-modules,
# ...) from a virtualenv of its own, at versions it pins. They are made once,
# from the package index, under $BUILD_DIR/ansible-test (ansible-test's home
# directory there: nothing goes to ~/.ansible); after that a run needs no
# network. scripts/deps.sh makes them (--prime); a run that finds them missing
# makes them first. ansible-test bootstraps pip in each with a get-pip.py from
# its cache: scripts/ansible-test-get-pip.py is put there.
#
# `symlinks` is skipped: the role guest_net_tuning ships nettune as links to
# guest/ (scripts/sync-collection.sh, which checks them), turned into regular
# files by `ansible-galaxy collection build`. Results go to the collection's
# tests/output/ (ignored by git).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

COLLECTION="$REPO_ROOT/playbooks/collections/ansible_collections/qemu_ixgbe/tuning"
ANSIBLE_TEST="$VENV_DIR/bin/ansible-test"
TEST_HOME="$BUILD_DIR/ansible-test"

[[ -x "$ANSIBLE_TEST" ]] || die "$ANSIBLE_TEST not found: run scripts/deps.sh"
[[ -d "$COLLECTION" ]] || die "no collection at $COLLECTION"

prime=0
if [[ "${1:-}" == --prime ]]; then
    prime=1
    shift
fi

python_version="$("$VENV_PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
pip_version="$("$VENV_PYTHON" -c '
import types
from ansible_test._internal.python_requirements import get_venv_packages
print(get_venv_packages(types.SimpleNamespace(version="'"$python_version"'"))["pip"])')" ||
    die "cannot tell which pip ansible-test bootstraps (ansible-test changed?)"
mkdir -p "$TEST_HOME/.ansible/test/cache"
install -m 0644 "$REPO_ROOT/scripts/ansible-test-get-pip.py" \
    "$TEST_HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"

# git (ansible-test lists the collection's files with it) keeps the user's settings.
export GIT_CONFIG_GLOBAL="${GIT_CONFIG_GLOBAL:-${HOME:-}/.gitconfig}"
export HOME="$TEST_HOME"
cd "$COLLECTION"

# The virtualenvs depend on ansible-test's version and the Python; remember
# which ones were made.
stamp="$TEST_HOME/primed"
want="$("$ANSIBLE_TEST" --version) python $python_version"
have=""
[[ -f "$stamp" ]] && have="$(<"$stamp")"
if [[ "$want" != "$have" ]]; then
    log "creating ansible-test's sanity virtualenvs in $TEST_HOME (from the package index)"
    "$ANSIBLE_TEST" sanity --local --python "$python_version" --prime-venvs >"$TEST_HOME/prime.log" 2>&1 || {
        tail -n 40 "$TEST_HOME/prime.log" >&2
        die "ansible-test sanity --prime-venvs failed (log: $TEST_HOME/prime.log)"
    }
    printf '%s\n' "$want" >"$stamp"
fi
((prime)) && exit 0

exec "$ANSIBLE_TEST" sanity --local --python "$python_version" --skip-test symlinks --color no "$@"
