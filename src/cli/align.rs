//! `physfit align scene.toml --out DIR [--camera NAME|INDEX]... [--what
//! pose,focal,color] [--force]`: fits each chosen view's camera pose (and
//! optionally focal length) and colour correction to its reference frame
//! 0 ([`physfit::align`]), then writes `DIR/scene.toml` (the scene with only
//! those fields changed), `DIR/<view>.png` (reference | before | after |
//! difference) and `DIR/align.json`. A view that alignment makes worse
//! keeps its start, and the command exits with an error saying so.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use glam::Vec3;
use indicatif::{ProgressBar, ProgressStyle};

use super::plain_progress::PlainProgress;

use physfit::align::scene_edit::{edited_scene, ViewEdit};
use physfit::align::summary::{
    AlignSummary, ViewSummary, ALIGN_SUMMARY_FILE, ALIGN_SUMMARY_VERSION,
};
use physfit::align::view_align::check_start;
use physfit::align::{
    align_view, AlignError, AlignSettings, AlignWhat, Reference, ViewProblem, ViewState,
};
use physfit::gpu::GpuContext;
use physfit::io::atomic_write::write_atomic;
use physfit::io::png::write_png;
use physfit::loss::LossWeights;
use physfit::report::{captioned_row, difference};
use physfit::scene::Scene;
use physfit::splat::SplatBuffers;

use physfit::io::shown::shown;

use super::view_selection::view_indices;
use physfit::io::owned::Owned;
use physfit::scene::inputs::scene_inputs;

use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;

/// The aligned scene's file name in the output directory.
pub const ALIGNED_SCENE_FILE: &str = "scene.toml";

/// Options of `physfit align`.
#[derive(Args, Debug)]
pub struct AlignArgs {
    /// The scene description.
    pub scene: PathBuf,
    /// Output directory: the aligned scene.toml, a picture per view, align.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Align only this view: its name or its number (0-based, in
    /// scene.toml order); repeatable. Default: every view with frames.
    #[arg(long)]
    pub camera: Vec<String>,
    /// What to fit, comma-separated: pose (rotation and translation),
    /// focal (one focal length, aspect ratio kept), color (gain and offset
    /// per channel).
    #[arg(long, default_value = "pose,color")]
    pub what: String,
    /// Pyramid levels at most, full resolution included.
    #[arg(long, default_value_t = 4)]
    pub levels: u32,
    /// Replace align's earlier files in DIR.
    #[arg(long)]
    pub force: bool,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

fn picture_name(view: &str) -> String {
    format!("{view}.png")
}

/// Runs `physfit align`.
pub fn run(args: &AlignArgs) -> Result<()> {
    let what =
        AlignWhat::parse(&args.what).map_err(|e| anyhow::anyhow!("--what {}: {e}", args.what))?;
    if !what.pose && !what.focal && !what.color {
        bail!("--what is empty: give pose, focal and/or color");
    }
    if args.levels == 0 {
        bail!("--levels 0: give at least 1 (full resolution only)");
    }
    // Installed first: SIGINT and SIGTERM stop at the next evaluation.
    let interrupt = Interrupt::install(&["align"], &["align"])?;
    let scene = Scene::load(&args.scene)?;
    let indices: Vec<usize> = if args.camera.is_empty() {
        let with_frames: Vec<usize> = (0..scene.views.len())
            .filter(|&i| scene.views[i].frames.is_some())
            .collect();
        if with_frames.is_empty() {
            bail!(
                "{}: no view has reference frames to align to; give a view `frames`",
                shown(&args.scene)
            );
        }
        with_frames
    } else {
        view_indices(&scene, &args.scene, &args.camera)?
    };
    for &i in &indices {
        if scene.views[i].frames.is_none() {
            return Err(AlignError::NoFrames {
                view: scene.views[i].name.clone(),
            }
            .into());
        }
    }
    // The one writer discipline (physfit::io::output_dir): DIR holding
    // align's files is refused unless --force, which replaces those only.
    let owned: Vec<Owned> = [
        ALIGNED_SCENE_FILE.to_string(),
        ALIGN_SUMMARY_FILE.to_string(),
    ]
    .into_iter()
    .chain(indices.iter().map(|&i| picture_name(&scene.views[i].name)))
    .map(Owned::file)
    .collect();
    let mut staged = open_output(
        &args.out,
        "align",
        owned,
        scene_inputs(&scene, true),
        args.force,
    )?;
    if !args.quiet {
        println!("output       {}", shown(&args.out));
    }

    // Align renders the chosen views at rest: refuse what would not fit
    // before anything is allocated.
    super::memory_check::refuse_over_memory(
        &scene,
        &physfit::budget::Workload::Render {
            cameras: indices
                .iter()
                .map(|&i| scene.views[i].camera.clone())
                .collect(),
        },
    )?;
    let settings = AlignSettings {
        what,
        levels: args.levels,
        ..AlignSettings::default()
    };
    let ctx = GpuContext::new(&Default::default())?;
    let gaussians = &scene.splats.gaussians;
    let splats = SplatBuffers::upload(&ctx, gaussians)?;
    let centres: Vec<Vec3> = gaussians.means.iter().map(|&m| Vec3::from(m)).collect();
    let weights = LossWeights {
        l1: scene.fit.w_l1 as f32,
        ssim: scene.fit.w_ssim as f32,
    };
    let mut problem = ViewProblem::new(&ctx, &splats, scene.background, weights, what.color)?;
    problem.set_stop(interrupt.stop().clone());
    let mut edits = Vec::new();
    let mut summaries = Vec::new();
    let mut worse = Vec::new();
    for (aligned_views, &i) in indices.iter().enumerate() {
        interrupt.reach("align", aligned_views);
        interrupt.check(|| nothing_kept(&staged))?;
        let view = &scene.views[i];
        let frames = view.frames.as_ref().expect("checked above");
        let frame = frames.load(0)?;
        let mask = match &view.masks {
            Some(m) => Some(m.load_mask(0)?),
            None => None,
        };
        let start = ViewState {
            camera: view.camera.clone(),
            color: view.color_correction,
        };
        check_start(&view.name, &start.camera, &centres)?;
        let bar = if args.quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(u64::from(settings.evaluations))
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix:>12} {bar:30} {pos}/{len} evaluations  {msg}")
                .expect("valid template"),
        );
        bar.set_prefix(view.name.clone());
        let mut plain = PlainProgress::new(args.quiet);
        let alignment = align_view(
            &ctx,
            &mut problem,
            &Reference {
                frame: &frame,
                mask: mask.as_ref(),
            },
            &start,
            &centres,
            &settings,
            |p| {
                plain.line(|| {
                    format!(
                        "align {}: level {}/{}, evaluation {}, loss {:.5}",
                        view.name,
                        p.level + 1,
                        p.levels,
                        p.evaluations,
                        p.loss
                    )
                });
                bar.set_position(u64::from(p.evaluations));
                bar.set_message(format!(
                    "level {}/{}  loss {:.5}",
                    p.level + 1,
                    p.levels,
                    p.loss
                ));
            },
        );
        if matches!(alignment, Err(AlignError::Stopped)) {
            interrupt.check(|| nothing_kept(&staged))?;
        }
        let alignment = alignment.map_err(|e| match e {
            AlignError::NonFinite { .. } => AlignError::NonFinite {
                view: view.name.clone(),
            },
            other => other,
        })?;
        bar.finish_and_clear();
        let before = problem.picture(&alignment.before)?;
        let aligned = ViewState {
            camera: alignment.after.camera.clone(),
            color: alignment.after.color,
        };
        let after = problem.picture(&aligned)?;
        let diff = difference(&frame, &after);
        let before_caption = format!("before {:.2} dB", alignment.psnr_before);
        let after_caption = format!(
            "after {:.2} dB",
            if alignment.kept_start {
                alignment.psnr_before
            } else {
                alignment.psnr_after
            }
        );
        let picture = captioned_row(&[
            ("reference", &frame),
            (before_caption.as_str(), &before),
            (after_caption.as_str(), &after),
            ("|reference − after| × 4", &diff),
        ])?;
        let picture_file = picture_name(&view.name);
        write_png(&staged.staging().join(&picture_file), &picture)?;
        if !args.quiet {
            print_view(&view.name, &alignment, what);
        }
        if alignment.worse {
            worse.push(format!(
                "{}: {:.2} → {:.2} dB",
                view.name, alignment.psnr_before, alignment.psnr_after
            ));
        } else if !alignment.kept_start {
            edits.push(ViewEdit {
                index: i,
                camera: alignment.after.camera.clone(),
                focal: what.focal,
                color: what.color.then_some(alignment.after.color),
            });
        }
        summaries.push(ViewSummary::new(&view.name, &alignment, picture_file));
    }
    let text = edited_scene(&args.scene, &scene.output_dir, &args.out, &edits)?;
    write_atomic(&staged.staging().join(ALIGNED_SCENE_FILE), text.as_bytes())
        .with_context(|| format!("writing {}", shown(&args.out.join(ALIGNED_SCENE_FILE))))?;
    let summary = AlignSummary {
        version: ALIGN_SUMMARY_VERSION,
        scene: args.scene.display().to_string(),
        what: what.label(),
        views: summaries,
    };
    write_atomic(
        &staged.staging().join(ALIGN_SUMMARY_FILE),
        serde_json::to_string_pretty(&summary)?.as_bytes(),
    )
    .with_context(|| format!("writing {}", shown(&args.out.join(ALIGN_SUMMARY_FILE))))?;
    // The pictures are kept even when a view came out worse: they show why.
    staged.commit()?;
    if !args.quiet {
        let scene_out = shown(&args.out.join(ALIGNED_SCENE_FILE));
        println!("wrote        {scene_out} (fit it with `physfit fit {scene_out}`)");
        println!("output       {}", shown(&args.out));
    }
    if !worse.is_empty() {
        return Err(AlignError::Worse { views: worse }.into());
    }
    Ok(())
}

fn print_view(name: &str, a: &physfit::align::ViewAlignment, what: AlignWhat) {
    let c = &a.changes;
    println!(
        "{name:>12} PSNR {:.2} → {:.2} dB{}",
        a.psnr_before,
        a.psnr_after,
        if a.worse {
            " (worse: start kept)"
        } else if a.kept_start {
            " (no better than the start: kept)"
        } else {
            ""
        }
    );
    if what.pose {
        println!(
            "{:>12} turned {:.3}°, centre moved {:.4} ({:.2}% of the distance), splat centres moved {:.2} px RMS",
            "", c.rotation_degrees, c.centre_shift, c.centre_shift_percent, c.reprojection_rms_px
        );
    }
    if what.focal {
        println!("{:>12} focal {:+.2}%", "", c.focal_percent);
    }
    if what.color {
        println!(
            "{:>12} gain [{:.3}, {:.3}, {:.3}], offset [{:+.3}, {:+.3}, {:+.3}]",
            "", c.gain[0], c.gain[1], c.gain[2], c.offset[0], c.offset[1], c.offset[2]
        );
    }
    if let Some(cond) = &a.conditioning {
        match cond.condition_number {
            Some(k) => println!("{:>12} conditioning {k:.1e}", ""),
            None => println!(
                "{:>12} conditioning: some direction is not constrained by this view",
                ""
            ),
        }
        for s in cond.strong_correlations.iter().take(3) {
            println!(
                "{:>12} {} ↔ {}: correlation {:+.3} (one view trades them)",
                "", s.a, s.b, s.correlation
            );
        }
    }
    if let Some(g) = &a.silhouette {
        println!(
            "{:>12} silhouette guess: turned {:.2}°, centre moved {:.2}% in {} step{}: {}",
            "",
            g.rotation_degrees,
            g.centre_shift_percent,
            g.steps,
            if g.steps == 1 { "" } else { "s" },
            if g.kept {
                "the levels started from it"
            } else {
                "no lower loss, not used"
            }
        );
    }
    let levels: Vec<String> = a
        .levels
        .iter()
        .map(|l| {
            format!(
                "{}×{} {} eval{}",
                l.width,
                l.height,
                l.evaluations,
                if l.converged { "" } else { " (cap)" }
            )
        })
        .collect();
    println!("{:>12} levels {}", "", levels.join(", "));
}
