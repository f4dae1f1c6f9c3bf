#!/usr/bin/env bash
# Benchmark dispatcher (`make bench`): runs every bench/*/run.sh (bench/reproduce times
# every reproduction, quick and full) and prints a summary.
# (bench/heap: perl, awk, sort, xz, python, numpy plain vs 100/50/25 % budgets -> bench/heap/results.md.)
# (bench/kernel_baseline: CPython, perl, gawk, sqlite3, sort, a JVM, node.js, hot10, churn: plain vs
#  tiermem's default mode vs zswap at tiermem's peak memory -> bench/kernel_baseline/results.md.)
# Each step's output goes to out/bench/<name>.log; a failing step is reported (and makes
# the exit status 1) but does not stop the others.
#
#   scripts/bench.sh                  every step
#   scripts/bench.sh sim reproduce    only the named steps (bench dir names)
set -uo pipefail
cd "$(dirname "$0")/.."

export TIERMEM_PYTHON="${TIERMEM_PYTHON:-$PWD/.venv/bin/python}"
LOGS=out/bench
mkdir -p "$LOGS"

ONLY=("$@")
names=()
secs=()
codes=()

selected() {  # selected NAME: true when no names were given or NAME is one of them
    [ "${#ONLY[@]}" -eq 0 ] && return 0
    local n; for n in "${ONLY[@]}"; do [ "$n" = "$1" ] && return 0; done
    return 1
}

run_step() {  # run_step NAME CMD...
    local name=$1; shift
    selected "$name" || return 0
    local log="$LOGS/$name.log"
    echo "== $name: $*"
    local start=$SECONDS
    "$@" >"$log" 2>&1
    local rc=$?
    local took=$((SECONDS - start))
    tail -n 20 "$log"
    names+=("$name"); secs+=("$took"); codes+=("$rc")
    [ "$rc" -eq 0 ] || echo "!! $name failed (exit $rc), log: $log"
}

shopt -s nullglob
for script in bench/*/run.sh; do
    run_step "$(basename "$(dirname "$script")")" bash "$script"
done
echo
echo "bench summary (wall seconds; logs in $LOGS/)"
printf '%-28s %8s %6s\n' step seconds exit
failed=0
for i in "${!names[@]}"; do
    printf '%-28s %8s %6s\n' "${names[$i]}" "${secs[$i]}" "${codes[$i]}"
    [ "${codes[$i]}" -eq 0 ] || failed=$((failed + 1))
done
[ "$failed" -eq 0 ] || { echo "bench: $failed step(s) failed"; exit 1; }
