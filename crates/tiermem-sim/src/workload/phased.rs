//! A phase schedule: a list of workloads over one page space, each in force from its
//! start time. The page space is the largest phase's; a smaller phase leaves the pages
//! above its own count untouched (probability 0).

use super::{Access, MapEvent, OpShape, Workload};
use rand::rngs::SmallRng;
use tiermem_core::PageIdx;

pub(crate) struct Phased {
    /// (start ns, workload), sorted by start; the first starts at 0.
    parts: Vec<(u64, Box<dyn Workload>)>,
    cur: usize,
    n: u32,
    /// The current phase's probabilities padded to `n` pages, when it has fewer.
    padded: Option<Vec<f64>>,
}

impl Phased {
    pub(crate) fn new(parts: Vec<(u64, Box<dyn Workload>)>) -> Phased {
        assert!(
            !parts.is_empty() && parts[0].0 == 0,
            "the base phase starts at 0"
        );
        let n = parts.iter().map(|(_, w)| w.page_count()).max().unwrap_or(1);
        let mut p = Phased {
            parts,
            cur: 0,
            n,
            padded: None,
        };
        p.repad();
        p
    }

    fn repad(&mut self) {
        let w = &self.parts[self.cur].1;
        self.padded = match w.probabilities() {
            Some(p) if p.len() < self.n as usize => {
                let mut v = p.to_vec();
                v.resize(self.n as usize, 0.0);
                Some(v)
            }
            _ => None,
        };
    }
}

impl Workload for Phased {
    fn name(&self) -> String {
        let names: Vec<String> = self
            .parts
            .iter()
            .map(|(t, w)| format!("{} from {}s", w.name(), *t as f64 / 1e9))
            .collect();
        format!("phases[{}]", names.join(" → "))
    }
    fn page_count(&self) -> u32 {
        self.n
    }
    fn op_shape(&self) -> OpShape {
        self.parts[self.cur].1.op_shape()
    }
    fn advance_to(&mut self, now_ns: u64) -> bool {
        let mut idx = self.cur;
        while idx + 1 < self.parts.len() && self.parts[idx + 1].0 <= now_ns {
            idx += 1;
        }
        let switched = idx != self.cur;
        self.cur = idx;
        let inner = self.parts[idx].1.advance_to(now_ns);
        if switched || inner {
            self.repad();
        }
        switched || inner
    }
    fn next_change_ns(&self) -> Option<u64> {
        let next_phase = self.parts.get(self.cur + 1).map(|(t, _)| *t);
        match (next_phase, self.parts[self.cur].1.next_change_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    fn probabilities(&self) -> Option<&[f64]> {
        match &self.padded {
            Some(v) => Some(v),
            None => self.parts[self.cur].1.probabilities(),
        }
    }
    #[inline]
    fn next(&mut self, rng: &mut SmallRng) -> Access {
        self.parts[self.cur].1.next(rng)
    }
    fn finished(&self) -> bool {
        self.parts[self.cur].1.finished()
    }
    fn busy_share(&self) -> f64 {
        self.parts[self.cur].1.busy_share()
    }
    fn skip(&mut self, n: u64, rng: &mut SmallRng) {
        self.parts[self.cur].1.skip(n, rng)
    }
    fn hot_pages(&self) -> Option<Vec<PageIdx>> {
        self.parts[self.cur].1.hot_pages()
    }
    fn span_pages(&self) -> u32 {
        self.parts[self.cur].1.span_pages()
    }
    fn maps_memory(&self) -> bool {
        self.parts.iter().any(|(_, w)| w.maps_memory())
    }
    fn take_map_event(&mut self) -> Option<MapEvent> {
        self.parts[self.cur].1.take_map_event()
    }
    fn set_accesses_per_sample(&mut self, k: f64) {
        for (_, w) in &mut self.parts {
            w.set_accesses_per_sample(k);
        }
    }
}
