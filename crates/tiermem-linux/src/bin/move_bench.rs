//! tiermem-move-bench: move_pages(2) throughput between two memory nodes, batched (up to
//! 512 pages per call, as the runtime's node tiers move a 2 MiB range or a batch) vs one
//! page per call. Pages/s of each, moving the same written pages from the DRAM node to the
//! other node and back.
//!
//!   tiermem-move-bench [--mb N] [--rounds R] [--node N] [--probe-ms MS]
//!
//! Moves need two memory nodes (a NUMA machine, a CXL expander, or the QEMU guest of
//! scripts/numa-guest.sh); with one it says so. First it runs the latency probe
//! (`telemetry = "probe"`) over every memory node for `--probe-ms` (default 3000) at its
//! shortest period and prints its CPU share and the latencies it read: the cost
//! `tiermem stat` reports as `probe_cpu_share`.

use std::time::Instant;
use tiermem_linux::numa::{self, MOVE_BATCH, MPOL_MF_MOVE};

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|k| args.get(k + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Move every page of `addrs` to `node`, `per_call` pages per move_pages call; the pages
/// that ended up there.
fn move_all(addrs: &[usize], node: u32, per_call: usize) -> usize {
    let nodes = vec![node as i32; per_call];
    let mut status = vec![0i32; per_call];
    let mut moved = 0;
    for chunk in addrs.chunks(per_call) {
        let r = numa::move_pages(0, chunk, &nodes[..chunk.len()], &mut status, MPOL_MF_MOVE);
        assert!(r >= 0, "move_pages failed: errno {}", -r);
        moved += status[..chunk.len()]
            .iter()
            .filter(|&&s| s == node as i32)
            .count();
    }
    moved
}

/// Run the probe over every memory node for `ms`: its CPU share of one core (thread CPU
/// time / wall time) and the latency it read per node.
fn probe_cost(home: u32, ms: u64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    if ms == 0 {
        return;
    }
    let others: Vec<Option<u32>> = std::iter::once(None)
        .chain(
            numa::memory_nodes()
                .into_iter()
                .filter(|&n| n != home)
                .map(Some),
        )
        .collect();
    // Quantum 0: the probe's shortest period (20 ms), its most expensive setting.
    let probe = std::sync::Arc::new(tiermem_linux::probe::Probe::new(&others, home, 0));
    static STOP: AtomicBool = AtomicBool::new(false);
    let p2 = probe.clone();
    let t = std::thread::spawn(move || p2.run(&STOP));
    let t0 = Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(ms));
    let cpu = probe.cpu_s();
    let wall = t0.elapsed().as_secs_f64();
    STOP.store(true, Ordering::Relaxed);
    let _ = t.join();
    let lat: Vec<String> = (0..others.len())
        .map(|k| {
            let node = others[k].unwrap_or(home);
            match probe.latency_ns(k) {
                Some(l) => format!("node {node} {l:.0} ns"),
                None => format!("node {node} -"),
            }
        })
        .collect();
    println!(
        "move-bench: probe    {} node(s), period {} ms: {:.2} % of a core ({:.3} s CPU in {:.1} s); read {}",
        others.len(),
        probe.period_ns / 1_000_000,
        100.0 * cpu / wall,
        cpu,
        wall,
        lat.join(", ")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb = arg(&args, "--mb", 64) as usize;
    let rounds = arg(&args, "--rounds", 3) as usize;
    let home = numa::dram_node();
    probe_cost(home, arg(&args, "--probe-ms", 3000));
    let far = match args.iter().any(|a| a == "--node") {
        true => arg(&args, "--node", 1) as u32,
        false => match numa::memory_nodes().into_iter().find(|&n| n != home) {
            Some(n) => n,
            None => {
                println!("move-bench: one memory node here ({home}); needs two (see scripts/numa-guest.sh)");
                return;
            }
        },
    };
    let pages = mb * 256;
    let mut buf = vec![0u8; pages * 4096 + 4096];
    let base = (buf.as_ptr() as usize).next_multiple_of(4096);
    let off = base - buf.as_ptr() as usize;
    for p in 0..pages {
        buf[off + p * 4096] = p as u8 | 1; // one write per page: each is a real page
    }
    let addrs: Vec<usize> = (0..pages).map(|p| base + p * 4096).collect();
    move_all(&addrs, home, MOVE_BATCH);
    for (label, per_call) in [("batched", MOVE_BATCH), ("single", 1)] {
        let mut best = 0.0f64;
        for _ in 0..rounds {
            for node in [far, home] {
                let t0 = Instant::now();
                let moved = move_all(&addrs, node, per_call);
                let dt = t0.elapsed().as_secs_f64();
                // A page the kernel could not move this time (busy under migration) is not
                // counted; almost all move.
                assert!(
                    moved * 10 >= pages * 9,
                    "{label}: {moved} of {pages} pages reached node {node}"
                );
                best = best.max(moved as f64 / dt);
            }
        }
        println!(
            "move-bench: {label:<8} {per_call:>3} pages/call  {best:>12.0} pages/s  ({mb} MiB, nodes {home}<->{far}, best of {rounds} rounds each way)"
        );
    }
    // The pages are still ours and intact.
    assert!((0..pages).all(|p| buf[off + p * 4096] == (p as u8 | 1)));
}
