#!/usr/bin/env bash
# Start, stop or restart Debian's libvirtd (qemu:///system) by hand, for
# machines without systemd as PID 1 (containers, CI runners).
#
#   scripts/libvirtd.sh start     start virtlogd and libvirtd unless running
#   scripts/libvirtd.sh stop      stop the daemons this script started
#   scripts/libvirtd.sh restart   stop, then start (running domains survive)
#   scripts/libvirtd.sh status    exit 0 when qemu:///system answers
#
# When systemd manages libvirtd, 'start' only checks that it answers.
# Needs root and the packages in scripts/deps/apt-ansible.txt. Creates the
# libvirt-qemu user and group (normally made by libvirt-daemon-system) and
# the state directories, because the QEMU driver refuses to load without them.
set -euo pipefail

RUN_DIR=/run/libvirt
LIBVIRTD_PID=/run/libvirtd.pid
VIRTLOGD_PID=/run/virtlogd.pid
URI=qemu:///system
WAIT_S=${LIBVIRTD_WAIT_S:-30}

log() { printf '[libvirtd] %s\n' "$*" >&2; }
die() { printf '[libvirtd] ERROR: %s\n' "$*" >&2; exit 1; }

need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || [[ -x "/usr/sbin/$c" ]] ||
            die "'$c' not found; install the packages in scripts/deps/apt-ansible.txt (scripts/deps.sh)"
    done
}

answers() {
    timeout 10 virsh -q -c "$URI" uri >/dev/null 2>&1
}

pid_alive() {
    local f=$1 pid
    [[ -f "$f" ]] || return 1
    pid=$(<"$f")
    [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null
}

systemd_managed() {
    [[ -d /run/systemd/system ]] && command -v systemctl >/dev/null 2>&1
}

prepare() {
    [[ $EUID -eq 0 ]] || die "must run as root (libvirtd for qemu:///system)"
    need libvirtd virtlogd virsh
    getent group kvm >/dev/null || groupadd --system kvm
    getent group libvirt >/dev/null || groupadd --system libvirt
    getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
    if ! getent passwd libvirt-qemu >/dev/null; then
        useradd --system --gid libvirt-qemu --groups kvm --home-dir /var/lib/libvirt \
            --no-create-home --shell /usr/sbin/nologin libvirt-qemu ||
            die "could not create the libvirt-qemu user"
        log "created user libvirt-qemu"
    fi
    mkdir -p /var/log/libvirt/qemu /var/lib/libvirt/qemu /var/lib/libvirt/images \
        /var/cache/libvirt/qemu "$RUN_DIR" /etc/libvirt/hooks
    # Without udev /dev/kvm stays root:root 0600. libvirt's capability probe
    # then sees KVM while its cache check (as the qemu user) does not, so it
    # re-probes the emulator on every call (about 50 s per define). Give the
    # device the owner and mode Debian's udev rules give it. Guests still use
    # TCG unless their domain type is kvm.
    if [[ -c /dev/kvm && "$(stat -c %G:%a /dev/kvm)" != "kvm:660" ]]; then
        chgrp kvm /dev/kvm && chmod 0660 /dev/kvm ||
            die "could not set /dev/kvm to root:kvm 0660"
        log "set /dev/kvm to root:kvm 0660 (as udev would)"
    fi
}

start() {
    if systemd_managed; then
        systemctl start virtlogd.socket libvirtd.service || die "systemctl start libvirtd failed"
    else
        prepare
        if ! pid_alive "$VIRTLOGD_PID"; then
            /usr/sbin/virtlogd -d -p "$VIRTLOGD_PID" || die "virtlogd did not start"
        fi
        if ! pid_alive "$LIBVIRTD_PID"; then
            /usr/sbin/libvirtd -d -p "$LIBVIRTD_PID" || die "libvirtd did not start"
        fi
    fi
    local i
    for ((i = 0; i < WAIT_S * 5; i++)); do
        if answers; then
            log "libvirtd answers on $URI"
            return 0
        fi
        sleep 0.2
    done
    die "libvirtd does not answer on $URI after ${WAIT_S}s (see /var/log/libvirt/)"
}

stop_pidfile() {
    local f=$1 name=$2 pid i
    pid_alive "$f" || return 0
    pid=$(<"$f")
    kill "$pid"
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$f"; return 0; }
        sleep 0.1
    done
    die "$name (pid $pid) did not stop within 10 s"
}

stop() {
    if systemd_managed; then
        systemctl stop libvirtd.service
        return
    fi
    stop_pidfile "$LIBVIRTD_PID" libvirtd
    stop_pidfile "$VIRTLOGD_PID" virtlogd
}

case "${1:-}" in
    start) start ;;
    stop) stop ;;
    restart)
        if systemd_managed; then
            systemctl restart libvirtd.service
            start
        else
            stop_pidfile "$LIBVIRTD_PID" libvirtd
            start
        fi
        ;;
    status) answers ;;
    *) die "usage: $0 {start|stop|restart|status}" ;;
esac
