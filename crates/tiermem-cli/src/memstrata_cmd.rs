//! `tiermem memstrata train`: retrain Memstrata's slowdown estimator on simulator samples
//! (docs/simulator.md, "Flat Memory Mode"): the samples come from the Rust simulator, the
//! random forest from scikit-learn (`python -m tiermem.memstrata_train`), and the exported
//! ONNX model is loaded back here through the allocator's own inference path.

use clap::{Args, Subcommand};
use std::path::PathBuf;
use tiermem_core::{Error, ErrorKind, Result};
use tiermem_sim::{memstrata, reproduce_memstrata};

#[derive(Subcommand)]
pub enum MemstrataCommand {
    /// Generate estimator samples with the simulator, train the random forest (scikit-learn,
    /// 100 trees, validated on held-out workloads) and write the ONNX model.
    Train(TrainArgs),
}

#[derive(Args)]
pub struct TrainArgs {
    /// Where features.csv and report.json go.
    #[arg(long, default_value = "out/memstrata-train")]
    pub out: PathBuf,
    /// The model to write (default: the shipped one, experiments/memstrata/estimator.onnx).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Noisy counter readings per workload and dedicated share.
    #[arg(long, default_value_t = 3)]
    pub draws: u32,
}

pub fn memstrata(c: MemstrataCommand) -> Result<()> {
    match c {
        MemstrataCommand::Train(a) => train(a),
    }
}

fn train(a: TrainArgs) -> Result<()> {
    crate::sim_cmd::check_out_dir(&a.out)?;
    let model = a
        .model
        .unwrap_or_else(reproduce_memstrata::default_model_path);
    std::fs::create_dir_all(&a.out).map_err(|e| Error::io(a.out.display(), e))?;
    let m = memstrata::paper_machine(128);
    let pop = reproduce_memstrata::calibrated_population(&m)?;
    let samples = memstrata::samples(&m, &pop, a.draws, 15)?;
    let csv = a.out.join("features.csv");
    std::fs::write(&csv, memstrata::samples_csv(&samples))
        .map_err(|e| Error::io(csv.display(), e))?;
    let report = a.out.join("report.json");
    let python = crate::sim_cmd::front_python();
    let mut cmd = std::process::Command::new(&python);
    cmd.args(["-m", "tiermem.memstrata_train"])
        .arg(&csv)
        .arg(&model)
        .arg(&report);
    if let Some(dir) = crate::sim_cmd::checkout_python_dir() {
        cmd.env("PYTHONPATH", dir);
    }
    let status = cmd
        .status()
        .map_err(|e| Error::new(ErrorKind::Unsupported, format!("cannot run {python}: {e}; set TIERMEM_PYTHON to a Python with scikit-learn and skl2onnx (make setup)")))?;
    if !status.success() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!("`{python} -m tiermem.memstrata_train` failed; set TIERMEM_PYTHON to a Python with scikit-learn and skl2onnx (make setup)"),
        ));
    }
    verify(&model, &samples)?;
    println!("report {}", report.display());
    Ok(())
}

/// Load the model back through the allocator's inference path and score it on the samples.
fn verify(model: &std::path::Path, samples: &[memstrata::Sample]) -> Result<()> {
    use tiermem_estimator::Estimator;
    use tiermem_policies::memstrata::{Features, OutlierEstimator};
    let est = Estimator::load(model)?;
    let mut right = 0usize;
    for s in samples {
        let c = &s.counters;
        let f = Features {
            l3_miss_latency_ns: c.l3_miss_latency_ns,
            l2_miss_latency_ns: c.l2_miss_latency_ns,
            dtlb_miss_latency_ns: c.dtlb_miss_latency_ns,
            l2_mpki: c.l2_mpki,
            l3_mpki: c.l3_mpki,
        };
        right += usize::from(est.is_outlier(&f)? == (s.slowdown > memstrata::OUTLIER));
    }
    println!(
        "wrote {} ({} samples; Rust inference agrees with the labels on {:.1} % of them, training set included)",
        model.display(),
        samples.len(),
        100.0 * right as f64 / samples.len().max(1) as f64
    );
    Ok(())
}
