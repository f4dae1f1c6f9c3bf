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
        let (name, level) = match text.split_once(':') {
            Some((n, l)) => (
                n,
                Some(
                    l.parse::<i32>()
                        .map_err(|_| format!("bad level `{l}` in codec `{text}`"))?,
                ),
            ),
            None => (text, None),
        };
        let c = match name {
            "lz4" => Codec::Lz4,
            "zstd" => Codec::Zstd(level.unwrap_or(1)),
            "deflate" => Codec::Deflate(level.unwrap_or(1).clamp(0, 9) as u32),
            "lzo" => Codec::Lzo,
            _ => {
                return Err(format!(
                    "unknown codec `{text}`; expected lz4, zstd[:LEVEL], deflate[:LEVEL] or lzo"
                ))
            }
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
