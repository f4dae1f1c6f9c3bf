#!/usr/bin/env bash
# A QEMU guest with a declared NUMA topology, for the runtime's node-tier end-to-end tests
# (crates/tiermem-linux/tests/numa_guest.rs; docs/running-on-cxl.md). Software emulation
# (TCG): no /dev/kvm needed. Everything comes from Debian packages fetched with apt.
#
#   scripts/numa-guest.sh build PROFILE_DIR        kernel + base initramfs under target/numa-guest/
#   scripts/numa-guest.sh run TOPOLOGY SCRIPT [SECS]
#                                                  boot TOPOLOGY ("2node" | "3node" | "memless"), run SCRIPT
#                                                  (a busybox sh script) in the guest, print the
#                                                  serial console; killed after SECS (default 240)
#
# Topologies (guest RAM 768 MiB, 2 vCPUs, all on node 0):
#   2node: node 0 DRAM 384M (CPUs), node 1 384M CPU-less; HMAT: node 0 80 ns 20 GB/s,
#          node 1 250 ns 8 GB/s (a CXL expander behind one x8 link)
#   memless: node 0 512M (CPU 0), node 1 CPU 1 and no memory (a node tier there is refused)
#   3node: node 0 DRAM 256M (CPUs), node 1 CXL-like 256M CPU-less (250 ns, 8 GB/s),
#          node 2 slower 256M CPU-less (400 ns, 4 GB/s)
# The guest's init mounts proc/sys/dev, runs /test.sh and prints TIERMEM-GUEST-EXIT <rc>,
# then powers off. Results are lines on the serial console.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/target/numa-guest"
# The kernel: Debian's cloud flavour (NUMA, ACPI HMAT, userfaultfd with UFFDIO_MOVE since
# 6.8, 8250 serial console built in; no modules needed for an initramfs-only guest).
KPKG_PATTERN='linux-image-6.12.*+deb12-cloud-amd64-unsigned'

newest_kernel_pkg() {
    apt-cache search --names-only "$KPKG_PATTERN" | awk '{print $1}' | sort -V | tail -1
}

build_kernel() {
    [ -s "$cache/vmlinuz" ] && return 0
    mkdir -p "$cache/kdeb"
    local pkg
    pkg=$(newest_kernel_pkg)
    [ -n "$pkg" ] || { echo "numa-guest: no package matching $KPKG_PATTERN (apt-get update?)" >&2; exit 1; }
    (cd "$cache/kdeb" && rm -f ./*.deb && apt-get download -q "$pkg" >&2)
    rm -rf "$cache/kdeb/x"
    dpkg-deb -x "$cache/kdeb"/*.deb "$cache/kdeb/x"
    cp "$cache/kdeb/x"/boot/vmlinuz-* "$cache/vmlinuz.tmp"
    echo "$pkg" > "$cache/kernel-package"
    rm -rf "$cache/kdeb"
    mv "$cache/vmlinuz.tmp" "$cache/vmlinuz"
}

# Copy a program and the shared libraries ldd names (with the loader) into the tree.
add_program() {
    local tree=$1 src=$2 dst=$3
    mkdir -p "$tree$(dirname "$dst")"
    cp -L "$src" "$tree$dst"
    # The guest needs no debug info: without it the release binaries shrink from ~290 MB to
    # ~40 MB, which the guest's 512-768 MB must also hold unpacked.
    strip --strip-debug "$tree$dst" || { echo "numa-guest: strip failed on $src (binutils)" >&2; exit 1; }
    ldd "$src" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
        [ -e "$lib" ] || continue
        mkdir -p "$tree$(dirname "$lib")"
        cp -Ln "$lib" "$tree$lib"
    done
}

# What the initramfs is made from: this script and the guest binaries. It is rebuilt when
# either changed.
guest_stamp() {
    local prof=$1
    sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1
    for f in tiermem libtiermem_preload.so tiermem-stress tiermem-touch tiermem-move-bench; do
        stat -c '%n %Y %s' "$prof/$f"
    done
}

build_initramfs() {
    local prof=$1
    local tree="$cache/tree"
    rm -rf "$tree"
    mkdir -p "$tree"/{bin,sbin,proc,sys,dev,tmp,run,opt/tiermem}
    [ -x /bin/busybox ] || { echo "numa-guest: /bin/busybox missing: apt-get install busybox-static" >&2; exit 1; }
    file -L /bin/busybox | grep -q 'statically linked' || { echo "numa-guest: /bin/busybox is not static: apt-get install busybox-static" >&2; exit 1; }
    cp /bin/busybox "$tree/bin/busybox"
    add_program "$tree" "$prof/tiermem" /opt/tiermem/tiermem
    add_program "$tree" "$prof/libtiermem_preload.so" /opt/tiermem/libtiermem_preload.so
    add_program "$tree" "$prof/tiermem-stress" /opt/tiermem/tiermem-stress
    add_program "$tree" "$prof/tiermem-touch" /opt/tiermem/tiermem-touch
    add_program "$tree" "$prof/tiermem-move-bench" /opt/tiermem/tiermem-move-bench
    # A real program: GNU sort (its buffer is one large malloc, so the runtime manages it).
    add_program "$tree" "$(command -v sort)" /usr/bin/sort
    add_program "$tree" "$(command -v numactl)" /usr/bin/numactl
    cat > "$tree/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp; mount -t tmpfs run /run
export PATH=/opt/tiermem:/usr/bin:/bin TIERMEM_RUN_DIR=/run/tiermem HOME=/tmp
echo TIERMEM-GUEST-UP
cd /tmp
sh /test.sh
echo "TIERMEM-GUEST-EXIT $?"
poweroff -f
INIT
    chmod +x "$tree/init"
    (cd "$tree" && find . | cpio -o -H newc --quiet | gzip -1 > "$cache/base.cpio.gz.tmp")
    mv "$cache/base.cpio.gz.tmp" "$cache/base.cpio.gz"
    guest_stamp "$prof" > "$cache/base.stamp"
    rm -rf "$tree"
}

topology_args() {
    case $1 in
    2node) echo "-m 768M \
 -object memory-backend-ram,size=384M,id=m0 -object memory-backend-ram,size=384M,id=m1 \
 -numa node,nodeid=0,cpus=0-1,memdev=m0,initiator=0 -numa node,nodeid=1,memdev=m1,initiator=0 \
 -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80 \
 -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G \
 -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=250 \
 -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=8G" ;;
    3node) echo "-m 768M \
 -object memory-backend-ram,size=256M,id=m0 -object memory-backend-ram,size=256M,id=m1 \
 -object memory-backend-ram,size=256M,id=m2 \
 -numa node,nodeid=0,cpus=0-1,memdev=m0,initiator=0 -numa node,nodeid=1,memdev=m1,initiator=0 \
 -numa node,nodeid=2,memdev=m2,initiator=0 \
 -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80 \
 -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20G \
 -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=250 \
 -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=8G \
 -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=400 \
 -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=4G" ;;
    # A CPU node without memory (Linux numbers it 1: SRAT's CPU entries come first).
    memless) echo "-m 512M \
 -object memory-backend-ram,size=512M,id=m0 \
 -numa node,nodeid=0,cpus=0,memdev=m0 -numa node,nodeid=1,cpus=1" ;;
    *) echo "numa-guest: unknown topology $1 (2node, 3node, memless)" >&2; exit 2 ;;
    esac
}

case ${1:-} in
build)
    prof=${2:?profile dir (target/release)}
    mkdir -p "$cache"
    build_kernel
    if [ ! -s "$cache/base.cpio.gz" ] || [ "$(guest_stamp "$prof")" != "$(cat "$cache/base.stamp" 2>/dev/null)" ]; then
        build_initramfs "$prof"
    fi
    ;;
run)
    topo=${2:?topology}; script=${3:?script}; secs=${4:-240}
    [ -s "$cache/vmlinuz" ] && [ -s "$cache/base.cpio.gz" ] || { echo "numa-guest: run '$0 build' first" >&2; exit 1; }
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    mkdir -p "$work/t"
    cp "$script" "$work/t/test.sh"
    # The script's helpers: common.sh beside it, as /test-common.sh.
    cp "$(dirname "$script")/common.sh" "$work/t/test-common.sh" 2>/dev/null || : > "$work/t/test-common.sh"
    # Initramfs archives concatenate: the base, then this run's script.
    (cd "$work/t" && printf 'test.sh\ntest-common.sh\n' | cpio -o -H newc --quiet | gzip -1 > "$work/test.cpio.gz")
    cat "$cache/base.cpio.gz" "$work/test.cpio.gz" > "$work/initrd"
    # shellcheck disable=SC2046
    timeout -k 5 "$secs" qemu-system-x86_64 -machine q35,hmat=on -cpu max -smp 2 \
        $(topology_args "$topo") \
        -kernel "$cache/vmlinuz" -initrd "$work/initrd" \
        -append "console=ttyS0 quiet panic=-1 numa_balancing=disable" \
        -nographic -no-reboot -nodefaults -serial stdio </dev/null
    ;;
*)
    sed -n '2,19p' "$0" >&2; exit 2 ;;
esac
