// Bounds of the grid nodes the particles' stencils touch this substep
// (src/mpm/grid_box.rs explains the active box; wrapper
// src/mpm/grid_bounds.rs): each invocation reduces 8 particles in registers,
// each workgroup reduces min(base) and max(base + 2) per axis in workgroup
// memory, then one global
// atomicMin/atomicMax per workgroup into `bounds` = [min xyz, max xyz]
// (reset by grid_box after it reads them).
#import common/dispatch
#import mpm/params
#import mpm/particle_state

@group(0) @binding(0) var<uniform> params: MpmParams;
@group(0) @binding(1) var<storage, read> state: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> bounds: array<atomic<u32>, 6>;

var<workgroup> local_bounds: array<atomic<u32>, 6>;

// Particles per invocation (src/mpm/grid_bounds.rs dispatches
// ⌈particles / PARTICLES_PER_THREAD⌉ invocations).
const PARTICLES_PER_THREAD: u32 = 8u;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    if local < 3u {
        atomicStore(&local_bounds[local], 0xffffffffu);
    } else if local < 6u {
        atomicStore(&local_bounds[local], 0u);
    }
    workgroupBarrier();
    // Each invocation reduces PARTICLES_PER_THREAD particles (t, t + T,
    // t + 2T, … with T the invocations launched) in registers first: on
    // CPU adapters every workgroup atomic is a per-lane loop.
    let t = flat_thread_index(global_id, num_workgroups, 256u);
    let launched = num_workgroups.x * num_workgroups.y * 256u;
    var lo = vec3<u32>(0xffffffffu);
    var hi = vec3<u32>(0u);
    var any_particle = false;
    for (var k = 0u; k < PARTICLES_PER_THREAD; k++) {
        let p = t + k * launched;
        if p >= params.particle_count {
            break;
        }
        let base = vec3<u32>(stencil(state[p * STATE_QUADS].xyz, params).base);
        lo = min(lo, base);
        hi = max(hi, base + vec3<u32>(2u));
        any_particle = true;
    }
    if any_particle {
        atomicMin(&local_bounds[0], lo.x);
        atomicMin(&local_bounds[1], lo.y);
        atomicMin(&local_bounds[2], lo.z);
        atomicMax(&local_bounds[3], hi.x);
        atomicMax(&local_bounds[4], hi.y);
        atomicMax(&local_bounds[5], hi.z);
    }
    workgroupBarrier();
    if local < 3u {
        atomicMin(&bounds[local], atomicLoad(&local_bounds[local]));
    } else if local < 6u {
        atomicMax(&bounds[local], atomicLoad(&local_bounds[local]));
    }
}
