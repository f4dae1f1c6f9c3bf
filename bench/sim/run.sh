#!/usr/bin/env bash
# Simulator benchmarks:
#  * access path: simulated accesses per second on one core, and the cost of one epoch's
#    load/latency fixed point (crates/tiermem-sim/benches/access_path.rs);
#  * placement: bytes per 4 KiB page of the placement state and the time of one quantum
#    at 1 GiB, 64 GiB and 1 TiB simulated footprints (crates/tiermem-sim/benches/placement.rs),
#    written to bench/sim/results.md. `bench/sim/run.sh 1GiB 64GiB` picks the sizes.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo bench --quiet -p tiermem-sim --bench access_path
table=$(cargo bench --quiet -p tiermem-sim --bench placement -- "$@")
echo "$table"
{
    echo "# Simulator placement benchmark"
    echo
    echo "Written by \`bench/sim/run.sh\` (\`make bench\`): \`cargo bench -p tiermem-sim --bench placement\`"
    echo "on $(nproc) CPU(s), $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo "See the bench's doc comment for what is measured."
    echo
    echo "$table"
} >bench/sim/results.md
