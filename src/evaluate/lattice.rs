//! The generalization lattice: nodes are level vectors, one level per QI.

use crate::error::{PbgError, Result};

/// The most nodes a command enumerates one by one (a sweep keeps a few bytes per node).
pub const MAX_ENUMERATED: u128 = 100_000_000;

/// A lattice node: the generalization level of each QI, in profile order.
pub type Node = Vec<u8>;

/// The lattice Π(N_i + 1) over the hierarchy heights.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lattice {
    heights: Vec<u8>,
}

impl Lattice {
    /// The lattice for these heights (one per QI).
    pub fn new(heights: Vec<u8>) -> Self {
        Lattice { heights }
    }

    /// Heights N_i.
    pub fn heights(&self) -> &[u8] {
        &self.heights
    }

    /// Number of nodes Π(N_i + 1), exactly (saturating at 2^128 − 1).
    pub fn size_exact(&self) -> u128 {
        self.heights
            .iter()
            .fold(1u128, |acc, &h| acc.saturating_mul(h as u128 + 1))
    }

    /// Number of nodes Π(N_i + 1) in decimal, exact however large (a lattice of 300 QIs has more
    /// than 2^128 nodes, where [`Self::size_exact`] saturates).
    pub fn size_decimal(&self) -> String {
        // Little-endian limbs of base 10^9.
        let mut limbs: Vec<u64> = vec![1];
        for &h in &self.heights {
            let mut carry = 0u64;
            for limb in limbs.iter_mut() {
                let v = *limb * (h as u64 + 1) + carry;
                *limb = v % 1_000_000_000;
                carry = v / 1_000_000_000;
            }
            while carry > 0 {
                limbs.push(carry % 1_000_000_000);
                carry /= 1_000_000_000;
            }
        }
        let mut out = limbs.last().map_or(String::new(), |l| l.to_string());
        for limb in limbs.iter().rev().skip(1) {
            out.push_str(&format!("{limb:09}"));
        }
        out
    }

    /// Number of nodes Π(N_i + 1) for messages: exact up to 20 digits, else its leading digits
    /// and power of ten (`about 3.52e1431`): a 3000-QI lattice's exact size ran to thousands of
    /// digits in an error.
    pub fn size_text(&self) -> String {
        let exact = self.size_decimal();
        if exact.len() <= 20 {
            return exact;
        }
        format!("about {}.{}e{}", &exact[..1], &exact[1..3], exact.len() - 1)
    }

    /// Number of nodes Π(N_i + 1) as a `usize` (saturating: check [`Self::enumerable`] before
    /// indexing nodes).
    pub fn size(&self) -> usize {
        usize::try_from(self.size_exact()).unwrap_or(usize::MAX)
    }

    /// Fails, giving the exact size, when the lattice is too large to enumerate node by node
    /// (more than [`MAX_ENUMERATED`] nodes): `what` names the command that would.
    pub fn enumerable(&self, what: &str) -> Result<()> {
        if self.size_exact() <= MAX_ENUMERATED {
            return Ok(());
        }
        let size = self.size_text();
        Err(PbgError::argument(
            what,
            format!(
                "the lattice has {size} nodes ({} QIs); enumerating more than {MAX_ENUMERATED} is refused: search it with PBG-EA (`pbg search --algorithm ea`, `pbg_search(.., 'ea')`) or apply a node directly (`--node`)",
                self.heights.len()
            ),
        ))
    }

    /// The bottom node (all zeros).
    pub fn bottom(&self) -> Node {
        vec![0; self.heights.len()]
    }

    /// The top node (all N_i).
    pub fn top(&self) -> Node {
        self.heights.clone()
    }

    /// Mixed-radix index of a node (last QI varies fastest).
    pub fn index(&self, node: &[u8]) -> usize {
        node.iter()
            .zip(&self.heights)
            .fold(0, |acc, (&l, &h)| acc * (h as usize + 1) + l as usize)
    }

    /// The node at a mixed-radix index.
    pub fn node(&self, mut index: usize) -> Node {
        let mut node = vec![0u8; self.heights.len()];
        for (slot, &h) in node.iter_mut().zip(&self.heights).rev() {
            let radix = h as usize + 1;
            *slot = (index % radix) as u8;
            index /= radix;
        }
        node
    }

    /// Whether `node` has the lattice's length and every level in range: what [`Self::check`]
    /// checks, without its message (a pick on 3000 QIs checks thousands of nodes; formatting
    /// each was a fifth of its time).
    pub fn fits(&self, node: &[u8]) -> bool {
        node.len() == self.heights.len() && node.iter().zip(&self.heights).all(|(l, h)| l <= h)
    }

    /// Checks a node's length and levels.
    pub fn check(&self, node: &[u8], names: &[&str]) -> Result<()> {
        if node.len() != self.heights.len() {
            return Err(PbgError::Node {
                node: format_node(node),
                message: format!(
                    "has {} levels but the profile has {} quasi-identifiers ({})",
                    node.len(),
                    self.heights.len(),
                    names.join(", ")
                ),
            });
        }
        for (i, (&l, &h)) in node.iter().zip(&self.heights).enumerate() {
            if l > h {
                return Err(PbgError::Node {
                    node: format_node(node),
                    message: format!(
                        "level {l} of `{}` is out of range: its hierarchy has levels 0..={h}",
                        names.get(i).unwrap_or(&"?")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Parses `L1,L2,...` and checks it against the lattice.
    pub fn parse(&self, text: &str, names: &[&str]) -> Result<Node> {
        let node = parse_levels(text)?;
        self.check(&node, names)?;
        Ok(node)
    }
}

/// Parses `L1,L2,...` into levels (checked against a lattice later).
pub fn parse_levels(text: &str) -> Result<Node> {
    text.split(',')
        .map(|p| {
            p.trim().parse::<u8>().map_err(|_| PbgError::Node {
                node: text.to_string(),
                message: format!("`{}` is not a level (a small whole number)", p.trim()),
            })
        })
        .collect()
}

/// `L1,L2,...` text of a node.
pub fn format_node(node: &[u8]) -> String {
    node.iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(",")
}
