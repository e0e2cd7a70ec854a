//! `pbg sql [<profile> | --config F] [--table NAME] [-c SQL | -f FILE.sql] [--format table|csv|json]`

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use arrow::record_batch::RecordBatch;
use clap::{Args, ValueEnum};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};
use datafusion::sql::parser::DFParser;

use super::profile_args::ProfileArgs;

/// Output formats of `sql`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// An aligned text table.
    Table,
    /// CSV with a header row.
    Csv,
    /// A JSON array of row objects per statement.
    Json,
}

/// Arguments of `pbg sql`.
#[derive(Args, Debug)]
pub struct SqlArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Name of the input table and of the profile (default: the input file's stem).
    #[arg(long, value_name = "NAME")]
    table: Option<String>,
    /// SQL to run (one or more statements separated by `;`).
    #[arg(
        short = 'c',
        long = "command",
        value_name = "SQL",
        conflicts_with = "file"
    )]
    command: Option<String>,
    /// A file of SQL statements to run.
    #[arg(short = 'f', long = "file", value_name = "FILE.sql")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value = "table")]
    format: Format,
}

fn print(batches: &[RecordBatch], format: Format) -> anyhow::Result<()> {
    let out = std::io::stdout();
    let mut out = out.lock();
    match format {
        Format::Table => writeln!(
            out,
            "{}",
            arrow::util::pretty::pretty_format_batches(batches)?
        )?,
        Format::Csv => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            for b in batches {
                w.write(b)?;
            }
        }
        Format::Json => {
            let mut w = arrow::json::ArrayWriter::new(&mut out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
            writeln!(out)?;
        }
    }
    Ok(())
}

async fn run_sql(ctx: &SessionContext, sql: &str, format: Format) -> anyhow::Result<()> {
    let statements = DFParser::parse_sql(sql)?;
    for statement in statements {
        let plan = ctx.state().statement_to_plan(statement).await?;
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        print(&batches, format)?;
    }
    Ok(())
}

/// Registers the pbg functions and the profile (if any) on a new context.
async fn context(a: &SqlArgs) -> anyhow::Result<SessionContext> {
    let ctx = SessionContext::new();
    let registry = pbg::sql::register(&ctx);
    if a.profile.given() {
        let profile = a.profile.profile()?;
        let name = match &a.table {
            Some(t) => t.clone(),
            None => profile
                .input
                .file_stem()
                .map(|s| s.to_string_lossy().replace('-', "_"))
                .context("the input path names no file")?,
        };
        let path = profile.input.to_string_lossy().into_owned();
        if pbg::io::OutputFormat::from_path(&profile.input) == pbg::io::OutputFormat::Parquet {
            ctx.register_parquet(&name, &path, ParquetReadOptions::default())
                .await?;
        } else {
            let options = CsvReadOptions::new()
                .has_header(true)
                .delimiter(profile.delimiter);
            ctx.register_csv(&name, &path, options).await?;
        }
        registry.add_loaded(&name, &profile)?;
    }
    Ok(ctx)
}

/// Runs `pbg sql`.
pub fn run(a: SqlArgs) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let ctx = context(&a).await?;
        if let Some(sql) = &a.command {
            return run_sql(&ctx, sql, a.format).await;
        }
        if let Some(file) = &a.file {
            let sql = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
            return run_sql(&ctx, &sql, a.format).await;
        }
        // Interactive: statements end with `;`; an error is reported and the session goes on.
        let interactive = std::io::stdin().is_terminal();
        let mut pending = String::new();
        let prompt = |pending: &str| {
            if interactive {
                eprint!("{}", if pending.is_empty() { "pbg> " } else { "...> " });
                let _ = std::io::stderr().flush();
            }
        };
        prompt(&pending);
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            pending.push_str(&line);
            pending.push('\n');
            if line.trim_end().ends_with(';') {
                if let Err(e) = run_sql(&ctx, &pending, a.format).await {
                    if !interactive {
                        return Err(e);
                    }
                    eprintln!("pbg: error: {e:#}");
                }
                pending.clear();
            }
            prompt(&pending);
        }
        if !pending.trim().is_empty() {
            run_sql(&ctx, &pending, a.format).await?;
        }
        Ok(())
    })
}
