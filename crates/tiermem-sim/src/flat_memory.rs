//! Intel Flat Memory Mode (Memstrata, Zhong et al., OSDI'24 §3.1): local DRAM is a
//! direct-mapped, exclusive cache of a hardware-tiered physical space twice its size, at
//! 64 B lines. Physical line `p` lives either in local line `p mod L` or in CXL; a miss
//! reads local (tag check), reads CXL, serves the line and swaps the pair (the evicted line
//! is written to CXL, the requested one to local). Writes allocate like reads. A
//! "dedicated" local node beside it (mixed mode) is plain local DRAM, never swapped.
//!
//! Two models of the same hardware:
//! * [`LineSim`]: the line-level model — every access of an explicit stream against the
//!   local tags. Exact, slow; used where an access order matters and to validate the
//!   shortcut.
//! * [`pair_misses`]: the page-level shortcut. Pages that share a slot share it line by
//!   line, so with accesses uniform over a page's lines the pair behaves like one line pair
//!   with the pages' rates. For independent (Poisson) accesses at rates λa, λb, an access
//!   misses when the previous access to the slot came from the other page, so the pair
//!   misses at 2·λa·λb/(λa+λb); two periodic scans miss on every access of the slower one
//!   and the next access of the faster one, 2·min(λa, λb) (every access at equal rates); a
//!   scan at λa against Poisson λb misses 2·λa·(1 − e^(−λb/λa)).
//! * Line share. A random-access page need not touch all its lines (Memstrata §2.3:
//!   "commonly, only a fraction of each page's cachelines are hot"; §4.1: "many cold or
//!   unused cache lines"); a sweep touches every line. Page `a` touching a share `fa` of
//!   its lines, at positions unrelated to its partner's (different objects), conflicts
//!   only on the `fa·fb` of line pairs both touch, each at per-line rates `λa/(fa·L)`,
//!   `λb/(fb·L)`; summed: random pair `fa·fb·λa·λb/(λa·fb + λb·fa)` per page, scan against
//!   random `fb·λa·(1 − e^(−λb·fa/(λa·fb)))`, two scans `min(λa·fb, λb·fa)`. At
//!   `fa = fb = 1` these are the forms above.
//!
//! [`FlatMachine::solve`] is the load/latency fixed point of VMs on such a node: the miss
//! traffic (local read + CXL read + CXL write + local write per miss) loads both tiers'
//! curves, and a miss costs the local tag read plus the CXL read in series.

use crate::machine::{damped_fixed_point, ops_per_s, CoreModel, Demand, Machine, TierModel};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tiermem_core::config::invalid;
use tiermem_core::{Result, CACHELINE_BYTES};

/// How a page's accesses arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Pattern {
    /// Independent accesses (pointer chasing, hashing, random lookups).
    Random,
    /// Part of a periodic sequential sweep (streaming, stencils, MLC).
    Scan,
}

/// How one page of a pair is accessed: its rate (accesses per second), pattern, and the
/// share of its lines the accesses touch (in (0, 1]; 1 for a sweep).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PageLoad {
    pub rate: f64,
    pub pattern: Pattern,
    pub line_share: f64,
}

impl PageLoad {
    /// Accesses uniform over all the page's lines.
    pub fn whole(rate: f64, pattern: Pattern) -> PageLoad {
        PageLoad {
            rate,
            pattern,
            line_share: 1.0,
        }
    }
}

/// Expected misses per second of each of two pages sharing one local slot (see the module
/// doc). A page alone in its slot never misses once resident.
pub fn pair_misses(pa: PageLoad, pb: PageLoad) -> (f64, f64) {
    let (a, b) = (pa.rate, pb.rate);
    let (fa, fb) = (pa.line_share, pb.line_share);
    if a <= 0.0 || b <= 0.0 || fa <= 0.0 || fb <= 0.0 {
        return (0.0, 0.0);
    }
    // Each page's rate as seen by the lines its partner also touches.
    let m = match (pa.pattern, pb.pattern) {
        (Pattern::Random, Pattern::Random) => fa * fb * a * b / (a * fb + b * fa),
        (Pattern::Scan, Pattern::Scan) => (a * fb).min(b * fa),
        // Each scan access misses if the random page was touched since the previous scan
        // access; each such interval costs the random page exactly one miss.
        (Pattern::Scan, Pattern::Random) => fb * a * (1.0 - (-b * fa / (a * fb)).exp()),
        (Pattern::Random, Pattern::Scan) => fa * b * (1.0 - (-a * fb / (b * fa)).exp()),
    };
    (m, m)
}

/// Where a guest page lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A frame of the dedicated local node: always a hit.
    Dedicated,
    /// A frame of the hardware-tiered node, `0..2L`; its slot is `frame mod L`.
    Tiered(u32),
}

/// One VM's memory as the models see it: per guest page its share of the VM's accesses,
/// its pattern and its host frame; and the share of lines its random-access pages touch
/// (sweeps touch all).
#[derive(Clone, Debug)]
pub struct VmMemory {
    pub probability: Vec<f64>,
    pub pattern: Vec<Pattern>,
    pub frames: Vec<Frame>,
    pub random_line_share: f64,
}

impl VmMemory {
    /// The share of a page's lines its accesses touch.
    pub fn line_share(&self, pattern: Pattern) -> f64 {
        match pattern {
            Pattern::Random => self.random_line_share,
            Pattern::Scan => 1.0,
        }
    }
}

/// Per-VM misses and accesses of the hardware-tiered node for given per-VM access rates
/// (lines/s), by the pair shortcut. `slots` is the node's local size `L` in pages.
pub fn node_misses(slots: usize, vms: &[&VmMemory], access_rate: &[f64]) -> Vec<f64> {
    // Per frame: its load and owner (every frame holds at most one page).
    let mut load = vec![PageLoad::whole(0.0, Pattern::Random); 2 * slots];
    let mut owner = vec![usize::MAX; 2 * slots];
    for (v, (vm, &r)) in vms.iter().zip(access_rate).enumerate() {
        for ((&p, &pat), f) in vm.probability.iter().zip(&vm.pattern).zip(&vm.frames) {
            if let Frame::Tiered(f) = *f {
                load[f as usize] = PageLoad {
                    rate: r * p,
                    pattern: pat,
                    line_share: vm.line_share(pat),
                };
                owner[f as usize] = v;
            }
        }
    }
    let mut misses = vec![0.0; vms.len()];
    for s in 0..slots {
        let (a, b) = (s, s + slots);
        if owner[a] == usize::MAX || owner[b] == usize::MAX {
            continue;
        }
        let (ma, mb) = pair_misses(load[a], load[b]);
        misses[owner[a]] += ma;
        misses[owner[b]] += mb;
    }
    misses
}

/// The line-level model: explicit access streams against the local tags of a node of
/// `slots` pages of `lines_per_page` lines. Each VM issues independent accesses to its
/// random pages (Poisson in time at its random rate, a page drawn by its probability, a
/// line uniformly among the `round(random_line_share · lines)` it touches, drawn at random
/// per page) and sweeps its scan pages line by line in page order at its scan rate.
pub struct LineSim {
    pub slots: usize,
    pub lines_per_page: usize,
}

/// Per VM: accesses and misses counted by [`LineSim::run`].
#[derive(Clone, Debug, Default)]
pub struct LineCounts {
    pub accesses: Vec<u64>,
    pub misses: Vec<u64>,
}

struct Stream {
    vm: usize,
    scan: bool,
    /// Mean gap between accesses (s).
    gap: f64,
    next: f64,
    /// Random: cumulative probability over `pages`; scan: position in the sweep.
    cumulative: Vec<f64>,
    pages: Vec<usize>,
    /// Random: per page of `pages`, the lines it touches.
    touched: Vec<Vec<usize>>,
    pos: usize,
}

impl LineSim {
    /// Run `accesses` accesses in all (after as many of warm-up), seeded, and count.
    /// `access_rate[v]` is VM `v`'s lines per second.
    pub fn run(
        &self,
        vms: &[VmMemory],
        access_rate: &[f64],
        accesses: u64,
        seed: u64,
    ) -> LineCounts {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut streams = Vec::new();
        for (v, (vm, &r)) in vms.iter().zip(access_rate).enumerate() {
            for scan in [false, true] {
                let want = if scan { Pattern::Scan } else { Pattern::Random };
                let pages: Vec<usize> = (0..vm.probability.len())
                    .filter(|&g| vm.pattern[g] == want && vm.probability[g] > 0.0)
                    .collect();
                let mass: f64 = pages.iter().map(|&g| vm.probability[g]).sum();
                if pages.is_empty() || mass <= 0.0 || r <= 0.0 {
                    continue;
                }
                let mut acc = 0.0;
                let cumulative = pages
                    .iter()
                    .map(|&g| {
                        acc += vm.probability[g] / mass;
                        acc
                    })
                    .collect();
                let gap = 1.0 / (r * mass);
                let touched = if scan {
                    Vec::new()
                } else {
                    let k = ((vm.random_line_share * self.lines_per_page as f64).round() as usize)
                        .clamp(1, self.lines_per_page);
                    pages
                        .iter()
                        .map(|_| {
                            rand::seq::index::sample(&mut rng, self.lines_per_page, k).into_vec()
                        })
                        .collect()
                };
                streams.push(Stream {
                    vm: v,
                    scan,
                    gap,
                    next: if scan { rng.gen::<f64>() * gap } else { 0.0 },
                    cumulative,
                    pages,
                    touched,
                    pos: 0,
                });
            }
        }
        for s in streams.iter_mut().filter(|s| !s.scan) {
            s.next = -s.gap * (1.0 - rng.gen::<f64>()).ln();
        }
        let lines = self.lines_per_page;
        // Tag per local line: which half of the node (0: frames 0..L, 1: L..2L) holds it.
        let mut tag = vec![0u8; self.slots * lines];
        let mut counts = LineCounts {
            accesses: vec![0; vms.len()],
            misses: vec![0; vms.len()],
        };
        if streams.is_empty() {
            return counts;
        }
        for i in 0..2 * accesses {
            let k = (0..streams.len())
                .min_by(|&a, &b| streams[a].next.total_cmp(&streams[b].next))
                .expect("a stream");
            let s = &mut streams[k];
            let (page, line) = if s.scan {
                let p = s.pages[s.pos / lines];
                let l = s.pos % lines;
                s.pos = (s.pos + 1) % (s.pages.len() * lines);
                s.next += s.gap;
                (p, l)
            } else {
                let u: f64 = rng.gen();
                let j = s
                    .cumulative
                    .partition_point(|&c| c < u)
                    .min(s.pages.len() - 1);
                s.next += -s.gap * (1.0 - rng.gen::<f64>()).ln();
                let lines_of = &s.touched[j];
                (s.pages[j], lines_of[rng.gen_range(0..lines_of.len())])
            };
            let v = s.vm;
            let Frame::Tiered(f) = vms[v].frames[page] else {
                if i >= accesses {
                    counts.accesses[v] += 1;
                }
                continue;
            };
            let f = f as usize;
            let (slot, half) = (f % self.slots, (f / self.slots) as u8);
            let t = &mut tag[slot * lines + line];
            let miss = *t != half;
            *t = half;
            if i >= accesses {
                counts.accesses[v] += 1;
                counts.misses[v] += u64::from(miss);
            }
        }
        counts
    }
}

/// How a VM's memory is backed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Backing {
    /// Everything in local DRAM (the baseline of every slowdown).
    AllLocal,
    /// Everything in CXL memory.
    CxlOnly,
    /// As its frames say: hardware-tiered pairs and dedicated local frames.
    Tiered,
}

/// One VM's demand on the machine.
#[derive(Clone, Debug)]
pub struct Vm {
    pub name: String,
    pub cores: CoreModel,
    /// Memory lines read per operation (LLC misses) and of those, written back.
    pub lines_per_op: f64,
    pub written_lines_per_op: f64,
    pub memory: VmMemory,
}

/// The solved state of VMs on a Flat Memory Mode machine.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlatEquilibrium {
    /// Loaded read latency of local DRAM and CXL (ns).
    pub local_ns: f64,
    pub cxl_ns: f64,
    /// Per VM: operations per second, local-miss ratio (misses per memory access) and
    /// mean latency of a memory access (what its cores see as L3 miss latency).
    pub ops_per_s: Vec<f64>,
    pub miss_ratio: Vec<f64>,
    pub memory_latency_ns: Vec<f64>,
    /// Bytes/s on local DRAM and CXL, reads and writes (tag reads and swaps included).
    pub local_read_bytes_per_s: f64,
    pub local_write_bytes_per_s: f64,
    pub cxl_read_bytes_per_s: f64,
    pub cxl_write_bytes_per_s: f64,
}

impl FlatEquilibrium {
    /// The one miss counter the hardware exposes: misses over accesses, system-wide.
    pub fn system_miss_ratio(&self, vms: &[Vm]) -> f64 {
        let (mut acc, mut miss) = (0.0, 0.0);
        for (i, vm) in vms.iter().enumerate() {
            let a = self.ops_per_s[i] * vm.lines_per_op;
            acc += a;
            miss += a * self.miss_ratio[i];
        }
        if acc > 0.0 {
            miss / acc
        } else {
            0.0
        }
    }
}

/// A Flat Memory Mode machine: its two memories' physics and the hardware-tiered node's
/// local size in pages (`slots`; the node exposes `2 × slots` pages).
pub struct FlatMachine {
    pub local: TierModel,
    pub cxl: TierModel,
    pub slots: usize,
}

impl FlatMachine {
    pub fn new(local: TierModel, cxl: TierModel, slots: usize) -> Result<FlatMachine> {
        if slots == 0 {
            return Err(invalid(
                "slots",
                "the hardware-tiered node needs at least one page",
            ));
        }
        Ok(FlatMachine { local, cxl, slots })
    }

    /// Solve the VMs' op rates: given the rates, the per-VM misses follow from the pairs
    /// (a VM's misses depend on its neighbours' rates only through slots they share), the
    /// traffic from the misses, the two latencies from the traffic, and each VM's rate from
    /// its mean access latency. The map is decreasing in the rates; it is iterated with
    /// geometric damping, halved when the residual grows, as `Machine::solve_tenants`.
    pub fn solve(&self, vms: &[Vm], backing: Backing) -> FlatEquilibrium {
        let line = CACHELINE_BYTES as f64;
        let machine = Machine {
            tiers: vec![self.local.clone(), self.cxl.clone()],
            cores: vms.first().map_or(
                CoreModel {
                    cores: 0.0,
                    ops_in_flight: 1.0,
                    mlp_lines: 1.0,
                    compute_ns_per_op: 0.0,
                },
                |v| v.cores,
            ),
        };
        let zero = [0.0, 0.0];
        let demand = |vm: &Vm| Demand {
            mass: &zero,
            lines_per_op: vm.lines_per_op,
            written_lines_per_op: vm.written_lines_per_op,
            antagonist_cores: &zero,
            antagonist_mlp: 0.0,
            migration_read_bytes_per_s: &zero,
            migration_write_bytes_per_s: &zero,
            app_stall: 0.0,
            fault_ns_per_op: 0.0,
        };
        let state = |ops: &[f64]| {
            let access: Vec<f64> = vms
                .iter()
                .zip(ops)
                .map(|(v, o)| o * v.lines_per_op)
                .collect();
            let misses = match backing {
                Backing::Tiered => {
                    let mem: Vec<&VmMemory> = vms.iter().map(|v| &v.memory).collect();
                    node_misses(self.slots, &mem, &access)
                }
                _ => vec![0.0; vms.len()],
            };
            let all: f64 = access.iter().sum();
            let writes: f64 = vms
                .iter()
                .zip(ops)
                .map(|(v, o)| o * v.written_lines_per_op)
                .sum();
            let miss: f64 = misses.iter().sum();
            // (local read, local write, CXL read, CXL write), bytes/s.
            let traffic = match backing {
                Backing::AllLocal => (all * line, writes * line, 0.0, 0.0),
                Backing::CxlOnly => (0.0, 0.0, all * line, writes * line),
                Backing::Tiered => (all * line, (writes + miss) * line, miss * line, miss * line),
            };
            let d = demand(&vms[0]);
            let lat = machine.latencies_at(&[traffic.0, traffic.2], &[traffic.1, traffic.3], &d);
            let ratio: Vec<f64> = misses
                .iter()
                .zip(&access)
                .map(|(m, a)| if *a > 0.0 { m / a } else { 0.0 })
                .collect();
            (lat, ratio, traffic)
        };
        let mem_latency = |lat: &[f64], ratio: f64| match backing {
            Backing::AllLocal => lat[0],
            Backing::CxlOnly => lat[1],
            Backing::Tiered => lat[0] + ratio * lat[1],
        };
        let rates = |ops: &[f64]| -> Vec<f64> {
            let (lat, ratio, _) = state(ops);
            vms.iter()
                .zip(&ratio)
                .map(|(v, &r)| ops_per_s(&v.cores, mem_latency(&lat, r), &demand(v)))
                .collect()
        };
        let unloaded: Vec<f64> = vms
            .iter()
            .map(|v| ops_per_s(&v.cores, self.local.unloaded_ns, &demand(v)))
            .collect();
        let ops = damped_fixed_point(unloaded, rates);
        let (lat, ratio, t) = state(&ops);
        FlatEquilibrium {
            local_ns: lat[0],
            cxl_ns: lat[1],
            memory_latency_ns: ratio.iter().map(|&r| mem_latency(&lat, r)).collect(),
            miss_ratio: ratio,
            ops_per_s: ops,
            local_read_bytes_per_s: t.0,
            local_write_bytes_per_s: t.1,
            cxl_read_bytes_per_s: t.2,
            cxl_write_bytes_per_s: t.3,
        }
    }
}

/// How the host allocator hands out the hardware-tiered node's 2 MiB frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Allocation {
    /// Page coloring (Memstrata §4.1): slot `s` has color `s mod colors`; a VM gets whole
    /// colors (both frames of every slot of each), so it only conflicts with itself.
    Colored { colors: usize },
    /// Conflict-oblivious: frames from a shuffled free list, so slots are shared across
    /// VMs by chance.
    Oblivious { seed: u64 },
    /// The paper's worst case (§3.3 "Conflicting"): a VM's frames pair with the next VM's.
    Conflicting,
}

/// Host frames for VMs of `pages[v]` pages, `dedicated[v]` of them on the dedicated
/// node (guest pages chosen at random, §3.2), the rest hardware-tiered. Guest pages map to
/// frames in a seeded random order: a warm VM's guest-physical space has no locality left
/// (§2.3, Fig. 1).
pub fn allocate(
    slots: usize,
    pages: &[usize],
    dedicated: &[usize],
    alloc: Allocation,
    seed: u64,
) -> Result<Vec<Vec<Frame>>> {
    let tiered: Vec<usize> = pages
        .iter()
        .zip(dedicated)
        .map(|(p, d)| p - d.min(p))
        .collect();
    let mut per_vm: Vec<Vec<u32>> = vec![Vec::new(); pages.len()];
    match alloc {
        Allocation::Colored { colors } => {
            if colors == 0 || colors > slots {
                return Err(invalid(
                    "colors",
                    format!("must be between 1 and the node's {slots} slots"),
                ));
            }
            let mut color = 0;
            for (v, &want) in tiered.iter().enumerate() {
                while per_vm[v].len() < want {
                    if color >= colors {
                        return Err(invalid(
                            "tenants",
                            "the VMs' hardware-tiered pages exceed the node (2 × its local pages)",
                        ));
                    }
                    for s in (color..slots).step_by(colors) {
                        per_vm[v].push(s as u32);
                        per_vm[v].push((s + slots) as u32);
                    }
                    color += 1;
                }
            }
        }
        Allocation::Oblivious { seed } => {
            let mut free: Vec<u32> = (0..2 * slots as u32).collect();
            shuffle(&mut free, seed);
            let mut it = free.into_iter();
            for (v, &want) in tiered.iter().enumerate() {
                per_vm[v] = it.by_ref().take(want).collect();
            }
        }
        Allocation::Conflicting => {
            // VM v's first half takes lower frames of its own slot range; its second half
            // takes the upper frames of the next VM's range, so every pair spans two VMs
            // (with one VM, itself). Slots past every range take any overflow.
            let n = pages.len();
            let lower: Vec<usize> = tiered.iter().map(|t| t.div_ceil(2)).collect();
            let mut start = vec![0usize; n + 1];
            for v in 0..n {
                start[v + 1] = start[v] + lower[v];
            }
            let mut spare = start[n];
            for v in 0..n {
                per_vm[v].extend((start[v]..start[v + 1]).map(|s| s as u32));
                let w = (v + 1) % n;
                let upper = tiered[v] - lower[v];
                let shared = upper.min(lower[w]);
                per_vm[v].extend((start[w]..start[w] + shared).map(|s| (s + slots) as u32));
                per_vm[v].extend((spare..spare + upper - shared).map(|s| (s + slots) as u32));
                spare += upper - shared;
            }
            if spare > slots || start[n] > slots {
                return Err(invalid(
                    "tenants",
                    "the VMs' hardware-tiered pages exceed the node (2 × its local pages)",
                ));
            }
        }
    }
    if per_vm.iter().flatten().any(|&f| f as usize >= 2 * slots)
        || per_vm.iter().zip(&tiered).any(|(f, &w)| f.len() < w)
    {
        return Err(invalid(
            "tenants",
            "the VMs' hardware-tiered pages exceed the node (2 × its local pages)",
        ));
    }
    Ok(pages
        .iter()
        .zip(dedicated)
        .zip(per_vm)
        .enumerate()
        .map(|(v, ((&n, &d), frames))| {
            let mut out: Vec<Frame> = vec![Frame::Dedicated; d.min(n)];
            out.extend(frames.into_iter().take(n - d.min(n)).map(Frame::Tiered));
            shuffle(
                &mut out,
                seed ^ (v as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15),
            );
            out
        })
        .collect())
}

fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in (1..v.len()).rev() {
        let j = rng.gen_range(0..=i);
        v.swap(i, j);
    }
}
