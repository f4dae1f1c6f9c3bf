//! The analytical model's solve at the size issue 13 asks for: 50 000 regions of 2 MiB
//! (~100 GB, the size of TierScape's largest workload, XSbench's 119 GB, §7.2 Table 3) × 6
//! tiers (DRAM + the 5 compressed tiers of §7.1 Table 2), decided within 1 s. Hotness: 30 %
//! of the regions cold (0 samples), the rest squared uniform sample counts (a skewed
//! profile, nearly every value distinct, so the LP buckets them into `MAX_GROUPS` hotness
//! quantiles). Prints one line per α and method:
//! wall time of `Instance::solve` (building the HiGHS model included), the modelled
//! overhead and the TCO against its bound.
//!
//! `cargo bench -p tiermem-policies --bench tierscape_solve [-- REGIONS]`

use rand::{Rng, SeedableRng};
use std::time::Instant;
use tiermem_policies::tierscape_analytical::{Instance, Method};

fn main() {
    let regions: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50_000);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(13);
    let hot: Vec<f64> = (0..regions)
        .map(|_| {
            if rng.gen_bool(0.3) {
                0.0
            } else {
                rng.gen_range(0.0..100.0f64).powi(2)
            }
        })
        .collect();
    // Effective cost (media cost / compression ratio) and fault latency, ns, shaped like
    // TierScape's Table 2 tiers (Figure 3): Optane at 1/3 of DRAM's cost (§7.2).
    let cost = vec![1.0, 0.5, 1.0 / 6.0, 1.0 / 9.0, 1.0 / 3.2, 1.0 / 12.0];
    let lat = vec![0.0, 4_700.0, 6_000.0, 8_000.0, 13_000.0, 30_000.0];
    let pages = vec![512.0; regions];
    let total: f64 = pages.iter().sum();
    let min = 1.0 / 12.0;
    println!("| regions x tiers | alpha | method | solve ms | overhead (model) | TCO / bound |");
    println!("|---|---|---|---|---|---|");
    for alpha in [0.1, 0.5, 0.9] {
        let inst = Instance {
            hot: hot.clone(),
            pages: pages.clone(),
            cost: cost.clone(),
            lat: lat.clone(),
            budget: total * min + alpha * total * (1.0 - min),
        };
        let methods: &[Method] = if regions <= 2_000 {
            &[Method::ExactMip, Method::LpRounded]
        } else {
            &[Method::LpRounded]
        };
        for &m in methods {
            let t = Instant::now();
            let r = inst.solve(m, 60.0);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            match r {
                Ok(tiers) => println!(
                    "| {regions} x 6 | {alpha} | {m:?} | {ms:.0} | {:.4e} | {:.6} |",
                    inst.overhead(&tiers),
                    inst.tco(&tiers) / inst.budget
                ),
                Err(e) => println!("| {regions} x 6 | {alpha} | {m:?} | {ms:.0} | failed: {e} | |"),
            }
        }
    }
}
