//! f64 twin of the whole differentiable chain (docs/design.md § Loss,
//! parameters, fit; § Drivers and the deformation of Gaussians;
//! § Verification 1–2): parameters → MPM twin → deformation twin
//! → render twin → loss twin, and its exact gradient by chaining the twins'
//! adjoints. The test oracle of the GPU problem call (src/fit/), whose
//! stages are [`crate::forward::Chain`]'s: `rollout` / `rollout_backward`
//! ([`frame_states`] / [`frames_gradient`]), `pose` / `pose_backward`
//! ([`ChainProblem64::posed_splats`] / `deform_adjoint`), `draw` /
//! `draw_backward` (`render` / `render_backward`).
//!
//! **Parameters** ([`ChainParams64`]), one entry per driver (MPM particle):
//! - `log10_youngs`: `p = log10 E`, E in the simulator's **normalised**
//!   units (docs/design.md § Units and frames), `E = 10^p` straight into the MPM
//!   twin (no range clamp: the clamp is a projection after an optimiser
//!   step, not part of the forward);
//! - `velocity`: the initial velocity in **world units/s** (as the GPU
//!   problem takes it), so the MPM state's `v = v_world / side`
//!   (`side` of the [`DeformSetup`]'s sim box) and
//!   `∂L/∂v_world = (∂L/∂v) / side`. Anchored drivers' velocities are
//!   **held at zero**: whatever the input holds there is ignored by the
//!   forward, and their gradient is exactly 0;
//! - `velocity_gradient`: the initial affine velocity `C0` per driver
//!   (row-major `∂v_a/∂x_b`, 1/s, the same in world and normalised units),
//!   APIC's `C` at frame 0, as the GPU problem starts it from a rigid
//!   field (docs/design.md § Loss, parameters, fit); empty: `C0 = 0`.
//!   Held at zero on anchored drivers like the velocity.
//!
//! **Forward** ([`chain_loss`]): the initial MPM state is the drivers at
//! rest (`x = rest_drivers` of the deformation setup, `C = C0`, `F = I`) with
//! the velocities above; the MPM twin runs frames `1..=n` (`n` = the
//! number of reference frames; frame k is the state after k·S substeps).
//! For each frame k the deformation twin moves the **followers** — the
//! splats listed in `deform.splat_index` — to `means`, `quats` = the
//! deformed centres (world) and raw rotations; every other splat of
//! `splats` (static and anchored Gaussians) **stays at rest** as given.
//! Each view renders the result over `background` (render twin) and is
//! compared (RGB only, alpha ignored) with its reference image by the loss
//! twin: `L_img = Σ_k Σ_views (w_l1·L1 + w_ssim·(1 − SSIM))`. Frame 0 (the
//! rest state) is not in the loss. Plus TV on `log10 E` over the given
//! driver edges: `L = L_img + w_tv · mean_e √(d² + ε²)`, ε =
//! [`TV_EPSILON`] ([`crate::loss::tv_scalar`]).
//!
//! **Flows** ([`GradientFlow`], as the MPM twin defines them):
//! - `Full` (stage 1): frame k's loss reaches the parameters through every
//!   substep from frame 0; the loss is [`chain_loss`].
//! - `Truncated` (stage 2): for k ≥ 2 the state at frame k − 1 is the
//!   unperturbed forward's, a constant; frame k's loss reaches E through
//!   frame k's substeps only, and v0 only through frame 1. The function it
//!   is the gradient of is [`chain_loss_held`] with `held` the forward's
//!   frame states at the parameters (equal to [`chain_loss`] there).
//!
//! **Gradient** ([`chain_gradient`]), per frame k and view: loss twin
//! gradient `∂L/∂pixel` (RGB; `∂L/∂alpha = 0`) → render backward twin
//! (`∂L/∂means`, `∂L/∂(raw quats)` of the splats; those of the followers are
//! kept, the static splats' dropped) → deformation adjoint twin, summed over
//! views (`∂L/∂x` of the drivers at frame k) → the seed `(k, ∂L/∂x)` on the x
//! part of frame k's state gradient; then `frames_gradient` with all seeds
//! and the flow → `∂L/∂E` and `∂L/∂(initial state)`; then
//! `∂L/∂p = ∂L/∂E · E · ln 10 + w_tv · ∂TV/∂p` and
//! `∂L/∂v_world = (∂L/∂v) / side`, zeroed on anchored drivers.
//!
//! Simple rather than fast: every function reruns the forward.

use super::deform::{deform, deform_adjoint, Quat};
use super::loss::{image_loss, image_loss_gradient, LossWeights64, Rgb64};
use super::mpm::mat3::{Mat3, Vec3};
use super::mpm::{frame_states, frames_gradient, GradientFlow, MpmSetup64, MpmState64};
use super::splat::{render, render_backward, Image64, SplatParams64};
use crate::deform::DeformSetup;
use crate::loss::{tv_scalar, TV_EPSILON};
use crate::scene::Camera;

/// What stays fixed over a fit: simulation, drivers, splats, views,
/// reference images, loss weights.
#[derive(Clone, Debug)]
pub struct ChainProblem64 {
    /// MPM settings, particle volume and anchored flags (one per driver).
    pub mpm: MpmSetup64,
    /// The deformation: followers, their drivers and rest poses, the
    /// drivers' rest positions (the MPM rest state) and the sim box.
    pub deform: DeformSetup,
    /// Every splat at rest (world units); the followers' `means` and
    /// `quats` are overwritten per frame, the rest are rendered as given.
    pub splats: SplatParams64,
    /// Background colour the renders composite over.
    pub background: [f64; 3],
    /// The views.
    pub cameras: Vec<Camera>,
    /// `references[k − 1][view]`: reference image of frame k (k = 1..=n) in
    /// that view, values in [0, 1] (an 8-bit frame as `value / 255`).
    pub references: Vec<Vec<Rgb64>>,
    /// Image-loss weights.
    pub weights: LossWeights64,
    /// Driver graph edges for TV on `log10 E`.
    pub tv_edges: Vec<(u32, u32)>,
    /// Weight of the TV term.
    pub tv_weight: f64,
}

/// The parameters (module doc: units).
#[derive(Clone, Debug, PartialEq)]
pub struct ChainParams64 {
    /// `log10 E` per driver, E in normalised units.
    pub log10_youngs: Vec<f64>,
    /// Initial velocity per driver, world units/s (ignored on anchored
    /// drivers: held at zero).
    pub velocity: Vec<Vec3>,
    /// Initial affine velocity `C0` per driver (module doc), 1/s; empty:
    /// `C0 = 0`.
    pub velocity_gradient: Vec<Mat3>,
}

/// The loss and its terms.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainLoss64 {
    /// `image + tv_weight · tv`.
    pub total: f64,
    /// `Σ_k Σ_views` image loss.
    pub image: f64,
    /// TV of `log10 E` (unweighted).
    pub tv: f64,
    /// `per_frame[k − 1][view]`: image loss of frame k in that view.
    pub per_frame: Vec<Vec<f64>>,
}

/// The loss and its gradient.
#[derive(Clone, Debug)]
pub struct ChainGradient64 {
    /// The loss at the parameters (the same for both flows).
    pub loss: ChainLoss64,
    /// `∂L/∂log10 E` per driver.
    pub d_log10_youngs: Vec<f64>,
    /// `∂L/∂v0` per driver, world units/s; zero on anchored drivers.
    pub d_velocity: Vec<Vec3>,
    /// `∂L/∂C0` per driver (module doc); zero on anchored drivers.
    pub d_velocity_gradient: Vec<Mat3>,
}

impl ChainProblem64 {
    /// Number of frames in the loss (`1..=n`).
    pub fn frames(&self) -> usize {
        self.references.len()
    }

    /// Number of drivers.
    pub fn drivers(&self) -> usize {
        self.deform.rest_drivers.len()
    }

    /// Panics on inconsistent arrays (a test oracle).
    fn check(&self, params: &ChainParams64) {
        let n = self.drivers();
        assert_eq!(self.mpm.anchored.len(), n, "anchored flags vs drivers");
        assert_eq!(params.log10_youngs.len(), n, "log10 E vs drivers");
        assert_eq!(params.velocity.len(), n, "velocities vs drivers");
        assert!(
            params.velocity_gradient.is_empty() || params.velocity_gradient.len() == n,
            "velocity gradients vs drivers"
        );
        assert!(self.frames() >= 1, "no reference frames");
        for (k, views) in self.references.iter().enumerate() {
            assert_eq!(views.len(), self.cameras.len(), "frame {}: views", k + 1);
            for (v, (img, cam)) in views.iter().zip(&self.cameras).enumerate() {
                assert!(
                    img.width == cam.width as usize && img.height == cam.height as usize,
                    "frame {} view {v}: reference size vs camera",
                    k + 1
                );
            }
        }
        for &i in &self.deform.splat_index {
            assert!(
                (i as usize) < self.splats.len(),
                "follower splat {i} out of range"
            );
        }
    }

    /// `E = 10^p` per driver.
    pub fn youngs(&self, params: &ChainParams64) -> Vec<f64> {
        params.log10_youngs.iter().map(|p| 10f64.powf(*p)).collect()
    }

    /// The initial MPM state: drivers at rest, `v = v_world / side`,
    /// `C = C0`, zero on anchored drivers.
    pub fn initial_state(&self, params: &ChainParams64) -> MpmState64 {
        let rest = self.deform.rest_drivers.iter().map(|p| p.map(f64::from));
        let mut state = MpmState64::at_rest(rest.collect());
        let side = self.deform.sim_box.side;
        for ((v, w), &anchored) in state
            .v
            .iter_mut()
            .zip(&params.velocity)
            .zip(&self.mpm.anchored)
        {
            *v = if anchored {
                [0.0; 3]
            } else {
                w.map(|c| c / side)
            };
        }
        for ((c, g), &anchored) in state
            .c
            .iter_mut()
            .zip(&params.velocity_gradient)
            .zip(&self.mpm.anchored)
        {
            if !anchored {
                *c = *g;
            }
        }
        state
    }

    /// The splats with the followers moved by the drivers at `x`
    /// (normalised units), static splats at rest.
    pub fn posed_splats(&self, x: &[Vec3]) -> SplatParams64 {
        let moved = deform(&self.deform, x);
        let mut splats = self.splats.clone();
        for (g, &i) in self.deform.splat_index.iter().enumerate() {
            splats.means[i as usize] = moved.means[g];
            splats.quats[i as usize] = moved.rotations[g];
        }
        splats
    }

    /// Renders of the drivers at `x` in every view.
    pub fn render_views(&self, x: &[Vec3]) -> Vec<Image64> {
        let splats = self.posed_splats(x);
        self.cameras
            .iter()
            .map(|cam| render(&splats, cam, self.background))
            .collect()
    }

    /// TV of `log10 E` and its gradient.
    fn tv(&self, params: &ChainParams64) -> (f64, Vec<f64>) {
        let tv =
            tv_scalar(&params.log10_youngs, &self.tv_edges, TV_EPSILON).expect("TV edges in range");
        (tv.value, tv.gradient)
    }

    /// Image loss of the drivers at `x` against frame k's references, per
    /// view.
    fn frame_losses(&self, k: usize, x: &[Vec3]) -> Vec<f64> {
        self.render_views(x)
            .iter()
            .zip(&self.references[k - 1])
            .map(|(img, reference)| image_loss(&rgb(img), reference, self.weights).loss)
            .collect()
    }

    /// Assembles the loss from per-frame losses and TV.
    fn assemble(&self, params: &ChainParams64, per_frame: Vec<Vec<f64>>) -> ChainLoss64 {
        let image = per_frame.iter().flatten().sum();
        let (tv, _) = self.tv(params);
        ChainLoss64 {
            total: image + self.tv_weight * tv,
            image,
            tv,
            per_frame,
        }
    }
}

/// An [`Image64`]'s RGB (what the loss compares).
pub fn rgb(image: &Image64) -> Rgb64 {
    Rgb64 {
        width: image.width,
        height: image.height,
        pixels: image.rgb.clone(),
    }
}

/// Renders of frames `1..=frames` in every view (`[k − 1][view]`) at
/// `params`: e.g. the reference images of a twin experiment.
pub fn chain_renders(
    problem: &ChainProblem64,
    params: &ChainParams64,
    frames: usize,
) -> Vec<Vec<Image64>> {
    let states = frame_states(
        &problem.mpm,
        &problem.initial_state(params),
        &problem.youngs(params),
        frames,
    );
    states[1..]
        .iter()
        .map(|s| problem.render_views(&s.x))
        .collect()
}

/// The chain's loss at `params` (the full forward from frame 0).
pub fn chain_loss(problem: &ChainProblem64, params: &ChainParams64) -> ChainLoss64 {
    problem.check(params);
    let states = frame_states(
        &problem.mpm,
        &problem.initial_state(params),
        &problem.youngs(params),
        problem.frames(),
    );
    let per_frame = (1..=problem.frames())
        .map(|k| problem.frame_losses(k, &states[k].x))
        .collect();
    problem.assemble(params, per_frame)
}

/// The loss whose gradient the truncated flow is: frame 1 from the initial
/// state at `params`, frame k ≥ 2 from `held[k − 1]` (a constant; pass
/// the forward's frame states at the base parameters, e.g. from
/// [`chain_frame_states`]), each through its own S substeps at
/// `E(params)`. Equals [`chain_loss`] when `held` are `params`' own states.
pub fn chain_loss_held(
    problem: &ChainProblem64,
    params: &ChainParams64,
    held: &[MpmState64],
) -> ChainLoss64 {
    problem.check(params);
    assert!(
        held.len() >= problem.frames(),
        "held states for frames 0..n-1"
    );
    let youngs = problem.youngs(params);
    let initial = problem.initial_state(params);
    let per_frame = (1..=problem.frames())
        .map(|k| {
            let start = if k == 1 { &initial } else { &held[k - 1] };
            let end = &frame_states(&problem.mpm, start, &youngs, 1)[1];
            problem.frame_losses(k, &end.x)
        })
        .collect();
    problem.assemble(params, per_frame)
}

/// The MPM states at frames `0..=n` of the forward at `params`.
pub fn chain_frame_states(problem: &ChainProblem64, params: &ChainParams64) -> Vec<MpmState64> {
    frame_states(
        &problem.mpm,
        &problem.initial_state(params),
        &problem.youngs(params),
        problem.frames(),
    )
}

/// Frame k's image loss per view and its `∂L/∂x` for the drivers at `x`
/// (normalised units), every path on: the render side of the chain alone,
/// so tests can split a gap between the MPM and the renders.
pub fn chain_frame_seed(problem: &ChainProblem64, k: usize, x: &[Vec3]) -> (Vec<f64>, Vec<Vec3>) {
    frame_seed_with(problem, k, x, ChainPaths::ALL)
}

/// `∂L/∂x` of the drivers at `x` from frame k's image losses: loss twin →
/// render backward twin → deformation adjoint twin, summed over views,
/// along the switched-on `paths`. Also returns the per-view losses.
fn frame_seed_with(
    problem: &ChainProblem64,
    k: usize,
    x: &[Vec3],
    paths: ChainPaths,
) -> (Vec<f64>, Vec<Vec3>) {
    let splats = problem.posed_splats(x);
    let followers = &problem.deform.splat_index;
    let mut grad_means = vec![[0.0; 3]; followers.len()];
    let mut grad_rotations: Vec<Quat> = vec![[0.0; 4]; followers.len()];
    let mut losses = Vec::with_capacity(problem.cameras.len());
    for (cam, reference) in problem.cameras.iter().zip(&problem.references[k - 1]) {
        let image = rgb(&render(&splats, cam, problem.background));
        losses.push(image_loss(&image, reference, problem.weights).loss);
        let d_rgb = image_loss_gradient(&image, reference, problem.weights);
        let d_alpha = vec![0.0; d_rgb.len()];
        let g = render_backward(&splats, cam, problem.background, &d_rgb, &d_alpha);
        for (f, &i) in followers.iter().enumerate() {
            for (d, s) in grad_means[f].iter_mut().zip(&g.means[i as usize]) {
                *d += s;
            }
            if paths.rotations {
                for (d, s) in grad_rotations[f].iter_mut().zip(&g.quats[i as usize]) {
                    *d += s;
                }
            }
        }
    }
    let d_x = deform_adjoint(&problem.deform, x, &grad_means, &grad_rotations);
    (losses, d_x)
}

/// Paths of the chain's adjoint that can be switched off, to show in tests
/// that dropping one breaks the gradient (as the MPM twin's
/// [`super::mpm::AdjointPaths`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainPaths {
    /// The rotation path: `∂L/∂(raw quaternion)` of the followers into the
    /// deformation adjoint (off: zeros are passed, only the centres reach
    /// the drivers).
    pub rotations: bool,
}

impl ChainPaths {
    /// Every path (the exact gradient).
    pub const ALL: ChainPaths = ChainPaths { rotations: true };
}

/// The chain's loss and its gradient for `flow` (module doc).
pub fn chain_gradient(
    problem: &ChainProblem64,
    params: &ChainParams64,
    flow: GradientFlow,
) -> ChainGradient64 {
    chain_gradient_with(problem, params, flow, ChainPaths::ALL)
}

/// [`chain_gradient`] with switchable paths (tests only).
pub fn chain_gradient_with(
    problem: &ChainProblem64,
    params: &ChainParams64,
    flow: GradientFlow,
    paths: ChainPaths,
) -> ChainGradient64 {
    problem.check(params);
    let n = problem.drivers();
    let frames = problem.frames();
    let youngs = problem.youngs(params);
    let initial = problem.initial_state(params);
    let states = frame_states(&problem.mpm, &initial, &youngs, frames);
    let mut per_frame = Vec::with_capacity(frames);
    let mut seeds = Vec::with_capacity(frames);
    for (k, state) in states.iter().enumerate().skip(1) {
        let (losses, d_x) = frame_seed_with(problem, k, &state.x, paths);
        per_frame.push(losses);
        let mut seed = MpmState64::zeros(n);
        seed.x = d_x;
        seeds.push((k, seed));
    }
    let rollout = frames_gradient(&problem.mpm, &initial, &youngs, frames, &seeds, flow);
    let (_, d_tv) = problem.tv(params);
    let d_log10_youngs = (0..n)
        .map(|p| {
            rollout.d_youngs[p] * youngs[p] * std::f64::consts::LN_10 + problem.tv_weight * d_tv[p]
        })
        .collect();
    let side = problem.deform.sim_box.side;
    let d_velocity = (0..n)
        .map(|p| {
            if problem.mpm.anchored[p] {
                [0.0; 3]
            } else {
                rollout.d_initial.v[p].map(|g| g / side)
            }
        })
        .collect();
    let d_velocity_gradient = (0..n)
        .map(|p| match problem.mpm.anchored[p] {
            true => [[0.0; 3]; 3],
            false => rollout.d_initial.c[p],
        })
        .collect();
    ChainGradient64 {
        loss: problem.assemble(params, per_frame),
        d_log10_youngs,
        d_velocity,
        d_velocity_gradient,
    }
}
