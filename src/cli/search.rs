//! `pbg search <profile> --objectives k,glm [--algorithm exhaustive|ea] ...`

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use pbg::Objective;
use pbg::error::PbgError;
use pbg::search::{EaConfig, Point, SearchResult, exhaustive, pbg_ea};
use serde_json::{Map, Value, json};
use std::io::Write;

use super::profile_args::ProfileArgs;
use pbg::plot;

/// Search algorithms.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Algorithm {
    /// Every node (by roll-ups): the exact front.
    Exhaustive,
    /// PBG-EA with the box-dominance archive.
    Ea,
}

/// Output formats of `search`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// One JSON object.
    Json,
    /// CSV: one row per front node.
    Csv,
    /// A text table.
    Table,
}

/// Arguments of `pbg search`.
#[derive(Args, Debug)]
pub struct SearchArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// Two or more of k, l, l_entropy, s_k, s_l, glm, cm.
    #[arg(long, value_name = "O1,O2,...")]
    objectives: String,
    /// Search algorithm.
    #[arg(long, value_enum, default_value = "exhaustive")]
    algorithm: Algorithm,
    /// Discretization vector ε, one value per objective (EA; default 1, and 0.01 for objectives
    /// in [0, 1]: t_*, risk_*, uniques, precision, cm).
    #[arg(long, value_name = "E1,E2,...")]
    epsilon: Option<String>,
    /// EA population size [default: 25].
    #[arg(long)]
    population: Option<usize>,
    /// EA iterations [default: 100].
    #[arg(long)]
    iterations: Option<usize>,
    /// EA crossover probability [default: 0.8].
    #[arg(long)]
    p_cross: Option<f64>,
    /// EA per-attribute mutation probability (default 1 / number of QIs).
    #[arg(long)]
    p_mut: Option<f64>,
    /// EA random seed [default: 0].
    #[arg(long)]
    seed: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value = "json")]
    format: Format,
    /// Also draw the front as an SVG scatter plot (first two objectives).
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
}

/// Parses `E1,E2,...`.
pub fn parse_epsilon(text: &str, n: usize) -> Result<Vec<f64>, PbgError> {
    let v = text
        .split(',')
        .map(|x| {
            x.trim().parse::<f64>().map_err(|_| {
                PbgError::argument("--epsilon", format!("`{}` is not a number", x.trim()))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if v.len() != n {
        return Err(PbgError::argument(
            "--epsilon",
            format!("{} values for {n} objectives", v.len()),
        ));
    }
    Ok(v)
}

/// The JSON object of one front node: its levels and its objectives' values.
fn point_json(r: &SearchResult, p: &Point) -> Value {
    let mut m = Map::new();
    m.insert("node".into(), json!(p.node));
    for (o, v) in r.objectives.iter().zip(&p.values) {
        // Counts (k, l, ...) print as integers, as in every other output.
        let v = match o.info().kind {
            pbg::indices::Kind::Count => json!(*v as u64),
            _ => json!(v),
        };
        m.insert(o.name().into(), v);
    }
    Value::Object(m)
}

/// Writes the JSON form of a search result, with `timings`, one front node at a time: a JSON
/// tree of the whole front took some 1 GB for 552,960 nodes, several times the front itself.
fn write_json(
    out: &mut impl Write,
    r: &SearchResult,
    lattice: &pbg::lattice::Lattice,
    timings: &Value,
) -> std::io::Result<()> {
    let head = json!({
        "algorithm": r.algorithm,
        "objectives": r.objectives.iter().map(Objective::name).collect::<Vec<_>>(),
        "lattice_size": pbg::evaluate::json::size_json(lattice),
        "evaluations": r.evaluations,
        "implied": r.implied,
        "probes": r.probes,
    })
    .to_string();
    // The head's fields, then the front and the timings in the same object.
    out.write_all(&head.as_bytes()[..head.len() - 1])?;
    out.write_all(b",\"front\":[")?;
    for (i, p) in r.front.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &point_json(r, p))?;
    }
    out.write_all(b"],\"timings\":")?;
    serde_json::to_writer(&mut *out, timings)?;
    out.write_all(b"}\n")?;
    out.flush()
}

/// Writes the front as CSV (a header of QI and objective names, then one row per node), one
/// node at a time.
fn write_csv(out: &mut impl Write, header: &[String], r: &SearchResult) -> std::io::Result<()> {
    writeln!(out, "{}", header.join(","))?;
    for p in &r.front {
        let levels = p.node.iter().map(|l| l.to_string());
        let values = p.values.iter().map(|v| v.to_string());
        writeln!(
            out,
            "{}",
            levels.chain(values).collect::<Vec<_>>().join(",")
        )?;
    }
    out.flush()
}

/// Runs `pbg search`.
pub fn run(a: SearchArgs) -> anyhow::Result<()> {
    if matches!(a.algorithm, Algorithm::Exhaustive) {
        let given: Vec<&str> = [
            ("--epsilon", a.epsilon.is_some()),
            ("--population", a.population.is_some()),
            ("--iterations", a.iterations.is_some()),
            ("--p-cross", a.p_cross.is_some()),
            ("--p-mut", a.p_mut.is_some()),
            ("--seed", a.seed.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect();
        // Ignored, they would let a user believe a seed or a population shaped the front.
        if !given.is_empty() {
            anyhow::bail!(
                "{} set the evolutionary search (--algorithm ea); the exhaustive search (the default) evaluates every node and takes none of them",
                given.join(", ")
            );
        }
    }
    if let Some(plot) = &a.plot {
        a.profile.profile()?.protect_as(plot, "plot")?;
    }
    let started = std::time::Instant::now();
    let ev = a.profile.statistics_evaluator()?;
    let read_s = started.elapsed().as_secs_f64();
    let objectives = Objective::parse_list(&a.objectives, pbg::indices::Present::of(ev.dataset()))?;
    let epsilon = a
        .epsilon
        .as_deref()
        .map(|e| parse_epsilon(e, objectives.len()))
        .transpose()?;
    let result = match a.algorithm {
        Algorithm::Exhaustive => exhaustive(&ev, &objectives)?,
        Algorithm::Ea => {
            let default = EaConfig::default();
            pbg_ea(
                &ev,
                &objectives,
                &EaConfig {
                    population: a.population.unwrap_or(default.population),
                    iterations: a.iterations.unwrap_or(default.iterations),
                    p_cross: a.p_cross.unwrap_or(default.p_cross),
                    p_mut: a.p_mut,
                    epsilon,
                    seed: a.seed.unwrap_or(default.seed),
                },
            )?
        }
    };
    let search_s = started.elapsed().as_secs_f64() - read_s;
    if let Some(path) = &a.plot {
        let title = format!("{} front ({})", result.algorithm, a.objectives);
        plot::front_svg(path, &title, &objectives, &[("front", &result.front)])?;
    }
    let names: Vec<String> = ev.qi_names().iter().map(|n| n.to_string()).collect();
    let header: Vec<String> = names
        .iter()
        .cloned()
        .chain(objectives.iter().map(|o| o.name().to_string()))
        .collect();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    let written = match a.format {
        Format::Json => {
            // Per-evaluation cost: the search's time over the nodes it evaluated.
            let timings = json!({
                "read_s": read_s,
                "search_s": search_s,
                "ms_per_evaluation": 1e3 * search_s / result.evaluations.max(1) as f64,
            });
            write_json(&mut stdout, &result, ev.lattice(), &timings)
        }
        Format::Csv => write_csv(&mut stdout, &header, &result),
        Format::Table => {
            let rows: Vec<Vec<String>> = result
                .front
                .iter()
                .map(|p| {
                    p.node
                        .iter()
                        .map(|l| l.to_string())
                        .chain(p.values.iter().map(|v| v.to_string()))
                        .collect()
                })
                .collect();
            write!(stdout, "{}", super::output::aligned_table(&header, &rows)).and_then(|()| {
                writeln!(
                    stdout,
                    "# {}: {} nodes on the front, {} of {} nodes evaluated ({} of them implied by a coarser node's singleton tuples)",
                    result.algorithm,
                    result.front.len(),
                    result.evaluations,
                    result.lattice_size,
                    result.implied
                )
            })
        }
    };
    written
        .and_then(|()| stdout.flush())
        .map_err(|e| anyhow::anyhow!("writing the search result to standard output: {e}"))
}
