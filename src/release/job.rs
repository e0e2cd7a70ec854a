//! One anonymization job as every face runs it (the CLI's `anonymize`, the Python module's
//! `pbg.anonymize`): the node given or picked by a policy, the suppression rule that follows from
//! the requirements, the release written and verified by [`anonymize_together`], and the JSON report.

use std::path::Path;
use std::sync::Mutex;

use datafusion::prelude::SessionContext;
use serde_json::{Value, json};

use super::{ReleaseSummary, anonymize_together};
use crate::Evaluator;
use crate::error::{PbgError, Result};
use crate::evaluate::json::index_fields;
use crate::indices::{NodeIndices, Present};
use crate::io::AtomicFile;
use crate::lattice::Node;
use crate::policy::{Picked, Policy, PolicyText, Requirement, pick};
use crate::profile::Profile;
use crate::suppression::{RuleName, SuppressionRule};

/// What to release: an explicit node, or a policy that picks one.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// An explicit node `L1,L2,..` (exclusive with a pick).
    pub node: Option<String>,
    /// The policy of a pick (`comparator` set: `measure`, `lex`, `goal`, `wtd`); its
    /// requirements also check an explicit node before anything is written.
    pub policy: PolicyText,
    /// The suppression rule: `requirements` or `dbsec` (default: `requirements` when there are
    /// requirements, else `dbsec`).
    pub suppression_rule: Option<String>,
}

/// The suppression rule a job runs: named by `flag` (`requirements` or `dbsec`), else by the
/// `profile`, else the requirement rule when `require` holds a requirement; built from them.
pub fn suppression_rule(
    flag: Option<&str>,
    profile: Option<RuleName>,
    require: Option<&str>,
) -> Result<SuppressionRule> {
    let requirements = match require {
        Some(r) => Requirement::parse_list(r)?,
        None => Vec::new(),
    };
    let flag = flag
        .map(RuleName::parse)
        .transpose()
        .map_err(|m| PbgError::argument("--suppression-rule", m))?;
    let name = RuleName::choose(flag, profile, !requirements.is_empty());
    Ok(SuppressionRule::named(name, &requirements))
}

impl Job {
    /// Applies the job's suppression rule to `profile` (call before [`Job::run`]).
    pub fn apply_rule(&self, profile: &mut Profile) -> Result<()> {
        profile.suppression_rule = suppression_rule(
            self.suppression_rule.as_deref(),
            profile.rule_name,
            self.policy.require.as_deref(),
        )?;
        Ok(())
    }

    /// The policy of a pick (`None` for an explicit node); errors name the bad part.
    pub fn policy(&self, profile: &Profile) -> Result<Option<Policy>> {
        match (&self.node, &self.policy.comparator) {
            (None, None) => Err(PbgError::argument(
                "--node",
                "give --node L1,L2,... or --pick (with --require ... and a rule)".to_string(),
            )),
            (Some(_), Some(_)) => Err(PbgError::argument(
                "--node",
                "give either a node or a pick, not both".to_string(),
            )),
            (Some(_), None) => {
                // What only a pick reads is refused beside a node rather than ignored (the CLI's
                // flags conflict; the Python module ignored `minimize=` beside `node=`).
                let p = &self.policy;
                let pick_only = [
                    ("minimize", p.minimize.is_some()),
                    ("maximize", p.maximize.is_some()),
                    ("objectives", p.objectives.is_some()),
                    ("significance", p.significance.is_some()),
                    ("goal", p.goal.is_some()),
                    ("weights", p.weights.is_some()),
                    ("pick-evaluations", p.evaluations.is_some()),
                ];
                match pick_only.iter().find(|(_, given)| *given) {
                    Some((name, _)) => Err(PbgError::argument(
                        *name,
                        "belongs to a pick, and a node was given: drop it, or pick instead of giving the node"
                            .to_string(),
                    )),
                    None => Ok(None),
                }
            }
            (None, Some(_)) => Ok(Some(Policy::parse(
                &self.policy,
                Present::of_profile(profile),
            )?)),
        }
    }

    /// The node to release on `ev`: the pick of `policy`, or the explicit node checked against
    /// the requirements.
    fn choose(
        &self,
        ev: &Evaluator,
        policy: Option<&Policy>,
        picked_out: &Mutex<Option<Picked>>,
    ) -> Result<Node> {
        if let Some(p) = policy {
            let picked = pick(ev, p)?;
            let node = picked.node.clone();
            *picked_out.lock().unwrap_or_else(|e| e.into_inner()) = Some(picked);
            return Ok(node);
        }
        let Some(text) = &self.node else {
            return Err(PbgError::argument(
                "--node",
                "give --node L1,L2,... or --pick".to_string(),
            ));
        };
        let node = ev.parse_node(text)?;
        let require = match &self.policy.require {
            Some(r) => Requirement::parse_list(r)?,
            None => Vec::new(),
        };
        let present = Present::of(ev.dataset());
        for r in &require {
            r.measure.check_defined(present)?;
        }
        let ix = ev.evaluate(&node)?;
        for r in &require {
            if !r.holds(r.measure.of(&ix)) {
                return Err(PbgError::argument(
                    "--require",
                    format!(
                        "node {text} does not meet {} ({} = {})",
                        r.text(),
                        r.measure.name(),
                        r.measure.of(&ix)
                    ),
                ));
            }
        }
        Ok(node)
    }

    /// Runs the job over `profile` (its suppression rule applied by [`Job::apply_rule`]) in `ctx`:
    /// chooses the node on the class statistics, calls `on_node` with it (for what a face gathers
    /// while the statistics are held), writes `output` atomically and verifies it. Returns the
    /// report: the [`super::ReleaseSummary`] fields, every index, the suppression rule and the pick.
    /// `with_release` gets the report once the release is verified, before it is renamed into
    /// place, and returns files it wrote that land with it (a report page; see
    /// [`anonymize_together`]).
    pub fn run(
        &self,
        ctx: &SessionContext,
        profile: &Profile,
        output: &Path,
        on_node: &dyn Fn(&Evaluator, &Node) -> Result<()>,
        with_release: &dyn Fn(&Value) -> Result<Vec<AtomicFile>>,
        stage: &dyn Fn(&'static str),
    ) -> Result<Value> {
        let policy = self.policy(profile)?;
        let picked = Mutex::new(None);
        let notes = Mutex::new(Vec::new());
        let choose = |ev: &Evaluator| {
            let node = self.choose(ev, policy.as_ref(), &picked)?;
            *notes.lock().unwrap_or_else(|e| e.into_inner()) =
                super::release_notes(ev.dataset(), output);
            on_node(ev, &node)?;
            Ok(node)
        };
        let report = Mutex::new(None);
        let verified = |summary: &ReleaseSummary| {
            let mut r = serde_json::to_value(summary)
                .map_err(|e| PbgError::argument("report", e.to_string()))?;
            r["notes"] = json!(*notes.lock().unwrap_or_else(|e| e.into_inner()));
            let r = finish(r, &summary.indices, profile, &picked)?;
            let files = with_release(&r)?;
            *report.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            Ok(files)
        };
        anonymize_together(ctx, profile, &choose, output, &verified, stage)?;
        report
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .ok_or_else(|| PbgError::argument("report", "the release was never verified"))
    }

    /// Chooses the node on `ev` (the statistics of `profile`) under the profile's suppression rule
    /// as [`Job::run`] does, and reports it without writing anything (`output` null, `verified`
    /// false).
    pub fn dry_run(
        &self,
        ev: &Evaluator,
        profile: &Profile,
        on_node: &dyn Fn(&Evaluator, &Node) -> Result<()>,
    ) -> Result<Value> {
        let policy = self.policy(profile)?;
        let picked = Mutex::new(None);
        // The job's rule, whatever rule `ev` was built with (statistics loaded apart).
        let ev = &ev.with_rule(profile.suppression_rule.clone());
        let node = self.choose(ev, policy.as_ref(), &picked)?;
        on_node(ev, &node)?;
        let ix = ev.evaluate(&node)?;
        let rows = ev.dataset().num_tuples();
        let report = json!({
            "output": null,
            "node": node,
            "rows_in": rows,
            "rows_released": rows - ix.suppressed,
            "suppressed": ix.suppressed,
            "threshold": ix.threshold,
            "verified": false,
        });
        finish(report, &ix, profile, &picked)
    }
}

/// Adds every index (as `evaluate` prints them), the suppression rule and the pick to `report`.
fn finish(
    mut report: Value,
    indices: &NodeIndices,
    profile: &Profile,
    picked: &Mutex<Option<Picked>>,
) -> Result<Value> {
    let present = Present::of_profile(profile);
    report["indices"] = Value::Object(index_fields(indices, present));
    report["suppression_rule"] = Value::String(profile.suppression_rule.describe());
    if let Some(p) = &*picked.lock().unwrap_or_else(|e| e.into_inner()) {
        report["pick"] =
            serde_json::to_value(p).map_err(|e| PbgError::argument("report", e.to_string()))?;
    }
    Ok(report)
}
