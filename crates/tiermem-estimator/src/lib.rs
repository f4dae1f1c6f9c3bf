//! Memstrata's slowdown estimator (Zhong et al., OSDI'24 §4.2): a random forest trained
//! offline (`tiermem memstrata train`, scikit-learn) and shipped as ONNX, run here through
//! `tract-onnx`, so the allocator loop never calls Python. The miss-ratio proxy's
//! coefficients (§4.2, Fig. 9b) ride in the model's metadata.
//!
//! The allocator (`tiermem_policies::memstrata`) sees the estimator only through
//! [`OutlierEstimator`]; this crate is its ONNX implementation. It is a crate of its own so
//! that the ONNX runtime is compiled into what runs the model (the simulator, the CLI, the
//! Python extension) and never into the policy crate the Linux runtime and the preload
//! shim link.

use std::path::Path;
use tiermem_core::{Error, ErrorKind, Result};
use tiermem_policies::memstrata::{Features, OutlierEstimator, RETRAIN};
use tract_onnx::prelude::*;

fn internal(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Internal, message)
}

type Runnable = TypedRunnableModel<TypedModel>;

/// The trained outlier classifier with its miss-ratio proxy.
pub struct Estimator {
    plan: Runnable,
    /// miss ratio ≈ intercept + slope × L3 miss latency (ns), clamped to [0, 1].
    pub proxy_intercept: f64,
    pub proxy_slope_per_ns: f64,
}

fn model_error(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::config(format!(
        "Memstrata estimator model {}: {why}; retrain it with `{RETRAIN}`",
        path.display()
    ))
}

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

impl OutlierEstimator for Estimator {
    fn miss_ratio(&self, f: &Features) -> f64 {
        Estimator::miss_ratio(self, f)
    }
    fn is_outlier(&self, f: &Features) -> Result<bool> {
        Ok(self.outlier_probability(f)? > 0.5)
    }
}
