//! # pbg — property based generalization over Arrow, Parquet and DataFusion
//!
//! The engine is a pipeline, one module per stage:
//!
//! - [`input`]: the data plane — any table DataFusion can read (a file, directory or glob of CSV
//!   or Parquet files, or a registered table), opened as a DataFrame; CSV read as text.
//! - [`encode`]: the [`profile`], the generalization [`hierarchy`]s, pass 1 ([`statistics`]: a
//!   GROUP BY in DataFusion) and the one encoder that turns rows or statistics into integer codes.
//! - [`classes`]: equivalence classes as cell tables, rolled up from finer nodes.
//! - [`measure`]: the [`indices`] of a node (one list), per-tuple [`properties`], the
//!   [`suppression`] rule, [`quality`] index functions and search [`objective`]s.
//! - [`evaluate`]: the [`Evaluator`] — direct evaluation, roll-ups, the index pass, the sweep of
//!   the [`lattice`].
//! - [`choose`]: the exact front and PBG-EA ([`search`]), [`policy`] picks, [`dominance`],
//!   [`comparators`] and [`compare`].
//! - [`release`]: pass 2 as a DataFusion plan, and the one verifier; [`io`] writes files
//!   atomically.
//! - [`slicing`]: l-diverse sliced releases.
//!
//! The DataFusion functions ([`sql`]), the [`cluster`] roles (Ballista) and the CLI are thin faces
//! over these stages; [`tools`]
//! (scale data, experiments, plots) sits apart from the engine.
//!
//! ```no_run
//! use std::sync::Arc;
//! use pbg::{Dataset, Evaluator, Profile};
//!
//! let profile = Profile::from_toml_file("datasets/adult/adult.toml".as_ref())?;
//! let evaluator = Evaluator::new(Arc::new(Dataset::load_statistics(&profile)?))?;
//! let indices = evaluator.evaluate(&[1, 1, 1, 1, 1, 1, 1, 1])?;
//! println!("k = {}, GLM = {}", indices.k, indices.glm);
//! # Ok::<(), pbg::PbgError>(())
//! ```

pub mod choose;
pub mod classes;
pub mod cluster;
pub mod encode;
pub mod error;
pub mod evaluate;
pub mod input;
pub mod io;
pub mod measure;
pub mod release;
pub mod slicing;
pub mod sql;
pub mod tools;

// Each stage's modules, also at the crate root.
pub use choose::{comparators, compare, dominance, optimal, policy, search};
pub use encode::{hierarchy, profile, statistics};
pub use evaluate::lattice;
pub use measure::{
    distribution, indices, loss, objective, properties, quality, requirement, suppression,
};
pub use tools::{experiment, generate, plot};

pub use encode::Dataset;
pub use error::{PbgError, Result};
pub use evaluate::{Evaluator, NodeTables};
pub use indices::NodeIndices;
pub use lattice::{Lattice, Node};
pub use objective::Objective;
pub use profile::{Profile, SuppressionLimit};
