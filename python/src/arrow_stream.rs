//! Arrow data in and out through the Arrow PyCapsule interface (`__arrow_c_stream__`): a pyarrow
//! `Table`, a polars `DataFrame` or any such object comes in without a copy of its buffers, and
//! results go out as an object pyarrow reads the same way (`pyarrow.table(stream)`).

use std::ffi::CStr;

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::ffi_stream::{ArrowArrayStreamReader, FFI_ArrowArrayStream};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::error::pbg;

const STREAM: &CStr = c"arrow_array_stream";

/// A reader of `data`, an object with `__arrow_c_stream__` (pyarrow, polars, a datafusion-python
/// DataFrame, ...). `what` names it in errors.
pub fn reader(data: &Bound<'_, PyAny>, what: &str) -> PyResult<ArrowArrayStreamReader> {
    if !data.hasattr("__arrow_c_stream__")? {
        let kind = data.get_type().name()?.to_string();
        return Err(pbg(format!(
            "{what}: a {kind} is not Arrow data: give a pyarrow Table, a polars DataFrame or another object with __arrow_c_stream__, or a path"
        )));
    }
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // Take the stream out of the capsule, leaving a released (empty) one behind, as the interface
    // requires of a consumer.
    let stream = unsafe {
        std::ptr::replace(
            pointer.cast::<FFI_ArrowArrayStream>().as_ptr(),
            FFI_ArrowArrayStream::empty(),
        )
    };
    ArrowArrayStreamReader::try_new(stream).map_err(|e| pbg(format!("{what}: {e}")))
}

/// The batches of `data` (see [`reader`]).
pub fn import(data: &Bound<'_, PyAny>, what: &str) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let reader = reader(data, what)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pbg(format!("{what}: {e}")))?;
    Ok((schema, batches))
}

/// Record batches handed to Python once, through `__arrow_c_stream__`.
#[pyclass(module = "pbg._pbg")]
pub struct ArrowStream {
    schema: SchemaRef,
    batches: Option<Vec<RecordBatch>>,
}

impl ArrowStream {
    /// A stream of `batches` of `schema`.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        ArrowStream {
            schema,
            batches: Some(batches),
        }
    }
}

#[pymethods]
impl ArrowStream {
    /// The Arrow PyCapsule stream (consumed once); `requested_schema` is not supported and ignored.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let Some(batches) = self.batches.take() else {
            return Err(pbg("this result was already read"));
        };
        let reader: Box<dyn RecordBatchReader + Send> = Box::new(RecordBatchIterator::new(
            batches.into_iter().map(Ok),
            self.schema.clone(),
        ));
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), STREAM)
    }
}
