//! A profile drafted from the data (`pbg init`, `pbg hierarchy build`): roles proposed from each
//! column's distinct count (nearly unique columns are identifiers), and a hierarchy per QI built
//! from its values — fixed-width codes masked, dates by month then year, numbers in intervals cut
//! at quantiles (each level merging pairs of the level below, so bins hold about twice the rows),
//! other text in frequency-ordered groups — written as ARX files with a commented TOML profile
//! that `anonymize` accepts as it is.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use datafusion::functions_aggregate::expr_fn::{approx_distinct, count};
use datafusion::prelude::{SessionContext, lit};
use futures::StreamExt;

use super::hierarchy::{Hierarchy, HierarchySpec};
use crate::encode::text_column;
use crate::error::{PbgError, Result};
use crate::input::{self, Input, df_error};

/// Columns with more distinct values than this are not read value by value (and are not drafted
/// as QIs unless numeric intervals could be cut from a sample of them).
pub const MAX_VALUES: u64 = 100_000;

/// Bins of the finest interval level (halved at each level above).
const BINS: usize = 16;

/// What the data says about one column.
#[derive(Debug, Clone)]
pub struct ColumnFacts {
    /// The column's name.
    pub name: String,
    /// Distinct non-null values (approximate beyond a few thousand).
    pub distinct: u64,
    /// Null rows.
    pub nulls: u64,
    /// Whether its type can be drafted (text, numbers, dates, times, booleans).
    pub draftable: bool,
    /// The distinct text forms with their counts, most frequent first (when at most
    /// [`MAX_VALUES`]).
    pub values: Option<Vec<(String, u64)>>,
}

/// How a QI's hierarchy is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftKind {
    /// Intervals cut at quantiles.
    Interval,
    /// Trailing characters masked.
    Mask,
    /// Day → month → year.
    Date,
    /// Frequency-ordered groups, then `*`.
    Categorical,
}

impl DraftKind {
    /// The name used in the profile's comments and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DraftKind::Interval => "interval",
            DraftKind::Mask => "mask",
            DraftKind::Date => "date",
            DraftKind::Categorical => "categorical",
        }
    }

    /// Parses `auto` (None) or a kind name.
    pub fn parse(text: &str) -> Result<Option<Self>> {
        Ok(match text {
            "auto" => None,
            "interval" => Some(DraftKind::Interval),
            "mask" => Some(DraftKind::Mask),
            "date" => Some(DraftKind::Date),
            "categorical" => Some(DraftKind::Categorical),
            other => {
                return Err(PbgError::argument(
                    "kind",
                    format!("`{other}`: use auto, interval, mask, date or categorical"),
                ));
            }
        })
    }

    /// The kind the values suggest: dates, then fixed-width codes, then numbers, else text.
    pub fn of(values: &[(String, u64)]) -> Self {
        let all = |f: &dyn Fn(&str) -> bool| values.iter().all(|(v, _)| f(v));
        if !values.is_empty() && all(&crate::encode::hierarchy::date::is_date) {
            return DraftKind::Date;
        }
        let width = values.first().map_or(0, |(v, _)| v.len());
        if (4..=32).contains(&width)
            && values.len() > 2
            && all(&|v: &str| v.len() == width && v.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            return DraftKind::Mask;
        }
        if values.len() > 2 && all(&|v: &str| v.trim().parse::<f64>().is_ok_and(f64::is_finite)) {
            return DraftKind::Interval;
        }
        DraftKind::Categorical
    }
}

/// Why a column of a type [`draftable`] refuses is left out.
const UNDRAFTABLE: &str = "its type cannot be drafted";

/// Whether a column of type `t` can be drafted (text, numbers, dates, times, booleans).
fn draftable(t: &arrow::datatypes::DataType) -> bool {
    use arrow::datatypes::DataType as T;
    match t {
        T::Dictionary(_, v) => draftable(v),
        T::Utf8 | T::LargeUtf8 | T::Utf8View | T::Boolean => true,
        T::Date32 | T::Date64 | T::Timestamp(..) => true,
        t => {
            t.is_integer() || t.is_floating() || matches!(t, T::Decimal128(..) | T::Decimal256(..))
        }
    }
}

/// The distinct count and null count of every column of `input`, and the values with counts of
/// those with at most [`MAX_VALUES`] distinct values.
pub async fn column_facts(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
) -> Result<(u64, Vec<ColumnFacts>)> {
    column_facts_in_passes(ctx, input, delimiter, PASS_VALUES).await
}

/// [`column_facts`], counting values in passes of at most `pass_values` estimated distinct values.
async fn column_facts_in_passes(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
    pass_values: u64,
) -> Result<(u64, Vec<ColumnFacts>)> {
    let df = input::open(ctx, input, delimiter).await?;
    let fields: Vec<(String, bool)> = df
        .schema()
        .fields()
        .iter()
        .map(|f| (f.name().clone(), draftable(f.data_type())))
        .collect();
    let names: Vec<String> = fields.iter().map(|f| f.0.clone()).collect();
    let mut aggregates = vec![count(lit(1)).alias("__rows")];
    for (i, (n, ok)) in fields.iter().enumerate() {
        // Distinct text forms (approx_distinct takes few types); other types count nothing.
        let column = if *ok {
            datafusion::prelude::cast(input::column(n), arrow::datatypes::DataType::Utf8)
        } else {
            lit(0)
        };
        aggregates.push(approx_distinct(column).alias(format!("__d{i}")));
        aggregates.push(count(input::column(n)).alias(format!("__n{i}")));
    }
    let batches = df
        .clone()
        .aggregate(vec![], aggregates)
        .map_err(|e| df_error(input, e))?
        .collect()
        .await
        .map_err(|e| df_error(input, e))?;
    let batch = batches.first().ok_or_else(|| PbgError::EmptyTable {
        path: input.as_path(),
    })?;
    let number = |c: usize| -> u64 {
        let col = batch.column(c);
        match col.data_type() {
            arrow::datatypes::DataType::Int64 => col.as_primitive::<Int64Type>().value(0) as u64,
            _ => arrow::compute::cast(col, &arrow::datatypes::DataType::UInt64)
                .map(|a| a.as_primitive::<arrow::datatypes::UInt64Type>().value(0))
                .unwrap_or(0),
        }
    };
    let rows = number(0);
    // The columns whose values are counted, in passes of at most `pass_values` estimated
    // distinct values in all (one query per column took 48 s on 3000 columns of 50 rows).
    let counted: Vec<usize> = (0..names.len())
        .filter(|&i| fields[i].1 && number(1 + 2 * i) <= MAX_VALUES)
        .collect();
    let mut values: Vec<Option<Vec<(String, u64)>>> = vec![None; names.len()];
    let mut pass: Vec<usize> = Vec::new();
    let mut held = 0;
    for (at, &i) in counted.iter().enumerate() {
        pass.push(i);
        held += number(1 + 2 * i);
        let last = at + 1 == counted.len();
        if last || held + number(1 + 2 * counted[at + 1]) > pass_values {
            let chosen: Vec<&str> = pass.iter().map(|&i| names[i].as_str()).collect();
            for (&i, v) in pass.iter().zip(value_counts(&df, input, &chosen).await?) {
                values[i] = Some(v);
            }
            pass.clear();
            held = 0;
        }
    }
    let mut facts = Vec::with_capacity(names.len());
    for (i, (name, values)) in names.iter().zip(values).enumerate() {
        let distinct = number(1 + 2 * i);
        let nulls = rows - number(2 + 2 * i).min(rows);
        facts.push(ColumnFacts {
            name: name.clone(),
            distinct: values.as_ref().map_or(distinct, |v| v.len() as u64),
            nulls,
            draftable: fields[i].1,
            values,
        });
    }
    Ok((rows, facts))
}

/// The distinct non-null text forms of column `name` of `input` with their counts, most frequent
/// first (what `pbg hierarchy build` drafts a hierarchy from).
pub async fn column_values(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
    name: &str,
) -> Result<Vec<(String, u64)>> {
    let df = input::open(ctx, input, delimiter).await?;
    input::column_index(input, df.schema().as_arrow(), name)?;
    let mut counts = value_counts(&df, input, &[name]).await?;
    Ok(counts.pop().unwrap_or_default())
}

/// The most distinct values (as `approx_distinct` estimates them) one pass of [`column_facts`]
/// counts, over all the columns it counts: 2 M, about 100 MB of texts and counts.
const PASS_VALUES: u64 = 2_000_000;

/// The distinct text forms of each of the columns `names` with their counts, most frequent first
/// (ties by text), in one pass over `df`. Values are counted by their text ([`text_column`], as
/// the engine reads them): grouping a float column by value made -0.0 and 0.0 one group, whose
/// leaf `0.0` the engine's `-0.0` then did not find (the draft refused its own data).
async fn value_counts(
    df: &datafusion::prelude::DataFrame,
    input: &Input,
    names: &[&str],
) -> Result<Vec<Vec<(String, u64)>>> {
    let columns: Vec<_> = names.iter().map(|n| input::column(n)).collect();
    let mut stream = df
        .clone()
        .select(columns)
        .map_err(|e| df_error(input, e))?
        .execute_stream()
        .await
        .map_err(|e| df_error(input, e))?;
    let mut counts: Vec<HashMap<String, u64>> = vec![HashMap::new(); names.len()];
    let mut in_batch: Vec<u64> = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| df_error(input, e))?;
        for (column, counts) in batch.columns().iter().zip(&mut counts) {
            let text = text_column(column)?;
            // Counted by key within the batch, then added by text once per distinct key.
            in_batch.clear();
            in_batch.resize(text.values.len(), 0);
            for k in text.keys.iter().flatten() {
                in_batch[k as usize] += 1;
            }
            for (k, &n) in in_batch.iter().enumerate().filter(|(_, n)| **n > 0) {
                let value = text.values.value(k);
                match counts.get_mut(value) {
                    Some(c) => *c += n,
                    None => {
                        counts.insert(value.to_string(), n);
                    }
                }
            }
        }
    }
    Ok(counts
        .into_iter()
        .map(|c| {
            let mut out: Vec<(String, u64)> = c.into_iter().collect();
            out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            out
        })
        .collect())
}

/// Builds a hierarchy of `kind` for column `name` over its values (with counts).
pub fn build_hierarchy(name: &str, values: &[(String, u64)], kind: DraftKind) -> Result<Hierarchy> {
    let leaves: Vec<(String, usize)> = values.iter().map(|(v, _)| (v.clone(), 1)).collect();
    match kind {
        DraftKind::Mask => HierarchySpec::Mask {
            steps: None,
            char: '*',
        }
        .build(name, &leaves),
        DraftKind::Date => HierarchySpec::Date {
            levels: vec!["month".into(), "year".into()],
        }
        .build(name, &leaves),
        DraftKind::Interval => HierarchySpec::Interval {
            widths: Vec::new(),
            origin: 0.0,
            cuts: quantile_cuts(values),
        }
        .build(name, &leaves),
        DraftKind::Categorical => categorical(name, values),
    }
}

/// Cut points per level: the finest at the [`BINS`]-quantiles of the values (weighted by their
/// counts), each coarser level every other cut of the level below.
fn quantile_cuts(values: &[(String, u64)]) -> Vec<Vec<f64>> {
    let mut numbers: Vec<(f64, u64)> = values
        .iter()
        .filter_map(|(v, n)| v.trim().parse::<f64>().ok().map(|x| (x, *n)))
        .collect();
    numbers.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = numbers.iter().map(|x| x.1).sum();
    let mut finest: Vec<f64> = Vec::new();
    let mut seen = 0u64;
    let mut next = 1;
    for &(x, n) in &numbers {
        // A cut at x opens the bin that starts with x once the bins below hold their share.
        while next < BINS && seen * BINS as u64 >= next as u64 * total {
            if finest.last() != Some(&x) && Some(x) != numbers.first().map(|f| f.0) {
                finest.push(x);
            }
            next += 1;
        }
        seen += n;
    }
    let mut levels = vec![finest];
    while let Some(last) = levels.last() {
        if last.len() <= 1 {
            break;
        }
        let coarser: Vec<f64> = last.iter().skip(1).step_by(2).copied().collect();
        levels.push(coarser);
    }
    levels.retain(|l| !l.is_empty());
    if levels.is_empty() {
        levels.push(Vec::new());
    }
    levels
}

/// Frequency-ordered groups of about √d values each (d distinct values), then `*`.
fn categorical(name: &str, values: &[(String, u64)]) -> Result<Hierarchy> {
    let d = values.len();
    let size = (d as f64).sqrt().ceil().max(1.0) as usize;
    let rows: Vec<Vec<String>> = values
        .chunks(size)
        .flat_map(|group| {
            let label = group_label(group);
            group
                .iter()
                .map(move |(v, _)| {
                    if d <= 3 {
                        vec![v.clone(), "*".to_string()]
                    } else {
                        vec![v.clone(), label.clone(), "*".to_string()]
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect();
    Hierarchy::from_rows(name, "drafted groups", &rows)
}

/// A group's label: its values joined by `|`, shortened to the first and a count when long.
fn group_label(group: &[(String, u64)]) -> String {
    let joined = group
        .iter()
        .map(|(v, _)| v.as_str())
        .collect::<Vec<_>>()
        .join("|");
    if group.len() == 1 {
        return format!("{{{joined}}}");
    }
    if joined.chars().count() <= 40 {
        format!("{{{joined}}}")
    } else {
        format!("{{{}|… +{}}}", group[0].0, group.len() - 1)
    }
}

/// The ARX file of a hierarchy: one row per leaf, `leaf;level1;...;top`, `;`-separated (values
/// holding `;`, quotes or line breaks quoted).
pub fn arx_text(h: &Hierarchy) -> String {
    let quote = |v: &str| {
        if v.contains([';', '"', '\n', '\r']) || v.trim() != v {
            format!("\"{}\"", v.replace('"', "\"\""))
        } else {
            v.to_string()
        }
    };
    let mut out = String::new();
    for (leaf, text) in h.leaves().iter().enumerate() {
        out.push_str(&quote(text));
        for l in 1..=h.height() {
            let level = h.level(l);
            out.push(';');
            out.push_str(&quote(&level.labels[level.group_of_leaf[leaf] as usize]));
        }
        out.push('\n');
    }
    out
}

/// The roles and hierarchies proposed for a table.
#[derive(Debug)]
pub struct Draft {
    /// The input.
    pub input: Input,
    /// Its CSV delimiter.
    pub delimiter: u8,
    /// Rows read.
    pub rows: u64,
    /// Identifier columns with their distinct counts (given or nearly unique).
    pub identifiers: Vec<(String, u64)>,
    /// The sensitive attribute, and whether it was guessed.
    pub sensitive: (String, bool),
    /// QIs with their kind and hierarchy.
    pub qis: Vec<(String, DraftKind, Hierarchy)>,
    /// Columns left out as QIs, with why; they are dropped like identifiers (listed there too).
    pub skipped: Vec<(String, String)>,
}

/// Drafts the roles and hierarchies of `input`: `sensitive` (else the last scalar column that is
/// not an identifier, marked as a guess), `qis` (else every other column a hierarchy can be built for),
/// `identifiers` (plus the nearly unique columns).
pub async fn draft(
    ctx: &SessionContext,
    input: &Input,
    delimiter: u8,
    sensitive: Option<&str>,
    qis: &[String],
    identifiers: &[String],
) -> Result<Draft> {
    let (rows, facts) = column_facts(ctx, input, delimiter).await?;
    let known = |name: &str, what: &str| -> Result<()> {
        if facts.iter().any(|f| f.name == name) {
            Ok(())
        } else {
            let names: Vec<&str> = facts.iter().map(|f| f.name.as_str()).collect();
            Err(PbgError::argument(
                what,
                format!(
                    "{}: no column `{name}` (the columns are: {})",
                    input.as_path().display(),
                    crate::error::column_list(name, &names)
                ),
            ))
        }
    };
    for n in identifiers {
        known(n, "--identifier")?;
    }
    for n in qis {
        known(n, "--qi")?;
    }
    if let Some(s) = sensitive {
        known(s, "--sensitive")?;
        if qis.iter().any(|q| q == s) || identifiers.iter().any(|i| i == s) {
            return Err(PbgError::argument(
                "sensitive",
                format!("column `{s}` is also given as a QI or an identifier: one role per column"),
            ));
        }
    }
    if let Some(q) = qis.iter().find(|q| identifiers.contains(q)) {
        return Err(PbgError::argument(
            "qi",
            format!("column `{q}` is also given as an identifier: one role per column"),
        ));
    }
    let nearly_unique = |f: &ColumnFacts| rows >= 20 && f.distinct * 10 >= rows * 9;
    let id: Vec<(String, u64)> = facts
        .iter()
        .filter(|f| {
            identifiers.contains(&f.name)
                || (!qis.contains(&f.name) && sensitive != Some(&f.name) && nearly_unique(f))
        })
        .map(|f| (f.name.clone(), f.distinct))
        .collect();
    let is_id = |n: &str| id.iter().any(|(i, _)| i == n);
    let sensitive = match sensitive {
        Some(s) => (s.to_string(), false),
        None => match facts
            .iter()
            .rev()
            // A nested column cannot be the sensitive attribute (it must be scalar).
            .find(|f| !is_id(&f.name) && !qis.contains(&f.name) && f.draftable)
        {
            Some(f) => (f.name.clone(), true),
            None => {
                return Err(PbgError::argument(
                    "sensitive",
                    "no column is left for the sensitive attribute: name one with --sensitive",
                ));
            }
        },
    };
    if let Some(f) = facts.iter().find(|f| f.name == sensitive.0 && f.nulls > 0) {
        return Err(PbgError::NullValue {
            column: f.name.clone(),
            row: 0,
            hint: format!(
                "the sensitive attribute must not be null ({} null rows): choose another with --sensitive, or fill them",
                f.nulls
            ),
        });
    }
    let mut drafted = Vec::new();
    let mut skipped = Vec::new();
    for f in &facts {
        let wanted = if qis.is_empty() {
            !is_id(&f.name) && f.name != sensitive.0
        } else {
            qis.contains(&f.name)
        };
        if !wanted {
            continue;
        }
        let why = if !f.draftable {
            Some(UNDRAFTABLE.to_string())
        } else if f.nulls > 0 {
            Some(format!(
                "{} null values (a QI needs `null_as` set to one of its values)",
                f.nulls
            ))
        } else if f.values.is_none() {
            Some(format!(
                "about {} distinct values, too many to draft a hierarchy",
                f.distinct
            ))
        } else if let Some((v, _)) = f
            .values
            .as_deref()
            .unwrap_or_default()
            .iter()
            .find(|(v, _)| v.is_empty() || v.contains(['\n', '\r']) || v.trim() != v)
        {
            Some(format!(
                "a value a hierarchy file cannot hold as written ({:?})",
                v.chars().take(20).collect::<String>()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            if qis.contains(&f.name) {
                return Err(PbgError::argument(
                    "qi",
                    format!("column `{}`: {why}", f.name),
                ));
            }
            skipped.push((f.name.clone(), why));
            continue;
        }
        let values = f.values.as_deref().unwrap_or_default();
        let kind = DraftKind::of(values);
        drafted.push((
            f.name.clone(),
            kind,
            build_hierarchy(&f.name, values, kind)?,
        ));
    }
    if drafted.is_empty() {
        let why: Vec<String> = skipped.iter().map(|(n, w)| format!("`{n}`: {w}")).collect();
        return Err(PbgError::argument(
            "qi",
            format!(
                "no column could be drafted as a quasi-identifier{}",
                if why.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", why.join("; "))
                }
            ),
        ));
    }
    // A column left out is dropped like an identifier: otherwise it would be released raw.
    let mut id = id;
    for (name, _) in &skipped {
        let distinct = facts
            .iter()
            .find(|f| &f.name == name)
            .map_or(0, |f| f.distinct);
        id.push((name.clone(), distinct));
    }
    Ok(Draft {
        input: input.clone(),
        delimiter,
        rows,
        identifiers: id,
        sensitive,
        qis: drafted,
        skipped,
    })
}

/// An absolute form of an input path, globs kept as written.
fn absolute(p: &Path) -> Result<String> {
    // (An existing path holding glob characters is that path, as the input reads it.)
    if input::is_glob(p) {
        let cwd = std::env::current_dir().map_err(|e| PbgError::io(p, e))?;
        return Ok(cwd.join(p).to_string_lossy().into_owned());
    }
    Ok(p.canonicalize()
        .map_err(|e| PbgError::io(p, e))?
        .to_string_lossy()
        .into_owned())
}

/// A file-name-safe form of a column name.
fn file_stem(name: &str) -> String {
    // ASCII only, and at most 150 bytes: the file and its temporary name must fit the file
    // system's 255 (longer names share a stem and get numbered).
    name.chars()
        .take(150)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Writes `dir/profile.toml` and `dir/hierarchies/<qi>.csv`; returns the profile's path. Existing
/// files of the same names are refused (a draft never overwrites an edited profile).
pub fn write_draft(draft: &Draft, dir: &Path) -> Result<PathBuf> {
    let hier = dir.join("hierarchies");
    let fresh = !dir.exists();
    std::fs::create_dir_all(&hier).map_err(|e| PbgError::io(&hier, e))?;
    let written = write_draft_in(draft, dir, &hier);
    if written.is_err() {
        // Leave no empty directories behind a refusal.
        if fresh {
            let _ = std::fs::remove_dir_all(dir);
        } else {
            let _ = std::fs::remove_dir(&hier);
        }
    }
    written
}

fn write_draft_in(draft: &Draft, dir: &Path, hier: &Path) -> Result<PathBuf> {
    let profile = dir.join("profile.toml");
    if profile.exists() {
        return Err(PbgError::io(
            &profile,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a profile is already there: choose another --output directory or remove it",
            ),
        ));
    }
    let input = match &draft.input {
        Input::Path(p) => absolute(p)?,
        Input::Table(t) => t.clone(),
    };
    // The draft must not land inside an input directory (its files would be read as data).
    if let Input::Path(p) = &draft.input
        && p.is_dir()
        && let (Ok(inp), Ok(out)) = (p.canonicalize(), dir.canonicalize())
        && out.starts_with(&inp)
    {
        return Err(PbgError::argument(
            "output",
            format!(
                "{} is inside the input directory {}: its profile and hierarchy files would be read as data",
                dir.display(),
                p.display()
            ),
        ));
    }
    // Nothing is written unless every file can be.
    let mut files = Vec::new();
    let mut used = std::collections::HashSet::new();
    for (name, _, _) in &draft.qis {
        // Names that differ only in characters a file name cannot hold get numbered files.
        let stem = file_stem(name);
        let mut file = format!("{stem}.csv");
        let mut n = 2;
        while !used.insert(file.to_ascii_lowercase()) {
            file = format!("{stem}_{n}.csv");
            n += 1;
        }
        let path = hier.join(&file);
        if path.exists() {
            return Err(PbgError::io(
                &path,
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "already there"),
            ));
        }
        files.push(file);
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "# Drafted by `pbg init` from {} ({} rows). Review every role and hierarchy before a release.",
        draft.input, draft.rows
    );
    let key = if matches!(draft.input, Input::Table(_)) {
        "table"
    } else {
        "input"
    };
    let _ = writeln!(t, "{key} = {}", toml_string(&input));
    if draft.delimiter != b',' {
        let _ = writeln!(
            t,
            "delimiter = {}",
            toml_string(&(draft.delimiter as char).to_string())
        );
    }
    if draft.sensitive.1 {
        let _ = writeln!(
            t,
            "# GUESSED: the last column that is not an identifier. Name the real one (--sensitive)."
        );
    }
    let _ = writeln!(t, "sensitive = {}", toml_string(&draft.sensitive.0));
    if !draft.identifiers.is_empty() {
        let _ = writeln!(
            t,
            "# Dropped from every release: {} column(s), given, nearly unique, or left out below ({}).",
            draft.identifiers.len(),
            draft
                .identifiers
                .iter()
                .map(|(n, d)| format!("{} ~{d} distinct", toml_string(n)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let ids: Vec<String> = draft
            .identifiers
            .iter()
            .map(|(n, _)| toml_string(n))
            .collect();
        let _ = writeln!(t, "identifiers = [{}]", ids.join(", "));
    }
    let _ = writeln!(t, "suppression_limit = \"1%\"");
    for (name, why) in &draft.skipped {
        // A column of bytes, a list or a struct has no hierarchy to generalize it by.
        let advice = match why == UNDRAFTABLE {
            true => {
                "To publish it unchanged, remove it from `identifiers` (only if it can identify no one)."
            }
            false => "To publish it, make it a QI with a hierarchy.",
        };
        let _ = writeln!(
            t,
            "# Dropped (listed as an identifier): {}: {}. {advice}",
            toml_string(name),
            why.replace(['\n', '\r'], " ")
        );
    }
    let mut written: Vec<PathBuf> = Vec::new();
    for ((name, kind, h), file) in draft.qis.iter().zip(&files) {
        let path = hier.join(file);
        if let Err(e) = crate::io::write_text_atomic(&path, &arx_text(h)) {
            // Nothing of a refused draft stays behind.
            for w in &written {
                let _ = std::fs::remove_file(w);
            }
            return Err(e);
        }
        written.push(path);
        let _ = writeln!(
            t,
            "\n# {}: {} hierarchy over {} values, {} levels above the values.",
            toml_string(name),
            kind.name(),
            h.leaves().len(),
            h.height()
        );
        let _ = writeln!(t, "[[qi]]\nname = {}", toml_string(name));
        let _ = writeln!(
            t,
            "hierarchy = {}",
            toml_string(&format!("hierarchies/{file}"))
        );
    }
    if let Err(e) = crate::io::write_text_atomic(&profile, &t) {
        for w in &written {
            let _ = std::fs::remove_file(w);
        }
        return Err(e);
    }
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values counted in passes over several columns at once equal a count row by row of each
    /// column's text, whatever the passes: numbers, -0.0 and 0.0, nulls, texts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn value_counts_in_passes_equal_a_count_by_row() {
        use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let n = 500;
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "i",
                Arc::new(Int64Array::from_iter(
                    (0..n).map(|r| (r % 7 != 3).then_some(r % 13)),
                )),
            ),
            (
                "f",
                Arc::new(Float64Array::from_iter_values(
                    (0..n).map(|r| [0.0, -0.0, 1.5, -2.25][r as usize % 4]),
                )),
            ),
            (
                "s",
                Arc::new(StringArray::from_iter_values(
                    (0..n).map(|r| format!("v{}", (r * 31) % 41)),
                )),
            ),
        ];
        let batch = arrow::record_batch::RecordBatch::try_from_iter(columns).unwrap();
        let file = std::fs::File::create(&path).unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let input = Input::Path(path);
        // Row by row: each value's text as arrow casts it, nulls left out.
        let mut want: Vec<Vec<(String, u64)>> = Vec::new();
        for column in batch.columns() {
            let text = arrow::compute::cast(column, &arrow::datatypes::DataType::Utf8).unwrap();
            let text = text.as_string::<i32>();
            let mut counts: HashMap<String, u64> = HashMap::new();
            for r in 0..text.len() {
                if text.is_valid(r) {
                    *counts.entry(text.value(r).to_string()).or_default() += 1;
                }
            }
            let mut v: Vec<(String, u64)> = counts.into_iter().collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            want.push(v);
        }
        assert!(want[1].iter().any(|(t, _)| t == "-0.0") && want[1].len() == 4);
        for pass in [1, 20, PASS_VALUES] {
            let ctx = input::new_context();
            let (rows, facts) = column_facts_in_passes(&ctx, &input, b',', pass)
                .await
                .unwrap();
            assert_eq!(rows, n as u64);
            let got: Vec<Vec<(String, u64)>> =
                facts.into_iter().map(|f| f.values.unwrap()).collect();
            assert_eq!(got, want, "passes of {pass}");
        }
    }
}
