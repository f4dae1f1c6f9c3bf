//! Measured compressed tiers: the rows of a `tiermem tiers characterize` output (its
//! `tiers.json` or `tiers.csv`), applied to a simulator config's compressed tiers as their
//! `fault_ns` and `compress_ns` (TierScape's tier latencies per codec and allocator, from the
//! characterization instead of the simulator's codec table).

use crate::compressed::full_codec_name;
use serde_json::{json, Value};
use std::path::Path;
use tiermem_core::{Error, Result};

/// One measured candidate: codec (with its level), allocator, backing and its times, ns.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasuredRow {
    pub name: String,
    pub codec: String,
    pub allocator: String,
    pub backing: String,
    pub fault_ns: f64,
    pub compress_ns: f64,
}

/// A characterization: where it came from (`origin`, a file name) and its rows.
#[derive(Clone, Debug)]
pub struct MeasuredTiers {
    pub origin: String,
    /// The characterization's own `source` (its pages), when the file says.
    pub source: Option<String>,
    pub rows: Vec<MeasuredRow>,
}

impl MeasuredTiers {
    /// Read a `tiers.json` or `tiers.csv` (by extension; otherwise JSON if it starts with
    /// `{`).
    pub fn read(path: &Path) -> Result<MeasuredTiers> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::config(format!("cannot read {}: {e}", path.display())))?;
        let origin = path.display().to_string();
        let csv = match path.extension().and_then(|e| e.to_str()) {
            Some("csv") => true,
            Some("json") => false,
            _ => !text.trim_start().starts_with('{'),
        };
        if csv {
            Self::from_csv(&text, &origin)
        } else {
            Self::from_json(&text, &origin)
        }
    }

    /// A `tiers.json`: `{"source": ..., "rows": [{name, codec, allocator, backing, fault_ns,
    /// compress_ns, ...}]}`.
    pub fn from_json(text: &str, origin: &str) -> Result<MeasuredTiers> {
        let bad = |what: String| {
            Error::config(format!(
                "{origin}: {what}; give a `tiermem tiers characterize` tiers.json or tiers.csv"
            ))
        };
        let doc: Value = serde_json::from_str(text).map_err(|e| bad(format!("not JSON ({e})")))?;
        let rows = doc["rows"]
            .as_array()
            .ok_or_else(|| bad("no `rows` list".into()))?;
        let mut out = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            let s = |k: &str| {
                r[k].as_str()
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("rows[{i}] has no `{k}`")))
            };
            let n = |k: &str| {
                r[k].as_f64()
                    .ok_or_else(|| bad(format!("rows[{i}] has no number `{k}`")))
            };
            out.push(MeasuredRow {
                name: s("name")?,
                codec: s("codec")?,
                allocator: s("allocator")?,
                backing: s("backing")?,
                fault_ns: n("fault_ns")?,
                compress_ns: n("compress_ns")?,
            });
        }
        Ok(MeasuredTiers {
            origin: origin.to_string(),
            source: doc["source"].as_str().map(str::to_string),
            rows: out,
        })
    }

    /// A `tiers.csv`: a header naming at least `name,codec,allocator,backing,compress_ns,
    /// fault_ns`, then one row per candidate.
    pub fn from_csv(text: &str, origin: &str) -> Result<MeasuredTiers> {
        let bad = |what: String| {
            Error::config(format!(
                "{origin}: {what}; give a `tiermem tiers characterize` tiers.json or tiers.csv"
            ))
        };
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let header: Vec<&str> = lines
            .next()
            .map(|(_, l)| l.split(',').map(str::trim).collect())
            .unwrap_or_default();
        let col = |k: &str| {
            header
                .iter()
                .position(|h| *h == k)
                .ok_or_else(|| bad(format!("no `{k}` column in the header")))
        };
        let (name, codec, allocator, backing, fault, compress) = (
            col("name")?,
            col("codec")?,
            col("allocator")?,
            col("backing")?,
            col("fault_ns")?,
            col("compress_ns")?,
        );
        let mut rows = Vec::new();
        for (i, line) in lines {
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            if f.len() != header.len() {
                return Err(bad(format!(
                    "line {}: {} fields, the header has {}",
                    i + 1,
                    f.len(),
                    header.len()
                )));
            }
            let num = |c: usize| {
                f[c].parse::<f64>().map_err(|_| {
                    bad(format!(
                        "line {}: `{}` is not a number ({})",
                        i + 1,
                        f[c],
                        header[c]
                    ))
                })
            };
            rows.push(MeasuredRow {
                name: f[name].to_string(),
                codec: f[codec].to_string(),
                allocator: f[allocator].to_string(),
                backing: f[backing].to_string(),
                fault_ns: num(fault)?,
                compress_ns: num(compress)?,
            });
        }
        Ok(MeasuredTiers {
            origin: origin.to_string(),
            source: None,
            rows,
        })
    }

    /// The row measured with the pool in DRAM for this codec (`deflate` = `deflate:1`, as
    /// the simulator reads it) and allocator.
    pub fn on_dram(&self, codec: &str, allocator: &str) -> Option<&MeasuredRow> {
        let codec = full_codec_name(codec);
        self.rows.iter().find(|r| {
            r.backing == "dram" && full_codec_name(&r.codec) == codec && r.allocator == allocator
        })
    }

    /// Set `fault_ns` and `compress_ns` of every compressed tier in `tiers` (a config's
    /// `machine.tiers`, as TOML) from its codec and allocator's DRAM-backed row; a tier
    /// without one is an error naming the file and the tier. Returns what each tier got.
    pub fn apply(&self, tiers: &mut [toml::Value]) -> Result<Vec<Value>> {
        let mut used = Vec::new();
        for t in tiers.iter_mut() {
            let Some(t) = t.as_table_mut() else { continue };
            if t.get("kind").and_then(|k| k.as_str()) != Some("compressed") {
                continue;
            }
            let get = |k: &str, default: &str| {
                t.get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or(default)
                    .to_string()
            };
            let name = get("name", "?");
            let codec = get("codec", tiermem_core::tier::DEFAULT_CODEC);
            let allocator = get("allocator", tiermem_core::tier::DEFAULT_ALLOCATOR);
            let full = full_codec_name(&codec);
            let row = self.on_dram(&codec, &allocator).ok_or_else(|| {
                Error::config(format!(
                    "{}: no measured tier for `{name}` ({allocator}-{full} on DRAM backing); characterize it (`tiermem tiers characterize`) or give a file that has it",
                    self.origin
                ))
            })?;
            for (field, v) in [("fault_ns", row.fault_ns), ("compress_ns", row.compress_ns)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::config(format!(
                        "{}: `{}` (for tier `{name}`) has {field} {v}: no page was measured; characterize pages that compress below max_compressed",
                        self.origin, row.name
                    )));
                }
            }
            t.insert("fault_ns".into(), toml::Value::Float(row.fault_ns));
            t.insert("compress_ns".into(), toml::Value::Float(row.compress_ns));
            used.push(json!({
                "tier": name,
                "measured": row.name,
                "fault_ns": row.fault_ns,
                "compress_ns": row.compress_ns,
            }));
        }
        Ok(used)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "name,codec,allocator,backing,cost_per_gb,pages,compressible_pages,compress_ns,fault_ns,ratio,tco_saving
zsmalloc-deflate:1-dram,deflate:1,zsmalloc,dram,1,8,8,28000.0,22000.0,2.7,0.63
zsmalloc-deflate:1-node:1,deflate:1,zsmalloc,node:1,0.33,8,8,28000.0,40000.0,2.7,0.8
zbud-lz4-dram,lz4,zbud,dram,1,8,8,10000.5,5500.0,1.0,0.0
";

    #[test]
    fn csv_and_json_read_the_same_rows_and_deflate_is_level_1() {
        let c = MeasuredTiers::from_csv(CSV, "t.csv").unwrap();
        let row = c.on_dram("deflate", "zsmalloc").unwrap();
        assert_eq!((row.fault_ns, row.compress_ns), (22000.0, 28000.0));
        assert!(c.on_dram("deflate:6", "zsmalloc").is_none());
        assert!(c.on_dram("lz4", "zsmalloc").is_none());
        let rows: Vec<Value> = c
            .rows
            .iter()
            .map(|r| {
                json!({"name": r.name, "codec": r.codec, "allocator": r.allocator,
                       "backing": r.backing, "fault_ns": r.fault_ns, "compress_ns": r.compress_ns})
            })
            .collect();
        let j =
            MeasuredTiers::from_json(&json!({"source": "s", "rows": rows}).to_string(), "t.json")
                .unwrap();
        assert_eq!(j.rows, c.rows);
        assert_eq!(j.source.as_deref(), Some("s"));
    }

    #[test]
    fn a_tier_without_a_row_is_named() {
        let c = MeasuredTiers::from_csv(CSV, "t.csv").unwrap();
        let mut tiers: Vec<toml::Value> = vec![
            toml::from_str("name = \"dram\"\nkind = \"dram\"").unwrap(),
            toml::from_str(
                "name = \"a\"\nkind = \"compressed\"\ncodec = \"lz4\"\nallocator = \"zbud\"",
            )
            .unwrap(),
            toml::from_str("name = \"b\"\nkind = \"compressed\"\ncodec = \"lzo\"").unwrap(),
        ];
        let e = c.apply(&mut tiers).unwrap_err();
        assert_eq!(e.kind.exit_code(), 2);
        let e = e.to_string();
        assert!(
            e.contains("t.csv") && e.contains("`b`") && e.contains("zsmalloc-lzo"),
            "{e}"
        );
        tiers.pop();
        let used = c.apply(&mut tiers).unwrap();
        assert_eq!(used.len(), 1);
        assert_eq!(tiers[1]["fault_ns"].as_float(), Some(5500.0));
        assert_eq!(tiers[1]["compress_ns"].as_float(), Some(10000.5));
        assert!(tiers[0].get("fault_ns").is_none());
    }
}
