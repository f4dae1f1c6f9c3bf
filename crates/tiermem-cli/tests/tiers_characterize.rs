//! `tiermem tiers characterize`: every candidate measured on real pages, a tier table each
//! backend accepts, and bad input refused in one line with exit 2.

use std::path::{Path, PathBuf};
use std::process::Command;
use tiermem_linux::config::RuntimeConfig;
use tiermem_sim::config::SimConfig;

fn tiermem() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tiermem"))
}

fn out_dir(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tiermem-tc-{tag}-{}", std::process::id()))
}

#[test]
fn characterize_measures_every_candidate_and_writes_tables_both_backends_accept() {
    let out = out_dir("ok");
    let r = Command::new(tiermem())
        .args(["tiers", "characterize", "--pages", "64", "--rounds", "1", "--no-plots", "--out"])
        .arg(&out)
        .output()
        .expect("run tiermem");
    assert!(r.status.success(), "{r:?}");
    let csv = std::fs::read_to_string(out.join("tiers.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').collect()).collect();
    // 6 codecs x 3 allocators on DRAM at least (more with other memory nodes).
    assert!(rows.len() >= 18, "{csv}");
    for codec in ["lz4", "lzo", "zstd:1", "zstd:3", "deflate:1", "deflate:6"] {
        assert!(rows.iter().any(|r| r[1] == codec), "{codec} missing:\n{csv}");
    }
    let num = |r: &Vec<&str>, i: usize| r[i].parse::<f64>().unwrap();
    for r in &rows {
        // ratio (col 9) with the allocator's packing: zbud holds at most 2 per page.
        if r[2] == "zbud" {
            assert!(num(r, 9) <= 2.0 + 1e-9, "{r:?}");
        }
        // TCO saving (col 10) of one tier: 1 - cost / (ratio * DRAM's cost).
        let expect = 1.0 - num(r, 4) / num(r, 9);
        assert!((num(r, 10) - expect).abs() < 1e-3, "{r:?}");
    }
    // zsmalloc packs text tighter than zbud with the same codec.
    let ratio = |alloc: &str| {
        rows.iter()
            .find(|r| r[1] == "deflate:6" && r[2] == alloc && r[3] == "dram")
            .map(|r| num(r, 9))
            .unwrap()
    };
    assert!(ratio("zsmalloc") > ratio("zbud"), "{csv}");
    // The runtime loads its table as it is.
    let rt = out.join("runtime-tiers.toml");
    let cfg = RuntimeConfig::from_file(&rt).unwrap_or_else(|e| panic!("{e}\n{}", std::fs::read_to_string(&rt).unwrap()));
    assert!(cfg.tiers.len() >= 2, "{:?}", cfg.tiers);
    // The simulator takes its table in place of fig8.toml's tiers.
    let base = tiermem_sim::reproduce_tierscape::TIERSCAPE_FIG8_BASE;
    let first = base.find("[[machine.tiers]]").unwrap();
    let second = first + 1 + base[first + 1..].find("[[machine.tiers]]").unwrap();
    let end = base.find("[page_compressibility]").unwrap();
    let sim = std::fs::read_to_string(out.join("sim-tiers.toml")).unwrap();
    let text = format!("{}{sim}\n{}", &base[..second], &base[end..]);
    let cfg = SimConfig::from_toml(&text, "fig8 + sim-tiers.toml")
        .unwrap_or_else(|e| panic!("{e}\n{sim}"));
    // Each tier carries the times measured with its codec and allocator on DRAM.
    for t in &cfg.machine.tiers[1..] {
        let row = rows
            .iter()
            .find(|r| {
                Some(r[1]) == t.codec.as_deref()
                    && Some(r[2]) == t.allocator.as_deref()
                    && r[3] == "dram"
            })
            .unwrap();
        // The csv keeps 0.1 ns, the table whole ns.
        assert!(
            (t.fault_ns.unwrap() - num(row, 8).max(1.0)).abs() <= 1.0,
            "{sim}"
        );
        assert!(
            (t.compress_ns.unwrap() - num(row, 7).max(1.0)).abs() <= 1.0,
            "{sim}"
        );
    }
    // `reproduce tierscape-fig8 --tiers` with a characterization lacking one of fig8's
    // tiers (zsmalloc + deflate) is refused in one line naming the file and the tier.
    let partial = out.join("partial.csv");
    let kept: Vec<&str> = csv
        .lines()
        .filter(|l| !l.starts_with("zsmalloc-deflate:1-dram,"))
        .collect();
    std::fs::write(&partial, kept.join("\n")).unwrap();
    let r = Command::new(tiermem())
        .args([
            "reproduce",
            "tierscape-fig8",
            "--quick",
            "--no-plots",
            "--tiers",
        ])
        .arg(&partial)
        .arg("--out")
        .arg(out.join("fig8"))
        .output()
        .expect("run tiermem");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(
        err.trim().lines().count() == 1
            && err.contains("partial.csv")
            && err.contains("zs-de-op")
            && err.contains("zsmalloc-deflate:1"),
        "{err}"
    );
    assert!(!out.join("fig8").exists());
    let _ = std::fs::remove_dir_all(&out);
}

fn refused(args: &[&str], names: &str) {
    let out = out_dir("bad");
    let r = Command::new(tiermem())
        .args(["tiers", "characterize", "--rounds", "1", "--pages", "4", "--no-plots"])
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run tiermem");
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(names) && err.trim().lines().count() == 1, "{args:?}: {err}");
    assert!(!Path::new(&out).join("tiers.csv").exists(), "{args:?} wrote output");
}

#[test]
fn bad_input_is_one_line_naming_the_option() {
    refused(&["--cost", "dram"], "--cost dram");
    refused(&["--cost", "dram=0"], "> 0");
    refused(&["--cost", "optane=0.3"], "not a backing");
    refused(&["--random-fraction", "1.5"], "--random-fraction");
    refused(&["--pid", "999999999"], "--pid 999999999");
    refused(&["--max-compressed", "5000"], "--max-compressed");
}

/// A running process's own memory: a Python holding 4 MiB of repeated text.
#[test]
fn characterize_reads_a_running_processs_pages() {
    let mut child = Command::new("python3")
        .args([
            "-c",
            "import sys, time\nx = bytearray(b'tiered memory ' * 300000)\nprint('ready', flush=True)\ntime.sleep(30)",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let out = out_dir("pid");
    let r = Command::new(tiermem())
        .args(["tiers", "characterize", "--rounds", "1", "--pages", "512", "--no-plots", "--pid"])
        .arg(child.id().to_string())
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run tiermem");
    let _ = child.kill();
    let _ = child.wait();
    assert!(r.status.success(), "{r:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("tiers.json")).unwrap()).unwrap();
    assert!(json["source"].as_str().unwrap().starts_with("process "), "{json}");
    let rows = json["rows"].as_array().unwrap();
    assert_eq!(rows[0]["pages"], 512, "4 MiB of text fill the 512 pages asked for");
    // The repeated text compresses: the best tier saves most of a page.
    let best = rows.iter().map(|r| r["tco_saving"].as_f64().unwrap()).fold(0.0, f64::max);
    assert!(best > 0.5, "{best}");
    let _ = std::fs::remove_dir_all(&out);
}
