//! Fault-around: how many neighbouring pages a tier fault brings back with the faulting
//! page (4 KiB, 64 KiB or 2 MiB, aligned), fixed or chosen at run time from spatial
//! locality as in the ICS'18 granularity-aware migration paper (§4, "move-in").
//!
//! The paper scans the access bits of 4 096 slow-memory pages and counts 2 MiB regions
//! with more than 480 accessed pages and 64 KiB regions with more than 10: more than 3
//! such 2 MiB regions -> migrate 2 MiB, else more than 3 such 64 KiB regions -> 64 KiB,
//! else 4 KiB. On the runtime an access to a page in a compressed tier *is* a fault, so
//! the accessed slow pages are exactly the pages that fault: the dynamic mode serves a
//! **probe** of 4 096 tier faults at 4 KiB (each names one accessed slow page), applies
//! the paper's rule to them (counting only faults close in time to another fault on the
//! same region, against the region's slow pages: `choose_unit`), and serves the faults of
//! the following **window** at the chosen unit. A probe ends early once 2 MiB is
//! certain. Windows are counted in pages brought back (16x the probe, doubling while the
//! choice stays the same, up to 128x), so the probe's cost shrinks for a program whose
//! locality does not change, and a change of phase is seen within one window. A choice of
//! 4 KiB has no window: its faults are probe faults already, so the next probe starts at
//! once and a short sparse phase does not hold 4 KiB over the dense phase after it.
//!
//! ```text
//!   probe (<= 4096 faults at 4 KiB) -> choose -> window (>= 65536 pages at the unit) -> probe ...
//!                                           \-> 4 KiB: probe again
//! ```
//!
//! Fault-around changes how many faults a program pays, never what it reads: each page
//! brought back is decompressed from its own tier exactly as a single fault would.

use crate::sys::PAGE;
use serde::{Deserialize, Serialize};
use tiermem_policies::granularity::{
    self as ics18, choose_move_in, Density, RegionCounts, RegionTally, Thresholds,
};

/// Pages of a 64 KiB and a 2 MiB unit.
pub const PAGES_64K: usize = 16;
pub const PAGES_2M: usize = 512;
/// Faults in one probe: the paper's move-in scan of 4 096 slow-memory pages (§4).
pub const PROBE_FAULTS: usize = 4096;
/// A probe checks for an early 2 MiB answer every this many faults.
const EARLY_CHECK_FAULTS: usize = 256;
/// A 64 KiB window checks whether its faults became a scan every this many faults.
const SCAN_CHECK_FAULTS: usize = 256;
/// Window after a probe, in pages brought back: from 16x to 128x the probe.
const WINDOW_MIN_PAGES: u64 = 16 * PROBE_FAULTS as u64;
const WINDOW_MAX_PAGES: u64 = 128 * PROBE_FAULTS as u64;

/// `[runtime] fault_around`: "4KiB" (default: one page per fault), "64KiB", "2MiB", or
/// "dynamic".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultAround {
    Fixed { pages: usize },
    Dynamic,
}

impl FaultAround {
    pub fn parse(s: &str) -> Result<FaultAround, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "4kib" | "4k" => Ok(FaultAround::Fixed { pages: 1 }),
            "64kib" | "64k" => Ok(FaultAround::Fixed { pages: PAGES_64K }),
            "2mib" | "2m" => Ok(FaultAround::Fixed { pages: PAGES_2M }),
            "dynamic" => Ok(FaultAround::Dynamic),
            _ => Err(format!(
                "{s:?}: give \"4KiB\" (one page per fault), \"64KiB\", \"2MiB\" or \"dynamic\" (chosen from the program's spatial locality)"
            )),
        }
    }
}

/// Faults this close in fault order count as accessed together (see `choose_unit`).
pub const NEAR_FAULTS: usize = 4;

/// Whether page `p` has a near fault: one of the faults `before` it (the last
/// `NEAR_FAULTS`) was on another page of the same `unit`-page region.
fn has_near_fault(before: &[u32], p: u32, unit: u32) -> bool {
    before[before.len().saturating_sub(NEAR_FAULTS)..]
        .iter()
        .any(|&q| q != p && q / unit == p / unit)
}

/// The paper's move-in rule (`tiermem_policies::granularity`, the simulator's too) over
/// the faulted pages of a probe, in fault order: the unit, in pages. `in_tier(page)` says
/// whether a page is in a compressed tier now.
///
/// Two adaptations, both reducing to the paper's rule when every page of a region is in
/// a tier:
/// * The paper counts pages whose access bit was set within one short scan interval; a
///   probe lasts 4 096 faults, long enough for random accesses to fill a small region by
///   chance, so a fault counts toward its region only when one of the `NEAR_FAULTS` faults
///   before it was on another page of the same region (the issue's "neighbours of a
///   faulted page fault soon after"): a scan or a burst inside a 64 KiB chunk counts,
///   scattered lookups do not.
/// * The paper's regions are wholly in slow memory (it scans slow pages and "ignores fast
///   pages", §4); here a region may hold pages already in DRAM, which a fault never names
///   and a move never carries. So the thresholds are shares of the region's slow pages
///   (those in a tier now or faulted in by this probe; `Density::Share`, the option the
///   simulator has too): a 2 MiB region is dense when more
///   than 480/512 of its slow pages were accessed, a 64 KiB one above 10/16. Measured on
///   bench/fault_around's scan: after a strided update (every 7th page back in DRAM) each
///   2 MiB region has 439 slow pages, all scanned, and the absolute rule (> 480) chose
///   64 KiB for every later pass.
pub fn choose_unit(faults: &[u32], in_tier: impl Fn(u32) -> bool) -> usize {
    let th = Thresholds {
        density: Density::Share,
        ..Thresholds::default()
    };
    let mut faulted = faults.to_vec();
    faulted.sort_unstable();
    faulted.dedup();
    // One tally per region size, of the slow pages of every region holding an accessed
    // page (a near fault on another page of the same region, once each).
    let tally_of = |unit: u32, thr: u32| -> RegionCounts {
        let mut accessed: Vec<u32> = (0..faults.len())
            .filter(|&k| has_near_fault(&faults[..k], faults[k], unit))
            .map(|k| faults[k])
            .collect();
        accessed.sort_unstable();
        accessed.dedup();
        let mut t = RegionTally::new(&th, PAGE as u64);
        for run in accessed.chunk_by(|a, b| a / unit == b / unit) {
            let start = run[0] / unit * unit;
            // The region's faulted pages are slow pages: when they alone outnumber what
            // its accessed pages could be dense over, it is not dense, and reading its
            // pages is skipped (a probe of random faults touches every region sparsely).
            let faulted_here = faulted.partition_point(|&p| p < start + unit)
                - faulted.partition_point(|&p| p < start);
            if run.len() as u64 * unit as u64 <= thr as u64 * faulted_here as u64 {
                continue;
            }
            for p in start..start + unit {
                if in_tier(p) || faulted.binary_search(&p).is_ok() {
                    t.push(p, run.binary_search(&p).is_ok());
                }
            }
        }
        t.finish()
    };
    // Nearness is judged per region size: a scan's first pages of each 64 KiB chunk have
    // their near faults in the chunk before, yet are part of the same 2 MiB run.
    let counts = RegionCounts {
        dense_2m: tally_of(PAGES_2M as u32, th.thr_high_2mb).dense_2m,
        dense_64k: tally_of(PAGES_64K as u32, th.thr_high_64kb).dense_64k,
        ..RegionCounts::default()
    };
    choose_move_in(&counts, &th, ics18::Granularity::K4).pages(PAGE as u64) as usize
}

/// A unit never exceeds 1/UNITS_IN_BUDGET of the DRAM budget: a 2 MiB unit under a 2 MiB
/// budget would evict what the last fault brought before the program reached it, and
/// every fault would then move a whole budget (measured: a python program at a 1.6 MiB
/// budget took 800+ s instead of 18 s).
pub const UNITS_IN_BUDGET: u64 = 16;

/// The largest unit (1, 16 or 512 pages) at most `unit` that fits `budget_pages` as above.
pub fn fit_unit(unit: usize, budget_pages: u64) -> usize {
    let cap = budget_pages / UNITS_IN_BUDGET;
    [PAGES_2M, PAGES_64K]
        .into_iter()
        .find(|&u| u <= unit && u as u64 <= cap)
        .unwrap_or(1)
}

/// What `tiermem stat` shows of fault-around.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FaultAroundStats {
    /// "4KiB", "64KiB", "2MiB" or "dynamic".
    pub mode: String,
    /// The unit tier faults are served at now, bytes.
    pub unit_bytes: u64,
    /// Tier faults served at 4 KiB / 64 KiB / 2 MiB.
    pub faults_by_unit: [u64; 3],
    /// Pages brought back beside faulting pages.
    pub pages_around: u64,
    /// Dynamic: probes decided, and how many changed the unit.
    pub decisions: u64,
    pub switches: u64,
    /// Dynamic: 64 KiB windows ended early because their faults became a scan.
    #[serde(default)]
    pub scan_restarts: u64,
}

/// The fault thread's fault-around state (under the runtime's state lock).
#[derive(Clone, Debug)]
pub struct Granularity {
    mode: FaultAround,
    /// The unit (pages) outside probes.
    unit: usize,
    /// Faulted pages of the current probe; empty outside a probe.
    probe: Vec<u32>,
    /// Faults of the probe with a near fault on the same 2 MiB region (see `choose_unit`).
    probe_near_2m: usize,
    /// The last faults of a 64 KiB window (see `watch_64k_window`).
    window_recent: Vec<u32>,
    /// The probe running was started by a cut; a cut's probe chose 64 KiB again.
    cut_probe: bool,
    cuts_useless: bool,
    probing: bool,
    /// Pages still to bring back in this window, and the window's length.
    window_left: u64,
    window: u64,
    pub stats: FaultAroundStats,
}

impl Granularity {
    pub fn new(mode: FaultAround, mode_text: &str) -> Granularity {
        let unit = match mode {
            FaultAround::Fixed { pages } => pages,
            FaultAround::Dynamic => 1,
        };
        Granularity {
            mode,
            unit,
            probe: Vec::new(),
            probe_near_2m: 0,
            window_recent: Vec::new(),
            cut_probe: false,
            cuts_useless: false,
            probing: mode == FaultAround::Dynamic,
            window_left: 0,
            window: WINDOW_MIN_PAGES,
            stats: FaultAroundStats {
                mode: mode_text.to_string(),
                unit_bytes: (unit * crate::sys::PAGE) as u64,
                ..FaultAroundStats::default()
            },
        }
    }

    /// The unit (pages) to serve a tier fault at `page` with; `in_tier(page)` says whether
    /// a page is in a compressed tier now (see `choose_unit`).
    pub fn unit_for_fault(&mut self, page: usize, in_tier: impl Fn(u32) -> bool) -> usize {
        if self.mode != FaultAround::Dynamic {
            return self.unit;
        }
        if !self.probing {
            if self.unit == PAGES_64K {
                self.watch_64k_window(page as u32);
            }
            return self.unit;
        }
        let p = page as u32;
        if has_near_fault(&self.probe, p, PAGES_2M as u32) {
            self.probe_near_2m += 1;
        }
        self.probe.push(p);
        let full = self.probe.len() >= PROBE_FAULTS;
        // 2 MiB is the largest answer and more faults only add accessed pages, so a probe
        // whose first faults already show more than 3 dense 2 MiB regions ends there: a
        // scan decides after about 2 048 faults instead of paying 4 096 at 4 KiB. Checked
        // only while most faults so far are near ones (the rule's cost stays off the
        // fault path of a program with scattered faults).
        let early = self.probe.len().is_multiple_of(EARLY_CHECK_FAULTS)
            && 2 * self.probe_near_2m >= self.probe.len();
        if !full && !early {
            return 1;
        }
        let unit = choose_unit(&self.probe, in_tier);
        if !full && unit != PAGES_2M {
            return 1;
        }
        self.probe.clear();
        self.probe_near_2m = 0;
        self.window_recent.clear();
        self.stats.decisions += 1;
        // A cut whose probe chose 64 KiB again was no scan the rule calls 2 MiB (GNU sort
        // reads its runs at 64 KiB: measured, cutting every such window made it probe 26
        // times): no more cuts until the unit changes.
        self.cuts_useless = unit == PAGES_64K && (self.cut_probe || self.cuts_useless);
        self.cut_probe = false;
        if unit == self.unit {
            self.window = (self.window * 2).min(WINDOW_MAX_PAGES);
        } else {
            self.stats.switches += 1;
            self.window = WINDOW_MIN_PAGES;
            self.unit = unit;
            self.stats.unit_bytes = (unit * crate::sys::PAGE) as u64;
        }
        // A window at 4 KiB is itself a probe (its faults are 4 KiB faults), so the rule
        // is applied again after the next 4 096 faults at no cost: a short sparse phase
        // (a strided update between two scans) then holds 4 KiB only while it lasts, not
        // for a whole window. Measured on bench/fault_around's scan, 256 MiB x 4.
        self.probing = unit == 1;
        self.window_left = self.window;
        1
    }

    /// A 64 KiB window ends early, and a probe starts, when its faults turn into a scan:
    /// of the last `SCAN_CHECK_FAULTS`, at least 7/8 each on a 64 KiB block none of them
    /// was on before and on the 2 MiB region of one of the `NEAR_FAULTS` before it. A
    /// probe would then choose 2 MiB, and a window counted in pages can outlast the scan
    /// (measured: a python program's start-up chose 64 KiB, and the window served the
    /// whole 96 MiB scan that followed at 64 KiB). Clustered faults (chunks at scattered
    /// places) and a small set faulting again and again keep their window.
    fn watch_64k_window(&mut self, page: u32) {
        self.window_recent.push(page);
        if self.window_recent.len() < SCAN_CHECK_FAULTS || self.cuts_useless {
            return;
        }
        let r = &self.window_recent;
        let region = |p: u32| p / PAGES_2M as u32;
        let near = (1..r.len())
            .filter(|&k| {
                r[k.saturating_sub(NEAR_FAULTS)..k]
                    .iter()
                    .any(|&q| region(q) == region(r[k]))
            })
            .count();
        let mut blocks: Vec<u32> = r.iter().map(|&p| p / PAGES_64K as u32).collect();
        blocks.sort_unstable();
        blocks.dedup();
        let most = SCAN_CHECK_FAULTS * 7 / 8;
        if near >= most && blocks.len() >= most {
            self.probing = true;
            self.cut_probe = true;
            self.stats.scan_restarts += 1;
        }
        self.window_recent.clear();
    }

    /// The unit demotions are grouped in: the fault-around unit chosen last (a probe
    /// only changes how faults are served while it runs).
    pub fn evict_unit(&self) -> usize {
        self.unit
    }

    /// A tier fault was served at `unit` pages and brought back `pages` (>= 1).
    pub fn served(&mut self, unit: usize, pages: usize) {
        let k = match unit {
            1 => 0,
            PAGES_64K => 1,
            _ => 2,
        };
        self.stats.faults_by_unit[k] += 1;
        self.stats.pages_around += pages.saturating_sub(1) as u64;
        if self.mode == FaultAround::Dynamic && !self.probing {
            self.window_left = self.window_left.saturating_sub(pages as u64);
            if self.window_left == 0 {
                self.probing = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every page is in a tier: the paper's setting, the absolute thresholds.
    fn all_in_tier(_: u32) -> bool {
        true
    }

    #[test]
    fn the_move_in_rule_picks_the_unit_of_the_accessed_pages_locality() {
        // A sequential run over 8 whole 2 MiB regions.
        let seq: Vec<u32> = (0..4096).collect();
        assert_eq!(choose_unit(&seq, all_in_tier), PAGES_2M);
        // Bursts of 12 pages inside 64 KiB chunks at scattered places: 2 MiB regions
        // hold a few chunks each.
        let clustered: Vec<u32> = (0..300u32)
            .flat_map(|c| (0..12).map(move |k| c * 7919 % 100_000 * 16 + k))
            .collect();
        assert_eq!(choose_unit(&clustered, all_in_tier), PAGES_64K);
        // Uniform random pages over 1 GiB, and over a 20 MiB span (5 000 pages) where
        // 4 096 faults fill every 64 KiB block by chance: neither counts.
        let random: Vec<u32> = (0..4096u32)
            .map(|k| k.wrapping_mul(2_654_435_761) % 262_144)
            .collect();
        assert_eq!(choose_unit(&random, all_in_tier), 1);
        let small: Vec<u32> = (0..4096u32)
            .map(|k| k.wrapping_mul(2_654_435_761) % 5_000)
            .collect();
        assert_eq!(
            choose_unit(&small, all_in_tier),
            1,
            "chance density in a small span is not locality"
        );
        // The same clustered pages in random order are not bursts.
        let mut shuffled = clustered.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (i as u32).wrapping_mul(2_654_435_761) as usize % (i + 1));
        }
        assert_eq!(choose_unit(&shuffled, all_in_tier), 1);
        // At the thresholds: "more than" 480 / 10 pages, "more than" 3 regions. In a run
        // the first fault of a region has no neighbour before it: 482 pages give 481.
        let at: Vec<u32> = (0..4u32)
            .flat_map(|r| (0..481).map(move |k| r * 512 + k))
            .collect();
        assert_eq!(
            choose_unit(&at, all_in_tier),
            PAGES_64K,
            "480 local pages per region is not dense"
        );
        let over: Vec<u32> = (0..4u32)
            .flat_map(|r| (0..482).map(move |k| r * 512 + k))
            .collect();
        assert_eq!(choose_unit(&over, all_in_tier), PAGES_2M);
        let three: Vec<u32> = (0..3u32)
            .flat_map(|r| (0..512).map(move |k| r * 4096 + k))
            .collect();
        assert_eq!(choose_unit(&three, all_in_tier), PAGES_64K);
        let dup: Vec<u32> = std::iter::repeat_n(5, 4096).collect();
        assert_eq!(
            choose_unit(&dup, all_in_tier),
            1,
            "one page faulting again and again is no locality"
        );
    }

    /// Serves faults on `pages` at 4 KiB while `g` probes; returns how many were served.
    fn probe_with(g: &mut Granularity, pages: &mut impl Iterator<Item = usize>) -> usize {
        let decisions = g.stats.decisions;
        let mut n = 0;
        while g.stats.decisions == decisions {
            let page = pages.next().expect("pages enough");
            assert_eq!(
                g.unit_for_fault(page, all_in_tier),
                1,
                "probe faults are 4 KiB"
            );
            g.served(1, 1);
            n += 1;
        }
        n
    }

    #[test]
    fn a_probe_decides_and_the_window_grows_while_the_choice_holds() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        let mut pages = 0usize..;
        // Probe: a scan, served at 4 KiB; 2 MiB is certain once 4 regions are dense.
        assert_eq!(probe_with(&mut g, &mut pages), 4 * PAGES_2M);
        assert_eq!(
            (g.stats.decisions, g.stats.switches, g.unit),
            (1, 1, PAGES_2M)
        );
        // Window of 16x the probe in pages: 128 faults at 2 MiB.
        let mut page = pages.next().unwrap().next_multiple_of(PAGES_2M);
        let mut faults = 0;
        while g.unit_for_fault(page, all_in_tier) == PAGES_2M {
            g.served(PAGES_2M, PAGES_2M);
            page += PAGES_2M;
            faults += 1;
        }
        assert_eq!(faults, 16 * PROBE_FAULTS / PAGES_2M);
        // That fault was the next probe's first.
        g.served(1, 1);
        let mut pages = page + 1..;
        assert_eq!(probe_with(&mut g, &mut pages), 4 * PAGES_2M - 1);
        // Same choice: the next window is twice as long.
        assert_eq!((g.stats.decisions, g.stats.switches), (2, 1));
        assert_eq!(g.window, 2 * WINDOW_MIN_PAGES);
        assert_eq!(g.stats.faults_by_unit, [8 * PAGES_2M as u64, 0, 128]);
    }

    #[test]
    fn a_probe_that_does_not_say_2m_runs_its_full_length() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        // Bursts of 12 pages in scattered 64 KiB chunks: 64 KiB, known only at the end.
        let mut pages =
            (0..).flat_map(|c: usize| (0..12).map(move |k| c * 7919 % 100_000 * 16 + k));
        assert_eq!(probe_with(&mut g, &mut pages), PROBE_FAULTS);
        assert_eq!(g.unit, PAGES_64K);
    }

    #[test]
    fn a_choice_of_4k_probes_again_at_once() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        // A strided phase (every 7th page): no region is dense, the rule says 4 KiB.
        let mut strided = (0..).map(|k| k * 7);
        assert_eq!(probe_with(&mut g, &mut strided), PROBE_FAULTS);
        assert_eq!((g.stats.decisions, g.unit), (1, 1));
        // A scan follows: the very next faults decide again and bring 2 MiB back, not a
        // 65 536-page window at 4 KiB first.
        let mut scan = 7 * PROBE_FAULTS..;
        assert!(probe_with(&mut g, &mut scan) <= PROBE_FAULTS);
        assert_eq!((g.stats.decisions, g.unit), (2, PAGES_2M));
        assert_eq!(
            g.unit_for_fault(scan.next().unwrap(), all_in_tier),
            PAGES_2M
        );
    }

    #[test]
    fn a_64k_window_whose_faults_become_a_scan_probes_again() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        let mut chunks =
            (0..).flat_map(|c: usize| (0..12).map(move |k| c * 7919 % 100_000 * 16 + k));
        probe_with(&mut g, &mut chunks);
        assert_eq!(g.unit, PAGES_64K);
        // Clustered faults, and one small set faulting again and again, keep the window.
        for k in 0..1024usize {
            let page = (k * 7919 % 100_000) * 16;
            assert_eq!(g.unit_for_fault(page, all_in_tier), PAGES_64K);
            g.served(PAGES_64K, PAGES_64K);
            let again = (k % 64) * 16;
            assert_eq!(g.unit_for_fault(again, all_in_tier), PAGES_64K);
            g.served(PAGES_64K, PAGES_64K);
        }
        assert_eq!(g.stats.scan_restarts, 0);
        // A scan at 64 KiB: within 256 faults the next fault is a probe fault.
        let start = 1usize << 24;
        let mut n = 0;
        while g.unit_for_fault(start + n * PAGES_64K, all_in_tier) == PAGES_64K {
            g.served(PAGES_64K, PAGES_64K);
            n += 1;
            assert!(n <= SCAN_CHECK_FAULTS, "the window outlasted the scan");
        }
        assert_eq!(g.stats.scan_restarts, 1);
        // The cut's probe finds 64 KiB chunks again (faults the rule does not call a
        // 2 MiB scan): the next 64 KiB window is not cut, however its faults look.
        probe_with(&mut g, &mut chunks);
        assert_eq!(g.unit, PAGES_64K);
        for n in 0..2 * SCAN_CHECK_FAULTS {
            assert_eq!(
                g.unit_for_fault(start + n * PAGES_64K, all_in_tier),
                PAGES_64K
            );
            g.served(PAGES_64K, PAGES_64K);
        }
        assert_eq!(g.stats.scan_restarts, 1);
    }

    #[test]
    fn thresholds_are_shares_of_the_regions_slow_pages() {
        // A scan over 8 regions whose every 7th page is already in DRAM (a strided update
        // brought them back): 439 slow pages per region, all accessed. The paper's absolute
        // 480 would say 64 KiB; 438/439 of the slow pages is dense.
        let resident = |p: u32| p.is_multiple_of(7);
        let scan: Vec<u32> = (0..8 * 512u32).filter(|&p| !resident(p)).collect();
        assert_eq!(choose_unit(&scan, |p| !resident(p)), PAGES_2M);
        // Pages faulted by the probe count as slow even though they are in DRAM now: a
        // scan whose every faulted page came back is still dense.
        let seq: Vec<u32> = (0..4096).collect();
        assert_eq!(choose_unit(&seq, |_| false), PAGES_2M);
        // A scan over the slow eighth of mostly-resident regions: 64 of 64 slow pages.
        let sparse_slow: Vec<u32> = (0..64 * 512u32).step_by(8).collect();
        assert_eq!(choose_unit(&sparse_slow, |p| p.is_multiple_of(8)), PAGES_2M);
        // Random lookups over half-resident memory: resident neighbours are no locality.
        let random: Vec<u32> = (0..4096u32)
            .map(|k| k.wrapping_mul(2_654_435_761) % 262_144 / 2 * 2)
            .collect();
        assert_eq!(choose_unit(&random, |p| p.is_multiple_of(2)), 1);
        // Half of each region's slow pages scanned: not dense.
        let half: Vec<u32> = (0..8u32)
            .flat_map(|r| (0..256).map(move |k| r * 512 + k))
            .collect();
        assert_eq!(choose_unit(&half, all_in_tier), PAGES_64K);
    }

    #[test]
    fn a_unit_fits_the_budget_sixteen_times() {
        assert_eq!(fit_unit(PAGES_2M, u64::MAX), PAGES_2M);
        assert_eq!(fit_unit(PAGES_2M, 16 * 512), PAGES_2M);
        assert_eq!(fit_unit(PAGES_2M, 16 * 512 - 1), PAGES_64K);
        assert_eq!(fit_unit(PAGES_64K, 1 << 30), PAGES_64K);
        assert_eq!(fit_unit(PAGES_64K, 255), 1);
        assert_eq!(fit_unit(1, u64::MAX), 1);
    }

    #[test]
    fn fixed_modes_never_probe_and_bad_text_names_the_choices() {
        let mut g = Granularity::new(FaultAround::parse("64KiB").unwrap(), "64KiB");
        for p in 0..10_000 {
            assert_eq!(g.unit_for_fault(p, all_in_tier), PAGES_64K);
        }
        assert_eq!(g.stats.decisions, 0);
        let e = FaultAround::parse("1MiB").unwrap_err();
        assert!(e.contains("\"64KiB\"") && e.contains("dynamic"), "{e}");
    }
}
