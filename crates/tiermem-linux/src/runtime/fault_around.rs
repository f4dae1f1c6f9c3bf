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
//! same region: `choose_unit`), and serves the faults of the following **window** at the
//! chosen unit. Windows are counted in pages brought back (16x the probe, doubling while
//! the choice stays the same, up to 128x), so the probe's cost shrinks for a program whose
//! locality does not change, and a change of phase is seen within one window. A choice of
//! 4 KiB has no window: its faults are probe faults already, so the next probe starts at
//! once and a short sparse phase does not hold 4 KiB over the dense phase after it.
//!
//! ```text
//!   probe (4096 faults at 4 KiB) -> choose -> window (>= 65536 pages at the unit) -> probe ...
//!                                           \-> 4 KiB: probe again
//! ```
//!
//! Fault-around changes how many faults a program pays, never what it reads: each page
//! brought back is decompressed from its own tier exactly as a single fault would.

use crate::sys::PAGE;
use serde::{Deserialize, Serialize};
use tiermem_core::PageIdx;
use tiermem_policies::granularity::{
    self as ics18, choose_move_in, tally, RegionCounts, Thresholds,
};

/// Pages of a 64 KiB and a 2 MiB unit.
pub const PAGES_64K: usize = 16;
pub const PAGES_2M: usize = 512;
/// Faults in one probe: the paper's move-in scan of 4 096 slow-memory pages (§4).
pub const PROBE_FAULTS: usize = 4096;
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

/// The paper's move-in rule (`tiermem_policies::granularity`, the simulator's too) over
/// the faulted pages of a probe, in fault order: the unit, in pages. The paper counts pages whose access bit was set within one short scan
/// interval; a probe lasts 4 096 faults, long enough for random accesses to fill a
/// small region by chance, so a fault counts toward its region only when one of the
/// `NEAR_FAULTS` faults before it was on another page of the same region (the issue's
/// "neighbours of a faulted page fault soon after"): a scan or a burst inside a 64 KiB
/// chunk counts, scattered lookups do not.
pub fn choose_unit(faults: &[u32]) -> usize {
    let th = Thresholds::default();
    // The pages of `unit`-page regions that count as accessed (a near fault on another page
    // of the same region), once each, ascending: the paper's accessed bits of one scan.
    let accessed = |unit: u32| {
        let mut pages: Vec<PageIdx> = (0..faults.len())
            .filter(|&k| {
                let p = faults[k];
                faults[k.saturating_sub(NEAR_FAULTS)..k]
                    .iter()
                    .any(|&q| q != p && q / unit == p / unit)
            })
            .map(|k| faults[k])
            .collect();
        pages.sort_unstable();
        pages.dedup();
        tally(pages.into_iter().map(|p| (p, true)), &th, PAGE as u64)
    };
    // Nearness is judged per region size: a scan's first pages of each 64 KiB chunk have
    // their near faults in the chunk before, yet are part of the same 2 MiB run.
    let counts = RegionCounts {
        dense_2m: accessed(PAGES_2M as u32).dense_2m,
        dense_64k: accessed(PAGES_64K as u32).dense_64k,
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
}

/// The fault thread's fault-around state (under the runtime's state lock).
#[derive(Clone, Debug)]
pub struct Granularity {
    mode: FaultAround,
    /// The unit (pages) outside probes.
    unit: usize,
    /// Faulted pages of the current probe; empty outside a probe.
    probe: Vec<u32>,
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

    /// The unit (pages) to serve a tier fault at `page` with.
    pub fn unit_for_fault(&mut self, page: usize) -> usize {
        if self.mode != FaultAround::Dynamic {
            return self.unit;
        }
        if !self.probing {
            return self.unit;
        }
        self.probe.push(page as u32);
        if self.probe.len() >= PROBE_FAULTS {
            let unit = choose_unit(&self.probe);
            self.probe.clear();
            self.stats.decisions += 1;
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
        }
        1
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

    #[test]
    fn the_move_in_rule_picks_the_unit_of_the_accessed_pages_locality() {
        // A sequential run over 8 whole 2 MiB regions.
        let seq: Vec<u32> = (0..4096).collect();
        assert_eq!(choose_unit(&seq), PAGES_2M);
        // Bursts of 12 pages inside 64 KiB chunks at scattered places: 2 MiB regions
        // hold a few chunks each.
        let clustered: Vec<u32> = (0..300u32)
            .flat_map(|c| (0..12).map(move |k| c * 7919 % 100_000 * 16 + k))
            .collect();
        assert_eq!(choose_unit(&clustered), PAGES_64K);
        // Uniform random pages over 1 GiB, and over a 20 MiB span (5 000 pages) where
        // 4 096 faults fill every 64 KiB block by chance: neither counts.
        let random: Vec<u32> = (0..4096u32)
            .map(|k| k.wrapping_mul(2_654_435_761) % 262_144)
            .collect();
        assert_eq!(choose_unit(&random), 1);
        let small: Vec<u32> = (0..4096u32)
            .map(|k| k.wrapping_mul(2_654_435_761) % 5_000)
            .collect();
        assert_eq!(
            choose_unit(&small),
            1,
            "chance density in a small span is not locality"
        );
        // The same clustered pages in random order are not bursts.
        let mut shuffled = clustered.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (i as u32).wrapping_mul(2_654_435_761) as usize % (i + 1));
        }
        assert_eq!(choose_unit(&shuffled), 1);
        // At the thresholds: "more than" 480 / 10 pages, "more than" 3 regions. In a run
        // the first fault of a region has no neighbour before it: 482 pages give 481.
        let at: Vec<u32> = (0..4u32)
            .flat_map(|r| (0..481).map(move |k| r * 512 + k))
            .collect();
        assert_eq!(
            choose_unit(&at),
            PAGES_64K,
            "480 local pages per region is not dense"
        );
        let over: Vec<u32> = (0..4u32)
            .flat_map(|r| (0..482).map(move |k| r * 512 + k))
            .collect();
        assert_eq!(choose_unit(&over), PAGES_2M);
        let three: Vec<u32> = (0..3u32)
            .flat_map(|r| (0..512).map(move |k| r * 4096 + k))
            .collect();
        assert_eq!(choose_unit(&three), PAGES_64K);
        let dup: Vec<u32> = std::iter::repeat_n(5, 4096).collect();
        assert_eq!(
            choose_unit(&dup),
            1,
            "one page faulting again and again is no locality"
        );
    }

    #[test]
    fn a_probe_decides_and_the_window_grows_while_the_choice_holds() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        let mut page = 0usize;
        // Probe: served at 4 KiB.
        for _ in 0..PROBE_FAULTS {
            assert_eq!(g.unit_for_fault(page), 1);
            g.served(1, 1);
            page += 1;
        }
        assert_eq!(
            (g.stats.decisions, g.stats.switches, g.unit),
            (1, 1, PAGES_2M)
        );
        // Window of 16x the probe in pages: 128 faults at 2 MiB.
        let mut faults = 0;
        while g.unit_for_fault(page) == PAGES_2M {
            g.served(PAGES_2M, PAGES_2M);
            page += PAGES_2M;
            faults += 1;
        }
        assert_eq!(faults, 16 * PROBE_FAULTS / PAGES_2M);
        for _ in 1..PROBE_FAULTS {
            g.unit_for_fault(page);
            g.served(1, 1);
            page += 1;
        }
        // Same choice: the next window is twice as long.
        assert_eq!((g.stats.decisions, g.stats.switches), (2, 1));
        assert_eq!(g.window, 2 * WINDOW_MIN_PAGES);
        assert_eq!(
            g.stats.faults_by_unit,
            [2 * PROBE_FAULTS as u64 - 1, 0, 128]
        );
    }

    #[test]
    fn a_choice_of_4k_probes_again_at_once() {
        let mut g = Granularity::new(FaultAround::Dynamic, "dynamic");
        // A strided phase (every 7th page): no region is dense, the rule says 4 KiB.
        let mut page = 0usize;
        for _ in 0..PROBE_FAULTS {
            g.unit_for_fault(page);
            g.served(1, 1);
            page += 7;
        }
        assert_eq!((g.stats.decisions, g.unit), (1, 1));
        // A scan follows: the very next 4 096 faults decide again and bring 2 MiB back,
        // not a 65 536-page window at 4 KiB first.
        for _ in 0..PROBE_FAULTS {
            assert_eq!(g.unit_for_fault(page), 1);
            g.served(1, 1);
            page += 1;
        }
        assert_eq!((g.stats.decisions, g.unit), (2, PAGES_2M));
        assert_eq!(g.unit_for_fault(page), PAGES_2M);
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
            assert_eq!(g.unit_for_fault(p), PAGES_64K);
        }
        assert_eq!(g.stats.decisions, 0);
        let e = FaultAround::parse("1MiB").unwrap_err();
        assert!(e.contains("\"64KiB\"") && e.contains("dynamic"), "{e}");
    }
}
