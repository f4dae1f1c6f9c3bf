//! tiermem-kvload: a key-value load generator for memcached and Redis with memtier's
//! Gaussian key popularity (`--key-pattern G:G`), that verifies every value it reads.
//!
//! Written for TierScape's real reproduction (issue 13, item 7): memtier_benchmark is not
//! packaged here, and its values are random bytes (incompressible), while a cache holds
//! text. Every value is a deterministic function of its key (JSON-like records, as a web
//! cache holds), so a GET is checked byte for byte and a SET rewrites the same bytes.
//!
//!   tiermem-kvload --protocol memcached|redis --port N --keys N [--value-size BYTES]
//!                  [--fill] [--duration-s S] [--connections N] [--set-get 1:10]
//!                  [--key-stddev FRACTION] [--seed N] [--out FILE.json]
//!
//! `--fill` stores every key first (pipelined). The timed phase is closed-loop: each
//! connection keeps one request in flight and times it (send to full reply). Prints and
//! writes JSON `{ops, ops_per_s, gets, sets, p50_us, p99_us, p999_us, misses, bad}`.
//! Exit 1 when any value read differs or a key is missing, 2 on bad arguments.

use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Normal};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    Memcached,
    Redis,
}

struct Args {
    protocol: Protocol,
    host: String,
    port: u16,
    keys: u64,
    value_size: usize,
    fill: bool,
    duration_s: f64,
    connections: usize,
    sets_per_gets: (u32, u32),
    key_stddev: f64,
    seed: u64,
    out: Option<String>,
}

const USAGE: &str = "usage: tiermem-kvload --protocol memcached|redis --port N --keys N \
[--host H] [--value-size BYTES] [--fill] [--duration-s S] [--connections N] [--set-get S:G] \
[--key-stddev FRACTION] [--seed N] [--out FILE.json]";

fn usage_error(msg: &str) -> ! {
    eprintln!("tiermem-kvload: {msg}\n{USAGE}");
    std::process::exit(2);
}

fn parse_args() -> Args {
    let mut a = Args {
        protocol: Protocol::Memcached,
        host: "127.0.0.1".into(),
        port: 0,
        keys: 0,
        value_size: 4096,
        fill: false,
        duration_s: 10.0,
        connections: 4,
        sets_per_gets: (1, 10),
        key_stddev: 0.025,
        seed: 1,
        out: None,
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        if flag == "--fill" {
            a.fill = true;
            i += 1;
            continue;
        }
        let Some(v) = argv.get(i + 1) else {
            usage_error(&format!("{flag}: missing value"));
        };
        fn num<T: std::str::FromStr>(flag: &str, v: &str) -> T {
            v.parse()
                .unwrap_or_else(|_| usage_error(&format!("{flag}: `{v}` is not a number")))
        }
        match flag {
            "--protocol" => {
                a.protocol = match v.as_str() {
                    "memcached" => Protocol::Memcached,
                    "redis" => Protocol::Redis,
                    _ => usage_error(&format!("--protocol: `{v}` is not memcached or redis")),
                }
            }
            "--host" => a.host = v.clone(),
            "--port" => a.port = num(flag, v),
            "--keys" => a.keys = num(flag, v),
            "--value-size" => a.value_size = num(flag, v),
            "--duration-s" => a.duration_s = num(flag, v),
            "--connections" => a.connections = num(flag, v),
            "--key-stddev" => a.key_stddev = num(flag, v),
            "--seed" => a.seed = num(flag, v),
            "--out" => a.out = Some(v.clone()),
            "--set-get" => {
                let Some((s, g)) = v.split_once(':') else {
                    usage_error(&format!("--set-get: `{v}` is not SETS:GETS (e.g. 1:10)"));
                };
                a.sets_per_gets = (num(flag, s), num(flag, g));
            }
            _ => usage_error(&format!("unknown argument `{flag}`")),
        }
        i += 2;
    }
    if a.port == 0 {
        usage_error("--port: required (the server's TCP port)");
    }
    if a.keys == 0 {
        usage_error("--keys: required, at least 1");
    }
    if !(64..=1 << 17).contains(&a.value_size) {
        usage_error("--value-size: between 64 and 131072 bytes");
    }
    if a.connections == 0 || a.connections > 256 {
        usage_error("--connections: between 1 and 256");
    }
    if !(a.duration_s >= 0.0 && a.duration_s.is_finite()) {
        usage_error("--duration-s: a number of seconds >= 0");
    }
    if !(a.key_stddev > 0.0 && a.key_stddev.is_finite()) {
        usage_error("--key-stddev: a fraction of the keys > 0 (memtier's default is 1/6)");
    }
    if a.sets_per_gets.0 + a.sets_per_gets.1 == 0 {
        usage_error("--set-get: at least one of SETS and GETS > 0");
    }
    a
}

/// Text the values are cut from: JSON-like records (user profiles with tags and a short
/// bio), as a web cache holds. Built once; about 256 KiB.
fn corpus() -> &'static [u8] {
    static C: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        let words = ["lorem", "ipsum", "dolor", "sit", "amet", "tiered", "memory", "cache"];
        let mut out = Vec::with_capacity(1 << 18);
        let mut h = 0x9E37_79B9_7F4A_7C15u64;
        let mut id = 0u64;
        while out.len() < 1 << 18 {
            h ^= h >> 29;
            h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            let bio: Vec<&str> = (0..8).map(|i| words[((h >> (i * 3)) & 7) as usize]).collect();
            out.extend_from_slice(
                format!(
                    "{{\"id\":{id},\"user\":\"user{:07}\",\"tags\":[\"t{:x}\",\"t{:x}\"],\"score\":{},\"bio\":\"{}\"}}\n",
                    h % 9_999_991,
                    h & 0xffff,
                    (h >> 16) & 0xffff,
                    (h >> 32) % 1000,
                    bio.join(" ")
                )
                .as_bytes(),
            );
            id += 1;
        }
        out
    })
}

/// The value of `key`: a header naming the key, then `size` bytes of the corpus from an
/// offset the key chooses. Deterministic, distinct per key, and cheap (a copy), so the
/// generator spends its CPU on requests, not on making values.
fn value(key: u64, size: usize) -> Vec<u8> {
    let c = corpus();
    let mut out = Vec::with_capacity(size);
    out.extend_from_slice(format!("{{\"key\":{key}}}\n").as_bytes());
    let off = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize % (c.len() - size);
    let rest = size.saturating_sub(out.len());
    out.extend_from_slice(&c[off..off + rest]);
    out.truncate(size);
    out
}

fn key_name(key: u64) -> String {
    format!("key:{key:010}")
}

struct Conn {
    proto: Protocol,
    w: TcpStream,
    r: BufReader<TcpStream>,
}

fn io_fail(what: &str, e: impl std::fmt::Display) -> ! {
    eprintln!("tiermem-kvload: {what}: {e}");
    std::process::exit(1);
}

impl Conn {
    fn open(a: &Args) -> Conn {
        let w = TcpStream::connect((a.host.as_str(), a.port)).unwrap_or_else(|e| {
            usage_error(&format!(
                "--host/--port: cannot connect to {}:{}: {e}",
                a.host, a.port
            ))
        });
        w.set_nodelay(true).ok();
        w.set_read_timeout(Some(Duration::from_secs(60))).ok();
        let r = BufReader::new(w.try_clone().unwrap_or_else(|e| io_fail("socket", e)));
        Conn {
            proto: a.protocol,
            w,
            r,
        }
    }

    fn encode_set(&self, key: u64, v: &[u8], reply: bool, buf: &mut Vec<u8>) {
        let k = key_name(key);
        match self.proto {
            Protocol::Memcached => {
                let nr = if reply { "" } else { " noreply" };
                buf.extend_from_slice(format!("set {k} 0 0 {}{nr}\r\n", v.len()).as_bytes());
            }
            Protocol::Redis => buf.extend_from_slice(
                format!("*3\r\n$3\r\nSET\r\n${}\r\n{k}\r\n${}\r\n", k.len(), v.len()).as_bytes(),
            ),
        }
        buf.extend_from_slice(v);
        buf.extend_from_slice(b"\r\n");
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        match self.r.read_line(&mut l) {
            Ok(0) => io_fail("server", "closed the connection"),
            Ok(_) => l.trim_end().to_string(),
            Err(e) => io_fail("server", e),
        }
    }

    fn expect_stored(&mut self) {
        let l = self.line();
        let ok = match self.proto {
            Protocol::Memcached => l == "STORED",
            Protocol::Redis => l == "+OK",
        };
        if !ok {
            io_fail("SET", format!("unexpected reply `{l}`"));
        }
    }

    /// GET `key`: Some(value) or None when the server does not have it.
    fn get(&mut self, key: u64) -> Option<Vec<u8>> {
        let k = key_name(key);
        let req = match self.proto {
            Protocol::Memcached => format!("get {k}\r\n"),
            Protocol::Redis => format!("*2\r\n$3\r\nGET\r\n${}\r\n{k}\r\n", k.len()),
        };
        self.w
            .write_all(req.as_bytes())
            .unwrap_or_else(|e| io_fail("GET", e));
        let head = self.line();
        let len = match self.proto {
            Protocol::Memcached if head == "END" => return None,
            Protocol::Memcached => head
                .rsplit(' ')
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|_| head.starts_with("VALUE "))
                .unwrap_or_else(|| io_fail("GET", format!("unexpected reply `{head}`"))),
            Protocol::Redis if head == "$-1" => return None,
            Protocol::Redis => head
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or_else(|| io_fail("GET", format!("unexpected reply `{head}`"))),
        };
        let mut v = vec![0u8; len + 2];
        self.r
            .read_exact(&mut v)
            .unwrap_or_else(|e| io_fail("GET", e));
        v.truncate(len);
        if self.proto == Protocol::Memcached {
            let end = self.line();
            if end != "END" {
                io_fail("GET", format!("unexpected reply `{end}` after the value"));
            }
        }
        Some(v)
    }
}

/// Store every key, pipelined (memcached: noreply, then one round trip; Redis: replies
/// read per batch).
fn fill(a: &Args) {
    let mut c = Conn::open(a);
    let batch = 64u64;
    let mut buf = Vec::new();
    let mut k = 0;
    while k < a.keys {
        let end = (k + batch).min(a.keys);
        buf.clear();
        for key in k..end {
            c.encode_set(
                key,
                &value(key, a.value_size),
                a.protocol == Protocol::Redis,
                &mut buf,
            );
        }
        c.w.write_all(&buf).unwrap_or_else(|e| io_fail("fill", e));
        if a.protocol == Protocol::Redis {
            for _ in k..end {
                c.expect_stored();
            }
        }
        k = end;
    }
    if a.protocol == Protocol::Memcached {
        c.w.write_all(b"version\r\n")
            .unwrap_or_else(|e| io_fail("fill", e));
        let l = c.line();
        if !l.starts_with("VERSION") {
            io_fail("fill", format!("unexpected reply `{l}`"));
        }
    }
}

#[derive(Default)]
struct Tally {
    lat_ns: Vec<u32>,
    gets: u64,
    sets: u64,
    misses: u64,
    bad: u64,
}

/// One connection's closed loop until `deadline`.
fn drive(a: &Args, conn_index: usize, deadline: Instant) -> Tally {
    let mut c = Conn::open(a);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(a.seed ^ ((conn_index as u64 + 1) * 0x9E37));
    // memtier's G:G: median in the middle of the key range, stddev a fraction of it.
    let n = a.keys as f64;
    let normal = Normal::new(n / 2.0, a.key_stddev * n)
        .unwrap_or_else(|e| usage_error(&format!("--key-stddev: {e}")));
    let (s, g) = a.sets_per_gets;
    let mut t = Tally::default();
    let mut buf = Vec::new();
    while Instant::now() < deadline {
        let key = loop {
            let x = normal.sample(&mut rng).round();
            if x >= 0.0 && x < n {
                break x as u64;
            }
        };
        let is_set = rng.gen_range(0..s + g) < s;
        let v = value(key, a.value_size);
        let t0 = Instant::now();
        if is_set {
            buf.clear();
            c.encode_set(key, &v, true, &mut buf);
            c.w.write_all(&buf).unwrap_or_else(|e| io_fail("SET", e));
            c.expect_stored();
            t.sets += 1;
        } else {
            let got = c.get(key);
            t.gets += 1;
            match got {
                None => t.misses += 1,
                Some(g) if g != v => t.bad += 1,
                Some(_) => {}
            }
        }
        t.lat_ns
            .push(t0.elapsed().as_nanos().min(u32::MAX as u128) as u32);
    }
    t
}

fn percentile_us(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

fn main() {
    let a = parse_args();
    let t_fill = Instant::now();
    if a.fill {
        fill(&a);
    }
    let fill_s = t_fill.elapsed().as_secs_f64();
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(a.duration_s);
    let tallies: Vec<Tally> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..if a.duration_s > 0.0 { a.connections } else { 0 })
            .map(|i| {
                let a = &a;
                sc.spawn(move || drive(a, i, deadline))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| io_fail("load thread", "panicked"))
            })
            .collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut lat: Vec<u32> = tallies
        .iter()
        .flat_map(|t| t.lat_ns.iter().copied())
        .collect();
    lat.sort_unstable();
    let sum = |f: fn(&Tally) -> u64| tallies.iter().map(f).sum::<u64>();
    let ops = lat.len() as u64;
    let report = serde_json::json!({
        "protocol": if a.protocol == Protocol::Memcached { "memcached" } else { "redis" },
        "keys": a.keys,
        "value_size": a.value_size,
        "key_stddev": a.key_stddev,
        "connections": a.connections,
        "fill_s": fill_s,
        "seconds": secs,
        "ops": ops,
        "ops_per_s": if secs > 0.0 { ops as f64 / secs } else { 0.0 },
        "gets": sum(|t| t.gets),
        "sets": sum(|t| t.sets),
        "p50_us": percentile_us(&lat, 0.50),
        "p99_us": percentile_us(&lat, 0.99),
        "p999_us": percentile_us(&lat, 0.999),
        "misses": sum(|t| t.misses),
        "bad": sum(|t| t.bad),
    });
    println!("{report}");
    if let Some(p) = &a.out {
        std::fs::write(p, format!("{report}\n")).unwrap_or_else(|e| io_fail(p, e));
    }
    if sum(|t| t.bad) + sum(|t| t.misses) > 0 {
        eprintln!(
            "tiermem-kvload: {} values differed and {} keys were missing",
            sum(|t| t.bad),
            sum(|t| t.misses)
        );
        std::process::exit(1);
    }
}
