//! Slicing (IJERT 2013, after Li et al.): attribute correlation, attribute partitioning into
//! columns, l-diverse tuple partitioning into buckets, and the bucketization / slicing /
//! overlapping slicing releases, each checked independently before it is renamed into place.

pub mod correlation;
pub mod diversity;
pub mod partition;
pub mod release;
pub mod table;
pub mod verify;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::encode::Dataset;
use crate::error::{PbgError, Result};
use crate::io::{AtomicFile, OutputFormat, Table, read_table, write_batches};
use crate::lattice::Node;
use crate::profile::Profile;

use correlation::{Contingency, CorrelationMatrix};
use diversity::{Diversity, partition_tuples_with};
use partition::{AttributePartition, chi_matrix, pam, parse_partition};
use table::{SliceAttribute, SliceLayout, SliceMode};

/// How the attributes are partitioned into columns.
#[derive(Debug, Clone, PartialEq)]
pub enum PartitionChoice {
    /// The paper's chi_matrix pairing.
    Chi,
    /// k-medoids on 1 − φ² with this many columns (default: half the attributes, rounded up).
    Pam(Option<usize>),
    /// Given as `a+b,c+d`.
    User(String),
}

impl PartitionChoice {
    /// Parses `chi`, `pam`, `pam:K` or a partition `a+b,c+d`.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim();
        Ok(match t {
            "chi" | "chi_matrix" => PartitionChoice::Chi,
            "pam" => PartitionChoice::Pam(None),
            _ => match t.strip_prefix("pam:") {
                Some(k) => PartitionChoice::Pam(Some(k.parse().map_err(|_| {
                    PbgError::argument("partition", format!("`{k}` is not a column count"))
                })?)),
                None => PartitionChoice::User(t.to_string()),
            },
        })
    }
}

/// Options of a sliced release.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceOptions {
    /// The diversity parameter: p(t,s) ≤ 1/l for every tuple.
    pub l: u64,
    /// The release mode.
    pub mode: SliceMode,
    /// The attribute partition.
    pub partition: PartitionChoice,
    /// Seed of the permutations.
    pub seed: u64,
    /// Column generalization: QI values replaced by their labels at this node of the profile's
    /// hierarchies before slicing.
    pub generalize: Option<Node>,
    /// The diversity the buckets must have (SPEC §6 by default).
    pub diversity: Diversity,
}

/// What `slice` reports.
#[derive(Debug, Clone, Serialize)]
pub struct SliceSummary {
    /// The file written.
    pub output: PathBuf,
    /// The mode.
    pub mode: &'static str,
    /// The l required.
    pub l: u64,
    /// `tuple` (p(t,s) ≤ 1/l) or `distinct` (≥ l sensitive values per bucket).
    pub diversity: &'static str,
    /// Attribute names of every column, in release order.
    pub columns: Vec<Vec<String>>,
    /// Rows released (all of them: slicing suppresses nothing).
    pub rows: usize,
    /// Buckets.
    pub buckets: usize,
    /// The largest p(t,s), recomputed from the written file.
    pub max_p: f64,
    /// The largest l the release satisfies, ⌊1 / max p⌋.
    pub l_achieved: u64,
    /// The fewest distinct sensitive values in a bucket, recomputed from the file.
    pub min_distinct: usize,
    /// Mondrian splits tried and kept.
    pub splits_tried: usize,
    /// Splits kept.
    pub splits_kept: usize,
    /// The seed of the permutations.
    pub seed: u64,
    /// The release passed the independent check.
    pub verified: bool,
    /// Seconds: load, partition, write and check.
    pub seconds: f64,
}

/// χ² and φ² of every pair of attributes, from their codes.
pub fn attribute_correlation(attributes: &[SliceAttribute]) -> CorrelationMatrix {
    let k = attributes.len();
    let mut chi = vec![vec![0.0; k]; k];
    let mut phi = vec![vec![0.0; k]; k];
    for i in 0..k {
        for j in i..k {
            let t = Contingency::new(
                &attributes[i].codes,
                attributes[i].domain(),
                &attributes[j].codes,
                attributes[j].domain(),
            );
            chi[i][j] = t.chi_square();
            phi[i][j] = t.phi_squared();
            chi[j][i] = chi[i][j];
            phi[j][i] = phi[i][j];
        }
    }
    CorrelationMatrix {
        columns: attributes.iter().map(|a| a.name.clone()).collect(),
        chi_square: chi,
        phi_squared: phi,
    }
}

/// The attributes of a profile's slicing: its QIs (raw values, or their labels at `generalize`),
/// then the sensitive attribute.
pub fn slice_attributes(
    profile: &Profile,
    table: &Table,
    generalize: Option<&[u8]>,
) -> Result<Vec<SliceAttribute>> {
    if table.num_rows() < 2 {
        return Err(PbgError::argument(
            "input",
            format!("{}: slicing needs at least two rows", table.path.display()),
        ));
    }
    let mut attributes = Vec::with_capacity(profile.qis.len() + 1);
    match generalize {
        None => {
            for q in &profile.qis {
                attributes.push(SliceAttribute::from_column(
                    &q.name,
                    &table.column(table.column_index(&q.name)?)?,
                )?);
            }
        }
        Some(node) => {
            let ds = Dataset::from_table(profile, table.clone())?;
            let lattice = crate::lattice::Lattice::new(ds.heights());
            let names: Vec<&str> = ds.qis.iter().map(|q| q.name.as_str()).collect();
            lattice.check(node, &names)?;
            for (d, q) in ds.qis.iter().enumerate() {
                let level = q.hierarchy.level(node[d]);
                attributes.push(SliceAttribute {
                    name: q.name.clone(),
                    codes: q
                        .codes
                        .values()
                        .iter()
                        .map(|&c| level.group_of_leaf[c as usize])
                        .collect(),
                    labels: level.labels.clone(),
                });
            }
        }
    }
    attributes.push(SliceAttribute::from_column(
        &profile.sensitive,
        &table.column(table.column_index(&profile.sensitive)?)?,
    )?);
    Ok(attributes)
}

/// The columns for `options` over `attributes` (QIs, then the sensitive attribute). chi_matrix and
/// PAM partition the QIs; the sensitive attribute then forms a column of its own (slicing) or joins
/// every column (overlapping). A user partition may place the sensitive attribute itself.
pub fn slice_layout(
    attributes: Vec<SliceAttribute>,
    options: &SliceOptions,
) -> Result<SliceLayout> {
    let names: Vec<String> = attributes.iter().map(|a| a.name.clone()).collect();
    let sensitive = attributes.len() - 1;
    let qis = &attributes[..sensitive];
    let partition: AttributePartition = match (&options.partition, options.mode) {
        (_, SliceMode::Bucketization) => AttributePartition {
            columns: Vec::new(),
        },
        (PartitionChoice::Chi, _) => chi_matrix(&attribute_correlation(qis)),
        (PartitionChoice::Pam(k), _) => {
            let k = k.unwrap_or(qis.len().div_ceil(2));
            pam(&attribute_correlation(qis), k)?
        }
        (PartitionChoice::User(text), _) => parse_partition(text, &names, &[sensitive])?,
    };
    SliceLayout::new(attributes, &partition.columns, options.mode)
}

/// Fails unless the recomputed release has the diversity asked for and the disclosure the
/// partitioning computed.
fn confirm(
    check: &verify::SliceCheck,
    disclosure: &diversity::Disclosure,
    options: &SliceOptions,
    path: &Path,
) -> Result<()> {
    let l = options.l;
    let message = if (check.max_p - disclosure.max_p).abs() > 1e-9 {
        format!(
            "recomputed from the release, max p(t,s) = {}; the partitioning computed {}",
            check.max_p, disclosure.max_p
        )
    } else if options.diversity == Diversity::Tuple && check.max_p > (1.0 + 1e-9) / l as f64 {
        format!("recomputed max p(t,s) = {} > 1/{l}", check.max_p)
    } else if options.diversity == Diversity::Distinct && (check.min_distinct as u64) < l {
        format!(
            "a bucket holds {} distinct sensitive values, fewer than {l}",
            check.min_distinct
        )
    } else {
        return Ok(());
    };
    Err(PbgError::Verification {
        path: path.to_path_buf(),
        message,
    })
}

/// A sliced release in memory, checked independently like a written one (the SQL face).
pub fn slice_table(
    profile: &Profile,
    table: &Table,
    options: &SliceOptions,
) -> Result<arrow::record_batch::RecordBatch> {
    let attributes = slice_attributes(profile, table, options.generalize.as_deref())?;
    let layout = slice_layout(attributes, options)?;
    let tp = partition_tuples_with(&layout, options.l, options.diversity)?;
    let batch = release::release_batch(&layout, &tp.buckets, options.seed)?;
    let release = Table {
        path: PathBuf::from(format!("{} (sliced)", table.path.display())),
        schema: batch.schema(),
        batches: vec![batch.clone()],
    };
    let check = verify::check_slice_table(&release, &layout)?;
    confirm(&check, &tp.disclosure, options, &release.path)?;
    Ok(batch)
}

/// Slices the profile's input: attribute partition, l-diverse tuple partition, seeded
/// permutations, written to a temporary file beside `output`, checked independently from the file
/// (p(t,s) ≤ 1/l for every input tuple; the input's entries, column by column), then renamed.
pub fn slice(profile: &Profile, options: &SliceOptions, output: &Path) -> Result<SliceSummary> {
    let start = Instant::now();
    profile.protect(output)?;
    let file = AtomicFile::new(output)?;
    let table = read_table(&profile.input, profile.delimiter)?;
    let attributes = slice_attributes(profile, &table, options.generalize.as_deref())?;
    let layout = slice_layout(attributes, options)?;
    let tp = partition_tuples_with(&layout, options.l, options.diversity)?;
    let batch = release::release_batch(&layout, &tp.buckets, options.seed)?;
    let written = || -> Result<_> {
        write_batches(
            file.temp_path(),
            OutputFormat::of(output)?,
            batch.schema(),
            &[batch],
        )?;
        let check = verify::check_slice_release(file.temp_path(), &layout)?;
        confirm(&check, &tp.disclosure, options, file.temp_path())?;
        Ok(check)
    };
    let check = written().map_err(|e| file.named(e))?;
    file.commit()?;
    Ok(SliceSummary {
        output: output.to_path_buf(),
        mode: options.mode.name(),
        l: options.l,
        diversity: options.diversity.name(),
        columns: (0..layout.columns.len())
            .map(|c| {
                layout
                    .column_names(c)
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            })
            .collect(),
        rows: check.rows,
        buckets: check.buckets,
        max_p: check.max_p,
        l_achieved: tp.disclosure.l(),
        min_distinct: check.min_distinct,
        splits_tried: tp.splits_tried,
        splits_kept: tp.splits_kept,
        seed: options.seed,
        verified: true,
        seconds: start.elapsed().as_secs_f64(),
    })
}
