//! Memory TCO of a placement (TierScape §5.2.3, Eq. 9–12, and Eq. 1 for the savings range).
//!
//! Every tier has a media cost per GB (`TierSpec::cost_per_gb`: for a compressed tier, the
//! cost of the media backing its pool, `USD_{T_y}`) and a compression ratio
//! `C_{T_y}` = original bytes / compressed bytes (Eq. 11; 1 for an uncompressed tier). A
//! tier's *effective* cost per logical GB is `USD / C`, and
//!
//! * `TCO = Σ_y bytes_y · USD_y / C_y` (Eq. 12, in bytes instead of 4 KiB pages: the same up
//!   to the unit of cost),
//! * `TCO_max` = every byte in tier 0, the DRAM (Eq. 9),
//! * `TCO_min` = every byte in the tier of lowest effective cost (Eq. 10 names the last
//!   tier, which the paper's tier order makes the cheapest; we take the cheapest whatever the
//!   order),
//! * `MTS = TCO_max − TCO_min` (Eq. 1), and savings = `1 − TCO / TCO_max`.
//!
//! Bytes are *logical* (uncompressed) bytes placed in each tier. Costs are in the tiers'
//! relative units per GB (1 GB = 1e9 bytes).

use crate::config::{check_range, invalid};
use crate::error::Result;
use crate::tier::{TierKind, TierSpec};

/// Bytes per GB of the cost unit.
const GB: f64 = 1e9;

/// One tier as the TCO model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TierCost {
    /// Media cost per GB (`USD_{T_y}` of Eq. 10/12; for DRAM `USD_{DRAM}` of Eq. 9).
    pub cost_per_gb: f64,
    /// `C_{T_y}` of Eq. 11: original size / compressed size; 1 for an uncompressed tier.
    pub compression_ratio: f64,
}

impl TierCost {
    /// Cost of one logical GB placed in this tier: `USD / C` (the factor of Eq. 12).
    pub fn effective_cost_per_gb(&self) -> f64 {
        self.cost_per_gb / self.compression_ratio
    }
}

/// The TCO model of a tier list; tier 0 is the DRAM of Eq. 9.
#[derive(Clone, Debug, PartialEq)]
pub struct TcoModel {
    pub tiers: Vec<TierCost>,
}

impl TcoModel {
    /// A model from per-tier costs; errors name `path[i]` for a cost that is negative or
    /// not finite or a compression ratio below 1.
    pub fn new(tiers: Vec<TierCost>, path: &str) -> Result<TcoModel> {
        if tiers.is_empty() {
            return Err(invalid(
                path,
                "no tiers; the TCO model needs at least the DRAM",
            ));
        }
        for (i, t) in tiers.iter().enumerate() {
            check_range(
                &format!("{path}[{i}].cost_per_gb"),
                t.cost_per_gb,
                0.0,
                1e12,
            )?;
            check_range(
                &format!("{path}[{i}].compression_ratio"),
                t.compression_ratio,
                1.0,
                1e6,
            )?;
        }
        if tiers[0].cost_per_gb <= 0.0 {
            return Err(invalid(
                &format!("{path}[0].cost_per_gb"),
                "is 0; the DRAM's cost is the reference of every saving (Eq. 9), give it a positive cost",
            ));
        }
        Ok(TcoModel { tiers })
    }

    /// The model of a backend's tiers: each tier's `cost_per_gb`, and `ratio(i)` as the
    /// compression ratio of compressed tier `i` (uncompressed tiers have ratio 1).
    pub fn from_specs(specs: &[TierSpec], ratio: impl Fn(usize) -> f64) -> Result<TcoModel> {
        let tiers = specs
            .iter()
            .enumerate()
            .map(|(i, s)| TierCost {
                cost_per_gb: s.cost_per_gb,
                compression_ratio: if matches!(s.kind, TierKind::Compressed { .. }) {
                    ratio(i)
                } else {
                    1.0
                },
            })
            .collect();
        TcoModel::new(tiers, "tiers")
    }

    /// Effective cost per logical GB of each tier.
    pub fn effective_costs(&self) -> Vec<f64> {
        self.tiers
            .iter()
            .map(|t| t.effective_cost_per_gb())
            .collect()
    }

    /// The tier of lowest effective cost (lowest index among equals).
    pub fn cheapest_tier(&self) -> usize {
        let e = self.effective_costs();
        (0..e.len())
            .min_by(|&a, &b| e[a].total_cmp(&e[b]).then(a.cmp(&b)))
            .unwrap_or(0)
    }

    /// Eq. 12: the TCO of `bytes[y]` logical bytes in tier `y` (missing tiers hold 0).
    pub fn tco(&self, bytes: &[u64]) -> f64 {
        self.tiers
            .iter()
            .zip(bytes)
            .map(|(t, &b)| b as f64 / GB * t.effective_cost_per_gb())
            .sum()
    }

    /// Eq. 9: all `total_bytes` in DRAM (tier 0).
    pub fn tco_max(&self, total_bytes: u64) -> f64 {
        total_bytes as f64 / GB * self.tiers[0].effective_cost_per_gb()
    }

    /// Eq. 10: all `total_bytes` in the cheapest tier.
    pub fn tco_min(&self, total_bytes: u64) -> f64 {
        total_bytes as f64 / GB * self.tiers[self.cheapest_tier()].effective_cost_per_gb()
    }

    /// Eq. 1: the maximum TCO saving, `TCO_max − TCO_min`.
    pub fn mts(&self, total_bytes: u64) -> f64 {
        self.tco_max(total_bytes) - self.tco_min(total_bytes)
    }

    /// The bound of Eq. 2: `TCO_min + α · MTS`.
    pub fn budget(&self, total_bytes: u64, alpha: f64) -> f64 {
        self.tco_min(total_bytes) + alpha * self.mts(total_bytes)
    }

    /// `1 − TCO / TCO_max` of a placement (0 with nothing placed).
    pub fn savings(&self, bytes: &[u64]) -> f64 {
        let total: u64 = bytes.iter().sum();
        let max = self.tco_max(total);
        if max > 0.0 {
            1.0 - self.tco(bytes) / max
        } else {
            0.0
        }
    }
}

/// Savings of a measured placement: `logical[y]` bytes placed in tier `y`, taking
/// `physical[y]` bytes of its media (a compressed tier's pool frames). The TCO is then
/// `Σ physical_y · USD_y` — Eq. 12 with the measured ratio `C_y = logical_y / physical_y`.
pub fn measured_savings(specs: &[TierSpec], logical: &[u64], physical: &[u64]) -> f64 {
    let total: u64 = logical.iter().sum();
    let Some(dram) = specs.first() else {
        return 0.0;
    };
    let max = total as f64 / GB * dram.cost_per_gb;
    if max <= 0.0 {
        return 0.0;
    }
    let tco: f64 = specs
        .iter()
        .zip(physical)
        .map(|(s, &b)| b as f64 / GB * s.cost_per_gb)
        .sum();
    1.0 - tco / max
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(tiers: &[(f64, f64)]) -> TcoModel {
        TcoModel::new(
            tiers
                .iter()
                .map(|&(cost_per_gb, compression_ratio)| TierCost {
                    cost_per_gb,
                    compression_ratio,
                })
                .collect(),
            "tiers",
        )
        .unwrap()
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn all_in_dram_saves_nothing() {
        let m = model(&[(1.0, 1.0), (1.0 / 3.0, 2.0)]);
        assert_eq!(m.savings(&[10 * GIB, 0]), 0.0);
        assert_eq!(m.tco(&[10 * GIB, 0]), m.tco_max(10 * GIB));
    }

    #[test]
    fn all_in_a_tier_of_ratio_2_and_a_third_of_the_cost_saves_five_sixths() {
        // 1 − 1/(2·3) = 83.3 %.
        let m = model(&[(1.0, 1.0), (1.0 / 3.0, 2.0)]);
        let s = m.savings(&[0, 10 * GIB]);
        assert!((s - (1.0 - 1.0 / 6.0)).abs() < 1e-12, "{s}");
        assert!((s - 0.8333).abs() < 1e-4);
        assert_eq!(m.cheapest_tier(), 1);
        assert!((m.tco_min(10 * GIB) - m.tco(&[0, 10 * GIB])).abs() < 1e-12);
    }

    #[test]
    fn mts_and_budget_span_min_to_max() {
        // The cheapest tier need not be the last (Eq. 10 assumes it is).
        let m = model(&[(1.0, 1.0), (0.5, 3.0), (1.0, 2.0)]);
        assert_eq!(m.cheapest_tier(), 1);
        let t = 6 * GIB;
        let (lo, hi) = (m.tco_min(t), m.tco_max(t));
        assert!((m.mts(t) - (hi - lo)).abs() < 1e-12);
        assert_eq!(m.budget(t, 0.0), lo);
        assert!((m.budget(t, 1.0) - hi).abs() < 1e-12);
        // A mixed placement: half DRAM, half tier 2 (effective cost 0.5).
        let s = m.savings(&[3 * GIB, 0, 3 * GIB]);
        assert!((s - 0.25).abs() < 1e-12, "{s}");
    }

    #[test]
    fn measured_savings_use_physical_bytes() {
        let spec = |cost: f64| TierSpec {
            name: "t".into(),
            kind: TierKind::Dram,
            capacity_bytes: 0,
            unloaded_latency_ns: 0.0,
            peak_bandwidth_bytes_per_s: 0.0,
            cost_per_gb: cost,
        };
        let specs = [spec(1.0), spec(1.0 / 3.0)];
        // 10 GiB placed in tier 1 taking 5 GiB of its media: ratio 2, cost 1/3.
        let s = measured_savings(&specs, &[0, 10 * GIB], &[0, 5 * GIB]);
        assert!((s - 5.0 / 6.0).abs() < 1e-12, "{s}");
        assert_eq!(measured_savings(&specs, &[GIB, 0], &[GIB, 0]), 0.0);
    }

    #[test]
    fn bad_costs_name_the_field() {
        let e = TcoModel::new(
            vec![
                TierCost {
                    cost_per_gb: 1.0,
                    compression_ratio: 1.0,
                },
                TierCost {
                    cost_per_gb: 0.3,
                    compression_ratio: 0.5,
                },
            ],
            "tiers",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tiers[1].compression_ratio"), "{e}");
    }
}
