#!/bin/sh
# Snapshot what nettune reads, on guests without Python (busybox is enough).
#
#   sh record.sh OUTDIR
#
# Copies a superset of the files nettune.record keeps (the /sys/class/net links
# and each NIC's device chain, queue masks, /proc/interrupts, /proc/irq/*/
# affinity files, CPU and NUMA files, net sysctls, /proc/cpuinfo) into OUTDIR,
# keeping sysfs's relative links, and saves the output of
# `ethtool -i -a -g -c -k -l -n` for every NIC under OUTDIR/ethtool-captured/.
# Reads only. Then, on any machine with Python:
#
#   python3 -m nettune.record TREE --from-root OUTDIR
#
# cuts the exact subset into TREE and turns the captured ethtool output into
# TREE/ethtool.json with nettune's own parser.
set -eu

[ $# -eq 1 ] || { echo "usage: sh record.sh OUTDIR" >&2; exit 2; }
out=$1
if [ -e "$out" ] && [ -n "$(ls -A "$out" 2>/dev/null)" ]; then
    echo "record.sh: $out exists and is not empty" >&2
    exit 2
fi
mkdir -p "$out"

copy() {
    for f in "$@"; do
        [ -f "$f" ] || continue
        mkdir -p "$out$(dirname "$f")"
        cat "$f" >"$out$f" 2>/dev/null || rm -f "$out$f"
    done
}

link() {
    [ -L "$1" ] || return 0
    parent=$(readlink -f "$(dirname "$1")")
    mkdir -p "$out$parent"
    ln -sfn "$(readlink "$1")" "$out$parent/$(basename "$1")"
    target=$(readlink -f "$1")
    [ -d "$target" ] && mkdir -p "$out$target"
    return 0
}

copy /proc/interrupts /proc/cpuinfo /proc/sys/kernel/osrelease
for d in /proc/irq/[0-9]*; do
    copy "$d/smp_affinity" "$d/smp_affinity_list" "$d/effective_affinity_list" "$d/node"
done
copy /proc/sys/net/core/* /proc/sys/net/ipv4/* /proc/sys/net/ipv4/conf/*/rp_filter
for c in /proc/[0-9]*/comm; do
    [ "$(cat "$c" 2>/dev/null)" = irqbalance ] && copy "$c"
done
for f in online possible present isolated nohz_full; do
    copy "/sys/devices/system/cpu/$f"
done
copy /sys/devices/system/node/online /sys/devices/system/node/possible /sys/devices/system/node/node*/cpulist

for l in /sys/class/net/*; do
    ifname=$(basename "$l")
    link "$l"
    net=$(readlink -f "$l")
    for f in operstate ifindex mtu type tx_queue_len; do
        copy "$net/$f"
    done
    for q in "$net"/queues/rx-*; do copy "$q/rps_cpus" "$q/rps_flow_cnt"; done
    for q in "$net"/queues/tx-*; do mkdir -p "$out$q"; copy "$q/xps_cpus"; done
    [ -L "$net/device" ] || continue
    link "$net/device"
    dev=$(readlink -f "$net/device")
    while [ "$dev" != /sys/devices ] && [ "$dev" != / ]; do
        for f in numa_node local_cpulist vendor device class subsystem_vendor subsystem_device; do
            copy "$dev/$f"
        done
        link "$dev/driver"
        link "$dev/subsystem"
        [ -d "$dev/msi_irqs" ] && copy "$dev"/msi_irqs/*
        dev=$(dirname "$dev")
    done
    cap="$out/ethtool-captured/$ifname"
    mkdir -p "$cap"
    for flag in i a g c k l n; do
        rc=0
        LC_ALL=C ethtool "-$flag" "$ifname" >"$cap/$flag.out" 2>"$cap/$flag.err" || rc=$?
        echo "$rc" >"$cap/$flag.rc"
    done
done
echo "recorded into $out"
