//! `drivers.safetensors`: everything needed to re-simulate a fitted object
//! without the fit (docs/design.md § Drivers, § Loss, parameters, fit), written and read with the `safetensors` crate.
//!
//! # Tensors (row-major, little-endian)
//! | name | dtype | shape | meaning |
//! | --- | --- | --- | --- |
//! | `rest` | F32 | `[n, 3]` | driver rest positions, normalised box coordinates (`x_world = box.min + rest · box.side`) |
//! | `log10_youngs` | F64 | `[n]` | log10 of Young's modulus, normalised units (`E_world = E · box.side²`, [`super::youngs_world`]) |
//! | `velocity` | F64 | `[n, 3]` | initial velocity, world units / s (0 on anchored drivers) |
//! | `anchored` | U8 | `[n]` | 1 where the driver is held fixed |
//! | `fill_only` | U8 | `[n]` | 1 where the driver's cluster holds only fill points |
//! | `followers` | U32 | `[f]` | the splats (indices into the `.ply`'s kept splats) that follow drivers |
//! | `neighbours` | U32 | `[f, k]` | each follower's k nearest drivers at rest, nearest first |
//! | `graph` | U32 | `[edges, 2]` | the drivers' kNN graph (TV), `a < b` |
//! | `anchored_splats` | U32 | `[a, 2]` | each anchored splat with the driver of its K-Means cluster (the particle carrying its share of the material), for colouring it by stiffness |
//! | `velocity_gradient` | F64 | `[n, 3, 3]` | optional: the initial affine velocity `C0` per driver, row-major `∂v_a/∂x_b` in 1/s (the rigid field's `[ω]×`, docs/design.md § Loss, parameters, fit), when the fit's velocity field has one; absent: `C0 = 0` (files without it still load) |
//! | `poisson_ratio` | F64 | `[n]` | optional: Poisson's ratio per driver, when the fit fitted it (`[fit.stiffness] poisson`); absent: `material.poisson_ratio` everywhere (files without it still load) |
//! | `youngs_log10_std` | F64 | `[n]` | optional: the standard error of the driver's log10 E in decades, from the curvature of the loss at the optimum (docs/design.md § Error bars); `(max − min)/√12` of `material.log10_youngs_range` where the frames do not constrain it |
//!
//! # Metadata (string map)
//! `format` = `physfit.drivers`, `format_version` = [`FORMAT_VERSION`],
//! `physfit_version`; the scene settings of [`SimulationRecord`] under their
//! scene.toml names (`simulation.box.min`, `simulation.grid_res`, ...);
//! `drivers.volume` (every driver's volume, normalised units);
//! `gaussians.path` (as the scene wrote it) and `gaussians.sha256`
//! ([`super::ply_sha256`]); `units.*` notes saying which values are in
//! which units. Numbers are written so that they read back bit for bit
//! ([`super::metadata_fields`]).

use std::path::Path;

use safetensors::tensor::TensorView;

use super::drivers_file_error::DriversFileError;
use super::metadata_fields::{MetadataReader, MetadataWriter};
use super::ply_hash::ply_sha256;
use super::simulation_record::SimulationRecord;
use super::tensor_archive::{read_archive_bytes, TensorArchive, TensorElement};
use super::units::youngs_world;
use crate::drive::DriverSet;
use crate::io::atomic_write::write_atomic;
use crate::mpm_rules::MpmConfig;
use crate::scene::Scene;

/// The `format` metadata value.
pub const FORMAT: &str = "physfit.drivers";
/// The `format_version` this physfit writes and reads.
pub const FORMAT_VERSION: &str = "2";

/// A fitted object's drivers with what re-simulating them needs.
#[derive(Clone, Debug, PartialEq)]
pub struct FittedDrivers {
    /// The scene settings a re-simulation depends on.
    pub settings: SimulationRecord,
    /// Volume of every driver (normalised units).
    pub particle_volume: f64,
    /// The `.ply`, as the scene file wrote it (`gaussians.path`).
    pub ply_path: String,
    /// SHA-256 of the `.ply`'s bytes, hex.
    pub ply_sha256: String,
    /// The physfit version that wrote the file.
    pub physfit_version: String,
    /// Driver rest positions, normalised box coordinates.
    pub rest: Vec<[f32; 3]>,
    /// log10 E per driver, normalised units.
    pub log10_youngs: Vec<f64>,
    /// Initial velocity per driver, world units / s.
    pub velocity: Vec<[f64; 3]>,
    /// Per driver: held fixed.
    pub anchored: Vec<bool>,
    /// Per driver: its cluster holds only fill points.
    pub fill_only: Vec<bool>,
    /// The splats that follow drivers (ascending).
    pub followers: Vec<u32>,
    /// `k` nearest drivers per follower, flattened (`settings.k` each).
    pub neighbours: Vec<u32>,
    /// Driver graph edges `(a, b)`, `a < b`.
    pub graph: Vec<(u32, u32)>,
    /// Each anchored splat (index into the `.ply`'s kept splats) with the
    /// driver of its K-Means cluster.
    pub anchored_splats: Vec<[u32; 2]>,
    /// Per driver: the standard error of its log10 E (module doc), when
    /// the fit estimated its error bars.
    pub youngs_log10_std: Option<Vec<f64>>,
    /// Per driver: Poisson's ratio, when the fit fitted it; `None`: the
    /// settings' `material.poisson_ratio` ([`FittedDrivers::poisson`]).
    pub poisson_ratio: Option<Vec<f64>>,
    /// Per driver: the initial affine velocity `C0` (row-major
    /// `∂v_a/∂x_b`, 1/s), when the fit's velocity field has a gradient (the
    /// rigid field); `None`: `C0 = 0`.
    pub velocity_gradient: Option<Vec<[[f64; 3]; 3]>>,
}

/// Why the fit's per-driver values do not fit `drivers` (`None`: they do):
/// `n` log10 E, `3n` velocity components (driver-major, world units / s),
/// `n` standard errors, all finite. Shared with [`super::fitted_ply`].
pub(crate) fn fit_values_mismatch(
    drivers: &DriverSet,
    log10_youngs: &[f64],
    velocity: &[f64],
    log10_std: Option<&[f64]>,
) -> Option<String> {
    let n = drivers.len();
    let counts = [
        ("log10 E values", log10_youngs.len(), n),
        ("velocity components", velocity.len(), 3 * n),
        (
            "log10 E standard errors",
            log10_std.map_or(n, <[f64]>::len),
            n,
        ),
    ];
    for (what, found, expected) in counts {
        if found != expected {
            return Some(format!(
                "{found} {what} for {n} drivers (expected {expected})"
            ));
        }
    }
    let values = [
        ("log10 E", log10_youngs),
        ("velocity", velocity),
        ("log10 E standard error", log10_std.unwrap_or(&[])),
    ];
    for (what, values) in values {
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Some(format!("{what} value {i} is {}", values[i]));
        }
    }
    None
}

/// Why `poisson` is not a Poisson's ratio per driver of `n` (`None`: it
/// is): its length, or a value outside `[0, 0.5)`.
fn poisson_mismatch(poisson: &[f64], n: usize) -> Option<String> {
    if poisson.len() != n {
        return Some(format!(
            "{} Poisson's ratios for {n} drivers",
            poisson.len()
        ));
    }
    let i = poisson.iter().position(|nu| !(0.0..0.5).contains(nu))?;
    Some(format!(
        "Poisson's ratio {} at element {i}, outside [0, 0.5)",
        poisson[i]
    ))
}

fn flags(values: &[bool]) -> Vec<u8> {
    values.iter().map(|&b| b as u8).collect()
}

impl FittedDrivers {
    /// The fit's result: `drivers` of `scene` with `log10_youngs` (one per
    /// driver, normalised units), `velocity` (3 per driver, driver-major,
    /// world units / s) and optionally the standard error of log10 E per driver. Hashes the
    /// scene's `.ply`.
    pub fn new(
        scene: &Scene,
        drivers: &DriverSet,
        log10_youngs: &[f64],
        velocity: &[f64],
        log10_std: Option<&[f64]>,
    ) -> Result<Self, DriversFileError> {
        if let Some(problem) = fit_values_mismatch(drivers, log10_youngs, velocity, log10_std) {
            return Err(DriversFileError::Inputs(problem));
        }
        let mut settings = SimulationRecord::from_scene(scene);
        settings.driver_count = drivers.len();
        settings.k = drivers.k;
        Ok(Self {
            settings,
            particle_volume: drivers.volume,
            ply_path: scene.config.gaussians.path.display().to_string(),
            ply_sha256: ply_sha256(&scene.gaussians_path)?,
            physfit_version: env!("CARGO_PKG_VERSION").to_string(),
            rest: drivers.rest.clone(),
            log10_youngs: log10_youngs.to_vec(),
            velocity: velocity
                .chunks_exact(3)
                .map(|c| [c[0], c[1], c[2]])
                .collect(),
            anchored: drivers.anchored.clone(),
            fill_only: drivers.fill_only.clone(),
            followers: drivers.followers.clone(),
            neighbours: drivers.neighbours.clone(),
            graph: drivers.graph.clone(),
            anchored_splats: scene
                .simulated_indices()
                .iter()
                .zip(&drivers.cluster)
                .filter(|(&s, _)| scene.anchored[s as usize])
                .map(|(&s, &d)| [s, d])
                .collect(),
            youngs_log10_std: log10_std.map(<[f64]>::to_vec),
            poisson_ratio: None,
            velocity_gradient: None,
        })
    }

    /// The same with the initial affine velocity `C0` per driver (9 per
    /// driver, row-major `∂v_a/∂x_b`, 1/s; the fit's
    /// [`crate::fit::ParamMap::velocity_gradient`] of its velocity
    /// parameters), all finite. `render --params` starts APIC's `C` at it.
    pub fn with_velocity_gradient(mut self, gradient: &[f64]) -> Result<Self, DriversFileError> {
        let n = self.len();
        if gradient.len() != 9 * n {
            return Err(DriversFileError::Inputs(format!(
                "{} velocity gradient components for {n} drivers (expected {})",
                gradient.len(),
                9 * n
            )));
        }
        if let Some(i) = gradient.iter().position(|v| !v.is_finite()) {
            return Err(DriversFileError::Inputs(format!(
                "velocity gradient value {i} is {}",
                gradient[i]
            )));
        }
        self.velocity_gradient = Some(
            gradient
                .chunks_exact(9)
                .map(|g| std::array::from_fn(|a| std::array::from_fn(|b| g[3 * a + b])))
                .collect(),
        );
        Ok(self)
    }

    /// The same drivers with another `log10 E` per driver and its error
    /// bar (`None`: none), all finite: the material's answer that
    /// `fitted.ply` carries beside the fit's own (src/fit/material_answer.rs),
    /// without hashing the `.ply` again.
    pub fn with_youngs(
        mut self,
        log10_youngs: Vec<f64>,
        log10_std: Option<Vec<f64>>,
    ) -> Result<Self, DriversFileError> {
        let n = self.len();
        let values = [("log10 E", Some(&log10_youngs)), ("log10 E standard error", log10_std.as_ref())];
        for (what, values) in values {
            let Some(values) = values else { continue };
            if values.len() != n {
                return Err(DriversFileError::Inputs(format!(
                    "{} {what} values for {n} drivers",
                    values.len()
                )));
            }
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(DriversFileError::Inputs(format!(
                    "{what} value {i} is {}",
                    values[i]
                )));
            }
        }
        self.log10_youngs = log10_youngs;
        self.youngs_log10_std = log10_std;
        Ok(self)
    }

    /// The same with a fitted Poisson's ratio per driver (each in
    /// `[0, 0.5)`).
    pub fn with_poisson(mut self, poisson: Vec<f64>) -> Result<Self, DriversFileError> {
        if let Some(problem) = poisson_mismatch(&poisson, self.len()) {
            return Err(DriversFileError::Inputs(problem));
        }
        self.poisson_ratio = Some(poisson);
        Ok(self)
    }

    /// Poisson's ratio per driver: the fitted one, or the settings'
    /// `material.poisson_ratio` everywhere.
    pub fn poisson(&self) -> Vec<f64> {
        self.poisson_ratio
            .clone()
            .unwrap_or_else(|| vec![self.settings.poisson_ratio; self.len()])
    }

    /// Number of drivers.
    pub fn len(&self) -> usize {
        self.rest.len()
    }

    /// True without drivers (never for a file that loads).
    pub fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    /// Young's modulus per driver in world units ([`youngs_world`]).
    pub fn youngs_world(&self) -> Vec<f64> {
        let side = self.settings.sim_box.side;
        self.log10_youngs
            .iter()
            .map(|&l| youngs_world(10f64.powf(l), side))
            .collect()
    }

    /// The simulator's settings.
    pub fn mpm_config(&self) -> MpmConfig {
        self.settings.mpm_config()
    }

    fn metadata(&self) -> MetadataWriter {
        let mut w = MetadataWriter::default();
        w.value("format", FORMAT)
            .value("format_version", FORMAT_VERSION)
            .value("physfit_version", &self.physfit_version)
            .value("gaussians.path", &self.ply_path)
            .value("gaussians.sha256", &self.ply_sha256)
            .value("drivers.volume", self.particle_volume)
            .value(
                "units.rest",
                "normalised box coordinates: x_world = simulation.box.min + rest * simulation.box.side",
            )
            .value(
                "units.log10_youngs",
                "log10 of Young's modulus in normalised units (the box mapped to [0,1]^3, time in seconds); \
                 E_world = E_normalised * simulation.box.side^2 at the same density",
            )
            .value("units.velocity", "world units per second")
            .value("units.gravity", "simulation.gravity in world units per second squared")
            .value(
                "units.material",
                "material.density and Young's modulus in normalised units, as in PhysDreamer",
            );
        self.settings.write(&mut w);
        w
    }

    /// Writes the file atomically (temp file, then rename: a reader never
    /// sees half a file, and an existing file is replaced whole).
    pub fn save(&self, path: &Path) -> Result<(), DriversFileError> {
        let n = self.len();
        let f = self.followers.len();
        let mut buffers: Vec<(&str, safetensors::Dtype, Vec<usize>, Vec<u8>)> = vec![
            (
                "rest",
                f32::DTYPE,
                vec![n, 3],
                f32::to_le_bytes_all(self.rest.as_flattened()),
            ),
            (
                "log10_youngs",
                f64::DTYPE,
                vec![n],
                f64::to_le_bytes_all(&self.log10_youngs),
            ),
            (
                "velocity",
                f64::DTYPE,
                vec![n, 3],
                f64::to_le_bytes_all(self.velocity.as_flattened()),
            ),
            ("anchored", u8::DTYPE, vec![n], flags(&self.anchored)),
            ("fill_only", u8::DTYPE, vec![n], flags(&self.fill_only)),
            (
                "followers",
                u32::DTYPE,
                vec![f],
                u32::to_le_bytes_all(&self.followers),
            ),
            (
                "neighbours",
                u32::DTYPE,
                vec![f, self.settings.k],
                u32::to_le_bytes_all(&self.neighbours),
            ),
            (
                "graph",
                u32::DTYPE,
                vec![self.graph.len(), 2],
                self.graph
                    .iter()
                    .flat_map(|&(a, b)| [a, b])
                    .flat_map(u32::to_le_bytes)
                    .collect(),
            ),
            (
                "anchored_splats",
                u32::DTYPE,
                vec![self.anchored_splats.len(), 2],
                u32::to_le_bytes_all(self.anchored_splats.as_flattened()),
            ),
        ];
        if let Some(c) = &self.youngs_log10_std {
            buffers.push((
                "youngs_log10_std",
                f64::DTYPE,
                vec![n],
                f64::to_le_bytes_all(c),
            ));
        }
        if let Some(g) = &self.velocity_gradient {
            buffers.push((
                "velocity_gradient",
                f64::DTYPE,
                vec![n, 3, 3],
                f64::to_le_bytes_all(g.as_flattened().as_flattened()),
            ));
        }
        if let Some(nu) = &self.poisson_ratio {
            buffers.push((
                "poisson_ratio",
                f64::DTYPE,
                vec![n],
                f64::to_le_bytes_all(nu),
            ));
        }
        let fail = |reason: String| DriversFileError::Write {
            path: path.to_path_buf(),
            reason,
        };
        let views = buffers
            .iter()
            .map(|(name, dtype, shape, data)| {
                TensorView::new(*dtype, shape.clone(), data)
                    .map(|v| (*name, v))
                    .map_err(|e| fail(format!("tensor `{name}`: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let bytes = safetensors::serialize(views, Some(self.metadata().finish()))
            .map_err(|e| fail(e.to_string()))?;
        write_atomic(path, &bytes).map_err(|e| fail(e.to_string()))
    }

    /// Reads a file written by [`FittedDrivers::save`], checking the format,
    /// every tensor's dtype and shape, every metadata field, and that the
    /// indices lie in range.
    pub fn load(path: &Path) -> Result<FittedDrivers, DriversFileError> {
        let bytes = read_archive_bytes(path)?;
        let archive = TensorArchive::parse(&bytes, path)?;
        let meta = MetadataReader::new(path, archive.metadata());
        for (field, expected) in [("format", FORMAT), ("format_version", FORMAT_VERSION)] {
            let found = meta.text(field)?;
            if found != expected {
                return Err(DriversFileError::Format {
                    path: path.to_path_buf(),
                    field,
                    found: found.to_string(),
                    expected: expected.to_string(),
                });
            }
        }
        let settings = SimulationRecord::read(&meta)?;
        let particle_volume: f64 = meta.parsed("drivers.volume")?;
        if !(particle_volume.is_finite() && particle_volume > 0.0) {
            return Err(meta
                .invalid(
                    "drivers.volume",
                    format!("is {particle_volume}, expected a positive volume"),
                )
                .into());
        }
        let ply_sha256 = meta.text("gaussians.sha256")?.to_string();
        if ply_sha256.len() != 64 || !ply_sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(meta
                .invalid(
                    "gaussians.sha256",
                    format!("is \"{ply_sha256}\", expected 64 hex digits"),
                )
                .into());
        }

        let n = settings.driver_count;
        let k = settings.k;
        let rows3 = |v: Vec<f64>| v.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        let rest = archive
            .shaped::<f32>("rest", &[Some(n), Some(3)])?
            .1
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let log10_youngs = archive.shaped::<f64>("log10_youngs", &[Some(n)])?.1;
        let velocity: Vec<[f64; 3]> =
            rows3(archive.shaped::<f64>("velocity", &[Some(n), Some(3)])?.1);
        let anchored = archive.shaped::<u8>("anchored", &[Some(n)])?.1;
        let fill_only = archive.shaped::<u8>("fill_only", &[Some(n)])?.1;
        let (shape, followers) = archive.shaped::<u32>("followers", &[None])?;
        let neighbours = archive
            .shaped::<u32>("neighbours", &[Some(shape[0]), Some(k)])?
            .1;
        let graph = archive.shaped::<u32>("graph", &[None, Some(2)])?.1;
        let anchored_splats: Vec<[u32; 2]> = archive
            .shaped::<u32>("anchored_splats", &[None, Some(2)])?
            .1
            .chunks_exact(2)
            .map(|p| [p[0], p[1]])
            .collect();
        let youngs_log10_std = if archive.contains("youngs_log10_std") {
            Some(archive.shaped::<f64>("youngs_log10_std", &[Some(n)])?.1)
        } else {
            None
        };
        let velocity_gradient: Option<Vec<[[f64; 3]; 3]>> =
            if archive.contains("velocity_gradient") {
                let flat = archive
                    .shaped::<f64>("velocity_gradient", &[Some(n), Some(3), Some(3)])?
                    .1;
                Some(
                    flat.chunks_exact(9)
                        .map(|g| std::array::from_fn(|a| std::array::from_fn(|b| g[3 * a + b])))
                        .collect(),
                )
            } else {
                None
            };
        let poisson_ratio = if archive.contains("poisson_ratio") {
            Some(archive.shaped::<f64>("poisson_ratio", &[Some(n)])?.1)
        } else {
            None
        };

        let bad = |tensor: &'static str, problem: String| DriversFileError::Tensor {
            path: path.to_path_buf(),
            tensor,
            problem,
        };
        if let Some(problem) = poisson_ratio
            .as_deref()
            .and_then(|nu| poisson_mismatch(nu, n))
        {
            return Err(bad("poisson_ratio", format!("holds a {problem}")));
        }
        let finite = [
            ("log10_youngs", log10_youngs.as_slice()),
            ("velocity", velocity.as_flattened()),
            (
                "youngs_log10_std",
                youngs_log10_std.as_deref().unwrap_or(&[]),
            ),
            (
                "velocity_gradient",
                velocity_gradient
                    .as_deref()
                    .map_or(&[][..], |g| g.as_flattened().as_flattened()),
            ),
        ];
        for (tensor, values) in finite {
            if let Some(i) = values.iter().position(|v| !v.is_finite()) {
                return Err(bad(tensor, format!("holds {} at element {i}", values[i])));
            }
        }
        // Values a fit cannot have written, refused here, naming the file,
        // rather than later as an impossible substep count or a particle
        // outside the box.
        let [low, high] = settings.log10_youngs_range;
        if let Some(i) = log10_youngs.iter().position(|e| !(low..=high).contains(e)) {
            return Err(bad(
                "log10_youngs",
                format!(
                    "holds log10 E {:.6e} at element {i}, outside the range [{low}, {high}] the \
                     fit was run with (`material.log10_youngs_range`)",
                    log10_youngs[i]
                ),
            ));
        }
        let rest: Vec<[f32; 3]> = rest;
        if let Some(i) = rest
            .iter()
            .position(|p| !p.iter().all(|c| (0.0..=1.0).contains(c)))
        {
            return Err(bad(
                "rest",
                format!(
                    "holds {:?} at row {i}, outside the simulation box (rest positions are in \
                     the box's normalised units, 0 to 1)",
                    rest[i]
                ),
            ));
        }
        for (tensor, values) in [("anchored", &anchored), ("fill_only", &fill_only)] {
            if let Some(i) = values.iter().position(|&v| v > 1) {
                return Err(bad(
                    tensor,
                    format!("holds {} at element {i}, expected 0 or 1", values[i]),
                ));
            }
        }
        for (tensor, values) in [("neighbours", &neighbours), ("graph", &graph)] {
            if let Some(i) = values.iter().position(|&v| v as usize >= n) {
                return Err(bad(
                    tensor,
                    format!(
                        "holds driver {} at element {i}, but there are {n} drivers",
                        values[i]
                    ),
                ));
            }
        }
        if let Some(i) = anchored_splats.iter().position(|p| p[1] as usize >= n) {
            return Err(bad(
                "anchored_splats",
                format!(
                    "holds driver {} at row {i}, but there are {n} drivers",
                    anchored_splats[i][1]
                ),
            ));
        }
        if followers.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("followers", "is not strictly ascending".into()));
        }
        let graph: Vec<(u32, u32)> = graph.chunks_exact(2).map(|e| (e[0], e[1])).collect();
        if let Some(i) = graph.iter().position(|&(a, b)| a >= b) {
            return Err(bad(
                "graph",
                format!("edge {i} is {:?}, expected a < b", graph[i]),
            ));
        }
        Ok(FittedDrivers {
            settings,
            particle_volume,
            ply_path: meta.text("gaussians.path")?.to_string(),
            ply_sha256,
            physfit_version: meta.text("physfit_version")?.to_string(),
            rest,
            log10_youngs,
            velocity,
            anchored: anchored.iter().map(|&v| v == 1).collect(),
            fill_only: fill_only.iter().map(|&v| v == 1).collect(),
            followers,
            neighbours,
            graph,
            anchored_splats,
            youngs_log10_std,
            poisson_ratio,
            velocity_gradient,
        })
    }

    /// Refuses `scene` when its `.ply` is not the one fitted (by SHA-256)
    /// or when it differs in a setting a re-simulation depends on (the box,
    /// grid, substeps, frame rate, material constants, walls, gravity,
    /// damping, the `[drivers]` settings) or in which splats follow drivers
    /// (`regions`): every difference is named.
    pub fn check_against(&self, scene: &Scene) -> Result<(), DriversFileError> {
        let scene_sha256 = ply_sha256(&scene.gaussians_path)?;
        if scene_sha256 != self.ply_sha256 {
            return Err(DriversFileError::PlyChanged {
                fitted_ply: self.ply_path.clone(),
                fitted_sha256: self.ply_sha256.clone(),
                scene: scene.path.clone(),
                scene_ply: scene.gaussians_path.clone(),
                scene_sha256,
            });
        }
        let mut differences = self
            .settings
            .differences(&SimulationRecord::from_scene(scene));
        let free: Vec<u32> = scene
            .simulated_indices()
            .into_iter()
            .filter(|&i| !scene.anchored[i as usize])
            .collect();
        if free != self.followers {
            differences.push(format!(
                "`regions.simulated` / `regions.anchored`: {} free simulated splats in the fit, {} now{}",
                self.followers.len(),
                free.len(),
                if free.len() == self.followers.len() { " (other splats)" } else { "" }
            ));
        }
        if differences.is_empty() {
            Ok(())
        } else {
            Err(DriversFileError::SettingsChanged {
                scene: scene.path.clone(),
                differences,
            })
        }
    }
}
