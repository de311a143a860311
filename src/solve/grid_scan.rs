//! A one-dimensional scan: a grid of candidates, each evaluated once (no
//! gradient), then one more candidate at the vertex of the parabola
//! through the best grid point and its two neighbours. An unusable
//! candidate ([`super::objective`]) scores an infinite loss. The fit's
//! coarse stage scans a uniform `log10 E` with it (docs/design.md § Loss,
//! parameters, fit).
//!
//! One [`Solver`] iteration is one candidate, so an observer checkpoints
//! the scan point by point and a resumed scan continues at the next.

use super::objective::Objective;
use super::solver::{Iteration, Solver};

/// The scan's grid.
#[derive(Clone, Debug, PartialEq)]
pub struct GridScan {
    /// The candidates, in the order scanned.
    pub candidates: Vec<f64>,
}

/// The points scanned so far: `(candidate, loss)`, the refinement last,
/// an infinite loss where the candidate was unusable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridScanState {
    /// The points in the order scanned.
    pub points: Vec<(f64, f64)>,
}

impl GridScan {
    /// `points` candidates evenly spaced over `range`, both ends included
    /// (at least 2).
    pub fn evenly(range: [f64; 2], points: u32) -> Vec<f64> {
        let n = points.max(2);
        (0..n)
            .map(|i| range[0] + (range[1] - range[0]) * f64::from(i) / f64::from(n - 1))
            .collect()
    }

    /// The next candidate after `scanned`: the grid's next value, then the
    /// parabola's refinement (when the best grid point has usable
    /// neighbours on both sides and the vertex is not the point itself),
    /// then `None` (done).
    pub fn next_candidate(&self, scanned: &[(f64, f64)]) -> Option<f64> {
        let done = scanned.len();
        let grid_len = self.candidates.len();
        if done < grid_len {
            return Some(self.candidates[done]);
        }
        if done > grid_len {
            return None;
        }
        let grid = &scanned[..grid_len];
        let (b, _) = grid
            .iter()
            .enumerate()
            .filter(|(_, p)| p.1.is_finite())
            .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?;
        if b == 0 || b + 1 >= grid.len() || !grid[b - 1].1.is_finite() || !grid[b + 1].1.is_finite()
        {
            return None;
        }
        parabola_vertex([grid[b - 1], grid[b], grid[b + 1]])
            .filter(|&c| (c - grid[b].0).abs() > 1e-3)
    }
}

impl<O: Objective + ?Sized> Solver<O> for GridScan {
    type State = GridScanState;

    /// The next candidate's loss, or the end of the scan (converged: a
    /// scan has no budget to run out of).
    fn next_iteration(
        &mut self,
        objective: &mut O,
        state: &mut GridScanState,
    ) -> Result<Iteration, O::Error> {
        let Some(c) = self.next_candidate(&state.points) else {
            return Ok(Iteration::Ended { converged: true });
        };
        let loss = objective
            .evaluate(&[c])?
            .map_or(f64::INFINITY, |(loss, _)| loss);
        state.points.push((c, loss));
        Ok(Iteration::Taken)
    }
}

/// The vertex of the parabola through three points of a scan, clamped to
/// their span; `None` when they are not convex.
pub fn parabola_vertex(p: [(f64, f64); 3]) -> Option<f64> {
    let [(x0, y0), (x1, y1), (x2, y2)] = p;
    let d = (x0 - x1) * (x0 - x2) * (x1 - x2);
    if d == 0.0 {
        return None;
    }
    let a = (x2 * (y1 - y0) + x1 * (y0 - y2) + x0 * (y2 - y1)) / d;
    let b = (x2 * x2 * (y0 - y1) + x1 * x1 * (y2 - y0) + x0 * x0 * (y1 - y2)) / d;
    if a.is_nan() || a <= 0.0 || !a.is_finite() || !b.is_finite() {
        return None;
    }
    let lo = x0.min(x1).min(x2);
    let hi = x0.max(x1).max(x2);
    Some((-b / (2.0 * a)).clamp(lo, hi))
}
