//! `pbg anonymize <profile> (--node L1,.. | --pick [lex|goal|wtd] ...) --output FILE.csv|FILE.parquet`
//!
//! Two streaming passes over the input (class statistics, then the release), so the input may be
//! larger than memory; the release is checked from the written file before it is renamed.

use std::path::PathBuf;

use clap::Args;
use pbg::release::Job;

use super::profile_args::ProfileArgs;

/// How a node is chosen (shared by `anonymize` and `verify`).
#[derive(Args, Debug, Default)]
pub struct PolicyArgs {
    /// Requirements on the node's indices, e.g. `k>=5,l>=3,suppressed<=300`.
    #[arg(long, value_name = "INDEX>=V,..")]
    pub require: Option<String>,
}

/// Arguments of `pbg anonymize`.
#[derive(Args, Debug)]
pub struct AnonymizeArgs {
    #[command(flatten)]
    profile: ProfileArgs,
    /// The node to apply: one level per QI, in profile order.
    #[arg(long, value_name = "L1,L2,...", conflicts_with = "pick")]
    node: Option<String>,
    /// Choose the node automatically among those meeting --require: by --minimize/--maximize
    /// (default: minimize glm), or with a comparator over the front: lex, goal or wtd.
    #[arg(long, value_name = "RULE", num_args = 0..=1, default_missing_value = "measure")]
    pick: Option<String>,
    #[command(flatten)]
    policy: PolicyArgs,
    /// With --pick: the index to minimize (k, l, l_entropy, suppressed, glm, cm, ...).
    #[arg(long, value_name = "INDEX", requires = "pick", conflicts_with = "node")]
    minimize: Option<String>,
    /// With --pick: the index to maximize.
    #[arg(long, value_name = "INDEX", requires = "pick", conflicts_with = "node")]
    maximize: Option<String>,
    /// With --pick lex|goal|wtd: the objectives, e.g. k,l,glm (LEX: most important first).
    #[arg(
        long,
        value_name = "O1,O2,..",
        requires = "pick",
        conflicts_with = "node"
    )]
    objectives: Option<String>,
    /// With --pick lex: significance per objective (differences up to it do not count).
    #[arg(
        long,
        value_name = "E1,E2,..",
        requires = "pick",
        conflicts_with = "node"
    )]
    significance: Option<String>,
    /// With --pick goal: the goal vector, in the objectives' units.
    #[arg(
        long,
        value_name = "G1,G2,..",
        requires = "pick",
        conflicts_with = "node"
    )]
    goal: Option<String>,
    /// With --pick wtd: weights per objective (default all 1).
    #[arg(
        long,
        value_name = "W1,W2,..",
        requires = "pick",
        conflicts_with = "node"
    )]
    weights: Option<String>,
    /// With --pick --minimize glm under monotone requirements: the evaluations the pruned search
    /// may make before it stops unproven, at least 2 (the bottom and the top node; default: 200
    /// million encoded rows' worth, at least 64). Under a suppression limit a stopped search is
    /// followed by the pick without suppression, within as many evaluations again.
    #[arg(long, value_name = "N", requires = "pick", conflicts_with = "node", value_parser = clap::value_parser!(u64).range(2..))]
    pick_evaluations: Option<u64>,
    /// Which classes the suppression limit removes: `requirements` (default with --require: only
    /// the classes smaller than the required k) or `dbsec` (the papers' rule: the smallest
    /// classes, as many as the limit allows).
    #[arg(long, value_name = "RULE")]
    suppression_rule: Option<String>,
    /// The release file (.csv or .parquet); written to a temporary file, verified, then renamed.
    /// For `pbg report`: the HTML page (.html), nothing else written.
    #[arg(long, value_name = "FILE")]
    output: PathBuf,
    /// Also write a self-contained HTML report of the release (for a privacy officer).
    #[arg(long, value_name = "FILE.html")]
    report: Option<PathBuf>,
}

/// Runs `pbg anonymize` and prints its JSON report.
pub fn run(a: AnonymizeArgs) -> anyhow::Result<()> {
    run_mode(a, true)
}

/// Runs `pbg report`: the same choice of node, no release; `--output` is the HTML page.
pub fn run_report(mut a: AnonymizeArgs) -> anyhow::Result<()> {
    if a.report.is_some() {
        anyhow::bail!("pbg report writes the page to --output; --report belongs to pbg anonymize");
    }
    a.report = Some(a.output.clone());
    run_mode(a, false)
}

fn run_mode(a: AnonymizeArgs, release: bool) -> anyhow::Result<()> {
    let job = Job {
        node: a.node.clone(),
        policy: pbg::policy::PolicyText {
            comparator: a.pick.clone(),
            require: a.policy.require.clone(),
            minimize: a.minimize.clone(),
            maximize: a.maximize.clone(),
            objectives: a.objectives.clone(),
            significance: a.significance.clone(),
            goal: a.goal.clone(),
            weights: a.weights.clone(),
            evaluations: a
                .pick_evaluations
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        },
        suppression_rule: a.suppression_rule.clone(),
    };
    let mut profile = a.profile.profile()?;
    job.apply_rule(&mut profile)?;
    job.policy(&profile)?;
    if let Some(r) = &a.report {
        profile.protect_as(r, if release { "report" } else { "output" })?;
        if release && pbg::io::same_path(r, &a.output) {
            anyhow::bail!("--report {} is the release itself", r.display());
        }
        // A page written over a release (`pbg report --output r.parquet`) destroyed it.
        let html = r
            .extension()
            .is_some_and(|e| matches!(e.to_ascii_lowercase().to_str(), Some("html" | "htm")));
        if !html {
            anyhow::bail!(
                "{}: the report is an HTML page: name it FILE.html (a release or other file of that name would be replaced by the page)",
                r.display()
            );
        }
    }
    // The page's file is planned before anything runs: a report that cannot be written must
    // fail the run before the release replaces anything.
    let page = a
        .report
        .as_deref()
        .map(pbg::io::AtomicFile::new)
        .transpose()?;
    if let (Some(page), Some(path)) = (&page, &a.report) {
        // Created now (empty), so that a name too long or a directory not writable fails here.
        std::fs::write(page.temp_path(), "").map_err(|e| pbg::PbgError::io(path, e))?;
    }
    let facts = std::sync::Mutex::new(None);
    let stages = super::progress::Stages::new("anonymize");
    // What the page needs from the engine, while it holds the statistics.
    let gather = |ev: &pbg::Evaluator, node: &pbg::Node| {
        for note in pbg::release::release_notes(ev.dataset(), &a.output) {
            eprintln!("pbg: note: {note}");
        }
        if a.report.is_some() {
            *facts.lock().unwrap_or_else(|e| e.into_inner()) =
                Some(super::report::facts(ev, node)?);
        }
        Ok(())
    };
    // The page of `report`, written to its temporary file (synced when it is committed).
    let page = std::sync::Mutex::new(page);
    let write_page = |report: &serde_json::Value| -> pbg::Result<Option<pbg::io::AtomicFile>> {
        let (Some(path), Some(page)) = (
            &a.report,
            page.lock().unwrap_or_else(|e| e.into_inner()).take(),
        ) else {
            return Ok(None);
        };
        let facts = facts.lock().unwrap_or_else(|e| e.into_inner());
        let facts = facts
            .as_ref()
            .ok_or_else(|| pbg::PbgError::argument("--report", "no node was chosen"))?;
        let requirements: Vec<(String, f64, bool)> = match &a.policy.require {
            Some(r) => pbg::policy::Requirement::parse_list(r)?
                .iter()
                .map(|r| {
                    let v = r.measure.of(&facts.indices);
                    (r.text(), v, r.holds(v))
                })
                .collect(),
            None => Vec::new(),
        };
        let profile_text = match a.profile.file() {
            Some(f) => std::fs::read_to_string(f).unwrap_or_default(),
            None => format!("{profile:#?}"),
        };
        let html = super::report::render(report, facts, &requirements, &profile_text);
        // Into the temporary file made at the start, never a new one: an interrupt's undo may
        // have removed it (written anew, it was left behind).
        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(page.temp_path())
            .and_then(|mut f| std::io::Write::write_all(&mut f, html.as_bytes()))
            .map_err(|e| pbg::PbgError::io(path, e))?;
        Ok(Some(page))
    };
    // The release and its page land together: the page is written before the release is
    // renamed and renamed right after it, and both previous files are kept until both are in
    // place, put back if either fails or the run is interrupted (the new release was left
    // beside the previous page).
    let guards = match (&a.report, release) {
        (Some(path), true) => vec![
            pbg::io::TargetGuard::file(&a.output)?,
            pbg::io::TargetGuard::file(path)?,
        ],
        _ => Vec::new(),
    };
    let mut report = if release {
        let ctx = a.profile.session()?;
        let with_release =
            |report: &serde_json::Value| Ok(write_page(report)?.into_iter().collect());
        job.run(&ctx, &profile, &a.output, &gather, &with_release, &|name| {
            stages.stage(name)
        })?
    } else {
        // The page alone: the node chosen on the statistics, nothing written but the page.
        stages.stage("pass 1: class statistics");
        let ev = pbg::Evaluator::new(std::sync::Arc::new(a.profile.statistics()?))?;
        stages.stage("choosing the node");
        let report = job.dry_run(&ev, &profile, &gather)?;
        if let Some(page) = write_page(&report)? {
            page.commit()?;
        }
        report
    };
    drop(stages);
    pbg::io::TargetGuard::commit_all(guards);
    if let Some(path) = &a.report {
        report["report"] = serde_json::json!(path);
    }
    println!("{}", serde_json::to_string(&report)?);
    Ok(())
}
