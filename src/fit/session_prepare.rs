//! Step 1 of a fit session ([`super::session`]): every refusal that
//! needs no GPU, before any GPU time is spent ([`super::preflight`], an
//! earlier fit in the output directory, a checkpoint of other inputs), and
//! the output directory opened and locked.

use std::path::PathBuf;

use super::checkpoint::{Checkpoint, FitFingerprint};
use super::output_plan::fit_output_plan;
use super::output_plan::CHECKPOINT_FILE;
use super::plan::StageChoice;
use super::preflight::{preflight, FitInputs};
use super::session_error::SessionError;
use super::session_options::{EarlierFit, SessionOptions, TruthSource};
use crate::io::output_dir::{Earlier, OutputDir};
use crate::io::output_error::OutputDirError;
use crate::mpm::simulator::check_stability_at;
use crate::scene::Scene;
use crate::synth::layout::truth_beside_frames;
use crate::synth::Truth;

/// A fit checked and ready to open on a GPU (step 1 of the module doc).
pub struct PreparedFit {
    pub(super) scene: Scene,
    pub(super) options: SessionOptions,
    pub(super) inputs: FitInputs,
    /// The output directory, opened and locked.
    pub(super) output: OutputDir,
    pub(super) fingerprint: FitFingerprint,
    pub(super) resumed: Option<Checkpoint>,
    pub(super) truth: Option<(TruthSource, Truth)>,
    pub(super) velocity_from: Option<PathBuf>,
}

impl PreparedFit {
    /// The views and frames the fit uses.
    pub fn inputs(&self) -> &FitInputs {
        &self.inputs
    }

    /// The truth of a twin experiment, when there is one.
    pub fn truth_source(&self) -> Option<&TruthSource> {
        self.truth.as_ref().map(|(s, _)| s)
    }

    /// The checkpoint a resumed fit continues from.
    pub fn resumed(&self) -> Option<&Checkpoint> {
        self.resumed.as_ref()
    }

    /// The checkpoint's path.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.options.out.join(CHECKPOINT_FILE)
    }
}

impl PreparedFit {
    /// Every refusal that needs no GPU (module doc).
    pub(super) fn prepare(scene: Scene, options: SessionOptions) -> Result<Self, SessionError> {
        let inputs = preflight(&scene, options.choice)?;
        let out = &options.out;
        let checkpoint = out.join(CHECKPOINT_FILE);
        if options.earlier == EarlierFit::Resume && !checkpoint.exists() {
            return Err(SessionError::NoCheckpoint { out: out.clone() });
        }
        let velocity_from = match options.choice {
            StageChoice::Stiffness => Some(
                options
                    .velocity_from
                    .clone()
                    .unwrap_or_else(|| out.join("drivers.safetensors")),
            ),
            _ => None,
        };
        let source = match &options.truth {
            Some(p) => Some(TruthSource::Given(p.clone())),
            None => truth_beside_frames(&scene).map(TruthSource::BesideFrames),
        };
        // Before any work: the output directory's place, lock and
        // writability, and an earlier fit in it.
        // The default held velocity is the output directory's own earlier
        // fit, read whole before anything is written and meant to be
        // replaced by this stage: only a file the user names is an input
        // the directory must not hold.
        let read: Vec<_> = source
            .iter()
            .map(|s| (s.path().to_path_buf(), "truth file"))
            .chain(
                options
                    .velocity_from
                    .iter()
                    .filter(|_| options.choice == StageChoice::Stiffness)
                    .map(|p| (p.clone(), "drivers file whose velocity is held")),
            )
            .collect();
        let earlier = match options.earlier {
            EarlierFit::Refuse => Earlier::Refuse,
            EarlierFit::Resume => Earlier::Keep,
            EarlierFit::Replace => Earlier::Replace,
        };
        let output =
            OutputDir::open(out, fit_output_plan(&scene, &read), earlier).map_err(|e| match e {
                OutputDirError::Earlier { out, listing, .. } => SessionError::EarlierFit {
                    out,
                    files: vec![listing],
                },
                e => SessionError::OutputDir(e),
            })?;
        let truth =
            match source {
                Some(source) => {
                    let truth = Truth::load(source.path(), scene.material.log10_youngs_range)
                        .map_err(|e| SessionError::Truth {
                            path: source.path().to_path_buf(),
                            problem: e.to_string(),
                        })?;
                    check_truth_poisson(&scene, &truth).map_err(|problem| SessionError::Truth {
                        path: source.path().to_path_buf(),
                        problem,
                    })?;
                    Some((source, truth))
                }
                None => None,
            };
        let fingerprint = FitFingerprint::of(
            &scene,
            options.choice,
            velocity_from
                .as_ref()
                .map(|p| p.display().to_string())
                .as_deref(),
        )?;
        let resumed = match options.earlier {
            EarlierFit::Resume => Some(Checkpoint::load(&checkpoint, &fingerprint)?),
            _ => None,
        };
        Ok(PreparedFit {
            scene,
            options,
            inputs,
            output,
            fingerprint,
            resumed,
            truth,
            velocity_from,
        })
    }
}

/// The truth's own ν, when it gives one, is one the fit's simulator can
/// run: its loss is measured on that simulator after the fit (the
/// truth's own loss in fit.json), whose substeps are stable up to the
/// top of the E range and the scene's largest ν. Refused here, before
/// any fitting, rather than after it.
fn check_truth_poisson(scene: &Scene, truth: &Truth) -> Result<(), String> {
    let Some(nu) = truth.poisson_ratio else {
        return Ok(());
    };
    let youngs_max = 10f64.powf(scene.material.log10_youngs_range[1]);
    check_stability_at(&scene.mpm_config(), youngs_max, nu).map_err(|e| {
        format!(
            "`poisson_ratio` = {nu} is beyond what the fit's simulator runs: {e}; or give the \
             truth's ν up to the scene's largest (`material.poisson_ratio`, or the top of \
             `[fit.stiffness] poisson_range` when ν is fitted)"
        )
    })
}
