//! A view's colour correction in the fit problem (src/fit/problem.rs), on the
//! tiny two-view scene of fit_problem.rs whose "front" frames were recorded
//! through a known correction: with the view declaring it, the truth's loss
//! is 8-bit rounding only in both views; without it, the front view misses
//! by far and the side view scores as before; the gradient through the
//! correction (front) and without one (side) against finite differences of
//! the GPU loss; the camera check's picture shows the corrected render.

use physfit::fit::{FitProblem, GradientFlow};
use physfit::scene::ColorCorrection;

use crate::common;
use crate::fit_problem::{
    all, check_flow_with, fixture_recorded, options, start_of, true_params, Kind, Random, FRAMES,
};

/// Within (0, 1) for every render of the test scenes (colours 0.5 ± 0.3 on
/// a black background): no value is clamped, so the loss stays smooth for
/// the finite differences and a missing backward (gradient off by the
/// gain) cannot pass.
const RECORDED: ColorCorrection = ColorCorrection {
    gain: [0.8, 0.9, 0.7],
    offset: [0.1, 0.05, 0.2],
};

#[test]
fn the_truth_matches_frames_recorded_through_a_correction_only_with_it() {
    let ctx = common::gpu();
    let (_d1, declared) = fixture_recorded(&ctx, Kind::Dense, RECORDED, Some(RECORDED));
    let (_d2, undeclared) = fixture_recorded(&ctx, Kind::Dense, RECORDED, None);
    assert_eq!(declared.views[0].color_correction, RECORDED);
    assert!(declared.views[1].color_correction.is_identity());
    assert!(undeclared.views[0].color_correction.is_identity());
    let mut with = FitProblem::new(&ctx, &declared, &options(&declared)).unwrap();
    let mut without = FitProblem::new(&ctx, &undeclared, &options(&undeclared)).unwrap();
    let truth = true_params(&with);
    let a = with.loss(&ctx, &truth, &all()).unwrap();
    let b = without.loss(&ctx, &truth, &all()).unwrap();
    assert_eq!(a.images.len(), 2 * FRAMES);
    for (t, u) in a.images.iter().zip(&b.images) {
        eprintln!(
            "frame {} view {}: PSNR {:.1} dB with the correction, {:.1} dB without",
            t.frame,
            t.view,
            t.terms.psnr(),
            u.terms.psnr()
        );
        // Rounding to 8 bits moves a channel by at most 0.5/255.
        assert!(t.terms.l1 <= 0.5 / 255.0 + 1e-6, "{t:?}");
        assert!(t.terms.dssim <= 1e-3, "{t:?}");
        if t.view == 0 {
            assert!(u.terms.psnr() < t.terms.psnr() - 20.0, "{u:?} vs {t:?}");
        } else {
            // The side view has no correction in either scene: the same
            // loss, to the run-to-run noise of the simulation's float
            // atomics (two problems, two rollouts; measured 1.7e-6).
            for (a, b) in [
                (t.terms.loss, u.terms.loss),
                (t.terms.l1, u.terms.l1),
                (t.terms.dssim, u.terms.dssim),
                (t.terms.mse, u.terms.mse),
            ] {
                assert!(
                    (a - b).abs() <= 1e-4 * a.abs().max(b.abs()),
                    "{t:?} vs {u:?}"
                );
            }
        }
    }

    // The picture beside the video carries the correction; synth's plain
    // render does not.
    let rest = with.forward_states(&ctx, &truth, 0).unwrap();
    let plain = with.render_state(&ctx, &rest.frames[0], 0).unwrap();
    let seen = with
        .render_state_corrected(&ctx, &rest.frames[0], 0)
        .unwrap();
    assert_eq!(seen, RECORDED.apply_to_frame(plain.clone()));
    assert_ne!(seen, plain);
    let side = with
        .render_state_corrected(&ctx, &rest.frames[0], 1)
        .unwrap();
    assert_eq!(side, with.render_state(&ctx, &rest.frames[0], 1).unwrap());
}

#[test]
fn the_gradient_through_a_view_s_correction_matches_finite_differences() {
    let ctx = common::gpu();
    let (_dir, scene) = fixture_recorded(&ctx, Kind::Smooth, RECORDED, Some(RECORDED));
    let mut p = FitProblem::new(&ctx, &scene, &options(&scene)).unwrap();
    let at = start_of(&p, Kind::Smooth);
    // Both views: the front one through the correction, the side one not.
    let sel = all();
    // The smooth scene's checks, but for its random v0 direction: the
    // gains below 1 shrink the front view's slope against the loss's
    // isolated jumps, and the jump-robust slope lands 1.45e-2 off there
    // (lavapipe; 5.1e-3 without the correction). A fit problem that
    // skipped the correction's backward (passing ∂L/∂corrected on as
    // ∂L/∂render) missed the random log10 E check by 6.0e-2.
    let mut random = Random::of(Kind::Smooth);
    random.velocity_tolerance = 3e-2;
    check_flow_with(&ctx, &mut p, &at, GradientFlow::Full, random, |p, x| {
        p.loss(&ctx, x, &sel).unwrap().loss
    });
}
