#!/usr/bin/env bash
# move_pages(2) throughput, batched (512 pages per call, as node tiers move a range or a
# batch) vs one page per call, between node 0 and node 1. This machine has one node, so
# it runs in the 2-node QEMU guest of scripts/numa-guest.sh (software emulation: the
# absolute pages/s are the emulator's, not hardware's; the batched/single ratio is the
# system-call overhead saved). On a NUMA or CXL machine run the binary directly:
#   target/release/tiermem-move-bench --mb 256
# It also measures the latency probe's CPU share (telemetry = "probe"), here on this
# machine's real memory and in the guest. Writes bench/numa/results.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
cargo build -q --release -p tiermem-cli -p tiermem-preload -p tiermem-linux --bins || exit 1
scripts/numa-guest.sh build target/release || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/tiermem-move-bench --probe-ms 3000 | grep '^move-bench: probe' | tee "$work/host" || exit 1
cat > "$work/test.sh" <<'SH'
tiermem-move-bench --mb ${MB:-8} --rounds 1
SH
sed -i "s/\${MB:-8}/${MB:-8}/" "$work/test.sh"
: > "$work/common.sh"
scripts/numa-guest.sh run 2node "$work/test.sh" 300 | tr -d '\r' | grep '^move-bench' | tee "$work/out"
[ -s "$work/out" ] || { echo "move-bench: no result from the guest" >&2; exit 1; }
{
    echo "# move_pages throughput (bench/numa/run.sh)"
    echo
    echo "2-node QEMU guest (TCG software emulation, 2 vCPUs on this VM), $(date -u +%F):"
    echo
    echo '```'
    cat "$work/out"
    echo '```'
    echo
    echo "Emulated: compare the move lines with each other, not with hardware."
    echo
    echo "The latency probe on this machine's own memory (one node; $(nproc) CPUs):"
    echo
    echo '```'
    cat "$work/host"
    echo '```'
} > bench/numa/results.md
