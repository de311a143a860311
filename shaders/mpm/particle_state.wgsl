// A particle's state record (STATE_STRIDE = 24 floats: x (3), v (3),
// C row-major (9), F row-major (9); the same layout holds ∂L/∂state) unpacked
// into vectors and matrices, for every kernel that reads particles. Takes the
// record by value (naga takes no storage pointers as function parameters):
// the kernel copies its STATE_STRIDE floats out of its own binding.
#import mpm/params

struct ParticleState {
    x: vec3<f32>,
    v: vec3<f32>,
    c: mat3x3<f32>,
    f: mat3x3<f32>,
}

fn particle_state(r: array<f32, STATE_STRIDE>) -> ParticleState {
    let x = vec3<f32>(r[0], r[1], r[2]);
    let v = vec3<f32>(r[3], r[4], r[5]);
    let c = mat3_from_rows(
        vec3<f32>(r[6], r[7], r[8]),
        vec3<f32>(r[9], r[10], r[11]),
        vec3<f32>(r[12], r[13], r[14]),
    );
    let f = mat3_from_rows(
        vec3<f32>(r[15], r[16], r[17]),
        vec3<f32>(r[18], r[19], r[20]),
        vec3<f32>(r[21], r[22], r[23]),
    );
    return ParticleState(x, v, c, f);
}
