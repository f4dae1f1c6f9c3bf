//! `policy = "ics18"`: granularity-aware page migration (Ryoo, John, Basu, "A Case for
//! Granularity Aware Page Migration", ICS'18, §4–§5), and the paper's baseline. One file,
//! one registry entry; `scheme` picks the system:
//!
//! | scheme | scans | moves |
//! |---|---|---|
//! | `"baseline"` | physically ordered batches (§5) | 4 KiB always |
//! | `"static-4k"`, `"static-64k"`, `"static-2m"` | virtually contiguous ranges (§4) | that granularity |
//! | `"dynamic"` | virtually contiguous ranges (§4) | chosen by §4's rules ([`crate::granularity`]) |
//!
//! **Scanning.** Two independent threads scan (§5: every 100 µs, `scan_period_us`): the
//! move-in thread the slow tier, the move-out thread the fast tier. A scan reads and clears
//! the accessed bits ([`tiermem_core::AccessBits`], tracker `AccessBitScan`) of
//! `scan_pages` (§4: 4 096) pages resident in its tier, ignoring (and leaving alone) the
//! other tier's pages, and starts where the previous one stopped. The dynamic and static
//! schemes walk the virtual address space from a cursor, in whole 2 MiB-aligned chunks (so
//! no region is cut by a scan boundary: a scan covers at least `scan_pages` resident pages,
//! at most 511 more); the paper finds its start by reverse-mapping a physical frame, which
//! only matters for where a scan starts. The baseline walks each tier's physical frames in
//! frame order: the policy keeps the frame each page occupies (first-touch order at the
//! start; a page that moves takes the most recently freed frame of its new tier, as a buddy
//! allocator's per-CPU lists hand them out) and reads one page per frame. The policy runs
//! once per scan period (its quantum), at most one scan per thread per quantum. The scan
//! pace (pages per second) does not depend on a simulator's `scale`: see docs/simulator.md,
//! "Granularity", for what a scaled run then is.
//!
//! **What moves** (§5, which the static and dynamic schemes share "except the granularity"):
//! every slow-resident page whose bit was set is a promotion candidate; the move promotes
//! the aligned region of the current granularity holding it (one move, one TLB shootdown,
//! whatever its size; several candidates in one region are one move). Symmetrically, every
//! fast-resident page whose bit was not set is a demotion candidate and the move demotes
//! its region (the paper's "any page with its access bit unset is selected as a
//! candidate", at the granularity; a coarse region so carries accessed pages with it, the
//! waste §3 describes); a scan's candidate regions go least accessed first. Regions are
//! demoted only to make room for promotions ("to make space (if needed)"), interleaved with
//! them (demote, promote, demote, ...) so that a backend that runs out of migration time
//! mid-plan keeps the tier balanced.
//!
//! **Pacing** (the paper does not say; each choice below is what keeps the mechanism from
//! defeating itself at its own scan rate):
//! * The move-in thread works through its candidates in the order it found them: those the
//!   backend could not move in a period (its migration threads' time ran out) come first in
//!   the next; a scan's candidates join the queue behind them (the oldest dropped past
//!   `2 × scan_pages`). Each period the policy plans at most twice the promotions that
//!   landed in the previous one, plus 2 (at least 4): what the threads can do, without
//!   planning thousands of moves a backend would drop. A queued candidate moves the region
//!   of the granularity in force when its turn comes.
//! * The move-out thread scans when room is needed and the candidates of its previous scan
//!   are used up (at most once a period). Its scans are then as frequent as demotion
//!   demands, and each reads the bits a page gathered since the previous read. Scanning the
//!   fast tier every period regardless would read each fast page every 2.5 ms (400 MB at
//!   4 096 pages per 100 µs), a window in which a page of a program's hot set is often
//!   untouched at the access rates simulated here: hot pages would be demoted, and the
//!   dynamic scheme would see its hot 64 KiB and 2 MiB regions as sparse. (With the
//!   baseline's frames, which reuse the frames just freed, a periodic scan would also meet
//!   its newest promotions first, one revisit after they arrived.)
//! * A page just promoted counts as accessed the first time the move-out scan reads it (it
//!   was promoted because it was accessed: the clock's second chance, as the kernel's LRU
//!   puts a migrated page on the active list), so a promotion is not undone before the
//!   program got to use it; without it a region promoted at 2 MiB ahead of a stream would
//!   be demoted before the stream arrives.
//!
//! **Granularity** (dynamic): decided at the end of each scan, move-in may raise it and
//! move-out lower it ([`crate::granularity`], which documents the paper's ambiguities and
//! the choices made); it applies to the moves formed after that scan. It starts at
//! `initial_granularity` (4 KiB, the fixed granularity of the system it improves on).
//!
//! **Counters** (`policy_counters` in a run's summary): migrations applied at each
//! granularity (`migrations_4k`, `migrations_64k`, `migrations_2m`: a planned move counts
//! once the next snapshot shows all its pages in the target tier; a move lands whole or not
//! at all), `promotions`, `demotions`, the dynamic scheme's `raises` and `lowers`, and
//! `scans`.
//!
//! Two tiers: tier 0 is the fast tier, every other tier is "slow" (promotion source), and
//! demotions go to tier 1.

use crate::granularity::{
    choose_move_in, choose_move_out, Density, Granularity, RegionTally, Thresholds,
};
use crate::heat::{FAST, SLOW};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{
    AccessBits, Needs, PageIdx, PageRange, Plan, Policy, Result, Snapshot, TierId, TrackerSpec,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ics18Config {
    /// "baseline", "static-4k", "static-64k", "static-2m" or "dynamic".
    #[serde(default = "d_scheme")]
    pub scheme: String,
    /// The dynamic scheme's granularity before its first decision.
    #[serde(default = "d_initial")]
    pub initial_granularity: Granularity,
    /// Resident pages of its tier each scan reads (§4: "a typical value is 4,096").
    #[serde(default = "d_scan_pages")]
    pub scan_pages: u32,
    /// Time between two scans of a thread, µs (§5: "We set the scanning frequency to
    /// 100µs across all experiments").
    #[serde(default = "d_scan_period_us")]
    pub scan_period_us: f64,
    /// §4's thresholds (their defaults are §4's typical values); see
    /// `tiermem_policies::granularity`.
    #[serde(default = "d_480")]
    pub thr_high_2mb: u32,
    #[serde(default = "d_10")]
    pub thr_high_64kb: u32,
    #[serde(default = "d_3")]
    pub thr_high_num_reg_2mb: u32,
    #[serde(default = "d_3")]
    pub thr_high_num_reg_64kb: u32,
    #[serde(default = "d_480")]
    pub thr_low_2mb: u32,
    #[serde(default = "d_10")]
    pub thr_low_64kb: u32,
    /// Called `thr1_downgrade_2MB` in the paper's text (accepted as an alias).
    #[serde(default = "d_3", alias = "thr1_downgrade_2mb")]
    pub thr_low_num_reg_2mb: u32,
    #[serde(default = "d_3")]
    pub thr_low_num_reg_64kb: u32,
    /// "count" (the paper's thresholds as counts of 512 / 16 pages) or "share" (as shares
    /// of the pages of the region in the scanned tier): see `granularity::Density`.
    #[serde(default)]
    pub density: Density,
}

fn d_scheme() -> String {
    "dynamic".into()
}
fn d_initial() -> Granularity {
    Granularity::K4
}
fn d_scan_pages() -> u32 {
    4096
}
fn d_scan_period_us() -> f64 {
    100.0
}
fn d_480() -> u32 {
    480
}
fn d_10() -> u32 {
    10
}
fn d_3() -> u32 {
    3
}

/// The schemes, as `scheme` names them.
pub const SCHEMES: [&str; 5] = [
    "baseline",
    "static-4k",
    "static-64k",
    "static-2m",
    "dynamic",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    Baseline,
    Static(Granularity),
    Dynamic,
}

impl Scheme {
    pub fn parse(s: &str) -> Option<Scheme> {
        Some(match s {
            "baseline" => Scheme::Baseline,
            "static-4k" => Scheme::Static(Granularity::K4),
            "static-64k" => Scheme::Static(Granularity::K64),
            "static-2m" => Scheme::Static(Granularity::M2),
            "dynamic" => Scheme::Dynamic,
            _ => return None,
        })
    }
}

impl Default for Ics18Config {
    fn default() -> Self {
        let t = Thresholds::default();
        Ics18Config {
            scheme: d_scheme(),
            initial_granularity: d_initial(),
            scan_pages: d_scan_pages(),
            scan_period_us: d_scan_period_us(),
            thr_high_2mb: t.thr_high_2mb,
            thr_high_64kb: t.thr_high_64kb,
            thr_high_num_reg_2mb: t.thr_high_num_reg_2mb,
            thr_high_num_reg_64kb: t.thr_high_num_reg_64kb,
            thr_low_2mb: t.thr_low_2mb,
            thr_low_64kb: t.thr_low_64kb,
            thr_low_num_reg_2mb: t.thr_low_num_reg_2mb,
            thr_low_num_reg_64kb: t.thr_low_num_reg_64kb,
            density: t.density,
        }
    }
}

impl Ics18Config {
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            thr_high_2mb: self.thr_high_2mb,
            thr_high_64kb: self.thr_high_64kb,
            thr_high_num_reg_2mb: self.thr_high_num_reg_2mb,
            thr_high_num_reg_64kb: self.thr_high_num_reg_64kb,
            thr_low_2mb: self.thr_low_2mb,
            thr_low_64kb: self.thr_low_64kb,
            thr_low_num_reg_2mb: self.thr_low_num_reg_2mb,
            thr_low_num_reg_64kb: self.thr_low_num_reg_64kb,
            density: self.density,
        }
    }
}

impl Validate for Ics18Config {
    fn validate(&self, p: &str) -> Result<()> {
        if Scheme::parse(&self.scheme).is_none() {
            return Err(invalid(
                &join(p, "scheme"),
                format!(
                    "`{}` is not a scheme; use one of {}",
                    self.scheme,
                    SCHEMES
                        .iter()
                        .map(|s| format!("\"{s}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        check_range(
            &join(p, "scan_pages"),
            self.scan_pages as f64,
            1.0,
            (1u64 << 30) as f64,
        )?;
        check_range(&join(p, "scan_period_us"), self.scan_period_us, 1.0, 1e9)?;
        self.thresholds().validate(p)
    }
}

pub static ENTRY: PolicyEntry = PolicyEntry::new::<Ics18Config>(
    "ics18",
    "Granularity migration (ICS'18): access-bit scans of virtually contiguous ranges, moves of 4 KiB / 64 KiB / 2 MiB (static or chosen from region density), or the paper's physically scanned 4 KiB baseline",
    r#"[policy]
policy = "ics18"
scheme = "dynamic"                    # "baseline", "static-4k", "static-64k", "static-2m" or "dynamic"
initial_granularity = "4KiB"          # the dynamic scheme's granularity before its first decision
scan_pages = 4096                     # §4: resident pages each scan reads ("a typical value is 4,096")
scan_period_us = 100.0                # §5: "scanning frequency ... 100µs across all experiments"
thr_high_2mb = 480                    # §4: a 2 MiB region is dense above 480 accessed 4 KiB pages
thr_high_64kb = 10                    # §4: a 64 KiB region is dense above 10
thr_high_num_reg_2mb = 3              # §4: more than 3 dense 2 MiB regions in a move-in scan -> 2 MiB
thr_high_num_reg_64kb = 3             # §4: else more than 3 dense 64 KiB regions -> 64 KiB
thr_low_2mb = 480                     # §4: a touched 2 MiB region is sparse below 480
thr_low_64kb = 10                     # §4: a touched 64 KiB region is sparse below 10
thr_low_num_reg_2mb = 3               # §4 ("thr1_downgrade_2MB" in the text): > 3 sparse 2 MiB ...
thr_low_num_reg_64kb = 3              # ... and > 3 sparse 64 KiB regions in a move-out scan -> 4 KiB
density = "count"                     # thresholds as counts of 512 / 16 pages (§4), or "share" of a region's pages in the scanned tier
"#,
);

impl PolicyParams for Ics18Config {
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        Box::new(Ics18::new(self.clone(), ctx))
    }
}

const NONE: u32 = u32::MAX;

/// The baseline's view of physical memory: which page each frame of each tier holds.
#[derive(Default)]
struct Frames {
    /// Per tier: the page in each frame (`NONE` = free).
    slots: Vec<Vec<u32>>,
    /// Per tier: free frames, the most recently freed last.
    free: Vec<Vec<u32>>,
    /// Per page: (tier, frame) as last recorded.
    at: Vec<(TierId, u32)>,
}

impl Frames {
    /// First touch: each tier's pages in page order take its frames in frame order.
    fn new(snap: &Snapshot<'_>) -> Frames {
        let n = snap.tiers.len();
        let page = snap.page_bytes.max(1);
        // A tier never holds more than every page (a huge tier needs no more frames).
        let pages = snap.placement.len() as u64;
        let mut f = Frames {
            slots: (0..n)
                .map(|i| vec![NONE; (snap.tiers[i].capacity_bytes / page).min(pages) as usize])
                .collect(),
            free: vec![Vec::new(); n],
            at: Vec::with_capacity(snap.placement.len()),
        };
        let mut next = vec![0usize; n];
        for (p, &t) in snap.placement.iter().enumerate() {
            let i = t.index().min(n - 1);
            let slot = next[i];
            next[i] += 1;
            if slot >= f.slots[i].len() {
                f.slots[i].push(NONE);
            }
            f.slots[i][slot] = p as u32;
            f.at.push((t, slot as u32));
        }
        for ((free, slots), first) in f.free.iter_mut().zip(&f.slots).zip(&next) {
            // Free frames, the lowest handed out first.
            *free = (*first as u32..slots.len() as u32).rev().collect();
        }
        f
    }

    /// Record where `page` lives now (it moved to `tier` if that differs).
    fn sync(&mut self, page: PageIdx, tier: TierId) {
        let (old, slot) = self.at[page as usize];
        if old == tier {
            return;
        }
        let (o, t) = (old.index(), tier.index());
        self.slots[o][slot as usize] = NONE;
        self.free[o].push(slot);
        let new = match self.free[t].pop() {
            Some(s) => s,
            None => {
                self.slots[t].push(NONE);
                self.slots[t].len() as u32 - 1
            }
        };
        self.slots[t][new as usize] = page;
        self.at[page as usize] = (tier, new);
    }
}

/// One planned move, checked at the next quantum.
struct Pending {
    range: PageRange,
    to: TierId,
}

pub struct Ics18 {
    cfg: Ics18Config,
    scheme: Scheme,
    th: Thresholds,
    page_bytes: u64,
    quantum_ns: u64,
    gran: Granularity,
    /// Virtual cursors (next page) of the move-in and move-out scans.
    cursor_in: usize,
    cursor_out: usize,
    /// Baseline: frames and the frame cursors of the slow and fast tiers.
    frames: Option<Frames>,
    fcursor_in: usize,
    fcursor_out: usize,
    pending: Vec<Pending>,
    bits: Vec<bool>,
    /// Per page: promoted since the move-out scan last read it (counts as accessed once).
    fresh: Vec<bool>,
    /// Demotion candidates found by move-out scans and not used yet, in scan order.
    out_queue: std::collections::VecDeque<Cand>,
    /// Promotion candidates (accessed slow pages) not moved yet, oldest first.
    in_queue: std::collections::VecDeque<PageIdx>,
    /// Promotions planned per quantum (grows while they all land), and those that landed
    /// last quantum.
    window: usize,
    landed_in: usize,
    /// Whether the last plan had no promotion (then `landed_in` says nothing).
    pending_was_empty: bool,
    counters: Counters,
}

#[derive(Default, Clone, Copy)]
struct Counters {
    migrations: [u64; 3],
    other_migrations: u64,
    promotions: u64,
    demotions: u64,
    raises: u64,
    lowers: u64,
    scans: u64,
}

/// A candidate region: its range and how many of its pages would move.
#[derive(Clone, Copy, Debug)]
struct Cand {
    range: PageRange,
    pages: u64,
}

impl Ics18 {
    pub fn new(cfg: Ics18Config, ctx: BuildContext) -> Ics18 {
        let scheme = Scheme::parse(&cfg.scheme).unwrap_or(Scheme::Dynamic);
        let gran = match scheme {
            Scheme::Baseline => Granularity::K4,
            Scheme::Static(g) => g,
            Scheme::Dynamic => cfg.initial_granularity,
        };
        Ics18 {
            th: cfg.thresholds(),
            quantum_ns: ((cfg.scan_period_us * 1e3).round() as u64).max(1),
            page_bytes: ctx.page_bytes.unwrap_or(4096),
            scheme,
            gran,
            cfg,
            cursor_in: 0,
            cursor_out: 0,
            frames: None,
            fcursor_in: 0,
            fcursor_out: 0,
            pending: Vec::new(),
            bits: Vec::new(),
            fresh: Vec::new(),
            out_queue: Default::default(),
            in_queue: Default::default(),
            window: 64,
            landed_in: 0,
            pending_was_empty: true,
            counters: Counters::default(),
        }
    }

    /// The current migration granularity.
    pub fn granularity(&self) -> Granularity {
        self.gran
    }

    /// Count last quantum's moves that landed, and (baseline) follow them into frames.
    fn settle(&mut self, snap: &Snapshot<'_>) {
        let page_bytes = snap.page_bytes;
        let mut retry = Vec::new();
        self.landed_in = 0;
        for m in std::mem::take(&mut self.pending) {
            let pages = m.range.start as usize..m.range.end() as usize;
            let Some(now) = snap.placement.get(pages.clone()) else {
                continue;
            };
            let landed = now
                .iter()
                .all(|&t| if m.to == FAST { t == FAST } else { t != FAST });
            if landed {
                match Granularity::of_pages(m.range.len, page_bytes) {
                    Some(g) => self.counters.migrations[g as usize] += 1,
                    None => self.counters.other_migrations += 1,
                }
                if m.to == FAST {
                    self.counters.promotions += 1;
                    self.landed_in += 1;
                    for p in pages.clone() {
                        self.fresh[p] = true;
                    }
                } else {
                    self.counters.demotions += 1;
                }
            } else if m.to == FAST {
                // Not moved this time (the threads ran out of time): next in line.
                retry.push(m.range.start);
            }
            if let Some(f) = self.frames.as_mut() {
                for p in pages {
                    f.sync(p as PageIdx, snap.placement[p]);
                }
            }
        }
        for p in retry.into_iter().rev() {
            self.in_queue.push_front(p);
        }
    }

    /// The end (exclusive, 2 MiB-aligned or the end of the space) of a virtual scan from
    /// `start` covering at least `want` pages `counts`, and how many it covers. Stops at the
    /// end of the space (the next scan wraps to 0).
    fn scan_end(
        placement: &[TierId],
        start: usize,
        want: u32,
        chunk: usize,
        counts: impl Fn(TierId) -> bool,
    ) -> usize {
        let n = placement.len();
        let mut seen = 0u32;
        let mut end = start;
        while end < n && seen < want {
            let stop = ((end / chunk + 1) * chunk).min(n);
            seen += placement[end..stop].iter().filter(|&&t| counts(t)).count() as u32;
            end = stop;
        }
        end
    }

    /// Move-in over virtual ranges: the granularity decision (dynamic) and the accessed
    /// slow pages (promotion candidates), in address order.
    fn move_in_virtual(&mut self, snap: &Snapshot<'_>, bits: &dyn AccessBits) -> Vec<PageIdx> {
        let placement = snap.placement;
        let n = placement.len();
        let chunk = Granularity::M2.pages(self.page_bytes) as usize;
        if self.cursor_in >= n {
            self.cursor_in = 0;
        }
        let start = self.cursor_in;
        let end = Self::scan_end(placement, start, self.cfg.scan_pages, chunk, |t| t != FAST);
        self.cursor_in = if end >= n { 0 } else { end };
        let range = PageRange {
            start: start as u32,
            len: (end - start) as u32,
        };
        bits.read_and_clear_if(
            range,
            &mut |p| placement[p as usize] != FAST,
            &mut self.bits,
        );
        self.counters.scans += 1;
        if self.scheme == Scheme::Dynamic {
            let mut t = RegionTally::new(&self.th, self.page_bytes);
            for (i, &b) in self.bits.iter().enumerate() {
                let p = start + i;
                if placement[p] != FAST {
                    t.push(p as PageIdx, b);
                }
            }
            let g = choose_move_in(&t.finish(), &self.th, self.gran);
            if g > self.gran {
                self.counters.raises += 1;
            }
            self.gran = g;
        }
        self.bits
            .iter()
            .enumerate()
            .filter(|(_, &b)| b)
            .map(|(i, _)| (start + i) as PageIdx)
            .collect()
    }

    /// Move-out over virtual ranges: the granularity decision (dynamic) and the demotion
    /// candidates at the granularity in force after it.
    fn move_out_virtual(&mut self, snap: &Snapshot<'_>, bits: &dyn AccessBits) -> Vec<Cand> {
        let placement = snap.placement;
        let n = placement.len();
        let chunk = Granularity::M2.pages(self.page_bytes) as usize;
        if self.cursor_out >= n {
            self.cursor_out = 0;
        }
        let start = self.cursor_out;
        let end = Self::scan_end(placement, start, self.cfg.scan_pages, chunk, |t| t == FAST);
        self.cursor_out = if end >= n { 0 } else { end };
        let range = PageRange {
            start: start as u32,
            len: (end - start) as u32,
        };
        bits.read_and_clear_if(
            range,
            &mut |p| placement[p as usize] == FAST,
            &mut self.bits,
        );
        self.counters.scans += 1;
        // A page promoted since this scan last passed counts as accessed, once.
        for (i, b) in self.bits.iter_mut().enumerate() {
            let p = start + i;
            if placement[p] == FAST && std::mem::take(&mut self.fresh[p]) {
                *b = true;
            }
        }
        if self.scheme == Scheme::Dynamic {
            let mut t = RegionTally::new(&self.th, self.page_bytes);
            for (i, &b) in self.bits.iter().enumerate() {
                let p = start + i;
                if placement[p] == FAST {
                    t.push(p as PageIdx, b);
                }
            }
            let g = choose_move_out(&t.finish(), &self.th, self.gran);
            if g < self.gran {
                self.counters.lowers += 1;
            }
            self.gran = g;
        }
        // The regions of the granularity holding a fast page whose bit was not set, the
        // least accessed first (scan order among equals).
        let g = self.gran.pages(self.page_bytes) as usize;
        let mut out: Vec<(u64, Cand)> = Vec::new();
        let mut rs = start - start % g;
        while rs < end {
            let re = rs + g;
            if re > n {
                break;
            }
            let (mut fast, mut accessed) = (0u64, 0u64);
            let (lo, hi) = (rs.max(start), re.min(end));
            for (tier, bit) in placement[lo..hi].iter().zip(&self.bits[lo - start..hi - start]) {
                if *tier == FAST {
                    fast += 1;
                    accessed += *bit as u64;
                }
            }
            if accessed < fast {
                out.push((
                    accessed * 1024 / fast,
                    Cand {
                        range: PageRange {
                            start: rs as u32,
                            len: g as u32,
                        },
                        pages: fast,
                    },
                ));
            }
            rs = re;
        }
        out.sort_by_key(|(share, _)| *share);
        out.into_iter().map(|(_, c)| c).collect()
    }

    /// The baseline's scan of one tier's frames from `cursor`: `scan_pages` resident pages,
    /// one bit each; returns (pages whose bit was set, pages whose bit was not).
    fn scan_frames(
        &mut self,
        tier_slow: bool,
        bits: &dyn AccessBits,
        placement: &[TierId],
    ) -> (Vec<PageIdx>, Vec<PageIdx>) {
        let frames = self.frames.as_ref().expect("frames");
        let tiers: Vec<usize> = if tier_slow {
            (1..frames.slots.len()).collect()
        } else {
            vec![0]
        };
        let total: usize = tiers.iter().map(|&t| frames.slots[t].len()).sum();
        let mut cursor = if tier_slow {
            self.fcursor_in
        } else {
            self.fcursor_out
        };
        let (mut on, mut off) = (Vec::new(), Vec::new());
        let mut read = 0u32;
        let mut visited = 0usize;
        let mut one = Vec::with_capacity(1);
        while read < self.cfg.scan_pages && visited < total {
            if cursor >= total {
                cursor = 0;
            }
            // Frame `cursor` of the concatenated frames of `tiers`.
            let (mut t, mut f) = (0, cursor);
            while f >= frames.slots[tiers[t]].len() {
                f -= frames.slots[tiers[t]].len();
                t += 1;
            }
            cursor += 1;
            visited += 1;
            let page = frames.slots[tiers[t]][f];
            if page == NONE || (placement[page as usize] == FAST) == tier_slow {
                continue;
            }
            bits.read_and_clear(PageRange::one(page), &mut one);
            read += 1;
            if !tier_slow && std::mem::take(&mut self.fresh[page as usize]) {
                one[0] = true;
            }
            if one[0] {
                on.push(page);
            } else {
                off.push(page);
            }
        }
        if tier_slow {
            self.fcursor_in = cursor;
        } else {
            self.fcursor_out = cursor;
        }
        self.counters.scans += 1;
        (on, off)
    }
}

impl Ics18 {
    /// One move-out scan (its queue is empty): its demotion candidates, in order (and,
    /// dynamic, the decision whether to lower the granularity).
    fn scan_out(&mut self, snap: &Snapshot<'_>, bits: &dyn AccessBits) {
        if self.scheme == Scheme::Baseline {
            let (_, cold) = self.scan_frames(false, bits, snap.placement);
            self.out_queue.extend(cold.into_iter().map(|p| Cand {
                range: PageRange::one(p),
                pages: 1,
            }));
        } else {
            let found = self.move_out_virtual(snap, bits);
            self.out_queue.extend(found);
        }
    }

    /// A queued demotion candidate as it is now: `None` once it holds no fast page (the
    /// program's own accesses since the scan are not looked at again: the paper's move-out
    /// acts on what its scan saw).
    fn still_candidate(&self, c: Cand, snap: &Snapshot<'_>) -> Option<Cand> {
        let placement = snap.placement;
        let r = c.range.start as usize..(c.range.end() as usize).min(placement.len());
        let fast = placement[r].iter().filter(|&&t| t == FAST).count() as u64;
        (fast > 0).then_some(Cand {
            range: c.range,
            pages: fast,
        })
    }
}

impl Policy for Ics18 {
    fn name(&self) -> String {
        ENTRY.name.into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::AccessBitScan
    }
    fn needs(&self) -> Needs {
        let g = match self.scheme {
            Scheme::Baseline | Scheme::Static(Granularity::K4) => 0,
            Scheme::Static(g) => g.bytes(),
            Scheme::Dynamic => Granularity::M2.bytes(),
        };
        Needs {
            granularity_bytes: g,
            ..Needs::tracking(&self.tracker())
        }
    }
    fn quantum_ns(&self) -> u64 {
        self.quantum_ns
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        let Some(bits) = snap.access_bits else {
            return plan;
        };
        if snap.tiers.len() < 2 || snap.placement.is_empty() {
            return plan;
        }
        self.page_bytes = snap.page_bytes.max(1);
        if self.fresh.len() != snap.placement.len() {
            self.fresh = vec![false; snap.placement.len()];
        }
        if self.scheme == Scheme::Baseline && self.frames.is_none() {
            self.frames = Some(Frames::new(snap));
        }
        self.settle(snap);
        let virt = self.scheme != Scheme::Baseline;
        // This period's move-in scan: its candidates join the queue (the oldest dropped
        // past `2 × scan_pages`).
        let found: Vec<PageIdx> = if virt {
            self.move_in_virtual(snap, bits)
        } else {
            self.scan_frames(true, bits, snap.placement).0
        };
        self.in_queue.extend(found);
        let cap = 2 * self.cfg.scan_pages as usize;
        while self.in_queue.len() > cap {
            self.in_queue.pop_front();
        }
        // The move-out thread scans (at most once a period) when room is needed and the
        // candidates of its last scan are used up.
        let free_now = (snap.free_bytes(FAST) / self.page_bytes) as i64;
        let most = Granularity::M2.pages(self.page_bytes) as i64;
        if self.out_queue.is_empty() && !self.in_queue.is_empty() && free_now < most {
            self.scan_out(snap, bits);
        }
        // Promote the queue in order, up to the window, each region (of the granularity now
        // in force) once, demoting only to make room; a region is never both demoted and
        // promoted in one quantum.
        if !self.pending_was_empty {
            self.window = (2 * self.landed_in + 2).clamp(4, 1 << 16);
        }
        let n = snap.placement.len();
        let mut free = (snap.free_bytes(FAST) / self.page_bytes) as i64;
        let mut planned = std::collections::HashSet::new();
        let mut promoted = 0;
        'promote: while promoted < self.window {
            let Some(p) = self.in_queue.pop_front() else {
                break;
            };
            if snap.placement.get(p as usize).is_none_or(|&t| t == FAST) {
                continue;
            }
            let r = self.gran.region_of(p, self.page_bytes);
            if r.end() as usize > n || planned.contains(&r.start) {
                continue;
            }
            let need = snap.placement[r.start as usize..r.end() as usize]
                .iter()
                .filter(|&&t| t != FAST)
                .count() as i64;
            while free < need {
                let d = loop {
                    let Some(d) = self.out_queue.pop_front() else {
                        // No room: this candidate waits for the next period.
                        self.in_queue.push_front(p);
                        break 'promote;
                    };
                    let g = self.gran.pages(self.page_bytes);
                    if d.range.len != g || planned.contains(&d.range.start) {
                        continue;
                    }
                    if let Some(d) = self.still_candidate(d, snap) {
                        break d;
                    }
                };
                planned.insert(d.range.start);
                plan.push_range(d.range, SLOW);
                self.pending.push(Pending {
                    range: d.range,
                    to: SLOW,
                });
                free += d.pages as i64;
            }
            planned.insert(r.start);
            plan.push_range(r, FAST);
            self.pending.push(Pending { range: r, to: FAST });
            free -= need;
            promoted += 1;
        }
        self.pending_was_empty = promoted == 0;
        plan
    }
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("migrations_4k", c.migrations[0]),
            ("migrations_64k", c.migrations[1]),
            ("migrations_2m", c.migrations[2]),
            ("promotions", c.promotions),
            ("demotions", c.demotions),
            ("raises", c.raises),
            ("lowers", c.lowers),
            ("scans", c.scans),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use tiermem_core::{TierKind, TierSpec, TierTelemetry};

    /// Bits set by hand; reading clears them.
    #[derive(Debug)]
    struct Bits(RefCell<Vec<bool>>);
    impl AccessBits for Bits {
        fn read_and_clear_if(
            &self,
            range: PageRange,
            read: &mut dyn FnMut(PageIdx) -> bool,
            out: &mut Vec<bool>,
        ) {
            out.clear();
            let mut b = self.0.borrow_mut();
            for p in range.pages() {
                if (p as usize) < b.len() && read(p) {
                    out.push(std::mem::replace(&mut b[p as usize], false));
                } else {
                    out.push(false);
                }
            }
        }
    }

    struct World {
        specs: Vec<TierSpec>,
        tiers: Vec<TierTelemetry>,
        placement: Vec<TierId>,
        bits: Bits,
    }

    const PAGE: u64 = 4096;

    impl World {
        /// `pages` pages of 4 KiB, the first `fast` in a fast tier of `fast_cap` pages.
        fn new(pages: usize, fast: usize, fast_cap: u64) -> World {
            let spec = |name: &str, cap: u64| TierSpec {
                name: name.into(),
                kind: TierKind::Dram,
                capacity_bytes: cap * PAGE,
                unloaded_latency_ns: 80.0,
                peak_bandwidth_bytes_per_s: 1e10,
                cost_per_gb: 1.0,
            };
            let mut w = World {
                specs: vec![spec("fast", fast_cap), spec("slow", 1 << 30)],
                tiers: vec![TierTelemetry::default(); 2],
                placement: (0..pages)
                    .map(|p| if p < fast { FAST } else { SLOW })
                    .collect(),
                bits: Bits(RefCell::new(vec![false; pages])),
            };
            w.tiers[0].capacity_bytes = fast_cap * PAGE;
            w.tiers[1].capacity_bytes = (1 << 30) * PAGE;
            w.recount();
            w
        }
        fn recount(&mut self) {
            for (i, t) in self.tiers.iter_mut().enumerate() {
                t.used_bytes =
                    self.placement.iter().filter(|x| x.index() == i).count() as u64 * PAGE;
            }
        }
        fn snap(&self) -> Snapshot<'_> {
            Snapshot {
                now_ns: 0,
                quantum_ns: 100_000,
                page_bytes: PAGE,
                tier_specs: &self.specs,
                tiers: &self.tiers,
                placement: &self.placement,
                events: &[],
                tenants: &[],
                controls: &tiermem_core::NO_CONTROLS,
                tenant_telemetry: &[],
                access_bits: Some(&self.bits),
                moved: None,
            }
        }
        fn apply(&mut self, plan: &Plan) {
            for m in &plan.moves {
                for p in m.range.pages() {
                    self.placement[p as usize] = m.to;
                }
            }
            self.recount();
        }
        fn set(&self, pages: impl IntoIterator<Item = usize>) {
            let mut b = self.bits.0.borrow_mut();
            for p in pages {
                b[p] = true;
            }
        }
    }

    fn policy(scheme: &str) -> Ics18 {
        let mut t = toml::Table::new();
        t.insert("scheme".into(), scheme.into());
        let cfg = crate::PolicyConfig::from_name("ics18", t).unwrap();
        let cfg: &Ics18Config = cfg.params().unwrap();
        Ics18::new(
            cfg.clone(),
            BuildContext {
                page_bytes: Some(PAGE),
            },
        )
    }

    #[test]
    fn static_granularities_move_aligned_regions_holding_accessed_pages() {
        for (scheme, len) in [("static-4k", 1), ("static-64k", 16), ("static-2m", 512)] {
            // 8 MiB, the first 2 MiB fast (full), page 1000 and 1001 accessed in slow.
            let mut w = World::new(2048, 512, 512);
            w.set([1000, 1001]);
            let mut p = policy(scheme);
            let plan = p.decide(&w.snap());
            let promos: Vec<PageRange> = plan
                .moves
                .iter()
                .filter(|m| m.to == FAST)
                .map(|m| m.range)
                .collect();
            let want: Vec<PageRange> = match len {
                1 => vec![PageRange::one(1000), PageRange::one(1001)],
                16 => vec![PageRange {
                    start: 992,
                    len: 16,
                }],
                _ => vec![PageRange {
                    start: 512,
                    len: 512,
                }],
            };
            assert_eq!(promos, want, "{scheme}");
            assert!(plan
                .moves
                .iter()
                .all(|m| m.is_aligned() && m.range.len == len));
            // Room was made first: the demotions free exactly what the promotions need.
            let demoted: u32 = plan
                .moves
                .iter()
                .filter(|m| m.to == SLOW)
                .map(|m| m.range.len)
                .sum();
            assert_eq!(demoted, want.iter().map(|r| r.len).sum::<u32>(), "{scheme}");
            assert_eq!(plan.moves[0].to, SLOW, "{scheme}: demote before promoting");
            w.apply(&plan);
            p.decide(&w.snap());
            let c = p.counters();
            let applied: u64 = c[..3].iter().map(|x| x.1).sum();
            assert_eq!(applied, plan.moves.len() as u64, "{scheme}");
        }
    }

    #[test]
    fn dynamic_raises_on_a_dense_scan_and_lowers_on_a_sparse_one() {
        // 16 MiB slow after 2 MiB fast; the fast tier has room.
        let w = World::new(4608, 512, 4608);
        let mut p = policy("dynamic");
        assert_eq!(p.granularity(), Granularity::K4);
        // A stream swept 8 whole 2 MiB regions of the slow tier: 2 MiB, 8 moves.
        w.set(512..4608);
        let plan = p.decide(&w.snap());
        assert_eq!(p.granularity(), Granularity::M2);
        assert!(plan
            .moves
            .iter()
            .all(|m| m.range.len == 512 && m.to == FAST));
        assert_eq!(plan.moves.len(), 8);
        assert_eq!(p.counters()[5], ("raises", 1));

        // At 2 MiB with a full fast tier of scattered touched pages, one slow region
        // accessed: making room runs a move-out scan, which finds the fast regions sparse
        // (every 64th page) and lowers the granularity to 4 KiB before choosing what to
        // demote.
        let mut w = World::new(5120, 4608, 4608);
        let mut t = toml::Table::new();
        t.insert("scheme".into(), "dynamic".into());
        t.insert("initial_granularity".into(), "2MiB".into());
        let cfg = crate::PolicyConfig::from_name("ics18", t).unwrap();
        let mut p = Ics18::new(
            cfg.params::<Ics18Config>().unwrap().clone(),
            BuildContext {
                page_bytes: Some(PAGE),
            },
        );
        assert_eq!(p.granularity(), Granularity::M2);
        w.set((0..4608).step_by(64));
        w.set(4608..4620);
        let plan = p.decide(&w.snap());
        assert_eq!(p.granularity(), Granularity::K4);
        assert_eq!(p.counters()[6], ("lowers", 1));
        // The moves of this period are formed after both scans: 12 pages promoted, one
        // page of room made for each.
        let by = |to: TierId| -> Vec<u32> {
            plan.moves
                .iter()
                .filter(|m| m.to == to)
                .map(|m| m.range.len)
                .collect()
        };
        assert_eq!(by(FAST), vec![1; 12]);
        assert_eq!(by(SLOW), vec![1; 12]);
        w.apply(&plan);
    }

    #[test]
    fn nothing_is_demoted_without_need_and_accessed_fast_pages_stay() {
        let w = World::new(1024, 512, 1024);
        w.set([600, 700]);
        w.set(0..512); // every fast page accessed
        let mut p = policy("static-4k");
        let plan = p.decide(&w.snap());
        // Room for both: two promotions, no demotion.
        assert_eq!(plan.moves.len(), 2);
        assert!(plan.moves.iter().all(|m| m.to == FAST));
        // A full fast tier whose pages were all accessed: promotions find no room.
        let w = World::new(1024, 512, 512);
        w.set(0..512);
        w.set([600]);
        let plan = p.decide(&w.snap());
        assert!(plan.moves.is_empty(), "{plan:?}");
    }

    #[test]
    fn the_baseline_scans_frames_and_moves_4k() {
        let mut w = World::new(2048, 512, 512);
        w.set([1500, 600]);
        let mut p = policy("baseline");
        let plan = p.decide(&w.snap());
        // Physical order at first touch is virtual order: 600 before 1500.
        let promos: Vec<u32> = plan
            .moves
            .iter()
            .filter(|m| m.to == FAST)
            .map(|m| m.range.start)
            .collect();
        assert_eq!(promos, [600, 1500]);
        assert!(plan.moves.iter().all(|m| m.range.len == 1));
        w.apply(&plan);
        // Page 600 took the frame freed by the first demotion (page 0's frame 0).
        p.decide(&w.snap());
        let f = p.frames.as_ref().unwrap();
        assert_eq!(f.at[600], (FAST, 0));
        assert_eq!(f.slots[0][0], 600);
    }

    #[test]
    fn bad_schemes_and_thresholds_are_refused_by_name() {
        let e = crate::PolicyConfig::from_name("ics18", toml::toml! { scheme = "static-1g" })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("policy.scheme") && e.contains("static-64k"),
            "{e}"
        );
        let e = crate::PolicyConfig::from_name("ics18", toml::toml! { thr_high_64kb = 16 })
            .unwrap_err()
            .to_string();
        assert!(e.contains("policy.thr_high_64kb"), "{e}");
        let cfg = crate::PolicyConfig::from_name("ics18", toml::toml! { thr1_downgrade_2mb = 7 })
            .unwrap();
        assert_eq!(cfg.params::<Ics18Config>().unwrap().thr_low_num_reg_2mb, 7);
    }
}
