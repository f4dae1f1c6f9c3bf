//! Memstrata's machine and workload population on the simulated Flat Memory Mode node
//! (`flat_memory`): the paper's server (§6), ~115 synthetic VM workloads calibrated to the
//! paper's CXL-only slowdown ranges (§3.2), and each workload as a VM on the node under a
//! given backing and dedicated share.
//!
//! Calibration (docs/simulator.md, "Flat Memory Mode"):
//! * machine: 128 GB local + 128 GB CXL (§6); CXL idle latency 200–220 % of local (§6):
//!   2.1×; local idle 120 ns is an assumption (a DDR5 server socket, the same as
//!   experiments/mercury/fig13.toml); CXL peak three cards × ~50 GB/s (§6, [91]); local peak
//!   8 × DDR5-4800 = 307.2 GB/s (an assumption: the prototype's channel count is
//!   confidential).
//! * a workload's memory-boundness (its compute time per memory access) is solved so that
//!   its CXL-only slowdown equals a target drawn from its category's published range
//!   (Fig. 5, §3.2: web ≈ 0, databases and Spark ≤ 20 %, the rest ≤ 58 %). Nothing is fitted
//!   to the hardware-tiered or mixed results: those follow from the access pattern and the
//!   node's pairs.
//! * VM sizes: the workload's RSS rounded up to 2/4/8/16/32/64 GB (§3.2), so the RSS is
//!   50–100 % of the VM; pages outside it are never touched.
//! * access patterns per category are assumptions named in [`CATEGORIES`]; guest pages map
//!   to host frames at random (a warm VM has no spatial locality, §2.3 Fig. 1).

use crate::flat_memory::{
    allocate, Allocation, Backing, FlatMachine, Frame, Pattern, Vm, VmMemory,
};
use crate::latency::{Curve, CurveSpec};
use crate::machine::{CoreModel, TierModel};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tiermem_core::Result;

/// Host page size (Memstrata §5: QEMU and the host use 2 MiB pages).
pub const HOST_PAGE_BYTES: u64 = 2 << 20;
/// Colors of the page-coloring allocator (the Memstrata code's default).
pub const COLORS: usize = 768;
/// Slowdown above which a workload is an outlier (§2.2 goal #4).
pub const OUTLIER: f64 = 0.05;

/// The paper's server (§6) as a Flat Memory Mode machine; `local_gib` of local DRAM in the
/// hardware-tiered node.
pub fn paper_machine(local_gib: u64) -> FlatMachine {
    let curve = Curve::from_spec(&CurveSpec::Named("mess-skylake".into())).expect("curve");
    let local = TierModel {
        unloaded_ns: 120.0,
        peak_bytes_per_s: 307.2e9,
        write_cost: 1.75,
        curve: curve.clone(),
        coupling: 0.0,
    };
    let cxl = TierModel {
        unloaded_ns: 2.1 * 120.0,
        peak_bytes_per_s: 150e9,
        write_cost: 1.0,
        curve,
        coupling: 0.0,
    };
    let slots = (local_gib << 30) / HOST_PAGE_BYTES;
    FlatMachine::new(local, cxl, slots as usize).expect("slots")
}

/// A workload category of §3.2 and its assumptions.
#[derive(Clone, Copy, Debug)]
pub struct Category {
    pub name: &'static str,
    /// Workloads of this category in the population.
    pub count: usize,
    /// Largest CXL-only slowdown (Fig. 5 / §3.2); targets are drawn as `max × u²` for
    /// uniform `u`: most workloads are mildly sensitive, few near the maximum.
    pub max_cxl_slowdown: f64,
    /// Range of the share of accesses from sequential sweeps (the rest are random).
    pub scan_share: (f64, f64),
    /// Range of the Zipf exponent of the random accesses over the RSS.
    pub zipf: (f64, f64),
    /// VM sizes (GiB) to draw from.
    pub vm_gib: &'static [u64],
}

/// The population (§3.2: 115 workloads). Per-category counts are not published; these
/// follow the suites' sizes. Access patterns are assumptions from each suite's nature:
/// web/JVM services have skewed, cache-friendly heaps; TPC-H and HiBench scan tables and
/// partitions; YCSB is Zipf 0.99 or uniform; GAP mixes edge-array sweeps with power-law
/// vertex accesses; SPEC fp kernels (lbm, fotonik3d, bwaves) stream, int ones do not.
pub const CATEGORIES: &[Category] = &[
    Category {
        name: "web",
        count: 25,
        max_cxl_slowdown: 0.02,
        scan_share: (0.0, 0.2),
        zipf: (0.8, 1.2),
        vm_gib: &[2, 4, 8],
    },
    Category {
        name: "database",
        count: 12,
        max_cxl_slowdown: 0.20,
        scan_share: (0.0, 0.6),
        zipf: (0.6, 1.1),
        vm_gib: &[4, 8, 16, 32],
    },
    Category {
        name: "spark",
        count: 12,
        max_cxl_slowdown: 0.20,
        scan_share: (0.2, 0.7),
        zipf: (0.5, 1.0),
        vm_gib: &[8, 16, 32],
    },
    Category {
        name: "ml",
        count: 6,
        max_cxl_slowdown: 0.58,
        scan_share: (0.0, 0.3),
        zipf: (0.6, 1.1),
        vm_gib: &[8, 16, 32],
    },
    Category {
        name: "kv",
        count: 18,
        max_cxl_slowdown: 0.58,
        scan_share: (0.0, 0.05),
        zipf: (0.0, 0.99),
        vm_gib: &[4, 8, 16, 32],
    },
    Category {
        name: "graph",
        count: 18,
        max_cxl_slowdown: 0.58,
        scan_share: (0.2, 0.6),
        zipf: (0.5, 0.9),
        vm_gib: &[8, 16, 32],
    },
    Category {
        name: "spec",
        count: 24,
        max_cxl_slowdown: 0.58,
        scan_share: (0.0, 0.9),
        zipf: (0.3, 1.0),
        vm_gib: &[2, 4, 8, 16],
    },
];

/// One synthetic workload.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Workload {
    pub name: String,
    pub category: &'static str,
    pub vm_gib: u64,
    pub vcpus: f64,
    /// RSS over VM size, share of accesses from sweeps, share of the RSS swept, Zipf
    /// exponent of the rest.
    pub rss_fraction: f64,
    pub scan_share: f64,
    pub scan_region: f64,
    pub zipf: f64,
    pub cxl_slowdown_target: f64,
    /// Solved: compute time per memory access (ns) giving the target.
    pub compute_ns: f64,
}

/// The population, seeded.
pub fn population(seed: u64) -> Vec<Workload> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut out = Vec::new();
    for c in CATEGORIES {
        for k in 0..c.count {
            let u: f64 = rng.gen();
            let lerp = |r: (f64, f64), x: f64| r.0 + (r.1 - r.0) * x;
            let vm_gib = c.vm_gib[rng.gen_range(0..c.vm_gib.len())];
            let scan_share = lerp(c.scan_share, rng.gen());
            out.push(Workload {
                name: format!("{}-{:02}", c.name, k + 1),
                category: c.name,
                vm_gib,
                // One vCPU per 4 GiB (general-purpose cloud VMs), 1 to 8.
                vcpus: (vm_gib as f64 / 4.0).clamp(1.0, 8.0),
                rss_fraction: lerp((0.5, 1.0), rng.gen()),
                scan_share,
                scan_region: if scan_share > 0.0 {
                    lerp((0.2, 1.0), rng.gen())
                } else {
                    0.0
                },
                zipf: lerp(c.zipf, rng.gen()),
                cxl_slowdown_target: c.max_cxl_slowdown * u * u,
                compute_ns: 0.0,
            });
        }
    }
    out
}

impl Workload {
    pub fn pages(&self) -> usize {
        ((self.vm_gib << 30) / HOST_PAGE_BYTES) as usize
    }

    /// Per guest page: access share and pattern. The RSS is the first pages (the frame
    /// map scatters them); its first `scan_region` is swept, the rest accessed at random
    /// with Zipf skew.
    pub fn access(&self) -> (Vec<f64>, Vec<Pattern>) {
        let n = self.pages();
        let rss = ((n as f64 * self.rss_fraction).round() as usize).clamp(1, n);
        let scanned = if self.scan_share > 0.0 {
            ((rss as f64 * self.scan_region).round() as usize).clamp(1, rss)
        } else {
            0
        };
        let random = rss - scanned;
        let (scan_share, random_share) = if random == 0 {
            (1.0, 0.0)
        } else if scanned == 0 {
            (0.0, 1.0)
        } else {
            (self.scan_share, 1.0 - self.scan_share)
        };
        let mut p = vec![0.0; n];
        let mut pat = vec![Pattern::Random; n];
        for g in 0..scanned {
            p[g] = scan_share / scanned as f64;
            pat[g] = Pattern::Scan;
        }
        let w: Vec<f64> = (0..random)
            .map(|i| 1.0 / ((i + 1) as f64).powf(self.zipf))
            .collect();
        let t: f64 = w.iter().sum();
        for (i, x) in w.into_iter().enumerate() {
            p[scanned + i] = random_share * x / t;
        }
        (p, pat)
    }

    fn core(&self) -> CoreModel {
        // Sweeps prefetch; random accesses are dependent a few deep.
        CoreModel {
            cores: self.vcpus,
            ops_in_flight: 2.0 + 8.0 * self.scan_share,
            mlp_lines: 16.0,
            compute_ns_per_op: self.compute_ns,
        }
    }

    /// This workload as a VM with the given frames.
    pub fn vm(&self, frames: Vec<Frame>) -> Vm {
        let (probability, pattern) = self.access();
        Vm {
            name: self.name.clone(),
            cores: self.core(),
            lines_per_op: 1.0,
            written_lines_per_op: 0.3,
            memory: VmMemory {
                probability,
                pattern,
                frames,
            },
        }
    }
}

/// Operations per second of a workload alone on the machine.
pub fn alone(
    m: &FlatMachine,
    w: &Workload,
    backing: Backing,
    dedicated_share: f64,
    seed: u64,
) -> Result<(f64, f64)> {
    let n = w.pages();
    let dedicated = (n as f64 * dedicated_share).round() as usize;
    let frames = allocate(
        m.slots,
        &[n],
        &[dedicated],
        Allocation::Colored { colors: COLORS },
        seed,
    )?;
    let vm = w.vm(frames.into_iter().next().expect("one VM"));
    let eq = m.solve(std::slice::from_ref(&vm), backing);
    Ok((eq.ops_per_s[0], eq.miss_ratio[0]))
}

/// Solve a workload's compute time so that its CXL-only slowdown is its target
/// (bisection: the slowdown falls as compute grows).
pub fn calibrate(m: &FlatMachine, w: &mut Workload) -> Result<()> {
    let slowdown = |w: &Workload| -> Result<f64> {
        let l = alone(m, w, Backing::AllLocal, 0.0, 0)?.0;
        let c = alone(m, w, Backing::CxlOnly, 0.0, 0)?.0;
        Ok(l / c - 1.0)
    };
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    w.compute_ns = hi;
    while slowdown(w)? > w.cxl_slowdown_target {
        hi *= 2.0;
        w.compute_ns = hi;
        if hi > 1e9 {
            break;
        }
    }
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        w.compute_ns = mid;
        if slowdown(w)? > w.cxl_slowdown_target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    w.compute_ns = hi;
    Ok(())
}
