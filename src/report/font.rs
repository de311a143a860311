//! The one font of the fit's pictures: DejaVu Sans, embedded from
//! `assets/DejaVuSans.ttf` (licence and source in assets/README.md), so
//! the binary reads no font file at run time and needs no fontconfig
//! (plotters without default features, `ab_glyph` text).

use std::sync::OnceLock;

use plotters::style::{register_font, FontStyle};

use super::ReportError;

/// The TrueType file, as shipped in `assets/`.
pub const FONT_TTF: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The family name the font is registered under: plotters' `sans-serif`,
/// so every text style of the pictures (and plotters' own defaults for
/// axis labels and legends) resolves to it.
pub const FONT_FAMILY: &str = "sans-serif";

/// Registers [`FONT_TTF`] with plotters under [`FONT_FAMILY`] (normal
/// style; bold and italic fall back to it). Idempotent and cheap after the
/// first call; every drawing function of this module calls it first,
/// because plotters' `ab_glyph` text has no font until one is registered.
pub fn register() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok =
        *REGISTERED.get_or_init(|| register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF).is_ok());
    if ok {
        Ok(())
    } else {
        Err(ReportError::Font)
    }
}
