//! Workloads through their public API: the builder from TOML, trace recording with a real
//! valgrind, conversion, replay, and corrupt inputs.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use tiermem_core::ErrorKind;
use tiermem_sim::workload::trace::{self, RecordKind, TraceFormat, TraceReplay};
use tiermem_sim::workload::{build, Workload, WorkloadConfig};

/// A per-test scratch directory, removed when the test ends (pass or fail).
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(test: &str) -> TmpDir {
        let d =
            std::env::temp_dir().join(format!("tiermem-workloads-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn workload(text: &str) -> WorkloadConfig {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Top {
        workload: WorkloadConfig,
    }
    let t: Top = tiermem_core::config::from_toml_str(text, "test.toml").unwrap();
    t.workload
}

/// Record `program` under valgrind lackey into `log`; fails naming the package if
/// valgrind is missing.
fn record(program: &[&str], log: &Path) {
    let args: Vec<String> = program.iter().map(|s| s.to_string()).collect();
    match trace::record_lackey(&args, log) {
        Ok(status) => assert!(status.success(), "{program:?} under valgrind: {status}"),
        Err(e) => panic!("recording a real trace needs valgrind (apt-get install valgrind): {e}"),
    }
}

/// L/S/M lines counted independently of the parser.
fn count_data_lines(path: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut records = 0;
    let mut writes = 0;
    for l in text.lines() {
        if l.starts_with(" L ") {
            records += 1;
        } else if l.starts_with(" S ") || l.starts_with(" M ") {
            records += 1;
            writes += 1;
        }
    }
    (records, writes)
}

fn drain(w: &mut dyn Workload) -> Vec<(u32, bool)> {
    let mut rng = SmallRng::seed_from_u64(0);
    let mut out = Vec::new();
    while !w.finished() {
        let a = w.next(&mut rng);
        out.push((a.page, a.write));
        assert!(out.len() < 100_000_000, "trace never finishes");
    }
    out
}

#[test]
fn real_lackey_trace_records_convert_and_replay() {
    let d = TmpDir::new("real_lackey_trace_records_convert_and_replay");
    let log = d.path("true.lackey");
    record(&["/bin/true"], &log);
    let (lines, write_lines) = count_data_lines(&log);
    assert!(
        lines > 1000,
        "a real program makes thousands of data accesses, got {lines}"
    );
    assert_eq!(trace::detect_format(&log).unwrap(), TraceFormat::Lackey);

    // Replay the text directly: one access per L/S/M line, in order, then finished.
    let mut text = TraceReplay::open(&log, 4096, false).unwrap();
    assert_eq!(text.records() as u64, lines);
    assert!(text.probabilities().is_none());
    let seq_text = drain(&mut text);
    assert_eq!(seq_text.len() as u64, lines);
    assert_eq!(seq_text.iter().filter(|a| a.1).count() as u64, write_lines);
    let shape = text.op_shape();
    assert!((shape.written_lines_per_op - write_lines as f64 / lines as f64).abs() < 1e-12);
    // Dense pages: every page in 0..n is touched.
    let n = text.page_count() as usize;
    let mut seen = vec![false; n];
    seq_text.iter().for_each(|a| seen[a.0 as usize] = true);
    assert!(seen.iter().all(|&s| s));

    // Convert to binary: same counts, and the same replay.
    let bin = d.path("true.tmt");
    let st = trace::convert_lackey(&log, &bin, 4096).unwrap();
    assert_eq!(st.header.records, lines);
    assert_eq!(st.counts.stores + st.counts.modifies, write_lines);
    assert_eq!(st.header.distinct_pages, n as u64);
    assert!(st.counts.instructions > 0);
    assert!(
        st.bytes_out < lines * 3,
        "compact: {} bytes for {lines} records",
        st.bytes_out
    );
    assert_eq!(trace::detect_format(&bin).unwrap(), TraceFormat::Binary);
    let mut binr = TraceReplay::open(&bin, 4096, false).unwrap();
    assert_eq!(drain(&mut binr), seq_text);
    let info = trace::info(&bin, 4096).unwrap();
    assert_eq!(info.counts.records(), lines);
    assert_eq!(info.distinct_pages, n as u64);

    // At 2 MiB pages the same trace folds onto fewer pages.
    let big = TraceReplay::open(&bin, 2 << 20, false).unwrap();
    assert!(big.page_count() < n as u32 && big.records() as u64 == lines);

    // Through the builder, looping.
    let cfg = workload(&format!(
        "[workload]\nkind = \"trace\"\npath = \"{}\"\nloop = true\n",
        bin.display()
    ));
    let mut w = build(&cfg, 4096, 1.0, 1).unwrap();
    let mut rng = SmallRng::seed_from_u64(0);
    let first = w.next(&mut rng);
    for _ in 1..lines {
        w.next(&mut rng);
    }
    assert!(!w.finished());
    assert_eq!(w.next(&mut rng), first, "loops back to the first record");
    let e = build(&cfg, 4096, 0.5, 1).err().unwrap();
    assert!(e.to_string().contains("scale"), "{e}");
}

#[test]
fn binary_round_trip_exact() {
    let d = TmpDir::new("binary_round_trip_exact");
    let path = d.path("rt.tmt");
    let recs: Vec<(u64, RecordKind)> = vec![
        (0x1000, RecordKind::Load),
        (0x1000, RecordKind::Store),
        (0x7fff_ffff_f000, RecordKind::Modify),
        (3, RecordKind::Load),
        (0x000f_ffff_ffff_ffff, RecordKind::Store),
        (0, RecordKind::Load),
    ];
    let mut w = trace::BinaryWriter::create(&path, 4096).unwrap();
    for &(p, k) in &recs {
        w.push_page(p, k).unwrap();
    }
    let h = w.finish().unwrap();
    assert_eq!((h.records, h.distinct_pages, h.page_bytes), (6, 5, 4096));
    let mut back = Vec::new();
    let h2 = trace::read_binary(&path, |p, k| back.push((p, k))).unwrap();
    assert_eq!(h, h2);
    assert_eq!(back, recs);
}

#[test]
fn truncated_and_corrupt_binary_are_trace_errors_with_offsets() {
    let d = TmpDir::new("truncated_and_corrupt_binary_are_trace_errors_with_offsets");
    let lackey = d.path("small.lackey");
    let mut text = String::from("==1== Lackey\nI  0400000,3\n");
    for i in 0..200u64 {
        text += &format!(
            " L {:x},8\n S {:x},4\n",
            0x10_0000 + i * 4096 * (i % 7),
            0x20_0000 + i * 64
        );
    }
    std::fs::write(&lackey, text).unwrap();
    let bin = d.path("small.tmt");
    let st = trace::convert_lackey(&lackey, &bin, 4096).unwrap();
    assert_eq!(st.header.records, 400);
    let bytes = std::fs::read(&bin).unwrap();

    // Truncated: in the header, in the records, in the checksum.
    for cut in [10usize, 45, bytes.len() - 20, bytes.len() - 3] {
        let p = d.path(&format!("cut{cut}.tmt"));
        std::fs::write(&p, &bytes[..cut]).unwrap();
        let e = trace::read_binary(&p, |_, _| {}).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Trace, "{e}");
        let s = e.to_string();
        assert!(
            s.contains(&p.display().to_string())
                && s.contains("byte offset")
                && s.contains("truncated"),
            "{s}"
        );
        let e = TraceReplay::open(&p, 4096, false).err().unwrap();
        assert_eq!(e.kind, ErrorKind::Trace, "{e}");
    }
    // A flipped bit in a record: checksum (or flags) catch it.
    let mut bad = bytes.clone();
    bad[60] ^= 0x04;
    let p = d.path("flip.tmt");
    std::fs::write(&p, &bad).unwrap();
    let e = trace::read_binary(&p, |_, _| {}).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Trace);
    assert!(e.to_string().contains("byte offset"), "{e}");
    // Trailing garbage.
    let mut long = bytes.clone();
    long.extend_from_slice(b"xx");
    std::fs::write(&p, &long).unwrap();
    let e = trace::read_binary(&p, |_, _| {}).unwrap_err();
    assert!(
        e.to_string()
            .contains(&format!("byte offset {}", bytes.len())),
        "{e}"
    );
    // Unsupported version.
    let mut v2 = bytes.clone();
    v2[8] = 2;
    std::fs::write(&p, &v2).unwrap();
    let e = trace::read_binary(&p, |_, _| {}).unwrap_err();
    assert!(
        e.to_string().contains("version 2") && e.to_string().contains("byte offset 8"),
        "{e}"
    );
    // Machine pages finer than the trace's compaction.
    let coarse = d.path("coarse.tmt");
    trace::convert_lackey(&lackey, &coarse, 2 << 20).unwrap();
    let e = TraceReplay::open(&coarse, 4096, false).err().unwrap();
    assert!(e.to_string().contains("machine.page_size"), "{e}");
}

#[test]
fn malformed_lackey_line_names_file_and_line() {
    let d = TmpDir::new("malformed_lackey_line_names_file_and_line");
    let p = d.path("bad.lackey");
    std::fs::write(
        &p,
        "==7== Lackey\nI  0400000,3\n L 1ffefffd58,8\n S 1ffefffd50,8\n L zz12,8\n",
    )
    .unwrap();
    let e = TraceReplay::open(&p, 4096, false).err().unwrap();
    assert_eq!(e.kind, ErrorKind::Trace);
    assert_eq!(e.kind.exit_code(), 2);
    let s = e.to_string();
    assert!(
        s.contains(&format!("{}:5:", p.display())) && s.contains(" L zz12,8"),
        "{s}"
    );
    let e = trace::convert_lackey(&p, &d.path("bad.tmt"), 4096).unwrap_err();
    assert!(e.to_string().contains(":5:"), "{e}");
    // Missing file: a Trace error naming it.
    let e = TraceReplay::open(Path::new("/nonexistent/x.lackey"), 4096, false)
        .err()
        .unwrap();
    assert!(e.to_string().contains("/nonexistent/x.lackey"), "{e}");
}

const STATIONARY: &[&str] = &[
    "kind = \"gups\"\nworking_set = \"1G\"\nhot_set = \"256M\"\nwrite_fraction = 0.5",
    "kind = \"kv\"\nkeys = 100000\nvalue_size = \"1K\"\nkey_size = 64\nmix = \"B\"",
    "kind = \"kv\"\nkeys = 100000\nvalue_size = 100\nmix = \"F\"\ndistribution = \"gaussian\"\ngaussian_stddev = 0.1",
    "kind = \"kv\"\nkeys = 50000\nvalue_size = \"8K\"\nmix = \"C\"\ndistribution = \"uniform\"",
    "kind = \"random\"\nworking_set = \"512M\"\nobject_size = 128",
];

#[test]
fn stationary_probabilities_sum_to_one_and_match_draws() {
    for text in STATIONARY {
        let cfg = workload(&format!("[workload]\n{text}\n"));
        let mut w = build(&cfg, 2 << 20, 1.0, 42).unwrap();
        let p = w.probabilities().expect("stationary").to_vec();
        assert_eq!(p.len(), w.page_count() as usize);
        let sum: f64 = p.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "{text}: sum {sum}");
        // Empirical page histogram against the exact probabilities (chi-square-like bound
        // on total variation).
        let mut rng = SmallRng::seed_from_u64(1);
        let n = 400_000;
        let mut c = vec![0u32; p.len()];
        for _ in 0..n {
            c[w.next(&mut rng).page as usize] += 1;
        }
        let tv: f64 = c
            .iter()
            .zip(&p)
            .map(|(&k, &q)| (k as f64 / n as f64 - q).abs())
            .sum::<f64>()
            / 2.0;
        let bound = 2.0 * (p.len() as f64 / n as f64).sqrt();
        assert!(tv < bound, "{text}: total variation {tv} ≥ {bound}");
    }
}

#[test]
fn same_seed_same_sequence_every_kind() {
    let mut all: Vec<String> = STATIONARY.iter().map(|s| s.to_string()).collect();
    all.push("kind = \"kv\"\nkeys = 10000\nvalue_size = 512\nmix = \"D\"".into());
    all.push("kind = \"kv\"\nkeys = 10000\nvalue_size = 512\nmix = \"E\"\nmax_keys = 12000".into());
    all.push("kind = \"stream\"\nworking_set = \"64M\"\nwrite_fraction = 0.3".into());
    for text in all {
        let cfg = workload(&format!("[workload]\n{text}\n"));
        let mut a = build(&cfg, 4096, 0.5, 7).unwrap();
        let mut b = build(&cfg, 4096, 0.5, 7).unwrap();
        let (mut ra, mut rb) = (SmallRng::seed_from_u64(3), SmallRng::seed_from_u64(3));
        for _ in 0..20_000 {
            assert_eq!(a.next(&mut ra), b.next(&mut rb), "{text}");
        }
        assert!(!a.name().is_empty());
    }
    // A different seed places the GUPS hot set elsewhere.
    let cfg = workload(&format!("[workload]\n{}\n", STATIONARY[0]));
    let h1 = build(&cfg, 4096, 1.0, 1).unwrap().hot_pages().unwrap();
    let h2 = build(&cfg, 4096, 1.0, 2).unwrap().hot_pages().unwrap();
    assert_eq!(h1.len(), h2.len());
    assert_ne!(h1[0], h2[0]);
}

#[test]
fn phase_schedule_switches_distribution() {
    let cfg = workload(
        "[workload]\nkind = \"gups\"\nworking_set = \"1G\"\nhot_set = \"128M\"\nhot_set_move_at_s = 5\n\
         [[workload.phases]]\nat_s = 2\nhot_probability = 0.5\n\
         [[workload.phases]]\nat_s = 10\nkind = \"stream\"\nworking_set = \"512M\"\n",
    );
    let mut w = build(&cfg, 2 << 20, 1.0, 1).unwrap();
    assert_eq!(w.page_count(), 512);
    let hot = w.hot_pages().unwrap();
    let p0 = w.probabilities().unwrap()[hot[0] as usize];
    assert_eq!(w.next_change_ns(), Some(2_000_000_000));
    assert!(!w.advance_to(1_000_000_000));
    assert!(w.advance_to(2_000_000_000));
    let p1 = w.probabilities().unwrap()[hot[0] as usize];
    assert!(p1 < p0, "hot probability dropped: {p1} vs {p0}");
    assert_eq!(w.next_change_ns(), Some(5_000_000_000));
    assert!(
        w.advance_to(5_000_000_000),
        "the hot set moves inside the phase"
    );
    assert_ne!(w.hot_pages().unwrap()[0], hot[0]);
    assert!(w.advance_to(10_000_000_000));
    assert!(w.probabilities().is_none(), "a stream is ordered");
    let mut rng = SmallRng::seed_from_u64(0);
    assert!(
        (0..1000).all(|_| w.next(&mut rng).page < 256),
        "the stream covers its own 512M"
    );
    assert_eq!(w.next_change_ns(), None);
}
