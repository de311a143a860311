//! `physfit bench`: timings on the present adapter, printed as JSON.

pub mod raster;
