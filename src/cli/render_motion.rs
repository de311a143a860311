//! `physfit render scene.toml --params OUT/drivers.safetensors --frames N
//! --out DIR [--camera NAME|INDEX]... [--orbit DEG] [--size WxH]
//! [interactions] [--ground[=H]] [--color-by stiffness] [--side-by-side]
//! [--force] [--quiet]`: the fitted object simulated forward under new
//! interactions (docs/scene.md "Interactions file"), written as a PNG
//! sequence per view (`DIR/<view>/frame_NNNN.png`, frame 0 the rest state)
//! and a looping GIF per view (`DIR/<view>.gif`) at the scene's fps rounded
//! to whole centiseconds ([`gif_fps`]). With `--side-by-side` each render
//! is shown as the view's camera would record it, with the view's colour
//! correction (`views[i].color_correction`, as the fit's loss compares it),
//! beside its reference frame, both captioned ([`super::side_by_side`]:
//! refused with an orbiting camera; past the reference's end an empty panel
//! says so); without it (and with `--color-by`, whose colours are no
//! camera's) renders are the splats' own colours.
//!
//! The run is [`FittedMotion`] (`physfit::forward::render_motion` in two
//! steps): refused before anything runs (a drivers file of another scene
//! or other settings, too few substeps for the largest fitted E, a motion
//! faster than half a cell per substep, an added collider holding the
//! object), then simulated and rendered in memory; this file maps the
//! flags, composes the side-by-side frames, keeps the output directory's
//! discipline and prints. Everything is written into a staging folder
//! whose files replace DIR's only when the whole run succeeded
//! ([`physfit::io::output_dir`]): a blow-up, SIGINT or SIGTERM (polled
//! between frames) leaves no partial GIF or sequence. A DIR holding an
//! earlier `render --params`'s sequences or GIFs of these views is refused
//! unless `--force`, which replaces those files only.

use anyhow::{anyhow, bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::FittedDrivers;
use physfit::forward::{FittedMotion, ForwardError, MotionColouring, MotionOptions};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::interact::{gif_delay_centiseconds, gif_fps};
use physfit::interact::{Interactions, GROUND_FRICTION};
use physfit::scene::Scene;

use physfit::io::Input;
use physfit::io::Owned;
use physfit::scene::scene_inputs;

use super::count::count;
use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::render_args::{ColorBy, RenderArgs};
use super::side_by_side::{refuse_moving_camera, side_by_side};
use super::view_selection::resolve_views;
use super::{parse_size, DEFAULT_FRAMES};
use physfit::io::shown;

/// The interactions of the file and the flags, in that order, then the
/// ground of `--ground` (under the run's gravity).
fn interactions(args: &RenderArgs, scene: &Scene) -> Result<Interactions> {
    let mut list = match &args.interactions {
        Some(path) => Interactions::load(path)?,
        None => Interactions::default(),
    };
    list.extend(args.interaction_flags().interactions()?)?;
    if let Some(height) = args.ground {
        let ground = list.add_ground(scene, height)?;
        if !args.quiet {
            eprintln!(
                "ground: a plane at height {:.4} along up {:?} (the object's lowest splat at \
                 {:.4}), friction μ = {}",
                ground.height, ground.up, ground.lowest, GROUND_FRICTION
            );
        }
    }
    Ok(list)
}

/// Runs `physfit render --params` (module doc).
pub fn run(args: &RenderArgs) -> Result<()> {
    let params = args.params.as_ref().expect("called with --params");
    if args.side_by_side {
        refuse_moving_camera(args.orbit)?;
    }
    // Installed first: SIGINT and SIGTERM stop at the next frame.
    let interrupt = Interrupt::install(&["render", "write"], &["render", "write"])?;
    let scene = Scene::load(&args.scene)?;
    {
        let frames = match args.frames {
            Some(n) => n,
            None => scene.frame_count().unwrap_or(DEFAULT_FRAMES),
        };
        let size = args.size.as_deref().map(parse_size).transpose()?;
        let cameras = resolve_views(&scene, &args.scene, &args.camera, size)?
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        super::memory_check::refuse_over_memory(
            &scene,
            &physfit::budget::Workload::Forward {
                command: "physfit render --params",
                frames: frames.max(1),
                cameras,
                frames_held: true,
            },
        )?;
    }
    let fitted = FittedDrivers::load(params)?;
    let interactions = interactions(args, &scene)?;
    let frames = match args.frames {
        Some(0) => bail!("--frames must be at least 1 (the rest frame 0 included)"),
        Some(n) => n,
        None => scene.frame_count().unwrap_or(DEFAULT_FRAMES),
    };
    let size = args.size.as_deref().map(parse_size).transpose()?;
    let views = resolve_views(&scene, &args.scene, &args.camera, size)?;
    let colouring = match (args.color_by, args.side_by_side) {
        (Some(ColorBy::Stiffness), _) => MotionColouring::Stiffness,
        // Beside its reference, a render is shown as the view's camera
        // would record it.
        (None, true) => MotionColouring::Camera,
        (None, false) => MotionColouring::Own,
    };
    let options = MotionOptions {
        cameras: views.clone(),
        frames,
        interactions,
        orbit: args.orbit,
        colouring,
        stop: Some(interrupt.stop().clone()),
    };
    let motion = FittedMotion::new(&scene, &fitted, &shown(params).to_string(), options).map_err(
        |e| match e {
            // These name their file or flag already.
            ForwardError::Interaction(_) => anyhow!(e),
            e => anyhow!(e).context(format!("{} with {}", shown(&args.scene), shown(params))),
        },
    )?;
    let references: Vec<_> = views
        .iter()
        .map(|(name, _)| {
            scene
                .views
                .iter()
                .find(|v| v.name == *name)
                .and_then(|v| v.frames.as_ref())
        })
        .collect();
    if args.side_by_side && references.iter().all(Option::is_none) {
        bail!(
            "--side-by-side: no view rendered has reference frames in {} (`views[].frames`); \
             fix: drop --side-by-side or add the frames",
            shown(&args.scene)
        );
    }

    let owned: Vec<Owned> = views
        .iter()
        .flat_map(|(name, _)| {
            [
                Owned::frames(name, "png"),
                Owned::file(format!("{name}.gif")),
            ]
        })
        .collect();
    let mut inputs = scene_inputs(&scene, true);
    inputs.push(Input::file(params, "fitted drivers (--params)"));
    if let Some(file) = &args.interactions {
        inputs.push(Input::file(file, "interactions file"));
    }
    let mut staged = open_output(&args.out, "render --params", owned, inputs, args.force)?;
    if !args.quiet {
        eprintln!("output {}", shown(&args.out));
        if args.side_by_side {
            for ((name, _), set) in views.iter().zip(&references) {
                match set {
                    Some(set) if set.len() < frames => eprintln!(
                        "note: {name}'s reference has {} frames (0–{}): frames {}–{} are shown \
                         beside an empty panel captioned \"no reference frame\"",
                        set.len(),
                        set.len() - 1,
                        set.len(),
                        frames - 1
                    ),
                    None => eprintln!(
                        "note: {name} has no reference frames: its panel is empty, captioned \
                         \"no reference frame\""
                    ),
                    Some(_) => {}
                }
            }
        }
    }
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let bar = progress_bar(args.quiet, frames as u64, "simulating and rendering");
    let rendered = motion.render(&ctx, |k| {
        interrupt.reach("render", k);
        bar.set_position(k as u64);
    });
    if matches!(rendered, Err(ForwardError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    let mut render = rendered
        .with_context(|| format!("simulating {} (nothing was written)", shown(&args.scene)))?;
    bar.finish_and_clear();
    if args.side_by_side {
        let comparable = args.color_by.is_none();
        for (view, (set, (_, camera))) in render.views.iter_mut().zip(references.iter().zip(&views))
        {
            let size = set.map_or((camera.width, camera.height), |s| (s.width, s.height));
            for (k, image) in view.frames.iter_mut().enumerate() {
                let reference = match set {
                    Some(set) if k < set.len() => Some(set.load(k)?),
                    _ => None,
                };
                *image = side_by_side(
                    reference.as_ref(),
                    size,
                    image,
                    k,
                    scene.background,
                    comparable,
                )?;
            }
        }
    }
    let bar = progress_bar(args.quiet, frames as u64, "writing");
    let written = render.write_outputs(staged.staging(), Some(interrupt.stop()), |k| {
        interrupt.reach("write", k);
        bar.set_position(k as u64);
    });
    if matches!(written, Err(ForwardError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    written?;
    bar.finish_and_clear();
    staged.commit()?;
    if !args.quiet {
        for (k, members) in render.impulse_members.iter().enumerate() {
            match members {
                Some(m) if m.is_empty() => {
                    eprintln!(
                        "warning: impulse {k} held no free driver (check its centre and radius)"
                    )
                }
                Some(m) => eprintln!("impulse {k} pushed {}", count(m.len(), "driver", "drivers")),
                None => eprintln!("warning: impulse {k} starts after the last frame"),
            }
        }
        eprintln!(
            "wrote {} of {} (PNG sequences, looping GIFs at {:.2} fps: \
             GIF delays are whole centiseconds, {} cs for the scene's {} fps)",
            count(frames, "frame", "frames"),
            count(views.len(), "view", "views"),
            gif_fps(scene.fps),
            gif_delay_centiseconds(scene.fps),
            scene.fps
        );
        eprintln!("output {}", shown(&args.out));
    }
    Ok(())
}

/// A bar of `len` frames headed `what`, hidden under `--quiet`.
fn progress_bar(quiet: bool, len: u64, what: &str) -> ProgressBar {
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(len)
    };
    bar.with_style(
        ProgressStyle::with_template(&format!(
            "{what} {{bar:40}} frame {{pos}}/{{len}} ({{elapsed}}, eta {{eta}})"
        ))
        .expect("valid template"),
    )
}
