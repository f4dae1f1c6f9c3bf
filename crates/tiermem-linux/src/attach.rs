//! `tiermem attach PID`: tier a process that is already running across NUMA nodes, from
//! outside it: no preload, no userfaultfd, nothing injected. The pages of its private
//! anonymous mappings move between the DRAM node and the config's node tiers with
//! move_pages(2) on its PID, decided by the same `Engine<BudgetGuard<policy>>` as
//! `tiermem run` over [`AttachBackend`] (the core `Backend` seam).
//!
//! What an outside process can see of another's memory on a stock kernel, and what is used:
//!
//! ```text
//!   /proc/PID/maps        its mappings: the private anonymous read-write ones are tiered
//!   /proc/PID/pagemap     per page: present, mapped by it alone, soft-dirty (written since
//!                         the last clear; kernels with CONFIG_MEM_SOFT_DIRTY)
//!   /proc/PID/clear_refs  "4" clears the soft-dirty bits: a scan reads pagemap, then clears
//!   move_pages(2)         per page: the node it is on (query), and moves (MPOL_MF_MOVE:
//!                         pages mapped by that process alone; shared ones are left alone)
//! ```
//!
//! Hotness is writes: a page written since the last scan is one hint fault (or one PEBS
//! sample) for the policy. An outside process cannot see reads on these kernels (idle page
//! tracking, CONFIG_IDLE_PAGE_TRACKING, is off in Debian's and this machine's; DAMON's
//! sysfs is a machine-wide facility an attach must not take over), so a page only read
//! looks cold, and without soft-dirty every page looks equally cold: the budget still
//! holds, placement is then by address. docs/running-on-cxl.md says so to the user.
//!
//! Moving pages never changes their contents or mappings, so attach cannot lose data;
//! detaching (SIGINT, SIGTERM, `--duration`, the process exiting) leaves every page where
//! it is. Clearing soft-dirty write-protects the process's pages: its next write to each
//! takes a minor fault (the cost of tracking), and a program that uses soft-dirty itself
//! (CRIU's incremental dumps) would see its bits cleared.

use crate::config::{Budget, RuntimeConfig};
use crate::numa::{self, MPOL_MF_MOVE};
use crate::probe::Probe;
use crate::runtime::NO_TIER;
use crate::sys::PAGE;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tiermem_core::{
    Applied, Backend, Capabilities, Controls, Engine, Error, ErrorKind, HeatEvent, PageRange, Plan,
    Policy, Provision, Result, Snapshot, TelemetryKind, TenantId, TenantSpec, TierId, TierSpec,
    TierTelemetry, TrackerKind, TrackerSpec,
};

/// How attach stands in for hint faults and PEBS samples.
const WRITE_EMULATION: &str =
    "one per page written since the last scan (soft-dirty bits in /proc/PID/pagemap)";
/// How attach gives each tier a loaded latency.
const LATENCY_SOURCE: &str = "the latency probe (telemetry = \"probe\"), else each node's unloaded latency (config or HMAT), at the rate pages are written";
/// pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst).
const PM_PRESENT: u64 = 1 << 63;
const PM_SOFT_DIRTY: u64 = 1 << 55;
/// Pages read from pagemap / queried with move_pages per call.
const SCAN_CHUNK: usize = 4096;
/// Every this many scans, the node of every present page is asked again (the kernel moves
/// pages too: NUMA balancing, reclaim); in between only pages newly present are.
const FULL_REQUERY_SCANS: u64 = 8;
/// Shortest scan period: a scan reads the whole pagemap of the managed mappings.
const MIN_SCAN_NS: u64 = 100_000_000;
/// CAP_SYS_NICE (linux/capability.h): move_pages on another process's pages.
const CAP_SYS_NICE: u32 = 23;

/// What attach did, printed when it detaches (`--json`: this document).
#[derive(Clone, Debug, Default, Serialize)]
pub struct AttachReport {
    pub pid: i32,
    pub policy: String,
    pub seconds: f64,
    pub scans: u64,
    /// What hotness came from ("soft-dirty writes", or "none").
    pub hotness: String,
    pub budget_bytes: u64,
    /// Present pages of the managed mappings at the last scan.
    pub managed_pages: u64,
    /// Pages per tier at detach: (tier name, node, pages).
    pub tiers: Vec<(String, u32, u64)>,
    pub pages_moved: u64,
    /// Pages move_pages would not move (shared with another process, pinned, busy).
    pub pages_refused: u64,
    pub pages_written_seen: u64,
    /// Why it detached: "signal", "duration", "process exited".
    pub detached_because: String,
    /// The policy's planned moves, tried vs applied (the engine's cumulative counters).
    #[serde(default)]
    pub plan: tiermem_core::Applied,
}

/// A managed mapping: its first address and one page id per page.
struct Span {
    ids: Vec<u32>,
}

/// The attach backend: a process's private anonymous pages as the engine's page space.
pub struct AttachBackend {
    pid: i32,
    specs: Vec<TierSpec>,
    /// The node of each tier (0: the DRAM node).
    tier_node: Vec<u32>,
    budget: Budget,
    /// Managed mappings by start address.
    spans: BTreeMap<usize, Span>,
    /// Per page id: its address (0: retired, its mapping is gone).
    addr: Vec<usize>,
    free_ids: Vec<u32>,
    /// Per page id: the scan count when attach last moved it. Migration keeps a page's
    /// soft-dirty bit set in its new mapping, so a page moved since the last scan reads
    /// as written: that is our move, not the program's write, and is not heat.
    moved_at: Vec<u64>,
    placement: Vec<TierId>,
    /// Pages per tier, kept with `placement`.
    counts: Vec<u64>,
    events: Vec<HeatEvent>,
    telemetry: Vec<TierTelemetry>,
    tenants: Vec<TenantSpec>,
    controls: Controls,
    pagemap: File,
    soft_dirty: bool,
    pebs: bool,
    scan_period_ns: u64,
    next_scan_ns: u64,
    start_ns: u64,
    now_ns: u64,
    /// Pages written per tier in the last scan period.
    written: Vec<u64>,
    probe: Option<Arc<Probe>>,
    stop: &'static AtomicBool,
    /// The quantum the last `advance` was asked to run (the engine's: the policy's, not
    /// the config's `quantum_ms`), which `observe` reports (the `Backend` contract).
    quantum_ns: u64,
    /// The process is gone (move_pages answered ESRCH, or /proc/PID vanished).
    pub exited: bool,
    pub scans: u64,
    pub pages_moved: u64,
    pub pages_refused: u64,
    pub pages_written_seen: u64,
    // Scratch buffers of one move_pages call.
    q_ids: Vec<u32>,
    q_addrs: Vec<usize>,
    q_nodes: Vec<i32>,
    q_status: Vec<i32>,
    pm_buf: Vec<u8>,
}

/// Checks before anything is read or moved: the process exists, is not this one, we may
/// read its page table, and we may move its pages. One line each, exit 2.
pub fn preflight(pid: i32) -> Result<()> {
    if pid <= 0 {
        return Err(Error::usage(format!(
            "attach: PID {pid}: expected a process ID (> 0)"
        )));
    }
    if pid as u32 == std::process::id() {
        return Err(Error::usage(
            "attach: that PID is tiermem itself".to_string(),
        ));
    }
    if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(Error::usage(format!("attach: no process {pid}")));
    }
    if let Err(e) = File::open(format!("/proc/{pid}/pagemap")) {
        return Err(Error::usage(match e.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => format!(
                "attach: process {pid} is not ours: reading its page table (/proc/{pid}/pagemap) was refused; attach to your own processes, or as root"
            ),
            _ => format!("attach: process {pid}: /proc/{pid}/pagemap: {e}"),
        }));
    }
    if std::fs::read_to_string(format!("/proc/{pid}/maps")).map_or(true, |t| t.is_empty()) {
        return Err(Error::usage(format!(
            "attach: process {pid} has no user memory (a kernel thread?)"
        )));
    }
    if !has_capability(CAP_SYS_NICE) {
        return Err(Error::usage(
            "attach: moving another process's pages (move_pages(2)) needs CAP_SYS_NICE; run as root or grant it: sudo setcap cap_sys_nice+ep \"$(command -v tiermem)\"".to_string(),
        ));
    }
    Ok(())
}

/// The config must name only node tiers below DRAM (compressed tiers need the preload of
/// `tiermem run`: their pages leave the address space), at least one.
pub fn check_config(cfg: &RuntimeConfig) -> Result<()> {
    let nodes = cfg.tier_nodes();
    for (i, t) in cfg.tiers.iter().enumerate().skip(1) {
        if nodes[i].is_none() {
            return Err(Error::config(format!(
                "runtime.tiers[{i}] ({}): attach moves pages between NUMA nodes only; a {} tier needs `tiermem run` (its pages leave the address space); remove it or give kind = \"node\"",
                t.name, t.kind
            )));
        }
    }
    if cfg.tiers.len() < 2 {
        return Err(Error::config(
            "runtime.tiers: attach needs a node tier below DRAM ([[runtime.tiers]] kind = \"node\", node = N); see docs/running-on-cxl.md".to_string(),
        ));
    }
    cfg.check_nodes("runtime")
}

/// The tiers attach uses without a config: DRAM (this CPU's node) and every other node
/// with memory, nearest first (sysfs distance), each a node tier named `nodeN`.
pub fn node_tiers_of_this_machine() -> Result<Vec<tiermem_core::tier::TierConfig>> {
    use tiermem_core::tier::TierConfig;
    let dram = numa::dram_node();
    let mut others: Vec<u32> = numa::memory_nodes()
        .into_iter()
        .filter(|&n| n != dram && numa::node_memory_bytes(n) != Some(0))
        .collect();
    if others.is_empty() {
        return Err(Error::usage(format!(
            "attach: this machine has one memory node ({dram}): nothing to tier across (see `numactl -H`); compressed tiers need `tiermem run`"
        )));
    }
    let dist = numa::distances(dram);
    others.sort_by_key(|&n| (dist.get(n as usize).copied().unwrap_or(u32::MAX), n));
    let mut tiers = vec![TierConfig::dram("dram")];
    for n in others {
        let mut t = TierConfig::dram(&format!("node{n}"));
        t.kind = "node".into();
        t.node = Some(n);
        tiers.push(t);
    }
    Ok(tiers)
}

/// Whether this process has capability `cap` in its effective set (/proc/self/status).
fn has_capability(cap: u32) -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("CapEff:"))?;
            u64::from_str_radix(line.split_whitespace().nth(1)?, 16).ok()
        })
        .is_some_and(|eff| eff & (1 << cap) != 0)
}

/// The private anonymous read-write mappings of `pid` (heap and stack included): (start,
/// end). File mappings, shared mappings and the kernel's (vdso, vvar) are not tiered.
pub fn read_maps(pid: i32) -> std::io::Result<Vec<(usize, usize)>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    Ok(text.lines().filter_map(parse_maps_line).collect())
}

fn parse_maps_line(line: &str) -> Option<(usize, usize)> {
    let mut f = line.split_whitespace();
    let range = f.next()?;
    let perms = f.next()?;
    let _offset = f.next()?;
    let _dev = f.next()?;
    let inode = f.next()?;
    let path = f.next().unwrap_or("");
    let anon = inode == "0" && (path.is_empty() || path == "[heap]" || path == "[stack]");
    if !anon || !perms.starts_with("rw") || perms.as_bytes().get(3) != Some(&b'p') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let (a, b) = (
        usize::from_str_radix(a, 16).ok()?,
        usize::from_str_radix(b, 16).ok()?,
    );
    (b > a).then_some((a, b))
}

/// Whether this kernel keeps soft-dirty bits: a page just written by us reads soft-dirty
/// in our own pagemap (a new anonymous page starts soft-dirty where the feature exists).
fn soft_dirty_supported() -> bool {
    let Ok(a) = crate::sys::map_anon(PAGE) else {
        return false;
    };
    // SAFETY: `a` is the page just mapped for this check, ours alone.
    unsafe { (a as *mut u8).write_volatile(1) };
    let mut e = [0u8; 8];
    let ok = File::open("/proc/self/pagemap")
        .and_then(|f| f.read_exact_at(&mut e, (a / PAGE * 8) as u64))
        .is_ok();
    // SAFETY: unmaps the check page mapped above; nothing else refers to it.
    unsafe { crate::sys::munmap(a, PAGE) };
    ok && u64::from_ne_bytes(e) & PM_SOFT_DIRTY != 0
}

/// What the attach backend gives policies.
pub fn capabilities() -> Capabilities {
    Capabilities {
        backend: "attach (another process, move_pages)".into(),
        trackers: vec![
            (
                TrackerKind::HintFault,
                Provision::Emulated(WRITE_EMULATION.into()),
            ),
            (
                TrackerKind::Pebs,
                Provision::Emulated(WRITE_EMULATION.into()),
            ),
        ],
        telemetry: vec![(
            TelemetryKind::LoadedLatency,
            Provision::Emulated(LATENCY_SOURCE.into()),
        )],
        max_granularity_bytes: (numa::MOVE_BATCH * PAGE) as u64,
        max_tenants: 1,
        tier_limits: false,
        cpu_shares: false,
    }
}

impl AttachBackend {
    pub fn new(pid: i32, cfg: &RuntimeConfig, stop: &'static AtomicBool) -> Result<AttachBackend> {
        let pagemap = File::open(format!("/proc/{pid}/pagemap"))
            .map_err(|e| Error::io(format!("/proc/{pid}/pagemap"), e))?;
        let dram = numa::dram_node();
        let nodes = cfg.tier_nodes();
        let tier_node: Vec<u32> = nodes.iter().map(|n| n.unwrap_or(dram)).collect();
        let specs = crate::backend::tier_specs(cfg)?;
        let probe = (cfg.telemetry == "probe").then(|| {
            let p = Arc::new(Probe::new(&nodes, dram, cfg.quantum_ns()));
            let p2 = p.clone();
            std::thread::Builder::new()
                .name("tiermem-probe".into())
                .spawn(move || p2.run(stop))
                .map(|_| p)
        });
        let probe = match probe {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => return Err(Error::io("starting the latency probe", e)),
            None => None,
        };
        let now = crate::sys::now_ns();
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| format!("pid {pid}"));
        Ok(AttachBackend {
            pid,
            counts: vec![0; specs.len()],
            written: vec![0; specs.len()],
            specs,
            tier_node,
            budget: cfg.budget(),
            spans: BTreeMap::new(),
            addr: Vec::new(),
            free_ids: Vec::new(),
            moved_at: Vec::new(),
            placement: Vec::new(),
            events: Vec::new(),
            telemetry: Vec::new(),
            tenants: vec![TenantSpec {
                id: TenantId::FIRST,
                name: comm,
                pages: PageRange { start: 0, len: 0 },
            }],
            controls: Controls::default(),
            pagemap,
            soft_dirty: soft_dirty_supported(),
            pebs: false,
            scan_period_ns: cfg.scan_period_ns().max(MIN_SCAN_NS),
            next_scan_ns: 0,
            start_ns: now,
            now_ns: now,
            probe,
            stop,
            quantum_ns: cfg.quantum_ns(),
            exited: false,
            scans: 0,
            pages_moved: 0,
            pages_refused: 0,
            pages_written_seen: 0,
            q_ids: Vec::new(),
            q_addrs: Vec::new(),
            q_nodes: Vec::new(),
            q_status: Vec::new(),
            pm_buf: Vec::new(),
        })
    }

    pub fn hotness(&self) -> &'static str {
        if self.soft_dirty {
            "soft-dirty writes"
        } else {
            "none (this kernel keeps no soft-dirty bits: placement by budget and address)"
        }
    }

    fn set_tier(&mut self, id: u32, t: TierId) {
        let old = std::mem::replace(&mut self.placement[id as usize], t);
        if old != NO_TIER {
            self.counts[old.index()] -= 1;
        }
        if t != NO_TIER {
            self.counts[t.index()] += 1;
        }
    }

    fn tier_of_node(&self, node: i32) -> TierId {
        self.tier_node
            .iter()
            .position(|&n| n as i32 == node)
            .map_or(NO_TIER, |k| TierId(k as u8))
    }

    fn new_id(&mut self, a: usize) -> u32 {
        if let Some(id) = self.free_ids.pop() {
            self.addr[id as usize] = a;
            return id;
        }
        self.addr.push(a);
        self.moved_at.push(u64::MAX);
        self.placement.push(NO_TIER);
        (self.addr.len() - 1) as u32
    }

    fn retire(&mut self, id: u32) {
        self.set_tier(id, NO_TIER);
        self.addr[id as usize] = 0;
        self.moved_at[id as usize] = u64::MAX;
        self.free_ids.push(id);
    }

    /// Bring the spans in line with the process's mappings: new mappings (or pages a
    /// mapping grew by) get page ids, pages of mappings gone are retired (their ids reused).
    fn sync_spans(&mut self, maps: &[(usize, usize)]) {
        let mut old = std::mem::take(&mut self.spans);
        for &(s, e) in maps {
            let pages = (e - s) / PAGE;
            let mut span = old.remove(&s).unwrap_or(Span { ids: Vec::new() });
            while span.ids.len() > pages {
                let id = span.ids.pop().expect("len > pages >= 0");
                self.retire(id);
            }
            for k in span.ids.len()..pages {
                let id = self.new_id(s + k * PAGE);
                span.ids.push(id);
            }
            self.spans.insert(s, span);
        }
        for (_, span) in old {
            for id in span.ids {
                self.retire(id);
            }
        }
    }

    /// One scan: the mappings, each page's presence and soft-dirty bit, the node of pages
    /// newly present (all of them every FULL_REQUERY_SCANS), then clear the bits.
    fn scan(&mut self) {
        let maps = match read_maps(self.pid) {
            Ok(m) => m,
            Err(_) => {
                self.exited = true;
                return;
            }
        };
        self.sync_spans(&maps);
        let full = self.scans.is_multiple_of(FULL_REQUERY_SCANS);
        self.scans += 1;
        let hint_ns = self.scan_period_ns as f64 / 2.0;
        self.written.iter_mut().for_each(|w| *w = 0);
        let mut query: Vec<u32> = Vec::new();
        // Out of `self` for the walk: one map lookup per mapping, not per page.
        let spans = std::mem::take(&mut self.spans);
        for (&s, span) in &spans {
            let n = span.ids.len();
            let mut k0 = 0;
            while k0 < n {
                let k1 = (k0 + SCAN_CHUNK).min(n);
                self.pm_buf.resize((k1 - k0) * 8, 0);
                let off = ((s / PAGE + k0) * 8) as u64;
                if self.pagemap.read_exact_at(&mut self.pm_buf, off).is_err() {
                    // The mapping went away between maps and pagemap: next scan.
                    break;
                }
                for k in k0..k1 {
                    let e = u64::from_ne_bytes(
                        self.pm_buf[(k - k0) * 8..][..8]
                            .try_into()
                            .expect("8 bytes"),
                    );
                    let id = span.ids[k];
                    if e & PM_PRESENT == 0 {
                        self.set_tier(id, NO_TIER);
                        continue;
                    }
                    let t = self.placement[id as usize];
                    if full || t == NO_TIER {
                        query.push(id);
                    }
                    let ours = self.moved_at[id as usize] == self.scans - 1;
                    if self.soft_dirty && e & PM_SOFT_DIRTY != 0 && !ours {
                        self.pages_written_seen += 1;
                        if t != NO_TIER {
                            self.written[t.index()] += 1;
                        }
                        self.events.push(if self.pebs {
                            HeatEvent::Sample {
                                page: id,
                                write: true,
                                count: 1,
                            }
                        } else {
                            HeatEvent::HintFault {
                                page: id,
                                time_to_fault_ns: hint_ns,
                            }
                        });
                    }
                }
                k0 = k1;
            }
        }
        self.spans = spans;
        if self.soft_dirty {
            // Clearing fails only when the process is gone, which the next scan sees.
            let _ = std::fs::write(format!("/proc/{}/clear_refs", self.pid), "4");
        }
        for chunk in query.chunks(SCAN_CHUNK) {
            self.q_addrs.clear();
            self.q_addrs
                .extend(chunk.iter().map(|&id| self.addr[id as usize]));
            self.q_status.clear();
            self.q_status.resize(chunk.len(), i32::MIN);
            let r = numa::move_pages(self.pid, &self.q_addrs, &[], &mut self.q_status, 0);
            if r == -(libc::ESRCH as i64) {
                self.exited = true;
                return;
            }
            if r < 0 {
                continue;
            }
            for (k, &id) in chunk.iter().enumerate() {
                let st = self.q_status[k];
                let t = if st >= 0 {
                    self.tier_of_node(st)
                } else {
                    NO_TIER
                };
                self.set_tier(id, t);
            }
        }
    }

    /// Move the queued pages (`q_ids`, `q_nodes`) with one move_pages call per MOVE_BATCH.
    fn flush_moves(&mut self, a: &mut Applied) {
        let ids = std::mem::take(&mut self.q_ids);
        let nodes = std::mem::take(&mut self.q_nodes);
        for (cid, cnode) in ids
            .chunks(numa::MOVE_BATCH)
            .zip(nodes.chunks(numa::MOVE_BATCH))
        {
            self.q_addrs.clear();
            self.q_addrs
                .extend(cid.iter().map(|&id| self.addr[id as usize]));
            self.q_status.clear();
            self.q_status.resize(cid.len(), i32::MIN);
            let r = numa::move_pages(
                self.pid,
                &self.q_addrs,
                cnode,
                &mut self.q_status,
                MPOL_MF_MOVE,
            );
            if r == -(libc::ESRCH as i64) {
                self.exited = true;
                break;
            }
            if r < 0 {
                self.pages_refused += cid.len() as u64;
                continue;
            }
            let mut any = false;
            for (k, &id) in cid.iter().enumerate() {
                let st = self.q_status[k];
                if st >= 0 {
                    let t = self.tier_of_node(st);
                    self.set_tier(id, t);
                    if st == cnode[k] {
                        self.moved_at[id as usize] = self.scans;
                        a.pages_applied += 1;
                        a.bytes_moved += PAGE as u64;
                        self.pages_moved += 1;
                        any = true;
                        continue;
                    }
                } else if st == -libc::ENOENT || st == -libc::EFAULT {
                    self.set_tier(id, NO_TIER);
                    continue;
                } else if st == -libc::ENOMEM {
                    a.pages_no_capacity += 1;
                    continue;
                }
                self.pages_refused += 1;
            }
            a.ops_applied += any as u64;
        }
        self.q_ids = ids;
        self.q_nodes = nodes;
        self.q_ids.clear();
        self.q_nodes.clear();
    }

    pub fn report(&self, policy: &str, because: &str) -> AttachReport {
        AttachReport {
            pid: self.pid,
            policy: policy.into(),
            seconds: (crate::sys::now_ns() - self.start_ns) as f64 / 1e9,
            scans: self.scans,
            hotness: self.hotness().into(),
            budget_bytes: self.budget_bytes(),
            managed_pages: self.counts.iter().sum(),
            tiers: self
                .specs
                .iter()
                .zip(&self.tier_node)
                .zip(&self.counts)
                .map(|((s, &n), &c)| (s.name.clone(), n, c))
                .collect(),
            pages_moved: self.pages_moved,
            pages_refused: self.pages_refused,
            pages_written_seen: self.pages_written_seen,
            detached_because: because.into(),
            plan: Applied::default(),
        }
    }

    fn budget_bytes(&self) -> u64 {
        self.budget
            .bytes(self.counts.iter().sum::<u64>() * PAGE as u64)
    }
}

impl Backend for AttachBackend {
    fn page_bytes(&self) -> u64 {
        PAGE as u64
    }
    fn tier_specs(&self) -> &[TierSpec] {
        &self.specs
    }
    fn capabilities(&self) -> Capabilities {
        capabilities()
    }
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()> {
        match spec {
            TrackerSpec::HintFault { scan_period_ns, .. } => {
                self.scan_period_ns = (*scan_period_ns).max(MIN_SCAN_NS);
                Ok(())
            }
            TrackerSpec::Pebs { .. } => {
                self.pebs = true;
                Ok(())
            }
            TrackerSpec::Combined(v) => v.iter().try_for_each(|t| self.install_tracker(t)),
            TrackerSpec::None => Ok(()),
            other => Err(Error::new(
                ErrorKind::Unsupported,
                format!("attach sees written pages only (soft-dirty), not {other:?}"),
            )),
        }
    }
    fn advance(&mut self, dt_ns: u64) -> Result<()> {
        self.quantum_ns = dt_ns;
        let until = crate::sys::now_ns() + dt_ns;
        loop {
            let now = crate::sys::now_ns();
            if now >= until || self.stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_nanos(
                (until - now).min(50_000_000),
            ));
        }
        self.now_ns = crate::sys::now_ns();
        if !self.exited && self.now_ns >= self.next_scan_ns {
            self.next_scan_ns = self.now_ns + self.scan_period_ns;
            self.scan();
        }
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.now_ns - self.start_ns
    }
    fn observe(&mut self) -> Snapshot<'_> {
        let dt_s = self.scan_period_ns as f64 / 1e9;
        self.telemetry.clear();
        for (k, spec) in self.specs.iter().enumerate() {
            let lat = self
                .probe
                .as_ref()
                .and_then(|p| p.latency_ns(k))
                .unwrap_or(spec.unloaded_latency_ns);
            let rate = self.written[k] as f64 / dt_s;
            self.telemetry.push(TierTelemetry {
                used_bytes: self.counts[k] * PAGE as u64,
                capacity_bytes: if k == 0 { 0 } else { u64::MAX },
                arrival_rate_per_s: rate,
                occupancy: rate * lat / 1e9,
                ..Default::default()
            });
        }
        self.telemetry[0].capacity_bytes = self.budget_bytes();
        self.tenants[0].pages.len = self.placement.len() as u32;
        Snapshot {
            now_ns: self.now_ns - self.start_ns,
            quantum_ns: self.quantum_ns,
            page_bytes: PAGE as u64,
            tier_specs: &self.specs,
            tiers: &self.telemetry,
            placement: &self.placement,
            events: &self.events,
            tenants: &self.tenants,
            controls: &self.controls,
            tenant_telemetry: &[],
            access_bits: None,
            moved: None,
        }
    }
    fn apply(&mut self, plan: &Plan, quota_bytes: Option<u64>) -> Applied {
        self.events.clear();
        let mut a = Applied::default();
        let mut quota = quota_bytes.map(|q| q / PAGE as u64);
        for m in &plan.moves {
            let to = m.to.index();
            if to >= self.specs.len() {
                a.moves_malformed += 1;
                continue;
            }
            let node = self.tier_node[to] as i32;
            for p in m.range.pages() {
                let p = p as usize;
                a.pages_tried += 1;
                if p >= self.placement.len() || self.addr[p] == 0 || self.placement[p] == NO_TIER {
                    continue;
                }
                if self.placement[p] == m.to {
                    a.pages_already_there += 1;
                    continue;
                }
                if let Some(q) = quota.as_mut() {
                    if *q == 0 {
                        a.pages_over_quota += 1;
                        continue;
                    }
                    *q -= 1;
                }
                self.q_ids.push(p as u32);
                self.q_nodes.push(node);
            }
        }
        self.flush_moves(&mut a);
        a
    }
}

/// Attach to `pid` with `cfg` (checked: `preflight`, `check_config`) until `stop` is set,
/// `duration_s` passes or the process exits; every page stays where it is at the end.
pub fn attach(
    pid: i32,
    cfg: &RuntimeConfig,
    duration_s: Option<f64>,
    stop: &'static AtomicBool,
) -> Result<AttachReport> {
    attach_reporting(pid, cfg, duration_s, stop, None)
}

/// `attach`, handing `live` the report so far after every engine step (`tiermem attach
/// --metrics-listen` serves it).
pub fn attach_reporting(
    pid: i32,
    cfg: &RuntimeConfig,
    duration_s: Option<f64>,
    stop: &'static AtomicBool,
    live: Option<&dyn Fn(AttachReport)>,
) -> Result<AttachReport> {
    let policy = crate::backend::build_policy(cfg)?;
    let name = policy.name();
    let mut backend = AttachBackend::new(pid, cfg, stop)?;
    let mut engine = Engine::new(policy, &mut backend)?;
    let deadline = duration_s.map(|d| crate::sys::now_ns() + (d * 1e9) as u64);
    let because = loop {
        if stop.load(Ordering::Relaxed) {
            break "signal";
        }
        if backend.exited || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            break "process exited";
        }
        if deadline.is_some_and(|d| crate::sys::now_ns() >= d) {
            break "duration";
        }
        let remaining = deadline.map_or(u64::MAX, |d| d.saturating_sub(crate::sys::now_ns()));
        engine.step_within(&mut backend, remaining)?;
        if let Some(f) = live {
            let mut r = backend.report(&name, "");
            r.plan = engine.counters.applied;
            f(r);
        }
    };
    // Stop the probe thread (it shares `stop`); the process keeps every page where it is.
    stop.store(true, Ordering::Relaxed);
    let mut r = backend.report(&name, because);
    r.plan = engine.counters.applied;
    Ok(r)
}

/// Set on SIGINT or SIGTERM (`stop_on_signals`): detach.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Make SIGINT and SIGTERM detach (the returned flag is set) instead of killing attach
/// between two move_pages calls (which would be harmless too: a move is the kernel's).
pub fn stop_on_signals() -> &'static AtomicBool {
    // The handler only stores to an atomic, which is async-signal-safe.
    // SAFETY: a zeroed sigaction is valid; the pointers passed are to locals or null.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_stop_signal as *const () as usize;
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
    }
    &STOP
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_keep_private_anonymous_read_write_mappings_only() {
        let keep = [
            "7f1c00000000-7f1c00021000 rw-p 00000000 00:00 0 ",
            "55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]",
            "7ffc1a000000-7ffc1a021000 rw-p 00000000 00:00 0                          [stack]",
        ];
        for l in keep {
            assert!(parse_maps_line(l).is_some(), "{l}");
        }
        let drop = [
            "7f1c00000000-7f1c00021000 r--p 00000000 00:00 0 ",
            "7f1c00000000-7f1c00021000 rw-s 00000000 00:05 1234 /dev/zero (deleted)",
            "7f1c00000000-7f1c00021000 rw-p 00001000 08:01 5678 /usr/lib/libc.so.6",
            "7ffc1a1f0000-7ffc1a1f2000 r-xp 00000000 00:00 0                          [vdso]",
            "7f1c00000000-7f1c00021000 ---p 00000000 00:00 0 ",
        ];
        for l in drop {
            assert!(parse_maps_line(l).is_none(), "{l}");
        }
        assert_eq!(
            parse_maps_line("1000-3000 rw-p 00000000 00:00 0 "),
            Some((0x1000, 0x3000))
        );
    }

    /// The scan pipeline on a process (this one: preflight refuses it, the backend does
    /// not care): maps -> pagemap -> move_pages query -> placement, pages retired when
    /// their mapping stops being a tiered one. With one node here the "node tier" is node
    /// 0 as well, so every page is found in tier 0 (the first tier on its node); moves need
    /// two nodes (the QEMU guest test).
    #[test]
    fn a_scan_finds_every_written_page_on_its_node_and_forgets_unmapped_ones() {
        static STOP: AtomicBool = AtomicBool::new(false);
        let mut cfg = RuntimeConfig::default();
        cfg.tiers[1] = {
            let mut t = tiermem_core::tier::TierConfig::dram("other");
            t.kind = "node".into();
            t.node = Some(numa::dram_node());
            t
        };
        let pages = 1024;
        // Guard pages on both sides (PROT_NONE, not tiered) keep the kernel from merging our
        // mapping with a neighbour another test thread maps meanwhile.
        let g = crate::sys::map_anon((pages + 2) * PAGE).unwrap();
        let a = g + PAGE;
        // SAFETY: the two guard pages of the mapping just made; nothing uses them.
        unsafe {
            crate::sys::mprotect(g, PAGE, libc::PROT_NONE);
            crate::sys::mprotect(a + pages * PAGE, PAGE, libc::PROT_NONE);
        }
        for k in 0..pages {
            // SAFETY: inside the mapping just made, ours alone.
            unsafe { ((a + k * PAGE) as *mut u8).write_volatile(k as u8 | 1) };
        }
        let mut b = AttachBackend::new(std::process::id() as i32, &cfg, &STOP).unwrap();
        b.scan();
        let span = &b.spans[&a];
        assert_eq!(span.ids.len(), pages);
        assert!(span
            .ids
            .iter()
            .all(|&id| b.placement[id as usize] == TierId(0)));
        assert!(b.counts[0] >= pages as u64, "{:?}", b.counts);
        let ids: Vec<u32> = span.ids.clone();
        // Read-only is no longer a tiered mapping: its pages are retired as if unmapped (and
        // no other thread can map there before the next scan).
        // SAFETY: our own mapping made above; only its protection changes.
        unsafe { crate::sys::mprotect(a, pages * PAGE, libc::PROT_READ) };
        b.scan();
        assert!(!b.spans.contains_key(&a));
        assert!(ids
            .iter()
            .all(|&id| b.placement[id as usize] == NO_TIER && b.addr[id as usize] == 0));
        assert!(b.free_ids.len() >= pages, "retired ids are reused");
        // Moving to the node they are on: already there, nothing refused.
        let snap_pages = b.placement.len();
        let first = (0..snap_pages)
            .find(|&i| b.placement[i] == TierId(0))
            .unwrap() as u32;
        let mut plan = Plan::default();
        plan.push(first, TierId(0));
        let r = b.apply(&plan, None);
        assert_eq!((r.pages_already_there, b.pages_refused), (1, 0));
        // SAFETY: unmaps the mapping made above; nothing refers to it any more.
        unsafe { crate::sys::munmap(g, (pages + 2) * PAGE) };
    }

    /// The `Backend` contract (issue 48 item 3): the snapshot's `quantum_ns` is the quantum
    /// the engine advanced by (the policy's: HeMem's 10 ms), not the config's `quantum_ms`
    /// (20 ms). Colloid's migration limit is a rate times `Snapshot.quantum_ns`
    /// (tiermem-policies/src/colloid.rs), so the config's quantum doubled it here before
    /// 3e91e8b. The same check over the runtime is tests/backend_quantum.rs.
    #[test]
    fn the_policy_sees_the_quantum_the_engine_advanced_by() {
        use tiermem_core::capability::Needs;
        struct Seen<P>(P, Vec<u64>);
        impl<P: Policy> Policy for Seen<P> {
            fn name(&self) -> String {
                self.0.name()
            }
            fn tracker(&self) -> TrackerSpec {
                self.0.tracker()
            }
            fn needs(&self) -> Needs {
                self.0.needs()
            }
            fn quantum_ns(&self) -> u64 {
                self.0.quantum_ns()
            }
            fn migration_limit_bytes(&self) -> Option<u64> {
                self.0.migration_limit_bytes()
            }
            fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
                self.1.push(snap.quantum_ns);
                self.0.decide(snap)
            }
        }
        static STOP: AtomicBool = AtomicBool::new(false);
        let mut cfg = RuntimeConfig::default();
        // One node here: the node tier is node 0 again (as in the scan test above).
        cfg.tiers[1] = {
            let mut t = tiermem_core::tier::TierConfig::dram("other");
            t.kind = "node".into();
            t.node = Some(numa::dram_node());
            t
        };
        cfg.policy = tiermem_policies::PolicyConfig::default_for("hemem");
        cfg.colloid = Some(Default::default());
        let policy = crate::backend::build_policy(&cfg).unwrap();
        assert_eq!(policy.name(), "hemem+colloid");
        let (q, cfg_q) = (policy.quantum_ns(), cfg.quantum_ns());
        assert_ne!(q, cfg_q, "the two quanta must differ for this test to mean anything");
        let mut b = AttachBackend::new(std::process::id() as i32, &cfg, &STOP).unwrap();
        let mut e = Engine::new(Seen(policy, Vec::new()), &mut b).unwrap();
        e.step(&mut b).unwrap();
        e.step(&mut b).unwrap();
        // A run ending sooner than a quantum: the shortened quantum is the one reported.
        e.step_within(&mut b, q / 4).unwrap();
        assert_eq!(e.policy.1, [q, q, q / 4]);
    }

    #[test]
    fn bad_pids_are_refused_in_one_line() {
        let e = preflight(i32::MAX - 7).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Usage);
        assert!(e.message.contains("no process"), "{}", e.message);
        let e = preflight(std::process::id() as i32).unwrap_err();
        assert!(e.message.contains("tiermem itself"), "{}", e.message);
        assert!(preflight(0).is_err());
    }

    #[test]
    fn a_config_with_a_compressed_tier_is_refused_by_field() {
        let e = check_config(&RuntimeConfig::default()).unwrap_err();
        assert_eq!(e.kind.exit_code(), 2);
        assert!(e.message.contains("runtime.tiers[1]"), "{}", e.message);
        assert!(e.message.contains("tiermem run"), "{}", e.message);
    }
}
