//! The K-Means driving particles of a scene (docs/design.md § Drivers and the
//! deformation of Gaussians): the MPM particles of the fit, their rest
//! positions, anchored flags and volume, the k nearest drivers of every
//! free Gaussian (what the deformation moves it by), and the drivers' kNN
//! graph (what the TV term of log10 E sums over).

use std::num::NonZero;

use kiddo::{ImmutableKdTree, SquaredEuclidean};

use super::kmeans::{kmeans, KMeansError};
use super::DriveError;
use crate::mpm::{MpmSetup, ParticleState};
use crate::mpm_rules::config::occupied_volume;
use crate::mpm_rules::voxel;
use crate::scene::{Scene, SimBox};

/// The points K-Means runs over: the simulated Gaussians, then the fill
/// points of `drivers.fill` (none without it), all in normalised box
/// coordinates.
#[derive(Clone, Debug)]
pub struct DriverSource {
    /// The simulation cube (world ↔ normalised).
    pub sim_box: SimBox,
    /// Grid nodes per box side (occupied cells and the volume rule).
    pub grid_res: u32,
    /// The splat of each of the first `splat_indices.len()` points.
    pub splat_indices: Vec<u32>,
    /// Rest positions: the Gaussians in `splat_indices` order, then the
    /// fill points.
    pub points: Vec<[f32; 3]>,
    /// Per point: anchored (a Gaussian in `regions.anchored`, or a fill
    /// point inside it).
    pub anchored: Vec<bool>,
}

impl DriverSource {
    /// The simulated Gaussians of `scene` and, with `drivers.fill`, the
    /// points filling the interior of their closed shell
    /// ([`voxel::fill`]).
    pub fn from_scene(scene: &Scene) -> Result<Self, DriveError> {
        let splat_indices = scene.simulated_indices();
        if splat_indices.is_empty() {
            return Err(DriveError::NothingSimulated {
                scene: crate::io::shown::shown(&scene.path).to_string(),
            });
        }
        let grid_res = scene.simulation.grid_res;
        let sim_box = scene.simulation.sim_box;
        let means = scene.normalised_means();
        let mut points: Vec<[f32; 3]> = splat_indices.iter().map(|&i| means[i as usize]).collect();
        let mut anchored: Vec<bool> = splat_indices
            .iter()
            .map(|&i| scene.anchored[i as usize])
            .collect();
        if scene.drivers.fill {
            for p in voxel::fill(&points, grid_res).points {
                points.push(p);
                anchored.push(scene.anchored_region.contains(sim_box.to_world(p)));
            }
        }
        Ok(Self {
            sim_box,
            grid_res,
            splat_indices,
            points,
            anchored,
        })
    }

    /// The anchored points, in order: what the `splats` anchoring rule
    /// holds the grid by ([`MpmSetup::held_points`]).
    pub fn held_points(&self) -> Vec<[f32; 3]> {
        self.points
            .iter()
            .zip(&self.anchored)
            .filter(|(_, &a)| a)
            .map(|(p, _)| *p)
            .collect()
    }

    /// Number of Gaussians (the first points).
    pub fn gaussian_count(&self) -> usize {
        self.splat_indices.len()
    }

    /// Number of fill points (the last points).
    pub fn fill_count(&self) -> usize {
        self.points.len() - self.splat_indices.len()
    }

    /// The occupied volume of every point (Gaussians, anchored included,
    /// and fill points): the half-cell voxel rule of
    /// [`crate::mpm_rules::config::occupied_volume`].
    pub fn occupied_volume(&self) -> f64 {
        let p64: Vec<[f64; 3]> = self.points.iter().map(|p| p.map(f64::from)).collect();
        occupied_volume(&p64, self.grid_res)
    }
}

/// The driving particles of a scene: K-Means centres of the rest positions
/// of its simulated Gaussians (and fill points), with what the simulator,
/// the deformation and the TV term need. Drivers are indexed `0..len()`;
/// the MPM state of the fit has one particle per driver in this order.
#[derive(Clone, Debug)]
pub struct DriverSet {
    /// Rest positions in normalised box coordinates (the K-Means centres,
    /// rounded to f32: every distance below is computed from these).
    pub rest: Vec<[f32; 3]>,
    /// Per driver: anchored, when a strict majority of the points of its
    /// cluster are anchored (see [`DriverSet::build`]).
    pub anchored: Vec<bool>,
    /// Rest positions (normalised) of the anchored source points, the
    /// anchored Gaussians and fill points: the dense points whose nodes the
    /// `splats` anchoring rule holds ([`MpmSetup::held_points`]).
    pub held_points: Vec<[f32; 3]>,
    /// Per driver: its cluster holds no Gaussian, only fill points. Such a
    /// driver carries E and v0 like any other but moves no Gaussian except
    /// as a neighbour.
    pub fill_only: Vec<bool>,
    /// The volume of every driver (normalised units): the occupied volume
    /// of all points over the driver count (docs/design.md § Units and frames).
    pub volume: f64,
    /// The occupied volume itself.
    pub occupied_volume: f64,
    /// The simulation cube (world ↔ normalised).
    pub sim_box: SimBox,
    /// Nearest drivers per free Gaussian.
    pub k: usize,
    /// The free simulated Gaussians (splat indices, ascending): the ones
    /// that follow drivers. Anchored and static Gaussians stay at rest.
    pub followers: Vec<u32>,
    /// Rest position (normalised) of each follower.
    pub follower_rest: Vec<[f32; 3]>,
    /// The `k` nearest drivers at rest of each follower, nearest first
    /// (ties by index), flattened: follower `g`'s are
    /// `neighbours[g·k .. (g+1)·k]` ([`DriverSet::neighbours_of`]).
    pub neighbours: Vec<u32>,
    /// The drivers' kNN graph: an undirected edge `(a, b)`, `a < b`, joins
    /// each driver to each of its `k` nearest other drivers at rest (fewer
    /// when there are fewer drivers); sorted and deduplicated, so an edge
    /// found from both ends appears once.
    pub graph: Vec<(u32, u32)>,
    /// The driver of every source point (its K-Means cluster), in
    /// [`DriverSource::points`] order.
    pub cluster: Vec<u32>,
    /// K-Means inertia (normalised units²).
    pub inertia: f64,
    /// Lloyd iterations run.
    pub iterations: u32,
}

/// The `k` nearest of the drivers at `rest` to each of `points`, nearest
/// first (ties by index), flattened: `k` driver indices per point, the
/// rule [`DriverSet`] follows its free splats by (docs/design.md § Drivers
/// and the deformation). For splats that did not follow drivers when the
/// drivers were made (anchored ones, once the object is let go).
pub fn nearest_drivers(rest: &[[f32; 3]], points: &[[f32; 3]], k: usize) -> Vec<u32> {
    let rest64: Vec<[f64; 3]> = rest.iter().map(|p| p.map(f64::from)).collect();
    let tree: ImmutableKdTree<f64, 3> = ImmutableKdTree::new_from_slice(&rest64);
    points
        .iter()
        .flat_map(|p| nearest_n(&tree, &p.map(f64::from), k).into_iter().map(|(_, i)| i))
        .collect()
}

/// The `n` nearest items of `tree` to `q`, nearest first, ties by index.
fn nearest_n(tree: &ImmutableKdTree<f64, 3>, q: &[f64; 3], n: usize) -> Vec<(f64, u32)> {
    let Some(n) = NonZero::new(n) else {
        return Vec::new();
    };
    let mut found: Vec<(f64, u32)> = tree
        .nearest_n::<SquaredEuclidean>(q, n)
        .into_iter()
        .map(|nn| (nn.distance, nn.item as u32))
        .collect();
    found.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    found
}

impl DriverSet {
    /// The drivers of `scene` with its `[drivers]` settings (count, k,
    /// seed, fill).
    pub fn from_scene(scene: &Scene) -> Result<Self, DriveError> {
        let source = DriverSource::from_scene(scene)?;
        let d = &scene.drivers;
        Self::build(&source, d.count, d.k, d.seed)
    }

    /// `count` drivers of `source` by K-Means ([`super::kmeans::kmeans`],
    /// seeded with `seed`), each free Gaussian's `k` nearest of them, and
    /// their kNN graph.
    ///
    /// A driver is anchored when more than half of its cluster's points are
    /// anchored. A tie (exactly half) leaves it free: "mostly" means a
    /// majority, and a driver on the boundary of the anchored region that
    /// moves costs nothing (its anchored Gaussians stay at rest anyway),
    /// while one held fixed would also pin the free half of its cluster and
    /// widen the anchored nodes, already thicker than PhysDreamer's rule
    /// (src/mpm_rules/config.rs). A cluster without points (only when there are
    /// fewer distinct points than drivers) is free.
    pub fn build(
        source: &DriverSource,
        count: usize,
        k: usize,
        seed: u64,
    ) -> Result<Self, DriveError> {
        let n_points = source.points.len();
        if source.anchored.len() != n_points || source.splat_indices.len() > n_points {
            return Err(DriveError::Mismatch(format!(
                "driver source: {n_points} points, {} anchored flags, {} splats",
                source.anchored.len(),
                source.splat_indices.len()
            )));
        }
        if k == 0 || k > count {
            return Err(DriveError::BadNeighbours { k, count });
        }
        let p64: Vec<[f64; 3]> = source.points.iter().map(|p| p.map(f64::from)).collect();
        let km = kmeans(&p64, count, seed).map_err(|e| match e {
            KMeansError::BadCount { k, points } => DriveError::BadCount { count: k, points },
            e @ KMeansError::NotFinite { .. } => DriveError::Mismatch(e.to_string()),
        })?;
        let rest: Vec<[f32; 3]> = km.centres.iter().map(|c| c.map(|x| x as f32)).collect();

        let mut members = vec![0usize; count];
        let mut anchored_members = vec![0usize; count];
        let mut gaussian_members = vec![0usize; count];
        for (i, &c) in km.assignment.iter().enumerate() {
            members[c as usize] += 1;
            anchored_members[c as usize] += source.anchored[i] as usize;
            gaussian_members[c as usize] += (i < source.gaussian_count()) as usize;
        }
        let anchored = (0..count)
            .map(|d| 2 * anchored_members[d] > members[d])
            .collect();
        let fill_only = gaussian_members.iter().map(|&g| g == 0).collect();

        let occupied = source.occupied_volume();
        let rest64: Vec<[f64; 3]> = rest.iter().map(|p| p.map(f64::from)).collect();
        let tree: ImmutableKdTree<f64, 3> = ImmutableKdTree::new_from_slice(&rest64);

        let mut followers = Vec::new();
        let mut follower_rest = Vec::new();
        let mut neighbours = Vec::new();
        for (g, &splat) in source.splat_indices.iter().enumerate() {
            if source.anchored[g] {
                continue;
            }
            followers.push(splat);
            follower_rest.push(source.points[g]);
            let q = source.points[g].map(f64::from);
            neighbours.extend(nearest_n(&tree, &q, k).into_iter().map(|(_, i)| i));
        }

        let graph_k = k.min(count - 1);
        let mut graph = Vec::with_capacity(count * graph_k);
        for (a, q) in rest64.iter().enumerate() {
            for (_, b) in nearest_n(&tree, q, graph_k + 1) {
                let a = a as u32;
                if b != a {
                    graph.push((a.min(b), a.max(b)));
                }
            }
        }
        graph.sort_unstable();
        graph.dedup();

        Ok(Self {
            rest,
            anchored,
            held_points: source.held_points(),
            fill_only,
            volume: occupied / count as f64,
            occupied_volume: occupied,
            sim_box: source.sim_box,
            k,
            followers,
            follower_rest,
            neighbours,
            graph,
            cluster: km.assignment,
            inertia: km.inertia,
            iterations: km.iterations,
        })
    }

    /// Number of drivers.
    pub fn len(&self) -> usize {
        self.rest.len()
    }

    /// True when there are none (never for a built set).
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// The `k` nearest drivers of follower `g`, nearest first.
    pub fn neighbours_of(&self, g: usize) -> &[u32] {
        &self.neighbours[g * self.k..(g + 1) * self.k]
    }

    /// The simulator setup with Young's modulus `youngs` (normalised units)
    /// per driver, checked for stability up to `youngs_max`.
    pub fn setup(&self, youngs: Vec<f32>, youngs_max: f64) -> MpmSetup {
        MpmSetup {
            particle_volume: self.volume,
            anchored: self.anchored.clone(),
            held_points: self.held_points.clone(),
            youngs,
            youngs_max,
        }
    }

    /// The rest state with a uniform initial velocity given in world units
    /// per second (anchored drivers start at rest).
    pub fn uniform_start(&self, velocity_world: [f64; 3]) -> Result<ParticleState, DriveError> {
        if velocity_world.iter().any(|v| !v.is_finite()) {
            return Err(DriveError::BadVelocity(velocity_world));
        }
        let v = self
            .sim_box
            .vector_to_normalised(velocity_world)
            .map(|c| c as f32);
        let velocities = self
            .anchored
            .iter()
            .map(|&a| if a { [0.0; 3] } else { v })
            .collect();
        Ok(ParticleState::at_rest(self.rest.clone(), velocities))
    }
}
