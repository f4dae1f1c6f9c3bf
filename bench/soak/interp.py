"""The soak's interpreter workload: two threads keep a dict of byte strings and a list of
bytearrays, each value derived from (key, version); the versions are kept in a list of the
same process (managed memory too). Every step reads a value back and compares it with what
it must be, then rewrites it at the next version; every few seconds a full pass checks all.
Any difference: a line naming the key, exit 1. At the end: one line `ok CHECKS checks`.

usage: interp.py SECONDS SEED [KEYS]
"""

import hashlib
import random
import sys
import threading
import time


def value(key: int, version: int) -> bytes:
    # ~1 KiB, compressible (repeated digest text) and different for every (key, version).
    d = hashlib.sha256(b"%d:%d" % (key, version)).hexdigest().encode()
    return d * 16


def main() -> int:
    seconds, seed = float(sys.argv[1]), int(sys.argv[2])
    keys = int(sys.argv[3]) if len(sys.argv) > 3 else 60000
    version = [1] * keys
    table = {k: value(k, 1) for k in range(keys)}
    blocks = [bytearray(value(k, 1)) for k in range(keys // 4)]
    checks = [0, 0]
    bad = []
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def worker(w: int) -> None:
        rng = random.Random(seed * 2 + w)
        mine = range(w, keys, 2)  # each thread owns half the keys: exact expectations
        next_full = time.monotonic() + 5
        while time.monotonic() < stop and not bad:
            for _ in range(200):
                k = rng.choice(mine)
                v = version[k]
                if table[k] != value(k, v):
                    bad.append(f"table[{k}] is not version {v}")
                    return
                if k < len(blocks) and bytes(blocks[k]) != value(k, v):
                    bad.append(f"blocks[{k}] is not version {v}")
                    return
                version[k] = v + 1
                table[k] = value(k, v + 1)
                if k < len(blocks):
                    blocks[k][:] = value(k, v + 1)
                checks[w] += 1
            if time.monotonic() >= next_full:
                next_full = time.monotonic() + 5
                with lock:  # one full pass at a time (they read the other thread's keys too)
                    for k in mine:
                        if table[k] != value(k, version[k]):
                            bad.append(f"full pass: table[{k}] is not version {version[k]}")
                            return
                        checks[w] += 1

    threads = [threading.Thread(target=worker, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if not bad:
        for k in range(keys):
            if table[k] != value(k, version[k]) or (k < len(blocks) and bytes(blocks[k]) != value(k, version[k])):
                bad.append(f"final pass: key {k} is not version {version[k]}")
                break
            checks[0] += 1
    if bad:
        print("MISMATCH", bad[0], flush=True)
        return 1
    print(f"ok {sum(checks)} checks", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
