//! Loaded-latency curves: a tier's read latency as a function of the bandwidth offered to it.
//!
//! Latency is `unloaded_ns × multiplier(u)`, where `u` is the *effective* utilization
//! `(read_bytes + write_cost × write_bytes) / peak_bytes` over a quantum. `write_cost > 1`
//! models that write-heavy traffic saturates a memory channel earlier (bus turnarounds;
//! Colloid §3.1: saturation bandwidth varies up to 1.75× with the read/write mix).
//! The multiplier is piecewise linear between table points; past the last point it
//! diverges like an M/M/1 queue, `m_last × (1 − u_last) / (1 − u)`, so a closed-loop load can
//! approach but never exceed the tier's peak bandwidth.

pub use tiermem_core::tier::{CurveSpec, CURVE_NAMES};

/// Tables of (effective utilization, latency multiplier).
///
/// `mess-skylake`: Mess benchmark, Skylake 6×DDR4-2666, read traffic: 94 ns idle,
/// 112 ns at ~50 % of peak, 126 ns at ~70 %, 186–235 ns at ~90 % (DESIGN.md §3; Esmaili-Dokht
/// et al., "A Mess of Memory System Benchmarking", MICRO'24).
const MESS_SKYLAKE: &[[f64; 2]] = &[
    [0.0, 1.0],
    [0.5, 1.19],
    [0.7, 1.34],
    [0.8, 1.55],
    [0.9, 2.23],
    [0.95, 3.0],
];

/// `mess-sapphire-rapids`: Mess benchmark, Sapphire Rapids Xeon Platinum 8480 (MareNostrum 5),
/// one socket of 8 × DDR5-4800 (307.2 GB/s theoretical), 100 % reads: the published
/// measurements (bsc-mem/Mess-benchmark, `Intel-SapphireRapids-Xeon-Platinum-8480/measuring/
/// output/bandwidth-latency.csv`; Esmaili-Dokht et al., MICRO'24). Latency stays at 115 ns
/// from 6 to 59 GB/s (u 0.19), then 120 ns at 94.6 GB/s, 125 at 132.5, 140 at 187.1, 150 at
/// 206.9, 165 at 226.5, 175 at 241.2, 190 at 252.1 and 235 ns at 263.6 GB/s (the most it
/// reached, u 0.86); multipliers are relative to the 115 ns plateau. The 110 ns reading
/// below 1 GB/s (channels nearly idle) is left out: a server running VMs is never there.
/// Unlike a straight line from idle, the plateau leaves a co-runner that uses a few
/// percent of the bandwidth without effect on latency.
const MESS_SAPPHIRE_RAPIDS: &[[f64; 2]] = &[
    [0.0, 1.0],
    [0.193, 1.0],
    [0.308, 1.0435],
    [0.431, 1.087],
    [0.609, 1.2174],
    [0.673, 1.3043],
    [0.737, 1.4348],
    [0.785, 1.5217],
    [0.821, 1.6522],
    [0.858, 2.0433],
];

/// `colloid-local`: fitted to Colloid §2 (SOSP'24) on Ice Lake 8×DDR4-3200 with write_cost 1.75
/// (1:1 read/write traffic saturates at 2/2.75 = 73 % of theoretical peak).
/// Fit points (raw 1:1 utilization → effective u = 1.375 × raw):
///  * GUPS alone (15 cores) loads the default tier to ~1.4× unloaded: 3.4× throughput loss for
///    a ~3.5× latency rise from 0× to 3× contention (§2.2) puts 0× latency near 100 ns of 70;
///  * the antagonist alone uses 51/65/70 % of peak with 5/10/15 cores (§2.1), closed loop;
///  * with GUPS + antagonist the default tier reaches 2.5×/3.8×/5× unloaded at 1×/2×/3× (§2.2).
///
/// Latency inflates well before saturation (bank conflicts and queueing, §3.1).
const COLLOID_LOCAL: &[[f64; 2]] = &[
    [0.0, 1.0],
    [0.3, 1.08],
    [0.59, 1.43],
    [0.70, 1.9],
    [0.894, 2.75],
    [0.945, 3.8],
    [0.97, 4.5],
    [0.985, 5.2],
];

/// `colloid-remote`: the remote socket behind UPI (75 GB/s per direction): nearly flat until
/// half load (Colloid §5.1: at 3× with Colloid the alternate tier ran at 53 % of its peak with
/// latency close to unloaded).
const COLLOID_REMOTE: &[[f64; 2]] = &[
    [0.0, 1.0],
    [0.5, 1.06],
    [0.7, 1.2],
    [0.85, 1.6],
    [0.95, 2.6],
];

const FLAT: &[[f64; 2]] = &[[0.0, 1.0], [0.95, 1.0]];

/// A validated curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Curve {
    points: Vec<[f64; 2]>,
}

impl Curve {
    pub fn from_spec(spec: &CurveSpec) -> Result<Curve, String> {
        let points: Vec<[f64; 2]> = match spec {
            CurveSpec::Named(n) => match n.as_str() {
                "colloid-local" => COLLOID_LOCAL.to_vec(),
                "colloid-remote" => COLLOID_REMOTE.to_vec(),
                "mess-skylake" => MESS_SKYLAKE.to_vec(),
                "mess-sapphire-rapids" => MESS_SAPPHIRE_RAPIDS.to_vec(),
                "flat" => FLAT.to_vec(),
                other => {
                    return Err(format!(
                        "unknown curve `{other}`; use one of {} or a table [[u, multiplier], ...]",
                        CURVE_NAMES.join(", ")
                    ))
                }
            },
            CurveSpec::Table(t) => t.clone(),
        };
        Self::from_points(points)
    }

    pub fn from_points(points: Vec<[f64; 2]>) -> Result<Curve, String> {
        if points.len() < 2 {
            return Err("a curve needs at least two points".into());
        }
        if let Some(bad) = points
            .iter()
            .find(|q| !(q[0].is_finite() && q[1].is_finite() && q[1] <= 1e6))
        {
            return Err(format!(
                "curve point [{}, {}] is not finite (or its multiplier is above 1e6); every point is [u, multiplier] with u in [0, 1) and 1 <= multiplier <= 1e6",
                bad[0], bad[1]
            ));
        }
        if points[0] != [0.0, 1.0] {
            return Err("a curve must start at [0.0, 1.0] (unloaded latency at zero load)".into());
        }
        for w in points.windows(2) {
            // Negated so that a NaN point fails the check too.
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(w[1][0] > w[0][0]) || !(w[1][1] >= w[0][1]) {
                return Err(format!(
                    "curve points must have increasing u and non-decreasing multiplier; [{}, {}] then [{}, {}]",
                    w[0][0], w[0][1], w[1][0], w[1][1]
                ));
            }
        }
        let last = points[points.len() - 1];
        #[allow(clippy::neg_cmp_op_on_partial_ord)] // a NaN must fail too
        if !(last[0] < 1.0) {
            return Err("the last curve point must have u < 1 (latency diverges at u = 1)".into());
        }
        Ok(Curve { points })
    }

    /// Latency multiplier at effective utilization `u` (≥ 0). Continuous and non-decreasing.
    pub fn multiplier(&self, u: f64) -> f64 {
        let p = &self.points;
        let last = p[p.len() - 1];
        if u >= last[0] {
            let room = (1.0 - u).max(1e-6);
            return last[1] * (1.0 - last[0]) / room;
        }
        // Few points: a linear scan beats a binary search.
        let mut i = 1;
        while p[i][0] < u {
            i += 1;
        }
        let (a, b) = (p[i - 1], p[i]);
        a[1] + (b[1] - a[1]) * (u.max(0.0) - a[0]) / (b[0] - a[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curves_are_monotone_and_diverge() {
        for name in CURVE_NAMES {
            let c = Curve::from_spec(&CurveSpec::Named(name.to_string())).unwrap();
            let mut prev = 0.0;
            for i in 0..2000 {
                let u = i as f64 / 2000.0 * 1.2;
                let m = c.multiplier(u);
                assert!(m >= prev - 1e-12, "{name} not monotone at {u}");
                prev = m;
            }
            assert_eq!(c.multiplier(0.0), 1.0);
            assert!(c.multiplier(0.9999) > 50.0 || *name == "flat" && c.multiplier(0.9999) > 100.0);
        }
    }

    #[test]
    fn mess_calibration_points() {
        let c = Curve::from_spec(&CurveSpec::Named("mess-skylake".into())).unwrap();
        // 94 ns idle → 112 ns at 50 %, 126 ns at 70 % (DESIGN.md §3).
        assert!((94.0 * c.multiplier(0.5) - 112.0).abs() < 1.0);
        assert!((94.0 * c.multiplier(0.7) - 126.0).abs() < 1.0);
        let at90 = 94.0 * c.multiplier(0.9);
        assert!((186.0..=235.0).contains(&at90), "{at90}");
    }

    #[test]
    fn sapphire_rapids_reproduces_the_published_measurements() {
        let c = Curve::from_spec(&CurveSpec::Named("mess-sapphire-rapids".into())).unwrap();
        // (GB/s, ns) read from the Mess measurements (see MESS_SAPPHIRE_RAPIDS), 307.2 GB/s
        // peak, 115 ns plateau; points between the table's rows included.
        for (gbps, ns) in [
            (28.05, 115.0),
            (59.3, 115.0),
            (94.6, 120.0),
            (132.5, 125.0),
            (187.1, 140.0),
            (226.5, 165.0),
            (241.2, 175.0),
            (263.6, 235.0),
        ] {
            let model = 114.98 * c.multiplier(gbps / 307.2);
            assert!((model - ns).abs() < 1.5, "{gbps} GB/s: {model} ns vs {ns}");
        }
        // Rows the table does not hold, within a step of the quantized readings.
        for (gbps, ns) in [(69.3, 120.0), (108.4, 125.0), (244.0, 180.0)] {
            let model = 114.98 * c.multiplier(gbps / 307.2);
            assert!((model - ns).abs() <= 5.0, "{gbps} GB/s: {model} ns vs {ns}");
        }
    }

    #[test]
    fn bad_tables_rejected() {
        assert!(Curve::from_points(vec![[0.0, 1.0], [0.5, 0.9]]).is_err());
        assert!(Curve::from_points(vec![[0.0, 1.0], [1.0, 3.0]]).is_err());
        assert!(Curve::from_points(vec![[0.1, 1.0], [0.5, 2.0]]).is_err());
        assert!(Curve::from_spec(&CurveSpec::Named("fast".into())).is_err());
    }
}
