//! In-memory 3D Gaussian Splatting scene: the per-splat parameters every stage
//! shares. Conventions follow the 3DGS .ply (Kerbl et al. 2023): log scales,
//! opacity logits, quaternions (w, x, y, z), SH coefficients with the DC term
//! first; colour = SH(dir) + 0.5 (docs/design.md § Gaussian splatting).

/// A set of Gaussian splats, structure-of-arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gaussians {
    /// World-space centres.
    pub means: Vec<[f32; 3]>,
    /// Unit quaternions (w, x, y, z): the splat's rotation, world from local.
    pub rotations: Vec<[f32; 4]>,
    /// Natural-log scales per local axis (scale = exp).
    pub log_scales: Vec<[f32; 3]>,
    /// Opacity logits (opacity = sigmoid).
    pub opacity_logits: Vec<f32>,
    /// Spherical-harmonics degree, 0..=3.
    pub sh_degree: u32,
    /// SH coefficients, `(sh_degree+1)^2` per splat, each RGB; splat `i`'s
    /// coefficient `k` is `sh[i * coeffs_per_splat + k]`, `k = 0` the DC term.
    pub sh: Vec<[f32; 3]>,
}

impl Gaussians {
    /// Number of splats.
    pub fn len(&self) -> usize {
        self.means.len()
    }

    /// True when there are no splats.
    pub fn is_empty(&self) -> bool {
        self.means.is_empty()
    }

    /// SH coefficients per splat: `(degree + 1)^2`.
    pub fn coeffs_per_splat(&self) -> usize {
        ((self.sh_degree + 1) * (self.sh_degree + 1)) as usize
    }

    /// Splat `i`'s SH coefficients.
    pub fn sh_of(&self, i: usize) -> &[[f32; 3]] {
        let k = self.coeffs_per_splat();
        &self.sh[i * k..(i + 1) * k]
    }

    /// Axis-aligned bounds of the means, `None` when empty.
    pub fn bounds(&self) -> Option<([f32; 3], [f32; 3])> {
        let first = *self.means.first()?;
        Some(self.means.iter().fold((first, first), |(lo, hi), m| {
            (
                [lo[0].min(m[0]), lo[1].min(m[1]), lo[2].min(m[2])],
                [hi[0].max(m[0]), hi[1].max(m[1]), hi[2].max(m[2])],
            )
        }))
    }
}
