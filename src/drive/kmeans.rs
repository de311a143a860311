//! K-Means of the driving particles (docs/design.md § Drivers and the
//! deformation of Gaussians): k-means++ seeding from a seeded SplitMix64
//! stream, then Lloyd iterations whose nearest-centre queries go through a
//! k-d tree (`kiddo`'s [`ImmutableKdTree`], rebuilt over the centres each
//! iteration).
//!
//! PhysDreamer runs K-Means on the GPU and that is its memory bottleneck
//! (its issues #4 and #15); here it is a CPU pass whose memory is O(n + k)
//! and whose cost per Lloyd iteration is O(n log k): 50,000 points into
//! 2,000 clusters take well under a 2 s budget (measured in
//! docs/benchmarks.md and by the ignored test `kmeans_speed_on_the_fox` in
//! tests/cpu/drivers.rs).
//!
//! Everything is computed in f64 and sequentially where the order matters
//! (sums, sampling), so a seed gives bit-identical centres on every machine
//! and thread count.

use std::num::NonZero;

use kiddo::{ImmutableKdTree, SquaredEuclidean};

/// Lloyd iterations at most. Lloyd converges in a few dozen iterations on
/// the fox (41 to an unchanged assignment for 50,000 points into 2,000
/// clusters); the cap only bounds pathological inputs.
pub const MAX_ITERATIONS: u32 = 300;

/// Relative tolerance on the inertia: Lloyd stops once an iteration lowers
/// the inertia by less than `TOLERANCE` times its value (or moves no point
/// to another cluster). On the fox (50,000 points, 2,000 clusters) it stops
/// after 22 iterations instead of 41, with an inertia 0.1% above the fully
/// converged one: far inside the 2% that a check against a plain
/// Lloyd run allows, and the drivers are only as exact as the splats anyway.
pub const TOLERANCE: f64 = 1e-4;

/// A deterministic random stream (SplitMix64, Steele et al. 2014): small,
/// dependency-free, and good enough for sampling seeds.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The stream of `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform index in `0..n` (`n ≥ 1`).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_f64() * n as f64) as usize).min(n - 1)
    }
}

/// Squared Euclidean distance.
pub fn distance2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// Why a clustering cannot be made.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KMeansError {
    /// `k` is 0 or more than the points.
    #[error("cannot make {k} clusters of {points} points (need 1 ≤ clusters ≤ points)")]
    BadCount {
        /// Clusters asked for.
        k: usize,
        /// Points given.
        points: usize,
    },
    /// A point that is not finite.
    #[error("point {index} is not finite: {point:?}")]
    NotFinite {
        /// Its index.
        index: usize,
        /// Its coordinates.
        point: [f64; 3],
    },
}

/// The result of [`lloyd`] (and [`kmeans`]).
#[derive(Clone, Debug, PartialEq)]
pub struct KMeans {
    /// Cluster centres.
    pub centres: Vec<[f64; 3]>,
    /// The centre of every point: its nearest centre (ties to the one the
    /// k-d tree returns first).
    pub assignment: Vec<u32>,
    /// Sum over points of the squared distance to their centre, for these
    /// centres and this assignment.
    pub inertia: f64,
    /// Lloyd iterations run (assignment steps, the last included).
    pub iterations: u32,
    /// True when Lloyd stopped on [`TOLERANCE`] or on an unchanged
    /// assignment, false when it hit the iteration cap.
    pub converged: bool,
}

fn check(points: &[[f64; 3]], k: usize) -> Result<(), KMeansError> {
    if k == 0 || k > points.len() {
        return Err(KMeansError::BadCount {
            k,
            points: points.len(),
        });
    }
    if let Some(index) = points.iter().position(|p| p.iter().any(|c| !c.is_finite())) {
        return Err(KMeansError::NotFinite {
            index,
            point: points[index],
        });
    }
    Ok(())
}

/// k-means++ seeding (Arthur & Vassilvitskii 2007): the first centre is a
/// uniform pick, each further one a point drawn with probability
/// proportional to its squared distance to the nearest centre so far.
/// Deterministic for `seed`. When every remaining point coincides with a
/// centre (fewer distinct points than `k`), the next centre is a uniform
/// pick, so duplicated centres appear only then.
pub fn kmeans_plus_plus(
    points: &[[f64; 3]],
    k: usize,
    seed: u64,
) -> Result<Vec<[f64; 3]>, KMeansError> {
    check(points, k)?;
    let mut rng = SplitMix64::new(seed);
    let mut centres = Vec::with_capacity(k);
    let first = points[rng.below(points.len())];
    centres.push(first);
    let mut d2: Vec<f64> = points.iter().map(|p| distance2(p, &first)).collect();
    let mut total: f64 = d2.iter().sum();
    while centres.len() < k {
        let pick = if total > 0.0 {
            let target = rng.next_f64() * total;
            let mut acc = 0.0;
            let mut pick = None;
            for (i, &d) in d2.iter().enumerate() {
                acc += d;
                if acc > target && d > 0.0 {
                    pick = Some(i);
                    break;
                }
            }
            // Rounding can leave `acc` just below `target`: take the last
            // point with a positive weight.
            pick.unwrap_or_else(|| d2.iter().rposition(|&d| d > 0.0).unwrap_or(0))
        } else {
            rng.below(points.len())
        };
        let c = points[pick];
        centres.push(c);
        total = 0.0;
        for (d, p) in d2.iter_mut().zip(points) {
            let e = distance2(p, &c);
            if e < *d {
                *d = e;
            }
            total += *d;
        }
    }
    Ok(centres)
}

/// Nearest centre and squared distance of every point, through a k-d tree
/// over `centres`. The queries are split over the available cores; each
/// point's answer does not depend on the split.
fn assign(points: &[[f64; 3]], centres: &[[f64; 3]], out: &mut [(u32, f64)]) {
    let tree: ImmutableKdTree<f64, 3> = ImmutableKdTree::new_from_slice(centres);
    let query = |chunk: &[[f64; 3]], out: &mut [(u32, f64)]| {
        for (p, o) in chunk.iter().zip(out.iter_mut()) {
            let nn = tree.nearest_one::<SquaredEuclidean>(p);
            *o = (nn.item as u32, nn.distance);
        }
    };
    let threads = std::thread::available_parallelism()
        .map(NonZero::get)
        .unwrap_or(1)
        .min(points.len() / 4096)
        .max(1);
    if threads == 1 {
        query(points, out);
        return;
    }
    let chunk = points.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (p, o) in points.chunks(chunk).zip(out.chunks_mut(chunk)) {
            s.spawn(move || query(p, o));
        }
    });
}

/// Lloyd iterations from `centres`: assign every point to its nearest
/// centre, move each centre to the mean of its points, repeat until no
/// point changes cluster, the inertia drops by less than [`TOLERANCE`]
/// (relative), or [`MAX_ITERATIONS`] assignment steps have run. The result
/// pairs the last centres with the assignment to them.
///
/// A cluster that loses all its points takes, as its new centre, the point
/// farthest from its own centre (largest contribution to the inertia; ties
/// to the lower index), as scikit-learn does; several empty clusters take
/// the next farthest points in turn. Lloyd does not stop while a cluster is
/// empty (short of the cap), so every driver has points unless there are
/// fewer distinct points than clusters (then the clustering is exact, with
/// duplicated centres, and the spare ones stay empty).
pub fn lloyd(points: &[[f64; 3]], centres: Vec<[f64; 3]>) -> Result<KMeans, KMeansError> {
    lloyd_with(points, centres, MAX_ITERATIONS, TOLERANCE)
}

/// [`lloyd`] with its cap and tolerance given.
pub fn lloyd_with(
    points: &[[f64; 3]],
    mut centres: Vec<[f64; 3]>,
    max_iterations: u32,
    tolerance: f64,
) -> Result<KMeans, KMeansError> {
    let k = centres.len();
    check(points, k)?;
    let n = points.len();
    let mut nearest = vec![(0u32, 0.0f64); n];
    let mut assignment = vec![u32::MAX; n];
    let mut previous = f64::INFINITY;
    let mut iterations = 0;
    loop {
        assign(points, &centres, &mut nearest);
        iterations += 1;
        let mut changed = false;
        let mut inertia = 0.0;
        for (a, &(c, d)) in assignment.iter_mut().zip(&nearest) {
            changed |= *a != c;
            *a = c;
            inertia += d;
        }
        let mut sums = vec![[0.0f64; 3]; k];
        let mut counts = vec![0usize; k];
        for (p, &c) in points.iter().zip(&assignment) {
            let s = &mut sums[c as usize];
            s[0] += p[0];
            s[1] += p[1];
            s[2] += p[2];
            counts[c as usize] += 1;
        }
        // An empty cluster can take a point only if some point lies off
        // its centre; when none does (fewer distinct points than clusters),
        // the clustering is exact and the empty clusters stay.
        let empty = counts.contains(&0) && nearest.iter().any(|&(_, d)| d > 0.0);
        let settled =
            !changed || (previous.is_finite() && previous - inertia <= tolerance * previous);
        if (settled && !empty) || iterations >= max_iterations {
            return Ok(KMeans {
                centres,
                assignment,
                inertia,
                iterations,
                converged: settled && !empty,
            });
        }
        previous = inertia;
        for ((c, s), &m) in centres.iter_mut().zip(&sums).zip(&counts) {
            if m > 0 {
                let inv = 1.0 / m as f64;
                *c = [s[0] * inv, s[1] * inv, s[2] * inv];
            }
        }
        if empty {
            // Farthest points first; each is used once.
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by(|&a, &b| {
                nearest[b as usize]
                    .1
                    .total_cmp(&nearest[a as usize].1)
                    .then(a.cmp(&b))
            });
            let mut next = order.into_iter();
            for (c, &m) in centres.iter_mut().zip(&counts) {
                if m == 0 {
                    if let Some(i) = next.next().filter(|&i| nearest[i as usize].1 > 0.0) {
                        *c = points[i as usize];
                    }
                }
            }
        }
    }
}

/// k-means++ seeding for `seed`, then [`lloyd`].
pub fn kmeans(points: &[[f64; 3]], k: usize, seed: u64) -> Result<KMeans, KMeansError> {
    let centres = kmeans_plus_plus(points, k, seed)?;
    lloyd(points, centres)
}

/// Inertia of `centres` over `points`: the sum of squared distances to the
/// nearest centre (brute force; for tests and reports on small sets).
#[cfg(feature = "reference")]
pub fn inertia(points: &[[f64; 3]], centres: &[[f64; 3]]) -> f64 {
    points
        .iter()
        .map(|p| {
            centres
                .iter()
                .map(|c| distance2(p, c))
                .fold(f64::INFINITY, f64::min)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_blobs_split_into_their_centres() {
        let mut pts = Vec::new();
        for i in 0..50 {
            let t = i as f64 * 0.001;
            pts.push([0.1 + t, 0.1, 0.1]);
            pts.push([0.9 - t, 0.9, 0.9]);
        }
        let km = kmeans(&pts, 2, 7).unwrap();
        assert!(km.converged);
        let mut c = km.centres.clone();
        c.sort_by(|a, b| a[0].total_cmp(&b[0]));
        assert!((c[0][0] - (0.1 + 0.0245)).abs() < 1e-12, "{c:?}");
        assert!((c[1][0] - (0.9 - 0.0245)).abs() < 1e-12, "{c:?}");
    }

    #[test]
    fn duplicated_points_give_a_clustering() {
        let pts = vec![[0.5; 3]; 10];
        let km = kmeans(&pts, 3, 1).unwrap();
        assert_eq!(km.inertia, 0.0);
        assert_eq!(km.centres, vec![[0.5; 3]; 3]);
    }

    #[test]
    fn bad_counts_are_refused() {
        let pts = vec![[0.5; 3]; 4];
        assert!(matches!(
            kmeans(&pts, 0, 0),
            Err(KMeansError::BadCount { .. })
        ));
        assert!(matches!(
            kmeans(&pts, 5, 0),
            Err(KMeansError::BadCount { .. })
        ));
        assert!(matches!(
            kmeans(&[[f64::NAN, 0.0, 0.0]], 1, 0),
            Err(KMeansError::NotFinite { index: 0, .. })
        ));
    }
}
