//! Particle-state layout on the GPU and its host mirror.
//!
//! Layout choice: array of structures, 24 f32 per particle — `x` (3), `v`
//! (3), `C` (9, row-major), `F` (9, row-major) — for states and for their
//! adjoints alike. Every MPM kernel reads or writes a particle's whole record
//! at once, so AoS keeps each particle in one or two cache lines on CPU
//! drivers (lavapipe) and makes a state one buffer: a checkpoint is a single
//! `copy_buffer_to_buffer`. (On discrete GPUs SoA would coalesce better; the
//! record is small enough that AoS costs little there.)

/// f32 per particle record.
pub const STATE_STRIDE: usize = 24;

/// Host copy of a particle state (or of its adjoint, same layout): per
/// particle position, velocity, affine velocity `C` and deformation
/// gradient `F` (matrices row-major, `m[row][col]`).
#[derive(Clone, Debug, PartialEq)]
pub struct ParticleState {
    /// Positions `x` (normalised units).
    pub x: Vec<[f32; 3]>,
    /// Velocities `v`.
    pub v: Vec<[f32; 3]>,
    /// APIC affine velocity `C`.
    pub c: Vec<[[f32; 3]; 3]>,
    /// Deformation gradient `F`.
    pub f: Vec<[[f32; 3]; 3]>,
}

const IDENTITY: [[f32; 3]; 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

impl ParticleState {
    /// The rest state: given positions and velocities, `C = 0`, `F = I`.
    pub fn at_rest(x: Vec<[f32; 3]>, v: Vec<[f32; 3]>) -> Self {
        let n = x.len();
        assert_eq!(v.len(), n, "one velocity per particle");
        Self {
            x,
            v,
            c: vec![[[0.0; 3]; 3]; n],
            f: vec![IDENTITY; n],
        }
    }

    /// All-zero state (the adjoint seed).
    pub fn zeros(n: usize) -> Self {
        Self {
            x: vec![[0.0; 3]; n],
            v: vec![[0.0; 3]; n],
            c: vec![[[0.0; 3]; 3]; n],
            f: vec![[[0.0; 3]; 3]; n],
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// True when there are no particles.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }

    /// The GPU layout (24 f32 per particle).
    pub fn to_packed(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.len() * STATE_STRIDE);
        for p in 0..self.len() {
            out.extend_from_slice(&self.x[p]);
            out.extend_from_slice(&self.v[p]);
            out.extend(self.c[p].iter().flatten());
            out.extend(self.f[p].iter().flatten());
        }
        out
    }

    /// Parses the GPU layout; trailing partial records are ignored.
    pub fn from_packed(data: &[f32]) -> Self {
        let n = data.len() / STATE_STRIDE;
        let vec3 = |s: &[f32]| [s[0], s[1], s[2]];
        let mat3 = |s: &[f32]| [vec3(&s[0..3]), vec3(&s[3..6]), vec3(&s[6..9])];
        let mut out = Self::zeros(n);
        for p in 0..n {
            let r = &data[p * STATE_STRIDE..(p + 1) * STATE_STRIDE];
            out.x[p] = vec3(&r[0..3]);
            out.v[p] = vec3(&r[3..6]);
            out.c[p] = mat3(&r[6..15]);
            out.f[p] = mat3(&r[15..24]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_round_trip() {
        let mut s = ParticleState::at_rest(vec![[0.1, 0.2, 0.3]; 2], vec![[1.0, 2.0, 3.0]; 2]);
        s.c[1][2][0] = 7.0;
        s.f[0][0][1] = -2.0;
        let packed = s.to_packed();
        assert_eq!(packed.len(), 48);
        assert_eq!(packed[24 + 6 + 6], 7.0);
        assert_eq!(packed[15 + 1], -2.0);
        assert_eq!(ParticleState::from_packed(&packed), s);
    }
}
