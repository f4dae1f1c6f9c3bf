//! The control directory of a running program: RUN_DIR/PID/{stats.json, metrics.prom,
//! budget}. The runtime publishes stats there every 250 ms and picks up budget requests;
//! `tiermem stat` and `tiermem budget` read and write it. Files, not sockets: nothing to
//! serve, nothing to hang, and a Prometheus node-exporter textfile collector can scrape
//! metrics.prom directly.

use crate::config::Budget;
use crate::stats::Stats;
use std::path::PathBuf;

pub struct Control {
    pub dir: PathBuf,
}

impl Control {
    pub fn new(run_dir: &str, pid: u32) -> Control {
        Control {
            dir: PathBuf::from(run_dir).join(pid.to_string()),
        }
    }

    fn write_atomic(&self, name: &str, text: &str) {
        let _ = std::fs::create_dir_all(&self.dir);
        let tmp = self.dir.join(format!(".{name}.tmp"));
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, self.dir.join(name));
        }
    }

    pub fn publish(&self, s: &Stats) {
        if let Ok(j) = serde_json::to_string_pretty(s) {
            self.write_atomic("stats.json", &j);
        }
        self.write_atomic("metrics.prom", &s.prometheus());
    }

    pub fn read_stats(&self) -> Option<Stats> {
        let text = std::fs::read_to_string(self.dir.join("stats.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub fn request_budget(&self, text: &str) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = self.dir.join(".budget.tmp");
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, self.dir.join("budget"))
    }

    pub fn take_budget_request(&self) -> Option<Budget> {
        let p = self.dir.join("budget");
        let text = std::fs::read_to_string(&p).ok()?;
        let _ = std::fs::remove_file(&p);
        match Budget::parse(&text) {
            Ok(b) => Some(b),
            Err(e) => {
                crate::runtime::report(&format!("ignored budget request: {e}"));
                None
            }
        }
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
