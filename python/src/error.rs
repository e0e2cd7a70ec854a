//! `pbg.PbgError`: every error of the engine, with the message the CLI prints.

use std::fmt::Display;

use datafusion::error::DataFusionError;
use pyo3::PyErr;

pyo3::create_exception!(
    _pbg,
    PbgError,
    pyo3::exceptions::PyException,
    "An error of pbg (bad input, profile, node or argument); the message is the CLI's."
);

/// An engine error as `pbg.PbgError`.
pub fn pbg(e: impl Display) -> PyErr {
    PbgError::new_err(e.to_string())
}

/// A DataFusion error as `pbg.PbgError`, without DataFusion's category prefix ("Error during
/// planning: ") so that the message reads as the CLI's.
pub fn datafusion(e: DataFusionError) -> PyErr {
    let root = e.find_root();
    let text = match root {
        DataFusionError::Plan(m) | DataFusionError::Execution(m) => m.clone(),
        DataFusionError::External(inner) => inner.to_string(),
        other => other.strip_backtrace(),
    };
    PbgError::new_err(text)
}
