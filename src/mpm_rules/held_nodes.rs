//! The grid nodes the `splats` anchoring rule holds at zero velocity
//! ([`super::AnchorRule::Splats`]; docs/design.md § MPM, "Anchored region"):
//! PhysDreamer's rule, the node at `floor(x/dx)` of each anchored point,
//! applied to the scene's dense anchored points (splats and fill points) at
//! rest rather than to the drivers. The set comes from those rest
//! positions, so it is fixed for a run (the anchored part, held by it,
//! moves by a fraction of a cell at most): the simulator writes it into
//! the grid's anchored flags at every clear, and P2G marks nothing.

use std::collections::BTreeSet;

/// The nodes `floor(x·grid_res)` of `points` (normalised box coordinates),
/// each once, in ascending order. A point outside the box is clamped onto
/// its nodes 0..=grid_res: such a point would have left the simulation
/// anyway, and the simulator refuses particles outside its walls.
pub fn floor_nodes(points: impl IntoIterator<Item = [f64; 3]>, grid_res: u32) -> Vec<[u32; 3]> {
    let top = grid_res as f64;
    let nodes: BTreeSet<[u32; 3]> = points
        .into_iter()
        .filter(|p| p.iter().all(|c| c.is_finite()))
        .map(|p| p.map(|c| (c * top).floor().clamp(0.0, top) as u32))
        .collect();
    nodes.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_point_holds_the_node_below_it_once() {
        // dx = 0.25: 0.3 → 1, 0.49 → 1, 0.5 → 2 (a point on a node holds it).
        let nodes = floor_nodes([[0.3, 0.3, 0.3], [0.49, 0.26, 0.3], [0.5, 0.3, 0.3]], 4);
        assert_eq!(nodes, vec![[1, 1, 1], [2, 1, 1]]);
    }

    #[test]
    fn points_outside_the_box_are_clamped_and_non_finite_ones_dropped() {
        let nodes = floor_nodes([[-0.1, 1.2, 0.5], [f64::NAN, 0.5, 0.5]], 4);
        assert_eq!(nodes, vec![[0, 4, 2]]);
    }
}
