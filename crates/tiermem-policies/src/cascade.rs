//! Demotion down N tiers. The base systems are two-tier designs: they demote to the
//! alternate tier (tier 1) and promote from any lower tier. On a machine with more tiers
//! (DRAM, CXL, a far node) tier 1 fills, every demotion into it is refused, so no promotion
//! finds room either and nothing moves (measured before this: HeMem on DRAM + CXL + far,
//! 2.75 M pages tried, 0 applied). Linux's answer, which TPP and MEMTIS inherit on a
//! multi-node machine, is the demotion path: a node under pressure demotes its coldest
//! pages to the next node down (`node_demotion[]`, mm/memory-tiers.c), and so on.
//!
//! [`cascade`] does that for any plan: walking the lower tiers in order of unloaded latency,
//! when the plan brings more pages into a tier than it has free, the tier's coldest pages
//! (in the order the system itself would evict them: `HeatModel::coldest_pages`, HeMem's
//! cold list, TPP's inactive list, MEMTIS's uncounted pages then counts) move one tier
//! further down first, so the plan's moves find the room. The cascade moves go before the
//! plan's (the backend applies in order). Its cost follows the plan and the victims, not
//! the tier's pages.

use crate::heat::HeatModel;
use std::collections::HashSet;
use tiermem_core::{PageIdx, Plan, Snapshot, TierId};

/// `plan` with the demotions it needs down the lower tiers put in front of it.
pub fn cascade<H: HeatModel + ?Sized>(plan: Plan, snap: &Snapshot<'_>, heat: &H) -> Plan {
    let n = snap.tiers.len();
    if n < 3 || snap.page_bytes == 0 || plan.moves.is_empty() {
        return plan;
    }
    // The lower tiers (1..n) by unloaded latency: each demotes into the next.
    let mut order: Vec<usize> = (1..n).collect();
    order.sort_by(|&a, &b| {
        let la = snap
            .tier_specs
            .get(a)
            .map_or(0.0, |s| s.unloaded_latency_ns);
        let lb = snap
            .tier_specs
            .get(b)
            .map_or(0.0, |s| s.unloaded_latency_ns);
        la.total_cmp(&lb).then(a.cmp(&b))
    });
    // The most pages each tier holds above its start at any point of the plan (the backend
    // applies moves in order, so a swap into a full tier needs room for its first half even
    // though it gains nothing in the end), and the pages the plan already moves.
    let mut gain = vec![0i64; n];
    let mut peak = vec![0i64; n];
    // The plan's pages, and how many of them each tier holds now.
    let mut moving = HashSet::new();
    let mut leaving = vec![0usize; n];
    for m in &plan.moves {
        for p in m.range.pages() {
            let Some(&from) = snap.placement.get(p as usize) else {
                continue;
            };
            if from == m.to || from.index() >= n || m.to.index() >= n {
                continue;
            }
            gain[m.to.index()] += 1;
            gain[from.index()] -= 1;
            peak[m.to.index()] = peak[m.to.index()].max(gain[m.to.index()]);
            if moving.insert(p) {
                leaving[from.index()] += 1;
            }
        }
    }
    // The cascade's moves go first: they lower the tier they leave and raise the one they
    // enter for the whole plan, so they shift its peak by their count.
    let mut gain = peak;
    let mut front = Plan::default();
    for w in order.windows(2) {
        let (tier, below) = (w[0], w[1]);
        let free = (snap.free_bytes(TierId(tier as u8)) / snap.page_bytes) as i64;
        let deficit = gain[tier] - free;
        if deficit <= 0 {
            continue;
        }
        // The plan's own pages in the tier are not victims: ask for that many more.
        let victims: Vec<PageIdx> = heat
            .coldest_pages(snap, TierId(tier as u8), deficit as usize + leaving[tier])
            .into_iter()
            .filter(|p| !moving.contains(p))
            .take(deficit as usize)
            .collect();
        for &p in &victims {
            front.push(p, TierId(below as u8));
            moving.insert(p);
        }
        gain[tier] -= victims.len() as i64;
        gain[below] += victims.len() as i64;
    }
    if front.moves.is_empty() {
        return plan;
    }
    front.moves.extend(plan.moves);
    front.controls = plan.controls;
    front
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::World;
    use crate::heat::{FAST, SLOW};
    use tiermem_core::TrackerSpec;

    /// Heat given per page.
    struct Fixed(Vec<f64>);
    impl HeatModel for Fixed {
        fn system(&self) -> &'static str {
            "fixed"
        }
        fn tracker(&self) -> TrackerSpec {
            TrackerSpec::None
        }
        fn quantum_ns(&self) -> u64 {
            1
        }
        fn migration_limit_bytes(&self) -> Option<u64> {
            None
        }
        fn ingest(&mut self, _: &Snapshot<'_>) {}
        fn heat(&self, p: PageIdx) -> f64 {
            self.0[p as usize]
        }
        fn total_heat(&self) -> f64 {
            self.0.iter().sum()
        }
        fn heat_ceiling(&self) -> f64 {
            1.0
        }
        fn is_hot(&self, p: PageIdx) -> bool {
            self.0[p as usize] > 0.5
        }
        /// By heat, then page index.
        fn coldest_pages(&self, snap: &Snapshot<'_>, tier: TierId, n: usize) -> Vec<PageIdx> {
            let mut v: Vec<PageIdx> = (0..snap.placement.len() as PageIdx)
                .filter(|&p| snap.placement[p as usize] == tier)
                .collect();
            v.sort_by(|&a, &b| self.heat(a).total_cmp(&self.heat(b)).then(a.cmp(&b)));
            v.truncate(n);
            v
        }
    }

    /// 12 pages: 0..4 in DRAM (cap 4), 4..8 in CXL (cap 4), 8..12 in a far tier (cap 8).
    fn three_tiers() -> World {
        let mut w = World::new(12, 4, 4, 4);
        w.add_tier("far", 8, 250.0);
        for p in 8..12 {
            w.placement[p] = TierId(2);
        }
        w.recount();
        w
    }

    /// Pages 4..8 in CXL: 6 is the coldest, then 5, 4, 7.
    fn middle_tier_heat() -> Fixed {
        Fixed(vec![
            0.1, 0.2, 0.9, 0.9, 0.7, 0.3, 0.05, 0.8, 0.0, 0.0, 0.0, 0.0,
        ])
    }

    /// A plan's moves as (first page, tier).
    fn moves_of(plan: &Plan) -> Vec<(u32, u8)> {
        plan.moves.iter().map(|m| (m.range.start, m.to.0)).collect()
    }

    #[test]
    fn a_full_middle_tier_demotes_its_coldest_pages_down_first() {
        let mut w = three_tiers();
        let heat = middle_tier_heat();
        let mut plan = Plan::default();
        plan.push(0, SLOW);
        plan.push(1, SLOW);
        let out = cascade(plan.clone(), &w.snap(), &heat);
        assert_eq!(moves_of(&out), [(6, 2), (5, 2), (0, 1), (1, 1)]);
        // Applied in order, every move lands (before: both demotions refused).
        assert_eq!(w.apply(&out), 4);
        assert_eq!(w.apply(&plan), 0, "the uncascaded plan finds no room");
    }

    /// Colloid's swap between two full tiers (a DRAM victim down, a hot CXL page up) gains
    /// the middle tier nothing in the end, but its first half needs room: before, both
    /// halves were refused and HeMem+Colloid moved 24 pages in a 3-tier GUPS run.
    #[test]
    fn a_swap_between_full_tiers_gets_room_for_its_first_half() {
        let mut w = three_tiers();
        let heat = middle_tier_heat();
        let mut plan = Plan::default();
        plan.push(0, SLOW);
        plan.push(7, FAST);
        assert_eq!(
            three_tiers().apply(&plan),
            0,
            "the uncascaded swap finds no room"
        );
        let out = cascade(plan.clone(), &w.snap(), &heat);
        assert_eq!(moves_of(&out), [(6, 2), (0, 1), (7, 0)]);
        assert_eq!(w.apply(&out), 3);
    }

    /// The middle tier's coldest page is one the plan promotes: the victims are the next
    /// coldest, and the promotion stays in the plan.
    #[test]
    fn pages_the_plan_moves_are_not_victims() {
        let mut w = three_tiers();
        let heat = middle_tier_heat();
        let mut plan = Plan::default();
        plan.push(0, SLOW);
        plan.push(1, SLOW);
        plan.push(6, FAST);
        let out = cascade(plan, &w.snap(), &heat);
        assert_eq!(moves_of(&out), [(5, 2), (4, 2), (0, 1), (1, 1), (6, 0)]);
        assert_eq!(w.apply(&out), 5);
    }

    #[test]
    fn nothing_is_added_where_the_room_exists_or_below_the_last_tier() {
        let w = three_tiers();
        let heat = Fixed(vec![0.0; 12]);
        // A promotion into DRAM (full) is the policy's own business: no cascade for tier 0.
        let mut plan = Plan::default();
        plan.push(8, FAST);
        assert_eq!(cascade(plan.clone(), &w.snap(), &heat), plan);
        // Into the far tier, which has room: nothing added.
        let mut plan = Plan::default();
        plan.push(4, TierId(2));
        assert_eq!(cascade(plan.clone(), &w.snap(), &heat), plan);
        // Two tiers: unchanged.
        let two = World::new(8, 4, 4, 4);
        let mut plan = Plan::default();
        plan.push(0, SLOW);
        assert_eq!(cascade(plan.clone(), &two.snap(), &heat), plan);
    }
}
