//! The default runtime policy: keep resident DRAM under a budget by demoting the coldest
//! pages first. Coldness comes from the hint-fault tracker (TPP-style): a page's heat is
//! the time of its last observed access (hint fault, tier fault, first touch); pages never
//! seen are coldest. Pure: it reads only snapshots.
//!
//! ```text
//!   resident > budget          -> demote (resident - target) coldest resident pages
//!   target = budget - headroom    (headroom = budget/64, at least 16 pages: room for the
//!                                  faults that arrive before the next quantum)
//! ```
//! Promotion happens on access (the fault handler installs the page), so the policy only
//! demotes. Demotions go to the first compressed tier.

use tiermem_core::{HeatEvent, Plan, Policy, Snapshot, TierId, TrackerSpec};

pub struct BudgetPolicy {
    quantum_ns: u64,
    scan_period_ns: u64,
    scan_pages: u64,
    /// Last access seen per page (ns); 0 = never.
    last_seen: Vec<u64>,
    /// Pages demoted last quantum: if still resident now, the backend refused them
    /// (pinned, shared with a fork child, incompressible): treat them as warm for a while.
    picked: Vec<u32>,
}

impl BudgetPolicy {
    pub fn new(quantum_ns: u64, scan_period_ns: u64, scan_pages: u64) -> Self {
        BudgetPolicy {
            quantum_ns,
            scan_period_ns,
            scan_pages,
            last_seen: Vec::new(),
            picked: Vec::new(),
        }
    }
}

impl Policy for BudgetPolicy {
    fn name(&self) -> String {
        "budget".into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::HintFault {
            scan_period_ns: self.scan_period_ns,
            scan_pages: self.scan_pages,
            tiers: vec![TierId(0)],
        }
    }
    fn quantum_ns(&self) -> u64 {
        self.quantum_ns
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let n = snap.placement.len();
        if self.last_seen.len() < n {
            self.last_seen.resize(n, 0);
        }
        let now = snap.now_ns.max(1);
        for e in snap.events {
            let p = match *e {
                HeatEvent::HintFault { page, .. }
                | HeatEvent::TierFault { page }
                | HeatEvent::Accessed { page } => page,
                HeatEvent::Sample { page, .. } => page,
            } as usize;
            if p < n {
                self.last_seen[p] = now;
            }
        }
        for &p in &self.picked {
            if (p as usize) < n && snap.placement[p as usize] == TierId(0) {
                self.last_seen[p as usize] = now;
            }
        }
        self.picked.clear();
        let mut plan = Plan::default();
        if snap.tier_specs.len() < 2 {
            return plan;
        }
        let pb = snap.page_bytes;
        let budget = snap.tiers[0].capacity_bytes / pb;
        let resident = snap.tiers[0].used_bytes / pb;
        if resident <= budget {
            return plan;
        }
        let headroom = (budget / 64).max(16);
        let want = (resident - budget.saturating_sub(headroom)) as usize;
        let mut cands: Vec<(u64, u32)> = snap
            .placement
            .iter()
            .enumerate()
            .filter(|(_, &t)| t == TierId(0))
            .map(|(i, _)| (self.last_seen[i], i as u32))
            .collect();
        let want = want.min(cands.len());
        if want == 0 {
            return plan;
        }
        if want < cands.len() {
            cands.select_nth_unstable(want - 1);
        }
        let mut chosen: Vec<u32> = cands[..want].iter().map(|&(_, p)| p).collect();
        chosen.sort_unstable();
        for p in chosen {
            plan.push(p, TierId(1));
            self.picked.push(p);
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::{TierKind, TierSpec, TierTelemetry};

    fn spec(kind: TierKind) -> TierSpec {
        TierSpec {
            name: "t".into(),
            kind,
            capacity_bytes: 0,
            unloaded_latency_ns: 0.0,
            peak_bandwidth_bytes_per_s: 0.0,
            cost_per_gb: 0.0,
        }
    }

    #[test]
    fn demotes_coldest_first_down_to_target() {
        let specs = vec![
            spec(TierKind::Dram),
            spec(TierKind::Compressed {
                codec: "lz4".into(),
                allocator: "zsmalloc".into(),
                backing: "dram".into(),
            }),
        ];
        let placement = vec![TierId(0); 200];
        let tiers = vec![
            TierTelemetry {
                used_bytes: 200 * 4096,
                capacity_bytes: 100 * 4096,
                ..Default::default()
            },
            TierTelemetry::default(),
        ];
        // Pages 0..100 were touched recently; 100..200 never.
        let events: Vec<HeatEvent> = (0..100)
            .map(|p| HeatEvent::HintFault {
                page: p,
                time_to_fault_ns: 1.0,
            })
            .collect();
        let mut pol = BudgetPolicy::new(1, 1, 1);
        let snap = Snapshot {
            now_ns: 10,
            quantum_ns: 1,
            page_bytes: 4096,
            tier_specs: &specs,
            tiers: &tiers,
            placement: &placement,
            events: &events,
            tenants: &[],
            controls: &tiermem_core::NO_CONTROLS,
        };
        let plan = pol.decide(&snap);
        // 200 resident, budget 100, headroom 16 -> demote 116: all 100 cold + 16 warm.
        assert_eq!(plan.pages(), 116);
        let cold = plan.moves.iter().filter(|m| m.range.start >= 100).count();
        assert_eq!(cold, 100);
        assert!(plan.moves.iter().all(|m| m.to == TierId(1)));
    }

    #[test]
    fn under_budget_does_nothing() {
        let specs = vec![
            spec(TierKind::Dram),
            spec(TierKind::Compressed {
                codec: "lz4".into(),
                allocator: "zsmalloc".into(),
                backing: "dram".into(),
            }),
        ];
        let placement = vec![TierId(0); 10];
        let tiers = vec![
            TierTelemetry {
                used_bytes: 10 * 4096,
                capacity_bytes: 100 * 4096,
                ..Default::default()
            },
            TierTelemetry::default(),
        ];
        let mut pol = BudgetPolicy::new(1, 1, 1);
        let snap = Snapshot {
            now_ns: 10,
            quantum_ns: 1,
            page_bytes: 4096,
            tier_specs: &specs,
            tiers: &tiers,
            placement: &placement,
            events: &[],
            tenants: &[],
            controls: &tiermem_core::NO_CONTROLS,
        };
        assert_eq!(pol.decide(&snap).pages(), 0);
    }
}
