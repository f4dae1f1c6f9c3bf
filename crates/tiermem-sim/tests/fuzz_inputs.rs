//! Deterministic fuzzing of what users feed the simulator (issue 10, item 4): every shipped
//! config mutated (fields dropped, numbers set to 0 / -1 / huge / NaN / 1e30 / strings,
//! types swapped, tables duplicated, text truncated, bytes flipped), and random bytes and
//! truncations of a trace file. Every input must end in a one-line error of an exit-2 kind
//! that names a field (or the line / byte offset), or in a run whose summary holds no
//! NaN/inf; never a panic. Fixed seed, bounded simulated time: a few seconds in release.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use tiermem_sim::config::SimConfig;
use tiermem_sim::workload::trace;

/// xorshift64*: a fixed-seed generator with no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            toml_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "toml") {
            out.push(p);
        }
    }
}

/// Every shipped simulation config: experiments/**/*.toml and examples/*.toml.
fn shipped_configs() -> Vec<(String, String)> {
    let mut files = Vec::new();
    toml_files(&repo().join("experiments"), &mut files);
    toml_files(&repo().join("examples"), &mut files);
    let configs: Vec<(String, String)> = files
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read_to_string(p).unwrap()))
        .filter(|(_, t)| t.contains("[machine]"))
        .collect();
    assert!(configs.len() >= 2, "shipped configs not found: {files:?}");
    // Each shipped config also with every documented field of each policy, and with Colloid
    // layered on top, so that policy tunables get mutated too.
    let mut all = configs.clone();
    for (name, text) in &configs {
        let Some(cut) = text.find("[policy]") else {
            continue;
        };
        let head = &text[..cut];
        let tail = text[cut..].find("\n[").map_or("", |i| &text[cut + i..]);
        for entry in tiermem_policies::REGISTRY {
            let defaults = tiermem_policies::PolicyConfig::default_for(entry.name).unwrap();
            let layerable = tiermem_policies::build_heat_model(&defaults, Default::default());
            let colloid = if layerable.is_ok() {
                "[colloid]\ndelta = 0.05\nepsilon = 0.01\newma_alpha = 0.3\n"
            } else {
                ""
            };
            all.push((
                format!("{name} + {}", entry.name),
                format!(
                    "{head}{}\n{colloid}{tail}",
                    entry
                        .defaults_toml
                        .lines()
                        .map(|l| l.strip_prefix("# ").unwrap_or(l))
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            ));
        }
    }
    all
}

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "1e30",
    "-1e30",
    "99999999999999999999",
    "9223372036854775807",
    "4294967296",
    "nan",
    "inf",
    "-inf",
    "1e-30",
    "0.5",
    "\"\"",
    "\"abc\"",
    "\"99999999999999999999G\"",
    "\"1e5\"",
    "\"-1G\"",
    "\"0\"",
    "\"1\"",
    "\"4K\"",
    "\"3K\"",
    "\"16T\"",
    "\"tier:7\"",
    "true",
    "[]",
    "[1, 2]",
    "[[0.0, 1.0], [0.5, nan]]",
    "{}",
    "{ x = 1 }",
];

/// One random mutation of config text.
fn mutate(text: &str, rng: &mut Rng) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let kv: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let l = lines[i].trim_start();
            !l.starts_with('#') && !l.starts_with('[') && l.contains('=')
        })
        .collect();
    let headers: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with('['))
        .collect();
    let mut out: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
    if kv.is_empty() || headers.is_empty() {
        // Earlier mutations left little to work with: append a stray value.
        return format!("{text}\nfuzz = {}\n", rng.pick(VALUES));
    }
    match rng.below(14) {
        // scale a number (keeps the type: mostly valid configs that run)
        10..=13 => {
            let nums: Vec<usize> = kv
                .iter()
                .copied()
                .filter(|&i| {
                    let v = lines[i].split_once('=').unwrap().1;
                    let v = v.split('#').next().unwrap().trim();
                    v.parse::<f64>().is_ok()
                })
                .collect();
            if nums.is_empty() {
                return text.to_string();
            }
            let i = rng.pick(&nums);
            let (key, val) = lines[i].split_once('=').unwrap();
            let v: f64 = val.split('#').next().unwrap().trim().parse().unwrap();
            let f = rng.pick(&[0.0, 1e-3, 0.1, 0.5, 0.9, 1.5, 2.0, 10.0, 1e3, 1e6][..]);
            let x = v * f;
            let is_int = !val.split('#').next().unwrap().contains('.');
            out[i] = if is_int && x.abs() < 9e18 {
                format!("{key}= {}", x.round() as i64)
            } else {
                format!("{key}= {x:?}")
            };
        }
        // drop a field
        0 => {
            let i = rng.pick(&kv);
            out.remove(i);
        }
        // set a value to something hostile
        1..=3 => {
            let i = rng.pick(&kv);
            let key = lines[i].split('=').next().unwrap().trim_end().to_string();
            out[i] = format!("{key} = {}", rng.pick(VALUES));
        }
        // swap the type: quote a number, unquote a string, wrap in an array
        4 => {
            let i = rng.pick(&kv);
            let (key, val) = lines[i].split_once('=').unwrap();
            let val = val.split('#').next().unwrap().trim();
            let swapped = if let Some(s) = val.strip_prefix('"') {
                s.trim_end_matches('"').to_string()
            } else if rng.below(2) == 0 {
                format!("\"{val}\"")
            } else {
                format!("[{val}]")
            };
            out[i] = format!("{key}= {swapped}");
        }
        // duplicate a table (header and body) or drop a header
        5 => {
            let h = rng.pick(&headers);
            let end = headers
                .iter()
                .find(|&&x| x > h)
                .copied()
                .unwrap_or(lines.len());
            if rng.below(2) == 0 {
                let block: Vec<String> = out[h..end].to_vec();
                out.extend(block);
            } else {
                out.remove(h);
            }
        }
        // an unknown field, or a field in the wrong table
        6 => {
            let i = rng.pick(&kv);
            let line = lines[i].to_string();
            let at = rng.below(out.len() + 1);
            if rng.below(2) == 0 {
                out.insert(at, line);
            } else {
                out.insert(at.min(out.len()), "fuzz_field = 1".into());
            }
        }
        // truncate the text
        7 => {
            let cut = rng.below(text.len());
            let mut cut = cut;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            return text[..cut].to_string();
        }
        // byte flips
        8 => {
            let mut b = text.as_bytes().to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
            return String::from_utf8_lossy(&b).into_owned();
        }
        // another workload kind with hostile sizes
        _ => {
            let kinds = [
                "kind = \"kv\"\nkeys = KEYS\nvalue_size = SIZE\nmix = \"E\"",
                "kind = \"stream\"\nworking_set = SIZE",
                "kind = \"random\"\nworking_set = SIZE\nobject_size = SIZE",
                "kind = \"gups\"\nworking_set = SIZE\nhot_set = SIZE",
                "kind = \"trace\"\npath = \"/nonexistent/trace.tmt\"",
            ];
            if let Some(w) = out.iter().position(|l| l.trim() == "[workload]") {
                let end = headers
                    .iter()
                    .find(|&&x| x > w)
                    .copied()
                    .unwrap_or(out.len())
                    .min(out.len());
                let kind: &str = rng.pick(&kinds[..]);
                let keys: &str = rng.pick(&["0", "1", "1000", "4294967295", "-3"][..]);
                let size: &str = rng.pick(VALUES);
                let small: &str = rng.pick(&["\"64\"", "\"1G\"", "\"4K\""][..]);
                let body = kind
                    .replace("KEYS", keys)
                    .replacen("SIZE", size, 1)
                    .replacen("SIZE", small, 1);
                out.splice(w + 1..end, body.lines().map(String::from));
            }
        }
    }
    out.join("\n") + "\n"
}

fn check_error(e: &tiermem_core::Error, input: &str) {
    let msg = e.to_string();
    assert_eq!(
        e.kind.exit_code(),
        2,
        "a bad input must be an exit-2 error ({:?}): {msg}\n--- input:\n{input}",
        e.kind
    );
    assert!(
        !msg.contains('\n'),
        "not one line: {msg}\n--- input:\n{input}"
    );
    let names_field = msg.contains("field `")
        || msg.contains("missing required fields")
        || msg.contains("fuzz.toml:")
        || msg.contains("`scale`")
        || msg.contains("trace");
    assert!(
        names_field,
        "names no field or line: {msg}\n--- input:\n{input}"
    );
}

/// Every number in a summary is finite (serde_json turns NaN/inf into null).
fn check_finite(v: &serde_json::Value, at: &str, input: &str) {
    match v {
        serde_json::Value::Null => panic!("{at} is null (NaN or inf)\n--- input:\n{input}"),
        serde_json::Value::Number(n) => {
            assert!(
                n.as_f64().is_some_and(f64::is_finite),
                "{at} = {n}\n--- input:\n{input}"
            )
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                check_finite(x, &format!("{at}[{i}]"), input);
            }
        }
        serde_json::Value::Object(o) => {
            for (k, x) in o {
                check_finite(x, &format!("{at}.{k}"), input);
            }
        }
        _ => {}
    }
}

/// Largest footprint (pages) a fuzz case simulates; bigger valid configs are only validated.
const MAX_RUN_PAGES: u64 = 1 << 16;

/// Decode, validate and (if small) run a few simulated milliseconds of `text`.
/// Returns whether it ran.
fn exercise(text: &str) -> bool {
    let cfg = match catch_unwind(|| SimConfig::from_toml(text, "fuzz.toml")) {
        Err(_) => panic!("panic while validating\n--- input:\n{text}"),
        Ok(Err(e)) => {
            check_error(&e, text);
            if std::env::var_os("TIERMEM_FUZZ_VERBOSE").is_some() {
                eprintln!("rejected: {e}");
            }
            return false;
        }
        Ok(Ok(c)) => c,
    };
    let Ok(page) = cfg.page_bytes() else {
        panic!("validated config without a page size\n--- input:\n{text}")
    };
    // Every tenant's footprint counts (a mutated second tenant can be the huge one).
    let runs = cfg.tenant_runs().unwrap_or_else(|e| {
        panic!("validated config without its tenants: {e}\n--- input:\n{text}")
    });
    let mut pages = 0u64;
    for r in &runs {
        let p = r
            .workload
            .footprint_pages(&r.path, page, cfg.scale)
            .unwrap_or_else(|e| {
                panic!("validated config whose footprint fails: {e}\n--- input:\n{text}")
            });
        pages = pages.saturating_add(p.unwrap_or(0));
    }
    if pages > MAX_RUN_PAGES {
        return false;
    }
    let mut cfg = cfg;
    // Bounded simulated time: a few milliseconds, at most a few epochs of work.
    cfg.duration_s = cfg.duration_s.min(0.05);
    cfg.record_interval_ms = cfg.record_interval_ms.min(10.0);
    cfg.accesses_per_sample = cfg.accesses_per_sample.max(1000.0);
    let run = catch_unwind(AssertUnwindSafe(|| {
        tiermem_sim::runner::run(&cfg).map(|o| o.output(&cfg))
    }));
    match run {
        Err(_) => panic!("panic while simulating\n--- input:\n{text}"),
        Ok(Err(e)) => {
            check_error(&e, text);
            false
        }
        Ok(Ok(out)) => {
            check_finite(&out.summary, "summary", text);
            true
        }
    }
}

#[test]
fn mutated_shipped_configs_never_panic() {
    let configs = shipped_configs();
    let mut rng = Rng(0x7132_6d65_6d5f_667a);
    let (mut ran, mut rejected) = (0, 0);
    let start = std::time::Instant::now();
    for round in 0..3000 {
        let (_, base) = &configs[round % configs.len()];
        let mut text = base.clone();
        for _ in 0..1 + rng.below(3) {
            text = mutate(&text, &mut rng);
        }
        if exercise(&text) {
            ran += 1;
        } else {
            rejected += 1;
        }
    }
    eprintln!(
        "config fuzz: {ran} ran, {rejected} rejected or only validated, {:.1} s",
        start.elapsed().as_secs_f64()
    );
    assert!(
        ran > 300 && rejected > 1000,
        "ran {ran}, rejected {rejected}"
    );
}

/// A small lackey trace and its binary conversion, written under `dir`.
fn sample_traces(dir: &Path) -> (PathBuf, PathBuf) {
    let mut rng = Rng(0x0074_7261_6365);
    let mut text = String::from("==123== lackey\n");
    for i in 0..3000u64 {
        let addr = 0x4000_0000 + (rng.next() % 512) * 4096 + (i % 64) * 8;
        let kind = ["I ", " L", " S", " M"][rng.below(4)];
        text.push_str(&format!("{kind} {addr:x},8\n"));
    }
    let lackey = dir.join("sample.lackey");
    std::fs::write(&lackey, text).unwrap();
    let bin = dir.join("sample.tmt");
    trace::convert_lackey(&lackey, &bin, 4096).unwrap();
    (lackey, bin)
}

fn check_trace(path: &Path, what: &str) {
    let info = catch_unwind(|| trace::info(path, 4096));
    match info {
        Err(_) => panic!("trace info panicked on {what}"),
        Ok(Err(e)) => {
            let msg = e.to_string();
            assert_eq!(e.kind.exit_code(), 2, "{what}: {:?}: {msg}", e.kind);
            assert!(!msg.contains('\n'), "{what}: not one line: {msg}");
            assert!(
                !msg.chars().any(|c| c.is_control() || c == '\u{fffd}'),
                "{what}: raw bytes echoed: {msg:?}"
            );
        }
        Ok(Ok(i)) => assert!(
            i.counts.records() > 0,
            "{what}: info accepted an empty trace"
        ),
    }
    let replay = catch_unwind(|| trace::TraceReplay::open(path, 4096, false).map(|_| ()));
    match replay {
        Err(_) => panic!("trace replay panicked on {what}"),
        Ok(Err(e)) => assert_eq!(e.kind.exit_code(), 2, "{what}: {e}"),
        Ok(Ok(())) => {}
    }
}

#[test]
fn mutated_traces_never_panic() {
    let dir = std::env::temp_dir().join(format!("tiermem-fuzz-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (lackey, bin) = sample_traces(&dir);
    let originals = [
        std::fs::read(&lackey).unwrap(),
        std::fs::read(&bin).unwrap(),
    ];
    let case = dir.join("case");
    let mut rng = Rng(0x6675_7a7a_2074_7263);
    for round in 0..1200 {
        let src = &originals[round % 2];
        let mut b = src.clone();
        let what = match rng.below(5) {
            0 => {
                b.truncate(rng.below(src.len() + 1));
                format!("truncation to {} bytes", b.len())
            }
            1 | 2 => {
                let n = 1 + rng.below(8);
                for _ in 0..n {
                    let i = rng.below(b.len());
                    b[i] = rng.next() as u8;
                }
                format!("{n} byte changes")
            }
            3 => {
                // corrupt the binary header (magic, page size, counts)
                let i = rng.below(40.min(b.len()));
                b[i] ^= 1 << rng.below(8);
                format!("header bit flip at {i}")
            }
            _ => {
                let n = rng.below(2048);
                b = (0..n).map(|_| rng.next() as u8).collect();
                if rng.below(2) == 0 && n >= 8 {
                    b[..8].copy_from_slice(b"TMTRACE1");
                }
                format!("{n} random bytes")
            }
        };
        std::fs::write(&case, &b).unwrap();
        check_trace(&case, &format!("round {round}: {what}"));
    }
    check_trace(&dir, "a directory");
    std::fs::write(&case, b"").unwrap();
    check_trace(&case, "an empty file");
    let _ = std::fs::remove_dir_all(&dir);
}
