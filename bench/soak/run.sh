#!/usr/bin/env bash
# Soak (issue 50 item 4): a mix of real programs under `tiermem run`, side by side, for
# DURATION seconds, while every program's DRAM budget changes every second (`tiermem
# budget`, drawn from 10..100 %, 8M/32M/128M and unlimited) and is read back from its
# stats. Every output and every value is checked:
#
#   threads  tests/c/alloc_race.c: 4 threads mixing mmap/munmap, calloc/free, realloc
#            growth and small blocks, every byte checked ("ok N ops")
#   fork     tiermem-stress: threads + fork (the child checks every page) + mremap +
#            madvise + mlock + a pipe, every page checked word by word ("mismatches=0")
#   server   redis-server loaded by tiermem-kvload (4 connections, GET/SET, every value
#            read compared with what was set: bad=0, misses=0), then shut down cleanly
#   interp   Debian's python3 (bench/soak/interp.py): 2 threads rewriting a dict and a
#            list of bytearrays, each value checked against its version before each rewrite
#   budgets  bench/soak/budgets.py: every change answered, and shown by `tiermem stat`
#            within 3 s (for sizes, budget_bytes too)
#
# Also: no warn or fatal line in the runtime's log, nothing of tiermem's on the programs'
# stderr. Exit 0 only when all of that holds; prints one summary line and writes
# $OUT/summary.json.
#
# Env: DURATION (s, default 60), SEED (default: random, printed), OUT (default: a new
# directory under /tmp, removed on success unless KEEP=1), TIERMEM (the binary), BIN_DIR
# (where tiermem-stress, tiermem-kvload and the preload are; default target/release).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DURATION=${DURATION:-60}
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
REL=${BIN_DIR:-$ROOT/target/release}
T=${TIERMEM:-$REL/tiermem}
for f in "$T" "$REL/tiermem-stress" "$REL/tiermem-kvload" "$REL/libtiermem_preload.so"; do
    [[ -x $f || -f $f ]] || { echo "soak: $f missing: cargo build --release -p tiermem-cli -p tiermem-linux --bins -p tiermem-preload" >&2; exit 2; }
done
for p in cc redis-server redis-cli /usr/bin/python3; do
    command -v "$p" >/dev/null || { echo "soak: $p not installed (scripts/apt-packages.txt)" >&2; exit 2; }
done
[[ $DURATION =~ ^[0-9]+$ && $DURATION -ge 10 ]] || { echo "soak: DURATION=$DURATION: a whole number of seconds >= 10" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d /tmp/tiermem-soak.XXXXXX)}
mkdir -p "$OUT"
export TIERMEM_RUN_DIR=$OUT/run
mkdir -p -m 700 "$TIERMEM_RUN_DIR"
PIDS=()
cleanup() {
    for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
echo "soak: ${DURATION}s, seed $SEED, in $OUT"

cc -O2 -Wall -pthread -o "$OUT/alloc_race" crates/tiermem-linux/tests/c/alloc_race.c -lm || exit 1
PORT=$((20000 + SEED % 20000))
while (echo > /dev/tcp/127.0.0.1/$PORT) 2>/dev/null; do PORT=$((PORT + 1)); done

t0=$(date +%s)
TIERMEM_STATS_OUT=$OUT/alloc_race.stats.json "$T" run --dram-budget 50% -- "$OUT/alloc_race" 4 "$DURATION" "$SEED" >"$OUT/alloc_race.out" 2>"$OUT/alloc_race.err" &
A=$!; PIDS+=("$A")
TIERMEM_STATS_OUT=$OUT/stress.stats.json "$T" run --dram-budget 25% -- "$REL/tiermem-stress" --mb 48 --threads 3 --seconds "$DURATION" \
    --forks $((DURATION / 6 + 1)) --seed "$SEED" >"$OUT/stress.out" 2>"$OUT/stress.err" &
S=$!; PIDS+=("$S")
TIERMEM_STATS_OUT=$OUT/redis.stats.json "$T" run --dram-budget 50% -- redis-server --port "$PORT" --save "" --appendonly no \
    --logfile "$OUT/redis.log" >"$OUT/redis.out" 2>"$OUT/redis.err" &
R=$!; PIDS+=("$R")
TIERMEM_STATS_OUT=$OUT/interp.stats.json "$T" run --dram-budget 50% -- /usr/bin/python3 bench/soak/interp.py "$DURATION" "$SEED" 40000 \
    >"$OUT/interp.out" 2>"$OUT/interp.err" &
I=$!; PIDS+=("$I")
for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
"$REL/tiermem-kvload" --protocol redis --port "$PORT" --keys 12000 --value-size 2048 --fill \
    --duration-s "$((DURATION - 5))" --connections 4 --seed "$SEED" --out "$OUT/kvload.json" \
    >"$OUT/kvload.out" 2>"$OUT/kvload.err" &
K=$!; PIDS+=("$K")
/usr/bin/python3 bench/soak/budgets.py "$T" "$OUT/budgets.json" "$SEED" \
    alloc_race=$A stress=$S redis=$R interp=$I >"$OUT/budgets.out" 2>&1 &
B=$!; PIDS+=("$B")

fail=()
wait "$K"; rc=$?
[[ $rc -eq 0 ]] || fail+=("kvload exit $rc: $(tail -c 300 "$OUT/kvload.err")")
redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1
for n in A S R I; do
    wait "${!n}"; rc=$?
    eval "rc_$n=$rc"
done
wait "$B"; rc_B=$?
wall=$(( $(date +%s) - t0 ))

[[ $rc_A -eq 0 ]] && grep -q '^ok ' "$OUT/alloc_race.out" || fail+=("alloc_race exit $rc_A: $(tail -c 300 "$OUT/alloc_race.out" "$OUT/alloc_race.err")")
[[ $rc_S -eq 0 ]] && grep -q 'mismatches=0' "$OUT/stress.out" || fail+=("stress exit $rc_S: $(tail -c 300 "$OUT/stress.out" "$OUT/stress.err")")
[[ $rc_R -eq 0 ]] || fail+=("redis exit $rc_R: $(tail -c 300 "$OUT/redis.err")")
[[ $rc_I -eq 0 ]] && grep -q '^ok ' "$OUT/interp.out" || fail+=("interp exit $rc_I: $(tail -c 300 "$OUT/interp.out" "$OUT/interp.err")")
[[ $rc_B -eq 0 ]] || fail+=("budgets: $(cat "$OUT/budgets.out")")
kv=$(/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['ops'], d['gets'], d['bad'], d['misses'])" "$OUT/kvload.json" 2>/dev/null)
read -r kv_ops kv_gets kv_bad kv_misses <<<"${kv:-0 0 -1 -1}"
[[ $kv_bad == 0 && $kv_misses == 0 ]] || fail+=("kvload: bad=$kv_bad misses=$kv_misses")
# The runtime's own reports: any warn or fatal line in the log, any tiermem line on stderr.
problems=$(grep -hE '^[^ ]+ (warn|fatal) ' "$TIERMEM_RUN_DIR"/log* 2>/dev/null | head -5)
[[ -z $problems ]] || fail+=("runtime log: $problems")
onerr=$(grep -h 'tiermem\[' "$OUT"/*.err 2>/dev/null | head -5)
[[ -z $onerr ]] || fail+=("on a program's stderr: $onerr")

# Each program was tiered (its final stats: tier faults), else it proves nothing.
faults=$(/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
out = {}
for n in ("alloc_race", "stress", "redis", "interp"):
    try:
        s = json.load(open(f"{sys.argv[1]}/{n}.stats.json"))
        out[n] = sum(t["faults"] for t in s["tiers"])
    except (OSError, ValueError, KeyError):
        out[n] = -1
print(json.dumps(out))
PY
)
for n in alloc_race stress redis interp; do
    f=$(/usr/bin/python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$faults" "$n")
    [[ $f -gt 0 ]] || fail+=("$n: no tier fault in its final stats ($f): it was not tiered")
done
read -r changes verified mismatches < <(/usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['changes'], d['verified'], d['mismatches'])" "$OUT/budgets.json" 2>/dev/null || echo "0 0 -1")
/usr/bin/python3 - "$OUT/summary.json" <<EOF
import json, sys
json.dump({"duration_s": $DURATION, "wall_s": $wall, "seed": $SEED,
           "alloc_race": open("$OUT/alloc_race.out").read().strip(),
           "stress": open("$OUT/stress.out").read().strip(),
           "interp": open("$OUT/interp.out").read().strip(),
           "kvload": {"ops": $kv_ops, "gets": $kv_gets, "bad": $kv_bad, "misses": $kv_misses},
           "tier_faults": $faults,
           "budget_changes": $changes, "budget_verified": $verified, "budget_mismatches": $mismatches,
           "failures": $(/usr/bin/python3 -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${fail[@]}")},
          open(sys.argv[1], "w"), indent=1)
EOF
echo "soak: ${wall}s; alloc_race: $(head -1 "$OUT/alloc_race.out"); stress: $(grep -o 'tier_faults=[0-9]*, mismatches=[0-9]*' "$OUT/stress.out"); interp: $(head -1 "$OUT/interp.out"); redis: $kv_ops ops, $kv_gets gets, bad $kv_bad, misses $kv_misses; budgets: $changes changes, $verified read back, $mismatches mismatches; tier faults $faults"
trap - EXIT
if [[ ${#fail[@]} -gt 0 ]]; then
    echo "soak: FAILED (kept $OUT):" >&2
    printf '  %s\n' "${fail[@]}" >&2
    exit 1
fi
echo "soak: ok, 0 mismatches"
[[ ${KEEP:-0} == 1 ]] || rm -rf "$OUT"
