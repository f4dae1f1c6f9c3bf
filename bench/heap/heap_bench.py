#!/usr/bin/env python3
"""How much of real programs' memory tiermem's DRAM budget covers, and what it costs.

Driver of bench/heap/run.sh (stdlib only). For each program: one plain run and one run under
`tiermem run --dram-budget B` for B in 100 %, 50 %, 25 % (interleaved plain/100/50/25, same
inputs), sampling /proc/PID/status RssAnon and the runtime's RUN_DIR/PID/stats.json every
50 ms. Writes a markdown report; exits 1 if any run FAILed (wrong output, non-zero exit,
timeout without the runtime's thrashing report). A run the runtime reported as thrashing and
that hit the time limit (30x plain) is shown as "thrashing, killed": the budget is too small
for that program, which is a result, not a fault.

    heap_bench.py --out bench/heap/results.md [--quick] [--only perl,awk] [--reps N]
"""

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUDGETS = ["100%", "50%", "25%"]
SAMPLE_S = 0.05
MiB = 1 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- inputs

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike "
         "november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee "
         "zulu memory tier page pool budget fault region arena codec").split()


def gen_awk_input(path, lines):
    """`KEY VALUE` lines, ~lines/2 distinct keys, deterministic (an LCG, no random state)."""
    x = 12345
    nkeys = max(1, lines // 2)
    with open(path, "w") as f:
        buf = []
        for i in range(lines):
            x = (x * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
            buf.append("u%d %d\n" % ((x >> 20) % nkeys, (x >> 8) % 1000))
            if len(buf) >= 65536:
                f.write("".join(buf))
                buf = []
        f.write("".join(buf))


def gen_sort_input(path, mbytes):
    """~mbytes MiB of text lines: a hex hash, a few words, a number (unsorted)."""
    target = mbytes * MiB
    size = 0
    i = 0
    nw = len(WORDS)
    with open(path, "w") as f:
        while size < target:
            buf = []
            for _ in range(4096):
                h = hashlib.blake2b(i.to_bytes(8, "little"), digest_size=12).digest()
                line = "%s %s %s %s %d\n" % (h[:6].hex(), WORDS[h[6] % nw], WORDS[h[7] % nw],
                                             WORDS[h[8] % nw], int.from_bytes(h[9:12], "little"))
                buf.append(line)
                i += 1
            s = "".join(buf)
            f.write(s)
            size += len(s)


def gen_xz_input(path, mbytes):
    """~mbytes MiB of log-like lines: repetitive structure, pseudo-random fields."""
    target = mbytes * MiB
    size = 0
    i = 0
    x = 987654321
    nw = len(WORDS)
    with open(path, "w") as f:
        while size < target:
            buf = []
            for _ in range(4096):
                x = (x * 6364136223846793005 + 1442695040888963407) & ((1 << 64) - 1)
                buf.append("2026-11-%02d %02d:%02d:%02d.%06d id=%d user=%s%d op=%s bytes=%d lat_us=%d %08x\n" % (
                    1 + (i >> 16) % 28, (x >> 11) % 24, (x >> 17) % 60, (x >> 23) % 60,
                    (x >> 29) % 1000000, i, WORDS[(x >> 40) % nw], (x >> 45) % 500,
                    WORDS[(x >> 50) % nw], (x >> 13) % 65536, (x >> 33) % 20000, (x >> 3) & 0xffffffff))
                i += 1
            s = "".join(buf)
            f.write(s)
            size += len(s)


# ----------------------------------------------------------------------------- programs

PY_THREADS = r"""
import threading, hashlib
N = %d
res = [None]*8
def work(k):
    d = {}
    for i in range(N): d[i] = bytearray((str(i*k)*20).encode())
    res[k] = hashlib.sha256(b''.join(d[i] for i in range(0, N, 7))).hexdigest()
ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
print(res)
"""

NUMPY_PROG = r"""
import hashlib, numpy as np
N = %d
rng = np.random.default_rng(20261123)
a = rng.standard_normal(N)
idx = np.argsort(a, kind="stable")
s = a[idx]
q = np.round(a * 1000).astype(np.int64)
print(N, repr(float(a.sum())), repr(float(s[:1000].sum())), int(q.max()), int(q.min()),
      int(np.count_nonzero(q > 0)), hashlib.sha256(idx[::997].tobytes()).hexdigest())
"""

PERL_PROG = ('my %%h; $h{"key$_"} = $_*3 for 1..%d; my ($n, $s) = (0, 0); '
             'while (my ($k, $v) = each %%h) { $n++; $s += $v } print "$n $s\\n";')

AWK_PROG = ('{ c[$1]++; s[$1] += $2 } END { n = 0; t = 0; m = 0; '
            'for (k in c) { n++; t += s[k]; if (c[k] > m) m = c[k] } printf "%d %.0f %d\\n", n, t, m }')


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        line = (out.stdout or out.stderr).strip().splitlines()
        return line[0].strip() if line else "?"
    except Exception as e:  # noqa: BLE001
        return "? (%s)" % e


def programs(scale, work, venv_python):
    """List of program specs. Each: name, what (description), cmd or None (+ skip reason),
    gen (callable that creates the inputs, or None), version."""
    n = lambda v: max(1, int(v * scale))  # noqa: E731
    progs = []

    perl = shutil.which("perl")
    keys = n(2_000_000)
    progs.append(dict(
        name="perl", need=(perl, "perl"),
        what="a hash of %d keys: `$h{\"key$_\"} = $_*3`, then count and sum with `each`" % keys,
        cmd=[perl or "perl", "-e", PERL_PROG % keys], gen=None,
        version=lambda: version([perl, "-e", 'print "perl $^V\\n"'])))

    awk = shutil.which("awk")
    real_awk = os.path.realpath(awk) if awk else None
    lines = n(2_000_000)
    awk_in = os.path.join(work, "awk.txt")
    awk_pkg = os.path.basename(real_awk) if real_awk else "mawk"
    progs.append(dict(
        name="awk", need=(awk, "mawk (or gawk)"),
        what="associative-array aggregation (`c[$1]++; s[$1] += $2`) of %d generated lines, ~%d keys"
             % (lines, lines // 2),
        cmd=[awk or "awk", AWK_PROG, awk_in], input=awk_in, gen=lambda: gen_awk_input(awk_in, lines),
        version=lambda: "awk is %s: %s" % (real_awk, version([real_awk, "-W", "version"]) if awk_pkg == "mawk"
                                            else version([real_awk, "--version"]))))

    sort = shutil.which("sort")
    smb = n(100)
    sort_in = os.path.join(work, "sort.txt")
    progs.append(dict(
        name="sort", need=(sort, "coreutils"),
        what="`LC_ALL=C sort` of a generated ~%d MiB text file (output hashed, not stored)" % smb, input=sort_in,
        cmd=[sort or "sort", "-T", work, sort_in], gen=lambda: gen_sort_input(sort_in, smb),
        version=lambda: version([sort, "--version"])))

    xz = shutil.which("xz")
    xmb = 3 * scale  # xz -6 does ~0.5 MiB/s on this VM (+ ~3 s setup): 60 MiB would take ~100 s plain
    xz_in = os.path.join(work, "xz.txt")
    progs.append(dict(
        name="xz", need=(xz, "xz-utils"),
        what="`xz -6 -T1 -c` of a generated ~%g MiB log-like file (output hashed)" % xmb, input=xz_in,
        cmd=[xz or "xz", "-6", "-T1", "-c", xz_in], gen=lambda: gen_xz_input(xz_in, xmb),
        version=lambda: version([xz, "--version"])))

    py = venv_python
    items = n(300_000)
    progs.append(dict(
        name="python", need=(py if py and os.access(py, os.X_OK) else None, "python3 (the project's .venv: make setup)"),
        what="8 threads each building a dict of %d bytearrays, sha256 over every 7th (%s)" % (items, py),
        cmd=[py or "python3", "-c", PY_THREADS % items], gen=None,
        version=lambda: version([py, "-c", "import sys, sysconfig; print('Python', sys.version.split()[0], "
                                 "'shared libpython' if sysconfig.get_config_var('Py_ENABLE_SHARED') else 'static')"])))

    nn = n(10_000_000)  # 30 M took ~16 s plain (1.2 GiB peak) here
    has_numpy = False
    if py and os.access(py, os.X_OK):
        has_numpy = subprocess.run([py, "-c", "import numpy"], capture_output=True).returncode == 0
    progs.append(dict(
        name="numpy", need=(py if has_numpy else None, "numpy in .venv (make setup; Debian: python3-numpy)"),
        what="%d float64 from a seeded generator, stable argsort, gather, reductions, digest" % nn,
        cmd=[py or "python3", "-c", NUMPY_PROG % nn], gen=None,
        version=lambda: version([py, "-c", "import numpy; print('numpy', numpy.__version__)"])))
    return progs


# ----------------------------------------------------------------------------- one run

def read_rss_anon(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return None


def read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def pool_bytes(st):
    return sum(int(t.get("pool_bytes") or 0) for t in (st.get("tiers") or []) if isinstance(t, dict))


def tier_faults(st):
    if not st or not isinstance(st.get("tiers"), list):
        return None
    return sum(int(t.get("faults") or 0) for t in st["tiers"] if isinstance(t, dict))


def run_once(prog, budget, bins, work, timeout):
    """Run prog plain (budget None) or under tiermem. Returns a dict of measurements."""
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    for k in ("TIERMEM_RUN_DIR", "TIERMEM_STATS_OUT", "TIERMEM_DISABLE", "LD_PRELOAD", "TIERMEM_CONFIG_JSON"):
        env.pop(k, None)
    run_dir = None
    final = None
    cmd = list(prog["cmd"])
    if budget is not None:
        run_dir = tempfile.mkdtemp(prefix="tiermem-heap-run.", dir=work)
        os.chmod(run_dir, 0o700)
        final = os.path.join(run_dir, "final-stats.json")
        env["TIERMEM_RUN_DIR"] = run_dir
        env["TIERMEM_STATS_OUT"] = final
        env["TIERMEM_PRELOAD"] = bins["preload"]
        cmd = [bins["tiermem"], "run", "--dram-budget", budget, "--"] + cmd
    err_path = os.path.join(work, "stderr-%s-%s.txt" % (prog["name"], (budget or "plain").rstrip("%")))
    errf = open(err_path, "wb")
    h = hashlib.sha256()
    out_info = {"bytes": 0, "head": b""}

    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errf, env=env,
                            cwd=work)
    pid = proc.pid

    def reader():
        while True:
            b = proc.stdout.read(1 << 20)
            if not b:
                break
            h.update(b)
            if len(out_info["head"]) < 300:
                out_info["head"] += b[:300]
            out_info["bytes"] += len(b)

    samples = []  # (t, rss, stats or None)
    stats_seen = []  # distinct stats snapshots (by uptime_s)
    fresh_samples = []  # (rss, stats) at the tick a new snapshot was first seen: aligned within ~50 ms
    stop = threading.Event()

    def sampler():
        last_st = None
        last_up = None
        stats_path = os.path.join(run_dir, str(pid), "stats.json") if run_dir else None
        while not stop.is_set():
            rss = read_rss_anon(pid)
            fresh = False
            if stats_path:
                st = read_json(stats_path)
                if isinstance(st, dict):
                    last_st = st
                    up = st.get("uptime_s")
                    if up != last_up:
                        last_up = up
                        stats_seen.append(st)
                        fresh = True
            if rss is not None:
                samples.append((time.monotonic() - t0, rss, last_st))
                if fresh:
                    fresh_samples.append((rss, last_st))
            stop.wait(SAMPLE_S)

    rt = threading.Thread(target=reader, daemon=True)
    st_thread = threading.Thread(target=sampler, daemon=True)
    rt.start()
    st_thread.start()
    timed_out = False
    # Wait for the exit without reaping (WNOWAIT): the sampler stops before the PID can be reused.
    while os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is None:
        if time.monotonic() - t0 > timeout:
            timed_out = True
            proc.kill()  # our own child, by PID (not yet reaped, so it is still ours)
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
            break
        time.sleep(0.005)
    wall = time.monotonic() - t0
    stop.set()
    st_thread.join()
    rc = proc.wait()
    rt.join(timeout=30)
    errf.close()
    with open(err_path, "rb") as f:
        err = f.read()
    # The runtime's own lines (thrashing advice) go to RUN_DIR/log, not to stderr.
    log = b""
    if run_dir:
        try:
            with open(os.path.join(run_dir, "log"), "rb") as f:
                log = f.read()
        except OSError:
            pass

    trace = os.environ.get("HEAP_BENCH_TRACE")
    if trace:  # per-run CSV of the samples, for a closer look
        os.makedirs(trace, exist_ok=True)
        with open(os.path.join(trace, "%s-%s.csv" % (prog["name"], (budget or "plain").rstrip("%"))), "w") as f:
            f.write("t_s,rss_anon,pool,resident,budget,footprint,managed,unmanaged_anon,faults\n")
            for t, rss, st in samples:
                st = st or {}
                f.write("%.3f,%d,%d,%s,%s,%s,%s,%s,%s\n" % (t, rss, pool_bytes(st), st.get("resident_bytes", ""),
                        st.get("budget_bytes", ""), st.get("footprint_bytes", ""), st.get("managed_bytes", ""),
                        st.get("unmanaged_anon_bytes", ""), tier_faults(st) if st else ""))
    r = dict(budget=budget, rc=rc, timed_out=timed_out, wall=wall, sha=h.hexdigest(), out_bytes=out_info["bytes"],
             out_head=out_info["head"][:200].decode("utf-8", "replace"), stderr_tail=err[-3000:].decode("utf-8", "replace"),
             log_tail=log[-3000:].decode("utf-8", "replace"),
             cmd=cmd, nsamples=len(samples))
    if samples:
        r["peak_rss"] = max(s[1] for s in samples)
        if budget is None:
            r["peak_dram"] = r["peak_rss"]
        else:
            r["peak_dram"] = max(s[1] - (pool_bytes(s[2]) if s[2] else 0) for s in samples)
            # managed share: at the last sample that has stats, and at the peak-RssAnon sample
            # (RssAnon and stats paired at the tick a new snapshot appeared, so they agree in time)
            with_st = [s for s in fresh_samples if s[1].get("footprint_bytes") is not None]
            if with_st:
                last = with_st[-1]
                r["managed_last"] = last[1]["footprint_bytes"] / max(1, last[0])
                pk = max(with_st, key=lambda s: s[0])
                r["managed_peak"] = pk[1]["footprint_bytes"] / max(1, pk[0])
                um = pk[1].get("unmanaged_anon_bytes")
                if um is not None:
                    r["unmanaged_peak"] = um
            r["peak_pools"] = max((pool_bytes(s[2]) for s in samples if s[2]), default=0)
    else:
        r["peak_rss"] = r["peak_dram"] = None
    if budget is not None:
        ratios = [s["resident_bytes"] / s["budget_bytes"] for s in stats_seen
                  if isinstance(s.get("resident_bytes"), (int, float)) and isinstance(s.get("budget_bytes"), (int, float))
                  and s["budget_bytes"] > 0]
        if ratios:
            r["rb_mean"] = statistics.fmean(ratios)
            r["rb_max"] = max(ratios)
        fs = read_json(final) if final else None
        r["final_stats"] = fs
        src = fs if isinstance(fs, dict) else (stats_seen[-1] if stats_seen else None)
        r["faults"] = tier_faults(src)
        if isinstance(src, dict):
            r["thrashing"] = src.get("thrashing")
            r["suggested_budget"] = src.get("suggested_budget")
            if isinstance(fs, dict) and fs.get("max_resident_bytes") is not None:
                r["max_resident"] = fs["max_resident_bytes"]
        shutil.rmtree(run_dir, ignore_errors=True)
    return r


# ----------------------------------------------------------------------------- report

def mib(b):
    return "-" if b is None else "%.0f MiB" % (b / MiB)


def pct(x):
    return "-" if x is None else "%.0f %%" % (100 * x)


def fmt_row(label, r, plain):
    pw = plain.get("wall") if plain else None
    slow = ("%s%.2fx" % (">= " if r.get("timed_out") else "", r["wall"] / pw)) if pw else "-"
    pr = plain.get("peak_rss") if plain else None
    dram_ratio = pct(r["peak_dram"] / pr) if pr and r.get("peak_dram") is not None else "-"
    tot_ratio = pct(r["peak_rss"] / pr) if pr and r.get("peak_rss") is not None else "-"
    if r["budget"] is None:
        managed = "-"
        faults = "-"
        rb = "-"
        pools = "-"
    else:
        managed = "%s / %s" % (pct(r.get("managed_last")), pct(r.get("managed_peak")))
        faults = "-" if r.get("faults") is None else str(r["faults"])
        rb = "-" if r.get("rb_mean") is None else "%.2f / %.2f" % (r["rb_mean"], r["rb_max"])
        pools = mib(r.get("peak_pools"))
    ident = r["verdict"]
    wall = ">= %.0f (timeout)" % r["wall"] if r.get("timed_out") else "%.2f" % r["wall"]
    return "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
        label, wall, slow, mib(r.get("peak_dram")), mib(r.get("peak_rss")), pools, dram_ratio, tot_ratio,
        managed, faults, rb, ident)


HEADER = ("| run | wall (s) | vs plain | peak DRAM | peak DRAM+pools (RssAnon) | peak pools | DRAM / plain "
          "| (DRAM+pools) / plain | managed share (last / at peak) | tier faults | resident/budget (mean / max) "
          "| output |")
SEP = "|---|---|---|---|---|---|---|---|---|---|---|---|"


def median_run(rs):
    """The run with the median wall time (all runs must be ok to be representative)."""
    s = sorted(rs, key=lambda r: r["wall"])
    return s[(len(s) - 1) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "heap", "results.md"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--tiermem", default=os.path.join(ROOT, "target", "release", "tiermem"))
    ap.add_argument("--preload", default=os.path.join(ROOT, "target", "release", "libtiermem_preload.so"))
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    args = ap.parse_args()
    scale = 0.25 if args.quick else 1.0
    only = [s for s in args.only.split(",") if s]

    for p in (args.tiermem, args.preload):
        if not os.path.exists(p):
            log("heap_bench: %s missing (cargo build --release -p tiermem-cli -p tiermem-preload)" % p)
            return 2

    work = tempfile.mkdtemp(prefix="tiermem-heap.")
    os.chmod(work, 0o700)
    try:
        return bench(args, scale, only, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def bench(args, scale, only, work):
    # Copy the binaries: others may rebuild target/release while this runs.
    bdir = os.path.join(work, "bin")
    os.mkdir(bdir)
    bins = {"tiermem": os.path.join(bdir, "tiermem"), "preload": os.path.join(bdir, "libtiermem_preload.so")}
    shutil.copy2(args.tiermem, bins["tiermem"])
    shutil.copy2(args.preload, bins["preload"])
    build_time = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(args.preload)))
    try:
        head = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "crates"], capture_output=True,
                               text=True).stdout.strip()
    except OSError:
        head, dirty = "?", ""

    lines = []
    failures = []

    def note(s=""):
        lines.append(s)
        print(s, flush=True)

    note("# Heap coverage: how much of real programs' memory the DRAM budget covers, and what it costs")
    note()
    note("Measured on %s (UTC), %d cores, kernel %s, %s. Build: commit %s%s, binaries built %s."
         % (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), os.cpu_count(), platform.release(),
            "QUICK (inputs 1/4)" if args.quick else "full inputs",
            head, " + uncommitted changes under crates/" if dirty else "", build_time))
    note()
    note("Reproduce: `make bench BENCH=heap` or `bash bench/heap/run.sh` (`QUICK=1`: inputs a quarter the size;"
         " `ONLY=perl,awk`; `REPS=N`).")
    note()
    note("Each program runs plain and under `tiermem run --dram-budget B` (B = 100 %%, 50 %%, 25 %% of the managed"
         " footprint), interleaved plain/100/50/25 with the same generated inputs (LC_ALL=C). While it runs,"
         " `/proc/PID/status` RssAnon and the runtime's `$TIERMEM_RUN_DIR/PID/stats.json` (published every 250 ms)"
         " are sampled every 50 ms; `TIERMEM_STATS_OUT` gives the final stats.%s" %
         (" %d repetitions of the sequence; the row is the run with the median wall time, FAIL if any failed." % args.reps
          if args.reps > 1 else ""))
    note()
    note("Columns: *peak DRAM* = max over samples of RssAnon minus the pools (the sum of `tiers[].pool_bytes` of the"
         " latest stats; plain: RssAnon); *peak DRAM+pools* = max RssAnon (the pools live in the process);"
         " *managed share* = `footprint_bytes` (managed resident + compressed, counted uncompressed) / RssAnon,"
         " at the last stats publication and at the one with the highest RssAnon (each paired with the RssAnon"
         " sampled within 50 ms of its appearance); *tier faults* = sum of `tiers[].faults` at exit;"
         " *resident/budget* = `resident_bytes / budget_bytes` over the published stats (mean and max);"
         " *output* = sha256 of stdout and exit status compared with the plain run.")
    note()
    note("How to read: **DRAM / plain at or below the budget share** (50 %, 25 %) means the budget covers the"
         " program's heap: its memory was tiered. DRAM / plain well above it means much of the heap is outside"
         " the managed regions (small allocations in glibc's brk heap, which a preload cannot see: the"
         " managed share says how much was managed). **(DRAM+pools) / plain below 100 %** means compression"
         " saved memory overall; above 100 % means the pools plus the runtime cost more than they saved."
         " The budget is a share of the *managed* footprint, so resident/budget near or below 1.00 means the"
         " budget held for what it governs. The managed share counts compressed pages at their uncompressed"
         " size, so it can exceed 100 % under a small budget; the 100 % row is the clean reading. The 100 % row"
         " also shows what the runtime itself costs (nothing is compressed there: RssAnon above plain is the"
         " runtime's own memory and the program's pages that the 64 KiB first-touch fill brought in). Stats lag"
         " RssAnon by up to 250 ms, so peak DRAM slightly overstates (pools grow between two publications)."
         " This is a 2-core VM shared with other work: wall times are noisy (single runs unless REPS).")
    note()

    progs = programs(scale, work, args.python)
    for prog in progs:
        if only and prog["name"] not in only:
            continue
        binpath, pkg = prog["need"]
        note("## %s" % prog["name"])
        note()
        if not binpath:
            note("skipped: `%s` not available (Debian package: %s)" % (prog["name"], pkg))
            note()
            continue
        note("%s. `%s`." % (prog["what"], prog["version"]()))
        note()
        if prog["gen"]:
            t = time.monotonic()
            prog["gen"]()
            log("[%s] inputs generated in %.1f s" % (prog["name"], time.monotonic() - t))
            note("Input: %d bytes, %d lines." % (os.path.getsize(prog["input"]), sum(1 for _ in open(prog["input"], "rb"))))
            note()
        results = {None: [], **{b: [] for b in BUDGETS}}
        plain_ref = None
        for rep in range(args.reps):
            for budget in [None] + BUDGETS:
                if budget is None:
                    timeout = 600
                else:
                    pw = statistics.median(r["wall"] for r in results[None]) if results[None] else 30
                    timeout = max(180, 30 * pw)
                log("[%s] rep %d %s ..." % (prog["name"], rep + 1, budget or "plain"))
                r = run_once(prog, budget, bins, work, timeout)
                if budget is None and plain_ref is None:
                    plain_ref = r
                ok = True
                why = []
                # A run killed at the limit after the runtime said it thrashes is a
                # measured result (too small a budget for this program), not a fault;
                # without that report it may be a hang: FAIL.
                thrash_killed = r["timed_out"] and "]: thrashing: " in r["log_tail"]
                if thrash_killed:
                    why.append("thrashing (the runtime said so), killed at %.0f s" % timeout)
                elif r["timed_out"]:
                    ok = False
                    why.append("timed out after %.0f s (killed)" % timeout)
                elif r["rc"] != 0:
                    ok = False
                    why.append("exit status %d" % r["rc"])
                if r["timed_out"] and plain_ref is not None:
                    why.append("had written %d of %d bytes of output by then" % (r["out_bytes"], plain_ref["out_bytes"]))
                elif plain_ref is not None and r is not plain_ref and r["sha"] != plain_ref["sha"]:
                    ok = False
                    why.append("stdout differs from plain (sha256 %s vs %s, %d vs %d bytes)"
                               % (r["sha"][:12], plain_ref["sha"][:12], r["out_bytes"], plain_ref["out_bytes"]))
                r["ok_run"] = ok
                r["verdict"] = ("identical" if budget is not None else "reference") if ok else "**FAIL**"
                if ok and thrash_killed:
                    r["verdict"] = "thrashing, killed"
                if r is plain_ref and ok:
                    r["verdict"] = "reference (%s)" % r["sha"][:12]
                log("[%s] %s: %.2f s rc=%d peak RssAnon %s DRAM %s faults %s %s" % (
                    prog["name"], budget or "plain", r["wall"], r["rc"], mib(r.get("peak_rss")), mib(r.get("peak_dram")),
                    r.get("faults"), "ok" if ok else "FAIL: " + "; ".join(why)))
                if not ok:
                    failures.append((prog["name"], budget or "plain", rep + 1, r, why))
                results[budget].append(r)
        plain = median_run(results[None])
        note(HEADER)
        note(SEP)
        for budget in [None] + BUDGETS:
            rs = results[budget]
            r = dict(median_run(rs))
            if any(not x["ok_run"] for x in rs):
                r["verdict"] = "**FAIL**"
            note(fmt_row("plain" if budget is None else "tiermem %s" % budget, r, plain))
        note()
        extra = []
        for budget in BUDGETS:
            r = median_run(results[budget])
            bits = []
            if r.get("unmanaged_peak") is not None:
                bits.append("unmanaged anon at peak %s" % mib(r["unmanaged_peak"]))
            if r.get("thrashing"):
                bits.append("thrashing")
            if r.get("suggested_budget") not in (None, ""):
                bits.append("suggested budget %s" % r["suggested_budget"])
            if bits:
                extra.append("%s: %s" % (budget, ", ".join(bits)))
        out = plain_ref["out_head"].strip().replace("\n", " ") if plain_ref else ""
        note("Output: %d bytes%s. %s" % (plain_ref["out_bytes"] if plain_ref else 0,
                                         (" (`%s`)" % (out[:120] + ("..." if len(out) > 120 else "")))
                                         if plain_ref and plain_ref["out_bytes"] < 400 else "",
                                         ("At exit: " + "; ".join(extra) + ".") if extra else ""))
        note()

    if failures:
        note("## FAILURES")
        note()
        for name, budget, rep, r, why in failures:
            note("**FAIL** %s at %s (rep %d): %s" % (name, budget, rep, "; ".join(why)))
            note()
            note("command: `%s`" % " ".join(c if len(c) < 200 else c[:200] + "..." for c in r["cmd"]))
            note()
            note("stderr tail:")
            note()
            note("```")
            note(r["stderr_tail"].rstrip()[-2000:] or "(empty)")
            note("```")
            note()
            note("runtime log (RUN_DIR/log) tail:")
            note()
            note("```")
            note(r["log_tail"].rstrip()[-2000:] or "(empty)")
            note("```")
            note()
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    log("results written to %s" % args.out)
    if failures:
        log("heap_bench: %d run(s) FAILED:" % len(failures))
        for name, budget, rep, r, why in failures:
            log("  FAIL %s at %s (rep %d): %s" % (name, budget, rep, "; ".join(why)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
