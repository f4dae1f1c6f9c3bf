# Node 0 with memory and CPU 0, node 1 with CPU 1 and no memory. See numa_guest.rs.
. /test-common.sh
result nodes "$(cat /sys/devices/system/node/online)"
result memory_nodes "$(cat /sys/devices/system/node/has_memory)"
bad_node memless '[[runtime.tiers]]
kind = "node"
name = "m"
node = 1'
# The same refusal from attach (its config check is the runtime's).
sleep 30 &
printf '[runtime]\n[[runtime.tiers]]\nname = "dram"\nkind = "dram"\n[[runtime.tiers]]\nname = "m"\nkind = "node"\nnode = 1\n' > /tmp/m.toml
tiermem attach $! --config /tmp/m.toml > /dev/null 2> /tmp/attach.err
result attach_memless_rc "$?"
result attach_memless_msg "$(head -1 /tmp/attach.err)"
