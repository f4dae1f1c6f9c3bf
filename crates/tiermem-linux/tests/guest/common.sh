# Helpers sourced by the guest scripts (busybox sh). RESULT lines are what the host asserts.
result() { echo "RESULT $*"; }

# The sort job's input: 100 000 hex words (about 300 KB; sort's buffer is one large
# managed allocation).
make_input() {
    head -c 100000 /dev/urandom | od -An -tx1 -v | tr -s ' ' '\n' | grep -v '^$' > /tmp/in.txt
}

# HMAT as the guest kernel exports it (node N's latency from the CPUs of node 0).
hmat() {
    f=/sys/devices/system/node/node$1/access0/initiators/read_latency
    [ -r "$f" ] && cat "$f" || echo none
}

# A JSON number field of `tiermem stat --json` (no jq in the guest).
json_num() { grep -o "\"$1\": *[0-9.]*" | head -1 | sed 's/.*: *//'; }

# Anonymous pages of PID on node N, summed over /proc/PID/numa_maps (the kernel's view;
# file pages, e.g. the binaries in the initramfs, are left out).
numa_maps_pages() { grep -v 'file=' "/proc/$1/numa_maps" | grep -o " N$2=[0-9]*" | cut -d= -f2 | awk '{s+=$1} END {print s+0}'; }

# tiermem-touch (16 MiB, written then idle, then read back and checked) under CONFIG with
# POLICY; once it idles with its whole footprint managed, compare where the runtime says
# its pages are on each node of NODES (`tiermem stat`) with where the kernel has them
# (numa_maps), and the DRAM tier with the budget. Prints RESULT LABEL_* lines.
placement_check() {
    label=$1 config=$2 policy=$3 nodes=$4
    tiermem run --config "$config" --policy "$policy" -- tiermem-touch --mb 16 --settle-ms 6000 > /tmp/touch.out 2>&1 &
    pid=$!
    for _ in $(seq 40); do
        sleep 1
        tiermem stat "$pid" --json > /tmp/stat.json 2>/dev/null || continue
        [ "$(json_num footprint_bytes < /tmp/stat.json)" -ge $((16 << 20)) ] && break
    done
    sleep 2 # the policy's moves after the last write
    for n in $nodes; do eval "maps_$n=$(numa_maps_pages "$pid" "$n")"; done
    tiermem stat "$pid" --json > /tmp/stat.json
    tiermem stat "$pid" > /tmp/stat.txt
    for n in $nodes; do
        result "${label}_numa_maps_node${n}_pages" "$(eval echo "\$maps_$n")"
        result "${label}_stat_node${n}_pages" "$(grep -A4 "\"name\": \"[0-9]*:node$n\"" /tmp/stat.json | json_num pages)"
        result "${label}_node${n}_latency_ns" "$(grep -A12 "\"name\": \"[0-9]*:node$n\"" /tmp/stat.json | json_num latency_ns)"
        result "${label}_stat_table_node${n}" "$(grep -c ":node$n" /tmp/stat.txt)"
    done
    result "${label}_resident_bytes" "$(json_num resident_bytes < /tmp/stat.json)"
    result "${label}_budget_bytes" "$(json_num budget_bytes < /tmp/stat.json)"
    result "${label}_footprint_bytes" "$(json_num footprint_bytes < /tmp/stat.json)"
    wait "$pid"
    result "${label}_touch_rc" "$?"
    result "${label}_touch" "$(grep -o 'checksum_ok=[a-z]*' /tmp/touch.out)"
}

# A real program's output under CONFIG with every node-capable policy (RESULT
# sort_LABEL_POLICY md5), beside a plain run's (RESULT sort_plain md5).
sort_all_policies() {
    label=$1 config=$2
    for p in budget hemem tpp memtis hemem+colloid tpp+colloid memtis+colloid; do
        result "sort_${label}_$p" "$(tiermem run --config "$config" --policy $p -- sort /tmp/in.txt | md5sum | cut -d' ' -f1)"
    done
}

# Bad node input: one line on stderr, exit 2, the program never runs.
bad_node() {
    label=$1 tiers=$2
    printf '[runtime]\ndram_budget = "50%%"\n[[runtime.tiers]]\nname = "dram"\nkind = "dram"\n%s\n' "$tiers" > /tmp/bad.toml
    tiermem run --config /tmp/bad.toml -- sh -c 'echo RAN' > /tmp/bad.out 2> /tmp/bad.err
    result "bad_${label}_rc" "$?"
    result "bad_${label}_lines" "$(wc -l < /tmp/bad.err)"
    result "bad_${label}_ran" "$(grep -c RAN /tmp/bad.out)"
    result "bad_${label}_msg" "$(head -1 /tmp/bad.err)"
}

# bad_input_checks NODE: a node that does not exist, the DRAM node, NODE named twice.
bad_input_checks() {
    n='[[runtime.tiers]]
kind = "node"'
    bad_node missing_node "$n
name = \"n\"
node = 7"
    bad_node dram_node "$n
name = \"n\"
node = 0"
    bad_node twice "$n
name = \"a\"
node = $1
$n
name = \"b\"
node = $1"
}

# `tiermem attach` on a running process started without tiermem (no preload): tiermem-touch
# writes 16 MiB on node 0 and idles; attach with the default tiers (DRAM, then the other
# memory nodes nearest first) at BUDGET for 4 s, then detach. RESULT attach_* lines: pages
# per node before and after (numa_maps), the report, whether the process still runs, and
# its own check of every byte when it finishes.
attach_check() {
    budget=$1
    tiermem-touch --mb 16 --settle-ms 15000 > /tmp/atouch.out 2>&1 &
    pid=$!
    for _ in $(seq 30); do
        [ "$(numa_maps_pages "$pid" 0)" -ge 4096 ] && break
        sleep 1
    done
    result attach_before_node0_pages "$(numa_maps_pages "$pid" 0)"
    result attach_before_node1_pages "$(numa_maps_pages "$pid" 1)"
    tiermem attach "$pid" --dram-budget "$budget" --duration 4 --json > /tmp/attach.json 2> /tmp/attach.err
    result attach_rc "$?"
    result attach_err_lines "$(wc -l < /tmp/attach.err)"
    result attach_node0_pages "$(numa_maps_pages "$pid" 0)"
    result attach_node1_pages "$(numa_maps_pages "$pid" 1)"
    result attach_pages_moved "$(json_num pages_moved < /tmp/attach.json)"
    result attach_budget_bytes "$(json_num budget_bytes < /tmp/attach.json)"
    result attach_scans "$(json_num scans < /tmp/attach.json)"
    result attach_hotness "$(grep -o '"hotness": "[a-z -]*' /tmp/attach.json | cut -d'"' -f4)"
    result attach_detached_because "$(grep -o '"detached_because": "[a-z ]*' /tmp/attach.json | cut -d'"' -f4)"
    result attach_report "$(tr -d "\n " < /tmp/attach.json)"
    result attach_report_node1_pages "$(tr -d '\n ' < /tmp/attach.json | grep -o '\["node1",1,[0-9]*' | cut -d, -f3)"
    if kill -0 "$pid" 2>/dev/null; then result attach_alive yes; else result attach_alive no; fi
    wait "$pid"
    result attach_touch_rc "$?"
    result attach_touch "$(grep -o 'checksum_ok=[a-z]*' /tmp/atouch.out)"
    tiermem attach 2147483000 > /dev/null 2> /tmp/attach.err
    result attach_bad_pid_rc "$?"
    result attach_bad_pid_lines "$(wc -l < /tmp/attach.err)"
    result attach_bad_pid_msg "$(head -1 /tmp/attach.err)"
}

# The stress program (threads, fork, mremap, madvise, mlock, pipes; every page checked)
# under CONFIG with each node-capable policy: RESULT stress_LABEL_POLICY_rc (0 = no
# mismatch) and the pages its run moved to node 1 (the node tier's migrations_in in its
# final stats). 4 MiB: under emulation TPP's default scan (256 MiB per 100 ms) stages the
# whole heap every 100 ms and each staging is an emulated page move; with 16 MiB its run
# takes minutes (77 s with a 4 MiB scan), with 4 MiB about 12 s.
stress_all_policies() {
    label=$1 config=$2
    for p in budget hemem tpp memtis hemem+colloid tpp+colloid memtis+colloid; do
        TIERMEM_STATS_OUT=/tmp/stress-stats.json tiermem run --config "$config" --policy $p -- \
            /opt/tiermem/tiermem-stress --mb 4 --threads 2 --seconds 3 --forks 1 > /tmp/stress.out 2>&1
        result "stress_${label}_${p}_rc" "$?"
        result "stress_${label}_${p}_node1_in" "$(grep -A20 '"name": "[0-9]*:node1"' /tmp/stress-stats.json | json_num migrations_in)"
    done
}

# `tiermem attach` on a program whose memory changes while attached: GNU sort of a 3 MB
# input (reading, allocating its buffers, merging, freeing) started plain, attached at a
# 10 % budget until it exits. RESULT attach_sort_* : its output's md5 beside a plain run's,
# why attach detached, pages moved.
attach_sort_check() {
    head -c 1000000 /dev/urandom | od -An -tx1 -v | tr -s ' ' '\n' | grep -v '^$' > /tmp/big.txt
    result attach_sort_plain "$(sort /tmp/big.txt | md5sum | cut -d' ' -f1)"
    sort /tmp/big.txt > /tmp/sorted.txt &
    spid=$!
    tiermem attach "$spid" --dram-budget 10% --json > /tmp/attach-sort.json 2> /tmp/attach-sort.err
    result attach_sort_rc "$?"
    wait "$spid"
    result attach_sort_sort_rc "$?"
    result attach_sort_md5 "$(md5sum < /tmp/sorted.txt | cut -d' ' -f1)"
    result attach_sort_detached_because "$(grep -o '"detached_because": "[a-z ]*' /tmp/attach-sort.json | cut -d'"' -f4)"
    result attach_sort_pages_moved "$(json_num pages_moved < /tmp/attach-sort.json)"
    result attach_sort_scans "$(json_num scans < /tmp/attach-sort.json)"
    result attach_sort_err "$(head -1 /tmp/attach-sort.err)"
}
