//! Subcommand implementations of the `physfit` binary (anyhow allowed here).

pub mod align;
pub mod bench_discretisation;
pub mod bench_fit;
pub mod bench_mpm;
pub mod bench_raster;
pub mod bench_summary;
pub mod check;
mod check_fall;
pub mod check_fit;
pub mod count;
mod discretisation_line;
mod exact_step_line;
pub mod fit;
mod fit_args;
mod fit_phase;
mod fit_progress;
mod fitted_line;
pub mod interrupt;
pub mod log_setup;
pub mod memory_check;
pub mod opaque_png;
pub mod output;
mod plain_progress;
pub mod relative_path;
pub mod render;
pub mod render_args;
pub mod render_motion;
pub mod render_splats;
pub mod side_by_side;
pub mod simulate;
pub mod synth;
pub mod unquoted_glob;
pub mod view_selection;

use anyhow::{Context, Result};

/// Frames `physfit simulate` and `physfit render --params` write when
/// neither `--frames` nor the scene's reference frames say. Like every
/// frame count (docs/scene.md § Frame counts) it counts the rest frame 0:
/// frames 0..47.
pub const DEFAULT_FRAMES: usize = 48;

/// Parses `WxH`.
pub fn parse_size(s: &str) -> Result<(u32, u32)> {
    let (w, h) = s
        .split_once(['x', 'X'])
        .with_context(|| format!("size '{s}' must look like 512x512"))?;
    let w: u32 = w
        .trim()
        .parse()
        .with_context(|| format!("bad width in size '{s}'"))?;
    let h: u32 = h
        .trim()
        .parse()
        .with_context(|| format!("bad height in size '{s}'"))?;
    anyhow::ensure!(w > 0 && h > 0, "size '{s}' must be positive");
    Ok((w, h))
}
