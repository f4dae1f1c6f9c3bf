//! One tier schema for the simulator and the runtime, one unit convention, and every
//! shipped config decoding (and round-tripping) under it.

use std::path::{Path, PathBuf};
use tiermem_core::tier::{validate_tiers, TierBackend, TierConfig, TierKind};
use tiermem_linux::config::{RuntimeConfig, RuntimeFile};
use tiermem_sim::config::SimConfig;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A tier table: dram + node with the simulator's physics.
const TIERS: &str = r#"name = "local"
kind = "dram"
capacity = "32GiB"
unloaded_latency_ns = 70
peak_bandwidth_gbps = 205
cost_per_gb = 1.0
"#;
const COMPRESSED: &str = r#"name = "zstd"
kind = "compressed"
codec = "zstd:3"
allocator = "z3fold"
backing = "local"
max_compressed = "3KiB"
cost_per_gb = 0.3
"#;

fn sim_with_tiers(tiers: &[&str]) -> String {
    let base = tiermem_sim::reproduce::COLLOID_GUPS_BASE;
    let start = base.find("[[machine.tiers]]").unwrap();
    let end = base.find("[workload]").unwrap();
    let mut t = String::new();
    for x in tiers {
        t += "[[machine.tiers]]\n";
        t += x;
    }
    format!("{}{t}\n{}", &base[..start], &base[end..])
}

fn runtime_with_tiers(tiers: &[&str]) -> String {
    let mut t = String::from("[runtime]\n");
    for x in tiers {
        t += "[[runtime.tiers]]\n";
        t += x;
    }
    t
}

fn sim_tiers(text: &str) -> tiermem_core::Result<Vec<TierConfig>> {
    SimConfig::from_toml(text, "sim.toml").map(|c| c.machine.tiers)
}

fn runtime_tiers(text: &str) -> tiermem_core::Result<Vec<TierConfig>> {
    let f: RuntimeFile = tiermem_core::config::from_toml_str(text, "rt.toml")?;
    use tiermem_core::config::Validate;
    f.runtime.validate("runtime")?;
    Ok(f.runtime.tiers)
}

#[test]
fn the_same_tier_table_parses_in_a_sim_and_a_runtime_config() {
    // The simulator's DRAM tier, with its curve, and a compressed tier backed by it: both
    // configs decode the same TierConfig values.
    let dram_sim = format!("{TIERS}curve = \"colloid-local\"\nwrite_cost = 1.75\n");
    let node = "name = \"cxl0\"\nkind = \"node\"\nnode = 1\ncapacity = \"96GiB\"\nunloaded_latency_ns = 135\npeak_bandwidth_gbps = 150\ncurve = \"colloid-remote\"\n";
    let s = sim_tiers(&sim_with_tiers(&[&dram_sim, node])).unwrap();
    assert_eq!(s[1].spec(0).kind, TierKind::Node { node: Some(1) });
    // The same dram table (without the simulator-only physics) in the runtime.
    let r = runtime_tiers(&runtime_with_tiers(&[TIERS, COMPRESSED])).unwrap();
    let s_plain = sim_tiers(&sim_with_tiers(&[&dram_sim, node])).unwrap();
    let mut s0 = s_plain[0].clone();
    s0.curve = None;
    s0.write_cost = None;
    assert_eq!(r[0], s0);
    assert_eq!(r[0].spec(7).peak_bandwidth_bytes_per_s, 205e9);
    // The runtime's DRAM capacity is its budget; the compressed tier realised.
    let f: RuntimeFile =
        tiermem_core::config::from_toml_str(&runtime_with_tiers(&[TIERS, COMPRESSED]), "rt.toml")
            .unwrap();
    assert_eq!(
        f.runtime.budget(),
        tiermem_linux::config::Budget::Bytes(32 << 30)
    );
    let c = &f.runtime.compressed_tiers().unwrap()[0];
    assert_eq!(
        (
            c.codec.name(),
            c.allocator.name(),
            c.backing,
            c.max_compressed_bytes
        ),
        (
            "zstd:3".to_string(),
            "z3fold",
            tiermem_linux::pool::Backing::Memory,
            3072
        )
    );
    // One decode, two validations: the same Vec<TierConfig> under both backends.
    let both: Vec<TierConfig> = vec![r[0].clone(), r[1].clone()];
    validate_tiers(&both, "runtime.tiers", TierBackend::Runtime).unwrap();
    let e = validate_tiers(&both, "machine.tiers", TierBackend::Sim)
        .unwrap_err()
        .to_string();
    assert!(e.contains("machine.tiers[0].curve"), "{e}");
}

fn err(r: tiermem_core::Result<Vec<TierConfig>>) -> String {
    r.expect_err("must be rejected").to_string()
}

#[test]
fn kind_field_and_backend_mismatches_name_the_path_and_the_fix() {
    let dram_sim = format!("{TIERS}curve = \"colloid-local\"\n");
    let cases: Vec<(String, &str, &str)> = vec![
        // A compressed tier in the simulator: its pool's size is required, its physics
        // come from its codec.
        (
            sim_with_tiers(&[&dram_sim, COMPRESSED]),
            "machine.tiers[1].capacity",
            "pool",
        ),
        (
            sim_with_tiers(&[
                &dram_sim,
                &format!("{COMPRESSED}capacity = \"1GiB\"\ncurve = \"flat\"\n"),
            ]),
            "machine.tiers[1].curve",
            "decompression",
        ),
        // A codec on a dram tier.
        (
            sim_with_tiers(&[&format!("{dram_sim}codec = \"lz4\"\n")]),
            "machine.tiers[0].codec",
            "kind = \"compressed\"",
        ),
        // A node number on a dram tier.
        (
            sim_with_tiers(&[&format!("{dram_sim}node = 0\n")]),
            "machine.tiers[0].node",
            "kind = \"node\"",
        ),
        // Simulator physics in a runtime config.
        (
            runtime_with_tiers(&[&dram_sim, COMPRESSED]),
            "runtime.tiers[0].curve",
            "simulator",
        ),
        (
            runtime_with_tiers(&[TIERS, &format!("{COMPRESSED}write_cost = 2.0\n")]),
            "runtime.tiers[1].write_cost",
            "simulator",
        ),
        // A node tier in the runtime names its NUMA node.
        (
            runtime_with_tiers(&[TIERS, "name = \"n\"\nkind = \"node\"\n", COMPRESSED]),
            "runtime.tiers[1].node",
            "missing",
        ),
        // A bounded compressed tier in the runtime.
        (
            runtime_with_tiers(&[TIERS, &format!("{COMPRESSED}capacity = \"1GiB\"\n")]),
            "runtime.tiers[1].capacity",
            "unlimited",
        ),
        // The runtime's first tier is its DRAM.
        (
            runtime_with_tiers(&[COMPRESSED]),
            "runtime.tiers[0].kind",
            "dram",
        ),
        // A pool backed by a compressed tier.
        (
            runtime_with_tiers(&[
                TIERS,
                COMPRESSED,
                &COMPRESSED
                    .replace("\"zstd\"", "\"z2\"")
                    .replace("\"local\"", "\"zstd\""),
            ]),
            "runtime.tiers[2].backing",
            "memory tier",
        ),
        // Duplicate names.
        (
            runtime_with_tiers(&[
                TIERS,
                &COMPRESSED.replace("\"zstd\"\nkind", "\"local\"\nkind"),
            ]),
            "runtime.tiers[1].name",
            "already",
        ),
        // The simulator needs its physics.
        (
            sim_with_tiers(&[TIERS]),
            "machine.tiers[0].curve",
            "missing",
        ),
    ];
    for (text, path, word) in cases {
        let e = error_for(&text);
        assert!(
            e.contains(&format!("`{path}`")) && e.contains(word),
            "{path}: {e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn old_spellings_are_errors_that_name_the_new_field() {
    let dram_sim = format!("{TIERS}curve = \"colloid-local\"\n");
    let cases: Vec<(String, &str, &str)> = vec![
        (
            sim_with_tiers(&[&dram_sim.replace("kind = \"dram\"", "kind = \"cxl\"")]),
            "machine.tiers[0].kind",
            "kind = \"node\"",
        ),
        (
            sim_with_tiers(&[&dram_sim.replace("peak_bandwidth_gbps", "peak_bandwidth")]),
            "machine.tiers[0]",
            "`peak_bandwidth_gbps`",
        ),
        (
            runtime_with_tiers(&[
                TIERS,
                &COMPRESSED.replace("max_compressed = \"3KiB\"", "max_compressed_bytes = 3072"),
            ]),
            "runtime.tiers[1]",
            "`max_compressed`",
        ),
        (
            runtime_with_tiers(&[TIERS, &COMPRESSED.replace("\"local\"", "\"memory\"")]),
            "runtime.tiers[1].backing",
            "\"dram\"",
        ),
        (
            tiermem_sim::reproduce::COLLOID_GUPS_BASE.replace(
                "policy = \"hemem\"",
                "policy = \"hemem\"\nmigration_limit_mib_per_s = 4000",
            ),
            "policy",
            "`migration_limit_gbps`",
        ),
        (
            tiermem_sim::reproduce::COLLOID_GUPS_BASE.replace(
                "policy = \"hemem\"",
                "policy = \"tpp\"\npromote_rate_limit_mib_per_s = 4000",
            ),
            "policy",
            "`promote_rate_limit_gbps`",
        ),
    ];
    for (text, path, word) in cases {
        let e = error_for(&text);
        assert!(
            e.contains(&format!("`{path}")) && e.contains(word),
            "{path}: {e}"
        );
    }
}

/// A `tiermem sweep` file (a base config plus a top-level `[grid]`), not a simulation
/// config; tests/python/test_workbench.py checks those.
fn is_sweep_file(p: &Path) -> bool {
    let text = std::fs::read_to_string(p).unwrap();
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("grid"))
}

/// A `tiermem qos` file (a top-level `[qos]`): several programs under Mercury on the
/// runtime, not a simulation; `every_shipped_qos_config_is_valid` checks those.
fn is_qos_file(p: &Path) -> bool {
    let text = std::fs::read_to_string(p).unwrap();
    text.parse::<toml::Table>()
        .is_ok_and(|t| t.contains_key("qos"))
}

#[test]
fn every_shipped_qos_config_is_valid() {
    let mut n = 0;
    for d in ["examples", "experiments"] {
        for e in walkdir(&root().join(d)) {
            if e.extension().is_some_and(|x| x == "toml") && is_qos_file(&e) {
                tiermem_linux::qos::QosFile::load(&e).unwrap_or_else(|err| panic!("{err}"));
                n += 1;
            }
        }
    }
    assert!(n >= 1, "examples/qos/redis-stream.toml at least");
}

fn walkdir(d: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn shipped_sim_configs() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = ["experiments", "examples"]
        .iter()
        .flat_map(|d| walkdir(&root().join(d)))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "toml")
                && !is_sweep_file(p)
                && !is_qos_file(p)
                && !is_config_part(p)
        })
        .collect();
    out.sort();
    out
}

/// Parts a reproduction merges into a base config, not configs: a list of applications
/// (`[[app]]` entries: experiments/ics18/workloads.toml, colloid/fig11-apps.toml) or a set of
/// tiers alone (colloid/three-tiers.toml). The reproductions' own tests build them.
fn is_config_part(p: &Path) -> bool {
    let v: toml::Value = toml::from_str(&std::fs::read_to_string(p).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let t = v.as_table().unwrap();
    let tiers_only = t.len() == 1
        && t.get("machine")
            .and_then(|m| m.as_table())
            .is_some_and(|m| m.len() == 1 && m.contains_key("tiers"));
    tiers_only || t.contains_key("app")
}

#[test]
fn every_shipped_config_round_trips() {
    let files = shipped_sim_configs();
    assert!(files.len() >= 2, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let origin = f.display().to_string();
        let a = SimConfig::from_toml(&text, &origin).unwrap_or_else(|e| panic!("{e}"));
        let again = toml::to_string(&a).unwrap();
        let b = SimConfig::from_toml(&again, &origin).unwrap_or_else(|e| panic!("{e}\n{again}"));
        assert_eq!(toml::to_string(&b).unwrap(), again, "{origin}");
        assert_eq!(a.machine.tiers, b.machine.tiers, "{origin}");
    }
    // The runtime config documented in docs/runtime.md, and the defaults.
    let doc = std::fs::read_to_string(root().join("docs/runtime.md")).unwrap();
    let start = doc
        .find("```toml\n[runtime]")
        .expect("runtime config block")
        + 8;
    let block = &doc[start..start + doc[start..].find("```").unwrap()];
    let f: RuntimeFile = tiermem_core::config::from_toml_str(block, "docs/runtime.md").unwrap();
    use tiermem_core::config::Validate;
    f.runtime.validate("runtime").unwrap();
    let json = serde_json::to_string(&f.runtime).unwrap();
    let back: RuntimeConfig = serde_json::from_str(&json).unwrap();
    back.validate("runtime").unwrap();
    assert_eq!(back.tiers, f.runtime.tiers);
    let t = toml::to_string(&RuntimeFile::default()).unwrap();
    let d: RuntimeFile = tiermem_core::config::from_toml_str(&t, "defaults").unwrap();
    d.runtime.validate("runtime").unwrap();
    // The policies' documented defaults.
    for e in tiermem_policies::REGISTRY {
        let v: toml::Value = toml::from_str(e.defaults_toml).unwrap();
        let p = tiermem_policies::PolicyConfig::from_value(v["policy"].clone())
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        p.validate("policy").unwrap();
    }
}

/// The error a runtime (`[runtime]`-first) or simulator config text gives.
fn error_for(text: &str) -> String {
    if text.starts_with("[runtime]") {
        err(runtime_tiers(text))
    } else {
        err(sim_tiers(text))
    }
}
