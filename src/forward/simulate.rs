//! `physfit simulate` as one library call: the scene's own drivers at one
//! Young's modulus (`material.youngs_modulus`), from rest plus the
//! given interactions (a uniform initial velocity, for the command), run
//! through the one forward path ([`SceneRenderer`]), and written as a
//! posed 3DGS `.ply` per frame and a PNG sequence per camera
//! ([`Simulation::write_outputs`]).
//!
//! The whole motion is simulated before anything is written, so a run
//! that breaks down or is stopped writes nothing; the caller chooses
//! where the files go (the command's staging folder).

use std::path::Path;

use crate::drive::DriverSet;
use crate::gpu::GpuContext;
use crate::interact::Interactions;
use crate::scene::frames::write_png;
use crate::scene::ply::PlyData;
use crate::scene::{Camera, Scene};
use crate::stop::StopSignal;

use super::{ForwardError, ForwardSetup, SceneRenderer};

/// What [`simulate_scene`] runs.
pub struct SimulateOptions {
    /// Frames, the rest frame 0 included (docs/scene.md § Frame counts).
    pub frames: usize,
    /// What moves the object (every driver starts at rest).
    pub interactions: Interactions,
    /// Stops the run between frames ([`ForwardError::Stopped`]).
    pub stop: Option<StopSignal>,
}

/// A simulated motion on the GPU, ready to be posed, rendered or written.
pub struct Simulation {
    renderer: SceneRenderer,
    drivers: DriverSet,
    setup: ForwardSetup,
}

/// The posed splats of every frame and their renders, as files:
/// `frame_NNNN.ply` and `<camera name>/frame_NNNN.png`.
impl Simulation {
    /// Frames simulated, the rest frame 0 included.
    pub fn frames(&self) -> usize {
        self.renderer.frames()
    }

    /// The MPM particles: the scene's K-Means drivers.
    pub fn drivers(&self) -> &DriverSet {
        &self.drivers
    }

    /// Splats that follow the drivers.
    pub fn moved_splats(&self) -> usize {
        self.setup.deform.len()
    }

    /// MPM substeps per frame.
    pub fn substeps_per_frame(&self) -> u32 {
        self.setup.config.substeps_per_frame
    }

    /// The one forward path holding the motion (to pose or render a frame).
    pub fn renderer(&mut self) -> &mut SceneRenderer {
        &mut self.renderer
    }

    /// Writes frame after frame into `dir`: the scene's splats posed at
    /// frame k as `frame_{k:04}.ply`, and for each `(name, camera)` its
    /// opaque 8-bit render (3DGS colours over the background) as
    /// `name/frame_{k:04}.png`. `writing(k)` is told before frame k is
    /// written; the run stops there when `stop` is raised.
    pub fn write_outputs(
        &mut self,
        ctx: &GpuContext,
        scene: &Scene,
        dir: &Path,
        cameras: &[(String, Camera)],
        stop: Option<&StopSignal>,
        mut writing: impl FnMut(usize),
    ) -> Result<(), ForwardError> {
        for (name, _) in cameras {
            let sub = dir.join(name);
            std::fs::create_dir_all(&sub).map_err(|source| ForwardError::Io {
                path: sub.clone(),
                source,
            })?;
        }
        let mut gaussians = scene.gaussians().clone();
        for k in 0..self.frames() {
            writing(k);
            if stop.is_some_and(StopSignal::raised) {
                return Err(ForwardError::Stopped { frame: k });
            }
            // The splats follow their drivers on the GPU, for the renders;
            // the .ply file needs them on the host.
            self.renderer.pose(ctx, k)?;
            self.renderer.read_pose(ctx, &mut gaussians)?;
            let path = dir.join(format!("frame_{k:04}.ply"));
            PlyData::from_gaussians(&gaussians, &path).write(&path, &[])?;
            for (name, camera) in cameras {
                let path = dir.join(name).join(format!("frame_{k:04}.png"));
                let mut frame = self.renderer.render(ctx, camera)?;
                // Composited over the background already: opaque, so that
                // viewers do not composite twice.
                for p in &mut frame.pixels {
                    p[3] = 1.0;
                }
                write_png(&path, frame.width, frame.height, &frame.pixels)?;
            }
        }
        Ok(())
    }
}

/// Simulates `scene` for `options.frames` frames (the rest frame 0 and
/// `frames − 1` simulated ones) with its drivers at
/// `material.youngs_modulus` everywhere, from rest under
/// `options.interactions`; `stepping(k)` is told before frame k is
/// simulated, and the run stops there when `options.stop` is raised.
pub fn simulate_scene(
    ctx: &GpuContext,
    scene: &Scene,
    options: &SimulateOptions,
    mut stepping: impl FnMut(usize),
) -> Result<Simulation, ForwardError> {
    let drivers = DriverSet::from_scene(scene)?;
    // One E everywhere: the scene's starting value.
    let log10_youngs = vec![scene.material.youngs_modulus.log10(); drivers.len()];
    let setup = ForwardSetup::from_drivers(
        scene,
        &drivers,
        log10_youngs,
        &vec![[0.0; 3]; drivers.len()],
        &options.interactions,
    )?;
    let mut renderer = SceneRenderer::simulated(ctx, &setup, scene.gaussians(), scene.background)?;
    for k in 1..options.frames.max(1) {
        stepping(k);
        if options.stop.as_ref().is_some_and(StopSignal::raised) {
            return Err(ForwardError::Stopped { frame: k });
        }
        renderer.step(ctx)?;
    }
    Ok(Simulation {
        renderer,
        drivers,
        setup,
    })
}
