//! Simulated accesses per second on the access path (one core), and the cost of one
//! epoch's fixed point. `make bench` runs this; numbers go in the closing notes.
//!
//! The access path is what `SimBackend` does per simulated access: draw the operation from
//! the workload, look its page up in the placement table, count it per tier, and hand it
//! to the tracker (PEBS counter here).

use std::time::Instant;
use tiermem_core::Backend;
use tiermem_sim::reproduce::{antagonist_at, config_with, COLLOID_GUPS_BASE};

fn main() {
    let cfg = config_with(
        COLLOID_GUPS_BASE,
        "bench",
        &[("antagonist", antagonist_at(1))],
    )
    .expect("base config");
    let mut backend = tiermem_sim::backend::SimBackend::new(&cfg).expect("backend");
    backend
        .install_tracker(&tiermem_core::TrackerSpec::Pebs {
            sample_period: 5000,
        })
        .expect("tracker");

    // Warm up, then time whole epochs: accesses dominate, the fixed point is per epoch.
    let quantum = 10_000_000;
    backend.advance(quantum).expect("advance");
    let runs = 3000;
    let start = Instant::now();
    let mut accesses = 0.0;
    for _ in 0..runs {
        backend.advance(quantum).expect("advance");
        accesses +=
            backend.equilibrium().app_ops_per_s * quantum as f64 / 1e9 / cfg.accesses_per_sample;
    }
    let secs = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let solves = 2000;
    for _ in 0..solves {
        std::hint::black_box(backend.solve_now());
    }
    let solve_s = start.elapsed().as_secs_f64() / solves as f64;
    let access_s = secs - solve_s * runs as f64;
    println!(
        "fixed point: {:.1} µs per epoch solve (2 tiers, antagonist)",
        solve_s * 1e6
    );
    println!(
        "access path: {:.1} M simulated accesses/s on one core ({:.2e} accesses; {:.1} M/s including the per-epoch fixed points)",
        accesses / access_s / 1e6,
        accesses,
        accesses / secs / 1e6
    );
}
