//! `tiermem qos` end to end: bad configs are refused before anything starts, and two real
//! programs run under Mercury with their DRAM limits and CPU shares enforced, outputs
//! verified, cgroups removed afterwards.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and no memory effects.
    unsafe { libc::geteuid() == 0 }
}

fn example(name: &str) -> String {
    workspace_root()
        .join("examples/qos")
        .join(name)
        .display()
        .to_string()
}

/// This run's cgroup directories (`tiermem-qos.*`) under the cpu hierarchy.
fn qos_cgroups() -> Vec<PathBuf> {
    let mut v = Vec::new();
    for base in ["/sys/fs/cgroup/cpu", "/sys/fs/cgroup"] {
        if let Ok(rd) = std::fs::read_dir(base) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with("tiermem-qos.") {
                    v.push(e.path());
                }
            }
        }
    }
    v
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("qos.toml");
    std::fs::write(&p, text).unwrap();
    p
}

const TWO_TENANTS: &str = r#"
[qos]
dram = "48M"
report_s = 0
cpu_limits = CPU_LIMITS

[controller]
controller = "mercury"
memory_step = "4M"
yield_rounds = 1000

[[controller.tenants]]
name = "ls"
slo = "SLO_LS"
priority = 2

[[controller.tenants]]
name = "bi"
slo = "0.9cpu"
priority = 1

[[tenants]]
name = "ls"
command = ["python3", "TOUCH", "40", "6"]

[[tenants]]
name = "bi"
command = ["python3", "STREAM", "48"]
"#;

fn two_tenants(slo_ls: &str, cpu_limits: bool) -> String {
    TWO_TENANTS
        .replace("SLO_LS", slo_ls)
        .replace("CPU_LIMITS", if cpu_limits { "true" } else { "false" })
        .replace("TOUCH", &example("random_touch.py"))
        .replace("STREAM", &example("stream.py"))
}

#[test]
fn bad_configs_exit_2_naming_the_field_and_start_nothing() {
    let dir = std::env::temp_dir().join(format!("tiermem-qos-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("started");
    // A tenant that would leave a marker if anything were started.
    let good = two_tenants("20ms/s", false).replace(
        "[[tenants]]\nname = \"bi\"\ncommand = [\"python3\", ",
        &format!(
            "[[tenants]]\nname = \"bi\"\ncommand = [\"sh\", \"-c\", \"touch {}\", ",
            marker.display()
        ),
    );
    assert!(good.contains("touch"), "the marker tenant is in the config");
    let cases: Vec<(String, &str)> = vec![
        (
            good.replace("priority = 1", "priority = 2"),
            "controller.tenants[1].priority",
        ),
        (
            good.replace("\"0.9cpu\"", "\"0.9\""),
            "controller.tenants[1].slo",
        ),
        (
            good.replace("\"20ms/s\"", "\"460ns\""),
            "controller.tenants[0].slo",
        ),
        (
            good.replace("[\"python3\", ", "[\"no-such-program-tiermem\", "),
            "tenants[0].command",
        ),
        (
            good.replace("name = \"ls\"\ncommand", "name = \"lx\"\ncommand"),
            "tenants[0].name",
        ),
        (
            good.replace("dram = \"48M\"", "dram = \"half\""),
            "qos.dram",
        ),
        (
            good.replace(
                "yield_rounds = 1000",
                "yield_rounds = 1000\nthresh_local_bw = \"10GB/s\"",
            ),
            "controller.thresh_local_bw",
        ),
        (
            format!("{good}\n[runtime]\ndram_budget = \"1G\"\n"),
            "runtime.dram_budget",
        ),
    ];
    for (text, field) in cases {
        let cfg = write_config(&dir, &text);
        let out = Command::new(tiermem())
            .args(["qos", "--config"])
            .arg(&cfg)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{field}: {err}");
        assert!(err.contains(field), "{field} not named: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(!marker.exists(), "{field}: a tenant was started");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mercury_feeds_the_ls_tenant_and_throttles_the_bi_one_then_restores_the_cgroups() {
    if skip_e2e("qos") {
        return;
    }
    if !is_root() {
        eprintln!("skipping: CPU shares need root (cgroups)");
        return;
    }
    require("python3", "python3");
    let _h = heavy();
    let _ = built();
    let dir = std::env::temp_dir().join(format!("tiermem-qos-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // An LS SLO no tiered program meets (0.1 ms stalled per second): Mercury keeps asking
    // for it, so it takes the BI tenant's CPU and then gives the LS tenant DRAM.
    let cfg = write_config(&dir, &two_tenants("0.1ms/s", true));
    let run_dir = private_run_dir();
    let out_dir = dir.join("out");
    let child = Command::new(tiermem())
        .args(["qos", "--duration", "12", "--config"])
        .arg(&cfg)
        .arg("--out")
        .arg(&out_dir)
        .env("TIERMEM_RUN_DIR", &run_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let qos_pid = child.id();
    // While it runs, `tiermem stat QOS_PID` shows each tenant's SLO, limit and actions.
    std::thread::sleep(std::time::Duration::from_secs(4));
    let stat = |args: &[&str]| {
        Command::new(tiermem())
            .arg("stat")
            .args(args)
            .arg(qos_pid.to_string())
            .env("TIERMEM_RUN_DIR", &run_dir)
            .output()
            .unwrap()
    };
    let (json, table) = (stat(&["--json"]), stat(&[]));
    let live: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&json.stdout),
            String::from_utf8_lossy(&json.stderr)
        )
    });
    let out = wait_timeout(child, 90, "tiermem qos");
    assert_eq!(live["mode"], "mercury", "{live}");
    let live_tenants = live["tenants"].as_array().unwrap();
    assert_eq!(live_tenants.len(), 2, "{live}");
    assert!(
        live_tenants
            .iter()
            .all(|t| t["running"] == true && t["pid"].as_u64() > Some(0)),
        "{live}"
    );
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("tiermem qos") && table.contains("0.1ms/s") && table.contains("0.9cpu"),
        "{table}"
    );
    assert!(
        !run_dir.join(qos_pid.to_string()).exists(),
        "qos removed its status directory"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    // Both programs' data survived: the LS tenant checked every page it read, the BI
    // tenant's every pass gave the same digest.
    assert!(stdout.contains("reads ok"), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("passes of 48 MiB, digest"),
        "{stdout}\n{stderr}"
    );
    // The tenants' runtimes wrote nothing on the output qos relayed, and logged no problem.
    let log = log_in(&run_dir);
    assert!(runtime_problems(&log).is_empty(), "{log}");
    assert!(!stderr.contains("tiermem["), "{stderr}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("summary.json")).unwrap())
            .unwrap();
    let tenant = |n: &str| {
        summary["tenants"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tenant"] == n)
            .unwrap()
            .clone()
    };
    let (ls, bi) = (tenant("ls"), tenant("bi"));
    assert_eq!(ls["exit_code"], 0, "{summary}");
    assert!(ls["samples"].as_u64().unwrap() > 10, "{summary}");
    // The BI tenant was throttled by its cgroup (Mercury's yield_bw), and the LS tenant
    // was given DRAM beyond the 1 MiB floor it was admitted with.
    assert!(bi["throttled_periods"].as_u64().unwrap() > 0, "{summary}");
    assert!(
        ls["final_dram_limit_bytes"].as_u64().unwrap() > 4 << 20,
        "{summary}"
    );
    let actions: Vec<(String, String)> = summary["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["tenant"].as_str().unwrap().to_string(),
                a["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let first = |t: &str, k: &str| actions.iter().position(|a| a.0 == t && a.1 == k);
    let cut = first("bi", "cpu_down").expect("the BI tenant's CPU was cut");
    let fed = first("ls", "promote").expect("the LS tenant was given DRAM");
    assert!(
        cut < fed,
        "Listing 2: the BI tenant yields before the LS one is promoted: {actions:?}"
    );
    // Once the LS tenant is done (it exits after its 6 s), the BI tenant gets its CPU back.
    let restored = actions
        .iter()
        .rposition(|a| a.0 == "bi" && a.1 == "cpu_up")
        .expect("the BI tenant's CPU was restored");
    assert!(restored > fed, "{actions:?}");
    // The timeline has both tenants; the limits it reports are what the runtimes enforce:
    // a tenant's resident DRAM stays within its limit plus the runtime's slack (1/32, at
    // least 1 MiB, plus one batch of faults) once a limit has held for a second.
    let csv = std::fs::read_to_string(out_dir.join("timeline.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let bi_min_share = rows
        .iter()
        .filter(|r| r[1] == "bi")
        .map(|r| r[4].parse::<f64>().unwrap())
        .fold(1.0, f64::min);
    assert!(
        bi_min_share < 0.5,
        "the BI tenant's CPU share went down to {bi_min_share}"
    );
    for name in ["ls", "bi"] {
        let mine: Vec<&Vec<&str>> = rows.iter().filter(|r| r[1] == name).collect();
        assert!(mine.len() > 10, "{name}: {} rows", mine.len());
        for w in mine.windows(11) {
            let limit: u64 = w[0][2].parse().unwrap();
            if w.iter().all(|r| r[2].parse::<u64>().unwrap() == limit) {
                let resident: u64 = w[10][3].parse().unwrap();
                assert!(
                    resident <= limit + (limit / 32).max(1 << 20) + (4 << 20),
                    "{name}: resident {resident} over limit {limit}"
                );
            }
        }
    }
    let mine = format!("tiermem-qos.{qos_pid}");
    assert!(
        !qos_cgroups().iter().any(|p| p.ends_with(&mine)),
        "qos left its cgroup {mine} behind"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&run_dir);
}
