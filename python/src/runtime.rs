//! pbg's tokio runtime for work datafusion-python drives. The two libraries each link their own
//! tokio, so datafusion-python's runtime is no runtime to pbg's code: the planning of pbg's tables
//! (a `scan`, which may list files) runs on pbg's runtime, and their plans execute, stream and
//! are dropped with pbg's runtime entered.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::Stream;
use pyo3::Python;
use tokio::runtime::Handle;

/// A table function whose tables are planned on pbg's runtime.
#[derive(Debug)]
pub struct OnPbgRuntime(pub Arc<dyn TableFunctionImpl>);

impl TableFunctionImpl for OnPbgRuntime {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        // The call may read the caller's tables, which datafusion-python streams from threads
        // that take the GIL: do not hold it while waiting.
        let table = Python::attach(|py| py.detach(|| self.0.call_with_args(args)))?;
        Ok(Arc::new(Table(table)))
    }
}

/// A table planned on pbg's runtime.
#[derive(Debug)]
struct Table(Arc<dyn TableProvider>);

#[async_trait]
impl TableProvider for Table {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    fn table_type(&self) -> TableType {
        self.0.table_type()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.0.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        session: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // Planning is short (no rows are read): wait for it on pbg's runtime.
        let plan = Python::attach(|py| {
            py.detach(|| pbg::input::block_on(self.0.scan(session, projection, filters, limit)))
        })
        .map_err(|e| DataFusionError::External(Box::new(e)))??;
        let handle =
            pbg::input::runtime_handle().map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Arc::new(Exec {
            properties: plan.properties().clone(),
            plan,
            handle,
        }))
    }
}

/// A plan executed, and its streams polled and dropped, with pbg's runtime entered: DataFusion
/// operators spawn tasks (and abort them when dropped) on the current tokio runtime, which on
/// datafusion-python's threads is not pbg's (a `LIMIT` above a pbg table aborted the interpreter
/// with "no reactor running" before).
struct Exec {
    plan: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
    handle: Handle,
}

impl fmt::Debug for Exec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PbgRuntimeExec({})", self.plan.name())
    }
}

impl DisplayAs for Exec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PbgRuntimeExec: {}", self.plan.name())
    }
}

impl ExecutionPlan for Exec {
    fn name(&self) -> &str {
        "PbgRuntimeExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    // A leaf to the caller: the plan inside is pbg's and is not rewritten by another library.
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let _entered = self.handle.enter();
        let inner = self.plan.execute(partition, context)?;
        Ok(Box::pin(Entered {
            schema: inner.schema(),
            inner: Some(inner),
            handle: self.handle.clone(),
        }))
    }
}

/// A stream polled and dropped with pbg's runtime entered.
struct Entered {
    schema: SchemaRef,
    inner: Option<SendableRecordBatchStream>,
    handle: Handle,
}

impl Stream for Entered {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let handle = self.handle.clone();
        let _entered = handle.enter();
        match self.inner.as_mut() {
            Some(s) => s.as_mut().poll_next(cx),
            None => Poll::Ready(None),
        }
    }
}

impl RecordBatchStream for Entered {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let _entered = self.handle.enter();
        self.inner.take();
    }
}
