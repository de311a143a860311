//! Frames under external forces (docs/design.md § Interactions): the
//! impulses of `physfit render --params`, forward only.
//!
//! An impulse is an acceleration `a` (normalised units / s²) on the free
//! particles within `radius` of `centre` over the window `[start, end]`
//! seconds. Which particles it holds is fixed once, from their positions
//! at the first substep the window reaches ([`ForcedRun`] reads that
//! state back then: once per impulse). During a substep `[t, t + dt]` a
//! held particle's momentum gains `m_p·a·dt·f`, `f` the fraction of the
//! substep inside the window, so the whole impulse gives `m_p·a·(end −
//! start)` exactly, whatever the substep length.
//!
//! Where it enters: as a force density on the particles, scattered like
//! P2G's momentum (`w_ip·m_p·Δv_p` into `mv_i`, shaders/mpm/
//! external_force.wgsl) between P2G and the grid update, which then divides
//! by the node mass as for any momentum. Chosen over (a) adding `Δv_p` to
//! the particle's v before P2G, which would overwrite the kept frame
//! states' velocities, and over (b) a per-node force added in the grid
//! update, which has no particle membership to fix; and as its own kernel,
//! not a term in P2G, so that neither P2G variant nor the grid update
//! changes: the fit's forward and adjoint (which knows nothing of forces)
//! run exactly the kernels they ran before, and a substep without an
//! active impulse is the plain [`MpmSimulator::encode_substep`].
//!
//! Gravity needs nothing here: it is [`super::MpmConfig::gravity`].

use super::error::MpmError;
use super::external_force::{ExternalForce, ExternalForceBuffers, ImpulseTable, MAX_IMPULSES};
use super::layout::ParticleState;
use super::simulator::MpmSimulator;
use super::status::SimulationStatus;
use super::substep::{StageBuffers, SubstepStage};
use crate::gpu::{GpuBuffer, GpuContext};

/// An impulse in the simulator's units (module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct ImpulseForce {
    /// Centre, normalised box coordinates.
    pub centre: [f64; 3],
    /// Radius, normalised units (> 0).
    pub radius: f64,
    /// Acceleration, normalised units / s².
    pub acceleration: [f64; 3],
    /// Window start, seconds from frame 0.
    pub start: f64,
    /// Window end, seconds (> `start`).
    pub end: f64,
}

impl ImpulseForce {
    /// The fraction of the substep `[t, t + dt]` inside the window.
    pub fn fraction(&self, t: f64, dt: f64) -> f64 {
        (((t + dt).min(self.end) - t.max(self.start)) / dt).max(0.0)
    }
}

/// The impulses of one run on one simulator, with the particles each holds
/// once fixed (module doc).
pub struct ForcedRun {
    impulses: Vec<ImpulseForce>,
    anchored: Vec<bool>,
    /// Per particle: bit k when impulse k holds it (host copy).
    host_members: Vec<u32>,
    members: GpuBuffer,
    /// Per impulse: membership fixed.
    fixed: Vec<bool>,
    /// One [`ImpulseTable`] per substep of a frame.
    tables: Vec<GpuBuffer>,
    kernel: ExternalForce,
    simulator: u64,
}

impl ForcedRun {
    /// The run of `impulses` on `sim` (at most [`MAX_IMPULSES`]).
    pub fn new(
        ctx: &GpuContext,
        sim: &MpmSimulator,
        impulses: Vec<ImpulseForce>,
    ) -> Result<Self, MpmError> {
        if impulses.len() > MAX_IMPULSES {
            return Err(MpmError::InvalidInput(format!(
                "{} impulses: at most {MAX_IMPULSES} act in one run",
                impulses.len()
            )));
        }
        let n = sim.particle_count();
        let zero = ImpulseTable::zeroed_table();
        let tables = (0..sim.config.substeps_per_frame)
            .map(|s| ctx.uniform_buffer(&format!("mpm impulse table {s}"), &zero))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            fixed: vec![false; impulses.len()],
            impulses,
            anchored: sim.anchored_particles.clone(),
            host_members: vec![0; n],
            members: ctx.storage_zeroed::<u32>("mpm impulse members", n)?,
            tables,
            kernel: ExternalForce::new(ctx)?,
            simulator: sim.id(),
        })
    }

    /// The particles impulse `k` holds, once its window has started
    /// (`None` before).
    pub fn members(&self, k: usize) -> Option<Vec<usize>> {
        self.fixed.get(k).copied().unwrap_or(false).then(|| {
            (0..self.host_members.len())
                .filter(|&p| self.host_members[p] >> k & 1 == 1)
                .collect()
        })
    }

    /// Simulates `frames` frames from `initial` under the impulses, keeping
    /// every frame state (`[0]` is `initial`).
    #[cfg(feature = "reference")]
    pub fn rollout(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        initial: &ParticleState,
        frames: u32,
    ) -> Result<Vec<GpuBuffer>, MpmError> {
        let mut states = vec![sim.upload_state(ctx, "mpm forced frame 0", initial)?];
        for k in 1..=frames {
            let next = sim.state_buffer(ctx, &format!("mpm forced frame {k}"))?;
            self.run_frame(ctx, sim, &states[k as usize - 1], &next, k)?;
            states.push(next);
        }
        Ok(states)
    }

    /// Runs frame `frame` (1-based: from time `(frame − 1)/fps`) `start →
    /// end` under the impulses and checks its health once at its end, as
    /// [`MpmSimulator::run_frame`] does; on a failure it replays the frame
    /// substep by substep, with the same impulses, to name the substep.
    pub fn run_frame(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        start: &GpuBuffer,
        end: &GpuBuffer,
        frame: u32,
    ) -> Result<(), MpmError> {
        if sim.id() != self.simulator {
            return Err(MpmError::InvalidInput(
                "the forced run belongs to another simulator".into(),
            ));
        }
        let result = self.substeps(ctx, sim, start, end, frame, false);
        let result = result.and_then(|()| {
            let status = SimulationStatus::read(ctx, &sim.status)?;
            if status.is_ok() {
                return Ok(());
            }
            self.substeps(ctx, sim, start, end, frame, true)?;
            Err(status.error(frame, sim.config.substeps_per_frame - 1))
        });
        sim.release_bind_groups();
        result
    }

    /// Records and submits frame `frame`'s substeps; with `check_each`,
    /// submits and checks each substep alone and fails at the first bad one.
    fn substeps(
        &mut self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        start: &GpuBuffer,
        end: &GpuBuffer,
        frame: u32,
        check_each: bool,
    ) -> Result<(), MpmError> {
        let count = sim.config.substeps_per_frame;
        let dt = sim.config.dt();
        let frame_start = (frame - 1) as f64 / sim.config.fps;
        SimulationStatus::reset(ctx, &sim.status);
        let mut encoder = crate::gpu::encoder(ctx, "mpm forced frame");
        for s in 0..count {
            let (from, to) = sim.substep_states(s, count, start, end);
            let t = frame_start + s as f64 * dt;
            let fractions: Vec<f64> = self.impulses.iter().map(|i| i.fraction(t, dt)).collect();
            if fractions.iter().any(|&f| f > 0.0) {
                if (0..self.impulses.len()).any(|k| fractions[k] > 0.0 && !self.fixed[k]) {
                    // Fix the membership of the impulses starting now, from
                    // the state this substep starts from.
                    ctx.queue.submit([encoder.finish()]);
                    let state = sim.read_state(ctx, from)?;
                    self.fix_members(ctx, &state, &fractions);
                    encoder = crate::gpu::encoder(ctx, "mpm forced frame");
                }
                let mut table = ImpulseTable::zeroed_table();
                for (k, impulse) in self.impulses.iter().enumerate() {
                    let dv = impulse.acceleration.map(|a| a * dt * fractions[k]);
                    table.dv[k] = [dv[0] as f32, dv[1] as f32, dv[2] as f32, 0.0];
                }
                ctx.write(&self.tables[s as usize], &[table]);
                self.encode_forced_substep(ctx, sim, &mut encoder, from, to, s as usize);
            } else {
                sim.encode_substep(ctx, &mut encoder, from, to);
            }
            if check_each {
                ctx.queue.submit([encoder.finish()]);
                let status = SimulationStatus::read(ctx, &sim.status)?;
                if !status.is_ok() {
                    return Err(status.error(frame, s));
                }
                encoder = crate::gpu::encoder(ctx, "mpm forced frame");
            }
        }
        ctx.queue.submit([encoder.finish()]);
        Ok(())
    }

    /// Fixes the members of every impulse active now (`fractions > 0`) and
    /// not fixed yet: the free particles of `state` within its radius.
    fn fix_members(&mut self, ctx: &GpuContext, state: &ParticleState, fractions: &[f64]) {
        for (k, impulse) in self.impulses.iter().enumerate() {
            if fractions[k] <= 0.0 || self.fixed[k] {
                continue;
            }
            for (p, x) in state.x.iter().enumerate() {
                let d2: f64 = (0..3)
                    .map(|a| (x[a] as f64 - impulse.centre[a]).powi(2))
                    .sum();
                if !self.anchored[p] && d2 <= impulse.radius * impulse.radius {
                    self.host_members[p] |= 1 << k;
                }
            }
            self.fixed[k] = true;
        }
        ctx.write(&self.members, &self.host_members);
    }

    /// One forward substep with the external force between P2G and the
    /// grid update, the table of substep `slot` bound.
    fn encode_forced_substep(
        &self,
        ctx: &GpuContext,
        sim: &MpmSimulator,
        encoder: &mut wgpu::CommandEncoder,
        from: &GpuBuffer,
        to: &GpuBuffer,
        slot: usize,
    ) {
        let b = StageBuffers::forward(from, to);
        for stage in SubstepStage::FORWARD {
            sim.encode_stage(ctx, encoder, stage, &b);
            if stage == SubstepStage::P2g {
                let force = ExternalForceBuffers {
                    uniforms: &sim.uniforms,
                    table: &self.tables[slot],
                    state: from,
                    members: &self.members,
                    grid: &sim.grid.mass_momentum,
                };
                let bg = sim.bind_groups.get("external_force", &force.by_name(), || {
                    self.kernel.bind(ctx, &force)
                });
                self.kernel.dispatch(encoder, &bg, sim.particle_count);
            }
        }
    }
}

impl ImpulseTable {
    /// No impulse acting.
    pub fn zeroed_table() -> Self {
        Self {
            dv: [[0.0; 4]; MAX_IMPULSES],
        }
    }
}
