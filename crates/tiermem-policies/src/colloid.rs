//! Colloid (SOSP'24): place pages to balance the tiers' *loaded* access latencies.
//!
//! This file holds the algorithm, independent of any base system:
//! * [`LatencyMeter`]: per-tier latency by Little's law from queue occupancy and arrival rate
//!   (CHA counters, §3.1), EWMA-smoothed; `p = R_D / (R_D + R_A)`.
//! * [`Watermarks`]: Algorithm 2 (COMPUTESHIFT) with δ and ε, including the reset rule.
//! * [`decide_shift`]: Algorithm 1 — the mode (promotion/demotion), Δp, and the dynamic
//!   migration limit `min(Δp · (R_D + R_A) · 64 B · quantum, M)`.
//!
//! Base systems (HeMem, MEMTIS, TPP) supply the page finder; see `colloid_layer.rs`.

use serde::{Deserialize, Serialize};
use tiermem_core::{Snapshot, CACHELINE_BYTES};

/// Colloid's parameters (§5: ε = 0.01, δ = 0.05).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColloidParams {
    /// Latencies within a factor δ of each other count as balanced (Algorithm 2 line 2).
    #[serde(default = "default_delta")]
    pub delta: f64,
    /// Watermarks closer than ε trigger the reset rule (Algorithm 2 lines 5–6).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// EWMA weight of the newest occupancy/rate measurement (§3.1 smooths both signals).
    #[serde(default = "default_ewma")]
    pub ewma_alpha: f64,
}

fn default_delta() -> f64 {
    0.05
}
fn default_epsilon() -> f64 {
    0.01
}
fn default_ewma() -> f64 {
    0.3
}

impl Default for ColloidParams {
    fn default() -> Self {
        ColloidParams {
            delta: default_delta(),
            epsilon: default_epsilon(),
            ewma_alpha: default_ewma(),
        }
    }
}

impl tiermem_core::config::Validate for ColloidParams {
    fn validate(&self, p: &str) -> tiermem_core::Result<()> {
        use tiermem_core::config::{check_range, join};
        check_range(&join(p, "delta"), self.delta, 1e-6, 0.999)?;
        check_range(&join(p, "epsilon"), self.epsilon, 1e-6, 0.999)?;
        check_range(&join(p, "ewma_alpha"), self.ewma_alpha, 1e-3, 1.0)
    }
}

/// Smoothed per-tier occupancy and arrival rate.
#[derive(Clone, Debug, Default)]
pub struct LatencyMeter {
    occupancy: Vec<f64>,
    rate: Vec<f64>,
    alpha: f64,
}

impl LatencyMeter {
    pub fn new(alpha: f64) -> Self {
        LatencyMeter {
            occupancy: Vec::new(),
            rate: Vec::new(),
            alpha,
        }
    }

    /// Fold in one quantum's counters.
    pub fn update(&mut self, snap: &Snapshot<'_>) {
        if self.occupancy.len() != snap.tiers.len() {
            self.occupancy = snap.tiers.iter().map(|t| t.occupancy).collect();
            self.rate = snap.tiers.iter().map(|t| t.arrival_rate_per_s).collect();
            return;
        }
        for (i, t) in snap.tiers.iter().enumerate() {
            self.occupancy[i] += self.alpha * (t.occupancy - self.occupancy[i]);
            self.rate[i] += self.alpha * (t.arrival_rate_per_s - self.rate[i]);
        }
    }

    /// L = O / R (ns); a tier with no requests reports its unloaded latency.
    pub fn latency_ns(&self, tier: usize, unloaded_ns: f64) -> f64 {
        if self.rate.get(tier).copied().unwrap_or(0.0) <= 0.0 {
            unloaded_ns
        } else {
            self.occupancy[tier] / self.rate[tier] * 1e9
        }
    }

    pub fn rate(&self, tier: usize) -> f64 {
        self.rate.get(tier).copied().unwrap_or(0.0)
    }
}

/// Algorithm 2's state: the low and high watermarks on `p`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Watermarks {
    pub p_lo: f64,
    pub p_hi: f64,
}

impl Default for Watermarks {
    fn default() -> Self {
        Watermarks {
            p_lo: 0.0,
            p_hi: 1.0,
        }
    }
}

impl Watermarks {
    /// COMPUTESHIFT(p, L_D, L_A): the magnitude of the desired shift in access probability
    /// (the direction is Algorithm 1's mode). Exactly Algorithm 2.
    pub fn compute_shift(&mut self, p: f64, l_d: f64, l_a: f64, params: &ColloidParams) -> f64 {
        if (l_d - l_a).abs() < params.delta * l_d {
            return 0.0;
        }
        if l_d < l_a {
            self.p_lo = p;
        } else {
            self.p_hi = p;
        }
        if self.p_hi < self.p_lo + params.epsilon {
            // The equilibrium moved outside the watermarks: reset the far one.
            if l_d < l_a {
                self.p_hi = 1.0;
            } else {
                self.p_lo = 0.0;
            }
        }
        ((self.p_lo + self.p_hi) / 2.0 - p).abs()
    }
}

/// Which way pages move this quantum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Default tier is faster: move hot pages from the alternate tier to the default tier.
    Promote,
    /// Default tier is slower: move hot pages from the default tier to the alternate tier.
    Demote,
}

/// One quantum's decision for a pair of tiers (Algorithm 1, lines 1–10).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shift {
    pub mode: Mode,
    pub delta_p: f64,
    /// Bytes that may move this quantum: min(Δp · (R_D + R_A) · 64 B · quantum, M).
    pub limit_bytes: u64,
    pub p: f64,
    pub l_d: f64,
    pub l_a: f64,
}

/// Algorithm 1 for the pair (`fast`, `slow`): measure, pick the mode, compute Δp and the
/// dynamic migration limit. `static_limit` is the base system's M per quantum.
pub fn decide_shift(
    meter: &LatencyMeter,
    marks: &mut Watermarks,
    snap: &Snapshot<'_>,
    fast: usize,
    slow: usize,
    static_limit: Option<u64>,
    params: &ColloidParams,
) -> Option<Shift> {
    let (r_d, r_a) = (meter.rate(fast), meter.rate(slow));
    if r_d + r_a <= 0.0 {
        return None;
    }
    let l_d = meter.latency_ns(fast, snap.tier_specs[fast].unloaded_latency_ns);
    let l_a = meter.latency_ns(slow, snap.tier_specs[slow].unloaded_latency_ns);
    let p = r_d / (r_d + r_a);
    let mode = if l_d < l_a {
        Mode::Promote
    } else {
        Mode::Demote
    };
    let delta_p = marks.compute_shift(p, l_d, l_a, params);
    let dynamic = delta_p * (r_d + r_a) * CACHELINE_BYTES as f64 * snap.quantum_ns as f64 / 1e9;
    let limit_bytes = match static_limit {
        Some(m) => (dynamic as u64).min(m),
        None => dynamic as u64,
    };
    Some(Shift {
        mode,
        delta_p,
        limit_bytes,
        p,
        l_d,
        l_a,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A static two-tier latency model: L_D grows with p (the default tier's share of load),
    /// L_A shrinks; the equilibrium p* solves L_D(p*) = L_A(p*).
    fn model(p: f64, contention: f64) -> (f64, f64) {
        let l_d = 70.0 * (1.0 + contention * 4.0 * p);
        let l_a = 135.0 * (1.0 + 0.3 * (1.0 - p));
        (l_d, l_a)
    }

    fn equilibrium(contention: f64) -> f64 {
        let (mut lo, mut hi) = (0.0, 1.0);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            let (d, a) = model(mid, contention);
            if d < a {
                lo = mid
            } else {
                hi = mid
            }
        }
        (lo + hi) / 2.0
    }

    /// Drive Algorithm 2 on the static model, applying each shift exactly.
    fn run(
        p0: f64,
        contention: f64,
        steps: usize,
        marks: &mut Watermarks,
    ) -> Vec<(f64, Watermarks)> {
        let params = ColloidParams::default();
        let mut p = p0;
        let mut trace = Vec::new();
        for _ in 0..steps {
            let (d, a) = model(p, contention);
            let dp = marks.compute_shift(p, d, a, &params);
            p = if d < a { p + dp } else { p - dp };
            p = p.clamp(0.0, 1.0);
            trace.push((p, *marks));
        }
        trace
    }

    #[test]
    fn watermarks_bracket_equilibrium_and_gap_shrinks() {
        let c = 1.0;
        let p_star = equilibrium(c);
        assert!(p_star > 0.1 && p_star < 0.9, "{p_star}");
        let mut marks = Watermarks::default();
        let trace = run(1.0, c, 40, &mut marks);
        let mut prev_gap = 1.0 + 1e-12;
        for (p, m) in &trace {
            assert!(
                m.p_lo <= p_star + 1e-9 && p_star <= m.p_hi + 1e-9,
                "p* {p_star} outside [{}, {}]",
                m.p_lo,
                m.p_hi
            );
            assert!(m.p_lo <= *p + 1e-9 && *p <= m.p_hi + 1e-9);
            let gap = m.p_hi - m.p_lo;
            assert!(gap <= prev_gap + 1e-12, "gap grew");
            prev_gap = gap;
        }
        let (p_end, _) = trace.last().unwrap();
        let (d, a) = model(*p_end, c);
        assert!(
            (d - a).abs() < 0.05 * d,
            "latencies not balanced at the end: {d} vs {a}"
        );
    }

    #[test]
    fn converges_to_all_default_when_default_stays_faster() {
        // No contention: L_D(1) = 70 < L_A = 135 — the optimum is p = 1.
        let mut marks = Watermarks::default();
        let trace = run(0.2, 0.0, 30, &mut marks);
        let (p, _) = trace.last().unwrap();
        assert!(*p > 0.99, "p = {p}");
    }

    #[test]
    fn reset_rule_recovers_after_equilibrium_jump() {
        // Converge at high contention, then contention drops: p* jumps above p_hi.
        let mut marks = Watermarks::default();
        let trace = run(1.0, 3.0, 40, &mut marks);
        let (p_before, m) = *trace.last().unwrap();
        let new_star = equilibrium(0.5);
        assert!(
            new_star > m.p_hi + 0.05,
            "the test needs p* to jump above p_hi"
        );
        let trace = run(p_before, 0.5, 60, &mut marks);
        let (p_after, _) = *trace.last().unwrap();
        // Converged means balanced within δ (Algorithm 2 stops there), so p is near p*.
        let (d, a) = model(p_after, 0.5);
        assert!((d - a).abs() < 0.05 * d, "not balanced: {d} vs {a}");
        assert!(
            (p_after - new_star).abs() < 0.1,
            "p {p_after} vs p* {new_star}"
        );
        // The reset must have happened: p_hi went back to 1 at some point.
        assert!(trace.iter().any(|(_, m)| m.p_hi == 1.0));
    }

    #[test]
    fn balanced_latencies_request_no_shift() {
        let mut marks = Watermarks {
            p_lo: 0.3,
            p_hi: 0.6,
        };
        let dp = marks.compute_shift(0.4, 100.0, 103.0, &ColloidParams::default());
        assert_eq!(dp, 0.0);
        assert_eq!(
            marks,
            Watermarks {
                p_lo: 0.3,
                p_hi: 0.6
            }
        );
    }
}
