//! [`SceneRenderer`]: the scene's splats on the GPU with the rasterizer and,
//! for a run in motion, the MPM over the drivers and the deformation that
//! makes the splats follow them.

use super::error::ForwardError;
use super::setup::ForwardSetup;
use crate::deform::Deformation;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::mpm::{ForcedRun, MpmSimulator, ParticleState};
use crate::io::Frame;
use crate::scene::{Camera, Gaussians};
use crate::splat::{Rasterizer, RenderOutput, SplatBuffers, StaticBackdrop};

/// The simulated part of a run: the drivers' MPM under the impulses (with
/// none, exactly the fit's forward), every frame state simulated so far,
/// and the deformation that poses the splats at one of them.
struct Motion {
    sim: MpmSimulator,
    forced: ForcedRun,
    deformation: Deformation,
    states: Vec<GpuBuffer>,
}

/// The parts of a [`SceneRenderer`] in motion, borrowed at once, for a
/// caller that also runs their backward passes (the fit).
pub struct RendererParts<'a> {
    /// The simulator.
    pub sim: &'a MpmSimulator,
    /// The deformation of the splats by the drivers.
    pub deformation: &'a Deformation,
    /// The splats as the rasterizer reads them.
    pub splats: &'a SplatBuffers,
    /// The rasterizer.
    pub raster: &'a mut Rasterizer,
}

/// One forward path from drivers to pictures (module doc of
/// [`crate::forward`]).
pub struct SceneRenderer {
    splats: SplatBuffers,
    raster: Rasterizer,
    background: [f32; 3],
    motion: Option<Motion>,
}

impl SceneRenderer {
    /// The splats `gaussians` (the scene's, or recoloured ones) at rest over
    /// `background`: plain `render` and the fit's stiffness picture.
    pub fn at_rest(
        ctx: &GpuContext,
        gaussians: &Gaussians,
        background: [f32; 3],
    ) -> Result<Self, ForwardError> {
        Ok(Self {
            splats: SplatBuffers::upload(ctx, gaussians)?,
            raster: Rasterizer::new(ctx)?,
            background,
            motion: None,
        })
    }

    /// The run of `setup` with the splats `gaussians` rendered over
    /// `background`; frame 0 is the rest state with the initial velocity.
    pub fn simulated(
        ctx: &GpuContext,
        setup: &ForwardSetup,
        gaussians: &Gaussians,
        background: [f32; 3],
    ) -> Result<Self, ForwardError> {
        let sim = MpmSimulator::new(ctx, &setup.config, &setup.setup)?;
        if let Some(nu) = &setup.poisson {
            sim.set_poisson(ctx, nu)?;
        }
        let forced = ForcedRun::new(ctx, &sim, setup.impulses.clone())?;
        let first = sim.upload_state(ctx, "forward frame 0", &setup.initial)?;
        Ok(Self {
            motion: Some(Motion {
                forced,
                deformation: Deformation::new(ctx, &setup.deform)?,
                states: vec![first],
                sim,
            }),
            ..Self::at_rest(ctx, gaussians, background)?
        })
    }

    fn motion(&self) -> Result<&Motion, ForwardError> {
        self.motion.as_ref().ok_or(ForwardError::AtRest)
    }

    /// Frames simulated so far, the rest frame 0 included (1 at rest).
    pub fn frames(&self) -> usize {
        self.motion.as_ref().map_or(1, |m| m.states.len())
    }

    /// The simulator.
    pub fn simulator(&self) -> Result<&MpmSimulator, ForwardError> {
        Ok(&self.motion()?.sim)
    }

    /// The deformation of the splats by the drivers.
    pub fn deformation(&self) -> Result<&Deformation, ForwardError> {
        Ok(&self.motion()?.deformation)
    }

    /// The splats as the rasterizer reads them (posed by the last
    /// [`SceneRenderer::pose`]).
    pub fn splats(&self) -> &SplatBuffers {
        &self.splats
    }

    /// Every part at once ([`RendererParts`]).
    pub fn parts_mut(&mut self) -> Result<RendererParts<'_>, ForwardError> {
        let m = self.motion.as_ref().ok_or(ForwardError::AtRest)?;
        Ok(RendererParts {
            sim: &m.sim,
            deformation: &m.deformation,
            splats: &self.splats,
            raster: &mut self.raster,
        })
    }

    /// Frame `k`'s state, if simulated.
    pub fn state(&self, k: usize) -> Option<&GpuBuffer> {
        self.motion.as_ref().and_then(|m| m.states.get(k))
    }

    /// The particles impulse `k` holds, once it has started.
    pub fn impulse_members(&self, k: usize) -> Option<Vec<usize>> {
        self.motion.as_ref().and_then(|m| m.forced.members(k))
    }

    /// Simulates the next frame; a breakdown names the frame and substep.
    pub fn step(&mut self, ctx: &GpuContext) -> Result<(), ForwardError> {
        let m = self.motion.as_mut().ok_or(ForwardError::AtRest)?;
        let k = m.states.len();
        let next = m.sim.state_buffer(ctx, &format!("forward frame {k}"))?;
        m.forced
            .run_frame(ctx, &m.sim, &m.states[k - 1], &next, k as u32)?;
        m.states.push(next);
        Ok(())
    }

    /// Simulates up to frame `last` (nothing when it is simulated already).
    pub fn run_to(&mut self, ctx: &GpuContext, last: usize) -> Result<(), ForwardError> {
        while self.frames() <= last {
            self.step(ctx)?;
        }
        Ok(())
    }

    /// Every frame state simulated so far, read back.
    pub fn read_states(&self, ctx: &GpuContext) -> Result<Vec<ParticleState>, ForwardError> {
        let m = self.motion()?;
        m.states
            .iter()
            .map(|s| Ok(m.sim.read_state(ctx, s)?))
            .collect()
    }

    /// Moves the splats to frame `k` (simulated already).
    pub fn pose(&self, ctx: &GpuContext, k: usize) -> Result<(), ForwardError> {
        let state = self.state(k).ok_or(ForwardError::NotSimulated {
            frame: k,
            frames: self.frames(),
        })?;
        self.pose_state(ctx, state)
    }

    /// Moves the splats to the drivers of `state`, any state buffer of this
    /// run's simulator (the fit's rollouts).
    pub fn pose_state(&self, ctx: &GpuContext, state: &GpuBuffer) -> Result<(), ForwardError> {
        let mut encoder = crate::gpu::encoder(ctx, "forward: splats follow drivers");
        self.motion()?
            .deformation
            .encode_forward(ctx, &mut encoder, state, &self.splats)?;
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Draws the splats as posed from `camera`, kept on the GPU (the fit's
    /// loss and backward read it there).
    pub fn draw(
        &mut self,
        ctx: &GpuContext,
        camera: &Camera,
    ) -> Result<RenderOutput, ForwardError> {
        Ok(self
            .raster
            .render(ctx, &self.splats, camera, self.background)?)
    }

    /// [`SceneRenderer::draw`] from `backdrop`'s camera, blending only the
    /// tiles its moving splats reach ([`Rasterizer::render_over`]): the
    /// same image, the backward exact for the moving splats only.
    pub fn draw_over(
        &mut self,
        ctx: &GpuContext,
        backdrop: &StaticBackdrop,
    ) -> Result<RenderOutput, ForwardError> {
        Ok(self.raster.render_over(ctx, &self.splats, backdrop)?)
    }

    /// The static backdrop of this run seen from `camera`: every splat but
    /// the deformed ones rendered once ([`StaticBackdrop`]); `gaussians`
    /// are the splats this renderer was built with. `None` at rest.
    pub fn static_backdrop(
        &mut self,
        ctx: &GpuContext,
        gaussians: &Gaussians,
        camera: &Camera,
    ) -> Result<Option<StaticBackdrop>, ForwardError> {
        let Some(m) = self.motion.as_ref() else {
            return Ok(None);
        };
        Ok(Some(StaticBackdrop::new(
            ctx,
            &mut self.raster,
            gaussians,
            m.deformation.splat_indices(),
            camera,
            self.background,
        )?))
    }

    /// Renders the splats as posed from `camera` and reads the image back
    /// (RGBA in [0, 1], the background composited, alpha the coverage).
    pub fn render(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<Frame, ForwardError> {
        let out = self.draw(ctx, camera)?;
        Ok(Frame {
            width: out.width,
            height: out.height,
            pixels: self.raster.read_image(ctx, &out)?,
        })
    }

    /// Frame `k` (simulated already) rendered from `camera`.
    pub fn render_frame(
        &mut self,
        ctx: &GpuContext,
        k: usize,
        camera: &Camera,
    ) -> Result<Frame, ForwardError> {
        if self.motion.is_some() {
            self.pose(ctx, k)?;
        } else if k > 0 {
            return Err(ForwardError::AtRest);
        }
        self.render(ctx, camera)
    }

    /// Reads the posed splats' centres (world units) and raw rotations back
    /// into `gaussians` (the scene's splats, for writing a `.ply`).
    pub fn read_pose(
        &self,
        ctx: &GpuContext,
        gaussians: &mut Gaussians,
    ) -> Result<(), ForwardError> {
        gaussians.means = ctx.read_buffer(&self.splats.means)?;
        gaussians.rotations = ctx.read_buffer(&self.splats.rotations)?;
        Ok(())
    }
}
