//! The initial affine velocity (docs/design.md § Loss, parameters, fit,
//! "The initial affine velocity"): a rigid velocity field starts APIC's `C`
//! of every free driver at its gradient `[ω]×`, so that the first transfer
//! keeps the spin inside each particle's kernel.
//!
//! - A free spinning block (no gravity, no anchor, walls far): after one
//!   frame the particles' angular momentum `Σ m r × v` about their centroid
//!   (the part the splats see: APIC keeps the rest in `C`) is the start's
//!   with `C0 = [ω]×`, and several percent smaller with `C0 = 0` (the
//!   per-driver field at the same velocities, which defines no gradient).
//! - The rigid field's gradient, which now carries `∂L/∂C0 : ∂C0/∂ω`,
//!   against central differences of the GPU loss (the smooth scene of
//!   tests/gpu_mpm/fit_problem.rs) and against the f64 twin started the
//!   same way (src/reference/chain.rs `velocity_gradient`).
//! - `render --params` from a drivers file that records the start
//!   (`velocity_gradient`) reproduces the fit's rollout of the spin.

use crate::common;
use crate::fit_problem::{all, fixture_of, options, Kind, FRAMES};
use crate::support::chain_twin;

use physfit::fit::{FitProblem, GradientFlow, Parameters, VelocityField, YoungsField};
use physfit::mpm::ParticleState;
use physfit::reference::chain::{chain_gradient, ChainParams64};
use physfit::scene::ply::PlyData;
use physfit::scene::Scene;

/// The spin of the free block, rad/s, and its linear velocity, world
/// units/s.
const OMEGA: [f64; 3] = [0.8, -1.5, 2.5];
const LINEAR: [f64; 3] = [0.1, 0.0, -0.05];

/// A 7×7×7 block of splats, 0.3 wide, in the middle of a box of side 1.6
/// at grid 32 (dx 0.05 world units: the block is 6 cells wide, so the
/// kernel's share of a particle's spin, `dx²/(2 r⊥²)` of it, is several
/// percent), no gravity, nothing anchored, ν 0.3, soft enough that one
/// frame is a handful of substeps.
fn free_block() -> (tempfile::TempDir, Scene) {
    let dir = tempfile::tempdir().unwrap();
    let splats = common::block(&common::Block {
        counts: [7, 7, 7],
        spacing: [0.05; 3],
        jitter: 0.005,
        jitter_seed: 3,
        log_scale: -3.5,
        opacity_logit: 2.0,
        colour: |_| [0.3, 0.1, -0.2],
    });
    let ply = dir.path().join("splats.ply");
    PlyData::from_gaussians(&splats, &ply)
        .write(&ply, &[])
        .unwrap();
    let toml = r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
[views.camera]
width = 16
height = 16
fx = 20.0
position = [0.15, -3.0, 0.15]
look_at = [0.15, 0.15, 0.15]
up = [0.0, 0.0, 1.0]

[reference]
fps = 30.0

[simulation]
box = { min = [-0.65, -0.65, -0.65], max = [0.95, 0.95, 0.95] }
grid_res = 32
gravity = [0.0, 0.0, 0.0]

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.0]

[drivers]
count = 512
k = 8
seed = 0
"#;
    let path = dir.path().join("scene.toml");
    std::fs::write(&path, toml).unwrap();
    let scene = Scene::load(&path).unwrap();
    (dir, scene)
}

/// The angular momentum `L = Σ r × v` of equal-mass particles about their
/// centroid (per unit mass, normalised units) and their least-squares
/// angular velocity `I⁻¹ L` (rad/s), `I = Σ (|r|² 1 − r rᵀ)`.
fn angular_momentum(s: &ParticleState) -> ([f64; 3], [f64; 3]) {
    let n = s.len() as f64;
    let c: [f64; 3] = std::array::from_fn(|a| s.x.iter().map(|x| f64::from(x[a])).sum::<f64>() / n);
    let mut l = [0.0f64; 3];
    let mut inertia = [[0.0f64; 3]; 3];
    for (x, v) in s.x.iter().zip(&s.v) {
        let r: [f64; 3] = std::array::from_fn(|a| f64::from(x[a]) - c[a]);
        let v = v.map(f64::from);
        l[0] += r[1] * v[2] - r[2] * v[1];
        l[1] += r[2] * v[0] - r[0] * v[2];
        l[2] += r[0] * v[1] - r[1] * v[0];
        let r2 = r.iter().map(|q| q * q).sum::<f64>();
        for a in 0..3 {
            for b in 0..3 {
                inertia[a][b] += f64::from(u8::from(a == b)) * r2 - r[a] * r[b];
            }
        }
    }
    (l, solve3(inertia, l))
}

/// `A x = b` by Cramer's rule (a well-conditioned inertia tensor).
fn solve3(a: [[f64; 3]; 3], b: [f64; 3]) -> [f64; 3] {
    let det = |m: [[f64; 3]; 3]| {
        m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1])
            - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
            + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])
    };
    let d = det(a);
    std::array::from_fn(|k| {
        let mut m = a;
        for (row, &bi) in m.iter_mut().zip(&b) {
            row[k] = bi;
        }
        det(m) / d
    })
}

fn relative_error(got: [f64; 3], want: [f64; 3]) -> f64 {
    let d: f64 = (0..3).map(|a| (got[a] - want[a]).powi(2)).sum::<f64>();
    let w: f64 = want.iter().map(|q| q * q).sum::<f64>();
    (d / w).sqrt()
}

/// The particles' angular momentum and velocity after frame 1 of `params`
/// in `problem` ([`angular_momentum`]).
fn spin_after_one_frame(
    ctx: &physfit::gpu::GpuContext,
    problem: &mut FitProblem,
    params: &Parameters,
) -> ([f64; 3], [f64; 3]) {
    let rollout = problem.forward_states(ctx, params, 1).unwrap();
    let state = ParticleState::from_packed(&ctx.read_buffer::<f32>(&rollout.frames[1]).unwrap());
    angular_momentum(&state)
}

/// A free rigid spin keeps its particles' angular momentum through the
/// first transfers when `C` starts at `[ω]×`, and loses the kernel's share
/// of it when `C` starts at 0 (module doc). (Its angular velocity drops by
/// about 1% in the frame either way: the linear advection lets the spinning
/// block grow by `ω²t²/2` until its elasticity pulls it back, and its
/// moment of inertia grows with it.)
#[test]
fn rigid_spin_keeps_its_angular_velocity_through_the_first_transfers() {
    let ctx = common::gpu();
    let (_dir, scene) = free_block();
    let mut rigid_options = options(&scene);
    rigid_options.youngs = YoungsField::Global;
    rigid_options.velocity = VelocityField::Rigid;
    let mut rigid = FitProblem::new(&ctx, &scene, &rigid_options).unwrap();
    let mut per_driver_options = options(&scene);
    per_driver_options.youngs = YoungsField::Global;
    let mut per_driver = FitProblem::new(&ctx, &scene, &per_driver_options).unwrap();
    assert!(rigid.drivers().anchored.iter().all(|&a| !a));
    let x = Parameters {
        log10_youngs: vec![3.5],
        velocity: LINEAR.iter().chain(&OMEGA).copied().collect(),
        poisson: Vec::new(),
    };
    // At rest, before any transfer, the drivers spin at ω exactly.
    let side = rigid.drivers().sim_box.side;
    let start_state = ParticleState::at_rest(
        rigid.drivers().rest.clone(),
        rigid
            .velocity_map()
            .apply(&x.velocity)
            .unwrap()
            .chunks_exact(3)
            .map(|c| std::array::from_fn(|a| (c[a] / side) as f32))
            .collect(),
    );
    let (l0, w0) = angular_momentum(&start_state);
    let at_start = relative_error(w0, OMEGA);
    // The same physical velocities per driver, without a field gradient.
    let same_velocities = Parameters {
        log10_youngs: x.log10_youngs.clone(),
        velocity: rigid.velocity_map().apply(&x.velocity).unwrap(),
        poisson: Vec::new(),
    };
    let (l_with, w_with) = spin_after_one_frame(&ctx, &mut rigid, &x);
    let (l_without, w_without) = spin_after_one_frame(&ctx, &mut per_driver, &same_velocities);
    let (err_with, err_without) = (relative_error(l_with, l0), relative_error(l_without, l0));
    let speed = |w: [f64; 3]| w.iter().map(|q| q * q).sum::<f64>().sqrt();
    eprintln!(
        "at rest: ω error {at_start:.2e}, |L| {:.6e}; after frame 1: C0 = [ω]×: L error \
         {err_with:.2e}, ω {w_with:.4?} (|ω| {:.4}); C0 = 0: L error {err_without:.2e}, ω \
         {w_without:.4?} (|ω| {:.4}); start |ω| {:.4}",
        speed(l0),
        speed(w_with),
        speed(w_without),
        speed(OMEGA)
    );
    assert!(
        at_start < 1e-5,
        "the start is not the rigid spin: {at_start}"
    );
    assert!(
        err_with < 2e-3,
        "C0 = [ω]× lost {err_with:.2e} of the angular momentum"
    );
    assert!(
        err_without > 10.0 * err_with,
        "C0 = 0 ({err_without:.2e}) should lose far more of the angular momentum than \
         C0 = [ω]× ({err_with:.2e})"
    );
}

/// The rigid field on the smooth scene of tests/gpu_mpm/fit_problem.rs (32
/// drivers, some anchored, two views, 3 frames), spinning.
fn spinning(p: &FitProblem) -> Parameters {
    assert_eq!(p.velocity_map().params, 6);
    Parameters {
        log10_youngs: vec![3.7],
        velocity: vec![0.25, 0.02, 0.12, 1.2, -0.8, 1.6],
        poisson: Vec::new(),
    }
}

fn rigid_problem(ctx: &physfit::gpu::GpuContext, scene: &Scene) -> FitProblem {
    let mut o = options(scene);
    o.youngs = YoungsField::Global;
    o.velocity = VelocityField::Rigid;
    FitProblem::new(ctx, scene, &o).unwrap()
}

/// The twin's parameters of the rigid field's `x`: per-driver `v0 = M x`
/// and, `with_c0`, `C0 = A x` (src/fit/params.rs), in f64.
fn twin_params(p: &FitProblem, x: &Parameters, with_c0: bool) -> ChainParams64 {
    let n = p.drivers().len();
    let v = p.velocity_map().apply(&x.velocity).unwrap();
    let c = p.velocity_gradient_map().apply(&x.velocity).unwrap();
    ChainParams64 {
        log10_youngs: vec![x.log10_youngs[0]; n],
        velocity: v.chunks_exact(3).map(|q| [q[0], q[1], q[2]]).collect(),
        velocity_gradient: match with_c0 {
            true => c
                .chunks_exact(9)
                .map(|q| std::array::from_fn(|a| std::array::from_fn(|b| q[3 * a + b])))
                .collect(),
            false => Vec::new(),
        },
    }
}

/// `∂L/∂u` and `∂L/∂ω` of the rigid field (full flow, stage 1's) on the
/// GPU, with the initial affine velocity, against central differences
/// (Richardson, h = 1e-5) of the loss of the f64 twin started the same way,
/// as a function of the six rigid parameters. The GPU loss itself is too
/// rough for differences at a step f32 resolves: jump-robust differences
/// of it at ±8e-3 came within 0.25–5% of this gradient (jumps of the
/// render, tests/gpu_mpm/fit_problem.rs), where the twin's f64 loss is
/// smooth at 1e-5 (tests/gpu_mpm/chain_vs_twin.rs). The GPU gradient is
/// the twin's ([`rigid_field_with_initial_affine_velocity_agrees_with_the_twin`]),
/// and `∂L/∂C0` is about a tenth of its ω part: a gradient without it
/// would miss by that much.
#[test]
fn rigid_field_gradient_with_initial_affine_velocity_matches_finite_differences() {
    use crate::common::slopes::richardson;
    use physfit::reference::chain::chain_loss;
    let ctx = common::gpu();
    let (_dir, scene) = fixture_of(&ctx, Kind::Smooth);
    let mut p = rigid_problem(&ctx, &scene);
    let at = spinning(&p);
    let g = p
        .evaluate(&ctx, &at, &all(), GradientFlow::Full)
        .unwrap()
        .read(&ctx)
        .unwrap();
    let o = options(&scene);
    let twin = chain_twin(&scene, &p, &o, FRAMES, o.tv_weight);
    let scale = g
        .velocity
        .iter()
        .fold(0.0f64, |a, b| a.max(f64::from(b.abs())));
    for i in 0..6 {
        let fd = richardson(
            |t| {
                let mut q = at.clone();
                q.velocity[i] += t;
                chain_loss(&twin, &twin_params(&p, &q, true)).total
            },
            1e-5,
        );
        let gpu = f64::from(g.velocity[i]);
        let error = (fd - gpu).abs() / gpu.abs().max(0.05 * scale);
        eprintln!(
            "rigid v0[{i}]: GPU gradient {gpu:+.6e}, twin FD {fd:+.6e}, relative {error:.2e}"
        );
        assert!(
            error <= 1e-3,
            "rigid v0[{i}]: GPU gradient {gpu} vs twin FD {fd}"
        );
    }
}

/// The GPU problem and the f64 twin start the same way: the twin, given
/// the rigid field's per-driver `v0` and `C0 = [ω]×`, has the GPU's loss,
/// and its `∂L/∂v0`, `∂L/∂C0` through the maps' transposes are the GPU's
/// rigid gradient. The loss moves with `C0` by far more than the
/// agreement, so a problem that dropped `C0` would fail.
#[test]
fn rigid_field_with_initial_affine_velocity_agrees_with_the_twin() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture_of(&ctx, Kind::Smooth);
    // The fixture's rule, and the scenes' default, whose anchored drivers
    // strain and whose held nodes come from the anchored splats.
    for rule in [
        physfit::mpm_rules::AnchorRule::Stencil,
        physfit::mpm_rules::AnchorRule::Splats,
    ] {
        let mut scene = scene.clone();
        scene.simulation.anchoring = rule;
        eprintln!("anchoring {}", rule.word());
        rigid_field_agrees_with_the_twin_in(&ctx, &scene);
    }
}

fn rigid_field_agrees_with_the_twin_in(ctx: &physfit::gpu::GpuContext, scene: &Scene) {
    let mut p = rigid_problem(ctx, scene);
    let at = spinning(&p);
    let e = p.evaluate(ctx, &at, &all(), GradientFlow::Full).unwrap();
    let g = e.read(ctx).unwrap();
    let o = options(scene);
    let twin = chain_twin(scene, &p, &o, FRAMES, o.tv_weight);
    let t = chain_gradient(&twin, &twin_params(&p, &at, true), GradientFlow::Full);
    let without = chain_gradient(&twin, &twin_params(&p, &at, false), GradientFlow::Full);
    let gap = (e.report.loss - t.loss.total).abs() / t.loss.total;
    let moved = (without.loss.total - t.loss.total).abs() / t.loss.total;
    eprintln!(
        "loss: GPU {:.8e}, twin {:.8e} (relative {gap:.2e}); twin with C0 = 0 {:.8e} \
         (relative {moved:.2e})",
        e.report.loss, t.loss.total, without.loss.total
    );
    assert!(gap <= 1e-4, "loss GPU vs twin {gap:e}");
    assert!(moved > 100.0 * gap, "C0 moves the loss by {moved:e} only");
    let d_v: Vec<f64> = t.d_velocity.iter().flatten().copied().collect();
    let d_c: Vec<f64> = t
        .d_velocity_gradient
        .iter()
        .flat_map(|m| m.iter().flatten().copied())
        .collect();
    let from_v = p.velocity_map().transpose(&d_v);
    let from_c = p.velocity_gradient_map().transpose(&d_c);
    let want: Vec<f64> = from_v.iter().zip(&from_c).map(|(a, b)| a + b).collect();
    let scale = want.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    for i in 0..6 {
        let got = f64::from(g.velocity[i]);
        eprintln!(
            "rigid v0[{i}]: GPU {got:+.6e}, twin {:+.6e} (of which ∂L/∂C0 {:+.6e})",
            want[i], from_c[i]
        );
        assert!(
            (got - want[i]).abs() <= 1e-3 * scale,
            "rigid v0[{i}]: GPU {got} vs twin {}",
            want[i]
        );
    }
    // The C0 term is a real part of ∂L/∂ω here, not a rounding.
    let c_part = from_c.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    assert!(
        c_part > 1e-2 * scale,
        "∂L/∂C0's share {c_part:e} of {scale:e}"
    );
}

fn max_difference(a: &[physfit::io::Frame], b: &[physfit::io::Frame]) -> f32 {
    a.iter()
        .zip(b)
        .flat_map(|(x, y)| x.pixels.iter().zip(&y.pixels))
        .flat_map(|(p, q)| (0..4).map(move |c| (p[c] - q[c]).abs()))
        .fold(0.0, f32::max)
}

/// `render --params` starts where the fit started: a drivers file written
/// as the fit writes a rigid field's (per-driver `v0` and
/// `velocity_gradient`, src/fit/outputs.rs) re-simulates the fit's own
/// rollout of the spinning block (to the run-to-run noise of float
/// atomics), and the same file without `velocity_gradient` does not.
#[test]
fn render_params_reproduces_a_rigid_fits_spinning_rollout() {
    use physfit::forward::{ForwardSetup, SceneRenderer};
    use physfit::interact::Interactions;
    use physfit::output::FittedDrivers;
    let ctx = common::gpu();
    let (dir, scene) = free_block();
    let mut o = options(&scene);
    o.youngs = YoungsField::Global;
    o.velocity = VelocityField::Rigid;
    let x = Parameters {
        log10_youngs: vec![3.5],
        velocity: LINEAR.iter().chain(&OMEGA).copied().collect(),
        poisson: Vec::new(),
    };
    let frames = 3;
    let fit_run = || {
        let mut problem = FitProblem::new(&ctx, &scene, &o).unwrap();
        let rollout = problem.forward_states(&ctx, &x, frames).unwrap();
        (0..=frames)
            .map(|k| problem.render_state(&ctx, &rollout.frames[k], 0).unwrap())
            .collect::<Vec<_>>()
    };
    let (first, second) = (fit_run(), fit_run());
    let problem = FitProblem::new(&ctx, &scene, &o).unwrap();
    let drivers = problem.drivers().clone();
    let log10 = vec![x.log10_youngs[0]; drivers.len()];
    let velocity = problem.velocity_map().apply(&x.velocity).unwrap();
    let gradient = problem.velocity_gradient_map().apply(&x.velocity).unwrap();
    let plain = FittedDrivers::new(&scene, &drivers, &log10, &velocity, None).unwrap();
    let with_c0 = plain.clone().with_velocity_gradient(&gradient).unwrap();
    let path = dir.path().join("drivers.safetensors");
    with_c0.save(&path).unwrap();
    let file = FittedDrivers::load(&path).unwrap();
    let render = |file: &FittedDrivers| {
        let setup = ForwardSetup::from_fitted(
            &scene,
            file,
            "drivers.safetensors",
            &Interactions::default(),
        )
        .unwrap();
        let mut animation =
            SceneRenderer::simulated(&ctx, &setup, scene.gaussians(), scene.background).unwrap();
        let camera = scene.views[0].camera.clone();
        (0..=frames)
            .map(|k| {
                if k > 0 {
                    animation.step(&ctx).unwrap();
                }
                animation.pose(&ctx, k).unwrap();
                animation.render(&ctx, &camera).unwrap()
            })
            .collect::<Vec<_>>()
    };
    let noise = max_difference(&first, &second);
    let reproduced = max_difference(&render(&file), &first);
    let without = max_difference(&render(&plain), &first);
    eprintln!(
        "render --params vs the fit's rollout: {reproduced:.2e} with velocity_gradient, \
         {without:.2e} without (two fit runs: {noise:.2e})"
    );
    assert!(
        reproduced <= 2.0 * noise + 1e-5,
        "{reproduced} vs run-to-run {noise}"
    );
    assert!(
        without > 10.0 * (reproduced + 1e-5),
        "without C0: {without}"
    );
}
