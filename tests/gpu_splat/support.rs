//! Helpers shared by the splat rasterizer tests: GPU render / backward in one
//! call, random scenes, comparisons with the f64 twin.
#![allow(dead_code)]

use glam::{Mat3, Vec3};
use physfit::gpu::GpuContext;
use physfit::reference::splat::{params::SplatParams64, project_all, Camera64, Image64};
use physfit::scene::{Camera, Gaussians};
use physfit::splat::{upload_grad_image, HostGradients, Rasterizer, SplatBuffers};

/// Renders on the GPU, returns RGBA per pixel.
pub fn gpu_render(ctx: &GpuContext, g: &Gaussians, cam: &Camera, bg: [f32; 3]) -> Vec<[f32; 4]> {
    let mut r = Rasterizer::new(ctx).unwrap();
    let splats = SplatBuffers::upload(ctx, g).unwrap();
    let out = r.render(ctx, &splats, cam, bg).unwrap();
    r.read_image(ctx, &out).unwrap()
}

/// Renders and back-propagates `grad` (dL/dRGBA per pixel) on the GPU.
pub fn gpu_render_backward(
    ctx: &GpuContext,
    g: &Gaussians,
    cam: &Camera,
    bg: [f32; 3],
    grad: &[[f32; 4]],
) -> (Vec<[f32; 4]>, HostGradients) {
    let mut r = Rasterizer::new(ctx).unwrap();
    let splats = SplatBuffers::upload(ctx, g).unwrap();
    let out = r.render(ctx, &splats, cam, bg).unwrap();
    let grad_buf = upload_grad_image(ctx, grad).unwrap();
    let image = r.read_image(ctx, &out).unwrap();
    let back = r.backward(ctx, &splats, &out, &grad_buf).unwrap();
    (image, back.gradients.read(ctx).unwrap())
}

/// Twin image as RGBA f64.
pub fn twin_rgba(img: &Image64) -> Vec<[f64; 4]> {
    img.rgb
        .iter()
        .zip(&img.alpha)
        .map(|(c, a)| [c[0], c[1], c[2], *a])
        .collect()
}

pub fn twin_render(g: &Gaussians, cam: &Camera, bg: [f32; 3]) -> Vec<[f64; 4]> {
    let p = SplatParams64::from(g);
    twin_rgba(&physfit::reference::splat::render(
        &p,
        cam,
        bg.map(f64::from),
    ))
}

/// Max and mean absolute difference per channel.
pub fn diff_stats(a: &[[f32; 4]], b: &[[f64; 4]]) -> ([f64; 4], [f64; 4]) {
    assert_eq!(a.len(), b.len());
    let mut max = [0.0f64; 4];
    let mut mean = [0.0f64; 4];
    for (x, y) in a.iter().zip(b) {
        for c in 0..4 {
            let d = (x[c] as f64 - y[c]).abs();
            assert!(!d.is_nan(), "NaN in image");
            max[c] = max[c].max(d);
            mean[c] += d;
        }
    }
    for m in &mut mean {
        *m /= a.len() as f64;
    }
    (max, mean)
}

/// Small deterministic generator (xorshift), uniform in [0, 1).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next()
    }
}

/// A camera at `position` looking along +z (identity rotation).
pub fn camera_looking_z(width: u32, height: u32, position: Vec3) -> Camera {
    Camera {
        width,
        height,
        fx: width as f32 * 0.8,
        fy: width as f32 * 0.8,
        cx: width as f32 / 2.0,
        cy: height as f32 / 2.0,
        rotation: Mat3::IDENTITY,
        translation: -position,
        near: 0.05,
    }
}

/// `n` random splats in a box in front of the camera at the origin.
pub fn random_gaussians(rng: &mut Rng, n: usize, sh_degree: u32, spread: f32) -> Gaussians {
    let k = ((sh_degree + 1) * (sh_degree + 1)) as usize;
    let mut g = Gaussians {
        sh_degree,
        ..Default::default()
    };
    for _ in 0..n {
        g.means.push([
            rng.range(-spread, spread),
            rng.range(-spread, spread) * 0.6,
            rng.range(2.0, 6.0),
        ]);
        g.rotations.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.log_scales.push([
            rng.range(-3.5, -1.5),
            rng.range(-3.5, -1.5),
            rng.range(-3.5, -1.5),
        ]);
        g.opacity_logits.push(rng.range(-2.0, 3.0));
        for c in 0..k {
            let s = if c == 0 { 1.0 } else { 0.3 };
            g.sh.push([rng.range(-s, s), rng.range(-s, s), rng.range(-s, s)]);
        }
    }
    g
}

/// One frame to render: splats, camera, background.
#[derive(Clone)]
pub struct Frame {
    pub name: &'static str,
    pub gaussians: Gaussians,
    pub camera: Camera,
    pub background: [f32; 3],
}

/// Frames that differ in every size the rasterizer's workspace follows:
/// splat count, SH degree, image size and tile-grid shape, intersection
/// count, and an empty scene. Rendered in this order with one rasterizer,
/// each frame finds buffers sized (and filled) by a larger or smaller one.
pub fn alternating_frames() -> Vec<Frame> {
    let small = Frame {
        name: "small: 40 splats, SH 1, 40×24",
        gaussians: random_gaussians(&mut Rng(11), 40, 1, 1.0),
        camera: camera_looking_z(40, 24, Vec3::ZERO),
        background: [0.1, 0.2, 0.3],
    };
    let large = Frame {
        name: "large: 400 splats, SH 3, 96×72",
        gaussians: random_gaussians(&mut Rng(12), 400, 3, 1.5),
        camera: camera_looking_z(96, 72, Vec3::ZERO),
        background: [0.3, 0.2, 0.1],
    };
    let wide = Frame {
        name: "wide: 150 splats, SH 0, 136×20",
        gaussians: random_gaussians(&mut Rng(13), 150, 0, 2.0),
        camera: camera_looking_z(136, 20, Vec3::new(0.1, 0.0, -0.5)),
        background: [0.0; 3],
    };
    let empty = Frame {
        name: "empty: 0 splats, 30×30",
        gaussians: Gaussians::default(),
        camera: camera_looking_z(30, 30, Vec3::ZERO),
        background: [0.5, 0.25, 0.75],
    };
    vec![
        small.clone(),
        large.clone(),
        small.clone(),
        wide.clone(),
        empty,
        large.clone(),
        small,
        wide,
        large,
    ]
}

/// Deterministic pseudo-random u32 (SplitMix64).
pub fn random_u32s(count: usize, seed: u64) -> Vec<u32> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u32
        })
        .collect()
}

/// Five large, moderately opaque splats whose 1/255 contours enclose the
/// whole 32×24 image (no pixel near the cutoff), no alpha or colour clamp,
/// no transmittance stop, one beyond the Jacobian's field-of-view clamp: the
/// GPU loss is smooth in every parameter.
pub fn smooth_case() -> (Gaussians, Camera) {
    let rotation = Mat3::from_rotation_y(0.2) * Mat3::from_rotation_x(-0.1);
    let centre = Vec3::new(0.3, -0.2, -5.0);
    let cam = Camera {
        width: 32,
        height: 24,
        fx: 32.0,
        fy: 30.0,
        cx: 16.0,
        cy: 12.0,
        rotation,
        translation: -(rotation * centre),
        near: 0.01,
    };
    let mut rng = Rng(99);
    let mut g = Gaussians {
        sh_degree: 3,
        ..Default::default()
    };
    let points = [
        (Vec3::new(0.1, -0.05, 5.0), 0.9, -1.0),
        (Vec3::new(-0.3, 0.2, 5.5), 1.0, -0.5),
        (Vec3::new(0.25, 0.15, 4.6), 1.1, -0.8),
        (Vec3::new(-0.1, -0.2, 6.2), 1.2, 0.0),
        // x/z = 0.8 > limit 1.3·16/32 = 0.65: the clamped Jacobian branch.
        (Vec3::new(4.24, 0.1, 5.3), 1.45, 0.2),
    ];
    for (p_cam, log_scale, logit) in points {
        let world = rotation.transpose() * (p_cam - cam.translation);
        g.means.push(world.to_array());
        g.rotations.push([
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
            rng.range(-1.0, 1.0),
        ]);
        g.log_scales.push([
            log_scale + rng.range(-0.1, 0.1),
            log_scale + rng.range(-0.1, 0.1),
            log_scale + rng.range(-0.1, 0.1),
        ]);
        g.opacity_logits.push(logit);
        for k in 0..16 {
            let s = if k == 0 { 0.8 } else { 0.15 };
            g.sh.push([rng.range(-s, s), rng.range(-s, s), rng.range(-s, s)]);
        }
    }
    // Smoothness conditions, checked on the twin's projection.
    let c64 = Camera64::from(&cam);
    let splats = project_all(&SplatParams64::from(&g), &c64);
    assert_eq!(splats.len(), 5);
    let (lim_x, lim_y) = c64.fov_limits();
    for s in &splats {
        let worst = [(0.5, 0.5), (31.5, 0.5), (0.5, 23.5), (31.5, 23.5)]
            .iter()
            .map(|&(x, y)| s.mahalanobis_half(x, y))
            .fold(0.0, f64::max);
        assert!(
            worst < (255.0 * s.opacity).ln() - 0.2,
            "splat {} is cut by 1/255",
            s.index
        );
        assert!(s.opacity < 0.95 && s.colour.iter().all(|&v| v > 0.02));
        let u = (s.mean2d[0] - c64.cx) / c64.fx;
        let v = (s.mean2d[1] - c64.cy) / c64.fy;
        assert!((u.abs() - lim_x).abs() > 0.02 && (v.abs() - lim_y).abs() > 0.02);
    }
    (g, cam)
}
