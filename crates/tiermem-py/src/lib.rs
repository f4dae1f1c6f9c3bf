//! PyO3 glue only: the private `tiermem._native` module behind the `tiermem` Python package.
//!
//! Every function here converts arguments, releases the GIL around one call into the Rust
//! crates, and converts the result back. Errors become the exception classes defined in
//! `tiermem/errors.py` (`ConfigError`, `TraceError`, `UnsupportedError`, base
//! `TiermemError`), chosen by [`tiermem_core::ErrorKind`].

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyType;
use tiermem_core::{Error, ErrorKind};

/// Python class name (in `tiermem.errors`) for each error kind.
fn exception_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Config | ErrorKind::Usage => "ConfigError",
        ErrorKind::Trace => "TraceError",
        ErrorKind::Unsupported => "UnsupportedError",
        ErrorKind::Io | ErrorKind::Internal => "TiermemError",
    }
}

/// Convert a core error into an instance of the matching `tiermem.errors` class.
fn to_py_err(py: Python<'_>, err: Error) -> PyErr {
    let message = err.to_string();
    let class = py
        .import("tiermem.errors")
        .and_then(|m| m.getattr(exception_name(err.kind)))
        .and_then(|c| c.cast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, message),
        // The package is broken (errors.py missing): still say what went wrong.
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// One column of the time series: (name, values).
type PyColumn = (String, Vec<f64>);

/// Simulate the config in `toml_text`; `origin` names it in error messages and is the base
/// for relative paths. Returns (summary as JSON text, time-series columns).
#[pyfunction]
fn simulate(
    py: Python<'_>,
    toml_text: String,
    origin: String,
) -> PyResult<(String, Vec<PyColumn>)> {
    let result = py.detach(move || tiermem_sim::simulate_toml(&toml_text, &origin));
    let out = result.map_err(|e| to_py_err(py, e))?;
    let summary = out.summary.to_string();
    let columns = out
        .timeseries
        .into_iter()
        .map(|c| (c.name, c.values))
        .collect();
    Ok((summary, columns))
}

/// Reproduce the paper experiment `experiment` into `out_dir` (CSV, summary.json);
/// returns the summary as JSON text.
#[pyfunction]
#[pyo3(signature = (experiment, out_dir, quick = false))]
fn reproduce(py: Python<'_>, experiment: String, out_dir: String, quick: bool) -> PyResult<String> {
    let result = py.detach(move || {
        tiermem_sim::reproduce::run(&experiment, std::path::Path::new(&out_dir), quick)
    });
    let summary = result.map_err(|e| to_py_err(py, e))?;
    Ok(summary.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
