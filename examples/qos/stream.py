"""A streaming batch job for `tiermem qos` (examples/qos/redis-stream.toml): fills MB MiB,
then hashes all of it pass after pass until SIGTERM (or PASSES passes) and checks that
every pass gives the same digest. Each 4 KiB page starts with its own index, so a page
lost, swapped or zeroed by a memory manager changes the digest.

    python3 stream.py MB [PASSES]     prints "stream: N passes of MB MiB, digest D"; exit 1
                                      on a mismatch
"""

import hashlib
import signal
import sys

PAGE = 4096


def main() -> int:
    mb = int(sys.argv[1])
    passes = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    body = bytes((i * 7) & 0xFF for i in range(PAGE - 8))
    buf = bytearray(mb << 20)
    for i in range(len(buf) // PAGE):
        buf[i * PAGE : (i + 1) * PAGE] = i.to_bytes(8, "little") + body
    ref = None
    done = 0
    while not stop and (passes == 0 or done < passes):
        d = hashlib.blake2b(buf).hexdigest()
        if ref is None:
            ref = d
        elif d != ref:
            print(f"stream: pass {done}: digest {d} != {ref}", flush=True)
            return 1
        done += 1
    print(f"stream: {done} passes of {mb} MiB, digest {ref}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
