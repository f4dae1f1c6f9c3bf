//! A key-value store driven by the YCSB core workloads.
//!
//! Records (`key_size + value_size` bytes) are packed into pages, `floor(page / record)`
//! to a page, none straddling (a slab allocator's layout); a record larger than a page
//! spans `ceil(record / page)` whole pages and an operation on it is attributed to one of
//! them uniformly (its lines are spread over them; in expectation that is exact).
//!
//! Operation mixes, from YCSB's `workloads/workload[a-f]` (core workload properties):
//!
//! | mix | operations                                   | request distribution |
//! |-----|----------------------------------------------|----------------------|
//! | A   | 50% read, 50% update                         | zipfian              |
//! | B   | 95% read, 5% update                          | zipfian              |
//! | C   | 100% read                                    | zipfian              |
//! | D   | 95% read, 5% insert                          | latest               |
//! | E   | 95% scan (1..=100 records, uniform), 5% insert | zipfian (scan start) |
//! | F   | 50% read, 50% read-modify-write              | zipfian              |
//!
//! Key popularity: Zipf with θ = 0.99 (YCSB `ZipfianGenerator.ZIPFIAN_CONSTANT`),
//! `P(rank k) = k^-θ / H_{N,θ}`, scrambled like YCSB's `ScrambledZipfianGenerator` so popular keys
//! scatter over the key space (we use a seeded random permutation, a bijection, where YCSB
//! hashes the rank with FNV-64 modulo the key count, which collides); or Gaussian like
//! memtier's `--key-pattern G` (mean `--key-median`, default the middle key; standard
//! deviation `--key-stddev`, default (max - min) / 6; draws outside the key range are
//! drawn again), laid out in key order; or uniform; or a hot set (HeMemKV in Colloid
//! §5.3: 20 % of the keys drawn uniformly with probability 0.9, the rest otherwise). Besides
//! A–F, `mix` takes a read:update ratio ("90:10", HeMemKV's GET/UPDATE).
//!
//! Mixes A, B, C and F are stationary and expose exact per-page probabilities (Zipf:
//! `k^-θ / H_{N,θ}`; Gaussian: the normal density integrated over each key's rounding
//! interval, truncated to the key range). D and E insert records, which moves the
//! distribution (D reads the latest records): they return `None`.
//!
//! Sampling is exact and O(1): the pmf above is computed once in f64 and drawn from with
//! Walker's alias method (`AliasTable` in `workload/mod.rs`) — over pages for A/B/C/F (so `next()`
//! draws from exactly `probabilities()`), over key ranks for D/E. We measured
//! `rand_distr::Zipf` (0.4, a rejection sampler with `powf`s per draw) at ~200 ns per
//! operation here against a few ns for the alias table; both are exact, and the tests
//! check the sampler against `1/H_{N,θ}` computed independently.
//!
//! Inserts (D, E) fill the slots `keys..max_keys`, then go around the slots again from 0,
//! overwriting the oldest record (a full store evicting FIFO; with the default
//! `max_keys = keys` every insert replaces the oldest record). E's scans cover the loaded
//! records `0..keys` only. D's reads pick the record `z - 1` inserts before the latest, `z`
//! from the key distribution (YCSB's `SkewedLatestGenerator`); its records are laid out in
//! insertion order. E emits one access per record visited: a scan of `L` records is `L`
//! consecutive `next()` calls, so for E an "operation" is one record visit.

use super::{index_from, lines_for, threshold, Access, AliasTable, OpShape, Workload};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};

/// A YCSB core workload, or a read/update ratio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mix {
    A,
    B,
    C,
    D,
    E,
    F,
    /// Reads and updates with this update fraction ("90:10" = 0.1; HeMemKV in Colloid
    /// §5.3 is GET/UPDATE 90/10).
    ReadUpdate(f64),
}

/// Operation proportions of a mix (YCSB `readproportion`, `updateproportion`, ...).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Proportions {
    pub read: f64,
    pub update: f64,
    pub insert: f64,
    pub scan: f64,
    pub read_modify_write: f64,
}

impl Mix {
    pub fn parse(s: &str) -> Result<Mix, String> {
        let t = s.trim().to_ascii_uppercase();
        let t = t.strip_prefix("YCSB-").unwrap_or(&t);
        Ok(match t {
            "A" => Mix::A,
            "B" => Mix::B,
            "C" => Mix::C,
            "D" => Mix::D,
            "E" => Mix::E,
            "F" => Mix::F,
            _ => {
                let bad = || {
                    format!("`{s}` is not a YCSB core workload or a read:update ratio; use \"A\", \"B\", \"C\", \"D\", \"E\", \"F\" or e.g. \"90:10\"")
                };
                let (r, u) = t.split_once(':').ok_or_else(bad)?;
                let (r, u): (f64, f64) = (
                    r.trim().parse().map_err(|_| bad())?,
                    u.trim().parse().map_err(|_| bad())?,
                );
                if !(r.is_finite() && u.is_finite() && r >= 0.0 && u >= 0.0 && r + u > 0.0) {
                    return Err(bad());
                }
                Mix::ReadUpdate(u / (r + u))
            }
        })
    }

    /// From YCSB's `workloads/workload[a-f]`.
    pub fn proportions(self) -> Proportions {
        let z = Proportions {
            read: 0.0,
            update: 0.0,
            insert: 0.0,
            scan: 0.0,
            read_modify_write: 0.0,
        };
        match self {
            Mix::A => Proportions {
                read: 0.5,
                update: 0.5,
                ..z
            },
            Mix::B => Proportions {
                read: 0.95,
                update: 0.05,
                ..z
            },
            Mix::C => Proportions { read: 1.0, ..z },
            Mix::D => Proportions {
                read: 0.95,
                insert: 0.05,
                ..z
            },
            Mix::E => Proportions {
                scan: 0.95,
                insert: 0.05,
                ..z
            },
            Mix::F => Proportions {
                read: 0.5,
                read_modify_write: 0.5,
                ..z
            },
            Mix::ReadUpdate(u) => Proportions {
                read: 1.0 - u,
                update: u,
                ..z
            },
        }
    }

    /// A, B, C, F draw every operation from one fixed key distribution.
    pub fn stationary(self) -> bool {
        !matches!(self, Mix::D | Mix::E)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeyDist {
    /// `P(rank k) ∝ (k+1)^-θ`.
    Zipf {
        theta: f64,
    },
    /// Normal around the middle key, standard deviation `stddev_fraction · keys`.
    Gaussian {
        stddev_fraction: f64,
    },
    Uniform,
    /// The first `hot_fraction` of the ranks drawn uniformly with `hot_probability`, the
    /// rest uniformly otherwise (HeMemKV, Colloid §5.3: 20 % hot keys, 90 %).
    HotSet {
        hot_fraction: f64,
        hot_probability: f64,
    },
}

#[derive(Clone, Debug)]
pub struct KvSpec {
    /// Records loaded.
    pub keys: u32,
    /// Record slots including room for inserts (≥ keys).
    pub max_keys: u32,
    pub record_bytes: u64,
    pub page_bytes: u64,
    pub mix: Mix,
    pub dist: KeyDist,
    pub scramble: bool,
    pub max_scan_length: u32,
    pub seed: u64,
}

/// What the last `next()` did (for tests and reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KvOp {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

pub struct Kv {
    mix: Mix,
    keys: u32,
    cap: u32,
    /// Over pages (stationary mixes) or key ranks (D, E).
    sampler: AliasTable,
    /// rank → record slot, when scrambled.
    perm: Option<Vec<u32>>,
    /// Records per page (0 when a record spans pages).
    per_page: u32,
    /// Pages per record (1 when records share pages).
    span: u32,
    n_pages: u32,
    probs: Option<Vec<f64>>,
    /// A/B/F: draw below this → update / read-modify-write. D/E: draw below → insert.
    write_thr: u64,
    /// Slot of the latest insert (D) / next insert counter (D, E).
    latest: u32,
    inserts: u64,
    scan_slot: u32,
    scan_left: u32,
    max_scan: u32,
    last: KvOp,
    shape: OpShape,
    label: String,
}

impl Kv {
    pub fn new(s: &KvSpec) -> Result<Kv, String> {
        let keys = s.keys.max(1);
        let cap = s.max_keys.max(keys);
        let rec = s.record_bytes.max(1);
        let (per_page, span) = if rec <= s.page_bytes {
            ((s.page_bytes / rec).min(u32::MAX as u64) as u32, 1u64)
        } else {
            (0, rec.div_ceil(s.page_bytes))
        };
        let n_pages_u64 = if per_page > 0 {
            (cap as u64).div_ceil(per_page as u64)
        } else {
            (cap as u64).saturating_mul(span)
        };
        if n_pages_u64 >= u32::MAX as u64 || span >= u32::MAX as u64 {
            return Err(format!("{n_pages_u64} pages exceed the simulator's page space; use fewer keys or larger pages"));
        }
        match s.dist {
            KeyDist::Zipf { theta } if !(theta.is_finite() && theta >= 0.0) => return Err(format!("zipf_theta {theta} must be ≥ 0")),
            KeyDist::Gaussian { stddev_fraction } if !(stddev_fraction.is_finite() && stddev_fraction > 0.0) => {
                return Err(format!("gaussian_stddev {stddev_fraction} must be > 0"))
            }
            KeyDist::HotSet { hot_fraction, hot_probability }
                if !((0.0..=1.0).contains(&hot_fraction) && (0.0..=1.0).contains(&hot_probability)) =>
            {
                return Err(format!("hot_fraction {hot_fraction} and hot_probability {hot_probability} must be in [0, 1]"))
            }
            _ => {}
        }
        let ranks = Self::rank_probabilities(s.dist, keys);
        // D lays records out in insertion order; the others may scramble popularity.
        let perm = if s.scramble && s.mix != Mix::D {
            let mut rng = SmallRng::seed_from_u64(s.seed ^ 0x6b76_5c4a_11ce_0001);
            let mut v: Vec<u32> = (0..keys).collect();
            v.shuffle(&mut rng);
            Some(v)
        } else {
            None
        };
        let pr = s.mix.proportions();
        let lines = lines_for(rec);
        let max_scan = s.max_scan_length.max(1);
        let (write_thr, written) = match s.mix {
            Mix::A | Mix::B | Mix::C | Mix::ReadUpdate(_) => {
                (threshold(pr.update), pr.update * lines as f64)
            }
            Mix::F => (
                threshold(pr.read_modify_write),
                pr.read_modify_write * lines as f64,
            ),
            Mix::D => (threshold(pr.insert), pr.insert * lines as f64),
            Mix::E => {
                // Per record visit: inserts / (scans · mean length + inserts); the mean
                // length ignores scans cut short at the end of the key space.
                let mean_len = (1.0 + max_scan as f64) / 2.0;
                (
                    threshold(pr.insert),
                    pr.insert / (pr.scan * mean_len + pr.insert) * lines as f64,
                )
            }
        };
        let dist_label = match s.dist {
            KeyDist::Zipf { theta } => format!(
                "zipf {theta}{}",
                if perm.is_some() { " scrambled" } else { "" }
            ),
            KeyDist::Gaussian { stddev_fraction } => format!("gaussian sd={stddev_fraction}·keys"),
            KeyDist::Uniform => "uniform".into(),
            KeyDist::HotSet {
                hot_fraction,
                hot_probability,
            } => {
                format!(
                    "hot set {hot_fraction}·keys at {hot_probability}{}",
                    if perm.is_some() { " scrambled" } else { "" }
                )
            }
        };
        let mut kv = Kv {
            mix: s.mix,
            keys,
            cap,
            sampler: AliasTable::new(&[1.0]),
            perm,
            per_page,
            span: span as u32,
            n_pages: n_pages_u64 as u32,
            probs: None,
            write_thr,
            latest: keys - 1,
            inserts: 0,
            scan_slot: 0,
            scan_left: 0,
            max_scan,
            last: KvOp::Read,
            shape: OpShape {
                lines_per_op: lines,
                written_lines_per_op: written,
            },
            label: match s.mix {
                Mix::ReadUpdate(u) => format!(
                    "kv(read:update {:.3}:{u:.3}, {keys} keys of {rec} B, {dist_label})",
                    1.0 - u
                ),
                m => format!("kv(ycsb-{m:?}, {keys} keys of {rec} B, {dist_label})"),
            },
        };
        if s.mix.stationary() {
            let p = kv.exact_probabilities(&ranks);
            kv.sampler = AliasTable::new(&p);
            kv.probs = Some(p);
        } else {
            kv.sampler = AliasTable::new(&ranks);
        }
        Ok(kv)
    }

    /// The operation the last `next()` performed (for E: the operation the visit belongs to).
    pub fn last_op(&self) -> KvOp {
        self.last
    }

    /// Per-rank probabilities of the key distribution (rank 0 = most popular for Zipf,
    /// key 0 for Gaussian/uniform).
    pub fn rank_probabilities(dist: KeyDist, keys: u32) -> Vec<f64> {
        let n = keys.max(1) as usize;
        let mut w = vec![0.0; n];
        match dist {
            KeyDist::Zipf { theta } => {
                // Sum from the tail (smallest terms first) for accuracy.
                let mut h = 0.0;
                for k in (0..n).rev() {
                    w[k] = ((k + 1) as f64).powf(-theta);
                    h += w[k];
                }
                w.iter_mut().for_each(|x| *x /= h);
            }
            KeyDist::Gaussian { stddev_fraction } => {
                let sd = stddev_fraction * n as f64;
                let mu = (n as f64 - 1.0) / 2.0;
                // Key k is drawn when the normal sample rounds to k: integrate the density
                // over [k - 0.5, k + 0.5] by composite Simpson. With m subintervals of
                // width h = 1/m the relative error is ≈ h^4 / (60 sd^4); m keeps it < 1e-9.
                let m = (2.0 * (4.0 / sd).ceil()).clamp(2.0, 1e6) as usize;
                let h = 1.0 / m as f64;
                let f = |x: f64| (-0.5 * ((x - mu) / sd).powi(2)).exp();
                let mut total = 0.0;
                for (k, wk) in w.iter_mut().enumerate() {
                    if (k as f64 - mu).abs() - 0.5 > 40.0 * sd {
                        continue; // density below e^-800: exactly 0 in f64
                    }
                    let a = k as f64 - 0.5;
                    let mut s = f(a) + f(a + 1.0);
                    for j in 1..m {
                        s += if j % 2 == 1 { 4.0 } else { 2.0 } * f(a + j as f64 * h);
                    }
                    *wk = s * h / 3.0;
                    total += *wk;
                }
                // Out-of-range draws are redrawn: truncate and renormalise.
                w.iter_mut().for_each(|x| *x /= total);
            }
            KeyDist::Uniform => w.iter_mut().for_each(|x| *x = 1.0 / n as f64),
            KeyDist::HotSet {
                hot_fraction,
                hot_probability,
            } => {
                let h = ((hot_fraction * n as f64).round() as usize).clamp(1, n);
                let p = if h == n { 1.0 } else { hot_probability };
                let cold = if h < n {
                    (1.0 - p) / (n - h) as f64
                } else {
                    0.0
                };
                for (k, x) in w.iter_mut().enumerate() {
                    *x = if k < h { p / h as f64 } else { cold };
                }
            }
        }
        w
    }

    fn exact_probabilities(&self, ranks: &[f64]) -> Vec<f64> {
        let mut p = vec![0.0; self.n_pages as usize];
        for (r, &pr) in ranks.iter().enumerate() {
            let slot = self.perm.as_ref().map_or(r as u32, |v| v[r]);
            if let Some(page) = slot.checked_div(self.per_page) {
                p[page as usize] += pr;
            } else {
                let first = slot as usize * self.span as usize;
                let each = pr / self.span as f64;
                p[first..first + self.span as usize]
                    .iter_mut()
                    .for_each(|x| *x += each);
            }
        }
        p
    }

    /// A key rank from the popularity distribution (D, E).
    #[inline]
    fn rank(&self, rng: &mut SmallRng) -> u32 {
        self.sampler.sample(rng)
    }

    #[inline]
    fn slot_of_rank(&self, r: u32) -> u32 {
        match &self.perm {
            Some(v) => v[r as usize],
            None => r,
        }
    }

    #[inline]
    fn page_of(&self, slot: u32, rng: &mut SmallRng) -> u32 {
        match slot.checked_div(self.per_page) {
            Some(page) => page,
            None => slot * self.span + index_from(rng.next_u64(), self.span),
        }
    }

    /// Slot for the next insert: `keys..cap` first, then around the ring again from 0,
    /// overwriting the oldest record (FIFO).
    fn insert_slot(&mut self) -> u32 {
        let slot = (self.keys as u64 + self.inserts) % self.cap as u64;
        self.inserts += 1;
        slot as u32
    }
}

impl Workload for Kv {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn page_count(&self) -> u32 {
        self.n_pages
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, _now_ns: u64) -> bool {
        false
    }
    fn probabilities(&self) -> Option<&[f64]> {
        self.probs.as_deref()
    }
    /// Stationary mixes draw independently (`last_op` is read per access only); D and E
    /// insert and scan, so their operations are drawn.
    fn skip(&mut self, n: u64, rng: &mut SmallRng) {
        if self.probs.is_none() {
            for _ in 0..n {
                self.next(rng);
            }
        }
    }
    fn next(&mut self, rng: &mut SmallRng) -> Access {
        match self.mix {
            Mix::A | Mix::B | Mix::C | Mix::F | Mix::ReadUpdate(_) => {
                let write = rng.next_u64() < self.write_thr;
                self.last = match (write, self.mix) {
                    (false, _) => KvOp::Read,
                    (true, Mix::F) => KvOp::ReadModifyWrite,
                    (true, _) => KvOp::Update,
                };
                Access {
                    page: self.sampler.sample(rng),
                    write,
                }
            }
            Mix::D => {
                if rng.next_u64() < self.write_thr {
                    self.last = KvOp::Insert;
                    self.latest = self.insert_slot();
                    Access {
                        page: self.page_of(self.latest, rng),
                        write: true,
                    }
                } else {
                    self.last = KvOp::Read;
                    // The record `z` inserts before the latest: slots are allocated in
                    // order around the ring 0..cap, and at least `keys > z` are filled.
                    let z = self.rank(rng);
                    let slot = (self.latest + self.cap - z) % self.cap;
                    Access {
                        page: self.page_of(slot, rng),
                        write: false,
                    }
                }
            }
            Mix::E => {
                if self.scan_left == 0 {
                    if rng.next_u64() < self.write_thr {
                        self.last = KvOp::Insert;
                        let slot = self.insert_slot();
                        return Access {
                            page: self.page_of(slot, rng),
                            write: true,
                        };
                    }
                    self.last = KvOp::Scan;
                    let start = self.slot_of_rank(self.rank(rng));
                    let len = 1 + index_from(rng.next_u64(), self.max_scan);
                    self.scan_slot = start;
                    self.scan_left = len.min(self.keys - start);
                }
                let slot = self.scan_slot;
                self.scan_slot += 1;
                self.scan_left -= 1;
                Access {
                    page: self.page_of(slot, rng),
                    write: false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(mix: Mix, dist: KeyDist, keys: u32, scramble: bool) -> KvSpec {
        KvSpec {
            keys,
            max_keys: keys,
            record_bytes: 4096,
            page_bytes: 4096,
            mix,
            dist,
            scramble,
            max_scan_length: 100,
            seed: 9,
        }
    }

    #[test]
    fn ycsb_mix_write_ratios() {
        let zipf = KeyDist::Zipf { theta: 0.99 };
        let n = 200_000;
        for (mix, want) in [
            (Mix::A, 0.5),
            (Mix::B, 0.05),
            (Mix::C, 0.0),
            (Mix::D, 0.05),
            (Mix::F, 0.5),
        ] {
            let mut kv = Kv::new(&spec(mix, zipf, 10_000, true)).unwrap();
            let mut rng = SmallRng::seed_from_u64(1);
            let w = (0..n).filter(|_| kv.next(&mut rng).write).count() as f64 / n as f64;
            let sd = (want * (1.0 - want) / n as f64).sqrt().max(1e-9);
            assert!(
                (w - want).abs() <= 5.0 * sd,
                "{mix:?}: write fraction {w} vs {want}"
            );
            assert_eq!(kv.probabilities().is_some(), mix.stationary());
            if let Some(p) = kv.probabilities() {
                assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            }
        }
        // E: operations are 95 % scans of uniform 1..=100 records, 5 % inserts.
        let mut kv = Kv::new(&spec(Mix::E, zipf, 100_000, true)).unwrap();
        let mut rng = SmallRng::seed_from_u64(2);
        let (mut scans, mut inserts, mut visits) = (0u64, 0u64, 0u64);
        let mut prev_left = 0;
        for _ in 0..2_000_000 {
            let a = kv.next(&mut rng);
            visits += 1;
            if kv.last_op() == KvOp::Insert {
                assert!(a.write);
                inserts += 1;
            } else if prev_left == 0 {
                scans += 1;
            }
            prev_left = kv.scan_left;
        }
        let ins = inserts as f64 / (scans + inserts) as f64;
        assert!((ins - 0.05).abs() < 0.005, "E insert share {ins}");
        let mean_len = (visits - inserts) as f64 / scans as f64;
        assert!(
            (mean_len - 50.5).abs() < 2.0,
            "E mean scan length {mean_len}"
        );
    }

    #[test]
    fn zipf_top_key_matches_analytic() {
        let keys = 1000u32;
        let theta = 0.99;
        let h: f64 = (1..=keys).map(|k| (k as f64).powf(-theta)).sum();
        let top = 1.0 / h;
        for scramble in [false, true] {
            let mut kv = Kv::new(&spec(Mix::C, KeyDist::Zipf { theta }, keys, scramble)).unwrap();
            let top_page = kv.slot_of_rank(0);
            assert!((kv.probabilities().unwrap()[top_page as usize] - top).abs() < 1e-12);
            let mut rng = SmallRng::seed_from_u64(3);
            let n = 1_000_000;
            let hits = (0..n)
                .filter(|_| kv.next(&mut rng).page == top_page)
                .count() as f64
                / n as f64;
            let sd = (top * (1.0 - top) / n as f64).sqrt();
            assert!(
                (hits - top).abs() < 5.0 * sd,
                "top key {hits} vs 1/H = {top}"
            );
            // Second rank too: 2^-θ / H.
            let p2 = 2f64.powf(-theta) / h;
            let second = kv.slot_of_rank(1);
            let hits2 =
                (0..n).filter(|_| kv.next(&mut rng).page == second).count() as f64 / n as f64;
            assert!(
                (hits2 - p2).abs() < 5.0 * (p2 / n as f64).sqrt(),
                "second key {hits2} vs {p2}"
            );
        }
        // Scrambling scatters the 10 hottest keys (unscrambled they are pages 0..10).
        let kv = Kv::new(&spec(Mix::C, KeyDist::Zipf { theta }, keys, true)).unwrap();
        let hot: Vec<u32> = (0..10).map(|r| kv.slot_of_rank(r)).collect();
        assert!(hot.iter().filter(|&&s| s < 10).count() < 5, "{hot:?}");
    }

    #[test]
    fn gaussian_spread_matches() {
        let keys = 6000u32;
        let frac = 0.05; // sd = 300 keys
        let mut kv = Kv::new(&spec(
            Mix::C,
            KeyDist::Gaussian {
                stddev_fraction: frac,
            },
            keys,
            false,
        ))
        .unwrap();
        let p = kv.probabilities().unwrap().to_vec();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let mean_p: f64 = p.iter().enumerate().map(|(k, x)| k as f64 * x).sum();
        let sd_p = p
            .iter()
            .enumerate()
            .map(|(k, x)| (k as f64 - mean_p).powi(2) * x)
            .sum::<f64>()
            .sqrt();
        // Untruncated at ±10 sd: sd² + 1/12 (rounding).
        assert!(
            (sd_p - (300f64.powi(2) + 1.0 / 12.0).sqrt()).abs() < 0.01,
            "{sd_p}"
        );
        let mut rng = SmallRng::seed_from_u64(4);
        let n = 400_000;
        let xs: Vec<f64> = (0..n).map(|_| kv.next(&mut rng).page as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!(
            (mean - 2999.5).abs() < 5.0 * 300.0 / (n as f64).sqrt(),
            "mean {mean}"
        );
        assert!((sd / sd_p - 1.0).abs() < 0.01, "sd {sd} vs {sd_p}");
        // Default memtier spread (sd = range/6): truncated at ±3 sd, sd ≈ 0.9866·σ.
        let kv = Kv::new(&spec(
            Mix::C,
            KeyDist::Gaussian {
                stddev_fraction: 1.0 / 6.0,
            },
            keys,
            false,
        ))
        .unwrap();
        let p = kv.probabilities().unwrap();
        let m: f64 = p.iter().enumerate().map(|(k, x)| k as f64 * x).sum();
        let s = p
            .iter()
            .enumerate()
            .map(|(k, x)| (k as f64 - m).powi(2) * x)
            .sum::<f64>()
            .sqrt();
        assert!(
            (s / 1000.0 - 0.9866).abs() < 0.002,
            "truncated sd ratio {}",
            s / 1000.0
        );
    }

    #[test]
    fn hemem_kv_hot_set_and_ratio_mix() {
        // Colloid §5.3 HeMemKV: 20 % hot keys at 90 %, GET/UPDATE 90/10.
        let mut s = spec(
            Mix::parse("90:10").unwrap(),
            KeyDist::HotSet {
                hot_fraction: 0.2,
                hot_probability: 0.9,
            },
            10_000,
            true,
        );
        s.record_bytes = 64 + 4096;
        let mut kv = Kv::new(&s).unwrap();
        assert_eq!(kv.op_shape().lines_per_op, 65);
        assert!((kv.op_shape().written_lines_per_op - 6.5).abs() < 1e-9);
        let ranks = Kv::rank_probabilities(
            KeyDist::HotSet {
                hot_fraction: 0.2,
                hot_probability: 0.9,
            },
            10_000,
        );
        assert!(
            (ranks[0] - 0.9 / 2000.0).abs() < 1e-15 && (ranks[9999] - 0.1 / 8000.0).abs() < 1e-15
        );
        let hot_pages: std::collections::HashSet<u32> = (0..2000)
            .flat_map(|r| {
                let slot = kv.slot_of_rank(r);
                [slot * 2, slot * 2 + 1]
            })
            .collect();
        let mut rng = SmallRng::seed_from_u64(12);
        let n = 400_000;
        let (mut hot, mut writes) = (0, 0);
        for _ in 0..n {
            let a = kv.next(&mut rng);
            hot += hot_pages.contains(&a.page) as u32;
            writes += a.write as u32;
        }
        let (h, w) = (hot as f64 / n as f64, writes as f64 / n as f64);
        assert!((h - 0.9).abs() < 0.005, "hot share {h}");
        assert!((w - 0.1).abs() < 0.005, "update share {w}");
        assert!(Mix::parse("ycsb-b").is_ok() && Mix::parse("1:0").is_ok());
        for bad in ["G", "90/10", "a:b", "0:0", "-1:2"] {
            assert!(Mix::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn read_latest_prefers_recent_inserts() {
        let mut s = spec(Mix::D, KeyDist::Zipf { theta: 0.99 }, 1000, true);
        s.max_keys = 2000;
        let mut kv = Kv::new(&s).unwrap();
        let mut rng = SmallRng::seed_from_u64(5);
        for _ in 0..10_000 {
            kv.next(&mut rng);
        }
        let latest = kv.latest;
        assert!(latest >= 1000, "inserts go to the insert room first");
        let mut reads_latest = 0;
        let mut reads = 0;
        for _ in 0..50_000 {
            let before = kv.latest;
            let a = kv.next(&mut rng);
            if kv.last_op() == KvOp::Read {
                reads += 1;
                reads_latest += (a.page == before) as u32;
            }
        }
        let h: f64 = (1..=1000).map(|k| (k as f64).powf(-0.99)).sum();
        let f = reads_latest as f64 / reads as f64;
        assert!(
            (f - 1.0 / h).abs() < 0.01,
            "latest read share {f} vs {}",
            1.0 / h
        );
    }

    #[test]
    fn records_pack_and_span_pages() {
        let mut s = spec(Mix::C, KeyDist::Uniform, 1000, false);
        s.record_bytes = 1000; // 4 per 4 KiB page
        let kv = Kv::new(&s).unwrap();
        assert_eq!(kv.page_count(), 250);
        assert_eq!(kv.op_shape().lines_per_op, 16);
        s.record_bytes = 10_000; // 3 pages per record
        let mut kv = Kv::new(&s).unwrap();
        assert_eq!(kv.page_count(), 3000);
        let p = kv.probabilities().unwrap();
        assert!((p[2999] - 1.0 / 3000.0).abs() < 1e-15);
        let mut rng = SmallRng::seed_from_u64(6);
        assert!((0..1000).all(|_| kv.next(&mut rng).page < 3000));
    }

    #[test]
    fn deterministic() {
        let s = spec(Mix::A, KeyDist::Zipf { theta: 0.99 }, 5000, true);
        let (mut a, mut b) = (Kv::new(&s).unwrap(), Kv::new(&s).unwrap());
        let (mut ra, mut rb) = (SmallRng::seed_from_u64(8), SmallRng::seed_from_u64(8));
        for _ in 0..10_000 {
            assert_eq!(a.next(&mut ra), b.next(&mut rb));
        }
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// `cargo test --release -p tiermem-sim kv_next_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn kv_next_speed() {
        for (mix, dist) in [
            (Mix::A, KeyDist::Zipf { theta: 0.99 }),
            (
                Mix::C,
                KeyDist::Gaussian {
                    stddev_fraction: 1.0 / 6.0,
                },
            ),
            (Mix::D, KeyDist::Zipf { theta: 0.99 }),
            (Mix::E, KeyDist::Zipf { theta: 0.99 }),
        ] {
            let s = KvSpec {
                keys: 1_000_000,
                max_keys: 1_000_000,
                record_bytes: 1024,
                page_bytes: 4096,
                mix,
                dist,
                scramble: true,
                max_scan_length: 100,
                seed: 1,
            };
            let mut kv: Box<dyn Workload> = Box::new(Kv::new(&s).unwrap());
            let mut rng = SmallRng::seed_from_u64(1);
            let n = 20_000_000u64;
            let t = std::time::Instant::now();
            let mut acc = 0u64;
            for _ in 0..n {
                let a = kv.next(&mut rng);
                acc = acc.wrapping_add(a.page as u64 + a.write as u64);
            }
            std::hint::black_box(acc);
            println!(
                "kv {mix:?} {dist:?}: {:.2} ns/op",
                t.elapsed().as_nanos() as f64 / n as f64
            );
        }
    }
}
