//! The two-stage loop (src/fit/stages.rs) on the small twin scene of
//! tests/gpu_mpm/fit_problem.rs: iterations run and are recorded, the loss
//! falls, the observer sees every stage and iteration, and a stop leaves a
//! state from which the loop continues.

use physfit::fit::plan::LBFGS_MAX_PARAMETERS;
use physfit::fit::{
    plan_stages, run_fit, Control, FinishedStage, FitEnd, FitObserver, FitProblem, FitState,
    StageChoice, StageKind, StagePlan,
};

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
