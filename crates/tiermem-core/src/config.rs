//! Strict TOML decoding: unknown fields are errors, and every error names the full
//! field path (`machine.tiers[1].peak_bandwidth_gbps`) and, when known, the line.
//!
//! Every config struct in tiermem derives `Deserialize` with `deny_unknown_fields`;
//! semantic checks implement [`Validate`] and report through [`invalid`].

use crate::error::{Error, Result};
use serde::de::DeserializeOwned;

/// Decode `text` (the contents of `origin`) into `T`, naming the failing field path.
pub fn from_toml_str<T: DeserializeOwned>(text: &str, origin: &str) -> Result<T> {
    let de = toml::Deserializer::new(text);
    let value: T = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner
            .span()
            .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
        let msg = inner.message().trim().to_string();
        let at = match line {
            Some(l) => format!("{origin}:{l}"),
            None => origin.to_string(),
        };
        if path == "." || path.is_empty() {
            Error::config(format!("{at}: {msg}"))
        } else {
            Error::config(format!("{at}: field `{path}`: {msg}"))
        }
    })?;
    Ok(value)
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
