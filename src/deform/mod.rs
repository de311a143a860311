//! Gaussians follow the rigid motion of their drivers, forward and adjoint
//! on the GPU (docs/design.md § Drivers and the deformation of Gaussians,
//! § Adjoint; f64 twin: `crate::reference::deform`, which spells out the
//! equations).
//!
//! Each deformed (free) Gaussian g has [`DRIVERS_PER_GAUSSIAN`] drivers (MPM
//! particles): with their rest positions `X_j`, current positions `x_j`
//! (normalised units, the `x` of an MPM state buffer), the unweighted
//! centroids `X̄`, `x̄` and `R` the rotation of the polar decomposition of
//! `A = Σ_j (x_j − x̄)(X_j − X̄)ᵀ` (the robust f32 SVD of common/svd3 with
//! the det-sign fix), its centre goes to `x̄ + R·(X_g − X̄)` (written in world
//! units, `min + side·c`) and its rotation to `q_R ⊗ q_g` (so its covariance
//! to `R Σ Rᵀ`); scales, opacity and colour are unchanged. Anchored and
//! static Gaussians are simply not in the deformed set: their splats are
//! never written and stay at rest.
//!
//! Choices:
//! - **k is fixed at 8** ([`DRIVERS_PER_GAUSSIAN`], PhysDreamer alg. 1 and
//!   docs/design.md), a compile-time constant on both sides (`DRIVERS` in
//!   shaders/deform/rigid_fit.wgsl), so the loops over drivers unroll. A
//!   scene with fewer than 8 drivers lists some twice: a driver listed
//!   twice counts twice, in the forward (a weighted fit) and in the adjoint
//!   alike.
//! - **Quaternions, not rotation matrices, go to the rasterizer.** The
//!   forward writes `q' = q_R ⊗ q_g` (`q_R` the unit quaternion of R by
//!   Shepperd's method, `w ≥ 0`; `q_g` raw, so `|q'| = |q_g|`) into the
//!   splats' raw-quaternion slots, and the adjoint takes
//!   `∂L/∂(raw quaternion)` exactly as [`crate::splat::Rasterizer::backward`]
//!   returns it. Why: the rasterizer, its tested backward and the 3DGS splat
//!   format stay unchanged, and the adjoint needs no derivative of "the
//!   quaternion of a matrix" (whose Shepperd branches would need one each):
//!   a change `dR = R·[ω]×` changes `q'` by `½ (0, Rω) ⊗ q'`, so the
//!   quaternion gradient becomes a torque `∂L/∂ω` directly, which is what the
//!   polar derivative `h = M⁻¹·axial(RᵀG − GᵀR)` consumes (the rasterizer
//!   normalises q' inside its projection, so its gradient is already
//!   tangent to the unit sphere; only the torque part reaches the drivers
//!   either way). The sign flip of `q_R` at 180° (where `w` crosses 0) does
//!   not change R, the covariance or the gradient.
//! - **Gather, not scatter.** The adjoint writes one contribution per
//!   (Gaussian, driver place) ([`gaussian_motion_adjoint`]), then one thread
//!   per driver sums its contributions over a CSR list built here once
//!   ([`driver_gather`]) and adds the sum into the `x` part of the state
//!   gradient. No float atomics: the result is bit-identical on every
//!   adapter and run, there is no atomic-mode variant to test, and each
//!   driver's record has one writer. Cost: 128 bytes of scratch per deformed
//!   Gaussian and a second small dispatch.
//! - **Degenerate neighbourhoods.** Coplanar drivers (thin sheets) leave R
//!   determined (M's eigenvalues σ₁ + σ₂, σ₁, σ₂ stay positive); collinear
//!   ones (stems) leave the turn about their line undetermined (M singular),
//!   and k drivers at one point give `A = 0`. The polar guard (common/svd3,
//!   `POLAR_GUARD`; the twin's `solve_m`) keeps R a rotation and its adjoint
//!   finite in all three, with R = I and no rotation gradient for `A = 0`.
//!   A is scaled to unit norm before the SVD (exactly, see rigid_fit.wgsl),
//!   so the guard and the SVD's thresholds do not depend on the driver
//!   spacing.

pub mod driver_gather;
pub mod gaussian_motion;
pub mod gaussian_motion_adjoint;
pub mod layout;

use bytemuck::Zeroable;

use crate::drive::DriverSet;
use crate::gpu::{GpuBuffer, GpuContext, GpuError};
use crate::mpm::layout::STATE_STRIDE;
use crate::scene::{Gaussians, SimBox};
use crate::splat::{SplatBuffers, SplatGradients};
use driver_gather::{DriverGather, DriverGatherBuffers, DriverGatherUniforms};
use gaussian_motion::{GaussianMotion, GaussianMotionBuffers};
use gaussian_motion_adjoint::{GaussianMotionAdjoint, GaussianMotionAdjointBuffers};
use layout::{DeformUniforms, GaussianRecord};

/// Drivers per deformed Gaussian (k of PhysDreamer's k nearest drivers):
/// the scene loader's rule for `drivers.k`, defined there so that a scene
/// the deformation cannot take is refused at load.
pub use crate::scene::config::DRIVERS_PER_GAUSSIAN;

/// Why a deformation cannot be built or recorded.
#[derive(Debug, thiserror::Error)]
pub enum DeformError {
    /// The setup's arrays disagree or hold bad values.
    #[error("invalid deformation setup: {0}")]
    Invalid(String),
    /// Buffers of another driver set or a smaller scene than the setup's.
    #[error("{0}")]
    Mismatch(String),
    /// A GPU failure.
    #[error(transparent)]
    Gpu(#[from] GpuError),
}

/// What the deformation needs, as plain arrays (the drivers stage produces
/// them: K-Means drivers and each free Gaussian's k nearest at rest). Index
/// `i` of the per-Gaussian arrays is one deformed Gaussian; splats not
/// listed (anchored, static) are never moved.
#[derive(Clone, Debug)]
pub struct DeformSetup {
    /// The splat each deformed Gaussian is in the splat buffers (distinct).
    pub splat_index: Vec<u32>,
    /// Its drivers: indices of MPM particles (`< rest_drivers.len()`).
    pub drivers: Vec<[u32; DRIVERS_PER_GAUSSIAN]>,
    /// Its rest centre, normalised units (the splat's rest mean mapped by
    /// `sim_box`).
    pub rest_centres: Vec<[f32; 3]>,
    /// Its rest rotation, the splat's raw quaternion (w, x, y, z).
    pub rest_rotations: Vec<[f32; 4]>,
    /// Rest position of every driver, normalised units (its MPM rest `x`).
    pub rest_drivers: Vec<[f32; 3]>,
    /// World ↔ normalised ([`SimBox`]): centres are written in world units.
    pub sim_box: SimBox,
}

impl DeformSetup {
    /// The deformation of a scene's free Gaussians by its K-Means drivers
    /// (docs/design.md § Drivers and the deformation of Gaussians): each
    /// follower of `drivers` moves with its k nearest drivers at rest, from
    /// its rest centre and its splat's rotation in `gaussians`. Refuses a
    /// driver set built with another k than [`DRIVERS_PER_GAUSSIAN`]
    /// (fix: `drivers.k = 8` in scene.toml).
    pub fn from_drivers(drivers: &DriverSet, gaussians: &Gaussians) -> Result<Self, DeformError> {
        if drivers.k != DRIVERS_PER_GAUSSIAN {
            return Err(DeformError::Invalid(format!(
                "the drivers give each Gaussian {} nearest drivers, the deformation takes \
                 {DRIVERS_PER_GAUSSIAN}; fix: set `drivers.k = {DRIVERS_PER_GAUSSIAN}`",
                drivers.k
            )));
        }
        let setup = Self {
            splat_index: drivers.followers.clone(),
            drivers: drivers
                .neighbours
                .chunks_exact(DRIVERS_PER_GAUSSIAN)
                .map(|c| c.try_into().expect("chunks of DRIVERS_PER_GAUSSIAN"))
                .collect(),
            rest_centres: drivers.follower_rest.clone(),
            rest_rotations: drivers
                .followers
                .iter()
                .map(|&i| gaussians.rotations[i as usize])
                .collect(),
            rest_drivers: drivers.rest.clone(),
            sim_box: drivers.sim_box,
        };
        setup.validate()?;
        Ok(setup)
    }

    /// Number of deformed Gaussians.
    pub fn len(&self) -> usize {
        self.splat_index.len()
    }

    /// True when no Gaussian is deformed.
    pub fn is_empty(&self) -> bool {
        self.splat_index.is_empty()
    }

    /// Number of drivers.
    pub fn driver_count(&self) -> usize {
        self.rest_drivers.len()
    }

    /// Checks that the arrays agree: equal lengths, driver indices in range,
    /// distinct splats (two writers of one splat would race), finite values,
    /// a valid box, counts within u32.
    pub fn validate(&self) -> Result<(), DeformError> {
        let n = self.len();
        let bad = |m: String| Err(DeformError::Invalid(m));
        for (name, len) in [
            ("drivers", self.drivers.len()),
            ("rest_centres", self.rest_centres.len()),
            ("rest_rotations", self.rest_rotations.len()),
        ] {
            if len != n {
                return bad(format!(
                    "{name} has {len} entries but splat_index has {n}: one per deformed Gaussian"
                ));
            }
        }
        if u32::try_from(n * DRIVERS_PER_GAUSSIAN).is_err()
            || u32::try_from(self.driver_count() * STATE_STRIDE).is_err()
        {
            return bad(format!(
                "{n} Gaussians and {} drivers are more than u32 indices reach",
                self.driver_count()
            ));
        }
        let drivers = self.driver_count() as u32;
        if let Some((i, d)) = self
            .drivers
            .iter()
            .enumerate()
            .find(|(_, d)| d.iter().any(|&j| j >= drivers))
        {
            return bad(format!(
                "Gaussian {i} lists drivers {d:?}, but there are {drivers} drivers"
            ));
        }
        let mut seen = self.splat_index.clone();
        seen.sort_unstable();
        if let Some(w) = seen.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("splat {} is listed twice", w[0]));
        }
        let finite = |v: &[f32]| v.iter().all(|c| c.is_finite());
        if let Some(i) = (0..n).find(|&i| {
            !finite(&self.rest_centres[i])
                || !finite(&self.rest_rotations[i])
                || self.rest_rotations[i].iter().all(|&c| c == 0.0)
        }) {
            return bad(format!(
                "Gaussian {i} has rest centre {:?} and rotation {:?}: both must be finite, \
                 the rotation non-zero",
                self.rest_centres[i], self.rest_rotations[i]
            ));
        }
        if let Some(j) = self.rest_drivers.iter().position(|p| !finite(p)) {
            return bad(format!(
                "driver {j} has rest position {:?}",
                self.rest_drivers[j]
            ));
        }
        let b = &self.sim_box;
        if !(b.side.is_finite() && b.side > 0.0 && b.min.iter().all(|c| c.is_finite())) {
            return bad(format!(
                "simulation box {b:?} needs a finite min and side > 0"
            ));
        }
        Ok(())
    }

    /// The driver → slot list of the gather: `offsets` (driver count + 1)
    /// and `entries`, the slots `DRIVERS_PER_GAUSSIAN·i + s` of each driver
    /// in increasing order (a counting sort: deterministic).
    pub fn driver_slots(&self) -> (Vec<u32>, Vec<u32>) {
        let mut offsets = vec![0u32; self.driver_count() + 1];
        for d in &self.drivers {
            for &j in d {
                offsets[j as usize + 1] += 1;
            }
        }
        for j in 0..self.driver_count() {
            offsets[j + 1] += offsets[j];
        }
        let mut next = offsets.clone();
        let mut entries = vec![0u32; self.len() * DRIVERS_PER_GAUSSIAN];
        for (i, d) in self.drivers.iter().enumerate() {
            for (s, &j) in d.iter().enumerate() {
                entries[next[j as usize] as usize] = (i * DRIVERS_PER_GAUSSIAN + s) as u32;
                next[j as usize] += 1;
            }
        }
        (offsets, entries)
    }
}

/// One element at least: wgpu rejects empty bindings and a runtime-sized
/// array needs one element's bytes.
fn non_empty<T: Copy + Default>(mut v: Vec<T>) -> Vec<T> {
    if v.is_empty() {
        v.push(T::default());
    }
    v
}

/// The deformation of a [`DeformSetup`] on the GPU: its kernels and its
/// constant buffers, uploaded once. [`Deformation::encode_forward`] moves
/// the deformed splats to a state's drivers; [`Deformation::encode_backward`]
/// adds `∂L/∂x` of the drivers into a state gradient. Nothing is read back.
pub struct Deformation {
    forward: GaussianMotion,
    adjoint: GaussianMotionAdjoint,
    gather: DriverGather,
    uniforms: GpuBuffer,
    gather_uniforms: GpuBuffer,
    rest_drivers: GpuBuffer,
    gaussians: GpuBuffer,
    offsets: GpuBuffer,
    entries: GpuBuffer,
    contributions: GpuBuffer,
    gaussian_count: u32,
    driver_count: u32,
    /// The splats it moves, on the host.
    splat_index: Vec<u32>,
    /// Splats the scene must have at least (largest splat index + 1).
    min_splats: u32,
}

impl Deformation {
    /// Validates `setup`, compiles the kernels and uploads the setup.
    pub fn new(ctx: &GpuContext, setup: &DeformSetup) -> Result<Self, DeformError> {
        setup.validate()?;
        let b = &setup.sim_box;
        let gaussian_count = setup.len() as u32;
        let driver_count = setup.driver_count() as u32;
        let uniforms = DeformUniforms {
            box_min_side: [
                b.min[0] as f32,
                b.min[1] as f32,
                b.min[2] as f32,
                b.side as f32,
            ],
            gaussian_count,
            driver_count,
            _pad: [0; 2],
        };
        let records: Vec<GaussianRecord> = (0..setup.len())
            .map(|i| {
                let d = &setup.drivers[i];
                GaussianRecord {
                    drivers_lo: [d[0], d[1], d[2], d[3]],
                    drivers_hi: [d[4], d[5], d[6], d[7]],
                    rest_centre: setup.rest_centres[i],
                    splat: setup.splat_index[i],
                    rest_rotation: setup.rest_rotations[i],
                }
            })
            .collect();
        let records = if records.is_empty() {
            vec![GaussianRecord::zeroed()]
        } else {
            records
        };
        let rest: Vec<[f32; 4]> = setup
            .rest_drivers
            .iter()
            .map(|p| [p[0], p[1], p[2], 0.0])
            .collect();
        let (offsets, entries) = setup.driver_slots();
        let gather_uniforms = DriverGatherUniforms {
            driver_count,
            entry_count: entries.len() as u32,
            _pad: [0; 2],
        };
        Ok(Self {
            forward: GaussianMotion::new(ctx)?,
            adjoint: GaussianMotionAdjoint::new(ctx)?,
            gather: DriverGather::new(ctx)?,
            uniforms: ctx.uniform_buffer("deform uniforms", &uniforms)?,
            gather_uniforms: ctx.uniform_buffer("deform gather uniforms", &gather_uniforms)?,
            rest_drivers: ctx.storage_from_slice("deform rest drivers", &non_empty(rest))?,
            gaussians: ctx.storage_from_slice("deform gaussians", &records)?,
            offsets: ctx.storage_from_slice("deform driver offsets", &offsets)?,
            entries: ctx.storage_from_slice("deform driver slots", &non_empty(entries))?,
            contributions: ctx.storage_zeroed::<[f32; 4]>(
                "deform contributions",
                (setup.len() * DRIVERS_PER_GAUSSIAN).max(1),
            )?,
            gaussian_count,
            driver_count,
            splat_index: setup.splat_index.clone(),
            min_splats: setup.splat_index.iter().max().map_or(0, |&i| i + 1),
        })
    }

    /// Number of deformed Gaussians.
    #[cfg(feature = "reference")]
    pub fn gaussian_count(&self) -> u32 {
        self.gaussian_count
    }

    /// The splats it moves (its setup's `splat_index`): every other splat
    /// stays at rest.
    pub fn splat_indices(&self) -> &[u32] {
        &self.splat_index
    }

    /// Number of drivers (the MPM particle count its states must have).
    #[cfg(feature = "reference")]
    pub fn driver_count(&self) -> u32 {
        self.driver_count
    }

    fn check_state(&self, what: &str, buffer: &GpuBuffer) -> Result<(), DeformError> {
        let bytes = u64::from(self.driver_count) * (STATE_STRIDE * 4) as u64;
        // An empty driver set still binds a 4-byte buffer.
        if buffer.size() != bytes && !(bytes == 0 && buffer.size() == 4) {
            return Err(DeformError::Mismatch(format!(
                "{what} '{}' has {} bytes, {} drivers need {bytes}",
                buffer.label(),
                buffer.size(),
                self.driver_count
            )));
        }
        Ok(())
    }

    fn check_splats(&self, what: &str, count: u32) -> Result<(), DeformError> {
        if count < self.min_splats {
            return Err(DeformError::Mismatch(format!(
                "{count} splats in the {what}, but the deformation moves splats up to index {}",
                self.min_splats - 1
            )));
        }
        Ok(())
    }

    /// Records the move of the deformed splats of `splats` (centres in world
    /// units, raw rotations) to the drivers' positions in `state` (an MPM
    /// state buffer of this setup's drivers). Other splats are not written.
    /// Refuses a state of another driver count or splats of a smaller scene.
    pub fn encode_forward(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        state: &GpuBuffer,
        splats: &SplatBuffers,
    ) -> Result<(), DeformError> {
        self.check_state("state", state)?;
        self.check_splats("splat buffers", splats.count)?;
        self.forward.dispatch(
            ctx,
            encoder,
            &GaussianMotionBuffers {
                uniforms: &self.uniforms,
                state,
                rest_drivers: &self.rest_drivers,
                gaussians: &self.gaussians,
                means: &splats.means,
                rotations: &splats.rotations,
            },
            self.gaussian_count,
        );
        Ok(())
    }

    /// Records the adjoint of [`Self::encode_forward`] for the same `state`:
    /// from `grads` (`∂L/∂means` in world units and `∂L/∂(raw quaternion)`,
    /// as [`crate::splat::Rasterizer::backward`] returns them), **adds**
    /// `∂L/∂x_j` (normalised units) into the `x` part of `state_grad`, a
    /// state-sized gradient buffer (24 f32 per driver, the layout of
    /// [`crate::mpm::FrameGradient::grad`]); its other parts and any value
    /// already there are kept. Only the deformed splats' gradients are read.
    pub fn encode_backward(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        state: &GpuBuffer,
        grads: &SplatGradients,
        state_grad: &GpuBuffer,
    ) -> Result<(), DeformError> {
        self.check_state("state", state)?;
        self.check_state("state gradient", state_grad)?;
        self.check_splats("splat gradients", grads.count())?;
        self.adjoint.dispatch(
            ctx,
            encoder,
            &GaussianMotionAdjointBuffers {
                uniforms: &self.uniforms,
                state,
                rest_drivers: &self.rest_drivers,
                gaussians: &self.gaussians,
                grad_means: &grads.means,
                grad_rotations: &grads.rotations,
                contributions: &self.contributions,
            },
            self.gaussian_count,
        );
        self.gather.dispatch(
            ctx,
            encoder,
            &DriverGatherBuffers {
                uniforms: &self.gather_uniforms,
                offsets: &self.offsets,
                entries: &self.entries,
                contributions: &self.contributions,
                state_grad,
            },
            self.driver_count,
        );
        Ok(())
    }
}
