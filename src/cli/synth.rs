//! `physfit synth scene.toml --truth truth.toml --out DIR [--frames N]
//! [--same-discretisation] [--force] [--quiet]`: reference frames of a twin
//! experiment (docs/design.md § Verification 5; docs/truth.md). The scene is simulated from the truth's `log10 E` and
//! initial velocity, finer than a fit would (twice the drivers and
//! substeps, [`physfit::synth::run`]), and one rollout is rendered in every
//! view: `DIR/<view>/frame_NNNN.png` (frame 0 the rest state, the camera's
//! size, opaque 8-bit PNG in 3DGS colours as `physfit render` writes them),
//! plus `DIR/truth.toml` (the truth file as given) and `DIR/synth.json`
//! (settings, drivers, substeps, adapter). The directory is written
//! atomically ([`physfit::io::output_dir`]): nothing partial on an error,
//! a blow-up, SIGINT or SIGTERM (polled between frames), and a DIR holding
//! an earlier synth's files is refused unless `--force`, which replaces
//! those files only.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use physfit::gpu::{GpuContext, GpuOptions};
use physfit::io::write_atomic;
use physfit::scene::Scene;
use physfit::scene::Transfer;
use physfit::synth::{frame_path, SUMMARY_FILE, TRUTH_FILE};
use physfit::synth::{SynthOptions, SynthPlan, Synthesis, Truth};

use physfit::io::Input;
use physfit::io::Owned;
use physfit::scene::scene_inputs;

use super::interrupt::{nothing_kept, Interrupt};
use super::opaque_png::write_opaque_png;
use super::output::open_output;
use super::relative_path::relative_to;
use physfit::io::shown;

/// Options of `physfit synth`.
#[derive(Args, Debug)]
pub struct SynthArgs {
    /// The scene description.
    pub scene: PathBuf,
    /// The truth file: the known material and motion (docs/truth.md).
    #[arg(long)]
    pub truth: PathBuf,
    /// Output directory (refused when it holds an earlier synth's files, unless --force).
    #[arg(long)]
    pub out: PathBuf,
    /// Frames to write, the rest frame 0 included, so N gives frame_0000 .. frame_{N−1} (docs/scene.md § Frame counts; default: the truth file's `frames`).
    #[arg(long)]
    pub frames: Option<usize>,
    /// Simulate with the scene's own drivers and substeps instead of twice
    /// as many (fast, but a fit then recovers its own discretisation).
    #[arg(long)]
    pub same_discretisation: bool,
    /// Replace an earlier synth's files in the output directory (only those).
    #[arg(long)]
    pub force: bool,
    /// The global `--quiet` (one flag for every command, set by `main`).
    #[arg(skip)]
    pub quiet: bool,
}

/// Runs `physfit synth`.
pub fn run(args: &SynthArgs) -> Result<()> {
    // Installed first: SIGINT and SIGTERM stop at the next frame.
    let interrupt = Interrupt::install(&["simulate", "render"], &["simulate", "render"])?;
    let scene = Scene::load(&args.scene)?;
    let truth = Truth::load(&args.truth, scene.material.log10_youngs_range)?;
    let options = SynthOptions {
        frames: args.frames,
        same_discretisation: args.same_discretisation,
    };
    let plan = SynthPlan::new(&scene, &truth, &options)?;
    super::memory_check::refuse_over_memory(
        &plan.scene,
        &physfit::budget::Workload::Forward {
            command: "physfit synth",
            frames: plan.frames,
            cameras: super::memory_check::scene_cameras(&plan.scene, None),
            frames_held: false,
        },
    )?;
    let owned: Vec<Owned> = scene
        .views
        .iter()
        .map(|v| Owned::frames(&v.name, "png"))
        .chain([Owned::file(TRUTH_FILE), Owned::file(SUMMARY_FILE)])
        .collect();
    // The frames the scene names are what synth writes, not its inputs.
    let mut inputs = scene_inputs(&scene, false);
    inputs.push(Input::file(&args.truth, "truth file"));
    let mut staged = open_output(&args.out, "synth", owned, inputs, args.force)?;
    if !args.quiet {
        eprintln!("output {}", shown(&args.out));
    }

    let ctx = GpuContext::new(&GpuOptions::default())?;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_message(format!(
        "simulating {} frames ({} drivers, {} substeps per frame)",
        plan.frames,
        plan.drivers(),
        plan.substeps()
    ));
    let simulated = Synthesis::simulate_until(&ctx, &plan, &truth, &mut |frames| {
        interrupt.reach("simulate", frames);
        !interrupt.raised()
    });
    if matches!(simulated, Err(physfit::synth::SynthError::Stopped { .. })) {
        interrupt.check(|| nothing_kept(&staged))?;
    }
    let mut synthesis = simulated.with_context(|| {
        format!(
            "simulating {} from {} (nothing was written)",
            shown(&args.scene),
            shown(&args.truth)
        )
    })?;
    bar.finish_and_clear();

    let views = &plan.scene.views;
    let bar = if args.quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new((views.len() * plan.frames) as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("rendering {bar:40} {pos}/{len} {msg} ({elapsed}, eta {eta})")
            .expect("valid template"),
    );
    let mut rendered = 0;
    for (v, view) in views.iter().enumerate() {
        let dir = staged.staging().join(&view.name);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", shown(&dir)))?;
        bar.set_message(view.name.clone());
        for k in 0..plan.frames {
            interrupt.reach("render", rendered);
            interrupt.check(|| nothing_kept(&staged))?;
            rendered += 1;
            let frame = synthesis
                .render(&ctx, v, k)
                .with_context(|| format!("rendering frame {k} in view '{}'", view.name))?;
            let path = frame_path(staged.staging(), &view.name, k);
            write_opaque_png(&path, frame.width, frame.height, frame.pixels)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    let truth_copy = staged.staging().join(TRUTH_FILE);
    write_atomic(&truth_copy, truth.text.as_bytes())
        .with_context(|| format!("writing {}", shown(&truth_copy)))?;
    let report = summary(args, &plan, &ctx);
    let json = staged.staging().join(SUMMARY_FILE);
    write_atomic(&json, serde_json::to_string_pretty(&report)?.as_bytes())
        .with_context(|| format!("writing {}", shown(&json)))?;
    staged.commit()?;

    if !args.quiet {
        eprintln!(
            "wrote {} frames per view ({} views, {} drivers, {} substeps per frame; the scene's \
             own: {} drivers, {} substeps)",
            plan.frames,
            views.len(),
            plan.drivers(),
            plan.substeps(),
            plan.scene_drivers,
            plan.scene_substeps,
        );
        let scene_dir = match args.scene.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let rel = relative_to(&args.out, scene_dir)?;
        eprintln!(
            "to fit them, give each view of {} its frames (paste each `frames` line into \
             that view's [[views]] table):",
            shown(&args.scene)
        );
        let names: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
        eprint!("{}", frames_lines(&names, &rel));
        eprintln!("output {}", shown(&args.out));
    }
    Ok(())
}

/// `synth.json`: what was run, so a twin experiment can be reproduced.
fn summary(args: &SynthArgs, plan: &SynthPlan, ctx: &GpuContext) -> serde_json::Value {
    let info = &ctx.adapter_info;
    serde_json::json!({
        "scene": args.scene.display().to_string(),
        "truth": args.truth.display().to_string(),
        "frames": plan.frames,
        "fps": plan.scene.fps,
        "discretisation": if args.same_discretisation { "same" } else { "finer" },
        "drivers": { "simulated": plan.drivers(), "scene": plan.scene_drivers },
        "substeps": { "simulated": plan.substeps(), "scene": plan.scene_substeps },
        "grid_res": plan.scene.simulation.grid_res,
        "transfer": transfer_record(plan.scene.simulation.transfer),
        "anchoring": plan.scene.simulation.anchoring.word(),
        "views": plan.scene.views.iter().map(|v| serde_json::json!({
            "name": v.name,
            "width": v.camera.width,
            "height": v.camera.height,
        })).collect::<Vec<_>>(),
        "adapter": {
            "name": info.name,
            "backend": format!("{:?}", info.backend),
            "driver": format!("{} {}", info.driver, info.driver_info),
            "software": ctx.is_software(),
        },
    })
}

/// `simulation.transfer` as synth.json records it: the word, and FLIP's
/// τ in seconds (`"inf"` for pure FLIP, which JSON has no number for).
fn transfer_record(transfer: Transfer) -> serde_json::Value {
    let kind = transfer.word();
    match transfer.pic_time() {
        None => serde_json::json!({ "kind": kind }),
        Some(tau) if tau.is_finite() => serde_json::json!({ "kind": kind, "pic_time_s": tau }),
        Some(_) => serde_json::json!({ "kind": kind, "pic_time_s": "inf" }),
    }
}

/// The `frames` line of each view in `names`, under a comment naming its
/// view, for frames written to `rel` (relative to the scene's directory):
/// lines a user pastes into the scene as they are, each valid TOML.
fn frames_lines(names: &[&str], rel: &Path) -> String {
    names
        .iter()
        .map(|name| {
            let glob = physfit::io::normalised(&rel.join(name).join("*.png"));
            // A TOML basic string: JSON's escaping is valid TOML.
            let quoted =
                serde_json::to_string(&glob.display().to_string()).expect("a string serialises");
            format!("  # in the [[views]] table with name = \"{name}\"\n  frames = {quoted}\n")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::frames_lines;
    use std::path::Path;

    #[test]
    fn the_printed_frames_lines_are_toml_one_can_paste() {
        let text = frames_lines(&["front", "face"], Path::new("../out/twin"));
        for (chunk, name) in text.split("  # ").skip(1).zip(["front", "face"]) {
            let pasted: toml::Table = toml::from_str(&format!("# {chunk}")).unwrap();
            assert_eq!(
                pasted["frames"].as_str(),
                Some(format!("../out/twin/{name}/*.png").as_str()),
                "{text}"
            );
        }
        assert_eq!(text.matches("frames = ").count(), 2, "{text}");
    }
}
