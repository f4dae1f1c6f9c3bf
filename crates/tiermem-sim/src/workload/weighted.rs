//! A stationary workload given by its access distribution over groups of pages: each group
//! (e.g. a 2 MiB host page) has a probability, spread evenly over its `pages_per_group`
//! pages (e.g. 512 guest 4 KiB pages). Built in code, not from a config: the Memstrata
//! population's VMs run under TPP with it (`memstrata::under_tpp`), the same distribution
//! the Flat Memory Mode model serves.
//!
//! Exact per-operation page probabilities: `group_p / pages_per_group`.

use super::{index_from, Access, AliasTable, OpShape, Workload, WriteDraw};
use rand::rngs::SmallRng;
use rand::RngCore;

pub struct Weighted {
    name: String,
    pages_per_group: u32,
    groups: AliasTable,
    probs: Vec<f64>,
    write: WriteDraw,
    shape: OpShape,
}

impl Weighted {
    /// `group_probability` need not be normalised (all finite, ≥ 0, positive sum);
    /// `written_lines_per_op` ≤ `lines_per_op` (an operation writes with that ratio).
    pub fn new(
        name: &str,
        group_probability: &[f64],
        pages_per_group: u32,
        shape: OpShape,
    ) -> Weighted {
        let pages_per_group = pages_per_group.max(1);
        let sum: f64 = group_probability.iter().sum();
        let per = |g: f64| g / sum / pages_per_group as f64;
        let probs = group_probability
            .iter()
            .flat_map(|&g| std::iter::repeat_n(per(g), pages_per_group as usize))
            .collect();
        let lines = shape.lines_per_op.max(1) as f64;
        Weighted {
            name: name.to_string(),
            pages_per_group,
            groups: AliasTable::new(group_probability),
            probs,
            write: WriteDraw::new(shape.written_lines_per_op / lines),
            shape,
        }
    }
}

impl Workload for Weighted {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn page_count(&self) -> u32 {
        self.probs.len() as u32
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
        let g = self.groups.sample(rng);
        let page = g * self.pages_per_group + index_from(rng.next_u64(), self.pages_per_group);
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
    fn draws_follow_the_groups_and_spread_within_them() {
        let shape = OpShape {
            lines_per_op: 1,
            written_lines_per_op: 0.25,
        };
        let mut w = Weighted::new("w", &[3.0, 0.0, 1.0], 4, shape);
        assert_eq!(w.page_count(), 12);
        let p = w.probabilities().unwrap().to_vec();
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!((p[0] - 0.75 / 4.0).abs() < 1e-12 && p[4] == 0.0 && (p[11] - 0.0625).abs() < 1e-12);
        let mut rng = SmallRng::seed_from_u64(3);
        let (mut c, mut writes) = ([0u32; 12], 0u32);
        let n = 400_000;
        for _ in 0..n {
            let a = w.next(&mut rng);
            c[a.page as usize] += 1;
            writes += a.write as u32;
        }
        for (i, &x) in c.iter().enumerate() {
            let want = p[i] * n as f64;
            // 5 sd of a binomial count (0 stays 0).
            assert!(
                (x as f64 - want).abs() <= 5.0 * want.sqrt() + 1e-9,
                "page {i}: {x} vs {want}"
            );
        }
        let wf = writes as f64 / n as f64;
        assert!((wf - 0.25).abs() < 0.005, "write fraction {wf}");
    }
}
