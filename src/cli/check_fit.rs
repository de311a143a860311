//! The fit part of `physfit check`'s summary: the settings `physfit fit`
//! will run with, so that a scene's
//! `[fit]` tables can be read back before any GPU time is spent.
//!
//! `fit.rounds`, `fit.checkpoint_every`, `[fit.scan]` (the slowest
//! phase, with its scan of ν when ν is fitted); per stage: its solver (chosen by the field's parameter count,
//! as the fit chooses it) with only the settings that solver uses
//! (L-BFGS: the cap on evaluations and the tolerance; Adam: iterations,
//! learning rate, warm-up, decay, clip, tolerance), its frames and loss
//! weights, its `field` and, for `"regions"`, every region with the
//! drivers it holds (the scene's K-Means drivers assigned by
//! [`RegionAssignment`], exactly as the fit assigns them; K-Means runs only
//! when a stage has regions); the evaluations each phase may take at
//! most; and the E range in world units too (units that do not depend on
//! the box's padding: `E_world = E · side²`, [`youngs_world`]).

use std::fmt::Write;

use anyhow::{Context, Result};
use physfit::budget::{estimate, human_bytes, Workload};
use physfit::fit::{
    cold_velocity_evaluations, level_scene, poisson_candidates, scene_resolution, solver_for,
    youngs_world, DriverSet, RegionAssignment, Solver, DISCRETISATION_TOLERANCE, MAX_NEWTON_STEPS,
    MIN_E_REFITS, POISSON_DISCRETISATION_TOLERANCE, ROUND_SHARE_OF_TOLERANCE,
};
use physfit::scene::{
    BudgetRule, DiscretisationBudget, DiscretisationRefinement, FieldSetting, FitStage, Scene,
};

use super::count::count;

/// The lines `physfit check` prints about the fit (each ends in a newline).
///
/// Errors: K-Means failing on the scene's drivers (only run when a stage's
/// `field` is `"regions"`).
pub fn fit_summary(scene: &Scene) -> Result<String> {
    let mut s = String::new();
    let f = &scene.fit;
    let has_regions = [&f.velocity.field, &f.stiffness.field]
        .iter()
        .any(|field| matches!(field, FieldSetting::Regions(_)));
    let drivers = if has_regions {
        Some(DriverSet::from_scene(scene).with_context(|| {
            format!(
                "building the drivers of {} to assign them to the fit's regions",
                physfit::io::shown(&scene.path)
            )
        })?)
    } else {
        None
    };
    let _ = writeln!(
        s,
        "fit          {} round{} of stage 1 (velocity) then stage 2 (stiffness); \
         checkpoint every {} iterations and at the end of each stage",
        f.rounds,
        if f.rounds == 1 { "" } else { "s" },
        f.checkpoint_every
    );
    let _ = writeln!(s, "{}", discretisation_summary(scene));
    let available = scene.frame_count().unwrap_or(0);
    let velocity_parameters =
        field_parameters("velocity", &f.velocity.field, scene, drivers.as_ref());
    let cold = cold_velocity_evaluations(
        f.scan.velocity_evaluations,
        f.velocity.iterations,
        velocity_parameters,
    );
    let _ = writeln!(s, "{}", scan_line(scene, available, cold));
    for (label, stage) in [("velocity", &f.velocity), ("stiffness", &f.stiffness)] {
        let smoothness = if label == "velocity" {
            format!("velocity_tv_weight {}", stage.velocity_tv_weight)
        } else {
            format!("tv_weight {}", stage.tv_weight)
        };
        // Poisson's ratios ride with E in one solver.
        let parameters = stage.poisson.with_youngs(field_parameters(
            label,
            &stage.field,
            scene,
            drivers.as_ref(),
        ));
        // Stage 2 follows the exact gradient where L-BFGS solves it (its
        // line search measures the loss that gradient is of), PhysDreamer's
        // truncated one where Adam does (docs/design.md § Loss,
        // parameters, fit).
        let flow = match (label, solver_for(parameters)) {
            ("velocity", _) => "full flow, E frozen",
            (_, Solver::Lbfgs) => "exact flow, v0 frozen",
            _ => "truncated flow, v0 frozen",
        };
        let schedule = match solver_for(parameters) {
            // L-BFGS has no rate: only the cap and the tolerance apply.
            Solver::Lbfgs => format!(
                "L-BFGS ({parameters} parameters), at most {} (line-search trials included), \
                 tolerance {}",
                count(stage.iterations as usize, "evaluation", "evaluations"),
                stage.tolerance
            ),
            _ => format!(
                "Adam ({parameters} parameters), {} it, learning_rate {} (warmup {}, decay {}, \
                 grad_clip {}), tolerance {}",
                stage.iterations,
                stage.learning_rate,
                stage.warmup,
                stage.decay,
                stage.grad_clip,
                stage.tolerance
            ),
        };
        let _ = writeln!(
            s,
            "  {label:<10} {schedule}, {}, {flow}; w_l1 {}, w_ssim {}, {smoothness}",
            frames(stage),
            stage.w_l1,
            stage.w_ssim,
        );
        field_lines(&mut s, label, &stage.field, drivers.as_ref());
    }
    let _ = writeln!(s, "{}", evaluations_line(scene, drivers.as_ref(), cold));
    let side = scene.simulation.sim_box.side;
    let m = &scene.material;
    let world = |log10_e: f64| youngs_world(10f64.powf(log10_e), side).log10();
    let _ = writeln!(
        s,
        "E units      settings are normalised (the box is the unit cube); in world units \
         E_world = E · side² (side {side:.4}): E0 {:.3e}, log10 E in [{:.3}, {:.3}]",
        youngs_world(m.youngs_modulus, side),
        world(m.log10_youngs_range[0]),
        world(m.log10_youngs_range[1]),
    );
    Ok(s)
}

/// `[fit.scan]`: the grid over the E range and each point's velocity
/// fit (docs/design.md § Loss, parameters, fit: the slowest phase of a
/// fit, a velocity fit per point). `cold`: the evaluations of the first
/// point's velocity fit ([`cold_velocity_evaluations`]).
fn scan_line(scene: &Scene, available: usize, cold: u32) -> String {
    let scan = &scene.fit.scan;
    if scan.points < 2 {
        return "  scan       none (`fit.scan.points = 0`): the stages start from \
                `material.youngs_modulus`"
            .to_string();
    }
    let [low, high] = scene.material.log10_youngs_range;
    let velocity_frames = scene.fit.velocity.fitted_frames(available);
    let stiffness_frames = scene.fit.stiffness.fitted_frames(available);
    let poisson = poisson_candidates(scene);
    let then_poisson = match (poisson.first(), poisson.last()) {
        (Some(first), Some(last)) => format!(
            "; then ν at {} points from {first:.3} to {last:.3} and one more by a parabola, at the \
             best E and its velocity, one loss each",
            poisson.len()
        ),
        _ => String::new(),
    };
    format!(
        "  scan       {} points over log10 E [{low}, {high}] and one more by a parabola; each \
         point's velocity by L-BFGS in {} on frames {}–{} ({} for the first), its loss on \
         frames {}–{}{then_poisson}",
        scan.points,
        count(
            scan.velocity_evaluations as usize,
            "evaluation",
            "evaluations"
        ),
        velocity_frames.start(),
        velocity_frames.end(),
        cold,
        stiffness_frames.start(),
        stiffness_frames.end(),
    )
}

/// The evaluations each phase of `physfit fit` may take, at most (its
/// caps; stages that converge take fewer, and Adam more for each
/// rejected step): what the fit costs, in rollouts; `cold` as for
/// [`scan_line`].
fn evaluations_line(scene: &Scene, drivers: Option<&DriverSet>, cold: u32) -> String {
    let f = &scene.fit;
    // (what is printed, evaluations at most)
    let mut phases: Vec<(String, u32)> = Vec::new();
    if f.scan.points >= 2 {
        // Every point, and the parabola's: a velocity fit and a loss; the
        // first point's fit, started cold, gets the velocity stage's cap.
        // Then ν's points and its parabola's, one loss each.
        let poisson = match poisson_candidates(scene).len() as u32 {
            0 => 0,
            n => n + 1,
        };
        let most = (f.scan.points + 1) * (f.scan.velocity_evaluations + 1) + cold
            - f.scan.velocity_evaluations
            + poisson;
        phases.push((format!("scan {most}"), most));
    }
    for (label, stage) in [("velocity", &f.velocity), ("stiffness", &f.stiffness)] {
        let parameters =
            stage
                .poisson
                .with_youngs(field_parameters(label, &stage.field, scene, drivers));
        // Adam evaluates its start, then once per step.
        let per_round = match solver_for(parameters) {
            Solver::Lbfgs => stage.iterations,
            _ => stage.iterations + 1,
        };
        phases.push((
            format!("{label} {} × {per_round}", f.rounds),
            f.rounds * per_round,
        ));
    }
    let total: u32 = phases.iter().map(|(_, n)| n).sum();
    let listed: Vec<&str> = phases.iter().map(|(p, _)| p.as_str()).collect();
    format!(
        "  evaluations at most {total}: {} (rounds × cap; each a rollout with its gradient, \
         fewer when a stage converges or the rounds do)",
        listed.join(", ")
    )
}

/// The parameters of a stage's field: one `log10 E` or three velocity
/// components per unit (the object, a region, a driver); rigid: six.
/// Which solver fits the stage follows from it ([`solver_for`]).
fn field_parameters(
    label: &str,
    field: &FieldSetting,
    scene: &Scene,
    drivers: Option<&DriverSet>,
) -> usize {
    let per = if label == "velocity" { 3 } else { 1 };
    match field {
        FieldSetting::Global => per,
        FieldSetting::Rigid => 6,
        FieldSetting::Drivers => per * scene.drivers.count,
        FieldSetting::Regions(regions) => {
            let drivers = drivers.expect("drivers are built when a stage has regions");
            per * RegionAssignment::new(regions, drivers).count() as usize
        }
    }
}

/// The frames a stage fits on: its frame count (the rest frame 0
/// included) and the frames fitted.
fn frames(stage: &FitStage) -> String {
    match stage.frames {
        Some(n) => format!("frames {n} (fits 1–{})", n.saturating_sub(1)),
        None => "all frames (fits 1 to the last)".to_string(),
    }
}

/// The `field` line of a stage, with the drivers per region for
/// `"regions"` (a region that holds none keeps its starting value: warned).
fn field_lines(s: &mut String, label: &str, field: &FieldSetting, drivers: Option<&DriverSet>) {
    let what = if label == "velocity" { "v0" } else { "log10 E" };
    let regions = match field {
        FieldSetting::Drivers => {
            let _ = writeln!(s, "    field    \"drivers\": one {what} per driver");
            return;
        }
        FieldSetting::Global => {
            let _ = writeln!(
                s,
                "    field    \"global\": one {what} for the whole object"
            );
            return;
        }
        FieldSetting::Rigid => {
            let _ = writeln!(
                s,
                "    field    \"rigid\": linear + angular velocity about the free drivers' centroid"
            );
            return;
        }
        FieldSetting::Regions(regions) => regions,
    };
    let drivers = drivers.expect("drivers are built when a stage has regions");
    let a = RegionAssignment::new(regions, drivers);
    let list: Vec<String> = a
        .names
        .iter()
        .zip(&a.drivers)
        .map(|(name, n)| format!("{name}: {n} drivers"))
        .collect();
    let _ = writeln!(
        s,
        "    field    \"regions\": one {what} per region, {} regions over {} drivers ({})",
        a.count(),
        drivers.len(),
        list.join(", ")
    );
    for (name, n) in a.names.iter().zip(&a.drivers) {
        if *n == 0 {
            let _ = writeln!(
                s,
                "WARNING      region `fit.{label}.regions.{name}` holds no driver: its {what} \
                 keeps its starting value; fix: move its shapes onto the simulated splats"
            );
        }
    }
}

/// What the discretisation check will do after the stages, and its cost
/// at most (docs/design.md § Error bars, "From the discretisation"): its
/// cost depends on the simulation's share of an evaluation and on how
/// many levels run, which only the fit measures, so it is bounded by
/// `fit.discretisation_seconds` (by default the stages' time). Each
/// level's grid, drivers and substeps are the fit's ([`level_scene`]).
fn discretisation_summary(scene: &Scene) -> String {
    let f = &scene.fit;
    let own = scene_resolution(scene);
    if !f.check_discretisation {
        return format!(
            "discretisation not checked (`fit.check_discretisation = false`; by default E is \
             refitted after the stages at {} substeps per frame with {} drivers on this grid, \
             then a level finer until E stops moving)",
            2 * own.substeps,
            (2 * own.drivers).min(scene.simulated_indices().len() + scene.drivers.fill_points)
        );
    }
    // A per-driver E is refitted by Adam and compared by its median.
    let per_driver = matches!(f.stiffness.field, FieldSetting::Drivers);
    // The levels that can be made; the first that cannot ends the list
    // (the fit stops its check there too).
    let mut levels = Vec::new();
    let mut refusal = None;
    for k in 1..=f.discretisation_levels {
        match level_scene(scene, k) {
            Ok(level) => levels.push(level),
            Err(why) => {
                refusal = Some(format!("; level {k} cannot be made ({why})"));
                break;
            }
        }
    }
    let Some(finest) = levels.last() else {
        return format!(
            "discretisation checked, but no level can be made{}",
            refusal.unwrap_or_default()
        );
    };
    let bytes = |s: &Scene| {
        let e = estimate(s, &Workload::Fit);
        format!(
            "{} device + {} host",
            human_bytes(e.device_bytes()),
            human_bytes(e.host_bytes())
        )
    };
    // The finest level's problem, held beside the fit's own while it runs.
    let memory = format!(
        "the finest level's problem is estimated at {} beside the fit's {}",
        bytes(finest),
        bytes(scene)
    );
    let listed: Vec<String> = levels
        .iter()
        .map(|l| scene_resolution(l).to_string())
        .collect();
    let how = match f.discretisation_refine {
        DiscretisationRefinement::Grid => {
            "the grid and the substeps doubled, the substeps at least to the finer grid's \
             stability minimum, the drivers rebuilt by `[drivers]` for the grid"
        }
        DiscretisationRefinement::FixedGrid => {
            "the grid kept, the substeps and the drivers doubled (`discretisation_refine = \
             \"fixed_grid\"`, the default)"
        }
    };
    let (what, moved, walk, answer) = match per_driver {
        false => (
            "E",
            "an E",
            format!(
                ", E first at the carried velocity, then the velocity and E in turn until an E \
                 refit moves E by less than {:.3} decades (at most `fit.rounds` E refits, at least {MIN_E_REFITS}), then up \
                 to {MAX_NEWTON_STEPS} Newton steps from the exact gradient when they did not \
                 settle",
                DISCRETISATION_TOLERANCE * ROUND_SHARE_OF_TOLERANCE
            ),
            format!(
                "Converged, fitted.ply carries the finest level's E{}",
                match f.stiffness.poisson.fitted() {
                    true => " and ν",
                    false => "",
                }
            ),
        ),
        true => (
            "the per-driver E (by Adam, from the coarser level's field carried onto the finer \
             drivers; E, the velocity, then E again when the velocity is fitted)",
            "the median E over the free drivers",
            String::new(),
            "fitted.ply carries the fit's own E, each driver's error bar widened by the median's \
             discretisation error"
                .to_string(),
        ),
    };
    format!(
        "discretisation {what} refitted after the stages at {} (the fit's {own}: {how}), then at \
         {} while a level moves {moved} by 0.05 decades or more{}: at most {} level{}, each E \
         refit at most {} evaluations{walk}, with the simulation's cost growing with the grid, drivers and \
         substeps (the rendering unchanged); each level builds a second fit problem at its \
         discretisation (its memory estimate is checked before it runs: {memory}){}{}. {answer}",
        listed[0],
        if listed.len() > 1 {
            listed[1..].join("; ")
        } else {
            "no further level".to_string()
        },
        match f.stiffness.poisson.fitted() {
            true => format!(" or a fitted ν by {POISSON_DISCRETISATION_TOLERANCE} or more"),
            false => String::new(),
        },
        f.discretisation_levels,
        if f.discretisation_levels == 1 {
            ""
        } else {
            "s"
        },
        f.stiffness.iterations,
        refusal.unwrap_or_default(),
        match f.discretisation_seconds {
            DiscretisationBudget::Rule(BudgetRule::None) => String::new(),
            budget => format!(
                "; within `fit.discretisation_seconds` = {} over all levels (a level predicted \
                 from the last ones' times not to finish in what is left is not started, and one \
                 running when it is spent stops unconverged)",
                budget.describe()
            ),
        },
    )
}
