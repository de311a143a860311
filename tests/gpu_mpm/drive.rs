//! From a scene to MPM particles and back (src/drive): one particle per
//! simulated splat, anchored flags, the uniform initial velocity in
//! normalised units, and the GPU move of the splats to their particles.

use crate::common;

use physfit::drive::{DriveError, SceneParticles, SplatMotion};
use physfit::mpm::ParticleState;
use physfit::scene::ply::PlyData;
use physfit::scene::Scene;
use physfit::splat::SplatBuffers;

/// 27 splats on a 3×3×3 lattice of spacing 0.5; the splats with x ≤ 0.6 are
/// simulated, those with z = 0 among them anchored.
fn scene(regions: &str) -> (tempfile::TempDir, Scene) {
    let dir = tempfile::tempdir().unwrap();
    let ply = dir.path().join("splats.ply");
    PlyData::from_gaussians(&common::splat_lattice(3), &ply)
        .write(&ply, &[])
        .unwrap();
    let toml = format!(
        r#"
[gaussians]
path = "splats.ply"

[[views]]
[views.camera]
width = 16
height = 12
fx = 20.0
position = [0.5, -4.0, 0.5]
look_at = [0.5, 0.5, 0.5]
up = [0.0, 0.0, 1.0]

[material]
log10_youngs_range = [3.0, 5.0]

{regions}
"#
    );
    let path = dir.path().join("scene.toml");
    std::fs::write(&path, toml).unwrap();
    let scene = Scene::load(&path).unwrap();
    (dir, scene)
}

const REGIONS: &str = r#"[regions]
simulated = [{ min = [-1.0, -1.0, -1.0], max = [0.6, 2.0, 2.0] }]
anchored = [{ min = [-1.0, -1.0, -0.1], max = [0.6, 2.0, 0.1] }]"#;

#[test]
fn particles_are_the_simulated_splats() {
    let (_dir, scene) = scene(REGIONS);
    let p = SceneParticles::from_scene(&scene).unwrap();
    // x ∈ {0, 0.5}: 18 splats; z = 0 among them: 6 anchored.
    assert_eq!(p.len(), 18);
    assert_eq!(p.anchored.iter().filter(|a| **a).count(), 6);
    let means = scene.gaussians().means.clone();
    for (k, &i) in p.splat_indices.iter().enumerate() {
        assert!(means[i as usize][0] <= 0.6);
        assert_eq!(p.anchored[k], means[i as usize][2] == 0.0);
        let back = p.sim_box.to_world(p.rest[k]);
        for a in 0..3 {
            assert!((back[a] - means[i as usize][a]).abs() < 1e-6);
        }
    }
    let setup = p.setup(vec![1e4; p.len()], 1e5);
    assert_eq!(setup.anchored, p.anchored);
    assert!(setup.particle_volume > 0.0);
    // A uniform velocity in world units, normalised by the box side;
    // anchored particles start at rest.
    let start = p.uniform_start([0.3, -0.6, 0.9]).unwrap();
    let side = p.sim_box.side as f32;
    for (k, v) in start.v.iter().enumerate() {
        let want = if p.anchored[k] {
            [0.0; 3]
        } else {
            [0.3 / side, -0.6 / side, 0.9 / side]
        };
        for a in 0..3 {
            assert!((v[a] - want[a]).abs() < 1e-6, "{v:?} vs {want:?}");
        }
    }
    assert!(matches!(
        p.uniform_start([f64::NAN, 0.0, 0.0]),
        Err(DriveError::BadVelocity(_))
    ));
}

#[test]
fn a_scene_that_simulates_nothing_is_refused() {
    // `Scene::load` already refuses an empty simulated region; the
    // particles refuse one too, naming the fix, for scenes changed in code.
    let (_dir, mut scene) = scene("");
    scene.simulated = vec![false; scene.simulated.len()];
    let err = SceneParticles::from_scene(&scene).unwrap_err();
    assert!(err.to_string().contains("regions.simulated"), "{err}");
}

#[test]
fn splats_follow_their_particles_on_the_gpu() {
    let ctx = common::gpu();
    let (_dir, scene) = scene(REGIONS);
    let p = SceneParticles::from_scene(&scene).unwrap();
    let splats = SplatBuffers::upload(&ctx, scene.gaussians()).unwrap();
    // A moved state: every particle displaced differently.
    let mut state = ParticleState::at_rest(p.rest.clone(), vec![[0.0; 3]; p.len()]);
    for (k, x) in state.x.iter_mut().enumerate() {
        x[0] += 0.01 * k as f32;
        x[1] -= 0.002 * k as f32;
        x[2] += 0.005;
    }
    let buffer = ctx
        .storage_from_slice("moved state", &state.to_packed())
        .unwrap();
    let motion = SplatMotion::new(&ctx, &p).unwrap();
    let mut encoder = physfit::gpu::encoder(&ctx, "test splat motion");
    motion.encode(&ctx, &mut encoder, &buffer, &splats).unwrap();
    ctx.queue.submit([encoder.finish()]);
    let means: Vec<[f32; 3]> = ctx.read_buffer(&splats.means).unwrap();
    let want = p.world_positions(&state);
    let rest = &scene.gaussians().means;
    let mut moved = vec![false; rest.len()];
    for (k, &i) in p.splat_indices.iter().enumerate() {
        moved[i as usize] = true;
        for a in 0..3 {
            assert!(
                (means[i as usize][a] - want[k][a]).abs() <= 1e-6 * (1.0 + want[k][a].abs()),
                "splat {i}: {:?} vs {:?}",
                means[i as usize],
                want[k]
            );
        }
    }
    // Splats that are not simulated keep their centres exactly.
    for (i, m) in means.iter().enumerate().take(rest.len()) {
        if !moved[i] {
            assert_eq!(*m, rest[i], "static splat {i} moved");
        }
    }
    assert!(moved.iter().any(|m| !m));
    // Buffers of another particle set or a smaller scene are refused.
    let short = ctx.storage_zeroed::<f32>("short state", 24).unwrap();
    let mut encoder = physfit::gpu::encoder(&ctx, "test splat motion");
    assert!(matches!(
        motion.encode(&ctx, &mut encoder, &short, &splats),
        Err(DriveError::Mismatch(_))
    ));
    let mut few = scene.gaussians().clone();
    few.means.truncate(2);
    few.rotations.truncate(2);
    few.log_scales.truncate(2);
    few.opacity_logits.truncate(2);
    few.sh.truncate(2);
    let few = SplatBuffers::upload(&ctx, &few).unwrap();
    let err = motion
        .encode(&ctx, &mut encoder, &buffer, &few)
        .unwrap_err();
    assert!(err.to_string().contains("2 splats"), "{err}");
}
