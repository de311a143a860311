//! The fit's pictures: `loss.png` (the loss and PSNR
//! curves), the `compare/` triptychs (reference | fitted | difference) and
//! the colour map and colour bar of `stiffness.png`, plus the recolouring
//! of the splats that `stiffness.png` renders.
//!
//! Pure CPU code on `image` RGB buffers: the curves, captions and the colour
//! bar are drawn with plotters (bitmap backend, `ab_glyph` text) on the one
//! font embedded from `assets/` ([`font`]); renders are quantised as every
//! image of the project is (docs/design.md § Units and frames: 3DGS colours,
//! `round(255·clamp(v))`, no transfer curve). Every picture is written
//! atomically by [`crate::io::png::write_png`].

mod canvas;
internal_mods! {
    caption;
    colorbar;
    colormap;
    compare;
    error;
    font;
    loss_plot;
    recolor;
}

pub use caption::{captioned, CAPTION_HEIGHT};
pub use colorbar::with_colorbar;
pub use colormap::{map, normalised};
pub use compare::{captioned_row, difference, frame_triptych, rgb8, triptych};
pub use error::ReportError;
pub use loss_plot::{loss_plot, loss_plot_with_scan, LossCurve, LossPoint, ScanCandidate};
pub use recolor::{recolored, stiffness_colours};
