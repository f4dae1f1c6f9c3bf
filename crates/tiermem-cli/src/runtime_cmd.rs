//! `tiermem run | stat | budget`: the Linux runtime's front end (crates/tiermem-linux).

use clap::Args;
use tiermem_core::config::Validate;
use tiermem_core::{format_bytes, Error, ErrorKind, Result};
use tiermem_linux::config::{Budget, DramBudget, RuntimeConfig};
use tiermem_linux::control::Control;
use tiermem_linux::stats::Stats;

#[derive(Args)]
pub struct RunArgs {
    /// TOML file with a `[runtime]` table (tiers, sampler, budget); see docs/runtime.md.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// DRAM budget for the program's managed memory: a size (512M, 2G) or a percentage of
    /// its managed footprint (50%). Overrides the config file.
    #[arg(long)]
    pub dram_budget: Option<DramBudget>,
    /// Service level instead of a budget: `stall=1%` keeps the share of wall time the
    /// program stalls on tier faults under 1 % and offloads what stays cold (the default
    /// when neither --dram-budget nor --policy is given); `off` disables it. With
    /// --dram-budget, that budget is the ceiling the controller stays under.
    #[arg(long, value_name = "stall=PCT|off")]
    pub slo: Option<String>,
    /// Compressed tier codec (lz4, zstd[:LEVEL], deflate[:LEVEL], lzo); overrides the first tier.
    #[arg(long)]
    pub codec: Option<String>,
    /// Pool allocator of the first tier (zsmalloc, zbud, z3fold).
    #[arg(long)]
    pub allocator: Option<String>,
    /// Placement policy, run under the DRAM budget guard: budget (the guard alone, the
    /// default), hemem, tpp, memtis or static, each of the first three also as NAME+colloid.
    /// Overrides the config file's [policy] (whose tunables stay when it names the same one).
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// Pages a tier fault brings back with it: 4KiB (default), 64KiB, 2MiB, or dynamic
    /// (chosen from the program's spatial locality). Overrides the config file.
    #[arg(long, value_name = "UNIT")]
    pub fault_around: Option<String>,
    /// Who serves tier faults: per-cpu (a fault thread pinned to each allowed CPU, up to 8:
    /// no cross-CPU wakeup per fault; the default) or one (a single polling thread).
    /// Overrides the config file.
    #[arg(long, value_name = "per-cpu|one")]
    pub fault_threads: Option<tiermem_linux::config::FaultThreads>,
    /// Also print the runtime's lines (thrashing advice, warnings) on stderr, for the
    /// program started (not its children). Without it they go to RUN_DIR/log and `tiermem
    /// stat` only; lines saying the program's data is at stake always go to stderr too.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    #[command(flatten)]
    pub metrics: crate::metrics_http::MetricsArgs,
    /// Program and its arguments (`-- PROGRAM ...` for a program whose name starts with `-`).
    // No `allow_hyphen_values`: with it an unknown option (`--dram-budjet 50%`) was taken as
    // the program to run (exit 127). `trailing_var_arg` alone still passes everything after
    // the program's name to it, `-la` and `-c` included.
    #[arg(trailing_var_arg = true, required = true)]
    pub program: Vec<String>,
}

#[derive(Args)]
pub struct AttachArgs {
    /// The running process to tier (yours, or any as root); needs CAP_SYS_NICE.
    pub pid: i32,
    /// TOML file with a `[runtime]` table whose tiers below DRAM are node tiers. Without
    /// it: DRAM and every other memory node, nearest first.
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// DRAM budget: a size (512M, 2G) or a percentage of the process's present anonymous
    /// memory (50%). Overrides the config file.
    #[arg(long)]
    pub dram_budget: Option<DramBudget>,
    /// Placement policy under the budget guard, as for `tiermem run`.
    #[arg(long, value_name = "NAME")]
    pub policy: Option<String>,
    /// Detach after SECS seconds (default: at Ctrl-C / SIGTERM, or when the process exits).
    #[arg(long, value_name = "SECS")]
    pub duration: Option<f64>,
    /// Print the detach report as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub metrics: crate::metrics_http::MetricsArgs,
}

#[derive(Args)]
pub struct StatArgs {
    /// PID of a program running under `tiermem run`.
    pub pid: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Repeat every SECS seconds until the program exits.
    #[arg(long, value_name = "SECS")]
    pub watch: Option<f64>,
    /// Print the Prometheus text exposition.
    #[arg(long)]
    pub prometheus: bool,
}

#[derive(Args)]
pub struct BudgetArgs {
    pub pid: u32,
    /// New DRAM budget: a size (256M) or a percentage of the footprint (25%), or "unlimited".
    pub size: String,
}

/// `tiermem run`'s arguments turned into a validated runtime config; starts nothing.
pub fn run_config(a: &RunArgs) -> Result<RuntimeConfig> {
    let mut cfg = match &a.config {
        Some(p) => RuntimeConfig::from_file(p)?,
        None => RuntimeConfig::default(),
    };
    if let Some(b) = &a.dram_budget {
        cfg.set_dram_budget(b.clone());
    }
    if let Some(slo) = &a.slo {
        tiermem_linux::config::parse_slo(slo).map_err(|e| Error::usage(format!("--slo: {e}")))?;
        cfg.slo = Some(slo.clone());
    }
    if let Some(c) = &a.codec {
        tiermem_linux::codec::Codec::parse(c).map_err(|e| Error::usage(format!("--codec: {e}")))?;
        let free = !cfg.tiers.iter().any(|t| t.name == *c);
        if let Some(t) = cfg.first_compressed_mut() {
            // A tier named after its codec (the built-in "lz4") is renamed with it, so that
            // `tiermem stat` does not show a zstd tier as "1:lz4".
            if free && Some(t.name.as_str()) == t.codec.as_deref().or(Some("lz4")) {
                t.name = c.clone();
            }
            t.codec = Some(c.clone());
        }
    }
    if let Some(al) = &a.allocator {
        tiermem_linux::pool::AllocatorKind::parse(al)
            .map_err(|e| Error::usage(format!("--allocator: {e}")))?;
        if let Some(t) = cfg.first_compressed_mut() {
            t.allocator = Some(al.clone());
        }
    }
    if let Some(p) = &a.policy {
        set_policy(&mut cfg, p)?;
    }
    if let Some(f) = &a.fault_around {
        tiermem_linux::runtime::fault_around::FaultAround::parse(f)
            .map_err(|e| Error::usage(format!("--fault-around: {e}")))?;
        cfg.fault_around = f.clone();
    }
    if let Some(t) = a.fault_threads {
        cfg.fault_threads = t;
    }
    cfg.validate("runtime")?;
    // The nodes named exist, have memory and are each used once (sysfs; before any page moves).
    cfg.check_nodes("runtime")?;
    // A policy the runtime cannot serve is refused now, in one line, not by a manager
    // thread that would leave the program untiered.
    tiermem_linux::backend::check_policy(&cfg)?;
    // A test's fault injection (docs/runtime.md "When tiermem itself fails") that names no
    // kind is refused now, before the program starts.
    if let Ok(spec) = std::env::var(tiermem_linux::inject::VAR) {
        tiermem_linux::inject::parse(&spec).map_err(Error::usage)?;
    }
    Ok(cfg)
}

/// `--policy NAME[+colloid]`.
fn set_policy(cfg: &mut RuntimeConfig, flag: &str) -> Result<()> {
    let (base, colloid) = match flag.strip_suffix("+colloid") {
        Some(b) => (b, true),
        None => (flag, false),
    };
    let known = || {
        let mut n: Vec<&str> = vec!["budget"];
        n.extend(tiermem_policies::PolicyConfig::names());
        n.join(", ")
    };
    if base == "budget" {
        if colloid {
            return Err(Error::usage(format!(
                "--policy {flag}: the budget guard has no heat model for Colloid to use; give a base system ({}), e.g. hemem+colloid",
                known()
            )));
        }
        cfg.policy = None;
        cfg.colloid = None;
        return Ok(());
    }
    let Some(defaults) = tiermem_policies::PolicyConfig::default_for(base) else {
        return Err(Error::usage(format!(
            "--policy {flag}: unknown policy `{base}`; expected one of {} (each but budget and static also as NAME+colloid)",
            known()
        )));
    };
    if cfg.policy.as_ref().map(|p| p.name()) != Some(base) {
        cfg.policy = Some(defaults);
    }
    cfg.colloid = if colloid {
        Some(cfg.colloid.take().unwrap_or_default())
    } else {
        None
    };
    Ok(())
}

pub fn run(a: RunArgs) -> Result<i32> {
    let cfg = run_config(&a)?;
    // The private control directory (0700, ours) must be usable before the program
    // starts; directories of dead programs go now.
    tiermem_linux::control::prepare_run_dir(&cfg.run_dir, &cfg.stats_mode)
        .map_err(|e| Error::usage(format!("control directory: {e}")))?;
    // Bound now: a bad or busy address is refused before the program starts.
    let listener = a.metrics.bind()?;
    tiermem_linux::launch::exec_after(&cfg, &a.program, a.verbose, || match listener {
        Some(l) => crate::metrics_http::spawn_for_run(l),
        None => Ok(()),
    })
}

/// `tiermem attach`: checks in the order a user fixes them (the process, our access to
/// it, the capability, the config), each one line and exit 2; then tier until detach.
pub fn attach(a: AttachArgs) -> Result<()> {
    use tiermem_linux::attach;
    if let Some(d) = a.duration {
        if !(d > 0.0 && d.is_finite()) {
            return Err(Error::usage(format!(
                "--duration {d}: expected a number of seconds > 0"
            )));
        }
    }
    attach::preflight(a.pid)?;
    let mut cfg = match &a.config {
        Some(p) => RuntimeConfig::from_file(p)?,
        None => RuntimeConfig {
            tiers: attach::node_tiers_of_this_machine()?,
            ..RuntimeConfig::default()
        },
    };
    if let Some(b) = &a.dram_budget {
        cfg.set_dram_budget(b.clone());
    }
    if let Some(p) = &a.policy {
        set_policy(&mut cfg, p)?;
    }
    cfg.validate("runtime")?;
    attach::check_config(&cfg)?;
    // The policy is checked against attach's capabilities by the engine it starts.
    let stop = attach::stop_on_signals();
    let live = std::sync::Arc::new(std::sync::Mutex::new(None::<attach::AttachReport>));
    if let Some(l) = a.metrics.bind()? {
        let live = live.clone();
        // A thread of tiermem attach (not of the process attached to), ending with it.
        std::thread::spawn(move || {
            crate::metrics_http::serve(
                l,
                &|| {
                    let mut e = tiermem_linux::metrics::Exposition::default();
                    if let Some(r) = live.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                        r.write_metrics(&mut e);
                    }
                    e.render()
                },
                &|| false,
            )
        });
    }
    let publish = |r: attach::AttachReport| {
        *live.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    };
    let r = attach::attach_reporting(a.pid, &cfg, a.duration, stop, Some(&publish))?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r)
                .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?
        );
    } else {
        eprintln!(
            "tiermem attach: detached from {} ({}) after {:.1} s, {} scans: {} pages moved, {} refused; hotness: {}",
            r.pid, r.detached_because, r.seconds, r.scans, r.pages_moved, r.pages_refused, r.hotness
        );
        for (name, node, pages) in &r.tiers {
            eprintln!("  {name:<8} node {node}: {}", format_bytes(pages * 4096));
        }
    }
    Ok(())
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn read(pid: u32) -> Result<Stats> {
    let ctl = Control::locate(pid);
    let mut last = String::new();
    for _ in 0..20 {
        match ctl.read_stats() {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
        if !alive(pid) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    if !alive(pid) {
        return Err(Error::usage(format!("no process {pid}")));
    }
    Err(Error::usage(format!(
        "process {pid} is not running under `tiermem run` (or has no managed memory yet): {last}"
    )))
}

fn ns(v: u64) -> String {
    if v >= 1_000_000 {
        format!("{:.1}ms", v as f64 / 1e6)
    } else if v >= 1_000 {
        format!("{:.1}us", v as f64 / 1e3)
    } else {
        format!("{v}ns")
    }
}

/// A tier's loaded latency as the policy sees it; "-" before any was measured.
fn latency(v: f64) -> String {
    if v > 0.0 {
        ns(v.round() as u64)
    } else {
        "-".into()
    }
}

pub fn render(s: &Stats) -> String {
    let mut o = String::new();
    o.push_str(&format!(
        "pid {}  up {:.1}s  budget {} ({})  managed {}  footprint {}\n",
        s.pid,
        s.uptime_s,
        s.budget,
        if s.budget_bytes >= i64::MAX as u64 {
            "unlimited".into()
        } else {
            format_bytes(s.budget_bytes)
        },
        format_bytes(s.managed_bytes),
        format_bytes(s.footprint_bytes)
    ));
    if s.unregistered_bytes > 0 || s.adopted_bytes > 0 {
        o.push_str(&format!(
            "lazy registration: {} left to the kernel (first touches at its cost), {} adopted\n",
            format_bytes(s.unregistered_bytes),
            format_bytes(s.adopted_bytes)
        ));
    }
    if let Some(slo) = &s.slo {
        o.push_str(&format!(
            "slo stall {:.2}% (target {:.2}%)  cold {} ({} idle 5 s)  saved {}  probes {}  back-offs {}\n",
            slo.stall_share * 100.0,
            slo.target_stall * 100.0,
            format_bytes(slo.cold_bytes),
            format_bytes(slo.idle_offloaded_bytes),
            format_bytes(slo.saved_bytes),
            slo.probes,
            slo.backoffs
        ));
    }
    o.push_str(&format!(
        "policy {}  tracker {}\n",
        if s.policy.is_empty() {
            "budget"
        } else {
            &s.policy
        },
        if s.tracker.is_empty() {
            "-"
        } else {
            &s.tracker
        }
    ));
    o.push_str(&format!(
        "{:<14} {:>10} {:>11} {:>11} {:>7} {:>10} {:>9} {:>9} {:>9} {:>10}\n",
        "tier",
        "pages",
        "stored",
        "compressed",
        "ratio",
        "faults",
        "p50",
        "p99",
        "latency",
        "migr in"
    ));
    o.push_str(&format!(
        "{:<14} {:>10} {:>11} {:>11} {:>7} {:>10} {:>9} {:>9} {:>9} {:>10}\n",
        "0:dram",
        s.resident_bytes / 4096,
        format_bytes(s.resident_bytes),
        "-",
        "-",
        s.first_touch_faults,
        "-",
        "-",
        latency(s.dram_latency_ns),
        "-"
    ));
    let mut pool = 0;
    for t in &s.tiers {
        pool += t.pool_bytes;
        let ratio = if t.compressed_bytes > 0 {
            format!("{:.2}x", t.stored_bytes as f64 / t.compressed_bytes as f64)
        } else {
            "-".into()
        };
        o.push_str(&format!(
            "{:<14} {:>10} {:>11} {:>11} {:>7} {:>10} {:>9} {:>9} {:>9} {:>10}\n",
            format!("{} {}", t.name, t.allocator),
            t.pages,
            format_bytes(t.stored_bytes),
            format_bytes(t.compressed_bytes),
            ratio,
            t.faults,
            ns(t.fault_p50_ns),
            ns(t.fault_p99_ns),
            latency(t.latency_ns),
            t.migrations_in
        ));
    }
    o.push_str(&format!(
        "memory: DRAM {} (max {}) + pools {} = {}   hint faults {}/{} sampled   tiermem CPU {:.2}s ({:.2}% of a core)\n",
        format_bytes(s.resident_bytes),
        format_bytes(s.max_resident_bytes),
        format_bytes(pool),
        format_bytes(s.resident_bytes + pool),
        s.hint_faults,
        s.hint_sampled,
        s.cpu_s,
        if s.uptime_s > 0.0 { s.cpu_s / s.uptime_s * 100.0 } else { 0.0 }
    ));
    o.push_str(&format!(
        "memory TCO: {:.1}% saved against all in DRAM (TierScape Eq. 12; costs per GB: dram {}{})\n",
        s.tco_savings * 100.0,
        s.dram_cost_per_gb,
        s.tiers
            .iter()
            .map(|t| format!(", {} {}", t.name, t.cost_per_gb))
            .collect::<String>()
    ));
    o.push_str(&format!(
        "moves: {} pages in {} page-table operations   process: anonymous {} of which unmanaged {} (stacks, pre-start blocks, shared/locked, tiermem's tables)   over budget max {}   waits for room {} ({:.2}s)\n",
        s.moved_pages,
        s.move_ops,
        format_bytes(s.process_anon_bytes),
        format_bytes(s.unmanaged_anon_bytes),
        format_bytes(s.max_over_budget_bytes),
        s.room_waits,
        s.room_wait_s
    ));
    let k = &s.left_to_kernel;
    if k.reserved_bytes + k.placed_bytes > 0 {
        // What a JVM's or V8's heap is made of: the preload manages only mmaps it places.
        o.push_str(&format!(
            "left to the kernel (mmaps since start): reservations {}, at program-chosen addresses {} (JVM/V8 heaps commit there), small/other {}\n",
            format_bytes(k.reserved_bytes),
            format_bytes(k.placed_bytes),
            format_bytes(k.other_bytes)
        ));
    }
    if s.incompressible_resident_bytes > 0 {
        o.push_str(&format!(
            "incompressible: {} in DRAM that no compressed tier takes (kept over the budget; faults do not wait for it)\n",
            format_bytes(s.incompressible_resident_bytes)
        ));
    }
    if s.probe_cpu_share > 0.0 {
        o.push_str(&format!(
            "latency probe: {:.3}% of a core (a pointer chase per memory node each quantum)\n",
            s.probe_cpu_share * 100.0
        ));
    }
    if s.fault_around.mode != "4KiB" && !s.fault_around.mode.is_empty() {
        let f = &s.fault_around;
        o.push_str(&format!(
            "fault-around: {} (unit now {})   tier faults at 4KiB/64KiB/2MiB {}/{}/{}   pages brought back beside them {}   decisions {} (unit changed {}, 64KiB windows cut by a scan {})\n",
            f.mode,
            format_bytes(f.unit_bytes),
            f.faults_by_unit[0],
            f.faults_by_unit[1],
            f.faults_by_unit[2],
            f.pages_around,
            f.decisions,
            f.switches,
            f.scan_restarts
        ));
    }
    if !s.policy_counters.is_empty() {
        let counters: Vec<String> = s
            .policy_counters
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        o.push_str(&format!("policy counters: {}\n", counters.join(", ")));
    }
    if s.misreported_moves > 0 {
        o.push_str(&format!(
            "kernel: {} page moves answered with an error were found done and counted as moves (Linux 6.18 UFFDIO_MOVE; docs/runtime.md)\n",
            s.misreported_moves
        ));
    }
    if s.resident_refilled + s.absent_with_page > 0 {
        o.push_str(&format!(
            "INTEGRITY: {} pages held in DRAM had no data (dropped outside tiermem, now zeros), {} pages held absent had a page; see the log\n",
            s.resident_refilled, s.absent_with_page
        ));
    }
    if s.thrashing {
        o.push_str(&format!(
            "THRASHING: tier faults take over {:.0}% of the time (served so far: {:.1}s); suggested budget {}\n",
            tiermem_linux::runtime::THRASH_SHARE * 100.0,
            s.tier_fault_service_s,
            s.suggested_budget.as_deref().unwrap_or("higher")
        ));
    }
    let lines = s.messages_info + s.messages_warn + s.messages_fatal;
    if lines > 0 {
        o.push_str(&format!(
            "runtime lines: {lines} (info {}, warn {}, fatal {}) in {}; last:\n",
            s.messages_info,
            s.messages_warn,
            s.messages_fatal,
            if s.log_file.is_empty() {
                "no log (RUN_DIR unusable or not created)"
            } else {
                &s.log_file
            }
        ));
        let last = s.recent_messages.len().saturating_sub(3);
        for l in &s.recent_messages[last..] {
            o.push_str(&format!("  {l}\n"));
        }
    }
    o
}

/// `tiermem qos`'s status (RUN_DIR/PID/qos.json), when PID is a qos run.
fn render_qos(text: &str) -> Result<String> {
    let q: tiermem_linux::qos::QosStatus = serde_json::from_str(text)
        .map_err(|e| Error::new(ErrorKind::Internal, format!("qos.json: {e}")))?;
    let mut out = format!(
        "tiermem qos {} ({}): {} of DRAM shared, up {:.1} s\n",
        q.pid,
        q.mode,
        format_bytes(q.dram_bytes),
        q.uptime_s
    );
    out += &format!(
        "{:<12} {:>7} {:<3} {:>4} {:>8} {:>12} {:>7} {:>10} {:>10} {:>5}  actions\n",
        "tenant", "pid", "cls", "prio", "slo", "measured", "met", "dram", "resident", "cpu"
    );
    for t in &q.tenants {
        let measured = t
            .measured
            .map_or("-".to_string(), |v| format!("{v:.2}{}", t.unit));
        out += &format!(
            "{:<12} {:>7} {:<3} {:>4} {:>8} {:>12} {:>6.0}% {:>10} {:>10} {:>5.2}  {}{}\n",
            t.tenant,
            if t.running {
                t.pid.to_string()
            } else {
                "-".into()
            },
            t.class,
            t.priority,
            t.slo,
            measured,
            t.slo_met_share * 100.0,
            format_bytes(t.dram_limit_bytes),
            format_bytes(t.resident_bytes),
            t.cpu_share,
            t.actions,
            t.last_action
                .as_deref()
                .map_or(String::new(), |l| format!(", last {l}")),
        );
    }
    Ok(out)
}

pub fn stat(a: StatArgs) -> Result<()> {
    loop {
        // A `tiermem qos` run publishes its tenants' status instead of a runtime's stats.
        if let Ok(text) = Control::locate(a.pid).read_qos() {
            if a.json {
                println!("{}", text.trim_end());
            } else if a.prometheus {
                return Err(Error::usage(format!(
                    "process {} is a `tiermem qos` run: its tenants' own PIDs have Prometheus text (`tiermem stat TENANT_PID --prometheus`)",
                    a.pid
                )));
            } else {
                print!("{}", render_qos(&text)?);
            }
            match a.watch {
                Some(secs) if secs > 0.0 && alive(a.pid) => {
                    std::thread::sleep(std::time::Duration::from_secs_f64(secs));
                    println!();
                    continue;
                }
                _ => return Ok(()),
            }
        }
        let s = read(a.pid)?;
        if a.json {
            println!(
                "{}",
                serde_json::to_string_pretty(&s)
                    .map_err(|e| Error::new(ErrorKind::Internal, e.to_string()))?
            );
        } else if a.prometheus {
            print!("{}", s.prometheus());
        } else {
            print!("{}", render(&s));
        }
        match a.watch {
            Some(secs) if secs > 0.0 => {
                std::thread::sleep(std::time::Duration::from_secs_f64(secs));
                if !alive(a.pid) {
                    return Ok(());
                }
                if !a.json {
                    println!();
                }
            }
            _ => return Ok(()),
        }
    }
}

/// Over RUN_DIR/PID/control.sock (only the program's user and root may connect).
pub fn budget(a: BudgetArgs) -> Result<()> {
    Budget::parse(&a.size).map_err(Error::usage)?;
    if !alive(a.pid) {
        return Err(Error::usage(format!("no process {}", a.pid)));
    }
    let ctl = Control::locate(a.pid);
    // The manager answers between two policy quanta (at most 10 s apart).
    let answer = ctl
        .request(
            &format!("budget {}", a.size.trim()),
            std::time::Duration::from_secs(15),
        )
        .map_err(|e| {
            Error::usage(format!(
                "cannot reach process {} (is it running under `tiermem run` as you?): {e}",
                a.pid
            ))
        })?;
    match answer.strip_prefix("ok budget ") {
        Some(rest) => {
            let (new, old) = rest.split_once("; was ").unwrap_or((rest, "?"));
            println!("pid {}: DRAM budget {old} -> {new}", a.pid);
            Ok(())
        }
        None => Err(Error::usage(format!(
            "process {}: {}",
            a.pid,
            answer.strip_prefix("error ").unwrap_or(&answer)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiermem_linux::stats::TierStats;

    #[test]
    fn stat_shows_the_memory_tco_and_each_tiers_cost() {
        let s = Stats {
            tco_savings: 0.2535,
            dram_cost_per_gb: 1.0,
            tiers: vec![TierStats {
                name: "1:lz4".into(),
                cost_per_gb: 0.333,
                ..Default::default()
            }],
            ..Default::default()
        };
        let text = render(&s);
        assert!(
            text.contains("memory TCO: 25.4% saved against all in DRAM")
                && text.contains("dram 1, 1:lz4 0.333"),
            "{text}"
        );
    }

    #[test]
    fn stat_shows_the_runtimes_lines_and_where_they_went() {
        let mut s = Stats::default();
        assert!(!render(&s).contains("runtime lines"));
        assert!(s
            .prometheus()
            .contains("tiermem_messages_total{pid=\"0\",level=\"warn\"} 0\n"));
        s.messages_info = 1;
        s.messages_warn = 4;
        s.log_file = "/run/tiermem/log".into();
        s.recent_messages = (0..5).map(|k| format!("T warn: line {k}")).collect();
        let text = render(&s);
        assert!(
            text.contains("runtime lines: 5 (info 1, warn 4, fatal 0) in /run/tiermem/log; last:\n  T warn: line 2\n  T warn: line 3\n  T warn: line 4\n"),
            "{text}"
        );
        assert!(s
            .prometheus()
            .contains("tiermem_messages_total{pid=\"0\",level=\"warn\"} 4\n"));
    }

    #[test]
    fn stat_shows_the_policys_own_counters_when_it_has_any() {
        let mut s = Stats::default();
        assert!(!render(&s).contains("policy counters"));
        assert!(!s.prometheus().contains("policy_counter"));
        s.policy_counters = [("solves".to_string(), 5), ("solver_failures".to_string(), 0)]
            .into_iter()
            .collect();
        let text = render(&s);
        assert!(
            text.contains("policy counters: solver_failures 0, solves 5\n"),
            "{text}"
        );
        let prom = s.prometheus();
        assert!(
            prom.contains("tiermem_policy_counter{pid=\"0\",name=\"solves\"} 5\n"),
            "{prom}"
        );
    }

    #[test]
    fn codec_flag_renames_a_tier_named_after_its_codec_only() {
        let args = |codec: &str, config: Option<std::path::PathBuf>| RunArgs {
            config,
            dram_budget: None,
            slo: None,
            codec: Some(codec.into()),
            allocator: None,
            policy: None,
            fault_around: None,
            fault_threads: None,
            verbose: false,
            metrics: Default::default(),
            program: vec!["true".into()],
        };
        // The built-in tier "lz4" with --codec zstd: shown as "1:zstd".
        let cfg = run_config(&args("zstd", None)).unwrap();
        assert_eq!(
            (cfg.tiers[1].name.as_str(), cfg.tiers[1].codec.as_deref()),
            ("zstd", Some("zstd"))
        );
        // A tier the user named keeps its name.
        let path =
            std::env::temp_dir().join(format!("tiermem-codec-flag-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            "[[runtime.tiers]]\nname = \"dram\"\nkind = \"dram\"\n[[runtime.tiers]]\nname = \"cold\"\nkind = \"compressed\"\ncodec = \"lz4\"\n",
        )
        .unwrap();
        let cfg = run_config(&args("deflate", Some(path.clone())));
        std::fs::remove_file(&path).unwrap();
        let cfg = cfg.unwrap();
        assert_eq!(
            (cfg.tiers[1].name.as_str(), cfg.tiers[1].codec.as_deref()),
            ("cold", Some("deflate"))
        );
    }
}
