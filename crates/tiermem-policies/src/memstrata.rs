//! Memstrata (Zhong et al., OSDI'24 §4): the slowdown estimator's inference and the
//! dynamic page allocator of dedicated local DRAM across VMs (§4.3, Listing 1). Pure: the
//! allocator sees per-VM metrics and returns exchanges; the backend carries them out.
//!
//! The estimator is a random forest trained offline (`tiermem memstrata train`, scikit-learn)
//! and shipped as ONNX; it runs here through `tract-onnx`, so the allocator loop never calls
//! Python. The miss-ratio proxy's coefficients (§4.2, Fig. 9b) ride in the model's metadata.

#[cfg(feature = "onnx")]
use std::path::Path;
use tiermem_core::Result;
#[cfg(feature = "onnx")]
use tiermem_core::{Error, ErrorKind};
#[cfg(feature = "onnx")]
use tract_onnx::prelude::*;

#[cfg(feature = "onnx")]
fn internal(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Internal, message)
}

/// Every `interval_s` the allocator measures, predicts and exchanges (§4.3: 10 s).
pub const DEFAULT_INTERVAL_S: f64 = 10.0;
/// EWMA constant of the metrics (§4.3: α = 0.2).
pub const DEFAULT_EWMA_ALPHA: f64 = 0.2;
/// Largest share of a VM's pages it moves in one round (§4.3: stepRatio 10 %).
pub const DEFAULT_STEP_RATIO: f64 = 0.10;
/// The command that writes the shipped model.
pub const RETRAIN: &str = "tiermem memstrata train";

/// The counters the estimator reads, per VM (§4.2).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Features {
    pub l3_miss_latency_ns: f64,
    pub l2_miss_latency_ns: f64,
    pub dtlb_miss_latency_ns: f64,
    pub l2_mpki: f64,
    pub l3_mpki: f64,
}

impl Features {
    /// `self ← α·x + (1−α)·self` (§4.3's smoothing of short-term variation).
    pub fn ewma(&mut self, x: &Features, alpha: f64) {
        let m = |a: &mut f64, b: f64| *a = alpha * b + (1.0 - alpha) * *a;
        m(&mut self.l3_miss_latency_ns, x.l3_miss_latency_ns);
        m(&mut self.l2_miss_latency_ns, x.l2_miss_latency_ns);
        m(&mut self.dtlb_miss_latency_ns, x.dtlb_miss_latency_ns);
        m(&mut self.l2_mpki, x.l2_mpki);
        m(&mut self.l3_mpki, x.l3_mpki);
    }
}

/// What the allocator asks of a slowdown estimator.
pub trait OutlierEstimator {
    /// Estimated local-miss ratio of a VM.
    fn miss_ratio(&self, f: &Features) -> f64;
    /// Whether the VM is predicted to slow down by more than 5 %.
    fn is_outlier(&self, f: &Features) -> Result<bool>;
}

#[cfg(feature = "onnx")]
type Runnable = TypedRunnableModel<TypedModel>;

/// The trained outlier classifier with its miss-ratio proxy.
#[cfg(feature = "onnx")]
pub struct Estimator {
    plan: Runnable,
    /// miss ratio ≈ intercept + slope × L3 miss latency (ns), clamped to [0, 1].
    pub proxy_intercept: f64,
    pub proxy_slope_per_ns: f64,
}

#[cfg(feature = "onnx")]
fn model_error(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::config(format!(
        "Memstrata estimator model {}: {why}; retrain it with `{RETRAIN}`",
        path.display()
    ))
}

#[cfg(feature = "onnx")]
impl Estimator {
    /// Load an ONNX model written by `tiermem memstrata train`. A missing or malformed
    /// file is a one-line config error naming it and the retrain command (exit 2).
    pub fn load(path: &Path) -> Result<Estimator> {
        if !path.is_file() {
            return Err(model_error(path, "no such file"));
        }
        let onnx = tract_onnx::onnx();
        let proto = onnx
            .proto_model_for_path(path)
            .map_err(|e| model_error(path, format!("not an ONNX model ({e})")))?;
        let meta = |key: &str| -> Result<f64> {
            proto
                .metadata_props
                .iter()
                .find(|p| p.key == key)
                .and_then(|p| p.value.parse().ok())
                .ok_or_else(|| model_error(path, format!("metadata `{key}` missing")))
        };
        let proxy_intercept = meta("memstrata.proxy_intercept")?;
        let proxy_slope_per_ns = meta("memstrata.proxy_slope_per_ns")?;
        let plan = onnx
            .model_for_proto_model(&proto)
            .and_then(|m| {
                m.with_input_fact(0, f32::fact([1, 5]).into())?
                    .into_optimized()?
                    .into_runnable()
            })
            .map_err(|e| model_error(path, format!("cannot run it ({e})")))?;
        Ok(Estimator {
            plan,
            proxy_intercept,
            proxy_slope_per_ns,
        })
    }

    /// Estimated local-miss ratio from the L3 miss latency (the per-VM proxy).
    pub fn miss_ratio(&self, f: &Features) -> f64 {
        (self.proxy_intercept + self.proxy_slope_per_ns * f.l3_miss_latency_ns).clamp(0.0, 1.0)
    }

    /// Probability that the VM is an outlier (slowdown > 5 %).
    pub fn outlier_probability(&self, f: &Features) -> Result<f64> {
        let est_mpki = self.miss_ratio(f) * f.l3_mpki;
        let x = [
            est_mpki,
            f.l3_miss_latency_ns,
            f.l2_miss_latency_ns,
            f.dtlb_miss_latency_ns,
            f.l2_mpki,
        ]
        .map(|v| v as f32);
        let input: Tensor = tract_ndarray::Array2::from_shape_vec((1, 5), x.to_vec())
            .map_err(|e| internal(e.to_string()))?
            .into();
        let out = self
            .plan
            .run(tvec!(input.into()))
            .map_err(|e| internal(format!("estimator inference: {e}")))?;
        // skl2onnx without zipmap: output 0 the label, output 1 the [P(false), P(true)] rows.
        let probs = out
            .get(1)
            .ok_or_else(|| internal("estimator has no probability output"))?
            .to_array_view::<f32>()
            .map_err(|e| internal(e.to_string()))?;
        Ok(probs.iter().nth(1).copied().unwrap_or(0.0) as f64)
    }
}

#[cfg(feature = "onnx")]
impl OutlierEstimator for Estimator {
    fn miss_ratio(&self, f: &Features) -> f64 {
        Estimator::miss_ratio(self, f)
    }
    fn is_outlier(&self, f: &Features) -> Result<bool> {
        Ok(self.outlier_probability(f)? > 0.5)
    }
}

/// One VM as the allocator ranks it.
#[derive(Clone, Debug, PartialEq)]
pub struct VmView {
    /// All its pages, its dedicated ones, and its local misses per second (estimated
    /// miss ratio × memory requests).
    pub pages: u64,
    pub dedicated: u64,
    pub outlier: bool,
    pub misses_per_s: f64,
}

impl VmView {
    fn tiered(&self) -> u64 {
        self.pages - self.dedicated
    }
    /// Misses per hardware-tiered page (§4.3's `avgMissCount`).
    pub fn misses_per_tiered_page(&self) -> f64 {
        if self.tiered() == 0 {
            0.0
        } else {
            self.misses_per_s / self.tiered() as f64
        }
    }
}

/// An exchange: `pages` of `donor`'s dedicated pages for as many of `borrower`'s
/// hardware-tiered pages (whole conflicting pairs, so `pages` is even).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exchange {
    pub donor: usize,
    pub borrower: usize,
    pub pages: u64,
}

/// One round of Listing 1: rank the VMs (non-outliers first, then by misses per tiered
/// page), let only outliers borrow, from the bottom of the ranking up, each VM moving at
/// most `step_ratio` of its pages in the round (borrowing or donating). Exchanges are whole
/// pairs, and limited by what the donor has dedicated and the borrower has tiered.
pub fn plan_round(vms: &[VmView], step_ratio: f64) -> Vec<Exchange> {
    let mut order: Vec<usize> = (0..vms.len()).collect();
    order.sort_by(|&a, &b| {
        vms[a].outlier.cmp(&vms[b].outlier).then(
            vms[a]
                .misses_per_tiered_page()
                .total_cmp(&vms[b].misses_per_tiered_page()),
        )
    });
    let step = |v: &VmView| ((v.pages as f64 * step_ratio).floor() as u64) & !1;
    let mut moved = vec![0u64; vms.len()];
    let mut given = vec![0u64; vms.len()];
    let mut taken = vec![0u64; vms.len()];
    let mut out = Vec::new();
    let mut donor = 0;
    for borrower in (1..order.len()).rev() {
        let b = order[borrower];
        if !vms[b].outlier {
            break;
        }
        let mut to_borrow = step(&vms[b])
            .saturating_sub(moved[b])
            .min(vms[b].tiered().saturating_sub(taken[b]) & !1);
        while donor < borrower && to_borrow > 0 {
            let d = order[donor];
            let to_donate = step(&vms[d])
                .saturating_sub(moved[d])
                .min(vms[d].dedicated.saturating_sub(given[d]) & !1);
            let n = to_borrow.min(to_donate);
            if n > 0 {
                out.push(Exchange {
                    donor: d,
                    borrower: b,
                    pages: n,
                });
                to_borrow -= n;
                moved[d] += n;
                moved[b] += n;
                given[d] += n;
                taken[b] += n;
            }
            if n == to_donate {
                donor += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(pages: u64, dedicated: u64, outlier: bool, misses: f64) -> VmView {
        VmView {
            pages,
            dedicated,
            outlier,
            misses_per_s: misses,
        }
    }

    #[test]
    fn only_outliers_borrow_and_steps_cap_every_vm() {
        let vms = [
            vm(1000, 330, false, 10.0),
            vm(2000, 660, false, 1.0),
            vm(1000, 330, true, 500.0),
            vm(500, 160, false, 50.0),
        ];
        let x = plan_round(&vms, 0.1);
        assert!(!x.is_empty());
        let mut moved = [0u64; 4];
        for e in &x {
            assert_eq!(e.borrower, 2, "{x:?}");
            assert_eq!(e.pages % 2, 0);
            moved[e.donor] += e.pages;
            moved[e.borrower] += e.pages;
        }
        for (i, v) in vms.iter().enumerate() {
            assert!(moved[i] <= (v.pages as f64 * 0.1) as u64, "{i}: {moved:?}");
        }
        // The outlier takes its full step (100) from the lowest-ranked donor first: VM 1
        // (fewest misses per tiered page) can give 200.
        assert_eq!(
            x,
            vec![Exchange {
                donor: 1,
                borrower: 2,
                pages: 100
            }]
        );
    }

    #[test]
    fn no_outlier_means_no_exchange_and_donors_run_out() {
        let vms = [vm(1000, 330, false, 1.0), vm(1000, 330, false, 2.0)];
        assert!(plan_round(&vms, 0.1).is_empty());
        // A donor with little dedicated memory left gives what it has; the next donor the rest.
        let vms = [
            vm(1000, 20, false, 1.0),
            vm(1000, 330, false, 2.0),
            vm(1000, 0, true, 9.0),
        ];
        let x = plan_round(&vms, 0.1);
        assert_eq!(
            x,
            vec![
                Exchange {
                    donor: 0,
                    borrower: 2,
                    pages: 20
                },
                Exchange {
                    donor: 1,
                    borrower: 2,
                    pages: 80
                }
            ]
        );
    }
}
