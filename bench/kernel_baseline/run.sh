#!/usr/bin/env bash
# Kernel baseline (issue 46, called by `make bench`): real programs nobody here wrote
# (CPython, perl, gawk, sqlite3, GNU sort, a JVM, node.js) and two of ours (hot10.c: 1 GiB of
# which 10 % is hot; churn.c: 8-thread mmap/calloc/realloc churn), each side by side:
#
#   plain; `tiermem run $TIERMEM_FLAGS -- PROG` (the default mode: no --dram-budget);
#   `tiermem run --dram-budget unlimited -- PROG` (churn; every program with UNLIMITED=1);
#   zswap (lzo, swap file) with PROG in a cgroup-v1 memory cgroup limited to the tiermem
#   run's peak anonymous memory (DRAM + its pools, which live in the process), so both use
#   the same memory.
#
# Wall time, peak memory, output identical to plain (sha256 of stdout), tier faults /
# swap-ins; then the median slowdowns, the largest, memory saved per program, hot10's cold
# memory saved and churn's unlimited overhead. Writes bench/kernel_baseline/results.md
# (embedded in docs/results.md by `make docs-results`). Exit status 1 if a tiermem run
# fails or its output differs from plain (zswap OOM-killed at that memory is a result).
#
# Env: QUICK=1 small inputs (the whole harness in ~2-3 minutes; a smoke test); REPS=N runs
# of each sequence (rows: the median wall time); ONLY=python,perl,gawk,sqlite,sort,java,node,
# hot10,churn a subset; TIERMEM_FLAGS="--slo stall=1%" extra flags of the default-mode row;
# UNLIMITED=1 adds the unlimited row to every program; SKIP_ZSWAP=1 drops the zswap rows;
# OUT=FILE.md writes the report (and FILE.json, the raw runs) elsewhere; PAGE_CLUSTER=N sets
# vm.page-cluster for the run (zswap's swap readahead); ZSWAP_LIMIT=rss limits the zswap
# cgroup to the tiermem run's peak RSS instead of its peak RssAnon (DRAM + pools; the
# default: file pages such as shared libraries are charged to whoever read them first, not
# to the cgroup, so an RSS limit would give zswap that much more memory); ZSWAP_LIMIT=mean
# to its mean RssAnon over the run (stricter than tiermem had it: a cap from the start).
# Uses the existing target/release binaries (copied at the start: others may rebuild);
# builds them only if missing. TIERMEM_RELEASE=DIR takes tiermem and libtiermem_preload.so
# from another build's release directory instead (TIERMEM_LABEL=TEXT names it in
# results.md). Swap file, zswap, cgroup and vm.page-cluster are restored on exit, also on
# failure or interrupt (bench/lib/kernel-swap.sh). Needs root for the zswap rows.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
HERE=$ROOT/bench/kernel_baseline
REL=${TIERMEM_RELEASE:-$ROOT/target/release}
if [[ -z ${TIERMEM_RELEASE:-} && ( ! -x $REL/tiermem || ! -f $REL/libtiermem_preload.so ) ]]; then
    cargo build -q --release -p tiermem-cli -p tiermem-preload || exit 1
fi
WORK=$(mktemp -d /tmp/tiermem-kb.XXXXXX)   # 0700, unpredictable name
export TIERMEM_RUN_DIR=$WORK/run
mkdir -m 700 "$TIERMEM_RUN_DIR"
mkdir "$WORK/bin"
source bench/lib/kernel-swap.sh   # KSWAP_CG, kswap_setup, kswap_restore

KB=
cleanup() {
    # The driver kills the program it is running when it gets TERM (by its process group).
    [[ -n $KB ]] && { kill -TERM "$KB" 2>/dev/null; wait "$KB" 2>/dev/null; }
    kswap_restore
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM   # the EXIT trap stops the driver and restores

cp "$REL/tiermem" "$REL/libtiermem_preload.so" "$WORK/bin/" || exit 1
cc -O2 -Wall -o "$WORK/bin/hot10" "$HERE/hot10.c" || exit 1
cc -O2 -Wall -pthread -o "$WORK/bin/churn" "$HERE/churn.c" -lm || exit 1

ARGS=(--out "${OUT:-$HERE/results.md}" --work "$WORK" --tiermem "$WORK/bin/tiermem"
      --preload "$WORK/bin/libtiermem_preload.so" --hot10 "$WORK/bin/hot10" --churn "$WORK/bin/churn"
      --reps "${REPS:-1}" --flags "${TIERMEM_FLAGS:-}")
# Which build ran (TIERMEM_LABEL=TEXT overrides): the commit, and whether crates/ had changes.
LABEL=${TIERMEM_LABEL:-"$REL (tiermem built $(date -u -r "$REL/tiermem" +%FT%TZ)) at $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- crates 2>/dev/null || echo ', crates/ modified')"}
ARGS+=(--build "$LABEL")
[[ ${QUICK:-0} != 0 ]] && ARGS+=(--quick)
[[ -n ${ONLY:-} ]] && ARGS+=(--only "$ONLY")
[[ ${UNLIMITED:-0} != 0 ]] && ARGS+=(--unlimited)
[[ -n ${ZSWAP_LIMIT:-} ]] && ARGS+=(--zswap-limit "$ZSWAP_LIMIT")
if [[ ${SKIP_ZSWAP:-0} == 1 ]]; then
    ARGS+=(--zswap-why "SKIP_ZSWAP=1")
elif kswap_setup lzo; then
    ARGS+=(--cgroup "$KSWAP_CG")
else
    ARGS+=(--zswap-why "$KSWAP_WHY")
fi
# PAGE_CLUSTER=N: vm.page-cluster for the zswap rows (default: the machine's, here
# $KSWAP_OLD_PAGE_CLUSTER = up to 2^N pages of swap readahead per fault); restored on exit.
if [[ -n ${PAGE_CLUSTER:-} ]]; then
    echo "$PAGE_CLUSTER" > /proc/sys/vm/page-cluster || exit 1
fi
ARGS+=(--page-cluster "$(cat /proc/sys/vm/page-cluster)")
PY=python3
[[ -x $ROOT/.venv/bin/python ]] && PY=$ROOT/.venv/bin/python
# In the background so that a TERM or INT reaches the traps at once (bash runs a trap only
# after its foreground command ends).
"$PY" "$HERE/kb.py" "${ARGS[@]}" & KB=$!
wait "$KB"; rc=$?
KB=
exit $rc
