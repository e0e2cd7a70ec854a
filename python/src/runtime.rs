//! pbg's tokio runtime for work datafusion-python drives. The two libraries each link their own
//! tokio, so datafusion-python's runtime is no runtime to pbg's code. datafusion-ffi enters the
//! handle pbg gives it (pbg's runtime) when it executes pbg's plans and polls their streams; the
//! planning of pbg's tables (a `scan`, which may list files) is run on pbg's runtime here.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

/// A table function whose tables are planned on pbg's runtime.
#[derive(Debug)]
pub struct OnPbgRuntime(pub Arc<dyn TableFunctionImpl>);

impl TableFunctionImpl for OnPbgRuntime {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let table = self.0.call_with_args(args)?;
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
        pbg::input::block_on(self.0.scan(session, projection, filters, limit))
            .map_err(|e| DataFusionError::External(Box::new(e)))?
    }
}
