//! `loss.png`: the loss per iteration (log scale) and
//! the PSNR per iteration (dB), one curve per stage and round, laid end to
//! end on one iteration axis with the stage boundaries marked, drawn with
//! plotters on the embedded font. The coarse scan's candidates
//! (docs/design.md § Loss, parameters, fit) are no iterations: each is one
//! value of log10 E with its own velocity, so they get panels of their own
//! on the right, points against log10 E, the best one marked.

use image::RgbImage;
use plotters::backend::BitMapBackend;
use plotters::chart::ChartContext;
use plotters::coord::combinators::BindKeyPoints;
use plotters::element::{Circle, Rectangle};
use plotters::prelude::{
    Cartesian2d, ChartBuilder, DashedLineSeries, IntoFont, IntoLogRange, LineSeries, RGBColor,
    Ranged, SeriesLabelPosition,
};
use plotters::style::{Color, BLACK, WHITE};

use super::canvas::{draw_rgb, Canvas, DrawError};
use super::font::FONT_FAMILY;
use super::ReportError;

/// The usual size of `loss.png`, width × height in pixels.
pub const LOSS_PLOT_SIZE: (u32, u32) = (900, 600);

/// The curves' colours in order (curve `k` gets entry `k mod 10`):
/// matplotlib's `tab10` (Tableau 10) palette, distinct on white and for
/// most colour-blind viewers. With `rounds = 2` the four stage runs are
/// blue, orange, green and red.
pub const CURVE_COLOURS: [[u8; 3]; 10] = [
    [0x1f, 0x77, 0xb4],
    [0xff, 0x7f, 0x0e],
    [0x2c, 0xa0, 0x2c],
    [0xd6, 0x27, 0x28],
    [0x94, 0x67, 0xbd],
    [0x8c, 0x56, 0x4b],
    [0xe3, 0x77, 0xc2],
    [0x7f, 0x7f, 0x7f],
    [0xbc, 0xbd, 0x22],
    [0x17, 0xbe, 0xcf],
];

/// The colour of curve `index` ([`CURVE_COLOURS`]).
pub fn curve_colour(index: usize) -> [u8; 3] {
    CURVE_COLOURS[index % CURVE_COLOURS.len()]
}

/// One iteration of one stage run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LossPoint {
    /// The iteration within its stage run, as `loss.jsonl` counts it.
    pub iteration: usize,
    /// The total loss.
    pub loss: f64,
    /// The PSNR of the rendered frames against the reference, in dB.
    pub psnr: f64,
}

/// The iterations of one stage run (one stage of one round), drawn in one
/// colour and named in the legend by `label` (e.g. "velocity, round 1").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LossCurve {
    /// Legend text.
    pub label: String,
    /// Its iterations, in order.
    pub points: Vec<LossPoint>,
}

/// One candidate of the coarse scan: a uniform log10 E, the loss and PSNR
/// of its rollout (with its own fitted velocity) on the stiffness stage's
/// frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScanCandidate {
    /// The uniform log10 E (normalised units, as scene.toml's range).
    pub log10_youngs: f64,
    /// The loss (+∞ when the rollout blew up).
    pub loss: f64,
    /// The PSNR, dB.
    pub psnr: f64,
}

/// The colour of the scan's candidates: dark grey, no stage's colour and
/// not the axes' black.
pub const SCAN_COLOUR: [u8; 3] = [0x40, 0x40, 0x40];

/// The ring around the best candidate: red.
pub const BEST_COLOUR: [u8; 3] = [0xd6, 0x27, 0x28];

/// The share of the width the scan's panels take when there are candidates.
const SCAN_SHARE: f64 = 0.3;

/// Where each curve starts on the common axis: curve 0 at 0, each next one
/// right after the previous one's last iteration (`offset + max iteration +
/// 1`; an empty curve takes no room). These are the stage boundaries.
fn curve_offsets(curves: &[LossCurve]) -> Vec<usize> {
    let mut next = 0;
    curves
        .iter()
        .map(|curve| {
            let offset = next;
            if let Some(last) = curve.points.iter().map(|p| p.iteration).max() {
                next = offset + last + 1;
            }
            offset
        })
        .collect()
}

/// `(min, max)` of the values `keep` accepts, `None` when there is none.
fn extent(values: impl Iterator<Item = f64>, keep: impl Fn(f64) -> bool) -> Option<(f64, f64)> {
    values.filter(|v| keep(*v)).fold(None, |acc, v| {
        Some(acc.map_or((v, v), |(lo, hi): (f64, f64)| (lo.min(v), hi.max(v))))
    })
}

/// A loss value the log axis can show.
fn drawable_loss(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

/// The plot of `curves` as a `width × height` RGB image ([`LOSS_PLOT_SIZE`]
/// is the usual size): on top the loss on a log axis, below the PSNR in dB,
/// both against the iteration running on across the curves
/// (each curve starts right after the previous one's last iteration), a
/// dashed grey line at every boundary between curves, curve `k` in
/// [`curve_colour`]`(k)`, the legend in the loss panel.
///
/// Values that cannot be drawn are skipped, never an error: a loss that is
/// not finite or not positive leaves that iteration out of the loss curve,
/// a PSNR that is not finite (+∞ for a perfect match) out of the PSNR
/// curve; the line joins the neighbours. With nothing to draw the axes
/// are drawn over a default range.
pub fn loss_plot(curves: &[LossCurve], width: u32, height: u32) -> Result<RgbImage, ReportError> {
    loss_plot_with_scan(curves, &[], width, height)
}

/// [`loss_plot`] with the coarse scan's candidates in panels of their own
/// on the right ([`SCAN_SHARE`] of the width; none when `scan` is empty):
/// their loss on the loss panels' log scale and their PSNR, as points
/// against log10 E, the lowest loss ringed in red. A candidate that blew up
/// (loss +∞) is left out of the points and counted in the panel's caption.
pub fn loss_plot_with_scan(
    curves: &[LossCurve],
    scan: &[ScanCandidate],
    width: u32,
    height: u32,
) -> Result<RgbImage, ReportError> {
    let offsets = curve_offsets(curves);
    let x_end = curves
        .iter()
        .zip(&offsets)
        .filter_map(|(c, o)| c.points.iter().map(|p| o + p.iteration).max())
        .max()
        .map_or(1.0, |last| (last as f64).max(1.0));
    let all = || curves.iter().flat_map(|c| c.points.iter());
    let losses = all().map(|p| p.loss).chain(scan.iter().map(|c| c.loss));
    let loss_range = match extent(losses, drawable_loss) {
        None => (1e-3, 1.0),
        Some((lo, hi)) if lo == hi => (lo / 2.0, hi * 2.0),
        Some((lo, hi)) => (lo / 1.25, hi * 1.25),
    };
    let psnr_range = match extent(all().map(|p| p.psnr), f64::is_finite) {
        None => (0.0, 40.0),
        Some((lo, hi)) if hi - lo < 1.0 => (lo - 0.5, hi + 0.5),
        Some((lo, hi)) => (lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo)),
    };
    let series = |value: fn(&LossPoint) -> f64, keep: fn(f64) -> bool| {
        curves
            .iter()
            .zip(&offsets)
            .map(move |(c, o)| {
                let points: Vec<(f64, f64)> = c
                    .points
                    .iter()
                    .filter(|p| keep(value(p)))
                    .map(|p| ((o + p.iteration) as f64, value(p)))
                    .collect();
                points
            })
            .collect::<Vec<_>>()
    };
    let loss_series = series(|p| p.loss, drawable_loss);
    let psnr_series = series(|p| p.psnr, f64::is_finite);
    let boundaries: Vec<f64> = offsets.iter().skip(1).map(|o| *o as f64).collect();
    let labels: Vec<&str> = curves.iter().map(|c| c.label.as_str()).collect();

    draw_rgb("loss.png", width, height, |root| {
        let (iterations, candidates) = if scan.is_empty() {
            (root.clone(), None)
        } else {
            let left = (f64::from(width) * (1.0 - SCAN_SHARE)).round() as u32;
            let (l, r) = root.split_horizontally(left);
            (l, Some(r))
        };
        let (upper, lower) = iterations.split_vertically(height * 3 / 5);
        draw_loss_panel(
            &upper,
            x_end,
            loss_range,
            &loss_series,
            &boundaries,
            &labels,
        )?;
        draw_psnr_panel(&lower, x_end, psnr_range, &psnr_series, &boundaries)?;
        if let Some(area) = candidates {
            draw_scan_panels(&area, scan, height * 3 / 5, loss_range)?;
        }
        Ok(())
    })
}

/// The scan's two panels on `area`: loss (log scale, `loss_range`, the
/// upper `split` pixels) and PSNR against log10 E ([`loss_plot_with_scan`]).
fn draw_scan_panels(
    area: &Canvas,
    scan: &[ScanCandidate],
    split: u32,
    (lo, hi): (f64, f64),
) -> Result<(), DrawError> {
    let drawn: Vec<&ScanCandidate> = scan.iter().filter(|c| drawable_loss(c.loss)).collect();
    let blew_up = scan.len() - drawn.len();
    let (e_lo, e_hi) = match extent(scan.iter().map(|c| c.log10_youngs), f64::is_finite) {
        None => (0.0, 1.0),
        Some((a, b)) if b - a < 1e-9 => (a - 0.5, b + 0.5),
        Some((a, b)) => (a - 0.08 * (b - a), b + 0.08 * (b - a)),
    };
    let best = drawn
        .iter()
        .min_by(|a, b| a.loss.total_cmp(&b.loss))
        .copied();
    let caption = match blew_up {
        0 => format!("scan: {} candidates", scan.len()),
        n => format!("scan: {} candidates ({n} blew up)", scan.len()),
    };
    let (upper, lower) = area.split_vertically(split);
    let mut chart = ChartBuilder::on(&upper)
        .caption(caption, (FONT_FAMILY, 18))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(56)
        .build_cartesian_2d(
            e_lo..e_hi,
            (lo..hi).log_scale().with_key_points(loss_ticks(lo, hi)),
        )?;
    chart
        .configure_mesh()
        .x_labels(5)
        .x_label_formatter(&|v| format!("{v:.1}"))
        .y_label_formatter(&|v| two_significant(*v))
        .label_style((FONT_FAMILY, 13))
        .draw()?;
    chart.draw_series(
        drawn
            .iter()
            .map(|c| Circle::new((c.log10_youngs, c.loss), 4, rgb(SCAN_COLOUR).filled())),
    )?;
    if let Some(b) = best {
        chart.draw_series(std::iter::once(Circle::new(
            (b.log10_youngs, b.loss),
            8,
            rgb(BEST_COLOUR).stroke_width(2),
        )))?;
    }
    let psnrs = extent(drawn.iter().map(|c| c.psnr), f64::is_finite);
    let (p_lo, p_hi) = match psnrs {
        None => (0.0, 40.0),
        Some((a, b)) if b - a < 1.0 => (a - 0.5, b + 0.5),
        Some((a, b)) => (a - 0.08 * (b - a), b + 0.08 * (b - a)),
    };
    let mut chart = ChartBuilder::on(&lower)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(e_lo..e_hi, p_lo..p_hi)?;
    chart
        .configure_mesh()
        .x_desc("log10 E (normalised)")
        .x_labels(5)
        .x_label_formatter(&|v| format!("{v:.1}"))
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 14))
        .draw()?;
    chart.draw_series(
        drawn
            .iter()
            .filter(|c| c.psnr.is_finite())
            .map(|c| Circle::new((c.log10_youngs, c.psnr), 4, rgb(SCAN_COLOUR).filled())),
    )?;
    if let Some(b) = best.filter(|b| b.psnr.is_finite()) {
        chart.draw_series(std::iter::once(Circle::new(
            (b.log10_youngs, b.psnr),
            8,
            rgb(BEST_COLOUR).stroke_width(2),
        )))?;
    }
    Ok(())
}

fn rgb(colour: [u8; 3]) -> RGBColor {
    RGBColor(colour[0], colour[1], colour[2])
}

/// Draws the stage boundaries (dashed, over `lo..hi`) and the curves on
/// `chart`, curve `k` in [`curve_colour`]`(k)`, with a dot where a curve
/// has a single point (a line of one point draws nothing); with `labels`,
/// each curve gets its legend entry.
fn draw_curves<'a, X, Y>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<X, Y>>,
    (lo, hi): (f64, f64),
    series: &[Vec<(f64, f64)>],
    boundaries: &[f64],
    labels: Option<&[&str]>,
) -> Result<(), DrawError>
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for x in boundaries {
        chart.draw_series(DashedLineSeries::new(
            [(*x, lo), (*x, hi)],
            6,
            4,
            RGBColor(150, 150, 150).stroke_width(1),
        ))?;
    }
    for (k, points) in series.iter().enumerate() {
        let colour = rgb(curve_colour(k));
        let drawn = chart.draw_series(LineSeries::new(
            points.iter().copied(),
            colour.stroke_width(2),
        ))?;
        if let Some(label) = labels.and_then(|l| l.get(k)) {
            drawn.label(*label).legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 18, y + 4)], colour.filled())
            });
        }
        if let [single] = points.as_slice() {
            chart.draw_series(std::iter::once(Circle::new(*single, 3, colour.filled())))?;
        }
    }
    Ok(())
}

/// The iterations labelled on the x axis: whole numbers only (a few
/// iterations must not read `0 0 1 2 2 3`, as plotters' default ten labels
/// at 0.5 apart print), every `step` of 1, 2 or 5 × 10^k so that at most
/// about a dozen are labelled. Its length is the label count plotters is
/// given, so that its own choice of round steps is no finer than 1.
fn iteration_ticks(x_end: f64) -> Vec<f64> {
    let span = x_end.max(1.0);
    let mut step = 1.0;
    'found: for decade in [1.0, 10.0, 100.0, 1000.0, 10000.0] {
        for m in [1.0, 2.0, 5.0] {
            step = m * decade;
            if span / step <= 12.0 {
                break 'found;
            }
        }
    }
    let count = (span / step).floor() as usize;
    (0..=count).map(|k| k as f64 * step).collect()
}

/// The losses labelled on the log axis: 1, 2 and 5 × 10^k inside
/// `lo..hi` (every mantissa 1–9 when fewer than four of those fall inside,
/// as in a range within one decade, and the ends too when even those are
/// fewer than three), so that every decade the curves reach has labels,
/// not only those above 0.1.
fn loss_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let ticks = |mantissas: &[f64]| -> Vec<f64> {
        let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (first..=last)
            // m / 10^−e rather than m · 10^e: 3 / 100 is 0.03 to the last
            // bit, 3 · 0.01 is not.
            .flat_map(|e| {
                mantissas.iter().map(move |m| {
                    if e < 0 {
                        m / 10f64.powi(-e)
                    } else {
                        m * 10f64.powi(e)
                    }
                })
            })
            .filter(|v| (lo..=hi).contains(v))
            .collect()
    };
    let coarse = ticks(&[1.0, 2.0, 5.0]);
    if coarse.len() >= 4 {
        return coarse;
    }
    let mut fine = ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    if fine.len() < 3 {
        // A range inside one step of those: label its ends as well.
        fine.insert(0, lo);
        fine.push(hi);
    }
    fine
}

/// `v` with two significant digits in plain decimals (0.20, 0.0035, 12).
fn two_significant(v: f64) -> String {
    if !(v.is_finite() && v > 0.0) {
        return format!("{v}");
    }
    let decimals = (1 - v.log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

/// The corner of the loss panel whose legend covers the fewest points of
/// `series` (x over `0..x_end`, y on the log axis over `lo..hi`), upper
/// right when it ties: on a drop the stiffness stages' losses are a
/// hundred times the velocity stages' and sit top right, under a legend
/// placed there by default. The legend is taken to cover the outer 40% of
/// the width and 50% of the height from its corner.
fn legend_corner(series: &[Vec<(f64, f64)>], x_end: f64, (lo, hi): (f64, f64)) -> SeriesLabelPosition {
    let (lo, hi) = (lo.log10(), hi.log10());
    let fractions: Vec<(f64, f64)> = series
        .iter()
        .flatten()
        .filter(|(_, y)| y.is_finite() && *y > 0.0)
        .map(|&(x, y)| (x / x_end.max(f64::MIN_POSITIVE), (y.log10() - lo) / (hi - lo)))
        .collect();
    let covered = |right: bool, upper: bool| {
        fractions
            .iter()
            .filter(|&&(x, y)| {
                (if right { x >= 0.6 } else { x <= 0.4 }) && (if upper { y >= 0.5 } else { y <= 0.5 })
            })
            .count()
    };
    [
        (SeriesLabelPosition::UpperRight, covered(true, true)),
        (SeriesLabelPosition::UpperLeft, covered(false, true)),
        (SeriesLabelPosition::LowerRight, covered(true, false)),
        (SeriesLabelPosition::LowerLeft, covered(false, false)),
    ]
    .into_iter()
    .min_by_key(|&(_, n)| n)
    .map(|(corner, _)| corner)
    .unwrap_or(SeriesLabelPosition::UpperRight)
}

fn draw_loss_panel(
    area: &Canvas,
    x_end: f64,
    (lo, hi): (f64, f64),
    series: &[Vec<(f64, f64)>],
    boundaries: &[f64],
    labels: &[&str],
) -> Result<(), DrawError> {
    let mut chart = ChartBuilder::on(area)
        .caption("loss per iteration", (FONT_FAMILY, 18))
        .margin(12)
        .x_label_area_size(28)
        .y_label_area_size(72)
        .build_cartesian_2d(
            0.0..x_end,
            (lo..hi).log_scale().with_key_points(loss_ticks(lo, hi)),
        )?;
    chart
        .configure_mesh()
        .y_desc("loss (log scale)")
        .x_labels(iteration_ticks(x_end).len())
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| two_significant(*v))
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 14))
        .draw()?;
    draw_curves(&mut chart, (lo, hi), series, boundaries, Some(labels))?;
    if !labels.is_empty() {
        chart
            .configure_series_labels()
            .position(legend_corner(series, x_end, (lo, hi)))
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font((FONT_FAMILY, 14).into_font())
            .draw()?;
    }
    Ok(())
}

fn draw_psnr_panel(
    area: &Canvas,
    x_end: f64,
    (lo, hi): (f64, f64),
    series: &[Vec<(f64, f64)>],
    boundaries: &[f64],
) -> Result<(), DrawError> {
    let mut chart = ChartBuilder::on(area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..x_end, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("iteration (stages end to end)")
        .y_desc("PSNR (dB)")
        .x_labels(iteration_ticks(x_end).len())
        .x_label_formatter(&|v| format!("{v:.0}"))
        .label_style((FONT_FAMILY, 13))
        .axis_desc_style((FONT_FAMILY, 14))
        .draw()?;
    draw_curves(&mut chart, (lo, hi), series, boundaries, None)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{iteration_ticks, legend_corner, loss_ticks, SeriesLabelPosition};

    /// The legend goes where the curves are not: upper right while it is
    /// free (a falling loss), elsewhere when late points sit there (a
    /// drop's stiffness losses above its velocity curve).
    #[test]
    fn the_legend_goes_to_the_emptiest_corner() {
        let falling = vec![vec![(0.0, 1.0), (5.0, 0.1), (10.0, 0.01)]];
        assert!(matches!(
            legend_corner(&falling, 10.0, (0.005, 2.0)),
            SeriesLabelPosition::UpperRight
        ));
        let drop = vec![
            (0..16)
                .map(|i| (f64::from(i), 0.02 - 0.001 * f64::from(i)))
                .collect(),
            vec![(17.0, 5.0)],
            vec![(24.0, 5.0)],
            vec![(25.0, 4.9)],
        ];
        assert!(matches!(
            legend_corner(&drop, 25.0, (0.0015, 7.0)),
            SeriesLabelPosition::UpperLeft
        ));
    }

    #[test]
    fn few_iterations_are_labelled_once_each_and_whole() {
        assert_eq!(iteration_ticks(5.0), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(iteration_ticks(1.0), vec![0.0, 1.0]);
        let many = iteration_ticks(137.0);
        assert!(many.len() <= 13, "{many:?}");
        assert!(many.iter().all(|v| v.fract() == 0.0));
        assert!(many.windows(2).all(|w| w[1] > w[0]));
    }

    #[test]
    fn every_decade_the_losses_reach_is_labelled() {
        // The demo's losses: 0.7 at the scan's start down to 0.015.
        let ticks = loss_ticks(0.015, 0.85);
        for wanted in [0.02, 0.05, 0.1, 0.2, 0.5] {
            assert!(
                ticks.iter().any(|t| (t - wanted).abs() < 1e-12),
                "{wanted} not in {ticks:?}"
            );
        }
        // Within one decade: every mantissa.
        let narrow = loss_ticks(0.021, 0.048);
        assert_eq!(narrow, vec![0.021, 0.03, 0.04, 0.048], "{narrow:?}");
        let wide = loss_ticks(0.021, 0.095);
        assert!(wide.len() >= 4 && wide.contains(&0.05), "{wide:?}");
    }
}
