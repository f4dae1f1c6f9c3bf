//! `tiermem qos`: several programs as tenants under Mercury's QoS on the real runtime
//! (crates/tiermem-linux/src/qos).

use clap::Args;
use tiermem_core::{format_bytes, Error, Result};
use tiermem_linux::qos::{Mode, QosFile, RunOptions};

#[derive(Args)]
pub struct QosArgs {
    /// TOML file: [qos] (the DRAM to share), [controller] (Mercury: SLOs, priorities),
    /// [[tenants]] (the programs), optionally [runtime]; see docs/runtime.md.
    #[arg(long)]
    pub config: std::path::PathBuf,
    /// Who shares DRAM and CPU: mercury (default), or the baseline even (the same DRAM
    /// split equally and statically, CPU unthrottled).
    #[arg(long, default_value = "mercury", value_name = "MODE")]
    pub mode: String,
    /// Stop the tenants after SECS seconds (default: run until they all exit, or Ctrl-C).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Write summary.json, timeline.csv and actions.csv here.
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Check the config and print the plan; start nothing.
    #[arg(long)]
    pub check: bool,
    #[command(flatten)]
    pub metrics: crate::metrics_http::MetricsArgs,
}

pub fn qos(a: QosArgs) -> Result<i32> {
    let mode = Mode::parse(&a.mode).map_err(|e| Error::usage(format!("--mode {e}")))?;
    if let Some(d) = a.duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(Error::usage(format!(
                "--duration {d}: expected a number of seconds > 0"
            )));
        }
    }
    let plan = QosFile::load(&a.config)?;
    if a.check {
        println!(
            "tiermem qos: {} tenants sharing {} DRAM under {}",
            plan.slos.len(),
            format_bytes(plan.dram_bytes),
            mode.name()
        );
        for (i, t) in plan.file.tenants.iter().enumerate() {
            println!(
                "  {:<12} {} priority {} slo {}{} cores {} declared {}  {}",
                t.name,
                plan.slos[i].class(),
                plan.priority[i],
                plan.slos[i].target(),
                plan.slos[i].unit(),
                t.cores,
                format_bytes(plan.declared[i]),
                shell_words(&t.command)
            );
        }
        return Ok(0);
    }
    if let Some(l) = a.metrics.bind()? {
        // A thread of tiermem qos (whose children the tenants are): the run's status
        // (RUN_DIR/PID/qos.json) and every running tenant's runtime stats, one exposition.
        let me = std::process::id();
        std::thread::spawn(move || {
            crate::metrics_http::serve(l, &|| qos_metrics(me), &|| false)
        });
    }
    let (code, summary) = tiermem_linux::qos::run(
        &plan,
        &RunOptions {
            mode,
            duration_s: a.duration,
            out: a.out,
        },
    )?;
    println!(
        "{:<12} {:<3} {:>4} {:>10} {:>12} {:>9} {:>10} {:>6} {:>6}",
        "tenant", "cls", "prio", "slo", "measured", "slo_met", "dram", "cpu", "exit"
    );
    for t in &summary.tenants {
        println!(
            "{:<12} {:<3} {:>4} {:>10} {:>12.3} {:>8.1}% {:>10} {:>6.2} {:>6}",
            t.tenant,
            t.class,
            t.priority,
            t.slo,
            t.measured_mean,
            t.slo_met_share * 100.0,
            format_bytes(t.final_dram_limit_bytes),
            t.final_cpu_share,
            t.exit_code
                .map_or("-".to_string(), |c| if t.stopped_by_qos {
                    format!("{c}*")
                } else {
                    c.to_string()
                })
        );
    }
    println!(
        "({} for {:.1} s; * = stopped by qos)",
        summary.mode, summary.wall_s
    );
    Ok(code)
}

/// `tiermem qos --metrics-listen`'s exposition: the run's status, then each running
/// tenant's runtime (its samples labelled with the tenant's `pid`).
fn qos_metrics(qos_pid: u32) -> String {
    let mut e = tiermem_linux::metrics::Exposition::default();
    let status = tiermem_linux::control::Control::locate(qos_pid)
        .read_qos()
        .ok()
        .and_then(|t| serde_json::from_str::<tiermem_linux::qos::QosStatus>(&t).ok());
    if let Some(q) = status {
        q.write_metrics(&mut e);
        for t in q.tenants.iter().filter(|t| t.running && t.pid > 0) {
            crate::metrics_http::runtime_metrics(t.pid, &mut e);
        }
    }
    e.render()
}

/// A command line as a shell would take it back: empty words and words with spaces or
/// quotes in single quotes (`--save ''`).
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    #[test]
    fn commands_print_as_a_shell_reads_them() {
        let w =
            |v: &[&str]| super::shell_words(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(w(&["redis-server", "--save", ""]), "redis-server --save ''");
        assert_eq!(w(&["sh", "-c", "echo it's"]), "sh -c 'echo it'\\''s'");
    }
}
