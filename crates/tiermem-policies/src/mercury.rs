//! Mercury (arXiv 2412.08938, "QoS-Aware Tiered Memory System") as a [`Controller`]:
//! per-tenant SLOs and strict unique priorities, enforced with per-tenant default-tier
//! limits and CPU shares, decided by admission control (Listing 1) and adapted every
//! 200 ms (Listing 2). Pages move within the limits by the placement policy underneath
//! (Mercury keeps Linux's NUMA balancing, §3.2: TPP here) and by the backend's reclaim of a
//! tenant over its limit (§4.1, `memory.per_numa_high`).
//!
//! Pure like a policy: it sees snapshots (per-tenant latency, bandwidth and NUMA hint-fault
//! rate in `Snapshot::tenant_telemetry`), keeps its own clock from `now_ns`, and returns the
//! complete controls in force. What it is given at build time: each tenant's profile
//! (§4.2, measured by the backend in isolation) and the machine's two thresholds.
//!
//! Choices the paper leaves open (documented in docs/simulator.md, tested below):
//! * step sizes: `memory_step` (1 GiB, the paper's Fig. 9 example demotes 1 GB) and
//!   `cpu_step` (5 % of the tenant's cores) per adaptation round and action;
//! * hysteresis: an LS tenant is unsatisfied above its latency target and yields below
//!   `(1 − hysteresis) ×` it, so it settles in `[0.95, 1.0] ×` target; a BI tenant is
//!   unsatisfied below `(1 − hysteresis) ×` its bandwidth target and yields above
//!   `(1 + hysteresis) ×` it;
//! * probe back-off: a tenant that raised its own share in a round (`cpu_up` or `promote`)
//!   and so pushed a higher-priority tenant over its SLO in the next is held from that
//!   kind of raise for `backoff` rounds, doubled on each repeat up to
//!   `probe_backoff_max_rounds` and halved after a raise that hurt nobody (a held BI
//!   tenant waits: Listing 2 reaches its next steps only at full CPU). Without it a BI
//!   tenant below its target beside an LS
//!   tenant just inside its own raises its CPU every other round, pushes the LS tenant
//!   over, is cut back, and the LS tenant holds its SLO half the time;
//! * an LS tenant over its SLO yields a step only once the previous one has landed (its
//!   default-tier bytes are down to its limit), so each step is measured before the next;
//! * work conservation (Listing 2 line 11): free default-tier memory goes, in descending
//!   priority, to tenants as *spare* after `settle_rounds` consecutive rounds in which
//!   every SLO held; spare is not yielded back by a satisfied tenant (it would bounce) and
//!   is all taken back the first round any SLO is missed;
//! * admission of a BI tenant gives its profiled memory and CPU; reducing co-runners'
//!   bandwidth (Listing 1's `yieldBW`) happens in the adaptation rounds that follow, which
//!   measure the effect of each step instead of predicting it.

use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_positive, check_range, invalid, join, Validate};
use tiermem_core::{
    Controller, Controls, CpuShare, Needs, Result, Size, Snapshot, TenantId, TierId, TierLimit,
};

/// Controllers by config name (`[controller] controller = "..."`).
pub const CONTROLLERS: &[&str] = &["mercury"];

/// A tenant's service-level objective: a latency-sensitive (LS) target, lower is better,
/// or a bandwidth-intensive (BI) one, higher is better. Written with its unit:
/// * the simulator's (what Mercury's IBS/PQoS counters give, §3.1): a memory-access latency
///   "460ns", "0.46us" (LS) or a memory bandwidth "40GB/s", "500MB/s" (BI; GB = 1e9 bytes);
/// * the runtime's (stock kernel, no PMU: what tiermem itself measures): milliseconds
///   stalled on tier faults per second the program is active "20ms/s" (LS), or CPU
///   seconds per second its own threads run, its progress rate, "0.8cpu" (BI).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slo {
    LatencyNs(f64),
    BandwidthBytesPerS(f64),
    StallMsPerS(f64),
    CpuPerS(f64),
}

const SLO_UNITS: &str = "write a latency (\"460ns\", \"0.5us\") or a bandwidth (\"40GB/s\", \"500MB/s\") in the simulator, a fault stall (\"20ms/s\") or a progress rate (\"0.8cpu\") on the runtime";

impl Slo {
    pub fn parse(text: &str) -> std::result::Result<Slo, String> {
        let t = text.trim();
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let v: f64 = num
            .parse()
            .map_err(|_| format!("`{text}` is not a number with a unit; {SLO_UNITS}"))?;
        let slo = match unit.trim() {
            "ns" => Slo::LatencyNs(v),
            "us" => Slo::LatencyNs(v * 1e3),
            "GB/s" => Slo::BandwidthBytesPerS(v * 1e9),
            "MB/s" => Slo::BandwidthBytesPerS(v * 1e6),
            "ms/s" => Slo::StallMsPerS(v),
            "cpu" => Slo::CpuPerS(v),
            "" => return Err(format!("`{text}` has no unit; write \"{text}ns\" for a latency target (LS) or \"{text}GB/s\" for a bandwidth target (BI) in the simulator, \"{text}ms/s\" (LS) or \"{text}cpu\" (BI) on the runtime")),
            other => return Err(format!("`{text}`: unknown unit `{other}`; {SLO_UNITS}")),
        };
        if !(v.is_finite() && v > 0.0) {
            return Err(format!("`{text}`: an SLO is positive"));
        }
        if let Slo::StallMsPerS(ms) = slo {
            if ms >= 1000.0 {
                return Err(format!(
                    "`{text}`: a stall is less than 1000ms/s (all of the time)"
                ));
            }
        }
        Ok(slo)
    }
    /// Latency-sensitive (LS: lower is better) rather than bandwidth-intensive (BI).
    pub fn is_latency(&self) -> bool {
        matches!(self, Slo::LatencyNs(_) | Slo::StallMsPerS(_))
    }
    /// Measured by the runtime (fault stall, progress) rather than by the simulator's
    /// counters (latency, bandwidth).
    pub fn is_runtime(&self) -> bool {
        matches!(self, Slo::StallMsPerS(_) | Slo::CpuPerS(_))
    }
    /// The target in its own unit (ns, bytes/s, ms/s or CPU s/s).
    pub fn target(&self) -> f64 {
        match *self {
            Slo::LatencyNs(v)
            | Slo::BandwidthBytesPerS(v)
            | Slo::StallMsPerS(v)
            | Slo::CpuPerS(v) => v,
        }
    }
    /// The unit of [`Self::target`] and [`Self::measured`].
    pub fn unit(&self) -> &'static str {
        match self {
            Slo::LatencyNs(_) => "ns",
            Slo::BandwidthBytesPerS(_) => "bytes/s",
            Slo::StallMsPerS(_) => "ms/s",
            Slo::CpuPerS(_) => "cpu",
        }
    }
    /// What this SLO is judged on in a tenant's telemetry.
    pub fn measured(&self, m: &tiermem_core::TenantTelemetry) -> f64 {
        match self {
            Slo::LatencyNs(_) => m.avg_latency_ns,
            Slo::BandwidthBytesPerS(_) => m.bandwidth_bytes_per_s,
            Slo::StallMsPerS(_) => m.fault_stall_ms_per_s,
            Slo::CpuPerS(_) => m.cpu_per_s,
        }
    }
    pub fn class(&self) -> &'static str {
        if self.is_latency() {
            "LS"
        } else {
            "BI"
        }
    }
}

/// One `[[controller.tenants]]` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MercuryTenantConfig {
    /// A `[[tenants]]` name of the simulation (a program's name on the runtime).
    pub name: String,
    /// "460ns" (LS: memory-access latency) or "40GB/s" (BI: memory bandwidth) in the
    /// simulator; "20ms/s" (LS: stall on tier faults) or "0.8cpu" (BI: progress) on the
    /// runtime.
    pub slo: String,
    /// Strict priority, unique; larger = more important.
    pub priority: u32,
    /// When the tenant is submitted (admission control runs then); before it the tenant
    /// does not run (CPU share 0, no default-tier memory).
    #[serde(default)]
    pub arrive_s: f64,
}

/// The `[controller]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// The controller: "mercury".
    pub controller: String,
    /// Adaptation period (Mercury §4.3.2: 200 ms).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: f64,
    /// Default-tier memory moved per action (Mercury Fig. 9 demotes 1 GB).
    #[serde(default = "default_memory_step")]
    pub memory_step: Size,
    /// CPU share moved per action (a fraction of the tenant's cores).
    #[serde(default = "default_cpu_step")]
    pub cpu_step: f64,
    /// Relative band around an SLO in which a tenant neither asks nor yields.
    #[serde(default = "default_hysteresis")]
    pub hysteresis: f64,
    /// Smallest CPU share a BI tenant is throttled to (it keeps running, best effort).
    #[serde(default = "default_min_cpu")]
    pub min_cpu_share: f64,
    /// Rounds every SLO must hold before free memory is handed out (work conservation).
    #[serde(default = "default_settle_rounds")]
    pub settle_rounds: u32,
    /// Consecutive rounds a tenant must be over its SLO before it yields (1: at once).
    /// More for noisy measurements (the runtime's fault stalls come in bursts), so that one
    /// calm round does not give away memory the next one needs.
    #[serde(default = "default_yield_rounds")]
    pub yield_rounds: u32,
    /// Longest hold (rounds) on a tenant whose raises keep pushing a higher-priority
    /// tenant over its SLO (the probe back-off; 0 turns it off).
    #[serde(default = "default_probe_backoff_max_rounds")]
    pub probe_backoff_max_rounds: u32,
    /// Healthy default-tier bandwidth (§4.2), e.g. "150GB/s"; absent = calibrated by the
    /// backend with the paper's microbenchmarks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresh_local_bw: Option<String>,
    /// Remote NUMA hint faults per second past which demoting a BI tenant further causes
    /// inter-tier interference (§4.2); absent = calibrated by the backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thresh_numa: Option<f64>,
    pub tenants: Vec<MercuryTenantConfig>,
}

fn default_interval_ms() -> f64 {
    200.0
}
fn default_memory_step() -> Size {
    Size::Bytes(1 << 30)
}
fn default_cpu_step() -> f64 {
    0.05
}
fn default_hysteresis() -> f64 {
    0.05
}
fn default_min_cpu() -> f64 {
    0.05
}
fn default_yield_rounds() -> u32 {
    1
}
fn default_settle_rounds() -> u32 {
    5
}
fn default_probe_backoff_max_rounds() -> u32 {
    // 6.4 s at the 200 ms interval: a tenant whose raise keeps hurting a higher one
    // probes about twice a minute at most, and one whose load changed (a BI tenant gone
    // idle) waits at most this long to be raised again.
    32
}

impl ControllerConfig {
    /// Each tenant's SLO, parsed (validated by [`Validate`]).
    pub fn slos(&self) -> Vec<Slo> {
        self.tenants
            .iter()
            .map(|t| Slo::parse(&t.slo).expect("validated"))
            .collect()
    }
    /// `thresh_local_bw` in bytes/s, if given.
    pub fn thresh_local_bw_bytes(&self) -> Option<f64> {
        self.thresh_local_bw
            .as_deref()
            .map(|s| Slo::parse(s).expect("validated").target())
    }
}

impl ControllerConfig {
    /// Every SLO is one this backend measures: the simulator has latency and bandwidth
    /// counters, the runtime (no PMU) measures fault stalls and progress.
    pub fn check_backend(&self, p: &str, runtime: bool) -> Result<()> {
        for (i, (t, slo)) in self.tenants.iter().zip(self.slos()).enumerate() {
            if slo.is_runtime() == runtime {
                continue;
            }
            let fix = match (runtime, slo.is_latency()) {
                (true, true) => "the runtime has no memory-latency counters (no PMU); give the stall on tier faults it may take, e.g. \"20ms/s\"",
                (true, false) => "the runtime has no memory-bandwidth counters (no PMU); give the progress rate it needs in CPU seconds per second, e.g. \"0.8cpu\"",
                (false, true) => "a fault stall is the runtime's measure; the simulator measures memory-access latency: give e.g. \"460ns\"",
                (false, false) => "a progress rate is the runtime's measure; the simulator measures memory bandwidth: give e.g. \"40GB/s\"",
            };
            return Err(invalid(
                &join(p, &format!("tenants[{i}].slo")),
                format!("`{}`: {fix}", t.slo),
            ));
        }
        Ok(())
    }
}

impl Validate for ControllerConfig {
    fn validate(&self, p: &str) -> Result<()> {
        if !CONTROLLERS.contains(&self.controller.as_str()) {
            return Err(invalid(
                &join(p, "controller"),
                format!(
                    "unknown controller `{}`; use one of: {}",
                    self.controller,
                    CONTROLLERS.join(", ")
                ),
            ));
        }
        check_range(&join(p, "interval_ms"), self.interval_ms, 1.0, 1e6)?;
        let step = self.memory_step.bytes(&join(p, "memory_step"))?;
        if step == 0 {
            return Err(invalid(
                &join(p, "memory_step"),
                "0; give a positive size such as \"1GiB\"",
            ));
        }
        check_positive(&join(p, "cpu_step"), self.cpu_step, 1.0)?;
        check_range(&join(p, "hysteresis"), self.hysteresis, 0.0, 0.5)?;
        check_positive(&join(p, "min_cpu_share"), self.min_cpu_share, 1.0)?;
        check_range(&join(p, "yield_rounds"), self.yield_rounds as f64, 1.0, 1e6)?;
        check_range(
            &join(p, "settle_rounds"),
            self.settle_rounds as f64,
            0.0,
            1e6,
        )?;
        check_range(
            &join(p, "probe_backoff_max_rounds"),
            self.probe_backoff_max_rounds as f64,
            0.0,
            1e6,
        )?;
        if let Some(t) = &self.thresh_local_bw {
            match Slo::parse(t) {
                Ok(Slo::BandwidthBytesPerS(_)) => {}
                Ok(_) => {
                    return Err(invalid(
                        &join(p, "thresh_local_bw"),
                        format!("`{t}` is a latency; give a bandwidth such as \"150GB/s\""),
                    ))
                }
                Err(e) => return Err(invalid(&join(p, "thresh_local_bw"), e)),
            }
        }
        if let Some(t) = self.thresh_numa {
            check_positive(&join(p, "thresh_numa"), t, 1e12)?;
        }
        if self.tenants.is_empty() {
            return Err(invalid(
                &join(p, "tenants"),
                "empty; list each managed tenant as [[controller.tenants]] with name, slo and priority",
            ));
        }
        for (i, t) in self.tenants.iter().enumerate() {
            let tp = join(p, &format!("tenants[{i}]"));
            Slo::parse(&t.slo).map_err(|e| invalid(&join(&tp, "slo"), e))?;
            if let Some(j) = self.tenants[..i].iter().position(|u| u.name == t.name) {
                return Err(invalid(
                    &join(&tp, "name"),
                    format!(
                        "`{}` is also tenants[{j}].name; list each tenant once",
                        t.name
                    ),
                ));
            }
            if let Some(j) = self.tenants[..i]
                .iter()
                .position(|u| u.priority == t.priority)
            {
                return Err(invalid(
                    &join(&tp, "priority"),
                    format!(
                        "{} is also tenants[{j}].priority (`{}`); Mercury's priorities are strict and unique: give each tenant a different one",
                        t.priority, self.tenants[j].name
                    ),
                ));
            }
            check_range(&join(&tp, "arrive_s"), t.arrive_s, 0.0, 1e7)?;
        }
        Ok(())
    }
}

/// What the profiler found for one tenant in isolation (§4.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Profile {
    /// The SLO is met alone with all memory local and full CPU.
    pub admissible: bool,
    /// The least default-tier memory that meets the SLO alone.
    pub local_bytes: u64,
    /// The CPU share that meets a BI SLO alone once its local memory is zero (1 for LS).
    pub cpu_share: f64,
    /// What it measured at that allocation (ns or bytes/s).
    pub measured: f64,
}

/// The machine's two interference thresholds (§4.2).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Thresholds {
    /// Healthy default-tier bandwidth, bytes/s.
    pub local_bw_bytes_per_s: f64,
    /// Remote NUMA hint faults per second.
    pub numa_hint_faults_per_s: f64,
}

/// An action the controller took, for timelines and tests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Action {
    pub t_s: f64,
    pub tenant: String,
    /// "admit", "reject", "demote", "promote", "cpu_down", "cpu_up", "spare", "reclaim_spare".
    pub kind: &'static str,
    /// Why: "yield" (over its SLO), "yield_bw" (for a higher-priority tenant), "yield_mem",
    /// "need" (its own SLO), "work_conservation".
    pub why: &'static str,
}

#[derive(Clone, Debug)]
struct TenantState {
    name: String,
    slo: Slo,
    priority: u32,
    arrive_ns: u64,
    profile: Profile,
    /// Index in the snapshot's tenants, once seen.
    idx: Option<usize>,
    admitted: bool,
    rejected: bool,
    /// Default-tier bytes reserved by admission and adaptation.
    limit: u64,
    /// Default-tier bytes lent by work conservation.
    spare: u64,
    cpu: f64,
    footprint: u64,
    /// Measurement sums over the current interval.
    sum_perf: f64,
    sum_hint: f64,
    /// Samples in `sum_perf`: a backend reports NaN for a quantum without a measurement
    /// (a runtime tenant that did nothing), which is left out; a round with none leaves
    /// the tenant as it is.
    perf_samples: u32,
    /// Consecutive rounds over its SLO (`yield_rounds`).
    over_rounds: u32,
    /// The kind of raise it made in the last round, if any.
    raised: Option<Raise>,
    /// Its default-tier bytes in the last quantum, where the backend reports them.
    local_used: Option<u64>,
    /// The probe back-off, per kind of raise: rounds of the next hold, and the round
    /// before which it may not raise that way.
    backoff: [u32; 2],
    hold_until: [u64; 2],
}

/// A tenant's raise of its own share, which the probe back-off holds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Raise {
    Cpu = 0,
    Memory = 1,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Standing {
    Unsatisfied,
    InBand,
    Over,
}

/// Mercury's admission control and adaptation.
pub struct Mercury {
    cfg: ControllerConfig,
    step: u64,
    thresholds: Thresholds,
    tenants: Vec<TenantState>,
    next_tick_ns: u64,
    samples: u32,
    settled_rounds: u32,
    /// Adaptation rounds so far.
    round: u64,
    capacity: u64,
    controls: Controls,
    /// Every action so far.
    pub actions: Vec<Action>,
}

impl Mercury {
    /// `profiles` in the order of `cfg.tenants`.
    pub fn new(
        cfg: &ControllerConfig,
        profiles: &[Profile],
        thresholds: Thresholds,
    ) -> Result<Self> {
        cfg.validate("controller")?;
        let slos = cfg.slos();
        let tenants = cfg
            .tenants
            .iter()
            .zip(profiles)
            .zip(slos)
            .map(|((t, p), slo)| TenantState {
                name: t.name.clone(),
                slo,
                priority: t.priority,
                arrive_ns: (t.arrive_s * 1e9) as u64,
                profile: *p,
                idx: None,
                admitted: false,
                rejected: false,
                limit: 0,
                spare: 0,
                cpu: 0.0,
                footprint: 0,
                sum_perf: 0.0,
                sum_hint: 0.0,
                perf_samples: 0,
                over_rounds: 0,
                raised: None,
                local_used: None,
                backoff: [0; 2],
                hold_until: [0; 2],
            })
            .collect();
        Ok(Mercury {
            step: cfg.memory_step.bytes("controller.memory_step")?,
            cfg: cfg.clone(),
            thresholds,
            tenants,
            next_tick_ns: 0,
            samples: 0,
            settled_rounds: 0,
            round: 0,
            capacity: 0,
            controls: Controls::default(),
            actions: Vec::new(),
        })
    }

    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// (name, admitted, rejected, limit + spare bytes, CPU share) per managed tenant.
    pub fn allocations(&self) -> Vec<(String, bool, bool, u64, f64)> {
        self.tenants
            .iter()
            .map(|t| {
                (
                    t.name.clone(),
                    t.admitted,
                    t.rejected,
                    t.limit + t.spare,
                    t.cpu,
                )
            })
            .collect()
    }

    fn free(&self) -> u64 {
        let used: u64 = self
            .tenants
            .iter()
            .filter(|t| t.admitted)
            .map(|t| t.limit + t.spare)
            .sum();
        self.capacity.saturating_sub(used)
    }

    fn log(&mut self, now_ns: u64, i: usize, kind: &'static str, why: &'static str) {
        self.actions.push(Action {
            t_s: now_ns as f64 / 1e9,
            tenant: self.tenants[i].name.clone(),
            kind,
            why,
        });
    }

    /// Indices of admitted tenants, by ascending priority.
    fn ascending(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.tenants.len())
            .filter(|&i| self.tenants[i].admitted)
            .collect();
        v.sort_by_key(|&i| self.tenants[i].priority);
        v
    }

    fn reclaim_spare(&mut self, now_ns: u64) {
        for i in 0..self.tenants.len() {
            if self.tenants[i].spare > 0 {
                self.tenants[i].spare = 0;
                self.log(now_ns, i, "reclaim_spare", "yield_mem");
            }
        }
    }

    /// Listing 1's `yieldMem`: take up to `want` bytes from admitted tenants of lower
    /// priority than `prio`, lowest first, each down to zero before the next. Returns what
    /// it took.
    fn yield_mem(&mut self, now_ns: u64, prio: u32, want: u64) -> u64 {
        let mut got = 0;
        for v in self.ascending() {
            if got >= want || self.tenants[v].priority >= prio {
                break;
            }
            let take = self.tenants[v].limit.min(want - got);
            if take > 0 {
                self.tenants[v].limit -= take;
                got += take;
                self.log(now_ns, v, "demote", "yield_mem");
            }
        }
        got
    }

    /// Listing 1: admit tenant `i` or reject it (inadmissible alone).
    fn admit(&mut self, now_ns: u64, i: usize, snap: &Snapshot<'_>) {
        if !self.tenants[i].profile.admissible {
            self.tenants[i].rejected = true;
            self.log(now_ns, i, "reject", "need");
            return;
        }
        self.reclaim_spare(now_ns);
        let need = self.tenants[i]
            .profile
            .local_bytes
            .min(self.tenants[i].footprint);
        let free = self.free();
        if free < need {
            let prio = self.tenants[i].priority;
            self.yield_mem(now_ns, prio, need - free);
        }
        let limit = need.min(self.free());
        let t = &mut self.tenants[i];
        t.admitted = true;
        t.limit = limit;
        t.cpu = t.profile.cpu_share;
        // No fast-tier bandwidth for an incoming BI tenant while a higher-priority LS tenant
        // runs and the default tier is past its healthy bandwidth (§4.3.1).
        if !t.slo.is_latency() {
            let prio = t.priority;
            let local_bw = snap
                .tiers
                .first()
                .map_or(0.0, |x| x.read_bytes_per_s + x.write_bytes_per_s);
            let ls_above = self
                .tenants
                .iter()
                .any(|u| u.admitted && u.slo.is_latency() && u.priority > prio);
            if ls_above && local_bw > self.thresholds.local_bw_bytes_per_s {
                self.tenants[i].limit = 0;
            }
        }
        self.log(now_ns, i, "admit", "need");
    }

    fn standing(&self, i: usize, perf: f64) -> Standing {
        let t = &self.tenants[i];
        let h = self.cfg.hysteresis;
        let target = t.slo.target();
        if perf.is_nan() {
            // Not measured this round (a runtime tenant that did nothing).
            return Standing::InBand;
        }
        if t.slo.is_latency() {
            if perf > target {
                Standing::Unsatisfied
            } else if perf < (1.0 - h) * target {
                Standing::Over
            } else {
                Standing::InBand
            }
        } else if perf < (1.0 - h) * target {
            Standing::Unsatisfied
        } else if perf > (1.0 + h) * target {
            Standing::Over
        } else {
            Standing::InBand
        }
    }

    /// Whether [`Self::reduce_bw`] can act on BI tenant `v`: memory to demote below
    /// `Thresh_numa`, or CPU above the floor.
    fn bw_reducible(&self, v: usize, hint: f64) -> bool {
        let t = &self.tenants[v];
        (t.limit > 0 && hint <= self.thresholds.numa_hint_faults_per_s)
            || t.cpu > self.cfg.min_cpu_share + 1e-9
    }

    /// Lower BI tenant `v`'s bandwidth by one step: demote while its remote hint-fault
    /// rate is below `Thresh_numa`, else (or with nothing left to demote) cut its CPU.
    /// Returns false when it cannot be reduced further.
    fn reduce_bw(&mut self, now_ns: u64, v: usize, hint: f64, why: &'static str) -> bool {
        let min_cpu = self.cfg.min_cpu_share;
        let t = &mut self.tenants[v];
        if t.limit > 0 && hint <= self.thresholds.numa_hint_faults_per_s {
            t.limit = t.limit.saturating_sub(self.step);
            self.log(now_ns, v, "demote", why);
            true
        } else if t.cpu > min_cpu + 1e-9 {
            t.cpu = (t.cpu - self.cfg.cpu_step).max(min_cpu);
            self.log(now_ns, v, "cpu_down", why);
            true
        } else {
            false
        }
    }

    /// Listing 2: one adaptation round, tenants in descending priority.
    fn adapt(&mut self, now_ns: u64, perf: &[f64], hint: &[f64]) {
        self.round += 1;
        // Each tenant's standing this round, judged once: the back-off and the round use it.
        let standings: Vec<Standing> = (0..self.tenants.len())
            .map(|i| self.standing(i, perf[i]))
            .collect();
        self.back_off_harmful_raises(&standings);
        let mut order = self.ascending();
        order.reverse();
        let mut all_ok = true;
        for &i in &order {
            let standing = standings[i];
            // Strict priority: below a tenant that missed its SLO this round, nobody asks
            // for more (it would take back what the higher one was just given).
            let higher_missed = !all_ok;
            if standing == Standing::Over {
                self.tenants[i].over_rounds += 1;
            } else {
                self.tenants[i].over_rounds = 0;
            }
            match standing {
                Standing::InBand => {}
                Standing::Over => {
                    if self.tenants[i].spare > 0
                        || self.tenants[i].over_rounds < self.cfg.yield_rounds
                    {
                        continue;
                    }
                    if self.tenants[i].slo.is_latency() {
                        // Yield again only once the last yield has landed (the backend
                        // has reclaimed down to the limit), so that each step is measured:
                        // demotion lags the limit, and a tenant judged on pages it still
                        // holds would yield far past what it needs.
                        let t = &self.tenants[i];
                        let landed = t.local_used.is_none_or(|u| u <= t.limit + t.spare);
                        if landed && t.limit > 0 {
                            self.tenants[i].limit = self.tenants[i].limit.saturating_sub(self.step);
                            self.log(now_ns, i, "demote", "yield");
                        }
                    } else {
                        self.reduce_bw(now_ns, i, hint[i], "yield");
                    }
                }
                Standing::Unsatisfied if higher_missed => {}
                Standing::Unsatisfied => {
                    all_ok = false;
                    self.reclaim_spare(now_ns);
                    let prio = self.tenants[i].priority;
                    let may = |r: Raise| self.round >= self.tenants[i].hold_until[r as usize];
                    let (may_cpu, may_mem) = (may(Raise::Cpu), may(Raise::Memory));
                    let t = &self.tenants[i];
                    if !t.slo.is_latency() && t.cpu < 1.0 - 1e-9 {
                        if may_cpu {
                            let t = &mut self.tenants[i];
                            t.cpu = (t.cpu + self.cfg.cpu_step).min(1.0);
                            t.raised = Some(Raise::Cpu);
                            self.log(now_ns, i, "cpu_up", "need");
                        }
                        continue;
                    }
                    // Mitigate bandwidth interference: the lowest-priority BI tenant below
                    // this one that can still give bandwidth.
                    let victim = self.ascending().into_iter().find(|&v| {
                        let u = &self.tenants[v];
                        u.priority < prio && !u.slo.is_latency() && self.bw_reducible(v, hint[v])
                    });
                    if let Some(v) = victim {
                        self.reduce_bw(now_ns, v, hint[v], "yield_bw");
                        continue;
                    }
                    let t = &self.tenants[i];
                    if may_mem && t.limit < t.footprint {
                        let want = self.step.min(t.footprint - t.limit);
                        let free = self.free().min(want);
                        let got = free + self.yield_mem(now_ns, prio, want - free);
                        if got > 0 {
                            self.tenants[i].limit += got;
                            self.tenants[i].raised = Some(Raise::Memory);
                            self.log(now_ns, i, "promote", "need");
                        }
                    }
                }
            }
        }
        // Work conservation: after `settle_rounds` rounds with every SLO held, lend the
        // free default-tier memory in descending priority.
        if all_ok {
            self.settled_rounds += 1;
        } else {
            self.settled_rounds = 0;
        }
        if all_ok && self.settled_rounds > self.cfg.settle_rounds {
            for &i in &order {
                let free = self.free();
                if free == 0 {
                    break;
                }
                let t = &self.tenants[i];
                let room = t.footprint.saturating_sub(t.limit + t.spare);
                let give = room.min(free);
                if give > 0 {
                    self.tenants[i].spare += give;
                    self.log(now_ns, i, "spare", "work_conservation");
                }
            }
        }
    }

    /// The probe back-off: a tenant that raised its share last round and now sees a
    /// higher-priority tenant over its SLO is held from raising for `backoff` rounds
    /// (doubled each time, at most `probe_backoff_max_rounds`); a raise that hurt nobody
    /// halves it.
    fn back_off_harmful_raises(&mut self, standings: &[Standing]) {
        let missed: Vec<u32> = (0..self.tenants.len())
            .filter(|&i| self.tenants[i].admitted)
            .filter(|&i| standings[i] == Standing::Unsatisfied)
            .map(|i| self.tenants[i].priority)
            .collect();
        let max = self.cfg.probe_backoff_max_rounds;
        let round = self.round;
        for t in &mut self.tenants {
            let Some(kind) = t.raised.take() else {
                continue;
            };
            let k = kind as usize;
            if missed.iter().any(|&p| p > t.priority) {
                t.backoff[k] = (t.backoff[k].max(1) * 2).min(max);
                t.hold_until[k] = round + t.backoff[k] as u64;
            } else {
                t.backoff[k] /= 2;
            }
        }
    }

    fn build_controls(&mut self) {
        let mut c = Controls::default();
        for t in &self.tenants {
            let Some(idx) = t.idx else { continue };
            let id = TenantId(idx as u16);
            let running = t.admitted;
            c.limits.push(TierLimit {
                tenant: id,
                tier: TierId::DEFAULT,
                bytes: Some(if running { t.limit + t.spare } else { 0 }),
            });
            c.cpu_shares.push(CpuShare {
                tenant: id,
                share: if running { t.cpu } else { 0.0 },
            });
        }
        self.controls = c;
    }
}

impl Controller for Mercury {
    fn name(&self) -> String {
        "mercury".into()
    }
    fn needs(&self) -> Needs {
        Needs {
            tenants: self.tenants.len(),
            tier_limits: true,
            cpu_shares: true,
            ..Needs::default()
        }
    }
    fn control(&mut self, snap: &Snapshot<'_>) -> Controls {
        if self.tenants.iter().any(|t| t.idx.is_none()) {
            for t in &mut self.tenants {
                t.idx = snap.tenants.iter().position(|s| s.name == t.name);
            }
            self.capacity = snap.tiers.first().map_or(0, |x| x.capacity_bytes);
            self.build_controls();
        }
        // Accumulate this quantum's measurements.
        for t in &mut self.tenants {
            if let Some(m) = t.idx.and_then(|i| snap.tenant_telemetry.get(i)) {
                t.footprint = m.footprint_bytes;
                t.local_used = m.used_bytes.first().copied();
                let perf = t.slo.measured(m);
                if perf.is_finite() {
                    t.sum_perf += perf;
                    t.perf_samples += 1;
                }
                t.sum_hint += m.hint_faults_per_s;
            }
        }
        self.samples += 1;
        if snap.now_ns < self.next_tick_ns {
            return self.controls.clone();
        }
        let interval_ns = (self.cfg.interval_ms * 1e6) as u64;
        self.next_tick_ns = snap.now_ns + interval_ns;
        let k = self.samples.max(1) as f64;
        // NaN (no measurement this round) compares false both ways: the tenant is in band.
        let perf: Vec<f64> = self
            .tenants
            .iter()
            .map(|t| match t.perf_samples {
                0 => f64::NAN,
                n => t.sum_perf / n as f64,
            })
            .collect();
        let hint: Vec<f64> = self.tenants.iter().map(|t| t.sum_hint / k).collect();
        for t in &mut self.tenants {
            t.sum_perf = 0.0;
            t.sum_hint = 0.0;
            t.perf_samples = 0;
        }
        self.samples = 0;
        // Arrivals, most important first.
        let mut arriving: Vec<usize> = (0..self.tenants.len())
            .filter(|&i| {
                let t = &self.tenants[i];
                !t.admitted && !t.rejected && t.idx.is_some() && t.arrive_ns <= snap.now_ns
            })
            .collect();
        arriving.sort_by_key(|&i| std::cmp::Reverse(self.tenants[i].priority));
        let admitted_now = !arriving.is_empty();
        for i in arriving {
            self.admit(snap.now_ns, i, snap);
        }
        // Adapt on the interval's measurements (not in a round that admitted someone: the
        // new allocation has not been measured yet).
        if !admitted_now {
            self.adapt(snap.now_ns, &perf, &hint);
        }
        self.build_controls();
        self.controls.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_core::{PageRange, TenantSpec, TenantTelemetry, TierTelemetry};

    const GIB: u64 = 1 << 30;

    fn cfg(tenants: &[(&str, &str, u32, f64)]) -> ControllerConfig {
        ControllerConfig {
            controller: "mercury".into(),
            interval_ms: default_interval_ms(),
            memory_step: default_memory_step(),
            cpu_step: default_cpu_step(),
            hysteresis: default_hysteresis(),
            min_cpu_share: default_min_cpu(),
            settle_rounds: default_settle_rounds(),
            yield_rounds: default_yield_rounds(),
            probe_backoff_max_rounds: default_probe_backoff_max_rounds(),
            thresh_local_bw: None,
            thresh_numa: None,
            tenants: tenants
                .iter()
                .map(|&(n, s, p, a)| MercuryTenantConfig {
                    name: n.into(),
                    slo: s.into(),
                    priority: p,
                    arrive_s: a,
                })
                .collect(),
        }
    }

    fn profile(local_gib: u64) -> Profile {
        Profile {
            admissible: true,
            local_bytes: local_gib * GIB,
            cpu_share: 1.0,
            measured: 0.0,
        }
    }

    const TH: Thresholds = Thresholds {
        local_bw_bytes_per_s: 1e12,
        numa_hint_faults_per_s: 1e9,
    };

    /// Drive the controller with given per-tenant measurements at time `t_s`.
    fn step(m: &mut Mercury, t_s: f64, perf: &[f64], footprints: &[u64]) -> Controls {
        step_with_local(m, t_s, perf, footprints, &[])
    }

    /// [`step`], with each tenant's default-tier bytes (none given: not reported).
    fn step_with_local(
        m: &mut Mercury,
        t_s: f64,
        perf: &[f64],
        footprints: &[u64],
        local: &[u64],
    ) -> Controls {
        let specs: Vec<TenantSpec> = (0..perf.len())
            .map(|i| TenantSpec {
                id: TenantId(i as u16),
                name: m.tenants[i].name.clone(),
                pages: PageRange {
                    start: i as u32 * 1000,
                    len: 1000,
                },
            })
            .collect();
        let tel: Vec<TenantTelemetry> = perf
            .iter()
            .zip(footprints)
            .enumerate()
            .map(|(i, (&p, &f))| TenantTelemetry {
                // Each SLO reads one of these (`Slo::measured`).
                avg_latency_ns: p,
                bandwidth_bytes_per_s: p,
                fault_stall_ms_per_s: p,
                cpu_per_s: p,
                footprint_bytes: f,
                used_bytes: local.get(i).map(|&b| vec![b]).unwrap_or_default(),
                ..Default::default()
            })
            .collect();
        let tiers = [TierTelemetry {
            capacity_bytes: 40 * GIB,
            ..Default::default()
        }];
        let snap = Snapshot {
            now_ns: (t_s * 1e9) as u64,
            quantum_ns: 10_000_000,
            page_bytes: 4096,
            tier_specs: &[],
            tiers: &tiers,
            placement: &[],
            events: &[],
            tenants: &specs,
            controls: &tiermem_core::NO_CONTROLS,
            tenant_telemetry: &tel,
            access_bits: None,
            moved: None,
        };
        m.control(&snap)
    }

    fn limit(c: &Controls, t: u16) -> u64 {
        c.limit(TenantId(t), TierId::DEFAULT).unwrap()
    }

    #[test]
    fn slo_units() {
        assert_eq!(Slo::parse("460ns"), Ok(Slo::LatencyNs(460.0)));
        assert_eq!(Slo::parse("0.5us"), Ok(Slo::LatencyNs(500.0)));
        assert_eq!(Slo::parse("40GB/s"), Ok(Slo::BandwidthBytesPerS(40e9)));
        assert_eq!(Slo::parse("20ms/s"), Ok(Slo::StallMsPerS(20.0)));
        assert_eq!(Slo::parse("0.8cpu"), Ok(Slo::CpuPerS(0.8)));
        assert!(Slo::parse("20ms/s").unwrap().is_latency());
        assert!(!Slo::parse("0.8cpu").unwrap().is_latency());
        assert!(Slo::parse("1000ms/s")
            .unwrap_err()
            .contains("less than 1000ms/s"));
        assert!(Slo::parse("460").unwrap_err().contains("no unit"));
        assert!(Slo::parse("460 furlongs")
            .unwrap_err()
            .contains("unknown unit"));
    }

    #[test]
    fn duplicate_priority_and_missing_unit_name_the_field() {
        let c = cfg(&[("a", "460ns", 2, 0.0), ("b", "40GB/s", 2, 0.0)]);
        let e = c.validate("controller").unwrap_err().to_string();
        assert!(e.contains("controller.tenants[1].priority"), "{e}");
        let c = cfg(&[("a", "460", 2, 0.0)]);
        let e = c.validate("controller").unwrap_err().to_string();
        assert!(
            e.contains("controller.tenants[0].slo") && e.contains("no unit"),
            "{e}"
        );
    }

    #[test]
    fn late_high_priority_tenant_takes_from_the_lowest_priority_first() {
        // Three tenants fill 40 GiB (10 + 10 + 20); a fourth, most important, needs 15.
        let c = cfg(&[
            ("low", "500ns", 1, 0.0),
            ("mid", "500ns", 2, 0.0),
            ("high", "500ns", 3, 0.0),
            ("late", "300ns", 9, 1.0),
        ]);
        let mut m = Mercury::new(
            &c,
            &[profile(10), profile(10), profile(20), profile(15)],
            TH,
        )
        .unwrap();
        let fp = [40 * GIB; 4];
        let ok = [480.0, 480.0, 480.0, 290.0]; // every SLO in band: no adaptation moves
        let c0 = step(&mut m, 0.0, &ok, &fp);
        assert_eq!(
            (limit(&c0, 0), limit(&c0, 1), limit(&c0, 2)),
            (10 * GIB, 10 * GIB, 20 * GIB)
        );
        assert_eq!(limit(&c0, 3), 0, "not arrived yet");
        assert_eq!(c0.cpu_share(TenantId(3)), 0.0);
        let c1 = step(&mut m, 1.0, &ok, &fp);
        // 15 GiB: all 10 of the lowest, then 5 of the next; the highest keeps its 20.
        assert_eq!(limit(&c1, 3), 15 * GIB);
        assert_eq!(limit(&c1, 0), 0);
        assert_eq!(limit(&c1, 1), 5 * GIB);
        assert_eq!(limit(&c1, 2), 20 * GIB);
        let first = m.actions.iter().find(|a| a.kind == "demote").unwrap();
        assert_eq!(first.tenant, "low");
    }

    #[test]
    fn an_inadmissible_tenant_is_rejected_and_nobody_else_changes() {
        let c = cfg(&[
            ("a", "500ns", 1, 0.0),
            ("b", "500ns", 2, 0.0),
            ("c", "100ns", 9, 1.0),
        ]);
        let bad = Profile {
            admissible: false,
            ..profile(40)
        };
        let mut m = Mercury::new(&c, &[profile(15), profile(20), bad], TH).unwrap();
        let fp = [40 * GIB; 3];
        let ok = [480.0, 480.0, 480.0];
        let before = step(&mut m, 0.0, &ok, &fp);
        let after = step(&mut m, 1.0, &ok, &fp);
        assert_eq!(limit(&after, 0), limit(&before, 0));
        assert_eq!(limit(&after, 1), limit(&before, 1));
        assert_eq!(limit(&after, 2), 0);
        assert_eq!(after.cpu_share(TenantId(2)), 0.0);
        assert!(m
            .actions
            .iter()
            .any(|a| a.kind == "reject" && a.tenant == "c"));
        assert!(!m.actions.iter().any(|a| a.kind == "demote"));
    }

    #[test]
    fn an_unsatisfied_ls_tenant_first_cuts_a_lower_bi_tenant_demote_then_cpu() {
        let c = cfg(&[("bi", "40GB/s", 1, 0.0), ("ls", "300ns", 2, 0.0)]);
        let mut m = Mercury::new(&c, &[profile(2), profile(10)], TH).unwrap();
        let fp = [40 * GIB, 20 * GIB];
        step(&mut m, 0.0, &[40e9, 290.0], &fp);
        // LS misses its target; BI is in band. Each 200 ms round takes one step from BI:
        // its 2 GiB (two demotions), then CPU; the LS tenant's own memory is untouched.
        let mut cpu = Vec::new();
        for r in 1..=4 {
            let c = step(&mut m, 0.2 * r as f64, &[40e9, 350.0], &fp);
            cpu.push(c.cpu_share(TenantId(0)));
            assert_eq!(limit(&c, 1), 10 * GIB);
        }
        let bi: Vec<&str> = m
            .actions
            .iter()
            .filter(|a| a.tenant == "bi")
            .map(|a| a.kind)
            .collect();
        assert_eq!(bi, ["admit", "demote", "demote", "cpu_down", "cpu_down"]);
        assert!((cpu[3] - 0.9).abs() < 1e-9, "{cpu:?}");
    }

    #[test]
    fn each_backend_refuses_the_other_ones_slo_units() {
        let sim = cfg(&[("a", "460ns", 2, 0.0), ("b", "40GB/s", 1, 0.0)]);
        let rt = cfg(&[("a", "20ms/s", 2, 0.0), ("b", "0.5cpu", 1, 0.0)]);
        assert!(sim.check_backend("controller", false).is_ok());
        assert!(rt.check_backend("controller", true).is_ok());
        let e = sim
            .check_backend("controller", true)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("controller.tenants[0].slo") && e.contains("no PMU"),
            "{e}"
        );
        let e = rt
            .check_backend("controller", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("controller.tenants[0].slo") && e.contains("460ns"),
            "{e}"
        );
    }

    #[test]
    fn quanta_without_a_measurement_are_left_out_of_the_round() {
        // A runtime LS tenant (stall per second it runs) that idles in one quantum and
        // stalls 30 ms/s in the other: the round judges it on the 30 (over its 20).
        let c = cfg(&[("ls", "20ms/s", 2, 0.0)]);
        let mut m = Mercury::new(&c, &[profile(10)], TH).unwrap();
        let fp = [20 * GIB];
        step(&mut m, 0.0, &[10.0], &fp);
        let before = m.actions.len();
        step(&mut m, 0.1, &[f64::NAN], &fp);
        let c1 = step(&mut m, 0.2, &[30.0], &fp);
        assert_eq!(limit(&c1, 0), 11 * GIB, "{:?}", &m.actions[before..]);
        // A round with no measurement at all leaves it as it is (neither yield nor ask).
        let n = m.actions.len();
        step(&mut m, 0.3, &[f64::NAN], &fp);
        let c2 = step(&mut m, 0.45, &[f64::NAN], &fp);
        assert_eq!(limit(&c2, 0), 11 * GIB);
        assert_eq!(m.actions.len(), n);
    }

    #[test]
    fn a_tenant_yields_only_after_yield_rounds_over_its_slo() {
        let mut c = cfg(&[("ls", "20ms/s", 2, 0.0)]);
        c.yield_rounds = 3;
        c.settle_rounds = 1000; // no lending of free memory in this test
        let mut m = Mercury::new(&c, &[profile(10)], TH).unwrap();
        let fp = [20 * GIB];
        step(&mut m, 0.0, &[19.5], &fp);
        // Over (below 0.95 × 20) twice, in band once, then over three times: one demotion,
        // at the third round of the second run.
        let perf = [5.0, 5.0, 19.5, 5.0, 5.0, 5.0];
        let mut limits = Vec::new();
        for (r, p) in perf.iter().enumerate() {
            let c = step(&mut m, 0.2 * (r + 1) as f64, &[*p], &fp);
            limits.push(limit(&c, 0) / GIB);
        }
        assert_eq!(limits, [10, 10, 10, 10, 10, 9]);
    }

    #[test]
    fn an_ls_tenant_yields_again_only_once_its_last_yield_has_landed() {
        let mut c = cfg(&[("ls", "200ns", 2, 0.0)]);
        c.settle_rounds = 1000; // no lending of free memory in this test
        let mut m = Mercury::new(&c, &[profile(10)], TH).unwrap();
        let fp = [20 * GIB];
        step_with_local(&mut m, 0.0, &[195.0], &fp, &[10 * GIB]);
        // Far under its SLO each round, but the reclaim lags: its pages stay at 10 GiB for
        // three rounds after the first yield, then follow the limit a round behind.
        let local = [10, 10, 10, 10, 9, 8];
        let mut limits = Vec::new();
        for (r, l) in local.iter().enumerate() {
            let c = step_with_local(&mut m, 0.2 * (r + 1) as f64, &[150.0], &fp, &[l * GIB]);
            limits.push(limit(&c, 0) / GIB);
        }
        assert_eq!(limits, [9, 9, 9, 9, 8, 7]);
    }

    /// A BI tenant below its target beside a higher-priority LS tenant that its extra CPU
    /// pushes over its SLO: LS latency = 290 ns + 200 ns per unit of BI CPU above 0.5, BI
    /// bandwidth = 40 GB/s × its CPU. Returns the share of rounds the LS tenant missed and
    /// the rounds at which the BI tenant raised its CPU.
    fn probe_against_a_higher_tenant(backoff_max: u32, rounds: usize) -> (f64, Vec<usize>) {
        let mut c = cfg(&[("bi", "40GB/s", 1, 0.0), ("ls", "300ns", 2, 0.0)]);
        c.probe_backoff_max_rounds = backoff_max;
        let bi = Profile {
            cpu_share: 0.5,
            ..profile(0)
        };
        let mut m = Mercury::new(&c, &[bi, profile(10)], TH).unwrap();
        // No default-tier memory for the BI tenant to take or give: CPU is its only lever.
        let fp = [0, 20 * GIB];
        let mut cpu = step(&mut m, 0.0, &[20e9, 290.0], &fp).cpu_share(TenantId(0));
        let (mut missed, mut raises) = (0, Vec::new());
        for r in 1..=rounds {
            let ls = 290.0 + 200.0 * (cpu - 0.5);
            missed += usize::from(ls > 300.0);
            let next = step(&mut m, 0.2 * r as f64, &[40e9 * cpu, ls], &fp).cpu_share(TenantId(0));
            if next > cpu + 1e-9 {
                raises.push(r);
            }
            cpu = next;
        }
        (missed as f64 / rounds as f64, raises)
    }

    #[test]
    fn a_raise_that_pushes_a_higher_tenant_over_its_slo_backs_off() {
        // Without the back-off the BI tenant raises, the LS tenant misses, the BI tenant is
        // cut, and so on: the LS tenant misses every other round.
        let (without, _) = probe_against_a_higher_tenant(0, 200);
        assert!(without > 0.4, "{without}");
        // With it the holds double (2, 4, ..., 32 rounds): the LS tenant misses rarely, and
        // the BI tenant keeps probing at least every 32 rounds (its load may have changed).
        let (with, raises) = probe_against_a_higher_tenant(32, 200);
        assert!(with < 0.1, "{with}");
        let gaps: Vec<usize> = raises.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(gaps.iter().all(|&g| g <= 32 + 2), "{gaps:?}");
        assert!(gaps.iter().any(|&g| g >= 16), "{gaps:?}");
    }
}
