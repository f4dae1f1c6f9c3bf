//! tiermem-touch: measure the latency of touching pages that are not in DRAM.
//!
//! Fills `--mb` MiB of anonymous memory with compressible data, waits `--settle-ms` for
//! the memory manager (tiermem's budget, or the kernel's zswap under a cgroup limit) to
//! push it out of DRAM, then reads one word of every page in random order, timing each
//! access. Prints `touch: pages=N p50_ns=.. p99_ns=.. mean_ns=.. checksum_ok=..`.

use std::time::Instant;

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mb = arg(&args, "--mb", 64) as usize;
    let settle = arg(&args, "--settle-ms", 2000);
    let pages = mb * 256;
    let len = pages * 4096;
    // SAFETY: a fresh anonymous mapping; no existing memory is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let w = p as *mut u64;
    for pg in 0..pages {
        for i in 0..512 {
            // Text-like compressibility: a few distinct words per page.
            // SAFETY: pg < pages and i < 512: inside the `len`-byte mapping above.
            unsafe {
                w.add(pg * 512 + i)
                    .write((pg as u64) << 8 | (i % 24) as u64)
            };
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(settle));
    let mut order: Vec<usize> = (0..pages).collect();
    let mut x = 0x9E3779B97F4A7C15u64;
    for i in (1..pages).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut lat = Vec::with_capacity(pages);
    let mut ok = true;
    for &pg in &order {
        let t0 = Instant::now();
        // SAFETY: pg < pages: inside the mapping above.
        let v = unsafe { w.add(pg * 512 + 5).read_volatile() };
        lat.push(t0.elapsed().as_nanos() as u64);
        ok &= v == (pg as u64) << 8 | 5;
    }
    lat.sort_unstable();
    let q = |f: f64| lat[((lat.len() as f64 * f) as usize).min(lat.len() - 1)];
    let mean = lat.iter().sum::<u64>() / lat.len() as u64;
    println!(
        "touch: pages={pages} p50_ns={} p99_ns={} mean_ns={mean} checksum_ok={ok}",
        q(0.5),
        q(0.99)
    );
    std::process::exit(if ok { 0 } else { 1 });
}
