//! Spatially clustered random access, with hot sets that change and stages that alternate
//! by operation count (`kind = "regions"`): the access shapes of ICS'18's applications
//! that neither a uniform buffer nor a sweep describes.
//!
//! The buffer of `N` pages is cut into chunks of `chunk_size` (4 KiB: single pages; 64 KiB:
//! 16 pages; 2 MiB: 512). In a stage, `hot_set` bytes of whole chunks at seed-chosen random
//! places are hot: an operation picks a hot page with probability `hot_probability`
//! (uniformly among the hot chunks' pages), else a cold one (uniformly among the others).
//! A hot chunk is dense (all its pages equally hot), the chunks are scattered: graph500's
//! adjacency lists, found at random places, each read whole. Every `redraw_every_ops`
//! operations the hot chunks are drawn afresh (a BFS level's frontier, a phase's working
//! set), so the program keeps asking for data that is not in the fast tier. Stages
//! (`[[workload.stages]]`, each `ops` operations long) follow each other and the list
//! repeats: CG's sparse computation (4 KiB chunks) and its communication (64 KiB chunks),
//! alternating. With no hot set, accesses are uniform over the buffer.
//!
//! Counting operations: the backend calls `next()` once per sampled access, which stands
//! for `accesses_per_sample` operations; stage and redraw boundaries take effect at the
//! first epoch boundary after the count passes them (`advance_to`), so they are tied to the
//! work done, not to time: a slower run reaches them later, as the program would.
//!
//! Exact per-operation page probabilities: a hot page `h/H`, a cold one `(1-h)/(N-H)`
//! (`H` hot pages).
//!
//! Scaling multiplies the buffer, the hot set (whole chunks; at least one) and the operation
//! counts (`ops`, `redraw_every_ops`), not the chunk size: with `1/scale` times fewer pages,
//! each hot page is accessed `1/scale` times as often, so a hot set that lives `scale` times
//! as many operations sees as many accesses per page as at full size, and a policy moving
//! pages at an unscaled rate keeps up with it exactly as well: the scaled run is the full
//! one compressed in time.

use super::{index_from, lines_for, threshold, Access, OpShape, Workload, WriteDraw};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};
use tiermem_core::format_bytes;

/// One stage in pages (the builder has applied scale and page size).
#[derive(Clone, Debug, PartialEq)]
pub struct StageSpec {
    /// Operations the stage lasts (0: forever; only the last stage may).
    pub ops: f64,
    pub chunk_pages: u32,
    /// Hot chunks (0: uniform over the buffer).
    pub hot_chunks: u32,
    pub hot_probability: f64,
    /// Operations between two draws of the hot chunks (0: one draw for the stage).
    pub redraw_every_ops: f64,
}

#[derive(Clone, Debug)]
pub struct RegionsSpec {
    pub pages: u32,
    pub page_bytes: u64,
    pub object_bytes: u64,
    pub write_fraction: f64,
    pub stages: Vec<StageSpec>,
    pub seed: u64,
}

pub struct Regions {
    spec: RegionsSpec,
    n: u32,
    shape: OpShape,
    write: WriteDraw,
    rng: SmallRng,
    /// Operations each `next()` stands for.
    k: f64,
    stage: usize,
    /// Operations done in the stage, and at its last draw.
    stage_ops: f64,
    drawn_at: f64,
    /// Pages of the hot chunks, and whether each page is hot.
    hot: Vec<u32>,
    is_hot: Vec<bool>,
    hot_threshold: u64,
    probs: Vec<f64>,
}

impl Regions {
    pub fn new(spec: RegionsSpec) -> Regions {
        let n = spec.pages.max(1);
        let lines = lines_for(spec.object_bytes);
        let mut r = Regions {
            n,
            shape: OpShape {
                lines_per_op: lines,
                written_lines_per_op: lines as f64 * spec.write_fraction.clamp(0.0, 1.0),
            },
            write: WriteDraw::new(spec.write_fraction),
            rng: SmallRng::seed_from_u64(spec.seed ^ 0x7e61_0115_0000_0003),
            k: 1.0,
            stage: 0,
            stage_ops: 0.0,
            drawn_at: 0.0,
            hot: Vec::new(),
            is_hot: vec![false; n as usize],
            hot_threshold: 0,
            probs: vec![0.0; n as usize],
            spec,
        };
        r.draw();
        r
    }

    fn cur(&self) -> &StageSpec {
        &self.spec.stages[self.stage]
    }

    /// Draw the stage's hot chunks afresh and recompute the probabilities.
    fn draw(&mut self) {
        let st = self.cur().clone();
        let cp = st.chunk_pages.max(1);
        let chunks = self.n / cp;
        let want = st.hot_chunks.min(chunks);
        for &p in &self.hot {
            self.is_hot[p as usize] = false;
        }
        self.hot.clear();
        if want > 0 {
            // Partial Fisher–Yates over the chunk indices (sorted afterwards: page order).
            let mut idx: Vec<u32> = (0..chunks).collect();
            for i in 0..want as usize {
                let j = i + index_from(self.rng.next_u64(), chunks - i as u32) as usize;
                idx.swap(i, j);
            }
            let mut picked = idx[..want as usize].to_vec();
            picked.sort_unstable();
            for c in picked {
                for p in c * cp..(c + 1) * cp {
                    self.hot.push(p);
                    self.is_hot[p as usize] = true;
                }
            }
        }
        let h = self.hot.len() as f64;
        let cold = self.n as f64 - h;
        let hp = if h == 0.0 {
            0.0
        } else if cold == 0.0 {
            1.0
        } else {
            st.hot_probability.clamp(0.0, 1.0)
        };
        self.hot_threshold = threshold(hp);
        for (p, pr) in self.probs.iter_mut().enumerate() {
            *pr = if self.is_hot[p] {
                hp / h
            } else {
                (1.0 - hp) / cold
            };
        }
    }
}

impl Workload for Regions {
    fn name(&self) -> String {
        let st: Vec<String> = self
            .spec
            .stages
            .iter()
            .map(|s| {
                format!(
                    "chunk={}, hot={}, p={}{}{}",
                    format_bytes(s.chunk_pages as u64 * self.spec.page_bytes),
                    format_bytes(s.hot_chunks as u64 * s.chunk_pages as u64 * self.spec.page_bytes),
                    s.hot_probability,
                    if s.redraw_every_ops > 0.0 {
                        format!(", redraw/{:.3e} ops", s.redraw_every_ops)
                    } else {
                        String::new()
                    },
                    if s.ops > 0.0 {
                        format!(", {:.3e} ops", s.ops)
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        format!(
            "regions(ws={}, obj={}B; {})",
            format_bytes(self.n as u64 * self.spec.page_bytes),
            self.spec.object_bytes,
            st.join(" | ")
        )
    }
    fn page_count(&self) -> u32 {
        self.n
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, _now_ns: u64) -> bool {
        let st = self.cur().clone();
        if st.ops > 0.0 && self.stage_ops >= st.ops {
            self.stage = (self.stage + 1) % self.spec.stages.len();
            self.stage_ops = 0.0;
            self.drawn_at = 0.0;
            self.draw();
            return true;
        }
        if st.redraw_every_ops > 0.0 && self.stage_ops - self.drawn_at >= st.redraw_every_ops {
            self.drawn_at = self.stage_ops;
            self.draw();
            return true;
        }
        false
    }
    fn probabilities(&self) -> Option<&[f64]> {
        Some(&self.probs)
    }
    /// Draws are independent within a stage; only the operation count moves.
    fn skip(&mut self, n: u64, _rng: &mut SmallRng) {
        self.stage_ops += self.k * n as f64;
    }
    fn set_accesses_per_sample(&mut self, k: f64) {
        self.k = if k.is_finite() && k >= 1.0 { k } else { 1.0 };
    }
    #[inline]
    fn next(&mut self, rng: &mut SmallRng) -> Access {
        self.stage_ops += self.k;
        let page = if !self.hot.is_empty() && rng.next_u64() < self.hot_threshold {
            self.hot[index_from(rng.next_u64(), self.hot.len() as u32) as usize]
        } else if self.hot.is_empty() {
            index_from(rng.next_u64(), self.n)
        } else {
            // A cold page: uniform over the pages that are not hot (rejection; the hot set
            // is at most the whole buffer, and with no cold page the threshold is 1).
            loop {
                let p = index_from(rng.next_u64(), self.n);
                if !self.is_hot[p as usize] {
                    break p;
                }
            }
        };
        Access {
            page,
            write: self.write.draw(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(stages: Vec<StageSpec>) -> RegionsSpec {
        RegionsSpec {
            pages: 1024,
            page_bytes: 4096,
            object_bytes: 64,
            write_fraction: 0.0,
            stages,
            seed: 3,
        }
    }

    fn stage(chunk_pages: u32, hot_chunks: u32, ops: f64, redraw: f64) -> StageSpec {
        StageSpec {
            ops,
            chunk_pages,
            hot_chunks,
            hot_probability: 0.9,
            redraw_every_ops: redraw,
        }
    }

    #[test]
    fn hot_chunks_are_whole_aligned_and_sampled_as_probabilities_say() {
        let mut w = Regions::new(spec(vec![stage(16, 8, 0.0, 0.0)]));
        let pr = w.probabilities().unwrap().to_vec();
        assert!((pr.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        let hot: Vec<usize> = (0..1024).filter(|&p| pr[p] > 1e-3).collect();
        assert_eq!(hot.len(), 128);
        for c in hot.chunks(16) {
            assert_eq!(c[0] % 16, 0);
            assert_eq!(c[15], c[0] + 15);
        }
        let mut rng = SmallRng::seed_from_u64(9);
        let n = 200_000;
        let hits = (0..n)
            .filter(|_| pr[w.next(&mut rng).page as usize] > 1e-3)
            .count();
        assert!((hits as f64 / n as f64 - 0.9).abs() < 0.005, "{hits}");
    }

    #[test]
    fn redraws_and_stages_follow_the_operation_count() {
        let mut w = Regions::new(spec(vec![
            stage(1, 100, 1000.0, 400.0),
            stage(16, 4, 500.0, 0.0),
        ]));
        w.set_accesses_per_sample(100.0);
        let mut rng = SmallRng::seed_from_u64(1);
        let first = w.probabilities().unwrap().to_vec();
        for _ in 0..3 {
            w.next(&mut rng);
        }
        assert!(!w.advance_to(0), "300 ops: no redraw yet");
        w.next(&mut rng);
        assert!(w.advance_to(0), "400 ops: redraw");
        assert_ne!(w.probabilities().unwrap(), &first[..]);
        for _ in 0..6 {
            w.next(&mut rng);
        }
        assert!(w.advance_to(0), "1000 ops: the second stage");
        let hot = w
            .probabilities()
            .unwrap()
            .iter()
            .filter(|&&p| p > 1e-3)
            .count();
        assert_eq!(hot, 64);
        for _ in 0..5 {
            w.next(&mut rng);
        }
        assert!(w.advance_to(0), "1500 ops: back to the first stage");
        let hot = w
            .probabilities()
            .unwrap()
            .iter()
            .filter(|&&p| p > 1e-3)
            .count();
        assert_eq!(hot, 100);
    }

    /// Passed operations (`skip`, the backend's draws between PEBS samples) count toward
    /// redraws and stages exactly as drawn ones.
    #[test]
    fn skipped_operations_count_like_drawn_ones() {
        let stages = vec![stage(1, 100, 1000.0, 400.0), stage(16, 4, 500.0, 0.0)];
        let (mut drawn, mut passed) = (
            Regions::new(spec(stages.clone())),
            Regions::new(spec(stages)),
        );
        drawn.set_accesses_per_sample(100.0);
        passed.set_accesses_per_sample(100.0);
        let mut rng = SmallRng::seed_from_u64(1);
        for n in [3u64, 1, 6, 2, 3, 7, 1] {
            for _ in 0..n {
                drawn.next(&mut rng);
            }
            passed.skip(n, &mut rng);
            assert_eq!(passed.advance_to(0), drawn.advance_to(0), "after {n} more");
            assert_eq!(passed.stage, drawn.stage);
        }
    }

    #[test]
    fn no_hot_set_is_uniform() {
        let w = Regions::new(spec(vec![stage(1, 0, 0.0, 0.0)]));
        assert!(w
            .probabilities()
            .unwrap()
            .iter()
            .all(|&p| (p - 1.0 / 1024.0).abs() < 1e-15));
    }
}
