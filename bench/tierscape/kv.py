"""TierScape on real servers (issue 13, item 7; TierScape §7.6): memcached and Redis under
`tiermem run` with the paper's placement configurations, and under the kernel's zswap at
the same memory, driven by tiermem-kvload (memtier-like Gaussian key popularity, every value
read is verified). Writes bench/tierscape/kv.md (+ kv.json).

    python3 bench/tierscape/kv.py [--servers memcached,redis] [--keys N] [--measure-s S]

Per server and configuration: fill every key (4 KiB JSON-like records), run the load for a
warm-up (the policy profiles and places), then measure: throughput, p50/p99 latency, the
memory TCO (tiermem: its stats, DRAM + pools against every managed page in DRAM; zswap: the
cgroup's charge, which includes the zswap pool, against RSS + swapped pages) and the server's
CPU (tiermem's own threads separately). The zswap run uses a cgroup-v1 memory limit equal to
the memory the 2T-A run ended with (RSS, pools included); swap, zswap, page-cluster and the
cgroup are restored or removed on exit, also on failure.

The runtime's compressed tiers all live in DRAM (no NVM here), so they differ in codec and
allocator only and each costs DRAM's price per byte: the saving comes from compression. The
five compressed tiers stand in for Table 2's: zbud-lz4, z3fold-lz4, zsmalloc-lz4,
zsmalloc-lzo, zsmalloc-deflate (ordered by fault latency, then by ratio, as characterized by
`tiermem tiers characterize` on this machine).
"""

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REL = ROOT / "target" / "release"
TIERMEM = REL / "tiermem"
KVLOAD = REL / "tiermem-kvload"

TIERS_2T = [("zs-lzo", "lzo", "zsmalloc")]
TIERS_6T = [
    ("zbud-lz4", "lz4", "zbud"),
    ("z3fold-lz4", "lz4", "z3fold"),
    ("zs-lz4", "lz4", "zsmalloc"),
    ("zs-lzo", "lzo", "zsmalloc"),
    ("zs-deflate", "deflate:6", "zsmalloc"),
]


def runtime_config(tiers, policy: str, window_ms: float) -> str:
    out = ['[runtime]', 'dram_budget = "unlimited"',
           '[[runtime.tiers]]', 'name = "dram"', 'kind = "dram"']
    for name, codec, alloc in tiers:
        out += ['[[runtime.tiers]]', f'name = "{name}"', 'kind = "compressed"',
                f'codec = "{codec}"', f'allocator = "{alloc}"']
    out += ['[policy]', policy, f'profile_window_ms = {window_ms}']
    return "\n".join(out) + "\n"


def configs(window_ms: float):
    wf = 'policy = "tierscape_waterfall"\nthreshold = "aggressive"'
    am = 'policy = "tierscape_analytical"\nalpha = {}'
    return [
        ("2T-A", runtime_config(TIERS_2T, wf, window_ms)),
        ("6T-WF-A", runtime_config(TIERS_6T, wf, window_ms)),
        ("6T-AM-0.5", runtime_config(TIERS_6T, am.format(0.5), window_ms)),
        ("6T-AM-0.1", runtime_config(TIERS_6T, am.format(0.1), window_ms)),
    ]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen) -> None:
    for _ in range(400):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port}")


def server_argv(server: str, port: int) -> list[str]:
    if server == "memcached":
        user = ["-u", "root"] if os.geteuid() == 0 else []
        return ["memcached", "-l", "127.0.0.1", "-p", str(port), "-m", "4096", "-t", "2", "-U", "0", *user]
    return ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--protected-mode", "no", "--maxmemory", "0"]


def proc_cpu_s(pid: int) -> float:
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def proc_status(pid: int, key: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def meminfo(key: str) -> int:
    for line in open("/proc/meminfo"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def kvload(port: int, args, server: str, *, fill: bool, seconds: float, out: Path) -> dict:
    cmd = [str(KVLOAD), "--protocol", server, "--port", str(port), "--keys", str(args.keys),
           "--value-size", "4096", "--duration-s", str(seconds), "--connections", str(args.connections),
           "--set-get", "1:10", "--key-stddev", str(args.key_stddev), "--out", str(out)]
    if fill:
        cmd.append("--fill")
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 600)
    if r.returncode != 0:
        raise RuntimeError(f"kvload failed ({r.returncode}): {r.stderr.strip()}")
    return json.loads(out.read_text())


def live_stats(run_dir: Path, pid: int) -> dict:
    p = run_dir / str(pid) / "stats.json"
    for _ in range(100):
        try:
            return json.loads(p.read_text())
        except (OSError, ValueError):
            time.sleep(0.1)
    raise RuntimeError(f"no stats at {p}")


class Zswap:
    """zswap (lzo, zsmalloc) on a private swap file and a cgroup-v1 memory limit; undone by
    close(), which the caller runs in a `finally`."""

    CG_ROOT = Path("/sys/fs/cgroup/memory")
    PARAMS = Path("/sys/module/zswap/parameters")

    def __init__(self, work: Path):
        self.swapfile = Path(f"/var/tmp/tiermem-kv-swap-{os.getpid()}")
        self.cg = self.CG_ROOT / f"tiermem-kv-{os.getpid()}"
        self.old = {k: (self.PARAMS / k).read_text().strip() for k in ("enabled", "compressor")}
        self.old_cluster = Path("/proc/sys/vm/page-cluster").read_text().strip()
        self.swap_on = False

    @classmethod
    def available(cls) -> str | None:
        if os.geteuid() != 0:
            return "not root"
        if not (cls.PARAMS / "enabled").exists():
            return "no zswap in this kernel"
        if not (cls.CG_ROOT / "memory.limit_in_bytes").exists():
            return "no cgroup-v1 memory controller"
        return None

    def open(self, limit: int) -> None:
        subprocess.run(["dd", "if=/dev/zero", f"of={self.swapfile}", "bs=1M", "count=2048", "status=none"], check=True)
        os.chmod(self.swapfile, 0o600)
        subprocess.run(["mkswap", "-q", str(self.swapfile)], check=True, capture_output=True)
        subprocess.run(["swapon", str(self.swapfile)], check=True)
        self.swap_on = True
        (self.PARAMS / "compressor").write_text("lzo")
        (self.PARAMS / "enabled").write_text("Y")
        # One page per fault, like tiermem (the default readahead refills the cgroup faster
        # than reclaim empties it: bench/runtime/run.sh).
        Path("/proc/sys/vm/page-cluster").write_text("0")
        self.cg.mkdir(exist_ok=True)
        (self.cg / "memory.limit_in_bytes").write_text(str(limit))

    def prefix(self) -> list[str]:
        return ["sh", "-c", f'echo $$ > {self.cg}/cgroup.procs && exec "$@"', "sh"]

    def charge(self) -> int:
        return int((self.cg / "memory.usage_in_bytes").read_text())

    def close(self) -> None:
        if self.cg.exists():
            for _ in range(50):
                try:
                    self.cg.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        if self.swap_on:
            subprocess.run(["swapoff", str(self.swapfile)], check=False)
        self.swapfile.unlink(missing_ok=True)
        Path("/proc/sys/vm/page-cluster").write_text(self.old_cluster)
        (self.PARAMS / "compressor").write_text(self.old["compressor"])
        (self.PARAMS / "enabled").write_text(self.old["enabled"])


def one(server: str, label: str, args, work: Path, *, config: str | None = None, zswap: Zswap | None = None) -> dict:
    port = free_port()
    env = dict(os.environ, TIERMEM_RUN_DIR=str(work / "run"))
    argv = server_argv(server, port)
    if config is not None:
        cfg = work / f"{label}.toml"
        cfg.write_text(config)
        argv = [str(TIERMEM), "run", "--config", str(cfg), "--", *argv]
    elif zswap is not None:
        argv = zswap.prefix() + argv
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    row = {"server": server, "config": label}
    try:
        wait_port(port, proc)
        kvload(port, args, server, fill=True, seconds=args.warmup_s, out=work / "warm.json")
        cpu0, t0 = proc_cpu_s(proc.pid), time.monotonic()
        st0 = live_stats(work / "run", proc.pid) if config else None
        load = kvload(port, args, server, fill=False, seconds=args.measure_s, out=work / "load.json")
        secs = time.monotonic() - t0
        row.update({k: load[k] for k in ("ops_per_s", "p50_us", "p99_us", "p999_us", "gets", "sets", "bad", "misses")})
        row["server_cpu"] = (proc_cpu_s(proc.pid) - cpu0) / secs
        rss, swapped = proc_status(proc.pid, "VmRSS"), proc_status(proc.pid, "VmSwap")
        row["rss_bytes"] = rss
        if config:
            st = live_stats(work / "run", proc.pid)
            row["tco_savings"] = st["tco_savings"]
            row["tiermem_cpu"] = (st["cpu_s"] - st0["cpu_s"]) / secs
            row["dram_bytes"] = st["resident_bytes"]
            row["pool_bytes"] = sum(t["pool_bytes"] for t in st["tiers"])
            row["tier_pages"] = {t["name"]: t["pages"] for t in st["tiers"]}
            row["tier_faults_per_s"] = sum(t["faults"] for t in st["tiers"]) / max(st["uptime_s"], 1e-9)
            # Whole-run fault service time per tier (from reading the fault message to the
            # installed page, lock waits included), where the tier served any.
            row["tier_fault_us"] = {t["name"]: [t["fault_p50_ns"] / 1e3, t["fault_p99_ns"] / 1e3]
                                    for t in st["tiers"] if t["faults"]}
        elif zswap is not None:
            charge = zswap.charge()
            row["zswap_pool_bytes"] = meminfo("Zswap")
            row["cgroup_charge_bytes"] = charge
            row["swapped_bytes"] = swapped
            row["tco_savings"] = 1 - charge / max(1, rss + swapped)
        else:
            row["tco_savings"] = 0.0
    except Exception as e:
        died = proc.poll()
        row["error"] = f"{e}" + (f" (the server exited with {died})" if died is not None else "")
    finally:
        alive = proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        row["stderr"] = (err or "").splitlines()[-20:]
        if not alive:
            print(f"{server} {label}: the server died ({proc.returncode}); its stderr:\n" + (err or ""), file=sys.stderr)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="memcached,redis")
    ap.add_argument("--keys", type=int, default=65536, help="4 KiB values (default 256 MiB)")
    ap.add_argument("--key-stddev", type=float, default=0.025,
                    help="Gaussian sigma as a fraction of the keys (redis-like 2.5 %%)")
    ap.add_argument("--connections", type=int, default=4)
    # 8 windows of warm-up: the waterfall needs 5 to reach its last tier. 5 s windows: at 2 s,
    # re-compressing regions down the 5 tiers took tiermem half a core, which on a 2-core
    # machine is the server's (TierScape §7.1 uses 120 s).
    ap.add_argument("--warmup-s", type=float, default=40.0)
    ap.add_argument("--measure-s", type=float, default=20.0)
    ap.add_argument("--window-ms", type=float, default=5000.0, help="the policies' profile window")
    ap.add_argument("--configs", default="", help="only these tiermem configurations (comma-separated; default all)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of plain and every configuration, interleaved; the table shows each one's median")
    ap.add_argument("--out", default=str(ROOT / "bench" / "tierscape" / "kv.md"))
    args = ap.parse_args()
    known = [label for label, _ in configs(args.window_ms)]
    wanted = [c for c in args.configs.split(",") if c]
    for c in wanted:
        if c not in known:
            print(f"kv.py: --configs: `{c}` is not one of {', '.join(known)}", file=sys.stderr)
            return 2
    if args.repeat < 1:
        print(f"kv.py: --repeat: {args.repeat} is not a positive count", file=sys.stderr)
        return 2
    for b in (TIERMEM, KVLOAD):
        if not b.exists():
            print(f"kv.py: {b} missing (cargo build --release --workspace)", file=sys.stderr)
            return 2
    servers = [s for s in args.servers.split(",") if s]
    for s in servers:
        if s not in ("memcached", "redis"):
            print(f"kv.py: --servers: `{s}` is not memcached or redis", file=sys.stderr)
            return 2
    work = Path(tempfile.mkdtemp(prefix="tiermem-kv."))
    (work / "run").mkdir(mode=0o700)
    rows = []
    no_zswap = Zswap.available()
    try:
        for server in servers:
            if shutil.which(server_argv(server, 0)[0]) is None:
                print(f"kv.py: {server} not installed: skipped", file=sys.stderr)
                continue
            # Rounds interleave the configurations so that the machine's drift (a shared VM's
            # neighbours) falls on all of them alike.
            for rnd in range(1, args.repeat + 1):
                print(f"== {server}: plain (round {rnd})", flush=True)
                rows.append(dict(one(server, "plain", args, work), round=rnd))
                for label, cfg in configs(args.window_ms):
                    if wanted and label not in wanted:
                        continue
                    print(f"== {server}: {label} (round {rnd})", flush=True)
                    rows.append(dict(one(server, label, args, work, config=cfg), round=rnd))
            limits = [r["rss_bytes"] for r in rows
                      if r["server"] == server and r["config"] == "2T-A" and "rss_bytes" in r]
            if no_zswap is None and not limits:
                print(f"kv.py: {server}: zswap skipped (its memory limit is 2T-A's, which did not run)", file=sys.stderr)
            if no_zswap is None and limits:
                limit = sorted(limits)[len(limits) // 2]
                z = Zswap(work)
                try:
                    z.open(limit)
                    print(f"== {server}: zswap (cgroup limit {limit >> 20} MiB)", flush=True)
                    rows.append(one(server, "zswap", args, work, zswap=z))
                finally:
                    z.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    write(rows, args, no_zswap)
    return 1 if any(r.get("bad") or r.get("misses") or r.get("error") for r in rows) else 0


def medians(rows):
    """One row per server and configuration: each measure's median over its rounds (the
    lower middle one for an even count), with the number of rounds."""
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["server"], r["config"]), []).append(r)
    out = []
    for (server, config), rs in groups.items():
        ok = [r for r in rs if "ops_per_s" in r]
        if not ok:
            out.append(rs[0])
            continue
        m = {"server": server, "config": config, "runs": len(ok)}
        for k in ("ops_per_s", "p50_us", "p99_us", "tco_savings", "rss_bytes", "server_cpu", "tiermem_cpu"):
            vals = sorted(r[k] for r in ok if k in r)
            if vals:
                m[k] = vals[(len(vals) - 1) // 2]
        m["bad"] = sum(r["bad"] for r in ok)
        m["misses"] = sum(r["misses"] for r in ok)
        out.append(m)
    return out


def write(rows, args, no_zswap) -> None:
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    rows = medians(rows)
    load = open("/proc/loadavg").read().split()[:3]
    lines = [
        "# TierScape on real servers: memcached and Redis under tiermem and zswap",
        "",
        f"Written by `{' '.join(['python3', 'bench/tierscape/kv.py', *sys.argv[1:]])}` (`make bench`: no "
        f"flags), {time.strftime('%Y-%m-%d')}, "
        f"{os.cpu_count()} CPUs, load average {' '.join(load)} at the end. {args.keys} keys of 4 KiB "
        f"(JSON-like text), Gaussian popularity sigma = {args.key_stddev:.1%} of the keys, SET:GET 1:10, "
        f"{args.connections} connections closed-loop, {args.warmup_s:.0f} s warm-up then {args.measure_s:.0f} s measured; "
        f"profile window {args.window_ms:.0f} ms. Every value read was verified (column `bad`). "
        "Slowdown = 1 - ops/s against plain. TCO saved: tiermem's stats (DRAM + pools against all managed "
        "pages in DRAM); zswap: 1 - cgroup charge (zswap pool included) / (RSS + swapped). "
        "Server CPU = the server process's CPU per second (tiermem's threads included; their share in "
        "brackets)." + (f" {args.repeat} interleaved rounds; each cell is the median over them." if args.repeat > 1 else "")
        + (f" zswap skipped: {no_zswap}." if no_zswap else ""),
        "",
        "| server | config | ops/s | slowdown | p50 us | p99 us | TCO saved | RSS MiB | server CPU | bad |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    plain = {r["server"]: r.get("ops_per_s", 0) for r in rows if r["config"] == "plain"}
    for r in rows:
        if "ops_per_s" not in r:
            lines.append(f"| {r['server']} | {r['config']} | FAILED: {r.get('error', '?')} | | | | | | | |")
            continue
        slow = 1 - r["ops_per_s"] / plain[r["server"]] if plain.get(r["server"]) else float("nan")
        cpu = f"{r['server_cpu']:.0%}" + (f" ({r['tiermem_cpu']:.0%})" if "tiermem_cpu" in r else "")
        lines.append(
            f"| {r['server']} | {r['config']} | {r['ops_per_s']:.0f} | {slow:.1%} | {r['p50_us']:.0f} | "
            f"{r['p99_us']:.0f} | {r['tco_savings']:.1%} | {r['rss_bytes'] / 2**20:.0f} | {cpu} | {r['bad'] + r['misses']} |")
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
