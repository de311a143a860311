//! Subcommand implementations of the `physfit` binary (anyhow allowed here).

pub mod bench;
pub mod check;
pub mod simulate;
