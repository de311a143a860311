//! Subcommand implementations of the `physfit` binary (anyhow allowed here).

pub mod bench_raster;
pub mod check;
pub mod render;
