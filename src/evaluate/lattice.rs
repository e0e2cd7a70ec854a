//! The generalization lattice: nodes are level vectors, one level per QI.

use crate::error::{PbgError, Result};

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

    /// Number of nodes Π(N_i + 1).
    pub fn size(&self) -> usize {
        self.heights.iter().map(|&h| h as usize + 1).product()
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

    /// Checks a node's length and levels.
    pub fn check(&self, node: &[u8], names: &[&str]) -> Result<()> {
        let text = format_node(node);
        if node.len() != self.heights.len() {
            return Err(PbgError::Node {
                node: text,
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
                    node: text,
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
