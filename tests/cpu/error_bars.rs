//! The error bars per driver and per splat (src/fit/uncertainty.rs,
//! src/output/error_bar_colouring.rs): a driver takes its parameter's
//! standard error, capped at the spread of a value anywhere in the E
//! range, which also stands for a value the frames do not constrain; the
//! second panel of stiffness.png colours on that fixed range.

use physfit::fit::uncertainty::{unconstrained_log10_std, CurvatureMethod, FitUncertainty};
use physfit::fit::{ParamMap, YoungsField};
use physfit::output::error_bar_colouring::{ErrorBarColouring, ERROR_BAR_LABEL};
use physfit::output::fitted_ply::SplatMaterial;
use physfit::output::stiffness::STIFFNESS_LABEL;
use physfit::report::caption::{captioned, CAPTION_HEIGHT};
use physfit::report::colorbar::{with_colorbar, COLORBAR_WIDTH};

fn uncertainty(
    std: Vec<Option<f64>>,
    constrained: Vec<bool>,
    method: CurvatureMethod,
) -> FitUncertainty {
    FitUncertainty {
        frames: vec![1, 2, 3],
        residuals: 1000,
        image_loss: 0.01,
        scale: 2e-5,
        evaluations: 4,
        youngs_method: Some(method),
        velocity_method: None,
        youngs_log10_std: std,
        velocity_std: Vec::new(),
        poisson_std: Vec::new(),
        youngs_constrained: constrained,
        correlations: None,
        differences: None,
        stiffness_newton_step: None,
    }
}

#[test]
fn a_driver_takes_its_regions_error_bar_capped_at_the_ranges_spread() {
    let range = [3.0, 6.0];
    let cap = unconstrained_log10_std(range);
    assert!((cap - 3.0 / 12f64.sqrt()).abs() < 1e-15);
    let map = ParamMap::youngs(
        &YoungsField::Regions {
            region: vec![0, 1, 0, 2],
            count: 3,
        },
        4,
    )
    .unwrap();
    let u = uncertainty(
        vec![Some(0.05), None, Some(5.0)],
        vec![true, false, true],
        CurvatureMethod::Hessian,
    );
    let per_driver = u.driver_youngs_log10_std(&map, range);
    assert_eq!(per_driver, vec![0.05, cap, 0.05, cap]);
}

#[test]
fn a_driver_the_regulariser_decides_gets_the_ranges_spread() {
    let range = [3.0, 4.5];
    let map = ParamMap::youngs(&YoungsField::PerDriver, 3).unwrap();
    let u = uncertainty(
        vec![Some(0.02), Some(0.03), None],
        vec![true, false, false],
        CurvatureMethod::Diagonal,
    );
    let cap = unconstrained_log10_std(range);
    assert_eq!(u.driver_youngs_log10_std(&map, range), vec![0.02, cap, cap]);
}

#[test]
fn the_error_bar_panel_colours_on_a_fixed_range_and_greys_static_splats() {
    let material = SplatMaterial {
        youngs_modulus: vec![1e4, 1e5, 0.0],
        simulated: vec![1.0, 1.0, 0.0],
        anchored: vec![0.0; 3],
        velocity: vec![[0.0; 3]; 3],
        youngs_log10_std: vec![0.01, 0.9, 0.0],
        poisson_ratio: vec![0.3, 0.3, 0.0],
    };
    let c = ErrorBarColouring::new(&material, [3.0, 6.0]);
    assert_eq!(c.range, [0.0, unconstrained_log10_std([3.0, 6.0])]);
    assert_eq!(&c.values[..2], &[f64::from(0.01f32), f64::from(0.9f32)]);
    assert!(c.values[2].is_nan());

    let left = image::RgbImage::from_pixel(3, 2, image::Rgb([1, 2, 3]));
    let right = image::RgbImage::from_pixel(2, 2, image::Rgb([9, 8, 7]));
    let both = captioned("test", &[("fitted E", &left), ("σ", &right)]).unwrap();
    assert_eq!(both.dimensions(), (5, 2 + CAPTION_HEIGHT));
    assert_eq!(both.get_pixel(0, CAPTION_HEIGHT).0, [1, 2, 3]);
    assert_eq!(both.get_pixel(4, CAPTION_HEIGHT + 1).0, [9, 8, 7]);
}

/// The colour bar's label is shrunk to the picture's height: at a 128²
/// camera the label column's top and bottom rows stay white (a label
/// drawn at full size would run off both ends).
#[test]
fn the_colour_bar_label_fits_a_small_picture() {
    let picture = image::RgbImage::from_pixel(128, 128, image::Rgb([0, 0, 0]));
    for label in [ERROR_BAR_LABEL, STIFFNESS_LABEL] {
        let out = with_colorbar(&picture, 0.0, 1.0, label).unwrap();
        let (w, h) = out.dimensions();
        assert_eq!(w, 128 + COLORBAR_WIDTH);
        for y in (0..3).chain(h - 3..h) {
            for x in w - 20..w {
                assert_eq!(out.get_pixel(x, y).0, [255; 3], "{label}: ({x}, {y})");
            }
        }
    }
}
