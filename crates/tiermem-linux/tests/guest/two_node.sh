# 2 nodes: node 0 DRAM with the CPUs, node 1 CPU-less (CXL-like). See numa_guest.rs.
. /test-common.sh
result nodes "$(cat /sys/devices/system/node/online)"
result node1_cpus "$(cat /sys/devices/system/node/node1/cpulist)"
result hmat_node0_read_latency "$(hmat 0)"
result hmat_node1_read_latency "$(hmat 1)"
make_input
result sort_plain "$(sort /tmp/in.txt | md5sum | cut -d' ' -f1)"
result sort_compressed "$(tiermem run --dram-budget 50% -- sort /tmp/in.txt | md5sum | cut -d' ' -f1)"
