//! A program as its loop nests (`kind = "kernels"`): named arrays and, per time step, the
//! kernels that sweep them in order, each reading and writing some of the arrays, with the
//! per-step temporaries allocated before the kernel that first needs them and freed after
//! the one that last does ([`MapEvent`]). ICS'18's STREAM and LULESH
//! (`experiments/ics18/workloads.toml`) are written this way from their sources.
//!
//! The memory is the program's, array by array, each starting on a page (large `malloc`s
//! are page-aligned mappings), in declaration order; an array's size is a count of a
//! `unit` (LULESH's elements, nodes, ...) times `per_unit` items of `bytes` each.
//!
//! A kernel is an OpenMP `parallel for` over one index range: every operand array is
//! swept from its start to its end in step with the loop index (an operand `a[j]` of a
//! loop over `j`; a gather through a structured mesh's connectivity, LULESH's
//! `x[nodelist[8*i+k]]`, touches its nodes a few planes apart, which the caches serve, so
//! memory sees it in step too). OpenMP's static schedule gives each of `threads` threads
//! one contiguous chunk of the range, so at any time each operand is touched at `threads`
//! places, one per chunk. The accesses of the operands are merged in the order the loop
//! reaches them (the operand whose next line is due first, a merge by loop position).
//!
//! One operation is one cache-line access (the simulator's unit); a sampled access (each
//! stands for `k` real ones, [`Workload::set_accesses_per_sample`]) advances its operand's
//! chunk by `k` lines. Accesses to an operand in the kernel's `writes` are writes (the
//! line is written back); CPU caches are not modelled beyond that.
//!
//! Temporaries (`temporary = true`) are freed when the workload starts (their pages
//! exist in the page space from the beginning, but are not mapped until allocated) and
//! allocated again before each kernel that lists them in `alloc`; `free` releases them
//! after the kernel. The machine gives an allocation's pages a frame by first touch (the
//! fastest tier with room) and returns a freed page's frame (`backend`'s map events).

use super::{Access, MapEvent, OpShape, Workload};
use rand::rngs::SmallRng;
use std::collections::VecDeque;
use tiermem_core::PageIdx;

const LINE: u64 = tiermem_core::CACHELINE_BYTES;

/// One array of the program, resolved to bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct ArraySpec {
    pub name: String,
    pub bytes: u64,
    pub temporary: bool,
}

/// One kernel (a parallel loop): the arrays it reads and writes (indices into the
/// arrays), what is allocated before it and freed after it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct KernelSpec {
    pub name: String,
    pub reads: Vec<usize>,
    pub writes: Vec<usize>,
    pub alloc: Vec<usize>,
    pub free: Vec<usize>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct KernelsSpec {
    pub label: String,
    pub arrays: Vec<ArraySpec>,
    /// One time step, in program order; the workload repeats it.
    pub kernels: Vec<KernelSpec>,
    pub threads: u32,
    pub page_bytes: u64,
}

impl KernelsSpec {
    /// First page of every array, and the pages they take in all.
    fn layout(&self) -> (Vec<u64>, u64) {
        let mut first = Vec::with_capacity(self.arrays.len());
        let mut next = 0u64;
        for a in &self.arrays {
            first.push(next);
            next += a.bytes.div_ceil(self.page_bytes).max(1);
        }
        (first, next)
    }

    pub fn pages(&self) -> u64 {
        self.layout().1
    }

    /// Bytes mapped at the peak of a time step: the persistent arrays and the most
    /// temporaries live at once (what Linux reports as the program's maximum RSS, the
    /// arrays being touched whole).
    pub fn peak_bytes(&self) -> u64 {
        let persistent: u64 = self
            .arrays
            .iter()
            .filter(|a| !a.temporary)
            .map(|a| a.bytes)
            .sum();
        let mut live = vec![false; self.arrays.len()];
        let (mut now, mut peak) = (0u64, 0u64);
        for k in &self.kernels {
            for &a in &k.alloc {
                if !live[a] {
                    live[a] = true;
                    now += self.arrays[a].bytes;
                }
            }
            peak = peak.max(now);
            for &a in &k.free {
                if live[a] {
                    live[a] = false;
                    now -= self.arrays[a].bytes;
                }
            }
        }
        persistent + peak
    }
}

/// An operand of the running kernel.
#[derive(Clone, Copy, Debug)]
struct Operand {
    first_page: u64,
    lines: u64,
    write: bool,
    /// Lines of each thread's chunk.
    chunk_lines: u64,
    /// Sampled accesses it takes in the kernel (every chunk alike), and those done.
    steps: u64,
    done: u64,
}

pub struct Kernels {
    spec: KernelsSpec,
    first_page: Vec<u64>,
    pages: u32,
    stride: u64,
    kernel: usize,
    operands: Vec<Operand>,
    events: VecDeque<MapEvent>,
    span: u32,
    shape: OpShape,
}

impl Kernels {
    pub fn new(spec: KernelsSpec) -> Kernels {
        assert!(spec.threads >= 1 && !spec.kernels.is_empty());
        let (first_page, pages) = spec.layout();
        // Per time step: lines read and written (each operand swept once per kernel).
        let (mut all, mut written) = (0u64, 0u64);
        for k in &spec.kernels {
            for (a, w) in Self::operand_list(k) {
                let lines = spec.arrays[a].bytes.div_ceil(LINE);
                all += lines;
                if w {
                    written += lines;
                }
            }
        }
        let mut w = Kernels {
            first_page,
            pages: pages as u32,
            stride: 1,
            kernel: 0,
            operands: Vec::new(),
            events: VecDeque::new(),
            span: 1,
            shape: OpShape {
                lines_per_op: 1,
                written_lines_per_op: written as f64 / all.max(1) as f64,
            },
            spec,
        };
        // Temporaries are not mapped until their first allocation.
        for a in 0..w.spec.arrays.len() {
            if w.spec.arrays[a].temporary {
                let e = MapEvent::Free(w.range_of(a));
                w.events.push_back(e);
            }
        }
        w.start_kernel(0);
        w
    }

    /// The kernel's operands: reads then writes, an array in both once (as a write).
    fn operand_list(k: &KernelSpec) -> Vec<(usize, bool)> {
        let mut ops: Vec<(usize, bool)> = Vec::new();
        for &a in &k.reads {
            if !ops.iter().any(|&(b, _)| b == a) {
                ops.push((a, k.writes.contains(&a)));
            }
        }
        for &a in &k.writes {
            if !ops.iter().any(|&(b, _)| b == a) {
                ops.push((a, true));
            }
        }
        ops
    }

    fn range_of(&self, a: usize) -> std::ops::Range<PageIdx> {
        let first = self.first_page[a];
        let len = self.spec.arrays[a]
            .bytes
            .div_ceil(self.spec.page_bytes)
            .max(1);
        first as PageIdx..(first + len) as PageIdx
    }

    fn start_kernel(&mut self, i: usize) {
        self.kernel = i;
        for a in self.spec.kernels[i].alloc.clone() {
            let e = MapEvent::Alloc(self.range_of(a));
            self.events.push_back(e);
        }
        self.load_operands();
    }

    /// The running kernel's operands, none of them begun.
    fn load_operands(&mut self) {
        let t = self.spec.threads as u64;
        self.operands = Self::operand_list(&self.spec.kernels[self.kernel])
            .into_iter()
            .map(|(a, write)| {
                let lines = self.spec.arrays[a].bytes.div_ceil(LINE).max(1);
                let chunk_lines = lines.div_ceil(t);
                Operand {
                    first_page: self.first_page[a],
                    lines,
                    write,
                    chunk_lines,
                    steps: t * chunk_lines.div_ceil(self.stride),
                    done: 0,
                }
            })
            .collect();
    }

    fn end_kernel(&mut self) {
        let k = self.kernel;
        for a in self.spec.kernels[k].free.clone() {
            let e = MapEvent::Free(self.range_of(a));
            self.events.push_back(e);
        }
        self.start_kernel((k + 1) % self.spec.kernels.len());
    }

    /// The kernel running now (its name).
    pub fn kernel_name(&self) -> &str {
        &self.spec.kernels[self.kernel].name
    }
}

impl Workload for Kernels {
    fn name(&self) -> String {
        format!(
            "kernels({}: {} arrays, {} kernels a step)",
            self.spec.label,
            self.spec.arrays.len(),
            self.spec.kernels.len()
        )
    }
    fn page_count(&self) -> u32 {
        self.pages
    }
    fn op_shape(&self) -> OpShape {
        self.shape
    }
    fn advance_to(&mut self, _now_ns: u64) -> bool {
        false
    }
    fn probabilities(&self) -> Option<&[f64]> {
        None
    }
    fn set_accesses_per_sample(&mut self, k: f64) {
        let stride = if k.is_finite() && k >= 1.0 {
            k.round() as u64
        } else {
            1
        };
        if stride != self.stride {
            // Set before the run (the kernel not yet begun): its operands' steps anew.
            self.stride = stride;
            self.load_operands();
        }
    }
    fn span_pages(&self) -> u32 {
        self.span
    }
    fn maps_memory(&self) -> bool {
        true
    }
    fn take_map_event(&mut self) -> Option<MapEvent> {
        self.events.pop_front()
    }
    fn next(&mut self, _rng: &mut SmallRng) -> Access {
        // The operand whose next access the loop reaches first: least (done + 1) / steps.
        let mut best = 0usize;
        for i in 1..self.operands.len() {
            let (a, b) = (&self.operands[i], &self.operands[best]);
            let (due_a, due_b) = (
                (a.done as u128 + 1) * (b.steps as u128),
                (b.done as u128 + 1) * (a.steps as u128),
            );
            if due_a < due_b {
                best = i;
            }
        }
        let t = self.spec.threads as u64;
        let pb = self.spec.page_bytes;
        let o = &mut self.operands[best];
        let (thread, step) = (o.done % t, o.done / t);
        let line = (thread * o.chunk_lines + step * self.stride).min(o.lines - 1);
        let last = (line + self.stride - 1)
            .min(thread * o.chunk_lines + o.chunk_lines - 1)
            .min(o.lines - 1);
        let page = o.first_page + line * LINE / pb;
        self.span = ((last * LINE / pb) - (line * LINE / pb) + 1) as u32;
        let write = o.write;
        o.done += 1;
        if self.operands.iter().all(|o| o.done >= o.steps) {
            self.end_kernel();
        }
        Access {
            page: page as PageIdx,
            write,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn array(name: &str, bytes: u64, temporary: bool) -> ArraySpec {
        ArraySpec {
            name: name.into(),
            bytes,
            temporary,
        }
    }

    /// STREAM's copy and scale over three 4-page arrays, one thread; `tmp` (2 pages) lives
    /// during scale.
    fn spec(threads: u32) -> KernelsSpec {
        KernelsSpec {
            label: "t".into(),
            arrays: vec![
                array("a", 4 * 4096, false),
                array("b", 4 * 4096, false),
                array("c", 4 * 4096, false),
                array("tmp", 2 * 4096, true),
            ],
            kernels: vec![
                KernelSpec {
                    name: "copy".into(),
                    reads: vec![0],
                    writes: vec![2],
                    ..Default::default()
                },
                KernelSpec {
                    name: "scale".into(),
                    reads: vec![2],
                    writes: vec![1, 3],
                    alloc: vec![3],
                    free: vec![3],
                },
            ],
            threads,
            page_bytes: 4096,
        }
    }

    #[test]
    fn kernels_sweep_their_operands_in_step_and_in_order() {
        let mut w = Kernels::new(spec(1));
        w.set_accesses_per_sample(64.0); // one page of one operand per access
        assert_eq!(w.page_count(), 14);
        let mut rng = SmallRng::seed_from_u64(1);
        // The temporary is released at the start.
        assert_eq!(w.take_map_event(), Some(MapEvent::Free(12..14)));
        assert_eq!(w.take_map_event(), None);
        let got: Vec<(u32, bool)> = (0..8)
            .map(|_| {
                let a = w.next(&mut rng);
                (a.page, a.write)
            })
            .collect();
        // copy: a[j] and c[j] page by page, in step.
        assert_eq!(
            got,
            vec![
                (0, false),
                (8, true),
                (1, false),
                (9, true),
                (2, false),
                (10, true),
                (3, false),
                (11, true)
            ]
        );
        // scale allocates its temporary before its first access.
        assert_eq!(w.kernel_name(), "scale");
        assert_eq!(w.take_map_event(), Some(MapEvent::Alloc(12..14)));
        let scale: Vec<u32> = (0..10).map(|_| w.next(&mut rng).page).collect();
        // c read, b and tmp written; tmp (half as long) advances at half the pace.
        assert_eq!(scale, vec![8, 4, 9, 5, 12, 10, 6, 11, 7, 13]);
        assert_eq!(w.take_map_event(), Some(MapEvent::Free(12..14)));
        assert_eq!(w.kernel_name(), "copy");
    }

    #[test]
    fn threads_take_contiguous_chunks() {
        let mut w = Kernels::new(spec(2));
        w.set_accesses_per_sample(64.0);
        let mut rng = SmallRng::seed_from_u64(1);
        let copy: Vec<u32> = (0..8).map(|_| w.next(&mut rng).page).collect();
        // Thread 0 has pages 0-1 of each array, thread 1 pages 2-3: both advance together.
        assert_eq!(copy, vec![0, 8, 2, 10, 1, 9, 3, 11]);
    }

    #[test]
    fn peak_counts_the_temporaries_live_at_once() {
        let s = spec(1);
        assert_eq!(s.peak_bytes(), 14 * 4096);
        let w = Kernels::new(s);
        // A step sweeps a, c (copy) and c, b, tmp (scale): 18 pages, of which c (in copy),
        // b and tmp are written: 10.
        assert!((w.op_shape().written_lines_per_op - 10.0 / 18.0).abs() < 1e-12);
    }
}
