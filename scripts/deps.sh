#!/usr/bin/env bash
# Install everything the project needs on a Debian 12 host. Idempotent and
# quick (well under 5 s) when everything is already present.
#
#   * Debian packages: the union of scripts/deps/apt-*.txt, installed with
#     --no-install-recommends. 'apt-get update' runs once, only when a package
#     is missing.
#   * Python: a virtualenv in $BUILD_DIR/venv with the union of
#     scripts/deps/pip-*.txt, re-run only when those lists (or the base
#     interpreter) change; then ansible-test's sanity virtualenvs
#     ($BUILD_DIR/ansible-test, scripts/ansible-sanity.sh --prime).
#
# Environment:
#   BUILD_DIR   build directory (default: <repo>/build)
#   PYTHON      base interpreter for the venv (default: /usr/bin/python3 if
#               present, else python3 from PATH)
#
# Runs without a terminal (CI=true, no stdin). Needs root (or password-less
# sudo) only when Debian packages are missing.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

shopt -s nullglob
apt_lists=("$REPO_ROOT"/scripts/deps/apt-*.txt)
pip_lists=("$REPO_ROOT"/scripts/deps/pip-*.txt)
shopt -u nullglob

export DEBIAN_FRONTEND=noninteractive

# ---------------------------------------------------------------- Debian ---

# Run a command as root: directly, or through password-less sudo.
as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n env DEBIAN_FRONTEND=noninteractive "$@"
    else
        die "need root to run: $* (re-run scripts/deps.sh as root)"
    fi
}

# Which list file names a package (for error messages).
list_of_pkg() {
    local f
    for f in "${apt_lists[@]}"; do
        if read_list_files "$f" | grep -qxF -- "$1"; then
            printf '%s' "${f#"$REPO_ROOT"/}"
            return
        fi
    done
}

apt_install_missing() {
    local -a wanted missing=() unknown=()
    mapfile -t wanted < <(read_list_files "${apt_lists[@]}")
    ((${#wanted[@]})) || return 0

    # dpkg-query prints one line per known package; unknown ones go to stderr.
    local installed
    installed="$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${wanted[@]}" 2>/dev/null |
        awk '$2 == "ii" { print $1 }' || true)"
    local p
    for p in "${wanted[@]}"; do
        grep -qxF -- "$p" <<<"$installed" || missing+=("$p")
    done
    if ((${#missing[@]} == 0)); then
        log "Debian packages: all ${#wanted[@]} present"
        return 0
    fi

    log "Debian packages missing: ${missing[*]}"
    log "running apt-get update"
    local lock_opt=(-o DPkg::Lock::Timeout=600)
    as_root apt-get "${lock_opt[@]}" -q update ||
        die "apt-get update failed (see above); check the host's apt sources and network"

    for p in "${missing[@]}"; do
        apt-cache show --no-all-versions -- "$p" >/dev/null 2>&1 || unknown+=("$p ($(list_of_pkg "$p"))")
    done
    if ((${#unknown[@]})); then
        die "apt does not know these packages: ${unknown[*]}"
    fi

    log "installing: ${missing[*]}"
    as_root apt-get "${lock_opt[@]}" -q -y --no-install-recommends install "${missing[@]}" ||
        die "apt-get install failed for: ${missing[*]}"
}

# ---------------------------------------------------------------- Python ---

pick_python() {
    if [[ -n "${PYTHON:-}" ]]; then
        command -v "$PYTHON" >/dev/null 2>&1 || die "PYTHON=$PYTHON is not an executable"
        printf '%s' "$PYTHON"
    elif [[ -x /usr/bin/python3 ]]; then
        printf '%s' /usr/bin/python3
    else
        command -v python3 >/dev/null 2>&1 || die "no python3 found (install Debian's python3)"
        command -v python3
    fi
}

venv_setup() {
    local base_py stamp_file want have=""
    base_py="$(pick_python)"

    if [[ ! -x "$VENV_PYTHON" ]] || ! "$VENV_PYTHON" -c 'import sys' 2>/dev/null; then
        log "creating virtualenv $VENV_DIR (base: $base_py)"
        rm -rf "$VENV_DIR"
        "$base_py" -m venv "$VENV_DIR" ||
            die "'$base_py -m venv $VENV_DIR' failed (is python3-venv installed?)"
    fi

    stamp_file="$VENV_DIR/.pip-lists.sha256"
    want="$(
        {
            hash_files "${pip_lists[@]}"
            "$VENV_PYTHON" -VV
        } | sha256sum | cut -d' ' -f1
    )"
    [[ -f "$stamp_file" ]] && have="$(<"$stamp_file")"
    if [[ "$want" == "$have" ]]; then
        log "Python venv: up to date ($VENV_DIR)"
        return 0
    fi
    if ((${#pip_lists[@]} == 0)); then
        printf '%s\n' "$want" >"$stamp_file"
        return 0
    fi

    local -a req_args=()
    local f
    for f in "${pip_lists[@]}"; do
        req_args+=(-r "$f")
    done
    log "pip install into $VENV_DIR from: ${pip_lists[*]#"$REPO_ROOT"/}"
    "$VENV_PYTHON" -m pip install --disable-pip-version-check --no-input -q "${req_args[@]}" ||
        die "pip install failed for ${pip_lists[*]#"$REPO_ROOT"/}"
    printf '%s\n' "$want" >"$stamp_file"
}

# ansible-test runs its sanity tools (pylint, yamllint, ...) from virtualenvs
# of their own; made once from PyPI, so that the ansible-sanity test runs
# offline. Quick when they exist.
sanity_venvs() {
    [[ -x "$VENV_DIR/bin/ansible-test" ]] || return 0
    bash "$REPO_ROOT/scripts/ansible-sanity.sh" --prime ||
        die "scripts/ansible-sanity.sh --prime failed (see above)"
}

t0=$(now_s)
apt_install_missing
venv_setup
sanity_venvs
log "done in $(fmt_duration $(($(now_s) - t0)))"
