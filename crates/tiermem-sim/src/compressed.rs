//! Compressed tiers (zswap-like; TierScape §2–4): a tier is a codec, a pool allocator and
//! a pool of physical 4 KiB frames (`capacity`). A page moved in is compressed (on the
//! migration thread); an access to it faults: a fixed fault cost plus the codec's
//! decompression time, after which the page lives in the default tier again.
//!
//! What a page compresses to is a property of its contents: each page draws, from a hash
//! of the seed and its index (deterministic, no per-page storage), the fraction of a page
//! lz4 compresses it to, uniform in `[page_compressibility] min..max`; another codec's
//! size is that times the codec's measured size relative to lz4 (`size_vs_lz4`).
//!
//! The pool's physical occupancy follows from packing (TierScape §2; Linux zswap docs):
//!  * zbud: at most 2 objects per frame; an object over half a frame takes a whole frame;
//!  * z3fold: at most 3 per frame: objects ≤ 1/3 frame pack 3, ≤ 1/2 pack 2, larger take one;
//!  * zsmalloc: size classes of 16 bytes, packed densely within each class (a class
//!    holding `n` objects of `s` bytes takes `ceil(n·s / 4096)` frames).
//!
//! Same-class packing only (zbud/z3fold do pair unequal buddies in Linux): a simplification
//! that never packs tighter than the real allocators.

use tiermem_core::config::invalid;
use tiermem_core::Result;

/// Bytes of a pool frame and of a simulated page in a compressed tier.
pub const FRAME: u64 = 4096;

/// One codec's costs per 4 KiB page and its size relative to lz4.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CodecModel {
    pub name: &'static str,
    pub compress_ns: f64,
    pub decompress_ns: f64,
    pub size_vs_lz4: f64,
}

/// Measured with the runtime's own codecs (`tiermem_linux::codec`: lz4_flex, minilzo,
/// zstd, flate2) by `cargo run --release -p tiermem-linux --example codec_calibration --
/// FILE`: the mean of two corpora of 4 KiB pages, text (Python 3.11 stdlib sources, 1157
/// pages) and machine code (the release `tiermem` binary, 8166 pages), fastest of 5 rounds
/// on the shared 2-core AMD EPYC dev VM (2026-11-23). Per corpus (compress / decompress
/// ns, size vs lz4): lz4 21936/2266 and 11878/3195; lzo 21948/14709, 13728/7425, 0.947,
/// 0.952; zstd:1 33641/19120, 28492/16284, 0.702, 0.722; zstd:3 45298/17263, 51699/16383,
/// 0.684, 0.697; deflate:1 51084/32575, 58236/30042, 0.742, 0.765; deflate:6
/// 122391/26911, 123175/25818, 0.642, 0.678. lz4 compressed text to 0.51 of a page and code
/// to 0.45. The kernel's in-tree codecs are faster than these user-space bindings; the
/// table models this project's runtime.
pub const CODECS: &[CodecModel] = &[
    CodecModel {
        name: "lz4",
        compress_ns: 16_900.0,
        decompress_ns: 2_700.0,
        size_vs_lz4: 1.0,
    },
    CodecModel {
        name: "lzo",
        compress_ns: 17_800.0,
        decompress_ns: 11_100.0,
        size_vs_lz4: 0.95,
    },
    CodecModel {
        name: "zstd:1",
        compress_ns: 31_100.0,
        decompress_ns: 17_700.0,
        size_vs_lz4: 0.712,
    },
    CodecModel {
        name: "zstd:3",
        compress_ns: 48_500.0,
        decompress_ns: 16_800.0,
        size_vs_lz4: 0.69,
    },
    CodecModel {
        name: "deflate:1",
        compress_ns: 54_700.0,
        decompress_ns: 31_300.0,
        size_vs_lz4: 0.754,
    },
    CodecModel {
        name: "deflate:6",
        compress_ns: 122_800.0,
        decompress_ns: 26_400.0,
        size_vs_lz4: 0.66,
    },
];

/// A codec name with its level: `zstd` and `deflate` alone are level 1, as in the runtime.
pub fn full_codec_name(name: &str) -> &str {
    match name {
        "zstd" => "zstd:1",
        "deflate" => "deflate:1",
        n => n,
    }
}

/// The codec a config names (`zstd` and `deflate` alone are level 1, as in the runtime).
pub fn codec(name: &str, path: &str) -> Result<CodecModel> {
    let full = full_codec_name(name);
    CODECS
        .iter()
        .find(|c| c.name == full)
        .copied()
        .ok_or_else(|| {
            invalid(
                path,
                format!(
                "`{name}`: the simulator has calibrated {} (docs/simulator.md); use one of them",
                CODECS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
            ),
            )
        })
}

/// A pool allocator (Linux zswap's zpool backends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocator {
    Zbud,
    Z3fold,
    Zsmalloc,
}

impl Allocator {
    pub fn parse(name: &str, path: &str) -> Result<Allocator> {
        match name {
            "zbud" => Ok(Allocator::Zbud),
            "z3fold" => Ok(Allocator::Z3fold),
            "zsmalloc" => Ok(Allocator::Zsmalloc),
            other => Err(invalid(
                path,
                format!(
                    "`{other}` is not a pool allocator; use \"zsmalloc\", \"zbud\" or \"z3fold\""
                ),
            )),
        }
    }
}

/// Size classes: 16 bytes apart, 1..=256 (class `c` holds objects of `16·c` bytes or less).
const CLASS_BYTES: u64 = 16;
const CLASSES: usize = (FRAME / CLASS_BYTES) as usize + 1;

fn class_of(bytes: u64) -> usize {
    bytes.div_ceil(CLASS_BYTES).max(1) as usize
}

/// A compressed tier's pool: objects by size class, and the frames their packing takes.
#[derive(Clone, Debug)]
pub struct Pool {
    pub codec: CodecModel,
    pub allocator: Allocator,
    /// A page whose compressed size is not below this stays where it is.
    pub max_compressed: u64,
    pub capacity_frames: u64,
    counts: Vec<u64>,
    frames: u64,
}

impl Pool {
    pub fn new(
        codec: CodecModel,
        allocator: Allocator,
        max_compressed: u64,
        capacity_frames: u64,
    ) -> Pool {
        Pool {
            codec,
            allocator,
            max_compressed,
            capacity_frames,
            counts: vec![0; CLASSES],
            frames: 0,
        }
    }

    /// Compressed bytes of a page that lz4 compresses to `lz4_fraction` of a page.
    pub fn compressed_bytes(&self, lz4_fraction: f64) -> u64 {
        ((lz4_fraction * self.codec.size_vs_lz4 * FRAME as f64).ceil() as u64).clamp(1, FRAME)
    }

    /// Whether a page of that compressed size may enter the pool at all.
    pub fn accepts(&self, bytes: u64) -> bool {
        bytes < self.max_compressed
    }

    /// Frames the pool's objects take.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Frames the objects by class in `counts` take under this allocator.
    fn frames_of(&self, counts: &[u64]) -> u64 {
        let by = |lo: usize, hi: usize| counts[lo..hi].iter().sum::<u64>();
        // The first class whose largest object is over half (a third) of a frame.
        let half = (FRAME / 2 / CLASS_BYTES) as usize + 1;
        let third = (FRAME / 3 / CLASS_BYTES) as usize + 1;
        match self.allocator {
            Allocator::Zbud => by(half, CLASSES) + by(0, half).div_ceil(2),
            Allocator::Z3fold => {
                by(half, CLASSES) + by(third, half).div_ceil(2) + by(0, third).div_ceil(3)
            }
            Allocator::Zsmalloc => counts
                .iter()
                .enumerate()
                .map(|(c, &n)| (n * c as u64 * CLASS_BYTES).div_ceil(FRAME))
                .sum(),
        }
    }

    /// Add objects of these compressed sizes if the pool's frames hold them all after
    /// packing; returns whether it did (all or nothing).
    pub fn try_add(&mut self, sizes: &[u64]) -> bool {
        let mut counts = self.counts.clone();
        for &b in sizes {
            counts[class_of(b)] += 1;
        }
        let frames = self.frames_of(&counts);
        if frames > self.capacity_frames {
            return false;
        }
        self.counts = counts;
        self.frames = frames;
        true
    }

    /// Remove one object of this compressed size.
    pub fn remove(&mut self, bytes: u64) {
        let c = class_of(bytes);
        debug_assert!(self.counts[c] > 0, "removing an object the pool lacks");
        self.counts[c] = self.counts[c].saturating_sub(1);
        self.frames = self.frames_of(&self.counts);
    }
}

/// `[page_compressibility]`: the fraction of a page lz4 compresses each page to, uniform
/// in `[min, max]` per page (seeded).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompressibilityConfig {
    pub min: f64,
    pub max: f64,
}

/// Per-page compressibility: a pure function of the seed and the page index.
#[derive(Clone, Copy, Debug)]
pub struct Compressibility {
    pub min: f64,
    pub max: f64,
    pub seed: u64,
}

impl Compressibility {
    /// The run's per-page compressibility (`seed`: the config's).
    pub fn of(c: &CompressibilityConfig, seed: u64) -> Compressibility {
        Compressibility {
            min: c.min,
            max: c.max,
            seed: seed ^ 0xc0de_c0de,
        }
    }

    /// The fraction of a page lz4 compresses `page` to.
    pub fn lz4_fraction(&self, page: u32) -> f64 {
        // splitmix64 of (seed, page): independent uniform draws without a table.
        let mut z = self
            .seed
            .wrapping_add((page as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let u = (z >> 11) as f64 / (1u64 << 53) as f64;
        self.min + u * (self.max - self.min)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(a: Allocator, frames: u64) -> Pool {
        Pool::new(codec("lz4", "x").unwrap(), a, FRAME, frames)
    }

    #[test]
    fn zbud_holds_at_most_two_per_frame_and_big_objects_take_a_frame() {
        let mut p = pool(Allocator::Zbud, 10);
        // Tiny objects: 2 per frame, so 10 frames hold 20 and not 21.
        assert!(p.try_add(&[100; 20]));
        assert_eq!(p.frames(), 10);
        assert!(!p.try_add(&[100]));
        assert_eq!(p.frames(), 10, "a refused add leaves the pool as it was");
        // Over half a frame: a whole frame each.
        let mut p = pool(Allocator::Zbud, 10);
        assert!(p.try_add(&[2049; 10]));
        assert!(!p.try_add(&[10]));
        let mut p = pool(Allocator::Zbud, 10);
        assert!(p.try_add(&[2048; 20]), "exactly half a frame pairs");
    }

    #[test]
    fn z3fold_holds_three_small_two_medium_and_zsmalloc_packs_densely() {
        let mut p = pool(Allocator::Z3fold, 10);
        assert!(p.try_add(&[1000; 30]));
        assert!(!p.try_add(&[1000]));
        let mut p = pool(Allocator::Z3fold, 10);
        assert!(p.try_add(&[1500; 20]));
        assert!(!p.try_add(&[1500]));
        // zsmalloc: 1024-byte objects, 4 per frame; 400-byte objects, 10.24 per frame.
        let mut p = pool(Allocator::Zsmalloc, 10);
        assert!(p.try_add(&[1024; 40]));
        assert!(!p.try_add(&[1024]));
        let mut p = pool(Allocator::Zsmalloc, 10);
        assert!(p.try_add(&[400; 102]));
        assert_eq!(p.frames(), 10);
        p.remove(400);
        assert_eq!(p.frames(), 10);
        assert!(p.try_add(&[400]));
    }

    #[test]
    fn compressibility_is_deterministic_and_in_range() {
        let c = Compressibility {
            min: 0.2,
            max: 0.6,
            seed: 7,
        };
        let xs: Vec<f64> = (0..10_000).map(|p| c.lz4_fraction(p)).collect();
        assert!(xs.iter().all(|x| (0.2..0.6).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.4).abs() < 0.01, "{mean}");
        assert_eq!(c.lz4_fraction(123), c.lz4_fraction(123));
        let d = Compressibility { seed: 8, ..c };
        assert_ne!(c.lz4_fraction(123), d.lz4_fraction(123));
    }

    #[test]
    fn codec_names() {
        assert_eq!(codec("zstd", "t").unwrap().name, "zstd:1");
        let e = codec("brotli", "machine.tiers[1].codec")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("machine.tiers[1].codec") && e.contains("lz4"),
            "{e}"
        );
    }
}
