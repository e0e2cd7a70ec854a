//! The profile flags every data command accepts: a TOML profile and/or inline flags.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use datafusion::prelude::SessionContext;
use pbg::hierarchy::HierarchySpec;
use pbg::input::Input;
use pbg::input::block_on;
use pbg::profile::{QiSpec, parse_delimiter};
use pbg::statistics::{rows_in, statistics_in};
use pbg::{Dataset, Evaluator, PbgError, Profile, SuppressionLimit};

/// A profile from a TOML file (positional or `--config`), from flags, or a file with flags on top.
#[derive(Args, Debug)]
pub struct ProfileArgs {
    /// TOML profile (same as --config).
    #[arg(value_name = "PROFILE")]
    profile: Option<PathBuf>,
    /// TOML profile.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Input: a CSV (header row) or Parquet file, a directory of them (hive partitions
    /// included) or a glob such as `lake/*.parquet`.
    #[arg(long, value_name = "PATH")]
    input: Option<PathBuf>,
    /// CSV delimiter (one character, or `tab`).
    #[arg(long, value_name = "C")]
    delimiter: Option<String>,
    /// A quasi-identifier and its ARX-format hierarchy, added to the profile's (a QI the profile
    /// declares takes this hierarchy); node order = the profile's QIs, then these flags.
    #[arg(long = "qi", value_name = "NAME=HIERARCHY_CSV")]
    qi: Vec<String>,
    /// The sensitive attribute.
    #[arg(long, value_name = "NAME")]
    sensitive: Option<String>,
    /// A hierarchy of the sensitive attribute's values (ARX CSV), for t_hierarchical.
    #[arg(long = "sensitive-hierarchy", value_name = "NAME=HIERARCHY_CSV")]
    sensitive_hierarchy: Option<String>,
    /// The class attribute (for CM).
    #[arg(long, value_name = "NAME")]
    class: Option<String>,
    /// An identifier column to drop (repeatable).
    #[arg(long = "identifier", value_name = "NAME")]
    identifiers: Vec<String>,
    /// Suppression limit: rows (301) or percent (1%).
    #[arg(long, value_name = "ROWS|PCT%")]
    suppression_limit: Option<String>,
    /// Run the row passes on a Ballista cluster (`pbg cluster scheduler`); input and output
    /// paths must be on storage the executors share.
    #[arg(long, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
}

const FLAGS: &str = "command line";

/// `NAME=HIERARCHY_CSV` of `flag`, both parts non-empty.
fn name_and_path<'a>(flag: &str, text: &'a str) -> Result<(&'a str, &'a str), PbgError> {
    match text.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.trim().is_empty() => {
            Ok((name, path))
        }
        _ => Err(PbgError::profile(
            FLAGS,
            format!("{flag} `{text}` must be NAME=HIERARCHY_CSV (a column and a file, both given)"),
        )),
    }
}

impl ProfileArgs {
    /// Resolves the profile: the TOML file if any, with the flags applied over it.
    pub fn profile(&self) -> Result<Profile, PbgError> {
        let file = match (&self.profile, &self.config) {
            (Some(_), Some(_)) => {
                return Err(PbgError::profile(
                    FLAGS,
                    "give the profile either as PROFILE or --config, not both",
                ));
            }
            (Some(p), None) | (None, Some(p)) => Some(Profile::from_toml_file(p)?),
            (None, None) => None,
        };
        let qis = self
            .qi
            .iter()
            .map(|q| {
                let (name, path) = name_and_path("--qi", q)?;
                Ok(QiSpec {
                    name: name.to_string(),
                    hierarchy: HierarchySpec::Arx {
                        path: PathBuf::from(path),
                    },
                    null_as: None,
                })
            })
            .collect::<Result<Vec<_>, PbgError>>()?;
        let mut profile = match file {
            Some(p) => p,
            None => Profile {
                origin: FLAGS.into(),
                input: self.input.clone().map(Input::Path).ok_or_else(|| {
                    PbgError::profile(
                        FLAGS,
                        "no profile: give PROFILE, --config FILE or --input PATH",
                    )
                })?,
                delimiter: b',',
                qis: Vec::new(),
                sensitive: self.sensitive.clone().ok_or_else(|| {
                    PbgError::profile(FLAGS, "--sensitive NAME is required without a profile file")
                })?,
                sensitive_hierarchy: None,
                class: None,
                identifiers: Vec::new(),
                suppression: SuppressionLimit::Rows(0),
                rule_name: None,
                suppression_rule: Default::default(),
            },
        };
        if let Some(i) = &self.input {
            profile.input = Input::Path(i.clone());
        }
        if let Some(d) = &self.delimiter {
            profile.delimiter = parse_delimiter(d)?;
        }
        if let Some(twice) = qis
            .iter()
            .enumerate()
            .find_map(|(i, q)| qis[..i].iter().find(|p| p.name == q.name))
        {
            return Err(PbgError::profile(
                FLAGS,
                format!("--qi names `{}` twice: give each QI once", twice.name),
            ));
        }
        // Added to the file's QIs, never in their place: replacing them released the file's
        // QIs as plain columns, raw. A QI the file names takes the flag's hierarchy.
        for q in qis {
            match profile.qis.iter_mut().find(|p| p.name == q.name) {
                Some(declared) => *declared = q,
                None => profile.qis.push(q),
            }
        }
        if let Some(s) = &self.sensitive {
            // The file's sensitive hierarchy belongs to its sensitive attribute, not this one.
            if profile.sensitive != *s {
                profile.sensitive_hierarchy = None;
            }
            profile.sensitive = s.clone();
        }
        if let Some(h) = &self.sensitive_hierarchy {
            let (name, path) = name_and_path("--sensitive-hierarchy", h)?;
            if name != profile.sensitive {
                return Err(PbgError::profile(
                    FLAGS,
                    format!(
                        "--sensitive-hierarchy names `{name}` but the sensitive attribute is `{}`",
                        profile.sensitive
                    ),
                ));
            }
            profile.sensitive_hierarchy = Some(HierarchySpec::Arx {
                path: PathBuf::from(path),
            });
        }
        if let Some(c) = &self.class {
            profile.class = Some(c.clone());
        }
        profile.identifiers.extend(self.identifiers.iter().cloned());
        if let Some(s) = &self.suppression_limit {
            profile.suppression = SuppressionLimit::parse(s)?;
        }
        profile.validate()?;
        Ok(profile)
    }

    /// The `--sensitive` flag, if given.
    pub fn sensitive(&self) -> Option<&str> {
        self.sensitive.as_deref()
    }

    /// The profile file, if one was given.
    pub fn file(&self) -> Option<&std::path::Path> {
        self.profile.as_deref().or(self.config.as_deref())
    }

    /// Whether any profile source (file or --input) was given.
    pub fn given(&self) -> bool {
        self.profile.is_some() || self.config.is_some() || self.input.is_some()
    }

    /// The session the data is read in: this process, or the `--cluster` one.
    pub fn session(&self) -> Result<SessionContext, PbgError> {
        match &self.cluster {
            Some(url) => pbg::cluster::connect(url),
            None => Ok(pbg::input::new_context()),
        }
    }

    /// Refuses `--cluster` for a command whose passes run only in this process (no silent local
    /// fallback).
    pub fn local_only(&self, command: &str) -> Result<(), PbgError> {
        match &self.cluster {
            Some(url) => Err(PbgError::argument(
                "cluster",
                format!(
                    "`pbg {command}` runs in this process only (its row passes are not distributed); drop --cluster {url}"
                ),
            )),
            None => Ok(()),
        }
    }

    /// The `--cluster` address, if given.
    pub fn cluster(&self) -> Option<&str> {
        self.cluster.as_deref()
    }

    /// Loads and encodes the data, ready to evaluate (rows kept: vectors and comparisons).
    pub fn evaluator(&self) -> Result<Evaluator, PbgError> {
        let profile = self.profile()?;
        let ctx = self.session()?;
        let stages = super::progress::Stages::new("read");
        stages.stage(&format!("{} (rows)", profile.input));
        Evaluator::new(Arc::new(block_on(rows_in(&ctx, &profile))??))
    }

    /// Streams the data into class statistics, ready to evaluate node indices: memory bounded by
    /// the distinct combinations, not the rows (every index is the same as from the rows).
    pub fn statistics_evaluator(&self) -> Result<Evaluator, PbgError> {
        Evaluator::new(Arc::new(self.statistics()?))
    }

    /// The class statistics of the profile's input (in the `--cluster` session when given).
    pub fn statistics(&self) -> Result<Dataset, PbgError> {
        let profile = self.profile()?;
        let ctx = self.session()?;
        let stages = super::progress::Stages::new("read");
        stages.stage(&format!("{} (class statistics)", profile.input));
        block_on(statistics_in(&ctx, &profile))?
    }
}
