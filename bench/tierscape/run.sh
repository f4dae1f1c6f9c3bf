#!/usr/bin/env bash
# TierScape analytical model: time of one placement decision (HiGHS) for 50 000 regions x
# 6 tiers (crates/tiermem-policies/benches/tierscape_solve.rs), written to
# bench/tierscape/results.md (issue 13 asks for under 1 s); then memcached and Redis under
# tiermem's TierScape configurations and zswap (bench/tierscape/kv.py -> kv.md; needs root
# for the zswap baseline; SKIP_KV=1 skips it).
set -euo pipefail
cd "$(dirname "$0")/../.."
# PROFILE=test reuses the test build's HiGHS (highs-sys compiles HiGHS once per profile,
# ~10 min on 2 cores); HiGHS itself is always built with -O3 (CMAKE_BUILD_TYPE=Release).
table=$(cargo bench --quiet -p tiermem-policies --bench tierscape_solve ${PROFILE:+--profile "$PROFILE"} -- "$@")
echo "$table"
{
    echo "# TierScape analytical model: solve time"
    echo
    echo "Written by \`bench/tierscape/run.sh\` (\`make bench\`): \`cargo bench -p tiermem-policies --bench tierscape_solve\` (profile: ${PROFILE:-bench})"
    echo "on $(nproc) CPU(s), $(date -u +%Y-%m-%d), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end."
    echo "See the bench's doc comment for what is measured."
    echo
    echo "$table"
} >bench/tierscape/results.md

if [[ ${SKIP_KV:-0} != 1 ]]; then
    cargo build -q --release -p tiermem-cli -p tiermem-linux --bins
    cargo build -q --release -p tiermem-preload
    python3 bench/tierscape/kv.py
fi
