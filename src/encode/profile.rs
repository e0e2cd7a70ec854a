//! The anonymization profile: input, quasi-identifiers with hierarchies (in node order), sensitive
//! and class attributes, identifiers to drop, and the suppression limit. Declared in TOML or by flags.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{PbgError, Result};
use crate::hierarchy::HierarchySpec;
use crate::input::Input;

/// A quasi-identifier and its hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub struct QiSpec {
    /// Column name.
    pub name: String,
    /// Its hierarchy.
    pub hierarchy: HierarchySpec,
    /// Text a null takes before it is looked up in the hierarchy (nulls are an error without it).
    pub null_as: Option<String>,
}

/// The suppression limit η, in rows or as a share of the table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SuppressionLimit {
    /// At most this many rows.
    Rows(u64),
    /// At most this percentage of the rows (rounded down).
    Percent(f64),
}

impl SuppressionLimit {
    /// Parses `301` or `1%` / `0.5%`.
    pub fn parse(text: &str) -> Result<Self> {
        let t = text.trim();
        let bad = |message: &str| PbgError::SuppressionLimit {
            text: text.to_string(),
            message: message.to_string(),
        };
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p.trim().parse().map_err(|_| bad("not a number before %"))?;
            if !(0.0..=100.0).contains(&v) {
                return Err(bad("a percentage must lie between 0 and 100"));
            }
            Ok(SuppressionLimit::Percent(v))
        } else {
            t.parse::<u64>()
                .map(SuppressionLimit::Rows)
                .map_err(|_| bad("not a whole number of rows"))
        }
    }

    /// η in rows for a table of `n` rows.
    pub fn rows(&self, n: usize) -> u64 {
        match *self {
            SuppressionLimit::Rows(r) => r,
            SuppressionLimit::Percent(p) => ((p / 100.0) * n as f64 + 1e-9).floor() as u64,
        }
    }
}

/// A whole profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// Where it was declared (config path or `command line`), for messages.
    pub origin: String,
    /// The input: a path (file, directory or glob of CSV or Parquet files) or a registered table.
    pub input: Input,
    /// CSV delimiter.
    pub delimiter: u8,
    /// Quasi-identifiers in node order.
    pub qis: Vec<QiSpec>,
    /// The sensitive attribute.
    pub sensitive: String,
    /// A hierarchy of the sensitive attribute's values, for `t_hierarchical` (and the order of
    /// `t_ordered`).
    pub sensitive_hierarchy: Option<HierarchySpec>,
    /// The class label for CM, if any.
    pub class: Option<String>,
    /// Columns dropped from every output.
    pub identifiers: Vec<String>,
    /// The suppression limit η.
    pub suppression: SuppressionLimit,
    /// The suppression rule the profile names (`suppression_rule = "requirements"` or
    /// `"dbsec"`), the default of the jobs run on it.
    pub rule_name: Option<crate::suppression::RuleName>,
    /// Which classes are suppressed within the limit: the rule a job applies (the DBSEC rule,
    /// or the named rule with no requirements, until a job sets it).
    pub suppression_rule: crate::suppression::SuppressionRule,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    input: Option<PathBuf>,
    table: Option<String>,
    delimiter: Option<String>,
    sensitive: String,
    sensitive_hierarchy: Option<toml::Value>,
    class: Option<String>,
    #[serde(default)]
    identifiers: Vec<String>,
    suppression_limit: Option<toml::Value>,
    suppression_rule: Option<String>,
    qi: Vec<QiFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QiFile {
    name: String,
    hierarchy: toml::Value,
    null_as: Option<String>,
}

/// A TOML error on one line: `line L, column C: message`.
fn toml_error(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: {}", e.message().trim())
        }
        None => e.message().trim().to_string(),
    }
}

/// A hierarchy declaration: a file path (ARX CSV) or a table with `type`; relative paths resolved
/// against `base`.
fn hierarchy_spec(
    value: toml::Value,
    column: &str,
    base: &Path,
    origin: &str,
) -> Result<HierarchySpec> {
    let mut hierarchy = match value {
        toml::Value::String(p) => HierarchySpec::Arx {
            path: PathBuf::from(p),
        },
        v @ toml::Value::Table(_) => v.try_into::<HierarchySpec>().map_err(|e| {
            PbgError::profile(
                origin,
                format!("hierarchy of `{column}`: {}", e.to_string().trim()),
            )
        })?,
        other => {
            return Err(PbgError::profile(
                origin,
                format!(
                    "hierarchy of `{column}` must be a file path or a table with `type`, not {}",
                    other.type_str()
                ),
            ));
        }
    };
    hierarchy.resolve_paths(base);
    Ok(hierarchy)
}

/// Parses a delimiter: one character, or `tab`.
pub fn parse_delimiter(text: &str) -> Result<u8> {
    match text {
        "tab" | "\\t" | "\t" => Ok(b'\t'),
        "\"" | "\n" | "\r" => Err(PbgError::profile(
            "delimiter",
            format!(
                "{text:?} cannot separate fields: it quotes values or ends lines in a CSV file"
            ),
        )),
        t if t.len() == 1 && t.is_ascii() => Ok(t.as_bytes()[0]),
        t => Err(PbgError::profile(
            "delimiter",
            format!("`{t}` is not a single ASCII character (or `tab`)"),
        )),
    }
}

impl Profile {
    /// Reads a TOML profile; relative paths in it are relative to the file's directory.
    pub fn from_toml_file(path: &Path) -> Result<Self> {
        crate::input::note_read(path);
        let text = std::fs::read_to_string(path).map_err(|e| PbgError::io(path, e))?;
        let base = path.parent().unwrap_or(Path::new("."));
        Self::from_toml_str(&text, base, &path.display().to_string())
    }

    /// Parses a TOML profile whose relative paths are resolved against `base`.
    pub fn from_toml_str(text: &str, base: &Path, origin: &str) -> Result<Self> {
        let file: ProfileFile =
            toml::from_str(text).map_err(|e| PbgError::profile(origin, toml_error(text, &e)))?;
        let mut qis = Vec::with_capacity(file.qi.len());
        for q in file.qi {
            let hierarchy = hierarchy_spec(q.hierarchy, &q.name, base, origin)?;
            qis.push(QiSpec {
                name: q.name,
                hierarchy,
                null_as: q.null_as,
            });
        }
        let suppression = match file.suppression_limit {
            None => SuppressionLimit::Rows(0),
            Some(toml::Value::Integer(i)) if i >= 0 => SuppressionLimit::Rows(i as u64),
            Some(toml::Value::String(s)) => SuppressionLimit::parse(&s)?,
            Some(other) => SuppressionLimit::parse(&other.to_string())?,
        };
        let input = match (file.input, file.table) {
            (Some(p), None) if p.is_relative() => Input::Path(base.join(p)),
            (Some(p), None) => Input::Path(p),
            (None, Some(t)) => Input::Table(t),
            (Some(_), Some(_)) => {
                return Err(PbgError::profile(
                    origin,
                    "give either `input` (a path) or `table` (a registered table), not both",
                ));
            }
            (None, None) => {
                return Err(PbgError::profile(
                    origin,
                    "no input: give `input = \"path\"` (a file, directory or glob) or `table = \"name\"` (a registered table)",
                ));
            }
        };
        let rule_name = file
            .suppression_rule
            .as_deref()
            .map(crate::suppression::RuleName::parse)
            .transpose()
            .map_err(|m| PbgError::profile(origin, format!("`suppression_rule`: {m}")))?;
        let profile = Profile {
            origin: origin.to_string(),
            input,
            delimiter: parse_delimiter(file.delimiter.as_deref().unwrap_or(","))?,
            qis,
            sensitive_hierarchy: file
                .sensitive_hierarchy
                .map(|h| hierarchy_spec(h, &file.sensitive, base, origin))
                .transpose()?,
            sensitive: file.sensitive,
            class: file.class,
            identifiers: file.identifiers,
            suppression,
            rule_name,
            suppression_rule: crate::suppression::SuppressionRule::named(
                rule_name.unwrap_or(crate::suppression::RuleName::Dbsec),
                &[],
            ),
        };
        profile.validate()?;
        Ok(profile)
    }

    /// Checks that roles do not overlap and that there is at least one QI.
    pub fn validate(&self) -> Result<()> {
        let err = |m: String| Err(PbgError::profile(&self.origin, m));
        if self.qis.is_empty() {
            return err(
                "no quasi-identifiers: declare at least one ([[qi]] or --qi NAME=HIERARCHY)".into(),
            );
        }
        for (i, q) in self.qis.iter().enumerate() {
            if q.null_as.as_deref().is_some_and(|v| v.is_empty()) {
                return err(format!(
                    "`null_as` of `{}` is empty: a CSV release could not tell its label from a null; give a value",
                    q.name
                ));
            }
            if self.qis[..i].iter().any(|p| p.name == q.name) {
                return err(format!("quasi-identifier `{}` is declared twice", q.name));
            }
            if q.name == self.sensitive {
                return err(format!(
                    "`{}` cannot be both a quasi-identifier and the sensitive attribute",
                    q.name
                ));
            }
            if self.class.as_deref() == Some(&q.name) {
                return err(format!(
                    "`{}` cannot be both a quasi-identifier and the class attribute",
                    q.name
                ));
            }
            if self.identifiers.contains(&q.name) {
                return err(format!(
                    "`{}` cannot be both a quasi-identifier and an identifier",
                    q.name
                ));
            }
        }
        if self.identifiers.contains(&self.sensitive) {
            return err(format!(
                "`{}` cannot be both the sensitive attribute and an identifier",
                self.sensitive
            ));
        }
        if let Some(c) = &self.class
            && self.identifiers.contains(c)
        {
            return err(format!(
                "`{c}` cannot be both the class attribute and an identifier"
            ));
        }
        Ok(())
    }

    /// Refuses an output path that would replace the input (or land inside it, or match its glob)
    /// or one of the profile's hierarchy files, before anything is read.
    pub fn protect(&self, output: &Path) -> Result<()> {
        crate::io::refuse_overwrite(output, &self.input)?;
        let origin = Path::new(&self.origin);
        if origin.is_file() {
            crate::io::refuse_overwrite(output, &Input::Path(origin.to_path_buf())).map_err(|_| {
                PbgError::argument(
                    "output",
                    format!(
                        "{} is the profile file: pbg never writes over its inputs; choose another output path",
                        output.display()
                    ),
                )
            })?;
        }
        let hierarchies = self.qis.iter().map(|q| (&q.name, &q.hierarchy)).chain(
            self.sensitive_hierarchy
                .iter()
                .map(|h| (&self.sensitive, h)),
        );
        for (name, h) in hierarchies {
            if let HierarchySpec::Arx { path } = h {
                crate::io::refuse_overwrite(output, &Input::Path(path.clone())).map_err(|_| {
                    PbgError::argument(
                        "output",
                        format!(
                            "{} is the hierarchy file of `{name}`: pbg never writes over its inputs; choose another output path",
                            output.display(),
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }

    /// [`Profile::protect`] for a path given as argument `name` (`out`, `plot`, `report`), which
    /// must not be a named pipe or a device either.
    pub fn protect_as(&self, output: &Path, name: &str) -> Result<()> {
        // Before the work, not only at its end (a lattice was computed whole, then refused).
        crate::io::refuse_special_target(output)?;
        self.protect(output).map_err(|e| e.for_argument(name))
    }

    /// Lattice node order: the QI names.
    pub fn qi_names(&self) -> Vec<&str> {
        self.qis.iter().map(|q| q.name.as_str()).collect()
    }
}
