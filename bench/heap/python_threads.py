# The 8-thread Python program of issue 10: dicts of bytearrays built concurrently, then
# hashed. It crashed (SIGSEGV in libpython) in 3 runs of 10 under a budget before the fix.
# Used by bench/heap/python_threads.sh and crates/tiermem-linux/tests/alloc_race.rs.
import threading, hashlib
res = [None]*8
def work(k):
    d = {}
    for i in range(300000): d[i] = bytearray((str(i*k)*20).encode())
    res[k] = hashlib.sha256(b''.join(d[i] for i in range(0, 300000, 7))).hexdigest()
ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(res)
