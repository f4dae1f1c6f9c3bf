//! Sequential streaming over a buffer: operation `i` touches object `i` (wrapping at the
//! end), so pages are visited in order, each for `page_bytes / object_bytes` consecutive
//! operations.
//!
//! `probabilities()` is `None`: averaged over a sweep every page is equally likely, but
//! the accesses are not independent draws — a page is touched in one burst per sweep and
//! then not at all until the next. Trackers that draw time-to-fault from stationary
//! probabilities would see a random pattern where the hardware sees a sweep, so a stream
//! is simulated access by access (ordered), as the workload contract asks of ordered
//! workloads; the machine takes its per-tier mass from the measured accesses.
//!
//! With sampled simulation (each simulated access stands for `k` real ones, see
//! [`Workload::set_accesses_per_sample`]) one `next()` advances `k` objects, so a sweep
//! takes the same virtual time as it would unsampled.

use super::{lines_for, Access, OpShape, Workload, WriteDraw};
use rand::rngs::SmallRng;

pub struct Stream {
    n: u32,
    page_bytes: u64,
    object_bytes: u64,
    objects_per_page: u64,
    /// Objects advanced per `next()`.
    stride: u64,
    page: u32,
    /// Object index within `page`.
    obj: u64,
    write: WriteDraw,
    shape: OpShape,
    /// Pages the last `next()` covered.
    span: u32,
    /// Share of the time it issues operations ([`Workload::busy_share`]).
    busy_share: f64,
}

impl Stream {
    pub fn new(pages: u32, page_bytes: u64, object_bytes: u64, write_fraction: f64) -> Stream {
        let lines = lines_for(object_bytes);
        Stream {
            n: pages.max(1),
            page_bytes,
            object_bytes,
            objects_per_page: (page_bytes / object_bytes.max(1)).max(1),
            stride: 1,
            page: 0,
            obj: 0,
            write: WriteDraw::new(write_fraction),
            span: 1,
            busy_share: 1.0,
            shape: OpShape {
                lines_per_op: lines,
                written_lines_per_op: lines as f64 * write_fraction.clamp(0.0, 1.0),
            },
        }
    }
}

impl Stream {
    /// Busy this share of the time (1: always).
    pub fn busy(mut self, share: f64) -> Stream {
        self.busy_share = share;
        self
    }
}

impl Workload for Stream {
    fn busy_share(&self) -> f64 {
        self.busy_share
    }
    fn name(&self) -> String {
        format!(
            "stream({} pages of {} B, obj={}B)",
            self.n, self.page_bytes, self.object_bytes
        )
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
        None
    }
    fn set_accesses_per_sample(&mut self, k: f64) {
        self.stride = if k.is_finite() && k >= 1.0 {
            k.round() as u64
        } else {
            1
        };
    }
    fn span_pages(&self) -> u32 {
        self.span
    }
    #[inline]
    fn next(&mut self, rng: &mut SmallRng) -> Access {
        let a = Access {
            page: self.page,
            write: self.write.draw(rng),
        };
        // Objects obj .. obj + stride - 1 of this access lie on this page and the next ones.
        self.span =
            ((self.obj + self.stride - 1) / self.objects_per_page + 1).min(self.n as u64) as u32;
        self.obj += self.stride;
        if self.obj >= self.objects_per_page {
            let pages = self.obj / self.objects_per_page;
            self.obj %= self.objects_per_page;
            self.page = ((self.page as u64 + pages) % self.n as u64) as u32;
        }
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn visits_pages_in_order_and_wraps() {
        let mut s = Stream::new(3, 4096, 1024, 0.0);
        let mut rng = SmallRng::seed_from_u64(1);
        let pages: Vec<u32> = (0..14).map(|_| s.next(&mut rng).page).collect();
        assert_eq!(pages, vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0]);
        assert!(s.probabilities().is_none());
        let mut s = Stream::new(3, 4096, 1024, 1.0);
        s.set_accesses_per_sample(6.0);
        let pages: Vec<u32> = (0..5).map(|_| s.next(&mut rng).page).collect();
        assert_eq!(pages, vec![0, 1, 0, 1, 0]); // objects 0, 6, 12, 18, 24 of 4 per page, 3 pages
                                                // The last access covered objects 24..30 = objects 0..6 of a sweep: pages 0 and 1.
        assert_eq!(s.span_pages(), 2);
        assert_eq!(
            s.op_shape(),
            OpShape {
                lines_per_op: 16,
                written_lines_per_op: 16.0
            }
        );
    }
}
