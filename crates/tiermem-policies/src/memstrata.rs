//! Memstrata (Zhong et al., OSDI'24 §4): the dynamic page allocator of dedicated local DRAM
//! across VMs (§4.3, Listing 1). Pure: the allocator sees per-VM metrics and returns
//! exchanges; the backend carries them out.
//!
//! The slowdown estimator it consults is an [`OutlierEstimator`]. The trained one (a random
//! forest shipped as ONNX, written by `tiermem memstrata train`) is
//! `tiermem_estimator::Estimator`, in a crate of its own: the ONNX runtime it needs stays
//! out of this crate, which the Linux runtime and the preload shim link.

use std::collections::BTreeMap;
use tiermem_core::{
    Controller, Controls, Needs, Result, Snapshot, TelemetryKind, TenantId, TierId, TierLimit,
};

/// Every `interval_s` the allocator measures, predicts and exchanges (§4.3: 10 s).
pub const DEFAULT_INTERVAL_S: f64 = 10.0;
/// EWMA constant of the metrics (§4.3: α = 0.2).
pub const DEFAULT_EWMA_ALPHA: f64 = 0.2;
/// Largest share of a VM's pages it moves in one round (§4.3: stepRatio 10 %).
pub const DEFAULT_STEP_RATIO: f64 = 0.10;
/// The command that writes the shipped model.
pub const RETRAIN: &str = "tiermem memstrata train";

/// The counters the estimator reads, per VM (§4.2): the engine's per-tenant core counters.
pub use tiermem_core::CoreCounters as Features;

/// What the allocator asks of a slowdown estimator.
pub trait OutlierEstimator: Send {
    /// Estimated local-miss ratio of a VM.
    fn miss_ratio(&self, f: &Features) -> f64;
    /// Whether the VM is predicted to slow down by more than 5 %.
    fn is_outlier(&self, f: &Features) -> Result<bool>;
}

/// One VM as the allocator ranks it.
#[derive(Clone, Debug, PartialEq)]
pub struct VmView {
    /// All its pages, its dedicated ones, and its local misses per second (estimated
    /// miss ratio × memory requests).
    pub pages: u64,
    pub dedicated: u64,
    pub outlier: bool,
    pub misses_per_s: f64,
}

impl VmView {
    fn tiered(&self) -> u64 {
        self.pages - self.dedicated
    }
    /// Misses per hardware-tiered page (§4.3's `avgMissCount`).
    pub fn misses_per_tiered_page(&self) -> f64 {
        if self.tiered() == 0 {
            0.0
        } else {
            self.misses_per_s / self.tiered() as f64
        }
    }
}

/// An exchange: `pages` of `donor`'s dedicated pages for as many of `borrower`'s
/// hardware-tiered pages (whole conflicting pairs, so `pages` is even).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub donor: usize,
    pub borrower: usize,
    pub pages: u64,
}

/// One round of Listing 1: rank the VMs (non-outliers first, then by misses per tiered
/// page), let only outliers borrow, from the bottom of the ranking up, each VM moving at
/// most `step_ratio` of its pages in the round (borrowing or donating). Exchanges are whole
/// pairs, and limited by what the donor has dedicated and the borrower has tiered.
pub fn plan_round(vms: &[VmView], step_ratio: f64) -> Vec<Exchange> {
    let mut order: Vec<usize> = (0..vms.len()).collect();
    order.sort_by(|&a, &b| {
        vms[a].outlier.cmp(&vms[b].outlier).then(
            vms[a]
                .misses_per_tiered_page()
                .total_cmp(&vms[b].misses_per_tiered_page()),
        )
    });
    let step = |v: &VmView| ((v.pages as f64 * step_ratio).floor() as u64) & !1;
    let mut moved = vec![0u64; vms.len()];
    let mut given = vec![0u64; vms.len()];
    let mut taken = vec![0u64; vms.len()];
    let mut out = Vec::new();
    let mut donor = 0;
    for borrower in (1..order.len()).rev() {
        let b = order[borrower];
        if !vms[b].outlier {
            break;
        }
        let mut to_borrow = step(&vms[b])
            .saturating_sub(moved[b])
            .min(vms[b].tiered().saturating_sub(taken[b]) & !1);
        while donor < borrower && to_borrow > 0 {
            let d = order[donor];
            let to_donate = step(&vms[d])
                .saturating_sub(moved[d])
                .min(vms[d].dedicated.saturating_sub(given[d]) & !1);
            let n = to_borrow.min(to_donate);
            if n > 0 {
                out.push(Exchange {
                    donor: d,
                    borrower: b,
                    pages: n,
                });
                to_borrow -= n;
                moved[d] += n;
                moved[b] += n;
                given[d] += n;
                taken[b] += n;
            }
            if n == to_donate {
                donor += 1;
            }
        }
    }
    out
}

/// The allocator's knobs (§4.3 defaults).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocatorConfig {
    /// Seconds between measurements (§4.3 timeInterval: 10 s).
    pub interval_s: f64,
    /// EWMA constant of the metrics (α 0.2).
    pub ewma_alpha: f64,
    /// Largest share of a VM's pages it moves in one round (stepRatio 10 %).
    pub step_ratio: f64,
    /// The dedicated (never hardware-tiered) local node whose per-VM shares it decides.
    pub dedicated_tier: TierId,
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig {
            interval_s: DEFAULT_INTERVAL_S,
            ewma_alpha: DEFAULT_EWMA_ALPHA,
            step_ratio: DEFAULT_STEP_RATIO,
            dedicated_tier: TierId(0),
        }
    }
}

/// One round's exchanges and what each tenant moved in it (pages, given or taken).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Round {
    pub at_ns: u64,
    pub exchanges: Vec<Exchange>,
    /// Per tenant, in the snapshot's order.
    pub moved: Vec<u64>,
}

/// Memstrata's dynamic page allocator (§4.3, Listing 1) as an engine [`Controller`]: every
/// interval it EWMA-smooths each tenant's core counters; every other interval (a round,
/// then one full interval of measurement) it predicts outliers with the estimator, ranks
/// the tenants and plans exchanges ([`plan_round`]), and sets each tenant's limit on the
/// dedicated tier to what it holds after them. The backend carries the limits out by
/// exchanging a donor's dedicated pages for the borrower's hardware-tiered pairs. A tenant
/// seen for the first time below the system-wide dedicated share (capacity over all
/// tenants' pages) is filled to it from the free capacity, then from the tenants furthest
/// above it.
pub struct MemstrataAllocator {
    pub cfg: AllocatorConfig,
    estimator: Box<dyn OutlierEstimator>,
    /// Per tenant id: smoothed counters and the dedicated pages it is given.
    smoothed: BTreeMap<TenantId, Features>,
    dedicated: BTreeMap<TenantId, u64>,
    next_ns: u64,
    intervals: u64,
    pub rounds: Vec<Round>,
    /// Predictions the estimator failed to make (the tenant then counts as no outlier).
    pub inference_failures: u64,
}

impl MemstrataAllocator {
    pub fn new(cfg: AllocatorConfig, estimator: Box<dyn OutlierEstimator>) -> Self {
        MemstrataAllocator {
            cfg,
            estimator,
            smoothed: BTreeMap::new(),
            dedicated: BTreeMap::new(),
            next_ns: 0,
            intervals: 0,
            rounds: Vec::new(),
            inference_failures: 0,
        }
    }

    fn controls(&self, page_bytes: u64) -> Controls {
        Controls {
            limits: self
                .dedicated
                .iter()
                .map(|(&tenant, &pages)| TierLimit {
                    tenant,
                    tier: self.cfg.dedicated_tier,
                    bytes: Some(pages * page_bytes),
                })
                .collect(),
            cpu_shares: Vec::new(),
        }
    }

    /// Tenants not seen before (§4.3 "Launching and terminating VMs"): a new VM gets the
    /// same share of dedicated pages as the whole system (the dedicated node's capacity over
    /// all tenants' pages, in whole pairs), taken from free capacity first, then from the
    /// running VMs, each contributing the same number of pages (or, when it arrived with
    /// more, given to them in equal parts). The tenants of the first snapshot keep what they
    /// were started with. Departed tenants are forgotten.
    fn admit(&mut self, snap: &Snapshot<'_>) {
        self.dedicated
            .retain(|id, _| snap.tenants.iter().any(|t| t.id == *id));
        let pb = snap.page_bytes.max(1);
        let d = self.cfg.dedicated_tier.index();
        let pages = |i: usize| snap.tenant_telemetry[i].footprint_bytes / pb;
        let tier = self.cfg.dedicated_tier;
        let held = |i: usize| held_pages(snap, tier, i).unwrap_or(0);
        let first = self.dedicated.is_empty();
        let capacity = snap.tier_specs.get(d).map_or(0, |t| t.capacity_bytes / pb);
        let total: u64 = (0..snap.tenants.len()).map(pages).sum();
        let share = if total == 0 {
            0.0
        } else {
            (capacity as f64 / total as f64).min(1.0)
        };
        for (i, t) in snap.tenants.iter().enumerate() {
            if self.dedicated.contains_key(&t.id) {
                continue;
            }
            let running: Vec<TenantId> = self.dedicated.keys().copied().collect();
            self.dedicated.insert(t.id, held(i));
            if first {
                continue;
            }
            let target = ((pages(i) as f64 * share).floor() as u64) & !1;
            let given: u64 = self.dedicated.values().sum();
            let free = capacity.saturating_sub(given) & !1;
            let from_free = target.saturating_sub(held(i)).min(free);
            let mine = held(i) + from_free;
            // Pairs the running VMs can give (their dedicated pages) or take (their
            // hardware-tiered ones), one pair each in turn: equal contributions.
            let mut avail: Vec<(TenantId, u64)> = running
                .iter()
                .map(|id| {
                    let ded = self.dedicated[id];
                    let j = snap
                        .tenants
                        .iter()
                        .position(|x| x.id == *id)
                        .expect("known");
                    let room = if target > mine { ded } else { pages(j) - ded };
                    (*id, room / 2)
                })
                .collect();
            let mut pairs = target.abs_diff(mine) / 2;
            let mut moved = vec![0u64; avail.len()];
            while pairs > 0 && avail.iter().any(|a| a.1 > 0) {
                for (k, a) in avail.iter_mut().enumerate() {
                    if pairs > 0 && a.1 > 0 {
                        a.1 -= 1;
                        moved[k] += 2;
                        pairs -= 1;
                    }
                }
            }
            let mut now = mine;
            for ((id, _), m) in avail.iter().zip(moved) {
                let x = self.dedicated.get_mut(id).expect("known");
                if target > mine {
                    *x -= m;
                    now += m;
                } else {
                    *x += m;
                    now -= m;
                }
            }
            self.dedicated.insert(t.id, now);
        }
    }

    fn round(&mut self, snap: &Snapshot<'_>) {
        let pb = snap.page_bytes.max(1);
        let mut views = Vec::with_capacity(snap.tenants.len());
        for (i, t) in snap.tenants.iter().enumerate() {
            let tel = &snap.tenant_telemetry[i];
            let f = self.smoothed.get(&t.id).copied().unwrap_or_default();
            let outlier = match self.estimator.is_outlier(&f) {
                Ok(o) => o,
                Err(_) => {
                    self.inference_failures += 1;
                    false
                }
            };
            views.push(VmView {
                pages: tel.footprint_bytes / pb,
                dedicated: self.dedicated.get(&t.id).copied().unwrap_or(0),
                outlier,
                // Local misses: the estimated miss ratio of its memory requests (lines).
                misses_per_s: self.estimator.miss_ratio(&f) * tel.bandwidth_bytes_per_s
                    / tiermem_core::CACHELINE_BYTES as f64,
            });
        }
        let exchanges = plan_round(&views, self.cfg.step_ratio);
        let mut moved = vec![0u64; views.len()];
        for x in &exchanges {
            *self
                .dedicated
                .get_mut(&snap.tenants[x.donor].id)
                .expect("known") -= x.pages;
            *self
                .dedicated
                .get_mut(&snap.tenants[x.borrower].id)
                .expect("known") += x.pages;
            moved[x.donor] += x.pages;
            moved[x.borrower] += x.pages;
        }
        self.rounds.push(Round {
            at_ns: snap.now_ns,
            exchanges,
            moved,
        });
    }
}

/// Pages tenant `i` of the snapshot holds in `tier`, where the snapshot says.
fn held_pages(snap: &Snapshot<'_>, tier: TierId, i: usize) -> Option<u64> {
    snap.tenant_telemetry[i]
        .used_bytes
        .get(tier.index())
        .map(|b| b / snap.page_bytes.max(1))
}

impl Controller for MemstrataAllocator {
    fn name(&self) -> String {
        "memstrata".into()
    }
    fn needs(&self) -> Needs {
        Needs {
            telemetry: vec![TelemetryKind::CoreCounters],
            tenants: 1,
            tier_limits: true,
            ..Needs::default()
        }
    }
    fn control(&mut self, snap: &Snapshot<'_>) -> Controls {
        if snap.tenant_telemetry.len() != snap.tenants.len() {
            return self.controls(snap.page_bytes);
        }
        let measure = snap.now_ns >= self.next_ns;
        if measure {
            // What each known tenant holds now is the truth (a limit the backend could not
            // carry out is not assumed done).
            for (i, t) in snap.tenants.iter().enumerate() {
                if let Some(held) = held_pages(snap, self.cfg.dedicated_tier, i) {
                    self.dedicated.entry(t.id).and_modify(|x| *x = held);
                }
            }
        }
        self.admit(snap);
        if !measure {
            return self.controls(snap.page_bytes);
        }
        self.next_ns = snap.now_ns + (self.cfg.interval_s * 1e9) as u64;
        for (i, t) in snap.tenants.iter().enumerate() {
            let Some(c) = snap.tenant_telemetry[i].core_counters else {
                continue;
            };
            self.smoothed
                .entry(t.id)
                .and_modify(|s| s.ewma(&c, self.cfg.ewma_alpha))
                .or_insert(c);
        }
        // A round, then one full interval of measurement before the next (§4.3).
        if self.intervals.is_multiple_of(2) {
            self.round(snap);
        }
        self.intervals += 1;
        self.controls(snap.page_bytes)
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("rounds", self.rounds.len() as u64),
            (
                "exchanges",
                self.rounds.iter().map(|r| r.exchanges.len() as u64).sum(),
            ),
            (
                "pages_exchanged",
                self.rounds
                    .iter()
                    .flat_map(|r| &r.exchanges)
                    .map(|x| x.pages)
                    .sum(),
            ),
            ("inference_failures", self.inference_failures),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(pages: u64, dedicated: u64, outlier: bool, misses: f64) -> VmView {
        VmView {
            pages,
            dedicated,
            outlier,
            misses_per_s: misses,
        }
    }

    #[test]
    fn only_outliers_borrow_and_steps_cap_every_vm() {
        let vms = [
            vm(1000, 330, false, 10.0),
            vm(2000, 660, false, 1.0),
            vm(1000, 330, true, 500.0),
            vm(500, 160, false, 50.0),
        ];
        let x = plan_round(&vms, 0.1);
        assert!(!x.is_empty());
        let mut moved = [0u64; 4];
        for e in &x {
            assert_eq!(e.borrower, 2, "{x:?}");
            assert_eq!(e.pages % 2, 0);
            moved[e.donor] += e.pages;
            moved[e.borrower] += e.pages;
        }
        for (i, v) in vms.iter().enumerate() {
            assert!(moved[i] <= (v.pages as f64 * 0.1) as u64, "{i}: {moved:?}");
        }
        // The outlier takes its full step (100) from the lowest-ranked donor first: VM 1
        // (fewest misses per tiered page) can give 200.
        assert_eq!(
            x,
            vec![Exchange {
                donor: 1,
                borrower: 2,
                pages: 100
            }]
        );
    }

    #[test]
    fn no_outlier_means_no_exchange_and_donors_run_out() {
        let vms = [vm(1000, 330, false, 1.0), vm(1000, 330, false, 2.0)];
        assert!(plan_round(&vms, 0.1).is_empty());
        // A donor with little dedicated memory left gives what it has; the next donor the rest.
        let vms = [
            vm(1000, 20, false, 1.0),
            vm(1000, 330, false, 2.0),
            vm(1000, 0, true, 9.0),
        ];
        let x = plan_round(&vms, 0.1);
        assert_eq!(
            x,
            vec![
                Exchange {
                    donor: 0,
                    borrower: 2,
                    pages: 20
                },
                Exchange {
                    donor: 1,
                    borrower: 2,
                    pages: 80
                }
            ]
        );
    }

    /// Outlier when its L3 MPKI is above 10; miss ratio 0.5.
    struct ByMpki;
    impl OutlierEstimator for ByMpki {
        fn miss_ratio(&self, _f: &Features) -> f64 {
            0.5
        }
        fn is_outlier(&self, f: &Features) -> Result<bool> {
            Ok(f.l3_mpki > 10.0)
        }
    }

    const PAGE: u64 = 2 << 20;

    /// A snapshot of tenants given as (pages, dedicated pages, L3 MPKI) on a dedicated
    /// tier of `capacity` pages, at `t_s`.
    fn control(
        a: &mut MemstrataAllocator,
        t_s: f64,
        vms: &[(u64, u64, f64)],
        capacity: u64,
    ) -> Controls {
        use tiermem_core::{PageRange, TenantSpec, TenantTelemetry, TierKind, TierSpec};
        let mut start = 0;
        let tenants: Vec<TenantSpec> = vms
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let t = TenantSpec {
                    id: TenantId(i as u16),
                    name: format!("vm{i}"),
                    pages: PageRange {
                        start,
                        len: v.0 as u32,
                    },
                };
                start += v.0 as u32;
                t
            })
            .collect();
        let tel: Vec<TenantTelemetry> = vms
            .iter()
            .map(|&(pages, ded, mpki)| TenantTelemetry {
                bandwidth_bytes_per_s: 64e9,
                used_bytes: vec![ded * PAGE, (pages - ded) * PAGE],
                footprint_bytes: pages * PAGE,
                core_counters: Some(Features {
                    l3_mpki: mpki,
                    ..Features::default()
                }),
                ..Default::default()
            })
            .collect();
        let specs = [TierSpec {
            name: "dedicated".into(),
            kind: TierKind::Dram,
            capacity_bytes: capacity * PAGE,
            unloaded_latency_ns: 100.0,
            peak_bandwidth_bytes_per_s: 1e11,
            cost_per_gb: 1.0,
        }];
        let snap = Snapshot {
            now_ns: (t_s * 1e9) as u64,
            quantum_ns: 10_000_000_000,
            page_bytes: PAGE,
            tier_specs: &specs,
            tiers: &[],
            placement: &[],
            events: &[],
            tenants: &tenants,
            controls: &tiermem_core::NO_CONTROLS,
            tenant_telemetry: &tel,
            access_bits: None,
            moved: None,
        };
        a.control(&snap)
    }

    fn pages(c: &Controls, t: u16) -> u64 {
        c.limit(TenantId(t), TierId(0)).unwrap() / PAGE
    }

    #[test]
    fn the_controller_moves_dedicated_pages_to_the_outlier_in_capped_rounds() {
        let mut a = MemstrataAllocator::new(AllocatorConfig::default(), Box::new(ByMpki));
        assert_eq!(a.needs().telemetry, vec![TelemetryKind::CoreCounters]);
        // Two quiet VMs and an outlier, a third of each dedicated.
        let mut vms = [(600, 200, 1.0), (900, 300, 2.0), (600, 200, 50.0)];
        let cap = 700;
        let mut held = Vec::new();
        for k in 0..6 {
            let c = control(&mut a, 10.0 * (k + 1) as f64, &vms, cap);
            let now: Vec<u64> = (0..3).map(|t| pages(&c, t)).collect();
            assert_eq!(now.iter().sum::<u64>(), 700, "round {k}: {now:?}");
            // The backend carries the limits out.
            for (v, &p) in vms.iter_mut().zip(&now) {
                v.1 = p;
            }
            held.push(now);
        }
        // Rounds every other interval (0, 2, 4); the outlier takes 10 % of its pages each
        // time from the VM with the fewest misses per tiered page (VM 1: most tiered pages),
        // which gives at most 10 % of its own.
        assert_eq!(a.rounds.len(), 3);
        assert_eq!(held[0], vec![200, 240, 260]);
        assert_eq!(held[1], held[0], "a measurement interval moves nothing");
        assert_eq!(held[2], vec![200, 180, 320]);
        assert_eq!(held[4], vec![200, 120, 380]);
        for r in &a.rounds {
            for (m, v) in r.moved.iter().zip(&vms) {
                assert!(*m <= v.0 / 10, "{r:?}");
            }
        }
        // A call inside an interval repeats the limits in force.
        let c = control(&mut a, 65.0, &vms, cap);
        assert_eq!(pages(&c, 2), 380);
        let counters: BTreeMap<_, _> = a.counters().into_iter().collect();
        assert_eq!(counters["rounds"], 3);
        assert_eq!(counters["pages_exchanged"], 180);
        assert_eq!(counters["inference_failures"], 0);
    }

    #[test]
    fn a_new_tenant_gets_the_system_wide_share_in_equal_parts_from_the_others() {
        let mut a = MemstrataAllocator::new(AllocatorConfig::default(), Box::new(ByMpki));
        // The VMs of the first snapshot keep what they started with (500 of 3000 pages).
        let first = [(1000, 300, 1.0), (2000, 200, 1.0)];
        let c = control(&mut a, 10.0, &first, 500);
        assert_eq!((pages(&c, 0), pages(&c, 1)), (300, 200));
        // A third arrives with none: the share is now 500 of 4000, 12.5 %, so it gets
        // 125 → 124 (whole pairs), 62 from each running VM.
        let three = [(1000, 300, 1.0), (2000, 200, 1.0), (1000, 0, 1.0)];
        let c = control(&mut a, 15.0, &three, 500);
        assert_eq!((pages(&c, 0), pages(&c, 1), pages(&c, 2)), (238, 138, 124));
        // One arriving with more than the share gives the surplus to the others equally;
        // free capacity comes first when there is some.
        let mut a = MemstrataAllocator::new(AllocatorConfig::default(), Box::new(ByMpki));
        control(&mut a, 10.0, &[(1000, 100, 1.0), (1000, 100, 1.0)], 400);
        let c = control(
            &mut a,
            15.0,
            &[(1000, 100, 1.0), (1000, 100, 1.0), (2000, 200, 1.0)],
            400,
        );
        // Share 400 / 4000 = 10 %: it keeps 200, free is 0 → no change.
        assert_eq!(pages(&c, 2), 200);
        let c = control(
            &mut a,
            16.0,
            &[
                (1000, 100, 1.0),
                (1000, 100, 1.0),
                (2000, 200, 1.0),
                (1000, 100, 1.0),
            ],
            500,
        );
        // Share 500 / 5000 = 10 %: the fourth keeps 100 of its 100; none is free.
        assert_eq!(pages(&c, 3), 100);
        let mut a = MemstrataAllocator::new(AllocatorConfig::default(), Box::new(ByMpki));
        control(&mut a, 10.0, &[(1000, 100, 1.0)], 600);
        let c = control(&mut a, 15.0, &[(1000, 100, 1.0), (1000, 400, 1.0)], 600);
        // Share 600 / 2000 = 30 %: the newcomer arrived with 400, 300 is its share, so it
        // gives 100 to the running VM; 100 free pages stay free.
        assert_eq!((pages(&c, 0), pages(&c, 1)), (200, 300));
        let mut a = MemstrataAllocator::new(AllocatorConfig::default(), Box::new(ByMpki));
        control(&mut a, 10.0, &[(1000, 100, 1.0)], 600);
        let c = control(&mut a, 15.0, &[(1000, 100, 1.0), (1000, 0, 1.0)], 600);
        // Free capacity (500) first: the newcomer's 300 all come from it.
        assert_eq!((pages(&c, 0), pages(&c, 1)), (100, 300));
    }
}
