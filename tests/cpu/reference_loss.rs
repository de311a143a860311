//! The f64 image-loss twin (src/reference/loss.rs) and the CPU TV
//! (src/loss/tv.rs) against central finite differences, identities of the
//! loss, 3DGS's SSIM window, and the 8-bit reference packing
//! (docs/design.md § Loss, parameters, fit; § Verification 1–2).

use physfit::loss::{
    gaussian_window, pack_rgba8, tv_scalar, tv_vector, unpack_rgba8, LossError, TV_EPSILON,
};
use physfit::reference::loss::{
    image_loss, image_loss_gradient, masked_image_loss, masked_image_loss_gradient, ssim_map,
    LossWeights64, Rgb64,
};

/// Deterministic generator (splitmix64), uniform in [0, 1).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A random reference and a render that differs from it by at least
/// `margin` in every channel (so finite differences stay off the L1 kink).
fn image_pair(width: usize, height: usize, seed: u64, margin: f64) -> (Rgb64, Rgb64) {
    let mut rng = Rng(seed);
    let mut render = Vec::new();
    let mut reference = Vec::new();
    for _ in 0..width * height {
        let mut x = [0.0; 3];
        let mut y = [0.0; 3];
        for c in 0..3 {
            y[c] = 0.1 + 0.8 * rng.next();
            let d = margin + 0.2 * rng.next();
            x[c] = if rng.next() < 0.5 { y[c] - d } else { y[c] + d };
        }
        render.push(x);
        reference.push(y);
    }
    let img = |pixels| Rgb64 {
        width,
        height,
        pixels,
    };
    (img(render), img(reference))
}

fn central_difference(mut f: impl FnMut(f64) -> f64, h: f64) -> f64 {
    (f(h) - f(-h)) / (2.0 * h)
}

/// Max over components of |a − b| / max(|b|, floor).
fn max_rel(a: &[f64], b: &[f64], floor: f64) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs() / y.abs().max(floor))
        .fold(0.0, f64::max)
}

#[test]
fn window_is_3dgs_gaussian_11_sigma_1_5() {
    let w = gaussian_window();
    assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-15);
    for i in 0..11 {
        assert_eq!(w[i], w[10 - i], "symmetric");
    }
    // exp(0) / Σ exp(−(i−5)²/4.5): the centre tap of 3DGS's gaussian(11, 1.5).
    let sum: f64 = (0..11)
        .map(|i| (-((i as f64 - 5.0).powi(2)) / 4.5).exp())
        .sum();
    assert!((w[5] - 1.0 / sum).abs() < 1e-16);
    assert!((w[5] - 0.266_011_4).abs() < 1e-6, "{}", w[5]);
}

/// Central differences (step 1e-6) of `loss` at `render` for every pixel
/// and channel, in the gradient's flattened order.
fn fd_gradient(render: &Rgb64, loss: impl Fn(&Rgb64) -> f64) -> Vec<f64> {
    let mut fd = Vec::new();
    for p in 0..render.pixels.len() {
        for c in 0..3 {
            fd.push(central_difference(
                |t| {
                    let mut x = render.clone();
                    x.pixels[p][c] += t;
                    loss(&x)
                },
                1e-6,
            ));
        }
    }
    fd
}

/// Max relative error of `grad` against `fd`, floor 1e-3 × max|grad|.
fn gradient_error(what: &str, grad: &[[f64; 3]], fd: &[f64]) -> f64 {
    let analytic: Vec<f64> = grad.iter().flatten().copied().collect();
    let scale = analytic.iter().fold(0.0f64, |m, g| m.max(g.abs()));
    let err = max_rel(&analytic, fd, 1e-3 * scale);
    eprintln!("{what} vs FD: max rel err {err:.2e} (floor 1e-3 × max|g| = {scale:.2e})");
    err
}

#[test]
fn twin_gradient_matches_central_differences() {
    // 9×7: every pixel's window is cut by the zero padding somewhere, and
    // every pixel's 11×11 window covers most of the image.
    let (render, reference) = image_pair(9, 7, 1, 0.02);
    let weights = LossWeights64::default();
    let grad = image_loss_gradient(&render, &reference, weights);
    let fd = fd_gradient(&render, |x| image_loss(x, &reference, weights).loss);
    let err = gradient_error("twin gradient", &grad, &fd);
    assert!(err <= 1e-5, "max rel err {err:.3e}");

    // The SSIM term alone (w_l1 = 0), where the gradient is all convolution.
    let ssim_only = LossWeights64 { l1: 0.0, ssim: 1.0 };
    let grad = image_loss_gradient(&render, &reference, ssim_only);
    let fd = fd_gradient(&render, |x| image_loss(x, &reference, ssim_only).loss);
    let err = gradient_error("twin SSIM gradient", &grad, &fd);
    assert!(err <= 1e-5, "max rel err {err:.3e}");
}

#[test]
fn masked_twin_gradient_matches_central_differences() {
    // A mask counting a third of the pixels, scattered.
    let (render, reference) = image_pair(9, 7, 2, 0.02);
    let mut rng = Rng(17);
    let mask: Vec<bool> = (0..63).map(|_| rng.next() < 0.35).collect();
    let weights = LossWeights64::default();
    let grad = masked_image_loss_gradient(&render, &reference, &mask, weights);
    let fd = fd_gradient(&render, |x| {
        masked_image_loss(x, &reference, &mask, weights).loss
    });
    let err = gradient_error("masked twin gradient", &grad, &fd);
    assert!(err <= 1e-5, "max rel err {err:.3e}");

    // An all-true mask is the unmasked loss; the masked means are over the
    // counted pixels (a mask of one pixel: that pixel's L1 over 3 values).
    let all = vec![true; 63];
    let plain = image_loss(&render, &reference, weights);
    let masked = masked_image_loss(&render, &reference, &all, weights);
    assert!(
        (plain.loss - masked.loss).abs() <= 1e-15,
        "{plain:?} {masked:?}"
    );
    assert_eq!(
        image_loss_gradient(&render, &reference, weights),
        masked_image_loss_gradient(&render, &reference, &all, weights)
    );
    let one: Vec<bool> = (0..63).map(|i| i == 30).collect();
    let single = masked_image_loss(&render, &reference, &one, weights);
    let l1: f64 = (0..3)
        .map(|c| (render.pixels[30][c] - reference.pixels[30][c]).abs())
        .sum::<f64>()
        / 3.0;
    assert!((single.l1 - l1).abs() <= 1e-15, "{} vs {l1}", single.l1);
}

#[test]
fn twin_loss_of_identical_images_is_zero() {
    let (_, reference) = image_pair(12, 10, 2, 0.0);
    let out = image_loss(&reference, &reference, LossWeights64::default());
    assert_eq!(out.l1, 0.0);
    assert_eq!(out.mse, 0.0);
    assert!((out.ssim - 1.0).abs() < 1e-15, "{}", out.ssim);
    assert!(out.loss.abs() < 1e-15);
    assert_eq!(out.psnr(), f64::INFINITY);
    let grad = image_loss_gradient(&reference, &reference, LossWeights64::default());
    let worst = grad.iter().flatten().fold(0.0f64, |m, g| m.max(g.abs()));
    // f64 rounding of the textbook formula (the GPU's forms give exactly 0).
    assert!(worst < 1e-14, "{worst:e}");
}

#[test]
fn ssim_of_a_uniform_brightness_change_matches_its_closed_form() {
    // Constant images x ≡ u, y ≡ v: every σ is 0 and μ = W·u, W·v with W the
    // window mass inside the image (1 in the interior of a big enough image),
    // so SSIM = (2μxμy + C1) / (μx² + μy² + C1) (the C2 factors cancel).
    let (w, h) = (13, 12);
    let x = Rgb64 {
        width: w,
        height: h,
        pixels: vec![[0.6, 0.2, 0.9]; w * h],
    };
    let y = Rgb64 {
        width: w,
        height: h,
        pixels: vec![[0.5, 0.25, 0.1]; w * h],
    };
    let map = ssim_map(&x, &y);
    let win = gaussian_window();
    let (px, py) = (6usize, 6usize);
    // Window mass inside the image at (px, py): rows 1..11 and columns 1..12 exist.
    let mass_1d = |p: usize, n: usize| -> f64 {
        (0..11)
            .filter(|&k| {
                let q = p as isize + k as isize - 5;
                q >= 0 && q < n as isize
            })
            .map(|k| win[k])
            .sum()
    };
    let mass = mass_1d(px, w) * mass_1d(py, h);
    let got = map[py * w + px];
    for c in 0..3 {
        let (u, v) = (x.pixels[0][c], y.pixels[0][c]);
        let (mx, my) = (mass * u, mass * v);
        // σ² = W·u² − (W·u)² ≠ 0 when W < 1: include it.
        let vx = mass * u * u - mx * mx;
        let vy = mass * v * v - my * my;
        let cxy = mass * u * v - mx * my;
        let c1 = 1e-4;
        let c2 = 9e-4;
        let expected =
            (2.0 * mx * my + c1) * (2.0 * cxy + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2));
        let got = got[c];
        // σ² = E[x²] − μx² cancels to ~1e-16, divided by C2 ≈ 1e-3.
        assert!((got - expected).abs() < 1e-11, "{got} vs {expected}");
    }
}

#[test]
fn tv_gradients_match_central_differences() {
    let mut rng = Rng(7);
    let n = 12;
    let values: Vec<f64> = (0..n).map(|_| 3.0 + 5.0 * rng.next()).collect();
    // A ring, chords, a duplicate in both directions, a self-edge, and a
    // nearly equal pair (|d| ≈ ε, where the smooth form bends).
    let mut edges: Vec<(u32, u32)> = (0..n as u32).map(|i| (i, (i + 1) % n as u32)).collect();
    edges.extend([(0, 5), (5, 0), (3, 3), (2, 9)]);
    let mut close = values.clone();
    close[9] = close[2] + 0.7e-3;
    for vals in [&values, &close] {
        let tv = tv_scalar(vals, &edges, TV_EPSILON).unwrap();
        let h = 1e-7;
        let fd: Vec<f64> = (0..n)
            .map(|i| {
                central_difference(
                    |t| {
                        let mut v = vals.clone();
                        v[i] += t;
                        tv_scalar(&v, &edges, TV_EPSILON).unwrap().value
                    },
                    h,
                )
            })
            .collect();
        let err = max_rel(&tv.gradient, &fd, 1e-3);
        eprintln!("TV scalar vs FD: max rel err {err:.2e}");
        assert!(err <= 1e-5, "{err:e}");
    }

    let vel: Vec<[f64; 3]> = (0..n)
        .map(|_| [rng.next() - 0.5, rng.next() - 0.5, rng.next() - 0.5])
        .collect();
    let tv = tv_vector(&vel, &edges, TV_EPSILON).unwrap();
    let h = 1e-7;
    let mut fd = Vec::new();
    for i in 0..n {
        for k in 0..3 {
            fd.push(central_difference(
                |t| {
                    let mut v = vel.clone();
                    v[i][k] += t;
                    tv_vector(&v, &edges, TV_EPSILON).unwrap().value
                },
                h,
            ));
        }
    }
    let analytic: Vec<f64> = tv.gradient.iter().flatten().copied().collect();
    let err = max_rel(&analytic, &fd, 1e-3);
    eprintln!("TV vector vs FD: max rel err {err:.2e}");
    assert!(err <= 1e-5, "{err:e}");
}

#[test]
fn tv_of_a_uniform_field_is_epsilon_with_zero_gradient() {
    let edges = [(0, 1), (1, 2), (2, 0)];
    let tv = tv_scalar(&[4.5; 3], &edges, TV_EPSILON).unwrap();
    assert_eq!(tv.value, TV_EPSILON);
    assert!(tv.gradient.iter().all(|&g| g == 0.0));
    // Far from the kink the smooth form is |d| to within ε²/(2|d|).
    let tv = tv_scalar(&[3.0, 5.0], &[(0, 1)], TV_EPSILON).unwrap();
    assert!((tv.value - 2.0).abs() < 1e-6);
    assert!((tv.gradient[0] + 1.0).abs() < 1e-6 && (tv.gradient[1] - 1.0).abs() < 1e-6);
    let empty = tv_scalar(&[1.0, 2.0], &[], TV_EPSILON).unwrap();
    assert_eq!(empty.value, 0.0);
    assert_eq!(empty.gradient, vec![0.0, 0.0]);
}

#[test]
fn tv_refuses_bad_edges_and_epsilon() {
    let err = tv_scalar(&[1.0, 2.0], &[(0, 1), (1, 2)], TV_EPSILON).unwrap_err();
    assert!(
        matches!(
            err,
            LossError::EdgeOutOfRange {
                edge: 1,
                a: 1,
                b: 2,
                nodes: 2
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("(1, 2)"), "{err}");
    let err = tv_vector(&[[0.0; 3]], &[(0, 0)], 0.0).unwrap_err();
    assert!(matches!(err, LossError::TvEpsilon(_)), "{err}");
}

#[test]
fn packing_is_round_255_v_without_a_curve() {
    for b in 0..=255u32 {
        let p = b | (b << 8) | (b << 16) | (b << 24);
        assert_eq!(pack_rgba8(unpack_rgba8(p)), p, "byte {b} round trip");
        assert_eq!(unpack_rgba8(p)[0], b as f32 / 255.0);
    }
    assert_eq!(
        pack_rgba8([0.5, 0.0, 1.0, 0.25]),
        128 | (255 << 16) | (64 << 24)
    );
    assert_eq!(
        pack_rgba8([f32::NAN, -1.0, 2.0, 1.0]),
        (255 << 16) | (255 << 24)
    );
    // 16-bit precision is lost: 128/255 ± 1/65535 both pack to 128.
    let v = 128.0 / 255.0;
    assert_eq!(
        pack_rgba8([v + 1.0 / 65535.0, v - 1.0 / 65535.0, 0.0, 0.0]) & 0xffff,
        128 | (128 << 8)
    );
}
