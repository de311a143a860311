//! Tests of the f64 MPM twin (src/reference/mpm): polar derivative and
//! rollout gradients against central finite differences, and physics
//! (free fall, momentum conservation, anchoring, thin-bar period).

use physfit::mpm::config::{MpmConfig, WallMode};
use physfit::reference::mpm::grid_adjoint::AdjointPaths;
use physfit::reference::mpm::mat3::{self, Mat3, Vec3};
use physfit::reference::mpm::rollout::rollout_gradient_with;
use physfit::reference::mpm::{
    polar_decomposition, polar_forward_derivative, polar_reverse, rollout, rollout_gradient,
    MpmSetup64, MpmState64,
};
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
    let mut rng = Rng(42);
    let grid_res = 16;
    let per_axis = 8;
    let x = cube(grid_res, per_axis, &mut rng);
    let n = x.len();
    let anchored: Vec<bool> = (0..n).map(|p| (p / per_axis) % per_axis == 0).collect();
    let mut initial = MpmState64::at_rest(x);
    for (v, &fixed) in initial.v.iter_mut().zip(&anchored) {
        if !fixed {
            *v = rng.vec3().map(|c| 0.3 * c);
        }
    }
    let youngs: Vec<f64> = (0..n).map(|_| 2e5 * (1.0 + 0.5 * rng.uniform())).collect();
    let setup = MpmSetup64 {
        config: config(grid_res, 20, [0.0, -9.8, 0.0]),
        particle_volume: (1.0 / 32.0f64).powi(3),
        anchored,
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
    for trial in 0..2 {
        // Young's modulus direction, relative to E.
        let d_e: Vec<f64> = scene.youngs.iter().map(|e| e * rng.uniform()).collect();
        let fd = scene.central_difference(&d_e, &zero_v, 1e-4);
        let an = directional(&grad, &d_e, &zero_v);
        let err = (fd - an).abs() / fd.abs();
        println!("dL/dE trial {trial}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
        assert!(err <= 1e-5, "dL/dE rel err {err:e}");
        worst = worst.max(err);
        // Initial-velocity direction (free particles).
        let d_v: Vec<Vec3> = (0..n)
            .map(|p| {
                if scene.setup.anchored[p] {
                    [0.0; 3]
                } else {
                    rng.vec3()
                }
            })
            .collect();
        let fd = scene.central_difference(&zero_e, &d_v, 1e-5);
        let an = directional(&grad, &zero_e, &d_v);
        let err = (fd - an).abs() / fd.abs();
        println!("dL/dv0 trial {trial}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
        assert!(err <= 1e-5, "dL/dv0 rel err {err:e}");
        worst = worst.max(err);
    }
    // Single components: one E and one velocity entry.
    let p = n / 2 + 3 * 8 + 3; // a free particle in the middle
    assert!(!scene.setup.anchored[p]);
    let mut d_e = zero_e.clone();
    d_e[p] = scene.youngs[p];
    let fd = scene.central_difference(&d_e, &zero_v, 1e-4);
    let an = directional(&grad, &d_e, &zero_v);
    let err = (fd - an).abs() / fd.abs();
    println!("dL/dE_{p}: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
    assert!(err <= 1e-5, "dL/dE_p rel err {err:e}");
    worst = worst.max(err);
    let mut d_v = zero_v.clone();
    d_v[p] = [0.0, 1.0, 0.0];
    let fd = scene.central_difference(&zero_e, &d_v, 1e-5);
    let an = directional(&grad, &zero_e, &d_v);
    let err = (fd - an).abs() / fd.abs();
    println!("dL/dv0_{p},y: fd {fd:.10e} adjoint {an:.10e} rel err {err:.2e}");
    assert!(err <= 1e-5, "dL/dv0_p rel err {err:e}");
    worst = worst.max(err);
    println!(
        "rollout gradient worst rel err {worst:.2e} in {:?}",
        t0.elapsed()
    );
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
    let fd = scene.central_difference(&vec![0.0; n], &d_v, 1e-5);
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
