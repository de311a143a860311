// A particle's state record (STATE_STRIDE = 24 floats: x (3), v (3),
// C row-major (9), F row-major (9); the same layout holds ∂L/∂state),
// unpacked into vectors and matrices for every kernel that reads particles,
// and packed back for those that write them.
//
// Kernels bind state buffers as `array<vec4<f32>>`, one record being
// STATE_QUADS = 6 vec4s (the bytes are the host's AoS layout,
// src/mpm/layout.rs). Why: lavapipe compiles every storage access whose
// address differs between lanes into a loop over the SIMD lanes, so one
// vec4 access costs one such loop where four f32 accesses cost four; G2P
// took a third less CPU time with vec4 records (docs/benchmarks.md).
// Functions take and return values (naga takes no storage pointers as
// function parameters): the kernel copies its STATE_QUADS vec4s out of its
// own binding.
#import mpm/params

const STATE_QUADS: u32 = STATE_STRIDE / 4u;

struct ParticleState {
    x: vec3<f32>,
    v: vec3<f32>,
    c: mat3x3<f32>,
    f: mat3x3<f32>,
}

fn particle_state(q: array<vec4<f32>, STATE_QUADS>) -> ParticleState {
    let x = q[0].xyz;
    let v = vec3<f32>(q[0].w, q[1].x, q[1].y);
    let c = mat3_from_rows(
        vec3<f32>(q[1].z, q[1].w, q[2].x),
        q[2].yzw,
        q[3].xyz,
    );
    let f = mat3_from_rows(
        vec3<f32>(q[3].w, q[4].x, q[4].y),
        vec3<f32>(q[4].z, q[4].w, q[5].x),
        q[5].yzw,
    );
    return ParticleState(x, v, c, f);
}

// The record of (x, v, C, F) as STATE_QUADS vec4s (the inverse of
// `particle_state`).
fn state_quads(x: vec3<f32>, v: vec3<f32>, c: mat3x3<f32>, f: mat3x3<f32>) -> array<vec4<f32>, STATE_QUADS> {
    // Rows of the row-major matrices.
    let ct = transpose(c);
    let ft = transpose(f);
    return array<vec4<f32>, STATE_QUADS>(
        vec4<f32>(x, v.x),
        vec4<f32>(v.yz, ct[0].xy),
        vec4<f32>(ct[0].z, ct[1]),
        vec4<f32>(ct[2], ft[0].x),
        vec4<f32>(ft[0].yz, ft[1].xy),
        vec4<f32>(ft[1].z, ft[2]),
    );
}
