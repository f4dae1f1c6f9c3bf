//! GUPS as set up in Colloid §2.1 (after HeMem's GUPS): a buffer of `N` pages, a hot set
//! of `H` contiguous pages at a seed-chosen offset; each operation reads (and with
//! `write_fraction`, updates) one object, chosen from the hot set with probability `p` and
//! from the whole buffer otherwise. Objects are aligned within pages and every page holds
//! the same number of them, so choosing an object uniformly is choosing its page
//! uniformly.
//!
//! Exact per-operation page probabilities: a hot page `p/H + (1-p)/N`, any other page
//! `(1-p)/N`.
//!
//! `next()` is the simulator's hot path: two 64-bit draws (hot-or-not by a precomputed
//! threshold, then a multiply-shift index), plus one more only if `0 < write_fraction <
//! 1`. No allocation, no table.

use super::{index_from, lines_for, threshold, Access, OpShape, Workload, WriteDraw};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use tiermem_core::{format_bytes, PageIdx};

/// A GUPS instance in pages (the builder has applied scale and page size).
#[derive(Clone, Debug)]
pub struct GupsSpec {
    pub pages: u32,
    pub hot_pages: u32,
    pub hot_probability: f64,
    pub object_bytes: u64,
    pub page_bytes: u64,
    pub write_fraction: f64,
    /// When the hot set moves (virtual ns), if it does.
    pub move_at_ns: Option<u64>,
    pub seed: u64,
}

pub struct Gups {
    n: u32,
    hot_len: u32,
    hot_start: u32,
    hot_threshold: u64,
    write: WriteDraw,
    shape: OpShape,
    probs: Vec<f64>,
    hot_probability: f64,
    move_at_ns: Option<u64>,
    moved: bool,
    rng: SmallRng,
    label: String,
}

impl Gups {
    pub fn new(s: &GupsSpec) -> Gups {
        let n = s.pages.max(1);
        let hot_len = s.hot_pages.min(n);
        let mut rng = SmallRng::seed_from_u64(s.seed ^ 0x6075_0000_0000_0001);
        let hot_start = if hot_len == 0 {
            0
        } else {
            rng.gen_range(0..=n - hot_len)
        };
        let p = if hot_len == 0 {
            0.0
        } else {
            s.hot_probability.clamp(0.0, 1.0)
        };
        let lines = lines_for(s.object_bytes);
        let label = format!(
            "gups(ws={}, hot={}, p={}, obj={}B, w={})",
            format_bytes(n as u64 * s.page_bytes),
            format_bytes(hot_len as u64 * s.page_bytes),
            s.hot_probability,
            s.object_bytes,
            s.write_fraction
        );
        let mut g = Gups {
            n,
            hot_len,
            hot_start,
            hot_threshold: threshold(p),
            write: WriteDraw::new(s.write_fraction),
            shape: OpShape {
                lines_per_op: lines,
                written_lines_per_op: lines as f64 * s.write_fraction.clamp(0.0, 1.0),
            },
            probs: vec![0.0; n as usize],
            hot_probability: p,
            move_at_ns: s.move_at_ns,
            moved: false,
            rng,
            label,
        };
        g.fill_probs();
        g
    }

    fn fill_probs(&mut self) {
        let cold = (1.0 - self.hot_probability) / self.n as f64;
        self.probs.iter_mut().for_each(|x| *x = cold);
        if self.hot_len > 0 {
            let hot = self.hot_probability / self.hot_len as f64 + cold;
            let s = self.hot_start as usize;
            self.probs[s..s + self.hot_len as usize]
                .iter_mut()
                .for_each(|x| *x = hot);
        }
    }

    /// First page of the current hot set.
    pub fn hot_start(&self) -> u32 {
        self.hot_start
    }

    /// Move the hot set to a different random region: disjoint from the old one when the
    /// buffer has room (`N ≥ 2H`), else the end of the buffer farther from the old region
    /// (least overlap).
    fn move_hot_set(&mut self) {
        let (n, h, old) = (self.n, self.hot_len, self.hot_start);
        if h == 0 || h == n {
            return;
        }
        let last = n - h; // largest start
                          // Disjoint starts: [0, old - h] and [old + h, last].
        let left = if old >= h { old - h + 1 } else { 0 }; // count of starts in [0, old-h]
        let right = if old + h <= last {
            last - (old + h) + 1
        } else {
            0
        };
        self.hot_start = if left + right > 0 {
            let k = self.rng.gen_range(0..left + right);
            if k < left {
                k
            } else {
                old + h + (k - left)
            }
        } else if old > last - old {
            0
        } else {
            last
        };
        self.fill_probs();
    }
}

impl Workload for Gups {
    fn name(&self) -> String {
        self.label.clone()
    }
    fn page_count(&self) -> u32 {
        self.n
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, now_ns: u64) -> bool {
        match self.move_at_ns {
            Some(t) if !self.moved && now_ns >= t => {
                self.moved = true;
                self.move_hot_set();
                true
            }
            _ => false,
        }
    }
    fn next_change_ns(&self) -> Option<u64> {
        self.move_at_ns.filter(|_| !self.moved)
    }
    fn probabilities(&self) -> Option<&[f64]> {
        Some(&self.probs)
    }
    /// Draws are independent and change nothing: passing them is drawing none.
    fn skip(&mut self, _n: u64, _rng: &mut SmallRng) {}
    fn skip_is_nothing(&self) -> bool {
        true
    }
    #[inline]
    fn next(&mut self, rng: &mut SmallRng) -> Access {
        let r = rng.next_u64();
        let r2 = rng.next_u64();
        let page = if r < self.hot_threshold {
            self.hot_start + index_from(r2, self.hot_len)
        } else {
            index_from(r2, self.n)
        };
        Access {
            page,
            write: self.write.draw(rng),
        }
    }
    /// `next`'s draws, in its order, with the generator and the hot set in registers (the
    /// generator's state went through memory on every draw) and the hot-or-cold choice a
    /// select of the range rather than a branch taken at random one time in ten.
    fn next_batch(&mut self, rng: &mut SmallRng, n: usize, out: &mut Vec<Access>) {
        let mut local = rng.clone();
        let (threshold, hot_start, hot_len, all, write) = (
            self.hot_threshold,
            self.hot_start,
            self.hot_len,
            self.n,
            self.write,
        );
        // Into slots made beforehand: no call in the loop for the state to escape to.
        let first = out.len();
        out.resize(
            first + n,
            Access {
                page: 0,
                write: false,
            },
        );
        for slot in &mut out[first..] {
            let r = local.next_u64();
            let r2 = local.next_u64();
            let (base, len) = if r < threshold {
                (hot_start, hot_len)
            } else {
                (0, all)
            };
            *slot = Access {
                page: base + index_from(r2, len),
                write: write.draw(&mut local),
            };
        }
        *rng = local;
    }
    fn hot_pages(&self) -> Option<Vec<PageIdx>> {
        Some((self.hot_start..self.hot_start + self.hot_len).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pages: u32, hot: u32) -> GupsSpec {
        GupsSpec {
            pages,
            hot_pages: hot,
            hot_probability: 0.9,
            object_bytes: 64,
            page_bytes: 4096,
            write_fraction: 1.0,
            move_at_ns: Some(1_000),
            seed: 3,
        }
    }

    #[test]
    fn a_batch_draws_what_as_many_nexts_draw() {
        for write_fraction in [0.0, 0.3, 1.0] {
            let spec = GupsSpec {
                write_fraction,
                ..spec(3000, 1000)
            };
            let (mut one, mut batched) = (Gups::new(&spec), Gups::new(&spec));
            let (mut r1, mut r2) = (SmallRng::seed_from_u64(5), SmallRng::seed_from_u64(5));
            let singles: Vec<Access> = (0..1000).map(|_| one.next(&mut r1)).collect();
            let mut batch = vec![Access {
                page: 7,
                write: true,
            }];
            batched.next_batch(&mut r2, 999, &mut batch);
            batched.next_batch(&mut r2, 1, &mut batch);
            assert_eq!(batch[0].page, 7, "appends, keeping what was there");
            assert_eq!(&batch[1..], &singles[..], "write fraction {write_fraction}");
            assert_eq!(
                r1.next_u64(),
                r2.next_u64(),
                "the generator ends where it would"
            );
        }
    }

    #[test]
    fn empirical_hot_fraction_matches_formula() {
        let mut g = Gups::new(&spec(3000, 1000));
        let hot = g.hot_pages().unwrap();
        let (lo, hi) = (hot[0], *hot.last().unwrap());
        let mut rng = SmallRng::seed_from_u64(11);
        let n = 2_000_000u64;
        let mut in_hot = 0u64;
        for _ in 0..n {
            let a = g.next(&mut rng);
            assert!(a.write);
            if a.page >= lo && a.page <= hi {
                in_hot += 1;
            }
        }
        let expect = 0.9 + 0.1 * 1000.0 / 3000.0;
        let got = in_hot as f64 / n as f64;
        // Binomial standard deviation; 5 sigma.
        let sd = (expect * (1.0 - expect) / n as f64).sqrt();
        assert!(
            (got - expect).abs() < 5.0 * sd,
            "hot fraction {got} vs {expect} ± {sd}"
        );
        let p = g.probabilities().unwrap();
        let sum: f64 = p.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "{sum}");
        let mass: f64 = p[lo as usize..=hi as usize].iter().sum();
        assert!((mass - expect).abs() < 1e-9);
    }

    #[test]
    fn hot_set_moves_disjoint_once() {
        let mut g = Gups::new(&spec(3000, 1000));
        let before = g.hot_pages().unwrap();
        assert_eq!(g.next_change_ns(), Some(1000));
        assert!(!g.advance_to(999));
        assert!(g.advance_to(1000));
        assert!(!g.advance_to(5000));
        let after = g.hot_pages().unwrap();
        assert_eq!(after.len(), 1000);
        assert!(
            after.iter().all(|p| !before.contains(p)),
            "moved set overlaps the old one"
        );
        let p = g.probabilities().unwrap();
        assert!(p[after[0] as usize] > p[before[0] as usize]);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // No room for a disjoint region: still moves, to an end.
        let mut g = Gups::new(&spec(1500, 1000));
        let before = g.hot_start();
        g.advance_to(2000);
        assert_ne!(g.hot_start(), before);
    }

    #[test]
    fn same_seed_same_sequence_and_shape() {
        let mut s = spec(5000, 100);
        s.write_fraction = 0.5;
        s.object_bytes = 200;
        let (mut a, mut b) = (Gups::new(&s), Gups::new(&s));
        assert_eq!(a.hot_start(), b.hot_start());
        assert_eq!(
            a.op_shape(),
            OpShape {
                lines_per_op: 4,
                written_lines_per_op: 2.0
            }
        );
        let (mut ra, mut rb) = (SmallRng::seed_from_u64(5), SmallRng::seed_from_u64(5));
        let writes = (0..10_000)
            .map(|_| {
                let (x, y) = (a.next(&mut ra), b.next(&mut rb));
                assert_eq!(x, y);
                x.write as u32
            })
            .sum::<u32>();
        assert!((4700..5300).contains(&writes), "{writes}");
    }

    /// `cargo test --release -p tiermem-sim gups_next_speed -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn gups_next_speed() {
        let mut s = spec(36864, 12288);
        s.write_fraction = 1.0;
        let mut g = Gups::new(&s);
        let mut rng = SmallRng::seed_from_u64(1);
        let n = 200_000_000u64;
        let t = std::time::Instant::now();
        let mut acc = 0u64;
        for _ in 0..n {
            let a = g.next(&mut rng);
            acc = acc.wrapping_add(a.page as u64 + a.write as u64);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        std::hint::black_box(acc);
        println!("GUPS next(): {ns:.2} ns/op ({:.0} M ops/s)", 1e3 / ns);
        s.write_fraction = 0.5;
        let mut g = Gups::new(&s);
        let t = std::time::Instant::now();
        for _ in 0..n {
            let a = g.next(&mut rng);
            acc = acc.wrapping_add(a.page as u64 + a.write as u64);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        std::hint::black_box(acc);
        println!("GUPS next() with write draw: {ns:.2} ns/op");
        // As the backend calls it: through Box<dyn Workload> (no inlining).
        s.write_fraction = 1.0;
        let mut g: Box<dyn Workload> = Box::new(Gups::new(&s));
        let t = std::time::Instant::now();
        for _ in 0..n {
            let a = std::hint::black_box(&mut g).next(&mut rng);
            acc = acc.wrapping_add(a.page as u64 + a.write as u64);
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        std::hint::black_box(acc);
        println!("GUPS next() through Box<dyn Workload>: {ns:.2} ns/op");
    }
}
