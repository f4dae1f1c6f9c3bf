# Helpers sourced by the guest scripts (busybox sh). RESULT lines are what the host asserts.
result() { echo "RESULT $*"; }

# The sort job's input: 200 000 hex words (about 1.4 MB; sort holds it in one large buffer).
make_input() {
    head -c 200000 /dev/urandom | od -An -tx1 -v | tr -s ' ' '\n' | grep -v '^$' > /tmp/in.txt
}

# HMAT as the guest kernel exports it (node N's latency from the CPUs of node 0).
hmat() {
    f=/sys/devices/system/node/node$1/access0/initiators/read_latency
    [ -r "$f" ] && cat "$f" || echo none
}
