//! The GPU image loss with a loss mask (src/loss/mod.rs):
//! against the masked f64 twin and finite differences; an all-white mask is
//! the unmasked loss bit for bit; reference changes deep inside the ignored
//! region change neither the loss nor its gradient; typed mask errors.

use physfit::loss::{ImageLoss, LossError, LossWeights, ReferenceFrame, ReferenceMask};
use physfit::reference::loss::{masked_image_loss, masked_image_loss_gradient, LossWeights64};
use physfit::scene::masks::Mask;

use crate::common;
use crate::loss::{case, finite_difference_error, gpu_loss_against, twin_errors, twin_images};
use crate::support::Rng;

/// A mask of `w × h` counting the pixels left of column `split` and a
/// random quarter of the others (so that counted and ignored pixels mix
/// inside SSIM windows too).
fn mixed_mask(w: u32, h: u32, split: u32, seed: u64) -> Mask {
    let mut rng = Rng(seed);
    Mask {
        width: w,
        height: h,
        counts: (0..w * h)
            .map(|i| i % w < split || rng.next() < 0.25)
            .collect(),
    }
}

fn masked_reference(
    ctx: &physfit::gpu::GpuContext,
    (w, h): (u32, u32),
    packed: &[u32],
    mask: &Mask,
) -> ReferenceFrame {
    ReferenceFrame::from_packed(ctx, "test reference", w, h, packed)
        .unwrap()
        .with_mask(ReferenceMask::upload(ctx, "test mask", mask).unwrap())
        .unwrap()
}

#[test]
fn masked_gpu_loss_and_gradient_match_the_f64_twin() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let mut worst = (0.0f64, 0.0f64);
    for (k, &(w, h)) in [(37u32, 23u32), (64, 17), (5, 3)].iter().enumerate() {
        let (packed, render) = case(w, h, 300 + k as u64, Some(0.0));
        let mask = mixed_mask(w, h, w / 3, 40 + k as u64);
        let reference = masked_reference(&ctx, (w, h), &packed, &mask);
        let gpu = gpu_loss_against(&ctx, &mut loss, &reference, &render);
        let (x, y) = twin_images(w, h, &packed, &render);
        let twin = masked_image_loss(&x, &y, &mask.counts, LossWeights64::default());
        let twin_grad = masked_image_loss_gradient(&x, &y, &mask.counts, LossWeights64::default());
        let label = format!("{w}×{h}, {} of {} pixels counted", mask.counted(), w * h);
        let (e_terms, e_grad) = twin_errors(&label, &gpu, &twin, &twin_grad);
        worst = (worst.0.max(e_terms), worst.1.max(e_grad));
        // An ignored pixel whose whole window is ignored has no gradient.
        for (i, g) in gpu.grad.iter().enumerate() {
            let (px, py) = (i as i64 % w as i64, i as i64 / w as i64);
            let near_counted = mask.counts.iter().enumerate().any(|(j, &c)| {
                let (qx, qy) = (j as i64 % w as i64, j as i64 / w as i64);
                c && (px - qx).abs() <= 5 && (py - qy).abs() <= 5
            });
            if !near_counted {
                assert_eq!(*g, [0.0; 4], "pixel {i}");
            }
        }
    }
    assert!(worst.0 <= 1e-5, "terms: max rel err {:.3e}", worst.0);
    assert!(worst.1 <= 1e-4, "gradient: max rel err {:.3e}", worst.1);
}

#[test]
fn an_all_white_mask_gives_the_unmasked_loss_bit_for_bit() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (37u32, 23u32);
    let (packed, render) = case(w, h, 8, Some(0.0));
    let plain = ReferenceFrame::from_packed(&ctx, "test reference", w, h, &packed).unwrap();
    let white = Mask {
        width: w,
        height: h,
        counts: vec![true; (w * h) as usize],
    };
    let masked = masked_reference(&ctx, (w, h), &packed, &white);
    let a = gpu_loss_against(&ctx, &mut loss, &plain, &render);
    let b = gpu_loss_against(&ctx, &mut loss, &masked, &render);
    assert!(a.terms.loss > 0.0);
    assert_eq!(a.terms, b.terms);
    assert_eq!(a.grad, b.grad);
}

#[test]
fn masked_gpu_gradient_matches_finite_differences() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (33u32, 21u32);
    let (packed, render) = case(w, h, 12, Some(0.05));
    let reference = masked_reference(&ctx, (w, h), &packed, &mixed_mask(w, h, 12, 5));
    let worst = finite_difference_error(&ctx, &mut loss, &reference, &render);
    assert!(worst <= 1e-2, "max rel err {worst:.3e}");
}

#[test]
fn reference_changes_deep_in_the_ignored_region_change_nothing() {
    let ctx = common::gpu();
    let mut loss = ImageLoss::new(&ctx, LossWeights::default()).unwrap();
    let (w, h) = (40u32, 16u32);
    let split = 15;
    let (packed, render) = case(w, h, 9, Some(0.0));
    let mask = Mask {
        width: w,
        height: h,
        counts: (0..w * h).map(|i| i % w < split).collect(),
    };
    // The reference with columns ≥ `from` replaced by another picture.
    let (other, _) = case(w, h, 10, Some(0.0));
    let changed_from = |from: u32| -> Vec<u32> {
        (0..(w * h) as usize)
            .map(|i| {
                if i as u32 % w >= from {
                    other[i]
                } else {
                    packed[i]
                }
            })
            .collect()
    };
    let base = gpu_loss_against(
        &ctx,
        &mut loss,
        &masked_reference(&ctx, (w, h), &packed, &mask),
        &render,
    );
    // Counted pixels reach column split − 1 + 5 with their SSIM window.
    let far = changed_from(split + 5);
    let moved = gpu_loss_against(
        &ctx,
        &mut loss,
        &masked_reference(&ctx, (w, h), &far, &mask),
        &render,
    );
    assert_eq!(base.terms, moved.terms);
    assert_eq!(base.grad, moved.grad);
    // Control: within the window's reach, the change shows.
    let near = changed_from(split + 4);
    let seen = gpu_loss_against(
        &ctx,
        &mut loss,
        &masked_reference(&ctx, (w, h), &near, &mask),
        &render,
    );
    assert_ne!(base.terms.loss, seen.terms.loss);
}

#[test]
fn mask_mistakes_are_typed_errors() {
    let ctx = common::gpu();
    let (packed, _) = case(6, 4, 1, None);
    let frame = ReferenceFrame::from_packed(&ctx, "test reference", 6, 4, &packed).unwrap();
    let small = Mask {
        width: 4,
        height: 4,
        counts: vec![true; 16],
    };
    let err = frame
        .with_mask(ReferenceMask::upload(&ctx, "small mask", &small).unwrap())
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(err, LossError::MaskSize { .. }), "{err}");
    assert!(
        err.to_string().contains("6×4") && err.to_string().contains("4×4"),
        "{err}"
    );
    let black = Mask {
        width: 6,
        height: 4,
        counts: vec![false; 24],
    };
    let err = ReferenceMask::upload(&ctx, "black mask", &black)
        .map(|_| ())
        .unwrap_err();
    assert!(matches!(err, LossError::EmptyMask { .. }), "{err}");
    let short = Mask {
        width: 6,
        height: 4,
        counts: vec![true; 23],
    };
    let err = ReferenceMask::upload(&ctx, "short mask", &short)
        .map(|_| ())
        .unwrap_err();
    assert!(
        matches!(err, LossError::FramePixels { found: 23, .. }),
        "{err}"
    );
}
