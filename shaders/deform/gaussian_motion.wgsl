// Gaussians follow the rigid motion of their drivers (src/deform/
// gaussian_motion.rs; docs/design.md § Drivers and the deformation of
// Gaussians): for each deformed Gaussian, centre x̄ + R·(X_g − X̄), written
// in world units (box_min + side·c, docs/design.md § Units and frames), and
// rotation q_R ⊗ q_g (raw: |q'| = |q_g|, so the rasterizer's normalisation
// sees what it saw at rest), into its splat's slots. Scales, opacity and
// colour, and every splat not in the deformed set (anchored, static), are
// left as they are. Bindings 0–3: deform/rigid_fit.
#import common/dispatch
#import deform/rigid_fit

// 3 f32 per splat, world units (src/splat/splat_buffers.rs).
@group(0) @binding(4) var<storage, read_write> means: array<f32>;
// 4 f32 per splat, (w, x, y, z).
@group(0) @binding(5) var<storage, read_write> rotations: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 64u);
    if i >= uniforms.gaussian_count {
        return;
    }
    let g = gaussians[i];
    let fit = rigid_fit(g);
    let c = fit.centroid + fit.r * rest_offset(fit, g.rest_centre);
    let world = uniforms.box_min_side.xyz + uniforms.box_min_side.w * c;
    let q = quat_mul(fit.q, g.rest_rotation);
    let s = g.splat;
    means[3u * s] = world.x;
    means[3u * s + 1u] = world.y;
    means[3u * s + 2u] = world.z;
    rotations[4u * s] = q.x;
    rotations[4u * s + 1u] = q.y;
    rotations[4u * s + 2u] = q.z;
    rotations[4u * s + 3u] = q.w;
}
