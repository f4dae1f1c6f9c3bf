"""Fill memcached with N text values (JSON-like records, compressible like real cache
contents), or read them all back and verify: python3 mc_fill.py PORT set|get N"""
import hashlib, socket, sys

port, mode, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rwb")


def val(i):
    h = hashlib.md5(b"%d" % i).hexdigest()
    rec = b'{"id":%d,"user":"user%07d","tags":["a%s","b%s"],"score":%d,"bio":"%s"}' % (
        i, i % 9999991, h[:6].encode(), h[6:12].encode(), i * 7 % 1000, (b"lorem ipsum dolor sit amet " * 8))
    return rec * (1 + i % 5)


bad = 0
if mode == "set":
    for i in range(n):
        v = val(i)
        f.write(b"set rec:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
        if i % 1000 == 0:
            f.flush()
    f.write(b"version\r\n")
    f.flush()
    f.readline()
else:
    for i in range(0, n, 100):
        f.write(b"get " + b" ".join(b"rec:%d" % j for j in range(i, min(n, i + 100))) + b"\r\n")
        f.flush()
        got = {}
        while True:
            line = f.readline()
            if line == b"END\r\n":
                break
            _, k, _, ln = line.split()
            got[k] = f.read(int(ln) + 2)[:-2]
        bad += sum(got.get(b"rec:%d" % j) != val(j) for j in range(i, min(n, i + 100)))
    print("verified", n, "bad", bad)
sys.exit(1 if bad else 0)
