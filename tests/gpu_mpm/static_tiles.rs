//! The fit problem over static backdrops (src/fit/problem.rs, "Static
//! tiles"; docs/design.md § Gaussian splatting): a simulated block beside a
//! static one (outside `regions.simulated`), both in view, reference frames
//! from its own forward at other parameters. With and without the cut, the
//! loss and both gradients agree within float-atomic noise, in both flows,
//! and the cut really skips tiles.

use crate::common;

use physfit::fit::{
    Evaluation, FitProblem, FitProblemOptions, GradientFlow, Parameters, Selection,
};
use physfit::gpu::GpuContext;
use physfit::scene::frames::write_png;
use physfit::scene::ply::PlyData;
use physfit::scene::{Gaussians, Scene};

const FRAMES: usize = 3;

/// A 5×5×6 block over [0, 0.4]³ (simulated) and a 4×4×4 one over
/// [0.9, 1.2]³ (static).
fn splats() -> Gaussians {
    let mut g = common::block(&common::Block {
        counts: [5, 5, 6],
        spacing: [0.1, 0.1, 0.08],
        jitter: 0.02,
        jitter_seed: 5,
        log_scale: -3.0,
        opacity_logit: 1.5,
        colour: |[i, j, k]| [0.1 * i as f32 - 0.2, 0.1 * j as f32, 0.1 * k as f32 - 0.3],
    });
    let still = common::block(&common::Block {
        counts: [4, 4, 4],
        spacing: [0.1, 0.1, 0.1],
        jitter: 0.02,
        jitter_seed: 6,
        log_scale: -2.8,
        opacity_logit: 2.0,
        colour: |[i, j, k]| [0.3 - 0.1 * k as f32, 0.1 * i as f32, 0.1 * j as f32 - 0.2],
    });
    for i in 0..still.len() {
        let m = still.means[i];
        g.means.push([m[0] + 0.9, m[1], m[2]]);
        g.rotations.push(still.rotations[i]);
        g.log_scales.push(still.log_scales[i]);
        g.opacity_logits.push(still.opacity_logits[i]);
        g.sh.push(still.sh[i]);
    }
    g
}

/// The scene, with or without the view's reference frames.
pub(crate) fn scene_toml(with_frames: bool) -> String {
    let frames = if with_frames {
        "frames = \"front/*.png\"\n"
    } else {
        ""
    };
    format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
name = "front"
{frames}[views.camera]
width = 96
height = 64
fx = 110.0
position = [0.6, -2.6, 0.9]
look_at = [0.6, 0.2, 0.2]
up = [0.0, 0.0, 1.0]

[reference]
fps = 30.0
background = [0.0, 0.0, 0.0]

[simulation]
box = "auto"
padding = 0.3
grid_res = 16
gravity = [0.0, 0.0, 0.0]

[material]
youngs_modulus = 1.0e4
log10_youngs_range = [3.0, 4.5]

[regions]
simulated = [{{ min = [-0.1, -0.1, -0.1], max = [0.5, 0.5, 0.5] }}]
anchored = [{{ min = [-0.1, -0.1, -0.1], max = [0.5, 0.5, 0.05] }}]

[drivers]
count = 24
k = 8
seed = 0
"#
    )
}

/// Every driver at one E and one velocity.
pub(crate) fn uniform(p: &FitProblem, log10: f64, v: [f64; 3]) -> Parameters {
    let n = p.drivers().len();
    Parameters {
        log10_youngs: vec![log10; n],
        velocity: (0..n).flat_map(|_| v).collect(),
        poisson: Vec::new(),
    }
}

/// Largest absolute difference over the largest absolute value.
pub(crate) fn relative_gap(a: &[f32], b: &[f32]) -> f32 {
    let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "a zero gradient compares nothing");
    a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs())) / scale
}

/// [`scene_toml`] over `splats` in `dir`, with `frames` reference frames
/// (the rest frame 0 included) rendered at one E (10^3.8) and one velocity,
/// and the per-driver problem options both tests fit with.
pub(crate) fn twin_in(
    ctx: &GpuContext,
    dir: &std::path::Path,
    splats: &Gaussians,
    frames: usize,
) -> (Scene, FitProblemOptions) {
    let ply = dir.join("splats.ply");
    PlyData::from_gaussians(splats, &ply)
        .write(&ply, &[])
        .unwrap();
    let path = dir.join("scene.toml");
    std::fs::write(&path, scene_toml(false)).unwrap();
    let plain = Scene::load(&path).unwrap();
    let options = FitProblemOptions::per_driver(&plain.fit.stiffness);
    let mut maker = FitProblem::new(ctx, &plain, &options).unwrap();
    let truth = uniform(&maker, 3.8, [0.5, 0.0, 0.3]);
    let out = dir.join("front");
    std::fs::create_dir_all(&out).unwrap();
    for (k, f) in maker
        .render_frames(ctx, &truth, 0, frames)
        .unwrap()
        .into_iter()
        .enumerate()
    {
        write_png(
            &out.join(format!("{k:03}.png")),
            f.width,
            f.height,
            &f.pixels,
        )
        .unwrap();
    }
    std::fs::write(&path, scene_toml(true)).unwrap();
    (Scene::load(&path).unwrap(), options)
}

/// A cut evaluation gives the loss of the evaluation without the cut
/// (relative gap under 1e-5) and its E and v0 gradients (under 1e-4 of
/// the largest component): the same answer up to the order of float
/// atomics. `label` names the case in a failure.
pub(crate) fn assert_same_evaluation(
    ctx: &GpuContext,
    label: &str,
    cut: &Evaluation,
    without: &Evaluation,
) {
    let (cut_g, without_g) = (cut.read(ctx).unwrap(), without.read(ctx).unwrap());
    let (a, b) = (cut.report.loss, without.report.loss);
    assert!(
        b > 1e-3 && (a - b).abs() / b < 1e-5,
        "{label}: loss {a} with the cut, {b} without"
    );
    for (what, x, y) in [
        ("log10 E", &without_g.youngs, &cut_g.youngs),
        ("v0", &without_g.velocity, &cut_g.velocity),
    ] {
        let gap = relative_gap(x, y);
        assert!(
            gap < 1e-4,
            "{label}: {what} gradients differ by {gap:e} of the largest"
        );
    }
}

#[test]
fn loss_and_gradient_over_static_backdrops_match_the_full_render() {
    let ctx = GpuContext::new(&Default::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (scene, options) = twin_in(&ctx, dir.path(), &splats(), FRAMES);
    let mut p = FitProblem::new(&ctx, &scene, &options).unwrap();
    assert!(
        p.static_backdrop(0).is_some(),
        "the static block makes a backdrop"
    );
    let start = uniform(&p, 3.5, [0.3, 0.1, 0.2]);
    let selection = Selection {
        frames: (1..=FRAMES).collect(),
        views: vec![0],
    };
    for flow in [GradientFlow::Full, GradientFlow::Truncated] {
        p.set_static_tiles(true);
        let cut = p.evaluate(&ctx, &start, &selection, flow).unwrap();
        let (skipped, tiles) = p.static_backdrop(0).unwrap().skipped_tiles(&ctx).unwrap();
        assert!(
            skipped > 0 && skipped < tiles,
            "{flow:?}: {skipped} of {tiles} tiles skipped in the last frame"
        );
        p.set_static_tiles(false);
        let full = p.evaluate(&ctx, &start, &selection, flow).unwrap();
        assert_same_evaluation(&ctx, &format!("{flow:?}"), &cut, &full);
    }
}
