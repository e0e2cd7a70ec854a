//! Requirements on a node's indices (`k>=5,l>=3`): parsed once, judged on a node's indices or,
//! by the requirement suppression rule, on each equivalence class.

use crate::error::{PbgError, Result};
use crate::indices::Index as Measure;

/// A comparison operator of a requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>=`
    Ge,
    /// `>`
    Gt,
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `=`
    Eq,
}

/// One requirement, such as `k>=5`.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The index.
    pub measure: Measure,
    /// The comparison.
    pub op: Op,
    /// The bound.
    pub value: f64,
}

impl Requirement {
    /// Parses a comma separated list such as `k>=5,l>=3,suppressed<=300`.
    pub fn parse_list(text: &str) -> Result<Vec<Self>> {
        let arg = "require";
        text.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|item| {
                let item = item.trim();
                let (pos, op, len) = [
                    (">=", Op::Ge),
                    ("<=", Op::Le),
                    (">", Op::Gt),
                    ("<", Op::Lt),
                    ("=", Op::Eq),
                ]
                .iter()
                .find_map(|(s, op)| item.find(s).map(|p| (p, *op, s.len())))
                .ok_or_else(|| {
                    PbgError::argument(
                        arg,
                        format!("`{item}`: write INDEX>=VALUE (or <=, >, <, =), e.g. k>=5"),
                    )
                })?;
                let measure = Measure::parse_as(&item[..pos], arg)?;
                let value: f64 = item[pos + len..]
                    .trim()
                    .parse()
                    .ok()
                    .filter(|v: &f64| v.is_finite())
                    .ok_or_else(|| {
                        PbgError::argument(
                            arg,
                            format!(
                                "`{item}`: `{}` is not a finite number",
                                item[pos + len..].trim()
                            ),
                        )
                    })?;
                Ok(Requirement { measure, op, value })
            })
            .collect()
    }

    /// The least class size a node meeting the requirement can release, for a lower bound (or an
    /// equality) on k: `k >= 4.5` and `k > 4` need 5; None for other requirements.
    pub fn least_class_size(&self) -> Option<u64> {
        (self.measure == Measure::K && matches!(self.op, Op::Ge | Op::Gt | Op::Eq)).then(|| {
            match self.op {
                // Float-to-integer casts saturate (NaN to 0), so absurd bounds stay bounds.
                Op::Gt => (self.value.floor() as u64).saturating_add(1),
                _ => self.value.ceil().max(1.0) as u64,
            }
        })
    }

    /// Whether it is a privacy requirement that some release can fail: a lower bound above 1 on
    /// k or an l (every class has at least one tuple and one value), an upper bound below 1 on a
    /// t distance, a risk or the share of uniques (none exceeds 1), any upper bound on β-likeness
    /// or δ-disclosure (they have no such ceiling; a loose one is the user's policy). An
    /// equality counts as the bound it implies.
    /// `k>=-5`, `k>=1`, `t<=1` or `suppressed<=300` hold for the data as it is: a pick under them
    /// alone would release it unchanged.
    pub fn protects(&self) -> bool {
        let below_one = |op: Op, v: f64| match op {
            Op::Le | Op::Eq => v < 1.0,
            Op::Lt => v <= 1.0,
            Op::Ge | Op::Gt => false,
        };
        match self.measure {
            Measure::K | Measure::L | Measure::LEntropy | Measure::LProbabilistic => {
                (self.op == Op::Ge && self.value > 1.0)
                    || (self.op == Op::Gt && self.value >= 1.0)
                    || (self.op == Op::Eq && self.value > 1.0)
            }
            Measure::TEqual
            | Measure::TOrdered
            | Measure::THierarchical
            | Measure::RiskProsecutor
            | Measure::RiskAverage
            | Measure::Uniques => below_one(self.op, self.value),
            Measure::Beta | Measure::DeltaDisclosure => {
                matches!(self.op, Op::Le | Op::Lt | Op::Eq)
            }
            _ => false,
        }
    }

    /// Whether a value meets the requirement.
    pub fn holds(&self, v: f64) -> bool {
        match self.op {
            Op::Ge => v >= self.value,
            Op::Gt => v > self.value,
            Op::Le => v <= self.value,
            Op::Lt => v < self.value,
            Op::Eq => v == self.value,
        }
    }

    /// Whether every node coarser than a node meeting the requirement meets it too, under the
    /// suppression `rule` with limit `eta` ([`crate::indices::Monotone`], SPEC §7): `k` lower
    /// bounds always; distinct and entropy `l` lower bounds, t-closeness and risk upper bounds
    /// only when nothing can be suppressed; β-likeness, δ-disclosure and losses never.
    ///
    /// SPEC §7 counts distinct `l` as monotone under any limit; that holds when the rule
    /// suppresses the classes that fail it and nothing else that could grow: the requirement
    /// rule judging classes only by lower bounds on k and l and upper bounds on the prosecutor
    /// risk (a class merged from one that meets them meets them, so a coarser node's violators
    /// are among the finer node's). Under the DBSEC rule it does not: that rule never suppresses
    /// the largest class and may suppress classes that meet `l`, so a coarser node can release a
    /// merged class with too few values (the property test against enumeration found such a
    /// table).
    pub fn is_monotone(&self, rule: &crate::suppression::SuppressionRule, eta: u64) -> bool {
        use crate::indices::Monotone;
        let info = self.measure.info();
        let good_direction = if info.higher_is_better {
            matches!(self.op, Op::Ge | Op::Gt)
        } else {
            matches!(self.op, Op::Le | Op::Lt)
        };
        let classes = rule.class_requirements();
        let merge_monotone = |r: &Requirement| {
            matches!(r.measure, Measure::L | Measure::RiskProsecutor)
                && crate::suppression::is_class_requirement(r)
        };
        let judged_by_class = classes.contains(self) && classes.iter().all(merge_monotone);
        good_direction
            && (judged_by_class
                || match info.monotone {
                    Monotone::Always => true,
                    Monotone::WithoutSuppression => eta == 0,
                    Monotone::Never => false,
                })
    }

    /// The requirement as text.
    pub fn text(&self) -> String {
        let op = match self.op {
            Op::Ge => ">=",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Eq => "=",
        };
        format!("{}{op}{}", self.measure.name(), self.value)
    }
}
