// Shared declarations of the splat rasterizer (docs/design.md § Gaussian splatting):
// the per-frame uniforms, the projected-splat record, tile constants and the
// blending thresholds. Imported by every shaders/splat kernel so the forward
// and backward passes can never disagree on a constant.

const TILE_SIZE: u32 = 16u;
const TILE_PIXELS: u32 = 256u;
// Alpha clamp, alpha skip threshold and transmittance stop (classic 3DGS).
const ALPHA_MAX: f32 = 0.99;
const ALPHA_MIN: f32 = 0.00392156862745098; // 1/255
const TRANSMITTANCE_MIN: f32 = 0.0001;
// The range of a tile that static splats alone reach, when the frame is
// rendered over a static backdrop (static_tiles.wgsl): blend leaves its
// pixels, the backward walks nothing (start == end). No tile's list starts
// there: the intersection count is below 2³² − 1.
const SKIPPED_TILE: u32 = 0xffffffffu;
// EWA low-pass dilation added to the 2D covariance diagonal, px².
const DILATION: f32 = 0.3;

struct RasterUniforms {
    // Rows of the world-to-camera rotation, translation in .w.
    world_to_camera: array<vec4<f32>, 3>,
    // Camera centre in world coordinates (xyz).
    camera_position: vec4<f32>,
    focal: vec2<f32>,
    principal: vec2<f32>,
    image_size: vec2<u32>,
    tile_count: vec2<u32>,
    // Background RGB, .w unused.
    background: vec4<f32>,
    near: f32,
    // 1.3 · tan(half field of view) in x and y: the Jacobian clamp of x/z, y/z.
    limit_x: f32,
    limit_y: f32,
    splat_count: u32,
    sh_degree: u32,
    coeffs_per_splat: u32,
    intersection_count: u32,
    _pad0: u32,
}

// One projected splat: everything blending needs.
struct ProjectedSplat {
    // Pixel-space mean (x, y), camera depth z, opacity (sigmoid of the logit).
    mean_depth_opacity: vec4<f32>,
    // Packed conic (inverse 2D covariance) a, b, c: [[a, b], [b, c]]; .w unused.
    conic: vec4<f32>,
    // Colour (SH + 0.5, clamped >= 0); .w unused.
    color: vec4<f32>,
}

// Gaussian falloff exponent at pixel offset `d = mean - pixel_centre`:
// sigma = ½ dᵀ conic d (gsplat's arrangement of the terms, forward and backward).
fn conic_power(conic: vec3<f32>, d: vec2<f32>) -> f32 {
    return 0.5 * (conic.x * d.x * d.x + conic.z * d.y * d.y) + conic.y * d.x * d.y;
}
