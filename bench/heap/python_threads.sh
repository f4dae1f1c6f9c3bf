#!/usr/bin/env bash
# The 8-thread Python program of issue 10 (dicts of bytearrays; crashed 3 runs in 10 under a
# budget before the fix), RUNS times at each budget, output compared with a plain run.
# Uses the project venv's interpreter (linked to a shared libpython) when there is one.
#   bash bench/heap/python_threads.sh [RUNS]      (default 50; prints "N of RUNS identical")
set -uo pipefail
cd "$(dirname "$0")/../.."
RUNS=${1:-50}
PY=.venv/bin/python; [ -x "$PY" ] || PY=python3
T=target/release/tiermem
PROG=bench/heap/python_threads.py
want=$("$PY" "$PROG" | sha256sum)
rc=0
for b in 50% 25%; do
    ok=0
    for _ in $(seq "$RUNS"); do
        got=$(timeout 300 "$T" run --dram-budget "$b" -- "$PY" "$PROG" 2>/dev/null | sha256sum)
        [ "$got" == "$want" ] && ok=$((ok + 1))
    done
    echo "budget $b: $ok of $RUNS identical"
    [ "$ok" -eq "$RUNS" ] || rc=1
done
exit $rc
