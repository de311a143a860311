// Particles → splats (src/drive/particles_to_splats.rs): while every
// simulated splat is one MPM particle (DESIGN.md § Drivers: the K-Means
// drivers and the deformation of Gaussians replace this), splat
// `splat_index[p]`'s centre is particle p's position mapped back to world
// units, `box_min + side · x_p` (DESIGN.md § Units and frames: the
// simulation cube [min, min + side]³ is [0, 1]³ inside the simulator).
// Other splats keep their centres.
#import common/dispatch
#import mpm/params

struct Uniforms {
    // xyz: the cube's lower corner in world units; w: its side.
    box_min_side: vec4<f32>,
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> uniforms: Uniforms;
// MPM states as records of STATE_STRIDE / 4 vec4s, x in the first three
// floats (src/mpm/layout.rs).
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> splat_index: array<u32>;
// 3 f32 per splat (src/splat/splat_buffers.rs).
@group(0) @binding(3) var<storage, read_write> means: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let p = flat_thread_index(global_id, num_workgroups, 256u);
    if p >= uniforms.count {
        return;
    }
    let x = state[p * (STATE_STRIDE / 4u)].xyz;
    let world = uniforms.box_min_side.xyz + uniforms.box_min_side.w * x;
    let s = splat_index[p];
    means[3u * s] = world.x;
    means[3u * s + 1u] = world.y;
    means[3u * s + 2u] = world.z;
}
