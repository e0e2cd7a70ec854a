//! The DBSEC 2010 adult experiments (SPEC §5): PBG-EA against the exact front, 20 runs per
//! setting, CE and RR mean and variance and mean unique evaluations, beside the paper's values.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{PbgError, Result};
use crate::evaluate::Evaluator;
use crate::indices::NodeIndices;
use crate::io::AtomicFile;
use crate::objective::{Objective, values};
use crate::plot::front_svg;
use crate::search::{
    EaConfig, Point, SearchResult, convergence_error, pareto_front, pbg_ea, representation_ratio,
};

/// Which adult profile a setting uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// 8 QIs, 17920 nodes.
    Adult,
    /// 7 QIs and Salary Class as class attribute, 8960 nodes.
    AdultCm,
}

/// The paper's reported values for a setting (mean, variance).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Paper {
    /// CE (mean, variance), when reported.
    pub ce: Option<(f64, f64)>,
    /// RR (mean, variance), when reported.
    pub rr: Option<(f64, f64)>,
    /// Mean unique evaluations, when reported.
    pub evaluations: Option<f64>,
}

/// One experimental setting.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting {
    /// The paper's table.
    pub table: &'static str,
    /// The profile.
    pub profile: Profile,
    /// The objectives.
    pub objectives: Vec<Objective>,
    /// The discretization vector.
    pub epsilon: Vec<f64>,
    /// The paper's values.
    pub paper: Paper,
    /// The figure drawn for it (file stem, x and y objective index), if any.
    pub figure: Option<(&'static str, usize, usize)>,
}

/// The settings of Tables 1(b), 2(a) and 2(b). Table 2(a) as extracted from the paper's text lost
/// one ε row; the k,l,GLM pairs are matched to the two ε rows that remain, in order.
pub fn settings() -> Vec<Setting> {
    use Objective::*;
    let p = |ce: Option<(f64, f64)>, rr: Option<(f64, f64)>, ev: Option<f64>| Paper {
        ce,
        rr,
        evaluations: ev,
    };
    let s =
        |table, profile, objectives: Vec<Objective>, epsilon: Vec<f64>, paper, figure| Setting {
            table,
            profile,
            objectives,
            epsilon,
            paper,
            figure,
        };
    vec![
        s(
            "1(b), 2(b)",
            Profile::Adult,
            vec![K, Glm],
            vec![1.0, 1.0],
            p(Some((3.7e-4, 6.5e-9)), Some((0.94, 8e-4)), Some(916.0)),
            Some(("fig1-k-glm", 0, 1)),
        ),
        s(
            "1(b), 2(b)",
            Profile::Adult,
            vec![K, L, Glm],
            vec![1.0, 1.0, 1.0],
            p(Some((3.3e-4, 1.1e-7)), Some((0.93, 1.1e-3)), Some(946.0)),
            Some(("fig1-k-l-glm", 0, 2)),
        ),
        s(
            "1(b), 2(b)",
            Profile::Adult,
            vec![SK, Glm],
            vec![1.0, 1.0],
            p(Some((5.7e-4, 2.5e-7)), Some((0.84, 1.7e-3)), Some(1136.0)),
            Some(("fig2-sk-glm", 0, 1)),
        ),
        s(
            "1(b), 2(b)",
            Profile::Adult,
            vec![SK, SL, Glm],
            vec![1.0, 1.0, 1.0],
            p(Some((6.6e-4, 2.0e-7)), Some((0.83, 1.4e-3)), Some(1197.0)),
            Some(("fig2-sk-sl-glm", 0, 2)),
        ),
        s(
            "2(b)",
            Profile::AdultCm,
            vec![K, Glm, Cm],
            vec![1.0, 1.0, 1.0],
            p(None, None, Some(1073.0)),
            Some(("fig3-glm-cm", 1, 2)),
        ),
        s(
            "2(a)",
            Profile::Adult,
            vec![K, Glm],
            vec![5.0, 100.0],
            p(Some((4.3e-4, 2.6e-7)), Some((0.95, 1.6e-3)), None),
            None,
        ),
        s(
            "2(a)",
            Profile::Adult,
            vec![K, Glm],
            vec![10.0, 1000.0],
            p(Some((1.6e-4, 8.0e-8)), Some((0.98, 8.2e-4)), None),
            None,
        ),
        s(
            "2(a)",
            Profile::Adult,
            vec![K, Glm],
            vec![50.0, 10000.0],
            p(Some((1.7e-4, 1.1e-8)), Some((1.0, 0.0)), None),
            None,
        ),
        s(
            "2(a)",
            Profile::Adult,
            vec![K, L, Glm],
            vec![10.0, 4.0, 1000.0],
            p(Some((4.9e-3, 2.5e-7)), Some((0.92, 1.2e-3)), None),
            None,
        ),
        s(
            "2(a)",
            Profile::Adult,
            vec![K, L, Glm],
            vec![50.0, 6.0, 10000.0],
            p(Some((7.4e-3, 9.3e-7)), Some((0.92, 7.0e-4)), None),
            None,
        ),
    ]
}

/// What one setting measured.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The setting.
    pub setting: Setting,
    /// Nodes in its lattice.
    pub lattice_size: usize,
    /// Size of the exact front.
    pub front_size: usize,
    /// CE (mean, sample variance) over the runs.
    pub ce: (f64, f64),
    /// RR (mean, sample variance).
    pub rr: (f64, f64),
    /// Mean unique evaluations.
    pub evaluations: f64,
    /// The exact front.
    pub front: Vec<Point>,
    /// The archive of the first run (for the figure).
    pub archive: Vec<Point>,
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let v = if x.len() > 1 {
        x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (m, v)
}

/// Runs every setting: exact fronts from one sweep of each lattice, then `runs` PBG-EA runs of
/// `iterations` iterations per setting with seeds 0..runs (in parallel; each run is deterministic).
/// `progress` is called once per finished run.
pub fn run(
    adult: &Evaluator,
    adult_cm: &Evaluator,
    runs: usize,
    iterations: usize,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<Outcome>> {
    if runs == 0 {
        return Err(PbgError::argument("runs", "needs at least one run"));
    }
    let lattice_adult: Vec<NodeIndices> = adult.evaluate_lattice(&|| {})?;
    let lattice_cm: Vec<NodeIndices> = adult_cm.evaluate_lattice(&|| {})?;
    settings()
        .into_iter()
        .map(|setting| {
            let (ev, all) = match setting.profile {
                Profile::Adult => (adult, &lattice_adult),
                Profile::AdultCm => (adult_cm, &lattice_cm),
            };
            let points = all
                .iter()
                .map(|ix| Point {
                    node: ix.node.clone(),
                    values: values(&setting.objectives, ix),
                })
                .collect();
            let front = pareto_front(points, &setting.objectives);
            let results: Vec<SearchResult> = (0..runs as u64)
                .into_par_iter()
                .map(|seed| {
                    let cfg = EaConfig {
                        epsilon: Some(setting.epsilon.clone()),
                        iterations,
                        seed,
                        ..EaConfig::default()
                    };
                    let r = pbg_ea(ev, &setting.objectives, &cfg);
                    progress();
                    r
                })
                .collect::<Result<_>>()?;
            let ce: Vec<f64> = results
                .iter()
                .map(|r| convergence_error(&r.front, &front))
                .collect();
            let rr: Vec<f64> = results
                .iter()
                .map(|r| {
                    representation_ratio(&r.front, &front, &setting.objectives, &setting.epsilon)
                })
                .collect();
            let evaluations =
                results.iter().map(|r| r.evaluations as f64).sum::<f64>() / runs as f64;
            Ok(Outcome {
                lattice_size: ev.lattice().size(),
                front_size: front.len(),
                ce: mean_var(&ce),
                rr: mean_var(&rr),
                evaluations,
                archive: results[0].front.clone(),
                front,
                setting,
            })
        })
        .collect()
}

fn objectives_name(o: &[Objective]) -> String {
    o.iter().map(|x| x.name()).collect::<Vec<_>>().join(", ")
}

fn eps(e: &[f64]) -> String {
    e.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn mv(x: Option<(f64, f64)>) -> String {
    x.map_or("–".into(), |(m, v)| format!("{m:.3e} / {v:.1e}"))
}

/// The Markdown report: our values beside the paper's.
pub fn markdown(outcomes: &[Outcome], runs: usize, iterations: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# DBSEC 2010 reproduction on adult ({runs} PBG-EA runs of 25 × {iterations} per setting)\n"
    );
    let _ = writeln!(
        s,
        "Values are mean / sample variance. Paper values from Dewri et al., DBSEC 2010, Tables 1(b), 2(a), 2(b).\n"
    );
    let _ = writeln!(s, "## Table 1(b): CE and RR, ε all ones\n");
    let _ = writeln!(
        s,
        "| objectives | front size | CE (ours) | CE (paper) | RR (ours) | RR (paper) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for o in outcomes.iter().filter(|o| o.setting.table.contains("1(b)")) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            objectives_name(&o.setting.objectives),
            o.front_size,
            mv(Some(o.ce)),
            mv(o.setting.paper.ce),
            mv(Some(o.rr)),
            mv(o.setting.paper.rr)
        );
    }
    let _ = writeln!(
        s,
        "\n## Table 2(a): CE and RR for other discretization vectors\n"
    );
    let _ = writeln!(
        s,
        "| objectives | ε | CE (ours) | CE (paper) | RR (ours) | RR (paper) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for o in outcomes.iter().filter(|o| o.setting.table == "2(a)") {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            objectives_name(&o.setting.objectives),
            eps(&o.setting.epsilon),
            mv(Some(o.ce)),
            mv(o.setting.paper.ce),
            mv(Some(o.rr)),
            mv(o.setting.paper.rr)
        );
    }
    let _ = writeln!(
        s,
        "\n## Table 2(b): mean unique node evaluations, ε all ones\n"
    );
    let _ = writeln!(s, "| objectives | lattice | ours | paper |");
    let _ = writeln!(s, "|---|---|---|---|");
    for o in outcomes.iter().filter(|o| o.setting.table.contains("2(b)")) {
        let pct = |e: f64| format!("{e:.0} ({:.1} %)", 100.0 * e / o.lattice_size as f64);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            objectives_name(&o.setting.objectives),
            o.lattice_size,
            pct(o.evaluations),
            o.setting.paper.evaluations.map_or("–".into(), pct)
        );
    }
    s
}

/// The CSV report: one row per setting.
pub fn csv(outcomes: &[Outcome]) -> String {
    let mut s = String::from(
        "table,objectives,epsilon,lattice_size,front_size,ce_mean,ce_var,rr_mean,rr_var,evaluations_mean,paper_ce_mean,paper_ce_var,paper_rr_mean,paper_rr_var,paper_evaluations\n",
    );
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    for o in outcomes {
        let p = &o.setting.paper;
        let _ = writeln!(
            s,
            "\"{}\",\"{}\",\"{}\",{},{},{},{},{},{},{},{},{},{},{},{}",
            o.setting.table,
            objectives_name(&o.setting.objectives),
            eps(&o.setting.epsilon),
            o.lattice_size,
            o.front_size,
            o.ce.0,
            o.ce.1,
            o.rr.0,
            o.rr.1,
            o.evaluations,
            opt(p.ce.map(|x| x.0)),
            opt(p.ce.map(|x| x.1)),
            opt(p.rr.map(|x| x.0)),
            opt(p.rr.map(|x| x.1)),
            opt(p.evaluations)
        );
    }
    s
}

/// Refuses a report directory where any of the reports' names is a named pipe or a device. Run
/// before the experiment's work (the CLI does) and again by [`write_reports`] before its first
/// file: one such name found later left a partial set (the Markdown written, the figures not).
pub fn refuse_special_targets(dir: &Path) -> Result<()> {
    let figures = settings()
        .into_iter()
        .filter_map(|s| s.figure.map(|(stem, _, _)| format!("{stem}.svg")));
    for name in ["dbsec2010.md".to_string(), "dbsec2010.csv".to_string()]
        .into_iter()
        .chain(figures)
    {
        crate::io::refuse_special_target(&dir.join(name))?;
    }
    Ok(())
}

/// Writes `dbsec2010.md`, `dbsec2010.csv` and one SVG per figure into `dir` (each atomically);
/// returns the files written.
pub fn write_reports(
    outcomes: &[Outcome],
    runs: usize,
    iterations: usize,
    dir: &Path,
) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| PbgError::io(dir, e))?;
    refuse_special_targets(dir)?;
    let mut written = Vec::new();
    for (name, text) in [
        ("dbsec2010.md", markdown(outcomes, runs, iterations)),
        ("dbsec2010.csv", csv(outcomes)),
    ] {
        let path = dir.join(name);
        let file = AtomicFile::new(&path)?;
        std::fs::write(file.temp_path(), text).map_err(|e| PbgError::io(file.temp_path(), e))?;
        file.commit()?;
        written.push(path);
    }
    for o in outcomes {
        if let Some((stem, x, y)) = o.setting.figure {
            let path = dir.join(format!("{stem}.svg"));
            let axes = [o.setting.objectives[x], o.setting.objectives[y]];
            let project = |ps: &[Point]| -> Vec<Point> {
                ps.iter()
                    .map(|p| Point {
                        node: p.node.clone(),
                        values: vec![p.values[x], p.values[y]],
                    })
                    .collect()
            };
            let title = format!(
                "{}: exact front vs PBG-EA archive (run 0)",
                objectives_name(&o.setting.objectives)
            );
            front_svg(
                &path,
                &title,
                &axes,
                &[
                    ("exact front", &project(&o.front)),
                    ("PBG-EA archive", &project(&o.archive)),
                ],
            )?;
            written.push(path);
        }
    }
    Ok(written)
}
