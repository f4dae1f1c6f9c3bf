//! The simulated tiered-memory machine: tiers with loaded-latency curves, cores with
//! bounded memory-level parallelism, antagonists, trackers, workloads, and a [`Backend`]
//! implementation driven by a virtual clock.

pub mod backend;
pub mod compressed;
pub mod config;
pub mod flat_backend;
pub mod flat_memory;
pub mod ics18;
pub mod latency;
pub mod machine;
pub mod measured_tiers;
pub mod memstrata;
pub mod mercury;
pub mod output;
pub mod overrides;
pub mod reproduce;
pub mod reproduce_memstrata;
pub mod reproduce_mercury;
pub mod reproduce_tierscape;
pub mod runner;
pub mod tracker;
pub mod workload;
pub use output::{simulate_toml, Column, SimOutput};
