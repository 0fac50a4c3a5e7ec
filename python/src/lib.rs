//! `ptxld._ptxld`, the extension module under the Python package `ptxld`
//! (docs/python.md): the library's link and check, with options spelled as on the
//! command line (read by the command line's own parser, `ptxld::cli::link_job`) and
//! the diagnostics as `ptxld check --json` renders them. The Python side
//! (`ptxld/__init__.py`) turns keywords into options and JSON into findings.

// pyo3 0.22's `#[pyfunction]` expansion converts a returned `PyErr` into itself.
#![allow(clippy::useless_conversion)]

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use ptxld_core::{InputSpec, MemoryInput};

/// An input: a path to read, or a name and bytes.
#[derive(FromPyObject)]
enum Input {
    Bytes(String, Vec<u8>),
    Path(PathBuf),
}

/// The inputs as bytes; a file that cannot be read is a usage error.
fn load(inputs: Vec<Input>) -> Result<Vec<MemoryInput>, String> {
    inputs
        .into_iter()
        .map(|i| match i {
            Input::Bytes(name, bytes) => Ok(MemoryInput { name, bytes }),
            Input::Path(p) => std::fs::read(&p)
                .map(|bytes| MemoryInput {
                    name: p.display().to_string(),
                    bytes,
                })
                .map_err(|e| format!("cannot read {}: {e}", p.display())),
        })
        .collect()
}

/// The text and JSON of a usage error's report.
fn usage(message: &str) -> (String, String) {
    let report = ptxld_core::Report::usage(message);
    (report.render(), report.to_json())
}

/// Links `inputs` with `options`: `(output or None, diagnostics as text, as JSON)`.
/// The GIL is released while ptxld links.
#[pyfunction]
fn link(
    py: Python<'_>,
    inputs: Vec<Input>,
    options: Vec<String>,
) -> PyResult<(Option<PyObject>, String, String)> {
    let job = match ptxld_core::cli::link_job(&options) {
        Ok(job) => job,
        Err(e) => {
            let (text, json) = usage(&e.0);
            return Ok((None, text, json));
        }
    };
    let inputs = match load(inputs) {
        Ok(i) => i,
        Err(e) => {
            let (text, json) = usage(&e);
            return Ok((None, text, json));
        }
    };
    let result =
        py.allow_threads(|| std::panic::catch_unwind(|| ptxld_core::link_in_memory(&inputs, &job)));
    let result =
        result.map_err(|_| PyValueError::new_err("ptxld panicked: a bug, please report it"))?;
    Ok(match result {
        Ok(outcome) => {
            let (text, json) = (outcome.report.render(), outcome.report.to_json());
            let bytes = outcome.into_bytes();
            (
                Some(PyBytes::new_bound(py, &bytes).into_any().unbind()),
                text,
                json,
            )
        }
        Err(failure) => (None, failure.report.render(), failure.report.to_json()),
    })
}

/// `ptxld check` on `inputs` with `options`: `(ok, text, JSON)`. Inputs given as
/// bytes are written to a private temporary folder for it (check reads files).
#[pyfunction]
fn check(
    py: Python<'_>,
    inputs: Vec<Input>,
    options: Vec<String>,
) -> PyResult<(bool, String, String)> {
    let mut job = match ptxld_core::cli::link_job(&options) {
        Ok(job) => job,
        Err(e) => {
            let (text, json) = usage(&e.0);
            return Ok((false, text, json));
        }
    };
    let dir = tempfile::tempdir().map_err(|e| PyValueError::new_err(e.to_string()))?;
    for (i, input) in inputs.into_iter().enumerate() {
        let path = match input {
            Input::Path(p) => p,
            Input::Bytes(name, bytes) => {
                // A folder per input keeps the name the messages show.
                let sub = dir.path().join(i.to_string());
                let base = PathBuf::from(&name);
                let file = sub.join(base.file_name().unwrap_or(name.as_ref()));
                std::fs::create_dir_all(&sub)
                    .and_then(|()| std::fs::write(&file, bytes))
                    .map_err(|e| PyValueError::new_err(e.to_string()))?;
                file
            }
        };
        job.inputs.push(InputSpec::File(path));
    }
    let report = py.allow_threads(|| ptxld_core::check(&job));
    Ok((report.ok, report.to_text(), report.to_json()))
}

/// The extension module.
#[pymodule]
fn _ptxld(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(link, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
