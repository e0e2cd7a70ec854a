//! Objectives of a search: which index of a node, and in which direction it improves.

use crate::error::{PbgError, Result};
use crate::indices::NodeIndices;

/// An index a search optimizes: one of [`crate::indices::INDICES`] marked as an objective.
pub use crate::indices::Index as Objective;

use crate::indices::INDICES;

impl Objective {
    /// Parses one objective name (an index usable as an objective).
    pub fn parse_objective(name: &str) -> Result<Self> {
        let index = Objective::parse_as(name, "objectives")?;
        if !index.info().objective {
            return Err(PbgError::argument(
                "objectives",
                format!(
                    "`{}` is not a search objective (use {})",
                    name.trim(),
                    INDICES
                        .iter()
                        .filter(|i| i.objective)
                        .map(|i| i.index.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        Ok(index)
    }

    /// Parses a comma separated set of two or more distinct objectives, each defined for a
    /// dataset with `present` (`cm` needs a class attribute, `t_hierarchical` a sensitive
    /// hierarchy).
    pub fn parse_list(text: &str, present: crate::indices::Present) -> Result<Vec<Self>> {
        let list = text
            .split(',')
            .map(Objective::parse_objective)
            .collect::<Result<Vec<_>>>()?;
        let err = |m: String| Err(PbgError::argument("objectives", m));
        if list.len() < 2 {
            return err(format!(
                "`{text}`: give at least two objectives, e.g. k,glm"
            ));
        }
        for (i, o) in list.iter().enumerate() {
            if list[..i].contains(o) {
                return err(format!("`{}` is listed twice", o.name()));
            }
        }
        for o in &list {
            o.check_defined(present)?;
        }
        Ok(list)
    }

    /// The objective's value for a node.
    pub fn value(&self, ix: &NodeIndices) -> f64 {
        self.of(ix)
    }

    /// `value` with its sign flipped for minimized objectives, so that larger is always better.
    pub fn oriented(&self, value: f64) -> f64 {
        if self.maximize() { value } else { -value }
    }
}

/// The raw values of `objectives` for a node.
pub fn values(objectives: &[Objective], ix: &NodeIndices) -> Vec<f64> {
    objectives.iter().map(|o| o.value(ix)).collect()
}
