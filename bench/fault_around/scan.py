# A sequential program: a buffer of text-like bytes (MiB from argv[1]) hashed argv[2]
# times, a few bytes rewritten between passes. Prints the last digest.
import hashlib
import sys

n = int(sys.argv[1]) << 20
line = b"".join(b"key%08d value %s\n" % (i, b"abcdefghij"[i % 10:] * 3) for i in range(4096))
buf = bytearray(line * (n // len(line) + 1))[:n]
for r in range(int(sys.argv[2])):
    for i in range(r, n, 4096 * 7):
        buf[i] = (buf[i] + r) % 256
    h = hashlib.sha256(buf).hexdigest()
print(h, len(buf))
