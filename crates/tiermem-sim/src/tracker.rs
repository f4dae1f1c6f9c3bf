//! Trackers as the hardware would expose them. Each sees the simulated access stream
//! (every simulated access stands for `accesses_per_sample` real ones) and, where the
//! workload is stationary, its exact per-page probabilities, so that time-to-fault and
//! access bits are drawn exactly rather than from the thinned stream.

use crate::workload::Access;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tiermem_core::{HeatEvent, PageIdx, PageRange, TierId, Tracker, TrackerSpec, TrackerView};

const UNMARKED: u64 = u64::MAX;

/// What the backend knows at an epoch boundary.
pub struct EpochContext<'a> {
    pub now_ns: u64,
    pub placement: &'a [TierId],
    /// Per-operation access probability of each page, if the workload is stationary.
    pub probabilities: Option<&'a [f64]>,
    /// Real application operations per second in the epoch that just ended.
    pub ops_per_s: f64,
    pub rng: &'a mut SmallRng,
}

/// PEBS-like: one sample every `period` real accesses, counted exactly across the
/// thinned stream (an access standing for k real ones advances the counter by k).
pub struct Pebs {
    period: f64,
    /// Simulated accesses stand for `accesses_per_sample` operations of `lines` cache-line
    /// loads each: PEBS counts loads, so one 4 KiB object yields 64 chances to be sampled.
    accesses_per_sample: f64,
    per_access: f64,
    counter: f64,
    pending: Vec<HeatEvent>,
}

impl Pebs {
    #[inline]
    fn on_access(&mut self, page: PageIdx, write: bool) {
        self.counter += self.per_access;
        let mut count = 0;
        while self.counter >= self.period {
            self.counter -= self.period;
            count += 1;
        }
        if count > 0 {
            self.pending.push(HeatEvent::Sample { page, write, count });
        }
    }

    /// One sample of each access, the pages offset by `start`.
    fn push_one_sample_each(&mut self, start: usize, accesses: &[Access]) {
        self.pending
            .extend(accesses.iter().map(|a| HeatEvent::Sample {
                page: (start + a.page as usize) as PageIdx,
                write: a.write,
                count: 1,
            }));
    }

    /// `on_access` for each of a batch, the counter kept in a register (through memory,
    /// its add-compare-subtract chain was a third of the access path): the same arithmetic
    /// in the same order, so the same samples.
    fn on_accesses(&mut self, start: usize, accesses: &[Access]) {
        let (per_access, period) = (self.per_access, self.period);
        let mut counter = self.counter;
        if per_access == period && counter == 0.0 {
            // Each access is exactly one sample (MEMTIS: the backend shrinks a draw to one
            // period) and the counter stays at 0 (0 + p - p is exact): one event each, by
            // a sized `extend` with no chain through the counter.
            self.push_one_sample_each(start, accesses);
            return;
        }
        self.pending.reserve(accesses.len());
        for a in accesses {
            counter += per_access;
            let mut count = 0;
            while counter >= period {
                counter -= period;
                count += 1;
            }
            if count > 0 {
                let page = (start + a.page as usize) as PageIdx;
                self.pending.push(HeatEvent::Sample {
                    page,
                    write: a.write,
                    count,
                });
            }
        }
        self.counter = counter;
    }

    /// Draws until the counter reaches the period: the `d`-th draw from now samples,
    /// the `d - 1` before it, counting `weight` each, do not (checked against rounding).
    fn draws_to_next_sample(&self, weight: f64) -> u64 {
        let step = self.per_access * weight;
        if self.counter + step >= self.period {
            return 1; // the next draw samples (every draw does when a period is shorter)
        }
        if step <= 0.0 {
            return u64::MAX;
        }
        // ceil by hand: `f64::ceil` is a libm call on baseline x86-64, once per sample.
        // Signed conversions: one instruction each, where u64 <-> f64 takes a dozen (this
        // function was a fifth of a HeMem run); q > 0 here, and saturates at i64::MAX.
        let q = (self.period - self.counter) / step;
        let mut d = q as i64;
        if (d as f64) < q {
            d += 1;
        }
        while d > 1 && self.counter + (d - 1) as f64 * step >= self.period {
            d -= 1;
        }
        d as u64
    }
}

/// Linux NUMA balancing's defaults (kernel/sched/fair.c): `numa_balancing_scan_size_mb`
/// = 256 MB a scan window, `numa_balancing_scan_period_min_ms` = 1000 ms to scan a task's
/// whole address space, and never more than `MAX_SCAN_WINDOW` = 2560 MB a second, so one
/// window at most every 1000 ms / (2560 / 256) = 100 ms (`task_scan_min`'s floor).
pub const NUMA_SCAN_SIZE_BYTES: f64 = 256.0 * 1048576.0;
pub const NUMA_SCAN_PERIOD_MIN_NS: f64 = 1e9;
pub const NUMA_SCAN_FLOOR_NS: f64 = 1e8;

/// The time between two scan windows of one task (`task_scan_min`, kernel/sched/fair.c):
/// `max(floor, scan_period_min / windows)` with `windows = ceil(RSS / window)`; without a
/// `period_min_ns`, the `floor_ns` for every task. A task at or above 2.5 GB (10 windows
/// of 256 MB) scans a window each 100 ms; a 1 GB task each 250 ms; one of ≤ 256 MB each
/// second. Pages in any unit (the task's and the window's alike).
pub fn task_scan_interval_ns(
    task_pages: f64,
    window_pages: f64,
    floor_ns: f64,
    period_min_ns: Option<f64>,
) -> f64 {
    match period_min_ns {
        Some(p) => {
            let windows = (task_pages / window_pages.max(1e-9)).ceil().max(1.0);
            floor_ns.max(p / windows)
        }
        None => floor_ns,
    }
}

/// The share of its scan windows a task gets at CPU share `cpu_share` on `threads`
/// threads: `task_tick_numa` queues the scan when a thread's own runtime passes the scan
/// period, and `task_numa_work` scans at most one window per period of wall time for the
/// whole mm (`numa_next_scan`), so a throttled task scans at `min(1, threads × share)` of
/// its pace (cpu.max spreads the quota over the threads).
pub fn scan_pace(threads: f64, cpu_share: f64) -> f64 {
    (threads * cpu_share).clamp(0.0, 1.0)
}

/// Bytes a second Linux's NUMA balancing unmaps in a task of `footprint_bytes` on
/// `threads` threads at `cpu_share`, with the kernel's defaults: one window of 256 MB per
/// [`task_scan_interval_ns`], paced by [`scan_pace`]. The same model as the simulated
/// [`HintFaults`] scanner (TPP's tracker) and the hint-fault telemetry Mercury reads.
pub fn numa_scan_bytes_per_s(footprint_bytes: f64, threads: f64, cpu_share: f64) -> f64 {
    let interval = task_scan_interval_ns(
        footprint_bytes,
        NUMA_SCAN_SIZE_BYTES,
        NUMA_SCAN_FLOOR_NS,
        Some(NUMA_SCAN_PERIOD_MIN_NS),
    );
    NUMA_SCAN_SIZE_BYTES / (interval / 1e9) * scan_pace(threads, cpu_share)
}

/// One task's scanner: its pages `start..start + len`, its own offset (the kernel keeps
/// `mm->numa_scan_offset` per mm) and next window.
#[derive(Clone, Debug)]
struct ScanTask {
    start: usize,
    len: usize,
    cursor: usize,
    next_scan_ns: u64,
    /// [`scan_pace`] of the task (1 until the backend says otherwise).
    pace: f64,
}

/// TPP / NUMA-balancing hint faults, scanned per task as Linux does: each tenant is a
/// task with its own cursor and window interval ([`task_scan_interval_ns`] of its
/// footprint), paced by its CPU ([`scan_pace`]). Until the backend names the tasks, the
/// whole page space is one task.
pub struct HintFaults {
    scan_period_ns: u64,
    scan_period_min_ns: Option<u64>,
    scan_pages: u64,
    tiers: Vec<TierId>,
    tasks: Vec<ScanTask>,
    /// Time each page was unmapped, or UNMARKED.
    marked_at: Vec<u64>,
    /// Faults drawn from exact probabilities: (fault time, page). An entry counts only
    /// while it is the page's `due_at` (a redraw leaves the old one in the heap).
    due: BinaryHeap<Reverse<(u64, PageIdx)>>,
    /// Per page: the time of its drawn fault, or `NOT_DUE`.
    due_at: Vec<u64>,
    /// Page ranges whose access probabilities changed since the last epoch: their marked
    /// pages' faults are drawn again from the new rates.
    redraw: Vec<(usize, usize)>,
    pending: Vec<HeatEvent>,
}

/// Access-bit scanning.
pub struct AccessBits {
    scan_period_ns: u64,
    next_scan_ns: u64,
    last_scan_ns: u64,
    touched: Vec<bool>,
    pending: Vec<HeatEvent>,
}

pub enum SimTracker {
    None,
    Pebs(Pebs),
    HintFaults(HintFaults),
    AccessBits(AccessBits),
    /// Accessed bits read by the policy over the ranges it scans (`AccessBitScan`).
    Scan(ScanBits),
    Combined(Vec<SimTracker>),
}

impl SimTracker {
    /// Build from a policy's spec. `scale` shrinks the page space; rates are adjusted so a
    /// page sees the same number of samples/scans per second as at full scale.
    pub fn new(
        spec: &TrackerSpec,
        pages: usize,
        accesses_per_sample: f64,
        scale: f64,
    ) -> SimTracker {
        match spec {
            TrackerSpec::None => SimTracker::None,
            TrackerSpec::Combined(specs) => SimTracker::Combined(
                specs
                    .iter()
                    .map(|s| SimTracker::new(s, pages, accesses_per_sample, scale))
                    .collect(),
            ),
            TrackerSpec::Pebs { sample_period } => SimTracker::Pebs(Pebs {
                period: (*sample_period as f64 / scale).max(1.0),
                accesses_per_sample,
                per_access: accesses_per_sample,
                counter: 0.0,
                pending: Vec::new(),
            }),
            TrackerSpec::HintFault {
                scan_period_ns,
                scan_pages,
                tiers,
                scan_period_min_ns,
            } => SimTracker::HintFaults(HintFaults {
                scan_period_ns: (*scan_period_ns).max(1),
                scan_period_min_ns: *scan_period_min_ns,
                scan_pages: ((*scan_pages as f64 * scale).round() as u64).max(1),
                tiers: tiers.clone(),
                tasks: vec![ScanTask {
                    start: 0,
                    len: pages,
                    cursor: 0,
                    next_scan_ns: 0,
                    pace: 1.0,
                }],
                marked_at: vec![UNMARKED; pages],
                due: BinaryHeap::new(),
                due_at: vec![NOT_DUE; pages],
                redraw: Vec::new(),
                pending: Vec::new(),
            }),
            TrackerSpec::AccessBitScan => SimTracker::Scan(ScanBits::new(pages, 0x0ac5_b175)),
            TrackerSpec::AccessBit { scan_period_ns } => SimTracker::AccessBits(AccessBits {
                scan_period_ns: (*scan_period_ns).max(1),
                next_scan_ns: *scan_period_ns,
                last_scan_ns: 0,
                touched: vec![false; pages],
                pending: Vec::new(),
            }),
        }
    }

    /// Each operation loads `lines` cache lines (the workload's op shape): PEBS's sampling
    /// probability per operation scales with it.
    pub fn set_lines_per_op(&mut self, lines: f64) {
        match self {
            SimTracker::Pebs(p) => p.per_access = p.accesses_per_sample * lines.max(1.0),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|t| t.set_lines_per_op(lines)),
            _ => {}
        }
    }

    /// A drawn access of a stationary workload (with exact per-page probabilities): only PEBS
    /// sees it, and it carries no time (hint faults, access bits and scans draw such
    /// accesses from the exact probabilities at the epoch; the skip-ahead path called with
    /// a time computed per draw spent half its own cost converting it).
    #[inline]
    pub fn on_exact_access(&mut self, page: PageIdx, write: bool) {
        match self {
            SimTracker::Pebs(p) => p.on_access(page, write),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|t| t.on_exact_access(page, write)),
            _ => {}
        }
    }

    /// How many of the next `n` draws of full weight PEBS samples, counted in one step,
    /// when one step is exactly what draw-by-draw counting does: a lone PEBS tracker whose
    /// period and per-draw weight are whole numbers (below 2^40), a draw shorter than a
    /// period, and a whole-number counter. Then every `f64` operation of the draw-by-draw
    /// path (`draws_to_next_sample`, `skip_draws`, `on_access`) is exact integer arithmetic,
    /// and its samples are `(counter + n * weight) / period` with the remainder left in
    /// the counter; each is one sample of one draw. `None` otherwise (count draw by draw).
    /// The caller then draws that many accesses and hands them to [`Self::on_sampled`].
    pub fn take_sampled_draws(&mut self, n: u64) -> Option<u64> {
        let SimTracker::Pebs(p) = self else {
            return None;
        };
        const EXACT: f64 = (1u64 << 40) as f64;
        let whole = |x: f64| (0.0..EXACT).contains(&x) && x.fract() == 0.0;
        if !(whole(p.per_access) && whole(p.period) && whole(p.counter))
            || p.per_access >= p.period
            || n >= 1 << 20
        {
            return None;
        }
        let (step, period) = (p.per_access as u64, p.period as u64);
        let total = p.counter as u64 + n * step;
        p.counter = (total % period) as f64;
        Some(total / period)
    }

    /// The draws [`Self::take_sampled_draws`] counted as sampled: one sample each, the pages
    /// offset by `start`.
    pub fn on_sampled(&mut self, start: usize, accesses: &[Access]) {
        if let SimTracker::Pebs(p) = self {
            p.push_one_sample_each(start, accesses);
        }
    }

    /// A batch of [`Self::on_exact_access`], the pages offset by `start` (a tenant's first
    /// page): one dispatch per batch instead of one per access.
    pub fn on_exact_accesses(&mut self, start: usize, accesses: &[Access]) {
        match self {
            SimTracker::Pebs(p) => p.on_accesses(start, accesses),
            SimTracker::Combined(ts) => ts
                .iter_mut()
                .for_each(|t| t.on_exact_accesses(start, accesses)),
            _ => {}
        }
    }

    /// The access path of a workload without exact probabilities (a trace, a phased or
    /// ordered workload): called for every simulated access at its time. Must stay cheap.
    #[inline]
    pub fn on_access(&mut self, page: PageIdx, write: bool, now_ns: u64) {
        match self {
            SimTracker::None => {}
            SimTracker::Pebs(p) => p.on_access(page, write),
            SimTracker::HintFaults(h) => {
                let m = h.marked_at[page as usize];
                if m != UNMARKED && now_ns >= m {
                    h.marked_at[page as usize] = UNMARKED;
                    h.pending.push(HeatEvent::HintFault {
                        page,
                        time_to_fault_ns: (now_ns - m) as f64,
                    });
                }
            }
            SimTracker::AccessBits(a) => a.touched[page as usize] = true,
            SimTracker::Scan(s) => s.mark(page as usize),
            SimTracker::Combined(ts) => {
                for t in ts {
                    t.on_access(page, write, now_ns);
                }
            }
        }
    }

    /// For a stationary workload's accesses (with exact per-page probabilities): the number
    /// of draws from now to the first whose page a tracker needs, that one included (≥ 1):
    /// PEBS's next sample. `None` when no tracker needs any: hint faults, access bits and
    /// scans draw from the exact probabilities at the epoch instead. `weight`: the share of
    /// draws a passed one counts for (accesses to compressed pages are no loads).
    /// Whether [`Self::draws_to_next_sample`] is 1 whatever the state: a PEBS period no
    /// longer than a draw's weight (MEMTIS's 199 against 1000 accesses a draw), so every
    /// draw is sampled and the caller need not ask per draw.
    pub fn samples_every_draw(&self, weight: f64) -> bool {
        match self {
            SimTracker::Pebs(p) => p.per_access * weight >= p.period,
            SimTracker::Combined(ts) => ts.iter().any(|t| t.samples_every_draw(weight)),
            _ => false,
        }
    }

    #[inline]
    pub fn draws_to_next_sample(&self, weight: f64) -> Option<u64> {
        match self {
            SimTracker::Pebs(p) => Some(p.draws_to_next_sample(weight)),
            SimTracker::Combined(ts) => ts
                .iter()
                .filter_map(|t| t.draws_to_next_sample(weight))
                .min(),
            _ => None,
        }
    }

    /// Account `k` draws of a stationary workload that no tracker needs (fewer than
    /// [`Self::draws_to_next_sample`]): PEBS's counter passes them without a sample.
    pub fn skip_draws(&mut self, k: u64, weight: f64) {
        match self {
            SimTracker::Pebs(p) => {
                p.counter += k as f64 * p.per_access * weight;
                debug_assert!(p.counter < p.period || k == 0, "skipped past a sample");
            }
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|t| t.skip_draws(k, weight)),
            _ => {}
        }
    }

    /// An ordered workload's sampled access that covered more than its own page (a stream
    /// advancing several objects per sampled access): `pages` are the further pages it
    /// passed. Only trackers that see every touched page (access bits) care.
    pub fn on_access_span(&mut self, pages: impl Iterator<Item = usize> + Clone) {
        match self {
            SimTracker::AccessBits(a) => pages.for_each(|p| a.touched[p] = true),
            SimTracker::Scan(s) => pages.for_each(|p| s.mark(p)),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|t| t.on_access_span(pages.clone())),
            _ => {}
        }
    }

    /// Whether an access to a page must be reported with every page it covered.
    pub fn wants_spans(&self) -> bool {
        match self {
            SimTracker::AccessBits(_) | SimTracker::Scan(_) => true,
            SimTracker::Combined(ts) => ts.iter().any(SimTracker::wants_spans),
            _ => false,
        }
    }

    /// The accessed bits a policy reads (`TrackerSpec::AccessBitScan`), if installed.
    pub fn access_bits(&self) -> Option<&dyn tiermem_core::AccessBits> {
        match self {
            SimTracker::Scan(s) => Some(s),
            SimTracker::Combined(ts) => ts.iter().find_map(SimTracker::access_bits),
            _ => None,
        }
    }

    /// Tenant `t` (pages `start..start + len`) now draws its accesses from `probs` (a
    /// stationary workload) or from its ordered stream (`None`): from the start of the run
    /// and at every change of its workload.
    pub fn set_tenant_workload(
        &mut self,
        t: usize,
        start: usize,
        len: usize,
        probs: Option<&[f64]>,
    ) {
        match self {
            SimTracker::Scan(s) => s.set_tenant(t, start, len, probs),
            SimTracker::HintFaults(h) => h.redraw.push((start, len)),
            SimTracker::Combined(ts) => ts
                .iter_mut()
                .for_each(|x| x.set_tenant_workload(t, start, len, probs)),
            _ => {}
        }
    }

    /// The tasks a per-task scanner scans (hint faults): tenant `t` is `tasks[t]` =
    /// (first page, pages). Replaces the one task over the whole page space; a task whose
    /// span is unchanged keeps its cursor and next window.
    pub fn set_scan_tasks(&mut self, tasks: &[(usize, usize)]) {
        match self {
            SimTracker::HintFaults(h) => h.set_tasks(tasks),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|x| x.set_scan_tasks(tasks)),
            _ => {}
        }
    }

    /// Tenant `t`'s scan pace ([`scan_pace`] of its threads and CPU share).
    pub fn set_scan_pace(&mut self, t: usize, pace: f64) {
        match self {
            SimTracker::HintFaults(h) => {
                if let Some(task) = h.tasks.get_mut(t) {
                    task.pace = pace.clamp(0.0, 1.0);
                }
            }
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|x| x.set_scan_pace(t, pace)),
            _ => {}
        }
    }

    /// Seed the draws of the accessed bits (from the run's seed).
    pub fn reseed(&mut self, seed: u64) {
        match self {
            SimTracker::Scan(s) => s.state.get_mut().rng = SmallRng::seed_from_u64(seed),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|x| x.reseed(seed)),
            _ => {}
        }
    }

    /// Tenant `t` completed `ops` more operations.
    pub fn add_tenant_ops(&mut self, t: usize, ops: f64) {
        match self {
            SimTracker::Scan(s) => s.add_ops(t, ops),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|x| x.add_tenant_ops(t, ops)),
            _ => {}
        }
    }

    /// Epoch boundary: run scanners that are due and deliver faults whose time has come.
    pub fn on_epoch(&mut self, ctx: &mut EpochContext<'_>) {
        match self {
            SimTracker::None | SimTracker::Pebs(_) | SimTracker::Scan(_) => {}
            SimTracker::HintFaults(h) => h.on_epoch(ctx),
            SimTracker::AccessBits(a) => a.on_epoch(ctx),
            SimTracker::Combined(ts) => ts.iter_mut().for_each(|t| t.on_epoch(ctx)),
        }
    }

    pub fn drain(&mut self, out: &mut Vec<HeatEvent>) {
        let pending = match self {
            SimTracker::None | SimTracker::Scan(_) => return,
            SimTracker::Combined(ts) => {
                ts.iter_mut().for_each(|t| t.drain(out));
                return;
            }
            SimTracker::Pebs(p) => &mut p.pending,
            SimTracker::HintFaults(h) => &mut h.pending,
            SimTracker::AccessBits(a) => &mut a.pending,
        };
        if out.is_empty() {
            // The usual case (one tracker, events taken each quantum): hand the buffer over.
            std::mem::swap(out, pending);
        } else {
            out.append(pending);
        }
    }
}

fn exp_draw(rng: &mut SmallRng, rate_per_ns: f64) -> f64 {
    let u: f64 = rng.gen::<f64>();
    -(1.0 - u).ln() / rate_per_ns
}

/// No fault drawn for the page.
const NOT_DUE: u64 = u64::MAX;

impl HintFaults {
    fn on_epoch(&mut self, ctx: &mut EpochContext<'_>) {
        // Deliver exact-mode faults that happened by now.
        while let Some(Reverse((t, page))) = self.due.peek().copied() {
            if t > ctx.now_ns {
                break;
            }
            self.due.pop();
            if self.due_at[page as usize] != t {
                continue; // drawn again since
            }
            self.due_at[page as usize] = NOT_DUE;
            let m = self.marked_at[page as usize];
            if m != UNMARKED {
                self.marked_at[page as usize] = UNMARKED;
                self.pending.push(HeatEvent::HintFault {
                    page,
                    time_to_fault_ns: (t - m) as f64,
                });
            }
        }
        // New probabilities (a phase, a moved hot set): a marked page's fault was drawn
        // from its old rate — a page that was cold when unmapped would fault only when
        // that draw comes due, long after it turned hot. Accesses are a Poisson process, so
        // the time to its next access from now is drawn again from its new rate.
        for (start, len) in std::mem::take(&mut self.redraw) {
            for page in start..(start + len).min(self.marked_at.len()) {
                if self.marked_at[page] == UNMARKED {
                    continue;
                }
                self.due_at[page] = NOT_DUE;
                self.draw_fault(page, ctx.now_ns, ctx);
            }
        }
        // Scan, each task on its own: every interval (its footprint's, stretched by its
        // pace) unmap its next `scan_pages` eligible pages, round robin over its pages.
        for k in 0..self.tasks.len() {
            let (start, len) = (self.tasks[k].start, self.tasks[k].len);
            if len == 0 {
                continue;
            }
            let interval = task_scan_interval_ns(
                len as f64,
                self.scan_pages as f64,
                self.scan_period_ns as f64,
                self.scan_period_min_ns.map(|p| p as f64),
            );
            while ctx.now_ns >= self.tasks[k].next_scan_ns {
                let pace = self.tasks[k].pace;
                let at = self.tasks[k].next_scan_ns;
                if pace <= 0.0 {
                    // Not running: no ticks, no scan; look again next epoch.
                    self.tasks[k].next_scan_ns = ctx.now_ns + 1;
                    break;
                }
                self.tasks[k].next_scan_ns = at + (interval / pace).max(1.0) as u64;
                let mut marked = 0;
                let mut visited = 0;
                while marked < self.scan_pages && visited < len {
                    let page = start + self.tasks[k].cursor;
                    self.tasks[k].cursor = (self.tasks[k].cursor + 1) % len;
                    visited += 1;
                    if !self.tiers.contains(&ctx.placement[page])
                        || self.marked_at[page] != UNMARKED
                    {
                        continue;
                    }
                    self.marked_at[page] = at;
                    marked += 1;
                    self.draw_fault(page, at, ctx);
                }
            }
        }
    }

    fn set_tasks(&mut self, tasks: &[(usize, usize)]) {
        let n = self.marked_at.len();
        let old = std::mem::take(&mut self.tasks);
        self.tasks = tasks
            .iter()
            .map(|&(start, len)| {
                let len = len.min(n.saturating_sub(start));
                match old.iter().find(|o| o.start == start && o.len == len) {
                    Some(o) => o.clone(),
                    None => ScanTask {
                        start,
                        len,
                        cursor: 0,
                        next_scan_ns: old.first().map_or(0, |o| o.next_scan_ns),
                        pace: 1.0,
                    },
                }
            })
            .collect();
    }

    /// With exact probabilities, draw when marked `page` is next accessed after `from`.
    fn draw_fault(&mut self, page: usize, from: u64, ctx: &mut EpochContext<'_>) {
        let Some(probs) = ctx.probabilities else {
            return;
        };
        let rate = probs[page] * ctx.ops_per_s / 1e9;
        if rate > 0.0 {
            let t = from as f64 + exp_draw(ctx.rng, rate);
            if t < u64::MAX as f64 / 2.0 {
                self.due_at[page] = t as u64;
                self.due.push(Reverse((t as u64, page as PageIdx)));
            }
        }
    }
}

impl AccessBits {
    fn on_epoch(&mut self, ctx: &mut EpochContext<'_>) {
        while ctx.now_ns >= self.next_scan_ns {
            let span_ns = (self.next_scan_ns - self.last_scan_ns) as f64;
            for page in 0..self.touched.len() {
                let hit = match ctx.probabilities {
                    Some(p) => {
                        let lambda = p[page] * ctx.ops_per_s / 1e9 * span_ns;
                        lambda > 0.0 && ctx.rng.gen::<f64>() < 1.0 - (-lambda).exp()
                    }
                    None => std::mem::replace(&mut self.touched[page], false),
                };
                if hit {
                    self.pending.push(HeatEvent::Accessed {
                        page: page as PageIdx,
                    });
                }
            }
            self.last_scan_ns = self.next_scan_ns;
            self.next_scan_ns += self.scan_period_ns;
        }
    }
}

/// Accessed bits as an OS scanner reads them (ICS'18 §4): a page's bit is set by any
/// access since the bit was last read, and reading clears it. The policy chooses which
/// ranges to read and when ([`tiermem_core::AccessBits::read_and_clear`] through the
/// snapshot).
///
/// Exact for stationary workloads, without touching pages nobody reads: accesses to page
/// `i` of a tenant form a Poisson process in the tenant's operation count with rate `p_i`
/// (its access probability per operation), so the operation count of its next access is
/// drawn once, `Exp(1) / p_i` after its bit was last cleared (or after its probability last
/// changed), and the bit reads set once the tenant's operations reach it. An unset bit's
/// draw stays valid across reads (memorylessness), so a read costs a comparison and a set
/// bit one draw. When a tenant's probabilities change (a phase, a moved hot set) every
/// pending access is first materialised into a sticky bit and then redrawn with the new
/// probabilities. Ordered workloads (streams, traces) set bits from their sampled accesses,
/// every page a sampled access passed included.
///
/// The bits are physical: unlike the other trackers they are not thinned by `scale`. With
/// `scale` < 1 (fewer pages, each likelier) and a scanner whose pace in pages per second is
/// unchanged, every page is read `1/scale` times as often and accessed `1/scale` times as
/// often, so a bit is as likely to be set as at full scale: a scaled run is a time-compressed
/// copy of the full one when the workload's own time constants are compressed too (the
/// `regions` workload multiplies its operation counts by `scale`); a stream, whose speed in
/// pages per second does not scale, sweeps `scale` times fewer pages between two reads
/// (docs/simulator.md, "Granularity").
pub struct ScanBits {
    state: RefCell<ScanState>,
}

struct ScanState {
    /// Per page: its tenant's operation count at which it is next accessed (stationary
    /// tenants; `INFINITY` for ordered ones and pages of probability 0).
    next_at: Vec<f64>,
    /// Per page: a bit known to be set (ordered accesses, materialised stationary ones).
    set: Vec<bool>,
    /// Per page: its access probability per operation of its tenant (stationary tenants).
    prob: Vec<f64>,
    /// Per tenant: (first page, pages, operations done so far).
    tenants: Vec<(usize, usize, f64)>,
    rng: SmallRng,
}

impl std::fmt::Debug for ScanBits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ScanBits({} pages)", self.state.borrow().set.len())
    }
}

impl ScanBits {
    pub fn new(pages: usize, seed: u64) -> ScanBits {
        ScanBits {
            state: RefCell::new(ScanState {
                next_at: vec![f64::INFINITY; pages],
                set: vec![false; pages],
                prob: vec![0.0; pages],
                tenants: Vec::new(),
                rng: SmallRng::seed_from_u64(seed),
            }),
        }
    }

    fn mark(&mut self, page: usize) {
        if let Some(b) = self.state.get_mut().set.get_mut(page) {
            *b = true;
        }
    }

    fn add_ops(&mut self, t: usize, ops: f64) {
        if let Some(x) = self.state.get_mut().tenants.get_mut(t) {
            x.2 += ops;
        }
    }

    fn set_tenant(&mut self, t: usize, start: usize, len: usize, probs: Option<&[f64]>) {
        let s = self.state.get_mut();
        if s.tenants.len() <= t {
            s.tenants.resize(t + 1, (0, 0, 0.0));
        }
        s.tenants[t].0 = start;
        s.tenants[t].1 = len;
        let now = s.tenants[t].2;
        let end = (start + len).min(s.set.len());
        for p in start..end {
            // Accesses drawn under the old probabilities that have happened: sticky.
            if s.next_at[p] <= now {
                s.set[p] = true;
            }
            let pr = probs.and_then(|v| v.get(p - start)).copied().unwrap_or(0.0);
            s.prob[p] = pr;
            s.next_at[p] = next_access(&mut s.rng, now, pr);
        }
    }
}

/// The operation count of the next access of a page of probability `p` per operation,
/// after `now` operations.
fn next_access(rng: &mut SmallRng, now: f64, p: f64) -> f64 {
    if p > 0.0 {
        let u: f64 = rng.gen::<f64>();
        now - (1.0 - u).ln() / p
    } else {
        f64::INFINITY
    }
}

impl tiermem_core::AccessBits for ScanBits {
    fn read_and_clear_if(
        &self,
        range: PageRange,
        read: &mut dyn FnMut(PageIdx) -> bool,
        out: &mut Vec<bool>,
    ) {
        out.clear();
        let mut guard = self.state.borrow_mut();
        let s = &mut *guard;
        let n = s.set.len();
        let (start, end) = ((range.start as usize).min(n), (range.end() as usize).min(n));
        // Tenants are sorted by start; find the one holding each page as we go.
        let mut ti = s
            .tenants
            .partition_point(|t| t.0 <= start)
            .saturating_sub(1);
        for p in start..end {
            while ti + 1 < s.tenants.len() && s.tenants[ti + 1].0 <= p {
                ti += 1;
            }
            if !read(p as PageIdx) {
                out.push(false);
                continue;
            }
            let now = s.tenants.get(ti).map_or(0.0, |t| t.2);
            let drawn = s.next_at[p] <= now;
            let bit = s.set[p] || drawn;
            if bit {
                s.set[p] = false;
                if drawn {
                    s.next_at[p] = next_access(&mut s.rng, now, s.prob[p]);
                }
            }
            out.push(bit);
        }
    }
}

/// The core `Tracker` trait, for uses outside the simulator's own loop.
impl Tracker for SimTracker {
    fn on_access(&mut self, page: PageIdx, write: bool, now_ns: u64) {
        SimTracker::on_access(self, page, write, now_ns)
    }
    fn end_quantum(&mut self, _view: &TrackerView<'_>, out: &mut Vec<HeatEvent>) {
        self.drain(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Samples in `events`, counting each event's `count`.
    fn samples(events: &[HeatEvent]) -> usize {
        events
            .iter()
            .map(|e| match e {
                HeatEvent::Sample { count, .. } => *count as usize,
                _ => 0,
            })
            .sum()
    }

    #[test]
    fn sampled_draws_counted_at_once_are_those_of_draw_by_draw() {
        // HeMem's period against 1000 accesses a draw, a period just above a draw, and one
        // that is not a whole number (counted draw by draw: `None`).
        for (period, per_draw, exact) in [
            (19997, 1000.0, true),
            (1001, 1000.0, true),
            (5000, 333.5, false),
        ] {
            let spec = TrackerSpec::Pebs {
                sample_period: period,
            };
            let mut by_draw = SimTracker::new(&spec, 64, per_draw, 1.0);
            let mut at_once = SimTracker::new(&spec, 64, per_draw, 1.0);
            let mut page = 0u32;
            let mut next = || {
                page = (page * 13 + 5) % 64;
                Access {
                    page,
                    write: page & 1 == 0,
                }
            };
            for n in [0u64, 1, 7, 19, 20, 21, 400, 3, 9999] {
                // The backend's draw-by-draw loop over `n` draws of full weight.
                let mut sampled = Vec::new();
                let mut drawn = 0;
                while drawn < n {
                    match by_draw.draws_to_next_sample(1.0) {
                        Some(d) if d <= n - drawn => {
                            by_draw.skip_draws(d - 1, 1.0);
                            drawn += d;
                            let a = next();
                            by_draw.on_exact_access(a.page, a.write);
                            sampled.push(a);
                        }
                        _ => {
                            by_draw.skip_draws(n - drawn, 1.0);
                            drawn = n;
                        }
                    }
                }
                match at_once.take_sampled_draws(n) {
                    Some(k) => {
                        assert!(exact, "period {period}");
                        assert_eq!(k as usize, sampled.len(), "period {period}, {n} draws");
                        at_once.on_sampled(0, &sampled);
                    }
                    None => {
                        assert!(!exact, "period {period}");
                        break;
                    }
                }
                let (mut a, mut b) = (Vec::new(), Vec::new());
                by_draw.drain(&mut a);
                at_once.drain(&mut b);
                assert_eq!(a, b, "period {period}, {n} draws");
            }
        }
    }

    #[test]
    fn a_batch_of_exact_accesses_samples_what_one_at_a_time_does() {
        // Periods below, at and above a draw's weight (the MEMTIS fast path is "at").
        for (period, per_draw) in [(5000, 1000.0), (199, 199.0), (199, 1000.0), (300, 700.0)] {
            let spec = TrackerSpec::Pebs {
                sample_period: period,
            };
            let mut one = SimTracker::new(&spec, 64, per_draw, 1.0);
            let mut batched = SimTracker::new(&spec, 64, per_draw, 1.0);
            let accesses: Vec<Access> = (0..500u32)
                .map(|i| Access {
                    page: (i * 7) % 40,
                    write: i % 3 == 0,
                })
                .collect();
            for a in &accesses {
                one.on_exact_access(a.page + 16, a.write);
            }
            batched.on_exact_accesses(16, &accesses[..123]);
            batched.on_exact_accesses(16, &accesses[123..]);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            one.drain(&mut a);
            batched.drain(&mut b);
            assert!(!a.is_empty());
            assert_eq!(a, b, "period {period}, {per_draw} accesses a draw");
        }
    }

    #[test]
    fn pebs_counts_exactly_through_thinning() {
        let mut t = SimTracker::new(
            &TrackerSpec::Pebs {
                sample_period: 5000,
            },
            4,
            1000.0,
            1.0,
        );
        for i in 0..100 {
            t.on_exact_access(i % 4, false);
        }
        let mut out = Vec::new();
        t.drain(&mut out);
        assert_eq!(out.len(), 100 * 1000 / 5000);
    }

    /// Which draws of a stream sample, per draw (`on_access` on each) and by skipping to
    /// the next sample (`draws_to_next_sample`, `skip_draws`): the same draws, for periods
    /// shorter and longer than a draw, fractional ones included.
    #[test]
    fn skipping_to_the_next_sample_samples_the_same_draws() {
        let pebs = |period: u64, per_access: f64, scale: f64| {
            let mut t = SimTracker::new(
                &TrackerSpec::Pebs {
                    sample_period: period,
                },
                1,
                per_access,
                scale,
            );
            t.set_lines_per_op(1.0);
            t
        };
        for (period, per_access, scale) in [
            (19997, 1000.0, 1.0),
            (5000, 1000.0, 1.0),
            (199, 1000.0, 1.0),
            (19997, 333.3, 0.37),
            (7, 1.0, 1.0),
        ] {
            let draws = 200_000u64;
            let mut each = pebs(period, per_access, scale);
            let mut out = Vec::new();
            let mut by_draw = Vec::new();
            for i in 0..draws {
                each.on_exact_access(0, false);
                each.drain(&mut out);
                by_draw.extend(std::iter::repeat_n(i, samples(&out)));
                out.clear();
            }
            let mut skip = pebs(period, per_access, scale);
            let mut by_skip = Vec::new();
            let mut i = 0;
            while let Some(d) = skip.draws_to_next_sample(1.0).filter(|&d| i + d <= draws) {
                skip.skip_draws(d - 1, 1.0);
                i += d;
                skip.on_exact_access(0, false);
                skip.drain(&mut out);
                by_skip.extend(std::iter::repeat_n(i - 1, samples(&out)));
                out.clear();
            }
            assert!(!by_draw.is_empty());
            assert_eq!(by_skip, by_draw, "period {period}, per access {per_access}");
        }
        // Draws that count for half (the other half reach compressed pages): twice as many
        // draws to the next sample.
        let t = pebs(20_000, 1000.0, 1.0);
        assert_eq!(t.draws_to_next_sample(1.0), Some(20));
        assert_eq!(t.draws_to_next_sample(0.5), Some(40));
        assert_eq!(t.draws_to_next_sample(0.0), Some(u64::MAX));
        // Trackers that draw from the probabilities need no draw.
        let bits = SimTracker::new(&TrackerSpec::AccessBit { scan_period_ns: 1 }, 1, 1.0, 1.0);
        assert_eq!(bits.draws_to_next_sample(1.0), None);
    }

    #[test]
    fn pebs_samples_every_cache_line_load() {
        // 4 KiB objects: each operation is 64 line loads, so 64× the samples per operation.
        let mut t = SimTracker::new(
            &TrackerSpec::Pebs {
                sample_period: 5000,
            },
            4,
            10.0,
            1.0,
        );
        t.set_lines_per_op(64.0);
        for i in 0..1000 {
            t.on_exact_access(i % 4, false);
        }
        let mut out = Vec::new();
        t.drain(&mut out);
        assert_eq!(samples(&out), 1000 * 10 * 64 / 5000);
        // A period shorter than an access's loads (MEMTIS's 199 under 1000): every access
        // is one event of 5 or 6 samples.
        let mut t = SimTracker::new(&TrackerSpec::Pebs { sample_period: 199 }, 4, 1000.0, 1.0);
        for i in 0..1000 {
            t.on_exact_access(i % 4, false);
        }
        out.clear();
        t.drain(&mut out);
        assert_eq!(out.len(), 1000);
        assert_eq!(samples(&out), 1000 * 1000 / 199);
    }

    #[test]
    fn hint_fault_scans_each_task_at_its_own_linux_pace() {
        // Two tasks, 128-page windows, Linux's task_scan_min: task A (1 024 pages, 8
        // windows) every max(100 ms, 1000 / 8 ms) = 125 ms, task B (4 096 pages, 32
        // windows) every 100 ms; B at half pace (throttled) every 200 ms. Own cursors: each
        // marks only its own pages. No accesses, so marked pages stay marked.
        let spec = TrackerSpec::HintFault {
            scan_period_ns: 100_000_000,
            scan_pages: 128,
            tiers: vec![TierId(1)],
            scan_period_min_ns: Some(1_000_000_000),
        };
        let count = |pace_b: f64| {
            let mut t = SimTracker::new(&spec, 5120, 1.0, 1.0);
            t.set_scan_tasks(&[(0, 1024), (1024, 4096)]);
            t.set_scan_pace(1, pace_b);
            let placement = vec![TierId(1); 5120];
            let mut rng = SmallRng::seed_from_u64(1);
            for k in 0..=50 {
                let mut ctx = EpochContext {
                    now_ns: k * 10_000_000,
                    placement: &placement,
                    probabilities: None,
                    ops_per_s: 0.0,
                    rng: &mut rng,
                };
                t.on_epoch(&mut ctx);
            }
            let SimTracker::HintFaults(h) = &t else {
                panic!()
            };
            let marked = |r: std::ops::Range<usize>| {
                h.marked_at[r].iter().filter(|&&m| m != UNMARKED).count()
            };
            (marked(0..1024), marked(1024..5120))
        };
        // 0..=500 ms: A at 0, 125, 250, 375, 500; B at 0, 100, ..., 500.
        assert_eq!(count(1.0), (5 * 128, 6 * 128));
        // B throttled to half: 0, 200, 400.
        assert_eq!(count(0.5), (5 * 128, 3 * 128));
        // The same model in bytes: 2.5 GB and more at 2.56 GB/s, 1 GB at 1 GB/s.
        let gib = (1u64 << 30) as f64;
        assert!((numa_scan_bytes_per_s(40.0 * gib, 8.0, 1.0) - 2560.0 * 1048576.0).abs() < 1.0);
        assert!((numa_scan_bytes_per_s(gib, 8.0, 1.0) - gib).abs() < 1.0);
        assert!(
            (numa_scan_bytes_per_s(40.0 * gib, 8.0, 0.05) - 0.4 * 2560.0 * 1048576.0).abs() < 1.0
        );
    }

    #[test]
    fn hint_fault_time_matches_rate() {
        // One page with probability 1 at 1e6 ops/s: mean time-to-fault 1 µs.
        let spec = TrackerSpec::HintFault {
            scan_period_ns: 1_000_000,
            scan_pages: 1,
            tiers: vec![TierId(0)],
            scan_period_min_ns: None,
        };
        let mut t = SimTracker::new(&spec, 1, 1.0, 1.0);
        let placement = [TierId(0)];
        let probs = [1.0];
        let mut rng = SmallRng::seed_from_u64(7);
        let mut out = Vec::new();
        let mut now = 0;
        for _ in 0..4000 {
            let mut ctx = EpochContext {
                now_ns: now,
                placement: &placement,
                probabilities: Some(&probs),
                ops_per_s: 1e6,
                rng: &mut rng,
            };
            t.on_epoch(&mut ctx);
            now += 500_000;
        }
        t.drain(&mut out);
        let ttf: Vec<f64> = out
            .iter()
            .map(|e| match e {
                HeatEvent::HintFault {
                    time_to_fault_ns, ..
                } => *time_to_fault_ns,
                _ => panic!(),
            })
            .collect();
        assert!(ttf.len() > 1500);
        let mean = ttf.iter().sum::<f64>() / ttf.len() as f64;
        assert!((mean - 1000.0).abs() < 100.0, "mean ttf {mean}");
    }

    #[test]
    fn a_page_that_turns_hot_while_unmapped_faults_at_its_new_rate() {
        // Unmapped while nearly cold (mean time to fault ~11.6 days at 1e6 ops/s), then its
        // tenant's probabilities change and it is hot (mean 1 µs): it faults in the next
        // epoch, reporting the whole time since it was unmapped (as the kernel does).
        let spec = TrackerSpec::HintFault {
            scan_period_ns: 1_000_000_000,
            scan_pages: 1,
            tiers: vec![TierId(0)],
            scan_period_min_ns: None,
        };
        let mut t = SimTracker::new(&spec, 1, 1.0, 1.0);
        let placement = [TierId(0)];
        let mut rng = SmallRng::seed_from_u64(7);
        let mut out = Vec::new();
        let epoch = |t: &mut SimTracker, now: u64, probs: &[f64], rng: &mut SmallRng| {
            let mut ctx = EpochContext {
                now_ns: now,
                placement: &placement,
                probabilities: Some(probs),
                ops_per_s: 1e6,
                rng,
            };
            t.on_epoch(&mut ctx);
        };
        epoch(&mut t, 0, &[1e-12], &mut rng);
        epoch(&mut t, 10_000_000, &[1e-12], &mut rng);
        t.drain(&mut out);
        assert!(out.is_empty(), "{out:?}");
        t.set_tenant_workload(0, 0, 1, Some(&[1.0]));
        epoch(&mut t, 20_000_000, &[1.0], &mut rng);
        epoch(&mut t, 30_000_000, &[1.0], &mut rng);
        t.drain(&mut out);
        match out.as_slice() {
            [HeatEvent::HintFault {
                page: 0,
                time_to_fault_ns,
            }] => assert!(
                (20e6..20.1e6).contains(time_to_fault_ns),
                "{time_to_fault_ns}"
            ),
            other => panic!("{other:?}"),
        }
    }
}
