//! A view's colour correction (`views[i].color_correction`): per RGB
//! channel, `c' = clamp(a·c + b, 0, 1)` with gain `a` and offset `b`,
//! applied to the final composited render (background included) before it
//! is compared with that view's video.
//!
//! Why: a camera's exposure and white balance scale and shift the colours
//! of its video, so a render with the splats' own colours differs from it
//! everywhere, object or not, and the fit would bend the material to
//! explain a colour cast. The correction models the camera, not the
//! object: it is applied wherever a render is compared with the view's
//! frames (the fit's loss, the camera check, `compare/`, `render
//! --side-by-side`) and nowhere else (`synth` makes references, plain
//! renders show the splats). `physfit align` fits it.
//!
//! Colours are 3DGS values (docs/design.md § Units and frames), so the
//! correction is affine in them, with no transfer curve.

use serde::{Deserialize, Serialize};

use crate::io::Frame;

/// Gain and offset per RGB channel (module doc).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColorCorrection {
    /// `a` per channel (finite, > 0; 1 = unchanged).
    pub gain: [f32; 3],
    /// `b` per channel (finite; 0 = unchanged).
    pub offset: [f32; 3],
}

impl ColorCorrection {
    /// Gain 1, offset 0: the render as it is.
    pub const IDENTITY: ColorCorrection = ColorCorrection {
        gain: [1.0; 3],
        offset: [0.0; 3],
    };

    /// True for exactly [`ColorCorrection::IDENTITY`]: callers skip the
    /// correction then, so that an uncorrected view's results stay bit for
    /// bit what they were (`clamp(1·c + 0, 0, 1)` would clamp a render's
    /// values, which the loss never did).
    pub fn is_identity(&self) -> bool {
        *self == Self::IDENTITY
    }

    /// `clamp(a·c + b, 0, 1)` per channel, on the host (the GPU kernel,
    /// [`crate::loss::color_correction`], computes the same in f32).
    pub fn apply(&self, rgb: [f32; 3]) -> [f32; 3] {
        std::array::from_fn(|c| (self.gain[c] * rgb[c] + self.offset[c]).clamp(0.0, 1.0))
    }

    /// `frame` as the view's camera would record it: [`ColorCorrection::apply`]
    /// to every pixel's RGB, alpha unchanged; the frame itself when the
    /// correction is the identity. For the pictures that show a render
    /// beside the view's video (camera check, `compare/`, `render
    /// --side-by-side`).
    pub fn apply_to_frame(&self, mut frame: Frame) -> Frame {
        if self.is_identity() {
            return frame;
        }
        for p in &mut frame.pixels {
            let [r, g, b] = self.apply([p[0], p[1], p[2]]);
            *p = [r, g, b, p[3]];
        }
        frame
    }
}

impl Default for ColorCorrection {
    /// [`ColorCorrection::IDENTITY`].
    fn default() -> Self {
        Self::IDENTITY
    }
}
