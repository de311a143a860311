//! The error bars of a finished fit from its data (docs/design.md § Error
//! bars), estimated once after the last stage at the fitted parameters:
//!
//! 1. the loss: the last stiffness stage's frames, views and image
//!    weights with the smoothness weights at 0 (the data's curvature
//!    alone, [`super::uncertainty`]), and the full gradient flow (the
//!    exact gradient; a per-driver stiffness stage's truncated flow is
//!    not the gradient of any loss, so its differences are not a
//!    curvature);
//! 2. the scale `s = 2·loss/(N − n)` ([`residual_scale`]), `N` counted
//!    by [`residual_count`];
//! 3. every fitted group of at most [`LBFGS_MAX_PARAMETERS`] parameters
//!    (global, rigid or per-region fields; a fitted Poisson's ratio's `z`,
//!    whose error bar is carried to ν through the sigmoid's slope,
//!    [`super::poisson`]) goes into one joint Hessian by
//!    central differences ([`hessian_by_differences`]) in the solvers'
//!    scaled coordinates (a unit is the group's first L-BFGS step), step
//!    [`HESSIAN_STEP`]: `2n + 1` evaluations, standard errors with the
//!    correlations between E and v0, and Newton's step from the fitted
//!    values (how far the loss's own optimum still is); an E held at an
//!    end of `material.log10_youngs_range` gets none (the bound holds it,
//!    not the frames, and the optimum lies outside);
//!    a velocity that joint Hessian leaves without an error bar gets its
//!    own, on the last velocity stage's loss with E held
//!    ([`velocity_stage_bars`], [`CurvatureMethod::VelocityStage`]);
//! 4. a per-driver group gets the Hessian's diagonal from [`PROBES`]
//!    random-sign probes ([`diagonal_by_probes`]); a driver whose value
//!    the TV term's largest pull could move by a standard error or more is
//!    marked not constrained (the fitted E there is the regulariser's
//!    guess, [`tv_largest_pull`]).
//!
//! The problem's stage weights are restored afterwards, whatever the
//! outcome.

use super::discretisation::at_range_end;
use super::error::FitError;
use super::evaluation::Parameters;
use super::objective::blown_up;
use super::plan::{StageKind, StagePlan, LBFGS_MAX_PARAMETERS, STIFFNESS_FIRST_STEP};
use super::poisson::{POISSON_FIRST_STEP, Z_BOUND};
use super::problem::FitProblem;
use super::residual_count::residual_count;
use super::state::FitState;
use super::uncertainty::{
    unconstrained_log10_std, Correlations, CurvatureMethod, FitUncertainty, HessianDifferences,
    StiffnessNewtonStep,
};
use crate::solve::newton::newton_step;
use crate::gpu::GpuContext;
use crate::mpm::GradientFlow;
use crate::scene::{FitStage, Scene};
use crate::solve::covariance::{covariance, residual_scale};
use crate::solve::curvature::{diagonal_by_probes, hessian_by_differences, Differences};
use crate::solve::Evaluated;

/// The difference step, in the solvers' scaled coordinates: a tenth of
/// the first L-BFGS step (0.025 decades of E; 0.2% of the box per frame
/// of velocity), small against the error bars met on the twins and large
/// against the float-atomic noise of the gradients.
pub const HESSIAN_STEP: f64 = 0.1;

/// Random-sign probes of a per-driver field's diagonal.
pub const PROBES: usize = 8;

/// The probes' signs are fixed: a fit's error bars are reproducible.
const PROBE_SEED: u64 = 0x5EED_E44B;

/// What a group of parameters is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fitted {
    /// `log10 E`.
    Youngs,
    /// The initial velocity.
    Velocity,
    /// Poisson's ratio's `z` ([`super::poisson`]).
    Poisson,
}

/// One fitted group of parameters: which, its scale (the unit of the
/// solver's coordinates) and its bounds.
#[derive(Clone, Copy)]
struct Group {
    kind: Fitted,
    scale: f64,
    bounds: (f64, f64),
}

/// The fitted groups of `plan` with their scales (`range`: the bounds of
/// `log10 E`; `poisson`: whether ν is fitted), E first and ν last, so that
/// E's parameters lead the joint Hessian's order.
fn fitted_groups(plan: &[StagePlan], range: [f64; 2], poisson: bool) -> Vec<Group> {
    let youngs = plan
        .iter()
        .any(|p| matches!(p.kind, StageKind::Scan | StageKind::Stiffness));
    let velocity = plan.iter().find_map(|p| match p.kind {
        StageKind::Velocity => Some(p.first_step),
        StageKind::Scan => p
            .scan
            .as_ref()
            .filter(|s| s.fit_velocity)
            .map(|s| s.first_velocity_step),
        StageKind::Stiffness => None,
    });
    let mut groups = Vec::new();
    if youngs {
        groups.push(Group {
            kind: Fitted::Youngs,
            scale: STIFFNESS_FIRST_STEP,
            bounds: (range[0], range[1]),
        });
    }
    if let Some(scale) = velocity {
        groups.push(Group {
            kind: Fitted::Velocity,
            scale,
            bounds: (f64::NEG_INFINITY, f64::INFINITY),
        });
    }
    if youngs && poisson {
        groups.push(Group {
            kind: Fitted::Poisson,
            scale: POISSON_FIRST_STEP,
            bounds: (-Z_BOUND, Z_BOUND),
        });
    }
    groups
}

/// The stage whose loss the error bars are of: the last stiffness stage,
/// else the last stage.
fn curvature_stage(plan: &[StagePlan]) -> Option<&StagePlan> {
    plan.iter()
        .rev()
        .find(|p| p.kind == StageKind::Stiffness)
        .or(plan.last())
}

/// The error bars of the fit of `plan` at `state`'s parameters (module
/// doc). `None` when the plan is empty.
pub fn estimate_uncertainty(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    scene: &Scene,
    plan: &[StagePlan],
    state: &FitState,
) -> Result<Option<FitUncertainty>, FitError> {
    let Some(stage) = curvature_stage(plan) else {
        return Ok(None);
    };
    let data_only = FitStage {
        tv_weight: 0.0,
        velocity_tv_weight: 0.0,
        ..stage.settings.clone()
    };
    problem.set_stage(&data_only)?;
    let estimate = estimate_at(ctx, problem, scene, plan, stage, state);
    problem.set_stage(&stage.settings)?;
    estimate.map(Some)
}

fn estimate_at(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    scene: &Scene,
    plan: &[StagePlan],
    stage: &StagePlan,
    state: &FitState,
) -> Result<FitUncertainty, FitError> {
    let range = scene.material.log10_youngs_range;
    // dν/dz of the scene's fitted ν range.
    let poisson_slope = |z: f64| scene.fit.stiffness.poisson_range.derivative(z);
    let params = state.parameters();
    let selection = &stage.selection;
    // The centre's gradients, once for every group; their evaluation's
    // loss is the image loss (the smoothness weights are 0 here), so no
    // forward of its own measures it.
    let mut evaluations = 0u32;
    let centre = gradients_at(ctx, problem, &params, stage)?;
    evaluations += 1;
    let image_loss = match &centre {
        Some(c) => c.loss,
        None => problem.loss(ctx, &params, selection)?.image,
    };
    let residuals = residual_count(ctx, problem, scene, &params, selection)?;
    let groups = fitted_groups(plan, range, !params.poisson.is_empty());
    let values = |kind: Fitted| match kind {
        Fitted::Velocity => &params.velocity,
        Fitted::Youngs => &params.log10_youngs,
        Fitted::Poisson => &params.poisson,
    };
    let fitted: usize = groups.iter().map(|g| values(g.kind).len()).sum();
    let scale = residual_scale(image_loss, residuals, fitted);
    let mut youngs_std = Vec::new();
    let mut velocity_std = Vec::new();
    let mut poisson_std = Vec::new();
    let mut youngs_constrained = Vec::new();
    let (mut youngs_method, mut velocity_method) = (None, None);

    // Every coordinate of the groups with few parameters, jointly.
    let few: Vec<(Group, usize)> = groups
        .iter()
        .filter(|g| values(g.kind).len() <= LBFGS_MAX_PARAMETERS)
        .flat_map(|&g| (0..values(g.kind).len()).map(move |i| (g, i)))
        .collect();
    let mut correlations = None;
    let mut differences = None;
    let mut stiffness_step = None;
    if !few.is_empty() {
        let z0: Vec<f64> = few
            .iter()
            .map(|&(g, i)| values(g.kind)[i] / g.scale)
            .collect();
        let bounds: Vec<(f64, f64)> = few
            .iter()
            .map(|&(g, _)| (g.bounds.0 / g.scale, g.bounds.1 / g.scale))
            .collect();
        let mut objective = |z: &[f64]| -> Result<Evaluated, FitError> {
            evaluations += 1;
            let mut p = params.clone();
            for (&(g, i), &zi) in few.iter().zip(z) {
                group_values(&mut p, g.kind)[i] = zi * g.scale;
            }
            gradient_of(ctx, problem, &p, stage, |grads| {
                few.iter()
                    .map(|&(g, i)| g.scale * grads(g.kind)[i])
                    .collect()
            })
        };
        let names: Vec<String> = few
            .iter()
            .map(|&(g, i)| match g.kind {
                Fitted::Velocity => format!("v0[{i}]"),
                Fitted::Youngs => format!("log10 E[{i}]"),
                Fitted::Poisson => format!("z of ν[{i}]"),
            })
            .collect();
        let steps = vec![HESSIAN_STEP; z0.len()];
        let centre = centre.as_ref().and_then(|c| {
            let picked = few.iter().map(|&(g, i)| g.scale * c.of(g.kind)[i]);
            crate::solve::usable(c.loss, picked.collect()).map(|(_, g)| g)
        });
        // Forward differences, kept when they give every coordinate a
        // standard error; else central ones (module doc, step 3).
        let taken = hessian_by_differences(
            &mut objective,
            &z0,
            &steps,
            &bounds,
            centre.as_deref(),
            |h| {
                let missing: Vec<&str> = covariance(h, scale)
                    .std
                    .iter()
                    .zip(&names)
                    .filter(|(s, _)| s.is_none())
                    .map(|(_, n)| n.as_str())
                    .collect();
                if !missing.is_empty() {
                    log::debug!(
                        "the forward-difference Hessian leaves {} without an error bar: \
                         completing it to central differences",
                        missing.join(", ")
                    );
                }
                missing.is_empty()
            },
        )?;
        differences = taken.as_ref().map(|(_, d)| match d {
            Differences::Forward => HessianDifferences::Forward,
            Differences::Central => HessianDifferences::Central,
        });
        let hessian = taken.map(|(h, _)| h);
        stiffness_step = match (&hessian, &centre) {
            (Some(h), Some(g)) => stiffness_newton_step(&few, h, g, &params, range),
            _ => None,
        };
        let c = hessian.as_ref().map(|h| covariance(h, scale));
        for (j, &(g, i)) in few.iter().enumerate() {
            let std = c.as_ref().and_then(|c| c.std[j]).map(|s| s * g.scale);
            match g.kind {
                Fitted::Velocity => velocity_std.push(std),
                Fitted::Youngs => {
                    // At an end of the E range the bound holds the value,
                    // not the frames: the loss's optimum lies outside, and
                    // a curvature there is no error bar.
                    let held = at_range_end(&[params.log10_youngs[i]], range);
                    let std = std.filter(|_| !held);
                    youngs_std.push(std);
                    youngs_constrained.push(std.is_some());
                }
                // σ_ν = |dν/dz| · σ_z at the fitted z (first order).
                Fitted::Poisson => poisson_std.push(std.map(|s| s * poisson_slope(params.poisson[i]))),
            }
        }
        for g in &groups {
            if values(g.kind).len() <= LBFGS_MAX_PARAMETERS {
                match g.kind {
                    Fitted::Velocity => velocity_method = Some(CurvatureMethod::Hessian),
                    Fitted::Youngs => youngs_method = Some(CurvatureMethod::Hessian),
                    Fitted::Poisson => {}
                }
            }
        }
        // An E or ν the joint Hessian left without an error bar, from the
        // stiffness block alone when that is positive definite
        // (CurvatureMethod::StiffnessBlock).
        let held = |i: usize| at_range_end(&[params.log10_youngs[i]], range);
        let missing = few.iter().zip(c.as_ref().map(|c| &c.std[..]).unwrap_or(&[])).any(
            |(&(g, i), s)| match g.kind {
                Fitted::Youngs => s.is_none() && !held(i),
                Fitted::Poisson => s.is_none(),
                Fitted::Velocity => false,
            },
        );
        let stiffness: Vec<(Group, usize)> = few
            .iter()
            .copied()
            .filter(|(g, _)| g.kind != Fitted::Velocity)
            .collect();
        // The block's bars, when it gives one to every value not held at an
        // end of the E range (a held E gets none either way).
        let block = hessian
            .as_ref()
            .filter(|_| missing)
            .and_then(|h| stiffness_block_bars(&few, h, scale))
            .filter(|bars| {
                stiffness.iter().zip(bars).all(|(&(g, i), s)| {
                    s.is_some() || (g.kind == Fitted::Youngs && held(i))
                })
            });
        let block_taken = block.is_some();
        if let Some(block) = block {
            youngs_std.clear();
            youngs_constrained.clear();
            poisson_std.clear();
            for (&(g, i), std) in stiffness.iter().zip(block) {
                let std = std.map(|s| s * g.scale);
                match g.kind {
                    Fitted::Youngs => {
                        let std = std.filter(|_| !held(i));
                        youngs_std.push(std);
                        youngs_constrained.push(std.is_some());
                    }
                    Fitted::Poisson => {
                        poisson_std.push(std.map(|s| s * poisson_slope(params.poisson[i])))
                    }
                    Fitted::Velocity => {}
                }
            }
            youngs_method = Some(CurvatureMethod::StiffnessBlock);
        }
        // The joint covariance's correlations and Newton step, unless the
        // joint Hessian was set aside for the block's (it is not positive
        // definite: what it says of them is not a covariance).
        correlations = c.filter(|_| !block_taken).map(|c| {
            // Newton's step −H⁻¹g = −Σg/s, back in parameter units.
            let newton_step = (0..few.len())
                .map(|i| {
                    let g = centre.as_deref()?;
                    let si = c.std[i]?;
                    let mut step = 0.0;
                    for (j, gj) in g.iter().enumerate() {
                        let sj = c.std[j]?;
                        step -= c.correlation[i][j] * si * sj * gj / scale;
                    }
                    Some(step * few[i].0.scale)
                })
                .collect();
            Correlations {
                names,
                matrix: c.correlation,
                newton_step,
            }
        });
    }

    // A velocity the joint Hessian left without an error bar: its own
    // stage's loss (CurvatureMethod::VelocityStage).
    let velocity_group = groups.iter().find(|g| {
        g.kind == Fitted::Velocity && values(g.kind).len() <= LBFGS_MAX_PARAMETERS
    });
    if let Some(&group) = velocity_group.filter(|_| velocity_std.iter().any(Option::is_none)) {
        if let Some(own) = velocity_stage_bars(ctx, problem, scene, plan, &params, group)? {
            evaluations += own.evaluations;
            if own.std.iter().all(Option::is_some) {
                velocity_std = own.std;
                velocity_method = Some(CurvatureMethod::VelocityStage);
            }
        }
        // The stiffness stage's data-only weights again, for what follows.
        problem.set_stage(&FitStage {
            tv_weight: 0.0,
            velocity_tv_weight: 0.0,
            ..stage.settings.clone()
        })?;
    }

    // Each per-driver group on its own, by probes of its diagonal.
    for g in groups
        .iter()
        .filter(|g| values(g.kind).len() > LBFGS_MAX_PARAMETERS)
    {
        let x0 = values(g.kind).clone();
        let bounds = vec![g.bounds; x0.len()];
        let step = HESSIAN_STEP * g.scale;
        let mut objective = |x: &[f64]| -> Result<Evaluated, FitError> {
            evaluations += 1;
            let mut p = params.clone();
            group_values(&mut p, g.kind).copy_from_slice(x);
            gradient_of(ctx, problem, &p, stage, |grads| grads(g.kind))
        };
        let at_x = centre
            .as_ref()
            .and_then(|c| crate::solve::usable(c.loss, c.of(g.kind).to_vec()))
            .map(|(_, g)| g);
        let diagonal = diagonal_by_probes(
            &mut objective,
            &x0,
            step,
            &bounds,
            PROBES,
            PROBE_SEED,
            at_x.as_deref(),
        )?;
        let std: Vec<Option<f64>> = match &diagonal {
            Some(d) => d
                .iter()
                .map(|&c| (c > 0.0).then(|| (scale / c).sqrt()))
                .collect(),
            None => vec![None; x0.len()],
        };
        match g.kind {
            Fitted::Velocity => {
                velocity_std = std;
                velocity_method = Some(CurvatureMethod::Diagonal);
            }
            Fitted::Poisson => {
                poisson_std = std
                    .iter()
                    .zip(&x0)
                    .map(|(s, &z)| s.map(|s| s * poisson_slope(z)))
                    .collect();
            }
            Fitted::Youngs => {
                let pull = tv_largest_pull(problem, stage.settings.tv_weight);
                let cap = unconstrained_log10_std(range);
                // Constrained: the regulariser can move the value by less
                // than one standard error (`pull / H_dd < σ`).
                youngs_constrained = std
                    .iter()
                    .zip(diagonal.as_deref().unwrap_or(&[]))
                    .zip(&pull)
                    .map(|((s, &d), &t)| s.is_some_and(|s| s < cap && t / d < s))
                    .collect();
                youngs_constrained.resize(x0.len(), false);
                youngs_std = std;
                youngs_method = Some(CurvatureMethod::Diagonal);
            }
        }
    }
    Ok(FitUncertainty {
        frames: selection.frames.clone(),
        residuals,
        image_loss,
        scale,
        evaluations,
        youngs_method,
        velocity_method,
        youngs_log10_std: youngs_std,
        velocity_std,
        poisson_std,
        youngs_constrained,
        correlations,
        differences,
        stiffness_newton_step: stiffness_step,
    })
}

/// What [`velocity_stage_bars`] found.
struct OwnStageBars {
    /// Per velocity parameter, its standard error (parameter units).
    std: Vec<Option<f64>>,
    /// Gradients it took.
    evaluations: u32,
}

/// The velocity's standard errors from the last velocity stage's own loss
/// at `params` ([`CurvatureMethod::VelocityStage`]): its frames and image
/// weights with the smoothness at 0, the full flow, E and ν held; the
/// Hessian by forward differences of the exact gradients, completed to
/// central ones when those leave a component without a bar, and scaled by
/// that stage's own residual. Leaves `problem` at that stage's weights.
/// `None` without a velocity stage, or where a rollout blew up.
fn velocity_stage_bars(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    scene: &Scene,
    plan: &[StagePlan],
    params: &Parameters,
    group: Group,
) -> Result<Option<OwnStageBars>, FitError> {
    let Some(stage) = plan.iter().rev().find(|p| p.kind == StageKind::Velocity) else {
        return Ok(None);
    };
    problem.set_stage(&FitStage {
        tv_weight: 0.0,
        velocity_tv_weight: 0.0,
        ..stage.settings.clone()
    })?;
    let mut evaluations = 1u32;
    let Some(centre) = gradients_at(ctx, problem, params, stage)? else {
        return Ok(None);
    };
    let residuals = residual_count(ctx, problem, scene, params, &stage.selection)?;
    let n = params.velocity.len();
    let scale = residual_scale(centre.loss, residuals, n);
    let z0: Vec<f64> = params.velocity.iter().map(|v| v / group.scale).collect();
    let bounds = vec![(f64::NEG_INFINITY, f64::INFINITY); n];
    let g0: Vec<f64> = centre.velocity.iter().map(|g| g * group.scale).collect();
    let mut objective = |z: &[f64]| -> Result<Evaluated, FitError> {
        evaluations += 1;
        let mut p = params.clone();
        for (v, zi) in p.velocity.iter_mut().zip(z) {
            *v = zi * group.scale;
        }
        gradient_of(ctx, problem, &p, stage, |grads| {
            grads(Fitted::Velocity)
                .iter()
                .map(|g| g * group.scale)
                .collect()
        })
    };
    let steps = vec![HESSIAN_STEP; n];
    let taken = hessian_by_differences(&mut objective, &z0, &steps, &bounds, Some(&g0), |h| {
        covariance(h, scale).std.iter().all(Option::is_some)
    })?;
    let std = match taken {
        Some((h, _)) => covariance(&h, scale)
            .std
            .iter()
            .map(|s| s.map(|s| s * group.scale))
            .collect(),
        None => vec![None; n],
    };
    Ok(Some(OwnStageBars { std, evaluations }))
}

/// Newton's step in the stiffness unknowns alone (E and ν's `z`, the
/// velocity held) from the joint Hessian `h` and gradient `g` (both in
/// the solvers' scaled coordinates, in `few`'s order), back in parameter
/// units (module doc of [`super::uncertainty::StiffnessNewtonStep`]).
/// `None` unless the block is positive definite (every eigenvalue above
/// 1e-8 of the largest, as [`covariance`] asks for an error bar) and no E
/// is held at an end of `range`.
fn stiffness_newton_step(
    few: &[(Group, usize)],
    h: &[Vec<f64>],
    g: &[f64],
    params: &Parameters,
    range: [f64; 2],
) -> Option<StiffnessNewtonStep> {
    let (picked, block) = stiffness_block(few, h);
    if picked.is_empty() || at_range_end(&params.log10_youngs, range) {
        return None;
    }
    let gs: Vec<f64> = picked.iter().map(|&i| g[i]).collect();
    let (step, decrease) = newton_step(&block, &gs)?;
    let mut out = StiffnessNewtonStep {
        log10_youngs: Vec::new(),
        poisson_z: Vec::new(),
        predicted_decrease: decrease,
    };
    for (&j, s) in picked.iter().zip(step) {
        let (group, _) = few[j];
        match group.kind {
            Fitted::Youngs => out.log10_youngs.push(s * group.scale),
            Fitted::Poisson => out.poisson_z.push(s * group.scale),
            Fitted::Velocity => {}
        }
    }
    Some(out)
}

/// The standard errors (scaled coordinates) of the stiffness unknowns of
/// `few`, in order, from their block of `h` alone, the velocity held
/// ([`CurvatureMethod::StiffnessBlock`]): `None` per value the block does
/// not constrain; `None` in all when `few` holds no velocity (the block is
/// the joint Hessian) or no stiffness unknown.
fn stiffness_block_bars(
    few: &[(Group, usize)],
    h: &[Vec<f64>],
    scale: f64,
) -> Option<Vec<Option<f64>>> {
    let (picked, block) = stiffness_block(few, h);
    if picked.is_empty() || picked.len() == few.len() {
        return None;
    }
    Some(covariance(&block, scale).std)
}

/// The positions in `few` of the stiffness unknowns (E, a fitted ν), and
/// their block of `h`.
fn stiffness_block(few: &[(Group, usize)], h: &[Vec<f64>]) -> (Vec<usize>, Vec<Vec<f64>>) {
    let picked: Vec<usize> = (0..few.len())
        .filter(|&j| few[j].0.kind != Fitted::Velocity)
        .collect();
    let block = picked
        .iter()
        .map(|&i| picked.iter().map(|&j| h[i][j]).collect())
        .collect();
    (picked, block)
}

/// The values of group `kind` in `p`.
fn group_values(p: &mut Parameters, kind: Fitted) -> &mut [f64] {
    match kind {
        Fitted::Velocity => &mut p.velocity,
        Fitted::Youngs => &mut p.log10_youngs,
        Fitted::Poisson => &mut p.poisson,
    }
}

/// The loss and exact gradients at a point, per group.
struct Gradients {
    loss: f64,
    youngs: Vec<f64>,
    velocity: Vec<f64>,
    poisson: Vec<f64>,
}

impl Gradients {
    fn of(&self, kind: Fitted) -> &[f64] {
        match kind {
            Fitted::Velocity => &self.velocity,
            Fitted::Youngs => &self.youngs,
            Fitted::Poisson => &self.poisson,
        }
    }
}

/// The loss and exact gradients at `p` on `stage`'s selection (the full
/// flow); `None` where the simulation blew up.
fn gradients_at(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    p: &Parameters,
    stage: &StagePlan,
) -> Result<Option<Gradients>, FitError> {
    let evaluated = problem.evaluate(ctx, p, &stage.selection, GradientFlow::Full);
    let Some(eval) = blown_up(evaluated)? else {
        return Ok(None);
    };
    let grads = eval.read(ctx)?;
    let poisson = problem.poisson_parameter_gradient(&p.poisson, &grads.poisson)?;
    let widen = |g: &[f32]| g.iter().map(|&g| f64::from(g)).collect::<Vec<f64>>();
    Ok(Some(Gradients {
        loss: eval.report.loss,
        youngs: widen(&grads.youngs),
        velocity: widen(&grads.velocity),
        poisson,
    }))
}

/// The exact gradient at `p` on `stage`'s selection, as `pick` takes it
/// from the groups' gradients; `None` where the simulation blew up.
fn gradient_of(
    ctx: &GpuContext,
    problem: &mut FitProblem,
    p: &Parameters,
    stage: &StagePlan,
    pick: impl Fn(&dyn Fn(Fitted) -> Vec<f64>) -> Vec<f64>,
) -> Result<Evaluated, FitError> {
    let Some(all) = gradients_at(ctx, problem, p, stage)? else {
        return Ok(None);
    };
    let by_kind = |kind: Fitted| all.of(kind).to_vec();
    Ok(crate::solve::usable(all.loss, pick(&by_kind)))
}

/// Per `log10 E` parameter, the largest pull (gradient magnitude) the TV
/// term at `weight` can exert on it: TV is a mean over the graph's edges
/// of a smoothed `|Δ|`, whose gradient per edge is at most `1/edges`, so a
/// parameter's is at most `weight · Σ_d |M_dp| · degree(d) / edges`. An
/// L1-type penalty has no useful curvature (it is a kink where neighbours
/// agree); its bounded pull is what it can do against the data.
fn tv_largest_pull(problem: &FitProblem, weight: f64) -> Vec<f64> {
    let map = problem.youngs_map();
    let graph = &problem.drivers().graph;
    let mut degree = vec![0.0f64; map.drivers];
    for &(a, b) in graph {
        degree[a as usize] += 1.0;
        degree[b as usize] += 1.0;
    }
    let edges = graph.len().max(1) as f64;
    let mut pull = vec![0.0; map.params];
    for e in &map.entries {
        pull[e.param as usize] += weight * e.weight.abs() * degree[e.driver as usize] / edges;
    }
    pull
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(kind: Fitted) -> Group {
        Group {
            kind,
            scale: 1.0,
            bounds: (f64::NEG_INFINITY, f64::INFINITY),
        }
    }

    /// A joint Hessian that curves down along the velocity leaves E
    /// without a joint error bar; E's block alone still gives one, the
    /// inverse of that block's diagonal entry of its inverse, scaled.
    #[test]
    fn the_stiffness_block_gives_e_its_bars_where_the_joint_hessian_curves_down() {
        let few = [
            (group(Fitted::Youngs), 0),
            (group(Fitted::Youngs), 1),
            (group(Fitted::Velocity), 0),
        ];
        let joint = vec![
            vec![4.0, 1.0, 3.0],
            vec![1.0, 2.0, 0.0],
            vec![3.0, 0.0, -1.0],
        ];
        assert_eq!(covariance(&joint, 1.0).std[0], None);
        let bars = stiffness_block_bars(&few, &joint, 7.0).unwrap();
        // [[4, 1], [1, 2]]⁻¹ = [[2, −1], [−1, 4]] / 7.
        assert!((bars[0].unwrap() - (7.0f64 * 2.0 / 7.0).sqrt()).abs() < 1e-12);
        assert!((bars[1].unwrap() - (7.0f64 * 4.0 / 7.0).sqrt()).abs() < 1e-12);
        // A block that is not positive definite constrains neither value.
        let flat = vec![
            vec![1.0, 2.0, 0.0],
            vec![2.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        assert_eq!(
            stiffness_block_bars(&few, &flat, 1.0),
            Some(vec![None, None])
        );
        // Without a velocity the block is the joint Hessian: nothing new.
        assert_eq!(stiffness_block_bars(&few[..2], &joint, 1.0), None);
    }
}
