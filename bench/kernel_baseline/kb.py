#!/usr/bin/env python3
"""The runtime at the kernel's price: real programs plain, under tiermem's default mode, and
under the kernel's zswap at the same memory (issue 46, "Done when").

Driver of bench/kernel_baseline/run.sh (stdlib only; run.sh sets up the swap file, zswap and
the cgroup and restores them on exit). For each program, side by side in one run:

  plain                  the program alone
  tiermem                `tiermem run $TIERMEM_FLAGS -- PROGRAM` (no --dram-budget: the default
                         mode; TIERMEM_FLAGS adds flags, e.g. "--slo stall=1%")
  tiermem unlimited      `tiermem run --dram-budget unlimited -- PROGRAM` (churn always; every
                         program with UNLIMITED=1): what managing costs when nothing is evicted
  zswap                  zswap (lzo) in front of a swap file, the program in a cgroup-v1 memory
                         cgroup whose limit is the tiermem run's peak RSS (pools included:
                         they live in the process), so both get the same total memory

Wall time, peak memory (ru_maxrss of the program, descendants included; for zswap also the
cgroup's max_usage_in_bytes, which covers the zswap pool and page cache charged to it), the
sha256 of stdout against the plain run's, and tier faults (tiermem's final stats) or swap-ins
(/proc/vmstat zswpin + pswpin deltas: machine-wide, nothing else swaps here).

    kb.py --out bench/kernel_baseline/results.md --tiermem BIN --preload SO --work DIR
          [--quick] [--only python,perl,...] [--reps N] [--cgroup DIR]
    kb.py --render bench/kernel_baseline/results.json --out bench/kernel_baseline/results.md

The raw measurements go beside the report (results.json: every run, final tiermem stats
included); --render rewrites the report from them.
"""

import argparse
import hashlib
import json
import os
import platform
import random
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- inputs

def gen_words_text(path, vocab, words, seed=46):
    """`words` words, 12 a line, drawn uniformly from `vocab` distinct words (so every entry
    of a word-count table is touched over and over)."""
    rng = random.Random(seed)
    voc = []
    for i in range(vocab):
        h = hashlib.blake2b(i.to_bytes(4, "little"), digest_size=8).digest()
        n = 4 + h[0] % 7
        voc.append("".join("abcdefghijklmnopqrstuvwxyz"[b % 26] for b in h[1:]) [:n] + "%x" % (i % 4096))
    with open(path, "w") as f:
        left = words
        while left > 0:
            k = min(left, 12 * 40000)
            ws = rng.choices(voc, k=k)
            f.write("\n".join(" ".join(ws[j:j + 12]) for j in range(0, k, 12)))
            f.write("\n")
            left -= k


def gen_sort_input(path, mbytes, seed=46):
    """~mbytes MiB of unsorted text lines: a hex key, three words, a number."""
    rng = random.Random(seed)
    words = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
             "november oscar papa quebec romeo sierra tango uniform victor whiskey xray").split()
    target = mbytes * MiB
    size = 0
    with open(path, "w") as f:
        while size < target:
            lines = ["%012x %s %s %s %d\n" % (rng.getrandbits(48), rng.choice(words), rng.choice(words),
                                              rng.choice(words), rng.getrandbits(24)) for _ in range(20000)]
            s = "".join(lines)
            f.write(s)
            size += len(s)


# ----------------------------------------------------------------------------- programs

def write_file(path, text):
    with open(path, "w") as f:
        f.write(text)


PY_PROG = r"""
import hashlib, sys
N = int(sys.argv[1])
recs = [{"id": i, "name": "user%07d" % ((i * 7919) % N), "score": (i * 2654435761) % 1000003,
         "tags": ["t%d" % (i % 97), "g%d" % (i % 13)], "city": ("Oslo", "Lima", "Pune", "Kyiv")[i % 4]}
        for i in range(N)]
recs.sort(key=lambda r: (r["score"], r["name"]))
h = hashlib.sha256()
for r in recs[::7]:
    h.update(("%d %s %d %s\n" % (r["id"], r["name"], r["score"], r["tags"][0])).encode())
print(N, recs[0]["id"], recs[-1]["id"], h.hexdigest())
"""

PERL_PROG = ('my %%h; $h{"key$_"} = $_*3 for 1..%d; my ($n, $s) = (0, 0); '
             'while (my ($k, $v) = each %%h) { $n++; $s += $v } print "$n $s\\n";')

GAWK_PROG = ('{ for (i = 1; i <= NF; i++) c[$i]++ } END { n = 0; m = 0; t = 0; '
             'for (w in c) { n++; t += c[w]; if (c[w] > m) m = c[w] } print n, t, m, NR }')

SQLITE_SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT, n INTEGER);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n})
INSERT INTO t SELECT x, printf('key%08d', (x * 7919) % {n}),
    printf('%s-%d-%s-%s', hex((x * 2654435761) % 1000003), x % 977,
           substr('abcdefghijklmnopqrstuvwxyz', 1 + x % 20, 6), printf('%.3f', x / 7.0)),
    (x * 31337) % 100000 FROM c;
CREATE INDEX tk ON t(k);
CREATE INDEX tn ON t(n);
SELECT count(*), sum(n), count(DISTINCT k), sum(length(v)) FROM t;
SELECT n % 100, count(*), max(v), min(k) FROM t GROUP BY n % 100 ORDER BY 1 LIMIT 5;
SELECT count(*), sum(n) FROM t WHERE k BETWEEN 'key00100000' AND 'key00300000';
SELECT count(*) FROM t a JOIN t b ON a.n = b.id WHERE a.id % 10 = 0;
"""

JAVA_PROG = r"""
import java.util.*;
public class KbAlloc {
    public static void main(String[] args) {
        int n = Integer.parseInt(args[0]);
        HashMap<Integer, String> m = new HashMap<>();
        for (int i = 0; i < n; i++) m.put((int) ((i * 7919L) % n), "value-" + i + "-" + (i % 977));
        long[] a = new long[n];
        for (int i = 0; i < n; i++) a[i] = (i * 2654435761L) % 1000003L * 1000L + m.get(i).length();
        Arrays.sort(a);
        ArrayList<int[]> chunks = new ArrayList<>();
        for (int i = 0; i < n / 64; i++) { int[] c = new int[64]; c[i % 64] = i; chunks.add(c); }
        long s = 0;
        for (int i = 0; i < n; i += 7) s = (s * 31 + m.get(i).hashCode() + a[i]) % 1000000007L;
        for (int[] c : chunks) s = (s + c[0] + c[63]) % 1000000007L;
        System.out.println(n + " " + m.size() + " " + a[0] + " " + a[n - 1] + " " + s);
    }
}
"""

NODE_PROG = r"""
const n = +process.argv[2];
const m = new Map();
for (let i = 0; i < n; i++) m.set('k' + ((i * 7919) % n), { i, s: 'v' + i + '-' + (i % 977), t: [i % 7, i % 13] });
const arr = Array.from(m.values(), o => (o.i * 2654435761) % 1000003);
arr.sort((a, b) => a - b);
let s = 0;
for (let i = 0; i < n; i += 7) s = (s * 31 + m.get('k' + i).s.length + arr[i]) % 1000000007;
console.log(n, m.size, arr[0], arr[n - 1], s);
"""


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        lines = (out.stdout or out.stderr).strip().splitlines()
        return lines[0].strip() if lines else "?"
    except Exception as e:  # noqa: BLE001
        return "? (%s)" % e


def programs(quick, work, bins):
    """The programs: name, kind ("real" or "own"), what, cmd, gen (inputs) or None, need."""
    q = lambda full, small: small if quick else full  # noqa: E731
    w = lambda name: os.path.join(work, name)  # noqa: E731
    P = []

    py = shutil.which("python3", path="/usr/bin:/bin") or shutil.which("python3")
    n = q(1_000_000, 100_000)
    P.append(dict(name="python", kind="real", need=py,
                  what="CPython (%s): %d dict records built, sorted by (score, name), every 7th hashed" % (py, n),
                  cmd=[py, "-c", PY_PROG, str(n)], ver=[py, "--version"]))

    perl = shutil.which("perl")
    n = q(4_000_000, 400_000)
    P.append(dict(name="perl", kind="real", need=perl,
                  what="perl: a hash of %d keys (`$h{\"key$_\"} = $_*3`), counted and summed with `each`" % n,
                  cmd=[perl, "-e", PERL_PROG % n], ver=[perl, "-e", 'print "perl $^V\\n"']))

    gawk = shutil.which("gawk")
    vocab, words = q(200_000, 100_000), q(24_000_000, 3_000_000)
    txt = w("words.txt")
    P.append(dict(name="gawk", kind="real", need=gawk,
                  what="GNU awk word count (`c[$i]++`) of %d M words drawn uniformly from %d k distinct ones "
                       "(every entry of the table touched throughout)" % (words // 1_000_000, vocab // 1000),
                  cmd=[gawk, GAWK_PROG, txt], gen=lambda txt=txt, vocab=vocab, words=words: gen_words_text(txt, vocab, words),
                  ver=[gawk, "--version"]))

    sq = shutil.which("sqlite3")
    n = q(1_500_000, 300_000)
    sql = w("kb.sql")
    P.append(dict(name="sqlite", kind="real", need=sq,
                  what="sqlite3 `:memory:`: a table of %d rows built with a recursive CTE, two indexes, "
                       "aggregates, a range scan and a self-join" % n,
                  cmd=[sq, ":memory:", ".read " + sql],
                  gen=lambda sql=sql, n=n: write_file(sql, SQLITE_SQL.replace("{n}", str(n))),
                  ver=[sq, "--version"]))

    sort = shutil.which("sort")
    mb = q(250, 30)
    sin = w("sort.txt")
    P.append(dict(name="sort", kind="real", need=sort,
                  what="GNU `LC_ALL=C sort -S 2G` of a generated ~%d MiB text file (in memory; output hashed)" % mb,
                  cmd=[sort, "-S", "2G", "-T", work, sin], gen=lambda sin=sin, mb=mb: gen_sort_input(sin, mb),
                  ver=[sort, "--version"]))

    java = shutil.which("java")
    n = q(3_000_000, 600_000)
    jsrc = w("KbAlloc.java")
    # -Xmx explicit: a JVM sizes its default heap from a cgroup-v1 limit, which would make the
    # zswap run a different program (more GCs, or an OutOfMemoryError).
    P.append(dict(name="java", kind="real", need=java,
                  what="OpenJDK, parallel GC, single-file source launch: HashMap of %d boxed ints to strings, "
                       "a long[] sorted, %d small int[] (-Xmx3g)" % (n, n // 64),
                  cmd=[java, "-XX:+UseParallelGC", "-Xmx3g", jsrc, str(n)],
                  gen=lambda jsrc=jsrc: write_file(jsrc, JAVA_PROG), ver=[java, "-version"]))

    node = shutil.which("node")
    n = q(2_000_000, 400_000)
    js = w("kb.js")
    # Node sizes its heap limit from a cgroup limit too: fixed here.
    P.append(dict(name="node", kind="real", need=node,
                  what="node.js: a Map of %d string keys to small objects, an array of %d numbers sorted "
                       "(--max-old-space-size=4096)" % (n, n),
                  cmd=[node, "--max-old-space-size=4096", js, str(n)],
                  gen=lambda js=js: write_file(js, NODE_PROG), ver=[node, "--version"]))

    mib, passes = q(1024, 256), q(3000, 1500)
    P.append(dict(name="hot10", kind="own", need=bins.get("hot10"),
                  what="bench/kernel_baseline/hot10.c: %d MiB filled (compressible), then %d passes over the hot "
                       "10 %% (every 1 MiB chunk = 3 mod 10); the cold 90 %% never touched again" % (mib, passes),
                  cmd=[bins.get("hot10") or "hot10", str(mib), str(passes)], footprint=mib * MiB))

    ops = q(5000, 1000)
    P.append(dict(name="churn", kind="own", need=bins.get("churn"), unlimited=True,
                  what="bench/kernel_baseline/churn.c: 8 threads x %d mmap/calloc/realloc/small-malloc "
                       "operations, every byte verified (alloc_race.c's mix at a fixed op count)" % ops,
                  cmd=[bins.get("churn") or "churn", "8", str(ops)]))
    return P


# ----------------------------------------------------------------------------- one run

def vmstat():
    d = {}
    with open("/proc/vmstat") as f:
        for line in f:
            k, v = line.split()
            d[k] = int(v)
    return d


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_rss_anon(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def cg_read(cg, name):
    try:
        with open(os.path.join(cg, name)) as f:
            return f.read()
    except OSError:
        return ""


def fresh_cgroup(cg, limit):
    """An empty cgroup (fresh max_usage and OOM counters) with a memory limit of `limit`."""
    if os.path.isdir(cg):
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)
    os.makedirs(cg, exist_ok=True)
    with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
        f.write(str(int(limit)))


CURRENT = {"pid": None}  # the program running now (its own session), for the TERM handler


def on_term(signum, frame):
    pid = CURRENT["pid"]
    if pid:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    log("kb.py: signal %d, stopped" % signum)
    os._exit(128 + signum)


def run_once(prog, mode, ctx, limit=None, timeout=600):
    """mode: plain | tiermem | unlimited | zswap. Returns a dict of measurements."""
    work, bins = ctx["work"], ctx["bins"]
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    for k in ("TIERMEM_STATS_OUT", "LD_PRELOAD", "TIERMEM_CONFIG_JSON", "TIERMEM_DISABLE"):
        env.pop(k, None)
    cmd = list(prog["cmd"])
    tag = "%s-%s-%d" % (prog["name"], mode, ctx["seq"])
    ctx["seq"] += 1
    stats_glob = None
    if mode in ("tiermem", "unlimited"):
        sdir = os.path.join(work, "stats", tag)
        os.makedirs(sdir)
        env["TIERMEM_STATS_OUT"] = os.path.join(sdir, "%p.json")
        env["TIERMEM_PRELOAD"] = bins["preload"]
        flags = ["--dram-budget", "unlimited"] if mode == "unlimited" else ctx["flags"]
        cmd = [bins["tiermem"], "run"] + flags + ["--"] + cmd
        stats_glob = sdir
    cg = ctx.get("cgroup")
    if mode == "zswap":
        fresh_cgroup(cg, limit)
        cmd = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', cg] + cmd
    err_path = os.path.join(work, "stderr-%s.txt" % tag)
    h = hashlib.sha256()
    out = {"bytes": 0, "head": b""}
    vm0 = vmstat()
    with open(err_path, "wb") as errf:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf, env=env,
                                cwd=work, start_new_session=True)
        CURRENT["pid"] = proc.pid

        def reader():
            while True:
                b = proc.stdout.read(1 << 20)
                if not b:
                    break
                h.update(b)
                if len(out["head"]) < 200:
                    out["head"] += b[:200]
                out["bytes"] += len(b)

        rt = threading.Thread(target=reader, daemon=True)
        rt.start()
        peak = {"anon": 0, "anon_sum": 0, "n": 0, "last": 0, "cg_sum": 0, "cg_n": 0,
                "budgets": [], "pools_max": 0}
        stop = threading.Event()

        def sampler():
            # RssAnon every 20 ms (tiermem's pools are anonymous memory of the process, so for
            # tiermem this is DRAM + pools), the zswap cgroup's usage, and every ~250 ms the
            # live budget and pools from RUN_DIR/PID/stats.json.
            sp = os.path.join(os.environ.get("TIERMEM_RUN_DIR", "/nonexistent"), str(proc.pid), "stats.json")
            k = 0
            while not stop.is_set():
                a = read_rss_anon(proc.pid)
                if a is not None:
                    peak["anon"] = max(peak["anon"], a)
                    peak["anon_sum"] += a
                    peak["n"] += 1
                    peak["last"] = a
                if mode == "zswap":
                    try:
                        peak["cg_sum"] += int(cg_read(cg, "memory.usage_in_bytes").strip())
                        peak["cg_n"] += 1
                    except ValueError:
                        pass
                if stats_glob and k % 12 == 0:
                    st = read_json(sp)
                    if isinstance(st, dict):
                        bb = st.get("budget_bytes")
                        if isinstance(bb, int) and bb < (1 << 62):
                            peak["budgets"].append(bb)
                        pb = sum(int(t.get("pool_bytes") or 0) for t in st.get("tiers") or [] if isinstance(t, dict))
                        peak["pools_max"] = max(peak["pools_max"], pb)
                k += 1
                stop.wait(0.02)

        # The sampler reads /proc/PID until the program is reaped below: the PID cannot be reused.
        smp = threading.Thread(target=sampler, daemon=True)
        smp.start()
        timed_out = False
        while True:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                stop.set()
                smp.join()
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            if time.monotonic() - t0 > timeout:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # the program's own session (start_new_session)
                except OSError:
                    pass
                stop.set()
                smp.join()
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        wall = time.monotonic() - t0
        CURRENT["pid"] = None
        proc.returncode = os.waitstatus_to_exitcode(status)
        rt.join(timeout=60)
    vm1 = vmstat()
    with open(err_path, "rb") as f:
        err = f.read().decode("utf-8", "replace")
    r = dict(mode=mode, wall=wall, rc=proc.returncode, timed_out=timed_out, maxrss=ru.ru_maxrss * 1024,
             anon=peak["anon"], anon_mean=peak["anon_sum"] / max(1, peak["n"]), anon_last=peak["last"],
             cg_mean=peak["cg_sum"] / peak["cg_n"] if peak["cg_n"] else None,
             budget_min=min(peak["budgets"]) if peak["budgets"] else None,
             budget_max=max(peak["budgets"]) if peak["budgets"] else None,
             pools_max=peak["pools_max"], sha=h.hexdigest(), out_bytes=out["bytes"],
             head=out["head"].decode("utf-8", "replace"),
             err=err, limit=limit,
             swapins=(vm1.get("zswpin", 0) - vm0.get("zswpin", 0)) + (vm1.get("pswpin", 0) - vm0.get("pswpin", 0)),
             swapouts=(vm1.get("zswpout", 0) - vm0.get("zswpout", 0)) + (vm1.get("pswpout", 0) - vm0.get("pswpout", 0)),
             writeback=vm1.get("zswpwb", 0) - vm0.get("zswpwb", 0))
    if mode == "zswap":
        try:
            r["cg_peak"] = int(cg_read(cg, "memory.max_usage_in_bytes").strip() or 0)
        except ValueError:
            r["cg_peak"] = None
        oc = dict(line.split() for line in cg_read(cg, "memory.oom_control").splitlines() if len(line.split()) == 2)
        r["oom_kill"] = int(oc.get("oom_kill", 0))
    if stats_glob:
        # The runtime's own lines (info, warn; fatal ones also go to stderr): RUN_DIR/log,
        # one file per user, lines tagged tiermem[PID].
        rd = os.environ.get("TIERMEM_RUN_DIR", "/nonexistent")
        tagp = "tiermem[%d]" % proc.pid
        lines = []
        for name in ("log.1", "log"):
            try:
                with open(os.path.join(rd, name), errors="replace") as f:
                    lines += [ln.rstrip("\n") for ln in f if tagp in ln]
            except OSError:
                pass
        r["log"] = lines[-200:]
        sts = [read_json(os.path.join(stats_glob, f)) for f in sorted(os.listdir(stats_glob))]
        sts = [s for s in sts if isinstance(s, dict)]
        r["stats"] = sts
        r["nstats"] = len(sts)
        tiers = [t for s in sts for t in (s.get("tiers") or []) if isinstance(t, dict)]
        r["tier_faults"] = sum(int(t.get("faults") or 0) for t in tiers)
        r["pool_bytes"] = sum(int(t.get("pool_bytes") or 0) for t in tiers)
        r["compressed_pages"] = sum(int(t.get("pages") or 0) for t in tiers)
        r["fault_service_s"] = sum(float(s.get("tier_fault_service_s") or 0) for s in sts)
        r["budget"] = ", ".join(sorted({str(s.get("budget")) for s in sts})) if sts else "-"
        r["thrashing"] = any(s.get("thrashing") for s in sts)
        r["first_touch"] = sum(int(s.get("first_touch_faults") or 0) for s in sts)
        r["cpu_s"] = sum(float(s.get("cpu_s") or 0) for s in sts)
        slo = sts[0].get("slo") if sts else None
        r["slo"] = slo if isinstance(slo, dict) else {k: v for s in sts[:1] for k, v in s.items()
                                                     if any(w in k for w in ("slo", "stall", "cold", "chosen"))}
    return r


def ok_output(r, plain):
    if r["timed_out"]:
        return "TIMEOUT"
    if r.get("oom_kill"):
        return "OOM-killed"
    if r["rc"] != 0:
        return "exit %d" % r["rc"]
    if plain is None:
        return "ref"
    return "identical" if r["sha"] == plain["sha"] and r["out_bytes"] == plain["out_bytes"] else "DIFFERENT"


def median_run(rs):
    """The run of median wall time (lower median), so its other columns belong to it."""
    s = sorted(rs, key=lambda r: r["wall"])
    return s[(len(s) - 1) // 2]


def memory(r):
    """The run's memory: peak RssAnon (tiermem: DRAM + pools), for zswap the cgroup's peak
    charge (DRAM, zswap pool, page cache and kernel memory charged to it)."""
    if r["mode"] == "zswap":
        return r.get("cg_peak") or r["anon"]
    return r["anon"]


def mean_memory(r):
    """Time-averaged memory over the run (same sources as `memory`, sampled every 20 ms)."""
    if r["mode"] == "zswap":
        return r.get("cg_mean") or r.get("anon_mean") or memory(r)
    return r.get("anon_mean") or r["anon"]


# ----------------------------------------------------------------------------- report

def fmt_mib(b):
    return "-" if b is None else "%.0f" % (b / MiB)


def startup_cost(ctx, reps=3):
    """`tiermem run -- /bin/true` against /bin/true: the fixed cost in every tiermem row."""
    true = shutil.which("true") or "/bin/true"
    p = dict(name="true", cmd=[true])
    walls = {}
    for m in ("plain", "tiermem"):
        walls[m] = statistics.median(run_once(p, m, ctx)["wall"] for _ in range(reps))
    return walls["tiermem"] - walls["plain"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tiermem", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--hot10")
    ap.add_argument("--churn")
    ap.add_argument("--cgroup", help="the cgroup-v1 memory cgroup for the zswap rows (none: no zswap rows)")
    ap.add_argument("--zswap-why", default="")
    ap.add_argument("--zswap-limit", choices=("anon", "rss", "mean"), default="anon",
                    help="the zswap cgroup's limit: the tiermem run's peak RssAnon (DRAM + pools; default), "
                         "its peak RSS (also file pages: shared libraries, a JVM's archives) or its mean RssAnon "
                         "over the run (for a controller that saves after the peak)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--unlimited", action="store_true", help="a --dram-budget unlimited row for every program")
    ap.add_argument("--flags", default="", help="extra `tiermem run` flags of the default-mode row")
    ap.add_argument("--page-cluster", default="?")
    ap.add_argument("--build", default="?", help="which tiermem build ran, for the report")
    ap.add_argument("--render", metavar="JSON", help="only write the report of an earlier run's results.json")
    if "--render" in sys.argv:
        r = argparse.ArgumentParser()
        r.add_argument("--render", required=True)
        r.add_argument("--out", required=True)
        ra = r.parse_args()
        with open(ra.render) as f:
            return render(json.load(f), ra.out)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)

    bins = dict(tiermem=a.tiermem, preload=a.preload, hot10=a.hot10, churn=a.churn)
    ctx = dict(work=a.work, bins=bins, cgroup=a.cgroup, flags=shlex.split(a.flags), seq=0)
    progs = programs(a.quick, a.work, bins)
    only = [s for s in a.only.split(",") if s]
    if only:
        progs = [p for p in progs if p["name"] in only]
    tm_label = "tiermem" + (" " + a.flags if a.flags else " (default)")

    t_start = time.monotonic()
    startup = startup_cost(ctx)
    log("tiermem startup: %.3f s" % startup)
    results = []  # (prog, {mode: [runs]} or None when not installed)
    for p in progs:
        if not p["need"]:
            log("%s: skipped (not installed)" % p["name"])
            results.append((p, None))
            continue
        if p.get("gen"):
            t = time.monotonic()
            p["gen"]()
            log("%s: input generated in %.1f s" % (p["name"], time.monotonic() - t))
        p["version"] = version(p["ver"]) if p.get("ver") else "-"
        runs = {}
        for rep in range(a.reps):
            plain = run_once(p, "plain", ctx)
            runs.setdefault("plain", []).append(plain)
            log("%s rep %d: plain %.2f s, anon %s MiB, rc %d" % (p["name"], rep, plain["wall"], fmt_mib(plain["anon"]),
                                                                plain["rc"]))
            limit_t = max(60.0, 20 * plain["wall"])
            modes = ["tiermem"] + (["unlimited"] if a.unlimited or p.get("unlimited") else [])
            tm = None
            for m in modes:
                r = run_once(p, m, ctx, timeout=limit_t)
                runs.setdefault(m, []).append(r)
                log("%s rep %d: %s %.2f s, anon %s MiB, %s, %s tier faults" % (
                    p["name"], rep, m, r["wall"], fmt_mib(r["anon"]), ok_output(r, plain), r.get("tier_faults")))
                if m == "tiermem":
                    tm = r
            if a.cgroup and tm:
                # The same memory as tiermem; if its run failed, the plain run's instead.
                tm_ok = tm["rc"] == 0 and not tm["timed_out"]
                src = tm if tm_ok else plain
                limit = {"rss": src["maxrss"], "mean": int(src["anon_mean"])}.get(a.zswap_limit, src["anon"])
                r = run_once(p, "zswap", ctx, limit=limit, timeout=limit_t)
                r["limit_from"] = "tiermem" if tm_ok else "plain (the tiermem run failed)"
                runs.setdefault("zswap", []).append(r)
                log("%s rep %d: zswap %.2f s, limit %s MiB, cgroup peak %s MiB, %s, %d swap-ins" % (
                    p["name"], rep, r["wall"], fmt_mib(r["limit"]), fmt_mib(r.get("cg_peak")), ok_output(r, plain),
                    r["swapins"]))
        results.append((p, runs))
    elapsed = time.monotonic() - t_start
    meta = dict(vars(a), startup=startup, elapsed=elapsed, tm_label=tm_label, cores=os.cpu_count(),
                kernel=platform.release(), when=time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime()))
    keep = ("name", "kind", "what", "version", "footprint")
    raw = dict(meta=meta, results=[dict(prog={k: p[k] for k in keep if k in p}, runs=runs) for p, runs in results])
    for _, runs in results:
        for rs in (runs or {}).values():
            for r in rs:
                if len(r["err"]) > 8000:
                    r["err"] = r["err"][:4000] + "\n[...]\n" + r["err"][-4000:]
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(raw, f, indent=1)
    return render(raw, a.out)


def render(raw, out):
    """Write the report of a run (kb.py's JSON) to `out`; exit status 1 if a tiermem run failed."""
    a = argparse.Namespace(**raw["meta"])
    results = [(x["prog"], x["runs"]) for x in raw["results"]]
    startup, elapsed, tm_label = a.startup, a.elapsed, a.tm_label
    L = []
    L.append("# Kernel baseline: real programs plain, under tiermem, and under zswap at the same memory "
             "(%s, %d cores, kernel %s)" % (a.when, a.cores, a.kernel))
    L.append("")
    L.append("Written by `bench/kernel_baseline/run.sh`%s (issue 46). Each program runs side by side, in "
             "this order: plain; `%s`; %s zswap (lzo, in front of a swap file, `vm.page-cluster` = %s) with "
             "the program in a cgroup-v1 memory cgroup whose limit is the tiermem run's %s, so both "
             "get the same memory. %s" % (
                 " with QUICK=1 (small inputs: a smoke test, not the issue's numbers)" if a.quick else "",
                 "tiermem run %s-- PROGRAM" % (a.flags + " " if a.flags else ""),
                 "`tiermem run --dram-budget unlimited -- PROGRAM` (churn%s);" % (
                     " and every program" if a.unlimited else ""),
                 a.page_cluster,
                 {"anon": "peak anonymous memory (RssAnon: its DRAM plus its compressed pools, which live in the "
                          "process)",
                  "rss": "peak RSS (ru_maxrss: DRAM, pools and file pages)",
                  "mean": "mean anonymous memory over the run (ZSWAP_LIMIT=mean: a cap where tiermem had an "
                          "average)"}[a.zswap_limit],
                 "REPS=%d: each row is the run of median wall time." % a.reps if a.reps > 1 else "One run each."))
    L.append("")
    L.append("tiermem build: %s. Fixed cost of `tiermem run` (`tiermem run -- true` minus `true`, median of 3): "
             "%.0f ms, in every tiermem row." % (a.build, 1000 * startup))
    L.append("")
    L.append("*Peak* = peak RssAnon sampled every 20 ms (tiermem: DRAM + pools); for zswap the cgroup's "
             "`memory.max_usage_in_bytes` (its DRAM, the zswap pool, page cache and kernel memory charged to "
             "it). *Mean* = the same sampled every 20 ms, averaged over the run (for zswap the cgroup's "
             "`memory.usage_in_bytes`): what a controller that offloads cold memory after the fact saves shows "
             "here, not in the peak. Saved = 1 - memory / plain's, peak / mean. *RSS* = ru_maxrss (file pages "
             "too). Faults: tiermem's tier faults (final stats) / the kernel's swap-ins (`/proc/vmstat` zswpin + "
             "pswpin, machine-wide). Budget: the range tiermem's live stats showed (every ~250 ms), and its "
             "largest pools. Output: sha256 of stdout against the plain run's. The machine is shared (%d cores, "
             "other jobs running): single runs carry several percent of noise, more on runs under a second."
             % a.cores)
    if not a.cgroup:
        L.append("")
        L.append("(zswap rows skipped: %s)" % (a.zswap_why or "no cgroup"))
    L.append("")
    L.append("| program | setup | wall s | vs plain | peak MiB | mean MiB | saved (peak / mean) | RSS MiB "
             "| tier faults / swap-ins | budget seen, max pools / cgroup limit | output |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    summary = {}
    labels = {"plain": "plain", "tiermem": tm_label, "unlimited": "tiermem --dram-budget unlimited",
              "zswap": "zswap lzo, cgroup = tiermem's memory"}
    for p, runs in results:
        if runs is None:
            L.append("| %s | (not installed) | | | | | | | | | |" % p["name"])
            continue
        plain = median_run(runs["plain"])
        row = {}
        for m in ("plain", "tiermem", "unlimited", "zswap"):
            if m not in runs:
                continue
            r = median_run(runs[m])
            row[m] = r
            outc = ok_output(r, None if m == "plain" else plain)
            slow = r["wall"] / plain["wall"] if plain["wall"] > 0 else float("nan")
            saved = 1 - memory(r) / memory(plain) if memory(plain) else 0
            msaved = 1 - mean_memory(r) / mean_memory(plain) if mean_memory(plain) else 0
            faults, extra = "-", "-"
            if m in ("tiermem", "unlimited"):
                faults = "%d" % r.get("tier_faults", 0)
                lo = r.get("budget_min")
                hi = r.get("budget_max") or lo
                seen = ("%s MiB" % fmt_mib(lo) if lo == hi else "%s-%s MiB" % (fmt_mib(lo), fmt_mib(hi))) if lo \
                    else str(r.get("budget", "-"))
                extra = "%s, %s MiB%s" % (seen, fmt_mib(max(r.get("pools_max") or 0, r.get("pool_bytes") or 0)),
                                          ", THRASHING" if r.get("thrashing") else "")
                if r.get("nstats", 0) == 0:
                    extra += " (no final stats)"
            elif m == "zswap":
                faults = "%d" % r["swapins"]
                extra = "limit %s MiB%s" % (fmt_mib(r["limit"]), "" if r.get("limit_from") == "tiermem"
                                            else " = " + str(r.get("limit_from")))
            failed = r["rc"] != 0 or r["timed_out"]
            L.append("| %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                p["name"], labels[m], r["wall"],
                "(failed)" if failed else "1.00x" if m == "plain" else "%.2fx" % slow,
                fmt_mib(memory(r)), fmt_mib(mean_memory(r)),
                "-" if m == "plain" else "%.0f %% / %.0f %%" % (100 * saved, 100 * msaved), fmt_mib(r["maxrss"]),
                faults, extra, outc))
        summary[p["name"]] = (p, row)
    L.append("")

    # ------------------------------------------------------------------ summary
    def ratio(row, m):
        r = row.get(m)
        if not r or r["timed_out"] or r["rc"] != 0:
            return None
        return r["wall"] / row["plain"]["wall"]

    real = [(n, p, row) for n, (p, row) in summary.items() if p["kind"] == "real"]
    L.append("## Summary")
    L.append("")
    tms = [(ratio(row, "tiermem"), n) for n, _, row in real if ratio(row, "tiermem") is not None]
    zss = [(ratio(row, "zswap"), n) for n, _, row in real if ratio(row, "zswap") is not None]
    if tms:
        L.append("- Real programs (%d): median slowdown vs plain: %s **%.2fx**%s (target: tiermem's at most "
                 "zswap's)." % (len(real), tm_label, statistics.median(x for x, _ in tms),
                                ", zswap at the same memory **%.2fx**" % statistics.median(x for x, _ in zss)
                                if zss else ""))
        worst = max(tms)
        L.append("- Largest %s slowdown on a real program: %.2fx (%s; target <= 1.1x)." % (tm_label, worst[0], worst[1]))
    fails = [(n, labels[m], ok_output(row[m], row["plain"])) for n, (_, row) in summary.items() for m in row
             if m != "plain" and ok_output(row[m], row["plain"]) != "identical"]
    L.append("- Outputs: %s." % ("every run identical to plain" if not fails else
                                 "not identical or failed: " + "; ".join("%s, %s: %s" % f for f in fails)))
    saved = []
    for n, (_, row) in summary.items():
        r = row.get("tiermem")
        if r:
            pl = row["plain"]
            d, dm = memory(pl) - memory(r), mean_memory(pl) - mean_memory(r)
            saved.append("%s %.0f / %.0f MiB (%.0f / %.0f %%)" % (
                n, d / MiB, dm / MiB, 100 * d / max(1, memory(pl)), 100 * dm / max(1, mean_memory(pl))))
    if saved:
        L.append("- Memory saved by %s, peak / mean (plain's minus its; negative = more than plain): %s."
                 % (tm_label, ", ".join(saved)))
    h = summary.get("hot10")
    if h and h[1].get("tiermem"):
        p, row = h
        r = row["tiermem"]
        cold = 0.9 * p["footprint"]
        last = lambda x: x.get("anon_last") or memory(x)  # noqa: E731
        d = last(row["plain"]) - last(r)
        st = r.get("slo") or {}
        L.append("- hot10: at the end of its hot phase %.0f MiB of its %.0f MiB of cold memory saved (%.0f %%; "
                 "target >= 70 %%; RssAnon %.0f MiB vs plain %.0f), %.2fx plain; tier-fault service time %.2f s = "
                 "%.2f %% of the run (a lower bound of the stall)%s." % (
                     d / MiB, cold / MiB, 100 * d / cold, last(r) / MiB, last(row["plain"]) / MiB,
                     r["wall"] / row["plain"]["wall"], r["fault_service_s"],
                     100 * r["fault_service_s"] / max(1e-9, r["wall"]),
                     "; the controller's stall share %s" % st["stall_share"] if "stall_share" in st else ""))
    c = summary.get("churn")
    if c and c[1].get("unlimited"):
        L.append("- churn at --dram-budget unlimited: %.2fx plain (target <= 1.05x)." % (
            c[1]["unlimited"]["wall"] / c[1]["plain"]["wall"]))
    for n in ("gawk", "perl"):
        s = summary.get(n)
        if s and ratio(s[1], "tiermem") is not None:
            L.append("- %s (a uniformly hot hash table): %.2fx plain under %s (target <= 1.1x)." % (
                n, ratio(s[1], "tiermem"), tm_label))
    slo = [(n, row["tiermem"]["slo"]) for n, (_, row) in summary.items()
           if row.get("tiermem") and row["tiermem"].get("slo")]
    L.append("")
    if slo:
        keys = []
        for _, d in slo:
            keys += [k for k in d if k not in keys]
        L.append("### tiermem's SLO controller, final stats (`slo` of stats.json)")
        L.append("")
        L.append("| program | " + " | ".join(k.replace("_bytes", " MiB") for k in keys) + " |")
        L.append("|---" * (len(keys) + 1) + "|")
        for n, d in slo:
            L.append("| %s | %s |" % (n, " | ".join(
                "-" if k not in d else fmt_mib(d[k]) if k.endswith("_bytes") and isinstance(d[k], (int, float))
                else "%.2f %%" % (100 * d[k]) if ("share" in k or "stall" in k) and isinstance(d[k], float)
                else str(d[k]) for k in keys)))
        L.append("")
    L.append("## Programs")
    L.append("")
    for p, runs in results:
        v = p.get("version", "-")
        L.append("- **%s**: %s.%s" % (p["name"], p["what"], (" `%s`" % v) if runs and v != "-" else ""))
    L.append("")
    notes = []
    for p, runs in results:
        for m, rs in (runs or {}).items():
            for r in rs:
                if m != "plain":
                    lines = [ln for ln in r["err"].splitlines() if "tiermem" in ln.lower()] + r.get("log", [])
                    if lines:
                        notes.append("- %s, %s: `%s`%s" % (p["name"], labels[m], lines[0][:300],
                                                          " (+%d more lines)" % (len(lines) - 1) if len(lines) > 1 else ""))
                if r["rc"] != 0 or r["timed_out"]:
                    tail = r["err"].strip().splitlines()[-3:]
                    notes.append("- %s, %s: exit %s%s%s; stderr tail: `%s`" % (
                        p["name"], labels[m], r["rc"], " (timeout)" if r["timed_out"] else "",
                        " (OOM-killed in the cgroup)" if r.get("oom_kill") else "", " / ".join(tail)[:400]))
    if notes:
        L.append("## What tiermem said (its lines on stderr and in RUN_DIR/log), and failures")
        L.append("")
        L += notes
        L.append("")
    L.append("Harness time: %.0f s." % elapsed)
    text = "\n".join(L) + "\n"
    with open(out, "w") as f:
        f.write(text)
    print(text)
    # A failure of the baseline (zswap OOM-killed at tiermem's memory) is a result; a tiermem
    # run that fails or prints something else is a fault.
    bad = [f for f in fails if not f[1].startswith("zswap")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
