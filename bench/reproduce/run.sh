#!/usr/bin/env bash
# Every reproduction's wall time, quick and full (`make bench`, step `reproduce`): runs
# `tiermem reproduce all --quick` and `tiermem reproduce all` afresh (--force, no plots) into
# out/bench/suite-quick and out/bench/suite-full, one figure at a time, and writes the
# per-figure times of both indexes to bench/reproduce/results.md. The full suite takes
# about an hour on 2 idle cores. MODES="quick" (or "full") runs one of the two; the page
# then keeps "not run" for the other unless its index is already there.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=target/release/tiermem
export TIERMEM_PYTHON="${TIERMEM_PYTHON:-$PWD/.venv/bin/python}"
MODES=${MODES:-"quick full"}
for mode in $MODES; do
    case $mode in
        quick) "$BIN" reproduce all --quick --force --no-plots --out out/bench/suite-quick ;;
        full) "$BIN" reproduce all --force --no-plots --out out/bench/suite-full ;;
        *) echo "bench/reproduce: MODES takes quick and full, not '$mode'" >&2; exit 2 ;;
    esac
done
page=$("$TIERMEM_PYTHON" -m tiermem.workbench timings --quick-dir out/bench/suite-quick --full-dir out/bench/suite-full)
{
    echo "# Reproduction wall times"
    echo
    echo "Written by \`bench/reproduce/run.sh\` (\`make bench\`): \`tiermem reproduce all [--quick] --force"
    echo "--no-plots\`, one figure at a time, on $(nproc) CPU(s), $(date -u +%Y-%m-%d), load average"
    echo "$(cut -d' ' -f1-3 /proc/loadavg) at the end. Each figure's wall time is its \`wall_s\` in the"
    echo "suite's \`index.json\`."
    echo
    echo "$page"
} > bench/reproduce/results.md
cat bench/reproduce/results.md
