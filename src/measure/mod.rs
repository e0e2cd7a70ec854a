//! What a node is measured by: its indices (one list), per-tuple property vectors, the
//! suppression rule, quality index functions and search objectives.

pub mod distribution;
pub mod indices;
pub mod loss;
pub mod objective;
pub mod properties;
pub mod quality;
pub mod requirement;
pub mod suppression;
