//! Uniform random objects over a buffer (XSBench-like: lookups into a table far larger
//! than any cache, with no locality). Every page is equally likely: probability `1/N`.

use super::{index_from, lines_for, Access, OpShape, Workload, WriteDraw};
use rand::rngs::SmallRng;
use rand::RngCore;

pub struct RandomUniform {
    n: u32,
    probs: Vec<f64>,
    write: WriteDraw,
    shape: OpShape,
    object_bytes: u64,
}

impl RandomUniform {
    pub fn new(pages: u32, object_bytes: u64, write_fraction: f64) -> RandomUniform {
        let n = pages.max(1);
        let lines = lines_for(object_bytes);
        RandomUniform {
            n,
            probs: vec![1.0 / n as f64; n as usize],
            write: WriteDraw::new(write_fraction),
            shape: OpShape {
                lines_per_op: lines,
                written_lines_per_op: lines as f64 * write_fraction.clamp(0.0, 1.0),
            },
            object_bytes,
        }
    }
}

impl Workload for RandomUniform {
    fn name(&self) -> String {
        format!("random({} pages, obj={}B)", self.n, self.object_bytes)
    }
    fn page_count(&self) -> u32 {
        self.n
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, _now_ns: u64) -> bool {
        false
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
        let page = index_from(rng.next_u64(), self.n);
        Access {
            page,
            write: self.write.draw(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn uniform_over_pages() {
        let mut w = RandomUniform::new(10, 64, 0.0);
        let mut rng = SmallRng::seed_from_u64(1);
        let mut c = [0u32; 10];
        for _ in 0..100_000 {
            let a = w.next(&mut rng);
            assert!(!a.write);
            c[a.page as usize] += 1;
        }
        // Each bin: mean 10 000, sd ≈ 95.
        assert!(c.iter().all(|&x| (9_500..10_500).contains(&x)), "{c:?}");
        assert!((w.probabilities().unwrap().iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
