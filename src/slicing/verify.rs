//! Independent check of a written sliced release: the file is read back and p(t,s) is recomputed
//! for every input tuple from the file's text alone (its buckets and column entries) and the
//! input's values, with no codes, signatures or sums of the partitioning. The release must also
//! hold exactly the input's entries, column by column.

use std::collections::HashMap;
use std::path::Path;

use arrow::array::{Array, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, UInt64Type};
use serde::Serialize;

use crate::encode::text_column;
use crate::error::{PbgError, Result};
use crate::input::Input;
use crate::io::{Table, read_table};

use super::table::{SliceLayout, intern_combination};

/// What the check recomputed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceCheck {
    /// Rows in the release.
    pub rows: usize,
    /// Buckets in the release.
    pub buckets: usize,
    /// The largest p(t,s) over input tuples, sensitive values and sensitive columns.
    pub max_p: f64,
    /// The fewest distinct sensitive values in a bucket.
    pub min_distinct: usize,
}

/// Text ids per attribute name.
type Interned = HashMap<String, HashMap<String, u32>>;

/// The id of `text` among the texts of `attr`.
fn intern(interned: &mut Interned, attr: &str, text: &str) -> u32 {
    let m = interned.entry(attr.to_string()).or_default();
    let next = m.len() as u32;
    *m.entry(text.to_string()).or_insert(next)
}

/// Per bucket: size, per column the count of each known part, per sensitive column the
/// sensitive values of each known part.
#[derive(Default)]
struct Bucket {
    size: f64,
    known: Vec<HashMap<u32, u32>>,
    sens: Vec<HashMap<u32, HashMap<u32, u32>>>,
}

/// Reads the release at `path` and recomputes max p(t,s) for the tuples of `layout` (the input).
pub fn check_slice_release(path: &Path, layout: &SliceLayout) -> Result<SliceCheck> {
    check_slice_table(&read_table(&Input::Path(path.to_path_buf()), b',')?, layout)
}

/// [`check_slice_release`] on a release already read (its `path` is named in errors).
pub fn check_slice_table(table: &Table, layout: &SliceLayout) -> Result<SliceCheck> {
    let path = &table.path;
    let fail = |message: String| PbgError::Verification {
        path: path.to_path_buf(),
        message,
    };
    let names: Vec<String> = table
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if names.first().map(String::as_str) != Some("bucket") {
        return Err(fail("the first column is not `bucket`".into()));
    }
    let s_name = &layout.attributes[layout.sensitive].name;
    // Columns of the file: c{i}.{attribute}, in order.
    let mut file_cols: Vec<Vec<(String, usize)>> = Vec::new();
    for (i, name) in names.iter().enumerate().skip(1) {
        let (prefix, attr) = name
            .split_once('.')
            .ok_or_else(|| fail(format!("column `{name}` is not named c{{i}}.{{attribute}}")))?;
        let c: usize = prefix
            .strip_prefix('c')
            .and_then(|x| x.parse().ok())
            .ok_or_else(|| fail(format!("column `{name}` is not named c{{i}}.{{attribute}}")))?;
        while file_cols.len() < c {
            file_cols.push(Vec::new());
        }
        file_cols[c - 1].push((attr.to_string(), i));
    }
    // Every text is interned per attribute name, from the file's dictionaries and the input's
    // labels alike, so rows are compared by their text without formatting a string per row.
    let mut interned: Interned = HashMap::new();
    let file_ids = |interned: &mut Interned, attr: &str, i: usize| -> Result<Vec<u32>> {
        let t = text_column(&table.column(i)?)?;
        let map: Vec<u32> = (0..t.values.len())
            .map(|k| intern(interned, attr, t.values.value(k)))
            .collect();
        // A null is the empty text (a CSV file reads an empty field as null): its key slot
        // holds 0, which read the first distinct text instead.
        let empty = intern(interned, attr, "");
        Ok(t.keys
            .iter()
            .map(|k| k.map_or(empty, |k| map[k as usize]))
            .collect())
    };
    let bucket_col = cast(&table.column(0)?, &DataType::UInt64)?;
    let bucket_of: Vec<u64> = bucket_col.as_primitive::<UInt64Type>().values().to_vec();
    let rows = bucket_of.len();
    if rows != layout.rows() {
        return Err(fail(format!(
            "{rows} rows in the release, {} in the input",
            layout.rows()
        )));
    }
    let mut bucket_index: HashMap<u64, usize> = HashMap::new();
    for &b in &bucket_of {
        let next = bucket_index.len();
        bucket_index.entry(b).or_insert(next);
    }
    let nb = bucket_index.len();
    let ncols = file_cols.len();
    let mut buckets: Vec<Bucket> = (0..nb)
        .map(|_| Bucket {
            size: 0.0,
            known: vec![HashMap::new(); ncols],
            sens: vec![HashMap::new(); ncols],
        })
        .collect();
    let row_bucket: Vec<usize> = bucket_of.iter().map(|b| bucket_index[b]).collect();
    for &b in &row_bucket {
        buckets[b].size += 1.0;
    }
    let mut input_known: Vec<Vec<Option<u32>>> = Vec::with_capacity(ncols);
    let mut has_sensitive = vec![false; ncols];
    let mut buf: Vec<u32> = Vec::new();
    for (c, attrs) in file_cols.iter().enumerate() {
        let known_attrs: Vec<&(String, usize)> =
            attrs.iter().filter(|(a, _)| a != s_name).collect();
        let s_attr = attrs.iter().find(|(a, _)| a == s_name);
        has_sensitive[c] = s_attr.is_some();
        let file_known = known_attrs
            .iter()
            .map(|(a, i)| file_ids(&mut interned, a, *i))
            .collect::<Result<Vec<_>>>()?;
        let file_s = match s_attr {
            Some((a, i)) => Some(file_ids(&mut interned, a, *i)?),
            None => None,
        };
        // The input's rows in the same terms: each attribute's labels interned by their text.
        let input_of = |interned: &mut Interned, name: &str| -> Result<Vec<u32>> {
            let a = layout
                .attributes
                .iter()
                .find(|a| a.name == name)
                .ok_or_else(|| {
                    fail(format!(
                        "`{name}` is not an attribute of the input's slicing"
                    ))
                })?;
            let map: Vec<u32> = a.labels.iter().map(|t| intern(interned, name, t)).collect();
            Ok(a.codes.iter().map(|&k| map[k as usize]).collect())
        };
        let input_attrs = known_attrs
            .iter()
            .map(|(a, _)| input_of(&mut interned, a))
            .collect::<Result<Vec<_>>>()?;
        let input_s = match s_attr {
            Some(_) => Some(input_of(&mut interned, s_name)?),
            None => None,
        };
        let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
        // Entries of the file (+1) and of the input (−1) by (known part, sensitive value): the
        // release must hold exactly the input's entries.
        let mut balance: HashMap<(u32, u32), i64> = HashMap::new();
        for r in 0..rows {
            buf.clear();
            buf.extend(file_known.iter().map(|k| k[r]));
            let id = intern_combination(&mut ids, &buf);
            let b = &mut buckets[row_bucket[r]];
            *b.known[c].entry(id).or_default() += 1;
            let s = file_s.as_ref().map_or(u32::MAX, |f| f[r]);
            if s != u32::MAX {
                *b.sens[c].entry(id).or_default().entry(s).or_default() += 1;
            }
            *balance.entry((id, s)).or_default() += 1;
        }
        let mut known_of_input = Vec::with_capacity(rows);
        for r in 0..rows {
            buf.clear();
            buf.extend(input_attrs.iter().map(|k| k[r]));
            let id = ids.get(buf.as_slice()).copied();
            known_of_input.push(id);
            let s = input_s.as_ref().map_or(u32::MAX, |f| f[r]);
            match id {
                Some(id) => *balance.entry((id, s)).or_default() -= 1,
                None => {
                    return Err(fail(format!(
                        "column c{}: input row {} has values the release does not hold",
                        c + 1,
                        r + 1
                    )));
                }
            }
        }
        if let Some((_, d)) = balance.iter().find(|(_, d)| **d != 0) {
            return Err(fail(format!(
                "column c{} holds some entry {} time(s) {} than the input",
                c + 1,
                d.abs(),
                if *d > 0 { "more" } else { "fewer" }
            )));
        }
        input_known.push(known_of_input);
    }
    // Buckets holding each known part, per column.
    let mut holders: Vec<HashMap<u32, Vec<usize>>> = vec![HashMap::new(); ncols];
    for (bi, b) in buckets.iter().enumerate() {
        for (c, m) in b.known.iter().enumerate() {
            for &id in m.keys() {
                holders[c].entry(id).or_default().push(bi);
            }
        }
    }
    // p(t,s) per distinct combination of known parts (identical tuples share it).
    let mut seen: HashMap<Vec<u32>, ()> = HashMap::new();
    let mut max_p: f64 = 0.0;
    for r in 0..rows {
        let sig: Vec<u32> = input_known
            .iter()
            .map(|k| k[r])
            .collect::<Option<Vec<u32>>>()
            .ok_or_else(|| {
                fail(format!(
                    "input row {} matches no entry of the release",
                    r + 1
                ))
            })?;
        if seen.insert(sig.clone(), ()).is_some() {
            continue;
        }
        let shortest = (0..ncols)
            .min_by_key(|&c| holders[c].get(&sig[c]).map_or(0, Vec::len))
            .unwrap_or(0);
        let mut den = 0.0;
        let mut num: HashMap<(usize, u32), f64> = HashMap::new();
        for &bi in holders[shortest].get(&sig[shortest]).into_iter().flatten() {
            let b = &buckets[bi];
            let mut f = 1.0;
            for (c, &id) in sig.iter().enumerate() {
                match b.known[c].get(&id) {
                    Some(&n) => f *= n as f64 / b.size,
                    None => {
                        f = 0.0;
                        break;
                    }
                }
            }
            if f == 0.0 {
                continue;
            }
            den += f;
            for c in (0..ncols).filter(|&c| has_sensitive[c]) {
                let n = b.known[c][&sig[c]] as f64;
                if let Some(hist) = b.sens[c].get(&sig[c]) {
                    for (&s, &count) in hist {
                        *num.entry((c, s)).or_default() += f * count as f64 / n;
                    }
                }
            }
        }
        for v in num.values() {
            max_p = max_p.max(v / den);
        }
    }
    let min_distinct = buckets
        .iter()
        .map(|b| {
            (0..ncols)
                .filter(|&c| has_sensitive[c])
                .map(|c| {
                    b.sens[c]
                        .values()
                        .flat_map(|h| h.keys())
                        .collect::<std::collections::HashSet<_>>()
                        .len()
                })
                .min()
                .unwrap_or(0)
        })
        .min()
        .unwrap_or(0);
    Ok(SliceCheck {
        rows,
        buckets: nb,
        max_p,
        min_distinct,
    })
}
