//! Real, unmodified programs under `tiermem run` with a small DRAM budget give
//! byte-identical results to plain runs. Heavy: skipped with TIERMEM_SKIP_E2E=1.
//! A missing program fails the test, naming its Debian package.

mod common;
use common::*;
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PY_HASH: &str = r#"
import hashlib, random
random.seed(7)
d = {}
for i in range(300000):
    d[i] = ("k%d" % i) * 5 + str(random.random())
l = [list(range(i, i + 50)) for i in range(20000)]
b = bytearray(48 << 20)
for i in range(0, len(b), 4096):
    b[i] = i % 251
h = hashlib.sha256()
for k in sorted(d):
    h.update(d[k].encode())
for x in l:
    h.update(bytes(str(x), "ascii"))
h.update(b)
print(h.hexdigest(), len(d), len(l))
"#;

#[test]
fn python3_builds_and_hashes_a_large_structure_identically() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let want = ok(
        &run(
            plain(&["python3", "-c", PY_HASH]),
            None,
            300,
            "plain python3",
        ),
        "plain python3",
    );
    let (cmd, stats) = tiered("20%", &["python3", "-c", PY_HASH]);
    let got = ok(&run(cmd, None, 300, "tiered python3"), "tiered python3");
    assert_eq!(got, want);
    let s = final_stats(&stats);
    assert!(
        migrations_in(&s) > 10_000 && tier_faults(&s) > 1_000,
        "little was tiered: {s}"
    );
}

/// System calls on evicted memory: the kernel itself faults on managed pages. The buffer
/// is pushed out of DRAM, then written to a file with write(2) (the kernel reads evicted
/// pages) and, after being pushed out again, refilled with read(2) (the kernel writes into
/// evicted pages). Only small buffers (unmanaged) are touched in between.
const PY_SYSCALLS: &str = r#"
import hashlib, json, os, sys, tempfile, time
N = 32 << 20
def head(i, xor):
    return bytes(x ^ xor for x in hashlib.sha256(i.to_bytes(8, "little")).digest() * 2)
def expect(xor):
    h, z = hashlib.sha256(), bytes(4096 - 64)
    for i in range(0, N, 4096):
        h.update(head(i, xor) + z)
    return h.hexdigest()
def settle():
    time.sleep(2)
    p = os.path.join(os.environ.get("TIERMEM_RUN_DIR", "/tmp/tiermem"), str(os.getpid()), "stats.json")
    try:
        print("resident_mib", json.load(open(p))["resident_bytes"] >> 20, file=sys.stderr)
    except OSError:
        pass
b = bytearray(N)
for i in range(0, N, 4096):
    b[i:i + 64] = head(i, 0)
mv = memoryview(b)
fd, path = tempfile.mkstemp()
settle()
off = 0
while off < N:
    off += os.write(fd, mv[off:])
os.lseek(fd, 0, 0)
h = hashlib.sha256()
while c := os.read(fd, 65536):
    h.update(c)
print("write(2) from evicted pages:", h.hexdigest() == expect(0))
z = bytes(4096 - 64)
for i in range(0, N, 4096):
    os.pwrite(fd, head(i, 0x5A) + z, i)
settle()
os.lseek(fd, 0, 0)
f = os.fdopen(fd, "rb", buffering=0)
got = 0
while got < N:
    got += f.readinto(mv[got:])
print("read(2) into evicted pages:", hashlib.sha256(b).hexdigest() == expect(0x5A))
os.unlink(path)
"#;

#[test]
fn python3_syscalls_read_and_write_evicted_pages() {
    if skip_e2e("python3") {
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let argv = ["python3", "-c", PY_SYSCALLS];
    let want = ok(
        &run(plain(&argv), None, 300, "plain python3"),
        "plain python3",
    );
    assert_eq!(
        want.matches("True").count(),
        2,
        "the plain run itself is wrong: {want}"
    );
    let (mut cmd, stats) = tiered("4M", &argv);
    let run_dir = private_run_dir();
    cmd.env("TIERMEM_RUN_DIR", &run_dir);
    let out = run(cmd, None, 300, "tiered python3");
    let _ = std::fs::remove_dir_all(&run_dir);
    let got = ok(&out, "tiered python3");
    assert_eq!(got, want);
    // Both system calls found the buffer (32 MiB) evicted: resident stayed near the budget.
    let err = String::from_utf8_lossy(&out.stderr);
    let resident: Vec<u64> = err
        .lines()
        .filter_map(|l| l.strip_prefix("resident_mib ")?.trim().parse().ok())
        .collect();
    assert_eq!(resident.len(), 2, "no residency reports: {err}");
    assert!(
        resident.iter().all(|&r| r <= 12),
        "buffer was not evicted before the system calls: {resident:?}"
    );
    let s = final_stats(&stats);
    assert!(
        tier_faults(&s) >= 2 * 8192 * 9 / 10,
        "the kernel's accesses did not fault: {s}"
    );
}

const SQL: &str = r#"
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 300000)
INSERT INTO t SELECT x, printf('key%08d', (x*7919) % 300000), zeroblob(100) || printf('%d', x*x) FROM c;
CREATE INDEX ik ON t(k);
SELECT count(*), sum(length(v)), hex(substr(group_concat(k), 1, 60)) FROM t;
SELECT k, id FROM t WHERE k LIKE 'key0001%' ORDER BY k LIMIT 20;
UPDATE t SET v = printf('%d', id % 977) WHERE id % 3 = 0;
SELECT sum(id * length(k)), total(length(v)) FROM t WHERE id % 7 = 3;
SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY v, id LIMIT 50);
"#;

/// sqlite3's page cache is ~4 KiB mallocs (below any sensible threshold): `-pagecache`
/// gives it one large buffer, which tiermem manages. The database is in memory.
#[test]
fn sqlite3_large_in_memory_database_identical() {
    if skip_e2e("sqlite3") {
        return;
    }
    require("sqlite3", "sqlite3");
    let _h = heavy();
    let argv = ["sqlite3", "-pagecache", "4400", "80000", ":memory:"];
    let want = ok(
        &run(plain(&argv), Some(SQL.as_bytes()), 300, "plain sqlite3"),
        "plain sqlite3",
    );
    let (cmd, stats) = tiered("20%", &argv);
    let got = ok(
        &run(cmd, Some(SQL.as_bytes()), 300, "tiered sqlite3"),
        "tiered sqlite3",
    );
    assert_eq!(got, want);
    let s = final_stats(&stats);
    assert!(migrations_in(&s) > 10_000, "little was tiered: {s}");
}

/// memcached on 127.0.0.1:`port`, 1 GiB of cache, two threads (as root: `-u root`).
fn memcached_argv(port: &str) -> Vec<&str> {
    [
        "memcached",
        "-l",
        "127.0.0.1",
        "-p",
        port,
        "-m",
        "1024",
        "-U",
        "0",
        "-t",
        "2",
        "-u",
        "root",
    ]
    .to_vec()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_port(port: u16, child: &mut Child, what: &str) {
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(st)) = child.try_wait() {
            panic!("{what} exited early: {st}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "{what} did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills (by PID) a server we started, on every exit path of a test.
struct Server(Option<Child>);
impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn cli(args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut c = Command::new("redis-cli");
    c.args(args);
    ok(&run(c, stdin, 120, "redis-cli"), "redis-cli")
}

const REDIS_LOAD: &str = r#"
import random, sys
random.seed(3)
out = []
for i in range(150000):
    v = "v%d-" % i + "x" * random.randint(10, 300) + str(random.random())
    k = "key:%d" % i
    out.append("*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
    if i % 10 == 0:
        h = "h:%d" % i
        out.append("*4\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n$1\r\nf\r\n$%d\r\n%s\r\n" % (len(h), h, len(v), v))
sys.stdout.write("".join(out))
"#;

#[test]
fn redis_bgsave_dump_reloads_identically() {
    if skip_e2e("redis") {
        return;
    }
    require("redis-server", "redis-server");
    require("redis-cli", "redis-tools");
    let _h = heavy();
    let dir = std::env::temp_dir().join(format!("tiermem-redis-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let load = ok(
        &run(
            plain(&["python3", "-c", REDIS_LOAD]),
            None,
            120,
            "redis load gen",
        ),
        "load gen",
    );

    let port = free_port();
    let ps = port.to_string();
    let d = dir.to_str().unwrap();
    let (mut cmd, stats) = tiered(
        "25%",
        &[
            "redis-server",
            "--port",
            &ps,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--dir",
            d,
            "--enable-debug-command",
            "yes",
            "--daemonize",
            "no",
        ],
    );
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut srv = Server(Some(cmd.spawn().unwrap()));
    wait_port(port, srv.0.as_mut().unwrap(), "tiered redis-server");
    let piped = cli(&["-p", &ps, "--pipe"], Some(load.as_bytes()));
    assert!(piped.contains("errors: 0"), "{piped}");
    let digest = cli(&["-p", &ps, "debug", "digest"], None);
    assert!(!digest.starts_with("0000000000"), "empty dataset: {digest}");
    // BGSAVE forks: the child writes the dump from its copy of the (tiered) memory.
    cli(&["-p", &ps, "bgsave"], None);
    let t0 = Instant::now();
    loop {
        let info = cli(&["-p", &ps, "info", "persistence"], None);
        if info.contains("rdb_bgsave_in_progress:0") && dir.join("dump.rdb").exists() {
            assert!(info.contains("rdb_last_bgsave_status:ok"), "{info}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "BGSAVE did not finish: {info}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Copy-on-write held: the parent still has the same data.
    assert_eq!(cli(&["-p", &ps, "debug", "digest"], None), digest);
    let _ = cli(&["-p", &ps, "shutdown", "nosave"], None);
    let out = wait_timeout(srv.0.take().unwrap(), 60, "tiered redis-server exit");
    assert!(out.status.success(), "{out:?}");
    let s = final_stats(&stats);
    assert!(migrations_in(&s) > 1_000, "little was tiered: {s}");
    assert!(s["forks"].as_u64().unwrap() >= 1, "{s}");

    // Load the dump in a plain redis-server and compare.
    let port2 = free_port();
    let ps2 = port2.to_string();
    let mut c2 = plain(&[
        "redis-server",
        "--port",
        &ps2,
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--dir",
        d,
        "--enable-debug-command",
        "yes",
    ]);
    c2.stdout(Stdio::null()).stderr(Stdio::null());
    let mut plain_srv = Server(Some(c2.spawn().unwrap()));
    wait_port(port2, plain_srv.0.as_mut().unwrap(), "plain redis-server");
    let t0 = Instant::now();
    while cli(&["-p", &ps2, "ping"], None).contains("LOADING")
        && t0.elapsed() < Duration::from_secs(60)
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        cli(&["-p", &ps2, "debug", "digest"], None),
        digest,
        "the dump does not reload to the same dataset"
    );
    let _ = cli(&["-p", &ps2, "shutdown", "nosave"], None);
    drop(plain_srv);
    let _ = std::fs::remove_dir_all(&dir);
}

const MC_CHECK: &str = r#"
import socket, sys, hashlib
port, mode, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rwb")
def val(i):
    h = hashlib.sha256(b"%d" % i).hexdigest().encode()
    return (h * (1 + i % 40))[: 100 + (i * 37) % 3000]
bad = 0
if mode == "set":
    for i in range(n):
        v = val(i)
        f.write(b"set tk:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(v), v))
    f.flush()
    f.write(b"version\r\n"); f.flush(); f.readline()
else:
    for i in range(0, n, 100):
        keys = b" ".join(b"tk:%d" % j for j in range(i, min(n, i + 100)))
        f.write(b"get " + keys + b"\r\n"); f.flush()
        got = {}
        while True:
            line = f.readline()
            if line == b"END\r\n": break
            _, k, _, ln = line.split()
            got[k] = f.read(int(ln) + 2)[:-2]
        for j in range(i, min(n, i + 100)):
            if got.get(b"tk:%d" % j) != val(j): bad += 1
    print("verified", n, "bad", bad)
sys.exit(1 if bad else 0)
"#;

#[test]
fn memcached_memcaslap_load_every_value_read_back() {
    if skip_e2e("memcached") {
        return;
    }
    require("memcached", "memcached");
    require("memcaslap", "libmemcached-tools");
    let _h = heavy();
    let port = free_port();
    let ps = port.to_string();
    let (mut cmd, stats) = tiered("25%", &memcached_argv(&ps));
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut srv = Server(Some(cmd.spawn().unwrap()));
    wait_port(port, srv.0.as_mut().unwrap(), "tiered memcached");
    let n = "60000";
    ok(
        &run(
            plain(&["python3", "-c", MC_CHECK, &ps, "set", n]),
            None,
            300,
            "mc set",
        ),
        "memcached set",
    );
    // memcaslap: its own mixed load, with verification of what it reads.
    let server = format!("127.0.0.1:{port}");
    let slap = run(
        plain(&[
            "memcaslap",
            "-s",
            &server,
            "-t",
            "8s",
            "-c",
            "16",
            "-T",
            "2",
            "-X",
            "2000",
            "-v",
            "1.0",
        ]),
        None,
        120,
        "memcaslap",
    );
    let slap_out = String::from_utf8_lossy(&slap.stdout).to_string();
    assert!(slap.status.success(), "memcaslap failed: {slap:?}");
    eprintln!("{slap_out}");
    assert!(!slap_out.contains("data verification failed"), "{slap_out}");
    let out = ok(
        &run(
            plain(&["python3", "-c", MC_CHECK, &ps, "get", n]),
            None,
            300,
            "mc get",
        ),
        "memcached read-back",
    );
    assert!(out.contains("bad 0"), "{out}");
    // SAFETY: signals our own child process, which is still running.
    unsafe { libc::kill(srv.0.as_ref().unwrap().id() as i32, libc::SIGTERM) };
    let o = wait_timeout(srv.0.take().unwrap(), 60, "memcached exit");
    let _ = o;
    let s = final_stats(&stats);
    assert!(migrations_in(&s) > 1_000, "little was tiered: {s}");
}

/// TierScape's policies on real servers (issue 13): memcached (glibc malloc) and Redis
/// (jemalloc, which exports its own C++ `operator new`) under DRAM + three compressed tiers,
/// with `tierscape_analytical` (HiGHS solves on tiermem's manager thread inside the server:
/// its worker threads, then its allocations through jemalloc's `operator new`, then its
/// static objects destroyed at exit on a program thread each once crashed a server) and
/// `tierscape_waterfall` (which once moved nothing: the runtime's untouched pages counted
/// as compressed). tiermem-kvload's Gaussian load verifies every value; the server exits 0.
#[test]
fn servers_under_tierscape_policies_keep_every_value_and_exit_cleanly() {
    if skip_e2e("memcached") {
        return;
    }
    require("memcached", "memcached");
    require("redis-server", "redis-server");
    let _h = heavy();
    for server in ["memcached", "redis"] {
        for policy in [
            "policy = \"tierscape_analytical\"\nalpha = 0.1",
            "policy = \"tierscape_waterfall\"\nthreshold = \"aggressive\"",
        ] {
            let what = format!("{server} / {}", policy.lines().next().unwrap_or(""));
            let cfg = std::env::temp_dir().join(format!(
                "tiermem-test-ts-{}-{}.toml",
                std::process::id(),
                unique()
            ));
            std::fs::write(
                &cfg,
                format!(
                    "[runtime]\ndram_budget = \"unlimited\"\n\
                     [[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\n\
                     [[runtime.tiers]]\nname = \"fast\"\nkind = \"compressed\"\ncodec = \"lz4\"\nallocator = \"zsmalloc\"\n\
                     [[runtime.tiers]]\nname = \"mid\"\nkind = \"compressed\"\ncodec = \"lz4\"\nallocator = \"zbud\"\n\
                     [[runtime.tiers]]\nname = \"dense\"\nkind = \"compressed\"\ncodec = \"lzo\"\nallocator = \"zsmalloc\"\n\
                     [policy]\n{policy}\nprofile_window_ms = 500.0\n"
                ),
            )
            .unwrap();
            let port = free_port();
            let ps = port.to_string();
            let cfg_s = cfg.display().to_string();
            let argv: Vec<&str> = if server == "memcached" {
                memcached_argv(&ps)
            } else {
                vec![
                    "redis-server",
                    "--port",
                    &ps,
                    "--bind",
                    "127.0.0.1",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ]
            };
            let (mut cmd, stats) = tiered_with(&["--config", &cfg_s], "unlimited", &argv);
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
            let mut srv = Server(Some(cmd.spawn().unwrap()));
            wait_port(port, srv.0.as_mut().unwrap(), &what);
            let load = run(
                plain(&[
                    env!("CARGO_BIN_EXE_tiermem-kvload"),
                    "--protocol",
                    server,
                    "--port",
                    &ps,
                    "--keys",
                    "8192",
                    "--fill",
                    "--duration-s",
                    "6",
                ]),
                None,
                120,
                "kvload",
            );
            let alive = srv.0.as_mut().unwrap().try_wait().unwrap().is_none();
            // SAFETY: signals our own child process.
            unsafe { libc::kill(srv.0.as_ref().unwrap().id() as i32, libc::SIGTERM) };
            let o = wait_timeout(srv.0.take().unwrap(), 60, "server exit");
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            assert!(alive, "{what}: the server died under the load: {err}");
            assert!(o.status.success(), "{what}: exit {:?}: {err}", o.status);
            let out = ok(&load, &format!("{what}: kvload (every value verified)"));
            assert!(
                out.contains("\"bad\":0") && out.contains("\"misses\":0"),
                "{what}: {out}"
            );
            let p = problems(&stats, &o);
            assert!(p.is_empty(), "{what}: {}", p.join("\n"));
            let s = final_stats(&stats);
            assert!(migrations_in(&s) > 1_000, "{what}: little was tiered: {s}");
            if policy.contains("analytical") {
                // `tiermem stat` carries the policy's own counters: HiGHS solved.
                let solves = &s["policy_counters"]["solves"];
                assert!(solves.as_u64().unwrap_or(0) > 0, "{what}: no solve counted: {s}");
            }
            if policy.contains("waterfall") {
                // The waterfall reaches the later compressed tiers only tier to tier, outside
                // the state lock while the load faults (`retier`): lz4 to lz4 copies the
                // object, lz4 to lzo recompresses it.
                for (k, name) in [(1, "2:mid"), (2, "3:dense")] {
                    let t = &s["tiers"][k];
                    assert_eq!(t["name"], name, "{what}: {s}");
                    assert!(
                        t["migrations_in"].as_u64().unwrap() > 0,
                        "{what}: nothing moved tier to tier into {name}: {s}"
                    );
                }
            }
            let _ = std::fs::remove_file(&cfg);
        }
    }
}
