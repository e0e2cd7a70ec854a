//! Numeric interval hierarchies built over the values found in the data.

use super::{Hierarchy, LevelCodes, LossModel};
use crate::error::{PbgError, Result};

/// Formats a bound without a trailing `.0` for whole numbers.
fn num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

pub(super) fn build(
    column: &str,
    values: &[(String, usize)],
    widths: &[f64],
    origin: f64,
    cuts: &[Vec<f64>],
) -> Result<Hierarchy> {
    let source = "interval hierarchy";
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: source.to_string(),
        message,
    };
    if widths.is_empty() == cuts.is_empty() {
        return Err(err(
            "give either `widths` or `cuts` (one list per level), not both or neither".into(),
        ));
    }
    if let Some(w) = widths.iter().find(|w| !(w.is_finite() && **w > 0.0)) {
        return Err(err(format!("width {w} is not a positive number")));
    }
    if !origin.is_finite() {
        return Err(err(format!("origin {origin} is not a finite number")));
    }
    for (l, c) in cuts.iter().enumerate() {
        if let Some(x) = c.iter().find(|x| !x.is_finite()) {
            return Err(err(format!(
                "cut point {x} of level {} is not a finite number",
                l + 1
            )));
        }
        if let Some(i) = (1..c.len()).find(|&i| c[i] <= c[i - 1]) {
            return Err(err(format!(
                "the cut points of level {} must increase: {} comes after {}",
                l + 1,
                num(c[i]),
                num(c[i - 1])
            )));
        }
    }
    let mut leaves: Vec<(f64, &str, usize)> = Vec::with_capacity(values.len());
    for (text, row) in values {
        let v: f64 = text
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| PbgError::ValueNotInHierarchy {
                column: column.to_string(),
                value: text.clone(),
                row: *row,
                source_name: "interval hierarchy: the value is not a finite number".into(),
            })?;
        leaves.push((v, text, *row));
    }
    // Bins of widths found in integers when every value, the origin and the widths are short
    // decimals (labels such as `[0.3,0.4)`, not `[0.30000000000000004,0.4)`), leaves then in
    // their exact order; else in floating point.
    let mut exact = Scaled::of(&leaves, widths, origin);
    match &mut exact {
        Some(x) => {
            let mut keyed: Vec<(i128, (f64, &str, usize))> =
                x.values.iter().copied().zip(leaves).collect();
            keyed.sort_by_key(|(k, _)| *k);
            x.values = keyed.iter().map(|(k, _)| *k).collect();
            leaves = keyed.into_iter().map(|(_, leaf)| leaf).collect();
        }
        None => leaves.sort_by(|a, b| a.0.total_cmp(&b.0)),
    }
    let (min, max) = (leaves[0].0, leaves[leaves.len() - 1].0);
    let n_levels = widths.len().max(cuts.len());
    // Per level above the leaves, each leaf's bin (codes in order of appearance) and each bin's
    // label and bounds; the top level last.
    let mut above: Vec<LevelCodes> = vec![LevelCodes::default(); n_levels + 1];
    let mut bounds: Vec<Vec<(f64, f64)>> = vec![Vec::new(); n_levels + 2];
    let mut names = Vec::with_capacity(leaves.len());
    // Leaves ascend, so a level's bin changes only between neighbours: each bin's label is
    // formatted, and its bounds recorded, once.
    let mut last: Vec<Option<f64>> = vec![None; n_levels];
    // Each level's current label read back as exact bounds, once per label.
    let mut exact_bounds: Vec<Bounds> = vec![(None, None); n_levels];
    let mut last_exact: Vec<Option<i128>> = vec![None; n_levels];
    for (i, &(v, text, row)) in leaves.iter().enumerate() {
        names.push(text.to_string());
        // The value as written, exactly: the bins are found in floating point, where
        // `9.99999999999999999` is 10 and 2^53 + 1 is 2^53; each label is checked to hold it.
        let written = Decimal::parse(text.trim());
        bounds[0].push((v, v));
        for l in 0..n_levels {
            // The bin's lower bound identifies it (cut levels: the cut below, or -inf).
            let bin = exact.as_ref().map(|x| (x, x.bin(i, l)));
            let key = match bin {
                Some((x, b)) => x.float(b),
                None if !widths.is_empty() => {
                    origin + ((v - origin) / widths[l]).floor() * widths[l]
                }
                None => cuts[l]
                    .iter()
                    .rposition(|&x| v >= x)
                    .map_or(f64::NEG_INFINITY, |i| cuts[l][i]),
            };
            let level = &mut above[l];
            let new_bin = match bin {
                Some((_, b)) => last_exact[l] != Some(b),
                None => last[l] != Some(key),
            };
            if new_bin {
                let (label, lo, hi) = if let Some((x, b)) = bin {
                    let w = x.widths[l];
                    (
                        format!("[{},{})", x.text(b), x.text(b + w)),
                        key,
                        x.float(b + w),
                    )
                } else if !widths.is_empty() {
                    let w = widths[l];
                    (format!("[{},{})", num(key), num(key + w)), key, key + w)
                } else {
                    let c = &cuts[l];
                    match c.iter().position(|&x| v < x) {
                        Some(0) => (format!("<{}", num(c[0])), min, c[0]),
                        Some(i) => (format!("[{},{})", num(c[i - 1]), num(c[i])), c[i - 1], c[i]),
                        None if c.is_empty() => ("*".to_string(), min, max),
                        None => (format!(">={}", num(c[c.len() - 1])), c[c.len() - 1], max),
                    }
                };
                exact_bounds[l] = Decimal::bounds(&label);
                level.labels.push(label);
                bounds[l + 1].push((lo, hi));
                last[l] = Some(key);
                last_exact[l] = bin.map(|(_, b)| b);
            }
            if !written.as_ref().is_some_and(|x| x.within(&exact_bounds[l])) {
                let label = &level.labels[level.labels.len() - 1];
                return Err(PbgError::ValueNotInHierarchy {
                    column: column.to_string(),
                    value: text.to_string(),
                    row,
                    source_name: format!(
                        "interval hierarchy: the value is not inside its interval `{label}` as written (pbg finds intervals in 64-bit floating point, which reads it as {}); round the value, or use wider intervals for values this large",
                        num(v)
                    ),
                });
            }
            level.group_of_leaf.push(level.labels.len() as u32 - 1);
        }
    }
    let top = &mut above[n_levels];
    top.labels.push("*".to_string());
    top.group_of_leaf = vec![0; leaves.len()];
    bounds[n_levels + 1].push((min, max));
    Hierarchy::from_levels(column, source, names, above, LossModel::Range(&bounds))
}

/// Decimals a number may have for its interval bins to be found in integers.
const MAX_SCALE: i64 = 18;

/// Every value, the origin and the widths of an interval hierarchy as integers at one scale
/// (10^decimals), when each is a decimal of at most [`MAX_SCALE`] decimals and all fit.
struct Scaled {
    /// The values (in the order of the leaves), times `scale`.
    values: Vec<i128>,
    /// The origin, times `scale`.
    origin: i128,
    /// Each level's width, times `scale`.
    widths: Vec<i128>,
    /// 10^decimals.
    scale: i128,
    decimals: usize,
}

impl Scaled {
    fn of(leaves: &[(f64, &str, usize)], widths: &[f64], origin: f64) -> Option<Scaled> {
        if widths.is_empty() {
            return None;
        }
        // Widths and the origin as their shortest decimal text (what the profile wrote).
        let given: Vec<Decimal> = widths
            .iter()
            .chain([&origin])
            .map(|w| Decimal::parse(&format!("{w}")))
            .collect::<Option<_>>()?;
        let values: Vec<Decimal> = leaves
            .iter()
            .map(|(_, text, _)| Decimal::parse(text.trim()))
            .collect::<Option<_>>()?;
        let decimals = given
            .iter()
            .chain(&values)
            .map(|d| (-d.exponent).max(0))
            .max()?;
        if decimals > MAX_SCALE {
            return None;
        }
        let scaled = |d: &Decimal| -> Option<i128> {
            let mut m: i128 = 0;
            for &digit in &d.digits {
                m = m.checked_mul(10)?.checked_add(digit as i128)?;
            }
            let m =
                m.checked_mul(10i128.checked_pow(u32::try_from(d.exponent + decimals).ok()?)?)?;
            // Room for a bin's bounds (a value plus a width) and their differences.
            (m.abs() < i128::MAX / 8).then_some(if d.negative { -m } else { m })
        };
        let mut given: Vec<i128> = given.iter().map(scaled).collect::<Option<_>>()?;
        let origin = given.pop()?;
        Some(Scaled {
            values: values.iter().map(scaled).collect::<Option<_>>()?,
            origin,
            widths: given,
            scale: 10i128.pow(decimals as u32),
            decimals: decimals as usize,
        })
    }

    /// The lower bound of the bin of level `l` (0-based, above the leaves) holding value `i`.
    fn bin(&self, i: usize, l: usize) -> i128 {
        let w = self.widths[l];
        self.origin + (self.values[i] - self.origin).div_euclid(w) * w
    }

    /// `x` (times `scale`) as a float.
    fn float(&self, x: i128) -> f64 {
        x as f64 / self.scale as f64
    }

    /// `x` (times `scale`) as decimal text, without trailing zeros.
    fn text(&self, x: i128) -> String {
        let digits = x.unsigned_abs().to_string();
        let digits = format!("{digits:0>width$}", width = self.decimals + 1);
        let (whole, fraction) = digits.split_at(digits.len() - self.decimals);
        let fraction = fraction.trim_end_matches('0');
        let sign = if x < 0 { "-" } else { "" };
        match fraction.is_empty() {
            true => format!("{sign}{whole}"),
            false => format!("{sign}{whole}.{fraction}"),
        }
    }
}

/// The exact lower (inclusive) and upper (exclusive) bounds of an interval label.
type Bounds = (Option<Decimal>, Option<Decimal>);

/// A finite decimal number read exactly from its text: `digits` (no leading or trailing zeros;
/// none for zero) times ten to `exponent`, negative or not.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exponent: i64,
}

impl Decimal {
    /// `[+-]digits[.digits][e[+-]digits]` (or `.digits`), as Rust reads numbers; else `None`.
    fn parse(text: &str) -> Option<Decimal> {
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(i) => (&rest[..i], rest[i + 1..].parse::<i64>().ok()?),
            None => (rest, 0),
        };
        let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole
                .bytes()
                .chain(fraction.bytes())
                .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut digits: Vec<u8> = whole
            .bytes()
            .chain(fraction.bytes())
            .map(|b| b - b'0')
            .collect();
        let mut exponent = exponent.checked_sub(fraction.len() as i64)?;
        while digits.last() == Some(&0) {
            digits.pop();
            exponent += 1;
        }
        let leading = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..leading);
        Some(Decimal {
            negative: negative && !digits.is_empty(),
            digits,
            exponent,
        })
    }

    /// Compares two decimals exactly.
    fn cmp(&self, other: &Decimal) -> std::cmp::Ordering {
        use std::cmp::Ordering;
        let sign = |d: &Decimal| match (d.digits.is_empty(), d.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        };
        match sign(self).cmp(&sign(other)) {
            Ordering::Equal if sign(self) == 0 => return Ordering::Equal,
            Ordering::Equal => {}
            unequal => return unequal,
        }
        // Magnitudes: the place of the first digit, then the digits.
        let top = |d: &Decimal| d.digits.len() as i64 + d.exponent;
        let magnitude = top(self).cmp(&top(other)).then_with(|| {
            let n = self.digits.len().max(other.digits.len());
            let digit = |d: &Decimal, i: usize| d.digits.get(i).copied().unwrap_or(0);
            (0..n)
                .map(|i| digit(self, i).cmp(&digit(other, i)))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        });
        if self.negative {
            magnitude.reverse()
        } else {
            magnitude
        }
    }

    /// The exact bounds of an interval label as pbg writes them (`[a,b)`, `<b`, `>=a`, `*`):
    /// the lowest value in it and the first above it, each `None` where the label has none.
    /// A label of any other form holds nothing (an empty interval at zero).
    fn bounds(label: &str) -> Bounds {
        let zero = || Decimal::parse("0");
        if label == "*" {
            return (None, None);
        }
        if let Some(b) = label.strip_prefix('<') {
            return Decimal::parse(b).map_or((zero(), zero()), |b| (None, Some(b)));
        }
        if let Some(a) = label.strip_prefix(">=") {
            return Decimal::parse(a).map_or((zero(), zero()), |a| (Some(a), None));
        }
        label
            .strip_prefix('[')
            .and_then(|l| l.strip_suffix(')'))
            .and_then(|l| l.split_once(','))
            .and_then(|(a, b)| Some((Some(Decimal::parse(a)?), Some(Decimal::parse(b)?))))
            .unwrap_or((zero(), zero()))
    }

    /// Whether the number lies inside `bounds` ([`Decimal::bounds`]).
    fn within(&self, bounds: &Bounds) -> bool {
        use std::cmp::Ordering::Less;
        bounds.0.as_ref().is_none_or(|a| self.cmp(a) != Less)
            && bounds.1.as_ref().is_none_or(|b| self.cmp(b) == Less)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Values read exactly land inside their labels; values that floating point moves across a
    /// bound (just below it, or integers past 2^53 whose interval of width 1 rounds empty) do
    /// not, and are refused.
    #[test]
    fn labels_hold_their_values_as_written() {
        let build1 = |values: &[&str], widths: &[f64]| {
            let values: Vec<(String, usize)> = values
                .iter()
                .enumerate()
                .map(|(i, v)| (v.to_string(), i + 1))
                .collect();
            build("v", &values, widths, 0.0, &[])
        };
        assert!(
            build1(
                &["0.1", "9.5", "10", "-0.5", "1e1", "+3", ".5"],
                &[10.0, 100.0]
            )
            .is_ok()
        );
        // Values of up to 18 decimals are binned exactly: floating point read these as 10 and
        // as 2^53, across a bound.
        let h = build1(&["5", "9.99999999999999999"], &[10.0, 100.0]).unwrap();
        assert_eq!(h.levels[1].labels, ["[0,10)"]);
        let h = build1(&["9007199254740992", "9007199254740993"], &[1.0]).unwrap();
        assert_eq!(
            h.levels[1].labels,
            [
                "[9007199254740992,9007199254740993)",
                "[9007199254740993,9007199254740994)"
            ]
        );
        // Longer decimals are binned in floating point, and refused where it moves them.
        for (values, widths, bad) in [
            (
                &["5", "9.9999999999999999999"][..],
                &[10.0, 100.0][..],
                "9.9999999999999999999",
            ),
            (&["-1e-400", "3"][..], &[10.0][..], "-1e-400"),
        ] {
            let e = build1(values, widths).unwrap_err().to_string();
            assert!(
                e.contains(bad) && e.contains("not inside its interval"),
                "{e}"
            );
        }
    }

    /// Widths and origins of a few decimals give labels without binary noise (`[0.3,0.4)`,
    /// not `[0.30000000000000004,0.4)`), each holding its values, in order.
    #[test]
    fn decimal_widths_give_exact_labels() {
        let values: Vec<(String, usize)> = ["0.35", "0.3", "-0.05", "0.7", "0.30", "1.15"]
            .iter()
            .enumerate()
            .map(|(i, v)| (v.to_string(), i + 1))
            .collect();
        let h = build("v", &values, &[0.1, 0.5], 0.0, &[]).unwrap();
        assert_eq!(
            h.levels[1].labels,
            ["[-0.1,0)", "[0.3,0.4)", "[0.7,0.8)", "[1.1,1.2)"]
        );
        assert_eq!(
            h.levels[2].labels,
            ["[-0.5,0)", "[0,0.5)", "[0.5,1)", "[1,1.5)"]
        );
        let h = build("v", &values, &[0.25], 0.05, &[]).unwrap();
        assert_eq!(
            h.levels[1].labels,
            ["[-0.2,0.05)", "[0.3,0.55)", "[0.55,0.8)", "[1.05,1.3)"]
        );
    }

    proptest! {
        /// Exact comparison agrees with the comparison of 64-bit floats wherever floats are
        /// exact (small integers scaled by powers of ten up to 10^-3).
        #[test]
        fn decimal_order_is_the_numbers_order(a in -5000i64..5000, b in -5000i64..5000, sa in 0u32..4, sb in 0u32..4) {
            let text = |v: i64, s: u32| format!("{}", v as f64 / 10f64.powi(s as i32));
            let (x, y) = (Decimal::parse(&text(a, sa)).unwrap(), Decimal::parse(&text(b, sb)).unwrap());
            let (fx, fy) = (a as f64 / 10f64.powi(sa as i32), b as f64 / 10f64.powi(sb as i32));
            prop_assert_eq!(x.cmp(&y), fx.partial_cmp(&fy).unwrap());
        }
    }
}
