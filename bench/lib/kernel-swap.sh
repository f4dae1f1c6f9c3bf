# The kernel's compressed tier as a baseline: a swap file with zswap in front and a
# cgroup-v1 memory limit (one LRU over everything in the cgroup). Sourced by bench
# scripts (bench/runtime, bench/qos); every setting is restored by kswap_restore, which
# the caller's EXIT trap runs, also on failure.
#
#   KSWAP_CG            the cgroup directory (set before sourcing, or the default below)
#   kswap_setup COMP    swap file + zswap with compressor COMP; returns 1 (with a reason in
#                       KSWAP_WHY) where zswap, cgroup v1 or swapon is unavailable
#   kswap_in_cgroup LIMIT CMD...   run CMD in the cgroup under a memory limit of LIMIT bytes
#   kswap_restore       kill what is left in the cgroup, remove it, swapoff, restore zswap
#                       and vm.page-cluster

KSWAP_CG=${KSWAP_CG:-/sys/fs/cgroup/memory/tiermem-bench-$$}
KSWAP_FILE=/var/tmp/tiermem-bench-swap-$$
KSWAP_OLD_EN=$(cat /sys/module/zswap/parameters/enabled 2>/dev/null || echo N)
KSWAP_OLD_COMP=$(cat /sys/module/zswap/parameters/compressor 2>/dev/null || echo lzo)
KSWAP_OLD_PAGE_CLUSTER=$(cat /proc/sys/vm/page-cluster)
KSWAP_ON=0
KSWAP_WHY=

kswap_setup() {
    local comp=${1:-lzo}
    [[ -w /sys/module/zswap/parameters/enabled && -d /sys/fs/cgroup/memory ]] || { KSWAP_WHY="zswap or cgroup v1 not available"; return 1; }
    if [[ $KSWAP_ON == 0 ]]; then
        dd if=/dev/zero of="$KSWAP_FILE" bs=1M count=2048 status=none && chmod 600 "$KSWAP_FILE" \
            && mkswap -q "$KSWAP_FILE" >/dev/null && swapon "$KSWAP_FILE" || { KSWAP_WHY="swapon failed"; return 1; }
        KSWAP_ON=1
    fi
    echo "$comp" 2>/dev/null > /sys/module/zswap/parameters/compressor || { KSWAP_WHY="zswap has no $comp compressor on this kernel"; return 1; }
    echo Y > /sys/module/zswap/parameters/enabled
    mkdir -p "$KSWAP_CG"
    return 0
}

kswap_in_cgroup() {
    local limit=$1; shift
    echo "$limit" > "$KSWAP_CG/memory.limit_in_bytes"
    sh -c "echo \$\$ > $KSWAP_CG/cgroup.procs && exec \"\$@\"" sh "$@"
}

kswap_restore() {
    if [[ -d $KSWAP_CG ]]; then
        for p in $(cat "$KSWAP_CG/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
        sleep 0.3
        rmdir "$KSWAP_CG" 2>/dev/null || true
    fi
    if [[ $KSWAP_ON == 1 ]]; then
        swapoff "$KSWAP_FILE" 2>/dev/null || true
        KSWAP_ON=0
    fi
    rm -f "$KSWAP_FILE"
    echo "$KSWAP_OLD_PAGE_CLUSTER" > /proc/sys/vm/page-cluster
    if [[ -w /sys/module/zswap/parameters/enabled ]]; then
        echo "$KSWAP_OLD_COMP" > /sys/module/zswap/parameters/compressor 2>/dev/null || true
        echo "$KSWAP_OLD_EN" > /sys/module/zswap/parameters/enabled 2>/dev/null || true
    fi
}
