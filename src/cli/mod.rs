//! Subcommand implementations of the `physfit` binary (anyhow allowed here).

pub mod check;
