// A view's colour correction (src/loss/color_correction.rs,
// src/scene/color_correction.rs): per RGB channel c' = clamp(a·c + b, 0, 1)
// on the composited render, alpha passed through. Two entry points over one
// set of bindings:
// - `apply`: corrected[i] from image[i];
// - `backward`: ∂L/∂image[i] = a·∂L/∂corrected[i] where 0 < a·c + b < 1
//   (the clamp is inactive), else 0; the alpha gradient passed through.
// Both compute a·c + b with the one function `affine`, so the backward's
// mask is the set of values the forward did not clamp.
#import common/dispatch

struct ColorCorrectionUniforms {
    pixel_count: u32,
    _pad1: u32,
    _pad2: u32,
    _pad3: u32,
    // Gain per RGB channel; w unused (1).
    gain: vec4<f32>,
    // Offset per RGB channel; w unused (0).
    offset: vec4<f32>,
}

@group(0) @binding(0) var<uniform> uniforms: ColorCorrectionUniforms;
// The uncorrected render: vec4<f32> per pixel, row-major (src/splat/mod.rs).
@group(0) @binding(1) var<storage, read> image: array<vec4<f32>>;
// ∂L/∂corrected, vec4<f32> per pixel (read by `backward`; a placeholder for
// `apply`).
@group(0) @binding(2) var<storage, read> grad_corrected: array<vec4<f32>>;
// The corrected render (written by `apply`).
@group(0) @binding(3) var<storage, read_write> corrected: array<vec4<f32>>;
// ∂L/∂image (written by `backward`).
@group(0) @binding(4) var<storage, read_write> grad_image: array<vec4<f32>>;

fn affine(c: vec3<f32>) -> vec3<f32> {
    return uniforms.gain.xyz * c + uniforms.offset.xyz;
}

@compute @workgroup_size(256)
fn apply(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.pixel_count {
        return;
    }
    let p = image[i];
    corrected[i] = vec4<f32>(clamp(affine(p.xyz), vec3<f32>(0.0), vec3<f32>(1.0)), p.w);
}

@compute @workgroup_size(256)
fn backward(@builtin(global_invocation_id) global_id: vec3<u32>, @builtin(num_workgroups) num_workgroups: vec3<u32>) {
    let i = flat_thread_index(global_id, num_workgroups, 256u);
    if i >= uniforms.pixel_count {
        return;
    }
    let z = affine(image[i].xyz);
    let g = grad_corrected[i];
    let inside = z > vec3<f32>(0.0) & z < vec3<f32>(1.0);
    let rgb = select(vec3<f32>(0.0), uniforms.gain.xyz * g.xyz, inside);
    grad_image[i] = vec4<f32>(rgb, g.w);
}
