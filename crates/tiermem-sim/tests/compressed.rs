//! Compressed tiers in the simulator: the model's consequences (fault + decompression per
//! access to a compressed page, packing limits, codec time on the migration thread) and
//! config errors that name the field.

use tiermem_core::{Backend, ErrorKind, PageRange, Plan, TierId};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::compressed::{codec, FRAME};
use tiermem_sim::config::SimConfig;

const DRAM: TierId = TierId(0);
const ZTIER: TierId = TierId(1);

/// 1 app core, 64 pages of 4 KiB (GUPS, hot set of one page taking every access), DRAM for
/// all of them, and a compressed tier with `ztier` lines and `frames` frames.
fn config(ztier: &str, frames: u64, min: f64, max: f64, hot_p: f64) -> String {
    format!(
        r#"
duration_s = 1
epoch_ms = 10
[machine]
page_size = "4KiB"
app_cores = 1
ops_in_flight = 5
mlp_lines = 14
[machine.migration]
per_page_ns = 0
copy_gbps = 1000
shootdown_ns = 0
[[machine.tiers]]
name = "local"
kind = "dram"
capacity = "256KiB"
unloaded_latency_ns = 70
peak_bandwidth_gbps = 205
curve = "flat"
[[machine.tiers]]
name = "z"
kind = "compressed"
capacity = {cap}
{ztier}
[page_compressibility]
min = {min}
max = {max}
[workload]
kind = "gups"
working_set = "256KiB"
hot_set = "4KiB"
hot_probability = {hot_p}
object_size = 64
write_fraction = 0
[policy]
policy = "static"
"#,
        cap = frames * FRAME
    )
}

fn backend(text: &str) -> SimBackend {
    SimBackend::new(&SimConfig::from_toml(text, "t.toml").expect("config")).expect("backend")
}

fn move_pages(b: &mut SimBackend, pages: impl IntoIterator<Item = u32>, to: TierId) -> u64 {
    let mut plan = Plan::default();
    for p in pages {
        plan.push_range(PageRange::one(p), to);
    }
    let a = b.apply(&plan, None);
    a.pages_applied
}

#[test]
fn a_hot_compressed_page_costs_one_fault_plus_decompression_then_lives_in_dram() {
    let text = config("codec = \"lz4\"\nallocator = \"zbud\"", 64, 0.25, 0.25, 1.0);
    let mut plain = backend(&text);
    let mut b = backend(&text);
    let hot = (0..64u32)
        .find(|&p| b.workload().probabilities().unwrap()[p as usize] > 0.5)
        .unwrap();
    assert_eq!(move_pages(&mut b, [hot], ZTIER), 1);
    assert_eq!(b.used_pages()[1], 1);
    // The pool holds one 1 KiB object: one frame.
    assert_eq!(b.used_bytes(1), FRAME);
    plain.advance(10_000_000).unwrap();
    b.advance(10_000_000).unwrap();
    // Its first access faulted it back: one fault, the page in DRAM, the pool empty.
    assert_eq!(b.placement()[hot as usize], DRAM);
    let snap = b.observe();
    assert!(
        (snap.tiers[1].faults_per_s - 100.0).abs() < 1e-9,
        "{}",
        snap.tiers[1].faults_per_s
    );
    assert_eq!(snap.tiers[1].used_bytes, 0);
    assert!(snap
        .events
        .iter()
        .any(|e| matches!(e, tiermem_core::HeatEvent::TierFault { page } if *page == hot)));
    // The fault stalled the one core for fault + lz4 decompression, and nothing else
    // differed from a run without it: the epoch's throughput is lower by exactly that
    // share of the 10 ms epoch.
    let cost = 2000.0 + codec("lz4", "").unwrap().decompress_ns;
    assert_eq!(b.tier_specs()[1].unloaded_latency_ns, cost);
    let ratio = b.equilibrium().app_ops_per_s / plain.equilibrium().app_ops_per_s;
    assert!((ratio - (1.0 - cost / 1e7)).abs() < 1e-12, "{ratio}");
}

#[test]
fn a_measured_fault_ns_is_the_fault_cost_and_compress_ns_the_migration_threads() {
    // fault_ns replaces compressed_fault_ns + the codec table's decompression: the hot
    // page's one fault lowers the epoch's throughput by exactly fault_ns / 10 ms.
    let text = config(
        "codec = \"lz4\"\nallocator = \"zbud\"\nfault_ns = 12345\ncompress_ns = 50000",
        64,
        0.25,
        0.25,
        1.0,
    );
    let mut plain = backend(&text);
    let mut b = backend(&text);
    assert_eq!(b.tier_specs()[1].unloaded_latency_ns, 12345.0);
    let hot = (0..64u32)
        .find(|&p| b.workload().probabilities().unwrap()[p as usize] > 0.5)
        .unwrap();
    assert_eq!(move_pages(&mut b, [hot], ZTIER), 1);
    plain.advance(10_000_000).unwrap();
    b.advance(10_000_000).unwrap();
    assert_eq!(b.placement()[hot as usize], DRAM);
    let ratio = b.equilibrium().app_ops_per_s / plain.equilibrium().app_ops_per_s;
    assert!((ratio - (1.0 - 12345.0 / 1e7)).abs() < 1e-12, "{ratio}");
    // A slower backing still adds its extra line reads: a quarter page = 16 lines, 2 rounds
    // of 14, each (305 - 70) ns.
    let slow = backend(&text.replace(
        "fault_ns = 12345",
        "fault_ns = 12345\nbacking_latency_ns = 305",
    ));
    assert_eq!(
        slow.tier_specs()[1].unloaded_latency_ns,
        12345.0 + 2.0 * (305.0 - 70.0)
    );
    // compress_ns is what the migration thread spends per page moved in: a quarter of a
    // thread for 10 ms compresses floor(2.5e6 / (compress + copy)) pages.
    let mut m = backend(
        &config("compress_ns = 50000", 64, 0.25, 0.25, 0.0)
            .replace("per_page_ns = 0", "per_page_ns = 0\nthreads = 0.25"),
    );
    let per: f64 = 50000.0 + 4096.0 / 1000e9 * 1e9;
    assert_eq!(
        move_pages(&mut m, 0..64, ZTIER),
        (2.5e6 / per).floor() as u64
    );
}

#[test]
fn zbud_packs_at_most_two_pages_per_frame_and_a_big_object_takes_a_frame() {
    // 1 KiB objects: 10 frames hold 20 pages, not 21.
    let mut b = backend(&config("allocator = \"zbud\"", 10, 0.25, 0.25, 0.0));
    assert_eq!(move_pages(&mut b, 0..21, ZTIER), 20);
    assert_eq!(b.used_bytes(1), 10 * FRAME);
    // Over half a page compressed: one frame each, so 10 pages.
    let mut b = backend(&config("allocator = \"zbud\"", 10, 0.6, 0.6, 0.0));
    assert_eq!(move_pages(&mut b, 0..21, ZTIER), 10);
    // zsmalloc packs the same 1 KiB objects 4 per frame.
    let mut b = backend(&config("allocator = \"zsmalloc\"", 10, 0.25, 0.25, 0.0));
    assert_eq!(move_pages(&mut b, 0..64, ZTIER), 40);
    // A page that does not compress below max_compressed (3 KiB) stays put.
    let mut b = backend(&config("", 10, 0.9, 0.9, 0.0));
    assert_eq!(move_pages(&mut b, 0..4, ZTIER), 0);
}

#[test]
fn compression_runs_on_the_migration_thread() {
    // No fixed cost, copies nearly free: a quarter of a thread for a 10 ms quantum
    // compresses floor(2.5e6 / (compress + copy)) pages.
    let text = config("codec = \"zstd:3\"", 64, 0.25, 0.25, 0.0)
        .replace("per_page_ns = 0", "per_page_ns = 0\nthreads = 0.25");
    let mut b = backend(&text);
    let per = codec("zstd:3", "").unwrap().compress_ns + 4096.0 / 1000e9 * 1e9;
    let n = move_pages(&mut b, 0..64, ZTIER);
    assert_eq!(n, (2.5e6 / per).floor() as u64);
}

fn error_for(text: &str) -> String {
    let e = tiermem_sim::simulate_toml(text, "bad.toml").expect_err("must be rejected");
    assert_eq!(e.kind, ErrorKind::Config, "{e}");
    assert_eq!(e.kind.exit_code(), 2);
    e.to_string()
}

#[test]
fn compressed_config_errors_name_the_field() {
    let good = config("", 10, 0.3, 0.6, 0.5);
    for (find, replace, path) in [
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\ncodec = \"brotli\"",
            "machine.tiers[1].codec",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\nallocator = \"slab\"",
            "machine.tiers[1].allocator",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\ncurve = \"flat\"",
            "machine.tiers[1].curve",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\nunloaded_latency_ns = 3",
            "machine.tiers[1].unloaded_latency_ns",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\nfault_ns = 0",
            "machine.tiers[1].fault_ns",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\nfault_ns = -5.0",
            "machine.tiers[1].fault_ns",
        ),
        (
            "kind = \"compressed\"",
            "kind = \"compressed\"\ncompress_ns = nan",
            "machine.tiers[1].compress_ns",
        ),
        (
            "kind = \"dram\"",
            "kind = \"dram\"\nfault_ns = 5000",
            "machine.tiers[0].fault_ns",
        ),
        (
            "page_size = \"4KiB\"",
            "page_size = \"2MiB\"",
            "machine.page_size",
        ),
        (
            "[page_compressibility]\nmin = 0.3\nmax = 0.6",
            "",
            "page_compressibility",
        ),
        ("max = 0.6", "max = 0.1", "page_compressibility.max"),
        ("min = 0.3", "min = 0", "page_compressibility.min"),
        (
            "[policy]",
            "initial_placement = \"tier:1\"\n[policy]",
            "initial_placement",
        ),
    ] {
        assert!(good.contains(find), "{find}");
        let e = error_for(&good.replacen(find, replace, 1));
        assert!(e.contains(&format!("`{path}`")), "{path}: {e}");
    }
}

#[test]
fn with_tier0_full_a_compressed_page_faults_on_every_access() {
    // 63 pages of DRAM for 64 uniformly accessed pages: the last starts compressed, faults
    // at its first access, finds no room and stays; from then on each of its accesses
    // (1/64 of all) is a fault, a synchronous per-operation cost on the one core.
    let text = config("", 64, 0.25, 0.25, 0.0).replacen(
        "capacity = \"256KiB\"",
        "capacity = \"252KiB\"",
        1,
    );
    let mut b = backend(&text);
    assert_eq!(b.used_pages(), &[63, 1]);
    b.advance(10_000_000).unwrap();
    b.advance(10_000_000).unwrap();
    assert_eq!(b.used_pages(), &[63, 1]);
    let cost = 2000.0 + codec("lz4", "").unwrap().decompress_ns;
    let ns_per_op = 70.0 / 5.0 + cost / 64.0;
    let ops = b.equilibrium().app_ops_per_s;
    assert!((ops - 1e9 / ns_per_op).abs() / ops < 1e-9, "{ops}");
    let faults = b.observe().tiers[1].faults_per_s;
    assert!((faults - ops / 64.0).abs() / faults < 1e-9, "{faults}");
}
