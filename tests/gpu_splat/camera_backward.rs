//! Camera gradients of the GPU rasterizer (`Rasterizer::camera_backward`,
//! what `physfit align` fits a view with): against central finite
//! differences of the f64 twin in every camera parameter (the nine rotation
//! entries taken as independent, translation, focal lengths, principal
//! point), and against the GPU's own render turned about each axis.

use crate::common;
use crate::support::*;
use glam::{DMat3, DVec3, Mat3};
use physfit::gpu::{GpuContext, GpuOptions};
use physfit::reference::splat::{render_with, Camera64, SplatParams64};
use physfit::scene::{Camera, Gaussians};
use physfit::splat::{upload_grad_image, CameraGradient, Rasterizer, SplatBuffers};

const BACKGROUND: [f32; 3] = [0.2, 0.1, 0.05];

fn weights(pixels: usize) -> Vec<[f32; 4]> {
    let mut rng = Rng(17);
    (0..pixels)
        .map(|_| std::array::from_fn(|_| rng.range(-1.0, 1.0)))
        .collect()
}

fn weighted(image: impl Iterator<Item = [f64; 4]>, w: &[[f32; 4]]) -> f64 {
    image
        .zip(w)
        .map(|(p, w)| (0..4).map(|c| p[c] * f64::from(w[c])).sum::<f64>())
        .sum()
}

fn gpu_gradient(ctx: &GpuContext, g: &Gaussians, cam: &Camera, w: &[[f32; 4]]) -> CameraGradient {
    let mut raster = Rasterizer::new(ctx).unwrap();
    let splats = SplatBuffers::upload(ctx, g).unwrap();
    let out = raster.render(ctx, &splats, cam, BACKGROUND).unwrap();
    let grad = upload_grad_image(ctx, w).unwrap();
    raster.camera_backward(ctx, &splats, &out, &grad).unwrap()
}

/// The 16 camera parameters in the kernel's order.
fn analytic(g: &CameraGradient) -> Vec<f64> {
    let mut v: Vec<f64> = g.rotation.iter().flatten().copied().collect();
    v.extend(g.translation);
    v.extend(g.focal);
    v.extend(g.principal);
    v
}

fn nudged(cam: &Camera64, k: usize, h: f64) -> Camera64 {
    let mut c = cam.clone();
    match k {
        0..=8 => {
            let mut cols = c.rotation.to_cols_array_2d();
            cols[k % 3][k / 3] += h;
            c.rotation = DMat3::from_cols_array_2d(&cols);
        }
        9..=11 => c.translation[k - 9] += h,
        12 => c.fx += h,
        13 => c.fy += h,
        14 => c.cx += h,
        _ => c.cy += h,
    }
    c.centre = -(c.rotation.transpose() * c.translation);
    c
}

fn matches_twin_differences(ctx: &GpuContext) {
    let (g, cam) = smooth_case();
    let w = weights((cam.width * cam.height) as usize);
    let gpu = analytic(&gpu_gradient(ctx, &g, &cam, &w));
    let params = SplatParams64::from(&g);
    let bg = BACKGROUND.map(f64::from);
    let loss = |c: &Camera64| {
        let img = render_with(&params, c, bg);
        weighted(
            img.rgb
                .iter()
                .zip(&img.alpha)
                .map(|(rgb, a)| [rgb[0], rgb[1], rgb[2], *a]),
            &w,
        )
    };
    let c64 = Camera64::from(&cam);
    let mut worst = 0.0f64;
    let scale = (0..16)
        .map(|k| {
            let h = if k >= 12 { 1e-3 } else { 1e-5 };
            let fd = (loss(&nudged(&c64, k, h)) - loss(&nudged(&c64, k, -h))) / (2.0 * h);
            (k, fd)
        })
        .collect::<Vec<_>>();
    let largest = scale.iter().fold(0.0f64, |m, r| m.max(r.1.abs()));
    for (k, fd) in &scale {
        let err = (gpu[*k] - fd).abs() / fd.abs().max(0.02 * largest);
        println!(
            "camera parameter {k:2}: twin FD {fd:+.5e}, GPU {:+.5e}, error {err:.1e}",
            gpu[*k]
        );
        worst = worst.max(err);
    }
    assert!(
        worst < 1e-4,
        "camera gradient off the twin's differences by {worst:.2e}"
    );
}

#[test]
fn camera_gradient_matches_twin_differences_native_atomics() {
    matches_twin_differences(&common::gpu());
}

#[test]
fn camera_gradient_matches_twin_differences_compare_and_swap_atomics() {
    matches_twin_differences(&common::gpu_with(GpuOptions {
        force_cas_atomics: true,
    }));
}

/// Turning the camera about its own centre by ω (camera-frame axis),
/// R' = exp([ω]×) R, t' = exp([ω]×) t, changes the loss by
/// Σ_ij (dL/dR)_ij ([ω]× R)_ij + dL/dt · ([ω]× t): checked against the GPU's
/// own render turned by ±h about each axis.
#[test]
fn turning_the_camera_matches_the_gpu_render() {
    let ctx = common::gpu();
    let (g, cam) = smooth_case();
    let w = weights((cam.width * cam.height) as usize);
    let grad = gpu_gradient(&ctx, &g, &cam, &w);
    let mut raster = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let mut loss = |c: &Camera| {
        let out = raster.render(&ctx, &splats, c, BACKGROUND).unwrap();
        let img = raster.read_image(&ctx, &out).unwrap();
        weighted(img.iter().map(|p| p.map(f64::from)), &w)
    };
    let r = cam.rotation.as_dmat3();
    let t = cam.translation.as_dvec3();
    for axis in 0..3 {
        let mut e = DVec3::ZERO;
        e[axis] = 1.0;
        let skew = DMat3::from_cols(e.cross(DVec3::X), e.cross(DVec3::Y), e.cross(DVec3::Z));
        let dr = skew * r;
        let dt = skew * t;
        let mut predicted = 0.0;
        for i in 0..3 {
            for j in 0..3 {
                predicted += grad.rotation[i][j] * dr.col(j)[i];
            }
            predicted += grad.translation[i] * dt[i];
        }
        let h = 2e-3f32;
        let turned = |s: f32| {
            let turn = Mat3::from_axis_angle(e.as_vec3(), s * h);
            Camera {
                rotation: turn * cam.rotation,
                translation: turn * cam.translation,
                ..cam.clone()
            }
        };
        let fd = (loss(&turned(1.0)) - loss(&turned(-1.0))) / (2.0 * f64::from(h));
        let err = (predicted - fd).abs() / fd.abs();
        println!("axis {axis}: GPU FD {fd:+.5e}, predicted {predicted:+.5e}, error {err:.1e}");
        assert!(err < 2e-3, "axis {axis}: {predicted} vs FD {fd}");
    }
}
