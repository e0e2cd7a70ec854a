//! pbg's SQL functions for a datafusion-python `SessionContext`: each one exported through
//! datafusion-ffi as the PyCapsule datafusion-python asks for (`__datafusion_scalar_udf__`,
//! `__datafusion_aggregate_udf__`, `__datafusion_table_function__`). All of one call to
//! [`functions`] share one registry, so a profile declared with `pbg_profile` is seen by the rest.

use std::ffi::CStr;
use std::sync::Arc;

use datafusion::catalog::TableFunctionImpl;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udtf::FFI_TableFunction;
use pbg::sql::{Registry, SessionSource};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::pbg;

/// The DataFusion version this module is built on.
pub const DATAFUSION_VERSION: &str = datafusion::DATAFUSION_VERSION;

/// One pbg function, ready to be registered in a datafusion-python session.
#[pyclass(module = "pbg._pbg", frozen)]
pub struct Function {
    name: String,
    kind: Kind,
}

enum Kind {
    Scalar(Arc<ScalarUDF>),
    Aggregate(Arc<AggregateUDF>),
    Table(Arc<dyn TableFunctionImpl>),
}

/// Every pbg function over one fresh registry, for the datafusion-python session `ctx`, whose
/// tables the table functions read by name.
#[pyfunction]
pub fn functions(ctx: Py<PyAny>) -> PyResult<Vec<Function>> {
    let registry = Arc::new(Registry::default());
    registry
        .set_foreign_tables(crate::session_tables::of_session(ctx))
        .map_err(pbg)?;
    // The distance aggregates get no session from their caller: they read profiles in a session
    // of pbg's own (a session table through the registry's foreign tables).
    let session: SessionSource = Arc::new(|| Some(pbg::input::new_context().state()));
    let all = pbg::sql::functions_with(registry, session);
    let mut out = Vec::new();
    for f in all.scalar {
        out.push(Function {
            name: f.name().to_string(),
            kind: Kind::Scalar(Arc::new(f)),
        });
    }
    for f in all.aggregate {
        out.push(Function {
            name: f.name().to_string(),
            kind: Kind::Aggregate(Arc::new(f)),
        });
    }
    for (name, f) in all.table {
        out.push(Function {
            name: name.to_string(),
            kind: Kind::Table(f),
        });
    }
    Ok(out)
}

fn capsule_name(kind: &str) -> &'static CStr {
    match kind {
        "scalar" => c"datafusion_scalar_udf",
        "aggregate" => c"datafusion_aggregate_udf",
        _ => c"datafusion_table_function",
    }
}

#[pymethods]
impl Function {
    /// The SQL name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// `scalar`, `aggregate` or `table`.
    #[getter]
    fn kind(&self) -> &'static str {
        match self.kind {
            Kind::Scalar(_) => "scalar",
            Kind::Aggregate(_) => "aggregate",
            Kind::Table(_) => "table",
        }
    }

    /// The function as an `FFI_ScalarUDF` capsule (scalar functions only).
    fn scalar_capsule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        match &self.kind {
            Kind::Scalar(f) => PyCapsule::new_with_value(
                py,
                FFI_ScalarUDF::from(f.clone()),
                capsule_name("scalar"),
            ),
            _ => Err(pbg(format!("{} is not a scalar function", self.name))),
        }
    }

    /// The function as an `FFI_AggregateUDF` capsule (aggregate functions only).
    fn aggregate_capsule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        match &self.kind {
            Kind::Aggregate(f) => PyCapsule::new_with_value(
                py,
                FFI_AggregateUDF::from(f.clone()),
                capsule_name("aggregate"),
            ),
            _ => Err(pbg(format!("{} is not an aggregate function", self.name))),
        }
    }

    /// The function as an `FFI_TableFunction` capsule bound to `session`'s logical extension
    /// codec (table functions only); its tables are planned and run on pbg's runtime.
    fn table_capsule<'py>(
        &self,
        py: Python<'py>,
        session: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let Kind::Table(f) = &self.kind else {
            return Err(pbg(format!("{} is not a table function", self.name)));
        };
        let codec = session.call_method0("__datafusion_logical_extension_codec__")?;
        let codec = codec.cast::<PyCapsule>()?;
        let pointer = codec.pointer_checked(Some(c"datafusion_logical_extension_codec"))?;
        // The capsule stays owned by the session; take a clone of the codec it holds.
        let codec = unsafe { pointer.cast::<FFI_LogicalExtensionCodec>().as_ref() }.clone();
        let f: Arc<dyn TableFunctionImpl> = Arc::new(crate::runtime::OnPbgRuntime(f.clone()));
        let runtime = pbg::input::runtime_handle().map_err(pbg)?;
        let ffi = FFI_TableFunction::new_with_ffi_codec(f, Some(runtime), codec);
        PyCapsule::new_with_value(py, ffi, capsule_name("table"))
    }

    fn __repr__(&self) -> String {
        format!("<pbg {} function {}>", self.kind(), self.name)
    }
}
