//! `policy = "toy_demote"`: the example policy of docs/adding-a-policy.md, compiled only with
//! the cargo feature `toy-policy` (the tests of tiermem-sim and tiermem-cli enable it).
//!
//! Every quantum it demotes the first `pages_per_quantum` pages (lowest page index first)
//! of the default tier to the next tier, in moves of `granularity` (a naturally aligned
//! range moves when all of it is in the default tier). With `round_trip`, every other
//! quantum promotes them back instead. It needs no tracker: it is the smallest policy
//! that moves pages, which makes it a test that a policy added the documented way (this
//! file, one line in the registry) runs through the same config path as the others, and
//! that a range move is one operation on both backends.

use crate::heat::{ms_to_ns, pages_in, FAST};
use crate::registry::{PolicyEntry, PolicyParams};
use crate::BuildContext;
use serde::{Deserialize, Serialize};
use tiermem_core::config::{check_range, invalid, join, Validate};
use tiermem_core::{
    Move, Needs, PageRange, Plan, Policy, Result, Size, Snapshot, TierId, TrackerSpec,
};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToyDemoteConfig {
    /// Pages demoted each quantum.
    #[serde(default = "d_pages")]
    pub pages_per_quantum: u64,
    /// How often it runs.
    #[serde(default = "d_quantum_ms")]
    pub quantum_ms: f64,
    /// Bytes per move: a power of two, at least one page.
    #[serde(default = "d_granularity")]
    pub granularity: Size,
    /// Odd quanta promote back what even ones demoted.
    #[serde(default)]
    pub round_trip: bool,
}

fn d_pages() -> u64 {
    16
}
fn d_quantum_ms() -> f64 {
    100.0
}
fn d_granularity() -> Size {
    Size::text("4KiB")
}
/// The smallest page any backend has.
const MIN_PAGE_BYTES: u64 = 4096;

impl Default for ToyDemoteConfig {
    fn default() -> Self {
        ToyDemoteConfig {
            pages_per_quantum: d_pages(),
            quantum_ms: d_quantum_ms(),
            granularity: d_granularity(),
            round_trip: false,
        }
    }
}

impl Validate for ToyDemoteConfig {
    fn validate(&self, p: &str) -> Result<()> {
        check_range(
            &join(p, "pages_per_quantum"),
            self.pages_per_quantum as f64,
            1.0,
            1e9,
        )?;
        check_range(&join(p, "quantum_ms"), self.quantum_ms, 0.001, 3_600_000.0)?;
        let path = join(p, "granularity");
        let g = self.granularity.bytes(&path)?;
        if Move::granularity_pages(g, MIN_PAGE_BYTES).is_none() {
            return Err(invalid(
                &path,
                format!("{g} bytes is not a power of two of at least 4KiB; write e.g. \"64KiB\" or \"2MiB\""),
            ));
        }
        Ok(())
    }
}

pub static ENTRY: PolicyEntry = PolicyEntry::new::<ToyDemoteConfig>(
    "toy_demote",
    "Example policy (feature `toy-policy`): demotes the first pages_per_quantum pages of the default tier each quantum; no tracker",
    r#"[policy]
policy = "toy_demote"
pages_per_quantum = 16                # pages demoted each quantum
quantum_ms = 100.0                    # how often
granularity = "4KiB"                  # bytes per move (a power of two, >= one page)
round_trip = false                    # odd quanta promote back what even ones demoted
"#,
);

impl PolicyParams for ToyDemoteConfig {
    fn build(&self, ctx: BuildContext) -> Box<dyn Policy> {
        let page = ctx.page_bytes.unwrap_or(MIN_PAGE_BYTES);
        let bytes = self.granularity.bytes("policy.granularity").unwrap_or(page);
        Box::new(ToyDemote {
            cfg: self.clone(),
            granularity_bytes: bytes.max(page),
            pages_per_move: Move::granularity_pages(bytes.max(page), page).unwrap_or(1),
            quanta: 0,
        })
    }
}

pub struct ToyDemote {
    cfg: ToyDemoteConfig,
    granularity_bytes: u64,
    pages_per_move: u32,
    quanta: u64,
}

impl Policy for ToyDemote {
    fn name(&self) -> String {
        ENTRY.name.into()
    }
    fn tracker(&self) -> TrackerSpec {
        TrackerSpec::None
    }
    fn needs(&self) -> Needs {
        Needs {
            granularity_bytes: self.granularity_bytes,
            ..Needs::tracking(&self.tracker())
        }
    }
    fn quantum_ns(&self) -> u64 {
        ms_to_ns(self.cfg.quantum_ms)
    }
    fn decide(&mut self, snap: &Snapshot<'_>) -> Plan {
        let mut plan = Plan::default();
        if snap.tiers.len() < 2 {
            return plan;
        }
        let back = self.cfg.round_trip && self.quanta % 2 == 1;
        self.quanta += 1;
        let (from, to) = if back {
            (TierId(1), FAST)
        } else {
            (FAST, TierId(1))
        };
        let g = self.pages_per_move as usize;
        let mut left = self.cfg.pages_per_quantum as usize;
        if g == 1 && !back {
            for page in pages_in(snap, FAST).take(left) {
                plan.push(page, to);
            }
            return plan;
        }
        for (k, range) in snap.placement.chunks_exact(g).enumerate() {
            if left < g {
                break;
            }
            if range.iter().all(|&t| t == from) {
                let start = (k * g) as u32;
                plan.push_range(
                    PageRange {
                        start,
                        len: g as u32,
                    },
                    to,
                );
                left -= g;
            }
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heat::testutil::{moved_to, World};

    #[test]
    fn demotes_the_first_pages_of_the_default_tier() {
        let mut w = World::new(10, 6, 10, 10);
        let cfg =
            crate::PolicyConfig::from_name("toy_demote", toml::toml! { pages_per_quantum = 4 })
                .unwrap();
        let mut p = crate::build(&cfg).unwrap();
        assert_eq!(p.name(), "toy_demote");
        let plan = p.decide(&w.snap());
        assert_eq!(moved_to(&plan, TierId(1)), [0, 1, 2, 3]);
        w.apply(&plan);
        // Only pages 4 and 5 are left in the default tier.
        assert_eq!(moved_to(&p.decide(&w.snap()), TierId(1)), [4, 5]);
    }

    #[test]
    fn moves_whole_aligned_ranges_and_round_trips() {
        // 10 pages in the default tier, 4-page moves: ranges [0,4) and [4,8) move, 8..10
        // is not a whole range.
        let mut w = World::new(10, 10, 10, 10);
        let cfg = crate::PolicyConfig::from_name(
            "toy_demote",
            toml::toml! { pages_per_quantum = 100
            granularity = "16KiB"
            round_trip = true },
        )
        .unwrap();
        let mut p = crate::build_with(
            &cfg,
            None,
            BuildContext {
                page_bytes: Some(4096),
            },
        )
        .unwrap();
        assert_eq!(p.needs().granularity_bytes, 16384);
        let plan = p.decide(&w.snap());
        let ranges: Vec<(u32, u32)> = plan
            .moves
            .iter()
            .map(|m| (m.range.start, m.range.len))
            .collect();
        assert_eq!(ranges, [(0, 4), (4, 4)]);
        assert!(plan
            .moves
            .iter()
            .all(|m| m.to == TierId(1) && m.is_aligned()));
        w.apply(&plan);
        let back = p.decide(&w.snap());
        assert_eq!(back.moves.len(), 2);
        assert!(back.moves.iter().all(|m| m.to == FAST), "{back:?}");
    }

    #[test]
    fn a_granularity_that_is_not_a_power_of_two_is_refused_by_name() {
        let e = crate::PolicyConfig::from_name("toy_demote", toml::toml! { granularity = "12KiB" })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("granularity") && e.contains("power of two"),
            "{e}"
        );
    }
}
