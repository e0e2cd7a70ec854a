//! `pbg correlate [<profile>] [--input PATH --delimiter C] [--columns a,b,..] [--identifier NAME]
//! [--bins N] [--format table|csv|json]`

use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, ValueEnum};
use pbg::Profile;
use pbg::io::read_table;
use pbg::profile::parse_delimiter;
use pbg::slicing::correlation::correlate;

/// Output formats of `correlate`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// Two aligned matrices (χ², φ²).
    Table,
    /// One row per pair: a, b, chi_square, phi_squared.
    Csv,
    /// `{columns, chi_square, phi_squared}`.
    Json,
}

/// Arguments of `pbg correlate`.
#[derive(Args, Debug)]
pub struct CorrelateArgs {
    /// TOML profile: its input, and its QIs and sensitive attribute as default columns.
    #[arg(value_name = "PROFILE")]
    profile: Option<PathBuf>,
    /// Input table, CSV (header row) or Parquet.
    #[arg(long, value_name = "PATH")]
    input: Option<PathBuf>,
    /// CSV delimiter (one character, or `tab`).
    #[arg(long, value_name = "C")]
    delimiter: Option<String>,
    /// Columns to correlate (default: the profile's QIs and sensitive attribute, or all columns).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    columns: Vec<String>,
    /// An identifier column, left out of the pairs (repeatable; the profile's identifiers too).
    #[arg(long = "identifier", value_name = "NAME")]
    identifiers: Vec<String>,
    /// Equal-frequency bins for numeric columns with more distinct values.
    #[arg(long, default_value_t = 10)]
    bins: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

/// Runs `pbg correlate`.
pub fn run(a: CorrelateArgs) -> anyhow::Result<()> {
    let profile = a
        .profile
        .as_deref()
        .map(Profile::from_toml_file)
        .transpose()?;
    let (input, mut delimiter, mut columns) = match (&profile, &a.input) {
        (_, Some(i)) => (pbg::input::Input::Path(i.clone()), b',', Vec::new()),
        (Some(p), None) => {
            let mut cols: Vec<String> = p.qis.iter().map(|q| q.name.clone()).collect();
            cols.push(p.sensitive.clone());
            (p.input.clone(), p.delimiter, cols)
        }
        (None, None) => bail!("give a PROFILE or --input PATH"),
    };
    if let Some(p) = &profile
        && a.input.is_some()
    {
        delimiter = p.delimiter;
    }
    if let Some(d) = &a.delimiter {
        delimiter = parse_delimiter(d)?;
    }
    if !a.columns.is_empty() {
        columns = a.columns.clone();
    }
    if a.bins == 0 {
        bail!("--bins must be at least 1");
    }
    let mut identifiers = a.identifiers.clone();
    if let Some(p) = &profile {
        identifiers.extend(p.identifiers.iter().cloned());
    }
    if let Some(id) = a.columns.iter().find(|c| identifiers.contains(c)) {
        bail!("--columns: `{id}` is an identifier (--identifier); leave it out of --columns");
    }
    let table = read_table(&input, delimiter)?;
    if !identifiers.is_empty() {
        if columns.is_empty() {
            columns = table
                .schema
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
        }
        for id in &identifiers {
            if table.schema.field_with_name(id).is_err() {
                bail!("--identifier: {} has no column `{id}`", input);
            }
        }
        columns.retain(|c| !identifiers.contains(c));
    }
    let m = correlate(&table, &columns, a.bins)?;
    match a.format {
        Format::Json => println!("{}", serde_json::to_string(&m)?),
        Format::Csv => {
            println!("a,b,chi_square,phi_squared");
            for i in 0..m.columns.len() {
                for j in i + 1..m.columns.len() {
                    println!(
                        "{},{},{},{}",
                        m.columns[i], m.columns[j], m.chi_square[i][j], m.phi_squared[i][j]
                    );
                }
            }
        }
        Format::Table => {
            let w = m.columns.iter().map(String::len).max().unwrap_or(4).max(10);
            for (title, values, prec) in [
                ("chi-square", &m.chi_square, 1),
                ("phi-squared", &m.phi_squared, 4),
            ] {
                println!("{title}");
                print!("{:w$}", "");
                for c in &m.columns {
                    print!(" {c:>w$}");
                }
                println!();
                for (c, row) in m.columns.iter().zip(values) {
                    print!("{c:w$}");
                    for v in row {
                        print!(" {v:>w$.prec$}");
                    }
                    println!();
                }
                println!();
            }
        }
    }
    Ok(())
}
