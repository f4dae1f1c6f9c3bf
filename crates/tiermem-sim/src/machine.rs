//! The machine model: tiers with loaded-latency curves, application cores with bounded
//! memory-level parallelism, closed-loop antagonists, and the load/latency fixed point.
//!
//! Per epoch the offered load on each tier depends on throughput, which depends on latency,
//! which depends on load (DESIGN.md §3). With per-tier read latency `L_i` and the fraction
//! `m_i` of the application's operations that hit tier `i`:
//!
//! ```text
//!   L_avg  = Σ m_i L_i                                   (Colloid §3.1)
//!   n      = min(mlp_lines, ops_in_flight × lines_per_op)  outstanding lines per core
//!   T_ops  = cores / (lines_per_op × L_avg / n + compute_ns)  (T = N·64/L per core, §2.2)
//!   reads_i  = T_ops × lines_per_op × m_i  + ant_cores_i × ant_mlp / L_i + migration_i
//!   writes_i = T_ops × written_lines × m_i + ant_cores_i × ant_mlp / L_i + migration_i
//!   L_i    = unloaded_i × curve_i((64 reads_i + write_cost_i × 64 writes_i) / peak_i)
//! ```
//!
//! Each tier's latency is the solution of a scalar equation with a decreasing right-hand
//! side (more latency → less closed-loop load), and `Σ m_i L_i(L_avg) − L_avg` is decreasing
//! in `L_avg`, so nested bisection finds the unique fixed point.

use crate::latency::Curve;
use tiermem_core::CACHELINE_BYTES;

/// One tier's physics.
#[derive(Clone, Debug)]
pub struct TierModel {
    pub unloaded_ns: f64,
    pub peak_bytes_per_s: f64,
    /// Bandwidth cost of a written byte relative to a read byte (≥ 1 on DRAM channels).
    pub write_cost: f64,
    pub curve: Curve,
    /// Inter-tier coupling (Mercury §2.2.2, Takeaway #2): the share of this tier's queueing
    /// delay (its loaded minus its unloaded latency) that a default-tier request waits too.
    /// Requests to a CXL expander and to local memory wait in the same fixed-size CPU-side
    /// request queues (Mercury Fig. 3), so while CXL requests pile up there a local request
    /// waits behind them. 0 = independent tiers (the default; the default tier's own value
    /// is ignored). See docs/simulator.md.
    pub coupling: f64,
}

impl TierModel {
    /// Effective utilization of the tier for the given traffic (bytes/s).
    pub fn utilization(&self, read_bytes_per_s: f64, write_bytes_per_s: f64) -> f64 {
        (read_bytes_per_s + self.write_cost * write_bytes_per_s) / self.peak_bytes_per_s
    }
    /// Loaded read latency for the given traffic.
    pub fn latency_ns(&self, read_bytes_per_s: f64, write_bytes_per_s: f64) -> f64 {
        self.unloaded_ns
            * self
                .curve
                .multiplier(self.utilization(read_bytes_per_s, write_bytes_per_s))
    }
}

/// Application cores.
#[derive(Clone, Copy, Debug)]
pub struct CoreModel {
    pub cores: f64,
    /// Independent operations a core keeps in flight (limited by dependencies and the
    /// instruction window; GUPS-like random updates: a few).
    pub ops_in_flight: f64,
    /// Maximum outstanding cache-line misses per core (line fill buffers + L2 prefetch
    /// queue). Larger objects let prefetchers fill it (Colloid §5.1, Fig. 8: in-flight
    /// misses per core were 2.82× higher with 4096-B objects than with 64-B ones).
    pub mlp_lines: f64,
    /// Non-memory time per operation.
    pub compute_ns_per_op: f64,
}

/// Everything that loads the tiers during one epoch, besides the solution itself.
#[derive(Clone, Debug)]
pub struct Demand<'a> {
    /// Fraction of application operations served by each tier (sums to 1).
    pub mass: &'a [f64],
    pub lines_per_op: f64,
    pub written_lines_per_op: f64,
    /// Antagonist cores streaming 1:1 read/write to each tier.
    pub antagonist_cores: &'a [f64],
    /// Outstanding lines per antagonist core (sequential streams prefetch deeply).
    pub antagonist_mlp: f64,
    /// Migration traffic per tier, bytes/s.
    pub migration_read_bytes_per_s: &'a [f64],
    pub migration_write_bytes_per_s: &'a [f64],
    /// Fraction of time application cores are stalled (TLB shootdowns), in [0, 1).
    pub app_stall: f64,
    /// Synchronous time per operation spent in faults (accesses to pages held in a
    /// compressed tier that stay there): a fault blocks its core, so it is not divided by
    /// the memory-level parallelism.
    pub fault_ns_per_op: f64,
}

/// The solved state of one epoch.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Equilibrium {
    pub latency_ns: Vec<f64>,
    pub avg_latency_ns: f64,
    pub app_ops_per_s: f64,
    /// Application read lines per second per tier.
    pub app_read_lines_per_s: Vec<f64>,
    /// All reads (app, antagonist, migration) per tier in requests (lines) per second.
    pub read_lines_per_s: Vec<f64>,
    pub read_bytes_per_s: Vec<f64>,
    pub write_bytes_per_s: Vec<f64>,
    pub antagonist_bytes_per_s: Vec<f64>,
    pub utilization: Vec<f64>,
}

pub struct Machine {
    pub tiers: Vec<TierModel>,
    pub cores: CoreModel,
}

const REL_TOL: f64 = 1e-9;

fn bisect_decreasing(mut lo: f64, f: impl Fn(f64) -> f64) -> f64 {
    // f(lo) >= 0 by construction; find hi with f(hi) < 0.
    let mut hi = lo * 2.0;
    while f(hi) >= 0.0 {
        lo = hi;
        hi *= 2.0;
        if hi > 1e12 {
            return hi;
        }
    }
    while (hi - lo) > REL_TOL * lo {
        let mid = 0.5 * (lo + hi);
        if f(mid) >= 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The fixed point `x = f(x)` of a decreasing map of positive rates (tenants' op rates),
/// from `start`: iterated with geometric damping, halved whenever the relative residual
/// grows, to a relative residual of 1e-10 (at most 10 000 steps).
pub(crate) fn damped_fixed_point(start: Vec<f64>, f: impl Fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    let mut x = start;
    let mut damping = 0.5;
    let mut last_residual = f64::MAX;
    for _ in 0..10_000 {
        let next = f(&x);
        let residual = x
            .iter()
            .zip(&next)
            .map(|(a, b)| ((a - b) / a.max(1e-300)).abs())
            .fold(0.0, f64::max);
        if residual < 1e-10 {
            break;
        }
        if residual > last_residual {
            damping *= 0.5;
        }
        last_residual = residual;
        for (a, b) in x.iter_mut().zip(&next) {
            *a = a.powf(1.0 - damping) * b.powf(damping);
        }
    }
    x
}

/// Operations per second of `cores` at a given average read latency.
pub(crate) fn ops_per_s(c: &CoreModel, avg_latency_ns: f64, d: &Demand<'_>) -> f64 {
    let outstanding = c.mlp_lines.min(c.ops_in_flight * d.lines_per_op);
    let ns_per_op =
        d.lines_per_op * avg_latency_ns / outstanding + c.compute_ns_per_op + d.fault_ns_per_op;
    c.cores / ns_per_op * 1e9 * (1.0 - d.app_stall)
}

/// Several tenants on one machine: each its own cores and demand (mass over the tiers,
/// op shape, stall), all sharing the tiers, whose loaded latency follows from their summed
/// traffic. The antagonists and the migration traffic are the first tenant's demand's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantsEquilibrium {
    pub latency_ns: Vec<f64>,
    /// Per tenant: operations per second and mean read latency.
    pub ops_per_s: Vec<f64>,
    pub avg_latency_ns: Vec<f64>,
    /// Per tier: the tenants' and migration's bytes/s (antagonists excluded).
    pub read_bytes_per_s: Vec<f64>,
    pub write_bytes_per_s: Vec<f64>,
    /// The machine as one `Equilibrium`: all tenants' operations and reads together
    /// (mean latency weighted by operations), antagonists included as in `solve`.
    pub total: Equilibrium,
}

impl Machine {
    /// Solve the fixed point of several tenants sharing the tiers. The unknowns are the
    /// tenants' op rates `T`: given `T`, each tier's latency is its scalar closed-loop
    /// equation (as in [`Machine::solve`]); given the latencies, each tenant's rate follows
    /// from its cores. The map `T → T'` is decreasing, so it is iterated with geometric
    /// damping, halved whenever the residual grows, to a relative residual of 1e-10.
    /// (One tenant: [`Machine::solve`], exact by nested bisection.)
    pub fn solve_tenants(&self, tenants: &[(CoreModel, Demand<'_>)]) -> TenantsEquilibrium {
        let n = self.tiers.len();
        let line = CACHELINE_BYTES as f64;
        let Some((_, shared)) = tenants.first() else {
            return TenantsEquilibrium::default();
        };
        let traffic = |ops: &[f64]| -> (Vec<f64>, Vec<f64>) {
            let mut r = shared.migration_read_bytes_per_s.to_vec();
            let mut w = shared.migration_write_bytes_per_s.to_vec();
            for ((_, d), &t) in tenants.iter().zip(ops) {
                for i in 0..n {
                    r[i] += t * d.lines_per_op * d.mass[i] * line;
                    w[i] += t * d.written_lines_per_op * d.mass[i] * line;
                }
            }
            (r, w)
        };
        let latencies = |ops: &[f64]| -> Vec<f64> {
            let (r, w) = traffic(ops);
            self.latencies_at(&r, &w, shared)
        };
        let avg = |d: &Demand<'_>, l: &[f64]| (0..n).map(|i| d.mass[i] * l[i]).sum::<f64>();
        let rates = |l: &[f64]| -> Vec<f64> {
            tenants
                .iter()
                .map(|(c, d)| ops_per_s(c, avg(d, l), d))
                .collect()
        };
        // Start from the unloaded rates (an upper bound: load only adds latency).
        let unloaded: Vec<f64> = self.tiers.iter().map(|t| t.unloaded_ns).collect();
        let ops = damped_fixed_point(rates(&unloaded), |ops| rates(&latencies(ops)));
        let latency_ns = latencies(&ops);
        let (r, w) = traffic(&ops);
        let avg_latency_ns: Vec<f64> = tenants.iter().map(|(_, d)| avg(d, &latency_ns)).collect();
        let all_ops: f64 = ops.iter().sum();
        let mut total = Equilibrium {
            latency_ns: latency_ns.clone(),
            avg_latency_ns: if all_ops > 0.0 {
                ops.iter()
                    .zip(&avg_latency_ns)
                    .map(|(o, l)| o * l)
                    .sum::<f64>()
                    / all_ops
            } else {
                0.0
            },
            app_ops_per_s: all_ops,
            ..Default::default()
        };
        #[allow(clippy::needless_range_loop)] // `i` indexes several per-tier arrays
        for i in 0..n {
            let l = latency_ns[i];
            let app_lines: f64 = tenants
                .iter()
                .zip(&ops)
                .map(|((_, d), t)| t * d.lines_per_op * d.mass[i])
                .sum();
            let ant_lines = shared.antagonist_cores[i] * shared.antagonist_mlp / l * 1e9;
            let mig_lines = shared.migration_read_bytes_per_s[i] / line;
            let rb = r[i] + ant_lines * line;
            let wb = w[i] + ant_lines * line;
            total.app_read_lines_per_s.push(app_lines);
            total
                .read_lines_per_s
                .push(app_lines + ant_lines + mig_lines);
            total.read_bytes_per_s.push(rb);
            total.write_bytes_per_s.push(wb);
            total.antagonist_bytes_per_s.push(2.0 * ant_lines * line);
            total.utilization.push(self.tiers[i].utilization(rb, wb));
        }
        TenantsEquilibrium {
            total,
            avg_latency_ns,
            ops_per_s: ops,
            latency_ns,
            read_bytes_per_s: r,
            write_bytes_per_s: w,
        }
    }

    /// Application operations per second at a given average read latency.
    pub fn app_ops_per_s(&self, avg_latency_ns: f64, d: &Demand<'_>) -> f64 {
        ops_per_s(&self.cores, avg_latency_ns, d)
    }

    /// Every tier's latency given the application's op rate (one tenant).
    fn tier_latencies(&self, app_ops_per_s: f64, d: &Demand<'_>) -> Vec<f64> {
        let line = CACHELINE_BYTES as f64;
        let n = self.tiers.len();
        let r: Vec<f64> = (0..n)
            .map(|i| {
                app_ops_per_s * d.lines_per_op * d.mass[i] * line + d.migration_read_bytes_per_s[i]
            })
            .collect();
        let w: Vec<f64> = (0..n)
            .map(|i| {
                app_ops_per_s * d.written_lines_per_op * d.mass[i] * line
                    + d.migration_write_bytes_per_s[i]
            })
            .collect();
        self.latencies_at(&r, &w, d)
    }

    /// Every tier's latency given the bytes/s the applications and migration offer it:
    /// the lower tiers first (each its own closed loop), then the default tier, whose
    /// requests also wait the coupled share of the lower tiers' queueing delay (Mercury
    /// §2.2.2, Fig. 3: CXL requests in the shared queues slow local requests).
    pub fn latencies_at(&self, r: &[f64], w: &[f64], d: &Demand<'_>) -> Vec<f64> {
        let n = self.tiers.len();
        let mut out = vec![0.0; n];
        let mut coupled_ns = 0.0;
        for i in 1..n {
            out[i] = self.tier_latency_at(i, r[i], w[i], d, 0.0);
            let c = self.tiers[i].coupling;
            if c > 0.0 {
                coupled_ns += c * (out[i] - self.tiers[i].unloaded_ns).max(0.0);
            }
        }
        if n > 0 {
            out[0] = self.tier_latency_at(0, r[0], w[0], d, coupled_ns);
        }
        out
    }

    /// A tier's latency given the bytes/s the applications and migration offer it
    /// (solving its antagonists' closed loop; `d` gives the antagonists), with `extra_ns`
    /// of queueing coupled in from other tiers (which its antagonists wait as well).
    fn tier_latency_at(
        &self,
        i: usize,
        app_r: f64,
        app_w: f64,
        d: &Demand<'_>,
        extra_ns: f64,
    ) -> f64 {
        let t = &self.tiers[i];
        let line = CACHELINE_BYTES as f64;
        let ant_lines_ns = d.antagonist_cores[i] * d.antagonist_mlp; // lines in flight
        if ant_lines_ns == 0.0 {
            return t.latency_ns(app_r, app_w) + extra_ns;
        }
        bisect_decreasing(t.unloaded_ns + extra_ns, |l| {
            let ant = ant_lines_ns / l * 1e9 * line;
            t.latency_ns(app_r + ant, app_w + ant) + extra_ns - l
        })
    }

    /// Solve the epoch's fixed point.
    pub fn solve(&self, d: &Demand<'_>) -> Equilibrium {
        self.solve_on(&self.cores, d)
    }

    /// Solve the epoch's fixed point for the application on `cores` (a tenant whose CPU
    /// share scales its cores).
    pub fn solve_on(&self, cores: &CoreModel, d: &Demand<'_>) -> Equilibrium {
        let n = self.tiers.len();
        let lat_at = |avg: f64| -> Vec<f64> { self.tier_latencies(ops_per_s(cores, avg, d), d) };
        let lo: f64 = (0..n).map(|i| d.mass[i] * self.tiers[i].unloaded_ns).sum();
        let avg = bisect_decreasing(lo.max(1e-3), |x| {
            let l = lat_at(x);
            (0..n).map(|i| d.mass[i] * l[i]).sum::<f64>() - x
        });
        let latency_ns = lat_at(avg);
        let avg_latency_ns: f64 = (0..n).map(|i| d.mass[i] * latency_ns[i]).sum();
        let ops = ops_per_s(cores, avg_latency_ns, d);
        let line = CACHELINE_BYTES as f64;
        let mut eq = Equilibrium {
            avg_latency_ns,
            app_ops_per_s: ops,
            ..Default::default()
        };
        #[allow(clippy::needless_range_loop)] // `i` indexes several per-tier arrays
        for i in 0..n {
            let l = latency_ns[i];
            let app_lines = ops * d.lines_per_op * d.mass[i];
            let ant_lines = d.antagonist_cores[i] * d.antagonist_mlp / l * 1e9;
            let mig_lines = d.migration_read_bytes_per_s[i] / line;
            let r = (app_lines + ant_lines) * line + d.migration_read_bytes_per_s[i];
            let w = (ops * d.written_lines_per_op * d.mass[i] + ant_lines) * line
                + d.migration_write_bytes_per_s[i];
            eq.app_read_lines_per_s.push(app_lines);
            eq.read_lines_per_s.push(app_lines + ant_lines + mig_lines);
            eq.read_bytes_per_s.push(r);
            eq.write_bytes_per_s.push(w);
            eq.antagonist_bytes_per_s.push(2.0 * ant_lines * line);
            eq.utilization.push(self.tiers[i].utilization(r, w));
        }
        eq.latency_ns = latency_ns;
        eq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::CurveSpec;

    fn tier(unloaded: f64, peak_gbps: f64, curve: &str) -> TierModel {
        TierModel {
            unloaded_ns: unloaded,
            peak_bytes_per_s: peak_gbps * 1e9,
            write_cost: 1.75,
            curve: Curve::from_spec(&CurveSpec::Named(curve.into())).unwrap(),
            coupling: 0.0,
        }
    }

    fn machine(cores: f64, curve: &str) -> Machine {
        Machine {
            tiers: vec![tier(70.0, 205.0, curve), tier(135.0, 150.0, curve)],
            cores: CoreModel {
                cores,
                ops_in_flight: 5.0,
                mlp_lines: 14.0,
                compute_ns_per_op: 0.0,
            },
        }
    }

    fn demand<'a>(mass: &'a [f64], ant: &'a [f64], zero: &'a [f64]) -> Demand<'a> {
        Demand {
            mass,
            lines_per_op: 1.0,
            written_lines_per_op: 1.0,
            antagonist_cores: ant,
            antagonist_mlp: 22.0,
            migration_read_bytes_per_s: zero,
            migration_write_bytes_per_s: zero,
            app_stall: 0.0,
            fault_ns_per_op: 0.0,
        }
    }

    #[test]
    fn one_tier_no_load_gives_unloaded_latency_and_little_throughput() {
        // A flat curve: no load dependence, so L = unloaded exactly and T = cores·N/L.
        let m = machine(4.0, "flat");
        for (mass, l0) in [([1.0, 0.0], 70.0), ([0.0, 1.0], 135.0)] {
            let eq = m.solve(&demand(&mass, &[0.0, 0.0], &[0.0, 0.0]));
            assert!((eq.avg_latency_ns - l0).abs() / l0 < 0.01, "{eq:?}");
            let expect = 4.0 * 5.0 / l0 * 1e9; // cores · N / L, in ops (one line each)
            assert!((eq.app_ops_per_s - expect).abs() / expect < 0.01);
        }
    }

    #[test]
    fn single_core_near_unloaded_on_loaded_curve() {
        // One core reading with N = 5 barely loads a 205 GB/s tier: within 1 % of unloaded.
        let m = machine(1.0, "colloid-local");
        let mut d = demand(&[1.0, 0.0], &[0.0, 0.0], &[0.0, 0.0]);
        d.written_lines_per_op = 0.0;
        let eq = m.solve(&d);
        assert!(
            (eq.latency_ns[0] - 70.0) / 70.0 < 0.01,
            "{}",
            eq.latency_ns[0]
        );
        let expect = 5.0 / eq.latency_ns[0] * 1e9;
        assert!((eq.app_ops_per_s - expect).abs() / expect < 1e-6);
    }

    #[test]
    fn latency_rises_with_load_and_bandwidth_stays_below_peak() {
        let mut prev = 0.0;
        for cores in [1.0, 5.0, 15.0, 30.0, 60.0, 200.0, 1000.0] {
            let m = machine(cores, "colloid-local");
            let eq = m.solve(&demand(&[1.0, 0.0], &[0.0, 0.0], &[0.0, 0.0]));
            assert!(
                eq.latency_ns[0] > prev,
                "latency must rise with offered load"
            );
            prev = eq.latency_ns[0];
            let raw = eq.read_bytes_per_s[0] + eq.write_bytes_per_s[0];
            assert!(raw < 205e9, "raw bandwidth {raw} exceeds peak");
            assert!(eq.utilization[0] < 1.0);
        }
    }

    #[test]
    fn antagonist_alone_matches_colloid_isolation_bandwidth() {
        // Colloid §2.1: 5/10/15 antagonist cores use 51/65/70 % of 205 GB/s in isolation.
        let m = machine(0.0, "colloid-local");
        for (cores, target) in [(5.0, 0.51), (10.0, 0.65), (15.0, 0.70)] {
            let eq = m.solve(&demand(&[1.0, 0.0], &[cores, 0.0], &[0.0, 0.0]));
            let share = eq.antagonist_bytes_per_s[0] / 205e9;
            assert!(
                (share - target).abs() < 0.05,
                "{cores} cores: {share:.3} vs {target}"
            );
        }
    }

    #[test]
    fn two_identical_tenants_are_one_with_their_cores_summed() {
        let one = machine(16.0, "colloid-local");
        let zero = [0.0, 0.0];
        let ant = [5.0, 0.0];
        let eq = one.solve(&demand(&[0.7, 0.3], &ant, &zero));
        let half = machine(8.0, "colloid-local");
        let d = demand(&[0.7, 0.3], &ant, &zero);
        let t = half.solve_tenants(&[(half.cores, d.clone()), (half.cores, d)]);
        for k in 0..2 {
            let rel = (t.ops_per_s[k] - eq.app_ops_per_s / 2.0).abs() / eq.app_ops_per_s;
            assert!(rel < 1e-8, "tenant {k}: {rel}");
        }
        for i in 0..2 {
            assert!((t.latency_ns[i] - eq.latency_ns[i]).abs() / eq.latency_ns[i] < 1e-8);
        }
    }

    #[test]
    fn a_neighbour_slows_a_tenant_only_through_the_tiers_they_share() {
        let m = machine(15.0, "colloid-local");
        let zero = [0.0, 0.0];
        let none = [0.0, 0.0];
        let alone = m.solve(&demand(&[1.0, 0.0], &none, &zero));
        let mut busy = m.cores;
        busy.cores = 30.0;
        // A neighbour on tier 1 only: tier 0 sees the same traffic, the tenant the same rate.
        let t = m.solve_tenants(&[
            (m.cores, demand(&[1.0, 0.0], &none, &zero)),
            (busy, demand(&[0.0, 1.0], &none, &zero)),
        ]);
        assert!((t.ops_per_s[0] - alone.app_ops_per_s).abs() / alone.app_ops_per_s < 1e-8);
        // The same neighbour on tier 0: tier 0's latency rises, the tenant slows.
        let t = m.solve_tenants(&[
            (m.cores, demand(&[1.0, 0.0], &none, &zero)),
            (busy, demand(&[1.0, 0.0], &none, &zero)),
        ]);
        assert!(t.latency_ns[0] > alone.latency_ns[0] * 1.2, "{t:?}");
        assert!(t.ops_per_s[0] < alone.app_ops_per_s * 0.85, "{t:?}");
        // A fixed point: the latency is the curve's at the summed traffic.
        let l = m.tiers[0].latency_ns(t.read_bytes_per_s[0], t.write_bytes_per_s[0]);
        assert!((l - t.latency_ns[0]).abs() / l < 1e-8);
        for (cores, ops) in [15.0, 30.0].iter().zip(&t.ops_per_s) {
            let expect = cores * 5.0 / t.latency_ns[0] * 1e9;
            assert!((ops - expect).abs() / expect < 1e-8);
        }
    }

    #[test]
    fn fixed_point_is_consistent() {
        let m = machine(15.0, "colloid-local");
        let eq = m.solve(&demand(&[0.7, 0.3], &[10.0, 0.0], &[0.0, 0.0]));
        for i in 0..2 {
            let l = m.tiers[i].latency_ns(eq.read_bytes_per_s[i], eq.write_bytes_per_s[i]);
            assert!((l - eq.latency_ns[i]).abs() / l < 1e-6);
        }
        let avg = 0.7 * eq.latency_ns[0] + 0.3 * eq.latency_ns[1];
        assert!((avg - eq.avg_latency_ns).abs() < 1e-6 * avg);
    }
}
