//! Subcommand implementations of the `physfit` binary (anyhow allowed here).

pub mod bench_mpm;
pub mod bench_raster;
pub mod bench_summary;
pub mod check;
pub mod render;
pub mod simulate;
