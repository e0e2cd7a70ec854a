//! Reproductions of the papers' experiments.

pub mod dbsec2010;
