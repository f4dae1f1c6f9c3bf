#!/usr/bin/env bash
# The Linux runtime in one minute: run a real program (python3 building a large structure)
# under `tiermem run` with a DRAM budget of 25 % of its footprint, show its live tier
# statistics while it runs, then check its result is the same as a plain run.
#
#   scripts/runtime-demo.sh            (called by `make demo`)
set -euo pipefail
cd "$(dirname "$0")/.."
# Prefer the release build (`make setup` makes it); build it if missing.
if [[ -z ${TIERMEM:-} ]]; then
    TIERMEM=target/release/tiermem
    [[ -x $TIERMEM && -f target/release/libtiermem_preload.so ]] || cargo build -q --release -p tiermem-cli -p tiermem-preload
fi
PROG='
import hashlib, time
# ~150 MiB of Python objects: a dict of strings and a list of lists, then hash it twice.
d = {i: ("key%d-" % i) * 8 for i in range(600000)}
rows = [list(range(i, i + 40)) for i in range(150000)]
for rnd in range(2):
    h = hashlib.sha256()
    for k in range(0, len(d), 7):
        h.update(d[k].encode())
    for r in rows[::5]:
        h.update(bytes(str(r), "ascii"))
    time.sleep(1.5)
print("result", h.hexdigest()[:16])
'
echo "== plain run"
python3 -c "$PROG" | tee /tmp/tiermem-demo-plain.txt
echo
echo "== the same program under: tiermem run --dram-budget 25% -- python3 ..."
"$TIERMEM" run --dram-budget 25% -- python3 -c "$PROG" > /tmp/tiermem-demo-tiered.txt &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for i in 1 2 3 4 5 6; do
    sleep 1.5
    kill -0 $PID 2>/dev/null || break
    echo "-- tiermem stat $PID  (t=$((i * 3 / 2))s)"
    "$TIERMEM" stat $PID || true
done
wait $PID
trap - EXIT
cat /tmp/tiermem-demo-tiered.txt
if cmp -s /tmp/tiermem-demo-plain.txt /tmp/tiermem-demo-tiered.txt; then
    echo "== identical output with 25% of its memory in DRAM, the rest in an lz4 compressed tier"
else
    echo "== OUTPUT DIFFERS"; exit 1
fi
