//! `physfit render scene.toml --out DIR [--camera NAME|INDEX]... [--size WxH] [--force]`:
//! renders the scene's Gaussians (at rest) from its cameras with the GPU rasterizer
//! and writes one opaque 8-bit PNG (3DGS colours: `round(255·v)`, no transfer curve) per view (`DIR/<view name>.png`),
//! composited over the scene's background colour. With `--params
//! OUT/drivers.safetensors` it renders the fitted object in motion under
//! new interactions instead ([`super::render_motion`]). With `--splats GLOB`
//! it renders a sequence of posed splat files, one per frame, as reference
//! frames `DIR/<view>/frame_NNNN.png` ([`super::render_splats`]).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::SceneRenderer;
use physfit::gpu::GpuContext;
use physfit::interact::InteractionFlags;
use physfit::scene::frames::write_png;
use physfit::scene::scene::Scene;
use physfit::scene::Camera;

use physfit::io::shown::shown;

use physfit::io::owned::Owned;
use physfit::scene::inputs::scene_inputs;

use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::parse_size;

/// What `--color-by` colours the splats by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ColorBy {
    /// The colour map of the fitted log10 E (world units), with a colour bar.
    Stiffness,
}

/// Options of `physfit render`.
#[derive(Args, Debug)]
pub struct RenderArgs {
    /// The scene description.
    pub scene: PathBuf,
    /// Output directory (created if missing; refused when it holds an
    /// earlier render's files, unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Render only this view: its name or its number (0-based, in
    /// scene.toml order); repeatable. Default: every view.
    #[arg(long)]
    pub camera: Vec<String>,
    /// Image size WxH (square pixels, horizontal field of view kept); default: the camera's.
    #[arg(long)]
    pub size: Option<String>,
    /// The fit's drivers.safetensors: simulate the fitted object and write
    /// a PNG sequence and a looping GIF per view (`DIR/<view>/frame_NNNN.png`,
    /// `DIR/<view>.gif`).
    #[arg(long)]
    pub params: Option<PathBuf>,
    /// Render these splat files (a quoted glob such as 'out/frame_*.ply',
    /// sorted by file name), each the scene's splats posed for one frame,
    /// to `DIR/<view>/frame_NNNN.png` (file k is frame k), a folder a
    /// view's `frames` can name.
    #[arg(long, conflicts_with = "params")]
    pub splats: Option<String>,
    /// With --params: frames written, the rest frame 0 included, so N gives
    /// frame_0000 .. frame_{N−1} (docs/scene.md § Frame counts; default:
    /// the scene's reference frame count, else 48).
    #[arg(long)]
    pub frames: Option<usize>,
    /// With --params: the camera circles the object's centre by this many
    /// degrees over the sequence, at the scene camera's distance and height.
    #[arg(long, allow_hyphen_values = true)]
    pub orbit: Option<f32>,
    /// With --params: an [[interactions]] file (docs/scene.md "Interactions file").
    #[arg(long)]
    pub interactions: Option<PathBuf>,
    /// With --params: initial velocity VX,VY,VZ (world units/s) added to the start.
    #[arg(long, allow_hyphen_values = true)]
    pub velocity: Option<String>,
    /// With --velocity: only inside the box X0,Y0,Z0..X1,Y1,Z1 (world units).
    #[arg(long, allow_hyphen_values = true)]
    pub in_box: Option<String>,
    /// With --params: an impulse "centre=X,Y,Z;radius=R;acceleration=AX,AY,AZ;start=T0;end=T1"
    /// (world units, seconds); repeatable.
    #[arg(long, allow_hyphen_values = true)]
    pub impulse: Vec<String>,
    /// With --params: gravity GX,GY,GZ (world units/s²) in place of the scene's.
    #[arg(long, allow_hyphen_values = true)]
    pub gravity: Option<String>,
    /// With --params: start from rest instead of the fitted initial velocity.
    #[arg(long)]
    pub from_rest: bool,
    /// With --params: colour the splats by the fitted stiffness (colour bar added).
    #[arg(long, value_enum)]
    pub color_by: Option<ColorBy>,
    /// With --params: each frame beside the scene's reference frame, with
    /// the view's colour correction (`views[i].color_correction`).
    #[arg(long)]
    pub side_by_side: bool,
    /// Replace an earlier render's files in the output directory (only those).
    #[arg(long)]
    pub force: bool,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

impl RenderArgs {
    /// The interaction flags as given.
    pub fn interaction_flags(&self) -> InteractionFlags {
        InteractionFlags {
            velocity: self.velocity.clone(),
            in_box: self.in_box.clone(),
            impulses: self.impulse.clone(),
            gravity: self.gravity.clone(),
            from_rest: self.from_rest,
        }
    }

    /// The flags that only make sense with `--params`, when given.
    fn motion_flags(&self) -> Vec<&'static str> {
        let flags = self.interaction_flags();
        [
            ("--frames", self.frames.is_some()),
            ("--orbit", self.orbit.is_some()),
            ("--interactions", self.interactions.is_some()),
            ("--velocity", flags.velocity.is_some()),
            ("--in-box", flags.in_box.is_some()),
            ("--impulse", !flags.impulses.is_empty()),
            ("--gravity", flags.gravity.is_some()),
            ("--from-rest", flags.from_rest),
            ("--color-by", self.color_by.is_some()),
            ("--side-by-side", self.side_by_side),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }
}

/// The views `cameras` names (names or 0-based numbers; all views when
/// empty), each with its camera at `size`.
pub fn resolve_views(
    scene: &Scene,
    scene_path: &Path,
    cameras: &[String],
    size: Option<(u32, u32)>,
) -> Result<Vec<(String, Camera)>> {
    let indices = view_indices(scene, scene_path, cameras)?;
    Ok(indices
        .into_iter()
        .map(|i| {
            let view = &scene.views[i];
            let camera = match size {
                Some((w, h)) => view.camera.resized(w, h),
                None => view.camera.clone(),
            };
            (view.name.clone(), camera)
        })
        .collect())
}

/// The indices of the views `cameras` names (names or 0-based numbers, as
/// `--camera` takes them; every view when empty).
pub fn view_indices(scene: &Scene, scene_path: &Path, cameras: &[String]) -> Result<Vec<usize>> {
    if cameras.is_empty() {
        return Ok((0..scene.views.len()).collect());
    }
    cameras
        .iter()
        .map(|c| {
            scene
                .views
                .iter()
                .position(|v| v.name == *c)
                .or_else(|| c.parse::<usize>().ok().filter(|&i| i < scene.views.len()))
                .with_context(|| {
                    let names: Vec<&str> = scene.views.iter().map(|v| v.name.as_str()).collect();
                    format!(
                        "--camera {c}: {} has {} view(s), named {} and numbered 0..{}",
                        shown(scene_path),
                        scene.views.len(),
                        names.join(", "),
                        scene.views.len()
                    )
                })
        })
        .collect()
}

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

/// Runs `physfit render`.
pub fn run(args: &RenderArgs) -> Result<()> {
    if args.params.is_some() {
        return super::render_motion::run(args);
    }
    if let Some(flag) = args.motion_flags().first() {
        let without = if args.splats.is_some() {
            "with --splats, render draws the given splat files as they are"
        } else {
            "without it, render draws the scene at rest"
        };
        anyhow::bail!(
            "{flag} applies only with --params OUT/drivers.safetensors (the fitted object in \
             motion); {without}; fix: drop {flag}, or render the fit with --params"
        );
    }
    // Installed first: SIGINT and SIGTERM stop at the next view or file.
    let interrupt = Interrupt::install(&["render"], &["render"])?;
    let scene = Scene::load(&args.scene)?;
    let size = args.size.as_deref().map(parse_size).transpose()?;
    let views = resolve_views(&scene, &args.scene, &args.camera, size)?;
    super::memory_check::refuse_over_memory(
        &scene,
        &physfit::budget::Workload::Render {
            cameras: views.iter().map(|(_, c)| c.clone()).collect(),
        },
    )?;
    if let Some(pattern) = &args.splats {
        let files = super::render_splats::list_splat_files(pattern)?;
        return super::render_splats::render_splat_files(
            args,
            scene.gaussians().len(),
            scene.background,
            &files,
            &views,
            (scene_inputs(&scene, true), &interrupt),
        );
    }
    let owned: Vec<Owned> = views
        .iter()
        .map(|(name, _)| Owned::file(format!("{name}.png")))
        .collect();
    let mut staged = open_output(
        &args.out,
        "render",
        owned,
        scene_inputs(&scene, true),
        args.force,
    )?;
    if !args.quiet {
        eprintln!("output {}", shown(&args.out));
    }

    let ctx = GpuContext::new(&Default::default())?;
    let mut renderer = SceneRenderer::at_rest(&ctx, scene.gaussians(), scene.background)?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(views.len() as u64)
    }
    .with_style(
        ProgressStyle::with_template("rendering {bar:30} {pos}/{len} {msg}")
            .expect("static template"),
    );
    let count = views.len();
    for (k, (name, camera)) in views.into_iter().enumerate() {
        interrupt.reach("render", k);
        interrupt.check(|| nothing_kept(&staged))?;
        bar.set_message(name.clone());
        let path = staged.staging().join(format!("{name}.png"));
        let frame = renderer
            .render(&ctx, &camera)
            .with_context(|| format!("rendering view '{name}'"))?;
        write_opaque_png(&path, frame.width, frame.height, frame.pixels)?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    staged.commit()?;
    if !args.quiet {
        eprintln!("wrote {count} view(s), <view>.png");
        eprintln!("output {}", shown(&args.out));
    }
    Ok(())
}
