//! The fit problem's kept forward (src/fit/problem.rs, "Kept forward";
//! src/mpm/truncated_pass.rs): an evaluation whose rollout keeps what its
//! MPM backward would recompute (the full flow's checkpoints per frame;
//! the truncated flow frame by frame, each frame's adjoint right after its
//! forward) gives the loss and both gradients of the evaluation without
//! it, within float-atomic noise, in both flows, with fewer substeps
//! replayed (none in the truncated flow, whose frames fit the kept-grids
//! budget whole, and none in the full flow where its whole rollout fits
//! the kept-rollout budget), also on a selection that skips a frame.

use crate::common;

// The static-tiles test's scene: one 96×64 view, grid 16, the bottom of
// the block anchored (its static copy is not used here).
use super::static_tiles::{assert_same_evaluation, twin_in, uniform};

use physfit::fit::{FitProblem, GradientFlow, Selection};
use physfit::gpu::GpuContext;

const FRAMES: usize = 4;

#[test]
fn kept_forward_gives_the_loss_and_gradients_of_the_replaying_backward() {
    let ctx = GpuContext::new(&Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let splats = common::block(&common::Block {
        counts: [5, 5, 6],
        spacing: [0.1, 0.1, 0.08],
        jitter: 0.02,
        jitter_seed: 5,
        log_scale: -3.0,
        opacity_logit: 1.5,
        colour: |[i, j, k]| [0.1 * i as f32 - 0.2, 0.1 * j as f32, 0.1 * k as f32 - 0.3],
    });
    let (scene, options) = twin_in(&ctx, dir.path(), &splats, FRAMES);
    let mut p = FitProblem::new(&ctx, &scene, &options).unwrap();
    let substeps = u64::from(p.substeps_per_frame());
    assert!(substeps > 1, "{substeps} substeps per frame replay nothing");
    let start = uniform(&p, 3.5, [0.3, 0.1, 0.2]);
    let machine_budget = p.kept_rollout_budget();
    assert!(
        machine_budget > 0,
        "this machine leaves no memory for kept rollouts"
    );
    // (flow, frames, kept-rollout budget): the machine's keeps every
    // substep of the full flow's rollout, 0 keeps its checkpoints only.
    for (flow, frames, budget) in [
        (GradientFlow::Full, vec![1, 2, 3, 4], machine_budget),
        (GradientFlow::Full, vec![1, 2, 3, 4], 0),
        (GradientFlow::Truncated, vec![1, 2, 3, 4], machine_budget),
        // Frame 2 is simulated but not back-propagated.
        (GradientFlow::Truncated, vec![1, 3, 4], machine_budget),
        (GradientFlow::Full, vec![2, 4], machine_budget),
        (GradientFlow::Full, vec![2, 4], 0),
    ] {
        let selection = Selection {
            frames: frames.clone(),
            views: vec![0],
        };
        p.set_kept_rollout_budget(budget);
        p.set_kept_forward(true);
        let kept = p.evaluate(&ctx, &start, &selection, flow).unwrap();
        let kept_replays = p.replayed_substeps();
        p.set_kept_forward(false);
        let replayed = p.evaluate(&ctx, &start, &selection, flow).unwrap();
        let replays = p.replayed_substeps();
        // The cut here is the kept forward.
        assert_same_evaluation(&ctx, &format!("{flow:?} {frames:?}"), &kept, &replayed);
        let backpropagated = match flow {
            GradientFlow::Full => *frames.last().unwrap() as u64,
            GradientFlow::Truncated => frames.len() as u64,
        };
        assert!(
            replays >= backpropagated * substeps,
            "{flow:?} {frames:?}: {replays} substeps replayed without the kept forward"
        );
        match (flow, budget) {
            (GradientFlow::Truncated, _) => assert_eq!(kept_replays, 0, "{frames:?}"),
            (GradientFlow::Full, 0) => assert!(
                kept_replays > 0 && kept_replays < replays,
                "{frames:?}: {kept_replays} replayed with the kept checkpoints, {replays} without"
            ),
            (GradientFlow::Full, _) => assert_eq!(
                kept_replays, 0,
                "{frames:?}: the kept rollout still replayed {kept_replays} substeps"
            ),
        }
        // Twice in a row on the same buffers: the slots a rollout keeps are
        // its own, not the evaluation before's.
        p.set_kept_forward(true);
        p.evaluate(&ctx, &start, &selection, flow).unwrap();
        let again = p.evaluate(&ctx, &start, &selection, flow).unwrap();
        assert_same_evaluation(
            &ctx,
            &format!("{flow:?} {frames:?} again"),
            &again,
            &replayed,
        );
    }
}
