//! `pbg._pbg`: pbg inside Python. Two faces over the one engine:
//! - [`functions`]: every pbg SQL function exported through datafusion-ffi, for a
//!   datafusion-python `SessionContext` (`pbg.register(ctx)`);
//! - [`engine`]: pbg's own session for the Pythonic layer (`pbg.evaluate`, `pbg.lattice`,
//!   `pbg.search`, `pbg.anonymize`), fed with Arrow data through the C stream interface.
//!
//! Nothing here evaluates anything: it converts arguments, calls the engine or its SQL functions,
//! and turns errors into `pbg.PbgError`.

mod arrow_stream;
mod engine;
mod error;
mod functions;
mod runtime;
mod session_tables;

use pyo3::prelude::*;

/// The module `pbg._pbg`.
#[pymodule]
fn _pbg(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PbgError", m.py().get_type::<error::PbgError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The DataFusion this module is built on: datafusion-python must be of the same major version.
    m.add("DATAFUSION_VERSION", functions::DATAFUSION_VERSION)?;
    m.add_class::<functions::Function>()?;
    m.add_function(wrap_pyfunction!(functions::functions, m)?)?;
    m.add_class::<engine::Engine>()?;
    m.add_class::<arrow_stream::ArrowStream>()?;
    Ok(())
}
