//! Inputs whose rows are the same at every query. The statistics and the rows of a SQL release
//! are read by two queries (see [`super::pinned_input`]); an input defined by the clock, by
//! chance, by the order rows arrive in or by the session's state is another table the second
//! time, and is refused.

use datafusion::common::Result;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
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
        LogicalPlan::Window(w) => unsteady_window(w)?,
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
        LogicalPlan::Aggregate(agg) => {
            let mut why = None;
            for e in &agg.aggr_expr {
                if let Expr::AggregateFunction(f) = unaliased(e) {
                    why = why.or(float_sum(f.func.name(), &f.params.args, &agg.input)?);
                }
            }
            why
        }
        LogicalPlan::TableScan(scan) if is_stream(scan) => Some(format!(
            "reads {}, an unbounded table (CREATE UNBOUNDED EXTERNAL TABLE), whose rows each query reads afresh from a stream, unpinned (a pipe gives its rows once)",
            scan.table_name
        )),
        // A view's plan: a `CREATE VIEW`'s, or a DataFrame's registered as a table.
        LogicalPlan::TableScan(scan) => match source_as_provider(&scan.source)
            .ok()
            .and_then(|p| p.get_logical_plan().map(|plan| plan.into_owned()))
        {
            Some(plan) => unsteady_input(&plan)?,
            None => None,
        },
        _ => None,
    })
}

/// Whether `plan` (through the views it scans) holds an operator that may use an order its
/// scans declare: an aggregate, `DISTINCT`, join or window function. Such an order (`WITH
/// ORDER`, Parquet sorting columns) is trusted unchecked, so the pin refuses scans declaring
/// one below these ([`super::pinned_input`]).
pub(super) fn uses_row_order(plan: &LogicalPlan) -> Result<bool> {
    let mut uses = false;
    plan.apply_with_subqueries(|node| {
        match node {
            LogicalPlan::Aggregate(_)
            | LogicalPlan::Distinct(_)
            | LogicalPlan::Join(_)
            | LogicalPlan::Window(_) => uses = true,
            // `IN (SELECT …)`, `EXISTS` and scalar subqueries become joins when optimized.
            _ if has_subquery(node)? => uses = true,
            LogicalPlan::TableScan(scan) => {
                if let Some(view) = source_as_provider(&scan.source)
                    .ok()
                    .and_then(|p| p.get_logical_plan().map(|v| v.into_owned()))
                {
                    uses |= uses_row_order(&view)?;
                }
            }
            _ => {}
        }
        Ok(match uses {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    })?;
    Ok(uses)
}

/// Whether a node's expressions hold a subquery.
fn has_subquery(node: &LogicalPlan) -> Result<bool> {
    let mut found = false;
    node.apply_expressions(|e| {
        found |= e.exists(|e| {
            Ok(matches!(
                e,
                Expr::InSubquery(_) | Expr::Exists(_) | Expr::ScalarSubquery(_)
            ))
        })?;
        Ok(match found {
            true => TreeNodeRecursion::Stop,
            false => TreeNodeRecursion::Continue,
        })
    })?;
    Ok(found)
}

/// Whether a scan reads DataFusion's stream table (`CREATE UNBOUNDED EXTERNAL TABLE`): a file
/// or pipe read as a stream each time, which the pin does not know.
fn is_stream(scan: &datafusion::logical_expr::TableScan) -> bool {
    source_as_provider(&scan.source).is_ok_and(|p| {
        (p.as_ref() as &dyn std::any::Any)
            .downcast_ref::<datafusion::datasource::stream::StreamTable>()
            .is_some()
    })
}

/// `e` without its aliases.
fn unaliased(mut e: &Expr) -> &Expr {
    while let Expr::Alias(a) = e {
        e = &a.expr;
    }
    e
}

/// Why an aggregate `name` of `args` over `input` may differ between queries though its function
/// is steady: a sum (or mean) of floating-point numbers depends on the order it adds them in, in
/// its last digits, and so does the value's text (a band of `floor(sum(amount))` moved people
/// from one class to another between the statistics and the release).
fn float_sum(name: &str, args: &[Expr], input: &LogicalPlan) -> Result<Option<String>> {
    use datafusion::arrow::datatypes::DataType;
    if !["sum", "avg"].contains(&name) {
        return Ok(None);
    }
    let Some(arg) = args.first() else {
        return Ok(None);
    };
    let summed = arg.get_type(input.schema())?;
    if !summed.is_floating() {
        return Ok(None);
    }
    // Values cast from integers of 32 bits at most (as `avg` casts its integers to Float64) are
    // whole numbers, added exactly while the sums stay below 2^53; 64-bit ones (epoch
    // nanoseconds) pass it, and fractions are rounded at every addition.
    let mut source = arg;
    while let Expr::Cast(datafusion::logical_expr::Cast { expr, .. })
    | Expr::TryCast(datafusion::logical_expr::TryCast { expr, .. }) = unaliased(source)
    {
        source = expr;
    }
    let exact = matches!(
        source.get_type(input.schema())?,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
    );
    Ok((!exact).then(|| format!(
        "takes {name}() of {summed} values, whose last digits depend on the order rows arrive in, which differs between queries"
    )))
}

/// The window functions whose value depends on the values of the rows alone (peers share it).
const STEADY_RANKS: [&str; 4] = ["rank", "dense_rank", "percent_rank", "cume_dist"];

/// Why a window node's values may differ between queries: `row_number()`, `ntile()`, `lag()`
/// and the like number or pick rows by their order, which ties leave to the order rows arrive
/// in; so does an aggregate over a frame of rows (not of peers) within an order. Ranks, and
/// steady aggregates over whole partitions or over peers (`RANGE`, `GROUPS`), do not.
fn unsteady_window(w: &datafusion::logical_expr::Window) -> Result<Option<String>> {
    use datafusion::logical_expr::expr::WindowFunctionDefinition as Definition;
    use datafusion::logical_expr::{WindowFrameBound, WindowFrameUnits};
    for e in &w.window_expr {
        let Expr::WindowFunction(f) = unaliased(e) else {
            continue;
        };
        let name = f.fun.name();
        let params = &f.params;
        let frame = &params.window_frame;
        let whole = matches!(&frame.start_bound, WindowFrameBound::Preceding(v) if v.is_null())
            && matches!(&frame.end_bound, WindowFrameBound::Following(v) if v.is_null());
        let by_rows = frame.units == WindowFrameUnits::Rows && !whole;
        let steady = match &f.fun {
            Definition::WindowUDF(_) => STEADY_RANKS.contains(&name),
            Definition::AggregateUDF(_) => STEADY_AGGREGATES.contains(&name) && !by_rows,
        };
        if !steady {
            return Ok(Some(format!(
                "computes the window function {name}(), which numbers or picks rows (or frames them) in the order they arrive among equals, which differs between queries"
            )));
        }
        if let Some(why) = float_sum(name, &params.args, &w.input)? {
            return Ok(Some(why));
        }
    }
    Ok(None)
}

/// The aggregate functions whose result does not depend on the order rows arrive in.
const STEADY_AGGREGATES: [&str; 13] = [
    "count",
    "sum",
    "min",
    "max",
    "avg",
    "median",
    "grouping",
    "approx_distinct",
    "bool_and",
    "bool_or",
    "bit_and",
    "bit_or",
    "bit_xor",
];

/// Whether an aggregate that collects its values (`array_agg`, `string_agg`) orders them by
/// the value itself: equal values are then alike in any order.
fn sorted_by_its_value(f: &datafusion::logical_expr::expr::AggregateFunction) -> bool {
    ["array_agg", "string_agg"].contains(&f.func.name())
        && !f.params.order_by.is_empty()
        && f.params
            .order_by
            .iter()
            .all(|o| f.params.args.first() == Some(&o.expr))
        // A separator taken from the rows would travel with them among equal values.
        && f.params.args[1..]
            .iter()
            .all(|a| matches!(unaliased(a), Expr::Literal(..)))
}

/// Why an expression's value may differ between queries.
fn unsteady_expr(e: &Expr) -> Option<String> {
    match e {
        // The file a row comes from, and its place in it: the files are pinned.
        Expr::ScalarFunction(f)
            if ["input_file_name", "file_row_index"].contains(&f.func.name()) =>
        {
            None
        }
        Expr::ScalarFunction(f) if f.func.name() == "generalize" => Some(
            "calls generalize(), whose hierarchy is looked up by name when the query runs (a profile declared again between queries changes it)".into(),
        ),
        Expr::ScalarFunction(f) if f.func.signature().volatility != Volatility::Immutable => {
            Some(format!(
                "calls {}(), whose value changes from one query to the next",
                f.func.name()
            ))
        }
        Expr::AggregateFunction(f)
            if !STEADY_AGGREGATES.contains(&f.func.name()) && !sorted_by_its_value(f) =>
        {
            Some(format!(
            "aggregates with {}(), whose value depends on the order rows arrive in, which differs between queries",
            f.func.name()
        ))
        }
        _ => None,
    }
}
