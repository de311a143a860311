// SSIM forward, pass 1 of 2 (src/loss/ssim_rows.rs): for one channel, the
// horizontal 11-tap Gaussian sums of (x, y, x·y, (x − y)²) per pixel, with
// x the render and y the reference, zero padding (taps outside the image
// are dropped). ssim_cols sums these vertically, which gives the 2-D window
// sums of 3DGS's conv2d (the window is the outer product of the 1-D one).
// All four moments are accumulated as one vec4, so that x and y go through
// identical arithmetic (identical images give bit-identical μx and μy).
#import common/dispatch
#import loss/uniforms

// Binding 0: the channel's uniforms (loss/uniforms).
// The render: vec4<f32> per pixel, row-major (src/splat/mod.rs).
@group(0) @binding(1) var<storage, read> image: array<vec4<f32>>;
// The reference frame: packed 8-bit RGBA per pixel, red in the low byte.
@group(0) @binding(2) var<storage, read> reference: array<u32>;
// decode[b] = b / 255, 256 entries.
@group(0) @binding(3) var<storage, read> decode: array<f32>;
@group(0) @binding(4) var<storage, read_write> rows: array<vec4<f32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.pixel_count {
        return;
    }
    let w = uniforms.width;
    let x = i % w;
    let row = i - x;
    let c = uniforms.channel;
    var acc = vec4<f32>(0.0);
    for (var k = 0u; k < WINDOW_TAPS; k++) {
        let xx = i32(x) + i32(k) - WINDOW_RADIUS;
        if xx >= 0 && xx < i32(w) {
            let p = row + u32(xx);
            let a = image[p][c];
            let b = decode[channel_byte(reference[p], c)];
            let e = a - b;
            acc += window_tap(k) * vec4<f32>(a, b, a * b, e * e);
        }
    }
    rows[i] = acc;
}
