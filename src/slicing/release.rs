//! Sliced releases (SPEC §6): a `bucket` column, then each column's attributes as
//! `c{i}.{attribute}`; inside each bucket every column's entries are permuted together with a
//! seeded RNG (bucketization keeps the QIs in place and permutes the sensitive values).

use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Schema, UInt32Type};
use arrow::record_batch::RecordBatch;
use rand::SeedableRng;
use rand::rngs::ChaCha8Rng;
use rand::seq::SliceRandom;

use crate::error::Result;

use super::table::{SliceLayout, SliceMode};

/// SplitMix64, to derive independent seeds per bucket and column.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// For every column, the source row of each release row: buckets in order, and inside a bucket
/// the column's own seeded permutation of the bucket's rows.
pub fn permutations(layout: &SliceLayout, buckets: &[Vec<u32>], seed: u64) -> Vec<Vec<u32>> {
    let n: usize = buckets.iter().map(Vec::len).sum();
    let mut out = vec![Vec::with_capacity(n); layout.columns.len()];
    for (b, rows) in buckets.iter().enumerate() {
        for (c, col) in out.iter_mut().enumerate() {
            let mut perm = rows.clone();
            let keep =
                layout.mode == SliceMode::Bucketization && !layout.sensitive_columns.contains(&c);
            if !keep {
                let mut rng =
                    ChaCha8Rng::seed_from_u64(mix(seed ^ mix((b as u64) << 16 | c as u64)));
                perm.shuffle(&mut rng);
            }
            col.extend(perm);
        }
    }
    out
}

/// The release as one record batch.
pub fn release_batch(layout: &SliceLayout, buckets: &[Vec<u32>], seed: u64) -> Result<RecordBatch> {
    let perms = permutations(layout, buckets, seed);
    let mut fields = vec![Field::new("bucket", DataType::UInt32, false)];
    let bucket_ids: UInt32Array = buckets
        .iter()
        .enumerate()
        .flat_map(|(b, rows)| std::iter::repeat_n(b as u32, rows.len()))
        .collect();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(bucket_ids)];
    for (c, attrs) in layout.columns.iter().enumerate() {
        for &a in attrs {
            let attr = &layout.attributes[a];
            // Dictionary-encoded: the codes of the permuted rows into the attribute's labels.
            fields.push(Field::new(
                format!("c{}.{}", c + 1, attr.name),
                DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8)),
                false,
            ));
            let keys: UInt32Array = perms[c].iter().map(|&r| attr.codes[r as usize]).collect();
            let values = Arc::new(StringArray::from_iter_values(attr.labels.iter()));
            columns.push(Arc::new(DictionaryArray::<UInt32Type>::try_new(
                keys, values,
            )?));
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}
