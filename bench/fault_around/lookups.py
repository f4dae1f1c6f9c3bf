# A random key-value program: a dict of argv[1] entries, two threads rewriting random
# values, then argv[2] random lookups. Prints a checksum of what it read and holds.
import random
import sys
import threading

n = int(sys.argv[1])
d = {i: ("v%d" % i) * 8 for i in range(n)}


def writer(seed):
    r = random.Random(seed)
    for _ in range(n // 6):
        k = r.randrange(n)
        d[k] = ("w%d" % k) * 8


ts = [threading.Thread(target=writer, args=(s,)) for s in (1, 2)]
for t in ts:
    t.start()
for t in ts:
    t.join()
r = random.Random(3)
s = sum(len(d[r.randrange(n)]) for _ in range(int(sys.argv[2])))
print(s, sum(len(v) for v in d.values()))
