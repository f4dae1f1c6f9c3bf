#!/usr/bin/env bash
# tiermem qos on real programs (called by `make bench`): Redis (latency-sensitive,
# priority 2) beside a memory-streaming Python job (throughput, priority 1), sharing
# 384 MiB of DRAM (examples/qos/redis-stream.toml), under each MODE:
#   mercury  tiermem qos: Mercury's admission control and adaptation
#   even     tiermem qos --mode even: the same DRAM split equally and statically
#   kernel   no tiermem: both programs in one cgroup-v1 memory limit of 384 MiB with zswap
#            (lzo: this kernel's zswap has no lz4) below: the kernel's one LRU over the pair
#            (its pool is charged to the limit). Swap, zswap and page-cluster are restored on exit, also on failure.
# tiermem-kvload drives Redis (Gaussian keys, sigma KEY_SD of the key space, 1:10 SET:GET,
# every value checked) while the stream job hashes its 300 MiB pass after pass (every
# pass's digest checked against a plain run's). Writes bench/qos/results.md. qos's own
# cgroups are removed by it (checked here).
#
# Env: LOAD_S (default 30; QUICK=1: 12), MODES (default "mercury even kernel"),
#      PORT (6391, as in the example config), KEY_SD (0.3), KEEP=1 keeps the work dir.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
cargo build -q --release -p tiermem-cli -p tiermem-linux --bins || exit 1
cargo build -q --release -p tiermem-preload || exit 1
T=$ROOT/target/release/tiermem
KV=$ROOT/target/release/tiermem-kvload
LOAD_S=${LOAD_S:-${QUICK:+12}}; LOAD_S=${LOAD_S:-30}
MODES=${MODES:-mercury even kernel}
PORT=${PORT:-6391}
KEY_SD=${KEY_SD:-0.3}
CFG=$ROOT/examples/qos/redis-stream.toml
WORK=$(mktemp -d /tmp/tiermem-qos-bench.XXXXXX)
export TIERMEM_RUN_DIR=$WORK/run
mkdir -m 700 "$TIERMEM_RUN_DIR"
QOS_PID=
source bench/lib/kernel-swap.sh
cleanup() {
    [[ -n $QOS_PID ]] && kill "$QOS_PID" 2>/dev/null && wait "$QOS_PID" 2>/dev/null
    kswap_restore
    if [[ -n ${KEEP:-} ]]; then echo "bench/qos: kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT INT TERM
command -v redis-server >/dev/null || { echo "bench/qos: redis-server missing (scripts/install-deps.sh installs it)"; exit 1; }
if redis-cli -p "$PORT" ping >/dev/null 2>&1; then
    echo "bench/qos: port $PORT is in use; set PORT and edit $CFG"; exit 1
fi
# The stream job's digest without tiermem, to check every tiered pass against.
REF=$(python3 examples/qos/stream.py 300 1 | sed 's/.*digest //')
DRAM=$((384 << 20))
# The kernel baseline: the config's two commands, each in the cgroup.
kernel_pair() {
    kswap_setup lzo || { echo "bench/qos: kernel baseline skipped: $KSWAP_WHY"; return 1; }
    echo "$DRAM" > "$KSWAP_CG/memory.limit_in_bytes"
    mkdir -p "$WORK/kernel"
    python3 - "$CFG" >"$WORK/kernel.cmds" <<'PY'
import shlex, sys, tomllib
for t in tomllib.load(open(sys.argv[1], "rb"))["tenants"]:
    print(shlex.join(t["command"]))
PY
    sh -c 'echo $$ > '"$KSWAP_CG"'/cgroup.procs; while read -r c; do eval "$c" & done <"$1"; wait' sh "$WORK/kernel.cmds" \
        >"$WORK/kernel.out" 2>"$WORK/kernel.err" &
    QOS_PID=$!
}
for MODE in $MODES; do
    OUT=$WORK/$MODE
    if [[ $MODE == kernel ]]; then
        kernel_pair || continue
    else
        "$T" qos --config "$CFG" --mode "$MODE" --duration $((LOAD_S + 10)) --out "$OUT" \
            >"$WORK/$MODE.out" 2>"$WORK/$MODE.err" &
        QOS_PID=$!
    fi
    for _ in $(seq 100); do redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
    "$KV" --protocol redis --port "$PORT" --keys 200000 --value-size 1024 --key-stddev "$KEY_SD" --fill \
        --duration-s "$LOAD_S" --out "$WORK/$MODE-kv.json" >/dev/null 2>"$WORK/$MODE-kv.err"
    echo "kvload exit $?" >>"$WORK/$MODE-kv.err"
    if [[ $MODE == kernel ]]; then
        # SIGTERM to both programs (the stream job prints its passes), then the cgroup goes.
        grep -E '^(rss|swap) ' "$KSWAP_CG/memory.stat" >"$WORK/kernel.memstat" 2>/dev/null
        for p in $(cat "$KSWAP_CG/cgroup.procs"); do kill "$p" 2>/dev/null; done
        for _ in $(seq 100); do [[ -z $(cat "$KSWAP_CG/cgroup.procs") ]] && break; sleep 0.1; done
    fi
    wait "$QOS_PID"; echo "exit $?" >>"$WORK/$MODE.err"; QOS_PID=
    ls -d /sys/fs/cgroup/cpu/tiermem-qos.* 2>/dev/null && echo "bench/qos: cgroup left behind!"
done
python3 - "$WORK" "$REF" "$LOAD_S" $MODES <<'PY'
import json, pathlib, re, sys
work, ref, load_s, modes = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:]
rows = []
for m in modes:
    if not (work / f"{m}-kv.json").exists():
        continue
    kv = json.loads((work / f"{m}-kv.json").read_text())
    if m == "kernel":
        t = {"redis": None, "stream": None}
    else:
        s = json.loads((work / m / "summary.json").read_text())
        t = {x["tenant"]: x for x in s["tenants"]}
    out = (work / f"{m}.out").read_text()
    st = re.search(r"stream: (\d+) passes of \d+ MiB, digest (\w+)", out)
    passes, digest = (int(st[1]), st[2]) if st else (0, None)
    rows.append((m, t["redis"], t["stream"], kv, passes, digest == ref))
lines = [
    "# tiermem qos: Redis (LS, 20ms/s, priority 2) beside a streaming job (BI, 0.3cpu, priority 1)",
    "",
    f"`bash bench/qos/run.sh` (LOAD_S={load_s}); 384 MiB of DRAM shared, lz4 tier below;"
    " examples/qos/redis-stream.toml. Redis's SLO: at most 20 ms stalled on tier faults per"
    " second it is active; the stream's: at least 0.3 CPU seconds per second of progress."
    " SLO met = share of 100 ms samples that met it (while the tenant was active).",
    "",
    "| mode | redis SLO met | redis stall ms/s (mean) | redis DRAM at end | kvload ops/s | p99 us | p99.9 us | values bad or missing | stream SLO met | stream cpu/s (mean) | stream CPU share at end | stream passes | digests ok |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]
na = "- (no tiermem)"
for m, r, st, kv, passes, ok in rows:
    lines.append(
        f"| {m} | {r['slo_met_share']*100:.0f} % | {r['measured_mean']:.1f} | {r['final_dram_limit_bytes']/2**20:.0f} MiB"
        if r else f"| {m} | {na} | {na} | {na}"
    )
    lines[-1] += (
        f" | {kv['ops_per_s']:.0f} | {kv['p99_us']:.0f} | {kv['p999_us']:.0f} | {kv['bad'] + kv['misses']}"
        + (f" | {st['slo_met_share']*100:.0f} % | {st['measured_mean']:.2f} | {st['final_cpu_share']:.2f}" if st else f" | {na} | {na} | {na}")
        + f" | {passes} | {'yes' if ok else 'NO'} |"
    )
text = "\n".join(lines) + "\n"
print(text)
pathlib.Path("bench/qos/results.md").write_text(text)
PY
