//! GPU MPM adjoint on the present adapter: gradients against central finite
//! differences of the GPU loss, checkpointed against store-everything
//! backward, kept against recomputed segment grids, cell-binned against
//! atomic scatters, the two f32 atomic modes against each other, and the truncated
//! (stage 2) flow against finite differences of a one-frame rollout.
//!
//! The loss is linear in the frame states, `L = Σ_k ⟨W_k, state_k⟩` with
//! fixed pseudo-random weights, so `∂L/∂state_k = W_k` exactly and every
//! error measured is the simulator's. The main scene keeps particles well
//! inside the grid, away from walls and anchored nodes (piecewise rules are
//! tested in tests/gpu_mpm/forward.rs); one more sits at a sticky wall with
//! anchored particles (`case_at_the_wall`), whose rules hold a fixed set of
//! nodes. Motions are smooth (B-spline weights are C¹, so a particle
//! crossing a cell face does not break the difference).
//!
//! Comparisons of two schedules of one computation (checkpointed and
//! store-everything, kept and recomputed grids, kept and recomputed
//! checkpoints) use [`SCHEDULE_TOLERANCE`], set from the run-to-run noise of
//! one schedule measured on multi-threaded lavapipe
//! (`run_to_run_noise_is_below_the_schedule_tolerance`): f32 atomics from
//! workgroups that run at once sum in a run-dependent order there, as on
//! every real GPU, and an MPM rollout amplifies the last bits.

#![allow(clippy::needless_range_loop)] // parallel per-particle arrays

use crate::common;
use crate::common::slopes::fitted_slope;

use crate::support::*;
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::mpm::layout::STATE_STRIDE;
use physfit::mpm::{
    BackwardOptions, BackwardWork, FrameGradient, GradientFlow, HostMpmGradients, MpmError,
    MpmOptions, MpmSetup, MpmSimulator, ParticleState, Rollout, RolloutOptions, ScatterMode,
};

const FRAMES: u32 = 2;

/// Largest relative difference (2-norm, as [`relative_difference`]) allowed
/// between two schedules of one gradient computation: 10× the largest
/// run-to-run noise of one schedule measured on multi-threaded lavapipe
/// (2.9e-5 in ∂L/∂E, 1.1e-5 in ∂L/∂(state 0): see
/// `run_to_run_noise_is_below_the_schedule_tolerance`). Schedule bugs seen
/// so far (a kept segment replayed in the wrong scatter variant, a list
/// walked before it was built) gave differences of order 1.
const SCHEDULE_TOLERANCE: f64 = 3e-4;

struct Case {
    sim: MpmSimulator,
    /// The backward pass's working memory, reused by every backward.
    work: std::cell::RefCell<BackwardWork>,
    start: ParticleState,
    youngs: Vec<f32>,
    /// Loss weights per frame 1..=FRAMES (packed state layout).
    weights: Vec<Vec<f32>>,
}

fn case(ctx: &GpuContext) -> Case {
    case_with(ctx, false, MpmOptions::default())
}

/// The case, with its bottom layer of particles anchored when `anchor`, on
/// a simulator built with `options`.
fn case_with(ctx: &GpuContext, anchor: bool, options: MpmOptions) -> Case {
    case_at(ctx, anchor, options, [0.5, 0.5, 0.5])
}

/// The case near the low-x wall: the block's low face within reach of the
/// sticky wall nodes (node index < 3 of the 16³ grid) from the start, its
/// bottom layer anchored.
fn case_at_the_wall(ctx: &GpuContext) -> Case {
    let dx = 1.0 / 16.0;
    let spacing = 1.0 / 32.0;
    // Lowest particle at ≈ 3.3·dx: base cell 2, so its stencil holds wall node 2.
    let centre = [3.3 * dx + 1.5 * spacing, 0.5, 0.5];
    let c = case_at(ctx, true, MpmOptions::default(), centre);
    assert_eq!(c.sim.config().walls, physfit::mpm::WallMode::Sticky);
    assert!(c
        .start
        .x
        .iter()
        .any(|x| (x[0] / dx - 0.5).floor() as i32 <= 2));
    c
}

fn case_at(ctx: &GpuContext, anchor: bool, options: MpmOptions, centre: [f32; 3]) -> Case {
    let config = small_config();
    let spacing = 1.0 / 32.0;
    let x = block(4, spacing, centre);
    let n = x.len();
    let lowest = x.iter().map(|p| p[1]).fold(f32::INFINITY, f32::min);
    let anchored: Vec<bool> = x.iter().map(|p| anchor && p[1] == lowest).collect();
    let v = swirl(&x, centre, 0.5);
    let youngs: Vec<f32> = pseudo_random(n, 7)
        .iter()
        .map(|r| 2e4 * (1.0 + 0.4 * r))
        .collect();
    let sim = MpmSimulator::with_options(
        ctx,
        &config,
        &MpmSetup {
            particle_volume: (spacing as f64).powi(3),
            anchored,
            held_points: Vec::new(),
            youngs: youngs.clone(),
            youngs_max: 3e4,
        },
        &options,
    )
    .unwrap();
    let weights = (1..=FRAMES)
        .map(|k| pseudo_random(n * STATE_STRIDE, 100 + k as u64))
        .collect();
    Case {
        sim,
        work: Default::default(),
        start: rest_state(x, v),
        youngs,
        weights,
    }
}

impl Case {
    fn loss(&self, ctx: &GpuContext, youngs: &[f32], start: &ParticleState) -> f64 {
        self.sim.set_youngs(ctx, youngs).unwrap();
        let rollout = self.sim.rollout(ctx, start, FRAMES).unwrap();
        let mut loss = 0.0;
        for k in 1..=FRAMES as usize {
            let s: Vec<f32> = ctx.read_buffer(&rollout.frames[k]).unwrap();
            loss += s
                .iter()
                .zip(&self.weights[k - 1])
                .map(|(a, b)| *a as f64 * *b as f64)
                .sum::<f64>();
        }
        self.sim.set_youngs(ctx, &self.youngs).unwrap();
        loss
    }

    /// A rollout of the case that keeps its checkpoints every `every`
    /// substeps (and its last segment).
    fn rollout_keeping(&self, ctx: &GpuContext, every: u32) -> Rollout {
        self.sim
            .rollout_with(
                ctx,
                &self.start,
                FRAMES,
                &keeping(Some(every)),
                &mut self.work.borrow_mut(),
            )
            .unwrap()
    }

    fn gradients(&self, ctx: &GpuContext, options: &BackwardOptions) -> HostMpmGradients {
        self.gradients_of_rollout(ctx, &RolloutOptions::default(), options)
    }

    fn gradients_of_rollout(
        &self,
        ctx: &GpuContext,
        rollout_options: &RolloutOptions,
        options: &BackwardOptions,
    ) -> HostMpmGradients {
        let rollout = self
            .sim
            .rollout_with(
                ctx,
                &self.start,
                FRAMES,
                rollout_options,
                &mut self.work.borrow_mut(),
            )
            .unwrap();
        self.backward_of(ctx, &rollout, options)
    }

    /// The backward of `rollout` (frames 0..=FRAMES) for the case's loss.
    fn backward_of(
        &self,
        ctx: &GpuContext,
        rollout: &Rollout,
        options: &BackwardOptions,
    ) -> HostMpmGradients {
        let bufs: Vec<_> = self
            .weights
            .iter()
            .enumerate()
            .map(|(k, w)| {
                ctx.storage_from_slice(&format!("dL/dstate {k}"), w)
                    .unwrap()
            })
            .collect();
        let grads: Vec<_> = bufs
            .iter()
            .enumerate()
            .map(|(k, b)| FrameGradient {
                frame: k + 1,
                grad: b,
            })
            .collect();
        self.sim
            .backward(ctx, rollout, &grads, options, &mut self.work.borrow_mut())
            .unwrap()
            .read(ctx)
            .unwrap()
    }
}

/// Rollout options keeping the checkpoints every `every` substeps.
fn keeping(every: Option<u32>) -> RolloutOptions {
    RolloutOptions {
        keep_checkpoints: true,
        checkpoint_every: every,
        ..Default::default()
    }
}

/// The finite-difference slope of every check here: [`fitted_slope`], a
/// least-squares fit of the odd part `b·t + d·t³` at `points` steps over
/// `(0, h]` (error O(h⁴), as Richardson extrapolation's). The loss jitters
/// with the step, by f32 rounding (about 1e-4 of the stress: the polar
/// decomposition of a near-identity F goes through FᵀF) and by the
/// run-to-run noise of float atomics. A slope from four values (Richardson
/// at `h` and `h/2`) carries that jitter amplified by `1/h` and moved run to
/// run by 0.3%, up to half the tolerance; many points over a wider window
/// average it out (figures in docs/benchmarks.md, "Measured figures behind
/// test and fit constants").
fn fd_slope(f: impl FnMut(f64) -> f64, h: f64, points: usize) -> f64 {
    fitted_slope(f, h, points)
}

/// Half-width and points of the `E` checks (a relative perturbation of E):
/// errors ≤ 1e-3, where Richardson at 0.1 gave up to 5.5e-3.
const YOUNGS_STEP: (f64, usize) = (0.2, 16);
/// Half-width and points of the random `v0` direction.
const VELOCITY_STEP: (f64, usize) = (0.16, 8);
/// Half-width and points of one `v0` component.
const COMPONENT_STEP: (f64, usize) = (0.04, 8);

fn dot(a: &[f32], b: &[f32]) -> f64 {
    a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum()
}

fn relative_difference(a: &[f32], b: &[f32]) -> f64 {
    let diff: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| ((x - y) as f64).powi(2))
        .sum::<f64>()
        .sqrt();
    let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum::<f64>().sqrt();
    diff / norm
}

/// Relative differences of two gradient sets: (dL/dE, dL/d(state 0)).
fn gradient_difference(a: &HostMpmGradients, b: &HostMpmGradients) -> (f64, f64) {
    (
        relative_difference(&a.youngs, &b.youngs),
        relative_difference(&a.initial_state.to_packed(), &b.initial_state.to_packed()),
    )
}

/// ∂L/∂E along a random relative perturbation of E against central
/// differences of the GPU loss.
fn check_youngs_gradient(ctx: &GpuContext, c: &Case, what: &str) {
    let g = c.gradients(ctx, &BackwardOptions::default());
    assert!(g.youngs.iter().all(|v| v.is_finite()));
    // Directional derivative along a random relative perturbation of E.
    let dir: Vec<f32> = pseudo_random(c.youngs.len(), 3)
        .iter()
        .zip(&c.youngs)
        .map(|(r, e)| r * e)
        .collect();
    let analytic = dot(&g.youngs, &dir);
    let loss = |h: f64| {
        let e: Vec<f32> = c
            .youngs
            .iter()
            .zip(&dir)
            .map(|(e, d)| e + h as f32 * d)
            .collect();
        c.loss(ctx, &e, &c.start)
    };
    let fd = fd_slope(loss, YOUNGS_STEP.0, YOUNGS_STEP.1);
    let rel = (fd - analytic).abs() / analytic.abs();
    eprintln!("{what}: dL/dE · δ: adjoint {analytic:.6e}, FD {fd:.6e}, relative {rel:.2e}");
    assert!(rel <= 1e-2, "{what}: adjoint {analytic} vs FD {fd}");
}

/// ∂L/∂v0 along a random direction, and for its largest x component,
/// against central differences of the GPU loss.
fn check_velocity_gradient(ctx: &GpuContext, c: &Case, what: &str) {
    let g = c.gradients(ctx, &BackwardOptions::default());
    let n = c.start.len();
    let dir = pseudo_random(n * 3, 11);
    let flat_grad: Vec<f32> = g.initial_state.v.iter().flatten().copied().collect();
    let analytic = dot(&flat_grad, &dir);
    let shifted = |h: f64| {
        let mut s = c.start.clone();
        for p in 0..n {
            for a in 0..3 {
                s.v[p][a] += h as f32 * dir[p * 3 + a];
            }
        }
        c.loss(ctx, &c.youngs, &s)
    };
    // Below a step of ~0.1 the loss's f32 jitter dominates the directional
    // difference (central differences at 0.01–0.04 scatter by ±1% around
    // the adjoint, with either scatter variant), above ~0.3 the curvature
    // does.
    let fd = fd_slope(shifted, VELOCITY_STEP.0, VELOCITY_STEP.1);
    let rel = (fd - analytic).abs() / analytic.abs();
    eprintln!("{what}: dL/dv0 · δ: adjoint {analytic:.6e}, FD {fd:.6e}, relative {rel:.2e}");
    assert!(rel <= 1e-2, "{what}: adjoint {analytic} vs FD {fd}");
    // One component: the largest x-velocity gradient.
    let p = (0..n)
        .max_by(|a, b| {
            g.initial_state.v[*a][0]
                .abs()
                .total_cmp(&g.initial_state.v[*b][0].abs())
        })
        .unwrap();
    let single = |h: f64| {
        let mut s = c.start.clone();
        s.v[p][0] += h as f32;
        c.loss(ctx, &c.youngs, &s)
    };
    let fd1 = fd_slope(single, COMPONENT_STEP.0, COMPONENT_STEP.1);
    let a1 = g.initial_state.v[p][0] as f64;
    let rel1 = (fd1 - a1).abs() / a1.abs();
    eprintln!("{what}: dL/dv0[{p}].x: adjoint {a1:.6e}, FD {fd1:.6e}, relative {rel1:.2e}");
    assert!(rel1 <= 1e-2, "{what}: adjoint {a1} vs FD {fd1}");
}

#[test]
fn youngs_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    check_youngs_gradient(&ctx, &case(&ctx), "free block");
}

#[test]
fn initial_velocity_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    check_velocity_gradient(&ctx, &case(&ctx), "free block");
}

/// The same checks with anchored particles and a block within reach of the
/// sticky wall (the demo's wall rule): the piecewise rules hold a fixed set
/// of nodes, and the quadratic B-spline weights are C¹, so the loss stays
/// smooth there.
#[test]
fn gradients_with_anchors_and_sticky_walls_match_finite_differences() {
    let ctx = common::gpu();
    let c = case_at_the_wall(&ctx);
    check_youngs_gradient(&ctx, &c, "anchored, at the sticky wall");
    check_velocity_gradient(&ctx, &c, "anchored, at the sticky wall");
}

#[test]
fn checkpointed_backward_equals_store_everything() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let everything = c.gradients(
        &ctx,
        &BackwardOptions {
            flow: GradientFlow::Full,
            checkpoint_every: Some(c.sim.config().substeps_per_frame),
        },
    );
    for every in [1, 3, 4] {
        let g = c.gradients(
            &ctx,
            &BackwardOptions {
                flow: GradientFlow::Full,
                checkpoint_every: Some(every),
            },
        );
        let (de, dv) = gradient_difference(&g, &everything);
        eprintln!("K = {every}: relative difference dE {de:.2e}, d(state 0) {dv:.2e}");
        assert!(
            de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
            "K = {every}: {de}, {dv}"
        );
    }
}

/// A rollout that keeps its in-frame checkpoints hands the backward pass
/// the states it would otherwise recompute: the same gradients for the
/// default K and an explicit one, in both flows, and a backward with another
/// K than the kept one falls back to recomputing.
#[test]
fn checkpoints_kept_by_the_forward_equal_recomputed_ones() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let substeps = c.sim.config().substeps_per_frame;
    assert!(substeps >= 8, "the case needs several segments per frame");
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        // (K kept by the rollout, K asked of the backward): the defaults,
        // K not dividing S = 10, K = 1, K = S, K clamped to S, and a
        // mismatch (recomputes).
        for (kept, every) in [
            (None, None),
            (Some(3), Some(3)),
            (Some(1), Some(1)),
            (Some(10), None),
            (Some(100), Some(10)),
            (Some(3), Some(4)),
        ] {
            let options = BackwardOptions {
                flow,
                checkpoint_every: every,
            };
            let recomputed = c.gradients(
                &ctx,
                &BackwardOptions {
                    checkpoint_every: every.or(kept),
                    ..options
                },
            );
            let from_forward = c.gradients_of_rollout(&ctx, &keeping(kept), &options);
            let (de, dv) = gradient_difference(&from_forward, &recomputed);
            eprintln!(
                "{flow:?}, kept K {kept:?}, backward K {every:?}: dE {de:.2e}, d(state 0) {dv:.2e}"
            );
            assert!(
                de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
                "{flow:?} {kept:?} {every:?}: {de}, {dv}"
            );
        }
    }
    // The kept checkpoints change nothing in the frames themselves.
    let plain = c.sim.rollout(&ctx, &c.start, FRAMES).unwrap();
    let kept = c.rollout_keeping(&ctx, 3);
    assert_eq!(kept.kept_checkpoint_every(), Some(3));
    assert_eq!(plain.kept_checkpoint_every(), None);
    assert!(plain.kept_checkpoints(1).is_none());
    assert_eq!(
        kept.kept_checkpoints(FRAMES as usize).map(<[_]>::len),
        Some(3)
    ); // S = 10, K = 3
    for k in 1..=FRAMES as usize {
        let a: Vec<f32> = ctx.read_buffer(&plain.frames[k]).unwrap();
        let b: Vec<f32> = ctx.read_buffer(&kept.frames[k]).unwrap();
        let worst = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (x - y).abs() / (1.0 + x.abs()))
            .fold(0.0f32, f32::max);
        // Two runs of the forward differ by f32 atomics' summation order
        // only: measured ≤ 9e-6 after three frames even between the two
        // scatter variants (tests/gpu_mpm/forward.rs); 1e-4 leaves a margin
        // for real GPUs, and a kept checkpoint written wrongly moves
        // states by far more.
        assert!(worst <= 1e-4, "frame {k}: {worst}");
    }
}

/// A rollout that keeps its checkpoints also leaves its last frame's last
/// segment (states and grids) for the backward of that frame, which then
/// replays K substeps fewer and gives the same gradients. The segment is
/// used once: a backward's replays, or another keeping forward, overwrite
/// it, and the next backward replays it again; a forward that keeps
/// nothing leaves it in place.
#[test]
fn last_segment_kept_by_the_forward_is_used_once() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let s = c.sim.config().substeps_per_frame as u64;
    let frames = FRAMES as u64;
    const K: u32 = 3;
    let keep = keeping(Some(K));
    let k = K as u64;
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        let options = BackwardOptions {
            flow,
            checkpoint_every: Some(K),
        };
        let same = |g: &HostMpmGradients, reference: &HostMpmGradients, what: &str| {
            let (de, dv) = gradient_difference(g, reference);
            eprintln!("{flow:?}, {what}: dE {de:.2e}, d(state 0) {dv:.2e}");
            assert!(
                de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
                "{flow:?}, {what}: {de}, {dv}"
            );
        };
        // A plain rollout: per frame the checkpoints (S − K substeps) and
        // every segment (S) are recomputed.
        let reference = c.gradients(&ctx, &options);
        assert_eq!(reference.replayed_substeps, frames * (2 * s - k));

        let rollout = c.rollout_keeping(&ctx, K);
        let first = c.backward_of(&ctx, &rollout, &options);
        assert_eq!(first.replayed_substeps, frames * s - k, "{flow:?}");
        same(&first, &reference, "kept last segment");
        let second = c.backward_of(&ctx, &rollout, &options);
        assert_eq!(second.replayed_substeps, frames * s, "{flow:?}: used once");
        same(&second, &reference, "second backward");

        // Another keeping forward in between: the segment is not this
        // rollout's any more.
        let mut moved = c.start.clone();
        for v in &mut moved.v {
            v[1] += 0.05;
        }
        let a = c.rollout_keeping(&ctx, K);
        let b = c
            .sim
            .rollout_with(&ctx, &moved, FRAMES, &keep, &mut c.work.borrow_mut())
            .unwrap();
        let from_a = c.backward_of(&ctx, &a, &options);
        assert_eq!(from_a.replayed_substeps, frames * s, "{flow:?}");
        same(&from_a, &reference, "after another forward");
        let from_b = c.backward_of(&ctx, &b, &options);
        assert_eq!(from_b.replayed_substeps, frames * s, "{flow:?}");

        // A forward that keeps nothing leaves it in place.
        let a = c.rollout_keeping(&ctx, K);
        let plain = c.sim.rollout(&ctx, &moved, FRAMES).unwrap();
        drop(plain);
        let from_a = c.backward_of(&ctx, &a, &options);
        assert_eq!(from_a.replayed_substeps, frames * s - k, "{flow:?}");
        same(&from_a, &reference, "after a plain forward");
    }
    // K = S: the forward keeps the whole last frame, whose backward replays
    // nothing.
    let whole = keeping(Some(s as u32));
    let options = BackwardOptions {
        flow: GradientFlow::Full,
        checkpoint_every: Some(s as u32),
    };
    let reference = c.gradients(&ctx, &options);
    let g = c.gradients_of_rollout(&ctx, &whole, &options);
    assert_eq!(g.replayed_substeps, (frames - 1) * s);
    let (de, dv) = gradient_difference(&g, &reference);
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "K = S: {de}, {dv}"
    );
    // Without kept grids (over the budget) the forward keeps no segment;
    // the replays then stop short of each inner segment's last substep
    // (whose state is the next checkpoint and whose grid the substep
    // adjoint recomputes).
    let c = case_with(&ctx, false, without_kept_grids());
    let g = c.gradients_of_rollout(
        &ctx,
        &keep,
        &BackwardOptions {
            flow: GradientFlow::Full,
            checkpoint_every: Some(K),
        },
    );
    let segments = s.div_ceil(k);
    assert_eq!(g.replayed_substeps, frames * (s - (segments - 1)));

    // Anchored particles (no G2P* carry, v' = C' = 0) through the kept
    // segment.
    let anchored = case_with(&ctx, true, MpmOptions::default());
    let options = BackwardOptions {
        flow: GradientFlow::Full,
        checkpoint_every: Some(K),
    };
    let reference = anchored.gradients(&ctx, &options);
    let g = anchored.gradients_of_rollout(&ctx, &keep, &options);
    assert_eq!(g.replayed_substeps, frames * s - k);
    let (de, dv) = gradient_difference(&g, &reference);
    eprintln!("anchored, kept last segment: dE {de:.2e}, d(state 0) {dv:.2e}");
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "anchored: {de}, {dv}"
    );
    assert!(
        g.youngs.iter().any(|e| *e != 0.0),
        "the anchored case has a gradient"
    );
}

/// The backward pass really starts from the kept checkpoints: moving the
/// particles of one kept checkpoint changes the gradients when the backward
/// uses that K, and not when it recomputes its own (another K).
#[test]
fn backward_uses_the_kept_checkpoints() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let gradients = |every: u32, tamper: bool| {
        let rollout = c.rollout_keeping(&ctx, 3);
        if tamper {
            let checkpoint = &rollout.kept_checkpoints(1).unwrap()[1];
            let mut s = c.sim.read_state(&ctx, checkpoint).unwrap();
            for x in &mut s.x {
                x[0] += 0.01;
            }
            ctx.write(checkpoint, &s.to_packed());
        }
        c.backward_of(
            &ctx,
            &rollout,
            &BackwardOptions {
                flow: GradientFlow::Full,
                checkpoint_every: Some(every),
            },
        )
    };
    let (de, dv) = gradient_difference(&gradients(3, true), &gradients(3, false));
    eprintln!("tampered kept checkpoint, same K: dE {de:.2e}, d(state 0) {dv:.2e}");
    assert!(
        de > 1e-3,
        "the backward ignored the kept checkpoints: {de}, {dv}"
    );
    let (de, dv) = gradient_difference(&gradients(4, true), &gradients(4, false));
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "another K must recompute: {de}, {dv}"
    );
}

/// The backward pass keeps each segment substep's grid from the replay
/// (within a memory budget) or, above it, recomputes it in each substep
/// adjoint: both must give the same gradients.
#[test]
fn kept_grids_equal_recomputed_grids() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let options = BackwardOptions {
        flow: GradientFlow::Full,
        checkpoint_every: Some(3),
    };
    let kept = c.gradients(&ctx, &options);
    let recomputed = case_with(&ctx, false, without_kept_grids()).gradients(&ctx, &options);
    let (de, dv) = gradient_difference(&kept, &recomputed);
    eprintln!("kept vs recomputed grids: dE {de:.2e}, d(state 0) {dv:.2e}");
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "{de}, {dv}"
    );
}

/// The backward pass keeps its checkpoint/segment states and grids in the
/// caller's `BackwardWork` between calls: a second call allocates nothing
/// more and gives the same gradients (no state leaks from the first), a
/// call with another checkpoint interval gives the same gradients on
/// buffers of its own, and dropping the work frees them.
#[test]
fn backward_buffers_are_reused_between_calls() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let options = BackwardOptions {
        flow: GradientFlow::Full,
        checkpoint_every: Some(3),
    };
    let before = ctx.memory.current();
    let first = c.gradients(&ctx, &options);
    let held = ctx.memory.current();
    assert!(held > before, "the backward buffers are kept");
    let second = c.gradients(&ctx, &options);
    assert_eq!(ctx.memory.current(), held, "the kept buffers are reused");
    let (de, dv) = gradient_difference(&first, &second);
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "{de}, {dv}"
    );
    let other = c.gradients(
        &ctx,
        &BackwardOptions {
            checkpoint_every: Some(2),
            ..options
        },
    );
    let de = relative_difference(&first.youngs, &other.youngs);
    assert!(de <= SCHEDULE_TOLERANCE, "{de}");
    *c.work.borrow_mut() = BackwardWork::new();
    assert_eq!(ctx.memory.current(), before, "released");
}

/// Cell-binned scatters (P2G, then G2P* and P2G* walking P2G's cell
/// lists: the default on CPU adapters) and the one-kernel atomic scatters
/// with the per-particle P2G* (the default on GPUs) give the same gradients
/// up to f32 summation order: with and without anchored particles (which
/// the binned P2G* finds on the lists too), and with the substep grids,
/// lists included, kept by the replay or recomputed in each substep
/// adjoint.
#[test]
fn binned_and_atomic_scatters_give_the_same_gradients() {
    let ctx = common::gpu();
    for (anchor, keep_grids) in [(false, true), (true, true), (true, false)] {
        let options = |scatters| MpmOptions {
            scatters,
            kept_grids_budget: if keep_grids {
                MpmOptions::default().kept_grids_budget
            } else {
                0
            },
            ..Default::default()
        };
        let binned = case_with(&ctx, anchor, options(ScatterMode::Binned));
        let atomic = case_with(&ctx, anchor, options(ScatterMode::Atomic));
        assert!(binned.sim.binned_scatters() && !atomic.sim.binned_scatters());
        let backward = BackwardOptions::default();
        let (de, dv) = gradient_difference(
            &binned.gradients(&ctx, &backward),
            &atomic.gradients(&ctx, &backward),
        );
        eprintln!(
            "anchored {anchor}, kept grids {keep_grids}: binned vs atomic scatters: \
             dE {de:.2e}, d(state 0) {dv:.2e}"
        );
        assert!(
            de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
            "anchored {anchor}, kept grids {keep_grids}: {de}, {dv}"
        );
    }
}

#[test]
fn both_atomic_modes_give_the_same_gradients() {
    let native = common::gpu();
    let cas = common::gpu_with(GpuOptions {
        force_cas_atomics: true,
    });
    if !native.caps.float_atomics {
        // Only then is the native variant untestable; lavapipe has it.
        assert!(
            !native.adapter_info.name.contains("llvmpipe"),
            "lavapipe should report SHADER_FLOAT32_ATOMIC"
        );
        eprintln!("adapter has no float atomics: only the CAS variant runs here");
    }
    let a = case(&native).gradients(&native, &BackwardOptions::default());
    let b = case(&cas).gradients(&cas, &BackwardOptions::default());
    let (de, dv) = gradient_difference(&a, &b);
    eprintln!("native vs compare-and-swap: dE {de:.2e}, d(state 0) {dv:.2e}");
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "{de}, {dv}"
    );
}

#[test]
fn truncated_flow_matches_one_frame_finite_differences() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let g = c.gradients(
        &ctx,
        &BackwardOptions {
            flow: GradientFlow::Truncated,
            checkpoint_every: None,
        },
    );
    // Truncated: Σ_k ∂⟨W_k, state_k⟩/∂E with state_{k−1} held fixed.
    let rollout = c.sim.rollout(&ctx, &c.start, FRAMES).unwrap();
    let frame_states: Vec<ParticleState> = rollout
        .frames
        .iter()
        .map(|b| c.sim.read_state(&ctx, b).unwrap())
        .collect();
    let dir: Vec<f32> = pseudo_random(c.youngs.len(), 5)
        .iter()
        .zip(&c.youngs)
        .map(|(r, e)| r * e)
        .collect();
    let mut fd = 0.0;
    for k in 1..=FRAMES as usize {
        let one_frame = |h: f64| {
            let e: Vec<f32> = c
                .youngs
                .iter()
                .zip(&dir)
                .map(|(e, d)| e + h as f32 * d)
                .collect();
            c.sim.set_youngs(&ctx, &e).unwrap();
            let r = c.sim.rollout(&ctx, &frame_states[k - 1], 1).unwrap();
            let s: Vec<f32> = ctx.read_buffer(&r.frames[1]).unwrap();
            dot(&s, &c.weights[k - 1])
        };
        fd += fd_slope(one_frame, YOUNGS_STEP.0, YOUNGS_STEP.1);
    }
    c.sim.set_youngs(&ctx, &c.youngs).unwrap();
    let analytic = dot(&g.youngs, &dir);
    let rel = (fd - analytic).abs() / analytic.abs();
    eprintln!("truncated dL/dE · δ: adjoint {analytic:.6e}, FD {fd:.6e}, relative {rel:.2e}");
    assert!(rel <= 1e-2, "adjoint {analytic} vs FD {fd}");
    // And it differs from the full flow (frame 2 no longer sees frame 1's E).
    let full = c.gradients(&ctx, &BackwardOptions::default());
    assert!(relative_difference(&g.youngs, &full.youngs) > 1e-3);
}

/// Options with no kept segment grids: every substep adjoint recomputes
/// its grid.
fn without_kept_grids() -> MpmOptions {
    MpmOptions {
        kept_grids_budget: 0,
        ..Default::default()
    }
}

/// The noise that sets [`SCHEDULE_TOLERANCE`]: one schedule (same options,
/// same simulator) run several times. On one lavapipe thread or on an
/// adapter whose atomics happen to sum in a fixed order it is 0; on
/// multi-threaded lavapipe, as on real GPUs, it is not.
#[test]
fn run_to_run_noise_is_below_the_schedule_tolerance() {
    let ctx = common::gpu();
    let c = case(&ctx);
    for options in [
        BackwardOptions::default(),
        BackwardOptions {
            flow: GradientFlow::Truncated,
            checkpoint_every: Some(3),
        },
    ] {
        let runs: Vec<_> = (0..4).map(|_| c.gradients(&ctx, &options)).collect();
        let mut worst = (0.0f64, 0.0f64);
        for r in &runs[1..] {
            let (de, dv) = gradient_difference(r, &runs[0]);
            worst = (worst.0.max(de), worst.1.max(dv));
        }
        eprintln!(
            "run-to-run noise ({:?}, K {:?}): dE {:.2e}, d(state 0) {:.2e}",
            options.flow, options.checkpoint_every, worst.0, worst.1
        );
        assert!(
            worst.0.max(worst.1) <= SCHEDULE_TOLERANCE / 3.0,
            "run-to-run noise {worst:?} leaves no margin under the schedule tolerance"
        );
    }
}

/// A backward pass against a rollout whose Young's moduli changed after its
/// forward run is refused, whether E changed through `set_youngs` or through
/// the buffer an optimiser writes; a new rollout is accepted.
#[test]
fn backward_of_a_stale_rollout_is_refused() {
    let ctx = common::gpu();
    let mut c = case(&ctx);
    let seed = ctx
        .storage_from_slice("dL/dstate 1", &c.weights[0])
        .unwrap();
    let backward = |c: &Case, r: &Rollout| {
        let grads = [FrameGradient {
            frame: 1,
            grad: &seed,
        }];
        c.sim.backward(
            &ctx,
            r,
            &grads,
            &BackwardOptions::default(),
            &mut c.work.borrow_mut(),
        )
    };
    let rollout = c.sim.rollout(&ctx, &c.start, FRAMES).unwrap();
    assert!(backward(&c, &rollout).is_ok());
    c.sim.set_youngs(&ctx, &c.youngs).unwrap();
    let err = backward(&c, &rollout)
        .err()
        .expect("stale after set_youngs");
    assert!(matches!(err, MpmError::StaleRollout { .. }), "{err}");
    assert!(err.to_string().contains("run a new rollout"), "{err}");
    let fresh = c.sim.rollout(&ctx, &c.start, FRAMES).unwrap();
    assert!(backward(&c, &fresh).is_ok());
    // An optimiser's write through the buffer makes it stale too.
    let youngs = c.sim.youngs_buffer_mut();
    ctx.write(youngs, &c.youngs);
    assert!(matches!(
        backward(&c, &fresh),
        Err(MpmError::StaleRollout { .. })
    ));
    // A rollout of another simulator is refused too.
    let other = case(&ctx);
    let foreign = other.sim.rollout(&ctx, &other.start, FRAMES).unwrap();
    assert!(matches!(
        backward(&c, &foreign),
        Err(MpmError::InvalidInput(_))
    ));
}

/// A rollout that keeps every substep of every frame
/// (`RolloutOptions::keep_every_substep`) gives the backward the states
/// and grids of all its frames: the same gradients as a rollout that keeps
/// nothing, with no substep replayed, in both flows. Each frame's slot is
/// used once (a second backward of the same rollout replays), and a later
/// rollout's slots are its own. Where a frame's grids do not fit the
/// kept-grids budget it keeps checkpoints instead, and replays.
#[test]
fn every_substep_kept_by_the_forward_replays_nothing() {
    let ctx = common::gpu();
    let c = case(&ctx);
    let s = c.sim.config().substeps_per_frame as u64;
    let frames = FRAMES as u64;
    let every = RolloutOptions {
        keep_every_substep: true,
        ..Default::default()
    };
    assert!(c.sim.keeps_whole_frames());
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        let options = BackwardOptions {
            flow,
            checkpoint_every: None,
        };
        let reference = c.gradients(&ctx, &options);
        let rollout = c
            .sim
            .rollout_with(&ctx, &c.start, FRAMES, &every, &mut c.work.borrow_mut())
            .unwrap();
        assert_eq!(rollout.kept_checkpoint_every(), Some(s as u32));
        let kept = c.backward_of(&ctx, &rollout, &options);
        assert_eq!(kept.replayed_substeps, 0, "{flow:?}");
        let (de, dv) = gradient_difference(&kept, &reference);
        assert!(
            de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
            "{flow:?}: {de}, {dv}"
        );
        // Used once: the second backward replays every frame.
        let again = c.backward_of(&ctx, &rollout, &options);
        assert_eq!(again.replayed_substeps, frames * s, "{flow:?}");
        let (de, dv) = gradient_difference(&again, &reference);
        assert!(de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE);
        // A later rollout from another start: its slots are its own, and
        // the earlier rollout's are gone.
        let mut moved = c.start.clone();
        for v in &mut moved.v {
            v[1] += 0.05;
        }
        let first = c
            .sim
            .rollout_with(&ctx, &c.start, FRAMES, &every, &mut c.work.borrow_mut())
            .unwrap();
        let second = c
            .sim
            .rollout_with(&ctx, &moved, FRAMES, &every, &mut c.work.borrow_mut())
            .unwrap();
        // (The earlier rollout's backward replays into slot 0, which holds
        // the later rollout's frame 1: run the later one's first.)
        assert_eq!(c.backward_of(&ctx, &second, &options).replayed_substeps, 0);
        assert_eq!(
            c.backward_of(&ctx, &first, &options).replayed_substeps,
            frames * s
        );
    }
    // No room for a frame's grids: checkpoints, and replays.
    let tight = case_with(
        &ctx,
        false,
        MpmOptions {
            kept_grids_budget: 0,
            ..Default::default()
        },
    );
    assert!(!tight.sim.keeps_whole_frames());
    let options = BackwardOptions::default();
    let reference = tight.gradients(&ctx, &options);
    let rollout = tight
        .sim
        .rollout_with(
            &ctx,
            &tight.start,
            FRAMES,
            &every,
            &mut tight.work.borrow_mut(),
        )
        .unwrap();
    assert_ne!(rollout.kept_checkpoint_every(), Some(s as u32));
    let g = tight.backward_of(&ctx, &rollout, &options);
    assert!(g.replayed_substeps > 0);
    let (de, dv) = gradient_difference(&g, &reference);
    assert!(
        de <= SCHEDULE_TOLERANCE && dv <= SCHEDULE_TOLERANCE,
        "{de}, {dv}"
    );
}
