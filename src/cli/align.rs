//! `physfit align scene.toml --out DIR [--camera NAME|INDEX]... [--what
//! pose,focal,color] [--force]`: fits each chosen view's camera pose (and
//! optionally focal length) and colour correction to its reference frame
//! 0 ([`physfit::align`]), then writes `DIR/scene.toml` (the scene with only
//! those fields changed), `DIR/<view>.png` (reference | before | after |
//! difference) and `DIR/align.json`. A view that alignment makes worse
//! keeps its start, and the command exits with an error saying so.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use physfit::align::ALIGN_SUMMARY_FILE;
use physfit::align::{
    align_scene, AlignError, AlignEvent, AlignSettings, AlignWhat, SceneAlignOptions,
};
use physfit::align::{picture_file, ALIGNED_SCENE_FILE};
use physfit::gpu::GpuContext;
use physfit::io::shown;
use physfit::io::Owned;
use physfit::scene::scene_inputs;
use physfit::scene::Scene;

use super::interrupt::{nothing_kept, Interrupt};
use super::output::open_output;
use super::plain_progress::PlainProgress;
use super::view_selection::view_indices;

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

/// Runs `physfit align`: the flags mapped to [`SceneAlignOptions`], the
/// output directory's discipline, progress and printing around
/// [`align_scene`].
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
    .chain(indices.iter().map(|&i| picture_file(&scene.views[i].name)))
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
    let options = SceneAlignOptions {
        views: indices,
        settings: AlignSettings {
            what,
            levels: args.levels,
            ..AlignSettings::default()
        },
        stop: Some(interrupt.stop().clone()),
    };
    let ctx = GpuContext::new(&Default::default())?;
    let evaluations = u64::from(options.settings.evaluations);
    let mut bar = ProgressBar::hidden();
    let mut plain = PlainProgress::new(args.quiet);
    let aligned = align_scene(&ctx, &scene, &options, |event| match event {
        AlignEvent::ViewStarted { done, view } => {
            interrupt.reach("align", done);
            bar = if args.quiet {
                ProgressBar::hidden()
            } else {
                ProgressBar::new(evaluations)
            };
            bar.set_style(
                ProgressStyle::with_template(
                    "{prefix:>12} {bar:30} {pos}/{len} evaluations  {msg}",
                )
                .expect("valid template"),
            );
            bar.set_prefix(view.to_string());
        }
        AlignEvent::Evaluation { view, progress: p } => {
            plain.line(|| {
                format!(
                    "align {view}: level {}/{}, evaluation {}, loss {:.5}",
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
        }
        AlignEvent::ViewFinished(v) => {
            bar.finish_and_clear();
            if !args.quiet {
                print_view(&v.name, &v.alignment, what);
            }
        }
    });
    if matches!(aligned, Err(AlignError::Stopped)) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    let aligned = aligned?;
    aligned.write_outputs(staged.staging(), &args.scene, &scene, &args.out)?;
    staged.commit()?;
    if !args.quiet {
        let scene_out = shown(&args.out.join(ALIGNED_SCENE_FILE));
        println!("wrote        {scene_out} (fit it with `physfit fit {scene_out}`)");
        println!("output       {}", shown(&args.out));
    }
    let worse = aligned.worse();
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
