#!/usr/bin/env bash
# Fault-around on the runtime (issue 14): tier faults, wall time and tiermem's CPU of real
# programs with different spatial locality, under `tiermem run --fault-around UNIT` for
# 4KiB / 64KiB / 2MiB / dynamic, side by side in one go; every output is checked against a
# plain run. Writes bench/fault_around/results.md.
#
#   scan     python hashing a 256 MiB buffer 4 times (sequential), budget 50 %
#   lookups  python: a 1 M-entry dict, writer threads, 1 M random lookups, budget 50 %
#            (static 2 MiB is left out: each random fault would decompress 512 pages)
#   sort     GNU sort of a 200 MiB text file held in memory (-S 400M), budget 50 %
#   redis    redis-server holding 50 000 values of 4 KiB (200 MiB), uniform-ish random GETs
#            and SETs from tiermem-kvload (every value read is verified), budget 50 %;
#            "wall s" is the timed phase's throughput instead (ops/s), "same" = no bad value
#
# Env: QUICK=1 shrinks the programs.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
cargo build -q --release -p tiermem-cli -p tiermem-preload -p tiermem-linux --bin tiermem-kvload || exit 1
KV=$ROOT/target/release/tiermem-kvload
T=$ROOT/target/release/tiermem
PY=${PYTHON:-/usr/bin/python3}
WORK=$(mktemp -d /tmp/tiermem-fa.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export TIERMEM_RUN_DIR=$WORK/run
mkdir -m 700 "$TIERMEM_RUN_DIR"
if [[ -n ${QUICK:-} ]]; then SCAN=(96 3); LOOK=(300000 300000); SORT_MB=48; KEYS=12000; KV_S=8
else SCAN=(256 4); LOOK=(1000000 1000000); SORT_MB=200; KEYS=50000; KV_S=20; fi
$PY - "$WORK/words.txt" "$SORT_MB" <<'PYEOF'
import random, sys
r = random.Random(5)
words = ["alpha", "beta", "gamma", "delta", "omega", "tier", "page", "fault", "memory", "swap"]
with open(sys.argv[1], "w") as f:
    size, target = 0, int(sys.argv[2]) << 20
    while size < target:
        line = " ".join(r.choice(words) for _ in range(6)) + " %d\n" % r.randrange(10**9)
        f.write(line)
        size += len(line)
PYEOF

ROWS=()
bench() {  # bench NAME BUDGET UNITS CMD...
    local name=$1 budget=$2 units=$3; shift 3
    local want; want=$("$@" | sha256sum)
    local u
    for u in $units; do
        local stats=$WORK/$name-$u.json t0 t1 got
        t0=$(date +%s.%N)
        got=$(TIERMEM_STATS_OUT=$stats "$T" run --dram-budget "$budget" --fault-around "$u" -- "$@" 2>"$WORK/err" | sha256sum)
        t1=$(date +%s.%N)
        local same=yes; [[ $got == "$want" ]] || same=NO
        ROWS+=("$($PY - "$stats" "$name" "$u" "$budget" "$same" "$t0" "$t1" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1]))
fa = s["fault_around"]
faults = sum(t["faults"] for t in s["tiers"])
byu = "/".join(str(x) for x in fa["faults_by_unit"])
peak = s["max_resident_bytes"] / 2**20
print(f"| {sys.argv[2]} | {sys.argv[3]} | {sys.argv[4]} | {faults} | {byu} | {fa['pages_around']} | {float(sys.argv[7]) - float(sys.argv[6]):.2f} | {s['cpu_s']:.2f} | {peak:.0f} | {sys.argv[5]} |")
PYEOF
)")
        echo "${ROWS[-1]}"
    done
}
# A server: tiered from its start, loaded by tiermem-kvload, stopped with SIGTERM.
wait_port() { for _ in $(seq 200); do (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
bench_redis() {  # bench_redis BUDGET UNITS
    local budget=$1 units=$2 u port=6390
    command -v redis-server >/dev/null || { echo "(redis-server not installed: row skipped)"; return; }
    for u in $units; do
        local stats=$WORK/redis-$u.json load=$WORK/kv-$u.json
        port=$((port + 1))
        TIERMEM_STATS_OUT=$stats "$T" run --dram-budget "$budget" --fault-around "$u" -- \
            redis-server --port $port --bind 127.0.0.1 --save "" --appendonly no >/dev/null 2>"$WORK/err" &
        local srv=$!
        wait_port $port || { echo "redis under $u did not start: $(tail -3 "$WORK/err")" >&2; kill "$srv"; return; }
        "$KV" --protocol redis --port $port --keys "$KEYS" --fill --duration-s "$KV_S" \
            --key-stddev 0.5 --out "$load" >/dev/null
        kill -TERM "$srv"; wait "$srv"
        ROWS+=("$($PY - "$stats" "$load" "$u" "$budget" <<'PYEOF'
import json, sys
s, kv = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
fa = s["fault_around"]
faults = sum(t["faults"] for t in s["tiers"])
byu = "/".join(str(x) for x in fa["faults_by_unit"])
same = "yes" if kv["bad"] == 0 and kv["misses"] == 0 else "NO"
peak = s["max_resident_bytes"] / 2**20
print(f"| redis | {sys.argv[3]} | {sys.argv[4]} | {faults} | {byu} | {fa['pages_around']} | {kv['ops_per_s']:.0f} ops/s, p99 {kv['p99_us']:.0f} µs | {s['cpu_s']:.2f} | {peak:.0f} | {same} |")
PYEOF
)")
        echo "${ROWS[-1]}"
    done
}

bench scan 50% "4KiB 64KiB 2MiB dynamic" $PY bench/fault_around/scan.py "${SCAN[@]}"
bench lookups 50% "4KiB 64KiB dynamic" $PY bench/fault_around/lookups.py "${LOOK[@]}"
bench sort 50% "4KiB 64KiB 2MiB dynamic" sort -S 400M "$WORK/words.txt"
bench_redis 50% "4KiB 64KiB dynamic"

{
    echo "# Fault-around on the runtime: measured"
    echo
    echo "Written by \`bench/fault_around/run.sh\` (\`make bench\`${QUICK:+, QUICK=1}) on $(nproc) CPU(s), $(date -u +%Y-%m-%d),"
    echo "load average $(cut -d' ' -f1-3 /proc/loadavg) at the end. One run per row, side by side;"
    echo "\"same\" compares the output with a plain run (redis: every value read back verified)."
    echo "Tier faults by unit: 4KiB/64KiB/2MiB. Redis's row gives the timed phase's throughput and p99"
    echo "latency in place of a wall time (${KEYS} values of 4 KiB, ${KV_S} s, GETs:SETs 10:1). Peak DRAM:"
    echo "the most managed memory resident at once (\`max_resident_bytes\`; the budget follows the footprint)."
    echo
    echo "| program | fault-around | budget | tier faults | by unit | pages brought beside | wall s | tiermem CPU s | peak DRAM MiB | same output |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
} >bench/fault_around/results.md
cat bench/fault_around/results.md
grep -q "| NO |" bench/fault_around/results.md && { echo "OUTPUT DIFFERS" >&2; exit 1; }
exit 0
