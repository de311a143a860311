//! `physfit render` (the scene at rest) as one library call
//! ([`render_at_rest`]): the scene's splats drawn from each named camera
//! through the one forward path ([`SceneRenderer::at_rest`]), kept in
//! memory ([`RestRender`]) and written as one opaque 8-bit PNG per view
//! ([`RestRender::write_outputs`]), into a folder of the caller's choosing
//! (the command's staging folder).

use std::path::Path;

use crate::gpu::GpuContext;
use crate::io::Frame;
use crate::scene::frames::write_png;
use crate::scene::{Camera, Scene};
use crate::stop::StopSignal;

use super::{ForwardError, SceneRenderer};

/// The scene at rest from each view.
pub struct RestRender {
    /// `(name, render)` per view, in the order asked: RGBA in [0, 1], the
    /// background composited, alpha the coverage.
    pub views: Vec<(String, Frame)>,
}

impl RestRender {
    /// The PNG's file name of view `name`.
    pub fn file_name(name: &str) -> String {
        format!("{name}.png")
    }

    /// Writes each view as `dir/<name>.png`: opaque 8-bit (3DGS colours,
    /// `round(255·v)`, no transfer curve). The colour is composited over
    /// the background already, so the alpha written is 1: the coverage as
    /// straight alpha would make viewers composite twice (fringes).
    pub fn write_outputs(&self, dir: &Path) -> Result<(), ForwardError> {
        for (name, frame) in &self.views {
            let mut pixels = frame.pixels.clone();
            for p in &mut pixels {
                p[3] = 1.0;
            }
            write_png(
                &dir.join(Self::file_name(name)),
                frame.width,
                frame.height,
                &pixels,
            )?;
        }
        Ok(())
    }
}

/// Renders the splats of `scene` at rest over its background from each of
/// `cameras`; `view(k)` is told before view k is rendered, and the run
/// stops there when `stop` is raised ([`ForwardError::Stopped`], its
/// `frame` the view's index).
pub fn render_at_rest(
    ctx: &GpuContext,
    scene: &Scene,
    cameras: &[(String, Camera)],
    stop: Option<&StopSignal>,
    mut view: impl FnMut(usize),
) -> Result<RestRender, ForwardError> {
    let mut renderer = SceneRenderer::at_rest(ctx, scene.gaussians(), scene.background)?;
    let mut views = Vec::with_capacity(cameras.len());
    for (k, (name, camera)) in cameras.iter().enumerate() {
        view(k);
        if stop.is_some_and(StopSignal::raised) {
            return Err(ForwardError::Stopped { frame: k });
        }
        views.push((name.clone(), renderer.render(ctx, camera)?));
    }
    Ok(RestRender { views })
}
