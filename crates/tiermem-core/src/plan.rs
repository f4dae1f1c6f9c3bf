//! What a policy asks for, and what the backend did.

use crate::tier::TierId;
use crate::units::PageRange;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Move {
    pub range: PageRange,
    pub to: TierId,
}

/// Moves in priority order: a backend that runs out of quota or capacity drops the tail.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub moves: Vec<Move>,
}

impl Plan {
    pub fn push(&mut self, page: crate::units::PageIdx, to: TierId) {
        self.moves.push(Move {
            range: PageRange::one(page),
            to,
        });
    }
    pub fn pages(&self) -> u64 {
        self.moves.iter().map(|m| m.range.len as u64).sum()
    }
}

/// "Tried" vs "applied" (DAMON's counters): a move is tried when the plan asks for it and
/// applied when the backend moved the pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Applied {
    pub pages_tried: u64,
    pub pages_applied: u64,
    pub bytes_moved: u64,
    /// Pages that were already in the target tier (no-op moves).
    pub pages_already_there: u64,
    /// Pages refused because the destination tier was full.
    pub pages_no_capacity: u64,
    /// Pages dropped because the quantum's migration quota was spent.
    pub pages_over_quota: u64,
}

impl Applied {
    pub fn add(&mut self, o: &Applied) {
        self.pages_tried += o.pages_tried;
        self.pages_applied += o.pages_applied;
        self.bytes_moved += o.bytes_moved;
        self.pages_already_there += o.pages_already_there;
        self.pages_no_capacity += o.pages_no_capacity;
        self.pages_over_quota += o.pages_over_quota;
    }
}
