//! `[regions]`: which splats are simulated and which of those are anchored
//! (docs/scene.md).

use super::config::RegionsConfig;
use super::error::SceneError;
use super::region::{resolve_region, Region};
use super::validate::Validator;
use super::Gaussians;

/// Resolved `[regions]`: which splats are simulated and which anchored.
pub(crate) struct Regions {
    pub simulated: Vec<bool>,
    pub anchored: Vec<bool>,
    pub anchored_region: Region,
}

/// `[regions]`: at least one simulated splat, and not all of them anchored.
pub(crate) fn resolve_regions(
    v: &Validator,
    r: &RegionsConfig,
    gaussians: &Gaussians,
) -> Result<Regions, SceneError> {
    let means = &gaussians.means;
    let simulated = match &r.simulated {
        None => vec![true; means.len()],
        Some(shapes) => resolve_region(v, "regions.simulated", shapes)?.mask(means),
    };
    let n_sim = simulated.iter().filter(|s| **s).count();
    if n_sim == 0 {
        let (bounds_min, bounds_max) = gaussians.bounds().unwrap_or(([0.0; 3], [0.0; 3]));
        return Err(SceneError::NothingSimulated {
            path: v.path.to_path_buf(),
            field: if r.simulated.is_some() {
                "regions.simulated"
            } else {
                "gaussians.path"
            }
            .into(),
            bounds_min,
            bounds_max,
        });
    }
    let anchored_region: Region = resolve_region(v, "regions.anchored", &r.anchored)?;
    let anchored: Vec<bool> = means
        .iter()
        .zip(&simulated)
        .map(|(p, &s)| s && anchored_region.contains(*p))
        .collect();
    let n_anchored = anchored.iter().filter(|a| **a).count();
    if n_anchored == n_sim {
        return Err(SceneError::NothingFree {
            path: v.path.to_path_buf(),
            field: "regions.anchored".into(),
            count: n_sim,
        });
    }
    if !r.anchored.is_empty() && n_anchored == 0 {
        log::warn!(
            "{}: `regions.anchored` contains no simulated splat",
            crate::io::shown::shown(v.path)
        );
    }
    Ok(Regions {
        simulated,
        anchored,
        anchored_region,
    })
}
