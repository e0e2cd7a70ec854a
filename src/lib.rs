//! # pbg — property based generalization over Arrow, Parquet and DataFusion
//!
//! The engine is a pipeline over DataFusion: [`input`] opens any table DataFusion can read (files,
//! directories, globs, registered tables), [`statistics`] runs pass 1 there (a GROUP BY into class
//! statistics), [`hierarchy`] holds the DGHs, [`encode`] turns values into integer codes once, [`classes`] groups rows into equivalence classes (and rolls
//! coarser nodes up from finer ones), [`evaluate`] computes every index of a node ([`indices`]) and
//! sweeps the [`lattice`], [`properties`] gives per-tuple property vectors, [`search`] and
//! [`policy`] find and choose nodes, [`release`] builds the release of a node as a DataFusion plan
//! and verifies what was written with one verifier, and [`slicing`] builds l-diverse
//! sliced releases. [`generate`] makes scale data; [`experiment`] reproduces the papers. The CLI
//! and the DataFusion functions ([`sql`]) are thin faces over this library.
//!
//! ```no_run
//! use std::sync::Arc;
//! use pbg::{Dataset, Evaluator, Profile};
//!
//! let profile = Profile::from_toml_file("datasets/adult/adult.toml".as_ref())?;
//! let evaluator = Evaluator::new(Arc::new(Dataset::load(&profile)?))?;
//! let indices = evaluator.evaluate(&[1, 1, 1, 1, 1, 1, 1, 1])?;
//! println!("k = {}, GLM = {}", indices.k, indices.glm);
//! # Ok::<(), pbg::PbgError>(())
//! ```

pub mod classes;
pub mod comparators;
pub mod compare;
pub mod dominance;
pub mod encode;
pub mod error;
pub mod evaluate;
pub mod experiment;
pub mod generate;
pub mod hierarchy;
pub mod indices;
pub mod input;
pub mod io;
pub mod lattice;
pub mod objective;
pub mod plot;
pub mod policy;
pub mod profile;
pub mod properties;
pub mod quality;
pub mod release;
pub mod search;
pub mod slicing;
pub mod sql;
pub mod statistics;
pub mod suppression;

pub use encode::Dataset;
pub use error::{PbgError, Result};
pub use evaluate::{Evaluator, NodeTables};
pub use indices::NodeIndices;
pub use lattice::{Lattice, Node};
pub use objective::Objective;
pub use profile::{Profile, SuppressionLimit};
