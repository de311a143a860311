//! A fit problem built from scene settings: `field = "regions"`
//! read from scene.toml evaluates what the equivalent hand-built fields
//! evaluate, and [`FitProblem::set_stage`] switches one problem's weights
//! between the stages as the settings say. On fit_problem.rs's dense
//! scene (32 drivers, two 32×32 views, 3 frames).

use crate::common;
use crate::fit_problem::{all, fixture, start};

use physfit::drive::DriverSet;
use physfit::fit::{
    FitError, FitProblem, FitProblemOptions, GradientFlow, HostGradients, Parameters,
    VelocityField, YoungsField,
};
use physfit::gpu::GpuContext;
use physfit::scene::{Scene, UNCOVERED_REGION};

/// `scene` with `settings` appended (a copy beside it, so its relative
/// paths still hold).
fn with_settings(scene: &Scene, settings: &str) -> Scene {
    let text = std::fs::read_to_string(&scene.path).unwrap();
    let path = scene.path.with_file_name("settings.toml");
    std::fs::write(&path, format!("{text}\n{settings}")).unwrap();
    Scene::load(&path).unwrap()
}

/// Asserts two gradients agree to the run-to-run noise of GPU atomics
/// (as fit_problem.rs's low-dimensional test: 1e-4 of the largest).
fn assert_same_gradients(what: &str, a: &HostGradients, b: &HostGradients) {
    for (part, x, y) in [
        ("log10 E", &a.youngs, &b.youngs),
        ("v0", &a.velocity, &b.velocity),
    ] {
        assert_eq!(x.len(), y.len(), "{what}: {part}");
        let scale = y.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        assert!(scale > 0.0, "{what}: {part} gradient is zero");
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            assert!(
                (p - q).abs() <= 1e-4 * scale,
                "{what}: {part}[{i}]: {p} vs {q}"
            );
        }
    }
}

fn gradients(ctx: &GpuContext, p: &mut FitProblem, at: &Parameters) -> (f64, HostGradients) {
    let e = p.evaluate(ctx, at, &all(), GradientFlow::Full).unwrap();
    (e.report.loss, e.read(ctx).unwrap())
}

/// Regions read from scene.toml: E in "top" (z ≥ 0.3), "front" (y ≤ 0.2)
/// and the rest, v0 in "top" and the rest (first region wins), against
/// the same assignment written out by hand.
#[test]
fn regions_from_the_scene_evaluate_as_the_hand_built_fields() {
    let ctx = common::gpu();
    let (_dir, plain) = fixture(&ctx);
    let top = "top = [{ min = [-1.0, -1.0, 0.3], max = [1.0, 1.0, 1.0] }]";
    let front = "front = [{ min = [-1.0, -1.0, -1.0], max = [1.0, 0.2, 1.0] }]";
    let scene = with_settings(
        &plain,
        &format!(
            "[fit.stiffness]\nfield = \"regions\"\n[fit.stiffness.regions]\n{top}\n{front}\n\
             [fit.velocity]\nfield = \"regions\"\n[fit.velocity.regions]\n{top}\n"
        ),
    );
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let options = FitProblemOptions::from_scene(&scene, &drivers, &scene.fit.stiffness).unwrap();
    assert_eq!(options.youngs_regions, ["top", "front", UNCOVERED_REGION]);
    assert_eq!(options.velocity_regions, ["top", UNCOVERED_REGION]);
    // By hand: world rest positions against the two boxes.
    let world: Vec<[f32; 3]> = drivers
        .rest
        .iter()
        .map(|&p| drivers.sim_box.to_world(p))
        .collect();
    let youngs_region: Vec<u32> = world
        .iter()
        .map(|p| match (p[2] >= 0.3, p[1] <= 0.2) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => 2,
        })
        .collect();
    let velocity_region: Vec<u32> = world.iter().map(|p| u32::from(p[2] < 0.3)).collect();
    for r in 0..3 {
        assert!(youngs_region.contains(&r), "region {r} holds no driver");
    }
    let mut by_hand = FitProblemOptions::per_driver(&scene.fit.stiffness);
    by_hand.youngs = YoungsField::Regions {
        region: youngs_region,
        count: 3,
    };
    by_hand.velocity = VelocityField::Regions {
        region: velocity_region,
        count: 2,
    };
    let mut from_scene = FitProblem::from_drivers(&ctx, &scene, drivers, &options).unwrap();
    let mut hand = FitProblem::new(&ctx, &scene, &by_hand).unwrap();
    assert_eq!(from_scene.drivers().rest, hand.drivers().rest);
    assert_eq!(from_scene.youngs_map(), hand.youngs_map());
    assert_eq!(from_scene.velocity_map(), hand.velocity_map());
    let at = Parameters {
        log10_youngs: vec![3.6, 3.9, 3.75],
        velocity: vec![0.35, 0.05, 0.2, 0.3, -0.05, 0.25],
        poisson: Vec::new(),
    };
    let (loss_scene, g_scene) = gradients(&ctx, &mut from_scene, &at);
    let (loss_hand, g_hand) = gradients(&ctx, &mut hand, &at);
    eprintln!("loss {loss_scene:.9e} vs {loss_hand:.9e}; {g_scene:?} vs {g_hand:?}");
    // Run-to-run noise of float atomics (multi-threaded lavapipe): two
    // evaluations of one problem differed by 1.06e-6 relative in CI.
    assert!(
        (loss_scene - loss_hand).abs() <= 1e-5 * loss_hand,
        "{loss_scene} vs {loss_hand}"
    );
    assert_same_gradients("scene vs hand-built", &g_scene, &g_hand);
}

/// One problem, built with stage 1's weights (L1 0.5, 1 − SSIM 0.5, no E
/// TV, v0 smoothness 0.2), switched to stage 2's (the defaults 0.1, 0.9,
/// E TV 0.01, no v0 term) and back: the unweighted terms stay, the loss
/// and gradients follow the weights, equal to those of a problem built
/// with stage 2's weights; a stage with a negative weight is refused and
/// changes nothing.
#[test]
fn set_stage_switches_the_loss_to_the_stage_weights() {
    let ctx = common::gpu();
    let (_dir, plain) = fixture(&ctx);
    let scene = with_settings(
        &plain,
        "[fit.velocity]\nw_l1 = 0.5\nw_ssim = 0.5\ntv_weight = 0.0\nvelocity_tv_weight = 0.2\n",
    );
    let (velocity, stiffness) = (&scene.fit.velocity, &scene.fit.stiffness);
    let drivers = DriverSet::from_scene(&scene).unwrap();
    let options = FitProblemOptions::from_scene(&scene, &drivers, velocity).unwrap();
    assert_eq!(options.velocity_tv_weight, 0.2);
    let mut p = FitProblem::from_drivers(&ctx, &scene, drivers.clone(), &options).unwrap();
    let at = start(&p);
    let one = p.evaluate(&ctx, &at, &all(), GradientFlow::Full).unwrap();
    let g_one = one.read(&ctx).unwrap();
    p.set_stage(stiffness).unwrap();
    let two = p.evaluate(&ctx, &at, &all(), GradientFlow::Full).unwrap();
    let g_two = two.read(&ctx).unwrap();
    let (r1, r2) = (&one.report, &two.report);
    eprintln!("stage 1 {r1:?}\nstage 2 {r2:?}");
    let close = |a: f64, b: f64, what: &str| {
        assert!(
            (a - b).abs() <= 1e-5 * b.abs().max(1e-12),
            "{what}: {a} vs {b}"
        )
    };
    for (a, b, what) in [
        (r1.l1, r2.l1, "l1"),
        (r1.dssim, r2.dssim, "dssim"),
        (r1.tv, r2.tv, "tv"),
        (r1.velocity_tv, r2.velocity_tv, "velocity tv"),
    ] {
        close(a, b, what);
    }
    assert!(r1.velocity_tv > 0.0 && r1.tv > 0.0);
    close(r1.image, 0.5 * r1.l1 + 0.5 * r1.dssim, "stage 1 image");
    close(r1.loss, r1.image + 0.2 * r1.velocity_tv, "stage 1 loss");
    close(r2.image, 0.1 * r2.l1 + 0.9 * r2.dssim, "stage 2 image");
    close(r2.loss, r2.image + 0.01 * r2.tv, "stage 2 loss");
    // Stage 2's gradients are a fresh stage-2 problem's (nothing of stage
    // 1's v0 term is left); back at stage 1, stage 1's.
    let fresh_options = FitProblemOptions::from_scene(&scene, &drivers, stiffness).unwrap();
    let mut fresh = FitProblem::from_drivers(&ctx, &scene, drivers, &fresh_options).unwrap();
    let (fresh_loss, g_fresh) = gradients(&ctx, &mut fresh, &at);
    close(r2.loss, fresh_loss, "stage 2 vs a fresh stage-2 problem");
    assert_same_gradients("stage 2 vs a fresh stage-2 problem", &g_two, &g_fresh);
    p.set_stage(velocity).unwrap();
    let (back_loss, g_back) = gradients(&ctx, &mut p, &at);
    close(back_loss, r1.loss, "back at stage 1");
    assert_same_gradients("back at stage 1", &g_back, &g_one);
    // A refused stage changes nothing.
    let mut negative = stiffness.clone();
    negative.w_l1 = -1.0;
    assert!(matches!(p.set_stage(&negative), Err(FitError::Loss(_))));
    let still = p.loss(&ctx, &at, &all()).unwrap();
    close(still.loss, r1.loss, "after a refused stage");
}
