//! Objectives of a search: which index of a node, and in which direction it improves.

use crate::error::{PbgError, Result};
use crate::indices::NodeIndices;

/// An index a search optimizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Objective {
    /// k-anonymity (maximized).
    K,
    /// Distinct l-diversity (maximized).
    L,
    /// Entropy l-diversity (maximized).
    LEntropy,
    /// S_k, the sum of P_equiv (maximized).
    SK,
    /// S_l, the sum of P_sens (maximized).
    SL,
    /// GLM loss (minimized).
    Glm,
    /// CM classification penalty (minimized; needs a class attribute).
    Cm,
}

impl Objective {
    /// Parses one name: `k`, `l`, `l_entropy`, `s_k`, `s_l`, `glm`, `cm`.
    pub fn parse(name: &str) -> Result<Self> {
        Ok(match name.trim().to_ascii_lowercase().as_str() {
            "k" => Objective::K,
            "l" | "l_distinct" => Objective::L,
            "l_entropy" => Objective::LEntropy,
            "s_k" | "sk" => Objective::SK,
            "s_l" | "sl" => Objective::SL,
            "glm" => Objective::Glm,
            "cm" => Objective::Cm,
            other => {
                return Err(PbgError::argument(
                    "--objectives",
                    format!("unknown objective `{other}` (use k, l, l_entropy, s_k, s_l, glm, cm)"),
                ));
            }
        })
    }

    /// Parses a comma separated set of two or more distinct objectives; `cm` needs a class attribute.
    pub fn parse_list(text: &str, has_class: bool) -> Result<Vec<Self>> {
        let list = text
            .split(',')
            .map(Objective::parse)
            .collect::<Result<Vec<_>>>()?;
        let err = |m: String| Err(PbgError::argument("--objectives", m));
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
        if list.contains(&Objective::Cm) && !has_class {
            return err(
                "`cm` needs a class attribute in the profile (class = ... or --class)".into(),
            );
        }
        Ok(list)
    }

    /// The name used on the command line and as output key.
    pub fn name(&self) -> &'static str {
        match self {
            Objective::K => "k",
            Objective::L => "l",
            Objective::LEntropy => "l_entropy",
            Objective::SK => "s_k",
            Objective::SL => "s_l",
            Objective::Glm => "glm",
            Objective::Cm => "cm",
        }
    }

    /// Whether the objective involves the sensitive attribute (l, entropy l, S_l).
    pub fn uses_sensitive(&self) -> bool {
        matches!(self, Objective::L | Objective::LEntropy | Objective::SL)
    }

    /// Whether larger values are better.
    pub fn maximize(&self) -> bool {
        !matches!(self, Objective::Glm | Objective::Cm)
    }

    /// The objective's value for a node (`cm` is 0 without a class attribute; `parse_list` rejects that).
    pub fn value(&self, ix: &NodeIndices) -> f64 {
        match self {
            Objective::K => ix.k as f64,
            Objective::L => ix.l_distinct as f64,
            Objective::LEntropy => ix.l_entropy,
            Objective::SK => ix.s_k as f64,
            Objective::SL => ix.s_l as f64,
            Objective::Glm => ix.glm,
            Objective::Cm => ix.cm.unwrap_or(0.0),
        }
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
