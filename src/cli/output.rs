//! The output directory of a command that stages its whole output
//! (`align`, `render` in its three forms, `simulate`, `synth`), opened
//! through the one writer discipline ([`physfit::io::output_dir`]); `fit`
//! opens its own through its session.

use std::path::Path;

use anyhow::Result;

use physfit::io::Input;
use physfit::io::Owned;
use physfit::io::{Earlier, OutputDir, OutputPlan};

/// Opens `out` for `command` writing `owned` and reading `inputs`: an
/// earlier run's files are refused unless `force`, which replaces them
/// (and only them) at the commit.
pub fn open_output(
    out: &Path,
    command: &str,
    owned: Vec<Owned>,
    inputs: Vec<Input>,
    force: bool,
) -> Result<OutputDir> {
    let earlier = if force {
        Earlier::Replace
    } else {
        Earlier::Refuse
    };
    Ok(OutputDir::open(
        out,
        OutputPlan::staged(command, owned, inputs),
        earlier,
    )?)
}
