//! The SSIM window of 3DGS (`utils/loss_utils.py`): one definition for the
//! GPU loss, which uploads it rounded once to f32
//! ([`super::uniforms::window_f32`]), and for the f64 twin the tests check
//! the loss against.

/// Side of the SSIM window (3DGS `window_size`).
pub const SSIM_WINDOW: usize = 11;
/// Standard deviation of the SSIM window, pixels.
pub const SSIM_SIGMA: f64 = 1.5;

/// The normalised 1-D Gaussian window (3DGS `gaussian(11, 1.5)`):
/// `exp(−(i − 5)² / (2σ²))` over its sum. The 2-D window is its outer
/// product with itself.
pub fn gaussian_window() -> [f64; SSIM_WINDOW] {
    let half = (SSIM_WINDOW / 2) as f64;
    let mut w = [0.0; SSIM_WINDOW];
    for (i, v) in w.iter_mut().enumerate() {
        let d = i as f64 - half;
        *v = (-d * d / (2.0 * SSIM_SIGMA * SSIM_SIGMA)).exp();
    }
    let sum: f64 = w.iter().sum();
    w.map(|v| v / sum)
}
