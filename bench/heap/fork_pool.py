# Reproduces a known hang (not yet fixed): a fork-based multiprocessing Pool under a DRAM
# budget with small blocks in mimalloc. `tiermem run --dram-budget 50% -- python3 THIS` hangs
# (parent thread in handle_userfault, tiermem-fault and tiermem-mgr spinning); it completes
# with --dram-budget unlimited or TIERMEM_SMALL_ALLOC=glibc. Present since issue 10 (3ee3a06).
import hashlib
import multiprocessing as mp
import os
import signal

got = []
signal.signal(signal.SIGUSR1, lambda *a: got.append(1))
data = [bytearray(bytes([i % 251]) * 4096 * (i % 7 + 1)) for i in range(20000)]
def work(k):
    return hashlib.sha256(b"".join(bytes(d) for d in data[k::4])).hexdigest()
os.kill(os.getpid(), signal.SIGUSR1)
with mp.get_context("fork").Pool(4) as p:
    print(p.map(work, range(4)))
print(len(got), hashlib.sha256(b"".join(bytes(d) for d in data)).hexdigest())
