//! A move is one operation whatever its size (issue "One engine for every system"): a 2 MiB
//! range of 4 KiB pages costs one fixed migration cost (fault + unmap + shootdown) plus its
//! copy, not 512 of them; it lands whole or not at all; tenant limits bound it.

use tiermem_core::{
    Backend, Controls, PageRange, Plan, TenantId, TierId, TierLimit, MIB, NO_CONTROLS,
};
use tiermem_sim::backend::SimBackend;
use tiermem_sim::reproduce::{config_with, COLLOID_GUPS_BASE};

/// The Colloid testbed at 4 KiB pages, 1/64 scale (a 1.1 GiB footprint), everything in
/// the remote tier at the start so that promotions have room.
fn config() -> tiermem_sim::config::SimConfig {
    let ov = [
        ("machine.page_size", toml::Value::String("4KiB".into())),
        ("scale", toml::Value::Float(1.0 / 64.0)),
        ("initial_placement", toml::Value::String("tier:1".into())),
    ];
    config_with(COLLOID_GUPS_BASE, "gups-base", &ov).unwrap()
}

const QUANTUM_NS: u64 = 10_000_000;

fn backend() -> SimBackend {
    let mut b = SimBackend::new(&config()).unwrap();
    b.advance(QUANTUM_NS).unwrap();
    b
}

/// Moves of `bytes` one migration thread completes in one quantum, from the config.
fn fit_in_quantum(bytes: f64) -> u64 {
    let m = config().machine.migration;
    let op_ns = m.per_page_ns + bytes / (m.copy_gbps * 1e9) * 1e9;
    (QUANTUM_NS as f64 * m.threads / op_ns).floor() as u64
}

#[test]
fn a_2mib_move_is_one_operation() {
    let pages_2m = (2 * MIB / 4096) as u32;
    let mut b = backend();
    let mut plan = Plan::default();
    plan.push_range(
        PageRange {
            start: 0,
            len: pages_2m,
        },
        TierId(0),
    );
    let a = b.apply(&plan, None);
    assert_eq!(a.pages_applied, 512);
    assert_eq!(a.ops_applied, 1, "{a:?}");
    assert_eq!(a.bytes_moved, 2 * MIB);
    assert!(b.placement()[..512].iter().all(|&t| t == TierId(0)));

    // The same bytes as 512 single-page moves are 512 operations...
    let mut single = backend();
    let mut plan = Plan::default();
    for p in 0..512 {
        plan.push(p, TierId(0));
    }
    let a = single.apply(&plan, None);
    assert_eq!((a.pages_applied, a.ops_applied), (512, 512));

    // ...so in one quantum the migration thread (a fixed cost per operation + the copy)
    // moves more bytes as 2 MiB ranges than as 4 KiB pages (with the shipped 6 µs and
    // 8 GB/s: 37 ranges = 18 944 pages vs 1 538 pages).
    let (n_ranges, n_pages) = (fit_in_quantum((2 * MIB) as f64), fit_in_quantum(4096.0));
    assert!(
        n_ranges * 512 > 4 * n_pages && n_ranges < 100,
        "{n_ranges} {n_pages}"
    );
    let mut ranges = backend();
    let mut plan = Plan::default();
    for r in 0..100u32 {
        plan.push_range(
            PageRange {
                start: r * pages_2m,
                len: pages_2m,
            },
            TierId(0),
        );
    }
    let a = ranges.apply(&plan, None);
    assert_eq!(a.ops_applied, n_ranges, "{a:?}");
    assert_eq!(a.pages_applied, n_ranges * 512);
    let mut pages = backend();
    let mut plan = Plan::default();
    for p in 0..100 * pages_2m {
        plan.push(p, TierId(0));
    }
    let a = pages.apply(&plan, None);
    assert_eq!(a.ops_applied, n_pages, "{a:?}");
}

#[test]
fn a_move_lands_whole_within_the_tenant_limit() {
    let mut b = backend();
    let mut plan = Plan {
        controls: Controls {
            limits: vec![TierLimit {
                tenant: TenantId(0),
                tier: TierId(0),
                bytes: Some(3 * MIB),
            }],
            ..NO_CONTROLS.clone()
        },
        ..Plan::default()
    };
    plan.push_range(PageRange { start: 0, len: 512 }, TierId(0));
    plan.push_range(
        PageRange {
            start: 512,
            len: 512,
        },
        TierId(0),
    );
    let a = b.apply(&plan, None);
    // The second 2 MiB would take the tenant to 4 MiB of a 3 MiB limit: refused whole.
    assert_eq!(
        (a.ops_applied, a.pages_applied, a.pages_no_capacity),
        (1, 512, 512)
    );
    assert!(b.placement()[512..1024].iter().all(|&t| t == TierId(1)));
}
