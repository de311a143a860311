//! `physfit render scene.toml --out DIR [--camera NAME|INDEX]... [--size WxH] [--force]`:
//! renders the scene's Gaussians (at rest) from its cameras with the GPU rasterizer
//! and writes one opaque 8-bit PNG (3DGS colours: `round(255·v)`, no transfer curve) per view (`DIR/<view name>.png`),
//! composited over the scene's background colour. With `--params
//! OUT/drivers.safetensors` it renders the fitted object in motion under
//! new interactions instead ([`super::render_motion`]). With `--splats GLOB`
//! it renders a sequence of posed splat files, one per frame, as reference
//! frames `DIR/<view>/frame_NNNN.png` ([`super::render_splats`]).
//!
//! The still render is [`render_at_rest`], the one forward path at rest;
//! this file maps the flags, keeps the output directory's discipline and
//! shows progress. SIGINT and SIGTERM stop it between views, writing
//! nothing.

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::{render_at_rest, ForwardError, RestRender};
use physfit::gpu::GpuContext;
use physfit::io::shown;
use physfit::scene::Scene;

use physfit::io::Owned;
use physfit::scene::scene_inputs;

use super::count::count;
use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::parse_size;
pub use super::render_args::RenderArgs;
use super::view_selection::resolve_views;

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
        .map(|(name, _)| Owned::file(RestRender::file_name(name)))
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
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(views.len() as u64)
    }
    .with_style(
        ProgressStyle::with_template("rendering {bar:30} {pos}/{len} {msg}")
            .expect("static template"),
    );
    let rendered = render_at_rest(&ctx, &scene, &views, Some(interrupt.stop()), |k| {
        interrupt.reach("render", k);
        bar.set_message(views[k].0.clone());
        bar.set_position(k as u64);
    });
    if matches!(rendered, Err(ForwardError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    let rendered = rendered.with_context(|| format!("rendering {}", shown(&args.scene)))?;
    bar.finish_and_clear();
    rendered.write_outputs(staged.staging())?;
    let written = rendered.views.len();
    staged.commit()?;
    if !args.quiet {
        eprintln!("wrote {}, <view>.png", count(written, "view", "views"));
        eprintln!("output {}", shown(&args.out));
    }
    Ok(())
}
