// SSIM backward, pass 1 of 2 (src/loss/ssim_grad_rows.rs), for one channel:
// the horizontal 11-tap sums of the per-pixel derivatives ssim_cols wrote.
// The window is symmetric and the padding is zero, so the adjoint of the
// forward's same-size convolution is the same convolution: the backward
// blurs the derivative maps exactly as the forward blurred the moments.
#import common/dispatch
#import loss/uniforms

// Binding 0: the channel's uniforms (loss/uniforms).
// ∂(1 − SSIM)/∂(a, m, q) per pixel (.w unused here).
@group(0) @binding(1) var<storage, read> maps: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> rows: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.pixel_count {
        return;
    }
    let w = uniforms.width;
    let x = i % w;
    let row = i - x;
    var acc = vec4<f32>(0.0);
    for (var k = 0u; k < WINDOW_TAPS; k++) {
        let xx = i32(x) + i32(k) - WINDOW_RADIUS;
        if xx >= 0 && xx < i32(w) {
            acc += window_tap(k) * maps[row + u32(xx)];
        }
    }
    rows[i] = vec4<f32>(acc.xyz, 0.0);
}
