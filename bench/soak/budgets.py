"""The soak's budget changer: every second, a new DRAM budget for each managed program
(`tiermem budget PID B`, B drawn from sizes, shares and unlimited), then read back with
`tiermem stat PID --json` until the runtime publishes it (at most 3 s): the budget it shows
must be the one the budget command answered, and for a size, `budget_bytes` its bytes.

usage: budgets.py TIERMEM OUT.json SEED NAME=PID...   (runs until every PID has exited)
Writes {changes, verified, mismatches, gone, errors: [...]} to OUT.json; exit 1 on any
mismatch or error.
"""

import json
import random
import re
import subprocess
import sys
import threading
import time

CHOICES = ["10%", "25%", "50%", "75%", "100%", "8M", "32M", "128M", "unlimited"]
UNLIMITED = 2**63 - 1


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def main() -> int:
    tiermem, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    progs = [(a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[4:]]
    res = {"changes": 0, "verified": 0, "mismatches": 0, "gone": 0, "errors": []}
    lock = threading.Lock()

    def err(msg: str, mismatch: bool = False) -> None:
        with lock:
            res["errors"].append(msg)
            if mismatch:
                res["mismatches"] += 1

    def changer(name: str, pid: int, rng: random.Random) -> None:
        while alive(pid):
            t0 = time.monotonic()
            b = rng.choice(CHOICES)
            r = subprocess.run([tiermem, "budget", str(pid), b], capture_output=True, text=True)
            if r.returncode != 0:
                if not alive(pid):
                    break
                err(f"{name}: tiermem budget {pid} {b}: {r.stderr.strip()}")
                time.sleep(1)
                continue
            m = re.match(r"pid \d+: DRAM budget .* -> (.*?)(?: \((\d+) bytes\)| \(unlimited\))?$", r.stdout.strip())
            if not m:
                err(f"{name}: unexpected answer to budget {b}: {r.stdout.strip()!r}")
                continue
            shown, nbytes = m.group(1), m.group(2)
            with lock:
                res["changes"] += 1
            deadline = time.monotonic() + 3
            while True:
                s = subprocess.run([tiermem, "stat", str(pid), "--json"], capture_output=True, text=True)
                if s.returncode != 0 or not alive(pid):
                    if not alive(pid):
                        with lock:
                            res["gone"] += 1
                        return
                    st = None
                else:
                    st = json.loads(s.stdout)
                ok = st is not None and st["budget"] == shown
                if ok and nbytes is not None and b[-1] in "MG":
                    ok = st["budget_bytes"] == int(nbytes)
                if ok and b == "unlimited":
                    ok = st["budget_bytes"] == UNLIMITED
                if ok:
                    with lock:
                        res["verified"] += 1
                    break
                if time.monotonic() > deadline:
                    got = None if st is None else (st["budget"], st["budget_bytes"])
                    err(f"{name}: budget {b} answered {shown!r} ({nbytes} bytes), stats show {got}", True)
                    break
                time.sleep(0.1)
            time.sleep(max(0.0, 1 - (time.monotonic() - t0)))

    ts = [threading.Thread(target=changer, args=(n, p, random.Random(seed + i))) for i, (n, p) in enumerate(progs)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"budgets: {res['changes']} changes, {res['verified']} read back and verified, "
          f"{res['mismatches']} mismatches, {len(res['errors'])} errors")
    for e in res["errors"][:10]:
        print("  ", e)
    return 1 if res["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
