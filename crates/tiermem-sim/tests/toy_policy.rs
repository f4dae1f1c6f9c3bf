//! A policy added the documented way (docs/adding-a-policy.md: one file, one registry line)
//! runs end to end through the ordinary config path. `toy_demote` is registered when
//! tiermem-policies has its `toy-policy` feature, which this crate's dev-dependencies turn
//! on.

use tiermem_core::TierId;
use tiermem_policies::toy_demote::ToyDemoteConfig;
use tiermem_sim::backend::SimBackend;
use tiermem_sim::reproduce::{config_with, COLLOID_GUPS_BASE};

#[test]
fn the_toy_policy_moves_pages_through_the_ordinary_config_path() {
    // The `[policy]` section replaced as a config file or `--set policy=...` would.
    let policy: toml::Table =
        toml::from_str("policy = \"toy_demote\"\npages_per_quantum = 8").unwrap();
    let cfg = config_with(
        COLLOID_GUPS_BASE,
        "gups-base",
        &[
            ("scale", toml::Value::Float(1.0 / 64.0)),
            ("duration_s", toml::Value::Float(2.0)),
            ("policy", toml::Value::Table(policy)),
        ],
    )
    .unwrap();
    assert_eq!(cfg.policy.name(), "toy_demote");
    let toy: &ToyDemoteConfig = cfg.policy.params().unwrap();
    assert_eq!((toy.pages_per_quantum, toy.quantum_ms), (8, 100.0));

    let before = SimBackend::new(&cfg).unwrap();
    let fast_before: Vec<usize> = (0..before.placement().len())
        .filter(|&p| before.placement()[p] == TierId(0))
        .collect();
    let run = tiermem_sim::runner::run(&cfg).unwrap();
    assert_eq!(run.policy, "toy_demote");

    // Every quantum asked for 8 pages, and the model moved all of them: the first pages of
    // the default tier, now in tier 1, and nothing else.
    let applied = &run.counters.applied;
    let quanta = run.counters.quanta;
    assert!(quanta >= 10, "{quanta} quanta");
    assert!(
        (quanta * 8) < fast_before.len() as u64,
        "the default tier must outlast the run"
    );
    assert_eq!(applied.pages_tried, quanta * 8);
    assert_eq!(applied.pages_applied, quanta * 8);
    let after = run.backend.placement();
    let (moved, stayed) = fast_before.split_at(applied.pages_applied as usize);
    assert!(moved.iter().all(|&p| after[p] == TierId(1)));
    assert!(stayed.iter().all(|&p| after[p] == TierId(0)));
    assert_eq!(
        before.used_pages()[0] - run.backend.used_pages()[0],
        applied.pages_applied
    );
}
