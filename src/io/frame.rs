//! [`Frame`]: the one image type of physfit, a picture in memory as the
//! rasterizer writes it and the loss reads it. Reference frames are decoded
//! into it and renders encoded from it by `crate::scene::frames` (PNG and
//! JPEG, the 3DGS colour convention: a value is its 8-bit sample / 255, no
//! transfer curve, docs/design.md § Units and frames).

/// One image, RGBA in [0, 1] (module doc: no transfer curve), straight
/// (not premultiplied) alpha.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// `width × height` RGBA pixels in [0, 1], row-major from the top left.
    pub pixels: Vec<[f32; 4]>,
}
