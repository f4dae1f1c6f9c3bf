//! What a policy (and a controller) asks for, and what the backend did.
//!
//! A plan has two kinds of actions:
//! * **moves**: a virtually contiguous, naturally aligned range of pages of one tenant — one
//!   page (4 KiB), 16 pages (64 KiB), 512 pages (2 MiB), any power of two — to one tier.
//!   A backend applies and charges a move as **one operation**: one TLB shootdown / one
//!   release call, copy time proportional to its bytes (ICS'18 §3: that is the point of
//!   migrating at a coarser granularity).
//! * **controls**: per-tenant, per-tier memory limits and per-tenant CPU shares, set by a
//!   [`Controller`](crate::Controller) (Memstrata's DRAM allocator, Mercury's admission and
//!   adaptation) before the policy places pages within them.

use crate::tenant::TenantId;
use crate::tier::TierId;
use crate::units::{PageIdx, PageRange};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    /// The tenant whose pages move. The engine fills it from the snapshot's tenant spans
    /// (`Plan::push` leaves it to the engine) and drops a move that straddles two tenants.
    pub tenant: TenantId,
    pub range: PageRange,
    pub to: TierId,
}

impl Move {
    /// Pages per move of `bytes` at a page size of `page_bytes`, if `bytes` is a valid
    /// granularity: a power of two, at least one page.
    pub fn granularity_pages(bytes: u64, page_bytes: u64) -> Option<u32> {
        (bytes.is_power_of_two() && bytes >= page_bytes && page_bytes > 0)
            .then(|| u32::try_from(bytes / page_bytes).ok())
            .flatten()
    }
    /// A move is well formed when its length is a power of two and it starts on a multiple
    /// of its length (a 2 MiB move covers one whole 2 MiB-aligned virtual region).
    pub fn is_aligned(&self) -> bool {
        self.range.len.is_power_of_two() && self.range.start.is_multiple_of(self.range.len)
    }
    pub fn bytes(&self, page_bytes: u64) -> u64 {
        self.range.len as u64 * page_bytes
    }
}

/// A per-tenant, per-tier memory limit (Mercury §4.1's per-tier limits; Memstrata's
/// dedicated-DRAM allotments). `None` = no limit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierLimit {
    pub tenant: TenantId,
    pub tier: TierId,
    pub bytes: Option<u64>,
}

/// A tenant's CPU share: the fraction of its cores' time it may run (Mercury §4.3's CPU
/// throttling, a cgroup `cpu.max` quota on Linux). 1.0 = unthrottled.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuShare {
    pub tenant: TenantId,
    pub share: f64,
}

/// The actions of a controller: they stay in force until changed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Controls {
    pub limits: Vec<TierLimit>,
    pub cpu_shares: Vec<CpuShare>,
}

/// No controls (a snapshot without a controller).
pub static NO_CONTROLS: Controls = Controls {
    limits: Vec::new(),
    cpu_shares: Vec::new(),
};

impl Controls {
    pub fn is_empty(&self) -> bool {
        self.limits.is_empty() && self.cpu_shares.is_empty()
    }
    /// The limit in force for a tenant on a tier (the last one given wins).
    pub fn limit(&self, tenant: TenantId, tier: TierId) -> Option<u64> {
        self.limits
            .iter()
            .rev()
            .find(|l| l.tenant == tenant && l.tier == tier)
            .and_then(|l| l.bytes)
    }
    /// The CPU share of a tenant (1.0 when none was set).
    pub fn cpu_share(&self, tenant: TenantId) -> f64 {
        self.cpu_shares
            .iter()
            .rev()
            .find(|s| s.tenant == tenant)
            .map_or(1.0, |s| s.share)
    }
}

/// Moves in priority order (a backend that runs out of quota or capacity drops the tail),
/// plus the controls a controller set this quantum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub moves: Vec<Move>,
    pub controls: Controls,
}

impl Plan {
    /// Move one page (the engine fills in its tenant).
    pub fn push(&mut self, page: PageIdx, to: TierId) {
        self.moves.push(Move {
            tenant: TenantId::FIRST,
            range: PageRange::one(page),
            to,
        });
    }
    /// Move a naturally aligned power-of-two range as one operation (the engine fills in
    /// its tenant).
    pub fn push_range(&mut self, range: PageRange, to: TierId) {
        let m = Move {
            tenant: TenantId::FIRST,
            range,
            to,
        };
        debug_assert!(
            m.is_aligned(),
            "a move is a naturally aligned power-of-two range: {range:?}"
        );
        self.moves.push(m);
    }
    pub fn pages(&self) -> u64 {
        self.moves.iter().map(|m| m.range.len as u64).sum()
    }
}

/// "Tried" vs "applied" (DAMON's counters): a move is tried when the plan asks for it and
/// applied when the backend moved the pages. Pages are counted per page; operations per
/// move (a 2 MiB move applied is 512 pages and one operation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub pages_tried: u64,
    pub pages_applied: u64,
    pub bytes_moved: u64,
    /// Moves of which at least one page was moved: each cost one operation.
    pub ops_applied: u64,
    /// Pages that were already in the target tier (no-op moves).
    pub pages_already_there: u64,
    /// Pages refused because the destination tier (or the tenant's limit on it) was full.
    pub pages_no_capacity: u64,
    /// Pages dropped because the quantum's migration quota was spent.
    pub pages_over_quota: u64,
    /// Moves the engine dropped as malformed (unaligned, straddling tenants, out of range).
    pub moves_malformed: u64,
}

impl Applied {
    pub fn add(&mut self, o: &Applied) {
        self.pages_tried += o.pages_tried;
        self.pages_applied += o.pages_applied;
        self.bytes_moved += o.bytes_moved;
        self.ops_applied += o.ops_applied;
        self.pages_already_there += o.pages_already_there;
        self.pages_no_capacity += o.pages_no_capacity;
        self.pages_over_quota += o.pages_over_quota;
        self.moves_malformed += o.moves_malformed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granularities() {
        assert_eq!(Move::granularity_pages(4096, 4096), Some(1));
        assert_eq!(Move::granularity_pages(64 << 10, 4096), Some(16));
        assert_eq!(Move::granularity_pages(2 << 20, 4096), Some(512));
        assert_eq!(Move::granularity_pages(3 << 12, 4096), None);
        assert_eq!(Move::granularity_pages(2048, 4096), None);
        let m = |start, len| Move {
            tenant: TenantId::FIRST,
            range: PageRange { start, len },
            to: TierId(1),
        };
        assert!(m(512, 512).is_aligned());
        assert!(!m(256, 512).is_aligned());
        assert!(!m(0, 3).is_aligned());
        assert_eq!(m(0, 512).bytes(4096), 2 << 20);
    }

    #[test]
    fn controls_last_setting_wins() {
        let mut c = Controls::default();
        assert_eq!(c.limit(TenantId(1), TierId(0)), None);
        assert_eq!(c.cpu_share(TenantId(1)), 1.0);
        c.limits.push(TierLimit {
            tenant: TenantId(1),
            tier: TierId(0),
            bytes: Some(100),
        });
        c.limits.push(TierLimit {
            tenant: TenantId(1),
            tier: TierId(0),
            bytes: Some(50),
        });
        c.cpu_shares.push(CpuShare {
            tenant: TenantId(1),
            share: 0.5,
        });
        assert_eq!(c.limit(TenantId(1), TierId(0)), Some(50));
        assert_eq!(c.limit(TenantId(0), TierId(0)), None);
        assert_eq!(c.cpu_share(TenantId(1)), 0.5);
    }
}
