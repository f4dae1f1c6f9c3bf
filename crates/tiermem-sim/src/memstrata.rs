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
//!   50–100 % of the VM, log-uniform (sizes ×2 apart); pages outside it are never touched;
//!   random-access pages touch a third of their lines ([`RANDOM_LINE_SHARE`], calibrated
//!   on FASTER, §2.2 and §3.2), sweeps every line.
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

/// Both tiers' loaded-latency curve: Mess measured on a Sapphire Rapids socket of
/// 8 × DDR5-4800, the memory system assumed for the local tier (the prototype is a later
/// Xeon with DDR5, §6). CXL expanders publish no such curve; the same shape is assumed.
const MACHINE_CURVE: &str = "mess-sapphire-rapids";

/// The paper's server (§6) as a Flat Memory Mode machine; `local_gib` of local DRAM in the
/// hardware-tiered node.
pub fn paper_machine(local_gib: u64) -> FlatMachine {
    let curve = Curve::from_spec(&CurveSpec::Named(MACHINE_CURVE.into())).expect("curve");
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

/// Share of a random-access page's cache lines a workload touches in steady state; sweeps
/// touch every line. Memstrata explains its low miss ratios by "many cold or unused cache
/// lines" (§4.1) and notes that "commonly, only a fraction of each page's cachelines are
/// hot" (§2.3). Calibrated on the one workload the paper gives in enough detail: FASTER
/// with uniform YCSB C goes from 25 % slowdown on CXL alone to 4 % under hardware tiering
/// (§3.2), and FASTER's footprint is 8.3 GB (§2.2), so a 16 GB VM. On this machine a
/// uniform key-value workload of that shape reaches 4.1 % at 1/3 (3.7 % at 0.30, 4.3 % at
/// 0.35; test `the_line_share_reproduces_fasters_uniform_ycsb_c`).
pub const RANDOM_LINE_SHARE: f64 = 1.0 / 3.0;

/// Cache lines a VM's operation writes back (of the one it reads; an assumption).
pub const VM_WRITTEN_LINES_PER_OP: f64 = 0.3;

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
    /// Share of a random-access page's cache lines the workload touches
    /// ([`RANDOM_LINE_SHARE`]; sweeps touch all).
    pub line_share: f64,
    /// Solved: compute time per memory access (ns) giving the target.
    pub compute_ns: f64,
    /// Counter profile (assumptions, see [`counters`]): instructions per cycle of the
    /// compute part, L2 misses served by the L3 per memory access, and the share of a
    /// DTLB miss's page walk spent waiting for memory.
    pub ipc: f64,
    pub l3_hits_per_access: f64,
    pub walk_memory_share: f64,
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
                // The RSS over its VM's size: footprints spread evenly on a log scale over
                // the decades the VM sizes span, rounded up to the next size (×2 apart),
                // leave RSS/VM log-uniform in [1/2, 1].
                rss_fraction: 0.5f64.powf(rng.gen::<f64>()),
                scan_share,
                scan_region: if scan_share > 0.0 {
                    lerp((0.2, 1.0), rng.gen())
                } else {
                    0.0
                },
                zipf: lerp(c.zipf, rng.gen()),
                cxl_slowdown_target: c.max_cxl_slowdown * u * u,
                line_share: RANDOM_LINE_SHARE,
                compute_ns: 0.0,
                ipc: lerp((0.5, 2.5), rng.gen()),
                l3_hits_per_access: lerp((0.5, 4.0), rng.gen()),
                // Sweeps walk page tables rarely and from cache; random accesses miss the
                // DTLB and their walks reach memory.
                walk_memory_share: lerp((0.05, 0.15), rng.gen())
                    + 0.35 * (1.0 - scan_share) * rng.gen::<f64>(),
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

    pub fn core(&self) -> CoreModel {
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
            written_lines_per_op: VM_WRITTEN_LINES_PER_OP,
            memory: VmMemory {
                probability,
                pattern,
                frames,
                random_line_share: self.line_share,
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

/// Guest page size TPP manages (§6.1: TPP "knows which pages are being used at the 4 KB
/// granularity" inside the VM).
pub const TPP_PAGE_BYTES: u64 = 4 << 10;

/// vCPU time one 4 KiB migration costs inside the VM (hint fault, unmap, batched TLB
/// flush, copy), ns. Derived from §6.1's extreme case: TPP migrating 22 GB/s in pr-web's
/// 32 GB VM (8 vCPUs by our sizing) slows it by 295 %, i.e. 75 % of 8 vCPUs busy for
/// 5.4 M pages/s: at most 1.1 µs a page (at most: CXL latency has a share in the 295 %).
pub const TPP_MIGRATION_NS: f64 = 1100.0;
/// Copy speed of one vCPU's 4 KiB migration (examples/sim.toml's 8 GB/s).
const TPP_COPY_GBPS: f64 = 8.0;

/// A workload alone under TPP (§6.1, Fig. 10/11: software tiering with visibility inside
/// the VM) on the same memory as hardware tiering: `local_share` of the VM's memory in
/// local DRAM, the rest in CXL, with [`paper_machine`]'s tiers. The simulator's TPP
/// (`tiermem_policies::tpp`, Linux v6.3 defaults) moves 4 KiB guest pages. TPP promotes
/// synchronously in the faulting vCPU and demotes from kswapd, a guest thread: every
/// vCPU migrates, and each page's [`TPP_MIGRATION_NS`] is vCPU time the workload loses
/// (the backend's per-move stall of all the tenant's cores, so `TPP_MIGRATION_NS / vCPUs`
/// each). The VM's 2 MiB pages' access probabilities spread evenly over their 512 guest
/// pages; pages start at random places (first touch in a VM follows allocation order,
/// not heat).
#[derive(Clone, Debug, serde::Serialize)]
pub struct TppRun {
    /// Operations per second with every page local, with every page on CXL (the same
    /// machine's fixed points), and TPP's steady state (the run's last half).
    pub all_local_ops: f64,
    pub cxl_only_ops: f64,
    pub tpp_ops: f64,
    /// Migrated bytes per second in the steady state, and pages TPP moved in the run.
    pub migrated_bytes_per_s: f64,
    pub pages_migrated: u64,
    /// Share of the workload's accesses local DRAM served in the steady state.
    pub local_share_of_accesses: f64,
}

/// The simulator config of [`under_tpp`] (its workload is replaced by the VM's).
pub fn tpp_config(w: &Workload, local_share: f64, duration_s: f64, seed: u64) -> String {
    let vm_bytes = w.vm_gib << 30;
    let local = ((vm_bytes as f64 * local_share) as u64 / TPP_PAGE_BYTES) * TPP_PAGE_BYTES;
    let core = w.core();
    let m = paper_machine(1);
    format!(
        r#"seed = {seed}
duration_s = {duration_s}
accesses_per_sample = 1000
record_interval_ms = 100
epoch_ms = 10
steady_state_fraction = 0.5
initial_placement = "random"

[machine]
page_size = {TPP_PAGE_BYTES}
app_cores = {cores}
ops_in_flight = {ops}
mlp_lines = {mlp}
compute_ns_per_op = {compute}

[machine.migration]
per_page_ns = {per_page}
copy_gbps = {TPP_COPY_GBPS}
threads = {cores}
shootdown_ns = {stall}

{local_tier}
{cxl_tier}
[workload]
kind = "random"
working_set = {vm_bytes}

[policy]
policy = "tpp"
"#,
        cores = core.cores,
        per_page = TPP_MIGRATION_NS - TPP_PAGE_BYTES as f64 / TPP_COPY_GBPS,
        stall = TPP_MIGRATION_NS / core.cores,
        ops = core.ops_in_flight,
        mlp = core.mlp_lines,
        compute = core.compute_ns_per_op,
        local_tier = tier_toml("local", "dram", local, &m.local),
        cxl_tier = tier_toml("cxl", "node", vm_bytes, &m.cxl),
    )
}

/// One `[[machine.tiers]]` table of the simulator's config for a tier of the model.
fn tier_toml(name: &str, kind: &str, capacity_bytes: u64, t: &TierModel) -> String {
    format!(
        r#"[[machine.tiers]]
name = "{name}"
kind = "{kind}"
capacity = {capacity_bytes}
unloaded_latency_ns = {}
peak_bandwidth_gbps = {}
write_cost = {}
curve = "{MACHINE_CURVE}"
"#,
        t.unloaded_ns,
        t.peak_bytes_per_s / 1e9,
        t.write_cost
    )
}

/// Run [`tpp_config`] with the VM's access distribution (see [`TppRun`]).
pub fn under_tpp(w: &Workload, local_share: f64, duration_s: f64, seed: u64) -> Result<TppRun> {
    let cfg = crate::config::SimConfig::from_toml(
        &tpp_config(w, local_share, duration_s, seed),
        "memstrata TPP run",
    )?;
    let (probability, _) = w.access();
    let per_group = (HOST_PAGE_BYTES / TPP_PAGE_BYTES) as u32;
    let shape = crate::workload::OpShape {
        lines_per_op: 1,
        written_lines_per_op: VM_WRITTEN_LINES_PER_OP,
    };
    let load = crate::workload::weighted::Weighted::new(&w.name, &probability, per_group, shape);
    let backend = crate::backend::SimBackend::with_tenants(
        &cfg,
        vec![(w.name.clone(), w.core().cores, Box::new(load))],
    )?;
    let fixed_point = |mass: Vec<f64>| backend.solve_static(&[mass], &[1.0]).0.ops_per_s[0];
    let (all_local_ops, cxl_only_ops) = (fixed_point(vec![1.0, 0.0]), fixed_point(vec![0.0, 1.0]));
    let policy = tiermem_policies::build_with(
        &cfg.policy,
        None,
        tiermem_policies::BuildContext {
            page_bytes: Some(TPP_PAGE_BYTES),
        },
    )?;
    let out = crate::runner::run_with(&cfg, backend, policy)?;
    let s = out.steady(cfg.steady_state_fraction);
    Ok(TppRun {
        all_local_ops,
        cxl_only_ops,
        tpp_ops: s.throughput_ops_per_s,
        migrated_bytes_per_s: s.migrated_bytes_per_s,
        pages_migrated: out.counters.applied.pages_applied,
        local_share_of_accesses: s.app_share.first().copied().unwrap_or(0.0),
    })
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

/// Core clock (GHz) turning compute time into instructions (an assumption: a server core).
pub const CORE_GHZ: f64 = 2.0;
/// L3 hit latency of a demand load (ns; a server mesh LLC, an assumption).
pub const L3_HIT_NS: f64 = 40.0;
/// Page-walk time outside memory waits (ns; cached walk levels, an assumption).
pub const WALK_BASE_NS: f64 = 20.0;

/// What a VM's cores count (§4.2), per VM — Flat Memory Mode exposes the local-miss rate
/// only system-wide, so these are the estimator's inputs — plus the truth it estimates.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Counters {
    /// Mean latency of demand loads that miss the L3 (= the VM's memory access latency).
    pub l3_miss_latency_ns: f64,
    /// Mean latency of demand loads that miss the L2 (L3 hits and memory together).
    pub l2_miss_latency_ns: f64,
    /// Mean DTLB load-miss latency (page walks, partly waiting on memory).
    pub dtlb_miss_latency_ns: f64,
    /// L2 and L3 misses (memory requests) per kilo-instruction.
    pub l2_mpki: f64,
    pub l3_mpki: f64,
    /// Ground truth, not a per-VM counter on the hardware: local misses per
    /// kilo-instruction (measured alone, §4.2 Fig. 9a) and the local-miss ratio.
    pub true_mpki: f64,
    pub miss_ratio: f64,
}

/// A VM's counters given its memory latency and miss ratio in a solved state.
pub fn counters(w: &Workload, memory_latency_ns: f64, miss_ratio: f64) -> Counters {
    let instructions_per_access = (w.compute_ns * CORE_GHZ * w.ipc).max(1.0);
    let l3_mpki = 1000.0 / instructions_per_access;
    let l2_per_access = 1.0 + w.l3_hits_per_access;
    Counters {
        l3_miss_latency_ns: memory_latency_ns,
        l2_miss_latency_ns: (w.l3_hits_per_access * L3_HIT_NS + memory_latency_ns) / l2_per_access,
        dtlb_miss_latency_ns: WALK_BASE_NS + w.walk_memory_share * memory_latency_ns,
        l2_mpki: l3_mpki * l2_per_access,
        l3_mpki,
        true_mpki: l3_mpki * miss_ratio,
        miss_ratio,
    }
}

/// One training/validation sample for the slowdown estimator.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Sample {
    pub workload: String,
    pub category: &'static str,
    pub dedicated_share: f64,
    pub noise_draw: u32,
    pub counters: Counters,
    pub slowdown: f64,
}

/// Relative standard deviation of counter noise (event multiplexing and sampling over a
/// 10 s interval; an assumption).
pub const COUNTER_NOISE: f64 = 0.05;

/// Multiplicative Gaussian noise on every measured counter (not on the truth).
pub fn noisy(c: Counters, rng: &mut SmallRng) -> Counters {
    use rand_distr::{Distribution, Normal};
    let n = Normal::new(1.0, COUNTER_NOISE).expect("normal");
    let mut f = || n.sample(rng).max(0.5);
    Counters {
        l3_miss_latency_ns: c.l3_miss_latency_ns * f(),
        l2_miss_latency_ns: c.l2_miss_latency_ns * f(),
        dtlb_miss_latency_ns: c.dtlb_miss_latency_ns * f(),
        l2_mpki: c.l2_mpki * f(),
        l3_mpki: c.l3_mpki * f(),
        ..c
    }
}

/// Dedicated shares the estimator's samples span (hardware-only to mostly dedicated).
pub const SAMPLE_DEDICATED: &[f64] = &[0.0, 1.0 / 6.0, 1.0 / 3.0, 0.5, 2.0 / 3.0];

/// Samples of every workload alone at each dedicated share, `draws` noisy readings each.
pub fn samples(m: &FlatMachine, pop: &[Workload], draws: u32, seed: u64) -> Result<Vec<Sample>> {
    let per = crate::reproduce::parallel_map(pop.to_vec(), |w| -> Result<Vec<Sample>> {
        let local = alone(m, &w, Backing::AllLocal, 0.0, seed)?.0;
        let mut rng = SmallRng::seed_from_u64(seed ^ hash(&w.name));
        let mut out = Vec::new();
        for &d in SAMPLE_DEDICATED {
            let n = w.pages();
            let frames = allocate(
                m.slots,
                &[n],
                &[(n as f64 * d).round() as usize],
                Allocation::Colored { colors: COLORS },
                seed,
            )?;
            let vm = w.vm(frames.into_iter().next().expect("one VM"));
            let eq = m.solve(std::slice::from_ref(&vm), Backing::Tiered);
            let truth = counters(&w, eq.memory_latency_ns[0], eq.miss_ratio[0]);
            for k in 0..draws {
                out.push(Sample {
                    workload: w.name.clone(),
                    category: w.category,
                    dedicated_share: d,
                    noise_draw: k,
                    counters: noisy(truth, &mut rng),
                    slowdown: local / eq.ops_per_s[0] - 1.0,
                });
            }
        }
        Ok(out)
    });
    let mut all = Vec::new();
    for p in per {
        all.extend(p?);
    }
    Ok(all)
}

fn hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The samples as CSV (the trainer's input).
pub fn samples_csv(samples: &[Sample]) -> String {
    let mut s = String::from(
        "workload,category,dedicated_share,noise_draw,l3_miss_latency_ns,l2_miss_latency_ns,dtlb_miss_latency_ns,l2_mpki,l3_mpki,true_mpki,miss_ratio,slowdown\n",
    );
    for x in samples {
        let c = &x.counters;
        s += &format!(
            "{},{},{},{},{},{},{},{},{},{},{},{}\n",
            x.workload,
            x.category,
            x.dedicated_share,
            x.noise_draw,
            c.l3_miss_latency_ns,
            c.l2_miss_latency_ns,
            c.dtlb_miss_latency_ns,
            c.l2_mpki,
            c.l3_mpki,
            c.true_mpki,
            c.miss_ratio,
            x.slowdown
        );
    }
    s
}
