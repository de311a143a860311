// The splats' parameters and the frame's uniforms, bound at 0–5 by every
// kernel that reads them (project.wgsl, project_adjoint.wgsl,
// camera_adjoint.wgsl; src/splat/splat_buffers.rs documents the layouts),
// and the per-splat loads they share. Declared once here so that the three
// kernels cannot disagree on a binding or a layout.
#import splat/types

@group(0) @binding(0) var<uniform> u: RasterUniforms;
@group(0) @binding(1) var<storage, read> means: array<f32>;
@group(0) @binding(2) var<storage, read> rotations: array<f32>;
@group(0) @binding(3) var<storage, read> log_scales: array<f32>;
@group(0) @binding(4) var<storage, read> opacity_logits: array<f32>;
@group(0) @binding(5) var<storage, read> sh: array<f32>;

// World-space mean of splat `i`.
fn splat_mean(i: u32) -> vec3<f32> {
    return vec3<f32>(means[3u * i], means[3u * i + 1u], means[3u * i + 2u]);
}

// Raw (unnormalised) quaternion (w, x, y, z) of splat `i`.
fn splat_quaternion(i: u32) -> vec4<f32> {
    return vec4<f32>(rotations[4u * i], rotations[4u * i + 1u], rotations[4u * i + 2u], rotations[4u * i + 3u]);
}

// Log-scales of splat `i`.
fn splat_log_scale(i: u32) -> vec3<f32> {
    return vec3<f32>(log_scales[3u * i], log_scales[3u * i + 1u], log_scales[3u * i + 2u]);
}
