#!/usr/bin/env bash
# Simulator benchmarks:
#  * access path: simulated accesses per second on one core, and the cost of one epoch's
#    load/latency fixed point (crates/tiermem-sim/benches/access_path.rs);
#  * placement: bytes per 4 KiB page of the placement state and the time of one quantum
#    at 1 GiB, 64 GiB and 1 TiB simulated footprints (crates/tiermem-sim/benches/placement.rs),
#    written to bench/sim/results.md. `bench/sim/run.sh 1GiB 64GiB` picks the sizes;
#  * end to end: whole `tiermem sim` runs under HeMem (fig1's, and GUPS at the same sizes
#    plus 512 GiB), accesses/s/core, wall time and peak RSS (bench/sim/end_to_end.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo bench --quiet -p tiermem-sim --bench access_path
table=$(cargo bench --quiet -p tiermem-sim --bench placement -- "$@")
echo "$table"
sizes=("$@")
[ "${#sizes[@]}" -gt 0 ] || sizes=(1GiB 64GiB 512GiB 1TiB)
e2e=$(bash bench/sim/end_to_end.sh "${sizes[@]}")
echo "$e2e"
{
    echo "# Simulator placement benchmark"
    echo
    echo "Written by \`bench/sim/run.sh\` (\`make bench\`): \`cargo bench -p tiermem-sim --bench placement\`"
    echo "on $(nproc) CPU(s), $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo "See the bench's doc comment for what is measured."
    echo
    echo "$table"
    echo
    echo "## End to end"
    echo
    echo "Written by \`bench/sim/end_to_end.sh\`: whole \`tiermem sim\` runs of Colloid's GUPS base under HeMem"
    echo "(footprint, hot set and tiers scaled together; 4 KiB pages except fig1's own run). Accesses/s/core:"
    echo "the simulated accesses (steady-state throughput x duration / accesses_per_sample, each standing for"
    echo "accesses_per_sample operations) over the simulation's wall time. GUPS is stationary: every one feeds"
    echo "the PEBS counter, only those it samples are drawn (docs/simulator.md, skip-ahead). Process wall time"
    echo "adds setup and the plots."
    echo
    echo "$e2e"
} >bench/sim/results.md
