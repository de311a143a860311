//! The f64 twin of the deformation (src/reference/deform.rs): its adjoint
//! against central finite differences on smooth non-rigid motions (also
//! with coplanar drivers, where R stays differentiable), rigid motions of
//! the drivers moving the Gaussians rigidly, degenerate neighbourhoods
//! (coplanar, collinear, all drivers at one point) staying finite, the
//! quaternion helpers, and the setup's validation and gather list.
#![allow(clippy::needless_range_loop)] // parallel per-driver arrays

use crate::common::deform_cases::{self, mat_vec, rotation, to64, Rng};
use physfit::deform::{DeformError, DeformSetup, DRIVERS_PER_GAUSSIAN};
use physfit::reference::deform::{
    deform, deform_adjoint, quat_from_rotation, quat_mul, rigid_fit, rotation_from_quat, Quat,
};

type Vec3 = [f64; 3];

/// `L = Σ_g ⟨W_g, mean_g⟩ + ⟨U_g, q'_g⟩` (raw quaternions, so the adjoint
/// sees gradients that are not tangent to the unit sphere too).
fn loss(setup: &DeformSetup, x: &[Vec3], w: &[Vec3], u: &[Quat]) -> f64 {
    let out = deform(setup, x);
    let mut l = 0.0;
    for g in 0..setup.len() {
        l += (0..3).map(|a| w[g][a] * out.means[g][a]).sum::<f64>();
        l += (0..4).map(|a| u[g][a] * out.rotations[g][a]).sum::<f64>();
    }
    l
}

/// Largest `|fd − adjoint|` over all driver components, relative to the
/// largest adjoint component.
fn fd_error(setup: &DeformSetup, x: &[Vec3], rng: &mut Rng) -> f64 {
    let w: Vec<Vec3> = (0..setup.len()).map(|_| rng.vec3()).collect();
    let u: Vec<Quat> = (0..setup.len()).map(|_| rng.quat()).collect();
    let grad = deform_adjoint(setup, x, &w, &u);
    let scale = grad.iter().flatten().fold(0.0f64, |m, g| m.max(g.abs()));
    assert!(scale > 0.0);
    let h = 1e-6;
    let mut worst = 0.0f64;
    for j in 0..x.len() {
        for a in 0..3 {
            let mut xp = x.to_vec();
            let mut xm = x.to_vec();
            xp[j][a] += h;
            xm[j][a] -= h;
            let fd = (loss(setup, &xp, &w, &u) - loss(setup, &xm, &w, &u)) / (2.0 * h);
            worst = worst.max((fd - grad[j][a]).abs() / scale);
        }
    }
    worst
}

#[test]
fn twin_adjoint_matches_central_differences() {
    let mut rng = Rng(11);
    for case in 0..3 {
        let drivers = deform_cases::lattice(3, 0.06, [0.5, 0.45, 0.55], &mut rng);
        let setup = deform_cases::setup(drivers, 12, &mut rng);
        let x = deform_cases::deformed(
            &setup.rest_drivers,
            [0.5, 0.45, 0.55],
            0.4 + 0.3 * case as f64,
            0.15,
            0.004,
            &mut rng,
        );
        let err = fd_error(&setup, &x, &mut rng);
        eprintln!("case {case}: twin adjoint vs central FD: {err:.2e} of the largest component");
        assert!(err < 1e-6, "case {case}: {err:e}");
    }
}

#[test]
fn twin_adjoint_matches_central_differences_for_coplanar_drivers() {
    // A sheet: every rest driver at z = 0.5 (a thin petal). A is rank 2,
    // M's eigenvalues σ₁ + σ₂, σ₁, σ₂ stay positive: R is smooth.
    let mut rng = Rng(12);
    let mut drivers = deform_cases::lattice(4, 0.05, [0.5, 0.5, 0.5], &mut rng);
    for p in &mut drivers {
        p[2] = 0.5;
    }
    let setup = deform_cases::setup(drivers, 10, &mut rng);
    let x = deform_cases::deformed(&setup.rest_drivers, [0.5; 3], 0.7, 0.1, 0.003, &mut rng);
    let err = fd_error(&setup, &x, &mut rng);
    eprintln!("coplanar: twin adjoint vs central FD: {err:.2e}");
    assert!(err < 1e-6, "{err:e}");
}

fn max_abs_diff<const N: usize>(a: &[f64; N], b: &[f64; N]) -> f64 {
    (0..N).fold(0.0, |m, i| m.max((a[i] - b[i]).abs()))
}

/// Checks that `setup`'s Gaussians moved by the rigid motion `(r, t)` (of
/// normalised points) to `tol`, centres and rotations (up to sign).
fn assert_rigid(setup: &DeformSetup, r: &[[f64; 3]; 3], t: Vec3, tol: f64) {
    let x: Vec<Vec3> = setup
        .rest_drivers
        .iter()
        .map(|p| {
            let rp = mat_vec(r, &to64(*p));
            std::array::from_fn(|a| rp[a] + t[a])
        })
        .collect();
    let out = deform(setup, &x);
    let b = &setup.sim_box;
    let qr = quat_from_rotation(r);
    for g in 0..setup.len() {
        let rc = mat_vec(r, &to64(setup.rest_centres[g]));
        let want: Vec3 = std::array::from_fn(|a| b.min[a] + b.side * (rc[a] + t[a]));
        let e = max_abs_diff(&out.means[g], &want);
        assert!(
            e < tol,
            "Gaussian {g}: centre {:?} vs {want:?}",
            out.means[g]
        );
        let wq = quat_mul(&qr, &setup.rest_rotations[g].map(f64::from));
        let neg = wq.map(|c| -c);
        let e = max_abs_diff(&out.rotations[g], &wq).min(max_abs_diff(&out.rotations[g], &neg));
        assert!(
            e < tol,
            "Gaussian {g}: rotation {:?} vs ±{wq:?}",
            out.rotations[g]
        );
        let e = (0..3).fold(0.0f64, |m, i| m.max(max_abs_diff(&out.r[g][i], &r[i])));
        assert!(e < tol, "Gaussian {g}: R {:?} vs {r:?}", out.r[g]);
    }
}

#[test]
fn rigid_motions_of_the_drivers_move_the_gaussians_rigidly() {
    let mut rng = Rng(13);
    let drivers = deform_cases::lattice(3, 0.06, [0.5; 3], &mut rng);
    let setup = deform_cases::setup(drivers, 20, &mut rng);
    for (axis, angle) in [
        ([0.3, -1.0, 0.5], 0.8),
        ([1.0, 0.2, 0.1], 2.5),
        ([0.0, 0.0, 1.0], 0.0),
    ] {
        assert_rigid(&setup, &rotation(axis, angle), [0.05, -0.02, 0.03], 1e-12);
    }
    // Thin parts: coplanar drivers (R determined) move rigidly too.
    let mut flat = setup.clone();
    for p in &mut flat.rest_drivers {
        p[1] = 0.5;
    }
    assert_rigid(
        &flat,
        &rotation([0.3, -1.0, 0.5], 1.1),
        [0.01, 0.0, -0.04],
        1e-12,
    );
}

fn all_finite(v: &[Vec3]) -> bool {
    v.iter().flatten().all(|c| c.is_finite())
}

#[test]
fn degenerate_neighbourhoods_stay_finite() {
    let mut rng = Rng(14);
    let drivers = deform_cases::lattice(3, 0.06, [0.5; 3], &mut rng);
    let base = deform_cases::setup(drivers, 12, &mut rng);
    let n = base.driver_count();
    let r_true = rotation([0.2, 1.0, -0.4], 0.9);
    let moved = |s: &DeformSetup| -> Vec<Vec3> {
        s.rest_drivers
            .iter()
            .map(|p| {
                let c: Vec3 = to64(*p).map(|v| v - 0.5);
                let rp = mat_vec(&r_true, &c);
                std::array::from_fn(|a| 0.5 + rp[a] + 0.01)
            })
            .collect()
    };
    // (setup, current positions, what is checked).
    let mut line = base.clone();
    for (j, p) in line.rest_drivers.iter_mut().enumerate() {
        *p = [0.4 + 0.01 * j as f32, 0.5, 0.5];
    }
    let line_x = moved(&line);
    let mut point = base.clone();
    point.rest_drivers = vec![[0.5; 3]; n];
    let point_x = moved(&point);
    let generic_x = moved(&base);
    let collapsed_x = vec![[0.52, 0.47, 0.5]; n];
    let squashed_x: Vec<Vec3> = generic_x.iter().map(|p| [p[0], 0.5, 0.5]).collect();
    let cases: [(&str, &DeformSetup, &Vec<Vec3>); 4] = [
        ("collinear rest", &line, &line_x),
        ("rest at one point", &point, &point_x),
        ("current at one point", &base, &collapsed_x),
        ("current collinear", &base, &squashed_x),
    ];
    for (name, setup, x) in cases {
        let out = deform(setup, x);
        assert!(all_finite(&out.means), "{name}: {:?}", out.means);
        for (g, q) in out.rotations.iter().enumerate() {
            assert!(q.iter().all(|c| c.is_finite()), "{name}: {q:?}");
            // R stays a rotation.
            let r = &out.r[g];
            let rtr: [[f64; 3]; 3] = std::array::from_fn(|i| {
                std::array::from_fn(|j| (0..3).map(|k| r[k][i] * r[k][j]).sum())
            });
            for i in 0..3 {
                for j in 0..3 {
                    let want = if i == j { 1.0 } else { 0.0 };
                    assert!((rtr[i][j] - want).abs() < 1e-9, "{name}: RᵀR = {rtr:?}");
                }
            }
        }
        let w: Vec<Vec3> = (0..setup.len()).map(|_| rng.vec3()).collect();
        let u: Vec<Quat> = (0..setup.len()).map(|_| rng.quat()).collect();
        let grad = deform_adjoint(setup, x, &w, &u);
        assert!(all_finite(&grad), "{name}: {grad:?}");
        let largest = grad.iter().flatten().fold(0.0f64, |m, g| m.max(g.abs()));
        eprintln!("{name}: largest |∂L/∂x| {largest:.3e}");
    }
    // Collinear rest drivers: R still takes the line to its image.
    let out = deform(&line, &line_x);
    let axis = mat_vec(&out.r[0], &[1.0, 0.0, 0.0]);
    let want = mat_vec(&r_true, &[1.0, 0.0, 0.0]);
    assert!(max_abs_diff(&axis, &want) < 1e-9, "{axis:?} vs {want:?}");
    // Drivers at one point (rest or current): A = 0, R = I, and Gaussians
    // translate with the centroid.
    for (setup, x) in [(&point, &point_x), (&base, &collapsed_x)] {
        let out = deform(setup, x);
        for r in &out.r {
            assert_eq!(*r, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]);
        }
    }
}

#[test]
fn quaternion_helpers_agree_with_rotation_matrices() {
    let mut rng = Rng(15);
    // Every Shepperd branch: small angles (w), and near-π turns about
    // each axis (x, y, z largest).
    let mut rotations = vec![rotation([0.1, 0.2, 0.3], 0.3)];
    for axis in [[1.0, 0.1, -0.2], [0.1, 1.0, 0.2], [-0.2, 0.1, 1.0]] {
        rotations.push(rotation(axis, 3.0));
    }
    for _ in 0..20 {
        rotations.push(rotation(rng.vec3(), 3.1 * rng.uniform()));
    }
    for r in &rotations {
        let q = quat_from_rotation(r);
        assert!(q[0] >= 0.0);
        let back = rotation_from_quat(&q);
        for i in 0..3 {
            assert!(max_abs_diff(&back[i], &r[i]) < 1e-14, "{back:?} vs {r:?}");
        }
    }
    for _ in 0..20 {
        let (a, b) = (rng.quat(), rng.quat());
        let ab = rotation_from_quat(&quat_mul(&a, &b));
        let (ra, rb) = (rotation_from_quat(&a), rotation_from_quat(&b));
        for i in 0..3 {
            let row: Vec3 = std::array::from_fn(|j| (0..3).map(|k| ra[i][k] * rb[k][j]).sum());
            assert!(max_abs_diff(&ab[i], &row) < 1e-14);
        }
    }
    // The rigid fit of drivers turned by R recovers R and its quaternion.
    let rest: [Vec3; DRIVERS_PER_GAUSSIAN] = std::array::from_fn(|_| rng.vec3());
    let r = rotation([1.0, -2.0, 0.5], 1.3);
    let current = rest.map(|p| mat_vec(&r, &p));
    let fit = rigid_fit(&rest, &current);
    assert!(max_abs_diff(&fit.q, &quat_from_rotation(&r)) < 1e-13);
}

#[test]
fn setup_validation_names_the_problem() {
    let mut rng = Rng(16);
    let drivers = deform_cases::lattice(2, 0.1, [0.5; 3], &mut rng);
    let good = deform_cases::setup(drivers, 4, &mut rng);
    good.validate().unwrap();
    let mut s = good.clone();
    s.rest_centres.pop();
    let e = s.validate().unwrap_err();
    assert!(
        matches!(e, DeformError::Invalid(_)) && e.to_string().contains("rest_centres"),
        "{e}"
    );
    let mut s = good.clone();
    s.drivers[2][5] = 8;
    assert!(s.validate().unwrap_err().to_string().contains("Gaussian 2"));
    let mut s = good.clone();
    s.splat_index[3] = s.splat_index[0];
    assert!(s.validate().unwrap_err().to_string().contains("twice"));
    let mut s = good.clone();
    s.rest_rotations[1] = [0.0; 4];
    assert!(s.validate().unwrap_err().to_string().contains("non-zero"));
    let mut s = good.clone();
    s.rest_drivers[0][1] = f32::NAN;
    assert!(s.validate().unwrap_err().to_string().contains("driver 0"));
}

#[test]
fn driver_slots_list_every_slot_once_by_driver() {
    let mut rng = Rng(17);
    let drivers = deform_cases::lattice(3, 0.05, [0.5; 3], &mut rng);
    let mut setup = deform_cases::setup(drivers, 30, &mut rng);
    // A driver listed twice by one Gaussian has two slots.
    setup.drivers[0][7] = setup.drivers[0][0];
    let (offsets, entries) = setup.driver_slots();
    assert_eq!(offsets.len(), setup.driver_count() + 1);
    assert_eq!(*offsets.last().unwrap() as usize, entries.len());
    assert_eq!(entries.len(), setup.len() * DRIVERS_PER_GAUSSIAN);
    let mut seen = vec![false; entries.len()];
    for j in 0..setup.driver_count() {
        let slots = &entries[offsets[j] as usize..offsets[j + 1] as usize];
        assert!(slots.windows(2).all(|w| w[0] < w[1]), "in increasing order");
        for &e in slots {
            let (g, s) = (
                e as usize / DRIVERS_PER_GAUSSIAN,
                e as usize % DRIVERS_PER_GAUSSIAN,
            );
            assert_eq!(setup.drivers[g][s] as usize, j);
            assert!(!seen[e as usize]);
            seen[e as usize] = true;
        }
    }
    assert!(seen.iter().all(|s| *s));
}
