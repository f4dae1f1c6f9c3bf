//! tiermem core: the engine loop and the seams between policies and backends.
//!
//! Nothing here does I/O or knows how memory is moved. A [`Backend`] (the simulator,
//! the Linux runtime) observes its address space into a [`Snapshot`]; a [`Policy`]
//! turns the snapshot into a [`Plan`]; the backend applies the plan. The pattern is
//! DAMON's core vs. operations split (mm/damon/core.c vs vaddr.c).

pub mod capability;
pub mod config;
pub mod engine;
pub mod error;
pub mod plan;
pub mod snapshot;
pub mod tco;
pub mod tenant;
pub mod tier;
pub mod tracker;
pub mod units;

pub use capability::{Capabilities, Needs, Provision, TelemetryKind, TrackerKind};
pub use engine::{Backend, Controller, Engine, EngineCounters, Policy};
pub use error::{Error, ErrorKind, Result};
pub use plan::{Applied, Controls, CpuShare, Move, Plan, TierLimit, NO_CONTROLS};
pub use snapshot::{CoreCounters, HeatEvent, Snapshot, TenantTelemetry, TierTelemetry};
pub use tenant::{TenantId, TenantSpec};
pub use tier::{TierBackend, TierConfig, TierId, TierKind, TierSpec};
pub use tracker::{AccessBits, Tracker, TrackerSpec, TrackerView};
pub use units::*;
