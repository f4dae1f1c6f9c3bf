"""`tiermem run --metrics-listen`: /metrics scraped and parsed with prometheus_client's own
text parser (not string matching), and compared value by value with `tiermem stat --json`.

The program is a Python process holding ~46 MiB of compressible buffers under the SLO
controller with a 16 MiB ceiling, so it has pages in DRAM and in the compressed tier and an
SLO state. Once pages are compressed it is stopped (SIGSTOP: its runtime publishes nothing
more), and both readers then see one snapshot: every value they both show must be equal.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "target" / "release" / "tiermem"

PROGRAM = r"""
import sys, time
chunks = [bytearray((b"chunk %06d of the metrics test " % i) * 30000) for i in range(48)]
print("ready", sum(len(c) for c in chunks), flush=True)
time.sleep(120)
"""

# JSON field of `tiermem stat --json` -> (sample name, extra labels) on /metrics.
SCALARS = {
    "uptime_s": ("tiermem_uptime_seconds", {}),
    "budget_bytes": ("tiermem_budget_bytes", {}),
    "managed_bytes": ("tiermem_managed_bytes", {}),
    "max_managed_bytes": ("tiermem_max_managed_bytes", {}),
    "resident_bytes": ("tiermem_resident_bytes", {}),
    "max_resident_bytes": ("tiermem_max_resident_bytes", {}),
    "footprint_bytes": ("tiermem_footprint_bytes", {}),
    "regions": ("tiermem_regions", {}),
    "unregistered_bytes": ("tiermem_unregistered_bytes", {}),
    "process_anon_bytes": ("tiermem_process_anon_bytes", {}),
    "unmanaged_anon_bytes": ("tiermem_unmanaged_anon_bytes", {}),
    "max_over_budget_bytes": ("tiermem_max_over_budget_bytes", {}),
    "incompressible_resident_bytes": ("tiermem_incompressible_resident_bytes", {}),
    "thrashing": ("tiermem_thrashing", {}),
    "probe_cpu_share": ("tiermem_probe_cpu_ratio", {}),
    "tco_savings": ("tiermem_tco_savings_ratio", {}),
    "adopted_bytes": ("tiermem_adopted_bytes_total", {}),
    "hint_sampled": ("tiermem_hint_sampled_total", {}),
    "hint_faults": ("tiermem_hint_faults_total", {}),
    "evict_busy": ("tiermem_evict_busy_total", {}),
    "evict_no_page": ("tiermem_evict_no_page_total", {}),
    "resident_refilled": ("tiermem_resident_refilled_total", {}),
    "absent_with_page": ("tiermem_absent_with_page_total", {}),
    "misreported_moves": ("tiermem_misreported_moves_total", {}),
    "remap_moves": ("tiermem_remap_moves_total", {}),
    "remap_refused": ("tiermem_remap_refused_total", {}),
    "move_ops": ("tiermem_move_ops_total", {}),
    "moved_pages": ("tiermem_moved_pages_total", {}),
    "forks": ("tiermem_forks_total", {}),
    "quanta": ("tiermem_quanta_total", {}),
    "tier_fault_service_s": ("tiermem_tier_fault_service_seconds_total", {}),
    "room_waits": ("tiermem_room_waits_total", {}),
    "room_wait_s": ("tiermem_room_wait_seconds_total", {}),
    "cpu_fault_thread_s": ("tiermem_cpu_seconds_total", {"thread": "fault"}),
    "cpu_manager_thread_s": ("tiermem_cpu_seconds_total", {"thread": "manager"}),
    "first_touch_faults": ("tiermem_tier_faults_total", {"tier": "0:dram", "codec": "-", "allocator": "-"}),
    "dram_latency_ns": ("tiermem_tier_latency_ns", {"tier": "0:dram", "codec": "-", "allocator": "-"}),
    "dram_cost_per_gb": ("tiermem_tier_cost_per_gb", {"tier": "0:dram", "codec": "-", "allocator": "-"}),
    "messages_info": ("tiermem_messages_total", {"level": "info"}),
    "messages_warn": ("tiermem_messages_total", {"level": "warn"}),
    "messages_fatal": ("tiermem_messages_total", {"level": "fatal"}),
}
TIER = {
    "pages": "tiermem_tier_pages",
    "stored_bytes": "tiermem_tier_stored_bytes",
    "compressed_bytes": "tiermem_tier_compressed_bytes",
    "pool_bytes": "tiermem_tier_pool_bytes",
    "faults": "tiermem_tier_faults_total",
    "latency_ns": "tiermem_tier_latency_ns",
    "migrations_in": "tiermem_tier_migrations_in_total",
    "migrations_out": "tiermem_tier_migrations_out_total",
    "rejected_incompressible": "tiermem_tier_rejected_incompressible_total",
    "cost_per_gb": "tiermem_tier_cost_per_gb",
}
SLO = {
    "target_stall": "tiermem_slo_target_stall_ratio",
    "stall_share": "tiermem_slo_stall_ratio",
    "cold_bytes": "tiermem_slo_cold_bytes",
    "saved_bytes": "tiermem_slo_saved_bytes",
    "probes": "tiermem_slo_probes_total",
    "backoffs": "tiermem_slo_backoffs_total",
    "idle_offloaded_bytes": "tiermem_slo_idle_offloaded_bytes_total",
}
FAULT_AROUND = {
    "unit_bytes": "tiermem_fault_around_unit_bytes",
    "pages_around": "tiermem_fault_around_pages_total",
    "decisions": "tiermem_fault_around_decisions_total",
    "switches": "tiermem_fault_around_switches_total",
    "scan_restarts": "tiermem_fault_around_scan_restarts_total",
}
PLAN = {
    "pages_tried": ("tiermem_plan_pages_total", {"outcome": "tried"}),
    "pages_applied": ("tiermem_plan_pages_total", {"outcome": "applied"}),
    "pages_already_there": ("tiermem_plan_pages_total", {"outcome": "already_there"}),
    "pages_no_capacity": ("tiermem_plan_pages_total", {"outcome": "no_capacity"}),
    "pages_over_quota": ("tiermem_plan_pages_total", {"outcome": "over_quota"}),
    "ops_applied": ("tiermem_plan_ops_applied_total", {}),
    "moves_malformed": ("tiermem_plan_moves_malformed_total", {}),
    "bytes_moved": ("tiermem_plan_bytes_moved_total", {}),
}
# Fields that are not numbers on /metrics: the pid is every sample's label, these strings
# are labels of tiermem_info (checked below) or text only `tiermem stat` prints.
NOT_SAMPLES = {"pid", "budget", "policy", "tracker", "suggested_budget", "recent_messages", "log_file", "cpu_s"}
UNITS = ["4KiB", "64KiB", "2MiB"]


def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        ctype = r.headers["Content-Type"]
        assert ctype.startswith("text/plain; version=0.0.4"), ctype
        text = r.read().decode()
    samples = {}
    families = list(text_string_to_metric_families(text))
    for fam in families:
        # HELP and TYPE for every family: the parser leaves documentation empty and the
        # type "unknown" for a family without them.
        assert fam.documentation, f"{fam.name}: no HELP"
        assert fam.type in ("gauge", "counter"), f"{fam.name}: TYPE {fam.type}"
        for s in fam.samples:
            key = (s.name, frozenset(s.labels.items()))
            assert key not in samples, f"sample {key} twice"
            samples[key] = s.value
    assert text.count("# TYPE ") == len(families)
    return samples


def equal(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)


@pytest.fixture
def tiermem() -> Path:
    assert BIN.is_file(), f"{BIN} missing: `make setup` (cargo build --release) builds it"
    return BIN


def test_non_loopback_address_is_refused_before_the_program_starts(tmp_path, tiermem):
    marker = tmp_path / "started"
    r = subprocess.run(
        [str(tiermem), "run", "--metrics-listen", "0.0.0.0:0", "--", "touch", str(marker)],
        capture_output=True, text=True, timeout=30,
    )
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "0.0.0.0 is not a loopback address" in lines[0] and "--metrics-allow-remote" in lines[0], lines
    assert not marker.exists()
    r = subprocess.run(
        [str(tiermem), "run", "--metrics-listen", "nonsense", "--", "true"],
        capture_output=True, text=True, timeout=30,
    )
    assert r.returncode == 2 and "--metrics-listen nonsense: expected IP:PORT" in r.stderr, r


def socket_inodes(pid: int) -> set[str]:
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            out.add(link[8:-1])
    return out


def listening_inode(port: int) -> str:
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        f = line.split()
        if f[1].endswith(f":{port:04X}") and f[3] == "0A":  # 0A: LISTEN
            return f[9]
    raise AssertionError(f"nothing listens on port {port}")


def test_metrics_agree_with_tiermem_stat(tmp_path, tiermem):
    env = dict(os.environ, TIERMEM_RUN_DIR=str(tmp_path / "run"))
    prog = subprocess.Popen(
        [str(tiermem), "run", "--slo", "stall=1%", "--dram-budget", "16M",
         "--metrics-listen", "127.0.0.1:0", "--", sys.executable, "-c", PROGRAM],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        first = prog.stderr.readline()
        assert first.startswith("tiermem: metrics on http://127.0.0.1:"), first
        url = first.split(" on ", 1)[1].strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        assert prog.stdout.readline().startswith("ready"), "program did not start"

        def stat() -> dict:
            r = subprocess.run([str(tiermem), "stat", str(prog.pid), "--json"],
                               capture_output=True, text=True, timeout=30, env=env)
            assert r.returncode == 0, r.stderr
            return json.loads(r.stdout)

        deadline = time.time() + 60
        while not (stat()["tiers"][0]["pages"] > 1000 and stat().get("slo")):
            assert time.time() < deadline, "no page was compressed in 60 s"
            time.sleep(0.3)
        # One snapshot for both readers: the stopped program publishes nothing more (a
        # publication under way when it stopped is one rename, done or not).
        os.kill(prog.pid, signal.SIGSTOP)
        time.sleep(0.6)
        m = scrape(url)
        s = stat()
        pid = str(prog.pid)

        def get(name: str, labels: dict) -> float:
            key = (name, frozenset({"pid": pid, **labels}.items()))
            assert key in m, f"{key} not on /metrics"
            return m[key]

        checked = 0

        def check(field: str, value, name: str, labels: dict) -> None:
            nonlocal checked
            got = get(name, labels)
            assert equal(float(value), got), f"{field} = {value} in `tiermem stat`, {name}{labels} = {got}"
            checked += 1

        assert get("tiermem_stats_available", {}) == 1
        unmapped = []
        for field, value in s.items():
            if field in SCALARS:
                check(field, value, *SCALARS[field])
            elif field == "tiers":
                assert value, "no compressed tier"
                for t in value:
                    lab = {"tier": t["name"], "codec": t["codec"], "allocator": t["allocator"]}
                    for k, v in t.items():
                        if k in TIER:
                            check(f"tiers.{k}", v, TIER[k], lab)
                        elif k in ("fault_p50_ns", "fault_p99_ns"):
                            q = "0.5" if k == "fault_p50_ns" else "0.99"
                            check(f"tiers.{k}", v, "tiermem_tier_fault_service_ns", {**lab, "quantile": q})
                        elif k not in ("name", "codec", "allocator"):
                            unmapped.append(f"tiers.{k}")
            elif field == "slo":
                assert value is not None
                assert get("tiermem_slo_active", {}) == 1
                for k, v in value.items():
                    if k in SLO:
                        check(f"slo.{k}", v, SLO[k], {})
                    else:
                        unmapped.append(f"slo.{k}")
            elif field == "fault_around":
                for k, v in value.items():
                    if k in FAULT_AROUND:
                        check(f"fault_around.{k}", v, FAULT_AROUND[k], {})
                    elif k == "faults_by_unit":
                        for u, n in zip(UNITS, v, strict=True):
                            check("fault_around.faults_by_unit", n, "tiermem_fault_around_faults_total", {"unit": u})
                    elif k != "mode":
                        unmapped.append(f"fault_around.{k}")
            elif field == "plan":
                for k, v in value.items():
                    if k in PLAN:
                        check(f"plan.{k}", v, *PLAN[k])
                    else:
                        unmapped.append(f"plan.{k}")
            elif field == "left_to_kernel":
                for k, v in value.items():
                    check(f"left_to_kernel.{k}", v, f"tiermem_left_to_kernel_{k}_total", {})
            elif field == "policy_counters":
                for k, v in value.items():
                    check(f"policy_counters.{k}", v, "tiermem_policy_counter", {"name": k})
            elif field not in NOT_SAMPLES:
                unmapped.append(field)
        assert not unmapped, (
            f"`tiermem stat --json` fields with no sample on /metrics: {unmapped}; "
            "add them to Stats::write_metrics (crates/tiermem-linux/src/metrics.rs) and here"
        )
        cpu = get("tiermem_cpu_seconds_total", {"thread": "fault"}) + get(
            "tiermem_cpu_seconds_total", {"thread": "manager"})
        assert abs(cpu - s["cpu_s"]) < 1e-9
        info = get("tiermem_info", {"policy": s["policy"] or "budget", "tracker": s["tracker"],
                                    "budget": s["budget"], "fault_around": s["fault_around"]["mode"]})
        assert info == 1
        assert checked >= 70, checked
        # Tried vs applied: the ceiling made the guard plan demotions, and it moved pages.
        assert s["plan"]["pages_tried"] >= s["plan"]["pages_applied"] > 1000, s["plan"]
        # The server is not the program, nor its child, and the program has no socket of it.
        inode = listening_inode(port)
        assert inode not in socket_inodes(prog.pid)
        holders = [p for p in os.listdir("/proc") if p.isdigit() and p != str(os.getpid())
                   and _holds(int(p), inode)]
        assert len(holders) == 1, holders
        status = Path(f"/proc/{holders[0]}/status").read_text()
        assert "Name:\ttiermem-metrics" in status, status
        ppid = int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))
        assert ppid != prog.pid
    finally:
        os.kill(prog.pid, signal.SIGCONT)
        prog.kill()
        prog.wait(timeout=30)
    # The server goes with the program.
    deadline = time.time() + 5
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
        except (urllib.error.URLError, ConnectionError):
            break
        assert time.time() < deadline, "the metrics server outlived the program"
        time.sleep(0.1)


def _holds(pid: int, inode: str) -> bool:
    try:
        return inode in socket_inodes(pid)
    except OSError:
        return False


QOS = """
[qos]
dram = "64M"
report_s = 0
cpu_limits = false

[controller]
controller = "mercury"
memory_step = "4M"

[[controller.tenants]]
name = "ls"
slo = "20ms/s"
priority = 2

[[controller.tenants]]
name = "bi"
slo = "0.1cpu"
priority = 1

[[tenants]]
name = "ls"
command = ["PY", "-c", "PROG"]

[[tenants]]
name = "bi"
command = ["PY", "-c", "PROG"]
"""


def test_qos_serves_its_tenants_and_their_runtimes(tmp_path, tiermem):
    prog = "import time; b = [bytearray(b'q' * 300000) for _ in range(40)]; time.sleep(30)"
    cfg = tmp_path / "qos.toml"
    cfg.write_text(QOS.replace("PY", sys.executable).replace("PROG", prog))
    env = dict(os.environ, TIERMEM_RUN_DIR=str(tmp_path / "run"))
    qos = subprocess.Popen(
        [str(tiermem), "qos", "--config", str(cfg), "--duration", "6", "--metrics-listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        first = qos.stderr.readline()
        assert first.startswith("tiermem: metrics on http://127.0.0.1:"), first
        url = first.split(" on ", 1)[1].strip()
        deadline = time.time() + 30
        while True:
            m = scrape(url)
            running = {dict(k[1])["pid"]: dict(k[1])["tenant"] for k, v in m.items()
                       if k[0] == "tiermem_qos_tenant_running" and v == 1}
            stats = {dict(k[1])["pid"] for k, v in m.items() if k[0] == "tiermem_stats_available" and v == 1}
            if len(running) == 2 and stats == set(running):
                break
            assert time.time() < deadline, f"tenants never all published: {running} {stats}"
            time.sleep(0.3)
        assert sorted(running.values()) == ["bi", "ls"]
        for pid in running:
            # Each tenant's runtime, in the same families, told apart by its pid.
            assert m[("tiermem_managed_bytes", frozenset({"pid": pid}.items()))] > 10e6
        assert any(k[0] == "tiermem_qos_dram_bytes" and v == 64 << 20 for k, v in m.items())
    finally:
        out, err = qos.communicate(timeout=60)
    assert qos.returncode == 0, err
