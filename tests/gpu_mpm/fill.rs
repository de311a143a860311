//! Interior filling (`drivers.fill`, src/drive/voxel.rs): a
//! closed sphere shell of splats, once filled, sways with the period of the
//! same sphere sampled through its volume (within 10%), on the GPU MPM
//! with K-Means drivers. The unfilled shell is measured too, to show what
//! the filling changes (docs/design.md § Drivers and the deformation of
//! Gaussians: simulated as a shell, a solid bends like an empty can).
//! Measured on lavapipe: filled +4.2% from the ball, hollow +67%; with one
//! fill point per voxel instead of the splats' density, the filled shell
//! was +11% (src/drive/voxel.rs `fill`).

use crate::common;

use physfit::drive::DriverSet;
use physfit::mpm::{MpmConfig, MpmSimulator, ParticleState};
use physfit::scene::ply::PlyData;
use physfit::scene::{Gaussians, Scene};

const CENTRE: [f32; 3] = [0.5, 0.5, 0.5];
const RADIUS: f32 = 0.22;
const GRID_RES: u32 = 24;
/// Anchored: the cap below this height (world = normalised: the box is the
/// unit cube).
const ANCHOR_TOP: f32 = CENTRE[2] - 0.6 * RADIUS;

/// `n` points on the sphere (a Fibonacci lattice: a closed shell).
fn shell(n: usize) -> Vec<[f32; 3]> {
    let golden = std::f32::consts::PI * (3.0 - 5f32.sqrt());
    (0..n)
        .map(|i| {
            let z = 1.0 - 2.0 * (i as f32 + 0.5) / n as f32;
            let r = (1.0 - z * z).sqrt();
            let t = golden * i as f32;
            [
                CENTRE[0] + RADIUS * r * t.cos(),
                CENTRE[1] + RADIUS * r * t.sin(),
                CENTRE[2] + RADIUS * z,
            ]
        })
        .collect()
}

/// The ball sampled through its volume: a lattice of spacing `h`, each
/// point jittered by up to h/4 (deterministically) so K-Means has no ties.
fn ball(h: f32) -> Vec<[f32; 3]> {
    let mut state = 0x5EEDu64;
    let mut jitter = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f32 / (1u64 << 53) as f32 * 0.5 - 0.25
    };
    let n = (2.0 * RADIUS / h).ceil() as i32;
    let mut points = Vec::new();
    for i in -n..=n {
        for j in -n..=n {
            for k in -n..=n {
                let p = [i, j, k].map(|c| (c as f32 + jitter()) * h);
                if p.iter().map(|c| c * c).sum::<f32>() < RADIUS * RADIUS {
                    points.push([CENTRE[0] + p[0], CENTRE[1] + p[1], CENTRE[2] + p[2]]);
                }
            }
        }
    }
    points
}

/// Loads a scene of `means` in the unit box at grid 24 with the bottom cap
/// anchored.
fn scene(dir: &tempfile::TempDir, name: &str, means: &[[f32; 3]], fill: bool) -> Scene {
    let mut g = Gaussians::default();
    for &m in means {
        g.means.push(m);
        g.rotations.push([1.0, 0.0, 0.0, 0.0]);
        g.log_scales.push([-5.0; 3]);
        g.opacity_logits.push(2.0);
        g.sh.push([0.3; 3]);
    }
    let ply = dir.path().join(format!("{name}.ply"));
    PlyData::from_gaussians(&g, &ply).write(&ply, &[]).unwrap();
    let toml = format!(
        "[gaussians]\npath = \"{name}.ply\"\n[[views]]\n[views.camera]\nwidth = 16\nheight = 16\n\
         fx = 20.0\nposition = [0.5, -3.0, 0.5]\nlook_at = [0.5, 0.5, 0.5]\nup = [0.0, 0.0, 1.0]\n\
         [simulation]\nbox = {{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 1.0] }}\ngrid_res = {GRID_RES}\n\
         [material]\nlog10_youngs_range = [3.0, 5.0]\n\
         [regions]\nanchored = [{{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, {ANCHOR_TOP}] }}]\n\
         [drivers]\nfill = {fill}\n"
    );
    let path = dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, toml).unwrap();
    Scene::load(&path).unwrap()
}

/// The sway period of the drivers of `scene` (E = 1e5 normalised, ν = 0.3,
/// ρ = 2000): started with `v_x` growing linearly with height above the
/// anchored cap (the shape of the lowest sway mode), measured between the
/// first and third zero crossings of the free drivers' mean `v_x` (linear
/// interpolation between frames of 2 substeps).
fn sway_period(ctx: &physfit::gpu::GpuContext, scene: &Scene) -> (f64, DriverSet) {
    let set = DriverSet::from_scene(scene).unwrap();
    let youngs = 1e5f64;
    let substeps = 2;
    let mut config: MpmConfig = scene.mpm_config();
    // dt at 0.8 of the stability bound.
    let bound = physfit::mpm_rules::stability::explicit_dt_bound(
        youngs,
        config.poisson,
        config.density,
        1.0 / GRID_RES as f64,
    );
    config.fps = 1.0 / (0.8 * bound * substeps as f64);
    config.substeps_per_frame = substeps;
    let setup = set.setup(vec![youngs as f32; set.len()], youngs);
    let sim = MpmSimulator::new(ctx, &config, &setup).unwrap();
    let v0 = 0.02f32;
    let mut start: ParticleState = set.uniform_start([0.0; 3]).unwrap();
    for (p, v) in start.v.iter_mut().enumerate() {
        if !set.anchored[p] {
            v[0] = v0 * (set.rest[p][2] - ANCHOR_TOP) / (2.0 * RADIUS);
        }
    }
    let free: Vec<usize> = (0..set.len()).filter(|&p| !set.anchored[p]).collect();
    let mean_vx =
        |s: &ParticleState| free.iter().map(|&p| s.v[p][0] as f64).sum::<f64>() / free.len() as f64;
    let dt_frame = 1.0 / config.fps;
    let mut previous = mean_vx(&start);
    let mut buffers = [
        sim.upload_state(ctx, "sway start", &start).unwrap(),
        sim.state_buffer(ctx, "sway next").unwrap(),
    ];
    let mut crossings = Vec::new();
    for frame in 1..=2000u32 {
        sim.run_frame(ctx, &buffers[0], &buffers[1], frame).unwrap();
        buffers.swap(0, 1);
        let v = mean_vx(&sim.read_state(ctx, &buffers[0]).unwrap());
        if (previous > 0.0) != (v > 0.0) {
            crossings.push(dt_frame * (frame as f64 - 1.0 + previous / (previous - v)));
            if crossings.len() == 3 {
                break;
            }
        }
        previous = v;
    }
    assert_eq!(crossings.len(), 3, "did not sway: {crossings:?}");
    (crossings[2] - crossings[0], set)
}

#[test]
fn a_filled_shell_sways_like_a_solid_sphere() {
    let ctx = common::gpu();
    let dir = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let filled = scene(&dir, "shell", &shell(8000), true);
    assert!(
        filled.drivers.interior_cells > 0,
        "the shell is closed at grid {GRID_RES}"
    );
    let solid = scene(&dir, "ball", &ball(1.0 / (4.0 * GRID_RES as f32)), false);
    let hollow = scene(&dir, "hollow", &shell(8000), false);
    let (t_filled, s_filled) = sway_period(&ctx, &filled);
    let (t_solid, s_solid) = sway_period(&ctx, &solid);
    let (t_hollow, s_hollow) = sway_period(&ctx, &hollow);
    let err = t_filled / t_solid - 1.0;
    println!(
        "sway period: filled shell {t_filled:.4} s ({} drivers, {} fill-only, volume {:.3e}), \
         solid ball {t_solid:.4} s ({} drivers, volume {:.3e}): {:+.1}%; hollow shell {t_hollow:.4} s \
         ({} drivers, volume {:.3e}): {:+.1}%; {:?}",
        s_filled.len(),
        s_filled.fill_only.iter().filter(|f| **f).count(),
        s_filled.occupied_volume,
        s_solid.len(),
        s_solid.occupied_volume,
        100.0 * err,
        s_hollow.len(),
        s_hollow.occupied_volume,
        100.0 * (t_hollow / t_solid - 1.0),
        t.elapsed()
    );
    assert!(err.abs() <= 0.10, "filled {t_filled} vs solid {t_solid}");
}
