//! f64 CPU twin of the image loss (docs/design.md
//! § Loss, parameters, fit; § Verification strategy 1–3): the test oracle
//! for [`crate::loss::ImageLoss`]. (TV runs on the CPU in f64 already,
//! [`crate::loss::tv`], and is checked by finite differences directly.)
//!
//! Image loss per frame and view, as the paper (PhysDreamer eq. 10) and 3DGS
//! compute it:
//! `L = w_l1 · mean|I − Î| + w_ssim · (1 − mean SSIM(I, Î))`, the means over
//! pixels and the three RGB channels (alpha is not compared). SSIM is 3DGS's
//! `utils/loss_utils.py::ssim`: per channel, an 11×11 Gaussian window of
//! σ = 1.5 (the outer product of the normalised 1-D window, the loss's own
//! [`crate::loss::gaussian_window`]), `conv2d` with zero padding
//! `window // 2` (so the window sums to less than 1 near the border),
//! `C1 = 0.01²`, `C2 = 0.03²`, and
//! `SSIM = (2μxμy + C1)(2σxy + C2) / ((μx² + μy² + C1)(σx² + σy² + C2))`
//! with `σx² = E[x²] − μx²`, `σxy = E[xy] − μxμy` (window-weighted means).
//!
//! Deliberately not the GPU's algorithm, so that it checks it
//! independently: the window sums are direct 2-D sums over the 121 taps (the
//! GPU uses two separable 1-D passes), the five moments are the textbook
//! ones (the GPU convolves `x`, `y`, `xy` and `(x − y)²`), and the gradient
//! is the plain chain rule through `μx`, `σx²`, `σxy` (the GPU uses
//! rearranged forms that vanish exactly at `I = Î`). Simple rather than fast:
//! O(pixels · 121).
//!
//! The L1 term's derivative at `I = Î` is taken as 0 (PyTorch's
//! `sign(0) = 0`), as on the GPU.
//!
//! With a loss mask ([`masked_image_loss`]) every pixel
//! `p`'s `|I − Î|`, `1 − SSIM_p` and `(I − Î)²` is weighted by `m_p ∈ {0, 1}`
//! and the means are over the counted pixels, `3 · Σ m_p` values; SSIM_p of
//! a counted pixel still reads its whole window (see [`crate::loss`]).

use crate::loss::{gaussian_window, SSIM_WINDOW};

/// SSIM's luminance constant `(0.01 · L)²` for the dynamic range L = 1.
pub const SSIM_C1: f64 = 0.01 * 0.01;
/// SSIM's contrast constant `(0.03 · L)²`.
pub const SSIM_C2: f64 = 0.03 * 0.03;

/// An RGB image in f64, row-major (`y · width + x`).
#[derive(Clone, Debug, PartialEq)]
pub struct Rgb64 {
    /// Width, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// `width · height` pixels.
    pub pixels: Vec<[f64; 3]>,
}

impl Rgb64 {
    /// The RGB part of RGBA pixels (alpha dropped: the loss ignores it).
    pub fn from_rgba(width: usize, height: usize, pixels: &[[f32; 4]]) -> Self {
        assert_eq!(pixels.len(), width * height, "pixel count");
        Self {
            width,
            height,
            pixels: pixels
                .iter()
                .map(|p| [p[0] as f64, p[1] as f64, p[2] as f64])
                .collect(),
        }
    }
}

/// Weights of the two image-loss terms (docs/design.md: 0.1 and 0.9).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossWeights64 {
    /// Weight of `mean|I − Î|`.
    pub l1: f64,
    /// Weight of `1 − mean SSIM`.
    pub ssim: f64,
}

impl Default for LossWeights64 {
    fn default() -> Self {
        Self { l1: 0.1, ssim: 0.9 }
    }
}

/// The image loss of one frame and its terms.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImageLoss64 {
    /// `w_l1 · l1 + w_ssim · (1 − ssim)`.
    pub loss: f64,
    /// `mean|I − Î|` over pixels and RGB.
    pub l1: f64,
    /// Mean SSIM over pixels and RGB.
    pub ssim: f64,
    /// `mean (I − Î)²` over pixels and RGB.
    pub mse: f64,
}

impl ImageLoss64 {
    /// `10 · log10(1 / mse)` (dynamic range 1); `+∞` for identical images.
    pub fn psnr(&self) -> f64 {
        if self.mse == 0.0 {
            f64::INFINITY
        } else {
            -10.0 * self.mse.log10()
        }
    }
}

/// Window moments of one pixel and channel.
#[derive(Clone, Copy, Debug)]
struct Moments {
    mu_x: f64,
    mu_y: f64,
    var_x: f64,
    var_y: f64,
    cov_xy: f64,
}

fn check_sizes(x: &Rgb64, y: &Rgb64) {
    assert_eq!(
        (x.width, x.height),
        (y.width, y.height),
        "render and reference sizes differ"
    );
    assert_eq!(x.pixels.len(), x.width * x.height, "render pixel count");
    assert_eq!(y.pixels.len(), y.width * y.height, "reference pixel count");
}

/// Calls `f(q, weight)` for every in-image pixel `q` under the 2-D window
/// centred on `(px, py)` (zero padding: taps outside the image are dropped).
fn for_window(
    width: usize,
    height: usize,
    px: usize,
    py: usize,
    w: &[f64; SSIM_WINDOW],
    mut f: impl FnMut(usize, f64),
) {
    let half = (SSIM_WINDOW / 2) as isize;
    for (j, wj) in w.iter().enumerate() {
        let qy = py as isize + j as isize - half;
        if qy < 0 || qy >= height as isize {
            continue;
        }
        for (i, wi) in w.iter().enumerate() {
            let qx = px as isize + i as isize - half;
            if qx < 0 || qx >= width as isize {
                continue;
            }
            f(qy as usize * width + qx as usize, wj * wi);
        }
    }
}

fn moments(x: &Rgb64, y: &Rgb64, px: usize, py: usize, c: usize) -> Moments {
    let w = gaussian_window();
    let (mut mx, mut my, mut xx, mut yy, mut xy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for_window(x.width, x.height, px, py, &w, |q, wq| {
        let (a, b) = (x.pixels[q][c], y.pixels[q][c]);
        mx += wq * a;
        my += wq * b;
        xx += wq * a * a;
        yy += wq * b * b;
        xy += wq * a * b;
    });
    Moments {
        mu_x: mx,
        mu_y: my,
        var_x: xx - mx * mx,
        var_y: yy - my * my,
        cov_xy: xy - mx * my,
    }
}

fn ssim_of(m: &Moments) -> f64 {
    let a = 2.0 * m.mu_x * m.mu_y + SSIM_C1;
    let b = 2.0 * m.cov_xy + SSIM_C2;
    let c = m.mu_x * m.mu_x + m.mu_y * m.mu_y + SSIM_C1;
    let d = m.var_x + m.var_y + SSIM_C2;
    a * b / (c * d)
}

/// The SSIM map of `x` against `y`: per pixel and RGB channel (3DGS's
/// `ssim_map`, before its mean).
pub fn ssim_map(x: &Rgb64, y: &Rgb64) -> Vec<[f64; 3]> {
    check_sizes(x, y);
    (0..x.pixels.len())
        .map(|p| {
            let (px, py) = (p % x.width, p / x.width);
            std::array::from_fn(|c| ssim_of(&moments(x, y, px, py, c)))
        })
        .collect()
}

/// Per-pixel weights of an optional mask (1 everywhere without one) and the
/// number of values each mean is over, `3 · Σ m_p`.
fn pixel_weights(render: &Rgb64, mask: Option<&[bool]>) -> (Vec<f64>, f64) {
    let weights: Vec<f64> = match mask {
        None => vec![1.0; render.pixels.len()],
        Some(m) => {
            assert_eq!(m.len(), render.pixels.len(), "mask pixel count");
            m.iter().map(|&c| if c { 1.0 } else { 0.0 }).collect()
        }
    };
    let counted = weights.iter().sum::<f64>();
    assert!(counted > 0.0, "the mask counts no pixel");
    (weights, 3.0 * counted)
}

/// The image loss of `render` against `reference` (module doc).
///
/// Panics when the sizes differ (a test oracle; the GPU loss returns a
/// typed error instead).
pub fn image_loss(render: &Rgb64, reference: &Rgb64, weights: LossWeights64) -> ImageLoss64 {
    weighted_image_loss(render, reference, None, weights)
}

/// [`image_loss`] limited to the pixels where `mask` is true (module doc).
///
/// Panics when the sizes differ or the mask counts no pixel.
pub fn masked_image_loss(
    render: &Rgb64,
    reference: &Rgb64,
    mask: &[bool],
    weights: LossWeights64,
) -> ImageLoss64 {
    weighted_image_loss(render, reference, Some(mask), weights)
}

fn weighted_image_loss(
    render: &Rgb64,
    reference: &Rgb64,
    mask: Option<&[bool]>,
    weights: LossWeights64,
) -> ImageLoss64 {
    check_sizes(render, reference);
    let (m, n) = pixel_weights(render, mask);
    let map = ssim_map(render, reference);
    let ssim = map
        .iter()
        .zip(&m)
        .map(|(s, mp)| mp * s.iter().sum::<f64>())
        .sum::<f64>()
        / n;
    let (mut l1, mut se) = (0.0, 0.0);
    for ((a, b), mp) in render.pixels.iter().zip(&reference.pixels).zip(&m) {
        for c in 0..3 {
            let e = a[c] - b[c];
            l1 += mp * e.abs();
            se += mp * e * e;
        }
    }
    let (l1, mse) = (l1 / n, se / n);
    ImageLoss64 {
        loss: weights.l1 * l1 + weights.ssim * (1.0 - ssim),
        l1,
        ssim,
        mse,
    }
}

/// `∂L/∂render` per pixel and RGB channel for [`image_loss`].
///
/// Per pixel `p` and channel, with `A = 2μxμy + C1`, `B = 2σxy + C2`,
/// `C = μx² + μy² + C1`, `D = σx² + σy² + C2`, `s = AB/(CD)`:
/// `∂s/∂μx = 2μyB/(CD) − 2μx·s/C` (σ's held), `∂s/∂σx² = −s/D`,
/// `∂s/∂σxy = 2A/(CD)`; and through `σx² = E[x²] − μx²`,
/// `σxy = E[xy] − μxμy`, for every pixel `q` under `p`'s window with weight
/// `w`: `∂s_p/∂x_q = w·(∂s/∂μx − 2μx·∂s/∂σx² − μy·∂s/∂σxy + 2x_q·∂s/∂σx² + y_q·∂s/∂σxy)`.
pub fn image_loss_gradient(
    render: &Rgb64,
    reference: &Rgb64,
    weights: LossWeights64,
) -> Vec<[f64; 3]> {
    weighted_image_loss_gradient(render, reference, None, weights)
}

/// `∂L/∂render` for [`masked_image_loss`]: [`image_loss_gradient`]'s terms,
/// pixel `p`'s weighted by `m_p` (an ignored pixel's SSIM contributes
/// nothing, though a counted pixel's SSIM still reaches into it).
pub fn masked_image_loss_gradient(
    render: &Rgb64,
    reference: &Rgb64,
    mask: &[bool],
    weights: LossWeights64,
) -> Vec<[f64; 3]> {
    weighted_image_loss_gradient(render, reference, Some(mask), weights)
}

fn weighted_image_loss_gradient(
    render: &Rgb64,
    reference: &Rgb64,
    mask: Option<&[bool]>,
    weights: LossWeights64,
) -> Vec<[f64; 3]> {
    check_sizes(render, reference);
    let (m, n) = pixel_weights(render, mask);
    let w = gaussian_window();
    let mut grad = vec![[0.0; 3]; render.pixels.len()];
    for ((g, (a, b)), mp) in grad
        .iter_mut()
        .zip(render.pixels.iter().zip(&reference.pixels))
        .zip(&m)
    {
        for c in 0..3 {
            let e = a[c] - b[c];
            let sign = if e > 0.0 {
                1.0
            } else if e < 0.0 {
                -1.0
            } else {
                0.0
            };
            g[c] += mp * weights.l1 * sign / n;
        }
    }
    let scale = -weights.ssim / n;
    // `c` indexes the channel of every pixel under the window, not one array.
    #[allow(clippy::needless_range_loop)]
    for py in 0..render.height {
        for px in 0..render.width {
            let mp = m[py * render.width + px];
            if mp == 0.0 {
                continue;
            }
            for c in 0..3 {
                let m = moments(render, reference, px, py, c);
                let a = 2.0 * m.mu_x * m.mu_y + SSIM_C1;
                let b = 2.0 * m.cov_xy + SSIM_C2;
                let cc = m.mu_x * m.mu_x + m.mu_y * m.mu_y + SSIM_C1;
                let d = m.var_x + m.var_y + SSIM_C2;
                let s = a * b / (cc * d);
                let ds_dmu = 2.0 * m.mu_y * b / (cc * d) - 2.0 * m.mu_x * s / cc;
                let ds_dvar = -s / d;
                let ds_dcov = 2.0 * a / (cc * d);
                let constant = ds_dmu - 2.0 * m.mu_x * ds_dvar - m.mu_y * ds_dcov;
                for_window(render.width, render.height, px, py, &w, |q, wq| {
                    let (xq, yq) = (render.pixels[q][c], reference.pixels[q][c]);
                    grad[q][c] += mp * scale * wq * (constant + 2.0 * xq * ds_dvar + yq * ds_dcov);
                });
            }
        }
    }
    grad
}
