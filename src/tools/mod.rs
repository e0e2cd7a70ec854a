//! Apart from the engine: scale data generation, the papers' experiments and SVG plots. They use
//! the engine like any other face and nothing in the engine uses them.

pub mod experiment;
pub mod generate;
pub mod plot;
