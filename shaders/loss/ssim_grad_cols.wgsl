// SSIM backward, pass 2 of 2, and the loss gradient (src/loss/ssim_grad_cols.rs),
// for one channel: the vertical 11-tap sums of ssim_grad_rows' output give
// Σ_p w_pq ∂(1 − SSIM_p)/∂(a, m, q) =: (ga, gm, gq) at pixel q, and since
// ∂a_p/∂x_q = w_pq, ∂m_p/∂x_q = w_pq·y_q, ∂q_p/∂x_q = 2·w_pq·(x_q − y_q):
//   ∂L/∂x_q = w_l1/(3N)·sign(x_q − y_q) + w_ssim/(3N)·(ga + y_q·gm + 2(x_q − y_q)·gq),
// written to the channel's component of the gradient image (vec4<f32> per
// pixel, the layout Rasterizer::backward takes). sign(0) = 0 (PyTorch's
// convention for |·|). The red pass also writes the alpha gradient, 0.
#import common/dispatch
#import loss/uniforms

// Binding 0: the channel's uniforms (loss/uniforms).
@group(0) @binding(1) var<storage, read> image: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> reference: array<u32>;
@group(0) @binding(3) var<storage, read> decode: array<f32>;
@group(0) @binding(4) var<storage, read> rows: array<vec4<f32>>;
// The gradient image as 4 f32 per pixel (R, G, B, A).
@group(0) @binding(5) var<storage, read_write> grad_image: array<f32>;
// The loss mask, 0/1 bytes (read only when uniforms.masked is 1): the L1
// term of an ignored pixel has no gradient (its SSIM part was weighted in
// ssim_cols' derivative maps).
@group(0) @binding(6) var<storage, read> mask: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.pixel_count {
        return;
    }
    let w = uniforms.width;
    let x = i % w;
    let y = i / w;
    var g = vec4<f32>(0.0);
    for (var k = 0u; k < WINDOW_TAPS; k++) {
        let yy = i32(y) + i32(k) - WINDOW_RADIUS;
        if yy >= 0 && yy < i32(uniforms.height) {
            g += window_tap(k) * rows[u32(yy) * w + x];
        }
    }
    let c = uniforms.channel;
    let ref_value = decode[channel_byte(reference[i], c)];
    let e = image[i][c] - ref_value;
    let d_ssim = g.x + ref_value * g.y + 2.0 * e * g.z;
    var l1_slope = sign(e);
    if uniforms.masked != 0u {
        l1_slope *= mask_weight(mask[i / 4u], i);
    }
    grad_image[4u * i + c] = uniforms.coefficients.x * l1_slope + uniforms.coefficients.y * d_ssim;
    if c == 0u {
        grad_image[4u * i + 3u] = 0.0;
    }
}
