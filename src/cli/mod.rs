//! Subcommands of the `physfit` binary (anyhow errors live here and in main.rs).

pub mod bench_raster;
