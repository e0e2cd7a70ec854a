//! Slicing (IJERT 2013, after Li et al.): attribute correlation first; attribute and tuple
//! partitioning and the slicing releases build on it.

pub mod correlation;
