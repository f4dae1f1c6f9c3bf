//! Strict TOML decoding: unknown fields are errors, and every error names the full
//! field path (`machine.tiers[1].peak_bandwidth_gbps`) and, when known, the line.
//!
//! Every config struct in tiermem derives `Deserialize` with `deny_unknown_fields`;
//! semantic checks implement [`Validate`] and report through [`invalid`].

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;

/// Decode `text` (the contents of `origin`) into `T`, naming the failing field path.
///
/// Every error is one line: `ORIGIN:LINE: field `PATH`: what is wrong; the fix`. A syntax
/// error names the key on the failing line (`number too large` names the field too), and a
/// config that lacks several required fields lists them all at once. Origins in angle
/// brackets that start with `<dict` are generated TOML (a Python dict): their line numbers
/// mean nothing to the user and are left out.
pub fn from_toml_str<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    let de = toml::Deserializer::new(text);
    let value: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let offset = inner.span().map(|s| s.start.min(text.len()));
        let line = offset.map(|o| text[..o].matches('\n').count() + 1);
        let mut msg = one_line(inner.message());
        if msg.is_empty() {
            // toml says nothing for some stray characters (a control byte in a comment).
            let (col, ch) = offset.map_or((0, None), |o| {
                let start = text[..o].rfind('\n').map_or(0, |i| i + 1);
                (text[start..o].chars().count() + 1, text[o..].chars().next())
            });
            msg = match ch {
                Some(c) => format!(
                    "invalid character `{}` at column {col}; TOML text allows no control characters outside escapes: remove it",
                    c.escape_default()
                ),
                None => "invalid TOML".to_string(),
            };
        }
        // A hand-written decoder (the workload table) reports `sub.field`: ... relative to
        // its table: fold that into the path.
        let mut path = path;
        if let Some(rest) = msg.strip_prefix('`') {
            if let Some((sub, tail)) = rest.split_once("`: ") {
                if !sub.is_empty() && !sub.contains(' ') {
                    path = join(if path == "." { "" } else { &path }, sub);
                    msg = tail.to_string();
                }
            }
        }
        let at = match line {
            Some(l) if !origin.starts_with("<dict") => format!("{origin}:{l}"),
            _ => origin.to_string(),
        };
        if let Some(first) = missing_field_name(&msg) {
            let all = all_missing_fields::<T>(text);
            if all.len() > 1 {
                let list: Vec<String> = all.iter().map(|f| format!("`{f}`")).collect();
                return Error::config(format!(
                    "{origin}: missing required fields {}; add them (every field is listed with its meaning in the example configs)",
                    list.join(", ")
                ));
            }
            let full = join(if path == "." { "" } else { &path }, first);
            return Error::config(format!("{at}: field `{full}`: missing; add it"));
        }
        let path = if path == "." || path.is_empty() {
            // A syntax error has no serde path: name the key on the failing line.
            offset.and_then(|o| key_path_at(text, o, false)).unwrap_or_default()
        } else {
            // serde loses the field inside an internally tagged enum (`[policy]`): the key
            // on the failing line, when it lies under the reported path, is more precise.
            match offset.and_then(|o| key_path_at(text, o, true)) {
                Some(k) if k.len() > path.len() && k.starts_with(&format!("{path}.")) => k,
                _ => path,
            }
        };
        let hint = if msg.contains("number too large") {
            "; TOML integers are at most 9223372036854775807: write a size as a string such as \"64G\", a count within that range".to_string()
        } else {
            renamed_hint(&msg)
        };
        if path.is_empty() {
            Error::config(format!("{at}: {msg}{hint}"))
        } else {
            Error::config(format!("{at}: field `{path}`: {msg}{hint}"))
        }
    })?;
    Ok(value)
}

/// Decode one table of a config whose shape a tag chose (`[policy]` by its `policy`,
/// `[workload]` by its `kind`): unknown fields are errors, and an error names the failing
/// field relative to the table (`` `quantum_ms`: invalid type ``), which [`from_toml_str`]
/// folds into the full path.
pub fn decode_table<T: DeserializeOwned>(t: toml::Table) -> std::result::Result<T, String> {
    serde_path_to_error::deserialize(toml::Value::Table(t)).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().message().trim().to_string();
        if path == "." || path.is_empty() {
            msg
        } else {
            format!("`{path}`: {msg}")
        }
    })
}

/// Fields renamed when the configs took one unit convention (sizes as size strings,
/// bandwidth in GB/s, time as f64 with its unit suffix): an old spelling is an error that
/// names the new field, never silently accepted.
pub const RENAMED_FIELDS: &[(&str, &str)] = &[
    (
        "max_compressed_bytes",
        "`max_compressed`, a size such as \"3KiB\"",
    ),
    (
        "migration_limit_mib_per_s",
        "`migration_limit_gbps` in GB/s (1 MiB/s = 0.001048576 GB/s)",
    ),
    (
        "promote_rate_limit_mib_per_s",
        "`promote_rate_limit_gbps` in GB/s (1 MiB/s = 0.001048576 GB/s)",
    ),
    (
        "peak_bandwidth",
        "`peak_bandwidth_gbps` in GB/s (1e9 bytes/s)",
    ),
    (
        "peak_bandwidth_bytes_per_s",
        "`peak_bandwidth_gbps` in GB/s (1e9 bytes/s)",
    ),
    ("capacity_bytes", "`capacity`, a size such as \"4GiB\""),
    ("unloaded_latency", "`unloaded_latency_ns`"),
];

/// "; `OLD` is now NEW" for an unknown field that was renamed.
fn renamed_hint(msg: &str) -> String {
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return String::new();
    };
    let field = rest.split('`').next().unwrap_or("");
    RENAMED_FIELDS
        .iter()
        .find(|(old, _)| *old == field)
        .map(|(old, new)| format!("; `{old}` is now {new}: rename it"))
        .unwrap_or_default()
}

/// Collapse a multi-line message (toml's syntax errors) into one line.
pub fn one_line(msg: &str) -> String {
    msg.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `X` in "missing field `X`...".
fn missing_field_name(msg: &str) -> Option<&str> {
    let rest = msg.split("missing field `").nth(1)?;
    rest.split('`').next()
}

/// The dotted key path of the `key = value` line holding byte `offset` of `text`
/// (`machine.tiers[1].capacity`), from the table headers above it.
fn key_path_at(text: &str, offset: usize, anywhere: bool) -> Option<String> {
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let mut table = String::new();
    let mut arrays: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for line in text[..start].lines() {
        let l = line.trim();
        if let Some(rest) = l.strip_prefix("[[") {
            let name = rest.split("]]").next().unwrap_or("").trim().to_string();
            let n = arrays.entry(name.clone()).or_insert(0);
            table = format!("{name}[{n}]");
            *n += 1;
        } else if let Some(rest) = l.strip_prefix('[') {
            table = rest.split(']').next().unwrap_or("").trim().to_string();
        }
    }
    let line = text[start..].lines().next()?;
    // Only a value's error (after its `=`) belongs to the key: a broken line before it
    // (an unclosed array) is reported where the parser stopped, on the next line.
    let eq = line.find('=')?;
    if offset - start <= eq && !anywhere {
        return None;
    }
    let key = &line[..eq];
    let key = key.trim().trim_matches('"');
    if key.is_empty() || key.starts_with('[') || key.contains(char::is_whitespace) {
        return None;
    }
    Some(join(&table, key))
}

enum Seg {
    Key(String),
    Idx(usize),
}

/// Segments of a serde_path_to_error path (`machine.tiers[1].curve`).
fn segments(path: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    if path == "." || path.is_empty() {
        return out;
    }
    for part in path.split('.') {
        let mut it = part.split('[');
        if let Some(k) = it.next() {
            if !k.is_empty() {
                out.push(Seg::Key(k.to_string()));
            }
        }
        for idx in it {
            if let Ok(i) = idx.trim_end_matches(']').parse() {
                out.push(Seg::Idx(i));
            }
        }
    }
    out
}

fn value_at<'a>(root: &'a mut toml::Value, path: &str) -> Option<&'a mut toml::Value> {
    let mut v = root;
    for s in segments(path) {
        v = match s {
            Seg::Key(k) => v.as_table_mut()?.get_mut(&k)?,
            Seg::Idx(i) => v.as_array_mut()?.get_mut(i)?,
        };
    }
    Some(v)
}

/// The first name offered by an error message ("expected one of `hemem`, ..." or
/// `use kind = "gups", ...`).
fn suggestion(msg: &str) -> Option<String> {
    let at = msg.find("expected").or_else(|| msg.find("use "))?;
    let rest = &msg[at..];
    let q = rest.find(['`', '"'])?;
    let close = rest.as_bytes()[q] as char;
    let word = rest[q + 1..].split(close).next()?;
    (!word.is_empty() && word.len() < 40).then(|| word.to_string())
}

/// Every required field missing from `text`, as full paths: decode repeatedly, filling
/// each missing field with a placeholder (trying a few types) so that the next one shows.
/// Fields inside a table that is itself missing are not listed (the table is).
fn all_missing_fields<T: DeserializeOwned>(text: &str) -> Vec<String> {
    struct Placeholder {
        path: String,
        candidates: Vec<toml::Value>,
        next: usize,
    }
    let Ok(table) = text.parse::<toml::Table>() else {
        return Vec::new();
    };
    let mut root = toml::Value::Table(table);
    let mut found = Vec::new();
    let mut filled: Vec<Placeholder> = Vec::new();
    for _ in 0..256 {
        let err = match serde_path_to_error::deserialize::<_, T>(root.clone()) {
            Ok(_) => break,
            Err(e) => e,
        };
        let path = err.path().to_string();
        let msg = err.inner().to_string();
        let container = if path == "." { String::new() } else { path };
        if let Some(field) = missing_field_name(&msg) {
            let full = join(&container, field);
            if filled.iter().any(|p| p.path == full) {
                break;
            }
            let inside = filled.iter().any(|p| {
                full.strip_prefix(&p.path)
                    .is_some_and(|r| r.starts_with('.') || r.starts_with('['))
            });
            if !inside {
                found.push(full.clone());
            }
            let candidates = vec![
                toml::Value::Integer(1),
                toml::Value::String("1".into()),
                toml::Value::Table(toml::Table::new()),
                toml::Value::Array(Vec::new()),
                toml::Value::Float(1.0),
                toml::Value::Boolean(true),
            ];
            let Some(t) = value_at(&mut root, &container).and_then(|v| v.as_table_mut()) else {
                break;
            };
            t.insert(field.to_string(), candidates[0].clone());
            filled.push(Placeholder {
                path: full,
                candidates,
                next: 1,
            });
        } else {
            // Anything else is blamed on the newest placeholder: try its next type (or a
            // name the error suggests).
            let Some(p) = filled.last_mut() else { break };
            if let Some(s) = suggestion(&msg) {
                let v = toml::Value::String(s);
                if !p.candidates.contains(&v) {
                    p.candidates.insert(p.next, v);
                }
            }
            if p.next >= p.candidates.len() {
                break;
            }
            let v = p.candidates[p.next].clone();
            p.next += 1;
            let Some(slot) = value_at(&mut root, &p.path) else {
                break;
            };
            *slot = v;
        }
    }
    found
}

/// Read and decode a TOML file.
pub fn from_toml_file<T: DeserializeOwned>(path: &std::path::Path) -> Result<T> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::new(
            crate::ErrorKind::Config,
            format!("cannot read config {}: {e}", path.display()),
        )
    })?;
    from_toml_str(&text, &path.display().to_string())
}

/// Semantic validation after decoding. `path` is the field path of `self`.
pub trait Validate {
    fn validate(&self, path: &str) -> Result<()>;
}

/// The error for an invalid value: names the field, what is wrong and what would be right.
pub fn invalid(path: &str, problem: impl std::fmt::Display) -> Error {
    Error::config(format!("field `{path}`: {problem}"))
}

/// Check `lo < value <= hi` for a named field (zero or less is not a value it can take).
pub fn check_positive(path: &str, value: f64, hi: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 && value <= hi {
        Ok(())
    } else {
        Err(invalid(
            path,
            format!("{value} is out of range; expected a positive value, at most {hi}"),
        ))
    }
}

/// Check `lo <= value <= hi` for a named field.
pub fn check_range(path: &str, value: f64, lo: f64, hi: f64) -> Result<()> {
    if value.is_finite() && value >= lo && value <= hi {
        Ok(())
    } else {
        Err(invalid(
            path,
            format!("{value} is out of range; expected a value in [{lo}, {hi}]"),
        ))
    }
}

/// Join a parent path and a child name.
pub fn join(parent: &str, child: &str) -> String {
    if parent.is_empty() {
        child.to_string()
    } else {
        format!("{parent}.{child}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        #[allow(dead_code)]
        size: u32,
    }
    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        #[allow(dead_code)]
        items: Vec<Inner>,
    }

    #[test]
    fn unknown_field_names_full_path_and_line() {
        let text = "[[items]]\nsize = 1\n[[items]]\nsize = 2\nsizee = 3\n";
        let err = from_toml_str::<Outer>(text, "x.toml").unwrap_err();
        let s = err.to_string();
        assert!(s.contains("items[1]"), "{s}");
        assert!(s.contains("sizee"), "{s}");
        assert!(s.contains("x.toml:5"), "{s}");
    }

    #[test]
    fn wrong_type_names_field() {
        let err = from_toml_str::<Outer>("[[items]]\nsize = \"big\"\n", "y.toml").unwrap_err();
        assert!(err.to_string().contains("items[0].size"), "{err}");
    }
}
