#!/usr/bin/env bash
# Linux runtime benchmarks (called by `make bench`). Prints one table per benchmark and
# writes bench/runtime/results.md. Everything runs side by side in one go, on this machine.
#
#   1. fault latency per codec: tiermem-touch reads one word of every page of 64 MiB after
#      the pages were pushed out of DRAM (tiermem: budget 4 MiB; zswap: cgroup limit),
#      timing every access (the program's view: fault + service + return).
#   2. eviction throughput: fill 256 MiB under an unlimited budget, then `tiermem budget
#      PID 8M`; pages moved / seconds until resident <= budget.
#   3. memcached + memcaslap: throughput and memory (DRAM + pools) at 100/50/25 % of the
#      footprint, plain, and zswap (lzo, swap file) under a cgroup-v1 limit equal to the
#      budget. Swap, zswap and cgroup settings are restored on exit, also on failure.
#   4. idle CPU of tiermem's threads.
#
# Env: QUICK=1 shortens everything; FAULT_LATENCY_ONLY=1 stops after the fault-latency table; SKIP_ZSWAP=1 skips the kernel baseline; REPS=N runs of
# the lz4/zswap fault-latency rows (default 3); BASE=DIR [BASE_LABEL=TEXT] adds "before"
# rows from an earlier build's release dir (tiermem, tiermem-touch, libtiermem_preload.so).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/bench/runtime/results.md
# FAULT_LATENCY_ONLY=1 writes its one table to its own page, not over the full results.
[[ ${FAULT_LATENCY_ONLY:-0} == 1 ]] && OUT=$ROOT/bench/runtime/fault-latency.md
cargo build -q --release -p tiermem-cli -p tiermem-linux --bins || exit 1
cargo build -q --release -p tiermem-preload || exit 1   # the cdylib (--bins skips it)
T=$ROOT/target/release/tiermem
TOUCH=$ROOT/target/release/tiermem-touch
DUR=${QUICK:+3s}; DUR=${DUR:-10s}
WORK=$(mktemp -d /tmp/tiermem-bench.XXXXXX)   # 0700, unpredictable name
# The programs' control directories (stats.json) go in our private work directory.
export TIERMEM_RUN_DIR=$WORK/run
mkdir -m 700 "$TIERMEM_RUN_DIR"
PIDS=()
source bench/lib/kernel-swap.sh   # the zswap baseline: KSWAP_CG, kswap_setup, kswap_restore
CG=$KSWAP_CG

cleanup() {
    for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${PIDS[@]:-}"; do [[ -n $p ]] && kill -9 "$p" 2>/dev/null; done
    kswap_restore
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

note() { echo "$*" | tee -a "$OUT"; }
: > "$OUT"
note "# Linux runtime benchmarks ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, kernel $(uname -r))"
note ""
# A VM guest's idle vCPUs halt at once when guest halt-polling is off, which makes every
# cross-CPU wakeup (the userfaultfd round trip has one) slow; see docs/runtime.md.
HALTPOLL=/sys/module/haltpoll/parameters/guest_halt_poll_ns
[[ -r $HALTPOLL ]] && { note "Guest halt-polling: guest_halt_poll_ns = $(cat $HALTPOLL) (cpuidle driver $(cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null))."; note ""; }

json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

zswap_setup() {
    [[ ${SKIP_ZSWAP:-0} == 1 ]] && return 1
    kswap_setup lzo || { note "(kernel baseline skipped: $KSWAP_WHY)"; return 1; }
}

# ---------------------------------------------------------------- 1. fault latency
# BASE=DIR (a release dir of an earlier build: tiermem, tiermem-touch, libtiermem_preload.so)
# adds "before" rows measured in the same run, interleaved with the current build.
MB=${QUICK:+32}; MB=${MB:-64}
REPS=${REPS:-3}
LAT=$WORK/lat.txt; : > "$LAT"
# $1 = label, $2 = release dir, $3 = codec, $4... = more `tiermem run` flags
touch_tm() {
    local st=$WORK/touch.json line label=$1 dir=$2 codec=$3
    shift 3
    rm -f "$st"
    line=$(TIERMEM_PRELOAD=$dir/libtiermem_preload.so TIERMEM_STATS_OUT=$st "$dir/tiermem" run --dram-budget 4M --codec "$codec" "$@" -- "$dir/tiermem-touch" --mb $MB --settle-ms 2500)
    [[ $line == *checksum_ok=true* ]] || note "  ($label: CHECKSUM FAILED)"
    echo "$label|$line|$(json "$st" "d['tiers'][0]['fault_p50_ns']")|$(json "$st" "d['tiers'][0]['fault_p99_ns']")|$(json "$st" "'%.2fx' % (d['tiers'][0]['stored_bytes'] / max(1, d['tiers'][0]['compressed_bytes']))")" >> "$LAT"
}
HAVE_ZSWAP=0; zswap_setup && HAVE_ZSWAP=1
for rep in $(seq $REPS); do
    [[ -n ${BASE:-} ]] && touch_tm "tiermem lz4 (before: ${BASE_LABEL:-BASE})" "$BASE" lz4
    touch_tm "tiermem lz4" "$ROOT/target/release" lz4
    # The fault-serving design before per-CPU fault threads, in the same run.
    touch_tm "tiermem lz4, one fault thread" "$ROOT/target/release" lz4 --fault-threads one
    if [[ $HAVE_ZSWAP == 1 ]]; then
        # vm.page-cluster: this machine's default (3) = swap readahead of up to 8 pages per
        # fault; 0 = one page per fault, like tiermem. Restored on exit.
        for pc in $KSWAP_OLD_PAGE_CLUSTER 0; do
            echo $pc > /proc/sys/vm/page-cluster
            echo "zswap lzo (swap-in, page-cluster=$pc)|$(kswap_in_cgroup $((4 << 20)) "$TOUCH" --mb $MB --settle-ms 2500)|-|-|-" >> "$LAT"
        done
        # A tier the kernel serves (issue 46, design not yet in the runtime): the pages of a
        # userfaultfd-registered region handed to zswap with MADV_PAGEOUT come back by the
        # kernel's own swap-in (no userfaultfd message). bench/runtime/kswap_probe.c.
        echo 0 > /proc/sys/vm/page-cluster
        [[ -x $WORK/kswap_probe ]] || cc -O2 -pthread -o "$WORK/kswap_probe" bench/runtime/kswap_probe.c
        echo "kernel-served tier: MADV_PAGEOUT of a uffd region to zswap (probe)|$("$WORK/kswap_probe" $MB)|-|-|-" >> "$LAT"
        echo "$KSWAP_OLD_PAGE_CLUSTER" > /proc/sys/vm/page-cluster
    fi
    if [[ $rep == 1 ]]; then
        for codec in zstd:1 deflate:1 lzo; do touch_tm "tiermem $codec" "$ROOT/target/release" $codec; done
    fi
done
note "## Fault latency: touch one word of every page of $MB MiB pushed out of DRAM (program's view)"
note ""
note "Random order; tiermem budget 4 MiB (each fault also makes room: the manager evicts"
note "concurrently), zswap under a 4 MiB cgroup-v1 limit. lz4 and zswap rows: median over $REPS"
note "interleaved runs (p99 range in brackets); this machine is shared and noisy. Service ="
note "the handler's time from reading the fault message to the installed page (with per-CPU"
note "fault threads it also holds the time the woken program runs before the handler finishes)."
note ""
note "| tier | p50 | p99 | mean | service p50 (handler) | service p99 | ratio | runs |"
note "|---|---|---|---|---|---|---|---|"
python3 - "$LAT" <<'PY' | tee -a "$OUT"
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    label, touch, s50, s99, ratio = line.rstrip("\n").split("|")
    m = dict(re.findall(r"(\w+)=(\S+)", touch))
    rows.setdefault(label, []).append((int(m.get("p50_ns", 0)), int(m.get("p99_ns", 0)), int(m.get("mean_ns", 0)), s50, s99, ratio))
us = lambda ns: "%.1f us" % (ns / 1000)
for label, rs in rows.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    p99s = sorted(r[1] for r in rs)
    rng = " [%s-%s]" % (us(p99s[0]), us(p99s[-1])) if len(rs) > 1 else ""
    svc = [r for r in rs if r[3] != "-"]
    s50 = us(statistics.median(int(r[3]) for r in svc)) if svc else "-"
    s99 = us(statistics.median(int(r[4]) for r in svc)) if svc else "-"
    print("| %s | %s | %s%s | %s | %s | %s | %s | %d |" % (label, us(med(0)), us(med(1)), rng, us(med(2)), s50, s99, rs[-1][5], len(rs)))
PY
note ""
# FAULT_LATENCY_ONLY=1: this table alone (a few minutes), e.g. to compare fault designs.
[[ ${FAULT_LATENCY_ONLY:-0} == 1 ]] && exit 0

# ---------------------------------------------------------------- 2. eviction throughput
note "## Eviction throughput (lz4, zsmalloc)"
note ""
EMB=${QUICK:+128}; EMB=${EMB:-256}
"$T" run --dram-budget unlimited -- python3 -c "
import time
b = [bytearray((b'tiermem-%d ' % i) * 400000) for i in range($EMB * 1024 * 1024 // 4800000 + 1)]
time.sleep(30)
" & EP=$!; PIDS+=($EP)
for _ in $(seq 100); do [[ -f $TIERMEM_RUN_DIR/$EP/stats.json ]] && break; sleep 0.1; done
sleep 2
before=$(json $TIERMEM_RUN_DIR/$EP/stats.json "d['tiers'][0]['migrations_in']")
t0=$(date +%s.%N)
"$T" budget $EP 8M >/dev/null
while :; do
    r=$(json $TIERMEM_RUN_DIR/$EP/stats.json "d['resident_bytes']")
    (( r <= 8 << 20 )) && break
    sleep 0.05
done
t1=$(date +%s.%N)
after=$(json $TIERMEM_RUN_DIR/$EP/stats.json "d['tiers'][0]['migrations_in']")
kill $EP 2>/dev/null; wait $EP 2>/dev/null
note "evicted $((after - before)) pages in $(python3 -c "print('%.2f' % ($t1 - $t0))") s: $(python3 -c "print(int(($after - $before) / ($t1 - $t0)))") pages/s (includes up to 250 ms stats-publication lag)"
note ""

# ---------------------------------------------------------------- 3. memcached
NREC=${QUICK:+150000}; NREC=${NREC:-400000}
note "## memcached + memcaslap"
note ""
note "Two data sets. *text*: $NREC JSON-like records (mc_fill.py, ~1 KiB-2.5 KiB, compressible like real"
note "cache contents), then memcaslap's mixed load (90 % get / 10 % set, 16 conns, $DUR) on top."
note "*random*: memcaslap's own values only (random bytes: incompressible; tiermem keeps such"
note "pages in DRAM by design, max_compressed). Memory = RSS of memcached (for tiermem it"
note "includes the pools, which live in the process) + the zswap pool for zswap. All values read"
note "back and verified after each text run. zswap: its pool is charged to the cgroup (kernel 6.x),"
note "so the limit covers DRAM + pool there, while tiermem's budget covers DRAM only. zswap runs"
note "use vm.page-cluster=0 (no swap readahead): with the default (3) the readahead refills the"
note "cgroup faster than reclaim empties it and memcached is OOM-killed during the fill at a 50 %"
note "limit (memory.oom_control showed under_oom with 50 MiB in swap). A run whose memcached is"
note "OOM-killed anyway shows 0 ops/s and 'OOM-killed'."
note ""
note "| data | setup | ops/s | vs plain | RSS | zswap pool | total | saved vs plain | verify |"
note "|---|---|---|---|---|---|---|---|---|"
if ! command -v memcached >/dev/null || ! command -v memcaslap >/dev/null; then
    note "(memcached/memcaslap not installed: apt-get install memcached libmemcached-tools)"
else
    PORT=$((20000 + RANDOM % 20000))
    printf 'key\n64 64 1\nvalue\n1024 4096 1\ncmd\n0 1.0\n' > $WORK/fill.cfg
    rss() { awk '/VmRSS/ {print $2 * 1024}' /proc/$1/status 2>/dev/null || echo 0; }
    fmt() { python3 -c "print('%.1f MiB' % (${1:-0} / 1048576))"; }
    pct() { python3 -c "print('%.0f %%' % (100.0 * ${1:-0} / max(1, ${2:-1})))"; }
    wait_port() { for _ in $(seq 200); do (echo > /dev/tcp/127.0.0.1/$1) 2>/dev/null && return 0; sleep 0.05; done; return 1; }
    slap() { memcaslap -s 127.0.0.1:$PORT -t $DUR -c 16 -T 2 2>/dev/null | awk '/TPS:/ {for(i=1;i<=NF;i++) if($i=="TPS:") t=$(i+1)} END {print t+0}'; }
    # $1 = data (text|random), $2 = label, rest = how to start memcached (prefix)
    one() {
        local data=$1 label=$2; shift 2
        "$@" memcached -l 127.0.0.1 -p $PORT -m 2048 -t 2 -U 0 -u root & MC=$!; PIDS+=($MC)
        wait_port $PORT || { note "| $data | $label | (did not start) |"; return; }
        [[ $label == zswap* ]] && echo 0 > /proc/sys/vm/page-cluster
        local ver=-
        if [[ $data == text ]]; then
            timeout 300 python3 bench/runtime/mc_fill.py $PORT set $NREC
        else
            timeout 300 memcaslap -s 127.0.0.1:$PORT -x $((NREC / 2)) -c 8 -T 2 --cfg_cmd=$WORK/fill.cfg >/dev/null 2>&1
        fi
        sleep 2
        local ops; ops=$(slap)
        sleep 1
        local r; r=$(rss $MC)
        local zp=0
        [[ $label == zswap* ]] && zp=$(awk '/^Zswap:/ {print $2 * 1024}' /proc/meminfo)
        if [[ $data == text ]]; then
            ver=$(timeout 300 python3 bench/runtime/mc_fill.py $PORT get $NREC | sed 's/verified //') || ver="FAILED: $ver"
        fi
        [[ $label == plain ]] && { PLAIN_OPS=$ops; PLAIN_MEM=$r; }
        if ! kill -0 $MC 2>/dev/null; then
            local why="died"
            [[ $label == zswap* ]] && grep -q "oom_kill [1-9]" "$CG/memory.oom_control" 2>/dev/null && why="OOM-killed"
            note "| $data | $label | 0 | 0 % | - | - | - | - | FAILED: memcached $why |"
            wait $MC 2>/dev/null; PORT=$((PORT + 1)); echo "$KSWAP_OLD_PAGE_CLUSTER" > /proc/sys/vm/page-cluster
            return
        fi
        local tot=$((r + zp))
        note "| $data | $label | $ops | $(pct $ops $PLAIN_OPS) | $(fmt $r) | $(fmt $zp) | $(fmt $tot) | $(python3 -c "print('%.0f %%' % (100.0 * (1 - $tot / max(1, $PLAIN_MEM))))") | $ver |"
        kill $MC 2>/dev/null; sleep 0.3; kill -9 $MC 2>/dev/null; wait $MC 2>/dev/null
        echo "$KSWAP_OLD_PAGE_CLUSTER" > /proc/sys/vm/page-cluster
        PORT=$((PORT + 1))
    }
    for data in text random; do
        one $data plain
        for p in 100 50 25; do
            one $data "tiermem lz4 $p %" "$T" run --dram-budget $p% --
            [[ $p == 50 && -n ${BASE:-} ]] && one $data "tiermem lz4 $p % (before: ${BASE_LABEL:-BASE})" env TIERMEM_PRELOAD=$BASE/libtiermem_preload.so "$BASE/tiermem" run --dram-budget $p% --
        done
        if zswap_setup; then
            for p in 50 25; do
                rmdir "$CG" 2>/dev/null; mkdir -p "$CG"   # fresh oom_kill counter
                echo $((PLAIN_MEM * p / 100)) > "$CG/memory.limit_in_bytes"
                one $data "zswap lzo, cgroup $p %" sh -c "echo \$\$ > $CG/cgroup.procs && exec \"\$@\"" sh
            done
        fi
    done
fi
note ""

# ---------------------------------------------------------------- 4. idle CPU
note "## tiermem's own CPU while the program idles (10 s, 128 MiB managed, budget 50 %)"
"$T" run --dram-budget 50% -- python3 -c "
import time
b = [bytearray(b'x' * (1 << 20)) for _ in range(128)]
time.sleep(14)
" & IP=$!; PIDS+=($IP)
sleep 3
c0=$(json $TIERMEM_RUN_DIR/$IP/stats.json "d['cpu_s']"); sleep 10
c1=$(json $TIERMEM_RUN_DIR/$IP/stats.json "d['cpu_s']")
wait $IP 2>/dev/null
note "idle: $(python3 -c "print('%.2f %% of one core' % (($c1 - $c0) / 10 * 100))")"
echo
echo "results written to $OUT"
