//! `fit.json`: what a finished fit did and found, typed so that readers
//! (tests, scripts, a later `render`) get fields by name and a version
//! check instead of indexing a JSON blob by strings. Written last by the
//! outputs: its presence marks a complete fit.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::camera_check::CameraCheck;
use super::discretisation::DiscretisationCheck;
#[cfg(doc)]
use super::discretisation::first_order_limit_factor;
use super::recovery::Recovery;
use super::uncertainty::FitUncertainty;
use crate::io::atomic_write::write_atomic;
use crate::scene::{DiscretisationBudget, DiscretisationRefinement};

/// The `format` field of `fit.json`.
pub const SUMMARY_FORMAT: &str = "physfit.fit";
/// The version this physfit writes and reads (3: typed settings by table,
/// stages with their solver and whether they ran, E parameters by name;
/// 4: error bars, `uncertainty` and each E parameter's `log10_std`; 5:
/// `poisson_parameters`, the fitted Poisson's ratios; `discretisation`,
/// each E parameter's `discretisation_shift` and
/// `settings.fit.check_discretisation`; 6: the discretisation check's
/// levels until converged (`discretisation.levels`, its `end` and the
/// material's answer, `answer_log10_youngs`, each E parameter's
/// `discretisation_shift` over every level),
/// `settings.fit.discretisation_levels`, each Poisson's ratio parameter's
/// `std` and `uncertainty.poisson_std`; 7: the stiffness stage's
/// `poisson_range`, the range a fitted ν was kept in, and the
/// discretisation check refining the grid with the substeps and rebuilding
/// the drivers, each level recording its `grid_res` and `drivers`, the
/// check the fit's own and the answer's `answer_grid_res`; later, each E
/// parameter's and ν's optional `discretisation_error`, the shift
/// extrapolated to the limit, which `log10_error_bar` then combines, and
/// the velocity's, `velocity_discretisation_error` and
/// `velocity_error_bar`, from the velocity the levels refit).
pub const SUMMARY_VERSION: u32 = 7;

/// Why `fit.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// Reading or writing failed.
    #[error("{}: {error}", crate::io::shown::shown(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// Not a `fit.json` this physfit reads.
    #[error("{}: not a physfit fit.json of version {SUMMARY_VERSION} ({problem}); fix: re-run the fit with this physfit", crate::io::shown::shown(path))]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
}

/// The units the summary's values are in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Units {
    /// What normalised E means.
    pub youngs_normalised: String,
    /// What E in world units means.
    pub youngs_world: String,
    /// The simulation cube's side, world units.
    pub box_side: f64,
    /// The velocity's unit.
    pub velocity: String,
}

/// The settings the fit ran with, as scene.toml's tables (resolved:
/// defaults filled in), typed values throughout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Settings {
    /// SHA-256 of the input files (the checkpoint's fingerprint of them).
    pub inputs_sha256: InputHashes,
    /// `simulation`.
    pub simulation: SimulationSettings,
    /// `material`.
    pub material: MaterialSettings,
    /// `fit`.
    pub fit: FitSettings,
    /// The stages run: `both`, `velocity` or `stiffness` (`--stage`).
    pub stages: String,
    /// Where a stiffness-only fit took its velocity from (`--velocity-from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub velocity_from: Option<String>,
}

/// SHA-256 of the files a fit reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InputHashes {
    /// `gaussians.path`.
    pub gaussians: String,
    /// Every reference frame, view by view.
    pub reference_frames: String,
    /// Every loss mask, view by view (absent: no view has masks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_masks: Option<String>,
}

/// `[simulation]` and `[drivers]` as resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SimulationSettings {
    /// `simulation.grid_res`.
    pub grid_res: u32,
    /// `simulation.substeps`.
    pub substeps: u32,
    /// Drivers (MPM particles), `drivers.count` resolved.
    pub drivers: usize,
}

/// `[material]` (normalised units).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MaterialSettings {
    /// `material.youngs_modulus`, the start.
    pub youngs_modulus: f64,
    /// `material.log10_youngs_range`.
    pub log10_youngs_range: [f64; 2],
}

/// `[fit]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FitSettings {
    /// `fit.rounds`.
    pub rounds: u32,
    /// `fit.checkpoint_every`.
    pub checkpoint_every: u32,
    /// `fit.check_discretisation`.
    pub check_discretisation: bool,
    /// `fit.discretisation_levels`.
    pub discretisation_levels: u32,
    /// `fit.discretisation_seconds`: seconds, `"auto"` or `"none"` (absent
    /// in a fit.json of an earlier physfit without a budget: none).
    #[serde(default = "DiscretisationBudget::unlimited")]
    pub discretisation_seconds: DiscretisationBudget,
    /// `fit.discretisation_refine` (absent in a fit.json of an earlier
    /// physfit: the grid).
    #[serde(default = "DiscretisationRefinement::before_the_choice")]
    pub discretisation_refine: DiscretisationRefinement,
    /// `[fit.scan]`.
    pub scan: ScanSettings,
    /// `[fit.velocity]`.
    pub velocity: StageSettings,
    /// `[fit.stiffness]`.
    pub stiffness: StageSettings,
}

/// `[fit.scan]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScanSettings {
    /// `fit.scan.points`.
    pub points: u32,
    /// `fit.scan.velocity_evaluations`.
    pub velocity_evaluations: u32,
    /// `fit.scan.poisson_points` (absent from a fit of an earlier physfit).
    #[serde(default)]
    pub poisson_points: u32,
}

/// The optimiser of a stage (docs/design.md § Loss, parameters, fit): the
/// field's parameter count chooses it, and with it which settings apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Solver {
    /// One uniform log10 E scanned over the range.
    Scan,
    /// Adam with warm-up, decay and clipping (a per-driver field).
    Adam,
    /// Bounded L-BFGS (a field of few parameters: no learning rate).
    Lbfgs,
}

/// A stage table (`[fit.velocity]`, `[fit.stiffness]`): the settings that
/// apply to its solver; Adam's alone are absent for L-BFGS.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageSettings {
    /// The solver its field gets.
    pub solver: Solver,
    /// `iterations`: the cap.
    pub iterations: u32,
    /// `frames`: a frame count with the rest frame 0 (absent: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u32>,
    /// `learning_rate` (Adam only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// `warmup` (Adam only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u32>,
    /// `decay` (Adam only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decay: Option<f64>,
    /// `grad_clip` (Adam only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grad_clip: Option<f64>,
    /// `tolerance`.
    pub tolerance: f64,
    /// `w_l1`.
    pub w_l1: f64,
    /// `w_ssim`.
    pub w_ssim: f64,
    /// `tv_weight`.
    pub tv_weight: f64,
    /// `velocity_tv_weight`.
    pub velocity_tv_weight: f64,
    /// `field`: `drivers`, `global`, `rigid` or `regions`.
    pub field: String,
    /// With `field = "regions"`: the regions' names in parameter order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
    /// `poisson` (the stiffness stage): `global` or `regions` when ν was
    /// fitted; absent when it was held at `material.poisson_ratio`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson: Option<String>,
    /// `poisson_range` (the stiffness stage, when ν was fitted): the
    /// `[low, high]` of `ν = low + (high − low)·sigmoid(z)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poisson_range: Option<[f64; 2]>,
}

/// The GPU adapter the fit ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Adapter {
    /// Its name.
    pub name: String,
    /// Its backend.
    pub backend: String,
    /// Its driver.
    pub driver: String,
    /// A software adapter (lavapipe).
    pub software: bool,
}

/// One stage of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageSummary {
    /// Its round (1-based).
    pub round: u32,
    /// `scan`, `velocity` or `stiffness`.
    pub stage: String,
    /// Its solver.
    pub solver: Solver,
    /// The cap it ran under (a resumed fit may have raised it; a stage
    /// that never ran: the cap it would have run under). L-BFGS counts
    /// evaluations against it, Adam steps, the scan candidates.
    pub iterations: u32,
    /// Its learning rate (Adam only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learning_rate: Option<f64>,
    /// The frames it fitted, as frame indices (1..=N−1 of a stage's
    /// `frames = N`; never the rest frame 0).
    pub frames: Vec<usize>,
    /// What it did; absent when it never ran (the rounds before it had
    /// converged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<StageRun>,
}

/// What a stage that ran did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageRun {
    /// Wall seconds.
    pub seconds: f64,
    /// Lines it wrote to `loss.jsonl` (L-BFGS: its start and every
    /// accepted step; Adam: every step; a scan: every candidate).
    pub iterations: u32,
    /// Accepted steps (a scan: candidates scanned).
    pub steps: u32,
    /// Evaluations of the loss: line-search trials, rejected steps and a
    /// scan's velocity fits included (0 from a checkpoint of a physfit
    /// that did not count them).
    pub evaluations: u32,
    /// It stopped because its loss flattened, not at its cap.
    pub converged: bool,
}

/// The quality of one frame and view of the fitted rollout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FrameQuality {
    /// The frame.
    pub frame: usize,
    /// The view's name.
    pub view: String,
    /// PSNR (dB).
    pub psnr: f64,
    /// Mean SSIM.
    pub ssim: f64,
    /// Mean |I − Î|.
    pub l1: f64,
}

/// The loss of the fitted parameters over every frame and view.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FinalLoss {
    /// The loss.
    pub loss: f64,
    /// Its image part.
    pub image: f64,
    /// TV of log10 E (unweighted).
    pub tv: f64,
    /// Mean PSNR over frames and views.
    pub mean_psnr: f64,
    /// Mean SSIM over frames and views.
    pub mean_ssim: f64,
    /// Per frame and view.
    pub frames: Vec<FrameQuality>,
}

/// One fitted Young's modulus parameter, named by what it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct YoungsParameter {
    /// The region's name (`field = "regions"`), `object` (`global`) or
    /// `driver N` (`drivers`).
    pub name: String,
    /// `log10 E`, normalised units.
    pub log10_normalised: f64,
    /// E in normalised units.
    pub normalised: f64,
    /// E in world units.
    pub world: f64,
    /// The standard error of `log10_normalised` (decades, the same in
    /// either unit) from the curvature of the loss at the optimum
    /// (docs/design.md § Error bars); absent where the frames do not
    /// constrain it or no error bars were estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log10_std: Option<f64>,
    /// Whether the frames constrain it more than the regulariser
    /// ([`FitUncertainty::youngs_constrained`]); absent without error
    /// bars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constrained: Option<bool>,
    /// The finest level's minus the fit's own `log10 E` when the
    /// discretisation was checked (`fit.check_discretisation`), over every
    /// level (decades).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discretisation_shift: Option<f64>,
    /// `log10_normalised` minus its discretisation's limit, estimated from
    /// `discretisation_shift` at first order
    /// ([`first_order_limit_factor`]: twice the shift after one level,
    /// 4/3 of it after two): the discretisation's error bar (decades) of
    /// `log10_normalised`, beside the data's [`YoungsParameter::log10_std`];
    /// absent when no level ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discretisation_error: Option<f64>,
    /// The data's standard error and the discretisation's error in
    /// quadrature ([`combined_error_bar`], decades): the bar of
    /// `log10_normalised` to quote when the discretisation check measured
    /// a shift (absent otherwise, or where the frames do not pin the value).
    /// The data's alone is far narrower than the discretisation's bias on
    /// every twin (docs/benchmarks.md, "Error bars").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log10_error_bar: Option<f64>,
}

/// `√(data² + discretisation²)`: the frames' standard error and the
/// discretisation check's error of one value, in quadrature (they are
/// independent errors); `None` unless both were measured.
pub fn combined_error_bar(data: Option<f64>, discretisation: Option<f64>) -> Option<f64> {
    Some(data?.hypot(discretisation?))
}

/// One fitted Poisson's ratio parameter (`[fit.stiffness] poisson`),
/// named by what it covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PoissonParameter {
    /// The region's name (`poisson = "regions"`) or `object` (`global`).
    pub name: String,
    /// ν (dimensionless, in (0, 0.49)).
    pub poisson_ratio: f64,
    /// ν's standard error from the frames ([`FitUncertainty::poisson_std`]);
    /// absent without error bars, or where the frames do not constrain it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    /// The finest level's minus the fit's own ν when the discretisation
    /// was checked, over every level; absent when the check did not run
    /// (or, from an earlier physfit, kept no ν).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discretisation_shift: Option<f64>,
    /// `poisson_ratio` minus its discretisation's limit, estimated from
    /// `discretisation_shift` at first order as E's
    /// ([`YoungsParameter::discretisation_error`]): the discretisation's
    /// error bar of `poisson_ratio`, beside the data's
    /// [`PoissonParameter::std`]; absent when no level ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discretisation_error: Option<f64>,
    /// [`PoissonParameter::std`] and [`PoissonParameter::discretisation_error`]
    /// in quadrature ([`combined_error_bar`]): the bar of `poisson_ratio` to
    /// quote when the check measured a shift.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_bar: Option<f64>,
}

/// `fit.json` (module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FitSummary {
    /// [`SUMMARY_FORMAT`].
    pub format: String,
    /// [`SUMMARY_VERSION`].
    pub version: u32,
    /// The scene file, as typed from the working directory.
    pub scene: String,
    /// The units.
    pub units: Units,
    /// The settings.
    pub settings: Settings,
    /// The adapter.
    pub adapter: Adapter,
    /// The camera check of every view.
    pub camera_check: Vec<CameraCheck>,
    /// The stages, in the order they ran.
    pub stages: Vec<StageSummary>,
    /// The fitted rollout's loss.
    #[serde(rename = "final")]
    pub final_loss: FinalLoss,
    /// The fitted Young's modulus parameters, in parameter order.
    pub youngs_parameters: Vec<YoungsParameter>,
    /// The fitted velocity parameters (world units / s).
    pub velocity_parameters: Vec<f64>,
    /// Per velocity parameter, the fit's own value minus its
    /// discretisation's limit, from the discretisation check's refitted
    /// velocity extrapolated at first order as E's
    /// ([`YoungsParameter::discretisation_error`]); empty when the check
    /// ran no level or held the velocity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velocity_discretisation_error: Vec<f64>,
    /// Per velocity parameter, the data's standard error
    /// (`uncertainty.velocity_std`) and `velocity_discretisation_error` in
    /// quadrature ([`combined_error_bar`]): the bar to quote (null where
    /// either is missing); empty when there is no discretisation error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub velocity_error_bar: Vec<Option<f64>>,
    /// The fitted Poisson's ratio parameters, in parameter order; empty
    /// when ν was held at `material.poisson_ratio`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poisson_parameters: Vec<PoissonParameter>,
    /// The error bars of the fitted values from the data (docs/design.md
    /// § Error bars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncertainty: Option<FitUncertainty>,
    /// The exact-gradient step tried after the error bars: Newton's step
    /// in E from them, kept when it lowered the last stiffness stage's
    /// loss (src/fit/exact_step.rs); absent when there was none to try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact_step: Option<super::exact_step_record::ExactStep>,
    /// E refitted level by level on a doubled grid at doubled substeps
    /// (the drivers rebuilt for it), how far it moved,
    /// whether it converged and E reported as the material's
    /// (`fit.check_discretisation`; src/fit/discretisation_check.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discretisation: Option<DiscretisationCheck>,
    /// The recovery of the truth, on a twin experiment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// On a twin experiment: the loss of the truth's own parameters on the
    /// same frames, views and weights as [`FitSummary::final_loss`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth_loss: Option<FinalLoss>,
}

impl FitSummary {
    /// On a twin experiment: whether the fitted loss is at or below the
    /// truth's (the optimiser did its job; the truth's PSNR is then the
    /// ceiling the model's mismatch with the frames leaves).
    pub fn reached_the_truths_loss(&self) -> Option<bool> {
        self.truth_loss
            .as_ref()
            .map(|t| self.final_loss.loss <= t.loss)
    }

    /// Writes it to `path` atomically.
    pub fn write(&self, path: &Path) -> Result<(), SummaryError> {
        let json = serde_json::to_string_pretty(self).map_err(|e| SummaryError::Format {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        write_atomic(path, json.as_bytes()).map_err(|error| SummaryError::Io {
            path: path.to_path_buf(),
            error,
        })
    }

    /// The JSON Schema of `fit.json`, generated from these types
    /// (committed as `docs/fit.schema.json`).
    pub fn json_schema() -> String {
        let schema = schemars::schema_for!(FitSummary);
        let mut text = serde_json::to_string_pretty(&schema).expect("a schema serialises");
        text.push('\n');
        text
    }

    /// Reads `path`, refusing another format or version.
    pub fn read(path: &Path) -> Result<Self, SummaryError> {
        let bytes = std::fs::read(path).map_err(|error| SummaryError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        let format = |problem: String| SummaryError::Format {
            path: path.to_path_buf(),
            problem,
        };
        let s: Self = serde_json::from_slice(&bytes).map_err(|e| format(e.to_string()))?;
        if s.format != SUMMARY_FORMAT || s.version != SUMMARY_VERSION {
            return Err(format(format!("format {} version {}", s.format, s.version)));
        }
        Ok(s)
    }
}

#[cfg(test)]
mod combined_error_bar_tests {
    use super::combined_error_bar;

    /// The two bars add in quadrature; without either there is none.
    #[test]
    fn the_data_and_the_discretisation_bars_add_in_quadrature() {
        assert_eq!(combined_error_bar(Some(0.03), Some(-0.04)), Some(0.05));
        assert_eq!(combined_error_bar(Some(0.03), None), None);
        assert_eq!(combined_error_bar(None, Some(0.04)), None);
    }
}
