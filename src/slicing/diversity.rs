//! The diversity check of SPEC §6 and the tuple partitioning built on it.
//!
//! A tuple t is known to an adversary by its non-sensitive values; in each column its *known part*
//! is the combination of the column's non-sensitive attributes. Tuples with the same known parts in
//! every column (the same *signature*) are indistinguishable, so everything is computed once per
//! signature. For a bucket B, f(t,B) = Π over columns of the fraction of B's entries whose known
//! part equals t's; D_c(t,B) is the distribution of sensitive values among the entries of column c
//! (holding the sensitive attribute) that match t; p_c(t,s) = Σ_B f(t,B)·D_c(t,B)(s) / Σ_B f(t,B).
//! The table is l-diverse when p_c(t,s) ≤ 1/l for every signature, sensitive value and sensitive
//! column. (With the sensitive attribute alone in its column, f is the product over the other
//! columns, as in SPEC §6; with known attributes beside it, their match counts too, as in Li et
//! al.'s slicing: a bucket where t's values do not appear cannot hold t.)
//!
//! Tuple partitioning keeps, per signature, the sums Σ_B f and Σ_B f·D over the current buckets;
//! splitting B into B1 and B2 only changes the signatures that match B, so a split is checked by
//! updating those sums alone and kept only if every updated signature still passes.

use std::collections::{HashMap, VecDeque};

use crate::error::{PbgError, Result};

use super::table::{SliceLayout, intern_combination};

/// Relative slack of the comparison p ≤ 1/l (floating sums).
const SLACK: f64 = 1e-9;

/// Signatures of the rows: per column the id of each row's known part, and the distinct
/// combinations of those ids.
pub struct Signatures {
    /// `known[c][row]`: id of the row's known part in column c.
    pub known: Vec<Vec<u32>>,
    /// Signature id of every row.
    pub of_row: Vec<u32>,
    /// Known-part ids of every signature, per column.
    pub sigs: Vec<Vec<u32>>,
    /// A row holding each signature (for messages).
    pub first_row: Vec<u32>,
    /// `with[c][known id]`: the signatures with that known part in column c.
    with: Vec<Vec<Vec<u32>>>,
}

impl Signatures {
    /// Computes the known parts and signatures of `layout`'s rows.
    pub fn new(layout: &SliceLayout) -> Self {
        let n = layout.rows();
        let mut known = Vec::with_capacity(layout.columns.len());
        let mut buf: Vec<u32> = Vec::new();
        for col in &layout.columns {
            let attrs: Vec<usize> = col
                .iter()
                .copied()
                .filter(|&a| a != layout.sensitive)
                .collect();
            let mut ids: HashMap<Vec<u32>, u32> = HashMap::new();
            let mut k = Vec::with_capacity(n);
            for r in 0..n {
                buf.clear();
                buf.extend(attrs.iter().map(|&a| layout.attributes[a].codes[r]));
                k.push(intern_combination(&mut ids, &buf));
            }
            known.push(k);
        }
        let mut index: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut sigs: Vec<Vec<u32>> = Vec::new();
        let mut first_row = Vec::new();
        let mut of_row = Vec::with_capacity(n);
        for r in 0..n {
            buf.clear();
            buf.extend(known.iter().map(|k| k[r]));
            let id = match index.get(buf.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = sigs.len() as u32;
                    index.insert(buf.clone(), id);
                    sigs.push(buf.clone());
                    first_row.push(r as u32);
                    id
                }
            };
            of_row.push(id);
        }
        let mut with: Vec<Vec<Vec<u32>>> = known
            .iter()
            .map(|k| vec![Vec::new(); k.iter().copied().max().map_or(0, |m| m as usize + 1)])
            .collect();
        for (s, sig) in sigs.iter().enumerate() {
            for (c, &v) in sig.iter().enumerate() {
                with[c][v as usize].push(s as u32);
            }
        }
        Signatures {
            known,
            of_row,
            sigs,
            first_row,
            with,
        }
    }
}

/// Counts of one bucket: its size, per column the count of each known part, and per sensitive
/// column the sensitive values of each known part.
struct BucketStats {
    size: f64,
    counts: Vec<HashMap<u32, u32>>,
    sens: Vec<HashMap<u32, Vec<(u32, u32)>>>,
}

impl BucketStats {
    /// Stats of a bucket given as (row, weight) items: a row stands for `weight` rows with the
    /// same known parts and sensitive value.
    fn new(layout: &SliceLayout, sig: &Signatures, items: &[(u32, u32)]) -> Self {
        let s_codes = &layout.attributes[layout.sensitive].codes;
        let counts = sig
            .known
            .iter()
            .map(|k| {
                let mut m: HashMap<u32, u32> = HashMap::new();
                for &(r, w) in items {
                    *m.entry(k[r as usize]).or_default() += w;
                }
                m
            })
            .collect();
        let sens = layout
            .sensitive_columns
            .iter()
            .map(|&c| {
                let mut m: HashMap<u32, Vec<(u32, u32)>> = HashMap::new();
                for &(r, w) in items {
                    let hist = m.entry(sig.known[c][r as usize]).or_default();
                    let s = s_codes[r as usize];
                    match hist.iter_mut().find(|(v, _)| *v == s) {
                        Some((_, n)) => *n += w,
                        None => hist.push((s, w)),
                    }
                }
                m
            })
            .collect();
        BucketStats {
            size: items.iter().map(|&(_, w)| w as f64).sum(),
            counts,
            sens,
        }
    }

    /// f(σ, B) = Π_c n_B(c, σ_c) / |B|, or None when some known part of σ is absent from B.
    #[inline]
    fn weight(&self, sig: &[u32]) -> Option<f64> {
        let mut f = 1.0;
        for (c, &v) in sig.iter().enumerate() {
            f *= *self.counts[c].get(&v)? as f64 / self.size;
        }
        Some(f)
    }

    /// The signatures that match this bucket (every known part present), found from the column
    /// whose present known parts list the fewest signatures.
    fn matching(&self, sig: &Signatures) -> Vec<u32> {
        let best = (0..self.counts.len())
            .min_by_key(|&c| {
                self.counts[c]
                    .keys()
                    .map(|&v| sig.with[c][v as usize].len())
                    .sum::<usize>()
            })
            .unwrap_or(0);
        let mut out: Vec<u32> = self.counts[best]
            .keys()
            .flat_map(|&v| sig.with[best][v as usize].iter().copied())
            .filter(|&s| {
                sig.sigs[s as usize]
                    .iter()
                    .enumerate()
                    .all(|(c, v)| self.counts[c].contains_key(v))
            })
            .collect();
        out.sort_unstable();
        out
    }
}

/// Per signature: Σ_B f and, per sensitive column and value, Σ_B f·D.
struct Sums {
    values: usize,
    den: Vec<f64>,
    num: Vec<f64>,
}

impl Sums {
    fn new(signatures: usize, sensitive_columns: usize, values: usize) -> Self {
        Sums {
            values,
            den: vec![0.0; signatures],
            num: vec![0.0; signatures * sensitive_columns * values],
        }
    }

    fn width(&self) -> usize {
        self.num.len() / self.den.len().max(1)
    }

    /// Adds `sign` × the contribution of bucket `b` to signature `s`, into (`den`, `num`).
    fn add_into(
        b: &BucketStats,
        layout: &SliceLayout,
        sig: &[u32],
        sign: f64,
        den: &mut f64,
        num: &mut [f64],
        values: usize,
    ) {
        let Some(f) = b.weight(sig) else { return };
        *den += sign * f;
        for (k, &c) in layout.sensitive_columns.iter().enumerate() {
            let v = sig[c];
            let n = b.counts[c][&v] as f64;
            if let Some(hist) = b.sens[k].get(&v) {
                for &(s, count) in hist {
                    num[k * values + s as usize] += sign * f * count as f64 / n;
                }
            }
        }
    }
}

/// The worst disclosure of a bucketing: the largest p_c(t,s).
#[derive(Debug, Clone, PartialEq)]
pub struct Disclosure {
    /// max p over signatures, sensitive values and sensitive columns.
    pub max_p: f64,
    /// A row of the tuple where it occurs.
    pub row: usize,
    /// The sensitive column (index into the layout's columns).
    pub column: usize,
    /// The sensitive value code.
    pub value: u32,
}

impl Disclosure {
    /// The largest l the bucketing satisfies: ⌊1 / max p⌋ (with the comparison's slack).
    pub fn l(&self) -> u64 {
        if self.max_p <= 0.0 {
            return u64::MAX;
        }
        ((1.0 + SLACK) / self.max_p).floor() as u64
    }
}

fn worst(layout: &SliceLayout, sig: &Signatures, sums: &Sums, only: Option<&[u32]>) -> Disclosure {
    let values = sums.values;
    let w = sums.width();
    let mut d = Disclosure {
        max_p: 0.0,
        row: 0,
        column: layout.sensitive_columns.first().copied().unwrap_or(0),
        value: 0,
    };
    let all: Vec<u32>;
    let list = match only {
        Some(l) => l,
        None => {
            all = (0..sig.sigs.len() as u32).collect();
            &all
        }
    };
    for &s in list {
        let den = sums.den[s as usize];
        if den <= 0.0 {
            continue;
        }
        for (i, &x) in sums.num[s as usize * w..(s as usize + 1) * w]
            .iter()
            .enumerate()
        {
            let p = x / den;
            if p > d.max_p {
                d = Disclosure {
                    max_p: p,
                    row: sig.first_row[s as usize] as usize,
                    column: layout.sensitive_columns[i / values],
                    value: (i % values) as u32,
                };
            }
        }
    }
    d
}

/// The worst disclosure of a given bucketing, computed from scratch.
pub fn disclosure(layout: &SliceLayout, buckets: &[Vec<u32>]) -> Disclosure {
    let sig = Signatures::new(layout);
    let values = layout.attributes[layout.sensitive].domain();
    let mut sums = Sums::new(sig.sigs.len(), layout.sensitive_columns.len(), values);
    let w = sums.width();
    for rows in buckets {
        let items: Vec<(u32, u32)> = rows.iter().map(|&r| (r, 1)).collect();
        let b = BucketStats::new(layout, &sig, &items);
        for s in b.matching(&sig) {
            let s = s as usize;
            let (den, num) = (&mut sums.den[s], &mut sums.num[s * w..(s + 1) * w]);
            Sums::add_into(&b, layout, &sig.sigs[s], 1.0, den, num, values);
        }
    }
    worst(layout, &sig, &sums, None)
}

/// The QIs a bucket can be split on, Mondrian's order: most distinct values relative to the
/// domain first (ties by position); QIs with one value in the bucket are left out.
fn split_order(layout: &SliceLayout, items: &[(u32, u32)]) -> Vec<usize> {
    let mut spread: Vec<(f64, usize)> = (0..layout.attributes.len())
        .filter(|&a| a != layout.sensitive)
        .filter_map(|a| {
            let attr = &layout.attributes[a];
            let mut seen = vec![false; attr.domain()];
            let mut distinct = 0usize;
            for &(r, _) in items {
                let c = attr.codes[r as usize] as usize;
                if !seen[c] {
                    seen[c] = true;
                    distinct += 1;
                }
            }
            (distinct > 1).then(|| (distinct as f64 / attr.domain() as f64, a))
        })
        .collect();
    spread.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)));
    spread.into_iter().map(|(_, a)| a).collect()
}

type Items = Vec<(u32, u32)>;

/// Splits a bucket on QI `a` at the median row's value (equal values stay together): rows below
/// the median value go left; if there are none, rows up to it. Items keep their order.
fn median_split(layout: &SliceLayout, items: &[(u32, u32)], a: usize) -> Option<(Items, Items)> {
    let attr = &layout.attributes[a];
    let code = |r: u32| attr.codes[r as usize] as usize;
    let mut weight = vec![0u64; attr.domain()];
    let mut total = 0u64;
    for &(r, w) in items {
        weight[code(r)] += w as u64;
        total += w as u64;
    }
    // The value of the row at position total / 2 in value order.
    let target = total / 2;
    let mut below = 0u64;
    let mut mid = 0usize;
    for (v, &w) in weight.iter().enumerate() {
        if below + w > target {
            mid = v;
            break;
        }
        below += w;
    }
    let mut cut = mid;
    if below == 0 {
        cut = mid + 1; // no row below the median value: split after it
    }
    let (left, right): (Items, Items) = items.iter().partition(|&&(r, _)| code(r) < cut);
    (!left.is_empty() && !right.is_empty()).then_some((left, right))
}

/// Which diversity a tuple partition must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Diversity {
    /// SPEC §6: p(t,s) ≤ 1/l for every tuple, sensitive value and sensitive column.
    Tuple,
    /// Every bucket holds at least l distinct sensitive values (weaker: what Mondrian-based
    /// bucketization usually means by l-diverse; reported with the p(t,s) it leaves).
    Distinct,
}

impl Diversity {
    /// Parses `tuple` or `distinct`.
    pub fn parse(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "tuple" | "p" => Ok(Diversity::Tuple),
            "distinct" => Ok(Diversity::Distinct),
            other => Err(PbgError::argument(
                "diversity",
                format!("unknown diversity `{other}` (use tuple or distinct)"),
            )),
        }
    }

    /// The name used on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            Diversity::Tuple => "tuple",
            Diversity::Distinct => "distinct",
        }
    }
}

/// Distinct sensitive values among weighted items.
fn distinct_sensitive(layout: &SliceLayout, items: &[(u32, u32)]) -> usize {
    let s = &layout.attributes[layout.sensitive];
    let mut seen = vec![false; s.domain()];
    items
        .iter()
        .filter(|&&(r, _)| !std::mem::replace(&mut seen[s.codes[r as usize] as usize], true))
        .count()
}

/// What tuple partitioning produced.
#[derive(Debug, Clone)]
pub struct TuplePartition {
    /// The buckets (row indices, ascending), ordered by their first row.
    pub buckets: Vec<Vec<u32>>,
    /// The worst disclosure of the result.
    pub disclosure: Disclosure,
    /// Splits tried and kept.
    pub splits_tried: usize,
    /// Splits kept.
    pub splits_kept: usize,
}

/// Tuple partitioning for `l` (SPEC §6): start with one bucket; split the first bucket of the queue
/// Mondrian-style and keep the split only if every tuple still passes the diversity check, else the
/// bucket is final. Fails, naming the tuple, column and value, when the table is not l-diverse even
/// as a single bucket.
pub fn partition_tuples(layout: &SliceLayout, l: u64) -> Result<TuplePartition> {
    partition_tuples_with(layout, l, Diversity::Tuple)
}

/// [`partition_tuples`] for a chosen diversity: with `Distinct`, a split is kept when both halves
/// hold at least l distinct sensitive values.
pub fn partition_tuples_with(
    layout: &SliceLayout,
    l: u64,
    diversity: Diversity,
) -> Result<TuplePartition> {
    let n = layout.rows();
    let values = layout.attributes[layout.sensitive].domain();
    if l == 0 {
        return Err(PbgError::argument("l", "l must be at least 1".to_string()));
    }
    if l as usize > values {
        return Err(PbgError::argument(
            "l",
            format!(
                "l = {l} but `{}` has only {values} distinct values: no release can be {l}-diverse",
                layout.attributes[layout.sensitive].name
            ),
        ));
    }
    let bound = (1.0 + SLACK) / l as f64;
    let sig = Signatures::new(layout);
    let k = layout.sensitive_columns.len();
    let mut sums = Sums::new(sig.sigs.len(), k, values);
    let w = sums.width();
    // Rows with the same signature and sensitive value are interchangeable (every QI is a known
    // part of some column, so Mondrian splits never separate them): the buckets are built from
    // these cells, each a representative row with a count, so the work after this pass depends
    // on the number of distinct cells, not of rows.
    let s_codes = &layout.attributes[layout.sensitive].codes;
    let mut cell_of: HashMap<(u32, u32), u32> = HashMap::new();
    let mut root: Items = Vec::new();
    let mut cell_of_row: Vec<u32> = Vec::with_capacity(n);
    for (r, (&sg, &sv)) in sig.of_row.iter().zip(s_codes).enumerate() {
        let key = (sg, sv);
        let cell = *cell_of.entry(key).or_insert_with(|| {
            root.push((r as u32, 0));
            root.len() as u32 - 1
        });
        root[cell as usize].1 += 1;
        cell_of_row.push(cell);
    }
    let root_stats = BucketStats::new(layout, &sig, &root);
    for s in root_stats.matching(&sig) {
        let s = s as usize;
        let (den, num) = (&mut sums.den[s], &mut sums.num[s * w..(s + 1) * w]);
        Sums::add_into(&root_stats, layout, &sig.sigs[s], 1.0, den, num, values);
    }
    let root_worst = worst(layout, &sig, &sums, None);
    if diversity == Diversity::Tuple && root_worst.max_p > bound {
        let col = layout.column_names(root_worst.column).join(", ");
        let known: Vec<String> = layout.columns[root_worst.column]
            .iter()
            .filter(|&&a| a != layout.sensitive)
            .map(|&a| {
                let attr = &layout.attributes[a];
                format!(
                    "{} = {}",
                    attr.name, attr.labels[attr.codes[root_worst.row] as usize]
                )
            })
            .collect();
        return Err(PbgError::argument(
            "l",
            format!(
                "no {l}-diverse {} exists with these columns: even as one bucket, the tuple of row {} ({}) is `{}` with probability {:.3} > 1/{l} through column ({col}); at most l = {} is reachable — use a smaller l, other columns (--partition), or coarser values (--generalize)",
                layout.mode.name(),
                root_worst.row + 1,
                if known.is_empty() {
                    "any values".to_string()
                } else {
                    known.join(", ")
                },
                layout.attributes[layout.sensitive].labels[root_worst.value as usize],
                root_worst.max_p,
                root_worst.l()
            ),
        ));
    }
    let mut queue: VecDeque<(Items, BucketStats)> = VecDeque::new();
    queue.push_back((root, root_stats));
    let mut done: Vec<Items> = Vec::new();
    let (mut tried, mut kept) = (0usize, 0usize);
    let mut new_den: Vec<f64> = Vec::new();
    let mut new_num: Vec<f64> = Vec::new();
    while let Some((rows, stats)) = queue.pop_front() {
        // Mondrian: the first QI (by spread) whose median split keeps every tuple l-diverse.
        let mut split = None;
        let affected = match diversity {
            Diversity::Tuple => stats.matching(&sig),
            Diversity::Distinct => Vec::new(),
        };
        for a in split_order(layout, &rows) {
            let Some((left, right)) = median_split(layout, &rows, a) else {
                continue;
            };
            tried += 1;
            if diversity == Diversity::Distinct {
                if distinct_sensitive(layout, &left) >= l as usize
                    && distinct_sensitive(layout, &right) >= l as usize
                {
                    let ls = BucketStats::new(layout, &sig, &left);
                    let rs = BucketStats::new(layout, &sig, &right);
                    split = Some((left, ls, right, rs));
                    break;
                }
                continue;
            }
            let ls = BucketStats::new(layout, &sig, &left);
            let rs = BucketStats::new(layout, &sig, &right);
            new_den.clear();
            new_num.clear();
            let mut ok = true;
            for &s in &affected {
                let s = s as usize;
                let mut den = sums.den[s];
                let start = new_num.len();
                new_num.extend_from_slice(&sums.num[s * w..(s + 1) * w]);
                let num = &mut new_num[start..];
                let sg = &sig.sigs[s];
                Sums::add_into(&stats, layout, sg, -1.0, &mut den, num, values);
                Sums::add_into(&ls, layout, sg, 1.0, &mut den, num, values);
                Sums::add_into(&rs, layout, sg, 1.0, &mut den, num, values);
                new_den.push(den);
                if num.iter().any(|&x| x > bound * den) {
                    ok = false;
                    break;
                }
            }
            if ok {
                split = Some((left, ls, right, rs));
                break;
            }
        }
        match split {
            Some((left, ls, right, rs)) => {
                let updated = if diversity == Diversity::Tuple {
                    affected.len()
                } else {
                    0
                };
                for (i, &s) in affected.iter().take(updated).enumerate() {
                    let s = s as usize;
                    sums.den[s] = new_den[i];
                    sums.num[s * w..(s + 1) * w].copy_from_slice(&new_num[i * w..(i + 1) * w]);
                }
                kept += 1;
                queue.push_back((left, ls));
                queue.push_back((right, rs));
            }
            None => done.push(rows),
        }
    }
    // Rows of each bucket, ascending; buckets ordered by their first row.
    let mut bucket_of_cell = vec![0u32; cell_of.len()];
    for (b, items) in done.iter().enumerate() {
        for &(r, _) in items {
            bucket_of_cell[cell_of_row[r as usize] as usize] = b as u32;
        }
    }
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); done.len()];
    for (r, &cell) in cell_of_row.iter().enumerate() {
        buckets[bucket_of_cell[cell as usize] as usize].push(r as u32);
    }
    buckets.sort_by_key(|b| b.first().copied().unwrap_or(0));
    // The worst disclosure of the result, from scratch over the cells.
    let mut sums = Sums::new(sig.sigs.len(), k, values);
    for items in &done {
        let b = BucketStats::new(layout, &sig, items);
        for s in b.matching(&sig) {
            let s = s as usize;
            let (den, num) = (&mut sums.den[s], &mut sums.num[s * w..(s + 1) * w]);
            Sums::add_into(&b, layout, &sig.sigs[s], 1.0, den, num, values);
        }
    }
    let disclosure = worst(layout, &sig, &sums, None);
    Ok(TuplePartition {
        buckets,
        disclosure,
        splits_tried: tried,
        splits_kept: kept,
    })
}
