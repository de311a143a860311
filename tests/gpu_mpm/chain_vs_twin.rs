//! The GPU chain against its f64 twin (docs/design.md § Verification 3 and 6):
//! the fit problem of tests/gpu_mpm/fit_problem.rs (288 splats, 32 K-Means
//! drivers, some anchored, two 32×32 views, 3 frames; reference PNGs
//! rendered by the problem's own forward at the "true" parameters) and
//! [`ChainProblem64`] built from exactly the same data: the problem's own
//! drivers (not a second K-Means), their volume and anchored flags, the
//! scene's MPM config, the deformation setup of those drivers, the scene's
//! splats, cameras and background, the references read back from the same
//! PNGs, the loss weights, TV over the driver graph with the same weight. Both evaluated at the same per-driver parameters away
//! from the truth, both flows; compared: the loss (total and per frame and
//! view) and ∂L/∂log10 E and ∂L/∂v0 per component, as a max relative error
//! with a stated floor.

use crate::common;
use crate::fit_problem::{all, fixture, options, start, FRAMES};
use crate::support::chain_twin;

use physfit::fit::{FitProblem, GradientFlow, Parameters};
use physfit::reference::chain::{chain_gradient, ChainGradient64, ChainParams64, ChainProblem64};
use physfit::scene::Scene;

/// The twin of `problem` on `scene` (module doc).
fn twin(scene: &Scene, problem: &FitProblem) -> ChainProblem64 {
    let o = options(scene);
    chain_twin(scene, problem, &o, FRAMES, o.tv_weight)
}

fn twin_params(p: &Parameters) -> ChainParams64 {
    ChainParams64 {
        log10_youngs: p.log10_youngs.clone(),
        velocity: p
            .velocity
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect(),
        velocity_gradient: Vec::new(),
    }
}

/// Max over components of `|gpu − twin| / max(|twin|, floor)`, floor =
/// `FLOOR · max|twin|`; also the component where it is reached.
fn max_relative(gpu: &[f32], twin: &[f64]) -> (f64, usize) {
    assert_eq!(gpu.len(), twin.len());
    let scale = twin.iter().fold(0.0f64, |a, b| a.max(b.abs()));
    let floor = FLOOR * scale;
    (0..gpu.len())
        .map(|i| {
            (
                (f64::from(gpu[i]) - twin[i]).abs() / twin[i].abs().max(floor),
                i,
            )
        })
        .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a })
}

/// Floor of the relative error's denominator, as a fraction of the largest
/// twin component of the same gradient.
const FLOOR: f64 = 1e-2;
const TOLERANCE: f64 = 1e-3;

fn compare(flow: GradientFlow) {
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let chain = twin(&scene, &p);
    let at = start(&p);
    let e = p.evaluate(&ctx, &at, &all(), flow).unwrap();
    let g = e.read(&ctx).unwrap();
    let t: ChainGradient64 = chain_gradient(&chain, &twin_params(&at), flow);
    let loss_rel = (e.report.loss - t.loss.total).abs() / t.loss.total;
    eprintln!(
        "{flow:?}: loss GPU {:.8e} twin {:.8e} (relative {loss_rel:.2e}); TV GPU {:.8e} twin {:.8e}",
        e.report.loss, t.loss.total, e.report.tv, t.loss.tv
    );
    for im in &e.report.images {
        let tw = t.loss.per_frame[im.frame - 1][im.view];
        eprintln!(
            "{flow:?}: frame {} view {}: GPU {:.8e} twin {:.8e} (relative {:.2e})",
            im.frame,
            im.view,
            im.terms.loss,
            tw,
            (f64::from(im.terms.loss) - tw).abs() / tw
        );
        assert!(
            (f64::from(im.terms.loss) - tw).abs() <= 1e-4 * tw,
            "{flow:?}: frame {} view {}",
            im.frame,
            im.view
        );
    }
    let tv: Vec<f64> = t.d_velocity.iter().flatten().copied().collect();
    let (err_e, ie) = max_relative(&g.youngs, &t.d_log10_youngs);
    let (err_v, iv) = max_relative(&g.velocity, &tv);
    for (i, (a, b)) in g.youngs.iter().zip(&t.d_log10_youngs).enumerate() {
        eprintln!("{flow:?}: dlog10E[{i}] GPU {a:+.6e} twin {b:+.6e}");
    }
    for (i, (a, b)) in g.velocity.iter().zip(&tv).enumerate() {
        eprintln!("{flow:?}: dv0[{i}] GPU {a:+.6e} twin {b:+.6e}");
    }
    eprintln!(
        "{flow:?}: max relative error (floor {FLOOR} of the largest): log10 E {err_e:.2e} at {ie}, v0 {err_v:.2e} at {iv}"
    );
    assert!(loss_rel <= 1e-4, "{flow:?}: loss {loss_rel:e}");
    assert!(err_e <= TOLERANCE, "{flow:?}: log10 E {err_e:e} at {ie}");
    assert!(err_v <= TOLERANCE, "{flow:?}: v0 {err_v:e} at {iv}");
}

#[test]
fn chain_vs_twin_full_flow() {
    compare(GradientFlow::Full);
}

#[test]
fn chain_vs_twin_truncated_flow() {
    compare(GradientFlow::Truncated);
}

/// The question tests/gpu_mpm/fit_problem.rs left open (its random
/// directions agree with FD of the GPU loss to 3–8% only, the v0 FD 4–10%
/// larger): bias of the GPU v0 gradient, or a loss that is not smooth at
/// the steps f32 allows? Along that test's smooth random directions, the
/// f64 twin's own central differences (no f32 noise) at shrinking steps.
/// Measured: at h = 1e-2 … 1e-4 (the GPU test uses 1e-3) even the f64 FD
/// scatters by percent (v0: −24% … +8%; truncated v0 up to 250%; log10 E
/// 1–4%), at h = 1e-5 and 1e-6 (Richardson) it settles on the twin's
/// gradient to ≤ 2e-5, which the GPU gradient equals to ≤ 2e-5: no bias;
/// the loss of this scene is discontinuous, with jumps spaced below 1e-4
/// along these directions (a dense scene: 288 splats of opacity 0.88),
/// which central differences at f32-usable steps straddle. (A scan of the
/// twin's loss along the v0 direction, 400 points over ±1e-3, found ~140
/// jumps of the slope, as many with L1 alone or SSIM alone: they are in the
/// render — alphas crossing the 1/255 cutoff or depth-order swaps — not the
/// L1 kink.)
#[test]
fn chain_vs_twin_gpu_gradient_is_the_limit_of_twin_differences() {
    use crate::common::slopes::richardson;
    use crate::fit_problem::smooth_direction;
    use physfit::reference::chain::{chain_frame_states, chain_loss, chain_loss_held};
    let ctx = common::gpu();
    let (_dir, scene) = fixture(&ctx);
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let chain = twin(&scene, &p);
    let at = start(&p);
    let rest = p.drivers().rest.clone();
    let n = rest.len();
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        let g = p
            .evaluate(&ctx, &at, &all(), flow)
            .unwrap()
            .read(&ctx)
            .unwrap();
        let base = twin_params(&at);
        let t = chain_gradient(&chain, &base, flow);
        let held = chain_frame_states(&chain, &base);
        let loss = |q: &ChainParams64| match flow {
            GradientFlow::Full => chain_loss(&chain, q).total,
            GradientFlow::Truncated => chain_loss_held(&chain, q, &held).total,
        };
        for (what, dim, seed) in [("log10 E", 1, 17), ("v0", 3, 23)] {
            let dir = smooth_direction(&rest, dim, seed);
            let shifted = |h: f64| {
                let mut q = base.clone();
                if dim == 1 {
                    for (a, d) in q.log10_youngs.iter_mut().zip(&dir) {
                        *a += h * d;
                    }
                } else {
                    for (i, v) in q.velocity.iter_mut().enumerate() {
                        for c in 0..3 {
                            v[c] += h * dir[3 * i + c];
                        }
                    }
                }
                q
            };
            let (gpu, tw) = if dim == 1 {
                (
                    g.youngs
                        .iter()
                        .zip(&dir)
                        .map(|(a, b)| f64::from(*a) * b)
                        .sum::<f64>(),
                    t.d_log10_youngs
                        .iter()
                        .zip(&dir)
                        .map(|(a, b)| a * b)
                        .sum::<f64>(),
                )
            } else {
                let flat: Vec<f64> = t.d_velocity.iter().flatten().copied().collect();
                (
                    g.velocity
                        .iter()
                        .zip(&dir)
                        .map(|(a, b)| f64::from(*a) * b)
                        .sum::<f64>(),
                    flat.iter().zip(&dir).map(|(a, b)| a * b).sum::<f64>(),
                )
            };
            eprintln!("{flow:?} {what}: GPU {gpu:.6e} twin {tw:.6e} ({n} drivers)");
            for h in [1e-2, 1e-3, 1e-4, 1e-5, 1e-6] {
                let plain = (loss(&shifted(h)) - loss(&shifted(-h))) / (2.0 * h);
                let rich = richardson(|s| loss(&shifted(s)), h);
                eprintln!(
                    "{flow:?} {what}: h {h:.0e}: twin FD {plain:.6e} ({:+.2e} of the twin), Richardson {rich:.6e} ({:+.2e}; GPU {:+.2e})",
                    plain / tw - 1.0,
                    rich / tw - 1.0,
                    gpu / rich - 1.0
                );
                if h <= 1e-5 {
                    let rel = (gpu - rich).abs() / rich.abs();
                    assert!(
                        rel <= TOLERANCE,
                        "{flow:?} {what} h {h:e}: GPU {gpu} vs twin FD {rich} ({rel:.2e})"
                    );
                }
            }
        }
    }
}
