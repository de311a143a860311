//! The fit's pictures (`physfit::report`): the embedded
//! font, the colour map against its table, the colour bar's geometry and
//! ends, `loss.png`'s size and curves (non-finite points included), the
//! compare triptych's layout and difference panel, and the recolouring's SH.

use image::{Rgb, RgbImage};
use physfit::io::png::write_png;
use physfit::io::Frame;
use physfit::report::colorbar::{
    COLORBAR_BAR_LEFT, COLORBAR_BAR_WIDTH, COLORBAR_MARGIN, COLORBAR_WIDTH,
};
use physfit::report::colormap::{NAN_COLOUR, VIRIDIS};
use physfit::report::compare::DIFFERENCE_GAIN;
use physfit::report::loss_plot::{curve_colour, BEST_COLOUR, LOSS_PLOT_SIZE, SCAN_COLOUR};
use physfit::report::CAPTION_HEIGHT;
use physfit::report::{
    captioned_row, font, frame_triptych, loss_plot, loss_plot_with_scan, map, recolored,
    stiffness_colours, triptych, with_colorbar, LossCurve, LossPoint, ReportError, ScanCandidate,
};
use physfit::scene::frames::load_frame;

use crate::common;

const WHITE: Rgb<u8> = Rgb([255, 255, 255]);

fn quantised(c: [f64; 3]) -> [u8; 3] {
    c.map(|v| (v * 255.0).round() as u8)
}

#[test]
fn embedded_font_registers_and_draws_text() {
    assert!(font::FONT_TTF.len() > 100_000, "the TTF is embedded whole");
    font::register().expect("DejaVu Sans parses");
    font::register().expect("registering again is harmless");
    // Text is drawn: the caption strip of a triptych is not blank.
    let frame = Frame {
        width: 200,
        height: 8,
        pixels: vec![[0.0; 4]; 1600],
    };
    let image = triptych(&frame, &frame).unwrap();
    let dark = (0..image.width())
        .flat_map(|x| (0..CAPTION_HEIGHT).map(move |y| (x, y)))
        .filter(|&(x, y)| image.get_pixel(x, y).0.iter().all(|c| *c < 128))
        .count();
    assert!(dark > 50, "captions drawn ({dark} dark pixels)");
}

#[test]
fn colour_map_ends_and_midpoint_are_the_table() {
    assert_eq!(map(0.0), quantised(VIRIDIS[0]));
    assert_eq!(map(0.5), quantised(VIRIDIS[8]));
    assert_eq!(map(1.0), quantised(VIRIDIS[16]));
    // viridis' well-known ends and middle: #440154, #21918c, #fde725.
    assert_eq!(map(0.0), [0x44, 0x01, 0x54]);
    assert_eq!(map(0.5), [0x21, 0x91, 0x8c]);
    assert_eq!(map(1.0), [0xfd, 0xe7, 0x25]);
    // Clamped outside [0, 1], grey for NaN, linear between control points.
    assert_eq!(map(-3.0), map(0.0));
    assert_eq!(map(7.0), map(1.0));
    assert_eq!(map(f64::NAN), NAN_COLOUR);
    let between = map(1.0 / 32.0);
    let (a, b) = (VIRIDIS[0], VIRIDIS[1]);
    assert_eq!(between, quantised([0, 1, 2].map(|c| 0.5 * (a[c] + b[c]))));
}

#[test]
fn colour_bar_adds_a_bar_whose_ends_are_the_map_ends() {
    let image = RgbImage::from_pixel(120, 200, Rgb([10, 20, 30]));
    let out = with_colorbar(&image, 3.0, 8.7, "log10 E (Pa, world units)").unwrap();
    assert_eq!(out.dimensions(), (120 + COLORBAR_WIDTH, 200));
    assert!(
        out.enumerate_pixels()
            .all(|(x, _, p)| x >= 120 || *p == Rgb([10, 20, 30])),
        "image kept"
    );
    let x = 120 + COLORBAR_BAR_LEFT + COLORBAR_BAR_WIDTH / 2;
    let rows: Vec<u32> = (0..200)
        .filter(|&y| *out.get_pixel(x, y) != WHITE)
        .collect();
    let (top, bottom) = (rows[0], *rows.last().unwrap());
    assert_eq!(top, COLORBAR_MARGIN);
    assert_eq!(bottom, 200 - 1 - COLORBAR_MARGIN);
    assert_eq!(rows.len() as u32, bottom - top + 1, "the bar has no gaps");
    assert_eq!(out.get_pixel(x, top).0, map(1.0));
    assert_eq!(out.get_pixel(x, bottom).0, map(0.0));
    // Text beside the bar: ticks and the label.
    let text_x = 120 + COLORBAR_BAR_LEFT + COLORBAR_BAR_WIDTH + 2;
    let dark = out
        .enumerate_pixels()
        .filter(|(x, _, p)| *x >= text_x && p.0.iter().all(|c| *c < 100))
        .count();
    assert!(dark > 100, "ticks and label drawn ({dark} dark pixels)");
    // One value everywhere still draws; a reversed or infinite range is an error.
    assert!(with_colorbar(&image, 5.0, 5.0, "log10 E").is_ok());
    assert!(matches!(
        with_colorbar(&image, 6.0, 5.0, "log10 E"),
        Err(ReportError::ColourRange { .. })
    ));
    assert!(matches!(
        with_colorbar(&image, 3.0, f64::INFINITY, "log10 E"),
        Err(ReportError::ColourRange { .. })
    ));
}

fn curve(label: &str, n: usize, start: f64) -> LossCurve {
    LossCurve {
        label: label.into(),
        points: (0..n)
            .map(|i| LossPoint {
                iteration: i,
                loss: start * 0.95f64.powi(i as i32),
                psnr: 20.0 + i as f64 * 0.1,
            })
            .collect(),
    }
}

#[test]
fn loss_plot_has_its_size_and_each_stage_in_its_colour() {
    let (w, h) = LOSS_PLOT_SIZE;
    let curves = [curve("velocity", 40, 0.5), curve("stiffness", 40, 0.1)];
    let image = loss_plot(&curves, w, h).unwrap();
    assert_eq!(image.dimensions(), (w, h));
    let non_white = image.pixels().filter(|p| **p != WHITE).count();
    assert!(non_white > 5_000, "not blank ({non_white} drawn pixels)");
    // The PSNR panel (bottom 40 %, no legend): each stage's colour drawn
    // (a curve, not a dot), stage 1's wholly left of stage 2's, whose 40
    // iterations come after it on the axis.
    let (c0, c1) = (curve_colour(0), curve_colour(1));
    assert_ne!(c0, c1);
    let columns = |colour: [u8; 3]| -> Vec<u32> {
        (0..w)
            .filter(|&x| (h * 3 / 5..h).any(|y| image.get_pixel(x, y).0 == colour))
            .collect()
    };
    let (x0, x1) = (columns(c0), columns(c1));
    assert!(
        x0.len() > 200 && x1.len() > 200,
        "{} and {} columns",
        x0.len(),
        x1.len()
    );
    assert!(x0.last() < x1.first(), "stage 1 ends before stage 2 starts");
}

#[test]
fn loss_plot_skips_points_it_cannot_draw() {
    let mut velocity = curve("velocity", 10, 1.0);
    velocity.points[2].loss = f64::NAN;
    velocity.points[3].loss = 0.0;
    velocity.points[4].loss = -1.0;
    velocity.points[5].psnr = f64::INFINITY;
    velocity.points[6].loss = f64::INFINITY;
    velocity.points[6].psnr = f64::NAN;
    let nothing = LossCurve {
        label: "stiffness".into(),
        points: vec![LossPoint {
            iteration: 0,
            loss: f64::NAN,
            psnr: f64::NAN,
        }],
    };
    let one = curve("velocity, round 2", 1, 0.3);
    for curves in [vec![velocity, nothing.clone(), one], vec![nothing], vec![]] {
        let image = loss_plot(&curves, 400, 300).unwrap();
        assert_eq!(image.dimensions(), (400, 300));
        if curves.len() == 3 {
            // The third curve's one point is drawn as a dot in the PSNR panel.
            let dot = (0..400).flat_map(|x| (180..300).map(move |y| (x, y)));
            let colour = curve_colour(2);
            assert!(
                dot.filter(|&(x, y)| image.get_pixel(x, y).0 == colour)
                    .count()
                    >= 9
            );
        }
    }
}

fn flat_frame(w: u32, h: u32, rgba: [f32; 4]) -> Frame {
    Frame {
        width: w,
        height: h,
        pixels: vec![rgba; (w * h) as usize],
    }
}

#[test]
fn triptych_places_three_panels_under_captions() {
    let (w, h) = (48u32, 32u32);
    let reference = Frame {
        width: w,
        height: h,
        pixels: common::gradient_image(w, h),
    };
    let same = triptych(&reference, &reference).unwrap();
    assert_eq!(same.dimensions(), (3 * w, h + CAPTION_HEIGHT));
    for y in 0..h {
        for x in 0..w {
            let p = reference.pixels[(y * w + x) as usize];
            let want = [0, 1, 2].map(|c| (p[c].clamp(0.0, 1.0) * 255.0).round() as u8);
            assert_eq!(
                same.get_pixel(x, y + CAPTION_HEIGHT).0,
                want,
                "reference panel"
            );
            assert_eq!(
                same.get_pixel(w + x, y + CAPTION_HEIGHT).0,
                want,
                "fitted panel"
            );
            assert_eq!(
                same.get_pixel(2 * w + x, y + CAPTION_HEIGHT).0,
                [0, 0, 0],
                "difference of equals"
            );
        }
    }
    // A difference of 0.1 in red shows as 0.1 × gain.
    let a = flat_frame(w, h, [0.5, 0.5, 0.5, 1.0]);
    let b = flat_frame(w, h, [0.6, 0.5, 0.5, 1.0]);
    let diff = triptych(&a, &b).unwrap();
    let red = (0.1 * DIFFERENCE_GAIN * 255.0).round() as u8;
    let got = diff.get_pixel(2 * w + 5, CAPTION_HEIGHT + 5).0;
    assert!(
        got[0].abs_diff(red) <= 1 && got[1] == 0 && got[2] == 0,
        "{got:?} vs red {red}"
    );
    // Frames of different sizes are refused.
    let small = flat_frame(w, h - 1, [0.0; 4]);
    assert!(matches!(
        triptych(&a, &small),
        Err(ReportError::Size { .. })
    ));
}

#[test]
fn triptych_written_as_png_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("frame_0001.png");
    let a = flat_frame(16, 16, [0.2, 0.4, 0.6, 1.0]);
    let image = triptych(&a, &a).unwrap();
    write_png(&path, &image).unwrap();
    let back = load_frame(&path, None).unwrap();
    assert_eq!((back.width, back.height), image.dimensions());
    let p = back.pixels[(CAPTION_HEIGHT * back.width + 3) as usize];
    assert_eq!(p.map(|v| (v * 255.0).round() as u8), [51, 102, 153, 255]);
}

#[test]
fn recolouring_sets_the_dc_and_zeroes_the_higher_bands() {
    let mut g = common::splat_lattice(2);
    // Degree 1: four coefficients per splat, the higher ones non-zero.
    g.sh_degree = 1;
    g.sh = (0..g.len() * 4)
        .map(|i| [0.1 * (i % 4) as f32, -0.2, 0.3])
        .collect();
    let colours: Vec<[f32; 3]> = (0..g.len()).map(|i| [i as f32 / 8.0, 0.25, 1.0]).collect();
    let out = recolored(&g, &colours).unwrap();
    assert_eq!(out.sh_degree, 1);
    assert_eq!(out.sh.len(), g.sh.len());
    for (i, colour) in colours.iter().enumerate() {
        let sh = out.sh_of(i);
        for c in 0..3 {
            let rendered = 0.5 + 0.282_094_791_773_878_14 * f64::from(sh[0][c]);
            assert!(
                (rendered - f64::from(colour[c])).abs() < 1e-6,
                "splat {i} channel {c}"
            );
        }
        assert!(
            sh[1..].iter().all(|k| *k == [0.0; 3]),
            "higher bands zeroed"
        );
    }
    assert_eq!(
        (
            &out.means,
            &out.rotations,
            &out.log_scales,
            &out.opacity_logits
        ),
        (&g.means, &g.rotations, &g.log_scales, &g.opacity_logits)
    );
    assert!(matches!(
        recolored(&g, &colours[1..]),
        Err(ReportError::ColourCount { .. })
    ));
}

#[test]
fn stiffness_colours_follow_the_map_and_grey_nan() {
    let colours = stiffness_colours(&[3.0, 5.85, 8.7, 10.0, f64::NAN], 3.0, 8.7).unwrap();
    let as_u8 = |c: [f32; 3]| c.map(|v| (v * 255.0).round() as u8);
    assert_eq!(as_u8(colours[0]), map(0.0));
    assert_eq!(as_u8(colours[1]), map(0.5));
    assert_eq!(as_u8(colours[2]), map(1.0));
    assert_eq!(as_u8(colours[3]), map(1.0), "clamped above the range");
    assert_eq!(as_u8(colours[4]), NAN_COLOUR);
    let single = stiffness_colours(&[4.0], 4.0, 4.0).unwrap();
    assert_eq!(
        as_u8(single[0]),
        map(0.5),
        "a zero-width range is the middle"
    );
    assert!(stiffness_colours(&[4.0], f64::NAN, 5.0).is_err());
}

/// The columns of the caption strip of `image` with dark (text) pixels.
fn caption_ink_columns(image: &RgbImage) -> Vec<u32> {
    (0..image.width())
        .filter(|&x| (0..CAPTION_HEIGHT).any(|y| image.get_pixel(x, y).0.iter().all(|c| *c < 128)))
        .collect()
}

#[test]
fn captions_fit_their_panels_at_128_pixels() {
    // align's longest caption over four 128² panels: each caption's ink
    // stays inside its own panel, none reaches across a boundary.
    let frame = flat_frame(128, 128, [1.0, 1.0, 1.0, 1.0]);
    let row = captioned_row(&[
        ("reference", &frame),
        ("before 23.41 dB", &frame),
        ("after 38.02 dB", &frame),
        ("|reference − after| × 4", &frame),
    ])
    .unwrap();
    let ink = caption_ink_columns(&row);
    for k in 0..4u32 {
        let inside = ink
            .iter()
            .filter(|x| (k * 128..(k + 1) * 128).contains(*x))
            .count();
        assert!(inside > 20, "panel {k}'s caption drawn ({inside} columns)");
    }
    for boundary in [128u32, 256, 384] {
        assert!(
            !ink.iter().any(|x| x.abs_diff(boundary) <= 1),
            "a caption crosses the panel boundary at x = {boundary}"
        );
    }
}

#[test]
fn a_compare_triptych_names_its_frame_and_psnr() {
    let a = flat_frame(128, 128, [0.5, 0.5, 0.5, 1.0]);
    let plain = triptych(&a, &a).unwrap();
    let named = frame_triptych(&a, &a, 4, Some(41.56)).unwrap();
    assert_eq!(named.dimensions(), plain.dimensions(), "the same layout");
    // The captions differ from the plain ones over the first two panels
    // (frame number, PSNR), not over the difference panel, and fit them.
    let strip = |image: &RgbImage, x0: u32| -> Vec<[u8; 3]> {
        (x0..x0 + 128)
            .flat_map(|x| (0..CAPTION_HEIGHT).map(move |y| (x, y)))
            .map(|(x, y)| image.get_pixel(x, y).0)
            .collect()
    };
    assert_ne!(strip(&named, 0), strip(&plain, 0), "frame number");
    assert_ne!(strip(&named, 128), strip(&plain, 128), "PSNR");
    assert_eq!(strip(&named, 256), strip(&plain, 256));
    let ink = caption_ink_columns(&named);
    assert!(!ink
        .iter()
        .any(|x| x.abs_diff(128) <= 1 || x.abs_diff(256) <= 1));
}

fn scan(values: &[(f64, f64)]) -> Vec<ScanCandidate> {
    values
        .iter()
        .map(|&(log10_youngs, loss)| ScanCandidate {
            log10_youngs,
            loss,
            psnr: 30.0 - 10.0 * loss,
        })
        .collect()
}

#[test]
fn scan_candidates_are_points_against_log10_e_in_their_own_panels() {
    let (w, h) = LOSS_PLOT_SIZE;
    let curves = [curve("velocity", 12, 0.5), curve("stiffness", 12, 0.1)];
    // Without candidates: the plot of the stages alone.
    assert_eq!(
        loss_plot_with_scan(&curves, &[], w, h).unwrap(),
        loss_plot(&curves, w, h).unwrap()
    );
    let candidates = scan(&[
        (3.0, 0.6),
        (3.5, 0.3),
        (4.0, 0.12),
        (4.5, 0.2),
        (5.0, f64::INFINITY),
        (4.1, 0.11),
    ]);
    let image = loss_plot_with_scan(&curves, &candidates, w, h).unwrap();
    assert_eq!(image.dimensions(), (w, h));
    let split = (f64::from(w) * 0.7) as u32;
    // The stages' curves stay left of the scan's panels.
    for k in 0..2 {
        let colour = curve_colour(k);
        assert!(
            image
                .enumerate_pixels()
                .all(|(x, _, p)| p.0 != colour || x < split),
            "curve {k} drawn right of the split"
        );
    }
    // The candidates: dots right of the split, in both panels (five
    // drawable candidates at distinct heights), the best ringed in red; no
    // line joins them: a dot is at most 9 pixels across.
    let dots = |rows: std::ops::Range<u32>| -> Vec<(u32, u32)> {
        image
            .enumerate_pixels()
            .filter(|(x, y, p)| rows.contains(y) && *x >= split && p.0 == SCAN_COLOUR)
            .map(|(x, y, _)| (x, y))
            .collect()
    };
    for (panel, pixels) in [("loss", dots(0..h * 3 / 5)), ("PSNR", dots(h * 3 / 5..h))] {
        let mut rows: Vec<u32> = pixels.iter().map(|p| p.1).collect();
        rows.dedup();
        assert!(rows.len() >= 20, "{panel}: dots on {} rows", rows.len());
        for y in rows {
            let across = pixels.iter().filter(|p| p.1 == y).count();
            assert!(
                across <= 2 * 9,
                "{panel}: {across} pixels on row {y}: a line?"
            );
        }
    }
    let red = image
        .enumerate_pixels()
        .filter(|(x, _, p)| *x >= split && p.0 == BEST_COLOUR)
        .count();
    assert!(red > 20, "the best candidate ringed ({red} red pixels)");
}
