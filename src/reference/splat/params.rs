//! Splat parameters and their gradients in f64, in the raw (optimisable)
//! parametrisation of 3DGS: quaternions unnormalised (normalised inside the
//! projection, so gradients are with respect to the raw values), log scales,
//! opacity logits, SH coefficients.

use crate::scene::Gaussians;

/// The parameters of a set of splats, f64, structure-of-arrays.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SplatParams64 {
    /// World-space centres.
    pub means: Vec<[f64; 3]>,
    /// Quaternions (w, x, y, z), not necessarily unit: normalised before use.
    pub quats: Vec<[f64; 4]>,
    /// Natural-log scales per local axis.
    pub log_scales: Vec<[f64; 3]>,
    /// Opacity logits (opacity = sigmoid).
    pub opacity_logits: Vec<f64>,
    /// SH degree, 0..=3.
    pub sh_degree: u32,
    /// SH coefficients, `(sh_degree + 1)^2` RGB triples per splat, DC first
    /// (same layout as [`Gaussians::sh`]).
    pub sh: Vec<[f64; 3]>,
}

impl SplatParams64 {
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
    pub fn sh_of(&self, i: usize) -> &[[f64; 3]] {
        let k = self.coeffs_per_splat();
        &self.sh[i * k..(i + 1) * k]
    }

    /// True when every parameter of splat `i` is finite (non-finite splats
    /// are skipped by the renderer, never propagated into the image).
    pub fn is_finite(&self, i: usize) -> bool {
        self.means[i].iter().all(|v| v.is_finite())
            && self.quats[i].iter().all(|v| v.is_finite())
            && self.log_scales[i].iter().all(|v| v.is_finite())
            && self.opacity_logits[i].is_finite()
            && self.sh_of(i).iter().flatten().all(|v| v.is_finite())
    }
}

impl From<&Gaussians> for SplatParams64 {
    fn from(g: &Gaussians) -> Self {
        let widen = |v: &[f32]| -> Vec<f64> { v.iter().map(|&x| x as f64).collect() };
        SplatParams64 {
            means: g.means.iter().map(|m| m.map(f64::from)).collect(),
            quats: g.rotations.iter().map(|q| q.map(f64::from)).collect(),
            log_scales: g.log_scales.iter().map(|s| s.map(f64::from)).collect(),
            opacity_logits: widen(&g.opacity_logits),
            sh_degree: g.sh_degree,
            sh: g.sh.iter().map(|c| c.map(f64::from)).collect(),
        }
    }
}

/// Gradients of a scalar loss with respect to every [`SplatParams64`] field
/// (same shapes), plus the background colour.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SplatGrads64 {
    /// dL/d means.
    pub means: Vec<[f64; 3]>,
    /// dL/d raw (unnormalised) quaternions.
    pub quats: Vec<[f64; 4]>,
    /// dL/d log scales.
    pub log_scales: Vec<[f64; 3]>,
    /// dL/d opacity logits.
    pub opacity_logits: Vec<f64>,
    /// dL/d SH coefficients.
    pub sh: Vec<[f64; 3]>,
    /// dL/d background colour.
    pub background: [f64; 3],
}

impl SplatGrads64 {
    /// All-zero gradients shaped like `params`.
    pub fn zeros_like(params: &SplatParams64) -> Self {
        let n = params.len();
        SplatGrads64 {
            means: vec![[0.0; 3]; n],
            quats: vec![[0.0; 4]; n],
            log_scales: vec![[0.0; 3]; n],
            opacity_logits: vec![0.0; n],
            sh: vec![[0.0; 3]; params.sh.len()],
            background: [0.0; 3],
        }
    }
}
