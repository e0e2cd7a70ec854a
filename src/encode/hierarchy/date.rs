//! Date hierarchies over `YYYY-MM-DD` text forms (Arrow dates and timestamps print so).

use super::Hierarchy;
use crate::error::{PbgError, Result};

/// Whether `v` is a date `YYYY-MM-DD` — a real day (month 01–12, a day its month has, 29
/// February in leap years only) — alone or followed by a time as Arrow prints timestamps (`T` or
/// a space, `HH:MM`, then seconds, a fraction, a zone offset or `Z`). Only the shape of the first
/// ten characters was checked: `2020-99-99 SSN 123-45-6789` made the month label `2020-99`.
pub(crate) fn is_date(v: &str) -> bool {
    let b = v.as_bytes();
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let number = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    let (Some(year), Some(month), Some(day)) =
        (number(&b[..4]), number(&b[5..7]), number(&b[8..10]))
    else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    if !(1..=days).contains(&day) {
        return false;
    }
    match &b[10..] {
        [] => true,
        [b'T' | b' ', h1, h2, b':', m1, m2, rest @ ..] => {
            let (Some(hour), Some(minute)) = (number(&[*h1, *h2]), number(&[*m1, *m2])) else {
                return false;
            };
            hour < 24
                && minute < 60
                && rest
                    .iter()
                    .all(|c| c.is_ascii_digit() || b":.+-Z".contains(c))
        }
        _ => false,
    }
}

pub(super) fn build(
    column: &str,
    values: &[(String, usize)],
    levels: &[String],
) -> Result<Hierarchy> {
    let err = |message: String| PbgError::Hierarchy {
        column: column.to_string(),
        source_name: "date hierarchy".into(),
        message,
    };
    let order = ["month", "year", "decade"];
    let mut last = None;
    for l in levels {
        let pos = order
            .iter()
            .position(|o| o == l)
            .ok_or_else(|| err(format!("unknown level `{l}` (use month, year, decade)")))?;
        if last.is_some_and(|p| p >= pos) {
            return Err(err(
                "levels must go from fine to coarse: month, year, decade".into(),
            ));
        }
        last = Some(pos);
    }
    let mut rows = Vec::with_capacity(values.len());
    for (v, row) in values {
        if !is_date(v) {
            return Err(PbgError::ValueNotInHierarchy {
                column: column.to_string(),
                value: v.clone(),
                row: *row,
                source_name: "date hierarchy: the value is not a date YYYY-MM-DD (a day of the calendar, a time such as `T10:30:00` may follow)".into(),
            });
        }
        let mut r = vec![v.clone()];
        for l in levels {
            r.push(match l.as_str() {
                "month" => v[..7].to_string(),
                "year" => v[..4].to_string(),
                _ => format!("{}0s", &v[..3]),
            });
        }
        r.push("*".into());
        rows.push(r);
    }
    rows.sort();
    Hierarchy::from_rows(column, "date hierarchy", &rows)
}

#[cfg(test)]
mod tests {
    use super::is_date;

    /// Real days, alone or with a time as Arrow prints timestamps, are dates; impossible months
    /// and days, 29 February of a common year, and trailing text are not.
    #[test]
    fn dates_are_days_of_the_calendar() {
        for v in [
            "2020-01-05",
            "2020-02-29",
            "2000-02-29",
            "1999-12-31",
            "2020-01-05T10:00:00",
            "2020-01-05 23:59:59.123456+02:00",
            "2020-01-05T00:00Z",
        ] {
            assert!(is_date(v), "{v}");
        }
        for v in [
            "2020-13-01",
            "2020-00-10",
            "2020-01-00",
            "2020-01-32",
            "2020-04-31",
            "2021-02-29",
            "1900-02-29",
            "2020-99-99 SSN 123-45-6789",
            "2020-01-05xyz",
            "2020-01-05 ",
            "2020-01-05T25:00",
            "2020-01-05T10:60",
            "2020-01-05T10:00 x",
            " 2020-01-05",
            "2020/01/05",
            "2020-1-5",
        ] {
            assert!(!is_date(v), "{v}");
        }
    }
}
