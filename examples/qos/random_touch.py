"""A latency-sensitive stand-in for `tiermem qos` tests: fills MB MiB (each 4 KiB page
starts with its own index), then reads random pages for SECONDS and checks each one's
index. Prints "random_touch: N reads ok"; exit 1 on a page that lost its data.

    python3 random_touch.py MB SECONDS
"""

import random
import sys
import time

PAGE = 4096


def main() -> int:
    mb, seconds = int(sys.argv[1]), float(sys.argv[2])
    pages = (mb << 20) // PAGE
    buf = bytearray(mb << 20)
    for i in range(pages):
        buf[i * PAGE : i * PAGE + 8] = i.to_bytes(8, "little")
    rng = random.Random(1)
    reads = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for _ in range(1000):
            i = rng.randrange(pages)
            if int.from_bytes(buf[i * PAGE : i * PAGE + 8], "little") != i:
                print(f"random_touch: page {i} lost its data", flush=True)
                return 1
        reads += 1000
    print(f"random_touch: {reads} reads ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
