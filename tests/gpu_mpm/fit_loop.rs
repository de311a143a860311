//! The two-stage loop (src/fit/stages.rs) on the small twin scene of
//! tests/gpu_mpm/fit_problem.rs: iterations run and are recorded, the loss
//! falls, the observer sees every stage and iteration, and a stop leaves a
//! state from which the loop continues; round 1's velocity stage starts
//! from the scan's curvature.

use physfit::fit::plan::LBFGS_MAX_PARAMETERS;
use physfit::fit::{
    plan_stages, run_fit, Control, DriverSet, FinishedStage, FitEnd, FitObserver, FitProblem,
    FitProblemOptions, FitState, Parameters, StageChoice, StageKind, StagePlan,
};
use physfit::scene::FieldSetting;
use physfit::solve::lbfgs::CurvaturePair;

use super::fit_problem::{fixture, options, start, FRAMES};
use crate::common;

/// Counts what the loop reports; stops after `stop_after` iterations.
struct Counter {
    started: Vec<(u32, StageKind, u32)>,
    iterations: u32,
    finished: Vec<f64>,
    stop_after: Option<u32>,
}

impl FitObserver for Counter {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
        self.started.push((plan.round, plan.kind, state.iteration));
    }
    fn iteration_done(&mut self, _: &StagePlan, _: &FitState) -> Control {
        self.iterations += 1;
        match self.stop_after {
            Some(n) if self.iterations >= n => Control::Stop,
            _ => Control::Continue,
        }
    }
    fn stage_finished(&mut self, _: &StagePlan, _: &FitState, finished: &FinishedStage<'_>) {
        self.finished.push(finished.final_loss.loss);
    }
}

#[test]
fn two_stages_lower_the_loss_and_a_stopped_fit_continues() {
    let ctx = common::gpu();
    let (_dir, mut scene) = fixture(&ctx);
    scene.fit.velocity.iterations = 3;
    scene.fit.velocity.warmup = 1;
    // A frame count, the rest frame 0 included: frames 1–2.
    scene.fit.velocity.frames = Some(3);
    scene.fit.stiffness.iterations = 2;
    scene.fit.stiffness.warmup = 1;
    // The Adam stages alone (the scan and L-BFGS have tests of their own).
    scene.fit.scan.points = 0;
    let mut problem = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    assert!(
        problem.youngs_map().params > LBFGS_MAX_PARAMETERS
            && problem.velocity_map().params > LBFGS_MAX_PARAMETERS,
        "per-driver fields: Adam"
    );
    let plan = plan_stages(&scene, &[0, 1], FRAMES + 1, 1, StageChoice::Both);
    assert_eq!(plan.len(), 2);
    assert_eq!(plan[0].selection.frames, vec![1, 2]);
    assert_eq!(plan[1].selection.frames, (1..=FRAMES).collect::<Vec<_>>());
    let range = scene.material.log10_youngs_range;

    // Interrupted after 2 iterations, then continued from the state.
    let mut state = FitState::start(start(&problem), &plan);
    let mut first = Counter {
        started: vec![],
        iterations: 0,
        finished: vec![],
        stop_after: Some(2),
    };
    let end = run_fit(&ctx, &mut problem, &plan, &mut state, range, &mut first).unwrap();
    assert_eq!(end, FitEnd::Stopped);
    assert_eq!(
        (state.stage, state.iteration, state.records.len()),
        (0, 2, 2)
    );
    assert_eq!(state.adam.t, 2);
    let mut rest = Counter {
        started: vec![],
        iterations: 0,
        finished: vec![],
        stop_after: None,
    };
    let end = run_fit(&ctx, &mut problem, &plan, &mut state, range, &mut rest).unwrap();
    assert!(matches!(end, FitEnd::Finished(Some(_))));
    assert_eq!(
        rest.started,
        vec![(1, StageKind::Velocity, 2), (1, StageKind::Stiffness, 0)]
    );
    assert_eq!(rest.iterations, 3);
    assert_eq!(state.records.len(), 5);
    assert!(state.done(&plan));
    // The error bars are the session's step after the stages
    // (src/fit/uncertainty_estimate.rs), not the loop's.
    assert!(state.uncertainty.is_none());

    let velocity: Vec<_> = state
        .records
        .iter()
        .filter(|r| r.stage == StageKind::Velocity)
        .collect();
    assert_eq!(
        velocity.iter().map(|r| r.iteration).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    for r in &state.records {
        assert!(r.loss.is_finite() && r.grad_norm.is_finite() && r.learning_rate > 0.0);
        assert!(r.psnr.is_finite() && r.psnr > 0.0, "{r:?}");
    }
    let stiffness: Vec<_> = state
        .records
        .iter()
        .filter(|r| r.stage == StageKind::Stiffness)
        .collect();
    assert_eq!(
        stiffness.iter().map(|r| r.iteration).collect::<Vec<_>>(),
        vec![0, 1]
    );
    // Each stage's final loss is below its first iteration's.
    assert_eq!(rest.finished.len(), 2);
    for (stage, records, finished) in [
        ("velocity", &velocity, rest.finished[0]),
        ("stiffness", &stiffness, rest.finished[1]),
    ] {
        eprintln!("{stage} stage: {:.4e} -> {finished:.4e}", records[0].loss);
        assert!(finished < records[0].loss, "{stage} stage");
    }
    for p in &state.log10_youngs {
        assert!(p.is_finite() && *p >= range[0] && *p <= range[1]);
    }
    assert!(state.velocity.iter().all(|v| v.is_finite()));
}

/// Records the curvature the state holds when round 1's velocity stage
/// starts, and the scan's best point's, then stops the fit.
#[derive(Default)]
struct CurvatureAtVelocityStart {
    stage: Option<Vec<CurvaturePair>>,
    best: Vec<CurvaturePair>,
}

impl FitObserver for CurvatureAtVelocityStart {
    fn stage_started(&mut self, plan: &StagePlan, state: &FitState) {
        if plan.round == 1 && plan.kind == StageKind::Velocity {
            self.stage = Some(state.curvature_of(StageKind::Velocity).to_vec());
            let scan = state.scan.as_ref().expect("the scan ran first");
            self.best = scan
                .best()
                .expect("a finite candidate")
                .velocity_curvature
                .clone();
        }
    }
    fn iteration_done(&mut self, _: &StagePlan, _: &FitState) -> Control {
        match self.stage {
            Some(_) => Control::Stop,
            None => Control::Continue,
        }
    }
    fn stage_finished(&mut self, _: &StagePlan, _: &FitState, _: &FinishedStage<'_>) {}
}

/// Round 1's velocity stage refits the scan's best candidate's velocity
/// on the same frames at the same E, so it starts from the curvature that
/// candidate's velocity fit ended with (src/fit/scan.rs), carried into the
/// stage's coordinates `x = z · scale` (scale: the scan's first velocity
/// step): each step shrinks by the scale, each gradient change grows by it.
#[test]
fn round_ones_velocity_stage_starts_from_the_scans_curvature() {
    let ctx = common::gpu();
    let (_dir, mut scene) = fixture(&ctx);
    // Three velocity unknowns and one E: L-BFGS stages, the scan before.
    scene.fit.velocity.field = FieldSetting::Global;
    scene.fit.stiffness.field = FieldSetting::Global;
    scene.fit.velocity.iterations = 4;
    scene.fit.velocity.frames = Some(3);
    scene.fit.scan.points = 2;
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let options = FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.velocity).unwrap();
    let mut problem = FitProblem::from_drivers(&ctx, &scene, drivers, &options).unwrap();
    let plan = plan_stages(&scene, &[0, 1], FRAMES + 1, 1, StageChoice::Both);
    let kinds: Vec<_> = plan.iter().map(|p| p.kind).collect();
    assert_eq!(
        kinds,
        vec![StageKind::Scan, StageKind::Velocity, StageKind::Stiffness]
    );
    let scale = plan[0]
        .scan
        .as_ref()
        .expect("the scan's plan")
        .first_velocity_step;
    let params = Parameters {
        log10_youngs: vec![3.8; problem.youngs_map().params],
        velocity: vec![0.0; problem.velocity_map().params],
        poisson: Vec::new(),
    };
    let mut state = FitState::start(params, &plan);
    let mut seen = CurvatureAtVelocityStart::default();
    let range = scene.material.log10_youngs_range;
    let end = run_fit(&ctx, &mut problem, &plan, &mut state, range, &mut seen).unwrap();
    assert_eq!(end, FitEnd::Stopped);
    let stage = seen.stage.expect("round 1's velocity stage started");
    assert!(
        !seen.best.is_empty(),
        "the scan's velocity fits found curvature"
    );
    assert_eq!(stage.len(), seen.best.len());
    for (carried, scanned) in stage.iter().zip(&seen.best) {
        assert_eq!(carried.rho, scanned.rho);
        for (z, x) in carried.s.iter().zip(&scanned.s) {
            assert!(
                (z * scale - x).abs() <= 1e-12 * x.abs().max(1e-12),
                "{z} · {scale} vs {x}"
            );
        }
        for (gz, gx) in carried.y.iter().zip(&scanned.y) {
            assert!(
                (gz / scale - gx).abs() <= 1e-12 * gx.abs().max(1e-12),
                "{gz} / {scale} vs {gx}"
            );
        }
    }
}
