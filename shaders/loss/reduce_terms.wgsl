// Final level of the loss reductions (src/loss/reduce_terms.rs): one
// workgroup sums `count` vec4 partial sums (thread t takes partials t,
// t + 256, … in order, then a fixed tree in workgroup memory), so the result
// is deterministic: the same inputs give the same bits on every run and
// adapter schedule (no atomics). Writes, to slot `slot` of `terms`,
//   m = sums · scale,  terms[slot] = (dot(weights, m), m.x, m.y, m.z).
// For the image loss: m = (mean|x − y|, mean(1 − SSIM), MSE) and
// terms = (loss, L1, 1 − SSIM, MSE).

struct ReduceUniforms {
    count: u32,
    slot: u32,
    _pad0: u32,
    _pad1: u32,
    scale: vec4<f32>,
    weights: vec4<f32>,
}

@group(0) @binding(0) var<uniform> uniforms: ReduceUniforms;
@group(0) @binding(1) var<storage, read> partials: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> terms: array<vec4<f32>>;

var<workgroup> sums: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) local: u32) {
    var acc = vec4<f32>(0.0);
    // `count` is a buffer length (far below 2³²): j cannot wrap.
    for (var j = local; j < uniforms.count; j += 256u) {
        acc += partials[j];
    }
    sums[local] = acc;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if local < stride {
            sums[local] += sums[local + stride];
        }
        workgroupBarrier();
    }
    if local == 0u {
        let m = sums[0] * uniforms.scale;
        terms[uniforms.slot] = vec4<f32>(dot(uniforms.weights, m), m.x, m.y, m.z);
    }
}
