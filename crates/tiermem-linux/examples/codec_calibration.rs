//! Calibration of the simulator's codec table (`crates/tiermem-sim/src/compressed.rs`):
//! times the runtime's real page codecs (`tiermem_linux::codec`, the same libraries the
//! Linux runtime's compressed tiers use) on 4 KiB pages of real data and prints, per codec,
//! the mean compression and decompression time per page (fastest of 5 rounds) and the mean compressed size.
//!
//!     cargo run --release -p tiermem-linux --example codec_calibration -- FILE...
//!
//! The numbers in `compressed.rs` came from two corpora on this repository's dev machine:
//! text (the Python 3.11 standard library's `.py` sources, concatenated) and machine code
//! (the release `tiermem` binary). Pages that do not compress below 4 KiB are counted at
//! 4 KiB (they would stay uncompressed).

use std::time::Instant;
use tiermem_linux::codec::Codec;

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    assert!(!files.is_empty(), "usage: codec_calibration FILE...");
    let mut data = Vec::new();
    for f in &files {
        data.extend(std::fs::read(f).unwrap_or_else(|e| panic!("{f}: {e}")));
    }
    let pages: Vec<&[u8]> = data.chunks_exact(4096).take(16384).collect();
    println!("{} pages of 4 KiB from {}", pages.len(), files.join(" "));
    println!(
        "| codec | compress ns/page | decompress ns/page | mean compressed bytes | size vs lz4 |"
    );
    println!("|---|---|---|---|---|");
    let mut lz4_mean = 0.0;
    for name in ["lz4", "lzo", "zstd:1", "zstd:3", "deflate:1", "deflate:6"] {
        let codec = match Codec::parse(name) {
            Ok(c) => c,
            Err(e) => {
                println!("| {name} | not built: {e} | | | |");
                continue;
            }
        };
        // Fastest of 5 rounds: the machine is shared, and other load only adds time.
        let (mut c_ns, mut d_ns) = (f64::MAX, f64::MAX);
        let mut outs: Vec<Option<Vec<u8>>> = Vec::new();
        for _ in 0..5 {
            outs = Vec::with_capacity(pages.len());
            let mut buf = Vec::new();
            let t = Instant::now();
            for p in &pages {
                outs.push(codec.compress(p, &mut buf, 4096).map(|_| buf.clone()));
            }
            c_ns = c_ns.min(t.elapsed().as_nanos() as f64 / pages.len() as f64);
            let mut back = vec![0u8; 4096];
            let stored: Vec<&Vec<u8>> = outs.iter().flatten().collect();
            let t = Instant::now();
            for o in &stored {
                assert!(codec.decompress(o, &mut back));
            }
            d_ns = d_ns.min(t.elapsed().as_nanos() as f64 / stored.len().max(1) as f64);
        }
        let mean = outs
            .iter()
            .map(|o| o.as_ref().map_or(4096, |v| v.len()) as f64)
            .sum::<f64>()
            / pages.len() as f64;
        if name == "lz4" {
            lz4_mean = mean;
        }
        println!(
            "| {name} | {c_ns:.0} | {d_ns:.0} | {mean:.0} | {:.3} |",
            mean / lz4_mean
        );
    }
}
