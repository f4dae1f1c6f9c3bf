#!/usr/bin/env bash
# End-to-end simulator cost (issue "Colloid at full breadth", item 5): `tiermem sim` on
# Colloid's GUPS base (experiments/colloid/gups-base.toml) under HeMem, whole runs
# including the policy, at growing footprints. Prints a markdown table: simulated
# accesses per second per core (throughput x duration / accesses_per_sample, each standing
# for accesses_per_sample operations, over the simulation's own wall time), the process's
# wall time and peak RSS, and the pages each run migrated. GUPS is stationary: every
# simulated access advances the PEBS counter, and only the ones it samples are drawn
# (skip-ahead, docs/simulator.md).
#
#   bench/sim/end_to_end.sh            fig1's run (2 MiB pages, 60 s) and 4 KiB pages at
#                                      1 GiB, 64 GiB, 512 GiB (5 s) and 1 TiB (60 s)
#   bench/sim/end_to_end.sh 1GiB       only the named footprints (fig1 always runs)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-target/release/tiermem}
BASE=experiments/colloid/gups-base.toml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# footprint -> simulated seconds (the issue's sizes: 512 GiB for 5 s, 1 TiB for 60 s).
declare -A DURATION=([1GiB]=5 [64GiB]=5 [512GiB]=5 [1TiB]=60)
sizes=("$@")
[ "${#sizes[@]}" -gt 0 ] || sizes=(1GiB 64GiB 512GiB 1TiB)

gib() { # gib SIZE: the size in GiB
    case $1 in *TiB) echo $(( ${1%TiB} * 1024 ));; *GiB) echo "${1%GiB}";; *) echo "bad size $1" >&2; exit 2;; esac
}

# config SIZE: the base with its footprint, hot set and tiers scaled by SIZE/72 GiB
# (the base's ratios: hot set 1/3, local tier 32/72, remote 96/72), 4 KiB pages.
config() {
    local g; g=$(gib "$1")
    awk -v g="$g" -v d="${DURATION[$1]}" '
        function sz(x) { return sprintf("\"%dMiB\"", x * 1024 + 0.5) }
        /^duration_s/  { print "duration_s = " d; next }
        /^page_size/   { print "page_size = \"4KiB\""; next }
        /capacity = "32GiB"/ { print "capacity = " sz(g * 32 / 72); next }
        /capacity = "96GiB"/ { print "capacity = " sz(g * 96 / 72); next }
        /^working_set/ { print "working_set = " sz(g); next }
        /^hot_set/     { print "hot_set = " sz(g / 3); next }
        { print }' "$BASE"
}

row() { # row NAME CONFIG
    local out="$work/$1"
    /usr/bin/time -f "%e %M" -o "$work/time" "$BIN" sim "$2" --out "$out" >/dev/null
    read -r wall rss_kb <"$work/time"
    python3 - "$1" "$out/summary.json" "$2" "$wall" "$rss_kb" <<'EOF'
import json, sys, tomllib
name, summary, config, wall, rss_kb = sys.argv[1:]
s = json.load(open(summary))
cfg = tomllib.load(open(config, "rb"))
ops = s["steady_state"]["throughput_ops_per_s"] * s["duration_s"]
samples = ops / cfg["accesses_per_sample"]
sim_wall = s["wall_time_s"]
print(f"| {name} | {cfg['machine']['page_size']} | {s['duration_s']:.0f} | {samples / sim_wall / 1e6:.1f} "
      f"| {sim_wall:.2f} | {float(wall):.2f} | {int(rss_kb) / 1048576:.2f} "
      f"| {s['counters']['applied']['pages_applied']} |")
EOF
}

echo "| run | page | simulated s | M accesses/s/core (simulation) | simulation s | process wall s | peak RSS GiB | pages migrated |"
echo "|---|---|---|---|---|---|---|---|"
row "fig1 HeMem GUPS, 72 GiB" "$BASE"
for s in "${sizes[@]}"; do
    [ -n "${DURATION[$s]:-}" ] || { echo "end_to_end.sh: unknown footprint $s (1GiB 64GiB 512GiB 1TiB)" >&2; exit 2; }
    config "$s" >"$work/$s.toml"
    row "HeMem GUPS, $s" "$work/$s.toml"
done
