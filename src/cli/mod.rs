//! Subcommands of the `physfit` binary (anyhow allowed here).

pub mod bench;
