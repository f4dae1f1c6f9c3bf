//! What a simulation run returns: a summary and a per-quantum time series.

use serde::Serialize;

/// One column of the per-quantum time series.
#[derive(Clone, Debug, Serialize)]
pub struct Column {
    pub name: String,
    pub values: Vec<f64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SimOutput {
    /// `summary.json` contents.
    pub summary: serde_json::Value,
    /// Columns of `timeseries.csv`, all the same length; the first is `t_s`.
    pub timeseries: Vec<Column>,
}

impl SimOutput {
    /// CSV text of the time series.
    pub fn timeseries_csv(&self) -> String {
        let mut out = String::new();
        let names: Vec<&str> = self.timeseries.iter().map(|c| c.name.as_str()).collect();
        out.push_str(&names.join(","));
        out.push('\n');
        let rows = self.timeseries.first().map_or(0, |c| c.values.len());
        for r in 0..rows {
            let line: Vec<String> = self
                .timeseries
                .iter()
                .map(|c| format!("{}", c.values[r]))
                .collect();
            out.push_str(&line.join(","));
            out.push('\n');
        }
        out
    }

    /// Write `summary.json` and `timeseries.csv` into `dir` (created if needed).
    pub fn write_to(&self, dir: &std::path::Path) -> tiermem_core::Result<()> {
        std::fs::create_dir_all(dir).map_err(|e| tiermem_core::Error::io(dir.display(), e))?;
        let summary = serde_json::to_string_pretty(&self.summary).expect("json");
        let p = dir.join("summary.json");
        std::fs::write(&p, summary + "\n").map_err(|e| tiermem_core::Error::io(p.display(), e))?;
        let p = dir.join("timeseries.csv");
        std::fs::write(&p, self.timeseries_csv())
            .map_err(|e| tiermem_core::Error::io(p.display(), e))?;
        Ok(())
    }
}

/// Run the simulation described by a TOML config (see `examples/sim.toml`).
pub fn simulate_toml(text: &str, origin: &str) -> tiermem_core::Result<SimOutput> {
    let cfg = crate::config::SimConfig::from_toml(text, origin)?;
    let outcome = crate::runner::run(&cfg)?;
    Ok(outcome.output(&cfg))
}
