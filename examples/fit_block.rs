//! Fits a scene through physfit's library API alone and prints the fitted
//! E and v0: the proof that the facade (`physfit::scene::Scene`,
//! `physfit::fit::FitSession`, `physfit::fit::FitResult`) is enough to fit
//! without the command line (docs/design.md § Loss, parameters, fit).
//!
//! `cargo run --example fit_block -- scene.toml OUT_DIR`
//!
//! The fit's result stays in memory: only its checkpoint is written in
//! `OUT_DIR` (the outputs are [`FitSession::write_outputs`], which this
//! example does not call). tests/gpu_mpm/fit_example.rs builds this file
//! as a module and calls [`fit_scene`] on the small block twin.

use std::path::{Path, PathBuf};

use physfit::fit::{
    Control, EarlierFit, FinishedStage, FitObserver, FitResult, FitSession, FitState, RunEnd,
    SessionOptions, StageChoice, StagePlan,
};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::scene::Scene;

/// Tells nothing and never stops the fit.
struct Silent;

impl FitObserver for Silent {
    fn stage_started(&mut self, _: &StagePlan, _: &FitState) {}
    fn iteration_done(&mut self, _: &StagePlan, _: &FitState) -> Control {
        Control::Continue
    }
    fn stage_finished(&mut self, _: &StagePlan, _: &FitState, _: &FinishedStage<'_>) {}
}

/// Fits both stages of `scene` (its `[fit]` settings) on `ctx`,
/// replacing an earlier fit in `out`, and returns the result.
pub fn fit_scene(
    ctx: &GpuContext,
    scene: Scene,
    out: &Path,
) -> Result<FitResult, Box<dyn std::error::Error>> {
    let options = SessionOptions {
        out: out.to_path_buf(),
        choice: StageChoice::Both,
        velocity_from: None,
        earlier: EarlierFit::Replace,
        truth: None,
    };
    let prepared = FitSession::prepare(scene, options)?;
    let mut session = FitSession::open(ctx, prepared)?;
    match session.run(ctx, &mut Silent)? {
        RunEnd::Finished(result) => Ok(*result),
        RunEnd::Stopped { .. } => unreachable!("nothing raises a stop and `Silent` never stops"),
    }
}

/// The fitted E (both units, with its standard error) of every parameter
/// and v0 of every free driver, one per line.
pub fn describe(result: &FitResult) -> String {
    let mut text = String::new();
    for (i, p) in result.youngs_parameters.iter().enumerate() {
        // The standard error from the frames (docs/design.md § Error bars).
        let error = match p.log10_std {
            Some(s) => format!(" ± {s:.3}"),
            None => " (not constrained by the frames)".into(),
        };
        text.push_str(&format!(
            "E[{i}]: log10 {:.3}{error} (normalised {:.4e}, world {:.4e})\n",
            p.log10_normalised,
            10f64.powf(p.log10_normalised),
            p.world
        ));
    }
    for (i, d) in result
        .drivers
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.anchored)
    {
        let [x, y, z] = d.velocity;
        text.push_str(&format!("v0[driver {i}]: ({x:.4}, {y:.4}, {z:.4})\n"));
    }
    if let Some(loss) = result.last_loss() {
        text.push_str(&format!("last loss: {loss:.4e}\n"));
    }
    text
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let (Some(scene), Some(out)) = (args.next(), args.next()) else {
        return Err("usage: fit_block SCENE.toml OUT_DIR".into());
    };
    let ctx = GpuContext::new(&GpuOptions::default())?;
    let result = fit_scene(&ctx, Scene::load(&scene)?, &out)?;
    print!("{}", describe(&result));
    Ok(())
}
