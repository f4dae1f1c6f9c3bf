# 3 memory nodes: node 0 DRAM (CPUs), node 1 CXL-like (250 ns), node 2 slower (400 ns).
# See numa_guest.rs for what is asserted.
. /test-common.sh
result nodes "$(cat /sys/devices/system/node/online)"
result memory_nodes "$(cat /sys/devices/system/node/has_memory)"
result hmat_node1_read_latency "$(hmat 1)"
result hmat_node2_read_latency "$(hmat 2)"
make_input
result sort_plain "$(sort /tmp/in.txt | md5sum | cut -d' ' -f1)"

# DRAM, the CXL-like node, the slower node, and a compressed tier whose pool lives on the
# slower node (a compressed tier on slower media).
# Per-node latency from the probe (a pointer chase per memory node), not HMAT.
cat > /tmp/three.toml <<'TOML'
[runtime]
dram_budget = "25%"
telemetry = "probe"
[[runtime.tiers]]
name = "dram"
kind = "dram"
[[runtime.tiers]]
name = "cxl"
kind = "node"
node = 1
[[runtime.tiers]]
name = "slow"
kind = "node"
node = 2
[[runtime.tiers]]
name = "lz4"
kind = "compressed"
backing = "slow"
TOML
placement_check hemem_colloid /tmp/three.toml hemem+colloid "1 2"
result probe_cpu_share "$(json_num probe_cpu_share < /tmp/stat.json)"
result probe_stat_line "$(grep -c 'latency probe:' /tmp/stat.txt)"
result dram_latency_ns "$(json_num dram_latency_ns < /tmp/stat.json)"
# The 2-node guest runs every policy; here the ones that cascade across several tiers.
for p in budget hemem+colloid tpp memtis+colloid; do
    result "sort_three_$p" "$(tiermem run --config /tmp/three.toml --policy $p -- sort /tmp/in.txt | md5sum | cut -d' ' -f1)"
done
bad_input_checks 2
attach_check 25%
attach_sort_check
