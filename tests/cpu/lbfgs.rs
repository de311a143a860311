//! The solvers' L-BFGS (src/solve/lbfgs.rs) on functions whose minima are known:
//! it converges, keeps to its bounds, and treats an unusable point as a
//! step too long, and continues a checkpointed run exactly.

use physfit::solve::lbfgs::{
    minimise, minimise_observed, CurvaturePair, LbfgsSettings, LbfgsStart, LbfgsState,
};
use physfit::solve::{execute, Control, Ending, Evaluated, Lbfgs, Measured, Objective};

fn rosenbrock(x: &[f64]) -> (f64, Vec<f64>) {
    let (a, b) = (x[0], x[1]);
    let f = (1.0 - a).powi(2) + 100.0 * (b - a * a).powi(2);
    let g = vec![
        -2.0 * (1.0 - a) - 400.0 * a * (b - a * a),
        200.0 * (b - a * a),
    ];
    (f, g)
}

#[test]
fn lbfgs_finds_the_minimum_of_an_ill_conditioned_valley() {
    let settings = LbfgsSettings {
        max_evaluations: 200,
        first_step: 0.1,
        relative_tolerance: 1e-12,
        ..LbfgsSettings::default()
    };
    let r = minimise(&[-1.2, 1.0], &settings, |x| {
        Ok::<_, ()>(Some(rosenbrock(x)))
    })
    .unwrap()
    .unwrap();
    assert!(
        (r.x[0] - 1.0).abs() < 1e-3 && (r.x[1] - 1.0).abs() < 2e-3,
        "{r:?}"
    );
    assert!(r.evaluations <= 200);
}

#[test]
fn lbfgs_reaches_far_in_few_evaluations_and_keeps_to_its_bounds() {
    // A quadratic whose minimum lies 50 first steps away: Adam at that rate
    // would need 50 iterations; L-BFGS doubles its first step (7 trials to
    // 64), then one curvature step lands on the minimum.
    let f = |x: &[f64]| {
        let d = x[0] - 50.0;
        Ok::<_, ()>(Some((d * d, vec![2.0 * d])))
    };
    let enough = LbfgsSettings {
        max_evaluations: 20,
        ..LbfgsSettings::default()
    };
    let free = minimise(&[0.0], &enough, f).unwrap().unwrap();
    assert!((free.x[0] - 50.0).abs() < 1e-6, "{free:?}");
    assert!(free.evaluations <= 20, "{free:?}");
    let bounded = LbfgsSettings {
        bounds: vec![(-1.0, 3.0)],
        ..LbfgsSettings::default()
    };
    let r = minimise(&[0.0], &bounded, f).unwrap().unwrap();
    assert_eq!(r.x[0], 3.0, "projected onto the upper bound: {r:?}");
}

#[test]
fn lbfgs_shrinks_past_unusable_points_and_refuses_an_unusable_start() {
    // Beyond x = 2 the "simulation blows up": the search must stop short.
    let f = |x: &[f64]| {
        if x[0] > 2.0 {
            return Ok::<_, ()>(None);
        }
        let d = x[0] - 5.0;
        Ok(Some((d * d, vec![2.0 * d])))
    };
    let r = minimise(&[0.0], &LbfgsSettings::default(), f)
        .unwrap()
        .unwrap();
    assert!(r.x[0] <= 2.0 && r.x[0] > 0.5, "{r:?}");
    assert!(r.loss.is_finite());
    let none = minimise(&[3.0], &LbfgsSettings::default(), f).unwrap();
    assert!(
        none.is_none(),
        "an unusable start is reported, not stepped from"
    );
}

/// A run stopped after each accepted step, its state written out as a
/// checkpoint would (JSON) and resumed, ends bit for bit where an
/// uninterrupted run ends, with the same evaluation count.
#[test]
fn a_resumed_run_continues_exactly() {
    let settings = LbfgsSettings {
        max_evaluations: 60,
        first_step: 0.1,
        relative_tolerance: 1e-10,
        ..LbfgsSettings::default()
    };
    let f = |x: &[f64]| Ok::<_, ()>(Some(rosenbrock(x)));
    let whole = minimise(&[-1.2, 1.0], &settings, f).unwrap().unwrap();
    let mut steps = 0;
    minimise_observed(LbfgsStart::At(&[-1.2, 1.0]), &settings, f, |_| {
        steps += 1;
        true
    })
    .unwrap();
    assert!(steps > 5, "{steps} accepted steps");
    for cut in [1, steps / 2, steps - 1] {
        let mut saved: Option<LbfgsState> = None;
        let mut seen = 0;
        minimise_observed(LbfgsStart::At(&[-1.2, 1.0]), &settings, f, |s| {
            seen += 1;
            saved = Some(s.clone());
            seen < cut
        })
        .unwrap();
        let text = serde_json::to_string(&saved.unwrap()).unwrap();
        let state: LbfgsState = serde_json::from_str(&text).unwrap();
        let resumed = minimise_observed(LbfgsStart::Resume(state), &settings, f, |_| true)
            .unwrap()
            .unwrap();
        assert_eq!(resumed, whole, "cut after {cut} accepted steps");
    }
}

/// Every evaluation after the start's is a line-search trial, and each
/// trial but the one a step accepts leaves its gradient unused: after
/// every accepted step, unused = evaluations − 1 − steps.
#[test]
fn unused_gradients_are_the_trials_no_step_kept() {
    let settings = LbfgsSettings {
        max_evaluations: 40,
        first_step: 0.1,
        relative_tolerance: 1e-10,
        ..LbfgsSettings::default()
    };
    let f = |x: &[f64]| Ok::<_, ()>(Some(rosenbrock(x)));
    let mut steps = 0;
    let mut last: Option<LbfgsState> = None;
    minimise_observed(LbfgsStart::At(&[-1.2, 1.0]), &settings, f, |s| {
        steps += 1;
        assert_eq!(
            s.unused_gradients,
            s.evaluations - 1 - steps,
            "after {steps} accepted steps"
        );
        last = Some(s.clone());
        true
    })
    .unwrap();
    let last = last.unwrap();
    assert!(
        last.unused_gradients > 0,
        "Rosenbrock's valley refuses some trials ({} evaluations, {steps} steps)",
        last.evaluations
    );
}

/// Rosenbrock as a problem whose gradient costs a pass of its own: a
/// loss-first trial skips it. Counts its forwards and backwards.
#[derive(Default)]
struct Priced {
    forwards: u32,
    backwards: u32,
}

impl Objective for Priced {
    type Error = ();

    fn evaluate(&mut self, x: &[f64]) -> Result<Evaluated, ()> {
        self.forwards += 1;
        self.backwards += 1;
        Ok(Some(rosenbrock(x)))
    }

    fn measure(&mut self, x: &[f64]) -> Result<Measured, ()> {
        self.forwards += 1;
        Ok(Some((rosenbrock(x).0, None)))
    }
}

/// Runs `settings` on [`Priced`] from the valley's usual start, stopping
/// after `cut` accepted steps when given; the state after every step.
fn priced_run(
    settings: &LbfgsSettings,
    start: LbfgsStart<'_>,
    cut: Option<u32>,
) -> (Vec<LbfgsState>, Priced) {
    let mut solver = Lbfgs {
        settings: settings.clone(),
    };
    let mut problem = Priced::default();
    let mut run = solver.start(&mut problem, start).unwrap().unwrap();
    let mut states = Vec::new();
    execute(&mut solver, &mut problem, &mut run, |_, s| {
        states.push(s.clone());
        match cut {
            Some(c) if states.len() as u32 >= c => Control::Stop,
            _ => Control::Continue,
        }
    })
    .unwrap();
    states.push(run);
    (states, problem)
}

/// Loss-first trials change what a run costs, never where it goes: the
/// same points, losses and evaluation count as with every gradient
/// computed, eager or not; fewer backwards than evaluations, and the
/// state's counts are the problem's.
#[test]
fn loss_first_trials_take_the_same_steps_for_fewer_backwards() {
    for eager_gradient in [true, false] {
        let settings = LbfgsSettings {
            max_evaluations: 40,
            first_step: 0.1,
            relative_tolerance: 1e-10,
            eager_gradient,
            ..LbfgsSettings::default()
        };
        let f = |x: &[f64]| Ok::<_, ()>(Some(rosenbrock(x)));
        let mut every = Vec::new();
        let whole = minimise_observed(LbfgsStart::At(&[-1.2, 1.0]), &settings, f, |s| {
            every.push(s.clone());
            true
        })
        .unwrap()
        .unwrap();
        let (states, problem) = priced_run(&settings, LbfgsStart::At(&[-1.2, 1.0]), None);
        assert_eq!(states.len(), every.len() + 1, "eager {eager_gradient}");
        for (a, b) in states.iter().zip(&every) {
            assert_eq!((&a.x, a.loss, a.evaluations), (&b.x, b.loss, b.evaluations));
            if eager_gradient {
                assert_eq!((&a.grad, &a.pairs), (&b.grad, &b.pairs));
            }
        }
        let last = states.last().unwrap();
        assert_eq!(
            (&last.x, last.loss, last.evaluations),
            (&whole.x, whole.loss, whole.evaluations)
        );
        assert_eq!(problem.forwards, last.evaluations + last.reevaluations);
        assert_eq!(problem.backwards, last.gradients);
        assert!(
            last.gradients < last.evaluations,
            "eager {eager_gradient}: {} backwards for {} evaluations",
            last.gradients,
            last.evaluations
        );
        // The closure computes every gradient: nothing is evaluated twice.
        let closure_last = every.last().unwrap();
        assert_eq!(closure_last.reevaluations, 0);
        assert_eq!(closure_last.gradients, closure_last.evaluations);
    }
}

/// A run whose accepted point still waits for its gradient resumes from
/// its state exactly where an uninterrupted run goes, and the wait is
/// written into a checkpoint (JSON).
#[test]
fn a_pending_gradient_survives_a_checkpoint() {
    let settings = LbfgsSettings {
        max_evaluations: 40,
        first_step: 0.1,
        relative_tolerance: 1e-10,
        eager_gradient: false,
        ..LbfgsSettings::default()
    };
    let (whole, _) = priced_run(&settings, LbfgsStart::At(&[-1.2, 1.0]), None);
    let cuts: Vec<u32> = (1..whole.len() as u32)
        .filter(|&c| whole[c as usize - 1].pending.is_some())
        .collect();
    assert!(
        !cuts.is_empty(),
        "some accepted point waits for its gradient"
    );
    for cut in cuts {
        let (stopped, _) = priced_run(&settings, LbfgsStart::At(&[-1.2, 1.0]), Some(cut));
        let state = stopped.last().unwrap().clone();
        // A checkpoint keeps what the pending gradient needs (serde_json's
        // default parsing may move a float by an ulp, so the exact resume
        // below starts from the state itself).
        let text = serde_json::to_string(&state).unwrap();
        let read: LbfgsState = serde_json::from_str(&text).unwrap();
        assert_eq!(
            read.pending.as_ref().map(|p| p.step.len()),
            state.pending.as_ref().map(|p| p.step.len())
        );
        assert!(state.pending.is_some());
        let (resumed, _) = priced_run(&settings, LbfgsStart::Resume(state), None);
        let (a, b) = (resumed.last().unwrap(), whole.last().unwrap());
        assert_eq!(
            (&a.x, a.loss, a.evaluations),
            (&b.x, b.loss, b.evaluations),
            "cut after {cut}"
        );
    }
}

/// A loss far more curved along the gradient than the first step assumes
/// (the minimum 1/500 of the way): halving alone would give the direction
/// up before reaching it; the parabola through the refused trial reaches
/// it in a few trials.
#[test]
fn a_sharply_curved_loss_is_reached_by_interpolating_the_step() {
    let f = |x: &[f64]| {
        let d = x[0] - 0.002;
        Ok::<_, ()>(Some((1.0 + 1e4 * d * d, vec![2e4 * d])))
    };
    let settings = LbfgsSettings {
        max_evaluations: 8,
        first_step: 1.0,
        relative_tolerance: 1e-6,
        ..LbfgsSettings::default()
    };
    let r = minimise(&[0.0], &settings, f).unwrap().unwrap();
    let start = 1.0 + 1e4 * 0.002 * 0.002;
    assert!(
        start - r.loss > 0.9 * (start - 1.0),
        "most of the gain reached: {r:?}"
    );
}

/// At a minimum (the gradient's first-order gain below the tolerance a
/// tenth of the first step in), the search gives the direction up after
/// one refused trial rather than halving through the cap: converged in
/// two evaluations.
#[test]
fn a_spent_direction_is_given_up_after_one_refused_trial() {
    let f = |x: &[f64]| Ok::<_, ()>(Some((1.0 + x[0] * x[0], vec![2.0 * x[0]])));
    let settings = LbfgsSettings {
        max_evaluations: 12,
        first_step: 1.0,
        relative_tolerance: 1e-4,
        ..LbfgsSettings::default()
    };
    let r = minimise(&[1e-6], &settings, f).unwrap().unwrap();
    assert_eq!((r.evaluations, r.converged), (2, true), "{r:?}");
    assert_eq!(r.x, vec![1e-6]);
}

/// After the curvature misled a search (a stale pair: the loss 10⁶ times
/// more curved than it says), the run starts again along the gradient at
/// the length of its last accepted step, not at the first step's: a
/// point whose gradient cannot gain the tolerance over that length is
/// left without a trial, where a restart at the first step's length
/// spends trials overshooting the minimum by a thousand times.
#[test]
fn a_restart_along_the_gradient_takes_the_last_steps_length() {
    let run = |last_step: Option<f64>| {
        let mut trials: Vec<f64> = Vec::new();
        let settings = LbfgsSettings {
            max_evaluations: 40,
            first_step: 1.0,
            relative_tolerance: 1e-4,
            ..LbfgsSettings::default()
        };
        let mut solver = Lbfgs {
            settings: settings.clone(),
        };
        let x0 = 1e-3;
        let state = LbfgsState {
            pairs: vec![CurvaturePair {
                s: vec![1.0],
                y: vec![1e-6],
                rho: 1e6,
            }],
            first: false,
            last_step,
            ..LbfgsState::started(vec![x0], 1.0 + x0 * x0, vec![2.0 * x0])
        };
        let mut f = |x: &[f64]| {
            trials.push(x[0]);
            Ok::<_, ()>(Some((1.0 + x[0] * x[0], vec![2.0 * x[0]])))
        };
        let mut state = solver
            .start(&mut f, LbfgsStart::Resume(state))
            .unwrap()
            .unwrap();
        let ending = execute(&mut solver, &mut f, &mut state, |_, _| Control::Continue).unwrap();
        assert_eq!(ending, Ending::Ended { converged: true }, "{state:?}");
        assert_eq!(state.x, vec![x0]);
        (state.evaluations, trials)
    };
    let (evaluations, trials) = run(Some(1e-2));
    // Every trial is the misled direction's (steps of 0.05 and more).
    assert!(
        trials.iter().all(|&x| (x - 1e-3).abs() > 0.04),
        "{trials:?}"
    );
    let (at_first_step, _) = run(None);
    assert!(
        evaluations < at_first_step,
        "{evaluations} evaluations against {at_first_step} restarting at the first step"
    );
}

/// Once the curvature pairs' model expects less than the tolerance of its
/// next step (a quadratic, which two pairs model exactly), the run ends
/// converged without taking it: at most one accepted step gains less
/// than the tolerance (a step the model expected a little more of), where
/// the rule of two small gains in a row alone ends only after two.
#[test]
fn the_curvature_model_ends_a_run_without_confirming_steps() {
    let f = |x: &[f64]| {
        let (a, b) = (x[0] - 3.0, x[1] + 1.0);
        Ok::<_, ()>(Some((1.0 + 0.5 * a * a + 5.0 * b * b, vec![a, 10.0 * b])))
    };
    let tolerance = 1e-6;
    let settings = LbfgsSettings {
        max_evaluations: 40,
        first_step: 0.5,
        relative_tolerance: tolerance,
        ..LbfgsSettings::default()
    };
    let mut losses = vec![f(&[0.0, 0.0]).unwrap().unwrap().0];
    let r = minimise_observed(LbfgsStart::At(&[0.0, 0.0]), &settings, f, |s| {
        losses.push(s.loss);
        true
    })
    .unwrap()
    .unwrap();
    assert!(r.converged, "{r:?}");
    assert!(
        (r.x[0] - 3.0).abs() < 1e-2 && (r.x[1] + 1.0).abs() < 1e-2,
        "{r:?}"
    );
    let small = losses
        .windows(2)
        .filter(|w| (w[0] - w[1]) / w[0] < tolerance)
        .count();
    assert!(small <= 1, "losses of the accepted steps: {losses:?}");
}

/// Pairs handed in by a warm start describe another run's loss: one that
/// claims a million times the curvature this loss has makes the model
/// expect almost no gain at the start, and must not end the run there.
/// The run goes on to the minimum of its own loss.
#[test]
fn a_warm_start_pair_does_not_end_a_run_before_it_measures_its_own() {
    let f = |x: &[f64]| Ok::<_, ()>(Some((1.0 + x[0] * x[0], vec![2.0 * x[0]])));
    let settings = LbfgsSettings {
        max_evaluations: 40,
        first_step: 1.0,
        relative_tolerance: 1e-4,
        ..LbfgsSettings::default()
    };
    let warm = LbfgsState {
        pairs: vec![CurvaturePair {
            s: vec![1.0],
            y: vec![1e6],
            rho: 1e-6,
        }],
        first: false,
        ..LbfgsState::started(vec![1.0], 2.0, vec![2.0])
    };
    let r = minimise_observed(LbfgsStart::Resume(warm), &settings, f, |_| true)
        .unwrap()
        .unwrap();
    assert!(r.converged, "{r:?}");
    assert!(r.x[0].abs() < 1e-2, "ended away from the minimum: {r:?}");
}
