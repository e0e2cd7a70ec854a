//! Equivalence classes by hash group-by of packed generalized codes.
//!
//! A node's classes are kept as *cell tables*: the counts of (class key, value) pairs, sorted, for
//! the sensitive attribute and (with CM) the class label. Cell tables roll up: a coarser node's
//! table is computed from a finer node's table, never from the rows again. Membership (which rows
//! form a class) is a roaring bitmap per class, built only when rows are needed.

mod cells;
pub(crate) mod counter;
mod dense;
pub(crate) mod key;
mod membership;
mod order;
mod sparse;

pub use cells::{Cell, CellTable, ClassCells, ClassSizes};
pub use key::KeyLayout;
pub use membership::EquivalenceClasses;
