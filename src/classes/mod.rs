//! Equivalence classes by hash group-by of generalized codes: packed into one key when they fit,
//! named by their first row otherwise (`wide`).
//!
//! A node's classes are kept as *cell tables*: one record per class in key order with the counts of
//! the sensitive attribute's values (and, with CM, another table for the class label) — dense
//! histograms for small value domains (`dense`), value cells otherwise (`sparse`). Cell tables
//! roll up: a coarser node's table is computed from a finer node's table in coarser-key order
//! (`order`), never from the rows again. Membership (which rows
//! form a class) is a roaring bitmap per class, built only when rows are needed.

mod cells;
mod dense;
pub(crate) mod group;
pub(crate) mod key;
mod membership;
mod order;
mod sparse;
pub(crate) mod wide;

pub(crate) use cells::NodeGather;
pub use cells::{CellTable, ClassCells, ClassSizes, RowKeys, first_rows_of_all, row_class_keys};
pub use dense::Histogram;
pub(crate) use dense::popcount16;
pub(crate) use group::{CHUNK_ROWS, PartCounts, PartKeys, SUB_PARTS};
pub use key::{ClassKeys, KeyLayout, NodeKeys};
pub use membership::EquivalenceClasses;
pub use sparse::Cell;
