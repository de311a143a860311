// Shared declarations of the image loss (src/loss/uniforms.rs; docs/design.md
// § Loss, parameters, fit): the per-channel uniforms, SSIM's constants and
// the 11-tap Gaussian window. Imported by every shaders/loss SSIM kernel so
// the forward and backward passes can never disagree on a constant. It also
// declares their binding 0, the uniforms, which all four kernels share.

// SSIM's constants (0.01·L)² and (0.03·L)² for the dynamic range L = 1.
const SSIM_C1: f32 = 0.0001;
const SSIM_C2: f32 = 0.0009;
// 11 taps, 5 on each side of the centre (3DGS: window_size 11, padding 5).
const WINDOW_TAPS: u32 = 11u;
const WINDOW_RADIUS: i32 = 5;

struct LossUniforms {
    width: u32,
    height: u32,
    pixel_count: u32,
    // The RGB channel this dispatch works on (0, 1, 2).
    channel: u32,
    // Workgroup partial sums per channel (the stride of `partials`).
    partials_per_channel: u32,
    // 1: the frame has a loss mask (the kernel's `mask` binding); 0: every
    // pixel counts and `mask` is a placeholder that must not be read.
    masked: u32,
    _pad1: u32,
    _pad2: u32,
    // x: w_l1 / (3·counted), y: w_ssim / (3·counted), counted = the pixels
    // the mask counts (all without one); zw unused.
    coefficients: vec4<f32>,
    // The normalised 1-D Gaussian window, taps 0..10 (slot 11 is 0).
    window: array<vec4<f32>, 3>,
}

@group(0) @binding(0) var<uniform> uniforms: LossUniforms;

fn window_tap(k: u32) -> f32 {
    return uniforms.window[k / 4u][k % 4u];
}

// Byte `c` (0 = red) of a packed 8-bit RGBA reference pixel; the shaders
// decode it through the exact table `decode[b] = b / 255` (src/loss/reference_frame.rs).
fn channel_byte(packed: u32, c: u32) -> u32 {
    return (packed >> (8u * c)) & 0xffu;
}

// The weight of pixel `i` (0 or 1, exact) from `word`, the u32 of a loss
// mask that holds it (word i / 4, byte i % 4: src/loss/reference_mask.rs).
// Only called when `uniforms.masked` is 1, so that the unmasked loss runs
// exactly the arithmetic it ran before masks existed.
fn mask_weight(word: u32, i: u32) -> f32 {
    return f32((word >> (8u * (i % 4u))) & 0xffu);
}
