//! `tiermem tiers characterize`: measure every candidate compressed tier on real pages
//! (TierScape §4.1, Figure 3) and write a tier table both backends accept.

use crate::sim_cmd::plot;
use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use tiermem_core::{Error, Result};
use tiermem_linux::characterize::{self, TierRow, PAGE};
use tiermem_linux::pool::Backing;

#[derive(Subcommand)]
pub enum TiersCommand {
    /// Measure each codec x allocator x backing on real 4 KiB pages: fault latency,
    /// compression time, ratio with the allocator's packing, TCO saving; write tiers.csv,
    /// tiers.json, a tier table for each backend and a latency-vs-saving plot to --out.
    Characterize(CharacterizeArgs),
}

#[derive(Args)]
pub struct CharacterizeArgs {
    /// Pages from this file (its 4 KiB chunks).
    #[arg(long, conflicts_with = "pid")]
    pub data: Option<PathBuf>,
    /// Pages from this running process's private anonymous memory (non-zero pages).
    #[arg(long)]
    pub pid: Option<i32>,
    /// Without --data/--pid: the built-in corpus, with this fraction of its bytes random
    /// (0: English-like text, lz4 to ~0.58 of a page; 0.1: ~0.8; 1: incompressible).
    #[arg(long, default_value_t = 0.0)]
    pub random_fraction: f64,
    /// Pages to use (at most).
    #[arg(long, default_value_t = 4096)]
    pub pages: usize,
    /// Media cost per GB, BACKING=COST (repeatable): "dram=1", "node:1=0.33". Defaults:
    /// DRAM 1, every other memory node 1/3 (TierScape §7.2).
    #[arg(long = "cost", value_name = "BACKING=COST")]
    pub costs: Vec<String>,
    /// A page that does not compress below this many bytes stays uncompressed.
    #[arg(long, default_value_t = 3072)]
    pub max_compressed: usize,
    /// Timings are the fastest of this many passes.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// Skip the PNG plot.
    #[arg(long)]
    pub no_plots: bool,
}

pub fn tiers(c: TiersCommand) -> Result<()> {
    match c {
        TiersCommand::Characterize(a) => characterize_cmd(a),
    }
}

/// `--cost` entries over the defaults: (backing name, backing, cost) and DRAM's cost.
/// The candidate backings with their cost per GB (name, backing, cost), and DRAM's cost.
type Costs = (Vec<(String, Backing, f64)>, f64);

fn costs(args: &[String]) -> Result<Costs> {
    let mut backings: Vec<(String, Backing, f64)> = characterize::backings()
        .into_iter()
        .map(|(n, b)| {
            let c = if n == "dram" { 1.0 } else { 1.0 / 3.0 };
            (n, b, c)
        })
        .collect();
    for a in args {
        let Some((name, v)) = a.split_once('=') else {
            return Err(Error::usage(format!(
                "--cost {a}: expected BACKING=COST, e.g. --cost dram=1 --cost node:1=0.33"
            )));
        };
        let cost: f64 = v.trim().parse().ok().filter(|c: &f64| c.is_finite() && *c > 0.0).ok_or_else(|| {
            Error::usage(format!("--cost {a}: the cost must be a number > 0 (relative per GB; DRAM is usually 1)"))
        })?;
        match backings.iter_mut().find(|(n, _, _)| n == name.trim()) {
            Some(b) => b.2 = cost,
            None => {
                return Err(Error::usage(format!(
                    "--cost {a}: `{name}` is not a backing here; use {}",
                    backings.iter().map(|(n, _, _)| n.as_str()).collect::<Vec<_>>().join(", ")
                )))
            }
        }
    }
    let dram = backings[0].2;
    Ok((backings, dram))
}

/// Everything checkable before any work: the options, the costs and the output folder.
pub fn check_args(a: &CharacterizeArgs) -> Result<Costs> {
    if a.pages == 0 {
        return Err(Error::usage("--pages 0: give at least 1 page".to_string()));
    }
    if !(0.0..=1.0).contains(&a.random_fraction) {
        return Err(Error::usage(format!(
            "--random-fraction {}: give a fraction from 0 to 1",
            a.random_fraction
        )));
    }
    if a.max_compressed == 0 || a.max_compressed > PAGE {
        return Err(Error::usage(format!(
            "--max-compressed {}: give 1 to 4096 bytes",
            a.max_compressed
        )));
    }
    crate::sim_cmd::check_out_dir(&a.out)?;
    costs(&a.costs)
}

fn characterize_cmd(a: CharacterizeArgs) -> Result<()> {
    let (backings, dram_cost) = check_args(&a)?;
    let (data, source) = if let Some(f) = &a.data {
        let mut d = std::fs::read(f).map_err(|e| Error::io(f.display(), e))?;
        d.truncate(a.pages * PAGE);
        (d, format!("file {}", f.display()))
    } else if let Some(pid) = a.pid {
        let d = characterize::read_process_pages(pid, a.pages)
            .map_err(|e| Error::usage(format!("--pid {pid}: {e}")))?;
        (d, format!("process {pid}"))
    } else {
        (
            characterize::corpus(a.pages, a.random_fraction, 1),
            format!("built-in corpus, random fraction {}", a.random_fraction),
        )
    };
    let pages: Vec<&[u8]> = data.chunks_exact(PAGE).collect();
    if pages.is_empty() {
        return Err(Error::usage(format!(
            "{source}: no whole 4 KiB page to characterize (a file of at least 4096 bytes, or a process with non-zero anonymous memory)"
        )));
    }
    if pages.len() < 4096 {
        eprintln!(
            "tiermem: only {} pages: a pool takes memory in 16 KiB slabs per size class, so a small sample understates the ratio of allocators with many classes (zsmalloc); give 4096 pages or more",
            pages.len()
        );
    }
    eprintln!(
        "tiermem: characterizing {} pages ({source}) on {} backing(s)...",
        pages.len(),
        backings.len()
    );
    let rows = characterize::characterize(&pages, &backings, dram_cost, a.max_compressed, a.rounds);
    print_table(&rows);
    write_outputs(&a.out, &rows, &source, dram_cost)?;
    if !a.no_plots {
        plot("tiers-characterize", &a.out);
    }
    println!("wrote {}", a.out.display());
    Ok(())
}

fn print_table(rows: &[TierRow]) {
    println!(
        "{:<26} {:>7} {:>12} {:>10} {:>9} {:>12}",
        "tier", "ratio", "compress us", "fault us", "cost/GB", "TCO saving"
    );
    for r in rows {
        println!(
            "{:<26} {:>7.2} {:>12.1} {:>10.1} {:>9.3} {:>11.1}%",
            r.name,
            r.ratio,
            r.compress_ns / 1e3,
            r.fault_ns / 1e3,
            r.cost_per_gb,
            r.tco_saving * 100.0
        );
    }
}

/// The tiers no other tier beats on both fault latency and TCO saving, fastest first, at
/// most 7 (the tier table holds 8 with DRAM): TierScape §4.2 picks its tiers along this
/// trade-off.
pub fn frontier(rows: &[TierRow]) -> Vec<&TierRow> {
    let mut f: Vec<&TierRow> = rows
        .iter()
        .filter(|r| r.compressible_pages > 0 && r.tco_saving > 0.0)
        .filter(|r| {
            !rows.iter().any(|o| {
                o.compressible_pages > 0
                    && o.fault_ns <= r.fault_ns
                    && o.tco_saving >= r.tco_saving
                    && (o.fault_ns < r.fault_ns || o.tco_saving > r.tco_saving)
            })
        })
        .collect();
    f.sort_by(|a, b| a.fault_ns.total_cmp(&b.fault_ns));
    if f.len() > 7 {
        // Keep the fastest and the best saving, and spread the rest evenly between.
        let n = f.len();
        f = (0..7).map(|i| f[i * (n - 1) / 6]).collect();
    }
    f
}

fn write_outputs(out: &Path, rows: &[TierRow], source: &str, dram_cost: f64) -> Result<()> {
    std::fs::create_dir_all(out).map_err(|e| Error::io(out.display(), e))?;
    let write = |name: &str, text: String| {
        let p = out.join(name);
        std::fs::write(&p, text).map_err(|e| Error::io(p.display(), e))
    };
    let mut csv = String::from(
        "name,codec,allocator,backing,cost_per_gb,pages,compressible_pages,compress_ns,fault_ns,ratio,tco_saving\n",
    );
    for r in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{:.1},{:.1},{:.4},{:.4}",
            r.name, r.codec, r.allocator, r.backing, r.cost_per_gb, r.pages,
            r.compressible_pages, r.compress_ns, r.fault_ns, r.ratio, r.tco_saving
        );
    }
    write("tiers.csv", csv)?;
    let chosen = frontier(rows);
    write(
        "tiers.json",
        serde_json::to_string_pretty(&serde_json::json!({
            "source": source,
            "dram_cost_per_gb": dram_cost,
            "rows": rows,
            "frontier": chosen.iter().map(|r| &r.name).collect::<Vec<_>>(),
        }))
        .expect("json")
            + "\n",
    )?;
    // The frontier as a tier table for each backend (the one schema, core's TierConfig).
    let mut rt = format!(
        "# `tiermem tiers characterize` on {source}: the tiers on the latency / TCO-saving frontier.\n# Use in a runtime config (`tiermem run --config`); latencies are the measured fault costs.\n[[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\ncost_per_gb = {dram_cost}\n"
    );
    let mut sim = format!(
        "# `tiermem tiers characterize` on {source}: the frontier tiers for a simulator config.\n# Set each `capacity` (the pool's physical size). fault_ns and compress_ns are the times\n# measured here with the pool in DRAM (they replace the simulator's codec table); a pool on a\n# slower medium adds its extra reads from backing_latency_ns (docs/simulator.md).\n"
    );
    for r in &chosen {
        let _ = write!(
            rt,
            "\n[[runtime.tiers]]\nname = \"{}\"\nkind = \"compressed\"\ncodec = \"{}\"\nallocator = \"{}\"\nbacking = \"{}\"\ncost_per_gb = {}\nunloaded_latency_ns = {:.0}\n",
            r.name, r.codec, r.allocator, r.backing, r.cost_per_gb, r.fault_ns
        );
        // The simulator's fault_ns is the DRAM-backed measurement (its backing model adds a
        // slower medium's reads): this row's own on DRAM, else the same codec and allocator's.
        let on_dram = rows
            .iter()
            .find(|d| d.backing == "dram" && d.codec == r.codec && d.allocator == r.allocator)
            .unwrap_or(r);
        let _ = write!(
            sim,
            "\n[[machine.tiers]]\nname = \"{}\"\nkind = \"compressed\"\ncodec = \"{}\"\nallocator = \"{}\"\ncapacity = \"1GiB\"\ncost_per_gb = {}\nfault_ns = {:.0}\ncompress_ns = {:.0}\n",
            r.name,
            r.codec,
            r.allocator,
            r.cost_per_gb,
            on_dram.fault_ns.max(1.0),
            on_dram.compress_ns.max(1.0)
        );
        if r.backing != "dram" {
            let _ = writeln!(
                sim,
                "# pool on {}: set backing_latency_ns to that medium's load latency",
                r.backing
            );
        }
    }
    write("runtime-tiers.toml", rt)?;
    write("sim-tiers.toml", sim)
}
