//! zstd (libzstd via `zstd`), deflate (raw deflate via `flate2` on zlib-rs) and lzo
//! (LZO1X-1 via `minilzo`, the LZO authors' mini library). Contexts are per thread and
//! reused: creating a zstd context costs more than compressing a page.

use crate::codec::Codec;
use std::cell::RefCell;

thread_local! {
    static ZC: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static ZD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    static DC: RefCell<Option<(u32, flate2::Compress)>> = const { RefCell::new(None) };
    static DD: RefCell<Option<flate2::Decompress>> = const { RefCell::new(None) };
}

/// The deflate window the kernel's crypto API uses (`DEFLATE_DEF_WINBITS` in Linux
/// crypto/deflate.c, what zswap's and zram's "deflate" compress with): 2 KiB, at the level
/// given (the kernel's: zlib's default, 6). A page is 4 KiB, so a 32 KiB window buys little
/// ratio and costs match-search time; TierScape's deflate tiers are the kernel's.
const KERNEL_DEFLATE_WINDOW_BITS: u8 = 11;

/// zstd levels tiermem accepts: 1 up to the library's maximum (22); the library's negative
/// "fast" levels are not offered.
pub const ZSTD_LEVELS: std::ops::RangeInclusive<i32> = 1..=22;

pub fn available(c: &Codec) -> bool {
    match c {
        Codec::Zstd(l) => ZSTD_LEVELS.contains(l) && *l <= *zstd::compression_level_range().end(),
        Codec::Deflate(l) => *l <= 9,
        Codec::Lzo | Codec::Lz4 => true,
    }
}

pub fn compress(c: &Codec, page: &[u8], out: &mut Vec<u8>) -> Option<()> {
    match *c {
        Codec::Zstd(level) => ZC.with(|z| {
            let mut z = z.borrow_mut();
            if z.as_ref().map(|(l, _)| *l) != Some(level) {
                *z = Some((level, zstd::bulk::Compressor::new(level).ok()?));
            }
            out.resize(zstd::zstd_safe::compress_bound(page.len()), 0);
            let n = z
                .as_mut()
                .unwrap()
                .1
                .compress_to_buffer(page, &mut out[..])
                .ok()?;
            out.truncate(n);
            Some(())
        }),
        Codec::Deflate(level) => DC.with(|d| {
            let mut d = d.borrow_mut();
            if d.as_ref().map(|(l, _)| *l) != Some(level) {
                *d = Some((
                    level,
                    flate2::Compress::new_with_window_bits(
                        flate2::Compression::new(level),
                        false,
                        KERNEL_DEFLATE_WINDOW_BITS,
                    ),
                ));
            }
            let cx = &mut d.as_mut().unwrap().1;
            cx.reset();
            out.reserve(page.len() + 64);
            match cx
                .compress_vec(page, out, flate2::FlushCompress::Finish)
                .ok()?
            {
                flate2::Status::StreamEnd => Some(()),
                _ => None,
            }
        }),
        Codec::Lzo => {
            let v = minilzo::compress(page).ok()?;
            out.extend_from_slice(&v);
            Some(())
        }
        Codec::Lz4 => None,
    }
}

pub fn decompress(c: &Codec, data: &[u8], page: &mut [u8]) -> bool {
    if !crate::on_runtime_thread() {
        // A program thread bringing pages home (mprotect, mlock, fork) holds the state lock:
        // a `thread_local!` here is reached through its DTV, which lives in managed memory
        // and may be evicted (see `crate::init_internal_key`). A context of its own, once.
        return decompress_fresh(c, data, page);
    }
    match *c {
        Codec::Zstd(_) => ZD.with(|z| {
            let mut z = z.borrow_mut();
            if z.is_none() {
                *z = zstd::bulk::Decompressor::new().ok();
            }
            match z.as_mut() {
                Some(d) => matches!(d.decompress_to_buffer(data, page), Ok(n) if n == page.len()),
                None => false,
            }
        }),
        Codec::Deflate(_) => DD.with(|d| {
            let mut d = d.borrow_mut();
            let dx = d.get_or_insert_with(|| flate2::Decompress::new(false));
            dx.reset(false);
            matches!(
                dx.decompress(data, page, flate2::FlushDecompress::Finish),
                Ok(flate2::Status::StreamEnd)
            ) && dx.total_out() as usize == page.len()
        }),
        // No per-thread context to reuse.
        Codec::Lzo | Codec::Lz4 => decompress_fresh(c, data, page),
    }
}

/// `decompress` without the per-thread contexts.
fn decompress_fresh(c: &Codec, data: &[u8], page: &mut [u8]) -> bool {
    match *c {
        Codec::Zstd(_) => zstd::bulk::Decompressor::new()
            .ok()
            .and_then(|mut d| d.decompress_to_buffer(data, page).ok())
            .is_some_and(|n| n == page.len()),
        Codec::Deflate(_) => {
            let mut dx = flate2::Decompress::new(false);
            matches!(
                dx.decompress(data, page, flate2::FlushDecompress::Finish),
                Ok(flate2::Status::StreamEnd)
            ) && dx.total_out() as usize == page.len()
        }
        Codec::Lzo => match minilzo::decompress(data, page.len()) {
            Ok(v) if v.len() == page.len() => {
                page.copy_from_slice(&v);
                true
            }
            _ => false,
        },
        Codec::Lz4 => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn every_codec_roundtrips_a_page() {
        let mut page = vec![0u8; 4096];
        for (i, b) in page.iter_mut().enumerate() {
            *b = ((i * 7) % 13) as u8 ^ (i / 512) as u8;
        }
        for c in [
            Codec::Lz4,
            Codec::Zstd(1),
            Codec::Zstd(3),
            Codec::Deflate(1),
            Codec::Deflate(6),
            Codec::Lzo,
        ] {
            let mut out = Vec::new();
            let n = c
                .compress(&page, &mut out, 4096)
                .unwrap_or_else(|| panic!("{c:?} did not compress"));
            assert!(n < 1024, "{c:?}: {n}");
            let mut back = vec![0xEEu8; 4096];
            assert!(c.decompress(&out, &mut back), "{c:?}");
            assert_eq!(back, page, "{c:?}");
            // Corrupt input is detected, never a panic.
            let mut bad = out.clone();
            bad.truncate(bad.len() / 2);
            let _ = c.decompress(&bad, &mut back);
        }
    }
}
