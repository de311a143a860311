//! `physfit render --params` as one library call ([`render_motion`]): the
//! fitted object of a `drivers.safetensors` simulated forward under new
//! interactions (docs/design.md § Interactions) through the one forward
//! path ([`SceneRenderer`]), rendered from each view frame after frame,
//! kept in memory as 8-bit RGB images ([`MotionRender`]) and written as a
//! PNG sequence and a looping GIF per view ([`MotionRender::write_outputs`]).
//!
//! What cannot work is refused before anything runs ([`FittedMotion::new`]:
//! a drivers file of another scene or other settings, too few substeps for
//! the largest fitted E, a motion faster than half a cell per substep, an
//! added collider holding the object), so that a caller can refuse a run
//! before it opens its output folder; nothing is written until the caller
//! asks, into a folder of its choosing (the command's staging folder).

use std::path::Path;

use glam::Vec3;
use image::RgbImage;

use crate::gpu::GpuContext;
use crate::interact::gif_sequence::GifSequence;
use crate::interact::orbit::{object_centre, orbit_angle, orbit_camera};
use crate::interact::Interactions;
use crate::io::png::write_png;
use crate::output::fitted_ply::SplatMaterial;
use crate::output::stiffness::{stiffness_range_world, StiffnessColouring};
use crate::output::FittedDrivers;
use crate::report::rgb8;
use crate::scene::{Camera, ColorCorrection, Gaussians, Scene};
use crate::stop::StopSignal;

use super::{ForwardError, ForwardSetup, SceneRenderer};

/// How the splats of a fitted motion are coloured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MotionColouring {
    /// The splats' own colours.
    #[default]
    Own,
    /// As each view's camera records them: the splats' colours through the
    /// view's colour correction (`views[i].color_correction`, as the fit's
    /// loss compares them with the reference frames); a camera that is no
    /// view of the scene keeps the splats' own.
    Camera,
    /// The colour map of the fitted log10 E (world units), with a colour
    /// bar beside each frame.
    Stiffness,
}

/// What [`render_motion`] renders.
#[derive(Clone, Debug)]
pub struct MotionOptions {
    /// The views, each a name (its folder and GIF) and its camera.
    pub cameras: Vec<(String, Camera)>,
    /// Frames, the rest frame 0 included (docs/scene.md § Frame counts; 0
    /// is read as 1).
    pub frames: usize,
    /// What moves the fitted object.
    pub interactions: Interactions,
    /// The cameras circle the object's centre by this many degrees over
    /// the sequence ([`orbit_camera`]).
    pub orbit: Option<f32>,
    /// How the splats are coloured.
    pub colouring: MotionColouring,
    /// Stops the run before the next frame when raised
    /// ([`ForwardError::Stopped`]).
    pub stop: Option<StopSignal>,
}

/// One view's frames.
pub struct MotionView {
    /// The view's name: its folder `name/` and GIF `name.gif`.
    pub name: String,
    /// Frame `k` as shown (with the colour bar under
    /// [`MotionColouring::Stiffness`]).
    pub frames: Vec<RgbImage>,
}

/// A fitted motion rendered, in memory.
pub struct MotionRender {
    /// Every view, in the order of [`MotionOptions::cameras`].
    pub views: Vec<MotionView>,
    /// The scene's frame rate, for the GIFs ([`GifSequence`]).
    pub fps: f64,
    /// Per impulse: the particles it held, or `None` when it starts after
    /// the last frame.
    pub impulse_members: Vec<Option<Vec<usize>>>,
}

impl MotionRender {
    /// Frames per view, the rest frame 0 included.
    pub fn frames(&self) -> usize {
        self.views.first().map_or(0, |v| v.frames.len())
    }

    /// Writes into `dir`, for each view, `name/frame_{k:04}.png` and the
    /// looping GIF `name.gif` at the scene's fps rounded to whole
    /// centiseconds ([`crate::interact::gif_sequence::gif_fps`]).
    /// `writing(k)` is told before frame k is written; the run stops there
    /// when `stop` is raised.
    pub fn write_outputs(
        &self,
        dir: &Path,
        stop: Option<&StopSignal>,
        mut writing: impl FnMut(usize),
    ) -> Result<(), ForwardError> {
        let mut gifs = Vec::with_capacity(self.views.len());
        for view in &self.views {
            let sub = dir.join(&view.name);
            std::fs::create_dir_all(&sub).map_err(|source| ForwardError::Io {
                path: sub.clone(),
                source,
            })?;
            gifs.push(GifSequence::create(
                &dir.join(format!("{}.gif", view.name)),
                self.fps,
            )?);
        }
        for k in 0..self.frames() {
            writing(k);
            if stop.is_some_and(StopSignal::raised) {
                return Err(ForwardError::Stopped { frame: k });
            }
            for (view, gif) in self.views.iter().zip(&mut gifs) {
                let image = &view.frames[k];
                write_png(
                    &dir.join(&view.name).join(format!("frame_{k:04}.png")),
                    image,
                )?;
                gif.push(image)?;
            }
        }
        Ok(())
    }
}

/// A fitted motion checked and ready to render (module doc).
pub struct FittedMotion {
    setup: ForwardSetup,
    gaussians: Gaussians,
    stiffness: Option<StiffnessColouring>,
    corrections: Vec<Option<ColorCorrection>>,
    centre: Vec3,
    background: [f32; 3],
    fps: f64,
    options: MotionOptions,
}

impl FittedMotion {
    /// The fitted object of `fitted` (read from `params`, named in errors)
    /// in `scene` under `options`: refuses what cannot work (module doc)
    /// before anything runs on the GPU.
    pub fn new(
        scene: &Scene,
        fitted: &FittedDrivers,
        params: &str,
        options: MotionOptions,
    ) -> Result<Self, ForwardError> {
        let setup = ForwardSetup::from_fitted(scene, fitted, params, &options.interactions)?;
        setup.check_velocity_bound()?;
        let stiffness = match options.colouring {
            MotionColouring::Stiffness => Some(StiffnessColouring::new(
                &SplatMaterial::from_fitted(scene, fitted)?,
                stiffness_range_world(
                    fitted.settings.log10_youngs_range,
                    fitted.settings.sim_box.side,
                ),
            )),
            _ => None,
        };
        let gaussians = match &stiffness {
            Some(c) => c.recoloured(scene.gaussians())?,
            None => scene.gaussians().clone(),
        };
        let corrections = options
            .cameras
            .iter()
            .map(|(name, _)| match options.colouring {
                MotionColouring::Camera => scene
                    .views
                    .iter()
                    .find(|v| v.name == *name)
                    .map(|v| v.color_correction),
                _ => None,
            })
            .collect();
        Ok(Self {
            setup,
            gaussians,
            stiffness,
            corrections,
            centre: object_centre(scene),
            background: scene.background,
            fps: scene.fps,
            options,
        })
    }

    /// The run's setup: its impulses, initial velocities, simulator
    /// settings.
    pub fn setup(&self) -> &ForwardSetup {
        &self.setup
    }

    /// Simulates and renders every frame; `frame(k)` is told before frame
    /// k is simulated and rendered, and the run stops there when
    /// [`MotionOptions::stop`] is raised. A breakdown names the frame and
    /// substep.
    pub fn render(
        &self,
        ctx: &GpuContext,
        mut frame: impl FnMut(usize),
    ) -> Result<MotionRender, ForwardError> {
        let o = &self.options;
        let frames = o.frames.max(1);
        let mut animation =
            SceneRenderer::simulated(ctx, &self.setup, &self.gaussians, self.background)?;
        let mut views: Vec<MotionView> = o
            .cameras
            .iter()
            .map(|(name, _)| MotionView {
                name: name.clone(),
                frames: Vec::with_capacity(frames),
            })
            .collect();
        for k in 0..frames {
            frame(k);
            if o.stop.as_ref().is_some_and(StopSignal::raised) {
                return Err(ForwardError::Stopped { frame: k });
            }
            if k > 0 {
                animation.step(ctx)?;
            }
            animation.pose(ctx, k)?;
            for (v, (_, camera)) in o.cameras.iter().enumerate() {
                let camera = match o.orbit {
                    Some(degrees) => {
                        orbit_camera(camera, self.centre, orbit_angle(degrees, k, frames))
                    }
                    None => camera.clone(),
                };
                let mut rendered = animation.render(ctx, &camera)?;
                if let Some(correction) = &self.corrections[v] {
                    rendered = correction.apply_to_frame(rendered);
                }
                let mut image = rgb8(&rendered);
                if let Some(c) = &self.stiffness {
                    image = c.with_colorbar(&image)?;
                }
                views[v].frames.push(image);
            }
        }
        Ok(MotionRender {
            views,
            fps: self.fps,
            impulse_members: (0..self.setup.impulses.len())
                .map(|i| animation.impulse_members(i))
                .collect(),
        })
    }
}

/// Renders the fitted object of `fitted` (read from `params`, named in
/// errors) in `scene` under `options` ([`FittedMotion::new`], then
/// [`FittedMotion::render`]).
pub fn render_motion(
    ctx: &GpuContext,
    scene: &Scene,
    fitted: &FittedDrivers,
    params: &str,
    options: MotionOptions,
    frame: impl FnMut(usize),
) -> Result<MotionRender, ForwardError> {
    FittedMotion::new(scene, fitted, params, options)?.render(ctx, frame)
}
