//! `physfit render scene.toml --params OUT/drivers.safetensors --frames N
//! --out DIR [--camera NAME|INDEX]... [--orbit DEG] [--size WxH]
//! [interactions] [--color-by stiffness] [--side-by-side] [--force] [--quiet]`:
//! the fitted object simulated forward under new interactions
//! (docs/scene.md "Interactions file"), written as a PNG sequence per view
//! (`DIR/<view>/frame_NNNN.png`, frame 0 the rest state) and a looping GIF
//! per view (`DIR/<view>.gif`) at the scene's fps rounded to whole
//! centiseconds ([`gif_fps`]). With `--side-by-side` each render is shown
//! as the view's camera would record it, with the view's colour correction
//! (`views[i].color_correction`, as the fit's loss compares it), beside its
//! reference frame, both captioned ([`super::side_by_side`]: refused with
//! an orbiting camera; past the reference's end an empty panel says so);
//! without it (and with `--color-by`, whose colours are no camera's)
//! renders are the splats' own colours.
//!
//! Refused before anything runs: a drivers file of another scene or other
//! settings, too few substeps for the largest fitted E, a motion faster
//! than half a cell per substep ([`ForwardSetup`]). Everything is written
//! into a staging folder whose files replace DIR's only when the whole run
//! succeeded ([`physfit::io::output_dir`]): a blow-up, SIGINT or SIGTERM
//! (polled between frames) leaves no partial GIF or sequence. A DIR holding an earlier `render
//! --params`'s sequences or GIFs of these views is refused unless
//! `--force`, which replaces those files only.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use physfit::forward::{ForwardSetup, SceneRenderer};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::interact::gif_sequence::{gif_delay_centiseconds, gif_fps, GifSequence};
use physfit::interact::orbit::{object_centre, orbit_angle, orbit_camera};
use physfit::interact::{Interactions, GROUND_FRICTION};
use physfit::io::png::write_png;
use physfit::output::fitted_ply::SplatMaterial;
use physfit::output::stiffness::{stiffness_range_world, StiffnessColouring};
use physfit::output::FittedDrivers;
use physfit::report::rgb8;
use physfit::scene::Scene;

use physfit::io::output_place::Input;
use physfit::io::owned::Owned;
use physfit::scene::inputs::scene_inputs;

use super::count::count;
use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::render_args::{ColorBy, RenderArgs};
use super::side_by_side::{refuse_moving_camera, side_by_side};
use super::view_selection::resolve_views;
use super::{parse_size, DEFAULT_FRAMES};
use physfit::io::shown::shown;

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
    let interrupt = Interrupt::install(&["render"], &["render"])?;
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
            },
        )?;
    }
    let fitted = FittedDrivers::load(params)?;
    let interactions = interactions(args, &scene)?;
    let setup =
        ForwardSetup::from_fitted(&scene, &fitted, &shown(params).to_string(), &interactions)
            .with_context(|| format!("{} with {}", shown(&args.scene), shown(params)))?;
    setup.check_velocity_bound()?;
    let frames = match args.frames {
        Some(0) => bail!("--frames must be at least 1 (the rest frame 0 included)"),
        Some(n) => n,
        None => scene.frame_count().unwrap_or(DEFAULT_FRAMES),
    };
    let size = args.size.as_deref().map(parse_size).transpose()?;
    let views = resolve_views(&scene, &args.scene, &args.camera, size)?;
    let scene_views: Vec<_> = views
        .iter()
        .map(|(name, _)| scene.views.iter().find(|v| v.name == *name))
        .collect();
    let references: Vec<_> = scene_views
        .iter()
        .map(|v| v.and_then(|v| v.frames.as_ref()))
        .collect();
    if args.side_by_side && references.iter().all(Option::is_none) {
        bail!(
            "--side-by-side: no view rendered has reference frames in {} (`views[].frames`); \
             fix: drop --side-by-side or add the frames",
            shown(&args.scene)
        );
    }

    let colouring = match args.color_by {
        Some(ColorBy::Stiffness) => Some(StiffnessColouring::new(
            &SplatMaterial::from_fitted(&scene, &fitted)?,
            stiffness_range_world(
                fitted.settings.log10_youngs_range,
                fitted.settings.sim_box.side,
            ),
        )),
        None => None,
    };
    let gaussians = match &colouring {
        Some(c) => c.recoloured(scene.gaussians())?,
        None => scene.gaussians().clone(),
    };

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
    let mut gifs = Vec::with_capacity(views.len());
    for (name, _) in &views {
        let dir = staged.staging().join(name);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("creating {}", physfit::io::shown::shown(&dir)))?;
        gifs.push(GifSequence::create(
            &staged.staging().join(format!("{name}.gif")),
            scene.fps,
        )?);
    }
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let mut animation = SceneRenderer::simulated(&ctx, &setup, &gaussians, scene.background)?;
    let centre = object_centre(&scene);
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(frames as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "simulating and rendering {bar:40} frame {pos}/{len} ({elapsed}, eta {eta})",
        )
        .expect("valid template"),
    );
    for k in 0..frames {
        interrupt.reach("render", k);
        interrupt.check(|| nothing_kept(&staged))?;
        if k > 0 {
            animation.step(&ctx).with_context(|| {
                format!("simulating {} (nothing was written)", shown(&args.scene))
            })?;
        }
        animation.pose(&ctx, k)?;
        for (v, (name, camera)) in views.iter().enumerate() {
            let camera = match args.orbit {
                Some(degrees) => orbit_camera(camera, centre, orbit_angle(degrees, k, frames)),
                None => camera.clone(),
            };
            let mut frame = animation.render(&ctx, &camera)?;
            if args.side_by_side && colouring.is_none() {
                if let Some(view) = scene_views[v] {
                    frame = view.color_correction.apply_to_frame(frame);
                }
            }
            let mut image = rgb8(&frame);
            if let Some(c) = &colouring {
                image = c.with_colorbar(&image)?;
            }
            if args.side_by_side {
                let reference = match references[v] {
                    Some(set) if k < set.len() => Some(set.load(k)?),
                    _ => None,
                };
                let size = references[v]
                    .map_or((camera.width, camera.height), |set| (set.width, set.height));
                image = side_by_side(
                    reference.as_ref(),
                    size,
                    &image,
                    k,
                    scene.background,
                    colouring.is_none(),
                )?;
            }
            write_png(
                &staged
                    .staging()
                    .join(name)
                    .join(format!("frame_{k:04}.png")),
                &image,
            )?;
            gifs[v].push(&image)?;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    drop(gifs);
    staged.commit()?;
    if !args.quiet {
        for k in 0..setup.impulses.len() {
            match animation.impulse_members(k) {
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
