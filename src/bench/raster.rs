//! `physfit bench raster`: forward and backward time of the splat rasterizer
//! (mean of a few repetitions after a warm-up, each submit + wait, so the
//! figure includes the one intersection-count readback per frame), per-stage
//! times from one extra run with every stage submitted and waited for
//! separately, and the peak of GPU memory allocated by physfit
//! (`ctx.memory.peak()`, reset per case).
//!
//! Cases: any scene given by the caller (the fox), and a synthetic cloud of
//! 500,000 splats (SH degree 3, as a trained 3DGS scene has) at 512×512 and
//! 1024×576.

use std::time::Instant;

use glam::{Mat3, Vec3};
use serde::Serialize;

use crate::gpu::GpuContext;
use crate::scene::{Camera, Gaussians};
use crate::splat::{upload_grad_image, Rasterizer, SplatBuffers, SplatError, StageTiming};

/// One benchmark case: what to render and from where.
pub struct RasterCase {
    /// Name in the report.
    pub name: String,
    /// The splats.
    pub gaussians: Gaussians,
    /// The camera (sets the image size).
    pub camera: Camera,
}

/// Per-stage time in the report.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    /// Stage name.
    pub stage: String,
    /// Milliseconds (submitted and waited for alone).
    pub ms: f64,
}

/// Result of one case.
#[derive(Clone, Debug, Serialize)]
pub struct RasterBenchResult {
    /// Case name.
    pub name: String,
    /// Number of splats.
    pub splats: usize,
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// (tile, splat) intersections of the frame.
    pub intersections: u32,
    /// Mean forward time (render + wait), ms.
    pub forward_ms: f64,
    /// Mean backward time (backward + wait), ms.
    pub backward_ms: f64,
    /// Peak bytes allocated by physfit during the case (splats, frame, sort scratch, gradients).
    pub peak_gpu_bytes: u64,
    /// Forward stages, each submitted and waited for separately.
    pub forward_stages: Vec<StageReport>,
    /// Backward stages, likewise.
    pub backward_stages: Vec<StageReport>,
}

fn stages(t: &[StageTiming]) -> Vec<StageReport> {
    t.iter()
        .map(|s| StageReport {
            stage: s.stage.to_string(),
            ms: s.ms,
        })
        .collect()
}

/// Times `case`: `repetitions` forward and backward passes after one warm-up,
/// then one profiled pass.
pub fn bench_case(
    ctx: &GpuContext,
    case: &RasterCase,
    repetitions: u32,
) -> Result<RasterBenchResult, SplatError> {
    ctx.memory.reset_peak();
    let mut raster = Rasterizer::new(ctx)?;
    let splats = SplatBuffers::upload(ctx, &case.gaussians)?;
    let pixels = (case.camera.width * case.camera.height) as usize;
    // A gradient image as a mean-of-pixels loss would give.
    let g = 1.0 / pixels as f32;
    let grad = upload_grad_image(ctx, &vec![[g, g, g, g]; pixels])?;
    let bg = [0.0; 3];

    let warm = raster.render(ctx, &splats, &case.camera, bg)?;
    raster.backward(ctx, &splats, &warm, &grad)?;
    ctx.wait()?;
    drop(warm);

    let reps = repetitions.max(1);
    let mut forward = 0.0;
    let mut backward = 0.0;
    let mut intersections = 0;
    for _ in 0..reps {
        let start = Instant::now();
        let out = raster.render(ctx, &splats, &case.camera, bg)?;
        ctx.wait()?;
        forward += start.elapsed().as_secs_f64();
        intersections = out.intersection_count;
        let start = Instant::now();
        let back = raster.backward(ctx, &splats, &out, &grad)?;
        ctx.wait()?;
        backward += start.elapsed().as_secs_f64();
        drop(back);
    }

    raster.profile = true;
    let out = raster.render(ctx, &splats, &case.camera, bg)?;
    let back = raster.backward(ctx, &splats, &out, &grad)?;
    Ok(RasterBenchResult {
        name: case.name.clone(),
        splats: case.gaussians.len(),
        width: case.camera.width,
        height: case.camera.height,
        intersections,
        forward_ms: forward * 1e3 / reps as f64,
        backward_ms: backward * 1e3 / reps as f64,
        peak_gpu_bytes: ctx.memory.peak(),
        forward_stages: stages(&out.timings),
        backward_stages: stages(&back.timings),
    })
}

/// A camera on the −z side of the bounding sphere of `gaussians`' means,
/// looking along +z at its centre, with a 50° vertical field of view and the
/// sphere filling about 80% of the image height.
pub fn framing_camera(gaussians: &Gaussians, width: u32, height: u32) -> Camera {
    let (lo, hi) = gaussians.bounds().unwrap_or(([-1.0; 3], [1.0; 3]));
    let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
    let centre = (lo + hi) * 0.5;
    let radius = ((hi - lo).length() * 0.5).max(1e-3);
    let half_fov = 25f32.to_radians();
    let fy = 0.5 * height as f32 / half_fov.tan();
    let distance = radius / (0.8 * half_fov).sin();
    let position = centre - Vec3::Z * distance;
    Camera {
        width,
        height,
        fx: fy,
        fy,
        cx: width as f32 / 2.0,
        cy: height as f32 / 2.0,
        rotation: Mat3::IDENTITY,
        translation: -position,
        near: 0.01,
    }
}

/// A synthetic cloud of `count` splats (SH degree 3) filling a ball of
/// radius 1 around the origin, spaced and sized like a trained 3DGS scene:
/// mean spacing ≈ 0.02, scales 0.003–0.03, opacities 0.12–0.95. Deterministic.
pub fn synthetic_cloud(count: usize) -> Gaussians {
    let mut state = 0x243f_6a88_85a3_08d3_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut g = Gaussians {
        sh_degree: 3,
        ..Default::default()
    };
    while g.len() < count {
        let p = Vec3::new(next(), next(), next()) * 2.0 - 1.0;
        if p.length() > 1.0 {
            continue;
        }
        g.means.push(p.to_array());
        g.rotations
            .push([next() - 0.5, next() - 0.5, next() - 0.5, next() - 0.5]);
        let base = -5.8 + 2.3 * next();
        g.log_scales.push([
            base + 0.5 * next(),
            base + 0.5 * next(),
            base + 0.5 * next(),
        ]);
        g.opacity_logits.push(-2.0 + 5.0 * next());
        for k in 0..16 {
            let s = if k == 0 { 1.0 } else { 0.1 };
            g.sh.push([s * (next() - 0.5), s * (next() - 0.5), s * (next() - 0.5)]);
        }
    }
    g
}

/// The synthetic cases: 500,000 splats at 512×512 and 1024×576.
pub fn synthetic_cases(count: usize) -> Vec<RasterCase> {
    let cloud = synthetic_cloud(count);
    [(512, 512), (1024, 576)]
        .into_iter()
        .map(|(w, h)| RasterCase {
            name: format!("synthetic {count} splats {w}x{h}"),
            camera: framing_camera(&cloud, w, h),
            gaussians: cloud.clone(),
        })
        .collect()
}
