//! Backend capabilities and policy needs, checked when the engine starts.
//!
//! A backend says what it can give (trackers, per-tier telemetry, move granularities,
//! tenants, controls) and how (natively, or emulated — named so in the output); a policy or
//! controller says what it needs. [`Capabilities::check`] refuses a mismatch with one line
//! naming the policy, the missing capability and what the backend offers instead, so a
//! policy never runs half-blind (before this, HeMem on the runtime quit its manager and
//! left the program untiered without a word).

use crate::error::{Error, ErrorKind, Result};
use crate::tracker::TrackerSpec;
use serde::{Deserialize, Serialize};

/// How hotness is seen (the variants of [`TrackerSpec`] without their parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrackerKind {
    /// PEBS-like sampling of memory accesses.
    Pebs,
    /// NUMA-balancing hint faults (time to fault after unmapping).
    HintFault,
    /// Access-bit scanning.
    AccessBit,
}

impl TrackerKind {
    pub fn label(self) -> &'static str {
        match self {
            TrackerKind::Pebs => "PEBS sampling",
            TrackerKind::HintFault => "hint-fault sampling",
            TrackerKind::AccessBit => "access-bit scanning",
        }
    }
    /// Every kind a tracker spec uses (a combined tracker uses several).
    pub fn of(spec: &TrackerSpec) -> Vec<TrackerKind> {
        match spec {
            TrackerSpec::Pebs { .. } => vec![TrackerKind::Pebs],
            TrackerSpec::HintFault { .. } => vec![TrackerKind::HintFault],
            TrackerSpec::AccessBit { .. } | TrackerSpec::AccessBitScan => {
                vec![TrackerKind::AccessBit]
            }
            TrackerSpec::Combined(v) => {
                let mut out: Vec<TrackerKind> = v.iter().flat_map(TrackerKind::of).collect();
                out.dedup();
                out
            }
            TrackerSpec::None => Vec::new(),
        }
    }
}

/// Per-tier measurements beyond capacity and usage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TelemetryKind {
    /// Per-tier loaded latency: occupancy and arrival rate (Little's law), as Colloid reads
    /// from CHA counters.
    LoadedLatency,
    /// Per-tier fault counts and service times (compressed tiers).
    FaultRate,
    /// Per-tenant core counters (L2/L3 miss latency and MPKI, DTLB miss latency).
    CoreCounters,
}

impl TelemetryKind {
    pub fn label(self) -> &'static str {
        match self {
            TelemetryKind::LoadedLatency => "per-tier loaded latency",
            TelemetryKind::FaultRate => "per-tier fault rate",
            TelemetryKind::CoreCounters => "per-tenant core counters",
        }
    }
}

/// How a backend provides something.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Provision {
    /// As the hardware (or the model of it) gives it.
    Native,
    /// Emulated from something else; the text says from what (shown in `tiermem stat`).
    Emulated(String),
}

/// What a backend can give. Built by the backend; checked by the engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// "simulator", "linux runtime".
    pub backend: String,
    pub trackers: Vec<(TrackerKind, Provision)>,
    pub telemetry: Vec<(TelemetryKind, Provision)>,
    /// Largest move it applies as one operation (a power of two, ≥ the page size).
    pub max_granularity_bytes: u64,
    pub max_tenants: usize,
    /// Whether it enforces per-tenant per-tier memory limits / per-tenant CPU shares.
    pub tier_limits: bool,
    pub cpu_shares: bool,
}

/// What a policy or controller needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Needs {
    pub trackers: Vec<TrackerKind>,
    pub telemetry: Vec<TelemetryKind>,
    /// Largest move it plans; 0 = one page.
    pub granularity_bytes: u64,
    /// Tenants it must see at least (a cross-tenant controller: 1 is fine too).
    pub tenants: usize,
    pub tier_limits: bool,
    pub cpu_shares: bool,
}

impl Needs {
    /// The needs of a policy that only needs its tracker.
    pub fn tracking(spec: &TrackerSpec) -> Needs {
        Needs {
            trackers: TrackerKind::of(spec),
            ..Needs::default()
        }
    }
}

impl Capabilities {
    pub fn tracker(&self, k: TrackerKind) -> Option<&Provision> {
        self.trackers.iter().find(|(t, _)| *t == k).map(|(_, p)| p)
    }
    pub fn telemetry_of(&self, k: TelemetryKind) -> Option<&Provision> {
        self.telemetry.iter().find(|(t, _)| *t == k).map(|(_, p)| p)
    }

    /// How a tracker spec is realised here, for the user ("hint-fault sampling";
    /// "PEBS sampling (emulated from hint-fault samples)").
    pub fn describe_tracker(&self, spec: &TrackerSpec) -> String {
        let kinds = TrackerKind::of(spec);
        if kinds.is_empty() {
            return "none".into();
        }
        kinds
            .iter()
            .map(|k| match self.tracker(*k) {
                Some(Provision::Emulated(how)) => format!("{} (emulated: {how})", k.label()),
                _ => k.label().to_string(),
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// Everything `needs` asks for that this backend lacks, one phrase each.
    pub fn missing(&self, needs: &Needs) -> Vec<String> {
        let mut out = Vec::new();
        for k in &needs.trackers {
            if self.tracker(*k).is_none() {
                out.push(format!("{} (tracker)", k.label()));
            }
        }
        for k in &needs.telemetry {
            if self.telemetry_of(*k).is_none() {
                out.push(k.label().to_string());
            }
        }
        if needs.granularity_bytes > self.max_granularity_bytes {
            out.push(format!(
                "moves of {} bytes as one operation (at most {} here)",
                needs.granularity_bytes, self.max_granularity_bytes
            ));
        }
        if needs.tenants > self.max_tenants {
            out.push(format!(
                "{} tenants (at most {} here)",
                needs.tenants, self.max_tenants
            ));
        }
        if needs.tier_limits && !self.tier_limits {
            out.push("per-tenant per-tier memory limits".into());
        }
        if needs.cpu_shares && !self.cpu_shares {
            out.push("per-tenant CPU shares".into());
        }
        out
    }

    /// What it offers, for error messages.
    pub fn offers(&self) -> String {
        let mut parts: Vec<String> = self
            .trackers
            .iter()
            .map(|(k, p)| match p {
                Provision::Native => k.label().to_string(),
                Provision::Emulated(how) => format!("{} (emulated: {how})", k.label()),
            })
            .collect();
        parts.extend(self.telemetry.iter().map(|(k, _)| k.label().to_string()));
        if parts.is_empty() {
            "no trackers and no telemetry".into()
        } else {
            parts.join(", ")
        }
    }

    /// Refuse `who` (a policy or controller name) if this backend cannot give what it needs.
    pub fn check(&self, who: &str, needs: &Needs) -> Result<()> {
        let missing = self.missing(needs);
        if missing.is_empty() {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "`{who}` needs {}, which the {} does not provide (it provides: {})",
                missing.join(" and "),
                self.backend,
                self.offers()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> Capabilities {
        Capabilities {
            backend: "test backend".into(),
            trackers: vec![
                (TrackerKind::HintFault, Provision::Native),
                (
                    TrackerKind::Pebs,
                    Provision::Emulated("hint-fault samples".into()),
                ),
            ],
            telemetry: vec![(TelemetryKind::FaultRate, Provision::Native)],
            max_granularity_bytes: 2 << 20,
            max_tenants: 1,
            tier_limits: false,
            cpu_shares: false,
        }
    }

    #[test]
    fn refuses_with_one_line_naming_what_is_missing() {
        let needs = Needs {
            trackers: vec![TrackerKind::AccessBit],
            telemetry: vec![TelemetryKind::LoadedLatency],
            ..Needs::default()
        };
        let e = caps().check("toy+colloid", &needs).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unsupported);
        let m = e.to_string();
        assert!(!m.contains('\n'), "{m}");
        for part in [
            "toy+colloid",
            "access-bit scanning",
            "per-tier loaded latency",
            "test backend",
            "hint-fault sampling",
        ] {
            assert!(m.contains(part), "{part} missing in: {m}");
        }
        assert!(caps()
            .check(
                "ok",
                &Needs::tracking(&TrackerSpec::Pebs { sample_period: 1 })
            )
            .is_ok());
        let many = Needs {
            tenants: 3,
            cpu_shares: true,
            granularity_bytes: 1 << 30,
            ..Needs::default()
        };
        let m = caps().check("mercury", &many).unwrap_err().to_string();
        assert!(m.contains("3 tenants") && m.contains("CPU shares") && m.contains("1073741824"));
    }

    #[test]
    fn describes_emulation() {
        let c = caps();
        assert_eq!(
            c.describe_tracker(&TrackerSpec::Pebs { sample_period: 7 }),
            "PEBS sampling (emulated: hint-fault samples)"
        );
        assert_eq!(c.describe_tracker(&TrackerSpec::None), "none");
    }
}
