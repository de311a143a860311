//! `fitted.ply`: every splat of the scene, unchanged, with its fitted
//! material as extra per-vertex `float` properties that splat viewers keep
//! (issue 13, "Outputs"; DESIGN.md § Drivers and the deformation of
//! Gaussians):
//!
//! | property | follower (free simulated) | anchored (simulated, held) | static |
//! | --- | --- | --- | --- |
//! | `youngs_modulus` | `10^(mean of its k drivers' log10 E)`, world units | its cluster driver's E, world units | 0 |
//! | `simulated` | 1 | 1 | 0 |
//! | `anchored` | 0 | 1 | 0 |
//! | `vx vy vz` | mean of its k drivers' v0, world units / s | 0 | 0 |
//! | `youngs_confidence` | mean of its k drivers' confidence | its cluster driver's | 0 |
//!
//! E is converted with [`youngs_world`] (`E_normalised · side²`), so a
//! different box padding does not change it; a `comment` line in the
//! header says so. Where no confidence was given it is 0 everywhere.
//!
//! Anchored splats follow no driver (they stay at rest, so their velocity
//! is 0), but they are part of the simulated material: they get the E of
//! the driver of their K-Means cluster ([`DriverSet::cluster`]), the
//! particle that carries their share of the material in the simulation. A
//! nearest-driver search would give the same driver except where Lloyd's
//! last update moved a centre past another, and needs no k-d tree here.
//! Rows the `.ply` loader dropped (non-finite positions) get 0 in every
//! property.

use std::path::Path;

use super::drivers_file::fit_values_mismatch;
use super::units::youngs_world;
use crate::drive::DriverSet;
use crate::io::atomic_write::write_atomic;
use crate::scene::ply::{ExtraProperty, PlyError};
use crate::scene::Scene;

/// Why `fitted.ply` could not be made or written.
#[derive(Debug, thiserror::Error)]
pub enum FittedPlyError {
    /// The fit's values do not match its drivers or the scene.
    #[error("fitted.ply: {0}")]
    Inputs(String),
    /// Encoding (a property name that exists already in the source
    /// `.ply`) or writing failed; the error names the file.
    #[error(transparent)]
    Ply(#[from] PlyError),
}

/// The fitted material of every splat of a scene (table in the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct SplatMaterial {
    /// Young's modulus, world units (0 for static splats).
    pub youngs_modulus: Vec<f32>,
    /// 1 for simulated splats, 0 for static ones.
    pub simulated: Vec<f32>,
    /// 1 for anchored splats.
    pub anchored: Vec<f32>,
    /// Initial velocity, world units / s.
    pub velocity: Vec<[f32; 3]>,
    /// Confidence in E (0 where none).
    pub youngs_confidence: Vec<f32>,
}

impl SplatMaterial {
    /// The material of every splat of `scene` from the fit's per-driver
    /// values (as [`super::FittedDrivers::new`] takes them).
    pub fn new(
        scene: &Scene,
        drivers: &DriverSet,
        log10_youngs: &[f64],
        velocity: &[f64],
        confidence: Option<&[f64]>,
    ) -> Result<Self, FittedPlyError> {
        if let Some(problem) = fit_values_mismatch(drivers, log10_youngs, velocity, confidence) {
            return Err(FittedPlyError::Inputs(problem));
        }
        let splats = scene.gaussians().len();
        let simulated = scene.simulated_indices();
        if drivers.cluster.len() < simulated.len()
            || drivers.followers.iter().any(|&s| s as usize >= splats)
        {
            return Err(FittedPlyError::Inputs(format!(
                "the drivers were not made from this scene ({} clustered points and followers up to splat {:?} for {} simulated of {splats} splats)",
                drivers.cluster.len(),
                drivers.followers.last(),
                simulated.len()
            )));
        }
        let side = drivers.sim_box.side;
        let world = |log10: f64| youngs_world(10f64.powf(log10), side) as f32;
        let confidence_of = |d: usize| confidence.map_or(0.0, |c| c[d]);
        let mut m = SplatMaterial {
            youngs_modulus: vec![0.0; splats],
            simulated: vec![0.0; splats],
            anchored: vec![0.0; splats],
            velocity: vec![[0.0; 3]; splats],
            youngs_confidence: vec![0.0; splats],
        };
        for (j, &splat) in simulated.iter().enumerate() {
            let s = splat as usize;
            m.simulated[s] = 1.0;
            if scene.anchored[s] {
                let d = drivers.cluster[j] as usize;
                m.anchored[s] = 1.0;
                m.youngs_modulus[s] = world(log10_youngs[d]);
                m.youngs_confidence[s] = confidence_of(d) as f32;
            }
        }
        for (g, &splat) in drivers.followers.iter().enumerate() {
            let s = splat as usize;
            let near = drivers.neighbours_of(g);
            let k = near.len() as f64;
            let mean =
                |f: &dyn Fn(usize) -> f64| near.iter().map(|&d| f(d as usize)).sum::<f64>() / k;
            m.youngs_modulus[s] = world(mean(&|d| log10_youngs[d]));
            m.velocity[s] = std::array::from_fn(|a| mean(&|d| velocity[3 * d + a]) as f32);
            m.youngs_confidence[s] = mean(&confidence_of) as f32;
        }
        Ok(m)
    }

    /// The extra properties, one value per splat, in the file's order.
    fn columns(&self) -> Vec<(&'static str, Vec<f32>)> {
        let axis = |a: usize| self.velocity.iter().map(|v| v[a]).collect();
        vec![
            ("youngs_modulus", self.youngs_modulus.clone()),
            ("simulated", self.simulated.clone()),
            ("anchored", self.anchored.clone()),
            ("vx", axis(0)),
            ("vy", axis(1)),
            ("vz", axis(2)),
            ("youngs_confidence", self.youngs_confidence.clone()),
        ]
    }
}

/// The header comment saying which units the properties are in.
const UNITS_COMMENT: &str =
    "comment physfit fitted.ply: youngs_modulus is Young's modulus in world units \
(E_normalised * box_side^2; 0 on static splats), vx vy vz the initial velocity in world units/s, \
simulated and anchored are 1/0 flags, youngs_confidence is 0 where unknown\n";

/// Writes `scene`'s `.ply` back to `path` (atomically) with `material` as
/// extra properties (module doc).
pub fn write_fitted_ply(
    path: &Path,
    scene: &Scene,
    material: &SplatMaterial,
) -> Result<(), FittedPlyError> {
    let splats = &scene.splats;
    if material.youngs_modulus.len() != splats.ply_rows.len() {
        return Err(FittedPlyError::Inputs(format!(
            "{} values for {} splats",
            material.youngs_modulus.len(),
            splats.ply_rows.len()
        )));
    }
    let extras: Vec<ExtraProperty> = material
        .columns()
        .into_iter()
        .map(|(name, values)| ExtraProperty {
            name: name.to_string(),
            values: splats.per_row(&values, 0.0),
        })
        .collect();
    let mut bytes = splats.ply.to_bytes(&extras, path)?;
    // `to_bytes` always starts with these two lines; the comment goes after them.
    let start = b"ply\nformat binary_little_endian 1.0\n".len();
    bytes.splice(start..start, UNITS_COMMENT.bytes());
    write_atomic(path, &bytes).map_err(|error| PlyError::Io {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(())
}
