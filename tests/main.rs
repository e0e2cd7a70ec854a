//! The single integration-test binary (one link of DataFusion for all tests).

mod adult;
mod cli_errors;
mod cluster;
mod common;
mod csv_release;
mod csv_scan;
mod distances;
mod fuzz;
mod fuzz_cli;
mod golden;
mod init;
mod naive;
mod optimal;
mod release;
mod reliability;
mod rollup;
mod search;
mod singletons;
mod slicing;
mod slicing_diversity;
mod sql;
mod streaming;
mod wide;
