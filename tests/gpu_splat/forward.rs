//! GPU forward rasterizer vs gsplat's reference renders and vs the f64 CPU
//! twin (docs/design.md § Verification 3), including the hard cases: a crowded
//! tile, splats behind / straddling the near plane, huge and tiny splats,
//! non-finite inputs.

use crate::common;

use crate::support::*;
use glam::Vec3;
use physfit::reference::gsplat_case::load_gsplat_case;
use physfit::splat::{Rasterizer, SplatBuffers};

fn print_stats(name: &str, max: [f64; 4], mean: [f64; 4]) {
    println!(
        "{name}: max |diff| R {:.2e} G {:.2e} B {:.2e} A {:.2e}; mean R {:.2e} G {:.2e} B {:.2e} A {:.2e}",
        max[0], max[1], max[2], max[3], mean[0], mean[1], mean[2], mean[3]
    );
}

/// Bounds on |GPU − gsplat| per channel (R, G, B, A), over both cases.
/// Measured on lavapipe (deterministic: the forward has no atomics): max
/// 5.5e-7, 5.7e-7, 4.8e-7, 8.3e-7; mean 4.7e-8, 4.5e-8, 3.8e-8, 8.9e-8 —
/// a few f32 ulps, both renderers being f32. The bounds are ~3× that
/// (2.6–3.1× for the max, 2.8–3.9× for the mean; one bound for the three
/// colour channels): a real GPU may contract multiply-adds differently
/// (WGSL allows fusing, e.g. in the conic power and the colour
/// accumulation) and evaluate `exp` with a few ulps of error (NVIDIA's fast
/// ex2 has ~2), which moves each of a pixel's blended terms by another few
/// ulps, a difference of the same order again. 3× leaves room for that and
/// stays far below the errors this test exists to catch (a plain 3σ extent
/// misses gsplat by ~3e-3, docs/design.md § Gaussian splatting). Not yet
/// measured on a hardware GPU.
const GPU_MAX: [f64; 4] = [1.5e-6, 1.5e-6, 1.5e-6, 2.5e-6];
const GPU_MEAN: [f64; 4] = [1.5e-7, 1.5e-7, 1.5e-7, 2.5e-7];

#[test]
fn forward_matches_gsplat_references() {
    let ctx = common::gpu();
    for name in ["tiny_case", "basic_case"] {
        let case = load_gsplat_case(common::fixture(&format!(
            "gsplat_reference/{name}.safetensors"
        )))
        .unwrap();
        let got = gpu_render(&ctx, &case.gaussians, &case.camera, case.background);
        let want: Vec<[f64; 4]> = case.image.iter().map(|p| p.map(f64::from)).collect();
        let (max, mean) = diff_stats(&got, &want);
        print_stats(&format!("GPU vs gsplat {name}"), max, mean);
        for c in 0..4 {
            assert!(
                max[c] <= GPU_MAX[c],
                "{name}: channel {c} max diff {:.2e} > {:.1e}",
                max[c],
                GPU_MAX[c]
            );
            assert!(
                mean[c] <= GPU_MEAN[c],
                "{name}: channel {c} mean diff {:.2e} > {:.1e}",
                mean[c],
                GPU_MEAN[c]
            );
        }
    }
}

fn check_vs_twin(
    name: &str,
    g: &physfit::scene::Gaussians,
    cam: &physfit::scene::Camera,
    tol_max: f64,
) {
    let ctx = common::gpu();
    let bg = [0.1, 0.2, 0.3];
    let got = gpu_render(&ctx, g, cam, bg);
    let want = twin_render(g, cam, bg);
    let (max, mean) = diff_stats(&got, &want);
    print_stats(&format!("GPU vs twin {name}"), max, mean);
    for c in 0..4 {
        assert!(max[c] <= tol_max, "{name}: channel {c} max diff {}", max[c]);
        assert!(mean[c] <= 1e-5, "{name}: channel {c} mean diff {}", mean[c]);
    }
}

#[test]
fn forward_matches_twin_on_random_scene_all_sh_degrees() {
    for degree in 0..=3 {
        let mut rng = Rng(0x9e3779b97f4a7c15 + degree as u64);
        let g = random_gaussians(&mut rng, 300, degree, 1.5);
        let cam = camera_looking_z(96, 72, Vec3::ZERO);
        check_vs_twin(&format!("random, SH degree {degree}"), &g, &cam, 5e-4);
    }
}

#[test]
fn forward_matches_twin_on_crowded_tile() {
    // 1500 splats all inside tile (1, 1) (pixels 16..32) of a 48×48 image:
    // means within ~1 px of the centre pixel 24, σ ≤ ~1 px, extent ≤ 3.33σ,
    // so each covers exactly that one tile.
    let mut rng = Rng(7);
    let mut g = random_gaussians(&mut rng, 1500, 0, 0.05);
    for s in &mut g.log_scales {
        *s = [-3.0, -3.0, -3.0];
    }
    for o in &mut g.opacity_logits {
        *o = -3.0; // opacity ~0.05: the pixel walks deep into the list
    }
    let cam = camera_looking_z(48, 48, Vec3::ZERO);
    let ctx = common::gpu();
    let mut r = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
    assert_eq!(out.intersection_count, 1500, "every splat in the one tile");
    check_vs_twin("crowded tile", &g, &cam, 5e-4);
}

/// Thin, tilted splats (needles across the image at three angles): each
/// one's axis-aligned box holds all 8×8 tiles, its ellipse crosses
/// about two per row, and only those are listed; the image is still the
/// twin's, which blends every splat at every pixel.
#[test]
fn thin_tilted_splats_list_only_the_tiles_they_reach() {
    let mut g = physfit::scene::Gaussians {
        sh_degree: 0,
        ..Default::default()
    };
    for (k, angle) in [45.0f32, 30.0, 120.0].into_iter().enumerate() {
        let half = angle.to_radians() / 2.0;
        g.means.push([0.1 * k as f32, -0.05 * k as f32, 3.0]);
        // A rotation about the view axis: the long axis x turns by `angle`.
        g.rotations.push([half.cos(), 0.0, 0.0, half.sin()]);
        // σ ≈ 34 px along the needle, under a pixel across it.
        g.log_scales.push([0.0, -5.0, -5.0]);
        g.opacity_logits.push(3.0);
        g.sh.push([0.5, 0.2 * k as f32, 0.1]);
    }
    let cam = camera_looking_z(128, 128, Vec3::ZERO);
    let ctx = common::gpu();
    let mut r = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
    // Their boxes hold all 64 tiles each (192 pairs, as binning by the box
    // listed them); the ellipses reach 51 on lavapipe.
    assert!(
        (24..=90).contains(&out.intersection_count),
        "{} intersections for three needles over 8×8 tiles",
        out.intersection_count
    );
    check_vs_twin("thin tilted splats", &g, &cam, 5e-4);
}

#[test]
fn forward_handles_near_plane_huge_tiny_and_nonfinite_splats() {
    let mut rng = Rng(11);
    let mut g = random_gaussians(&mut rng, 60, 1, 1.0);
    // Behind the camera, straddling the near plane, exactly at it.
    g.means[0] = [0.0, 0.0, -1.0];
    g.means[1] = [0.1, 0.0, 0.04];
    g.log_scales[1] = [-1.0, -1.0, -1.0];
    g.means[2] = [0.0, 0.1, 0.05];
    // Huge (covers the whole image) and tiny (sub-pixel) splats.
    g.log_scales[3] = [1.5, 1.0, 0.5];
    g.opacity_logits[3] = -1.0;
    g.log_scales[4] = [-9.0, -9.0, -9.0];
    g.opacity_logits[4] = 4.0;
    // Off-screen at a grazing angle (Jacobian clamp active).
    g.means[5] = [6.0, 0.5, 2.0];
    g.log_scales[5] = [0.0, -0.5, -0.5];
    let cam = camera_looking_z(80, 64, Vec3::ZERO);
    check_vs_twin("near plane / huge / tiny", &g, &cam, 5e-4);

    // Non-finite inputs: no crash, no NaN, and the same image as without them.
    let clean = g.clone();
    let mut bad = g.clone();
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    let extra = [
        ([nan, 0.0, 3.0], [1.0, 0.0, 0.0, 0.0], [-2.0; 3], 0.0),
        ([0.0, 0.0, 3.0], [nan, 0.0, 0.0, 0.0], [-2.0; 3], 0.0),
        (
            [0.0, 0.0, 3.0],
            [1.0, 0.0, 0.0, 0.0],
            [inf, -2.0, -2.0],
            0.0,
        ),
        ([0.0, 0.0, 3.0], [1.0, 0.0, 0.0, 0.0], [-2.0; 3], nan),
        ([0.0, 0.0, 3.0], [0.0, 0.0, 0.0, 0.0], [-2.0; 3], 0.0),
        ([0.0, inf, 3.0], [1.0, 0.0, 0.0, 0.0], [-2.0; 3], 0.0),
        ([0.0, 0.0, 3.0], [1.0, 0.0, 0.0, 0.0], [60.0; 3], 0.0),
    ];
    for (m, q, s, o) in extra {
        bad.means.push(m);
        bad.rotations.push(q);
        bad.log_scales.push(s);
        bad.opacity_logits.push(o);
        bad.sh
            .extend([[0.5, 0.5, 0.5], [0.0; 3], [0.0; 3], [0.0; 3]]);
    }
    // And one with a NaN SH coefficient.
    bad.means.push([0.0, 0.0, 3.0]);
    bad.rotations.push([1.0, 0.0, 0.0, 0.0]);
    bad.log_scales.push([-2.0; 3]);
    bad.opacity_logits.push(0.0);
    bad.sh
        .extend([[nan, 0.5, 0.5], [0.0; 3], [0.0; 3], [0.0; 3]]);
    let ctx = common::gpu();
    let bg = [0.1, 0.2, 0.3];
    let got_bad = gpu_render(&ctx, &bad, &cam, bg);
    let got_clean = gpu_render(&ctx, &clean, &cam, bg);
    assert!(got_bad.iter().flatten().all(|v| v.is_finite()));
    // The log-scale-60 splat overflows f32 → culled; the rest are
    // non-finite inputs. None may change a pixel.
    let differing = got_bad
        .iter()
        .zip(&got_clean)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(differing, 0, "non-finite splats must be culled");
}

#[test]
fn empty_scene_renders_background() {
    let ctx = common::gpu();
    let g = physfit::scene::Gaussians::default();
    let cam = camera_looking_z(20, 20, Vec3::ZERO);
    let img = gpu_render(&ctx, &g, &cam, [0.25, 0.5, 0.75]);
    assert!(img.iter().all(|p| *p == [0.25, 0.5, 0.75, 0.0]));
}

#[test]
fn frame_over_the_binding_limit_is_a_typed_error() {
    // Enough huge splats (each covering all 64×64 tiles of a 1024² image)
    // that the intersection list exceeds the device's storage-binding limit.
    let ctx = common::gpu();
    let tiles = 64u64 * 64;
    let n = (ctx.limits.max_storage_buffer_binding_size / 4 / tiles + 100) as usize;
    let mut rng = Rng(5);
    let mut g = random_gaussians(&mut rng, n, 0, 0.1);
    for (s, o) in g.log_scales.iter_mut().zip(&mut g.opacity_logits) {
        *s = [1.5, 1.5, 1.5];
        *o = 4.0;
    }
    let cam = camera_looking_z(1024, 1024, Vec3::ZERO);
    let mut r = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let err = r
        .render(&ctx, &splats, &cam, [0.0; 3])
        .err()
        .expect("must not fit");
    let msg = err.to_string();
    println!("{msg}");
    let physfit::splat::SplatError::Gpu(gpu_err) = &err else {
        panic!("expected a GPU size error, got {msg}");
    };
    assert!(
        matches!(gpu_err.root(), physfit::gpu::GpuError::OverLimit { .. }),
        "{msg}"
    );
    assert!(msg.contains("splat intersection"), "{msg}");
    assert!(
        msg.contains("splats, SH degree"),
        "the message must say how big the scene is: {msg}"
    );
}

#[test]
fn bad_camera_and_background_are_typed_errors() {
    let ctx = common::gpu();
    let mut rng = Rng(1);
    let g = random_gaussians(&mut rng, 4, 0, 1.0);
    let mut r = Rasterizer::new(&ctx).unwrap();
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let cam = camera_looking_z(16, 16, Vec3::ZERO);
    let err = r
        .render(&ctx, &splats, &cam, [f32::NAN, 0.0, 0.0])
        .err()
        .unwrap();
    assert!(err.to_string().contains("background"), "{err}");
    let mut bad = cam.clone();
    bad.fx = f32::INFINITY;
    let err = r.render(&ctx, &splats, &bad, [0.0; 3]).err().unwrap();
    assert!(err.to_string().contains("invalid camera"), "{err}");
    bad = cam.clone();
    bad.width = 0;
    assert!(r.render(&ctx, &splats, &bad, [0.0; 3]).is_err());
    let mut inconsistent = g.clone();
    inconsistent.sh.pop();
    let err = SplatBuffers::upload(&ctx, &inconsistent).err().unwrap();
    assert!(err.to_string().contains("sh has 3 entries"), "{err}");
}

#[test]
fn blending_kernels_fit_portable_workgroup_memory() {
    // 32 KiB is what desktop adapters (and lavapipe) offer.
    let ctx = common::gpu();
    for kernel in ["splat/blend", "splat/blend_adjoint"] {
        let bytes = physfit::gpu::primitive_error::workgroup_memory_bytes(&ctx, kernel).unwrap();
        println!("{kernel}: {bytes} bytes of workgroup memory");
        assert!(bytes <= 32 * 1024, "{kernel}: {bytes}");
    }
}

#[test]
fn forward_matches_twin_with_rotated_off_centre_camera() {
    // Rotated world-to-camera, fx ≠ fy, principal point off centre, odd size
    // (partial tiles on both edges).
    let mut rng = Rng(77);
    let g = random_gaussians(&mut rng, 250, 2, 1.5);
    let rotation = glam::Mat3::from_rotation_y(0.15) * glam::Mat3::from_rotation_z(0.4);
    let centre = Vec3::new(0.2, -0.1, -0.5);
    let cam = physfit::scene::Camera {
        width: 83,
        height: 61,
        fx: 70.0,
        fy: 64.0,
        cx: 35.5,
        cy: 33.0,
        rotation,
        translation: -(rotation * centre),
        near: 0.1,
    };
    check_vs_twin("rotated off-centre camera", &g, &cam, 5e-4);
}

#[test]
fn grey_splats_over_a_grey_background_write_code_128() {
    // docs/design.md § Units and frames: a splat's `SH + 0.5` is the 8-bit value
    // / 255 its pixel gets; no transfer curve. One large opaque splat of
    // colour 0.5 (SH DC 0) covers every pixel (alpha 0.96–0.99, the 0.99
    // clamp letting 1% of the background through) over a 0.5 background,
    // so every pixel is 0.5 and is written as round(127.5) = 128. The
    // value is exactly 0.5 on any IEEE adapter, FMA or not: 0.5·α and
    // 0.5·(1 − α) are exact (halving; 1 − α is exact for α ≥ 0.5) and sum
    // to exactly 0.5.
    let ctx = common::gpu();
    let mut g = physfit::scene::Gaussians::default();
    g.means.push([0.0, 0.0, 0.0]);
    g.rotations.push([1.0, 0.0, 0.0, 0.0]);
    g.log_scales.push([10.0f32.ln(); 3]);
    g.opacity_logits.push(10.0);
    g.sh.push([0.0; 3]);
    let cam = camera_looking_z(16, 16, Vec3::new(0.0, 0.0, -3.0));
    let img = gpu_render(&ctx, &g, &cam, [0.5; 3]);
    for p in &img {
        assert!(p[3] > 0.95, "every pixel is covered: alpha {}", p[3]);
        for c in 0..3 {
            assert_eq!(p[c], 0.5, "{p:?}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grey.png");
    let opaque: Vec<[f32; 4]> = img.iter().map(|p| [p[0], p[1], p[2], 1.0]).collect();
    physfit::scene::frames::write_png(&path, 16, 16, &opaque).unwrap();
    let png = image::open(&path).unwrap().to_rgb8();
    assert!(png.pixels().all(|p| p.0 == [128, 128, 128]));
}

#[test]
fn one_rasterizer_renders_alternating_frames_like_fresh_ones() {
    // The workspace is reused and grown, never shrunk: a frame rendered
    // after a larger one finds longer buffers holding that frame's data
    // (per-tile ranges, intersections, pixels), one after a smaller one finds
    // them regrown. Neither may change a bit: the forward has no atomics and
    // its sorts are stable, so the images must be exactly equal.
    let ctx = common::gpu();
    let mut shared = Rasterizer::new(&ctx).unwrap();
    for frame in alternating_frames() {
        let splats = SplatBuffers::upload(&ctx, &frame.gaussians).unwrap();
        let out = shared
            .render(&ctx, &splats, &frame.camera, frame.background)
            .unwrap();
        let got = shared.read_image(&ctx, &out).unwrap();
        let mut fresh = Rasterizer::new(&ctx).unwrap();
        let fresh_out = fresh
            .render(&ctx, &splats, &frame.camera, frame.background)
            .unwrap();
        let want = fresh.read_image(&ctx, &fresh_out).unwrap();
        println!(
            "{}: {} intersections, image of render {}",
            frame.name,
            out.intersection_count,
            out.generation()
        );
        assert_eq!(out.intersection_count, fresh_out.intersection_count);
        assert_eq!(got.len(), want.len(), "{}", frame.name);
        assert!(got == want, "{}: images differ", frame.name);
    }
}

#[test]
fn repeated_renders_of_one_frame_allocate_no_frame_buffers() {
    // After the first frame, a render allocates only the small uniform
    // buffers the sort and scan primitives make per call and the 4-byte
    // staging buffer of the intersection-count readback: no buffer that
    // grows with the splats, intersections or pixels.
    let ctx = common::gpu();
    let mut rng = Rng(31);
    let g = random_gaussians(&mut rng, 300, 2, 1.5);
    let cam = camera_looking_z(128, 96, Vec3::ZERO);
    let splats = SplatBuffers::upload(&ctx, &g).unwrap();
    let mut r = Rasterizer::new(&ctx).unwrap();
    let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
    let image_bytes = r.image(&out).unwrap().size();
    ctx.wait().unwrap();
    let live = ctx.memory.current();
    let peak = ctx.memory.peak();
    let mut per_frame = Vec::new();
    for _ in 0..5 {
        let (count, bytes) = (ctx.memory.allocations(), ctx.memory.allocated_bytes());
        let out = r.render(&ctx, &splats, &cam, [0.0; 3]).unwrap();
        ctx.wait().unwrap();
        per_frame.push((
            ctx.memory.allocations() - count,
            ctx.memory.allocated_bytes() - bytes,
        ));
        assert_eq!(ctx.memory.current(), live, "live GPU bytes grew");
        assert!(out.intersection_count > 1000);
    }
    println!(
        "per render after the first: (buffers, bytes) allocated {per_frame:?}; \
         live {live} bytes, image buffer {image_bytes} bytes"
    );
    assert_eq!(ctx.memory.peak(), peak, "peak GPU bytes grew");
    for &(count, bytes) in &per_frame {
        assert_eq!(count, per_frame[0].0, "allocations per frame changed");
        assert!(bytes <= 4096, "{bytes} bytes allocated in one render");
    }
}
