//! The deformation of Gaussians on the GPU (src/deform): rigid motions of
//! the drivers move the Gaussians rigidly, the forward and the adjoint
//! equal the f64 twin per component, the adjoint adds into the state
//! gradient's `x` part and equals finite differences of a GPU loss, and
//! degenerate neighbourhoods (coplanar, collinear, all drivers at one
//! point) stay finite (docs/design.md § Drivers and the deformation of
//! Gaussians, § Verification 3).
#![allow(clippy::needless_range_loop)] // parallel per-driver arrays

use crate::common;
use crate::common::deform_cases::{self, mat_vec, rotation, to64, Rng};

use physfit::deform::{DeformError, DeformSetup, Deformation};
use physfit::gpu::{GpuBuffer, GpuContext};
use physfit::mpm::layout::STATE_STRIDE;
use physfit::mpm::ParticleState;
use physfit::reference::deform::{deform, deform_adjoint, quat_from_rotation, quat_mul, Quat};
use physfit::scene::Gaussians;
use physfit::splat::{SplatBuffers, SplatGradients};

type Vec3 = [f64; 3];

/// Splats for a setup: every splat (static ones too) with a distinct rest
/// mean and rotation; deformed splats start at their rest values.
fn splats(setup: &DeformSetup, rng: &mut Rng) -> Gaussians {
    let count = setup
        .splat_index
        .iter()
        .max()
        .map_or(0, |&i| i as usize + 2);
    let mut g = Gaussians::default();
    for _ in 0..count {
        g.means.push(rng.vec3().map(|c| c as f32));
        g.rotations.push(deform_cases::unit_quat_scaled(rng));
        g.log_scales.push([-3.0; 3]);
        g.opacity_logits.push(1.0);
        g.sh.push([0.3, 0.2, 0.1]);
    }
    for (i, &s) in setup.splat_index.iter().enumerate() {
        g.means[s as usize] = setup.sim_box.to_world(setup.rest_centres[i]);
        g.rotations[s as usize] = setup.rest_rotations[i];
    }
    g
}

fn state_buffer(ctx: &GpuContext, x: &[Vec3]) -> GpuBuffer {
    let x32: Vec<[f32; 3]> = x.iter().map(|p| p.map(|c| c as f32)).collect();
    let state = ParticleState::at_rest(x32, vec![[0.0; 3]; x.len()]);
    ctx.storage_from_slice("deform test state", &state.to_packed())
        .unwrap()
}

/// Positions as the GPU sees them (rounded to f32), for the twin.
fn rounded(x: &[Vec3]) -> Vec<Vec3> {
    x.iter().map(|p| p.map(|c| c as f32 as f64)).collect()
}

/// GPU forward: the whole splat means and rotations after the deformation.
fn forward(
    ctx: &GpuContext,
    deformation: &Deformation,
    splats: &SplatBuffers,
    x: &[Vec3],
) -> (Vec<[f32; 3]>, Vec<[f32; 4]>) {
    let state = state_buffer(ctx, x);
    let mut encoder = physfit::gpu::encoder(ctx, "deform test forward");
    deformation
        .encode_forward(ctx, &mut encoder, &state, splats)
        .unwrap();
    ctx.queue.submit([encoder.finish()]);
    (
        ctx.read_buffer(&splats.means).unwrap(),
        ctx.read_buffer(&splats.rotations).unwrap(),
    )
}

/// GPU adjoint: per-splat gradients in, the state gradient (prefilled with
/// `prefill`) out.
fn backward(
    ctx: &GpuContext,
    deformation: &Deformation,
    x: &[Vec3],
    grad_means: &[[f32; 3]],
    grad_rotations: &[[f32; 4]],
    prefill: &[f32],
) -> Vec<f32> {
    let state = state_buffer(ctx, x);
    let grads = SplatGradients::zeroed(ctx, grad_means.len() as u32, 1).unwrap();
    ctx.write(&grads.means, grad_means);
    ctx.write(&grads.rotations, grad_rotations);
    let state_grad = ctx
        .storage_from_slice("deform test state gradient", prefill)
        .unwrap();
    let mut encoder = physfit::gpu::encoder(ctx, "deform test backward");
    deformation
        .encode_backward(ctx, &mut encoder, &state, &grads, &state_grad)
        .unwrap();
    ctx.queue.submit([encoder.finish()]);
    ctx.read_buffer(&state_grad).unwrap()
}

/// Max over components of `|gpu − twin| / max(|twin|, floor·max|twin|)`
/// and where it is.
fn max_relative(gpu: &[f64], twin: &[f64], floor: f64) -> (f64, usize) {
    assert_eq!(gpu.len(), twin.len());
    let scale = twin.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    gpu.iter()
        .zip(twin)
        .enumerate()
        .map(|(i, (g, t))| ((g - t).abs() / t.abs().max(floor * scale), i))
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

/// The relative floor of [`max_relative`]: components below a thousandth
/// of the largest are compared at that level.
const FLOOR: f64 = 1e-3;

/// A random non-rigid case: 5³ drivers of spacing 0.04, 400 Gaussians.
fn random_case(seed: u64) -> (DeformSetup, Vec<Vec3>, Rng) {
    let mut rng = Rng(seed);
    let drivers = deform_cases::lattice(5, 0.04, [0.5, 0.45, 0.55], &mut rng);
    let setup = deform_cases::setup(drivers, 400, &mut rng);
    let x = deform_cases::deformed(
        &setup.rest_drivers,
        [0.5, 0.45, 0.55],
        0.6,
        0.15,
        0.003,
        &mut rng,
    );
    (setup, rounded(&x), rng)
}

#[test]
fn deform_rigid_motions_move_the_gaussians_rigidly() {
    let ctx = common::gpu();
    let mut rng = Rng(21);
    let drivers = deform_cases::lattice(4, 0.05, [0.5; 3], &mut rng);
    let base = deform_cases::setup(drivers, 300, &mut rng);
    let mut flat = base.clone();
    for p in &mut flat.rest_drivers {
        p[2] = 0.5;
    }
    let mut worst_centre = 0.0f64;
    let mut worst_rotation = 0.0f64;
    for (setup, name) in [(&base, "generic"), (&flat, "coplanar")] {
        let gaussians = splats(setup, &mut rng);
        let buffers = SplatBuffers::upload(&ctx, &gaussians).unwrap();
        let deformation = Deformation::new(&ctx, setup).unwrap();
        for (axis, angle) in [
            ([0.3, -1.0, 0.5], 0.8),
            ([1.0, 0.2, 0.1], 2.5),
            ([0.0, 0.0, 1.0], 0.0),
        ] {
            let r = rotation(axis, angle);
            let t = [0.05, -0.02, 0.03];
            let x: Vec<Vec3> = setup
                .rest_drivers
                .iter()
                .map(|p| {
                    let c = to64(*p).map(|v| v - 0.5);
                    let rp = mat_vec(&r, &c);
                    std::array::from_fn(|a| 0.5 + rp[a] + t[a])
                })
                .collect();
            let (means, rotations) = forward(&ctx, &deformation, &buffers, &x);
            let b = &setup.sim_box;
            let qr = quat_from_rotation(&r);
            for (i, &s) in setup.splat_index.iter().enumerate() {
                let c = to64(setup.rest_centres[i]).map(|v| v - 0.5);
                let rc = mat_vec(&r, &c);
                for a in 0..3 {
                    let want = b.min[a] + b.side * (0.5 + rc[a] + t[a]);
                    worst_centre = worst_centre.max((means[s as usize][a] as f64 - want).abs());
                }
                let want = quat_mul(&qr, &setup.rest_rotations[i].map(f64::from));
                let got = rotations[s as usize].map(f64::from);
                let e =
                    |sign: f64| (0..4).fold(0.0f64, |m, a| m.max((got[a] - sign * want[a]).abs()));
                worst_rotation = worst_rotation.max(e(1.0).min(e(-1.0)));
            }
            // Static splats are not written.
            for s in (0..gaussians.len()).step_by(2) {
                assert_eq!(
                    means[s], gaussians.means[s],
                    "{name}: static splat {s} moved"
                );
                assert_eq!(rotations[s], gaussians.rotations[s]);
            }
        }
    }
    // World coordinates up to ~3.5 (f32 spacing 2.4e-7 to 4.8e-7): measured
    // 3.6e-7 on lavapipe for centres, 4.0e-7 for rotations, i.e. f32
    // rounding; the bound leaves room for another adapter's FMA choices.
    eprintln!(
        "rigid motions: centres within {worst_centre:.2e} world units, rotations within \
         {worst_rotation:.2e}"
    );
    assert!(worst_centre < 1e-6, "{worst_centre:e}");
    assert!(worst_rotation < 1e-6, "{worst_rotation:e}");
}

#[test]
fn deform_forward_matches_the_twin() {
    let ctx = common::gpu();
    let (setup, x, mut rng) = random_case(22);
    let gaussians = splats(&setup, &mut rng);
    let buffers = SplatBuffers::upload(&ctx, &gaussians).unwrap();
    let deformation = Deformation::new(&ctx, &setup).unwrap();
    let (means, rotations) = forward(&ctx, &deformation, &buffers, &x);
    let twin = deform(&setup, &x);
    // Centres: absolute error over the box side (world coordinates pass
    // through 0, where a relative error means nothing); rotations: error
    // over the quaternion's norm.
    let side = setup.sim_box.side;
    let mut em = 0.0f64;
    let mut eq = 0.0f64;
    for (i, &s) in setup.splat_index.iter().enumerate() {
        let (m, q) = (means[s as usize], rotations[s as usize]);
        for a in 0..3 {
            em = em.max((m[a] as f64 - twin.means[i][a]).abs() / side);
        }
        let norm = twin.rotations[i].iter().map(|c| c * c).sum::<f64>().sqrt();
        for a in 0..4 {
            eq = eq.max((q[a] as f64 - twin.rotations[i][a]).abs() / norm);
        }
    }
    eprintln!("forward vs twin: centres {em:.2e} of the box side, rotations {eq:.2e} of |q|");
    assert!(em < 1e-6, "centres: {em:e}");
    assert!(eq < 1e-5, "rotations: {eq:e}");
}

/// Random per-splat gradients (static splats too: they must be ignored).
fn random_gradients(n: usize, rng: &mut Rng) -> (Vec<[f32; 3]>, Vec<[f32; 4]>) {
    (
        (0..n).map(|_| rng.vec3().map(|c| c as f32)).collect(),
        (0..n).map(|_| rng.quat().map(|c| c as f32)).collect(),
    )
}

/// The twin's gradient for per-splat gradients (deformed splats only).
fn twin_gradient(setup: &DeformSetup, x: &[Vec3], gm: &[[f32; 3]], gq: &[[f32; 4]]) -> Vec<Vec3> {
    let gm64: Vec<Vec3> = setup
        .splat_index
        .iter()
        .map(|&s| gm[s as usize].map(f64::from))
        .collect();
    let gq64: Vec<Quat> = setup
        .splat_index
        .iter()
        .map(|&s| gq[s as usize].map(f64::from))
        .collect();
    deform_adjoint(setup, x, &gm64, &gq64)
}

#[test]
fn deform_adjoint_matches_the_twin_and_adds_into_the_state_gradient() {
    let ctx = common::gpu();
    let (setup, x, mut rng) = random_case(23);
    let deformation = Deformation::new(&ctx, &setup).unwrap();
    let splat_count = setup.splat_index.iter().max().unwrap() + 2;
    let (gm, gq) = random_gradients(splat_count as usize, &mut rng);
    let prefill: Vec<f32> = (0..setup.driver_count() * STATE_STRIDE)
        .map(|_| rng.uniform() as f32)
        .collect();
    let out = backward(&ctx, &deformation, &x, &gm, &gq, &prefill);
    let twin = twin_gradient(&setup, &x, &gm, &gq);
    let mut gpu = Vec::new();
    let mut want = Vec::new();
    for j in 0..setup.driver_count() {
        for a in 0..3 {
            let k = j * STATE_STRIDE + a;
            gpu.push(out[k] as f64 - prefill[k] as f64);
            want.push(twin[j][a]);
        }
        // v, C, F of the gradient are kept bit for bit.
        for a in 3..STATE_STRIDE {
            let k = j * STATE_STRIDE + a;
            assert_eq!(
                out[k].to_bits(),
                prefill[k].to_bits(),
                "driver {j}, float {a}"
            );
        }
    }
    // Per component against the twin. The worst components are drivers
    // whose ~25 contributions cancel to a small sum: their absolute error
    // is the f32 rounding of the sum, ~1e-7 of the largest component.
    for (floor, bound) in [(1e-2, 1e-4), (FLOOR, 5e-4)] {
        let (e, i) = max_relative(&gpu, &want, floor);
        eprintln!(
            "adjoint vs twin, floor {floor:e}: {e:.2e} (at {i}: gpu {:.6e}, twin {:.6e})",
            gpu[i], want[i]
        );
        assert!(e < bound, "floor {floor:e}: {e:e} at {i}");
    }
    // A second backward into the result adds the same again (up to the
    // rounding of the sums).
    let twice = backward(&ctx, &deformation, &x, &gm, &gq, &out);
    let scale = want.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    for j in 0..setup.driver_count() {
        for a in 0..3 {
            let k = j * STATE_STRIDE + a;
            let added = twice[k] as f64 - prefill[k] as f64;
            assert!((added - 2.0 * gpu[3 * j + a]).abs() < 1e-5 * scale.max(1.0));
        }
    }
}

/// `L = Σ ⟨W, means⟩ + ⟨U, q/|q|⟩` over the deformed splats, from the GPU's
/// f32 outputs, in f64; and its gradients w.r.t. the raw outputs.
fn gpu_loss(
    setup: &DeformSetup,
    means: &[[f32; 3]],
    rotations: &[[f32; 4]],
    w: &[Vec3],
    u: &[Quat],
) -> (f64, Vec<[f32; 3]>, Vec<[f32; 4]>) {
    let mut l = 0.0;
    let mut gm = vec![[0.0f32; 3]; means.len()];
    let mut gq = vec![[0.0f32; 4]; means.len()];
    for (i, &s) in setup.splat_index.iter().enumerate() {
        let s = s as usize;
        let m = means[s].map(f64::from);
        let q = rotations[s].map(f64::from);
        let norm = q.iter().map(|c| c * c).sum::<f64>().sqrt();
        let n = q.map(|c| c / norm);
        let un: f64 = (0..4).map(|a| u[i][a] * n[a]).sum();
        l += (0..3).map(|a| w[i][a] * m[a]).sum::<f64>() + un;
        gm[s] = w[i].map(|c| c as f32);
        gq[s] = std::array::from_fn(|a| ((u[i][a] - un * n[a]) / norm) as f32);
    }
    (l, gm, gq)
}

#[test]
fn deform_gpu_gradient_matches_finite_differences_of_the_gpu_loss() {
    let ctx = common::gpu();
    let (setup, x, mut rng) = random_case(24);
    let gaussians = splats(&setup, &mut rng);
    let buffers = SplatBuffers::upload(&ctx, &gaussians).unwrap();
    let deformation = Deformation::new(&ctx, &setup).unwrap();
    let w: Vec<Vec3> = (0..setup.len()).map(|_| rng.vec3()).collect();
    let u: Vec<Quat> = (0..setup.len()).map(|_| rng.quat()).collect();
    let (means, rotations) = forward(&ctx, &deformation, &buffers, &x);
    let (_, gm, gq) = gpu_loss(&setup, &means, &rotations, &w, &u);
    let zeros = vec![0.0f32; setup.driver_count() * STATE_STRIDE];
    let grad = backward(&ctx, &deformation, &x, &gm, &gq, &zeros);
    let loss_at = |x: &[Vec3]| {
        let (m, r) = forward(&ctx, &deformation, &buffers, x);
        gpu_loss(&setup, &m, &r, &w, &u).0
    };
    // Random directions, then the three largest gradient components.
    let mut directions: Vec<Vec<Vec3>> = (0..4)
        .map(|_| (0..x.len()).map(|_| rng.vec3()).collect())
        .collect();
    let mut order: Vec<usize> = (0..x.len() * 3).collect();
    order.sort_by(|&a, &b| {
        let g = |k: usize| grad[(k / 3) * STATE_STRIDE + k % 3].abs();
        g(b).partial_cmp(&g(a)).unwrap()
    });
    for &k in &order[..3] {
        let mut d = vec![[0.0; 3]; x.len()];
        d[k / 3][k % 3] = 1.0;
        directions.push(d);
    }
    let h = 1e-3;
    let mut worst = 0.0f64;
    for (n, d) in directions.iter().enumerate() {
        let step = |sign: f64| -> Vec<Vec3> {
            x.iter()
                .zip(d)
                .map(|(p, v)| std::array::from_fn(|a| p[a] + sign * h * v[a]))
                .collect()
        };
        let fd = (loss_at(&step(1.0)) - loss_at(&step(-1.0))) / (2.0 * h);
        let ad: f64 = (0..x.len())
            .map(|j| {
                (0..3)
                    .map(|a| grad[j * STATE_STRIDE + a] as f64 * d[j][a])
                    .sum::<f64>()
            })
            .sum();
        let e = (fd - ad).abs() / ad.abs();
        eprintln!("direction {n}: fd {fd:.6e}, adjoint {ad:.6e}, relative {e:.2e}");
        worst = worst.max(e);
    }
    assert!(worst < 1e-2, "{worst:e}");
}

#[test]
fn deform_degenerate_neighbourhoods_stay_finite_on_the_gpu() {
    let ctx = common::gpu();
    let mut rng = Rng(25);
    let drivers = deform_cases::lattice(3, 0.06, [0.5; 3], &mut rng);
    let base = deform_cases::setup(drivers, 60, &mut rng);
    let n = base.driver_count();
    let r_true = rotation([0.2, 1.0, -0.4], 0.9);
    let moved = |s: &DeformSetup| -> Vec<Vec3> {
        let x: Vec<Vec3> = s
            .rest_drivers
            .iter()
            .map(|p| {
                let c = to64(*p).map(|v| v - 0.5);
                let rp = mat_vec(&r_true, &c);
                std::array::from_fn(|a| 0.5 + rp[a] + 0.01)
            })
            .collect();
        rounded(&x)
    };
    let mut plane = base.clone();
    for p in &mut plane.rest_drivers {
        p[0] = 0.5;
    }
    let mut line = base.clone();
    for (j, p) in line.rest_drivers.iter_mut().enumerate() {
        *p = [0.4 + 0.01 * j as f32, 0.5, 0.5];
    }
    let mut point = base.clone();
    point.rest_drivers = vec![[0.5; 3]; n];
    let generic_x = moved(&base);
    let cases: Vec<(&str, &DeformSetup, Vec<Vec3>)> = vec![
        ("coplanar rest", &plane, moved(&plane)),
        ("collinear rest", &line, moved(&line)),
        ("rest at one point", &point, moved(&point)),
        ("current at one point", &base, vec![[0.52, 0.47, 0.5]; n]),
        (
            "current coplanar",
            &base,
            generic_x.iter().map(|p| [p[0], p[1], 0.5]).collect(),
        ),
        (
            "current collinear",
            &base,
            generic_x.iter().map(|p| [p[0], 0.5, 0.5]).collect(),
        ),
    ];
    for (name, setup, x) in &cases {
        let gaussians = splats(setup, &mut rng);
        let buffers = SplatBuffers::upload(&ctx, &gaussians).unwrap();
        let deformation = Deformation::new(&ctx, setup).unwrap();
        let (means, rotations) = forward(&ctx, &deformation, &buffers, x);
        assert!(means.iter().flatten().all(|c| c.is_finite()), "{name}");
        assert!(rotations.iter().flatten().all(|c| c.is_finite()), "{name}");
        let (gm, gq) = random_gradients(gaussians.len(), &mut rng);
        let zeros = vec![0.0f32; n * STATE_STRIDE];
        let grad = backward(&ctx, &deformation, x, &gm, &gq, &zeros);
        assert!(grad.iter().all(|c| c.is_finite()), "{name}: {grad:?}");
        let largest = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
        let twin = twin_gradient(setup, x, &gm, &gq);
        let twin_largest = twin.iter().flatten().fold(0.0f64, |m, g| m.max(g.abs()));
        eprintln!("{name}: largest |∂L/∂x| gpu {largest:.3e}, twin {twin_largest:.3e}");
        // Rotations keep their norms (R stays a rotation).
        for (i, &s) in setup.splat_index.iter().enumerate() {
            let norm = |q: &[f32; 4]| q.iter().map(|c| (*c as f64).powi(2)).sum::<f64>().sqrt();
            let (a, b) = (norm(&rotations[s as usize]), norm(&setup.rest_rotations[i]));
            assert!((a - b).abs() < 1e-5 * b, "{name}: |q'| {a} vs |q| {b}");
        }
        match *name {
            // R is determined: the GPU equals the twin, forward and adjoint.
            "coplanar rest" | "current coplanar" => {
                let t = deform(setup, x);
                for (i, &s) in setup.splat_index.iter().enumerate() {
                    for a in 0..3 {
                        let d = (means[s as usize][a] as f64 - t.means[i][a]).abs();
                        assert!(d < 1e-5, "{name}: Gaussian {i}: {d:e}");
                    }
                }
                let gpu: Vec<f64> = (0..n)
                    .flat_map(|j| (0..3).map(move |a| (j, a)))
                    .map(|(j, a)| grad[j * STATE_STRIDE + a] as f64)
                    .collect();
                let want: Vec<f64> = twin.iter().flatten().copied().collect();
                let (e, i) = max_relative(&gpu, &want, FLOOR);
                eprintln!("{name}: adjoint vs twin {e:.2e} (at {i})");
                assert!(e < 1e-3, "{name}: {e:e} at {i}");
            }
            // The line's direction goes where the motion takes it.
            "collinear rest" => {
                let q = rotations[setup.splat_index[0] as usize].map(f64::from);
                let rest = setup.rest_rotations[0].map(f64::from);
                // q' ⊗ q_g⁻¹ is R's quaternion (up to |q_g|²).
                let inv = [rest[0], -rest[1], -rest[2], -rest[3]];
                let qr = quat_mul(&q, &inv);
                let r = physfit::reference::deform::rotation_from_quat(&qr);
                let axis = mat_vec(&r, &[1.0, 0.0, 0.0]);
                let want = mat_vec(&r_true, &[1.0, 0.0, 0.0]);
                for a in 0..3 {
                    assert!((axis[a] - want[a]).abs() < 1e-4, "{axis:?} vs {want:?}");
                }
            }
            // A = 0: R = I, rotations exactly at rest, a pure translation.
            "rest at one point" | "current at one point" => {
                for (i, &s) in setup.splat_index.iter().enumerate() {
                    assert_eq!(rotations[s as usize], setup.rest_rotations[i], "{name}");
                }
            }
            _ => {}
        }
    }
}

#[test]
fn deform_refuses_buffers_of_another_setup() {
    let ctx = common::gpu();
    let (setup, x, mut rng) = random_case(26);
    let deformation = Deformation::new(&ctx, &setup).unwrap();
    let mut gaussians = splats(&setup, &mut rng);
    let state = state_buffer(&ctx, &x);
    let short = ctx
        .storage_zeroed::<f32>("short state", STATE_STRIDE)
        .unwrap();
    let buffers = SplatBuffers::upload(&ctx, &gaussians).unwrap();
    let mut encoder = physfit::gpu::encoder(&ctx, "deform test refusals");
    let e = deformation
        .encode_forward(&ctx, &mut encoder, &short, &buffers)
        .unwrap_err();
    assert!(
        matches!(e, DeformError::Mismatch(_)) && e.to_string().contains("short state"),
        "{e}"
    );
    let count = 10;
    gaussians.means.truncate(count);
    gaussians.rotations.truncate(count);
    gaussians.log_scales.truncate(count);
    gaussians.opacity_logits.truncate(count);
    gaussians.sh.truncate(count);
    let few = SplatBuffers::upload(&ctx, &gaussians).unwrap();
    let e = deformation
        .encode_forward(&ctx, &mut encoder, &state, &few)
        .unwrap_err();
    assert!(e.to_string().contains("10 splats"), "{e}");
    let grads = SplatGradients::zeroed(&ctx, 10, 1).unwrap();
    let grad = ctx
        .storage_zeroed::<f32>("grad", setup.driver_count() * STATE_STRIDE)
        .unwrap();
    let e = deformation
        .encode_backward(&ctx, &mut encoder, &state, &grads, &grad)
        .unwrap_err();
    assert!(e.to_string().contains("10 splats"), "{e}");
    let grads = SplatGradients::zeroed(&ctx, buffers.count, 1).unwrap();
    let e = deformation
        .encode_backward(&ctx, &mut encoder, &state, &grads, &short)
        .unwrap_err();
    assert!(e.to_string().contains("state gradient"), "{e}");
    // An invalid setup is refused before anything is uploaded.
    let mut bad = setup.clone();
    bad.drivers[0][0] = setup.driver_count() as u32;
    assert!(matches!(
        Deformation::new(&ctx, &bad),
        Err(DeformError::Invalid(_))
    ));
}
