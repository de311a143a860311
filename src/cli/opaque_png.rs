//! Writing a rasterizer read-back as an opaque PNG, shared by `render`,
//! `simulate` and `synth`.

use std::path::Path;

use anyhow::{Context, Result};

use physfit::io::shown;
use physfit::scene::write_png;

/// Writes a render read back from the rasterizer (colour composited over
/// the background, alpha its coverage) as an opaque 8-bit PNG (3DGS
/// colours: `round(255·v)`, no transfer curve), atomically. The colour is
/// already composited over the background, so the PNG's alpha is 1:
/// storing the coverage as straight alpha would make viewers composite
/// twice (fringes). Shared by `render`, `simulate` and `synth`.
pub fn write_opaque_png(
    path: &Path,
    width: u32,
    height: u32,
    mut pixels: Vec<[f32; 4]>,
) -> Result<()> {
    for p in &mut pixels {
        p[3] = 1.0;
    }
    write_png(path, width, height, &pixels).with_context(|| format!("writing {}", shown(path)))?;
    Ok(())
}
