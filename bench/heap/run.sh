#!/usr/bin/env bash
# Heap coverage benchmark (called by `make bench`, or `make bench BENCH=heap`): how much of
# real programs' memory (perl hash, awk arrays, sort, xz, 8-thread python, numpy) tiermem's
# DRAM budget covers, and what it costs. Each program runs plain and under
# `tiermem run --dram-budget 100%/50%/25%`, interleaved, same generated inputs; peak
# RssAnon, DRAM (RssAnon minus pools), managed share, tier faults, resident/budget and
# wall time are sampled every 50 ms. Outputs are compared with the plain run (sha256 of
# stdout): a mismatch, a non-zero exit or a timeout is printed as FAIL and makes the
# exit status 1. Writes bench/heap/results.md.
#
# Env: QUICK=1 inputs a quarter the size; ONLY=perl,awk,... a subset (sort, xz, python,
# numpy); REPS=N repeats the plain/100/50/25 sequence (row = median wall time);
# HEAP_BENCH_TRACE=DIR writes each run's samples as CSV there.
# Uses the existing target/release binaries (copied at the start: others may rebuild);
# builds them only if missing.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
if [[ ! -x target/release/tiermem || ! -f target/release/libtiermem_preload.so ]]; then
    cargo build -q --release -p tiermem-cli -p tiermem-preload || exit 1
fi
PY=python3
[[ -x $ROOT/.venv/bin/python ]] && PY=$ROOT/.venv/bin/python
ARGS=(--out "$ROOT/bench/heap/results.md" --reps "${REPS:-1}")
[[ -n ${QUICK:-} && ${QUICK:-0} != 0 ]] && ARGS+=(--quick)
[[ -n ${ONLY:-} ]] && ARGS+=(--only "$ONLY")
exec "$PY" "$ROOT/bench/heap/heap_bench.py" "${ARGS[@]}"
