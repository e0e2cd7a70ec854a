//! Pass 2 is a DataFusion plan: the release of a node is a projection over the input table — one
//! bound generalization per QI, the other columns passed through unchanged, identifiers dropped —
//! and a filter removing the classes the suppression rule suppresses. The CLI writes this plan to a
//! file; SQL returns it as a view, so `COPY ... TO` (partitioned or not) streams it.

use std::collections::HashSet;

use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::DataFrame;

use super::udf::{BoundGeneralize, KeepClasses, SuppressedClasses};
use crate::classes::NodeKeys;
use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::input::{self, df_error};

/// The class keys (see [`NodeKeys`]) of the classes the suppression rule removes at `node`
/// (whose size rule has threshold `threshold`).
pub fn suppressed_classes(ev: &Evaluator, node: &[u8], threshold: u64) -> Result<HashSet<u64>> {
    if threshold == 0 && ev.suppression_rule().class_requirements().is_empty() {
        return Ok(HashSet::new());
    }
    let tables = ev.tables(node)?;
    let removal = ev.suppression_of(&tables.sens, threshold);
    Ok(tables
        .sens
        .classes()
        .enumerate()
        .filter(|(i, c)| removal.removes(*i, c.size))
        .map(|(_, c)| c.key)
        .collect())
}

/// The classes the suppression rule removes at `node` (suppression threshold `threshold`), in the
/// form the release filters rows with; `None` when it removes none.
pub fn suppression(
    ev: &Evaluator,
    node: &[u8],
    threshold: u64,
) -> Result<Option<SuppressedClasses>> {
    let ds = ev.dataset();
    let suppressed = suppressed_classes(ev, node, threshold)?;
    if suppressed.is_empty() {
        return Ok(None);
    }
    Ok(Some(match ev.node_keys(node) {
        NodeKeys::Packed(layout) => SuppressedClasses::Packed {
            shifts: (0..ds.qis.len()).map(|d| layout.shift(d)).collect(),
            keys: suppressed,
        },
        NodeKeys::FirstRow => SuppressedClasses::Codes(
            suppressed
                .iter()
                .map(|&k| {
                    (0..ds.qis.len())
                        .map(|d| NodeKeys::FirstRow.code(&ds.qis, node, k, d))
                        .collect()
                })
                .collect(),
        ),
    }))
}

/// Notes on columns a release passes through unchanged whose names differ from a QI's or an
/// identifier's only by case, spaces or invisible characters (`ZIP`, `z ip` or `zi\u{200B}p`
/// beside the QI `zip`): most likely the same attribute twice, released raw. Only exact names
/// are roles, so these are not refused.
pub fn look_alike_columns(ds: &crate::encode::Dataset) -> Vec<String> {
    // Zero-width spaces and joiners, word joiners, the byte-order mark, the soft hyphen.
    let invisible = |c: char| matches!(c, '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}' | '\u{00AD}');
    let norm = |n: &str| -> String {
        n.chars()
            .filter(|&c| !c.is_whitespace() && !invisible(c))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let roles: Vec<(&str, &str)> = ds
        .qis
        .iter()
        .map(|q| (q.name.as_str(), "QI"))
        .chain(
            ds.identifiers
                .iter()
                .map(|&i| (ds.schema.field(i).name().as_str(), "identifier")),
        )
        .collect();
    let mut notes: Vec<String> = ds
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|n| roles.iter().all(|(r, _)| r != n) && *n != ds.sensitive.name)
        .filter_map(|n| {
            roles
                .iter()
                .find(|(r, _)| norm(r) == norm(n))
                .map(|(r, role)| {
                    format!(
                        "column `{n}` is released as it is, but its name differs from {role} `{r}` only by case, spaces or invisible characters: if it holds the same attribute, declare it (or drop it) in the profile"
                    )
                })
        })
        .collect();
    // Fields inside nested columns (a struct's `age`) are released as they are too: a role's
    // name there is most likely the attribute itself, raw.
    for f in ds.schema.fields() {
        if roles.iter().any(|(r, _)| r == f.name()) || *f.name() == ds.sensitive.name {
            continue;
        }
        let mut inner = Vec::new();
        nested_fields(f.data_type(), f.name(), &mut inner);
        for (path, leaf) in inner {
            if let Some((r, role)) = roles.iter().find(|(r, _)| norm(r) == norm(&leaf)) {
                notes.push(format!(
                    "column `{}` is released as it is, but its field `{path}` is named like {role} `{r}`: if it holds the same attribute, drop the column (or flatten it and declare the field) in the profile",
                    f.name()
                ));
            }
        }
    }
    notes
}

/// The fields nested in a value of `t` named `at`, each as its path (`outer.inner`) and its own
/// name (a name may hold a dot): struct fields, and those of list items and map entries.
fn nested_fields(t: &arrow::datatypes::DataType, at: &str, out: &mut Vec<(String, String)>) {
    use arrow::datatypes::DataType;
    match t {
        DataType::Struct(fields) => {
            for f in fields {
                let path = format!("{at}.{}", f.name());
                out.push((path.clone(), f.name().clone()));
                nested_fields(f.data_type(), &path, out);
            }
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::ListView(f)
        | DataType::LargeListView(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => nested_fields(f.data_type(), at, out),
        _ => {}
    }
}

/// Notes on columns a Parquet release keeps that other readers will not read as pbg writes
/// them. Parquet has no type for a `Date64`, nor for a timestamp or time of day in seconds, so
/// arrow-rs stores them as plain integers (DataFusion's writer does not ask it to coerce) and
/// only its own schema, which DataFusion and arrow-rs read, says what they are: pyarrow, Spark or
/// DuckDB read integers (pyarrow writes its `date64` as a Parquet date, which DataFusion then
/// reads as `Date64`; an attack round found `timestamp[s]` read back by pyarrow as epoch seconds).
pub fn parquet_caveats(ds: &crate::encode::Dataset) -> Vec<String> {
    use datafusion::arrow::datatypes::{DataType, TimeUnit};
    ds.schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, f)| !ds.identifiers.contains(i) && !ds.qis.iter().any(|q| q.name == *f.name()))
        .filter_map(|(_, f)| {
            let (what, unit) = match f.data_type() {
                DataType::Date64 => ("a Date64", "milliseconds"),
                DataType::Timestamp(TimeUnit::Second, _) => ("a timestamp in seconds", "seconds since 1970"),
                DataType::Time32(TimeUnit::Second) => ("a time of day in seconds", "seconds"),
                _ => return None,
            };
            Some(format!(
                "column `{}` is {what}, which the Parquet release stores as plain integers ({unit}): DataFusion and Arrow's Rust reader read its type, but pyarrow, Spark or DuckDB read integers; a CSV release keeps its text",
                f.name()
            ))
        })
        .collect()
}

/// Every note on a release of `ds` to `output` ([`look_alike_columns`], and for a Parquet
/// release [`parquet_caveats`]): the CLI prints them, and the report of [`super::Job::run`]
/// carries them to every face (the Python module had none).
pub fn release_notes(ds: &crate::encode::Dataset, output: &std::path::Path) -> Vec<String> {
    let mut notes = look_alike_columns(ds);
    if matches!(
        crate::io::OutputFormat::of(output),
        Ok(crate::io::OutputFormat::Parquet)
    ) {
        notes.extend(parquet_caveats(ds));
    }
    notes
}

/// The release of `node` over `df` (the profile's input, opened afresh): the plan, unexecuted.
/// `ev` holds the statistics of that input.
pub fn release_frame(df: DataFrame, ev: &Evaluator, node: &[u8]) -> Result<DataFrame> {
    let ds = ev.dataset();
    let source = ds.input();
    let indices = ev.evaluate(node)?;
    let schema = df.schema().as_arrow().clone();
    input::check_unique_columns(source, &schema)?;
    let identifiers: Vec<&str> = ds
        .identifiers
        .iter()
        .map(|&i| ds.schema.field(i).name().as_str())
        .collect();
    let mut exprs: Vec<Expr> = Vec::with_capacity(schema.fields().len());
    for field in schema.fields() {
        let name = field.name().as_str();
        if identifiers.contains(&name) {
            continue;
        }
        match ds.qis.iter().position(|q| q.name == name) {
            Some(d) => {
                let q = &ds.qis[d];
                let udf = BoundGeneralize::udf(
                    q.hierarchy.clone(),
                    node[d],
                    ds.profile.qis[d].null_as.clone(),
                );
                exprs.push(udf.call(vec![input::column(name)]).alias(name));
            }
            None => exprs.push(input::column(name)),
        }
    }
    for q in &ds.qis {
        input::column_index(source, &schema, &q.name)?;
    }
    let df = df.select(exprs).map_err(|e| df_error(source, e))?;
    let Some(suppressed) = suppression(ev, node, indices.threshold)? else {
        return Ok(df);
    };
    let labels: Vec<&[String]> = ds
        .qis
        .iter()
        .enumerate()
        .map(|(d, q)| q.hierarchy.level(node[d]).labels.as_slice())
        .collect();
    let keep = KeepClasses::udf(labels, suppressed);
    let args = ds.qis.iter().map(|q| input::column(&q.name)).collect();
    df.filter(keep.call(args)).map_err(|e| df_error(source, e))
}

/// The release plan as a logical plan (what `pbg_anonymize` returns as a view).
pub fn release_plan(df: DataFrame, ev: &Evaluator, node: &[u8]) -> Result<LogicalPlan> {
    Ok(release_frame(df, ev, node)?.into_unoptimized_plan())
}

/// Checks that the input still has the columns the statistics were read with.
pub fn same_columns(ev: &Evaluator, df: &DataFrame) -> Result<()> {
    let now: Vec<&str> = df
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let then: Vec<&str> = ev
        .dataset()
        .schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    if now != then {
        return Err(PbgError::Format {
            path: ev.dataset().input().as_path(),
            message: format!(
                "the input's columns changed between the passes ({} then, {} now)",
                then.join(", "),
                now.join(", ")
            ),
        });
    }
    Ok(())
}
