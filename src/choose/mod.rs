//! Choosing nodes: the exact Pareto front and PBG-EA, policies that pick one node, dominance,
//! the EDBT comparators and the comparison of two nodes' property vectors.

pub mod comparators;
pub mod compare;
pub mod dominance;
pub mod optimal;
pub mod policy;
pub mod search;
