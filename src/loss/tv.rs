//! Total variation over the driver kNN graph (docs/design.md § Loss, parameters,
//! fit), with its gradient.
//!
//! `TV = mean over edges (a, b) of √(|p_a − p_b|² + ε²)`, ε = 1e-3
//! ([`TV_EPSILON`]), of per-node values: `log10 E` per driver
//! ([`tv_scalar`]), or initial velocities, 3-vectors ([`tv_vector`], the
//! optional smoothness term). The smooth form, not `|p_a − p_b|`, because at
//! a uniform start every edge sits on the kink of `|d|`, where the
//! subgradient is arbitrary. It is `ε` per edge, not 0, at a uniform field:
//! a constant that does not change the gradient. The value is unweighted:
//! the fit multiplies it (and the gradient) by its configured weight.
//!
//! Edges are taken as given: a pair listed twice (e.g. `(a, b)` and
//! `(b, a)` from a kNN graph that is not symmetric) counts twice. Self-edges
//! add the constant `ε` and no gradient.
//!
//! **On the CPU, in f64.** Drivers number at most a few thousand and their
//! graph some 10⁴ edges: one pass is microseconds, far below a frame's
//! render, and needs no GPU reduction or scatter (a GPU version would need
//! a per-node gather over incident edges to stay deterministic). The cost is
//! moving the per-driver parameters (a few KB) between host and device once
//! per optimiser step, which an optimiser on the host does anyway. Being
//! f64 and this simple, it is its own twin: tests/cpu/reference_loss.rs
//! checks it against central finite differences.

use super::error::LossError;

/// TV's smoothing ε (docs/design.md § Loss, parameters, fit), in the units of the values
/// (decades of E for `log10 E`).
pub const TV_EPSILON: f64 = 1e-3;

/// A TV value and its gradient with respect to every node's value(s).
#[derive(Clone, Debug, PartialEq)]
pub struct Tv<T> {
    /// `mean_e √(|p_a − p_b|² + ε²)`; 0 when there are no edges.
    pub value: f64,
    /// `∂value/∂p` per node (zero for nodes on no edge).
    pub gradient: Vec<T>,
}

/// TV of `dim` components per node, flattened.
fn tv_flat(
    values: &[f64],
    dim: usize,
    edges: &[(u32, u32)],
    eps: f64,
) -> Result<(f64, Vec<f64>), LossError> {
    if !(eps.is_finite() && eps > 0.0) {
        return Err(LossError::TvEpsilon(eps));
    }
    if !values.len().is_multiple_of(dim) {
        return Err(LossError::TvValues {
            values: values.len(),
            dim,
        });
    }
    let nodes = values.len() / dim;
    if let Some((edge, &(a, b))) = edges
        .iter()
        .enumerate()
        .find(|(_, &(a, b))| a as usize >= nodes || b as usize >= nodes)
    {
        return Err(LossError::EdgeOutOfRange { edge, a, b, nodes });
    }
    let mut gradient = vec![0.0; values.len()];
    if edges.is_empty() {
        return Ok((0.0, gradient));
    }
    let inv = 1.0 / edges.len() as f64;
    let mut sum = 0.0;
    let mut d = [0.0; 3];
    for &(a, b) in edges {
        let (a, b) = (a as usize * dim, b as usize * dim);
        let mut d2 = eps * eps;
        for k in 0..dim {
            d[k] = values[a + k] - values[b + k];
            d2 += d[k] * d[k];
        }
        let r = d2.sqrt();
        sum += r;
        for k in 0..dim {
            let g = inv * d[k] / r;
            gradient[a + k] += g;
            gradient[b + k] -= g;
        }
    }
    Ok((sum * inv, gradient))
}

/// TV of one value per node (`log10 E` per driver) over `edges`, with
/// smoothing `eps` (use [`TV_EPSILON`]).
///
/// Errors: [`LossError::EdgeOutOfRange`], [`LossError::TvEpsilon`].
pub fn tv_scalar(values: &[f64], edges: &[(u32, u32)], eps: f64) -> Result<Tv<f64>, LossError> {
    let (value, gradient) = tv_flat(values, 1, edges, eps)?;
    Ok(Tv { value, gradient })
}

/// TV of a 3-vector per node (initial velocity per driver) over `edges`:
/// `mean_e √(|v_a − v_b|² + ε²)` with the Euclidean norm.
///
/// Errors as [`tv_scalar`].
pub fn tv_vector(
    values: &[[f64; 3]],
    edges: &[(u32, u32)],
    eps: f64,
) -> Result<Tv<[f64; 3]>, LossError> {
    let flat: Vec<f64> = values.iter().flatten().copied().collect();
    let (value, g) = tv_flat(&flat, 3, edges, eps)?;
    Ok(Tv {
        value,
        gradient: g.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
    })
}
