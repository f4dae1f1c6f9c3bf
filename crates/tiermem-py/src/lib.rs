//! PyO3 glue only: the private `tiermem._native` module behind the `tiermem` Python package.
//!
//! Every function here converts arguments, releases the GIL around one call into the Rust
//! crates, and converts the result back. Errors become the exception classes defined in
//! `tiermem/errors.py` (`ConfigError`, `TraceError`, `UnsupportedError`, base
//! `TiermemError`), chosen by [`tiermem_core::ErrorKind`].

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
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

/// The paper experiments `reproduce` knows, in the CLI's order
/// (`tiermem_sim::reproduce::EXPERIMENTS`, the one list `tiermem reproduce` uses).
#[pyfunction]
fn experiments() -> Vec<&'static str> {
    tiermem_sim::reproduce::EXPERIMENTS.to_vec()
}

/// Parse and validate the config in `toml_text` (from `origin`) without simulating it:
/// the same checks as `simulate`, so a sweep can reject a bad point before any point runs.
#[pyfunction]
fn check_config(py: Python<'_>, toml_text: String, origin: String) -> PyResult<()> {
    py.detach(move || tiermem_sim::config::SimConfig::from_toml(&toml_text, &origin).map(|_| ()))
        .map_err(|e| to_py_err(py, e))
}

/// A Python value as a TOML value (bool, int, float, str, list/tuple, dict with str keys,
/// numpy scalars through `.item()`); `path` names the override in the error otherwise.
fn to_toml(value: &Bound<'_, PyAny>, path: &str) -> Result<toml::Value, Error> {
    let fail = |what: String| Error::config(format!("field `{path}`: {what}"));
    if value.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(
            value.extract::<bool>().map_err(|e| fail(e.to_string()))?,
        ));
    }
    if value.is_instance_of::<PyInt>() {
        return value.extract::<i64>().map(toml::Value::Integer).map_err(|_| {
            fail(format!("{value} does not fit a TOML integer (at most 9223372036854775807); write a size as a string such as \"64G\""))
        });
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(
            value.extract::<f64>().map_err(|e| fail(e.to_string()))?,
        ));
    }
    if value.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(
            value.extract::<String>().map_err(|e| fail(e.to_string()))?,
        ));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let items = value.try_iter().map_err(|e| fail(e.to_string()))?;
        let mut out = Vec::new();
        for (i, item) in items.enumerate() {
            let item = item.map_err(|e| fail(e.to_string()))?;
            out.push(to_toml(&item, &format!("{path}[{i}]"))?);
        }
        return Ok(toml::Value::Array(out));
    }
    if let Ok(d) = value.cast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, v) in d.iter() {
            let Ok(k) = k.extract::<String>() else {
                return Err(fail(format!("table keys must be strings, not {k}")));
            };
            let sub = format!("{path}.{k}");
            if v.is_none() {
                continue; // TOML has no null: a None entry is left out, as in to_toml
            }
            t.insert(k, to_toml(&v, &sub)?);
        }
        return Ok(toml::Value::Table(t));
    }
    if value.is_none() {
        return Err(fail(
            "None is not a TOML value; give a value (TOML has no null)".into(),
        ));
    }
    if let Ok(item) = value.call_method0("item") {
        if !item.is(value) && !item.hasattr("item").unwrap_or(true) {
            return to_toml(&item, path);
        }
    }
    let ty = value
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    Err(fail(format!(
        "a Python {ty} is not a TOML value; give a bool, int, float, str, list or dict"
    )))
}

/// Apply `overrides` ((path, Python value) pairs, paths like `machine.tiers[1].capacity`)
/// in order to the TOML document `toml_text` (from `origin`); returns the new TOML text.
/// The one implementation of override paths: `tiermem_sim::overrides`.
#[pyfunction]
fn apply_overrides(
    py: Python<'_>,
    toml_text: String,
    origin: String,
    overrides: Vec<(String, Bound<'_, PyAny>)>,
) -> PyResult<String> {
    let mut pairs = Vec::with_capacity(overrides.len());
    for (path, value) in &overrides {
        tiermem_sim::overrides::parse_path(path).map_err(|e| to_py_err(py, e))?;
        pairs.push((
            path.clone(),
            to_toml(value, path).map_err(|e| to_py_err(py, e))?,
        ));
    }
    tiermem_sim::overrides::apply_to_text(&toml_text, &origin, &pairs).map_err(|e| to_py_err(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(apply_overrides, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(check_config, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
