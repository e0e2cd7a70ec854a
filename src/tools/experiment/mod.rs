//! Reproductions of the papers' experiments.

pub mod classifiers;
pub mod dbsec2010;
pub mod slicing_utility;
