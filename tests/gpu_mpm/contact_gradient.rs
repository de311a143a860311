//! The gradient of a contact-driven drop against its f64 twin and the
//! twin's own finite differences: the opaque drop of
//! tests/gpu_mpm/poisson_fit.rs (216 splats, 64 drivers, grid 12, a sticky
//! plane, 5 frames in two 32² views) at log10 E 3.7, ν 0.3, full flow.
//! Finite differences of that scene's loss over usable steps are 10–12%
//! above its gradient; the twin splits the chain at the drivers'
//! positions to show where that comes from: the MPM (contact included) is
//! smooth and its adjoint exact, the renders' loss carries dense jumps
//! (docs/benchmarks.md, "Poisson's ratio fitted with E").

use crate::common;
use crate::common::slopes::{jump_robust_slope, richardson};
use crate::poisson_fit::{all, at, drop_scene, problem};
use crate::support::chain_twin;
use physfit::fit::{FitProblem, FitProblemOptions, GradientFlow};
use physfit::mpm_rules::collider::ContactRule;
use physfit::reference::chain::{
    chain_frame_seed, chain_frame_states, chain_gradient, chain_loss, ChainParams64, ChainProblem64,
};
use physfit::reference::mpm::rollout::frames_gradient;
use physfit::reference::mpm::MpmState64;
use physfit::scene::Scene;

/// The twin of `p` on `scene`: its drivers, the scene's MPM config (ν from
/// the scene: 0.3, the point of the check), splats, cameras and the
/// references read back from the frames on disk.
fn twin(scene: &Scene, p: &FitProblem) -> ChainProblem64 {
    let o = FitProblemOptions::from_scene(
        scene,
        &physfit::drive::DriverSet::from_scene(scene).unwrap(),
        &scene.fit.stiffness,
    )
    .unwrap();
    let frames = scene.views[0].frames.as_ref().unwrap().len() - 1;
    chain_twin(scene, p, &o, frames, 0.0)
}

/// Every driver at `log10` (the global E), at rest.
fn twin_params(n: usize, log10: f64) -> ChainParams64 {
    ChainParams64 {
        log10_youngs: vec![log10; n],
        velocity: vec![[0.0; 3]; n],
        velocity_gradient: Vec::new(),
    }
}

/// The twin's ∂L/∂log10 E at log10 E 3.7 split into the MPM's and the
/// renders' parts, each against differences of the twin alone.
#[derive(Debug)]
struct Split {
    /// The twin's gradient.
    adjoint: f64,
    /// Σ_k ⟨∂L/∂x_k, x_k(h)⟩ with the seeds held: the MPM alone
    /// (Richardson, h = 1e-3).
    mpm: f64,
    /// The loss at x_k(0) + h·ẋ_k (the MPM linearised): the renders alone,
    /// jump-robust over ±0.01, Richardson at 1e-5 and 1e-7.
    renders_wide: f64,
    renders_1e5: f64,
    renders_1e7: f64,
}

/// The twin's ∂L/∂log10 E at 3.7 (summed over the drivers) and the loss
/// along the MPM's linearisation there: `h ↦ Σ_k L_k(x_k(3.7) + h·ẋ_k)`
/// (ẋ_k by central differences of the f64 states, h = 1e-4).
fn renders_alone(chain: &ChainProblem64) -> (f64, impl Fn(f64) -> f64 + '_) {
    let n = chain.drivers();
    let adjoint: f64 = chain_gradient(chain, &twin_params(n, 3.7), GradientFlow::Full)
        .d_log10_youngs
        .iter()
        .sum();
    let states = |h: f64| chain_frame_states(chain, &twin_params(n, 3.7 + h));
    let at0 = states(0.0);
    let frames = chain.frames();
    let hd = 1e-4;
    let (up, down) = (states(hd), states(-hd));
    let tangent: Vec<Vec<[f64; 3]>> = (1..=frames)
        .map(|k| {
            up[k]
                .x
                .iter()
                .zip(&down[k].x)
                .map(|(a, b)| std::array::from_fn(|c| (a[c] - b[c]) / (2.0 * hd)))
                .collect()
        })
        .collect();
    let f = move |h: f64| {
        (1..=frames)
            .map(|k| {
                let x: Vec<[f64; 3]> = at0[k]
                    .x
                    .iter()
                    .zip(&tangent[k - 1])
                    .map(|(x, d)| std::array::from_fn(|c| x[c] + h * d[c]))
                    .collect();
                chain_frame_seed(chain, k, &x).0.iter().sum::<f64>()
            })
            .sum::<f64>()
    };
    (adjoint, f)
}

/// The MPM alone: differences (Richardson, h = `h`) of `Σ_k ⟨∂L/∂x_k,
/// x_k(3.7 + h)⟩`, the render seeds held at 3.7.
fn mpm_alone(chain: &ChainProblem64, h: f64) -> f64 {
    let n = chain.drivers();
    let states = |h: f64| chain_frame_states(chain, &twin_params(n, 3.7 + h));
    let at0 = states(0.0);
    let frames = chain.frames();
    let seeds: Vec<Vec<[f64; 3]>> = (1..=frames)
        .map(|k| chain_frame_seed(chain, k, &at0[k].x).1)
        .collect();
    let mpm_only = |h: f64| {
        let s = states(h);
        (1..=frames)
            .map(|k| {
                s[k].x
                    .iter()
                    .zip(&seeds[k - 1])
                    .map(|(x, d)| x[0] * d[0] + x[1] * d[1] + x[2] * d[2])
                    .sum::<f64>()
            })
            .sum::<f64>()
    };
    richardson(mpm_only, h)
}

fn split(chain: &ChainProblem64) -> Split {
    let (adjoint, render_only) = renders_alone(chain);
    Split {
        adjoint,
        mpm: mpm_alone(chain, 1e-3),
        renders_wide: jump_robust_slope(&render_only, 0.01, 32),
        renders_1e5: richardson(&render_only, 1e-5),
        renders_1e7: richardson(&render_only, 1e-7),
    }
}

fn yaw_camera(cam: &mut physfit::scene::Camera, angle: f32) {
    let turn = glam::Mat3::from_rotation_y(angle);
    cam.rotation = turn * cam.rotation;
    cam.translation = turn * cam.translation;
}

/// The cameras turned by `angle` (radians) about their own vertical axis,
/// centres kept: the front view no longer looks along the block's mirror
/// plane x = 0.125, nor the side view along y = 0.125.
fn yawed(chain: &ChainProblem64, angle: f32) -> ChainProblem64 {
    let mut c = chain.clone();
    for cam in &mut c.cameras {
        yaw_camera(cam, angle);
    }
    c
}

/// The gap that finite differences of the loss showed on this scene (the
/// jump-robust slope over ±0.01 in log10 E 12% above the gradient,
/// tests/gpu_mpm/poisson_fit.rs) is the renders', not the drop's
/// adjoint: the GPU gradient equals the twin's (0.18%); the MPM alone
/// (its frame states against the render seeds held fixed), contact
/// included, matches its differences to 3e-9; the renders alone (the
/// loss along the MPM's linearisation) match the gradient at steps below
/// the spacing of their jumps (h = 1e-7: 9e-8) and not above (1e-5: 6%,
/// ±0.01: 12%). With the cameras turned off the block's mirror planes
/// (no ties in depth between mirrored splats) the renders agree at 1e-5
/// too, but the ±0.01 slope is still 18% off: alpha-cutoff and depth-order
/// jumps remain, and the loss changes through them (docs/benchmarks.md,
/// "Poisson's ratio fitted with E"). The twin's MPM of the same drop onto a
/// slip and a friction plane (μ 0.3), and its ∂L/∂μ, match their
/// differences too.
#[test]
fn contact_drop_gradient_is_the_twins_and_its_gap_is_in_the_renders() {
    let ctx = common::gpu();
    let (_dir, scene) = drop_scene(&ctx);
    let mut p = problem(&ctx, &scene);
    let chain = twin(&scene, &p);
    let n = chain.drivers();
    let e = p
        .evaluate(&ctx, &at(3.7, 0.3), &all(), GradientFlow::Full)
        .unwrap();
    let gpu = f64::from(e.read(&ctx).unwrap().youngs[0]);
    let s = split(&chain);
    let wide = jump_robust_slope(
        |h| chain_loss(&chain, &twin_params(n, 3.7 + h)).total,
        0.01,
        32,
    );
    eprintln!(
        "∂/∂log10 E GPU {gpu:.6e}; {s:?}; the loss's jump-robust slope over ±0.01 {wide:.6e}"
    );
    eprintln!("the renders alone over ±0.01 {:.6e}", s.renders_wide);
    let rel = |a: f64| (a - s.adjoint).abs() / s.adjoint.abs();
    // Measured 1.8e-3 (f32 against f64 over 5 frames of contact).
    assert!(rel(gpu) <= 1e-2, "GPU {gpu} vs twin {}", s.adjoint);
    // Measured 3.3e-9.
    assert!(
        rel(s.mpm) <= 1e-6,
        "MPM alone: FD {} vs adjoint {}",
        s.mpm,
        s.adjoint
    );
    // Measured 9.2e-8.
    assert!(
        rel(s.renders_1e7) <= 1e-5,
        "renders alone, h 1e-7: FD {} vs adjoint {}",
        s.renders_1e7,
        s.adjoint
    );
    // Off the mirror planes the renders are smooth at 1e-5 too (measured
    // 4e-9) while the wide slope stays off.
    let turned = split(&yawed(&chain, 0.05));
    eprintln!(
        "cameras turned by 0.05 rad: {turned:?}; the renders alone over ±0.01 {:.6e}",
        turned.renders_wide
    );
    let rel = |a: f64| (a - turned.adjoint).abs() / turned.adjoint.abs();
    assert!(rel(turned.mpm) <= 1e-6, "turned, MPM alone: {turned:?}");
    assert!(
        rel(turned.renders_1e5) <= 1e-5,
        "turned, renders alone: {turned:?}"
    );
    // The same drop's MPM onto the plane with the other rules (the twin
    // only; the GPU's rules against the twin's: tests/gpu_mpm/colliders.rs).
    // Measured: slip 1e-10 at h 1e-3; friction (μ 0.3) 4.5e-6 at h 1e-3
    // (the window crosses a few nodes' stick/slide kinks) and 2e-7 at 1e-5.
    for (contact, limit) in [
        (ContactRule::Slip, [1e-6, 1e-6]),
        (ContactRule::Friction(0.3), [2e-5, 1e-6]),
    ] {
        let mut c = chain.clone();
        c.mpm.config.colliders[0].contact = contact;
        let n = c.drivers();
        let adjoint: f64 = chain_gradient(&c, &twin_params(n, 3.7), GradientFlow::Full)
            .d_log10_youngs
            .iter()
            .sum();
        for (h, limit) in [1e-3, 1e-5].into_iter().zip(limit) {
            let fd = mpm_alone(&c, h);
            let rel = (fd - adjoint).abs() / adjoint.abs();
            eprintln!(
                "{contact:?}: adjoint {adjoint:.9e}, MPM alone at h {h:.0e}: {fd:.9e} ({rel:.1e})"
            );
            assert!(rel <= limit, "{contact:?}, h {h:e}: {fd} vs {adjoint}");
        }
    }
    // ∂L/∂μ of the MPM alone at this scene's scale (μ 0.3; the GPU's
    // against the twin's and finite differences of a fit-scale drop:
    // tests/gpu_mpm/colliders.rs). Measured: 1.3e-3 at h 1e-3, 3.6e-4 at
    // 1e-5 (stick/slide switches of (node, substep) pairs lie ~1e-5 apart
    // in μ), 2.7e-7 at 1e-6 (1e-6 at 1e-7: f64 rounding).
    let mut c = chain.clone();
    c.mpm.config.colliders[0].contact = ContactRule::Friction(0.3);
    let params = twin_params(n, 3.7);
    let at0 = chain_frame_states(&c, &params);
    let frames = c.frames();
    let seeds: Vec<(usize, MpmState64)> = (1..=frames)
        .map(|k| {
            let mut seed = MpmState64::zeros(n);
            seed.x = chain_frame_seed(&c, k, &at0[k].x).1;
            (k, seed)
        })
        .collect();
    let initial = c.initial_state(&params);
    let d_mu = frames_gradient(
        &c.mpm,
        &initial,
        &c.youngs(&params),
        frames,
        &seeds,
        GradientFlow::Full,
    )
    .d_friction[0];
    let along_mu = |h: f64| {
        let mut m = c.clone();
        m.mpm.config.colliders[0].contact = ContactRule::Friction(0.3 + h);
        let s = chain_frame_states(&m, &params);
        seeds
            .iter()
            .map(|(k, seed)| {
                s[*k]
                    .x
                    .iter()
                    .zip(&seed.x)
                    .map(|(x, d)| x[0] * d[0] + x[1] * d[1] + x[2] * d[2])
                    .sum::<f64>()
            })
            .sum::<f64>()
    };
    for (h, limit) in [(1e-3, 1e-2), (1e-6, 1e-5)] {
        let fd = richardson(along_mu, h);
        let rel = (fd - d_mu).abs() / d_mu.abs();
        eprintln!("∂/∂μ: adjoint {d_mu:.9e}, MPM alone at h {h:.0e}: {fd:.9e} ({rel:.1e})");
        assert!(rel <= limit, "∂/∂μ, h {h:e}: {fd} vs {d_mu}");
    }
}

/// A measurement, not a check (11 minutes on the shared 2-core machine):
/// the jumps of the renders-alone loss over ±0.01 in log10 E at 2000
/// steps of 1e-5, counted where a step's slope is more than 50% off the
/// gradient. Measured: 97 jumps (95 of them down, the loss's own
/// direction), their sum −3.67e-3 against the smooth part's −1.28e-2
/// (median 1.4e-5, largest 2.2e-3); cameras turned by 0.05 rad: 131 (46
/// up), sum −5.5e-4 against −5.07e-3 (median 6e-6, largest 1.8e-4).
#[test]
#[ignore = "a measurement: 11 minutes on lavapipe"]
fn contact_drop_render_jump_census() {
    let ctx = common::gpu();
    let (_dir, scene) = drop_scene(&ctx);
    let p = problem(&ctx, &scene);
    let chain = twin(&scene, &p);
    for angle in [0.0, 0.05] {
        let c = yawed(&chain, angle);
        let (adjoint, render_only) = renders_alone(&c);
        let k = 2000;
        let w = 0.02 / k as f64;
        let v: Vec<f64> = (0..=k).map(|i| render_only(-0.01 + w * i as f64)).collect();
        let jumps: Vec<f64> = (0..k)
            .map(|i| v[i + 1] - v[i])
            .filter(|d| (d / w - adjoint).abs() > 0.5 * adjoint.abs())
            .map(|d| d - adjoint * w)
            .collect();
        let up = jumps.iter().filter(|j| **j > 0.0).count();
        let mut sizes: Vec<f64> = jumps.iter().map(|j| j.abs()).collect();
        sizes.sort_by(f64::total_cmp);
        eprintln!(
            "yaw {angle}: {} jumps ({up} up), sum {:.3e}; loss change {:.3e}, gradient·0.02 {:.3e}; median size {:.2e}, largest {:.2e}",
            jumps.len(),
            jumps.iter().sum::<f64>(),
            v[k] - v[0],
            adjoint * 0.02,
            sizes.get(sizes.len() / 2).copied().unwrap_or(0.0),
            sizes.last().copied().unwrap_or(0.0)
        );
    }
}
