//! The typed parts of `fit.json` built from what the fit ran with: the
//! resolved scene tables, each stage with its solver and whether it ran,
//! and the Young's modulus parameters named by what they cover. Only the
//! settings a stage's solver uses are listed (docs/design.md § Loss,
//! parameters, fit: a field of at most [`LBFGS_MAX_PARAMETERS`] parameters
//! goes to L-BFGS, which has no learning rate, warm-up, decay or clip).

use super::checkpoint::FitFingerprint;
use super::discretisation::YoungsStatistic;
use super::field_setting::RegionAssignment;
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS};
use super::state::FitState;
use super::summary::{combined_error_bar, PoissonParameter};
#[cfg(doc)]
use super::summary::FitSummary;
use super::summary::{
    FitSettings, InputHashes, MaterialSettings, ScanSettings, Settings, SimulationSettings, Solver,
    StageRun, StageSettings, StageSummary, YoungsParameter,
};
use crate::drive::DriverSet;
use crate::output::youngs_world;
use crate::scene::{FieldSetting, FitStage, PoissonSetting, Scene};

/// The solver of a stage table whose field has `parameters` parameters.
pub fn solver_for(parameters: usize) -> Solver {
    if parameters <= LBFGS_MAX_PARAMETERS {
        Solver::Lbfgs
    } else {
        Solver::Adam
    }
}

/// The solver a planned stage ran (or would have run) with.
pub fn stage_solver(kind: StageKind, state: &FitState) -> Solver {
    match kind {
        StageKind::Scan => Solver::Scan,
        StageKind::Velocity => solver_for(state.velocity.len()),
        // ν's parameters ride with E's.
        StageKind::Stiffness => solver_for(state.log10_youngs.len() + state.poisson.len()),
    }
}

/// `field` as scene.toml writes it, and the region names in parameter
/// order (the named regions, then the drivers no region holds).
fn field_names(field: &FieldSetting, drivers: &DriverSet) -> (String, Vec<String>) {
    match field {
        FieldSetting::Drivers => ("drivers".into(), Vec::new()),
        FieldSetting::Global => ("global".into(), Vec::new()),
        FieldSetting::Rigid => ("rigid".into(), Vec::new()),
        FieldSetting::Regions(regions) => (
            "regions".into(),
            RegionAssignment::new(regions, drivers).names,
        ),
    }
}

fn stage_settings(stage: &FitStage, solver: Solver, drivers: &DriverSet) -> StageSettings {
    let adam = solver == Solver::Adam;
    let (field, regions) = field_names(&stage.field, drivers);
    StageSettings {
        solver,
        iterations: stage.iterations,
        frames: stage.frames,
        learning_rate: adam.then_some(stage.learning_rate),
        warmup: adam.then_some(stage.warmup),
        decay: adam.then_some(stage.decay),
        grad_clip: adam.then_some(stage.grad_clip),
        tolerance: stage.tolerance,
        w_l1: stage.w_l1,
        w_ssim: stage.w_ssim,
        tv_weight: stage.tv_weight,
        velocity_tv_weight: stage.velocity_tv_weight,
        field,
        regions,
        poisson: match stage.poisson {
            PoissonSetting::Fixed => None,
            PoissonSetting::Global => Some("global".into()),
            PoissonSetting::Regions => Some("regions".into()),
        },
        poisson_range: stage
            .poisson
            .fitted()
            .then_some([stage.poisson_range.low, stage.poisson_range.high]),
    }
}

/// The settings of a fit of `scene` (`fingerprint`: its input hashes and
/// the stages chosen).
pub fn settings(
    scene: &Scene,
    drivers: &DriverSet,
    state: &FitState,
    fingerprint: &FitFingerprint,
) -> Settings {
    let get = |key: &str| fingerprint.0.get(key).cloned();
    let fit = &scene.fit;
    Settings {
        inputs_sha256: InputHashes {
            gaussians: get("gaussians.path (SHA-256)").unwrap_or_default(),
            reference_frames: get("reference frames (SHA-256)").unwrap_or_default(),
            loss_masks: get("loss masks (SHA-256)"),
        },
        simulation: SimulationSettings {
            grid_res: scene.simulation.grid_res,
            substeps: scene.simulation.substeps,
            drivers: drivers.len(),
        },
        material: MaterialSettings {
            youngs_modulus: scene.material.youngs_modulus,
            log10_youngs_range: scene.material.log10_youngs_range,
        },
        fit: FitSettings {
            rounds: fit.rounds,
            checkpoint_every: fit.checkpoint_every,
            check_discretisation: fit.check_discretisation,
            discretisation_levels: fit.discretisation_levels,
            discretisation_seconds: fit.discretisation_seconds,
            discretisation_refine: fit.discretisation_refine,
            scan: ScanSettings {
                points: fit.scan.points,
                velocity_evaluations: fit.scan.velocity_evaluations,
                poisson_points: fit.scan.poisson_points,
            },
            velocity: stage_settings(
                &fit.velocity,
                stage_solver(StageKind::Velocity, state),
                drivers,
            ),
            stiffness: stage_settings(
                &fit.stiffness,
                stage_solver(StageKind::Stiffness, state),
                drivers,
            ),
        },
        stages: get("stages").unwrap_or_default(),
        velocity_from: get("velocity held from").filter(|v| v != "none"),
    }
}

/// Every planned stage; `seconds[i]` is stage `i`'s wall time, and a
/// stage with no seconds and no record never ran.
pub fn stages(plan: &[StagePlan], state: &FitState, seconds: &[f64]) -> Vec<StageSummary> {
    plan.iter()
        .enumerate()
        .map(|(i, p)| {
            let solver = stage_solver(p.kind, state);
            let recorded = state
                .records
                .iter()
                .filter(|r| r.round == p.round && r.stage == p.kind)
                .count() as u32;
            let seconds = seconds.get(i).copied().unwrap_or(0.0);
            let tally = state.tallies.get(i);
            let ran = recorded > 0 || seconds > 0.0 || tally.is_some_and(|t| t.evaluations > 0);
            StageSummary {
                round: p.round,
                stage: p.kind.name().into(),
                solver,
                iterations: tally.map_or(p.settings.iterations, |t| t.cap),
                learning_rate: (solver == Solver::Adam).then_some(p.settings.learning_rate),
                frames: p.selection.frames.clone(),
                run: ran.then(|| StageRun {
                    seconds,
                    iterations: recorded,
                    steps: tally.map_or(0, |t| t.steps),
                    evaluations: tally.map_or(0, |t| t.evaluations),
                    converged: state.converged.get(i).copied().unwrap_or(false),
                }),
            }
        })
        .collect()
}

/// The fitted Young's modulus parameters of `scene`'s stiffness field,
/// each named by what it covers, E in both units (`side`: the box side),
/// with its error bar when the fit estimated them.
pub fn youngs_parameters(
    scene: &Scene,
    drivers: &DriverSet,
    state: &FitState,
    side: f64,
) -> Vec<YoungsParameter> {
    let n = state.log10_youngs.len();
    let names: Vec<String> = match &scene.fit.stiffness.field {
        FieldSetting::Global if n == 1 => vec!["object".into()],
        FieldSetting::Regions(regions) => RegionAssignment::new(regions, drivers).names,
        _ => Vec::new(),
    };
    let names = if names.len() == n {
        names
    } else {
        (0..n).map(|i| format!("driver {i}")).collect()
    };
    names
        .into_iter()
        .zip(&state.log10_youngs)
        .enumerate()
        .map(|(i, (name, &l))| {
            let normalised = 10f64.powf(l);
            let errors = state
                .uncertainty
                .as_ref()
                .filter(|u| u.youngs_log10_std.len() == n);
            let log10_std = errors.and_then(|u| u.youngs_log10_std[i]);
            // A per-driver field's check measured its median, no
            // parameter's own shift.
            let check = state
                .discretisation
                .as_ref()
                .filter(|d| d.youngs_statistic == YoungsStatistic::Parameters);
            let discretisation_shift = check.and_then(|d| d.total_shift().get(i).copied());
            let discretisation_error =
                check.and_then(|d| d.own_error()?.get(i).copied());
            YoungsParameter {
                name,
                log10_normalised: l,
                normalised,
                world: youngs_world(normalised, side),
                log10_std,
                constrained: errors.and_then(|u| u.youngs_constrained.get(i).copied()),
                discretisation_shift,
                discretisation_error,
                log10_error_bar: combined_error_bar(log10_std, discretisation_error),
            }
        })
        .collect()
}

/// The fitted Poisson's ratio parameters of `scene` (`[fit.stiffness]
/// poisson`), each named by what it covers: `object` for one ν, E's region
/// names for one per region; empty when ν is not fitted.
pub fn poisson_parameters(
    scene: &Scene,
    drivers: &DriverSet,
    state: &FitState,
) -> Vec<PoissonParameter> {
    let n = state.poisson.len();
    let names: Vec<String> = match (&scene.fit.stiffness.poisson, &scene.fit.stiffness.field) {
        (PoissonSetting::Global, _) if n == 1 => vec!["object".into()],
        (PoissonSetting::Regions, FieldSetting::Regions(regions)) => {
            RegionAssignment::new(regions, drivers).names
        }
        _ => Vec::new(),
    };
    let names = if names.len() == n {
        names
    } else {
        (0..n).map(|i| format!("parameter {i}")).collect()
    };
    let std = |i: usize| {
        state
            .uncertainty
            .as_ref()
            .and_then(|u| u.poisson_std.get(i).copied().flatten())
    };
    names
        .into_iter()
        .zip(&state.poisson)
        .enumerate()
        .map(|(i, (name, &z))| {
            let check = state.discretisation.as_ref();
            let discretisation_shift = check.and_then(|d| d.total_poisson_shift().get(i).copied());
            let discretisation_error =
                check.and_then(|d| d.own_poisson_error()?.get(i).copied());
            PoissonParameter {
                name,
                poisson_ratio: scene.fit.stiffness.poisson_range.poisson_of(z),
                std: std(i),
                discretisation_shift,
                discretisation_error,
                error_bar: combined_error_bar(std(i), discretisation_error),
            }
        })
        .collect()
}


/// The velocity's discretisation errors and combined error bars
/// ([`FitSummary::velocity_discretisation_error`],
/// [`FitSummary::velocity_error_bar`]); both empty when the check measured
/// none.
pub fn velocity_error_bars(state: &FitState) -> (Vec<f64>, Vec<Option<f64>>) {
    let Some(errors) = state
        .discretisation
        .as_ref()
        .and_then(|d| d.own_velocity_error())
    else {
        return (Vec::new(), Vec::new());
    };
    let data = state
        .uncertainty
        .as_ref()
        .map_or(&[][..], |u| u.velocity_std.as_slice());
    let bars = errors
        .iter()
        .enumerate()
        .map(|(i, &e)| combined_error_bar(data.get(i).copied().flatten(), Some(e)))
        .collect();
    (errors, bars)
}
