//! Colloid as a layer over a base system (§4): the base keeps its tracker, its heat state
//! and its capacity-driven demotions; Colloid replaces the placement decision with
//! Algorithm 1 and uses the base's heat to find pages worth Δp.
//!
//! * List-based bases (HeMem, MEMTIS): pages ordered by the base's heat, bucketed into
//!   frequency bins (HeMem+Colloid: 5 bins over 0..COOLING_THRESHOLD, §4.1; MEMTIS+Colloid
//!   scans its hot list, §4.2); take pages whose probabilities sum to ≤ Δp, within the limit.
//! * Hint-fault bases (TPP): on a hint fault, `p_page = 1 / (Δt · r)` with `r` the faulting
//!   tier's request rate (§4.3); promote from the alternate tier (or demote from the default
//!   tier, whose pages also get hint faults) if `p_page ≤` the remaining Δp.

use crate::colloid::{decide_shift, ColloidParams, LatencyMeter, Mode, Watermarks};
use crate::heat::HeatModel;
use tiermem_core::{HeatEvent, PageIdx, Plan, Policy, Snapshot, TierId, TrackerSpec};

/// Colloid layered over a base system.
pub struct Colloid<B: HeatModel> {
    pub base: B,
    pub params: ColloidParams,
    meter: LatencyMeter,
    /// Algorithm 2's watermarks, one pair per adjacent pair of tiers.
    marks: Vec<Watermarks>,
    /// Frequency bins for list-based page finding (§4.1: 5).
    pub bins: usize,
    /// The last quantum's decision, for inspection.
    pub last: Option<crate::colloid::Shift>,
}

impl<B: HeatModel> Colloid<B> {
    pub fn new(mut base: B, params: ColloidParams) -> Self {
        base.want_warm_pages();
        let meter = LatencyMeter::new(params.ewma_alpha);
        Colloid {
            base,
            params,
            meter,
            marks: Vec::new(),
            bins: 5,
            last: None,
        }
    }

    fn is_hint_fault_base(&self) -> bool {
        fn has_hint_faults(t: &TrackerSpec) -> bool {
            match t {
                TrackerSpec::HintFault { .. } => true,
                TrackerSpec::Combined(ts) => ts.iter().any(has_hint_faults),
                _ => false,
            }
        }
        has_hint_faults(&self.base.tracker())
    }

    /// Algorithm 1 for tiers (`i`, `i + 1`), appending its moves to `plan`.
    fn balance_pair(&mut self, snap: &Snapshot<'_>, i: usize, plan: &mut Plan) {
        let (fast, slow) = (TierId(i as u8), TierId(i as u8 + 1));
        let limit = self.base.migration_limit_bytes();
        let Some(shift) = decide_shift(
            &self.meter,
            &mut self.marks[i],
            snap,
            i,
            i + 1,
            limit,
            &self.params,
        ) else {
            return;
        };
        if i == 0 {
            self.last = Some(shift);
        }
        if shift.delta_p <= 0.0 || shift.limit_bytes < snap.page_bytes {
            return;
        }
        let limit_pages = shift.limit_bytes / snap.page_bytes;
        let (from, to) = match shift.mode {
            Mode::Promote => (slow, fast),
            Mode::Demote => (fast, slow),
        };
        let mut chosen = if self.is_hint_fault_base() {
            self.find_from_faults(snap, from, shift.delta_p, limit_pages)
        } else {
            self.find_from_lists(snap, from, shift.delta_p, limit_pages)
        };
        // The base's own capacity moves make room in the default tier (MEMTIS's default-tier
        // thread): promote only into that room.
        let base_room = if i == 0 {
            self.base.promotion_room(snap)
        } else {
            None
        };
        if let (true, Some(room)) = (to == fast, base_room) {
            chosen.truncate(room as usize);
        } else if to == fast {
            // Promotion into a full tier swaps with its coldest pages, as the base systems
            // do — but only for a candidate the base calls hot, displacing a page it does not
            // call hot or one in a colder frequency bin: free space takes any candidate, but
            // sampling noise must not swap cold pages for cold pages once the hot set is in
            // place (the base systems never do that either).
            let free = (snap.free_bytes(fast) / snap.page_bytes) as usize;
            if chosen.len() > free {
                // The base's eviction order (HeMem: its cold list; TPP: the inactive list).
                let victims: Vec<(f64, PageIdx)> = self
                    .base
                    .coldest_pages(snap, fast, chosen.len() - free)
                    .into_iter()
                    .filter(|p| snap.placement[*p as usize] == fast)
                    .map(|p| (self.base.heat(p), p))
                    .collect();
                let mut kept = chosen[..free].to_vec();
                for (cand, (vheat, victim)) in chosen[free..].iter().zip(victims) {
                    let hotter_bin = self.bin_of(self.base.heat(*cand)) > self.bin_of(vheat);
                    if self.base.is_hot(*cand) && (hotter_bin || !self.base.is_hot(victim)) {
                        plan.push(victim, slow);
                        kept.push(*cand);
                    }
                }
                chosen = kept;
            }
        }
        for p in chosen {
            plan.push(p, to);
        }
    }

    fn bin_of(&self, heat: f64) -> usize {
        self.bin_under(heat, self.base.heat_ceiling().max(1e-9))
    }

    /// `bin_of` with the ceiling given (read once for a pass over many pages).
    fn bin_under(&self, heat: f64, ceiling: f64) -> usize {
        ((heat / ceiling * self.bins as f64) as usize).min(self.bins - 1)
    }

    /// List-based FINDPAGES: bins from hottest to coldest; a page is taken if its
    /// probability fits in what is left of Δp; stop at Δp, the limit, or no candidates.
    fn find_from_lists(
        &self,
        snap: &Snapshot<'_>,
        from: TierId,
        delta_p: f64,
        limit_pages: u64,
    ) -> Vec<PageIdx> {
        let mut bins: Vec<Vec<PageIdx>> = vec![Vec::new(); self.bins];
        let hot_only = self.base.colloid_hot_list_only();
        // The ceiling read once (a call per page was a tenth of a run).
        let ceiling = self.base.heat_ceiling().max(1e-9);
        let mut consider = |page: PageIdx| {
            if snap.placement.get(page as usize) != Some(&from) {
                return;
            }
            let b = self.bin_under(self.base.heat(page), ceiling);
            // Cold pages (lowest bin, not hot to the base) are not Colloid's to move: they
            // shift p by nothing. MEMTIS+Colloid scans only the hot lists (§4.2): its
            // default-tier thread would send any cold page straight back.
            let hot = self.base.is_hot(page);
            if hot || (!hot_only && b > 0) {
                bins[b].push(page);
            }
        };
        // Pages without heat that are not hot are never candidates: where the base keeps
        // the set of the others, only those are read.
        match self.base.warm_pages() {
            Some(warm) => warm.iter().for_each(|&p| consider(p)),
            None => (0..snap.placement.len() as PageIdx).for_each(consider),
        }
        let mut left = delta_p;
        let mut out = Vec::new();
        'outer: for bin in bins.iter().rev() {
            for &page in bin {
                if out.len() as u64 >= limit_pages || left <= 0.0 {
                    break 'outer;
                }
                let p = self.base.access_probability(page);
                if p > 0.0 && p <= left {
                    left -= p;
                    out.push(page);
                }
            }
        }
        out
    }

    /// TPP+Colloid FINDPAGES from this quantum's hint faults (§4.3).
    fn find_from_faults(
        &self,
        snap: &Snapshot<'_>,
        from: TierId,
        delta_p: f64,
        limit_pages: u64,
    ) -> Vec<PageIdx> {
        let r = self.meter.rate(from.index()).max(1.0);
        let mut left = delta_p;
        let mut out = Vec::new();
        for e in snap.events {
            if let HeatEvent::HintFault {
                page,
                time_to_fault_ns,
            } = *e
            {
                if snap.placement[page as usize] != from || out.len() as u64 >= limit_pages {
                    continue;
                }
                let p = 1.0 / (time_to_fault_ns.max(1.0) * 1e-9 * r);
                if p <= left {
                    left -= p;
                    out.push(page);
                }
            }
        }
        out
    }
}

impl<B: HeatModel> Policy for Colloid<B> {
    fn name(&self) -> String {
        format!("{}+colloid", self.base.system())
    }
    /// Colloid balances the tiers' loaded latencies: without them it would silently be its
    /// base system.
    fn needs(&self) -> tiermem_core::Needs {
        tiermem_core::Needs {
            telemetry: vec![tiermem_core::TelemetryKind::LoadedLatency],
            ..tiermem_core::Needs::tracking(&self.tracker())
        }
    }
    fn tracker(&self) -> TrackerSpec {
        // TPP+Colloid also takes hint faults on default-tier pages, to find hot pages to
        // demote (§4.3).
        fn with_default_tier(t: TrackerSpec) -> TrackerSpec {
            match t {
                TrackerSpec::HintFault {
                    scan_period_ns,
                    scan_pages,
                    mut tiers,
                    scan_period_min_ns,
                } => {
                    if !tiers.contains(&TierId::DEFAULT) {
                        tiers.insert(0, TierId::DEFAULT);
                    }
                    TrackerSpec::HintFault {
                        scan_period_ns,
                        scan_pages,
                        tiers,
                        scan_period_min_ns,
                    }
                }
                TrackerSpec::Combined(ts) => {
                    TrackerSpec::Combined(ts.into_iter().map(with_default_tier).collect())
                }
                other => other,
            }
        }
        with_default_tier(self.base.tracker())
    }
    fn quantum_ns(&self) -> u64 {
        self.base.quantum_ns()
    }
    fn migration_limit_bytes(&self) -> Option<u64> {
        self.base.migration_limit_bytes()
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        self.base.ingest(snap);
        self.meter.update(snap);
        // The base's capacity moves go after Colloid's: a shared quota must not let
        // proactive demotion (MEMTIS) starve the balancing moves.
        let capacity = self.base.capacity_moves(snap);
        let mut plan = Plan::default();
        // Two tiers per Colloid §3; with more, each adjacent pair (i, i+1) is balanced in
        // turn with its own watermarks (§3.1's recursive argument: the fastest tier against
        // the next, and so on down).
        let pairs = snap.tiers.len().saturating_sub(1);
        if self.marks.len() != pairs {
            self.marks = vec![Watermarks::default(); pairs];
        }
        for i in 0..pairs {
            self.balance_pair(snap, i, &mut plan);
        }
        // Swap victims and chosen pages first, then the base's own capacity moves (skipping
        // pages Colloid already moves).
        for mv in capacity.moves {
            if !plan.moves.iter().any(|m| m.range == mv.range) {
                plan.moves.push(mv);
            }
        }
        crate::cascade::cascade(plan, snap, &self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::{moved_to, World};
    use crate::heat::{FAST, SLOW};
    use crate::hemem::{Hemem, HememConfig};
    use crate::memtis::{Memtis, MemtisConfig};

    /// The default tier idles at its unloaded latency (70 ns) and serves 9 % of the reads;
    /// the alternate tier is slower (135 ns): Colloid promotes.
    fn promote_telemetry(w: &mut World) {
        let (r_d, r_a) = (1e8, 1e9);
        w.tiers[0].arrival_rate_per_s = r_d;
        w.tiers[0].occupancy = r_d * 70e-9;
        w.tiers[1].arrival_rate_per_s = r_a;
        w.tiers[1].occupancy = r_a * 135e-9;
    }

    #[test]
    fn only_hot_candidates_displace_pages() {
        // Default tier: 10 never-sampled pages, full. Alternate tier: page 15 warm (3 reads,
        // bin 1 of HeMem's 0..10 frequency space, not hot), page 16 hot (6 reads), and 200
        // pages read once (they make every page's probability small enough for Δp).
        let mut w = World::new(300, 10, 10, 300);
        promote_telemetry(&mut w);
        w.reads(15, 3);
        w.reads(16, 6);
        for p in 100..300 {
            w.reads(p, 1);
        }
        let mut c = Colloid::new(Hemem::new(HememConfig::default()), ColloidParams::default());
        let plan = c.decide(&w.snap());
        assert_eq!(c.last.unwrap().mode, Mode::Promote);
        assert_eq!(
            moved_to(&plan, FAST),
            vec![16],
            "the warm page may not displace a page"
        );
        assert_eq!(
            moved_to(&plan, SLOW).len(),
            1,
            "one victim for the hot page"
        );
        // With free room the warm page is promoted too: it shifts p without displacing.
        let mut w2 = World::new(300, 10, 12, 300);
        promote_telemetry(&mut w2);
        w2.events = w.events.clone();
        let mut c = Colloid::new(Hemem::new(HememConfig::default()), ColloidParams::default());
        let plan = c.decide(&w2.snap());
        assert_eq!(moved_to(&plan, FAST), vec![16, 15], "hottest bin first");
        assert!(moved_to(&plan, SLOW).is_empty());
    }

    #[test]
    fn memtis_colloid_promotes_into_the_room_memtis_makes() {
        // 100-page default tier holding 90 never-sampled pages; 60 hot pages wait in the
        // alternate tier. MEMTIS keeps 3 pages (3 %) free: room for 7 promotions now; its
        // default-tier thread demotes 90 + 60 + 3 − 100 = 53 cold pages for the rest.
        let mut w = World::new(300, 90, 100, 300);
        promote_telemetry(&mut w);
        for p in 100..160 {
            w.reads(p, 4);
        }
        let cfg = MemtisConfig {
            adaptation_period_samples: 1_000_000,
            ..MemtisConfig::default()
        };
        let mut c = Colloid::new(Memtis::new(cfg), ColloidParams::default());
        let plan = c.decide(&w.snap());
        let up = moved_to(&plan, FAST);
        assert_eq!(up.len(), 7, "{up:?}");
        assert!(up.iter().all(|p| (100..160).contains(p)));
        let down = moved_to(&plan, SLOW);
        assert_eq!(down.len(), 53);
        assert!(down.iter().all(|&p| p < 90), "only cold pages leave");
        w.apply(&plan);
        // Next quantum the freed room takes more of the hot pages.
        promote_telemetry(&mut w);
        let plan = c.decide(&w.snap());
        assert!(moved_to(&plan, FAST).len() > 7);
    }
}
