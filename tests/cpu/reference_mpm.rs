//! Tests of the f64 MPM twin (src/reference/mpm): polar derivative and
//! rollout gradients against central finite differences, and physics
//! (free fall, momentum conservation, anchoring, thin-bar period), and
//! frame-loss gradients in both fit flows (full, truncated).

use physfit::mpm_rules::config::{AnchorRule, MpmConfig, Transfer, WallMode};
use physfit::reference::mpm::grid_adjoint::AdjointPaths;
use physfit::reference::mpm::mat3::{self, Mat3, Vec3};
use physfit::reference::mpm::rollout::rollout_gradient_with;
use physfit::reference::mpm::{
    frame_states, frames_gradient, polar_decomposition, polar_forward_derivative, polar_reverse,
    rollout, rollout_gradient, substep, GradientFlow, MpmSetup64, MpmState64, RolloutGradient,
};
use physfit::reference::mpm::{grid, p2g};
use std::time::Instant;

/// Deterministic generator (splitmix64) so tests need no dependency.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [-1, 1).
    fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vec3(&mut self) -> Vec3 {
        [self.uniform(), self.uniform(), self.uniform()]
    }
    fn mat3(&mut self) -> Mat3 {
        [self.vec3(), self.vec3(), self.vec3()]
    }
}

fn config(grid_res: u32, substeps_per_frame: u32, gravity: [f64; 3]) -> MpmConfig {
    MpmConfig {
        grid_res,
        fps: 30.0,
        substeps_per_frame,
        gravity,
        damping: 0.0,
        density: 2000.0,
        poisson: 0.3,
        walls: WallMode::Sticky,
        colliders: Vec::new(),
        anchoring: AnchorRule::Stencil,
        transfer: Default::default(),
    }
}

/// A jittered cube of `per_axis³` particles, spacing dx/2, centred in the box.
fn cube(grid_res: u32, per_axis: usize, rng: &mut Rng) -> Vec<Vec3> {
    let dx = 1.0 / grid_res as f64;
    let h = dx / 2.0;
    let start = 0.5 - per_axis as f64 * h / 2.0;
    let mut pts = Vec::new();
    for i in 0..per_axis {
        for j in 0..per_axis {
            for k in 0..per_axis {
                let jitter = rng.vec3();
                pts.push(std::array::from_fn(|a| {
                    let idx = [i, j, k][a] as f64;
                    start + (idx + 0.5 + 0.3 * jitter[a]) * h
                }));
            }
        }
    }
    pts
}

fn max_abs_diff(a: &Mat3, b: &Mat3) -> f64 {
    (0..3)
        .flat_map(|i| (0..3).map(move |j| (i, j)))
        .map(|(i, j)| (a[i][j] - b[i][j]).abs())
        .fold(0.0, f64::max)
}

fn rotation(axis: Vec3, angle: f64) -> Mat3 {
    let n = mat3::dot(&axis, &axis).sqrt();
    let k = mat3::skew(&[axis[0] / n, axis[1] / n, axis[2] / n]);
    let mut r = mat3::IDENTITY;
    mat3::add_scaled(&mut r, &k, angle.sin());
    mat3::add_scaled(&mut r, &mat3::mul(&k, &k), 1.0 - angle.cos());
    r
}

// ---------------------------------------------------------------- polar

/// Forward- and reverse-mode polar derivatives vs central differences of R,
/// including equal singular values.
#[test]
fn polar_derivatives_match_finite_differences() {
    let t0 = Instant::now();
    let mut rng = Rng(7);
    let q = rotation([0.3, -0.5, 0.8], 0.7);
    let cases: Vec<(&str, Mat3)> = vec![
        (
            "general",
            mat3::add(&mat3::IDENTITY, &mat3::scale(&rng.mat3(), 0.3)),
        ),
        (
            "rotation·diag(s,s,s')",
            mat3::mul(&q, &[[1.2, 0.0, 0.0], [0.0, 1.2, 0.0], [0.0, 0.0, 0.8]]),
        ),
        ("scaled rotation", mat3::scale(&q, 0.9)),
        ("identity", mat3::IDENTITY),
        (
            "inverted",
            mat3::mul(&q, &[[1.1, 0.0, 0.0], [0.0, 0.9, 0.0], [0.0, 0.0, -0.3]]),
        ),
    ];
    let h = 1e-5;
    let mut worst: f64 = 0.0;
    for (name, f) in cases {
        for _ in 0..4 {
            let df = rng.mat3();
            let g = rng.mat3();
            let rp = polar_decomposition(&mat3::add(&f, &mat3::scale(&df, h))).r;
            let rm = polar_decomposition(&mat3::sub(&f, &mat3::scale(&df, h))).r;
            let fd = mat3::scale(&mat3::sub(&rp, &rm), 0.5 / h);
            let forward = polar_forward_derivative(&f, &df);
            let err_fwd = max_abs_diff(&fd, &forward) / mat3::norm(&fd).max(1e-300);
            // Reverse: ⟨G, dR⟩ = ⟨polar_reverse(F, G), dF⟩.
            let lhs = mat3::frobenius_dot(&g, &fd);
            let rhs = mat3::frobenius_dot(&polar_reverse(&f, &g), &df);
            let err_rev = (lhs - rhs).abs() / lhs.abs().max(mat3::norm(&g) * mat3::norm(&fd));
            println!("polar {name}: forward rel err {err_fwd:.2e}, reverse rel err {err_rev:.2e}");
            assert!(err_fwd < 1e-9, "{name}: forward {err_fwd:e}");
            assert!(err_rev < 1e-9, "{name}: reverse {err_rev:e}");
            worst = worst.max(err_fwd).max(err_rev);
        }
    }
    println!("polar worst {worst:.2e} in {:?}", t0.elapsed());
}

// ------------------------------------------------------------- gradients

/// Small cube scene for gradient checks: 512 particles on grid_res 16,
/// bottom layer anchored, gravity on, random E and initial velocity, away
/// from the walls.
struct GradientScene {
    setup: MpmSetup64,
    initial: MpmState64,
    youngs: Vec<f64>,
    loss_grad: MpmState64,
    substeps: usize,
}

fn gradient_scene() -> GradientScene {
    scene_with(WallMode::Sticky, 0.0, 0.0, true)
}

/// The gradient-check cube shifted by `shift_y`, with wall mode `walls`,
/// grid damping `damping`, and optionally its bottom layer anchored.
fn scene_with(walls: WallMode, shift_y: f64, damping: f64, anchor_bottom: bool) -> GradientScene {
    let mut rng = Rng(42);
    let grid_res = 16;
    let per_axis = 8;
    let mut x = cube(grid_res, per_axis, &mut rng);
    for p in x.iter_mut() {
        p[1] += shift_y;
    }
    let n = x.len();
    let anchored: Vec<bool> = (0..n)
        .map(|p| anchor_bottom && (p / per_axis) % per_axis == 0)
        .collect();
    let mut initial = MpmState64::at_rest(x);
    for (v, &fixed) in initial.v.iter_mut().zip(&anchored) {
        if !fixed {
            *v = rng.vec3().map(|c| 0.3 * c);
        }
    }
    let youngs: Vec<f64> = (0..n).map(|_| 2e5 * (1.0 + 0.5 * rng.uniform())).collect();
    let mut config = config(grid_res, 20, [0.0, -9.8, 0.0]);
    config.walls = walls;
    config.damping = damping;
    let setup = MpmSetup64 {
        config,
        particle_volume: (1.0 / 32.0f64).powi(3),
        anchored,
        held_points: Vec::new(),
        poisson: None,
    };
    let mut loss_grad = MpmState64::zeros(n);
    for p in 0..n {
        loss_grad.x[p] = rng.vec3();
        loss_grad.v[p] = rng.vec3();
    }
    GradientScene {
        setup,
        initial,
        youngs,
        loss_grad,
        substeps: 24,
    }
}

impl GradientScene {
    /// Loss of a rollout and the base cells of every particle at every
    /// substep (to check no finite-difference run crossed a cell boundary).
    fn loss(&self, initial: &MpmState64, youngs: &[f64]) -> (f64, Vec<[i64; 3]>) {
        let states = rollout(&self.setup, initial, youngs, self.substeps);
        let dx = self.setup.config.dx();
        let cells = states
            .iter()
            .flat_map(|s| s.x.iter())
            .map(|x| std::array::from_fn(|a| (x[a] / dx - 0.5).floor() as i64))
            .collect();
        (states.last().unwrap().dot(&self.loss_grad), cells)
    }

    /// Central difference along a direction in (E, v0).
    fn central_difference(&self, d_youngs: &[f64], d_velocity: &[Vec3], h: f64) -> f64 {
        let perturbed = |sign: f64| {
            let e: Vec<f64> = self
                .youngs
                .iter()
                .zip(d_youngs)
                .map(|(e, d)| e + sign * h * d)
                .collect();
            let mut s = self.initial.clone();
            for (v, d) in s.v.iter_mut().zip(d_velocity) {
                mat3::vadd_scaled(v, d, sign * h);
            }
            self.loss(&s, &e)
        };
        let (lp, cells_p) = perturbed(1.0);
        let (lm, cells_m) = perturbed(-1.0);
        assert_eq!(cells_p, cells_m, "a particle crossed a cell boundary");
        (lp - lm) / (2.0 * h)
    }
}

fn directional(grad: &physfit::reference::mpm::RolloutGradient, d_e: &[f64], d_v: &[Vec3]) -> f64 {
    let e: f64 = grad.d_youngs.iter().zip(d_e).map(|(g, d)| g * d).sum();
    let v: f64 = grad
        .d_initial
        .v
        .iter()
        .zip(d_v)
        .map(|(g, d)| mat3::dot(g, d))
        .sum();
    e + v
}

/// dL/dE and dL/dv0 of a 24-substep rollout vs central differences.
#[test]
fn rollout_gradient_matches_finite_differences() {
    let t0 = Instant::now();
    let scene = gradient_scene();
    let p = scene.initial.len() / 2 + 3 * 8 + 3; // a free particle in the middle
    assert!(!scene.setup.anchored[p]);
    let worst = rollout_gradient_error(&scene, p);
    println!(
        "rollout gradient worst rel err {worst:.2e} in {:?}",
        t0.elapsed()
    );
}

/// Under the `splats` rule (the scene's default) the anchored particles
/// are free and the held nodes come from points, not particles: the
/// twin's adjoint against central differences of the same 24-substep
/// rollout, the single components those of an anchored particle, whose E
/// now moves the loss as it strains.
#[test]
fn splats_rollout_gradient_matches_finite_differences() {
    let mut scene = gradient_scene();
    under_splats(&mut scene.setup, &scene.initial);
    let p = 4 * 64 + 3; // the anchored bottom layer's middle (i = 4, j = 0)
    assert!(scene.setup.anchored[p]);
    rollout_gradient_error(&scene, p);
}

/// `setup` under the `splats` rule, its anchored particles' positions in
/// `initial` the held points.
fn under_splats(setup: &mut MpmSetup64, initial: &MpmState64) {
    setup.config.anchoring = AnchorRule::Splats;
    setup.held_points = initial
        .x
        .iter()
        .zip(&setup.anchored)
        .filter(|(_, a)| **a)
        .map(|(x, _)| *x)
        .collect();
}

/// dL/dE and dL/dv0 of `scene`'s 24-substep rollout against central
/// differences, along two random directions (v0 on free particles only)
/// and along particle `p`'s E and v0 y; the worst relative error, each
/// asserted within 1e-5.
fn rollout_gradient_error(scene: &GradientScene, p: usize) -> f64 {
    let n = scene.initial.len();
    let grad = rollout_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        scene.substeps,
        &scene.loss_grad,
    );
    let mut rng = Rng(99);
    let zero_v = vec![[0.0; 3]; n];
    let zero_e = vec![0.0; n];
    let mut worst: f64 = 0.0;
    let mut check = |what: &str, d_e: &[f64], d_v: &[Vec3]| {
        let fd = scene.central_difference(d_e, d_v, 1e-4);
        let an = directional(&grad, d_e, d_v);
        let err = (fd - an).abs() / fd.abs();
        println!("{what}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
        assert!(an != 0.0 && err <= 1e-5, "{what} rel err {err:e}");
        worst = worst.max(err);
    };
    for trial in 0..2 {
        // Young's modulus direction, relative to E.
        let d_e: Vec<f64> = scene.youngs.iter().map(|e| e * rng.uniform()).collect();
        check(&format!("dL/dE trial {trial}"), &d_e, &zero_v);
        // Initial-velocity direction (free particles).
        let d_v: Vec<Vec3> = (0..n)
            .map(|q| match scene.setup.anchored[q] {
                true => [0.0; 3],
                false => rng.vec3(),
            })
            .collect();
        check(&format!("dL/dv0 trial {trial}"), &zero_e, &d_v);
    }
    // Single components: one E and one velocity entry.
    let mut d_e = zero_e.clone();
    d_e[p] = scene.youngs[p];
    check(&format!("dL/dE_{p}"), &d_e, &zero_v);
    let mut d_v = zero_v.clone();
    d_v[p] = [0.0, 1.0, 0.0];
    check(&format!("dL/dv0_{p},y"), &zero_e, &d_v);
    worst
}

/// The FLIP transfer's adjoint (the particle's own velocity carried past
/// the grid, less the velocity it gave the grid: src/reference/mpm
/// g2p_adjoint.rs, grid_adjoint.rs, p2g_adjoint.rs) against central
/// differences of the same 24-substep rollout: dL/dE, dL/dv0, dL/dC0
/// (the carried momentum's affine path) and dL/dx0 (the weights' and
/// offsets' paths), with a PIC share per unit of time and as pure FLIP.
#[test]
fn flip_rollout_gradient_matches_finite_differences() {
    let t0 = Instant::now();
    for pic_time in [0.05, f64::INFINITY] {
        let mut scene = gradient_scene();
        scene.setup.config.transfer = Transfer::Flip { pic_time };
        let n = scene.initial.len();
        let mut rng = Rng(11);
        for (c, &fixed) in scene.initial.c.iter_mut().zip(&scene.setup.anchored) {
            if !fixed {
                *c = mat3::scale(&rng.mat3(), 0.5);
            }
        }
        let grad = rollout_gradient(
            &scene.setup,
            &scene.initial,
            &scene.youngs,
            scene.substeps,
            &scene.loss_grad,
        );
        let free = |rng: &mut Rng, p: usize| match scene.setup.anchored[p] {
            true => [0.0; 3],
            false => rng.vec3(),
        };
        let d_e: Vec<f64> = scene.youngs.iter().map(|e| e * rng.uniform()).collect();
        let d_v: Vec<Vec3> = (0..n).map(|p| free(&mut rng, p)).collect();
        let mut d_c = MpmState64::zeros(n);
        for p in 0..n {
            d_c.c[p] = [free(&mut rng, p), free(&mut rng, p), free(&mut rng, p)];
        }
        // Positions: the weights' and offsets' paths of both scatters.
        let mut d_x = MpmState64::zeros(n);
        for p in 0..n {
            d_x.x[p] = free(&mut rng, p);
        }
        let zero_e = vec![0.0; n];
        let zero_v = vec![[0.0; 3]; n];
        let checks = [
            (
                "dL/dE",
                scene.central_difference(&d_e, &zero_v, 1e-4),
                directional(&grad, &d_e, &zero_v),
            ),
            (
                "dL/dv0",
                scene.central_difference(&zero_e, &d_v, 1e-4),
                directional(&grad, &zero_e, &d_v),
            ),
            (
                "dL/dC0",
                state_difference(&scene, &d_c, 1e-4),
                grad.d_initial.dot(&d_c),
            ),
            (
                "dL/dx0",
                state_difference(&scene, &d_x, 1e-6),
                grad.d_initial.dot(&d_x),
            ),
        ];
        for (label, fd, an) in checks {
            let err = (fd - an).abs() / fd.abs();
            println!(
                "FLIP τ = {pic_time} s, {label}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}"
            );
            assert!(
                err <= 1e-5,
                "FLIP τ = {pic_time} s: {label} rel err {err:e}"
            );
        }
    }
    println!("FLIP rollout gradients in {:?}", t0.elapsed());
}

/// Central difference of the gradient scene's loss along `d` in the
/// initial state.
fn state_difference(scene: &GradientScene, d: &MpmState64, h: f64) -> f64 {
    let perturbed = |sign: f64| {
        let mut s = scene.initial.clone();
        s.add_scaled(d, sign * h);
        scene.loss(&s, &scene.youngs)
    };
    let (lp, cells_p) = perturbed(1.0);
    let (lm, cells_m) = perturbed(-1.0);
    assert_eq!(cells_p, cells_m, "a particle crossed a cell boundary");
    (lp - lm) / (2.0 * h)
}

/// Dropping the grid-mass path (as PhysDreamer's shipped adjoint does)
/// gives a velocity gradient far from finite differences: the test above
/// can fail, and the path matters.
#[test]
fn gradient_without_grid_mass_path_is_wrong() {
    let t0 = Instant::now();
    let scene = gradient_scene();
    let n = scene.initial.len();
    let ablated = rollout_gradient_with(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        scene.substeps,
        &scene.loss_grad,
        AdjointPaths { grid_mass: false },
    );
    let mut rng = Rng(5);
    let d_v: Vec<Vec3> = (0..n)
        .map(|p| {
            if scene.setup.anchored[p] {
                [0.0; 3]
            } else {
                rng.vec3()
            }
        })
        .collect();
    let fd = scene.central_difference(&vec![0.0; n], &d_v, 1e-4);
    let an = directional(&ablated, &vec![0.0; n], &d_v);
    let err = (fd - an).abs() / fd.abs();
    let d_e: Vec<f64> = scene.youngs.iter().map(|e| e * rng.uniform()).collect();
    let fd_e = scene.central_difference(&d_e, &vec![[0.0; 3]; n], 1e-4);
    let an_e = directional(&ablated, &d_e, &vec![[0.0; 3]; n]);
    let err_e = (fd_e - an_e).abs() / fd_e.abs();
    println!(
        "without grid-mass path: dL/dv0 rel err {err:.2e}, dL/dE rel err {err_e:.2e} in {:?}",
        t0.elapsed()
    );
    assert!(
        err > 1e-2,
        "dropping the mass path changed dL/dv0 by only {err:e}"
    );
}

// --------------------------------------------------------------- physics

/// A free-falling cube (no walls reached) follows the symplectic-Euler
/// trajectory `Δx_n = g·dt²·n(n+1)/2` exactly, i.e. `g·t²/2` up to
/// `g·t·dt/2`; v = g·t, C = 0, F = I.
#[test]
fn free_fall_matches_parabola() {
    let t0 = Instant::now();
    let mut rng = Rng(3);
    let g = [0.5, -9.8, 0.0];
    let setup_config = config(16, 20, g);
    let dt = setup_config.dt();
    let x = cube(16, 6, &mut rng);
    let n = x.len();
    let setup = MpmSetup64 {
        config: setup_config,
        particle_volume: (1.0 / 32.0f64).powi(3),
        anchored: vec![false; n],
        held_points: Vec::new(),
        poisson: None,
    };
    let youngs = vec![1e5; n];
    let steps = 50;
    let states = rollout(&setup, &MpmState64::at_rest(x), &youngs, steps);
    let (first, last) = (&states[0], &states[steps]);
    let t = steps as f64 * dt;
    let k = (steps * (steps + 1)) as f64 / 2.0;
    let mut worst_discrete: f64 = 0.0;
    let mut worst_continuous: f64 = 0.0;
    for p in 0..n {
        for (a, g) in g.iter().enumerate() {
            let moved = last.x[p][a] - first.x[p][a];
            worst_discrete = worst_discrete.max((moved - g * dt * dt * k).abs());
            worst_continuous = worst_continuous.max((moved - 0.5 * g * t * t).abs());
            assert!((last.v[p][a] - g * t).abs() < 1e-12);
        }
        assert!(max_abs_diff(&last.c[p], &mat3::ZERO) < 1e-9);
        assert!(max_abs_diff(&last.f[p], &mat3::IDENTITY) < 1e-12);
    }
    println!(
        "free fall over {steps} substeps (t = {t:.4} s): |Δx − g dt² n(n+1)/2| ≤ {worst_discrete:.2e}, \
         |Δx − g t²/2| ≤ {worst_continuous:.2e} (expected g·t·dt/2 = {:.2e}) in {:?}",
        9.8 * t * dt / 2.0,
        t0.elapsed()
    );
    assert!(worst_discrete < 1e-12);
    assert!(worst_continuous <= 9.8 * t * dt / 2.0 * (1.0 + 1e-9));
}

/// Linear momentum `Σ m v` and APIC angular momentum
/// `Σ m (x × v) + m·(dx²/4)·axial(C − Cᵀ)` (about the box centre) of a
/// spinning, deforming cube, without gravity, damping or walls.
#[test]
fn momentum_is_conserved_without_gravity_or_walls() {
    let t0 = Instant::now();
    let mut rng = Rng(11);
    let grid_res = 16;
    let x = cube(grid_res, 8, &mut rng);
    let n = x.len();
    let mut state = MpmState64::at_rest(x);
    let spin = [0.3, -0.8, 0.5];
    for p in 0..n {
        let r = [
            state.x[p][0] - 0.5,
            state.x[p][1] - 0.5,
            state.x[p][2] - 0.5,
        ];
        let rot = mat3::cross(&spin, &r);
        let noise = rng.vec3();
        state.v[p] = std::array::from_fn(|a| 0.1 + rot[a] + 0.2 * noise[a]);
        state.f[p] = mat3::add(&mat3::IDENTITY, &mat3::scale(&rng.mat3(), 0.05));
    }
    let setup = MpmSetup64 {
        config: config(grid_res, 20, [0.0; 3]),
        particle_volume: (1.0 / 32.0f64).powi(3),
        anchored: vec![false; n],
        held_points: Vec::new(),
        poisson: None,
    };
    let youngs: Vec<f64> = (0..n).map(|_| 2e5 * (1.0 + 0.5 * rng.uniform())).collect();
    let m = setup.particle_mass();
    let d = 0.25 / (grid_res * grid_res) as f64;
    let momenta = |s: &MpmState64| {
        let mut lin = [0.0; 3];
        let mut ang = [0.0; 3];
        for p in 0..s.len() {
            let r = [s.x[p][0] - 0.5, s.x[p][1] - 0.5, s.x[p][2] - 0.5];
            mat3::vadd_scaled(&mut lin, &s.v[p], m);
            mat3::vadd_scaled(&mut ang, &mat3::cross(&r, &s.v[p]), m);
            let skew = mat3::sub(&s.c[p], &mat3::transpose(&s.c[p]));
            mat3::vadd_scaled(&mut ang, &mat3::axial(&skew), m * d);
        }
        (lin, ang)
    };
    let (lin0, ang0) = momenta(&state);
    let norm = |v: &Vec3| mat3::dot(v, v).sqrt();
    let mut worst_lin: f64 = 0.0;
    let mut worst_ang: f64 = 0.0;
    for _ in 0..100 {
        state = substep(&setup, &state, &youngs);
        let (lin, ang) = momenta(&state);
        let dl = [lin[0] - lin0[0], lin[1] - lin0[1], lin[2] - lin0[2]];
        let da = [ang[0] - ang0[0], ang[1] - ang0[1], ang[2] - ang0[2]];
        worst_lin = worst_lin.max(norm(&dl) / norm(&lin0));
        worst_ang = worst_ang.max(norm(&da) / norm(&ang0));
    }
    let moved = state
        .f
        .iter()
        .map(|f| max_abs_diff(f, &mat3::IDENTITY))
        .fold(0.0, f64::max);
    println!(
        "momentum drift over 100 substeps: linear {worst_lin:.2e}, angular {worst_ang:.2e} \
         (max |F − I| {moved:.3}) in {:?}",
        t0.elapsed()
    );
    assert!(worst_lin <= 1e-9 && worst_ang <= 1e-9);
}

/// An anchored particle holds every node its stencil reaches under the
/// `stencil` rule (27), and only the node nearest it under `nearest`: the
/// held layer then reaches half a cell past the anchored particles, not
/// one and a half, on any grid. Under `splats` the particle holds nothing
/// itself: the held points do, each the node at floor(x/dx) below it.
#[test]
fn an_anchored_particle_holds_its_stencil_or_its_nearest_node() {
    let x = [0.512, 0.47, 0.5301];
    let grid_res = 16u32;
    // dx = 1/16: floor nodes (8, 7, 8) and (8, 7, 9) inside the stencil,
    // and one (7, 7, 8) the particle's nearest node is not.
    let held_points = vec![[0.53, 0.45, 0.51], [0.51, 0.44, 0.57], [0.45, 0.46, 0.52]];
    for (rule, held) in [
        (AnchorRule::Stencil, 27),
        (AnchorRule::Nearest, 1),
        (AnchorRule::Splats, 3),
    ] {
        let mut config = config(grid_res, 4, [0.0; 3]);
        config.anchoring = rule;
        let setup = MpmSetup64 {
            config,
            particle_volume: 1e-4,
            anchored: vec![true, false],
            held_points: held_points.clone(),
            poisson: None,
        };
        let state = MpmState64::at_rest(vec![x, [0.3, 0.3, 0.3]]);
        let g = p2g::p2g(&setup, &state, &[1e4, 1e4]);
        let nodes: Vec<[i64; 3]> = (0..g.anchored.len())
            .filter(|&i| g.anchored[i])
            .map(|i| g.node(i))
            .collect();
        assert_eq!(nodes.len(), held, "{rule:?}: {nodes:?}");
        if rule == AnchorRule::Nearest {
            let nearest = x.map(|c| (c * grid_res as f64).round() as i64);
            assert_eq!(nodes, vec![nearest]);
        }
        if rule == AnchorRule::Splats {
            assert_eq!(nodes, vec![[7, 7, 8], [8, 7, 8], [8, 7, 9]]);
        }
    }
}

/// Under `stencil` and `nearest` an anchored particle is frozen: the grid
/// does not move it. Under `splats` it is material like the rest, moved by
/// the grid unless a held node stops it, as PhysDreamer's simulator has it.
#[test]
fn only_the_splats_rule_leaves_anchored_particles_free() {
    let x = vec![[0.5, 0.5, 0.5], [0.52, 0.5, 0.5]];
    for rule in [AnchorRule::Stencil, AnchorRule::Nearest, AnchorRule::Splats] {
        let mut config = config(16, 4, [0.0; 3]);
        config.anchoring = rule;
        let setup = MpmSetup64 {
            config,
            particle_volume: 1e-4,
            anchored: vec![true, false],
            // Far from both particles: no node near them is held.
            held_points: vec![[0.2, 0.2, 0.2]],
            poisson: None,
        };
        let mut state = MpmState64::at_rest(x.clone());
        state.v[1] = [0.3, 0.0, 0.0];
        let next = substep(&setup, &state, &[1e4, 1e4]);
        let moved = next.v[0][0] != 0.0 && next.x[0] != x[0];
        assert_eq!(
            moved,
            rule == AnchorRule::Splats,
            "{rule:?}: {:?}",
            next.v[0]
        );
    }
}

/// The twin, like the simulator, refuses the `splats` rule with anchored
/// particles and no held points rather than run unanchored.
#[test]
#[should_panic(expected = "no held points")]
fn the_twin_refuses_the_splats_rule_without_its_points() {
    let mut config = config(16, 4, [0.0; 3]);
    config.anchoring = AnchorRule::Splats;
    let setup = MpmSetup64 {
        config,
        particle_volume: 1e-4,
        anchored: vec![true, false],
        held_points: Vec::new(),
        poisson: None,
    };
    let state = MpmState64::at_rest(vec![[0.5; 3], [0.52, 0.5, 0.5]]);
    substep(&setup, &state, &[1e4, 1e4]);
}

/// 27 splat means on a 3 × 3 × 3 lattice 0.4 world units apart: a scene
/// small enough to load in a test of its settings.
fn lattice_means() -> Vec<[f32; 3]> {
    (0..27)
        .map(|i| {
            [
                (i % 3) as f32 * 0.4,
                (i / 3 % 3) as f32 * 0.4,
                (i / 9) as f32 * 0.4,
            ]
        })
        .collect()
}

/// `simulation.anchoring` (default `splats`) reaches the simulator's settings; a word other
/// than the three rules is refused naming the field and every word.
#[test]
fn the_scene_chooses_the_anchoring_rule_and_refuses_other_words() {
    let means = lattice_means();
    let (_d, scene) = crate::common::scene_with(&means, "");
    assert_eq!(scene.unwrap().mpm_config().anchoring, AnchorRule::Splats);
    let (_d, scene) = crate::common::scene_with(&means, "[simulation]\nanchoring = \"stencil\"");
    assert_eq!(scene.unwrap().mpm_config().anchoring, AnchorRule::Stencil);
    let (_d, scene) = crate::common::scene_with(&means, "[simulation]\nanchoring = \"nearest\"");
    assert_eq!(scene.unwrap().mpm_config().anchoring, AnchorRule::Nearest);
    let (_d, scene) = crate::common::scene_with(&means, "[simulation]\nanchoring = \"splats\"");
    assert_eq!(scene.unwrap().mpm_config().anchoring, AnchorRule::Splats);
    let (_d, scene) = crate::common::scene_with(&means, "[simulation]\nanchoring = \"inside\"");
    let m = scene.unwrap_err().to_string();
    assert!(
        m.contains("`simulation.anchoring`")
            && m.contains("stencil")
            && m.contains("nearest")
            && m.contains("splats"),
        "{m}"
    );
}

/// `simulation.transfer` and `simulation.pic_time` reach the simulator's
/// settings: APIC by default, FLIP with τ = 0.1 s unless given (`inf`:
/// pure FLIP); a PIC time with APIC, a τ ≤ 0 and another word are refused
/// naming the field.
#[test]
fn the_scene_chooses_the_transfer_and_refuses_what_it_cannot_run() {
    let means = lattice_means();
    let transfer = |text: &str| {
        let (_d, scene) = crate::common::scene_with(&means, text);
        scene
            .map(|s| s.mpm_config().transfer)
            .map_err(|e| e.to_string())
    };
    assert_eq!(transfer(""), Ok(Transfer::Apic));
    assert_eq!(
        transfer("[simulation]\ntransfer = \"flip\""),
        Ok(Transfer::Flip { pic_time: 0.1 })
    );
    assert_eq!(
        transfer("[simulation]\ntransfer = \"flip\"\npic_time = inf"),
        Ok(Transfer::Flip {
            pic_time: f64::INFINITY
        })
    );
    for (text, field) in [
        ("[simulation]\npic_time = 0.1", "`simulation.pic_time`"),
        (
            "[simulation]\ntransfer = \"flip\"\npic_time = 0.0",
            "`simulation.pic_time`",
        ),
        ("[simulation]\ntransfer = \"pic\"", "`simulation.transfer`"),
    ] {
        let m = transfer(text).unwrap_err();
        assert!(m.contains(field), "{text}: {m}");
    }
}

/// Anchored particles keep x and F and have v = C = 0 while the rest falls
/// and deforms.
#[test]
fn anchored_particles_do_not_move() {
    let t0 = Instant::now();
    let scene = gradient_scene();
    let states = rollout(&scene.setup, &scene.initial, &scene.youngs, 60);
    let (first, last) = (&states[0], &states[60]);
    let mut free_moved: f64 = 0.0;
    for p in 0..first.len() {
        if scene.setup.anchored[p] {
            assert_eq!(last.x[p], first.x[p]);
            assert_eq!(last.f[p], first.f[p]);
            assert_eq!(last.v[p], [0.0; 3]);
            assert_eq!(last.c[p], mat3::ZERO);
        } else {
            let d = mat3::vadd(&last.x[p], &first.x[p].map(|c| -c));
            free_moved = free_moved.max(mat3::dot(&d, &d).sqrt());
        }
    }
    println!(
        "anchored fixed; free particles moved up to {free_moved:.3e} in {:?}",
        t0.elapsed()
    );
    assert!(free_moved > 1e-3);
}

/// Thin bar along x, 2×2 cells cross-section, 8 particles per cell,
/// `anchored_cells` cells anchored at the low end and `free_cells` free,
/// Poisson 0, started in its first clamped-free mode shape
/// `v_x = v₀ sin(π s / 2L)` (s from the anchored face). Returns the period
/// measured from the first and third zero crossings of the free end's mean
/// velocity (linear interpolation between substeps) and the thin-bar period
/// `4L/sqrt(E/ρ)`.
fn bar_period(youngs: f64, dt: f64, free_cells: usize) -> (f64, f64) {
    let grid_res = 64u32;
    let dx = 1.0 / grid_res as f64;
    let h = dx / 2.0;
    let anchored_cells = 2;
    let x_start = 6.0 * dx;
    let x_clamp = x_start + anchored_cells as f64 * dx;
    let length = free_cells as f64 * dx;
    let layers = 2 * (anchored_cells + free_cells);
    let mut x = Vec::new();
    let mut anchored = Vec::new();
    let mut free_end = Vec::new();
    for i in 0..layers {
        for j in 0..4 {
            for k in 0..4 {
                let px = x_start + (i as f64 + 0.5) * h;
                if i + 2 >= layers {
                    free_end.push(x.len());
                }
                anchored.push(px < x_clamp);
                x.push([
                    px,
                    0.5 - dx + (j as f64 + 0.5) * h,
                    0.5 - dx + (k as f64 + 0.5) * h,
                ]);
            }
        }
    }
    let n = x.len();
    let mut config = config(grid_res, 1, [0.0; 3]);
    config.fps = 1.0 / dt;
    config.poisson = 0.0;
    let setup = MpmSetup64 {
        config,
        particle_volume: h * h * h,
        anchored,
        held_points: Vec::new(),
        poisson: None,
    };
    let v0 = 0.05;
    let mut state = MpmState64::at_rest(x);
    for p in 0..n {
        if !setup.anchored[p] {
            let s = state.x[p][0] - x_clamp;
            state.v[p][0] = v0 * (std::f64::consts::PI * s / (2.0 * length)).sin();
        }
    }
    let youngs = vec![youngs; n];
    let expected = 4.0 * length / (youngs[0] / setup.config.density).sqrt();
    let end_velocity =
        |s: &MpmState64| free_end.iter().map(|&p| s.v[p][0]).sum::<f64>() / free_end.len() as f64;
    let mut crossings = Vec::new();
    let mut previous = end_velocity(&state);
    let max_steps = (1.6 * expected / dt) as usize;
    for step in 1..=max_steps {
        state = substep(&setup, &state, &youngs);
        let v = end_velocity(&state);
        if (previous > 0.0) != (v > 0.0) {
            crossings.push(dt * (step as f64 - 1.0 + previous / (previous - v)));
            if crossings.len() == 3 {
                break;
            }
        }
        previous = v;
    }
    assert_eq!(crossings.len(), 3, "bar did not oscillate: {crossings:?}");
    (crossings[2] - crossings[0], expected)
}

/// Clamped-free thin bar: period within 5% of `4L/sqrt(E/ρ)`, and 4× E
/// halves it within 2% (same dt, so time discretisation differs).
#[test]
fn thin_bar_period_matches_theory() {
    let t0 = Instant::now();
    let (e, rho, dx, free_cells): (f64, f64, f64, usize) = (2e5, 2000.0, 1.0 / 64.0, 50);
    // CFL 0.4 for 4E (P-wave speed sqrt(E/ρ) at Poisson 0).
    let dt = 0.4 * dx / (4.0 * e / rho).sqrt();
    let (period, expected) = bar_period(e, dt, free_cells);
    let t1 = t0.elapsed();
    let (period4, expected4) = bar_period(4.0 * e, dt, free_cells);
    let err = period / expected - 1.0;
    let err4 = period4 / expected4 - 1.0;
    let ratio = period4 / period;
    println!(
        "thin bar ({free_cells} free cells): period {period:.5} s vs {expected:.5} s ({:+.2}%), \
         4E: {period4:.5} vs {expected4:.5} ({:+.2}%), ratio {ratio:.5} ({:+.2}% from 0.5); \
         runs {t1:?} + {:?}",
        100.0 * err,
        100.0 * err4,
        100.0 * (ratio / 0.5 - 1.0),
        t0.elapsed() - t1
    );
    assert!(err.abs() <= 0.05 && err4.abs() <= 0.05);
    assert!((ratio / 0.5 - 1.0).abs() <= 0.02);
}

/// Gradients with the cube resting on the floor (wall nodes active, sticky
/// and slip), grid damping on, with respect to E and the whole initial
/// state (x, v, C, F), vs central differences.
#[test]
fn wall_and_damping_gradients_match_finite_differences() {
    let t0 = Instant::now();
    for walls in [WallMode::Sticky, WallMode::Slip] {
        // Bottom particles at y ≈ 2.7 dx: their stencils reach wall node 2.
        let mut scene = scene_with(walls, -0.2125, 3.0, false);
        let n = scene.initial.len();
        for v in scene.initial.v.iter_mut() {
            v[1] -= 0.3;
        }
        // The walls act: some grid components are zeroed in the first substep.
        let grid = p2g::p2g(&scene.setup, &scene.initial, &scene.youngs);
        let velocity = grid::grid_update(&scene.setup, &grid);
        let zeroed = (0..grid.mass.len())
            .filter(|&i| grid.mass[i] > 0.0)
            .map(|i| velocity.pass[i].iter().filter(|&&pass| !pass).count())
            .sum::<usize>();
        assert!(zeroed > 0, "no wall node active");
        let grad = rollout_gradient(
            &scene.setup,
            &scene.initial,
            &scene.youngs,
            scene.substeps,
            &scene.loss_grad,
        );
        let mut rng = Rng(2024);
        let d_e: Vec<f64> = scene.youngs.iter().map(|e| e * rng.uniform()).collect();
        let mut d_state = MpmState64::zeros(n);
        for p in 0..n {
            d_state.x[p] = rng.vec3().map(|c| c * 1e-2);
            d_state.v[p] = rng.vec3();
            d_state.c[p] = rng.mat3();
            d_state.f[p] = mat3::scale(&rng.mat3(), 0.1);
        }
        let h = 1e-5;
        let loss_at = |sign: f64| {
            let e: Vec<f64> = scene
                .youngs
                .iter()
                .zip(&d_e)
                .map(|(e, d)| e + sign * h * d)
                .collect();
            let mut s = scene.initial.clone();
            for p in 0..n {
                mat3::vadd_scaled(&mut s.x[p], &d_state.x[p], sign * h);
                mat3::vadd_scaled(&mut s.v[p], &d_state.v[p], sign * h);
                mat3::add_scaled(&mut s.c[p], &d_state.c[p], sign * h);
                mat3::add_scaled(&mut s.f[p], &d_state.f[p], sign * h);
            }
            scene.loss(&s, &e)
        };
        let (lp, cells_p) = loss_at(1.0);
        let (lm, cells_m) = loss_at(-1.0);
        assert_eq!(cells_p, cells_m, "a particle crossed a cell boundary");
        let fd = (lp - lm) / (2.0 * h);
        let an: f64 = grad
            .d_youngs
            .iter()
            .zip(&d_e)
            .map(|(g, d)| g * d)
            .sum::<f64>()
            + grad.d_initial.dot(&d_state);
        let err = (fd - an).abs() / fd.abs();
        println!("{walls:?} floor ({zeroed} grid components zeroed), damping 3/s: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
        assert!(err <= 1e-5, "{walls:?}: rel err {err:e}");
    }
    println!("wall gradients in {:?}", t0.elapsed());
}

// ----------------------------------------------------------------- frames

/// Frames of the frame-loss scenes: seeds on frames 0..=FRAMES.
const FRAMES: usize = 3;

/// The gradient-check cube (512 particles, bottom layer of 64 anchored,
/// gravity, random E and v, away from the walls) run as 3 frames of 8
/// substeps (fps 75: dt = 1/600 s as in [`gradient_scene`], 24 substeps in
/// all), with a loss `L = Σ_k ⟨W_k, state_k⟩` whose seeds `W_k` are random
/// on every component (x, v, C, F) of every particle, at frames 0..=3.
struct FramesScene {
    setup: MpmSetup64,
    initial: MpmState64,
    youngs: Vec<f64>,
    seeds: Vec<(usize, MpmState64)>,
}

fn random_state(n: usize, rng: &mut Rng) -> MpmState64 {
    let mut s = MpmState64::zeros(n);
    for p in 0..n {
        s.x[p] = rng.vec3();
        s.v[p] = rng.vec3();
        s.c[p] = rng.mat3();
        s.f[p] = rng.mat3();
    }
    s
}

fn frames_scene() -> FramesScene {
    let base = gradient_scene();
    let mut setup = base.setup;
    setup.config.substeps_per_frame = 8;
    setup.config.fps = 75.0;
    assert!(setup.anchored.iter().filter(|&&a| a).count() == 64);
    let n = base.initial.len();
    let mut rng = Rng(314);
    let seeds = (0..=FRAMES)
        .map(|k| (k, random_state(n, &mut rng)))
        .collect();
    FramesScene {
        setup,
        initial: base.initial,
        youngs: base.youngs,
        seeds,
    }
}

/// Base cells `floor(x/dx − 0.5)` of every particle in every state.
fn cells_of<'a>(states: impl IntoIterator<Item = &'a MpmState64>, dx: f64) -> Vec<[i64; 3]> {
    states
        .into_iter()
        .flat_map(|s| s.x.iter())
        .map(|x| std::array::from_fn(|a| (x[a] / dx - 0.5).floor() as i64))
        .collect()
}

/// A direction in (E, initial state).
struct Direction {
    youngs: Vec<f64>,
    state: MpmState64,
}

impl Direction {
    fn zero(n: usize) -> Self {
        Direction {
            youngs: vec![0.0; n],
            state: MpmState64::zeros(n),
        }
    }

    /// `(E + t·dE, initial + t·d(state))`.
    fn apply(&self, youngs: &[f64], initial: &MpmState64, t: f64) -> (Vec<f64>, MpmState64) {
        let e = youngs
            .iter()
            .zip(&self.youngs)
            .map(|(e, d)| e + t * d)
            .collect();
        let mut s = initial.clone();
        s.add_scaled(&self.state, t);
        (e, s)
    }

    /// The adjoint's derivative along this direction.
    fn derivative(&self, grad: &RolloutGradient) -> f64 {
        let e: f64 = grad
            .d_youngs
            .iter()
            .zip(&self.youngs)
            .map(|(g, d)| g * d)
            .sum();
        e + grad.d_initial.dot(&self.state)
    }
}

impl FramesScene {
    fn substeps(&self) -> usize {
        self.setup.config.substeps_per_frame as usize
    }

    /// The full loss `Σ_k ⟨W_k, state_k⟩` and the cells of every particle
    /// at every substep.
    fn loss_full(&self, initial: &MpmState64, youngs: &[f64]) -> (f64, Vec<[i64; 3]>) {
        let s = self.substeps();
        let states = rollout(&self.setup, initial, youngs, FRAMES * s);
        let loss = self.seeds.iter().map(|(k, w)| w.dot(&states[k * s])).sum();
        (loss, cells_of(&states, self.setup.config.dx()))
    }

    /// The truncated loss `⟨W_0, initial⟩ + Σ_{k≥1} ⟨W_k, Φ_k(start_k; E)⟩`
    /// with `start_1 = initial` and `start_k = fixed[k − 1]` for k ≥ 2 (the
    /// unperturbed forward's frame states, held constant); `Φ_k` runs frame
    /// k's substeps. Also the cells of every particle at every substep.
    fn loss_truncated(
        &self,
        initial: &MpmState64,
        youngs: &[f64],
        fixed: &[MpmState64],
    ) -> (f64, Vec<[i64; 3]>) {
        let dx = self.setup.config.dx();
        let mut loss = 0.0;
        let mut cells = cells_of([initial], dx);
        for (k, w) in &self.seeds {
            if *k == 0 {
                loss += w.dot(initial);
                continue;
            }
            let start = if *k == 1 { initial } else { &fixed[k - 1] };
            let states = rollout(&self.setup, start, youngs, self.substeps());
            loss += w.dot(&states[self.substeps()]);
            cells.extend(cells_of(&states[1..], dx));
        }
        (loss, cells)
    }

    /// Random directions in E (relative to E), v, and x, C, F (scaled to
    /// their size) over all particles, anchored ones included (their v and
    /// C do not reach the loss: both sides give 0 there).
    fn random_directions(&self, rng: &mut Rng) -> Vec<(&'static str, Direction)> {
        let n = self.initial.len();
        let mut out = Vec::new();
        for name in ["E", "E'", "v0", "x0", "C0", "F0"] {
            let mut d = Direction::zero(n);
            for p in 0..n {
                match name {
                    "E" | "E'" => d.youngs[p] = self.youngs[p] * rng.uniform(),
                    "v0" => d.state.v[p] = rng.vec3(),
                    "x0" => d.state.x[p] = rng.vec3().map(|c| c * 1e-2),
                    "C0" => d.state.c[p] = rng.mat3(),
                    _ => d.state.f[p] = mat3::scale(&rng.mat3(), 0.1),
                }
            }
            out.push((name, d));
        }
        out
    }

    /// Per-component directions: E_p of free particles in the middle, next
    /// to the anchored layer and at the top; v0 of two free particles; x0
    /// of an anchored particle (which only its own seeds see).
    fn component_directions(&self) -> Vec<(String, Direction)> {
        let n = self.initial.len();
        // p = 64 i + 8 j + k, j the height; j = 0 is anchored.
        let (middle, low, top, anchored) = (
            4 * 64 + 3 * 8 + 3,
            4 * 64 + 8 + 4,
            4 * 64 + 7 * 8 + 4,
            3 * 64 + 5,
        );
        assert!(!self.setup.anchored[middle] && !self.setup.anchored[low]);
        assert!(!self.setup.anchored[top] && self.setup.anchored[anchored]);
        let mut out = Vec::new();
        for p in [middle, low, top] {
            let mut d = Direction::zero(n);
            d.youngs[p] = self.youngs[p];
            out.push((format!("E_{p}"), d));
        }
        for (p, a) in [(middle, 1), (low, 0)] {
            let mut d = Direction::zero(n);
            d.state.v[p][a] = 1.0;
            out.push((format!("v0_{p},{a}"), d));
        }
        let mut d = Direction::zero(n);
        d.state.x[anchored][2] = 1e-2;
        out.push((format!("x0_{anchored},z (anchored)"), d));
        out
    }
}

/// Central differences of `loss(t)` (the loss at `base + t·direction` and
/// its cells) at steps h and h/2, Richardson-extrapolated to
/// `(4·D(h/2) − D(h))/3` (truncation error O(h⁴) instead of O(h²)).
/// Asserts that no perturbed run moved a particle into another cell than the
/// unperturbed run (`base_cells`) at any substep. Returns the estimate and
/// `|D(h) − D(h/2)|`, an estimate of the plain difference's error.
fn richardson(
    loss: impl Fn(f64) -> (f64, Vec<[i64; 3]>),
    base_cells: &[[i64; 3]],
    h: f64,
) -> (f64, f64) {
    let central = |t: f64| {
        let (lp, cp) = loss(t);
        let (lm, cm) = loss(-t);
        assert!(
            cp == base_cells && cm == base_cells,
            "a particle crossed a cell boundary at step {t:e}"
        );
        (lp - lm) / (2.0 * t)
    };
    let (d1, d2) = (central(h), central(h / 2.0));
    ((4.0 * d2 - d1) / 3.0, (d1 - d2).abs())
}

/// Relative error of the adjoint's derivative `an` against `fd`, printed and
/// asserted ≤ 1e-5.
fn check_derivative(label: &str, fd: f64, fd_error: f64, an: f64) -> f64 {
    let err = (fd - an).abs() / fd.abs();
    println!(
        "{label}: fd {fd:.10e} (plain-difference error ~{fd_error:.1e}) adjoint {an:.10e} \
         rel err {err:.2e}"
    );
    assert!(err <= 1e-5, "{label}: rel err {err:e}");
    err
}

// Tolerance: the adjoint is exact up to roundoff, so what the comparison
// measures is the finite difference's own error. A plain central difference
// has a truncation error O(h²) (printed as |D(h) − D(h/2)|: up to ~1e-6
// absolute at h = 1e-3 here, on derivatives of 1e-2..3e1), which
// Richardson's extrapolation cancels to O(h⁴); and a roundoff error ~δL/h,
// δL the loss's floating-point error over 24 substeps (~1e-12: at h = 1e-4
// it dominated, up to 9e-9 absolute, 4e-7 relative on a 2e-2 derivative).
// h = 1e-3 in units of each direction (E ± 1e-3·E·u, v ± 1e-3, x ± 1e-5,
// C ± 1e-3, F ± 1e-4; no particle changes cell) balances the two: measured
// worst 2e-8 relative. The bound 1e-5 leaves a margin of ~500 and still
// catches a missing path, which shows as ≥ 1e-3 (the two flows' ∂L/∂E differ
// by 0.43; dropping the grid-mass path costs > 1e-2, test above).
const FD_STEP: f64 = 1e-3;

/// Full flow (fit stage 1): `frames_gradient` of `L = Σ_k ⟨W_k, state_k⟩`
/// over 3 frames (seeds at frames 0..=3) vs central differences with
/// respect to E and the initial x, v, C, F, along random directions and
/// per component.
#[test]
fn full_frames_gradient_matches_finite_differences() {
    let t0 = Instant::now();
    let worst = full_frames_gradient_error(&frames_scene(), "full");
    println!(
        "full frames gradient worst rel err {worst:.2e} in {:?}",
        t0.elapsed()
    );
}

/// [`full_frames_gradient_matches_finite_differences`] under the `splats`
/// rule: the anchored bottom layer free, its rest positions the held
/// points.
#[test]
fn splats_full_frames_gradient_matches_finite_differences() {
    let mut scene = frames_scene();
    under_splats(&mut scene.setup, &scene.initial);
    full_frames_gradient_error(&scene, "splats full");
}

/// The full flow's `frames_gradient` of `scene` against central
/// differences along random and per-component directions (each checked
/// by [`check_derivative`]); the worst relative error.
fn full_frames_gradient_error(scene: &FramesScene, what: &str) -> f64 {
    let grad = frames_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        FRAMES,
        &scene.seeds,
        GradientFlow::Full,
    );
    let (_, base_cells) = scene.loss_full(&scene.initial, &scene.youngs);
    let mut rng = Rng(271);
    let mut directions: Vec<(String, Direction)> = scene
        .random_directions(&mut rng)
        .into_iter()
        .map(|(name, d)| (format!("random {name}"), d))
        .collect();
    directions.extend(scene.component_directions());
    let mut worst: f64 = 0.0;
    for (label, d) in &directions {
        let loss = |t: f64| {
            let (e, s) = d.apply(&scene.youngs, &scene.initial, t);
            scene.loss_full(&s, &e)
        };
        let (fd, fd_error) = richardson(loss, &base_cells, FD_STEP);
        let err = check_derivative(
            &format!("{what} {label}"),
            fd,
            fd_error,
            d.derivative(&grad),
        );
        worst = worst.max(err);
    }
    worst
}

/// Truncated flow (fit stage 2): `frames_gradient` vs central differences
/// of `L_trunc = ⟨W_0, state_0⟩ + Σ_{k≥1} ⟨W_k, Φ_k(state*_{k−1}; E)⟩`
/// with `state*_{k−1}` the unperturbed forward's for k ≥ 2 (so only frame
/// 1's term and frame 0's seed see the initial state). The truncated ∂L/∂E
/// also differs from the full one, so swapped flows fail this test.
#[test]
fn truncated_frames_gradient_matches_finite_differences() {
    let t0 = Instant::now();
    let scene = frames_scene();
    let grad = frames_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        FRAMES,
        &scene.seeds,
        GradientFlow::Truncated,
    );
    let fixed = frame_states(&scene.setup, &scene.initial, &scene.youngs, FRAMES);
    let (_, base_cells) = scene.loss_truncated(&scene.initial, &scene.youngs, &fixed);
    let mut rng = Rng(828);
    let mut directions: Vec<(String, Direction)> = scene
        .random_directions(&mut rng)
        .into_iter()
        .map(|(name, d)| (format!("random {name}"), d))
        .collect();
    directions.extend(scene.component_directions());
    let mut worst: f64 = 0.0;
    for (label, d) in &directions {
        let loss = |t: f64| {
            let (e, s) = d.apply(&scene.youngs, &scene.initial, t);
            scene.loss_truncated(&s, &e, &fixed)
        };
        let (fd, fd_error) = richardson(loss, &base_cells, FD_STEP);
        let err = check_derivative(
            &format!("truncated {label}"),
            fd,
            fd_error,
            d.derivative(&grad),
        );
        worst = worst.max(err);
    }
    // The flows differ: cross-frame paths carry a sizeable part of ∂L/∂E.
    let full = frames_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        FRAMES,
        &scene.seeds,
        GradientFlow::Full,
    );
    let norm = |g: &[f64]| g.iter().map(|x| x * x).sum::<f64>().sqrt();
    let diff: Vec<f64> = grad
        .d_youngs
        .iter()
        .zip(&full.d_youngs)
        .map(|(a, b)| a - b)
        .collect();
    let rel = norm(&diff) / norm(&full.d_youngs);
    println!(
        "truncated frames gradient worst rel err {worst:.2e}; |∂L/∂E truncated − full| / \
         |full| = {rel:.3e}; in {:?}",
        t0.elapsed()
    );
    assert!(
        rel > 1e-3,
        "truncated and full ∂L/∂E differ by only {rel:e}"
    );
}

/// A frame-0 seed adds to ∂L/∂(state 0) as it is and leaves ∂L/∂E alone,
/// in both flows; with a seed at frame 2 only, the truncated flow gives
/// ∂L/∂(state 0) = 0 (only frames 0 and 1 reach it).
#[test]
fn frame_zero_seed_adds_to_initial_gradient() {
    let t0 = Instant::now();
    let scene = frames_scene();
    let n = scene.initial.len();
    let w0 = scene.seeds[0].1.clone();
    let w2 = scene.seeds[2].1.clone();
    assert_eq!((scene.seeds[0].0, scene.seeds[2].0), (0, 2));
    let run = |seeds: &[(usize, MpmState64)], flow| {
        frames_gradient(
            &scene.setup,
            &scene.initial,
            &scene.youngs,
            FRAMES,
            seeds,
            flow,
        )
    };
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        let only0 = run(&[(0, w0.clone())], flow);
        assert_eq!(only0.d_initial, w0, "{flow:?}: frame 0 alone");
        assert!(only0.d_youngs.iter().all(|&g| g == 0.0));
        let only2 = run(&[(2, w2.clone())], flow);
        let both = run(&[(2, w2.clone()), (0, w0.clone())], flow);
        assert_eq!(both.d_youngs, only2.d_youngs, "{flow:?}: ∂L/∂E");
        let mut expected = only2.d_initial.clone();
        expected.add_scaled(&w0, 1.0);
        let mut diff = both.d_initial.clone();
        diff.add_scaled(&expected, -1.0);
        let worst = diff.dot(&diff).sqrt() / expected.dot(&expected).sqrt();
        println!("{flow:?}: frames {{0, 2}} vs {{2}} + W_0: rel diff {worst:.1e}");
        assert!(worst <= 1e-14, "{flow:?}: {worst:e}");
        let reached = only2.d_initial.dot(&only2.d_initial).sqrt();
        match flow {
            GradientFlow::Full => assert!(reached > 0.0),
            GradientFlow::Truncated => assert_eq!(only2.d_initial, MpmState64::zeros(n)),
        }
    }
    println!("frame-0 seeds in {:?}", t0.elapsed());
}

#[test]
#[should_panic(expected = "seed for frame 4 but the rollout has frames 0..=3")]
fn frames_gradient_rejects_seed_past_last_frame() {
    let scene = frames_scene();
    let w = scene.seeds[1].1.clone();
    frames_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        FRAMES,
        &[(4, w)],
        GradientFlow::Full,
    );
}

#[test]
#[should_panic(expected = "two seeds for frame 1")]
fn frames_gradient_rejects_duplicate_frames() {
    let scene = frames_scene();
    let w = scene.seeds[1].1.clone();
    frames_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        FRAMES,
        &[(1, w.clone()), (2, w.clone()), (1, w)],
        GradientFlow::Truncated,
    );
}

/// ∂L/∂ν of the twin with ν per particle (src/reference/mpm/stress.rs,
/// through `μ(E, ν)`, `λ(E, ν)`) against central differences of the same
/// 24-substep rollout, along a random direction and for one particle.
#[test]
fn poisson_gradient_matches_finite_differences() {
    let mut scene = gradient_scene();
    let n = scene.initial.len();
    let mut rng = Rng(7);
    let nu: Vec<f64> = (0..n).map(|_| 0.3 + 0.1 * rng.uniform()).collect();
    scene.setup.poisson = Some(nu.clone());
    let grad = rollout_gradient(
        &scene.setup,
        &scene.initial,
        &scene.youngs,
        scene.substeps,
        &scene.loss_grad,
    );
    let central = |dir: &[f64], h: f64| {
        let loss = |sign: f64| {
            let mut s = scene.setup.clone();
            s.poisson = Some(nu.iter().zip(dir).map(|(v, d)| v + sign * h * d).collect());
            let states = rollout(&s, &scene.initial, &scene.youngs, scene.substeps);
            states.last().unwrap().dot(&scene.loss_grad)
        };
        (loss(1.0) - loss(-1.0)) / (2.0 * h)
    };
    let mut dir: Vec<f64> = (0..n).map(|_| rng.uniform()).collect();
    for trial in 0..2 {
        let fd = central(&dir, 1e-5);
        let an: f64 = grad.d_poisson.iter().zip(&dir).map(|(g, d)| g * d).sum();
        let err = (fd - an).abs() / fd.abs();
        println!("dL/dν trial {trial}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
        assert!(err <= 1e-5, "dL/dν rel err {err:e}");
        // Then one particle's ν alone.
        dir = vec![0.0; n];
        dir[n / 2 + 3 * 8 + 3] = 1.0;
    }
}

/// A particle's Lamé record at ν holds the bits the uniform μ/E, λ/E had at
/// the configuration's ν (so a simulation at one ν keeps its numbers), and
/// its ν-derivatives match central differences of `lame(1, ν)`.
#[test]
fn lame_records_match_the_uniform_and_their_derivatives() {
    use physfit::mpm::lame::lame_record;
    use physfit::mpm::uniforms::MpmUniforms;
    use physfit::mpm_rules::config::lame;
    for nu in [0.0, 0.2, 0.3, 0.4, 0.45, 0.49] {
        let mut c = config(16, 10, [0.0; 3]);
        c.poisson = nu;
        let u = MpmUniforms::new(&c, 1e-4, 1);
        let r = lame_record(nu);
        assert_eq!(r[0].to_bits(), u.mu_per_youngs.to_bits(), "μ/E at ν = {nu}");
        assert_eq!(
            r[1].to_bits(),
            u.lambda_per_youngs.to_bits(),
            "λ/E at ν = {nu}"
        );
        let h = 1e-6;
        let (mp, lp) = lame(1.0, nu + h);
        let (mm, lm) = lame(1.0, nu - h);
        let (dmu, dlambda) = ((mp - mm) / (2.0 * h), (lp - lm) / (2.0 * h));
        assert!(
            (r[2] as f64 - dmu).abs() <= 1e-5 * dmu.abs(),
            "dμ̂/dν at {nu}"
        );
        assert!(
            (r[3] as f64 - dlambda).abs() <= 1e-5 * dlambda.abs(),
            "dλ̂/dν at {nu}"
        );
    }
}
