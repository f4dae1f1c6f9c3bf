//! Units. Quantities carry their unit in the name (`_ns`, `_bytes`, `_pages`,
//! `_bytes_per_s`); page identity and page ranges are types.

use serde::{Deserialize, Serialize};

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;
/// One cache line: the unit of a memory request (Colloid §2.2: T = N·64/L).
pub const CACHELINE_BYTES: u64 = 64;
pub const NS_PER_S: f64 = 1e9;

/// Index of a page in a backend's dense page space (page size is the backend's `page_bytes`).
pub type PageIdx = u32;

/// A contiguous run of pages `[start, start + len)` in the dense page space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PageRange {
    pub start: PageIdx,
    pub len: u32,
}

impl PageRange {
    pub fn one(page: PageIdx) -> Self {
        PageRange {
            start: page,
            len: 1,
        }
    }
    pub fn end(&self) -> PageIdx {
        self.start + self.len
    }
    pub fn pages(&self) -> impl Iterator<Item = PageIdx> {
        self.start..self.end()
    }
    pub fn contains(&self, page: PageIdx) -> bool {
        page >= self.start && page < self.end()
    }
}

/// A size in a config: a string with a unit ("4GiB", "512MiB", "3KiB") or an integer
/// number of bytes. Every size field of every tiermem config is a `Size`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

/// By hand, so that a float, a negative number or another type says what a size is
/// (an untagged enum only says "data did not match any variant").
impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Size, D::Error> {
        struct V;
        const WHAT: &str =
            "a size: an integer number of bytes (4096) or a string with a unit (\"64K\", \"2M\", \"32G\")";
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(WHAT)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Size, E> {
                Ok(Size::Bytes(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Size, E> {
                u64::try_from(v)
                    .map(Size::Bytes)
                    .map_err(|_| E::custom(format!("{v} is negative; expected {WHAT}")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Size, E> {
                Err(E::custom(format!(
                    "{v:e} is a floating-point number; expected {WHAT}"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Size, E> {
                Ok(Size::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

impl Size {
    /// The size in bytes; a bad string is an error naming `path`.
    pub fn bytes(&self, path: &str) -> crate::Result<u64> {
        match self {
            Size::Bytes(b) => Ok(*b),
            Size::Text(t) => parse_size(t).map_err(|e| crate::config::invalid(path, e)),
        }
    }
    /// A size written as text ("3KiB").
    pub fn text(t: &str) -> Size {
        Size::Text(t.to_string())
    }
}

/// Parse a human size: "4096", "4K", "2MiB", "1.5G", "72GB" (binary multiples).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("`{text}` is not a size; write e.g. 4096, 64K, 2MiB, 7.2G"))?;
    let mult = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => KIB,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => GIB * 1024,
        other => {
            return Err(format!(
                "unknown size suffix `{other}` in `{text}`; use K, M, G or T"
            ))
        }
    };
    let bytes = (value * mult as f64).round();
    // 2^64 as f64: anything at or above it does not fit (and `as u64` would saturate).
    if !bytes.is_finite() || bytes >= 18_446_744_073_709_551_616.0 {
        return Err(format!(
            "`{text}` is too large: a size must be below 16 EiB (2^64 bytes); write e.g. 64G or 2T"
        ));
    }
    Ok(bytes as u64)
}

/// Format bytes for humans (binary units).
pub fn format_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes >= GIB {
        format!("{:.2} GiB", b / GIB as f64)
    } else if bytes >= MIB {
        format!("{:.1} MiB", b / MIB as f64)
    } else if bytes >= KIB {
        format!("{:.1} KiB", b / KIB as f64)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("2MiB").unwrap(), 2 * MIB);
        assert_eq!(
            parse_size("7.2G").unwrap(),
            (7.2 * GIB as f64).round() as u64
        );
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("abc").is_err());
        assert!(parse_size("99999999999999999999G").is_err());
        assert!(parse_size("16777216T").is_err());
        assert!(parse_size("-1G").is_err());
        assert_eq!(parse_size("16777215T").unwrap(), 16_777_215 * (GIB * 1024));
    }
    #[test]
    fn ranges() {
        let r = PageRange { start: 4, len: 3 };
        assert_eq!(r.pages().collect::<Vec<_>>(), vec![4, 5, 6]);
        assert!(r.contains(6) && !r.contains(7));
    }
}
