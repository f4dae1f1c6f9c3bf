//! Tenants: the address spaces one backend manages (a simulated workload, a VM, a process).
//!
//! Every tenant owns one contiguous span of the backend's dense page space, so a page index
//! names its tenant ([`Snapshot::tenant_of`](crate::Snapshot::tenant_of)) and a region or a
//! move never straddles two tenants:
//!
//! ```text
//!   page index   0 ............ 999 | 1000 ................. 2499 | 2500 ... 2599
//!   tenant       0 "kv"              | 1 "analytics"               | 2 "batch"
//! ```

use crate::units::{PageIdx, PageRange};
use serde::{Deserialize, Serialize};

/// Index of a tenant in the backend's tenant list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TenantId(pub u16);

impl TenantId {
    /// The only tenant of a single-address-space backend.
    pub const FIRST: TenantId = TenantId(0);
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One tenant as a policy or controller sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TenantSpec {
    pub id: TenantId,
    /// The config name (`[[tenants]] name = "kv"`), or the program's name on the runtime.
    pub name: String,
    /// Its span of the dense page space.
    pub pages: PageRange,
}

/// Which tenant owns `page`: a binary search over spans sorted by start.
pub fn tenant_of(tenants: &[TenantSpec], page: PageIdx) -> Option<TenantId> {
    let i = tenants.partition_point(|t| t.pages.start <= page);
    let t = tenants.get(i.checked_sub(1)?)?;
    t.pages.contains(page).then_some(t.id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: u16, start: u32, len: u32) -> TenantSpec {
        TenantSpec {
            id: TenantId(id),
            name: format!("t{id}"),
            pages: PageRange { start, len },
        }
    }

    #[test]
    fn pages_name_their_tenant() {
        let ts = [t(0, 0, 1000), t(1, 1000, 1500), t(2, 2500, 100)];
        assert_eq!(tenant_of(&ts, 0), Some(TenantId(0)));
        assert_eq!(tenant_of(&ts, 999), Some(TenantId(0)));
        assert_eq!(tenant_of(&ts, 1000), Some(TenantId(1)));
        assert_eq!(tenant_of(&ts, 2599), Some(TenantId(2)));
        assert_eq!(tenant_of(&ts, 2600), None);
        assert_eq!(tenant_of(&[], 0), None);
    }
}
