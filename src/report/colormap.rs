//! The colour map of `stiffness.png`: viridis (van der Walt & Smith, the
//! default of matplotlib since 2.0), perceptually uniform and readable in
//! grey and by colour-blind viewers, so equal steps of log10 E look equal.
//!
//! The control points are [`VIRIDIS`]: matplotlib's `viridis(k / 16)` for
//! k = 0..=16, that is entries 16·k (and the last, 255) of its 256-entry
//! table `_viridis_data` (`lib/matplotlib/_cm_listed.py`, from
//! `colormaps.py` of <https://github.com/BIDS/colormap> by Nathaniel J.
//! Smith, Stefan van der Walt and Eric Firing, released under CC0). Between
//! them the map interpolates linearly in RGB.

/// Viridis at t = k / 16, k = 0..=16, RGB in [0, 1] (module doc: the source).
pub const VIRIDIS: [[f64; 3]; 17] = [
    [0.267004, 0.004874, 0.329415],
    [0.282327, 0.094955, 0.417331],
    [0.278826, 0.175490, 0.483397],
    [0.258965, 0.251537, 0.524736],
    [0.229739, 0.322361, 0.545706],
    [0.199430, 0.387607, 0.554642],
    [0.172719, 0.448791, 0.557885],
    [0.149039, 0.508051, 0.557250],
    [0.127568, 0.566949, 0.550556],
    [0.120638, 0.625828, 0.533488],
    [0.157851, 0.683765, 0.501686],
    [0.246070, 0.738910, 0.452024],
    [0.369214, 0.788888, 0.382914],
    [0.515992, 0.831158, 0.294279],
    [0.678489, 0.863742, 0.189503],
    [0.845561, 0.887322, 0.099702],
    [0.993248, 0.906157, 0.143936],
];

/// The colour of a NaN (a value the map cannot place, e.g. a static
/// Gaussian that has no stiffness): a mid grey, which viridis never shows.
pub const NAN_COLOUR: [u8; 3] = [128, 128, 128];

/// The map's colour at `t`, 8 bits per channel (`round(255·c)`): `t` is
/// clamped to [0, 1] (0 dark purple, 1 yellow), NaN gives [`NAN_COLOUR`].
pub fn map(t: f64) -> [u8; 3] {
    if t.is_nan() {
        return NAN_COLOUR;
    }
    let last = VIRIDIS.len() - 1;
    let x = t.clamp(0.0, 1.0) * last as f64;
    let k = (x.floor() as usize).min(last - 1);
    let f = x - k as f64;
    let (a, b) = (VIRIDIS[k], VIRIDIS[k + 1]);
    [0, 1, 2].map(|c| ((a[c] + f * (b[c] - a[c])) * 255.0).round() as u8)
}

/// Where `value` lies in `low..=high`, as the map's `t` (unclamped: [`map`]
/// clamps). A range of zero width (`low == high`, e.g. one global E) puts
/// every value at its middle, 0.5, as the colour bar shows it; NaN stays
/// NaN. The caller checks that the range is finite and ordered.
pub fn normalised(value: f64, low: f64, high: f64) -> f64 {
    if high > low {
        (value - low) / (high - low)
    } else if value.is_nan() {
        f64::NAN
    } else {
        0.5
    }
}

/// [`super::ReportError::ColourRange`] unless `low..=high` is finite and
/// ordered.
pub(crate) fn check_range(
    picture: &'static str,
    low: f64,
    high: f64,
) -> Result<(), super::ReportError> {
    if low.is_finite() && high.is_finite() && low <= high {
        Ok(())
    } else {
        Err(super::ReportError::ColourRange { picture, low, high })
    }
}
