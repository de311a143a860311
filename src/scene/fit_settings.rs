//! `[fit]`: the loss weights, rounds, checkpoints and scan, and the two
//! fit stages with their defaults, resolved and validated (docs/scene.md;
//! docs/design.md § Loss, parameters, fit).

use super::config::{DiscretisationRefinement, FitConfig, FitStageConfig, SecondsConfig};
use super::error::SceneError;
use super::fit_field::{
    resolve_field, resolve_poisson, resolve_poisson_range, FieldOf, FieldSetting, PoissonRange,
    PoissonSetting,
};
use super::validate::Validator;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One resolved fit stage.
#[derive(Clone, Debug, PartialEq)]
pub struct FitStage {
    /// Adam iterations.
    pub iterations: u32,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// The `frames` key: a frame count N, the rest frame 0 included, so
    /// the stage fits frames 1..=N−1 (docs/scene.md § Frame counts; ≥ 2,
    /// at most the reference frame count); `None` = all reference frames.
    /// [`FitStage::fitted_frames`] gives the frames themselves.
    pub frames: Option<u32>,
    /// Linear warm-up iterations.
    pub warmup: u32,
    /// Learning-rate factor reached at the last iteration.
    pub decay: f64,
    /// Gradient-norm clip.
    pub grad_clip: f64,
    /// The stage has converged when its loss falls by less than this
    /// fraction over 5 iterations (Adam, after the warm-up), or, for
    /// L-BFGS, by less than half of it in each of two steps in a row or
    /// in the next step as its curvature model expects it
    /// ([`crate::solve::lbfgs`]); 0 runs every iteration of the cap.
    pub tolerance: f64,
    /// L1 image-loss weight (paper eq. 10).
    pub w_l1: f64,
    /// 1 − SSIM weight.
    pub w_ssim: f64,
    /// Total-variation weight on log10 E.
    pub tv_weight: f64,
    /// Weight of the smoothness term on the initial velocity (TV of v0
    /// over the driver graph; 0: off). Stage 1 only: stage 2 holds v0
    /// frozen, where the term is a constant, so `[fit.stiffness]` refuses it
    /// and its value there is 0.
    pub velocity_tv_weight: f64,
    /// How this stage's unknown is parameterised (`field`, `regions`).
    pub field: FieldSetting,
    /// Whether Poisson's ratio is fitted with E (`poisson`; stage 2 only,
    /// [`PoissonSetting::Fixed`] for stage 1).
    pub poisson: PoissonSetting,
    /// The range a fitted ν stays inside (`poisson_range`; the default
    /// `[0, 0.49]` when ν is not fitted).
    pub poisson_range: PoissonRange,
}

impl FitStage {
    /// The frames this stage fits of `available` reference frames per view
    /// (the rest frame 0 included): 1..=N−1 for `frames = N`, frames
    /// 1..=available−1 for `None`; empty when nothing follows the rest
    /// frame. Frame 0 is never fitted.
    pub fn fitted_frames(&self, available: usize) -> std::ops::RangeInclusive<usize> {
        let count = self.frames.map_or(available, |n| n as usize);
        1..=count.saturating_sub(1)
    }

    /// Stage 1 defaults (docs/design.md § Loss, parameters, fit: a frame
    /// count of 4, frames 1–3 fitted).
    pub fn velocity_default() -> FitStage {
        FitStage {
            iterations: 100,
            learning_rate: 0.1,
            frames: Some(4),
            warmup: 10,
            decay: 0.1,
            grad_clip: 1.0,
            tolerance: 2e-3,
            w_l1: 0.1,
            w_ssim: 0.9,
            tv_weight: 0.01,
            velocity_tv_weight: 0.0,
            field: FieldSetting::Drivers,
            poisson: PoissonSetting::Fixed,
            poisson_range: PoissonRange::default(),
        }
    }

    /// Stage 2 defaults: stage 1's, over all frames.
    pub fn stiffness_default() -> FitStage {
        FitStage {
            frames: None,
            ..Self::velocity_default()
        }
    }
}

/// Resolved `[fit]`: the stage-independent loss weights (each stage may
/// override them) and the two stages.
#[derive(Clone, Debug, PartialEq)]
pub struct FitSettings {
    /// L1 weight.
    pub w_l1: f64,
    /// 1 − SSIM weight.
    pub w_ssim: f64,
    /// Total-variation weight on log10 E.
    pub tv_weight: f64,
    /// Stage 1.
    pub velocity: FitStage,
    /// Stage 2.
    pub stiffness: FitStage,
    /// Rounds of stage 1 then stage 2 (≥ 1): with 2, stage 1 runs again
    /// with the fitted E, then stage 2 again.
    pub rounds: u32,
    /// Iterations between checkpoints (≥ 1; one is also written at the end
    /// of each stage).
    pub checkpoint_every: u32,
    /// After the stages, refit E on a doubled grid at doubled substeps per
    /// frame (drivers rebuilt for the grid), level by level until two
    /// levels agree within 0.05 decades, and report each shift (the
    /// discretisation's error bar) and, converged, the finest level's E as
    /// the material's (default off: each level costs about one stiffness
    /// stage at its finer simulation's cost, src/fit/discretisation_check.rs).
    pub check_discretisation: bool,
    /// The cap on the check's levels (1..=8; default 3: up to 8 times the
    /// substeps).
    pub discretisation_levels: u32,
    /// The check's wall-clock budget over all its levels
    /// ([`DiscretisationBudget`]): a level predicted not to fit in what is
    /// left is not started, and a level still running when it is spent
    /// stops there (src/fit/session_discretisation.rs).
    pub discretisation_seconds: DiscretisationBudget,
    /// What each level of the check refines (`fit.discretisation_refine`).
    pub discretisation_refine: DiscretisationRefinement,
    /// The coarse scan of E before the stages (`[fit.scan]`).
    pub scan: ScanSettings,
}

/// `fit.discretisation_seconds`: the discretisation check's wall-clock
/// budget over all its levels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum DiscretisationBudget {
    /// This many seconds.
    Seconds(f64),
    /// A rule: `"auto"` or `"none"`.
    Rule(BudgetRule),
}

/// The words `fit.discretisation_seconds` takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetRule {
    /// [`AUTO_DISCRETISATION_SHARE`] of the stages' wall time (the scan
    /// and every stage, a resumed fit's earlier runs included): the check
    /// takes at most about that share of the stages' time.
    Auto,
    /// No limit.
    None,
}

/// The share of the stages' wall time that `fit.discretisation_seconds =
/// "auto"` gives the discretisation check: the check takes at most about as
/// long as the stages, so about half of the whole fit at most (its first
/// level always starts, and a level stops only after its current step). (Half the stages' time
/// stopped the demo's check after one level that had moved E by 0.12
/// decades, with the next level, which converged, predicted a second over
/// what was left: docs/benchmarks.md, "The anchored splats as the
/// default".)
pub const AUTO_DISCRETISATION_SHARE: f64 = 1.0;

impl DiscretisationBudget {
    /// No limit: what a fit.json written before the budget had a default
    /// and without one means.
    pub fn unlimited() -> Self {
        DiscretisationBudget::Rule(BudgetRule::None)
    }

    /// The budget in seconds after stages that took `stage_seconds` in
    /// all (`None`: no limit).
    pub fn seconds(self, stage_seconds: f64) -> Option<f64> {
        match self {
            DiscretisationBudget::Seconds(s) => Some(s),
            DiscretisationBudget::Rule(BudgetRule::Auto) => {
                Some(AUTO_DISCRETISATION_SHARE * stage_seconds)
            }
            DiscretisationBudget::Rule(BudgetRule::None) => None,
        }
    }

    /// How the scene's text says it.
    pub fn describe(self) -> String {
        match self {
            DiscretisationBudget::Seconds(s) => format!("{s} s"),
            DiscretisationBudget::Rule(BudgetRule::Auto) => format!(
                "\"auto\" ({:.0}% of the stages' time)",
                100.0 * AUTO_DISCRETISATION_SHARE
            ),
            DiscretisationBudget::Rule(BudgetRule::None) => "\"none\" (no limit)".to_string(),
        }
    }
}

/// The most levels `fit.discretisation_levels` allows: the finest level
/// simulates at 2^8 = 256 times the scene's substeps, beyond any
/// refinement a fit's time step needs (0.1–0.4 decades per doubling on
/// the twins, docs/benchmarks.md).
pub const MAX_DISCRETISATION_LEVELS: u32 = 8;

/// `[fit.scan]`: one uniform log10 E scanned over
/// `material.log10_youngs_range`, each value with its own velocity, so
/// that the fit does not depend on `material.youngs_modulus`
/// (src/fit/scan.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSettings {
    /// Grid points (0: no scan; otherwise ≥ 2; default 5).
    pub points: u32,
    /// L-BFGS evaluations of each point's velocity fit (≥ 1; default 4).
    pub velocity_evaluations: u32,
    /// Points over `[fit.stiffness] poisson_range`, scanned after E when ν
    /// is fitted (0: none; otherwise ≥ 2; default 5): the midpoints of
    /// that many equal parts of the range.
    pub poisson_points: u32,
}

fn resolve_stage(
    v: &Validator,
    field: &str,
    of: FieldOf,
    c: &FitStageConfig,
    d: FitStage,
) -> Result<FitStage, SceneError> {
    let f = |name: &str| format!("{field}.{name}");
    let velocity_tv_weight = match (of, c.velocity_tv_weight) {
        (_, None) => d.velocity_tv_weight,
        (FieldOf::Velocity, Some(w)) => v.non_negative(&f("velocity_tv_weight"), w)?,
        (FieldOf::Stiffness, Some(_)) => return Err(v.invalid(
            &f("velocity_tv_weight"),
            "stage 2 holds the initial velocity frozen, so its smoothness term is a constant there",
            "move `velocity_tv_weight` to [fit.velocity]",
        )),
    };
    let field_setting = resolve_field(v, field, of, c)?;
    let stage = FitStage {
        velocity_tv_weight,
        poisson: resolve_poisson(v, field, of, c, &field_setting)?,
        poisson_range: resolve_poisson_range(v, field, c)?,
        field: field_setting,
        iterations: c.iterations.unwrap_or(d.iterations),
        learning_rate: v.positive(
            &f("learning_rate"),
            c.learning_rate.unwrap_or(d.learning_rate),
        )?,
        frames: c.frames.or(d.frames),
        warmup: c.warmup.unwrap_or(d.warmup),
        decay: c.decay.unwrap_or(d.decay),
        grad_clip: c.grad_clip.unwrap_or(d.grad_clip),
        tolerance: v.non_negative(&f("tolerance"), c.tolerance.unwrap_or(d.tolerance))?,
        w_l1: v.non_negative(&f("w_l1"), c.w_l1.unwrap_or(d.w_l1))?,
        w_ssim: v.non_negative(&f("w_ssim"), c.w_ssim.unwrap_or(d.w_ssim))?,
        tv_weight: v.non_negative(&f("tv_weight"), c.tv_weight.unwrap_or(d.tv_weight))?,
    };
    if stage.w_l1 + stage.w_ssim == 0.0 {
        return Err(v.invalid(
            &f("w_ssim"),
            "both image-loss weights of this stage are 0",
            "give `w_l1` or `w_ssim` a positive weight (defaults: the [fit] values, 0.1 and 0.9)",
        ));
    }
    if let Some(n @ (0 | 1)) = stage.frames {
        return Err(v.out_of_range(
            &f("frames"),
            n,
            "must be ≥ 2: a frame count counts the rest frame 0, which is never fitted \
             (4 fits frames 1–3; docs/scene.md § Frame counts)",
        ));
    }
    if !(stage.decay > 0.0 && stage.decay <= 1.0) {
        return Err(v.out_of_range(
            &f("decay"),
            stage.decay,
            "must be in (0, 1]: the learning-rate factor at the last iteration",
        ));
    }
    if stage.grad_clip.is_nan() || stage.grad_clip <= 0.0 {
        return Err(v.out_of_range(
            &f("grad_clip"),
            stage.grad_clip,
            "must be > 0 (use inf to disable clipping)",
        ));
    }
    Ok(stage)
}

/// `[fit]`: the loss weights, rounds and checkpoints, and the two stages
/// (their loss weights default to the `[fit]` ones); a stage's `frames`
/// (a frame count, the rest frame 0 included) must not exceed
/// `frames_per_view` when the views have frames.
pub(crate) fn resolve_fit(
    v: &Validator,
    f: &FitConfig,
    frames_per_view: Option<usize>,
) -> Result<FitSettings, SceneError> {
    let w_l1 = v.non_negative("fit.w_l1", f.w_l1)?;
    let w_ssim = v.non_negative("fit.w_ssim", f.w_ssim)?;
    if w_l1 + w_ssim == 0.0 {
        return Err(v.invalid(
            "fit.w_ssim",
            "both image-loss weights are 0",
            "give `fit.w_l1` or `fit.w_ssim` a positive weight (defaults 0.1 and 0.9)",
        ));
    }
    let tv_weight = v.non_negative("fit.tv_weight", f.tv_weight)?;
    // Stage loss weights default to the [fit] ones.
    let with_weights = |d: FitStage| FitStage {
        w_l1,
        w_ssim,
        tv_weight,
        ..d
    };
    let at_least_one = |field: &str, n: i64, why: &str| {
        u32::try_from(n)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| v.out_of_range(field, n, format!("must be an integer ≥ 1 ({why})")))
    };
    // A scan's point count: none, or at least the two a grid needs.
    let none_or_at_least_two = |field: &str, n: i64, none: &str, why: &str| {
        u32::try_from(n)
            .ok()
            .filter(|&n| n == 0 || n >= 2)
            .ok_or_else(|| {
                v.out_of_range(
                    field,
                    n,
                    format!("must be 0 ({none}) or an integer ≥ 2 ({why})"),
                )
            })
    };
    let fit = FitSettings {
        rounds: at_least_one(
            "fit.rounds",
            f.rounds,
            "rounds of stage 1 then stage 2 at most; default 3",
        )?,
        checkpoint_every: at_least_one(
            "fit.checkpoint_every",
            f.checkpoint_every,
            "iterations between checkpoints; default 10",
        )?,
        check_discretisation: f.check_discretisation,
        discretisation_levels: u32::try_from(f.discretisation_levels)
            .ok()
            .filter(|n| (1..=MAX_DISCRETISATION_LEVELS).contains(n))
            .ok_or_else(|| {
                v.out_of_range(
                    "fit.discretisation_levels",
                    f.discretisation_levels,
                    format!(
                        "must be an integer from 1 to {MAX_DISCRETISATION_LEVELS} (levels of doubled grid and substeps the discretisation check may refit E at; default 3)"
                    ),
                )
            })?,
        discretisation_seconds: match &f.discretisation_seconds {
            SecondsConfig::Number(s) => DiscretisationBudget::Seconds(
                v.positive("fit.discretisation_seconds", *s)?,
            ),
            SecondsConfig::Word(w) if w == "auto" => DiscretisationBudget::Rule(BudgetRule::Auto),
            SecondsConfig::Word(w) if w == "none" => DiscretisationBudget::Rule(BudgetRule::None),
            SecondsConfig::Word(w) => {
                return Err(v.invalid(
                    "fit.discretisation_seconds",
                    format!("\"{w}\" is not a budget"),
                    "write a number of seconds > 0, \"auto\" (as long as the stages took; the \
                     default) or \"none\" (no limit)"
                        .to_string(),
                ))
            }
        },
        discretisation_refine: f.discretisation_refine,
        scan: ScanSettings {
            points: none_or_at_least_two(
                "fit.scan.points",
                f.scan.points,
                "no scan",
                "grid points over material.log10_youngs_range; default 5",
            )?,
            velocity_evaluations: at_least_one(
                "fit.scan.velocity_evaluations",
                f.scan.velocity_evaluations,
                "L-BFGS evaluations of each scanned value's velocity; default 4",
            )?,
            poisson_points: none_or_at_least_two(
                "fit.scan.poisson_points",
                f.scan.poisson_points,
                "no scan of ν",
                "points over [fit.stiffness] poisson_range, scanned after E when ν is fitted; \
                 default 5",
            )?,
        },
        w_l1,
        w_ssim,
        tv_weight,
        velocity: resolve_stage(
            v,
            "fit.velocity",
            FieldOf::Velocity,
            &f.velocity,
            with_weights(FitStage::velocity_default()),
        )?,
        stiffness: resolve_stage(
            v,
            "fit.stiffness",
            FieldOf::Stiffness,
            &f.stiffness,
            with_weights(FitStage::stiffness_default()),
        )?,
    };
    if let Some(n) = frames_per_view {
        for (name, stage) in [("velocity", &fit.velocity), ("stiffness", &fit.stiffness)] {
            if let Some(k) = stage.frames {
                if k as usize > n {
                    let fits = match n {
                        0 | 1 => "a rest frame alone leaves nothing to fit".to_string(),
                        _ => format!("{n} fits frames 1–{}", n - 1),
                    };
                    return Err(v.out_of_range(
                        &format!("fit.{name}.frames"),
                        k,
                        format!(
                            "must be at most the {n} reference frame(s) per view \
                             (a frame count counts the rest frame 0: {fits})"
                        ),
                    ));
                }
            }
        }
    }
    Ok(fit)
}
