//! Mercury's offline parts on the simulated machine (§4.2): the per-tenant profiler and the
//! one-time machine calibration of `Thresh_local_bw` and `Thresh_numa` with the paper's
//! LS/BI microbenchmarks (§2.2). Both are scratch runs reduced to their steady state: the
//! backend's fixed point with no migration (`SimBackend::solve_static`), which is what a
//! tenant measures once placement has settled.

use crate::backend::{hint_fault_rate, SimBackend};
use crate::config::{SimConfig, TenantConfig};
use crate::workload::config::{RandomConfig, StreamConfig, WorkloadConfig};
use tiermem_core::config::invalid;
use tiermem_core::{Backend, Controller, Error, Result, Size};
use tiermem_policies::mercury::{ControllerConfig, Mercury, Profile, Slo, Thresholds};

/// "Noticeable interference" in the calibration: 10 % worse LS latency (§4.2).
pub const INTERFERENCE: f64 = 0.10;

/// A config with only the given tenants (their own cores), no controller or antagonists'
/// changes: the machine as a scratch run sees it.
fn scratch(cfg: &SimConfig, tenants: Vec<TenantConfig>) -> SimConfig {
    let mut c = cfg.clone();
    c.tenants = tenants;
    c.workload = None;
    c.controller = None;
    c
}

/// The fraction of a tenant's accesses its hottest `x` pages serve, for every `x`.
fn hottest_prefix(probs: &[f64]) -> Vec<f64> {
    let mut p = probs.to_vec();
    p.sort_by(|a, b| b.total_cmp(a));
    let mut acc = vec![0.0];
    let mut s = 0.0;
    for x in p {
        s += x;
        acc.push(s);
    }
    acc
}

/// Split a tenant's reads `m` to the default tier and the rest to the next tier.
fn two_tier_mass(n_tiers: usize, m: f64) -> Vec<f64> {
    let mut v = vec![0.0; n_tiers];
    v[0] = m.clamp(0.0, 1.0);
    if n_tiers > 1 {
        v[1] = 1.0 - v[0];
    }
    v
}

/// The tenant alone on the machine (a scratch backend) and the share of its accesses its
/// hottest `x` pages serve, for every `x`.
fn alone_backend(cfg: &SimConfig, tenant: usize) -> Result<(SimBackend, Vec<f64>)> {
    let b = SimBackend::new(&scratch(cfg, vec![cfg.tenants[tenant].clone()]))?;
    // A stream touches every page equally often over a pass: uniform. A trace has no
    // stationary distribution to profile.
    let prefix = match b.tenant_probabilities(0) {
        Some(p) => hottest_prefix(p),
        None if matches!(cfg.tenants[tenant].workload, WorkloadConfig::Stream(_)) => {
            let n = b.placement().len();
            hottest_prefix(&vec![1.0 / n as f64; n])
        }
        None => {
            return Err(invalid(
                &format!("tenants[{tenant}].workload"),
                "Mercury's profiler needs a stationary workload (gups, kv, random, stream), not a trace",
            ))
        }
    };
    Ok((b, prefix))
}

/// A tenant alone with its hottest pages local (as many as the default tier holds) at full
/// CPU: its mean read latency (ns) and operations per second.
pub fn alone_local(cfg: &SimConfig, tenant: usize) -> Result<(f64, f64)> {
    let (b, prefix) = alone_backend(cfg, tenant)?;
    let n_tiers = b.tier_specs().len();
    let full = (prefix.len() - 1).min(b.capacity_pages()[0] as usize);
    let (te, _) = b.solve_static(&[two_tier_mass(n_tiers, prefix[full])], &[1.0]);
    Ok((te.avg_latency_ns[0], te.ops_per_s[0]))
}

/// Every tenant of a config running together at full CPU, each with its hottest pages in
/// the default tier (whatever its capacity) and the rest in the next: the steady states
/// Fig. 11's SLOs are set from (its slowdowns are against each tenant alone,
/// `alone_local`). Built once; each tenant's hotness prefix
/// is the profiler's.
pub struct Together {
    backend: SimBackend,
    prefixes: Vec<Vec<f64>>,
}

impl Together {
    pub fn new(cfg: &SimConfig) -> Result<Together> {
        let backend = SimBackend::new(&scratch(cfg, cfg.tenants.clone()))?;
        let prefixes = (0..cfg.tenants.len())
            .map(|t| Ok(alone_backend(cfg, t)?.1))
            .collect::<Result<Vec<_>>>()?;
        Ok(Together { backend, prefixes })
    }

    /// Each tenant's fair share of the default tier: its capacity split in proportion to
    /// the tenants' footprints (backend bytes).
    pub fn fair_shares(&self) -> Vec<u64> {
        let page = self.backend.page_bytes();
        let capacity = self.backend.capacity_pages()[0] as f64;
        let pages: Vec<f64> = self.prefixes.iter().map(|p| (p.len() - 1) as f64).collect();
        let total: f64 = pages.iter().sum();
        pages
            .iter()
            .map(|p| (capacity * p / total.max(1.0)).floor() as u64 * page)
            .collect()
    }

    /// Per tenant, mean read latency (ns) and operations per second with its hottest
    /// `local_bytes[t]` (backend bytes; at most its footprint) local. With `u64::MAX` for
    /// all, what the tenants get when they contend for bandwidth only.
    pub fn solve(&self, local_bytes: &[u64]) -> Vec<(f64, f64)> {
        let n_tiers = self.backend.tier_specs().len();
        let page = self.backend.page_bytes();
        let masses: Vec<Vec<f64>> = self
            .prefixes
            .iter()
            .zip(local_bytes)
            .map(|(prefix, &bytes)| {
                let pages = ((bytes / page) as usize).min(prefix.len() - 1);
                two_tier_mass(n_tiers, prefix[pages])
            })
            .collect();
        let (te, _) = self.backend.solve_static(&masses, &vec![1.0; masses.len()]);
        (0..masses.len())
            .map(|t| (te.avg_latency_ns[t], te.ops_per_s[t]))
            .collect()
    }
}

/// The profiler (§4.2): the tenant alone, from all memory local (as much as the default tier
/// holds) and full CPU; inadmissible if its SLO is not met there; otherwise the least local
/// memory (its hottest pages, where hotness-based promotion puts them) that meets it, then
/// for a BI tenant already above its target with nothing local, the least CPU share that
/// meets it. Sizes are the backend's (scaled) bytes.
pub fn profile(cfg: &SimConfig, tenant: usize, slo: Slo, min_cpu: f64) -> Result<Profile> {
    let (b, prefix) = alone_backend(cfg, tenant)?;
    let n_tiers = b.tier_specs().len();
    let full = (prefix.len() - 1).min(b.capacity_pages()[0] as usize);
    let measure = |pages: usize, share: f64| -> f64 {
        let (te, bw) = b.solve_static(&[two_tier_mass(n_tiers, prefix[pages])], &[share]);
        if slo.is_latency() {
            te.avg_latency_ns[0]
        } else {
            bw[0]
        }
    };
    let meets = |v: f64| {
        if slo.is_latency() {
            v <= slo.target()
        } else {
            v >= slo.target()
        }
    };
    let page = b.page_bytes();
    let at_full = measure(full, 1.0);
    if !meets(at_full) {
        return Ok(Profile {
            admissible: false,
            local_bytes: full as u64 * page,
            cpu_share: 1.0,
            measured: at_full,
        });
    }
    // Least local pages meeting the SLO: the measure is monotone in local pages.
    let (mut lo, mut hi) = (0usize, full);
    if meets(measure(0, 1.0)) {
        hi = 0;
    }
    while hi > lo + 1 {
        let mid = (lo + hi) / 2;
        if meets(measure(mid, 1.0)) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let mut share = 1.0;
    if hi == 0 && !slo.is_latency() {
        // Still above the bandwidth target with nothing local: lower the CPU share.
        let (mut lo_s, mut hi_s) = (min_cpu, 1.0);
        if meets(measure(0, lo_s)) {
            hi_s = lo_s;
        }
        for _ in 0..40 {
            if hi_s - lo_s < 1e-4 {
                break;
            }
            let mid = 0.5 * (lo_s + hi_s);
            if meets(measure(0, mid)) {
                hi_s = mid;
            } else {
                lo_s = mid;
            }
        }
        share = hi_s;
    }
    Ok(Profile {
        admissible: true,
        local_bytes: hi as u64 * page,
        cpu_share: share,
        measured: measure(hi, share),
    })
}

/// The paper's microbenchmarks (§2.2.1): LS, random accesses over a 4 GB region on one
/// core; BI, streaming 128 MB per core on the rest of the application cores (95 of the
/// Genoa's 96: "enough CPU cores to generate memory bandwidth at maximum capacity").
pub fn microbenchmarks(cfg: &SimConfig) -> (TenantConfig, TenantConfig) {
    let bi_cores = (cfg.machine.app_cores - 1.0).max(1.0);
    let ls = TenantConfig {
        name: "ls-micro".into(),
        cores: 1.0,
        workload: WorkloadConfig::Random(RandomConfig {
            working_set: Size::Bytes(4 << 30),
            object_size: Size::Bytes(64),
            write_fraction: 0.0,
            phases: Vec::new(),
        }),
    };
    let bi = TenantConfig {
        name: "bi-micro".into(),
        cores: bi_cores,
        workload: WorkloadConfig::Stream(StreamConfig {
            working_set: Size::Bytes(((128u64 << 20) as f64 * bi_cores) as u64),
            object_size: Size::Bytes(4096),
            write_fraction: 0.0,
            busy_share: 1.0,
            phases: Vec::new(),
        }),
    };
    (ls, bi)
}

/// What the calibration sweeps measured, for reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Calibration {
    pub thresholds: Thresholds,
    /// LS latency alone (ns); at the local-bandwidth threshold; BI's CXL fraction at
    /// `Thresh_numa` and LS latency at the sweep's best point and at the threshold.
    pub ls_alone_ns: f64,
    pub bi_share_at_local_threshold: f64,
    pub bi_remote_fraction_at_numa_threshold: f64,
    pub ls_best_ns_in_remote_sweep: f64,
    pub bi_remote_fraction_at_best: f64,
    pub ls_at_numa_threshold_ns: f64,
}

/// Machine calibration (§4.2): `Thresh_local_bw` is the default tier's bandwidth when
/// raising BI's bandwidth (its CPU share, both on the default tier) first makes LS 10 %
/// slower than alone; `Thresh_numa` is BI's remote hint-fault rate when sweeping BI's share
/// of memory on the lower tier (LS local) first makes LS 10 % slower than at the sweep's
/// best point, past it (Mercury Fig. 2: moving BI to CXL first helps LS, then hurts).
pub fn calibrate(cfg: &SimConfig) -> Result<Calibration> {
    let (ls, bi) = microbenchmarks(cfg);
    let bi_cores = bi.cores;
    let bi_footprint = match &bi.workload {
        WorkloadConfig::Stream(s) => s.working_set.bytes("bi.working_set")? as f64,
        _ => unreachable!("BI is a stream"),
    };
    let mut c = scratch(cfg, vec![ls, bi]);
    c.machine.app_cores = c.tenants.iter().map(|t| t.cores).sum();
    // Room for both microbenchmarks in the default tier (they are small).
    let b = SimBackend::new(&c)?;
    let n = b.tier_specs().len();
    let local = two_tier_mass(n, 1.0);
    let solve = |bi_remote: f64, bi_share: f64| {
        b.solve_static(
            &[local.clone(), two_tier_mass(n, 1.0 - bi_remote)],
            &[1.0, bi_share],
        )
    };
    let ls_alone = solve(0.0, 1e-9).0.avg_latency_ns[0];
    let steps = 200;
    let mut local_bw = None;
    for k in 1..=steps {
        let s = k as f64 / steps as f64;
        let (te, _) = solve(0.0, s);
        if te.avg_latency_ns[0] >= (1.0 + INTERFERENCE) * ls_alone {
            local_bw = Some((te.read_bytes_per_s[0] + te.write_bytes_per_s[0], s));
            break;
        }
    }
    let (local_bw, share_at) = local_bw.unwrap_or_else(|| {
        let (te, _) = solve(0.0, 1.0);
        (te.read_bytes_per_s[0] + te.write_bytes_per_s[0], 1.0)
    });
    let sweep: Vec<(f64, f64)> = (0..=steps)
        .map(|k| {
            let x = k as f64 / steps as f64;
            (x, solve(x, 1.0).0.avg_latency_ns[0])
        })
        .collect();
    let (best_x, best) = sweep
        .iter()
        .copied()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("a sweep");
    let (numa_x, at) = sweep
        .iter()
        .copied()
        .find(|&(x, l)| x > best_x && l >= (1.0 + INTERFERENCE) * best)
        .unwrap_or((1.0, sweep[steps].1));
    Ok(Calibration {
        thresholds: Thresholds {
            local_bw_bytes_per_s: local_bw,
            // BI's hint faults at that point, under the per-task scan every tenant's
            // telemetry uses: its footprint and threads, full CPU, a share `numa_x` of its
            // (streamed, so all touched) pages remote.
            numa_hint_faults_per_s: hint_fault_rate(bi_footprint, bi_cores, 1.0, numa_x),
        },
        ls_alone_ns: ls_alone,
        bi_share_at_local_threshold: share_at,
        bi_remote_fraction_at_numa_threshold: numa_x,
        ls_best_ns_in_remote_sweep: best,
        bi_remote_fraction_at_best: best_x,
        ls_at_numa_threshold_ns: at,
    })
}

/// Everything the controller is built from, for reports.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Setup {
    pub calibration: Option<Calibration>,
    pub thresholds: Thresholds,
    /// Per `controller.tenants` entry: its profile (backend bytes).
    pub profiles: Vec<Profile>,
}

/// Profile every managed tenant, calibrate the thresholds the config does not give, and
/// build the controller. The memory step is scaled with the run (`scale`).
pub fn build(cfg: &SimConfig, c: &ControllerConfig) -> Result<(Box<dyn Controller>, Setup)> {
    let slos = c.slos();
    let profiles = c
        .tenants
        .iter()
        .zip(&slos)
        .map(|(t, slo)| {
            let i = cfg
                .tenants
                .iter()
                .position(|u| u.name == t.name)
                .ok_or_else(|| {
                    Error::config(format!(
                        "controller tenant `{}` is not a [[tenants]] name",
                        t.name
                    ))
                })?;
            profile(cfg, i, *slo, c.min_cpu_share)
        })
        .collect::<Result<Vec<_>>>()?;
    let calibration = match (c.thresh_local_bw_bytes(), c.thresh_numa) {
        (Some(_), Some(_)) => None,
        _ => Some(calibrate(cfg)?),
    };
    let thresholds = Thresholds {
        local_bw_bytes_per_s: c.thresh_local_bw_bytes().unwrap_or_else(|| {
            calibration
                .as_ref()
                .expect("calibrated")
                .thresholds
                .local_bw_bytes_per_s
        }),
        numa_hint_faults_per_s: c.thresh_numa.unwrap_or_else(|| {
            calibration
                .as_ref()
                .expect("calibrated")
                .thresholds
                .numa_hint_faults_per_s
        }),
    };
    let mut scaled = c.clone();
    let step = c.memory_step.bytes("controller.memory_step")?;
    scaled.memory_step = Size::Bytes(((step as f64 * cfg.scale) as u64).max(1));
    let m = Mercury::new(&scaled, &profiles, thresholds)?;
    Ok((
        Box::new(m),
        Setup {
            calibration,
            thresholds,
            profiles,
        },
    ))
}
