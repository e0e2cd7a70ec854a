//! The pins of a release's input on a Ballista cluster. A [`PinnedInput`] refuses to be
//! scanned once its table's files changed since the release's statistics were read; locally
//! that check runs when the scan is planned. On a cluster the scheduler plans the scans, from a
//! plan that can carry DataFusion's providers only: so this analyzer rule checks each pin on the
//! client, when a query is sent, and hands the scheduler the table below it. A view of a release
//! over files changed since it was created is refused there as it is locally (it was released
//! unchecked, under the old statistics).

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::common::{DataFusionError, Result};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::logical_expr::LogicalPlan;
use datafusion::optimizer::AnalyzerRule;

use super::SessionSource;
use super::pinned_input::PinnedInput;

/// The analyzer rule (registered by [`super::register`]): on a cluster session, every pinned
/// scan checked and replaced by its table.
pub struct ClusterPins {
    /// The session the pins are checked in (its object store lists the files again).
    pub session: SessionSource,
}

impl std::fmt::Debug for ClusterPins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterPins").finish_non_exhaustive()
    }
}

/// The pin a scan reads through, if any.
fn pin_of(node: &LogicalPlan) -> Option<Arc<dyn datafusion::catalog::TableProvider>> {
    let LogicalPlan::TableScan(scan) = node else {
        return None;
    };
    let provider = source_as_provider(&scan.source).ok()?;
    (provider.as_ref() as &dyn std::any::Any)
        .is::<PinnedInput>()
        .then_some(provider)
}

impl AnalyzerRule for ClusterPins {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // Most plans hold no pin: the session is not copied for them.
        let mut pinned = false;
        plan.apply_with_subqueries(|node| {
            pinned = pin_of(node).is_some();
            Ok(match pinned {
                true => TreeNodeRecursion::Stop,
                false => TreeNodeRecursion::Continue,
            })
        })?;
        if !pinned {
            return Ok(plan);
        }
        let Some(state) = (self.session)() else {
            return Ok(plan);
        };
        if state
            .config()
            .get_extension::<crate::input::Distributed>()
            .is_none()
        {
            return Ok(plan); // checked when the scan is planned, here
        }
        let unpinned = plan.transform_up_with_subqueries(|node| {
            let Some(provider) = pin_of(&node) else {
                return Ok(Transformed::no(node));
            };
            let LogicalPlan::TableScan(mut scan) = node else {
                return internal(); // pin_of saw a scan
            };
            let Some(pin) = (provider.as_ref() as &dyn std::any::Any).downcast_ref::<PinnedInput>()
            else {
                return internal();
            };
            pin.refuse_order_unplanned()?;
            crate::input::block_on(pin.check(&state))
                .map_err(|e| DataFusionError::External(Box::new(e)))??;
            scan.source = provider_as_source(pin.inner().clone());
            Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
        })?;
        Ok(unpinned.data)
    }

    fn name(&self) -> &str {
        "pbg_cluster_pins"
    }
}

/// A scan [`pin_of`] found but that is not one.
fn internal<T>() -> Result<T> {
    Err(DataFusionError::Internal(
        "pbg_cluster_pins: a pinned scan changed under the rule".into(),
    ))
}
