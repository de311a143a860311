//! `fitted.ply`: every splat of the scene, unchanged, with its fitted
//! material as extra per-vertex `float` properties that splat viewers keep
//! (docs/design.md § Drivers and the deformation of Gaussians):
//!
//! | property | follower (free simulated) | anchored (simulated, held) | static |
//! | --- | --- | --- | --- |
//! | `youngs_modulus` | `10^(mean of its k drivers' log10 E)`, world units | its cluster driver's E, world units | 0 |
//! | `simulated` | 1 | 1 | 0 |
//! | `anchored` | 0 | 1 | 0 |
//! | `vx vy vz` | mean of its k drivers' v0, world units / s | 0 | 0 |
//! | `youngs_log10_std` | mean of its k drivers' | its cluster driver's | 0 |
//! | `poisson_ratio` | mean of its k drivers' ν | its cluster driver's ν | 0 |
//!
//! E is converted with [`youngs_world`] (`E_normalised · side²`), so a
//! different box padding does not change it; a `comment` line in the
//! header says so. `youngs_log10_std` is the error bar of log10 E in
//! decades (docs/design.md § Error bars): the data's standard error, with
//! the discretisation's error (the check's shift, extrapolated to the
//! limit for the fit's own E) in quadrature once a level of the check has
//! run (src/fit/material_answer.rs); small where the video pins
//! E, `(max − min)/√12` of `material.log10_youngs_range` where it says
//! nothing about it (a part that barely moves, or one no camera sees: E
//! is the regulariser's guess there). A follower's is the mean of its
//! drivers' (their mean's error when they move together, an upper bound
//! otherwise); 0 everywhere when the fit estimated no error bars.
//!
//! This is the one place where per-splat values are derived from the
//! drivers: `stiffness.png` and `render --color-by stiffness` colour the
//! `youngs_modulus` of [`SplatMaterial::from_fitted`]
//! ([`super::stiffness`]).
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

#[cfg(feature = "reference")]
use super::drivers_file::fit_values_mismatch;
use super::units::youngs_world;
use super::FittedDrivers;
#[cfg(feature = "reference")]
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
    /// The standard error of log10 E, decades (module doc; 0 where none).
    pub youngs_log10_std: Vec<f32>,
    /// Poisson's ratio (the fitted one when the fit fitted it, else
    /// `material.poisson_ratio`; 0 for static splats).
    pub poisson_ratio: Vec<f32>,
}

/// Which drivers move or carry each simulated splat (module doc).
struct SplatDrivers<'a> {
    followers: &'a [u32],
    /// k per follower.
    neighbours: &'a [u32],
    k: usize,
    /// (anchored splat, its cluster's driver).
    anchored: Vec<[u32; 2]>,
}

impl SplatMaterial {
    /// The material of every splat of `scene` from the fit's per-driver
    /// values (as [`super::FittedDrivers::new`] takes them), ν the scene's
    /// `material.poisson_ratio`.
    #[cfg(feature = "reference")]
pub fn new(
        scene: &Scene,
        drivers: &DriverSet,
        log10_youngs: &[f64],
        velocity: &[f64],
        log10_std: Option<&[f64]>,
    ) -> Result<Self, FittedPlyError> {
        if let Some(problem) = fit_values_mismatch(drivers, log10_youngs, velocity, log10_std) {
            return Err(FittedPlyError::Inputs(problem));
        }
        let simulated = scene.simulated_indices();
        if drivers.cluster.len() < simulated.len() {
            return Err(FittedPlyError::Inputs(format!(
                "the drivers were not made from this scene ({} clustered points for {} simulated splats)",
                drivers.cluster.len(),
                simulated.len()
            )));
        }
        let anchored = simulated
            .iter()
            .zip(&drivers.cluster)
            .filter(|(&s, _)| scene.anchored.get(s as usize).copied().unwrap_or(false))
            .map(|(&s, &d)| [s, d])
            .collect();
        let links = SplatDrivers {
            followers: &drivers.followers,
            neighbours: &drivers.neighbours,
            k: drivers.k,
            anchored,
        };
        Self::derive(
            scene,
            &links,
            drivers.sim_box.side,
            (log10_youngs, velocity, log10_std),
            &vec![scene.material.poisson_ratio; drivers.len()],
        )
    }

    /// The material of every splat of `scene` from a drivers file (what
    /// `render --color-by stiffness` has); equal to [`SplatMaterial::new`]
    /// of the fit that wrote it.
    pub fn from_fitted(scene: &Scene, fitted: &FittedDrivers) -> Result<Self, FittedPlyError> {
        let velocity: Vec<f64> = fitted.velocity.iter().flatten().copied().collect();
        let links = SplatDrivers {
            followers: &fitted.followers,
            neighbours: &fitted.neighbours,
            k: fitted.settings.k,
            anchored: fitted.anchored_splats.clone(),
        };
        Self::derive(
            scene,
            &links,
            fitted.settings.sim_box.side,
            (
                &fitted.log10_youngs,
                &velocity,
                fitted.youngs_log10_std.as_deref(),
            ),
            &fitted.poisson(),
        )
    }

    /// The per-splat values from the per-driver `log10 E`, velocity and
    /// standard errors, and ν per driver.
    fn derive(
        scene: &Scene,
        links: &SplatDrivers<'_>,
        side: f64,
        (log10_youngs, velocity, log10_std): (&[f64], &[f64], Option<&[f64]>),
        poisson: &[f64],
    ) -> Result<Self, FittedPlyError> {
        let splats = scene.gaussians().len();
        let n = log10_youngs.len();
        if poisson.len() != n {
            return Err(FittedPlyError::Inputs(format!(
                "{} Poisson's ratios for {n} drivers",
                poisson.len()
            )));
        }
        let bad_splat = links
            .followers
            .iter()
            .chain(links.anchored.iter().map(|p| &p[0]))
            .any(|&s| s as usize >= splats);
        let bad_driver = links
            .neighbours
            .iter()
            .chain(links.anchored.iter().map(|p| &p[1]))
            .any(|&d| d as usize >= n);
        if bad_splat || bad_driver || links.neighbours.len() != links.followers.len() * links.k {
            return Err(FittedPlyError::Inputs(format!(
                "the drivers were not made from this scene ({} followers and {} anchored splats of {splats} splats, {n} drivers)",
                links.followers.len(),
                links.anchored.len()
            )));
        }
        let world = |log10: f64| youngs_world(10f64.powf(log10), side) as f32;
        let std_of = |d: usize| log10_std.map_or(0.0, |c| c[d]);
        let mut m = SplatMaterial {
            youngs_modulus: vec![0.0; splats],
            simulated: vec![0.0; splats],
            anchored: vec![0.0; splats],
            velocity: vec![[0.0; 3]; splats],
            youngs_log10_std: vec![0.0; splats],
            poisson_ratio: vec![0.0; splats],
        };
        for s in scene.simulated_indices() {
            m.simulated[s as usize] = 1.0;
        }
        for &[splat, d] in &links.anchored {
            let (s, d) = (splat as usize, d as usize);
            m.anchored[s] = 1.0;
            m.youngs_modulus[s] = world(log10_youngs[d]);
            m.youngs_log10_std[s] = std_of(d) as f32;
            m.poisson_ratio[s] = poisson[d] as f32;
        }
        for (g, &splat) in links.followers.iter().enumerate() {
            let s = splat as usize;
            let near = &links.neighbours[g * links.k..(g + 1) * links.k];
            let k = near.len() as f64;
            let mean =
                |f: &dyn Fn(usize) -> f64| near.iter().map(|&d| f(d as usize)).sum::<f64>() / k;
            m.youngs_modulus[s] = world(mean(&|d| log10_youngs[d]));
            m.velocity[s] = std::array::from_fn(|a| mean(&|d| velocity[3 * d + a]) as f32);
            m.youngs_log10_std[s] = mean(&std_of) as f32;
            m.poisson_ratio[s] = mean(&|d| poisson[d]) as f32;
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
            ("youngs_log10_std", self.youngs_log10_std.clone()),
            ("poisson_ratio", self.poisson_ratio.clone()),
        ]
    }
}

/// The header comment saying which units the properties are in.
const UNITS_COMMENT: &str =
    "comment physfit fitted.ply: youngs_modulus is Young's modulus in world units \
(E_normalised * box_side^2; 0 on static splats), vx vy vz the initial velocity in world units/s, \
simulated and anchored are 1/0 flags, youngs_log10_std is the error bar of log10 E in decades \
(the data's standard error, with the discretisation's error in quadrature when the check ran; \
0 where the fit estimated none), poisson_ratio Poisson's ratio (0 on static splats)\n";

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
