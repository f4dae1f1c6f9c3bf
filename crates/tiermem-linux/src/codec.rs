//! Page codecs: the real libraries through maintained bindings.

use serde::{Deserialize, Serialize};

/// A codec and its level, as written in the config (`"lz4"`, `"zstd:3"`, `"deflate:1"`, `"lzo"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Codec {
    Lz4,
    Zstd(i32),
    Deflate(u32),
    Lzo,
}

impl Codec {
    pub fn parse(text: &str) -> Result<Codec, String> {
        const KNOWN: &str = "expected lz4, zstd[:LEVEL], deflate[:LEVEL] or lzo";
        let (name, level) = match text.split_once(':') {
            Some((n, l)) => (
                n,
                Some(l.trim().parse::<i32>().map_err(|_| {
                    format!("bad level `{l}` in codec `{text}`: a level is an integer, e.g. zstd:3 or deflate:6")
                })?),
            ),
            None => (text, None),
        };
        let c = match (name, level) {
            ("lz4" | "lzo", Some(_)) => {
                return Err(format!(
                    "codec `{text}`: {name} takes no level; write `{name}`"
                ))
            }
            ("lz4", None) => Codec::Lz4,
            ("lzo", None) => Codec::Lzo,
            ("zstd", l) => {
                let l = l.unwrap_or(1);
                let range = crate::codec_ext::ZSTD_LEVELS;
                if !range.contains(&l) {
                    return Err(format!(
                        "codec `{text}`: zstd levels are {}..={} (faster to smaller); e.g. zstd:3",
                        range.start(),
                        range.end()
                    ));
                }
                Codec::Zstd(l)
            }
            ("deflate", l) => {
                let l = l.unwrap_or(1);
                if !(0..=9).contains(&l) {
                    return Err(format!(
                        "codec `{text}`: deflate levels are 0..=9 (0 stores, 9 is smallest); e.g. deflate:6"
                    ));
                }
                Codec::Deflate(l as u32)
            }
            _ => return Err(format!("unknown codec `{text}`; {KNOWN}")),
        };
        if !c.available() {
            return Err(format!(
                "codec `{text}` is not built into this tiermem (see docs/runtime.md)"
            ));
        }
        Ok(c)
    }

    pub fn name(&self) -> String {
        match self {
            Codec::Lz4 => "lz4".into(),
            Codec::Zstd(l) => format!("zstd:{l}"),
            Codec::Deflate(l) => format!("deflate:{l}"),
            Codec::Lzo => "lzo".into(),
        }
    }

    pub fn available(&self) -> bool {
        matches!(self, Codec::Lz4) || crate::codec_ext::available(self)
    }

    /// Compress one page into `out` (cleared first). Returns the compressed length, or
    /// `None` when the result would not be smaller than `limit` bytes.
    pub fn compress(&self, page: &[u8], out: &mut Vec<u8>, limit: usize) -> Option<usize> {
        out.clear();
        match self {
            Codec::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(page.len()), 0);
                let n = lz4_flex::block::compress_into(page, out).ok()?;
                out.truncate(n);
            }
            other => crate::codec_ext::compress(other, page, out)?,
        }
        (out.len() < limit).then_some(out.len())
    }

    /// Decompress into `page` (exactly one page). Returns false on corrupt input.
    pub fn decompress(&self, data: &[u8], page: &mut [u8]) -> bool {
        if crate::inject::fire(crate::inject::Kind::CodecCorrupt) {
            return false;
        }
        match self {
            Codec::Lz4 => {
                matches!(lz4_flex::block::decompress_into(data, page), Ok(n) if n == page.len())
            }
            other => crate::codec_ext::decompress(other, data, page),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn levels_out_of_range_name_the_range() {
        let e = Codec::parse("zstd:99").unwrap_err();
        assert!(e.contains("zstd levels are 1..=22"), "{e}");
        assert!(!e.contains("not built"), "{e}");
        let e = Codec::parse("deflate:10").unwrap_err();
        assert!(e.contains("0..=9"), "{e}");
        assert!(Codec::parse("lz4:3").unwrap_err().contains("no level"));
        assert!(Codec::parse("zstd:x").unwrap_err().contains("bad level"));
        assert_eq!(Codec::parse("zstd:22").unwrap(), Codec::Zstd(22));
        assert_eq!(Codec::parse("deflate:0").unwrap(), Codec::Deflate(0));
    }

    #[test]
    fn lz4_roundtrip() {
        let mut page = vec![0u8; 4096];
        for (i, b) in page.iter_mut().enumerate() {
            *b = (i % 7) as u8;
        }
        let mut out = Vec::new();
        let n = Codec::Lz4.compress(&page, &mut out, 3072).unwrap();
        assert!(n < 200);
        let mut back = vec![1u8; 4096];
        assert!(Codec::Lz4.decompress(&out, &mut back));
        assert_eq!(page, back);
    }
}
