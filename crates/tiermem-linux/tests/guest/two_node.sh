# 2 nodes: node 0 DRAM with the CPUs, node 1 CPU-less (CXL-like, HMAT 250 ns). See
# numa_guest.rs for what is asserted.
. /test-common.sh
result nodes "$(cat /sys/devices/system/node/online)"
result node1_cpus "$(cat /sys/devices/system/node/node1/cpulist)"
result hmat_node0_read_latency "$(hmat 0)"
result hmat_node1_read_latency "$(hmat 1)"
make_input
result sort_plain "$(sort /tmp/in.txt | md5sum | cut -d' ' -f1)"
result sort_compressed "$(tiermem run --dram-budget 50% -- sort /tmp/in.txt | md5sum | cut -d' ' -f1)"

# DRAM + the CXL-like node + a compressed tier, in one run.
cat > /tmp/cxl.toml <<'TOML'
[runtime]
dram_budget = "25%"
[[runtime.tiers]]
name = "dram"
kind = "dram"
[[runtime.tiers]]
name = "cxl"
kind = "node"
node = 1
[[runtime.tiers]]
name = "lz4"
kind = "compressed"
TOML
placement_check budget /tmp/cxl.toml budget 1
placement_check hemem_colloid /tmp/cxl.toml hemem+colloid 1
sort_all_policies cxl /tmp/cxl.toml
bad_input_checks 1
stress_all_policies cxl /tmp/cxl.toml
