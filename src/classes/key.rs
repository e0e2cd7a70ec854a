//! Packing of generalized codes into one integer class key (bit fields, one per QI).

use crate::encode::packed::bits_for;
use crate::error::{PbgError, Result};

/// Bit layout of class keys: QI `d` occupies `bits[d]` bits at `shifts[d]`; a cell key appends the
/// value code below the class key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLayout {
    shifts: Vec<u32>,
    masks: Vec<u64>,
}

impl KeyLayout {
    /// A layout for QIs with these leaf counts; cell keys must also hold `value_counts` (the
    /// sensitive and class domains), so the whole must fit 63 bits.
    pub fn new(names: &[&str], leaf_counts: &[usize], value_counts: &[usize]) -> Result<Self> {
        let mut shifts = Vec::with_capacity(leaf_counts.len());
        let mut masks = Vec::with_capacity(leaf_counts.len());
        let mut shift = 0u32;
        // The last QI takes the low bits so that sorted keys follow the node's natural order.
        for &n in leaf_counts.iter().rev() {
            let b = bits_for(n);
            shifts.push(shift);
            masks.push(if b == 0 { 0 } else { (1u64 << b) - 1 });
            shift += b;
        }
        shifts.reverse();
        masks.reverse();
        let value_bits = value_counts.iter().map(|&n| bits_for(n)).max().unwrap_or(0);
        let total = shift + value_bits;
        if total > 63 {
            let detail = names
                .iter()
                .zip(leaf_counts)
                .map(|(n, &c)| format!("{n}: {} bits for {c} leaves", bits_for(c)))
                .chain(std::iter::once(format!("values: {value_bits} bits")))
                .collect::<Vec<_>>()
                .join(", ");
            return Err(PbgError::KeyTooLarge {
                bits: total,
                detail,
            });
        }
        Ok(KeyLayout { shifts, masks })
    }

    /// Bit offset of QI `d`.
    #[inline]
    pub fn shift(&self, d: usize) -> u32 {
        self.shifts[d]
    }

    /// The code of QI `d` in a class key.
    #[inline]
    pub fn code(&self, class_key: u64, d: usize) -> u32 {
        ((class_key >> self.shifts[d]) & self.masks[d]) as u32
    }

    /// The (unshifted) bit mask of QI `d`'s field.
    #[inline]
    pub fn mask(&self, d: usize) -> u64 {
        self.masks[d]
    }
}

/// How the class keys of one node's cell tables name its equivalence classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKeys {
    /// The node's group codes packed into bit fields: keys order classes by their codes, QI by QI.
    Packed(KeyLayout),
    /// A class's key is its first row (see the `classes::wide` module): any number of QIs, any widths.
    FirstRow,
}

impl NodeKeys {
    /// The code of QI `d` at `node` in the class named `class_key`.
    #[inline]
    pub fn code(
        &self,
        qis: &[crate::encode::EncodedQi],
        node: &[u8],
        class_key: u64,
        d: usize,
    ) -> u32 {
        match self {
            NodeKeys::Packed(layout) => layout.code(class_key, d),
            NodeKeys::FirstRow => {
                let leaf = qis[d].codes.value(class_key as usize);
                match node[d] {
                    0 => leaf,
                    l => qis[d].hierarchy.level(l).group_of_leaf[leaf as usize],
                }
            }
        }
    }
}

/// The group counts of every QI's levels and the value domains: what a node's layout needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WideKeys {
    names: Vec<String>,
    /// `groups[d][l]`: groups of QI `d` at level `l`.
    groups: Vec<Vec<usize>>,
    value_counts: Vec<usize>,
    /// Bits a node's packed key may take (with the value bits); 0 = never pack.
    max_bits: u32,
}

/// How the class keys of a dataset's nodes name their equivalence classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClassKeys {
    /// One layout for every node, over the QIs' leaves (the fast path, when the leaves and the
    /// value codes fit 63 bits).
    Packed(KeyLayout),
    /// The wide path: each node packs its own group codes when they fit (coarse nodes), and
    /// names its classes by their first rows otherwise. A node coarser than one that packs packs
    /// too (group counts only shrink upwards).
    Wide(WideKeys),
}

impl ClassKeys {
    /// Packed keys when `leaf_counts` and `value_counts` fit 63 bits, else the wide path over
    /// the QIs' level group counts `groups[d][l]`.
    pub fn new(names: &[&str], groups: Vec<Vec<usize>>, value_counts: &[usize]) -> Self {
        let leaves: Vec<usize> = groups.iter().map(|g| g[0]).collect();
        match KeyLayout::new(names, &leaves, value_counts) {
            Ok(layout) => ClassKeys::Packed(layout),
            Err(_) => Self::wide(names, groups, value_counts, 63),
        }
    }

    /// The wide path with nodes packed only within `max_bits` (0: first rows for every node),
    /// whatever the widths: the cross-check of both paths.
    pub fn wide(
        names: &[&str],
        groups: Vec<Vec<usize>>,
        value_counts: &[usize],
        max_bits: u32,
    ) -> Self {
        ClassKeys::Wide(WideKeys {
            names: names.iter().map(|n| n.to_string()).collect(),
            groups,
            value_counts: value_counts.to_vec(),
            max_bits: max_bits.min(63),
        })
    }

    /// The keys of `node`'s tables.
    pub fn at(&self, node: &[u8]) -> NodeKeys {
        match self {
            ClassKeys::Packed(layout) => NodeKeys::Packed(layout.clone()),
            ClassKeys::Wide(w) => {
                let counts: Vec<usize> = w
                    .groups
                    .iter()
                    .zip(node)
                    .map(|(g, &l)| g[l as usize])
                    .collect();
                let value_bits = w
                    .value_counts
                    .iter()
                    .map(|&n| bits_for(n))
                    .max()
                    .unwrap_or(0);
                let class_bits: u32 = counts.iter().map(|&n| bits_for(n)).sum();
                if class_bits + value_bits > w.max_bits {
                    return NodeKeys::FirstRow;
                }
                let names: Vec<&str> = w.names.iter().map(String::as_str).collect();
                match KeyLayout::new(&names, &counts, &w.value_counts) {
                    Ok(layout) => NodeKeys::Packed(layout),
                    Err(_) => NodeKeys::FirstRow,
                }
            }
        }
    }

    /// The node nearest above `node` whose keys pack, raising one QI a level at a time where it
    /// frees the most bits (ties: the first QI): `node` itself when it packs, None when even
    /// the top does not.
    pub fn packed_cover(&self, node: &[u8]) -> Option<Vec<u8>> {
        let mut at = node.to_vec();
        let ClassKeys::Wide(w) = self else {
            return Some(at);
        };
        let bits = |d: usize, l: u8| bits_for(w.groups[d][l as usize]);
        loop {
            if matches!(self.at(&at), NodeKeys::Packed(_)) {
                return Some(at);
            }
            let (d, _) = (0..at.len())
                .filter(|&d| (at[d] as usize) + 1 < w.groups[d].len())
                .map(|d| (d, bits(d, at[d]).saturating_sub(bits(d, at[d] + 1))))
                .max_by_key(|&(d, freed)| (freed, std::cmp::Reverse(d)))?;
            at[d] += 1;
        }
    }

    /// The most bits a node's packed key may take.
    pub fn max_bits(&self) -> u32 {
        match self {
            ClassKeys::Packed(_) => 63,
            ClassKeys::Wide(w) => w.max_bits,
        }
    }

    /// Whether this is the wide path.
    pub fn is_wide(&self) -> bool {
        matches!(self, ClassKeys::Wide(_))
    }
}
