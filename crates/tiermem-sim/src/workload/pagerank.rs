//! Ligra's PageRank over a directed rMat graph (`kind = "pagerank"`): the graph workload of
//! TierScape §7.2 (Table 3: "PageRank [47] ... Nodes: 100 M", Ligra, rMat input).
//!
//! The memory is Ligra's, array by array, each starting on a page (large `malloc`s are
//! page-aligned mappings), in allocation order:
//!
//! | array | bytes | per PageRank iteration (Ligra `apps/PageRank.C`, dense `edgeMap`) |
//! |---|---|---|
//! | vertices | 24 per vertex (`asymmetricVertex`: in/out pointers, in/out degree) | read in order once; `V[s].getOutDegree()` per in-edge `(s, d)` |
//! | out-edges | 4 per edge | not read: the dense (pull) `edgeMap` walks in-edges only |
//! | in-edges | 4 per edge | read in order once |
//! | `p_curr`, `p_next` | 8 per vertex each | `p_curr[s]` per in-edge; passes in order (below) |
//! | frontier, next frontier | 1 per vertex each | `frontier[s]` per in-edge; one pass in order |
//!
//! PageRank's frontier is every vertex, so Ligra's `edgeMap` always takes the dense, pull
//! direction: for each vertex `d` in order it reads `d`'s in-edges and, per in-neighbour
//! `s`, `frontier[s]`, `p_curr[s]` and `V[s]`'s out-degree. The out-edges Ligra keeps for a
//! directed graph are therefore never read after loading: memory that is cold for the whole
//! run. The in-order passes over `p` per iteration: `edgeMap` writes `p_next`,
//! `PR_Vertex_F` rewrites it, the L1 norm reads `p_next` and rewrites `p_curr`, the
//! reduction reads `p_curr`, the reset writes it: 6 passes, 4 of them writing; `p_curr` and
//! `p_next` swap every iteration, so each array takes half of everything on average, and so
//! do the two frontier arrays (`Frontier = output`).
//!
//! Who is read per in-edge follows from the generator: Ligra's `rMatGraph` (PBBS) draws each
//! edge by descending `log2 n` levels of the adjacency matrix, taking quadrant `a`, `b`, `c`
//! or `d` (defaults 0.5, 0.1, 0.1, 0.3); the source's bit at a level is 1 in quadrants `c`
//! and `d`. So a vertex's expected out-degree share is `Π (bit ? 1 − a − b : a + b)` over
//! its bits: low vertex ids have the high degrees, and a page of consecutive vertices is as
//! popular as its high bits say.
//!
//! One operation is one cache-line access (the simulator's unit); the workload is
//! stationary (an iteration's mix, every page's exact probability), with each page's reads
//! and writes in their proportion. CPU caches are not modelled: the high-degree vertices'
//! lines, which a real run finds in the LLC, count as memory accesses here.

use super::{Access, AliasTable, OpShape, Workload};
use rand::rngs::SmallRng;
use rand::RngCore;

/// Bytes of one `asymmetricVertex` (two pointers, two 32-bit degrees).
const VERTEX_BYTES: u64 = 24;
const EDGE_BYTES: u64 = 4;
const RANK_BYTES: u64 = 8;
const FLAG_BYTES: u64 = 1;
const LINE: u64 = tiermem_core::CACHELINE_BYTES;

#[derive(Clone, Debug, PartialEq)]
pub struct PagerankSpec {
    /// A power of two (rMat's recursive quadrants).
    pub vertices: u64,
    pub edges: u64,
    pub rmat_a: f64,
    pub rmat_b: f64,
    pub rmat_c: f64,
    pub page_bytes: u64,
}

/// One of Ligra's arrays, by page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Array {
    Vertices,
    OutEdges,
    InEdges,
    Ranks,
    Frontiers,
}

impl PagerankSpec {
    /// Each array in allocation order with its bytes, each starting on a page (`p_curr` and
    /// `p_next` are two `Ranks` arrays, the two frontiers two `Frontiers`).
    fn arrays(&self) -> [(Array, u64); 7] {
        let (n, m) = (self.vertices, self.edges);
        [
            (Array::Vertices, n * VERTEX_BYTES),
            (Array::OutEdges, m * EDGE_BYTES),
            (Array::InEdges, m * EDGE_BYTES),
            (Array::Ranks, n * RANK_BYTES),
            (Array::Ranks, n * RANK_BYTES),
            (Array::Frontiers, n * FLAG_BYTES),
            (Array::Frontiers, n * FLAG_BYTES),
        ]
    }

    /// Pages the process's arrays take.
    pub fn pages(&self) -> u64 {
        self.arrays()
            .iter()
            .map(|&(_, b)| b.div_ceil(self.page_bytes))
            .sum()
    }

    /// A vertex's expected share of the out-degrees, for every vertex.
    fn out_degree_shares(&self) -> Vec<f64> {
        let bits = self.vertices.trailing_zeros();
        let (zero, one) = (self.rmat_a + self.rmat_b, 1.0 - self.rmat_a - self.rmat_b);
        // Every level weighs its bit alike, so the order bits are appended in is immaterial:
        // `v = 2·u + bit`.
        let mut share = vec![1.0f64];
        for _ in 0..bits {
            share = share.iter().flat_map(|&s| [s * zero, s * one]).collect();
        }
        share
    }
}

pub struct Pagerank {
    spec: PagerankSpec,
    probs: Vec<f64>,
    /// Per page, the 64-bit threshold under which an access writes.
    write_below: Vec<u64>,
    array_of: Vec<Array>,
    sampler: AliasTable,
    shape: OpShape,
}

impl Pagerank {
    pub fn new(spec: PagerankSpec) -> Pagerank {
        assert!(spec.vertices.is_power_of_two() && spec.vertices >= 2);
        let pb = spec.page_bytes;
        let pages = spec.pages() as usize;
        let mut reads = vec![0.0f64; pages];
        let mut writes = vec![0.0f64; pages];
        let mut array_of = vec![Array::Vertices; pages];
        let m = spec.edges as f64;
        let shares = spec.out_degree_shares();
        // Lines accessed per iteration by an in-order pass over `bytes` from page `first`.
        let pass = |acc: &mut [f64], first: usize, bytes: u64, times: f64| {
            let full = bytes / pb;
            for p in 0..full as usize {
                acc[first + p] += times * (pb / LINE) as f64;
            }
            let rest = bytes % pb;
            if rest > 0 {
                acc[first + full as usize] += times * rest.div_ceil(LINE) as f64;
            }
        };
        // `count` random reads spread over an array of `elem`-byte vertex records by
        // out-degree share.
        let by_degree = |acc: &mut [f64], first: usize, elem: u64, count: f64| {
            for (v, s) in shares.iter().enumerate() {
                acc[first + (v as u64 * elem / pb) as usize] += count * s;
            }
        };
        let mut first = 0usize;
        for (array, bytes) in spec.arrays() {
            let span = bytes.div_ceil(pb) as usize;
            array_of[first..first + span].fill(array);
            match array {
                Array::Vertices => {
                    pass(&mut reads, first, bytes, 1.0);
                    by_degree(&mut reads, first, VERTEX_BYTES, m);
                }
                Array::OutEdges => {}
                Array::InEdges => pass(&mut reads, first, bytes, 1.0),
                Array::Ranks => {
                    // Half of the 6 passes (4 writing) and of the p_curr[s] reads.
                    pass(&mut writes, first, bytes, 2.0);
                    pass(&mut reads, first, bytes, 1.0);
                    by_degree(&mut reads, first, RANK_BYTES, m / 2.0);
                }
                Array::Frontiers => {
                    // Per iteration the output is written in order and `vertexMap` reads
                    // the frontier in order: half of each per array.
                    pass(&mut writes, first, bytes, 0.5);
                    pass(&mut reads, first, bytes, 0.5);
                    by_degree(&mut reads, first, FLAG_BYTES, m / 2.0);
                }
            }
            first += span;
        }
        debug_assert_eq!(first, pages);
        let weights: Vec<f64> = reads.iter().zip(&writes).map(|(r, w)| r + w).collect();
        let total: f64 = weights.iter().sum();
        let written: f64 = writes.iter().sum();
        let probs: Vec<f64> = weights.iter().map(|w| w / total).collect();
        let write_below = weights
            .iter()
            .zip(&writes)
            .map(|(&w, &wr)| if w > 0.0 { super::threshold(wr / w) } else { 0 })
            .collect();
        Pagerank {
            sampler: AliasTable::new(&weights),
            shape: OpShape {
                lines_per_op: 1,
                written_lines_per_op: written / total,
            },
            spec,
            probs,
            write_below,
            array_of,
        }
    }

    /// Which array a page belongs to.
    pub fn array_of(&self, page: u32) -> Array {
        self.array_of[page as usize]
    }
}

impl Workload for Pagerank {
    fn name(&self) -> String {
        format!(
            "pagerank(rMat 2^{} vertices, {} edges)",
            self.spec.vertices.trailing_zeros(),
            self.spec.edges
        )
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
        let page = self.sampler.sample(rng);
        Access {
            page,
            write: rng.next_u64() < self.write_below[page as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn spec() -> PagerankSpec {
        PagerankSpec {
            vertices: 1 << 14,
            edges: 122_000,
            rmat_a: 0.5,
            rmat_b: 0.1,
            rmat_c: 0.1,
            page_bytes: 4096,
        }
    }

    #[test]
    fn layout_is_ligras_arrays_page_by_page() {
        let s = spec();
        let w = Pagerank::new(s.clone());
        let n = 1u64 << 14;
        // 24 B vertices, two 4 B edge arrays, two 8 B and two 1 B vertex arrays.
        let expect = (n * 24).div_ceil(4096)
            + 2 * (122_000u64 * 4).div_ceil(4096)
            + 2 * (n * 8).div_ceil(4096)
            + 2 * n.div_ceil(4096);
        assert_eq!(w.page_count() as u64, expect);
        assert_eq!(s.pages(), expect);
        assert!((w.probabilities().unwrap().iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn out_edges_are_never_read_and_everything_else_is() {
        let mut w = Pagerank::new(spec());
        let p = w.probabilities().unwrap().to_vec();
        for (i, &pi) in p.iter().enumerate() {
            match w.array_of(i as u32) {
                Array::OutEdges => assert_eq!(pi, 0.0, "page {i}"),
                a => assert!(pi > 0.0, "page {i} of {a:?}"),
            }
        }
        let mut rng = SmallRng::seed_from_u64(3);
        for _ in 0..100_000 {
            let a = w.next(&mut rng);
            assert_ne!(w.array_of(a.page), Array::OutEdges);
            if a.write {
                assert!(matches!(
                    w.array_of(a.page),
                    Array::Ranks | Array::Frontiers
                ));
            }
        }
    }

    #[test]
    fn degree_shares_follow_rmat_bits() {
        let s = spec();
        let sh = s.out_degree_shares();
        assert!((sh.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // Vertex 0 (all bits 0): 0.6^14; the last (all 1): 0.4^14; vertex 1 (lowest bit 1).
        assert!((sh[0] - 0.6f64.powi(14)).abs() < 1e-15);
        assert!((sh[(1 << 14) - 1] - 0.4f64.powi(14)).abs() < 1e-18);
        assert!((sh[1] - 0.6f64.powi(13) * 0.4).abs() < 1e-15);
        // The first rank page (low ids) is far more popular than the last.
        let w = Pagerank::new(s);
        let p = w.probabilities().unwrap();
        let ranks: Vec<usize> = (0..p.len())
            .filter(|&i| w.array_of(i as u32) == Array::Ranks)
            .collect();
        // 32 pages an array; the first's high bits are 00000 (0.6^5 of the reads), the
        // last's 11111 (0.4^5): with the in-order passes on top, about 6× apart.
        let (hot, cold) = (p[ranks[0]], p[ranks[ranks.len() / 2 - 1]]);
        assert!(hot > 4.0 * cold && hot < 8.0 * cold, "{hot} vs {cold}");
    }
}
