#!/usr/bin/env bash
# Ship nettune inside the Ansible collection qemu_ixgbe.tuning.
#
#   scripts/sync-collection.sh           create the missing links, remove stale ones
#   scripts/sync-collection.sh --check   list the differences; exit 1 when there are any
#
# guest/ is the one source of nettune. The role guest_net_tuning installs it
# from its own files/ directory, which holds one relative symbolic link per
# file the role installs (the package, the command, the systemd units, the
# udev rule, the configuration), at the same path as under guest/.
# `ansible-galaxy collection build` stores a link to a file outside the
# collection as a regular file with that file's content, so the tarball
# carries real copies while the repository carries only links.
# Adding or removing a file of guest/ needs this script run once; the tests
# (tests/integration/pytest/test_collection_tarball.py) run it with --check.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

GUEST="$REPO_ROOT/guest"
FILES="$REPO_ROOT/playbooks/collections/ansible_collections/qemu_ixgbe/tuning/roles/guest_net_tuning/files"
# What the role installs (roles/guest_net_tuning/tasks/main.yml), relative to guest/.
SHIPPED=(nettune/*.py bin/nettune systemd/*.service udev/*.rules etc/nettune.conf)

check=0
case "${1:-}" in
    --check) check=1 ;;
    "") ;;
    -h | --help)
        header_help
        exit 0
        ;;
    *) die "unknown argument '$1' (--check or nothing)" ;;
esac

mapfile -t wanted < <(cd "$GUEST" && shopt -s nullglob && for p in "${SHIPPED[@]}"; do
    for f in $p; do [[ -f "$f" ]] && printf '%s\n' "$f"; done
done | sort -u)
((${#wanted[@]})) || die "no nettune sources under $GUEST"

# A set, not a pipe into grep -q: grep quitting at its first match may
# kill the writer with SIGPIPE, which pipefail reports as no match.
declare -A is_wanted=()
for rel in "${wanted[@]}"; do
    is_wanted[$rel]=1
done

problems=()
for rel in "${wanted[@]}"; do
    link="$FILES/$rel"
    target="$(realpath -s -m --relative-to="$(dirname "$link")" "$GUEST/$rel")"
    if [[ -L "$link" && "$(readlink "$link")" == "$target" ]]; then
        continue
    fi
    if [[ -L "$link" ]]; then
        problems+=("$rel: links to $(readlink "$link"), not $target")
    elif [[ -e "$link" ]]; then
        problems+=("$rel: a copy, not a link to guest/$rel")
    else
        problems+=("$rel: missing")
    fi
    if ((!check)); then
        mkdir -p "$(dirname "$link")"
        rm -f "$link"
        ln -s "$target" "$link"
    fi
done

if [[ -d "$FILES" ]]; then
    while IFS= read -r -d '' path; do
        rel="${path#"$FILES"/}"
        [[ -n "${is_wanted[$rel]:-}" ]] && continue
        problems+=("$rel: not a file the role installs (stale)")
        ((check)) || rm -f "$path"
    done < <(find "$FILES" \( -type l -o -type f \) -print0)
    ((check)) || find "$FILES" -mindepth 1 -type d -empty -delete
fi

if ((${#problems[@]} == 0)); then
    log "roles/guest_net_tuning/files: ${#wanted[@]} links to guest/, all in place"
    exit 0
fi
for p in "${problems[@]}"; do
    if ((check)); then warn "$p"; else log "fixed: $p"; fi
done
((check)) && die "roles/guest_net_tuning/files differs from guest/: run scripts/sync-collection.sh"
log "roles/guest_net_tuning/files: ${#wanted[@]} links to guest/"
