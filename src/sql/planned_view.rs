//! A view that plans in the session it was made in. A table function called from another
//! library's session (datafusion-python, through datafusion-ffi) cannot hand that session a logical
//! plan: the plan holds pbg's release functions, which carry their hierarchies and so do not cross
//! the boundary by name. This provider plans the view with pbg's own state and hands over the
//! physical plan, whose operators then run with the caller's task context (its memory pool).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, Result};
use datafusion::datasource::{TableType, ViewTable};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::DataFrame;

/// A logical plan bound to the state it is planned in.
#[derive(Debug)]
pub(super) struct PlannedView {
    state: SessionState,
    plan: LogicalPlan,
}

/// The table a function returns for `plan`: a view the caller inlines and plans (so its optimizer
/// sees through it, and a cluster client can ship it) when `caller` is a DataFusion
/// `SessionState` of this library; otherwise a [`PlannedView`] planned in `state`.
pub(super) fn view_for(
    caller: &dyn Session,
    state: SessionState,
    plan: LogicalPlan,
) -> Arc<dyn TableProvider> {
    if caller.as_any().downcast_ref::<SessionState>().is_some() {
        Arc::new(ViewTable::new(plan, None))
    } else {
        Arc::new(PlannedView { state, plan })
    }
}

#[async_trait]
impl TableProvider for PlannedView {
    fn schema(&self) -> SchemaRef {
        Arc::clone(self.plan.schema().inner())
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _caller: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut df = DataFrame::new(self.state.clone(), self.plan.clone());
        if let Some(p) = projection {
            let schema = self.plan.schema();
            let columns = p
                .iter()
                .map(|&i| Expr::Column(Column::from(schema.qualified_field(i))))
                .collect::<Vec<_>>();
            df = df.select(columns)?;
        }
        // No filter is pushed down (the default `Unsupported`), but apply any given anyway.
        for f in filters {
            df = df.filter(f.clone())?;
        }
        if let Some(n) = limit {
            df = df.limit(0, Some(n))?;
        }
        df.create_physical_plan().await
    }
}
