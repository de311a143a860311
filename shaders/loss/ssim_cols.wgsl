// SSIM forward, pass 2 of 2 (src/loss/ssim_cols.rs), for one channel:
// 1. the vertical 11-tap sums of ssim_rows' output: the window moments
//    a = μx, b = μy, m = E[x·y], q = E[(x − y)²] (zero padding);
// 2. per pixel, the dissimilarity 1 − SSIM and its derivatives with respect
//    to (a, m, q), written to `maps` for the backward passes;
// 3. per workgroup, the sums of |x − y|, 1 − SSIM and (x − y)² over its
//    pixels (weighted by a loss mask when there is one: src/loss/mod.rs), reduced in workgroup memory in a fixed tree order and written
//    to `partials` (deterministic; reduce_terms sums the partials).
//
// With δ = (a − b)², ε = q − δ (= σx² + σy² − 2σxy), A = 2ab + C1,
// B = 2(m − ab) + C2 (= 2σxy + C2), C = A + δ (= μx² + μy² + C1) and
// D = B + ε (= σx² + σy² + C2), SSIM = AB / (CD) is 3DGS's formula; only the
// sum σx² + σy² enters it, which is why four moments suffice. The forms
// below avoid cancellation and vanish exactly when x = y (then δ = ε = 0,
// C = A, D = B bit for bit, whatever the compiler fuses):
//   1 − SSIM      = (Aε + δD) / Q,                         Q = CD
//   ∂(1−SSIM)/∂a  = −(2/Q)·((b − a)(B − A) + a((B − A)(1 − SSIM) − SSIM·(ε − δ)))
//   ∂(1−SSIM)/∂m  = −(2/Q)·(A(1 − SSIM) − SSIM·δ)
//   ∂(1−SSIM)/∂q  = SSIM / D
#import common/dispatch
#import loss/uniforms

// Binding 0: the channel's uniforms (loss/uniforms).
@group(0) @binding(1) var<storage, read> image: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> reference: array<u32>;
@group(0) @binding(3) var<storage, read> decode: array<f32>;
// ssim_rows' horizontal sums of (x, y, xy, (x − y)²).
@group(0) @binding(4) var<storage, read> rows: array<vec4<f32>>;
// Per pixel: ∂(1 − SSIM)/∂(a, m, q), .w = 1 − SSIM.
@group(0) @binding(5) var<storage, read_write> maps: array<vec4<f32>>;
// Per channel and workgroup: Σ|x − y|, Σ(1 − SSIM), Σ(x − y)², 0, each
// pixel's terms weighted by its mask weight m when the frame is masked.
@group(0) @binding(6) var<storage, read_write> partials: array<vec4<f32>>;
// The loss mask, 0/1 bytes (read only when uniforms.masked is 1).
@group(0) @binding(7) var<storage, read> mask: array<u32>;

var<workgroup> sums: array<vec4<f32>, 256>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) global_id: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
    @builtin(workgroup_id) group_id: vec3<u32>,
    @builtin(num_workgroups) num_workgroups: vec3<u32>,
) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    var term = vec4<f32>(0.0);
    if i < uniforms.pixel_count {
        let w = uniforms.width;
        let x = i % w;
        let y = i / w;
        var mom = vec4<f32>(0.0);
        for (var k = 0u; k < WINDOW_TAPS; k++) {
            let yy = i32(y) + i32(k) - WINDOW_RADIUS;
            if yy >= 0 && yy < i32(uniforms.height) {
                mom += window_tap(k) * rows[u32(yy) * w + x];
            }
        }
        let a = mom.x;
        let b = mom.y;
        let m = mom.z;
        let q = mom.w;
        let ab = a - b;
        let delta = ab * ab;
        let eps = q - delta;
        let big_a = 2.0 * (a * b) + SSIM_C1;
        let big_b = 2.0 * (m - a * b) + SSIM_C2;
        let big_c = big_a + delta;
        let big_d = big_b + eps;
        let big_q = big_c * big_d;
        let dis = (big_a * eps + delta * big_d) / big_q;
        let s = 1.0 - dis;
        let two_q = 2.0 / big_q;
        let b_minus_a = big_b - big_a;
        let d_a = -two_q * ((b - a) * b_minus_a + a * (b_minus_a * dis - s * (eps - delta)));
        let d_m = -two_q * (big_a * dis - s * delta);
        let d_q = s / big_d;
        var derivatives = vec4<f32>(d_a, d_m, d_q, dis);
        let c = uniforms.channel;
        let e = image[i][c] - decode[channel_byte(reference[i], c)];
        term = vec4<f32>(abs(e), dis, e * e, 0.0);
        if uniforms.masked != 0u {
            // An ignored pixel's 1 − SSIM enters neither the loss nor, through
            // the derivative maps, the gradient (.w stays the value: unused).
            let weight = mask_weight(mask[i / 4u], i);
            term *= weight;
            derivatives = vec4<f32>(weight * derivatives.xyz, dis);
        }
        maps[i] = derivatives;
    }
    sums[local] = term;
    workgroupBarrier();
    for (var stride = 128u; stride > 0u; stride >>= 1u) {
        if local < stride {
            sums[local] += sums[local + stride];
        }
        workgroupBarrier();
    }
    if local == 0u {
        let group = group_id.x + group_id.y * num_workgroups.x;
        partials[uniforms.channel * uniforms.partials_per_channel + group] = sums[0];
    }
}
