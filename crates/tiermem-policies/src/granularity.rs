//! How much to migrate at once: the migration granularity chosen from spatial locality
//! (Ryoo, John, Basu, "A Case for Granularity Aware Page Migration", ICS'18, §4). Pure
//! functions over per-4 KiB accessed bits, shared by the simulator's `ics18` policy and the
//! Linux runtime (fault-around / eviction in 4 KiB, 64 KiB or 2 MiB units).
//!
//! # API
//!
//! ```text
//! Granularity            K4 | K64 | M2: 4 KiB, 64 KiB, 2 MiB of virtually contiguous memory,
//!                        naturally aligned; .bytes(), .pages(page_bytes), .region_of(page)
//! Thresholds             the eight thresholds of §4 (defaults: 480, 10, 3, 3 high; the same
//!                        low) and their `density` reading (Density::Count, the paper's, or
//!                        Share of the pages counted per region), .validate(path)
//! RegionTally            one scan: push(page, accessed) for every page the path counts
//!                        (move-in: slow-resident pages; move-out: fast-resident ones), in
//!                        increasing page order, gaps allowed; finish() -> RegionCounts
//! RegionCounts           dense / sparse 2 MiB and 64 KiB regions of the scan
//! choose_move_in(&counts, &thresholds, current) -> Granularity     may only raise it
//! choose_move_out(&counts, &thresholds, current) -> Granularity    may only lower it
//! tally(bits, &thresholds, page_bytes) -> RegionCounts             RegionTally in one call
//! ```
//!
//! Typical use, once per scan of each path:
//!
//! ```
//! use tiermem_policies::granularity::{choose_move_in, Granularity, RegionTally, Thresholds};
//! let th = Thresholds::default();
//! let mut t = RegionTally::new(&th, 4096);
//! for page in 0..4096u32 {
//!     t.push(page, true); // a streaming scan: every slow page of 8 whole 2 MiB regions accessed
//! }
//! assert_eq!(choose_move_in(&t.finish(), &th, Granularity::K4), Granularity::M2);
//! ```
//!
//! # The rules (§4), and what the paper leaves open
//!
//! A region is counted by a scan when it holds at least one page the path counts; its
//! *accessed* count is how many of those pages had their accessed bit set.
//!
//! * **Move-in** (slow → fast; decides whether to *raise* the granularity): a 2 MiB region
//!   is *dense* when its accessed count is `> thr_high_2mb` (480), a 64 KiB region when it
//!   is `> thr_high_64kb` (10). At the end of the scan: more than `thr_high_num_reg_2mb` (3)
//!   dense 2 MiB regions → 2 MiB; otherwise more than `thr_high_num_reg_64kb` (3) dense
//!   64 KiB regions → 64 KiB. Neither: the scan found no locality to raise it for, and the
//!   granularity stays. The paper assigns raising to move-in and lowering to move-out, so
//!   move-in never lowers it: a 2 MiB granularity stays 2 MiB when a move-in scan only
//!   finds dense 64 KiB regions.
//! * **Move-out** (fast → slow; decides whether to *lower* it): a region is *sparse* when
//!   its accessed count is `< thr_low_2mb` (480) or `< thr_low_64kb` (10) **and at least 1**.
//!   The paper says "fewer than a threshold number of pages with their access bits set";
//!   read literally, a region of the fast tier nobody touched during the window is sparse,
//!   and every scan of a tier that holds cold data (which move-out exists to find) would
//!   lower the granularity whatever the program's locality: a streaming program at 2 MiB
//!   keeps the regions it swept minutes ago in the fast tier, untouched. An untouched region
//!   says the data is cold, not how much of a region a program touches once it touches it,
//!   so it is counted neither dense nor sparse. At the end of the scan: more than
//!   `thr_low_num_reg_2mb` (3) sparse 2 MiB regions **and** more than `thr_low_num_reg_64kb`
//!   (3) sparse 64 KiB regions → 4 KiB. Otherwise, at 2 MiB, more than
//!   `thr_low_num_reg_2mb` sparse 2 MiB regions (with at most `thr_low_num_reg_64kb` sparse
//!   64 KiB ones, the first rule having failed) → 64 KiB. The paper's sentence for this
//!   step names only the 64 KiB condition ("if the number of sparsely accessed 64KB regions
//!   is below the threshold ... and the current granularity is 2MB"); taken alone it would
//!   lower a dense streaming program from 2 MiB to 64 KiB on every scan that found few
//!   sparse 64 KiB regions, which is exactly when 2 MiB is right, so the step also requires
//!   the 2 MiB regions to be sparse (the granularity drops one step when 2 MiB is too coarse
//!   but 64 KiB is not).
//! * **Threshold names.** The text calls the 2 MiB count threshold of move-out
//!   `thr1_downgrade_2MB` and the listing of typical values `thr_low_num_reg_2MB`; it is
//!   `thr_low_num_reg_2mb` here (`thr1_downgrade_2mb` is accepted as an alias in configs).
//! * **Coinciding thresholds.** The typical high and low thresholds are equal (480 and 10):
//!   a region with exactly 480 (10) accessed pages is neither dense nor sparse; 481 is dense
//!   on a move-in scan, 479 sparse on a move-out scan. They are separate settings, so a band
//!   can be configured (`thr_low_2mb < thr_high_2mb`); nothing requires an order.
//!
//! Region sizes follow from the page size: 64 KiB and 2 MiB regions hold 16 and 512 pages
//! of 4 KiB (the thresholds are in those 4 KiB pages, as in the paper). With larger pages a
//! region holds `max(1, region / page)` pages and the thresholds apply unchanged.

use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{PageIdx, PageRange, Result, KIB, MIB};

/// A migration granularity: a naturally aligned range of virtually contiguous memory moved
/// as one operation (one TLB shootdown).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Granularity {
    #[serde(rename = "4KiB")]
    K4,
    #[serde(rename = "64KiB")]
    K64,
    #[serde(rename = "2MiB")]
    M2,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [Granularity::K4, Granularity::K64, Granularity::M2];

    pub fn bytes(self) -> u64 {
        match self {
            Granularity::K4 => 4 * KIB,
            Granularity::K64 => 64 * KIB,
            Granularity::M2 => 2 * MIB,
        }
    }
    /// Pages of `page_bytes` in one move (at least 1).
    pub fn pages(self, page_bytes: u64) -> u32 {
        (self.bytes() / page_bytes.max(1)).max(1) as u32
    }
    /// The aligned range of this granularity holding `page`.
    pub fn region_of(self, page: PageIdx, page_bytes: u64) -> PageRange {
        let n = self.pages(page_bytes);
        PageRange {
            start: page - page % n,
            len: n,
        }
    }
    /// The granularity of a move of `pages` pages, if it is one of the three.
    pub fn of_pages(pages: u32, page_bytes: u64) -> Option<Granularity> {
        Granularity::ALL
            .into_iter()
            .find(|g| g.pages(page_bytes) == pages)
    }
    /// "4KiB", "64KiB", "2MiB".
    pub fn label(self) -> &'static str {
        match self {
            Granularity::K4 => "4KiB",
            Granularity::K64 => "64KiB",
            Granularity::M2 => "2MiB",
        }
    }
}

/// The thresholds of §4, in accessed 4 KiB pages per region and regions per scan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thresholds {
    /// Move-in: a 2 MiB region is dense above this many accessed pages (of 512). §4: 480.
    #[serde(default = "d_480")]
    pub thr_high_2mb: u32,
    /// Move-in: a 64 KiB region is dense above this many accessed pages (of 16). §4: 10.
    #[serde(default = "d_10")]
    pub thr_high_64kb: u32,
    /// Move-in: more dense 2 MiB regions than this in a scan → 2 MiB. §4: 3.
    #[serde(default = "d_3")]
    pub thr_high_num_reg_2mb: u32,
    /// Move-in: more dense 64 KiB regions than this → 64 KiB. §4: 3.
    #[serde(default = "d_3")]
    pub thr_high_num_reg_64kb: u32,
    /// Move-out: a touched 2 MiB region is sparse below this many accessed pages. §4: 480.
    #[serde(default = "d_480")]
    pub thr_low_2mb: u32,
    /// Move-out: a touched 64 KiB region is sparse below this many accessed pages. §4: 10.
    #[serde(default = "d_10")]
    pub thr_low_64kb: u32,
    /// Move-out: more sparse 2 MiB regions than this (and more sparse 64 KiB regions than
    /// `thr_low_num_reg_64kb`) → 4 KiB; at 2 MiB, more sparse 2 MiB regions alone → 64 KiB.
    /// §4: 3 (called `thr1_downgrade_2MB` in the text).
    #[serde(default = "d_3", alias = "thr1_downgrade_2mb")]
    pub thr_low_num_reg_2mb: u32,
    /// Move-out: see `thr_low_num_reg_2mb`. §4: 3.
    #[serde(default = "d_3")]
    pub thr_low_num_reg_64kb: u32,
    /// What the page thresholds are compared with ([`Density`]).
    #[serde(default)]
    pub density: Density,
}

/// How a region's accessed count meets the page thresholds. The paper's regions are wholly
/// in the tier a scan reads (it "ignores the access bit information of any pages mapped to
/// the fast memory", §4), and its thresholds are counts out of 512 and 16 pages. A region
/// partly in the other tier has fewer pages the scan counts: read as counts, a 2 MiB region
/// with 439 slow pages, every one accessed, is never dense on move-in, and a fast region of
/// 100 pages, every one accessed, is sparse on move-out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Density {
    /// Counts, as printed: dense above `thr_high` accessed pages, sparse below `thr_low`.
    #[default]
    Count,
    /// Shares of the pages the scan counted in the region: dense when more than
    /// `thr_high / region pages` of them were accessed, sparse below `thr_low / region
    /// pages`; the same as `Count` for a region wholly in the scanned tier.
    Share,
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

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            thr_high_2mb: 480,
            thr_high_64kb: 10,
            thr_high_num_reg_2mb: 3,
            thr_high_num_reg_64kb: 3,
            thr_low_2mb: 480,
            thr_low_64kb: 10,
            thr_low_num_reg_2mb: 3,
            thr_low_num_reg_64kb: 3,
            density: Density::Count,
        }
    }
}

impl Validate for Thresholds {
    fn validate(&self, p: &str) -> Result<()> {
        // "More than thr_high" must be reachable by a region of 512 (16) pages, and "fewer
        // than thr_low but at least one" by some count.
        let page_count = |name: &str, v: u32, lo: u32, hi: u32, what: &str| -> Result<()> {
            if v < lo || v > hi {
                return Err(invalid(
                    &join(p, name),
                    format!("{v} is outside {lo}..={hi}: {what}"),
                ));
            }
            Ok(())
        };
        page_count(
            "thr_high_2mb",
            self.thr_high_2mb,
            0,
            511,
            "a 2 MiB region has 512 pages of 4 KiB and is dense above this count",
        )?;
        page_count(
            "thr_high_64kb",
            self.thr_high_64kb,
            0,
            15,
            "a 64 KiB region has 16 pages of 4 KiB and is dense above this count",
        )?;
        page_count(
            "thr_low_2mb",
            self.thr_low_2mb,
            2,
            512,
            "a touched 2 MiB region is sparse below this count (and at 1 or more)",
        )?;
        page_count(
            "thr_low_64kb",
            self.thr_low_64kb,
            2,
            16,
            "a touched 64 KiB region is sparse below this count (and at 1 or more)",
        )?;
        for (name, v) in [
            ("thr_high_num_reg_2mb", self.thr_high_num_reg_2mb),
            ("thr_high_num_reg_64kb", self.thr_high_num_reg_64kb),
            ("thr_low_num_reg_2mb", self.thr_low_num_reg_2mb),
            ("thr_low_num_reg_64kb", self.thr_low_num_reg_64kb),
        ] {
            check_range(&join(p, name), v as f64, 0.0, 1e6)?;
        }
        Ok(())
    }
}

/// What one scan found: regions it counted (holding a page the path counts), and of those
/// the dense and the sparse ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionCounts {
    pub regions_2m: u32,
    pub regions_64k: u32,
    pub dense_2m: u32,
    pub dense_64k: u32,
    pub sparse_2m: u32,
    pub sparse_64k: u32,
    /// Pages counted and, of those, accessed.
    pub pages: u32,
    pub accessed: u32,
}

/// Counts dense and sparse regions over one scan's bits, fed in increasing page order.
#[derive(Clone, Debug)]
pub struct RegionTally {
    th: Thresholds,
    pages_64k: u32,
    pages_2m: u32,
    /// The region being counted (its index) and its (pages, accessed) so far.
    cur_64k: Option<(u32, u32, u32)>,
    cur_2m: Option<(u32, u32, u32)>,
    counts: RegionCounts,
}

impl RegionTally {
    pub fn new(th: &Thresholds, page_bytes: u64) -> RegionTally {
        RegionTally {
            th: th.clone(),
            pages_64k: Granularity::K64.pages(page_bytes),
            pages_2m: Granularity::M2.pages(page_bytes),
            cur_64k: None,
            cur_2m: None,
            counts: RegionCounts::default(),
        }
    }

    /// One page the path counts and whether its accessed bit was set. Pages must come in
    /// increasing order (a scan that wraps around the address space finishes one tally and
    /// starts another, or accepts that the region at the wrap is counted twice).
    pub fn push(&mut self, page: PageIdx, accessed: bool) {
        let a = accessed as u32;
        let r64 = page / self.pages_64k;
        match &mut self.cur_64k {
            Some((r, n, acc)) if *r == r64 => {
                *n += 1;
                *acc += a;
            }
            cur => {
                if let Some((_, n, acc)) = cur.take() {
                    Self::close(&mut self.counts, self.pages_64k, false, n, acc, &self.th);
                }
                *cur = Some((r64, 1, a));
            }
        }
        let r2 = page / self.pages_2m;
        match &mut self.cur_2m {
            Some((r, n, acc)) if *r == r2 => {
                *n += 1;
                *acc += a;
            }
            cur => {
                if let Some((_, n, acc)) = cur.take() {
                    Self::close(&mut self.counts, self.pages_2m, true, n, acc, &self.th);
                }
                *cur = Some((r2, 1, a));
            }
        }
        self.counts.pages += 1;
        self.counts.accessed += a;
    }

    fn close(
        c: &mut RegionCounts,
        region_pages: u32,
        is_2m: bool,
        pages: u32,
        accessed: u32,
        th: &Thresholds,
    ) {
        if pages == 0 {
            return;
        }
        let (high, low) = if is_2m {
            (th.thr_high_2mb, th.thr_low_2mb)
        } else {
            (th.thr_high_64kb, th.thr_low_64kb)
        };
        // accessed / region_pages against thr / region_pages (Count) or thr / pages (Share),
        // in integers: accessed * pages_of_the_reading against thr * region_pages.
        let of = match th.density {
            Density::Count => region_pages as u64,
            Density::Share => pages as u64,
        };
        let scaled = accessed as u64 * region_pages as u64;
        let dense = scaled > high as u64 * of;
        let sparse = accessed >= 1 && scaled < low as u64 * of;
        if is_2m {
            c.regions_2m += 1;
            c.dense_2m += dense as u32;
            c.sparse_2m += sparse as u32;
        } else {
            c.regions_64k += 1;
            c.dense_64k += dense as u32;
            c.sparse_64k += sparse as u32;
        }
    }

    /// The counts of the scan (the last regions closed).
    pub fn finish(mut self) -> RegionCounts {
        if let Some((_, n, acc)) = self.cur_64k.take() {
            Self::close(&mut self.counts, self.pages_64k, false, n, acc, &self.th);
        }
        if let Some((_, n, acc)) = self.cur_2m.take() {
            Self::close(&mut self.counts, self.pages_2m, true, n, acc, &self.th);
        }
        self.counts
    }
}

/// [`RegionTally`] over `(page, accessed)` pairs in increasing page order.
pub fn tally(
    bits: impl IntoIterator<Item = (PageIdx, bool)>,
    th: &Thresholds,
    page_bytes: u64,
) -> RegionCounts {
    let mut t = RegionTally::new(th, page_bytes);
    for (p, a) in bits {
        t.push(p, a);
    }
    t.finish()
}

/// The granularity after a move-in scan (it may only rise): 2 MiB when more than
/// `thr_high_num_reg_2mb` 2 MiB regions were dense, else 64 KiB when more than
/// `thr_high_num_reg_64kb` 64 KiB regions were, else unchanged.
pub fn choose_move_in(c: &RegionCounts, th: &Thresholds, current: Granularity) -> Granularity {
    let found = if c.dense_2m > th.thr_high_num_reg_2mb {
        Granularity::M2
    } else if c.dense_64k > th.thr_high_num_reg_64kb {
        Granularity::K64
    } else {
        Granularity::K4
    };
    current.max(found)
}

/// The granularity after a move-out scan (it may only fall): 4 KiB when more than
/// `thr_low_num_reg_2mb` 2 MiB regions and more than `thr_low_num_reg_64kb` 64 KiB regions
/// were sparse; else, at 2 MiB, 64 KiB when more than `thr_low_num_reg_2mb` 2 MiB regions
/// were sparse; else unchanged.
pub fn choose_move_out(c: &RegionCounts, th: &Thresholds, current: Granularity) -> Granularity {
    let coarse_2m = c.sparse_2m > th.thr_low_num_reg_2mb;
    let coarse_64k = c.sparse_64k > th.thr_low_num_reg_64kb;
    let found = if coarse_2m && coarse_64k {
        Granularity::K4
    } else if coarse_2m {
        Granularity::K64
    } else {
        Granularity::M2
    };
    current.min(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: u64 = 4096;

    /// Bits of `regions` whole 2 MiB regions from page 0, accessed where `f(page)`.
    fn scan(regions: u32, f: impl Fn(u32) -> bool) -> RegionCounts {
        tally(
            (0..regions * 512).map(|p| (p, f(p))),
            &Thresholds::default(),
            PAGE,
        )
    }

    #[test]
    fn sizes_and_regions() {
        assert_eq!(Granularity::K4.pages(PAGE), 1);
        assert_eq!(Granularity::K64.pages(PAGE), 16);
        assert_eq!(Granularity::M2.pages(PAGE), 512);
        assert_eq!(Granularity::M2.pages(2 * MIB), 1);
        assert_eq!(
            Granularity::K64.region_of(37, PAGE),
            PageRange { start: 32, len: 16 }
        );
        assert_eq!(Granularity::of_pages(16, PAGE), Some(Granularity::K64));
        assert_eq!(Granularity::of_pages(8, PAGE), None);
        assert!(Granularity::K4 < Granularity::K64 && Granularity::K64 < Granularity::M2);
    }

    #[test]
    fn a_stream_raises_to_2m_and_random_bits_do_not() {
        let th = Thresholds::default();
        // Every page of 8 regions: 8 dense 2 MiB regions.
        let c = scan(8, |_| true);
        assert_eq!((c.dense_2m, c.dense_64k), (8, 256));
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::M2);
        // Every 3rd page (171 of 512): no dense region at all.
        let c = scan(8, |p| p % 3 == 0);
        assert_eq!((c.dense_2m, c.dense_64k), (0, 0));
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::K4);
        // Whole 64 KiB chunks, one in four: 64 dense 64 KiB regions, 2 MiB regions at 128.
        let c = scan(8, |p| (p / 16) % 4 == 0);
        assert_eq!((c.dense_2m, c.dense_64k), (0, 64));
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::K64);
    }

    #[test]
    fn thresholds_are_strict_and_counts_must_exceed_3() {
        let th = Thresholds::default();
        // 480 accessed of 512 is not dense; 481 is.
        let c = scan(8, |p| p % 512 < 480);
        assert_eq!(c.dense_2m, 0);
        let c = scan(8, |p| p % 512 < 481);
        assert_eq!(c.dense_2m, 8);
        // Exactly 3 dense 2 MiB regions do not raise to 2 MiB (their 64 KiB regions are
        // dense, so 64 KiB); 4 do.
        let c = scan(8, |p| p < 3 * 512);
        assert_eq!(c.dense_2m, 3);
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::K64);
        let c = scan(8, |p| p < 4 * 512);
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::M2);
        // Three dense 64 KiB regions: nothing; four: 64 KiB.
        let c = scan(1, |p| p < 3 * 16);
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::K4);
        let c = scan(1, |p| p < 4 * 16);
        assert_eq!(choose_move_in(&c, &th, Granularity::K4), Granularity::K64);
    }

    #[test]
    fn move_in_only_raises() {
        let th = Thresholds::default();
        let chunks = scan(8, |p| (p / 16) % 4 == 0);
        assert_eq!(
            choose_move_in(&chunks, &th, Granularity::M2),
            Granularity::M2
        );
        let nothing = scan(8, |_| false);
        assert_eq!(
            choose_move_in(&nothing, &th, Granularity::K64),
            Granularity::K64
        );
    }

    #[test]
    fn move_out_lowers_on_touched_sparse_regions_only() {
        let th = Thresholds::default();
        // A cold fast tier (nothing touched): no evidence, nothing changes.
        let cold = scan(8, |_| false);
        assert_eq!((cold.sparse_2m, cold.sparse_64k), (0, 0));
        assert_eq!(
            choose_move_out(&cold, &th, Granularity::M2),
            Granularity::M2
        );
        // Scattered single pages: sparse everywhere -> 4 KiB.
        let scattered = scan(8, |p| p % 64 == 0);
        assert_eq!((scattered.sparse_2m, scattered.sparse_64k), (8, 64));
        assert_eq!(
            choose_move_out(&scattered, &th, Granularity::M2),
            Granularity::K4
        );
        assert_eq!(
            choose_move_out(&scattered, &th, Granularity::K64),
            Granularity::K4
        );
        // Whole 64 KiB chunks: 2 MiB is too coarse, 64 KiB is not -> 64 KiB from 2 MiB, and
        // 64 KiB stays.
        let chunks = scan(8, |p| (p / 16) % 4 == 0);
        assert_eq!((chunks.sparse_2m, chunks.sparse_64k), (8, 0));
        assert_eq!(
            choose_move_out(&chunks, &th, Granularity::M2),
            Granularity::K64
        );
        assert_eq!(
            choose_move_out(&chunks, &th, Granularity::K64),
            Granularity::K64
        );
        // A stream: whole regions swept (dense) and one half-swept (sparse, 1 <= 3): stays.
        let stream = scan(8, |p| p < 7 * 512 + 200);
        assert_eq!(stream.sparse_2m, 1);
        assert_eq!(
            choose_move_out(&stream, &th, Granularity::M2),
            Granularity::M2
        );
        // Move-out never raises.
        assert_eq!(
            choose_move_out(&stream, &th, Granularity::K4),
            Granularity::K4
        );
    }

    #[test]
    fn gaps_and_partial_regions() {
        // Only pages the path counts are pushed: a 2 MiB region with 100 slow pages all
        // accessed is not dense (100 <= 480), its 64 KiB regions are.
        let th = Thresholds::default();
        let c = tally((0..100u32).map(|p| (p * 5, true)), &th, PAGE);
        assert_eq!(c.regions_2m, 1);
        assert_eq!(c.dense_2m, 0);
        assert_eq!(c.pages, 100);
        // 16 pages per 64 KiB region, every 5th: 3 or 4 per region, none dense.
        assert_eq!(c.dense_64k, 0);
    }

    #[test]
    fn share_density_judges_a_region_on_the_pages_the_scan_counts() {
        // 8 regions of which every 7th page is in the other tier (not pushed), every
        // counted page accessed: 439 of 439 (2 MiB), 13-14 of 13-14 (64 KiB).
        let bits = || {
            (0..8 * 512u32)
                .filter(|p| !p.is_multiple_of(7))
                .map(|p| (p, true))
        };
        let count = tally(bits(), &Thresholds::default(), PAGE);
        assert_eq!(count.dense_2m, 0, "439 accessed is not more than 480");
        let share_th = Thresholds {
            density: Density::Share,
            ..Thresholds::default()
        };
        let share = tally(bits(), &share_th, PAGE);
        assert_eq!((share.dense_2m, share.dense_64k), (8, 256));
        assert_eq!(
            choose_move_in(&share, &share_th, Granularity::K4),
            Granularity::M2
        );
        // Move-out: a region with 100 fast pages, all accessed, is sparse as a count and
        // not as a share; 50 of them accessed is sparse either way.
        let fast = |acc: u32| (0..100u32).map(move |p| (p, p < acc));
        assert_eq!(tally(fast(100), &Thresholds::default(), PAGE).sparse_2m, 1);
        assert_eq!(tally(fast(100), &share_th, PAGE).sparse_2m, 0);
        assert_eq!(tally(fast(50), &share_th, PAGE).sparse_2m, 1);
        // A whole region: the two readings agree at the thresholds.
        for acc in [479, 480, 481] {
            let whole = |th: &Thresholds| tally((0..512u32).map(|p| (p, p < acc)), th, PAGE);
            assert_eq!(whole(&Thresholds::default()), whole(&share_th), "{acc}");
        }
        let t: Thresholds = toml::from_str("density = \"share\"").unwrap();
        assert_eq!(t.density, Density::Share);
        assert!(toml::from_str::<Thresholds>("density = \"ratio\"").is_err());
    }

    #[test]
    fn thresholds_validate_and_decode() {
        Thresholds::default().validate("policy").unwrap();
        let bad = Thresholds {
            thr_high_2mb: 512,
            ..Thresholds::default()
        };
        let e = bad.validate("policy").unwrap_err().to_string();
        assert!(e.contains("policy.thr_high_2mb"), "{e}");
        let bad = Thresholds {
            thr_low_64kb: 1,
            ..Thresholds::default()
        };
        assert!(bad
            .validate("policy")
            .unwrap_err()
            .to_string()
            .contains("policy.thr_low_64kb"));
        let t: Thresholds = toml::from_str("thr1_downgrade_2mb = 5").unwrap();
        assert_eq!(t.thr_low_num_reg_2mb, 5);
    }
}
