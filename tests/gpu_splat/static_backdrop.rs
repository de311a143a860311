//! Rendering over a static backdrop (src/splat/backdrop.rs; docs/design.md
//! § Gaussian splatting, "Static tiles"): two clusters of splats side by
//! side, the left one moving. Over the backdrop of the right one, the image
//! is bit for bit the full render's, before and after the left cluster
//! moves, tiles are really skipped, and the backward's gradients of the
//! moving splats agree with the full render's up to the order of float
//! atomics.

use crate::support::*;
use glam::Vec3;
use physfit::gpu::{GpuBuffer, GpuContext};
use physfit::scene::Gaussians;
use physfit::splat::{upload_grad_image, Rasterizer, RenderOutput, SplatBuffers, StaticBackdrop};

const MOVING: usize = 60;

/// `MOVING` splats on the left, as many static ones on the right (which
/// also reach into the left half: large ones, behind and in front).
fn two_clusters() -> Gaussians {
    let mut rng = Rng(7);
    let mut g = random_gaussians(&mut rng, 2 * MOVING, 0, 1.0);
    for (i, m) in g.means.iter_mut().enumerate() {
        m[0] = if i < MOVING {
            -0.9 + 0.5 * m[0].abs()
        } else {
            0.1 + 0.8 * m[0].abs()
        };
    }
    g
}

fn moved(g: &Gaussians, shift: f32) -> Gaussians {
    let mut g = g.clone();
    for m in g.means.iter_mut().take(MOVING) {
        m[0] += shift;
        m[1] -= 0.5 * shift;
    }
    g
}

/// The backward of `out` from `grad`: every gradient of the moving
/// splats, flattened.
fn moving_gradients(
    ctx: &GpuContext,
    raster: &mut Rasterizer,
    splats: &SplatBuffers,
    out: &RenderOutput,
    grad: &GpuBuffer,
) -> Vec<f32> {
    let h = raster
        .backward(ctx, splats, out, grad)
        .unwrap()
        .gradients
        .read(ctx)
        .unwrap();
    (0..MOVING)
        .flat_map(|i| {
            h.means[i]
                .iter()
                .chain(&h.rotations[i])
                .chain(&h.log_scales[i])
                .copied()
                .chain([h.opacity_logits[i]])
                .chain(h.sh[i])
        })
        .collect()
}

#[test]
fn render_over_a_backdrop_is_the_full_render_and_skips_static_tiles() {
    let ctx = GpuContext::new(&Default::default()).unwrap();
    let camera = camera_looking_z(96, 64, Vec3::ZERO);
    let background = [0.2, 0.3, 0.4];
    let rest = two_clusters();
    let moving: Vec<u32> = (0..MOVING as u32).collect();
    let mut full = Rasterizer::new(&ctx).unwrap();
    let mut over = Rasterizer::new(&ctx).unwrap();
    let backdrop =
        StaticBackdrop::new(&ctx, &mut over, &rest, &moving, &camera, background).unwrap();
    let pixels = (camera.width * camera.height) as usize;
    let mut rng = Rng(3);
    let grad: Vec<[f32; 4]> = (0..pixels)
        .map(|_| [0; 4].map(|_| rng.range(-1.0, 1.0)))
        .collect();
    let grad = upload_grad_image(&ctx, &grad).unwrap();
    for shift in [0.0, 0.15] {
        let g = moved(&rest, shift);
        let splats = SplatBuffers::upload(&ctx, &g).unwrap();
        let a = full.render(&ctx, &splats, &camera, background).unwrap();
        // Another frame first, so that the workspace's image holds other
        // pixels than the backdrop's everywhere.
        over.render(&ctx, &splats, &camera, [1.0, 0.0, 0.0])
            .unwrap();
        let b = over.render_over(&ctx, &splats, &backdrop).unwrap();
        let (skipped, tiles) = backdrop.skipped_tiles(&ctx).unwrap();
        assert!(
            skipped > tiles / 4 && skipped < tiles,
            "shift {shift}: {skipped} of {tiles} tiles skipped"
        );
        let image_a = full.read_image(&ctx, &a).unwrap();
        let image_b = over.read_image(&ctx, &b).unwrap();
        assert!(
            image_a == image_b,
            "shift {shift}: the image over the backdrop differs from the full render"
        );
        let va = moving_gradients(&ctx, &mut full, &splats, &a, &grad);
        let vb = moving_gradients(&ctx, &mut over, &splats, &b, &grad);
        let scale = va.iter().fold(0f32, |m, v| m.max(v.abs()));
        assert!(
            scale > 0.0,
            "shift {shift}: no gradient reaches the moving splats"
        );
        for (k, (x, y)) in va.iter().zip(&vb).enumerate() {
            assert!(
                (x - y).abs() <= 1e-5 * scale,
                "shift {shift}: moving-splat gradient component {k}: {x} full, {y} over the backdrop"
            );
        }
    }
}
