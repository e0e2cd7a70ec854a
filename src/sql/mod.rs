//! The DataFusion face: SQL functions over the engine. Each function lives in its own file with
//! its documentation and an example; all of them call the engine, none re-implements evaluation.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! pbg::sql::register(&ctx);
//! ctx.sql("SELECT * FROM pbg_profile('adult', 'datasets/adult/adult.toml')").await?.collect().await?;
//! ctx.sql("SELECT k, glm FROM pbg_evaluate('adult', '1,1,1,1,1,1,1,1')").await?.show().await?;
//! # Ok(()) }
//! ```

mod beta_likeness;
mod bitmap_cardinality;
mod bitmap_contains;
mod class_bitmap;
mod cluster_pins;
mod copy_guard;
mod delta_disclosure;
mod emd_equal;
mod emd_hierarchical;
mod emd_ordered;
mod entropy_l;
mod generalize;
mod histogram;
mod max_frequency;
mod pbg_anonymize;
mod pbg_compare;
mod pbg_correlation;
mod pbg_evaluate;
mod pbg_lattice;
mod pbg_profile;
mod pbg_search;
mod pbg_slice;
mod pbg_vectors;
mod pbg_verify;
mod pinned_input;
mod planned_view;
mod recursive_cl;
mod registry;
mod steady_input;
mod table;

use std::sync::Arc;

use datafusion::catalog::TableFunctionImpl;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

pub use generalize::{decode_generalize_udf, encode_generalize_udf};
pub use registry::{ForeignTables, Registry, context_of, is_foreign};

/// Where the distance aggregates find the session that declared a profile (to read its whole
/// sensitive distribution): `None` when there is none in this process.
pub type SessionSource = Arc<dyn Fn() -> Option<SessionState> + Send + Sync>;

/// Every pbg function, bound to one registry: what [`register`] adds to a session, and what the
/// Python module exports to a datafusion-python session through datafusion-ffi.
pub struct Functions {
    /// The registry that names profiles and hierarchies for them.
    pub registry: Arc<Registry>,
    /// The scalar functions.
    pub scalar: Vec<ScalarUDF>,
    /// The aggregate functions.
    pub aggregate: Vec<AggregateUDF>,
    /// The table functions, by SQL name.
    pub table: Vec<(&'static str, Arc<dyn TableFunctionImpl>)>,
}

/// Every pbg function over `registry`; the distance aggregates read profiles through `session`.
pub fn functions_with(registry: Arc<Registry>, session: SessionSource) -> Functions {
    let scalar = vec![
        ScalarUDF::from(generalize::GeneralizeFunc::new(registry.clone())),
        ScalarUDF::from(bitmap_cardinality::BitmapCardinalityFunc::new()),
        ScalarUDF::from(bitmap_contains::BitmapContainsFunc::new()),
    ];
    let mut aggregate = vec![
        AggregateUDF::from(entropy_l::entropy_l()),
        AggregateUDF::from(max_frequency::max_frequency()),
        AggregateUDF::from(recursive_cl::recursive_cl()),
        AggregateUDF::from(class_bitmap::ClassBitmapFunc::new()),
        // The verifier's fingerprint, also on a cluster's executors.
        AggregateUDF::from(crate::release::FingerprintFunc::new()),
    ];
    let profiles = histogram::Profiles {
        registry: registry.clone(),
        session,
    };
    for f in [
        emd_equal::emd_equal,
        emd_ordered::emd_ordered,
        emd_hierarchical::emd_hierarchical,
        beta_likeness::beta_likeness,
        delta_disclosure::delta_disclosure,
    ] {
        aggregate.push(AggregateUDF::from(f(profiles.clone())));
    }
    let r = || registry.clone();
    let table: Vec<(&'static str, Arc<dyn TableFunctionImpl>)> = vec![
        (
            "pbg_evaluate",
            Arc::new(pbg_evaluate::PbgEvaluateFunc::new(r())),
        ),
        (
            "pbg_lattice",
            Arc::new(pbg_lattice::PbgLatticeFunc::new(r())),
        ),
        ("pbg_search", Arc::new(pbg_search::PbgSearchFunc::new(r()))),
        (
            "pbg_vectors",
            Arc::new(pbg_vectors::PbgVectorsFunc::new(r())),
        ),
        (
            "pbg_profile",
            Arc::new(pbg_profile::PbgProfileFunc::new(r())),
        ),
        ("pbg_verify", Arc::new(pbg_verify::PbgVerifyFunc::new(r()))),
        (
            "pbg_anonymize",
            Arc::new(pbg_anonymize::PbgAnonymizeFunc::new(r())),
        ),
        (
            "pbg_compare",
            Arc::new(pbg_compare::PbgCompareFunc::new(r())),
        ),
        (
            "pbg_correlation",
            Arc::new(pbg_correlation::PbgCorrelationFunc::new(r())),
        ),
        ("pbg_slice", Arc::new(pbg_slice::PbgSliceFunc::new(r()))),
    ];
    Functions {
        registry,
        scalar,
        aggregate,
        table,
    }
}

/// Registers every pbg function on `ctx` and returns the registry that names profiles and
/// hierarchies for them (add profiles to it before querying).
pub fn register(ctx: &SessionContext) -> Arc<Registry> {
    guard_writes(ctx);
    let registry = Arc::new(Registry::default());
    // The distance aggregates read profiles through the session they are called in, and the
    // COPY guard finds there the files of a profile's table; a weak reference, so that
    // registering them does not keep the session alive.
    let state = ctx.state_weak_ref();
    let session: SessionSource = Arc::new(move || state.upgrade().map(|s| s.read().clone()));
    ctx.add_analyzer_rule(Arc::new(copy_guard::CopyGuard {
        registry: registry.clone(),
        session: session.clone(),
    }));
    ctx.add_analyzer_rule(Arc::new(cluster_pins::ClusterPins {
        session: session.clone(),
    }));
    let all = functions_with(registry.clone(), session);
    for f in all.scalar {
        ctx.register_udf(f);
    }
    for f in all.aggregate {
        ctx.register_udaf(f);
    }
    for (name, f) in all.table {
        ctx.register_udtf(name, f);
    }
    registry
}

/// Makes `ctx`'s writes of local files (`COPY`, `INSERT INTO`) all-or-nothing
/// ([`crate::io::GuardedWrites`]): DataFusion finishes a failed write, which left part of a
/// release in the target, or an existing target empty. A physical optimizer rule can only be
/// added to a session by building its state again. The Arrow IPC format is guarded by a format
/// of pbg's ([`crate::io::GuardedArrowFormat`]), except on a cluster, whose plans must name
/// DataFusion's own formats to travel.
fn guard_writes(ctx: &SessionContext) {
    if ctx
        .state()
        .config()
        .get_extension::<crate::input::Distributed>()
        .is_none()
    {
        let guarded = Arc::new(crate::io::GuardedArrowFormatFactory);
        // Replacing a registered format cannot fail.
        let _ = ctx.state_ref().write().register_file_format(guarded, true);
    }
    let state = ctx.state();
    let rule = crate::io::GuardedWrites;
    use datafusion::physical_optimizer::PhysicalOptimizerRule;
    if state
        .physical_optimizers()
        .iter()
        .any(|r| r.name() == rule.name())
    {
        return;
    }
    let guarded = datafusion::execution::SessionStateBuilder::new_from_existing(state)
        .with_physical_optimizer_rule(Arc::new(rule))
        .build();
    *ctx.state_ref().write() = guarded;
}

/// The functions [`register`] adds, as (name, kind, one-line description): table functions with
/// their usage, scalar and aggregate functions with the first sentence of their documentation.
pub fn functions(ctx: &SessionContext) -> Vec<(String, &'static str, String)> {
    let mut out: Vec<(String, &'static str, String)> = [
        ("pbg_anonymize", pbg_anonymize::USAGE),
        ("pbg_compare", pbg_compare::USAGE),
        ("pbg_correlation", pbg_correlation::USAGE),
        ("pbg_evaluate", pbg_evaluate::USAGE),
        ("pbg_lattice", pbg_lattice::USAGE),
        ("pbg_profile", pbg_profile::USAGE),
        ("pbg_search", pbg_search::USAGE),
        ("pbg_slice", pbg_slice::USAGE),
        ("pbg_vectors", pbg_vectors::USAGE),
        ("pbg_verify", pbg_verify::USAGE),
    ]
    .into_iter()
    .map(|(n, u)| (n.to_string(), "table", u.to_string()))
    .collect();
    let first = |text: &str| {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        match text.find(". ") {
            Some(i) => text[..=i].to_string(),
            None => text,
        }
    };
    let pbg = registered_names();
    let state = ctx.state();
    for (name, f) in state.scalar_functions() {
        if pbg.contains(name) {
            let doc = f.documentation().map(|d| first(&d.description));
            out.push((name.clone(), "scalar", doc.unwrap_or_default()));
        }
    }
    for (name, f) in state.aggregate_functions() {
        if pbg.contains(name) {
            let doc = f.documentation().map(|d| first(&d.description));
            out.push((name.clone(), "aggregate", doc.unwrap_or_default()));
        }
    }
    out.sort_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(&b.0)));
    out
}

/// The scalar and aggregate functions [`register`] adds (those that run on every row, and so on a
/// cluster's executors), each bound to a fresh, empty registry.
pub fn row_functions() -> (Vec<Arc<ScalarUDF>>, Vec<Arc<AggregateUDF>>) {
    fn pbg_only<T>(
        all: &std::collections::HashMap<String, Arc<T>>,
        pbg: &std::collections::HashSet<String>,
    ) -> Vec<Arc<T>> {
        all.iter()
            .filter(|(name, _)| pbg.contains(*name))
            .map(|(_, f)| f.clone())
            .collect()
    }
    let ctx = SessionContext::new();
    register(&ctx);
    let pbg = registered_names();
    let state = ctx.state();
    (
        pbg_only(state.scalar_functions(), &pbg),
        pbg_only(state.aggregate_functions(), &pbg),
    )
}

/// Names of the scalar and aggregate functions [`register`] adds (those a fresh session gains).
fn registered_names() -> std::collections::HashSet<String> {
    let ctx = SessionContext::new();
    let before = names_of(&ctx);
    register(&ctx);
    names_of(&ctx)
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect()
}

fn names_of(ctx: &SessionContext) -> std::collections::HashSet<String> {
    let state = ctx.state();
    state
        .scalar_functions()
        .keys()
        .chain(state.aggregate_functions().keys())
        .cloned()
        .collect()
}
