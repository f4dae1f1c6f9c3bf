//! The DRAM budget guard: keeps resident DRAM under its capacity (the runtime's budget) by
//! demoting the coldest pages first, after whatever policy it guards has planned. On the
//! Linux runtime every access to a compressed page faults it back into DRAM, whatever the
//! policy decided, so DRAM can outgrow its capacity there; the guard is what holds the
//! budget, for every policy (`tiermem run --policy NAME` = NAME under the guard; no NAME =
//! the guard alone, `budget`). Coldness comes from the events the policy's tracker delivers
//! (hint faults, samples, tier faults, first touches): a page's heat is the time of its
//! last observed access; pages never seen are coldest. Pure: it reads only snapshots.
//!
//! ```text
//!   projected = resident + the plan's promotions - the plan's demotions
//!   projected > budget  -> also demote (projected - target) coldest resident pages
//!   target = budget - headroom    (headroom = budget/64, at least 16 pages: room for the
//!                                  faults that arrive before the next quantum)
//! ```
//! Demotions go to tier 1 (the first compressed tier).
//!
//! **Which pages are coldest.** The events say when a page was last seen, but the tracker
//! sees only a sample: a page in use that the sampler has not visited lately looks as old
//! as one the program is done with, and a page the program swept once (a copy, a scan)
//! looks as fresh as a hot one from the moment it faulted in. Ranking by that time alone
//! evicts in fault order, so a one-pass sweep pushes a hot set that barely fits out of
//! DRAM, and the hot set comes back one fault at a time (numpy's hash-based `np.unique` of
//! 4 M integers at an 88 MiB budget: 295 k tier faults where the kernel's zswap at the same
//! cgroup limit swaps in 3.8 k pages). So the guard keeps two classes, as the kernel's LRU
//! does (an active and an inactive list, with refault distances: mm/workingset.c):
//!
//! * a page is *active* once it is seen again after it came in: a hint fault (the sampler
//!   caught it in use while resident), or a refault whose *refault distance* (pages the
//!   guard demoted between its demotion and its return) is at most the budget: it would
//!   have stayed had DRAM been as large again, so it belongs to the working set;
//! * every other resident page is *inactive* (first touched, faulted in after a long
//!   absence, brought around a fault);
//! * victims are the inactive pages, oldest first, then the active ones, oldest first. A
//!   demoted page is no longer active; its return decides again.
//!
//! **Heat by blocks** (`with_heat_block`, the runtime's sampler: one page per 64 KiB block
//! a pass): a page seen again stands for its aligned block, so the block's pages become
//! active with it. A program's hot data comes in runs (objects, arrays, allocator arenas);
//! a sampler that visits every page of a large heap once takes longer than most programs
//! run, and a demotion that meets an unsampled hot page costs a tier fault for each one.

use tiermem_core::{HeatEvent, Needs, Plan, Policy, Snapshot, TierId, TrackerSpec};

pub struct BudgetGuard {
    /// The policy guarded; `None` = the guard alone.
    inner: Option<Box<dyn Policy>>,
    quantum_ns: u64,
    scan_period_ns: u64,
    scan_pages: u64,
    /// Last access seen per page (ns); 0 = never.
    last_seen: Vec<u64>,
    /// Per page: seen again since it came in (module doc).
    active: Vec<bool>,
    /// Per page the guard demoted: the demotion clock at its demotion (0 = none pending).
    demoted_at: Vec<u32>,
    /// The demotion clock: pages the guard has demoted (wrapping, never 0).
    demotions: u32,
    /// Pages demoted last quantum: if still resident now, the backend refused them
    /// (pinned, shared with a fork child, incompressible): they become active (taken last).
    picked: Vec<u32>,
    /// Scratch: pages the guarded policy's plan moves this quantum.
    planned: Vec<bool>,
    /// A page seen again makes its aligned block of this many pages active (1: the page).
    heat_block: usize,
    /// Never demote an active page (`spare_active`).
    spare_active: bool,
}

impl BudgetGuard {
    /// The guard alone, with its own hint-fault tracker (`scan_pages` every
    /// `scan_period_ns`) and quantum.
    pub fn alone(quantum_ns: u64, scan_period_ns: u64, scan_pages: u64) -> Self {
        BudgetGuard {
            inner: None,
            quantum_ns,
            scan_period_ns,
            scan_pages,
            last_seen: Vec::new(),
            active: Vec::new(),
            demoted_at: Vec::new(),
            demotions: 0,
            picked: Vec::new(),
            planned: Vec::new(),
            heat_block: 1,
            spare_active: false,
        }
    }

    /// Demote only inactive pages, even if the budget is then not met: for a budget that
    /// is a controller's probe (the SLO controller's), not a bound to hold. A probe that
    /// evicts pages seen in use only buys refaults (perl's uniformly hot 2 M-key hash: 24
    /// back-offs and a 7.8 % stall in 8 s); what stops being used is found idle by the
    /// sampler and offloaded then.
    pub fn spare_active(mut self) -> Self {
        self.spare_active = true;
        self
    }

    /// A page seen again makes its aligned block of `pages` pages active (module doc).
    pub fn with_heat_block(mut self, pages: usize) -> Self {
        self.heat_block = pages.max(1);
        self
    }

    /// `inner` under the guard: its tracker, quantum and rate limit.
    pub fn over(inner: Box<dyn Policy>) -> Self {
        BudgetGuard {
            quantum_ns: inner.quantum_ns(),
            inner: Some(inner),
            ..BudgetGuard::alone(0, 0, 0)
        }
    }
}

impl Policy for BudgetGuard {
    fn name(&self) -> String {
        match &self.inner {
            Some(p) => p.name(),
            None => "budget".into(),
        }
    }
    fn tracker(&self) -> TrackerSpec {
        match &self.inner {
            Some(p) => p.tracker(),
            None => TrackerSpec::HintFault {
                scan_period_ns: self.scan_period_ns,
                scan_pages: self.scan_pages,
                tiers: vec![TierId(0)],
                scan_period_min_ns: None,
            },
        }
    }
    fn needs(&self) -> Needs {
        match &self.inner {
            Some(p) => p.needs(),
            None => Needs::tracking(&self.tracker()),
        }
    }
    fn quantum_ns(&self) -> u64 {
        self.quantum_ns
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        self.inner.as_ref().and_then(|p| p.migration_limit_bytes())
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.inner.as_ref().map_or_else(Vec::new, |p| p.counters())
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let n = snap.placement.len();
        if self.last_seen.len() < n {
            self.last_seen.resize(n, 0);
            self.active.resize(n, false);
            self.demoted_at.resize(n, 0);
        }
        let now = snap.now_ns.max(1);
        let budget = snap
            .tiers
            .first()
            .map_or(0, |t| t.capacity_bytes / snap.page_bytes.max(1));
        for e in snap.events {
            // (page, seen at all, seen again while resident)
            let (p, seen, seen_again) = match *e {
                HeatEvent::HintFault { page, .. } => (page, true, true),
                HeatEvent::TierFault { page }
                | HeatEvent::Accessed { page }
                | HeatEvent::Sample { page, .. } => (page, true, false),
                // Brought in beside a fault, not seen: as recent, not active.
                HeatEvent::Prefetched { page } => (page, false, false),
            };
            let p = p as usize;
            if p >= n {
                continue;
            }
            self.last_seen[p] = now;
            if !seen {
                continue;
            }
            let at = std::mem::take(&mut self.demoted_at[p]);
            let refault_distance = self.demotions.wrapping_sub(at) as u64;
            if seen_again || (at != 0 && refault_distance <= budget) {
                let b = self.heat_block;
                let start = p / b * b;
                for q in start..(start + b).min(n) {
                    self.active[q] = true;
                    self.last_seen[q] = self.last_seen[q].max(now);
                }
            }
        }
        for &p in &self.picked {
            let p = p as usize;
            if p < n && snap.placement[p] == TierId(0) {
                // Refused (pinned, shared, incompressible): it never left. Active, so it is
                // taken last: inactive, it would head the next quantum's victims again, and
                // a DRAM full of such pages would never get below its budget.
                self.last_seen[p] = now;
                self.demoted_at[p] = 0;
                self.active[p] = true;
            }
        }
        self.picked.clear();
        let mut plan = match &mut self.inner {
            Some(p) => p.decide(snap),
            None => Plan::default(),
        };
        if snap.tier_specs.len() < 2 {
            return plan;
        }
        let pb = snap.page_bytes;
        // What DRAM will hold once the guarded plan is applied.
        self.planned.clear();
        self.planned.resize(n, false);
        let mut projected = snap.tiers[0].used_bytes / pb;
        for m in &plan.moves {
            for p in m.range.pages() {
                let p = p as usize;
                if p >= n {
                    continue;
                }
                self.planned[p] = true;
                match (snap.placement[p] == TierId(0), m.to == TierId(0)) {
                    (true, false) => projected = projected.saturating_sub(1),
                    (false, true) => projected += 1,
                    _ => {}
                }
            }
        }
        if projected <= budget {
            return plan;
        }
        let headroom = (budget / 64).max(16);
        let want = (projected - budget.saturating_sub(headroom)) as usize;
        let mut cands: Vec<((bool, u64), u32)> = snap
            .placement
            .iter()
            .enumerate()
            .filter(|&(i, &t)| {
                t == TierId(0) && !self.planned[i] && !(self.spare_active && self.active[i])
            })
            .map(|(i, _)| ((self.active[i], self.last_seen[i]), i as u32))
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
            self.demotions = self.demotions.wrapping_add(1).max(1);
            self.active[p as usize] = false;
            self.demoted_at[p as usize] = self.demotions;
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

    /// One quantum of `pol` over DRAM + one compressed tier: `resident` pages in DRAM of a
    /// budget of `budget` pages.
    fn decide_on(
        pol: &mut BudgetGuard,
        placement: &[TierId],
        resident: u64,
        budget: u64,
        events: &[HeatEvent],
    ) -> Plan {
        decide_at(10, pol, placement, resident, budget, events)
    }

    /// `decide_on` at time `now_ns`.
    fn decide_at(
        now_ns: u64,
        pol: &mut BudgetGuard,
        placement: &[TierId],
        resident: u64,
        budget: u64,
        events: &[HeatEvent],
    ) -> Plan {
        let specs = vec![
            spec(TierKind::Dram),
            spec(TierKind::Compressed {
                codec: "lz4".into(),
                allocator: "zsmalloc".into(),
                backing: "dram".into(),
            }),
        ];
        let tiers = vec![
            TierTelemetry {
                used_bytes: resident * 4096,
                capacity_bytes: budget * 4096,
                ..Default::default()
            },
            TierTelemetry::default(),
        ];
        pol.decide(&Snapshot {
            now_ns,
            quantum_ns: pol.quantum_ns(),
            page_bytes: 4096,
            tier_specs: &specs,
            tiers: &tiers,
            placement,
            events,
            tenants: &[],
            controls: &tiermem_core::NO_CONTROLS,
            tenant_telemetry: &[],
            access_bits: None,
            moved: None,
        })
    }

    #[test]
    fn demotes_coldest_first_down_to_target() {
        // Pages 0..100 were touched recently; 100..200 never.
        let events: Vec<HeatEvent> = (0..100)
            .map(|p| HeatEvent::HintFault {
                page: p,
                time_to_fault_ns: 1.0,
            })
            .collect();
        let mut pol = BudgetGuard::alone(1, 1, 1);
        let plan = decide_on(&mut pol, &[TierId(0); 200], 200, 100, &events);
        // 200 resident, budget 100, headroom 16 -> demote 116: all 100 cold + 16 warm.
        assert_eq!(plan.pages(), 116);
        let cold = plan.moves.iter().filter(|m| m.range.start >= 100).count();
        assert_eq!(cold, 100);
        assert!(plan.moves.iter().all(|m| m.to == TierId(1)));
    }

    #[test]
    fn under_budget_does_nothing() {
        let mut pol = BudgetGuard::alone(1, 1, 1);
        assert_eq!(
            decide_on(&mut pol, &[TierId(0); 10], 10, 100, &[]).pages(),
            0
        );
    }

    /// A program over DRAM + one compressed tier, seen as the runtime sees it: a first
    /// touch is an `Accessed` event, an access to a demoted page a `TierFault` (it comes
    /// back), an access to a resident page nothing. Each quantum it reads `hot_reads` random
    /// pages of a hot set of `hot` pages and sweeps `sweep_per_q` fresh pages once (a copy
    /// or a scan). Returns the faults on hot pages over the last half of `quanta`.
    fn hot_set_beside_a_sweep(hot: u32, budget: u64, sweep_per_q: u32, quanta: u32) -> u64 {
        let n = hot + sweep_per_q * quanta;
        let mut placement = vec![TierId(1); n as usize];
        let mut touched = vec![false; n as usize];
        let mut pol = BudgetGuard::alone(1, 1, 1);
        let mut rng: u64 = 0x9E37_79B9_7F4A_7C15;
        let (mut sweep, mut hot_faults) = (hot, 0);
        for q in 0..quanta {
            let mut events = Vec::new();
            let mut access = |p: u32, events: &mut Vec<HeatEvent>| -> bool {
                let i = p as usize;
                if placement[i] == TierId(0) {
                    return false;
                }
                placement[i] = TierId(0);
                if std::mem::replace(&mut touched[i], true) {
                    events.push(HeatEvent::TierFault { page: p });
                    true
                } else {
                    events.push(HeatEvent::Accessed { page: p });
                    false
                }
            };
            for _ in 0..hot.min(200) {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let faulted = access((rng % hot as u64) as u32, &mut events);
                if faulted && q >= quanta / 2 {
                    hot_faults += 1;
                }
            }
            for _ in 0..sweep_per_q {
                access(sweep, &mut events);
                sweep += 1;
            }
            let resident = placement.iter().filter(|&&t| t == TierId(0)).count() as u64;
            let plan = decide_at(1 + q as u64, &mut pol, &placement, resident, budget, &events);
            for m in &plan.moves {
                for p in m.range.pages() {
                    placement[p as usize] = m.to;
                }
            }
        }
        hot_faults
    }

    #[test]
    fn a_sweep_does_not_push_a_hot_set_that_fits_out_of_dram() {
        // 800 hot pages, a budget of 1 000 (984 after headroom), 50 fresh pages swept per
        // quantum. Ranked by the time a page was last seen, the hot pages (seen only when
        // they fault) leave in fault order behind the sweep and keep faulting: 11 926 faults
        // over the last 200 quanta when this test was written against that ranking. A hot
        // page that comes back within a budget's worth of demotions is active, and the
        // sweep's pages (never seen again) are the victims.
        let faults = hot_set_beside_a_sweep(800, 1000, 50, 400);
        assert!(
            faults <= 8,
            "{faults} hot-page faults over the last 200 quanta"
        );
    }

    /// With heat by blocks, a hint fault on one page keeps its whole block in DRAM: the
    /// victims are taken from the blocks nothing was seen in.
    #[test]
    fn a_hint_fault_keeps_its_block() {
        let mut pol = BudgetGuard::alone(1, 1, 1).with_heat_block(16);
        // 64 resident pages, a budget of 48 (less its headroom of 16): 32 must go. Page 5
        // (block 0) and page 40 (block 2) were seen again.
        let placement = vec![TierId(0); 64];
        let events = [
            HeatEvent::HintFault {
                page: 5,
                time_to_fault_ns: 1e6,
            },
            HeatEvent::HintFault {
                page: 40,
                time_to_fault_ns: 1e6,
            },
        ];
        let plan = decide_at(1, &mut pol, &placement, 64, 48, &events);
        let demoted: Vec<u32> = plan.moves.iter().flat_map(|m| m.range.pages()).collect();
        assert!(demoted.len() >= 32, "{demoted:?}");
        for p in &demoted {
            assert!(
                !(0..16).contains(p) && !(32..48).contains(p),
                "demoted {p} of a seen block: {demoted:?}"
            );
        }
        // Without blocks the same events keep only the two pages.
        let mut pol = BudgetGuard::alone(1, 1, 1);
        let plan = decide_at(1, &mut pol, &placement, 64, 48, &events);
        let demoted: Vec<u32> = plan.moves.iter().flat_map(|m| m.range.pages()).collect();
        assert!(demoted.iter().any(|p| (0..16).contains(p)), "{demoted:?}");
    }

    #[test]
    fn pages_the_backend_refused_are_taken_last() {
        // 300 resident pages, a budget of 100: pages 200..300 were seen again (active).
        let events: Vec<HeatEvent> = (200..300)
            .map(|p| HeatEvent::HintFault {
                page: p,
                time_to_fault_ns: 1.0,
            })
            .collect();
        let mut pol = BudgetGuard::alone(1, 1, 1);
        let mut placement = vec![TierId(0); 300];
        let plan = decide_on(&mut pol, &placement, 300, 100, &events);
        // 300 - (100 - 16) = 216: the 200 inactive pages, then 16 active ones.
        assert_eq!(plan.pages(), 216);
        // The backend refuses pages 0..200 (incompressible) and moves the 16 others.
        for m in plan.moves.iter().filter(|m| m.range.start >= 200) {
            placement[m.range.start as usize] = TierId(1);
        }
        let plan = decide_at(20, &mut pol, &placement, 284, 100, &[]);
        // 284 - 84 = 200: the 84 active pages never refused first, then 116 refused ones.
        let untried = plan.moves.iter().filter(|m| m.range.start >= 200).count();
        assert_eq!(untried, 84);
    }

    /// Promotes pages 0..50 (from tier 1), never touches the rest.
    struct PromoteFirst50;
    impl Policy for PromoteFirst50 {
        fn name(&self) -> String {
            "promote50".into()
        }
        fn tracker(&self) -> TrackerSpec {
            TrackerSpec::None
        }
        fn quantum_ns(&self) -> u64 {
            7
        }
        fn decide(&mut self, _: &Snapshot<'_>) -> Plan {
            let mut p = Plan::default();
            for i in 0..50 {
                p.push(i, TierId(0));
            }
            p
        }
    }

    #[test]
    fn guards_another_policys_plan_counting_its_promotions() {
        // Pages 0..50 compressed, 50..150 resident; budget 100 pages.
        let mut placement = vec![TierId(0); 150];
        placement[..50].fill(TierId(1));
        let mut pol = BudgetGuard::over(Box::new(PromoteFirst50));
        assert_eq!(pol.name(), "promote50");
        assert_eq!(pol.quantum_ns(), 7);
        let plan = decide_on(&mut pol, &placement, 100, 100, &[]);
        // 100 resident + 50 promoted = 150 > 100: demote 150 - (100 - 16) = 66 resident
        // pages, none of those the guarded plan moves.
        let demoted: Vec<u32> = plan
            .moves
            .iter()
            .filter(|m| m.to == TierId(1))
            .map(|m| m.range.start)
            .collect();
        assert_eq!(plan.moves.len() - demoted.len(), 50);
        assert_eq!(demoted.len(), 66);
        assert!(demoted.iter().all(|&p| p >= 50));
    }
}
