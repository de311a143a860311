//! Benchmarks behind `physfit bench` (JSON output, figures recorded in
//! docs/benchmarks.md).

pub mod discretisation;
pub mod fit;
pub mod mpm;
pub mod raster;
