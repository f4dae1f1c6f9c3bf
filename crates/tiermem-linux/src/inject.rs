//! Fault injection for tests (`TIERMEM_FAULT_INJECT=KIND:N[,KIND:N...]`): compiled in, off
//! unless the variable is set, read once when the runtime starts. Each kind fires once, at
//! the N-th occurrence of its event (N >= 1; `KIND` alone is `KIND:1`), so a test can make
//! tiermem's own threads fail at a chosen point and check that the program keeps its data
//! (docs/runtime.md "When tiermem itself fails").

use std::sync::atomic::{AtomicU64, Ordering};

/// The variable's name.
pub const VAR: &str = "TIERMEM_FAULT_INJECT";

/// What fails, and at which event it is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The manager thread panics at its N-th eviction, with the page staged and not yet
    /// compressed (runtime/mover.rs `evict`).
    ManagerPanic = 0,
    /// The fault thread panics at its N-th tier fault, holding the state lock, before the
    /// fault is served (the faulting thread stays asleep in the kernel).
    FaultThreadPanic = 1,
    /// The N-th chunk of slabs a pool asks the kernel for is refused, as when the kernel
    /// refuses memory.
    PoolEnomem = 2,
    /// The N-th decompression reports corrupt input.
    CodecCorrupt = 3,
    /// Stopping tiering finds no memory to bring the pages home (as if MemAvailable were
    /// 0): it drains instead (runtime/degrade.rs). N counts stops (one per process).
    LowMemory = 4,
    /// The N-th wakeup of a fault thread's poll finds the userfaultfd failed (as POLLERR).
    UffdError = 5,
}

const KINDS: [(&str, Kind); 6] = [
    ("manager-panic", Kind::ManagerPanic),
    ("fault-thread-panic", Kind::FaultThreadPanic),
    ("pool-enomem", Kind::PoolEnomem),
    ("codec-corrupt", Kind::CodecCorrupt),
    ("low-memory", Kind::LowMemory),
    ("uffd-error", Kind::UffdError),
];

/// Per kind: the occurrence that fires (0: off), and the occurrences so far.
static AT: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];
static SEEN: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// Parse the variable's value into (kind, N) pairs; an unknown kind or a bad N is an error
/// naming the kinds there are.
pub fn parse(spec: &str) -> Result<Vec<(Kind, u64)>, String> {
    let names: Vec<&str> = KINDS.iter().map(|(n, _)| *n).collect();
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (name, n) = item.split_once(':').unwrap_or((item, "1"));
            let kind = KINDS
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, k)| *k)
                .ok_or_else(|| {
                    format!("{VAR}: unknown kind {name:?} (kinds: {})", names.join(", "))
                })?;
            match n.parse::<u64>() {
                Ok(n) if n >= 1 => Ok((kind, n)),
                _ => Err(format!("{VAR}: {item:?}: N must be a whole number >= 1")),
            }
        })
        .collect()
}

/// Arm the kinds named by the environment, once, when the runtime starts.
pub fn init_from_env() -> Result<(), String> {
    let Ok(spec) = std::env::var(VAR) else {
        return Ok(());
    };
    for (kind, n) in parse(&spec)? {
        AT[kind as usize].store(n, Ordering::Relaxed);
    }
    Ok(())
}

/// One occurrence of `kind`'s event: true exactly at the armed occurrence. One relaxed load
/// when nothing is armed.
#[inline]
pub fn fire(kind: Kind) -> bool {
    let at = AT[kind as usize].load(Ordering::Relaxed);
    at != 0 && SEEN[kind as usize].fetch_add(1, Ordering::Relaxed) + 1 == at
}

/// Panic at the armed occurrence of `kind` (the message names the kind; the panic's
/// location, the place).
#[inline]
#[track_caller]
pub fn panic_at(kind: Kind) {
    if fire(kind) {
        let name = KINDS
            .iter()
            .find(|(_, k)| *k == kind)
            .map_or("?", |(n, _)| n);
        panic!("injected {name} ({VAR})");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_counts_parse_and_unknown_kinds_are_named() {
        assert_eq!(
            parse("manager-panic:3, pool-enomem").unwrap(),
            vec![(Kind::ManagerPanic, 3), (Kind::PoolEnomem, 1)]
        );
        let e = parse("manager-panik:1").unwrap_err();
        assert!(
            e.contains("unknown kind \"manager-panik\"") && e.contains("fault-thread-panic"),
            "{e}"
        );
        assert!(parse("pool-enomem:0").is_err());
        assert!(parse("pool-enomem:x").is_err());
    }
}
