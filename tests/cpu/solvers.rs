//! The solvers of src/solve on functions whose minima are known, through
//! the one executor loop: Adam halves its rate past unusable points and
//! fails when no halving helps, the grid scan refines its best point by a
//! parabola, and an observer's stop ends any run after the iteration it
//! was told of.

use physfit::solve::adam::{AdamError, AdamObjective};
use physfit::solve::{
    execute, Adam, AdamSolver, Control, Ending, Evaluated, GridScan, GridScanState, Schedule,
};

fn adam(max_rejections: u32) -> AdamSolver {
    AdamSolver {
        schedule: Schedule {
            learning_rate: 1.0,
            warmup: 0,
            decay: 1.0,
            iterations: 50,
        },
        grad_clip: f64::INFINITY,
        bounds: vec![(-1.0, 10.0)],
        tolerance: 0.0,
        max_rejections,
        label: "test".into(),
    }
}

#[test]
fn adam_halves_its_rate_past_unusable_points_and_fails_when_no_halving_helps() {
    // The minimum at 5 lies past x = 2.5, beyond which "the simulation
    // blows up": Adam's steps of about the rate reach the edge, and from
    // there every proposal past it is unusable.
    let mut f = |x: &[f64]| -> Result<Evaluated, ()> {
        if x[0] > 2.5 {
            return Ok(None);
        }
        let d = x[0] - 5.0;
        Ok(Some((d * d, vec![2.0 * d])))
    };
    let mut solver = adam(3);
    let mut run = solver
        .start(&mut f, vec![0.0], Adam::new(1), 0, Vec::new())
        .unwrap()
        .unwrap();
    let mut halved = 0;
    let mut visited = Vec::new();
    let end = execute(
        &mut solver,
        &mut AdamObjective(&mut f),
        &mut run,
        |_, run| {
            let step = run.last_step.unwrap();
            halved += step.rejected;
            visited.push(run.x[0]);
            Control::Continue
        },
    );
    assert!(halved > 0, "some step was retried at half the rate");
    assert!(visited.iter().all(|&x| x <= 2.5), "{visited:?}");
    assert!(visited.len() >= 2, "{visited:?}");
    match end {
        Err(AdamError::Rejected(r)) => {
            assert_eq!(r.halvings, 3);
            assert_eq!(r.iteration as usize, visited.len());
        }
        other => panic!("expected a rejected step, got {other:?}"),
    }
}

#[test]
fn an_observers_stop_ends_the_run_after_the_iteration_it_was_told_of() {
    let mut f = |x: &[f64]| -> Result<Evaluated, ()> {
        let d = x[0] - 5.0;
        Ok(Some((d * d, vec![2.0 * d])))
    };
    let mut solver = adam(3);
    let mut run = solver
        .start(&mut f, vec![0.0], Adam::new(1), 0, Vec::new())
        .unwrap()
        .unwrap();
    let mut told = 0;
    let end = execute(&mut solver, &mut AdamObjective(&mut f), &mut run, |_, _| {
        told += 1;
        if told == 3 {
            Control::Stop
        } else {
            Control::Continue
        }
    })
    .unwrap();
    assert_eq!(end, Ending::Stopped);
    assert_eq!(run.iteration, 3);
    assert_eq!(run.losses.len(), 3, "one loss per point stepped from");
}

#[test]
fn the_grid_scan_refines_its_best_point_by_a_parabola_and_scores_unusable_points_infinite() {
    // A parabola with its minimum at 0.3 between grid points 0 and 0.5;
    // the grid's first point is unusable.
    let mut f = |x: &[f64]| -> Result<Evaluated, ()> {
        if x[0] < -0.9 {
            return Ok(None);
        }
        Ok(Some(((x[0] - 0.3).powi(2), Vec::new())))
    };
    let mut scan = GridScan {
        candidates: GridScan::evenly([-1.0, 1.0], 5),
    };
    assert_eq!(scan.candidates, vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
    let mut state = GridScanState::default();
    let mut told = 0;
    let end = execute(&mut scan, &mut f, &mut state, |_, _| {
        told += 1;
        Control::Continue
    })
    .unwrap();
    assert_eq!(end, Ending::Ended { converged: true });
    assert_eq!(told, 6, "five grid points and the refinement");
    assert_eq!(state.points[0].1, f64::INFINITY);
    let (refined, loss) = state.points[5];
    assert!((refined - 0.3).abs() < 1e-9, "{refined}");
    assert!(loss < 1e-12, "{loss}");
}
