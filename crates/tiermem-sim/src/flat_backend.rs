//! The Flat Memory Mode node (`flat_memory`) as an engine [`Backend`]: VMs are tenants,
//! the dedicated local node is tier 0 and the hardware-tiered node tier 1. The hardware
//! places lines itself, so a software policy has nothing to move (`static`); a controller
//! (Memstrata's allocator) sets each VM's limit on the dedicated node, and `apply` carries
//! the limits out as Memstrata's `exchange_pages` would (§4.3): a donor's dedicated pages
//! for the borrower's hardware-tiered pairs, both frames of a slot together so coloring
//! holds, pages chosen at random.
//!
//! Each `advance` solves the machine (when the placement changed) and records every VM's
//! slowdown against the same VMs all in local DRAM; `observe` gives each VM's core counters
//! with counter noise (`memstrata::noisy`), the per-VM view a hypervisor has.

use crate::flat_memory::{Backing, FlatEquilibrium, FlatMachine, Frame, Vm};
use crate::memstrata::{self, Workload, HOST_PAGE_BYTES};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use tiermem_core::{
    Applied, Backend, Capabilities, CoreCounters, Error, ErrorKind, PageRange, Plan, Provision,
    Result, Snapshot, TelemetryKind, TenantId, TenantSpec, TenantTelemetry, TierId, TierKind,
    TierSpec, TierTelemetry, TrackerSpec, NO_CONTROLS,
};

/// The dedicated local node and the hardware-tiered node.
pub const DEDICATED: TierId = TierId(0);
pub const HW_TIERED: TierId = TierId(1);

pub struct FlatBackend {
    machine: FlatMachine,
    workloads: Vec<Workload>,
    vms: Vec<Vm>,
    tier_specs: Vec<TierSpec>,
    tenants: Vec<TenantSpec>,
    placement: Vec<TierId>,
    /// Each VM's operations per second with all its memory local (the slowdown baseline).
    local_ops: Vec<f64>,
    eq: FlatEquilibrium,
    dirty: bool,
    now_ns: u64,
    rng: SmallRng,
    tiers: Vec<TierTelemetry>,
    tenant_telemetry: Vec<TenantTelemetry>,
    /// Per `advance`: each VM's slowdown against all-local.
    pub slowdowns: Vec<Vec<f64>>,
    /// Per `apply` that exchanged pages: the pages each VM gave or took.
    pub moved_per_apply: Vec<Vec<u64>>,
}

impl FlatBackend {
    /// VMs on `machine` with the given frames (from `flat_memory::allocate`); the dedicated
    /// node holds exactly the VMs' dedicated frames. `rng` draws counter noise and the
    /// pages each exchange picks.
    pub fn new(
        machine: FlatMachine,
        workloads: Vec<Workload>,
        frames: Vec<Vec<Frame>>,
        rng: SmallRng,
    ) -> Result<FlatBackend> {
        if workloads.len() != frames.len() || workloads.is_empty() {
            return Err(Error::new(
                ErrorKind::Internal,
                "one frame map per VM, at least one VM",
            ));
        }
        let vms: Vec<Vm> = workloads.iter().zip(frames).map(|(w, f)| w.vm(f)).collect();
        let mut tenants = Vec::new();
        let mut start = 0u32;
        for (i, vm) in vms.iter().enumerate() {
            let len = vm.memory.frames.len() as u32;
            tenants.push(TenantSpec {
                id: TenantId(i as u16),
                name: vm.name.clone(),
                pages: PageRange { start, len },
            });
            start += len;
        }
        let dedicated: usize = vms.iter().map(dedicated_pages).sum();
        let spec = |name: &str, pages: u64, model: &crate::machine::TierModel| TierSpec {
            name: name.into(),
            kind: TierKind::Dram,
            capacity_bytes: pages * HOST_PAGE_BYTES,
            unloaded_latency_ns: model.unloaded_ns,
            peak_bandwidth_bytes_per_s: model.peak_bytes_per_s,
            cost_per_gb: 1.0,
        };
        let tier_specs = vec![
            spec("dedicated", dedicated as u64, &machine.local),
            spec("hw-tiered", 2 * machine.slots as u64, &machine.local),
        ];
        let local_ops = machine.solve(&vms, Backing::AllLocal).ops_per_s;
        let mut b = FlatBackend {
            machine,
            workloads,
            vms,
            tier_specs,
            tenants,
            placement: Vec::new(),
            local_ops,
            eq: FlatEquilibrium::default(),
            dirty: true,
            now_ns: 0,
            rng,
            tiers: Vec::new(),
            tenant_telemetry: Vec::new(),
            slowdowns: Vec::new(),
            moved_per_apply: Vec::new(),
        };
        b.placement = b.vms.iter().flat_map(tiers_of).collect();
        Ok(b)
    }

    pub fn vms(&self) -> &[Vm] {
        &self.vms
    }

    /// The last solved state.
    pub fn equilibrium(&self) -> &FlatEquilibrium {
        &self.eq
    }

    fn sync_placement(&mut self, vm: usize) {
        let start = self.tenants[vm].pages.start as usize;
        for (g, t) in tiers_of(&self.vms[vm]).enumerate() {
            self.placement[start + g] = t;
        }
    }

    /// Swap `n` of the donor's dedicated pages for `n / 2` of the borrower's conflicting
    /// pairs; returns the pages exchanged (fewer when either side runs short).
    fn exchange(&mut self, donor: usize, borrower: usize, n: usize) -> usize {
        let slots = self.machine.slots;
        let mut at = vec![usize::MAX; 2 * slots];
        for (g, f) in self.vms[borrower].memory.frames.iter().enumerate() {
            if let Frame::Tiered(x) = f {
                at[*x as usize] = g;
            }
        }
        let mut pairs: Vec<usize> = (0..slots)
            .filter(|&s| at[s] != usize::MAX && at[s + slots] != usize::MAX)
            .collect();
        pairs.shuffle(&mut self.rng);
        let mut ded: Vec<usize> = self.vms[donor]
            .memory
            .frames
            .iter()
            .enumerate()
            .filter(|(_, f)| **f == Frame::Dedicated)
            .map(|(g, _)| g)
            .collect();
        let n = n.min(ded.len()).min(2 * pairs.len()) & !1;
        let mut freed = Vec::with_capacity(n);
        for &s in pairs.iter().take(n / 2) {
            for f in [s, s + slots] {
                self.vms[borrower].memory.frames[at[f]] = Frame::Dedicated;
                freed.push(f as u32);
            }
        }
        ded.shuffle(&mut self.rng);
        for (g, f) in ded.into_iter().zip(freed) {
            self.vms[donor].memory.frames[g] = Frame::Tiered(f);
        }
        self.sync_placement(donor);
        self.sync_placement(borrower);
        self.dirty = true;
        n
    }
}

fn dedicated_pages(vm: &Vm) -> usize {
    vm.memory
        .frames
        .iter()
        .filter(|f| **f == Frame::Dedicated)
        .count()
}

fn tiers_of(vm: &Vm) -> impl Iterator<Item = TierId> + '_ {
    vm.memory.frames.iter().map(|f| match f {
        Frame::Dedicated => DEDICATED,
        Frame::Tiered(_) => HW_TIERED,
    })
}

impl Backend for FlatBackend {
    fn page_bytes(&self) -> u64 {
        HOST_PAGE_BYTES
    }
    fn tier_specs(&self) -> &[TierSpec] {
        &self.tier_specs
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities {
            backend: "simulator (Flat Memory Mode)".into(),
            trackers: Vec::new(),
            telemetry: vec![(TelemetryKind::CoreCounters, Provision::Native)],
            max_granularity_bytes: HOST_PAGE_BYTES,
            max_tenants: u16::MAX as usize,
            tier_limits: true,
            cpu_shares: false,
        }
    }
    fn install_tracker(&mut self, spec: &TrackerSpec) -> Result<()> {
        match spec {
            TrackerSpec::None => Ok(()),
            _ => Err(Error::new(
                ErrorKind::Unsupported,
                "the Flat Memory Mode node tiers in hardware: it has no software tracker (use policy = \"static\")",
            )),
        }
    }
    fn advance(&mut self, dt_ns: u64) -> Result<()> {
        if self.dirty {
            self.eq = self.machine.solve(&self.vms, Backing::Tiered);
            self.dirty = false;
        }
        self.slowdowns.push(
            self.local_ops
                .iter()
                .zip(&self.eq.ops_per_s)
                .map(|(l, o)| l / o - 1.0)
                .collect(),
        );
        self.now_ns += dt_ns;
        Ok(())
    }
    fn now_ns(&self) -> u64 {
        self.now_ns
    }
    fn observe(&mut self) -> Snapshot<'_> {
        let eq = &self.eq;
        let mut tel = Vec::with_capacity(self.vms.len());
        for (i, (vm, w)) in self.vms.iter().zip(&self.workloads).enumerate() {
            let c = memstrata::noisy(
                memstrata::counters(w, eq.memory_latency_ns[i], eq.miss_ratio[i]),
                &mut self.rng,
            );
            let ded = dedicated_pages(vm) as u64;
            let pages = vm.memory.frames.len() as u64;
            tel.push(TenantTelemetry {
                ops_per_s: eq.ops_per_s[i],
                avg_latency_ns: eq.memory_latency_ns[i],
                bandwidth_bytes_per_s: eq.ops_per_s[i]
                    * (vm.lines_per_op + vm.written_lines_per_op)
                    * tiermem_core::CACHELINE_BYTES as f64,
                used_bytes: vec![ded * HOST_PAGE_BYTES, (pages - ded) * HOST_PAGE_BYTES],
                footprint_bytes: pages * HOST_PAGE_BYTES,
                core_counters: Some(CoreCounters {
                    l3_miss_latency_ns: c.l3_miss_latency_ns,
                    l2_miss_latency_ns: c.l2_miss_latency_ns,
                    dtlb_miss_latency_ns: c.dtlb_miss_latency_ns,
                    l2_mpki: c.l2_mpki,
                    l3_mpki: c.l3_mpki,
                }),
                ..Default::default()
            });
        }
        let used = |t: TierId| self.placement.iter().filter(|&&p| p == t).count() as u64;
        self.tiers = [DEDICATED, HW_TIERED]
            .iter()
            .map(|&t| TierTelemetry {
                used_bytes: used(t) * HOST_PAGE_BYTES,
                capacity_bytes: self.tier_specs[t.index()].capacity_bytes,
                ..Default::default()
            })
            .collect();
        self.tiers[0].read_bytes_per_s = eq.local_read_bytes_per_s;
        self.tiers[0].write_bytes_per_s = eq.local_write_bytes_per_s;
        self.tiers[1].read_bytes_per_s = eq.cxl_read_bytes_per_s;
        self.tiers[1].write_bytes_per_s = eq.cxl_write_bytes_per_s;
        self.tenant_telemetry = tel;
        Snapshot {
            now_ns: self.now_ns,
            quantum_ns: 0,
            page_bytes: HOST_PAGE_BYTES,
            tier_specs: &self.tier_specs,
            tiers: &self.tiers,
            placement: &self.placement,
            events: &[],
            tenants: &self.tenants,
            controls: &NO_CONTROLS,
            tenant_telemetry: &self.tenant_telemetry,
            access_bits: None,
            moved: None,
        }
    }
    /// Limits on the dedicated node become exchanges between the VMs above their limit
    /// (donors) and those below it (borrowers), in tenant order. Page moves are refused:
    /// the hardware places lines itself.
    fn apply(&mut self, plan: &Plan, _quota_bytes: Option<u64>) -> Applied {
        let mut applied = Applied::default();
        for m in &plan.moves {
            applied.pages_tried += m.range.len as u64;
            applied.pages_no_capacity += m.range.len as u64;
        }
        let mut give = Vec::new();
        let mut take = Vec::new();
        for (i, t) in self.tenants.iter().enumerate() {
            let Some(bytes) = plan.controls.limit(t.id, DEDICATED) else {
                continue;
            };
            let want = (bytes / HOST_PAGE_BYTES) as usize;
            let has = dedicated_pages(&self.vms[i]);
            if has > want {
                give.push((i, has - want));
            } else if want > has {
                take.push((i, want - has));
            }
        }
        let mut moved = vec![0u64; self.vms.len()];
        let (mut d, mut b) = (0, 0);
        while d < give.len() && b < take.len() {
            let n = give[d].1.min(take[b].1);
            let done = self.exchange(give[d].0, take[b].0, n);
            moved[give[d].0] += done as u64;
            moved[take[b].0] += done as u64;
            applied.pages_tried += n as u64;
            applied.pages_applied += done as u64;
            applied.pages_no_capacity += (n - done) as u64;
            applied.bytes_moved += 2 * done as u64 * HOST_PAGE_BYTES;
            applied.ops_applied += u64::from(done > 0);
            give[d].1 -= n;
            take[b].1 -= n;
            if give[d].1 == 0 {
                d += 1;
            }
            if take[b].1 == 0 {
                b += 1;
            }
        }
        if moved.iter().any(|&m| m > 0) {
            self.moved_per_apply.push(moved);
        }
        applied
    }
}
