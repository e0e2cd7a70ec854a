//! Inputs whose rows are the same at every query. The statistics and the rows of a SQL release
//! are read by two queries (see [`super::pinned_input`]); an input defined by the clock, by
//! chance, by the order rows arrive in or by the session's state is another table the second
//! time, and is refused.

use std::any::Any;

use datafusion::common::Result;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::{ViewTable, source_as_provider};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Volatility};

/// Why the rows of `plan` (through the views it scans) may differ from one query to the next,
/// or `None`. The statistics and the rows of a release are read by two queries: a table of the
/// last 30 days (`now()`), a sample (`random()`), the first rows to arrive (`LIMIT`,
/// `row_number()`, `DISTINCT ON`, `first_value`: a scan runs in several partitions), the
/// session's own state (`information_schema`) or a hierarchy named by `generalize()` (declared
/// again between queries) each gave another table the second time, and a class below the
/// requirements was released.
pub(super) fn unsteady_input(plan: &LogicalPlan) -> Result<Option<String>> {
    let mut found: Option<String> = None;
    plan.apply_with_subqueries(|node| {
        found = unsteady_node(node)?;
        if found.is_none() {
            node.apply_expressions(|e| {
                e.apply(|e| {
                    found = unsteady_expr(e);
                    Ok(match found {
                        Some(_) => TreeNodeRecursion::Stop,
                        None => TreeNodeRecursion::Continue,
                    })
                })
            })?;
        }
        Ok(match found {
            Some(_) => TreeNodeRecursion::Stop,
            None => TreeNodeRecursion::Continue,
        })
    })?;
    Ok(found)
}

/// Why one plan node's rows may differ between queries (a view it scans included).
fn unsteady_node(node: &LogicalPlan) -> Result<Option<String>> {
    let first = "keeps whichever rows arrive first, which differ between queries";
    Ok(match node {
        LogicalPlan::Limit(_) => Some(format!("takes a LIMIT or OFFSET, which {first}")),
        LogicalPlan::Sort(sort) if sort.fetch.is_some() => {
            Some(format!("takes a LIMIT, which {first}"))
        }
        LogicalPlan::Window(_) => Some(
            "computes a window function (row_number() and the like number rows in the order they arrive, which differs between queries)".into(),
        ),
        LogicalPlan::Distinct(datafusion::logical_expr::Distinct::On(_)) => {
            Some(format!("uses DISTINCT ON, which {first}"))
        }
        LogicalPlan::TableScan(scan) if scan.fetch.is_some() => {
            Some(format!("takes a LIMIT, which {first}"))
        }
        LogicalPlan::TableScan(scan) if scan.table_name.schema() == Some("information_schema") => {
            Some(format!(
                "reads {}, the session's own state, which changes between queries",
                scan.table_name
            ))
        }
        LogicalPlan::Aggregate(agg) => float_sum(agg)?,
        LogicalPlan::TableScan(scan) => match source_as_provider(&scan.source) {
            Ok(provider) => match (provider.as_ref() as &dyn Any).downcast_ref::<ViewTable>() {
                Some(view) => unsteady_input(view.logical_plan())?,
                None => None,
            },
            Err(_) => None,
        },
        _ => None,
    })
}

/// Why an aggregate's values may differ between queries though its functions are steady: a sum
/// (or mean) of floating-point numbers depends on the order it adds them in, in its last digits,
/// and so does the value's text.
fn float_sum(agg: &datafusion::logical_expr::Aggregate) -> Result<Option<String>> {
    for e in &agg.aggr_expr {
        let mut inner = e;
        while let Expr::Alias(a) = inner {
            inner = &a.expr;
        }
        if let Expr::AggregateFunction(f) = inner
            && ["sum", "avg"].contains(&f.func.name())
            && let Some(arg) = f.params.args.first()
            && arg.get_type(agg.input.schema())?.is_floating()
        {
            return Ok(Some(format!(
                "takes {}() of floating-point numbers, whose last digits depend on the order rows arrive in, which differs between queries",
                f.func.name()
            )));
        }
    }
    Ok(None)
}

/// The aggregate functions whose result does not depend on the order rows arrive in.
const STEADY_AGGREGATES: [&str; 11] = [
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "approx_distinct",
    "bool_and",
    "bool_or",
    "bit_and",
    "bit_or",
    "bit_xor",
];

/// Why an expression's value may differ between queries.
fn unsteady_expr(e: &Expr) -> Option<String> {
    match e {
        // The file a row comes from: the files are pinned.
        Expr::ScalarFunction(f) if f.func.name() == "input_file_name" => None,
        Expr::ScalarFunction(f) if f.func.name() == "generalize" => Some(
            "calls generalize(), whose hierarchy is looked up by name when the query runs (a profile declared again between queries changes it)".into(),
        ),
        Expr::ScalarFunction(f) if f.func.signature().volatility != Volatility::Immutable => {
            Some(format!(
                "calls {}(), whose value changes from one query to the next",
                f.func.name()
            ))
        }
        Expr::AggregateFunction(f) if !STEADY_AGGREGATES.contains(&f.func.name()) => Some(format!(
            "aggregates with {}(), whose value depends on the order rows arrive in, which differs between queries",
            f.func.name()
        )),
        _ => None,
    }
}
