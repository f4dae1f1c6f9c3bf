//! Pool allocators for compressed pages: zsmalloc-like (dense size classes), zbud-like
//! (at most 2 objects per 4 KiB pool page) and z3fold-like (at most 3).
//!
//! All three are slab allocators over size classes; they differ in their classes:
//!
//! ```text
//!   zsmalloc  32, 64, 96, ... 4096      (slots packed densely across 4 KiB boundaries)
//!   zbud      2048, 4096                (2 per page, or one whole page)
//!   z3fold    1360, 2048, 4096          (3, 2 or 1 per page)
//! ```
//!
//! (The kernel's zbud/z3fold pair buddies of different sizes in one page; ours round up to
//! the class, which wastes a little more but keeps the "at most N per page" property.)
//! Slabs come straight from the kernel (raw mmap), never from the program's allocator.

use crate::sys;
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, Ordering};

/// Slabs are carved from large NORESERVE chunks (few mappings; physical memory only for
/// the slab pages actually written).
const SLAB_BYTES: usize = 16 * 1024;
const CHUNK_BYTES: usize = 64 << 20;

/// Where a pool's slabs live: the program's own memory (DRAM), or a NUMA node (CXL or
/// remote memory: TierScape's "compressed tier on slower media"), slabs bound there with
/// mbind(2) before they are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backing {
    Memory,
    Node(u32),
}

impl Backing {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "dram" => Ok(Self::Memory),
            "memory" => Err("`backing = \"memory\"` is now `backing = \"dram\"`; rename it".into()),
            _ => match s.strip_prefix("node:").map(|n| n.parse::<u32>()) {
                Some(Ok(n)) => Ok(Self::Node(n)),
                _ => Err(format!(
                    "backing `{s}`: give \"dram\", a dram/node tier's name or \"node:N\" (N a NUMA node number)"
                )),
            },
        }
    }
    /// Map `len` bytes of slab space (physical memory only for the slab pages written).
    fn map(&self, len: usize) -> Option<usize> {
        let a = sys::map_anon(len).ok()?;
        if let Self::Node(n) = *self {
            // SAFETY: the chunk was just mapped and holds nothing yet: the policy only
            // decides where its pages will be allocated.
            if unsafe { crate::numa::mbind_node(a, len, crate::numa::MPOL_PREFERRED, n) }.is_err() {
                // SAFETY: unmaps the chunk just mapped above; nothing refers to it.
                unsafe { sys::munmap(a, len) };
                return None;
            }
        }
        Some(a)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocatorKind {
    Zsmalloc,
    Zbud,
    Z3fold,
}

impl AllocatorKind {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "zsmalloc" => Ok(Self::Zsmalloc),
            "zbud" => Ok(Self::Zbud),
            "z3fold" => Ok(Self::Z3fold),
            _ => Err(format!(
                "unknown allocator `{s}`; expected zsmalloc, zbud or z3fold"
            )),
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Self::Zsmalloc => "zsmalloc",
            Self::Zbud => "zbud",
            Self::Z3fold => "z3fold",
        }
    }
    fn classes(&self) -> Vec<usize> {
        match self {
            Self::Zsmalloc => (1..=128).map(|i| i * 32).collect(),
            Self::Zbud => vec![2048, 4096],
            Self::Z3fold => vec![1360, 2048, 4096],
        }
    }
}

struct Class {
    slot: usize,
    per_slab: usize,
    slabs: Vec<usize>,
    /// Live objects per slab: a slab whose last object is freed goes back to the kernel
    /// (MADV_DONTNEED; its address range stays ours for reuse).
    live: Vec<u32>,
    /// Free slots, lowest first: new objects pack into the low slabs, so churn (pages
    /// faulting in and out) empties high slabs instead of leaving every slab sparse.
    free: BinaryHeap<Reverse<u64>>,
    next_fresh: u64,
}

/// Opaque handle of a stored object: class (8 bits) | length (16 bits) | slot (40 bits).
pub type Handle = u64;

pub struct Pool {
    pub kind: AllocatorKind,
    pub backing: Backing,
    classes: Vec<Class>,
    /// Bytes of objects stored (sum of compressed lengths).
    pub stored_bytes: u64,
    /// Bytes of slabs taken from the kernel.
    pub pool_bytes: u64,
    pub objects: u64,
    chunks: Vec<usize>,
    chunk_used: usize,
}

/// Some pool asked the kernel for memory and was refused (the manager then stops tiering:
/// runtime/degrade.rs).
static GROW_FAILED: AtomicBool = AtomicBool::new(false);

/// A pool of this process could not grow.
pub fn grow_failed() -> bool {
    GROW_FAILED.load(Ordering::Relaxed)
}

impl Pool {
    fn new_slab(&mut self) -> Option<usize> {
        if self.chunks.is_empty() || self.chunk_used + SLAB_BYTES > CHUNK_BYTES {
            let chunk = match crate::inject::fire(crate::inject::Kind::PoolEnomem) {
                true => None,
                false => self.backing.map(CHUNK_BYTES),
            };
            let Some(chunk) = chunk else {
                GROW_FAILED.store(true, Ordering::Relaxed);
                return None;
            };
            self.chunks.push(chunk);
            self.chunk_used = 0;
        }
        let s = *self.chunks.last().unwrap() + self.chunk_used;
        self.chunk_used += SLAB_BYTES;
        Some(s)
    }

    pub fn new(kind: AllocatorKind, backing: Backing) -> Pool {
        let classes = kind
            .classes()
            .into_iter()
            .map(|slot| Class {
                slot,
                per_slab: SLAB_BYTES / slot,
                slabs: Vec::new(),
                live: Vec::new(),
                free: BinaryHeap::new(),
                next_fresh: 0,
            })
            .collect();
        Pool {
            kind,
            backing,
            classes,
            stored_bytes: 0,
            pool_bytes: 0,
            objects: 0,
            chunks: Vec::new(),
            chunk_used: 0,
        }
    }

    fn class_for(&self, len: usize) -> Option<usize> {
        self.classes.iter().position(|c| c.slot >= len)
    }

    fn addr(&self, ci: usize, slot: u64) -> usize {
        let c = &self.classes[ci];
        c.slabs[(slot / c.per_slab as u64) as usize] + (slot % c.per_slab as u64) as usize * c.slot
    }

    /// Store `data`; `None` if the kernel refused memory.
    pub fn store(&mut self, data: &[u8]) -> Option<Handle> {
        let ci = self.class_for(data.len().max(1))?;
        let slot = match self.classes[ci].free.pop() {
            Some(Reverse(s)) => s,
            None => {
                let c = &self.classes[ci];
                if c.next_fresh as usize == c.slabs.len() * c.per_slab {
                    let slab = self.new_slab()?;
                    self.classes[ci].slabs.push(slab);
                    self.classes[ci].live.push(0);
                }
                let c = &mut self.classes[ci];
                c.next_fresh += 1;
                c.next_fresh - 1
            }
        };
        let c = &mut self.classes[ci];
        let si = (slot / c.per_slab as u64) as usize;
        if c.live[si] == 0 {
            self.pool_bytes += SLAB_BYTES as u64;
        }
        c.live[si] += 1;
        let a = self.addr(ci, slot);
        // SAFETY: `a` is a slot of `data.len()` <= slot-size bytes inside a slab we mapped.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), a as *mut u8, data.len()) };
        self.stored_bytes += data.len() as u64;
        self.objects += 1;
        Some(((ci as u64) << 56) | ((data.len() as u64) << 40) | slot)
    }

    /// The stored bytes of a handle.
    pub fn get(&self, h: Handle) -> &[u8] {
        let (ci, len, slot) = (
            (h >> 56) as usize,
            ((h >> 40) & 0xFFFF) as usize,
            h & ((1 << 40) - 1),
        );
        let a = self.addr(ci, slot);
        // SAFETY: the handle's slot lies in a live chunk of this pool (never unmapped before the
        // pool is dropped) and holds `len` stored bytes.
        unsafe { std::slice::from_raw_parts(a as *const u8, len) }
    }

    pub fn free(&mut self, h: Handle) {
        let (ci, len, slot) = ((h >> 56) as usize, (h >> 40) & 0xFFFF, h & ((1 << 40) - 1));
        self.stored_bytes -= len;
        self.objects -= 1;
        let c = &mut self.classes[ci];
        c.free.push(Reverse(slot));
        let si = (slot / c.per_slab as u64) as usize;
        c.live[si] -= 1;
        if c.live[si] == 0 {
            // SAFETY: the slab is ours and holds no live object.
            unsafe { sys::madvise(c.slabs[si], SLAB_BYTES, libc::MADV_DONTNEED) };
            self.pool_bytes -= SLAB_BYTES as u64;
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for &c in &self.chunks {
            // SAFETY: unmaps the pool's own chunks once, when no handle can be used any more.
            unsafe { sys::munmap(c, CHUNK_BYTES) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn store_get_free_reuse() {
        for kind in [
            AllocatorKind::Zsmalloc,
            AllocatorKind::Zbud,
            AllocatorKind::Z3fold,
        ] {
            let mut p = Pool::new(kind, Backing::Memory);
            let hs: Vec<_> = (0..1000u32)
                .map(|i| {
                    p.store(&vec![(i % 251) as u8; 100 + (i as usize % 2000)])
                        .unwrap()
                })
                .collect();
            for (i, &h) in hs.iter().enumerate() {
                let d = p.get(h);
                assert_eq!(d.len(), 100 + i % 2000);
                assert!(d.iter().all(|&b| b == (i % 251) as u8));
            }
            let before = p.pool_bytes;
            for &h in &hs {
                p.free(h);
            }
            assert_eq!(p.stored_bytes, 0);
            assert_eq!(
                p.pool_bytes, 0,
                "{kind:?}: empty slabs go back to the kernel"
            );
            for i in 0..1000u32 {
                p.store(&vec![1; 100 + (i as usize % 2000)]).unwrap();
            }
            assert_eq!(p.pool_bytes, before, "{kind:?} must reuse freed slots");
        }
    }
    #[test]
    fn empty_slabs_are_released_and_holes_refilled_first() {
        let mut p = Pool::new(AllocatorKind::Zsmalloc, Backing::Memory);
        let hs: Vec<_> = (0..4000u32)
            .map(|_| p.store(&[3u8; 1000]).unwrap())
            .collect();
        let peak = p.pool_bytes;
        // Freeing the second half empties its slabs: they go back to the kernel.
        for &h in &hs[2000..] {
            p.free(h);
        }
        assert_eq!(p.pool_bytes, peak / 2);
        // Holes in live slabs are filled before any empty or fresh slab is touched.
        for &h in hs[..2000].iter().step_by(2) {
            p.free(h);
        }
        let holey = p.pool_bytes;
        assert_eq!(holey, peak / 2, "half-empty slabs stay");
        for _ in 0..1000 {
            p.store(&[4u8; 1000]).unwrap();
        }
        assert_eq!(p.pool_bytes, holey, "new objects went into the holes");
    }
    #[test]
    fn zbud_packs_at_most_two_per_page() {
        let mut p = Pool::new(AllocatorKind::Zbud, Backing::Memory);
        for _ in 0..256 {
            p.store(&[7u8; 100]).unwrap();
        }
        // 256 objects of 100 B in 2048-B slots: 128 pages' worth = 512 KiB.
        assert_eq!(p.pool_bytes, 512 * 1024);
    }
}
