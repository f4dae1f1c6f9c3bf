//! Prometheus text exposition (format 0.0.4) of the runtime's stats, `tiermem qos`'s status
//! and `tiermem attach`'s counters: one family per metric name, each with `# HELP` and
//! `# TYPE` once, before its samples (the format requires a name's samples to be together;
//! `tiermem qos` puts several runtimes' samples in one family, told apart by `pid`).
//!
//! Written to RUN_DIR/PID/metrics.prom by the runtime and served on `/metrics` by
//! `tiermem run|qos|attach --metrics-listen` (tiermem-cli's metrics_http.rs, outside the
//! managed program). Counters end in `_total` (monotonic for the life of one runtime: a
//! new runtime in the same PID, after an exec, starts them again, as a restarted target's
//! do); everything else is a gauge.

use crate::stats::Stats;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Gauge,
    Counter,
}

struct Family {
    name: String,
    help: String,
    kind: Kind,
    samples: Vec<(Vec<(String, String)>, f64)>,
}

/// Families in the order first seen; samples appended to their family.
#[derive(Default)]
pub struct Exposition {
    families: Vec<Family>,
}

/// A label value as the text format escapes it (backslash, double quote, line feed).
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A HELP text as the format escapes it (backslash, line feed).
fn escape_help(v: &str) -> String {
    v.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A value as the text format writes it (`+Inf`, `-Inf`, `NaN`; integers without ".0").
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

impl Exposition {
    /// One sample of `tiermem_NAME` with `labels`; the family is created with `help` and
    /// `kind` at its first sample (a later one must agree on the kind: a bug otherwise).
    pub fn sample(&mut self, kind: Kind, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        let full = format!("tiermem_{name}");
        debug_assert!(
            (kind == Kind::Counter) == full.ends_with("_total"),
            "{full}: counters and only counters end in _total"
        );
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        match self.families.iter_mut().find(|f| f.name == full) {
            Some(f) => {
                debug_assert_eq!(f.kind, kind, "{full}");
                f.samples.push((labels, v));
            }
            None => self.families.push(Family {
                name: full,
                help: help.into(),
                kind,
                samples: vec![(labels, v)],
            }),
        }
    }

    pub fn gauge(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        self.sample(Kind::Gauge, name, help, labels, v);
    }

    pub fn counter(&mut self, name: &str, help: &str, labels: &[(&str, &str)], v: f64) {
        self.sample(Kind::Counter, name, help, labels, v);
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.families {
            let kind = match f.kind {
                Kind::Gauge => "gauge",
                Kind::Counter => "counter",
            };
            s.push_str(&format!(
                "# HELP {} {}\n# TYPE {} {kind}\n",
                f.name,
                escape_help(&f.help),
                f.name
            ));
            for (labels, v) in &f.samples {
                s.push_str(&f.name);
                if !labels.is_empty() {
                    let l: Vec<String> = labels
                        .iter()
                        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                        .collect();
                    s.push_str(&format!("{{{}}}", l.join(",")));
                }
                s.push_str(&format!(" {}\n", value(*v)));
            }
        }
        s
    }
}

/// The fault-around units, in the order of `FaultAroundStats::faults_by_unit`.
const UNITS: [&str; 3] = ["4KiB", "64KiB", "2MiB"];

impl Stats {
    /// Every value of the stats that is a number, as samples labelled `pid` (and `tier`,
    /// ... where they are per something). `tiermem stat` shows the same stats: the test
    /// `metrics_http` checks that the two agree on every value.
    pub fn write_metrics(&self, e: &mut Exposition) {
        let pid = self.pid.to_string();
        let p: &[(&str, &str)] = &[("pid", &pid)];
        let policy = if self.policy.is_empty() {
            "budget"
        } else {
            &self.policy
        };
        e.gauge(
            "info",
            "The runtime's settings as labels (value 1): policy, tracker, budget as configured, fault-around mode",
            &[
                ("pid", &pid),
                ("policy", policy),
                ("tracker", &self.tracker),
                ("budget", &self.budget),
                ("fault_around", &self.fault_around.mode),
            ],
            1.0,
        );
        let gauges: [(&str, &str, f64); 17] = [
            ("uptime_seconds", "Seconds since the runtime started", self.uptime_s),
            ("budget_bytes", "DRAM budget in bytes in force (the SLO controller's choice under SLO mode; unlimited is 2^63-1)", self.budget_bytes as f64),
            ("managed_bytes", "Bytes of managed regions", self.managed_bytes as f64),
            ("max_managed_bytes", "Largest managed size seen, bytes", self.max_managed_bytes as f64),
            ("resident_bytes", "Managed bytes resident in DRAM", self.resident_bytes as f64),
            ("max_resident_bytes", "Largest resident DRAM seen, bytes", self.max_resident_bytes as f64),
            ("footprint_bytes", "Resident plus compressed managed bytes", self.footprint_bytes as f64),
            ("regions", "Managed regions", self.regions as f64),
            ("unregistered_bytes", "Managed bytes not registered with the userfaultfd yet (lazy registration: first touches served by the kernel)", self.unregistered_bytes as f64),
            ("process_anon_bytes", "Resident anonymous memory of the whole process (RssAnon), bytes", self.process_anon_bytes as f64),
            ("unmanaged_anon_bytes", "Resident anonymous bytes outside managed DRAM and pools", self.unmanaged_anon_bytes as f64),
            ("max_over_budget_bytes", "Largest excess of resident DRAM over the budget seen, bytes", self.max_over_budget_bytes as f64),
            ("incompressible_resident_bytes", "DRAM held by pages no compressed tier takes (kept over the budget), bytes", self.incompressible_resident_bytes as f64),
            ("thrashing", "1 while tier faults take more than the thrash share of the time", self.thrashing as u8 as f64),
            ("probe_cpu_ratio", "The loaded-latency probe's CPU time over the run's wall time (0: no probe)", self.probe_cpu_share),
            ("tco_savings_ratio", "Memory TCO saved against all managed pages in DRAM (TierScape Eq. 12)", self.tco_savings),
            ("fault_around_unit_bytes", "The unit tier faults are served at now, bytes", self.fault_around.unit_bytes as f64),
        ];
        for (name, help, v) in gauges {
            e.gauge(name, help, p, v);
        }
        let counters: [(&str, &str, f64); 19] = [
            ("adopted_bytes_total", "Managed bytes registered with the userfaultfd after living unregistered (lazy registration)", self.adopted_bytes as f64),
            ("hint_sampled_total", "Pages unmapped by the hint-fault sampler", self.hint_sampled as f64),
            ("hint_faults_total", "Hint faults on sampled pages", self.hint_faults as f64),
            ("evict_busy_total", "Evictions refused by the kernel as busy (pages shared with a fork child, pinned)", self.evict_busy as f64),
            ("evict_no_page_total", "Moves of a resident page the kernel answered with no page (refused, the page kept)", self.evict_no_page as f64),
            ("resident_refilled_total", "Pages held in DRAM found without data (dropped outside tiermem), served as zeros and reported", self.resident_refilled as f64),
            ("absent_with_page_total", "Pages held absent found with a page table entry (counted resident)", self.absent_with_page as f64),
            ("misreported_moves_total", "UFFDIO_MOVE answers the kernel got wrong (pages moved under an error), found by checking and taken as moves", self.misreported_moves as f64),
            ("remap_moves_total", "mremap moves of managed regions that moved page tables", self.remap_moves as f64),
            ("remap_refused_total", "mremap moves of managed regions the kernel refused (realloc copied)", self.remap_refused as f64),
            ("move_ops_total", "Page-table operations (UFFDIO_MOVE/COPY) made to move pages between tiers", self.move_ops as f64),
            ("moved_pages_total", "Pages moved between tiers by those operations", self.moved_pages as f64),
            ("forks_total", "fork() calls of the program", self.forks as f64),
            ("quanta_total", "Policy quanta run", self.quanta as f64),
            ("tier_fault_service_seconds_total", "Seconds the fault thread spent serving tier faults (a lower bound of the program's stall on them)", self.tier_fault_service_s),
            ("room_waits_total", "Times faults waited for the manager to bring DRAM under budget + slack", self.room_waits as f64),
            ("room_wait_seconds_total", "Seconds faults waited for room", self.room_wait_s),
            ("fault_around_pages_total", "Pages brought back from compressed tiers beside a faulting page (fault-around)", self.fault_around.pages_around as f64),
            ("fault_around_decisions_total", "Dynamic fault-around: probes decided", self.fault_around.decisions as f64),
        ];
        for (name, help, v) in counters {
            e.counter(name, help, p, v);
        }
        e.counter(
            "fault_around_switches_total",
            "Dynamic fault-around: decisions that changed the unit",
            p,
            self.fault_around.switches as f64,
        );
        e.counter(
            "fault_around_scan_restarts_total",
            "Dynamic fault-around: 64 KiB windows ended early because their faults became a scan",
            p,
            self.fault_around.scan_restarts as f64,
        );
        for (unit, v) in UNITS.iter().zip(self.fault_around.faults_by_unit) {
            e.counter(
                "fault_around_faults_total",
                "Tier faults served at each fault-around unit",
                &[("pid", &pid), ("unit", unit)],
                v as f64,
            );
        }
        for (thread, v) in [
            ("fault", self.cpu_fault_thread_s),
            ("manager", self.cpu_manager_thread_s),
        ] {
            e.counter(
                "cpu_seconds_total",
                "CPU seconds used by tiermem's threads in the program",
                &[("pid", &pid), ("thread", thread)],
                v,
            );
        }
        // Tried vs applied (DAMON's nr_tried / nr_applied): the policy's planned moves and
        // what became of them, per page, cumulative over the engine's quanta.
        let a = &self.plan;
        for (outcome, v) in page_outcomes(a) {
            e.counter(
                "plan_pages_total",
                "Pages of the policy's planned moves, by outcome: tried (planned), applied (moved), already_there, no_capacity (refused: full, pinned, shared, incompressible), over_quota (the quantum's migration quota spent)",
                &[("pid", &pid), ("outcome", outcome)],
                v as f64,
            );
        }
        e.counter(
            "plan_ops_applied_total",
            "Planned moves of which at least one page moved (one operation each)",
            p,
            a.ops_applied as f64,
        );
        e.counter(
            "plan_moves_malformed_total",
            "Planned moves the engine dropped as malformed (a policy bug)",
            p,
            a.moves_malformed as f64,
        );
        e.counter(
            "plan_bytes_moved_total",
            "Bytes the applied moves moved",
            p,
            a.bytes_moved as f64,
        );
        // Per tier; DRAM first, as `tiermem stat`'s table shows it.
        let dram = [
            ("pid", pid.as_str()),
            ("tier", "0:dram"),
            ("codec", "-"),
            ("allocator", "-"),
        ];
        e.gauge(
            "tier_pages",
            "Managed pages held in the tier",
            &dram,
            (self.resident_bytes / 4096) as f64,
        );
        e.gauge(
            "tier_stored_bytes",
            "Uncompressed bytes of the pages held in the tier",
            &dram,
            self.resident_bytes as f64,
        );
        e.counter(
            "tier_faults_total",
            "Faults served from the tier (DRAM: first touches)",
            &dram,
            self.first_touch_faults as f64,
        );
        e.gauge(
            "tier_latency_ns",
            "The tier's latency as the policy sees it, ns (0: not measured yet)",
            &dram,
            self.dram_latency_ns,
        );
        e.gauge(
            "tier_cost_per_gb",
            "Relative cost of a GB of the tier's medium (cost_per_gb), for TCO",
            &dram,
            self.dram_cost_per_gb,
        );
        for t in &self.tiers {
            let l = [
                ("pid", pid.as_str()),
                ("tier", t.name.as_str()),
                ("codec", t.codec.as_str()),
                ("allocator", t.allocator.as_str()),
            ];
            e.gauge("tier_pages", "", &l, t.pages as f64);
            e.gauge("tier_stored_bytes", "", &l, t.stored_bytes as f64);
            e.gauge(
                "tier_compressed_bytes",
                "Compressed bytes held in the tier (sum of object sizes)",
                &l,
                t.compressed_bytes as f64,
            );
            e.gauge(
                "tier_pool_bytes",
                "Bytes of pool memory the tier took from the kernel",
                &l,
                t.pool_bytes as f64,
            );
            e.counter("tier_faults_total", "", &l, t.faults as f64);
            for (q, v) in [("0.5", t.fault_p50_ns), ("0.99", t.fault_p99_ns)] {
                let mut lq = l.to_vec();
                lq.push(("quantile", q));
                e.gauge(
                    "tier_fault_service_ns",
                    "Fault service time (message read to page installed), ns, at a quantile",
                    &lq,
                    v as f64,
                );
            }
            e.gauge("tier_latency_ns", "", &l, t.latency_ns);
            e.counter(
                "tier_migrations_in_total",
                "Pages moved into the tier",
                &l,
                t.migrations_in as f64,
            );
            e.counter(
                "tier_migrations_out_total",
                "Pages moved out of the tier (faults and explicit moves)",
                &l,
                t.migrations_out as f64,
            );
            e.counter(
                "tier_rejected_incompressible_total",
                "Pages that did not compress below the tier's bound and stayed in DRAM",
                &l,
                t.rejected_incompressible as f64,
            );
            e.gauge("tier_cost_per_gb", "", &l, t.cost_per_gb);
        }
        // The SLO controller: `slo_active` always (0: a fixed budget or a policy decides).
        e.gauge(
            "slo_active",
            "1 when the SLO controller picks the budget",
            p,
            self.slo.is_some() as u8 as f64,
        );
        let k = &self.left_to_kernel;
        e.counter("left_to_kernel_reserved_bytes_total", "Anonymous PROT_NONE reservations the preload left to the kernel (JVM and V8 heaps reserve so)", p, k.reserved_bytes as f64);
        e.counter("left_to_kernel_placed_bytes_total", "Anonymous maps at program-chosen addresses left to the kernel (commits inside reservations: JVM and V8 heap pages)", p, k.placed_bytes as f64);
        e.counter("left_to_kernel_other_bytes_total", "Anonymous maps left to the kernel for size or flags (below min_region, stacks, locked, huge pages)", p, k.other_bytes as f64);
        if let Some(slo) = &self.slo {
            e.gauge("slo_target_stall_ratio", "The SLO controller's stall target (share of wall time)", p, slo.target_stall);
            e.gauge("slo_stall_ratio", "Tier-fault stall share over the SLO controller's last interval", p, slo.stall_share);
            e.gauge("slo_cold_bytes", "Managed bytes the SLO controller found cold (held in the tiers, uncompressed)", p, slo.cold_bytes as f64);
            e.gauge("slo_saved_bytes", "Memory saved: cold bytes less the pools holding them", p, slo.saved_bytes as f64);
            e.counter("slo_idle_offloaded_bytes_total", "Bytes offloaded because the sampler saw them untouched for 5 s (the rest by probes)", p, slo.idle_offloaded_bytes as f64);
            e.counter("slo_probes_total", "Times the SLO controller tightened the budget", p, slo.probes as f64);
            e.counter("slo_backoffs_total", "Times the SLO controller loosened the budget after a stall over its target", p, slo.backoffs as f64);
        }
        for (level, v) in [
            ("info", self.messages_info),
            ("warn", self.messages_warn),
            ("fatal", self.messages_fatal),
        ] {
            e.counter(
                "messages_total",
                "Lines the runtime reported (RUN_DIR/log), by level",
                &[("pid", &pid), ("level", level)],
                v as f64,
            );
        }
        for (name, v) in &self.policy_counters {
            e.gauge(
                "policy_counter",
                "The policy's own counters (Policy::counters)",
                &[("pid", &pid), ("name", name)],
                *v as f64,
            );
        }
    }
}

impl crate::qos::QosStatus {
    /// `tiermem qos`'s status: the run, and per tenant its SLO, last measurement, limit,
    /// resident DRAM, CPU share and Mercury's actions on it.
    pub fn write_metrics(&self, e: &mut Exposition) {
        let pid = self.pid.to_string();
        e.gauge(
            "qos_info",
            "A tiermem qos run (value 1): its mode",
            &[("qos_pid", &pid), ("mode", &self.mode)],
            1.0,
        );
        e.gauge(
            "qos_dram_bytes",
            "DRAM the tenants share, bytes",
            &[("qos_pid", &pid)],
            self.dram_bytes as f64,
        );
        e.gauge(
            "qos_uptime_seconds",
            "Seconds since the qos run started",
            &[("qos_pid", &pid)],
            self.uptime_s,
        );
        for t in &self.tenants {
            let tpid = t.pid.to_string();
            let prio = t.priority.to_string();
            let l = [
                ("qos_pid", pid.as_str()),
                ("tenant", t.tenant.as_str()),
                ("pid", tpid.as_str()),
                ("class", t.class.as_str()),
                ("priority", prio.as_str()),
                ("slo", t.slo.as_str()),
                ("unit", t.unit.as_str()),
            ];
            e.gauge("qos_tenant_running", "1 while the tenant's program runs", &l, t.running as u8 as f64);
            e.gauge(
                "qos_tenant_measured",
                "The tenant's last SLO measurement in its unit (NaN: idle or not measured yet)",
                &l,
                t.measured.unwrap_or(f64::NAN),
            );
            e.gauge("qos_tenant_slo_met_ratio", "Share of samples that met the tenant's SLO", &l, t.slo_met_share);
            e.gauge("qos_tenant_dram_limit_bytes", "The tenant's DRAM limit (its runtime's budget), bytes", &l, t.dram_limit_bytes as f64);
            e.gauge("qos_tenant_resident_bytes", "The tenant's resident managed DRAM, bytes", &l, t.resident_bytes as f64);
            e.gauge("qos_tenant_cpu_share", "The tenant's CPU share (fraction of its cores)", &l, t.cpu_share);
            e.counter("qos_tenant_actions_total", "The controller's actions on the tenant", &l, t.actions as f64);
        }
    }
}

impl crate::attach::AttachReport {
    /// `tiermem attach`'s counters so far.
    pub fn write_metrics(&self, e: &mut Exposition) {
        let pid = self.pid.to_string();
        let p: &[(&str, &str)] = &[("pid", &pid)];
        e.gauge(
            "attach_info",
            "A tiermem attach run (value 1): its policy and where hotness comes from",
            &[("pid", &pid), ("policy", &self.policy), ("hotness", &self.hotness)],
            1.0,
        );
        e.gauge("attach_uptime_seconds", "Seconds since attach started", p, self.seconds);
        e.gauge("attach_budget_bytes", "DRAM budget, bytes", p, self.budget_bytes as f64);
        e.gauge("attach_managed_pages", "Present pages of the managed mappings at the last scan", p, self.managed_pages as f64);
        e.counter("attach_scans_total", "Scans of the process's page tables", p, self.scans as f64);
        e.counter("attach_pages_moved_total", "Pages move_pages moved", p, self.pages_moved as f64);
        e.counter("attach_pages_refused_total", "Pages move_pages would not move (shared, pinned, busy)", p, self.pages_refused as f64);
        e.counter("attach_pages_written_seen_total", "Pages seen written (soft-dirty) by the scans", p, self.pages_written_seen as f64);
        for (name, node, pages) in &self.tiers {
            let node = node.to_string();
            e.gauge(
                "attach_tier_pages",
                "Pages per tier",
                &[("pid", &pid), ("tier", name), ("node", &node)],
                *pages as f64,
            );
        }
        let a = &self.plan;
        for (outcome, v) in page_outcomes(a) {
            e.counter(
                "attach_plan_pages_total",
                "Pages of the policy's planned moves, by outcome (as tiermem_plan_pages_total)",
                &[("pid", &pid), ("outcome", outcome)],
                v as f64,
            );
        }
    }
}

/// The plan's pages by outcome, as the `outcome` label of `*plan_pages_total`.
fn page_outcomes(a: &tiermem_core::plan::Applied) -> [(&'static str, u64); 5] {
    [
        ("tried", a.pages_tried),
        ("applied", a.pages_applied),
        ("already_there", a.pages_already_there),
        ("no_capacity", a.pages_no_capacity),
        ("over_quota", a.pages_over_quota),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_written_once_with_help_and_type_and_escaped_labels() {
        let mut e = Exposition::default();
        e.gauge("x_bytes", "X\\ in\nbytes", &[("tier", "a\"b\\c\nd")], 1.0);
        e.gauge("x_bytes", "", &[("tier", "2")], 2.5);
        e.counter("y_total", "Y", &[], f64::NAN);
        let t = e.render();
        assert_eq!(
            t,
            "# HELP tiermem_x_bytes X\\\\ in\\nbytes\n# TYPE tiermem_x_bytes gauge\n\
             tiermem_x_bytes{tier=\"a\\\"b\\\\c\\nd\"} 1\ntiermem_x_bytes{tier=\"2\"} 2.5\n\
             # HELP tiermem_y_total Y\n# TYPE tiermem_y_total counter\ntiermem_y_total NaN\n"
        );
    }

    #[test]
    fn every_family_of_the_stats_has_help_and_type_and_a_sample() {
        let s = Stats {
            tiers: vec![crate::stats::TierStats {
                name: "1:lz4".into(),
                ..Default::default()
            }],
            slo: Some(Default::default()),
            policy_counters: [("solves".to_string(), 3)].into_iter().collect(),
            ..Default::default()
        };
        let text = s.prometheus();
        let mut names = Vec::new();
        for l in text.lines() {
            if let Some(h) = l.strip_prefix("# HELP ") {
                let (n, help) = h.split_once(' ').unwrap();
                assert!(!help.is_empty(), "{n} has no help");
                names.push(n.to_string());
            } else if let Some(t) = l.strip_prefix("# TYPE ") {
                assert_eq!(t.split_once(' ').unwrap().0, names.last().unwrap());
            } else {
                let n = l.split(['{', ' ']).next().unwrap();
                assert_eq!(n, names.last().unwrap(), "{l}: a sample outside its family");
            }
        }
        let unique: std::collections::BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "a family written twice");
        assert!(names.len() > 50, "{}", names.len());
    }
}
