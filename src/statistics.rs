//! Class statistics of a streamed input: the distinct combinations of a set of columns with their
//! counts, never the rows. Row groups are counted in parallel; each value gets an id the first time
//! it is seen and ids are packed into one integer key, widened (and the counts repacked) only when
//! a column's dictionary outgrows its bits. A dataset built from the statistics is the engine's
//! input for inputs larger than memory: every node index comes out the same as from the rows.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, UInt32Array};
use rayon::prelude::*;

use crate::classes::key::bits_for;
use crate::encode::{Dataset, EncodedAttribute, EncodedQi};
use crate::error::{PbgError, Result};
use crate::io::{StreamInput, Table, text_column};
use crate::profile::Profile;

use crate::classes::counter::Counter;

/// The distinct text forms of one column, in order of first appearance (by id).
#[derive(Debug, Clone, Default)]
pub struct ColumnValues {
    /// Text form of each id.
    pub values: Vec<String>,
    /// 0-based data row where each id first occurs.
    pub first_row: Vec<u64>,
    index: HashMap<String, u32>,
}

impl ColumnValues {
    /// Id of `value`, added with `row` as its first occurrence when new (an earlier row wins).
    fn id(&mut self, value: &str, row: u64) -> u32 {
        if let Some(&id) = self.index.get(value) {
            let first = &mut self.first_row[id as usize];
            *first = (*first).min(row);
            return id;
        }
        let id = self.values.len() as u32;
        self.values.push(value.to_string());
        self.first_row.push(row);
        self.index.insert(value.to_string(), id);
        id
    }

    /// Id of `value` if it has been seen.
    pub fn get(&self, value: &str) -> Option<u32> {
        self.index.get(value).copied()
    }
}

/// One column to count: its index in the input, and the text that stands for null (else a null
/// is an error with `null_hint`).
#[derive(Debug, Clone)]
pub struct CountColumn {
    /// Column index in the input schema.
    pub index: usize,
    /// Text a null stands for.
    pub null_as: Option<String>,
    /// What to do about a null when `null_as` is not set.
    pub null_hint: String,
}

/// The counts of the distinct combinations of some columns.
#[derive(Debug, Clone)]
pub struct TupleCounts {
    /// Distinct values per counted column.
    pub columns: Vec<ColumnValues>,
    /// Each distinct combination (one id per column) with its number of rows.
    pub combos: Vec<(Vec<u32>, u64)>,
    /// Rows read.
    pub rows: u64,
}

/// Counting state of one part (or of several merged ones).
struct Accumulator {
    columns: Vec<ColumnValues>,
    bits: Vec<u32>,
    shifts: Vec<u32>,
    packed: Counter,
    /// Used instead of `packed` once the ids no longer fit 63 bits.
    wide: Option<HashMap<Vec<u32>, u64>>,
    rows: u64,
}

impl Accumulator {
    fn new(n: usize) -> Self {
        let mut a = Accumulator {
            columns: vec![ColumnValues::default(); n],
            bits: vec![0; n],
            shifts: vec![0; n],
            packed: Counter::with_capacity(1024),
            wide: None,
            rows: 0,
        };
        a.layout();
        a
    }

    fn layout(&mut self) {
        let mut shift = 0;
        for (s, &b) in self.shifts.iter_mut().zip(&self.bits) {
            *s = shift;
            shift += b;
        }
    }

    fn unpack(&self, key: u64) -> Vec<u32> {
        self.bits
            .iter()
            .zip(&self.shifts)
            .map(|(&b, &s)| ((key >> s) & ((1u64 << b) - 1)) as u32)
            .collect()
    }

    fn pack(&self, ids: &[u32]) -> u64 {
        ids.iter()
            .zip(&self.shifts)
            .fold(0u64, |k, (&id, &s)| k | ((id as u64) << s))
    }

    /// Widens the key layout so that every current id fits, repacking the counts (or moving them
    /// to the wide map when 63 bits no longer suffice).
    fn fit(&mut self) {
        if self.wide.is_some() {
            return;
        }
        let need: Vec<u32> = self
            .columns
            .iter()
            .map(|c| bits_for(c.values.len()))
            .collect();
        if need.iter().zip(&self.bits).all(|(n, b)| n <= b) {
            return;
        }
        // Grow by a margin so that repacking stays rare.
        let bits: Vec<u32> = need
            .iter()
            .zip(&self.bits)
            .map(|(&n, &b)| if n <= b { b } else { n + 1 })
            .collect();
        let old = std::mem::replace(&mut self.packed, Counter::with_capacity(8)).into_pairs();
        let old_combos: Vec<(Vec<u32>, u64)> =
            old.iter().map(|&(k, c)| (self.unpack(k), c)).collect();
        if bits.iter().sum::<u32>() > 63 {
            self.wide = Some(old_combos.into_iter().collect());
            return;
        }
        self.bits = bits;
        self.layout();
        self.packed = Counter::with_capacity(old_combos.len().max(1024));
        for (ids, count) in old_combos {
            let key = self.pack(&ids);
            self.packed.add(key, count);
        }
    }

    fn add_combo(&mut self, ids: Vec<u32>, count: u64) {
        match &mut self.wide {
            Some(map) => *map.entry(ids).or_default() += count,
            None => {
                let key = self.pack(&ids);
                self.packed.add(key, count);
            }
        }
    }

    /// Counts one record batch whose first row is data row `first_row`.
    fn add_batch(
        &mut self,
        input: &StreamInput,
        spec: &[CountColumn],
        first_row: u64,
        batch: &arrow::record_batch::RecordBatch,
    ) -> Result<()> {
        let n = batch.num_rows();
        // Per column: keys into a local dictionary, and each local value's id.
        let mut keys: Vec<Cow<'_, [u32]>> = Vec::with_capacity(spec.len());
        let mut local_ids: Vec<Vec<u32>> = Vec::with_capacity(spec.len());
        let mut texts = Vec::with_capacity(spec.len());
        for c in spec {
            texts.push(text_column(batch.column(c.index))?);
        }
        for ((c, text), values) in spec.iter().zip(&texts).zip(self.columns.iter_mut()) {
            let name = input.schema.field(c.index).name();
            let mut dict: Vec<&str> = (0..text.values.len())
                .map(|i| {
                    if text.values.is_null(i) {
                        ""
                    } else {
                        text.values.value(i)
                    }
                })
                .collect();
            let column_keys: Cow<'_, [u32]> = if text.keys.null_count() == 0 {
                Cow::Borrowed(text.keys.values())
            } else {
                match &c.null_as {
                    Some(fill) => {
                        let null_key = dict.len() as u32;
                        dict.push(fill.as_str());
                        Cow::Owned(text.keys.iter().map(|k| k.unwrap_or(null_key)).collect())
                    }
                    None => {
                        let r = (0..n).find(|&r| text.keys.is_null(r)).unwrap_or(0);
                        return Err(PbgError::NullValue {
                            column: name.to_string(),
                            row: (first_row + r as u64 + 1) as usize,
                            hint: c.null_hint.clone(),
                        });
                    }
                }
            };
            // Values new to this accumulator need the row of their first occurrence.
            let mut ids = vec![u32::MAX; dict.len()];
            let mut unknown = false;
            for (i, v) in dict.iter().enumerate() {
                match values.get(v) {
                    Some(id) => ids[i] = id,
                    None => unknown = true,
                }
            }
            if unknown {
                let mut first = vec![u32::MAX; dict.len()];
                for (r, &k) in column_keys.iter().enumerate() {
                    let f = &mut first[k as usize];
                    if *f == u32::MAX {
                        *f = r as u32;
                    }
                }
                for (i, v) in dict.iter().enumerate() {
                    if ids[i] == u32::MAX && first[i] != u32::MAX {
                        ids[i] = values.id(v, first_row + first[i] as u64);
                    }
                }
            }
            keys.push(column_keys);
            local_ids.push(ids);
        }
        self.fit();
        self.rows += n as u64;
        if self.wide.is_some() {
            for r in 0..n {
                let ids: Vec<u32> = keys
                    .iter()
                    .zip(&local_ids)
                    .map(|(k, m)| m[k[r] as usize])
                    .collect();
                self.add_combo(ids, 1);
            }
            return Ok(());
        }
        // Packed keys, one column at a time over the batch (vectorizable), then counted.
        let mut packed = vec![0u64; n];
        for ((k, m), &s) in keys.iter().zip(&local_ids).zip(&self.shifts) {
            for (p, &key) in packed.iter_mut().zip(k.iter()) {
                *p |= (m[key as usize] as u64) << s;
            }
        }
        for p in packed {
            self.packed.add(p, 1);
        }
        Ok(())
    }

    /// Adds another accumulator's counts, translating its ids.
    fn merge(mut self, other: Accumulator) -> Accumulator {
        let maps: Vec<Vec<u32>> = self
            .columns
            .iter_mut()
            .zip(&other.columns)
            .map(|(mine, theirs)| {
                theirs
                    .values
                    .iter()
                    .zip(&theirs.first_row)
                    .map(|(v, &r)| mine.id(v, r))
                    .collect()
            })
            .collect();
        self.fit();
        self.rows += other.rows;
        for (ids, count) in other.into_combos() {
            let ids = ids.iter().zip(&maps).map(|(&i, m)| m[i as usize]).collect();
            self.add_combo(ids, count);
        }
        self
    }

    fn into_combos(self) -> Vec<(Vec<u32>, u64)> {
        match self.wide {
            Some(map) => map.into_iter().collect(),
            None => {
                let cells = self.packed.into_pairs();
                let mut out = Vec::with_capacity(cells.len());
                let unpack = |key: u64| -> Vec<u32> {
                    self.bits
                        .iter()
                        .zip(&self.shifts)
                        .map(|(&b, &s)| ((key >> s) & ((1u64 << b) - 1)) as u32)
                        .collect()
                };
                for (k, c) in cells {
                    out.push((unpack(k), c));
                }
                out
            }
        }
    }
}

/// Streams `input` once, row groups in parallel, and counts the distinct combinations of `spec`'s
/// columns. Memory is bounded by the number of distinct combinations, not by the rows.
pub fn count_tuples(input: &StreamInput, spec: &[CountColumn]) -> Result<TupleCounts> {
    let acc = input
        .parts
        .par_iter()
        .map(|part| {
            let mut acc = Accumulator::new(spec.len());
            input.read_part(part, &mut |row, batch| {
                acc.add_batch(input, spec, row, &batch)
            })?;
            Ok::<_, PbgError>(acc)
        })
        .try_reduce(
            || Accumulator::new(spec.len()),
            |a, b| {
                // Merge the smaller into the larger.
                Ok(if a.rows < b.rows {
                    b.merge(a)
                } else {
                    a.merge(b)
                })
            },
        )?;
    let columns = acc.columns.clone();
    let rows = acc.rows;
    let mut combos = acc.into_combos();
    combos.sort_unstable();
    Ok(TupleCounts {
        columns,
        combos,
        rows,
    })
}

/// Per QI (node order): the leaf code of every text form seen in the input, for pass 2.
pub type LeafMaps = Vec<HashMap<String, u32>>;

impl Dataset {
    /// Pass 1 of a streamed anonymization: reads the profile's input once into class statistics
    /// (QIs, sensitive and class attribute) and builds the dataset the engine evaluates, with one
    /// weighted row per distinct combination. Also returns the text → leaf maps of the QIs.
    pub fn load_statistics(profile: &Profile) -> Result<(Self, LeafMaps)> {
        let input = StreamInput::open(&profile.input, profile.delimiter)?;
        let mut spec = Vec::new();
        for q in &profile.qis {
            spec.push(CountColumn {
                index: input.column_index(&q.name)?,
                null_as: q.null_as.clone(),
                null_hint: "declare `null_as = \"...\"` for this QI, with a leaf of its hierarchy, or fill the nulls".into(),
            });
        }
        let role_hint = |role: &str| {
            format!("the {role} attribute must not be null: fill or drop those rows first")
        };
        spec.push(CountColumn {
            index: input.column_index(&profile.sensitive)?,
            null_as: None,
            null_hint: role_hint("sensitive"),
        });
        if let Some(c) = &profile.class {
            spec.push(CountColumn {
                index: input.column_index(c)?,
                null_as: None,
                null_hint: role_hint("class"),
            });
        }
        let identifiers = profile
            .identifiers
            .iter()
            .map(|i| input.column_index(i))
            .collect::<Result<Vec<_>>>()?;
        let counts = count_tuples(&input, &spec)?;
        if counts.rows == 0 {
            return Err(PbgError::EmptyTable {
                path: input.path.clone(),
            });
        }
        let weights: Vec<u64> = counts.combos.iter().map(|(_, c)| *c).collect();
        let mut qis = Vec::with_capacity(profile.qis.len());
        let mut leaf_maps = Vec::with_capacity(profile.qis.len());
        for (d, q) in profile.qis.iter().enumerate() {
            let col = &counts.columns[d];
            let values: Vec<(String, usize)> = col
                .values
                .iter()
                .zip(&col.first_row)
                .map(|(v, &r)| (v.clone(), r as usize + 1))
                .collect();
            let hierarchy = Arc::new(q.hierarchy.build(&q.name, &values)?);
            let mut leaf_of_id = Vec::with_capacity(values.len());
            let mut map = HashMap::with_capacity(values.len());
            for (v, r) in &values {
                match hierarchy.leaf_code(v) {
                    Some(c) => {
                        leaf_of_id.push(c);
                        map.insert(v.clone(), c);
                    }
                    None => {
                        return Err(PbgError::ValueNotInHierarchy {
                            column: q.name.clone(),
                            value: v.clone(),
                            row: *r,
                            source_name: hierarchy.source().to_string(),
                        });
                    }
                }
            }
            let codes: UInt32Array = counts
                .combos
                .iter()
                .map(|(ids, _)| leaf_of_id[ids[d] as usize])
                .collect();
            let mut leaf_rows = vec![0u64; hierarchy.leaf_count()];
            for (&c, &w) in codes.values().iter().zip(&weights) {
                leaf_rows[c as usize] += w;
            }
            qis.push(EncodedQi {
                name: q.name.clone(),
                column: spec[d].index,
                hierarchy,
                codes,
                leaf_rows,
            });
            leaf_maps.push(map);
        }
        let attribute = |i: usize, name: &str| {
            let col = &counts.columns[i];
            let codes: UInt32Array = counts.combos.iter().map(|(ids, _)| ids[i]).collect();
            let mut totals = vec![0u64; col.values.len()];
            for (&c, &w) in codes.values().iter().zip(&weights) {
                totals[c as usize] += w;
            }
            EncodedAttribute {
                name: name.to_string(),
                column: spec[i].index,
                labels: col.values.clone(),
                codes,
                counts: totals,
            }
        };
        let s = profile.qis.len();
        let sensitive = attribute(s, &profile.sensitive);
        let class = profile.class.as_ref().map(|c| attribute(s + 1, c));
        let eta = profile.suppression.rows(counts.rows as usize);
        let dataset = Dataset {
            profile: profile.clone(),
            table: Table {
                path: input.path.clone(),
                schema: input.schema.clone(),
                batches: Vec::new(),
            },
            qis,
            sensitive,
            class,
            identifiers,
            eta,
            weights: Some(weights),
            tuples: counts.rows,
        };
        Ok((dataset, leaf_maps))
    }
}
