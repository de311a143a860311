//! [`SceneRenderer`]: a forward run of the scene, frame by frame: the
//! splats at rest ([`Drawing`] alone), or the whole [`Chain`] in motion
//! with every frame state simulated so far.

use super::chain::Chain;
use super::drawing::Drawing;
use super::error::ForwardError;
use super::setup::ForwardSetup;
use crate::gpu::{GpuBuffer, GpuContext};
use crate::io::Frame;
use crate::mpm::ParticleState;
use crate::scene::{Camera, Gaussians};

/// What a run draws: the splats at rest, or the chain in motion with its
/// frame states (`[0]` the rest state with the initial velocity). Both
/// boxed: their pipelines take kilobytes, twice as many in the chain.
enum Run {
    AtRest(Box<Drawing>),
    Simulated {
        chain: Box<Chain>,
        states: Vec<GpuBuffer>,
    },
}

/// One forward path from drivers to pictures (module doc of
/// [`crate::forward`]).
pub struct SceneRenderer {
    run: Run,
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
            run: Run::AtRest(Box::new(Drawing::new(ctx, gaussians, background)?)),
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
        let chain = Box::new(Chain::new(ctx, setup, gaussians, background)?);
        let first = chain.upload_state(ctx, "forward frame 0", &setup.initial)?;
        Ok(Self {
            run: Run::Simulated {
                chain,
                states: vec![first],
            },
        })
    }

    /// Frames simulated so far, the rest frame 0 included (1 at rest).
    pub fn frames(&self) -> usize {
        match &self.run {
            Run::AtRest(_) => 1,
            Run::Simulated { states, .. } => states.len(),
        }
    }

    /// The particles impulse `k` holds, once it has started.
    pub fn impulse_members(&self, k: usize) -> Option<Vec<usize>> {
        match &self.run {
            Run::AtRest(_) => None,
            Run::Simulated { chain, .. } => chain.impulse_members(k),
        }
    }

    /// Simulates the next frame; a breakdown names the frame and substep.
    pub fn step(&mut self, ctx: &GpuContext) -> Result<(), ForwardError> {
        let Run::Simulated { chain, states } = &mut self.run else {
            return Err(ForwardError::AtRest);
        };
        let k = states.len();
        let next = chain.state_buffer(ctx, &format!("forward frame {k}"))?;
        chain.step(ctx, &states[k - 1], &next, k as u32)?;
        states.push(next);
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
        let Run::Simulated { chain, states } = &self.run else {
            return Err(ForwardError::AtRest);
        };
        states
            .iter()
            .map(|s| Ok(chain.read_state(ctx, s)?))
            .collect()
    }

    /// Moves the splats to frame `k` (simulated already).
    pub fn pose(&self, ctx: &GpuContext, k: usize) -> Result<(), ForwardError> {
        let Run::Simulated { chain, states } = &self.run else {
            return Err(ForwardError::AtRest);
        };
        let state = states.get(k).ok_or(ForwardError::NotSimulated {
            frame: k,
            frames: states.len(),
        })?;
        Ok(chain.pose(ctx, state)?)
    }

    /// Renders the splats as posed from `camera` and reads the image back
    /// (RGBA in [0, 1], the background composited, alpha the coverage).
    pub fn render(&mut self, ctx: &GpuContext, camera: &Camera) -> Result<Frame, ForwardError> {
        Ok(match &mut self.run {
            Run::AtRest(drawing) => drawing.render(ctx, camera)?,
            Run::Simulated { chain, .. } => chain.render(ctx, camera)?,
        })
    }

    /// Frame `k` (simulated already) rendered from `camera`.
    pub fn render_frame(
        &mut self,
        ctx: &GpuContext,
        k: usize,
        camera: &Camera,
    ) -> Result<Frame, ForwardError> {
        match &self.run {
            Run::Simulated { .. } => self.pose(ctx, k)?,
            Run::AtRest(_) if k > 0 => return Err(ForwardError::AtRest),
            Run::AtRest(_) => {}
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
        match &self.run {
            Run::AtRest(drawing) => drawing.read_pose(ctx, gaussians)?,
            Run::Simulated { chain, .. } => chain.read_pose(ctx, gaussians)?,
        }
        Ok(())
    }
}
