//! Tables of the caller's datafusion-python session, read by pbg's table functions through the
//! Arrow C stream interface: datafusion-python runs its own plan on its own runtime and hands the
//! batches over, so no runtime handle crosses (see `runtime`). Each scan reads the table afresh.

use std::ffi::CStr;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use arrow::ffi::FFI_ArrowSchema;
use datafusion::catalog::TableProvider;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use pbg::sql::ForeignTables;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// Batches buffered between datafusion-python's reader thread and pbg.
const BUFFER: usize = 2;

fn py_error(table: &str, e: PyErr) -> DataFusionError {
    DataFusionError::Plan(format!(
        "table `{table}` of the datafusion-python session: {e}"
    ))
}

fn take_capsule<'py, T>(capsule: &Bound<'py, PyAny>, name: &CStr) -> PyResult<*mut T> {
    let capsule = capsule.cast::<PyCapsule>()?;
    Ok(capsule.pointer_checked(Some(name))?.cast::<T>().as_ptr())
}

/// The tables of `ctx` (a `datafusion.SessionContext`), for the registry's foreign sessions.
pub fn of_session(ctx: Py<PyAny>) -> ForeignTables {
    let ctx = Arc::new(ctx);
    ForeignTables(Arc::new(move |name: &str| {
        // On a thread of its own: the caller's thread may be inside datafusion-python's runtime,
        // where its `table()` cannot block.
        let (c, n) = (ctx.clone(), name.to_string());
        let schema = std::thread::spawn(move || {
            Python::attach(|py| -> PyResult<Schema> {
                let schema = c
                    .bind(py)
                    .call_method1("table", (n.as_str(),))?
                    .call_method0("schema")?
                    .call_method0("__arrow_c_schema__")?;
                let ffi = take_capsule::<FFI_ArrowSchema>(&schema, c"arrow_schema")?;
                // The capsule keeps ownership of the schema: read it in place.
                Schema::try_from(unsafe { &*ffi })
                    .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
            })
        })
        .join()
        .map_err(|_| DataFusionError::Plan(format!("table `{name}`: reading its schema failed")))?
        .map_err(|e| py_error(name, e))?;
        let schema = Arc::new(schema);
        let partition = Arc::new(SessionTable {
            ctx: ctx.clone(),
            name: name.to_string(),
            schema: schema.clone(),
        });
        Ok(Arc::new(StreamingTable::try_new(schema, vec![partition])?) as Arc<dyn TableProvider>)
    }))
}

/// One table of the session, streamed from datafusion-python on a thread of its own.
struct SessionTable {
    ctx: Arc<Py<PyAny>>,
    name: String,
    schema: SchemaRef,
}

impl fmt::Debug for SessionTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionTable({})", self.name)
    }
}

impl PartitionStream for SessionTable {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let (tx, mut rx) = tokio::sync::mpsc::channel(BUFFER);
        let ctx = self.ctx.clone();
        let name = self.name.clone();
        std::thread::spawn(move || {
            let reader = Python::attach(|py| {
                let table = ctx.bind(py).call_method1("table", (name.as_str(),))?;
                crate::arrow_stream::reader(&table, &format!("table `{name}`"))
            });
            match reader {
                Err(e) => {
                    let _ = tx.blocking_send(Err(py_error(&name, e)));
                }
                Ok(reader) => {
                    // datafusion-python produces each batch on its runtime (the GIL is not held).
                    for batch in reader {
                        let batch = batch.map_err(DataFusionError::from);
                        if tx.blocking_send(batch).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
        Box::pin(RecordBatchStreamAdapter::new(self.schema.clone(), stream))
    }
}
