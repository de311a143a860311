//! `physfit render scene.toml --out DIR [--camera I] [--size WxH]`: renders
//! the scene's Gaussians (at rest) from its cameras with the GPU rasterizer
//! and writes one opaque 8-bit PNG (3DGS colours: `round(255·v)`, no transfer curve) per view (`DIR/<view name>.png`),
//! composited over the scene's background colour.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use physfit::gpu::GpuContext;
use physfit::scene::frames::write_png;
use physfit::scene::scene::Scene;
use physfit::scene::Camera;
use physfit::splat::{Rasterizer, SplatBuffers};

use super::parse_size;

/// Options of `physfit render`.
#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The scene description.
    pub scene: PathBuf,
    /// Output directory (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Render only view number I (0-based, in scene.toml order).
    #[arg(long)]
    pub camera: Option<usize>,
    /// Image size WxH (square pixels, horizontal field of view kept); default: the camera's.
    #[arg(long)]
    pub size: Option<String>,
}

/// Renders `splats` from `camera` over `background` and writes the image to
/// `path` as an opaque 8-bit PNG (3DGS colours: `round(255·v)`, no transfer curve) (atomically). The colour is already
/// composited over the background, so the PNG's alpha is 1: storing the
/// coverage as straight alpha would make viewers composite twice (fringes).
/// Shared by `render` and `simulate`.
pub fn render_png(
    ctx: &GpuContext,
    raster: &mut Rasterizer,
    splats: &SplatBuffers,
    camera: &Camera,
    background: [f32; 3],
    path: &Path,
) -> Result<()> {
    let frame = raster.render(ctx, splats, camera, background)?;
    let pixels = raster.read_image(ctx, &frame)?;
    write_opaque_png(path, camera.width, camera.height, pixels)
}

/// Writes a render read back from the rasterizer (colour composited over
/// the background, alpha its coverage) as an opaque 8-bit PNG, atomically
/// (see [`render_png`] for why the alpha is 1). Shared by `render`,
/// `simulate` and `synth`.
pub fn write_opaque_png(
    path: &Path,
    width: u32,
    height: u32,
    mut pixels: Vec<[f32; 4]>,
) -> Result<()> {
    for p in &mut pixels {
        p[3] = 1.0;
    }
    write_png(path, width, height, &pixels)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Runs `physfit render`.
pub fn run(args: &RenderArgs) -> Result<()> {
    let scene = Scene::load(&args.scene)?;
    let views: Vec<_> = match args.camera {
        Some(i) => {
            let view = scene.views.get(i).with_context(|| {
                format!(
                    "--camera {i}: {} has {} view(s), numbered 0..{}",
                    args.scene.display(),
                    scene.views.len(),
                    scene.views.len()
                )
            })?;
            vec![view]
        }
        None => scene.views.iter().collect(),
    };
    let size = args.size.as_deref().map(parse_size).transpose()?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating output directory {}", args.out.display()))?;

    let ctx = GpuContext::new(&Default::default())?;
    let mut raster = Rasterizer::new(&ctx)?;
    let splats = SplatBuffers::upload(&ctx, scene.gaussians())?;
    let bar = ProgressBar::new(views.len() as u64).with_style(
        ProgressStyle::with_template("rendering {bar:30} {pos}/{len} {msg}")
            .expect("static template"),
    );
    for view in views {
        bar.set_message(view.name.clone());
        let camera = match size {
            Some((w, h)) => view.camera.resized(w, h),
            None => view.camera.clone(),
        };
        let path = args.out.join(format!("{}.png", view.name));
        render_png(&ctx, &mut raster, &splats, &camera, scene.background, &path)
            .with_context(|| format!("rendering view '{}'", view.name))?;
        bar.inc(1);
        log::info!("wrote {}", path.display());
    }
    bar.finish_and_clear();
    Ok(())
}
