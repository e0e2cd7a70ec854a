//! `pbg sql [<profile> | --config F] [--table NAME] [-c SQL | -f FILE.sql] [--format table|csv|json]`

use std::io::{BufRead, IsTerminal, Write};

use std::path::PathBuf;

use anyhow::Context;
use arrow::record_batch::RecordBatch;
use clap::{Args, ValueEnum};
use datafusion::prelude::SessionContext;
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
    run_statements(ctx, sql, format, false).await
}

/// Runs the statements of `sql`, printing each result; with `timing`, the row count and the
/// elapsed time after each (as the prompt does).
async fn run_statements(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    timing: bool,
) -> anyhow::Result<()> {
    let statements = DFParser::parse_sql(sql)?;
    for statement in statements {
        let started = std::time::Instant::now();
        let plan = ctx.state().statement_to_plan(statement).await?;
        let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
        print(&batches, format)?;
        if timing {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            println!(
                "{rows} row{} in {:.3} s.",
                if rows == 1 { "" } else { "s" },
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

/// Feeds one line of the prompt (or of piped input): a meta command when nothing is pending,
/// else SQL accumulated until a line ends with `;`. Returns false to quit.
async fn feed(
    ctx: &SessionContext,
    pending: &mut String,
    line: &str,
    format: Format,
    interactive: bool,
) -> anyhow::Result<bool> {
    if pending.trim().is_empty() {
        match super::prompt::meta(ctx, line) {
            Some(Ok(super::prompt::Meta::Quit)) => return Ok(false),
            Some(Ok(super::prompt::Meta::Print(text))) => {
                println!("{text}");
                return Ok(true);
            }
            Some(Ok(super::prompt::Meta::Sql(sql))) => {
                run_statements(ctx, &sql, format, interactive).await?;
                return Ok(true);
            }
            Some(Err(message)) => anyhow::bail!(message),
            None => {}
        }
    }
    pending.push_str(line);
    pending.push('\n');
    if line.trim_end().ends_with(';') {
        let sql = std::mem::take(pending);
        run_statements(ctx, &sql, format, interactive).await?;
    }
    Ok(true)
}

/// Registers the pbg functions and the profile (if any) on a new context: the profile's input
/// becomes a table named after its file stem (or `--table`), and the profile is declared under the
/// same name.
async fn context(a: &SqlArgs) -> anyhow::Result<SessionContext> {
    // information_schema on: SHOW TABLES, SHOW FUNCTIONS and `\d` read it.
    let (ctx, registry) = match a.profile.cluster() {
        // A cluster session has pbg's functions registered already.
        Some(_) => {
            let ctx = a.profile.session()?;
            let registry = pbg::sql::register(&ctx);
            (ctx, registry)
        }
        None => {
            let ctx = pbg::input::context_with(
                pbg::input::session_config().with_information_schema(true),
            );
            let registry = pbg::sql::register(&ctx);
            (ctx, registry)
        }
    };
    if a.profile.given() {
        let profile = a.profile.profile()?;
        let name = a
            .table
            .clone()
            .unwrap_or_else(|| profile.input.table_name());
        if let pbg::input::Input::Path(_) = &profile.input {
            let df = pbg::input::open(&ctx, &profile.input, profile.delimiter).await?;
            ctx.register_table(name.as_str(), df.into_view())?;
        }
        registry.declare(&name, profile)?;
    }
    Ok(ctx)
}

/// The interactive prompt: statements end with `;`, `\?` lists the other commands; each result is
/// followed by its row count and time; an error is printed once and the session goes on; lines
/// are kept in a history (~/.pbg_history).
async fn interactive(ctx: &SessionContext, format: Format) -> anyhow::Result<()> {
    let mut editor = rustyline::DefaultEditor::new()?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pbg_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    let mut pending = String::new();
    loop {
        let prompt = if pending.is_empty() { "pbg> " } else { "...> " };
        match editor.readline(prompt) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.trim());
                }
                match feed(ctx, &mut pending, &line, format, true).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        eprintln!("pbg: error: {e}");
                        pending.clear();
                    }
                }
            }
            Err(rustyline::error::ReadlineError::Interrupted) => pending.clear(),
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}

/// Stack for SQL planning and execution: DataFusion walks expressions recursively, and a query of
/// a few thousand terms needs more than a default thread's 8 MiB.
const SQL_STACK: usize = 512 << 20;

/// Runs `pbg sql` on threads with a large stack (the statements are planned on the calling thread).
pub fn run(a: SqlArgs) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("pbg-sql".into())
        .stack_size(SQL_STACK)
        .spawn(move || run_on_this_thread(a))
        .map_err(|e| pbg::input::thread_refused("the SQL thread", e))?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn run_on_this_thread(a: SqlArgs) -> anyhow::Result<()> {
    let rt = pbg::input::checked_runtime("pbg-sql", SQL_STACK)?;
    rt.block_on(async {
        let ctx = context(&a).await?;
        if let Some(sql) = &a.command {
            return run_sql(&ctx, sql, a.format).await;
        }
        if let Some(file) = &a.file {
            let sql = std::fs::read_to_string(file).with_context(|| file.display().to_string())?;
            return run_sql(&ctx, &sql, a.format).await;
        }
        if std::io::stdin().is_terminal() {
            return interactive(&ctx, a.format).await;
        }
        // Piped lines: statements and commands as at the prompt; the first error stops.
        let mut pending = String::new();
        for line in std::io::stdin().lock().lines() {
            if !feed(&ctx, &mut pending, &line?, a.format, false).await? {
                return Ok(());
            }
        }
        if !pending.trim().is_empty() {
            run_sql(&ctx, &pending, a.format).await?;
        }
        Ok(())
    })
}
